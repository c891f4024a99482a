"""Reads of API tokens: a user's list, and the token a presented secret names."""

from __future__ import annotations

from django.contrib.auth.models import User as AuthUser
from django.db.models import QuerySet

from catalogs.accounts.models import ApiToken
from catalogs.accounts.services import token_digest


def api_token_list(*, user: AuthUser) -> QuerySet[ApiToken]:
    """``user``'s tokens, newest first."""
    return ApiToken.objects.filter(user=user)


def api_token_for_secret(secret: str) -> ApiToken | None:
    """The token whose secret is ``secret``, with its user, or None (expiry not checked)."""
    return ApiToken.objects.select_related("user").filter(digest=token_digest(secret)).first()
