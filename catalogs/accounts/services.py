"""Writes of API tokens: issue one (the secret is returned once, the row keeps its digest), delete
one, note its use."""

from __future__ import annotations

import datetime
import hashlib
import secrets
from collections.abc import Iterable

from django.contrib.auth.models import User as AuthUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from catalogs.accounts.models import ALL_SCOPES, ApiToken
from catalogs.exceptions import (
    AlreadyExistsError,
    InvalidInputError,
    NotAllowedError,
    NotFoundError,
)

# Scanners (GitHub's, trufflehog's) find secrets by a fixed prefix.
TOKEN_PREFIX = "krm_"
MAX_EXPIRES_IN_DAYS = 3650
# last_used_at is written at most this often per token: a script's every request is no write.
LAST_USED_RESOLUTION = datetime.timedelta(seconds=60)


def token_digest(secret: str) -> str:
    """The SHA-256 hex of ``secret``: what the database keeps (the secret has 256 bits of
    entropy, so a fast hash is the right one; a slow password hash would only cost time)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def scopes_clean(scopes: object) -> list[str]:
    """The scopes in the order of ALL_SCOPES, or InvalidInputError naming the bad one."""
    if isinstance(scopes, str) or not isinstance(scopes, Iterable):
        raise InvalidInputError(f"scopes: a list of {', '.join(ALL_SCOPES)}, not {scopes!r}")
    given = list(scopes)
    for scope in given:
        if scope not in ALL_SCOPES:
            raise InvalidInputError(f"scopes: unknown scope {scope!r}; use {', '.join(ALL_SCOPES)}")
    if not given:
        raise InvalidInputError(f"scopes: give at least one of {', '.join(ALL_SCOPES)}")
    return [s for s in ALL_SCOPES if s in given]


@transaction.atomic
def api_token_create(
    *,
    user: AuthUser,
    name: str,
    scopes: Iterable[str] = ALL_SCOPES,
    expires_in_days: int | None = None,
    granted_by: ApiToken | None = None,
    secret: str | None = None,
) -> tuple[ApiToken, str]:
    """A new token of ``user`` and its secret (shown once). ``granted_by``: the token the
    request came with, whose scopes bound the new one's; ``secret``: a key issued elsewhere
    (DRF's, before tokens were hashed) to keep working."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInputError("name: give the token a name of 1 to 100 characters")
    clean = scopes_clean(scopes)
    if granted_by is not None:
        extra = [s for s in clean if not granted_by.has_scope(s)]
        if extra:
            raise NotAllowedError(
                f"a token cannot grant scopes it does not have ({', '.join(extra)}): sign in, "
                "or use a token that has them"
            )
    expires_at = None
    if expires_in_days is not None:
        if (
            isinstance(expires_in_days, bool)
            or not isinstance(expires_in_days, int)
            or not 1 <= expires_in_days <= MAX_EXPIRES_IN_DAYS
        ):
            raise InvalidInputError(
                f"expires_in_days: a whole number of days from 1 to {MAX_EXPIRES_IN_DAYS}, or "
                f"null for no expiry, not {expires_in_days!r}"
            )
        expires_at = timezone.now() + datetime.timedelta(days=expires_in_days)
    limit = granted_by.expires_at if granted_by is not None else None
    if limit is not None and (expires_at is None or expires_at > limit):
        raise NotAllowedError(
            f"a token cannot create a token that outlives it (this one expires on "
            f"{limit:%Y-%m-%d}): give expires_in_days, or sign in"
        )
    if ApiToken.objects.filter(user=user, name=name).exists():
        raise AlreadyExistsError(f"name: you already have a token named {name!r}")
    secret = secret or TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user,
                name=name,
                digest=token_digest(secret),
                hint=secret[:8],
                scopes=clean,
                expires_at=expires_at,
            )
    except IntegrityError:
        raise AlreadyExistsError(f"name: you already have a token named {name!r}")
    return token, secret


@transaction.atomic
def api_token_delete(*, user: AuthUser, pk: int) -> None:
    """Delete ``user``'s token ``pk``: it stops working at once (OCI bearer tokens too)."""
    deleted, _ = ApiToken.objects.filter(user=user, pk=pk).delete()
    if not deleted:
        raise NotFoundError(f"You have no token {pk}.")


def api_token_mark_used(*, token: ApiToken) -> None:
    """Record that ``token`` was used now (at most one write a minute per token)."""
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now
