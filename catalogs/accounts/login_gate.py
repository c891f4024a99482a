"""The sign-in gate: a password is hashed only when no other check of the same user name is in
flight, and fewer than ``LOGIN_CHECKS_PER_ADDRESS`` (1) from the same client address.

A password check costs one slow hash (PBKDF2: about 0.4 s of CPU), and django-axes counts a
failure only once that hash is done: on their own, guesses sent at once all pass its lockout
check and hash together, keeping the CPUs busy for seconds. Here the check waits for no one: a
sign-in that finds its user name's check, or all of its address's, in flight is refused at once
with the lockout answer (429), before the user is even looked up, so the refusal says nothing
about whether the user exists. It is not a failed guess either (no password was checked): axes
does not count it (``refused_by_gate``, its ``AXES_WHITELIST_CALLABLE``), so that a guesser
elsewhere cannot push the real user towards a lockout of their own. Axes's lockout check still
comes first (``AUTHENTICATION_BACKENDS``): a locked pair is refused before the gate.

The places are kept in the ``default`` cache (``CACHE_URL``): with Redis they hold across every
web process; with the per-process memory cache each process keeps its own. A place is given back
when the check ends, or after ``LOGIN_GATE_SECONDS`` if its process died meanwhile.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

logger = logging.getLogger(__name__)

# The backend's path, for ``login(request, user, backend=...)`` of a user who did not sign in
# with a password (just signed up).
BACKEND = "catalogs.accounts.login_gate.GatedModelBackend"


def _user_key(username: str) -> str:
    # Case-folded (sign-up refuses names that differ only in case) and hashed (any length).
    return "login-gate:user:" + hashlib.sha256(username.casefold().encode()).hexdigest()


def _take_user(key: str) -> bool:
    return cache.add(key, 1, settings.LOGIN_GATE_SECONDS)


def _take_address(key: str) -> bool:
    cache.add(key, 0, settings.LOGIN_GATE_SECONDS)
    try:
        taken = cache.incr(key)
    except ValueError:  # expired between the two calls: the next sign-in starts it again
        return False
    if taken > settings.LOGIN_CHECKS_PER_ADDRESS:
        _give_back_address(key)
        return False
    return True


def _give_back_address(key: str) -> None:
    with suppress(ValueError):  # expired meanwhile (LOGIN_GATE_SECONDS)
        cache.decr(key)


def _places_taken(username: str, address: str | None) -> list[Callable[[], object]] | None:
    """Take the user name's place and one of the address's: the calls that give them back, or
    None (nothing held) when either is taken."""
    user_key = _user_key(username)
    if not _take_user(user_key):
        return None
    give_back: list[Callable[[], object]] = [partial(cache.delete, user_key)]
    if address:
        address_key = "login-gate:address:" + address
        if not _take_address(address_key):
            cache.delete(user_key)
            return None
        give_back.append(partial(_give_back_address, address_key))
    return give_back


@contextmanager
def password_check_place(*, username: str, address: str | None) -> Iterator[bool]:
    """Whether a password check of ``username`` from ``address`` may run now; its places are held
    until the block ends. A cache outage admits every check (axes alone guards then)."""
    try:
        give_back = _places_taken(username, address)
    except Exception:
        logger.warning("sign-in gate: the cache is unavailable, checking anyway", exc_info=True)
        give_back = []
    if give_back is None:
        yield False
        return
    try:
        yield True
    finally:
        for call in give_back:
            try:
                call()
            except Exception:  # freed after LOGIN_GATE_SECONDS
                logger.warning("sign-in gate: a place was not given back", exc_info=True)


class GatedModelBackend(ModelBackend):
    """Django's password check behind the gate: refused at once (axes's lockout answer, nothing
    hashed) while another check of the user name, or too many of the address, are in flight."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        address = get_client_ip_address(request) if request is not None else None
        with password_check_place(username=str(username), address=address) as admitted:
            if admitted:
                return super().authenticate(request, username, password, **kwargs)
        if request is not None:
            # AxesMiddleware answers with the lockout page; refused_by_gate keeps it uncounted.
            request.axes_locked_out = True  # type: ignore[attr-defined]
            request.login_gate_refused = True  # type: ignore[attr-defined]
        raise PermissionDenied("another password check of this user name or address is running")


def refused_by_gate(request: HttpRequest | None, credentials: Any = None) -> bool:
    """Axes's ``AXES_WHITELIST_CALLABLE``: a sign-in the gate refused is no failed guess (no
    password was checked), so axes records no failure for it; every other sign-in is counted."""
    return bool(getattr(request, "login_gate_refused", False))
