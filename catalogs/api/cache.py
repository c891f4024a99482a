"""Response cache of the API's list pages, invalidated by a generation token on every write.

A list page is rendered once and then served as bytes until something that lists show changes.
Keys: the absolute URL (scheme, host, path, query: the page's links carry them), the rendered
media type and the caller's visibility (``public`` lists look the same to everyone; the others
are keyed by user id, so one user's review queue or an operator's sources never reach anyone
else). Each entry stores the generation it was rendered at; a hit needs the current one.

Invalidation is at the database, not in each service: an execute wrapper on every connection
sees each INSERT/UPDATE/DELETE on a registry table (``catalogs_*`` and ``auth_*``: users, groups
and permissions decide visibility; not the pull counts, which lists show up to the expiry late),
whatever wrote it (services, admin, bulk updates, raw SQL,
cascades). After the transaction commits, the generation becomes a fresh random token in the
shared cache, so every process's next read misses. Inside the writing transaction, the thread's
own next read starts a new generation too (it already sees its uncommitted rows). A generation is
read before the database is queried, so a page rendered while a write commits is stored under
the old generation and never served after it.

Each process also keeps the pages it served last in memory (a bounded LRU, checked against the
shared generation on every request), so a hit costs one small read of the shared cache.

Cross-process invalidation needs a cache every process shares (``CACHE_URL``, e.g. Redis): with
``API_LIST_CACHE=auto`` (the default) the cache is off on a per-process one (the locmem
default), where another process's write could not reach this one's entries. ``on`` forces it
(one process, e.g. the tests), ``off`` disables it. Entries expire after
``API_LIST_CACHE_SECONDS`` whatever happens (the bound on a missed invalidation).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpResponse
from rest_framework.request import Request
from rest_framework.response import Response

logger = logging.getLogger(__name__)

GENERATION_KEY = "api-list:generation"
_ENTRY_PREFIX = "api-list:page:"
# Tables whose rows lists show or whose rows decide who sees what.
_WATCHED = re.compile(r'^\s*(?:insert\s+(?:or\s+\w+\s+)?into|update|delete\s+from)\s+"?(\w+)', re.I)
_WATCHED_TABLES = ("catalogs_", "auth_")
# Pull counts are flushed every few seconds under steady pulls: were they watched, no list page
# would live longer than that. A list shows them at most API_LIST_CACHE_SECONDS late, as
# download counts are on every registry; detail views and the per-day endpoint are not cached.
_UNWATCHED_TABLES = ("catalogs_catalogversionpulls",)
_ALWAYS = re.compile(r"^\s*(?:truncate|rollback\s+to)", re.I)  # flushes, undone savepoints

Scope = Literal["public", "user", "viewer"]


Page = tuple[str, str, bytes]  # generation, content type, body


class _LocalPages:
    """Bounded LRU of pages by key, this process's own copies, each kept as long as the shared
    cache keeps its entry (API_LIST_CACHE_SECONDS) at most."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[Page, float]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: str, generation: str) -> Page | None:
        with self._lock:
            found = self._items.get(key)
            if found is None or found[0][0] != generation or found[1] < time.monotonic():
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: str, page: Page, seconds: float) -> None:
        if len(page[2]) > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old[0][2])
            self._items[key] = (page, time.monotonic() + seconds)
            self._size += len(page[2])
            while self._size > self.max_bytes:
                _, (dropped, _) = self._items.popitem(last=False)
                self._size -= len(dropped[2])


_local_pages = _LocalPages(max_bytes=32 * 1024 * 1024)


class _ThreadState(threading.local):
    # This thread wrote since it last started a generation (its own reads must not hit).
    written = False
    # This thread wrote since its last commit (the commit must start a generation).
    uncommitted = False


_state = _ThreadState()


def enabled() -> bool:
    """Whether list pages are cached (API_LIST_CACHE: on, off, or auto = on a shared cache)."""
    mode = str(getattr(settings, "API_LIST_CACHE", "auto")).lower()
    if mode == "auto":  # (``cache`` is a proxy: isinstance needs the backend itself)
        return not isinstance(caches["default"], LocMemCache | DummyCache)
    return mode == "on"


def invalidate() -> None:
    """Start a new generation: every cached page is out of date, in every process."""
    cache.set(GENERATION_KEY, secrets.token_hex(8), timeout=None)
    _state.written = False


def _invalidate_after_write() -> None:
    """``invalidate``, from inside a write: a cache outage must not fail the write (the pages
    it leaves expire after API_LIST_CACHE_SECONDS; the outage is logged)."""
    try:
        invalidate()
    except Exception:
        logger.error("API list cache: a write could not end the cached pages", exc_info=True)


def _after_commit() -> None:
    if _state.uncommitted:
        _state.uncommitted = False
        _invalidate_after_write()


def _note_write(alias: str) -> None:
    _state.written = True
    _state.uncommitted = True
    try:
        transaction.on_commit(_after_commit, using=alias)  # at once outside a transaction
    except transaction.TransactionManagementError:  # manual transaction management
        _invalidate_after_write()


def _execute_wrapper(execute, sql, params, many, context):
    result = execute(sql, params, many, context)
    if isinstance(sql, str) and sql[:40].lstrip()[:1].lower() in "iudtr":
        match = _WATCHED.match(sql)
        table = match.group(1).lower() if match else ""
        if (
            table.startswith(_WATCHED_TABLES) and not table.startswith(_UNWATCHED_TABLES)
        ) or _ALWAYS.match(sql):
            _note_write(context["connection"].alias)
    return result


def install(*, connection: BaseDatabaseWrapper, **_: Any) -> None:
    """Watch ``connection``'s writes (``connection_created`` receiver; once per connection)."""
    if _execute_wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(_execute_wrapper)


def install_everywhere() -> None:
    """Watch every connection: those opened from now on, and those already open."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(install, dispatch_uid="catalogs.api.cache.install")
    for connection in connections.all(initialized_only=True):
        install(connection=connection)


def _visibility(request: Request, scope: Scope) -> str:
    user = request.user
    signed = user is not None and user.is_authenticated
    if scope == "public" or (scope == "viewer" and not signed):
        return "public"
    return f"user:{user.pk}" if user is not None and user.is_authenticated else "anonymous"


def _key(request: Request, scope: Scope) -> str:
    parts = (
        request.build_absolute_uri(request.get_full_path()),
        str(getattr(request, "accepted_media_type", "")),
        _visibility(request, scope),
    )
    return _ENTRY_PREFIX + hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _current_generation() -> str:
    if _state.written:  # this thread's own uncommitted writes: older pages do not show them
        invalidate()
    generation = cache.get(GENERATION_KEY)
    if generation is None:
        generation = secrets.token_hex(8)
        if not cache.add(GENERATION_KEY, generation, timeout=None):
            generation = cache.get(GENERATION_KEY) or generation
    return str(generation)


def cached_list(scope: Scope) -> Callable:
    """Decorate a viewset's ``list`` (or another GET action answering a page of a list).

    ``scope="public"`` promises that the page is the same for every caller who may see it;
    ``"user"`` keys it by the signed-in user; ``"viewer"`` (lists that hold private catalogs
    for their members) shares one page among anonymous callers and keys the others by user.
    Permission checks ran before (DRF's ``initial``),
    so a caller who may not see the list never reaches the cache. Only 200 JSON answers are
    stored; a hit is the stored bytes with the same headers as the first answer.
    """

    def decorate(method: Callable[..., Response]) -> Callable[..., HttpResponse | Response]:
        @functools.wraps(method)
        def wrapper(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse | Response:
            renderer = getattr(request, "accepted_renderer", None)
            if not enabled() or getattr(renderer, "format", None) != "json":
                return method(self, request, *args, **kwargs)
            key = _key(request, scope)
            try:
                generation = _current_generation()
                stored = _local_pages.get(key, generation)
                if stored is None:
                    stored = cache.get(key)
                    if stored is not None and stored[0] == generation:
                        # Not longer than the shared entry lives (its age is unknown here).
                        _local_pages.put(key, stored, settings.API_LIST_CACHE_SECONDS)
            except Exception:  # a cache outage is a miss, never a failed request
                logger.warning("API list cache unavailable", exc_info=True)
                return method(self, request, *args, **kwargs)
            if stored is not None and stored[0] == generation:
                return HttpResponse(stored[2], content_type=stored[1])
            response = method(self, request, *args, **kwargs)
            if response.status_code == 200:

                def store(rendered: Response) -> None:
                    item: Page = (
                        generation,
                        rendered.get("Content-Type", "application/json"),
                        bytes(rendered.content),
                    )
                    _local_pages.put(key, item, settings.API_LIST_CACHE_SECONDS)
                    try:
                        cache.set(key, item, settings.API_LIST_CACHE_SECONDS)
                    except Exception:
                        logger.warning("API list cache unavailable", exc_info=True)

                response.add_post_render_callback(store)
            return response

        return wrapper

    return decorate
