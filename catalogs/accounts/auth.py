"""API authentication: ``Authorization: Token <secret>`` (as DRF's scheme) or ``Bearer <secret>``,
looked up by the secret's SHA-256, refused once expired; the scope check that follows it.

``request.auth`` is the ApiToken for token requests and None for a browser session (whose user
acts with all their rights: the scopes bound tokens, not people).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from catalogs.accounts.models import ApiToken, TokenScope
from catalogs.accounts.selectors import api_token_for_secret
from catalogs.accounts.services import api_token_mark_used

_KEYWORDS = (b"token", b"bearer")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Token <secret>`` or ``Bearer <secret>``; DRF's messages for malformed headers."""

    keyword = "Token"

    def authenticate(self, request: Request):
        auth = authentication.get_authorization_header(request).split()
        if not auth or auth[0].lower() not in _KEYWORDS:
            return None
        if len(auth) == 1:
            raise exceptions.AuthenticationFailed(
                _("Invalid token header. No credentials provided.")
            )
        if len(auth) > 2:
            raise exceptions.AuthenticationFailed(
                _("Invalid token header. Token string should not contain spaces.")
            )
        try:
            secret = auth[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed(
                _("Invalid token header. Token string should not contain invalid characters.")
            )
        return self.authenticate_credentials(secret)

    def authenticate_credentials(self, secret: str):
        """The (user, token) that ``secret`` names, or 401."""
        token = api_token_for_secret(secret)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if token.is_expired():
            assert token.expires_at is not None
            raise exceptions.AuthenticationFailed(
                f"Token {token.name!r} expired on "
                f"{timezone.localtime(token.expires_at):%Y-%m-%d %H:%M %Z}: create a new one."
            )
        api_token_mark_used(token=token)
        return (token.user, token)

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def required_scope(request: Request, view: object) -> str:
    """The scope a request needs: ``read`` for safe methods, else the view's ``token_scopes``
    entry for its action, else ``publish``."""
    if request.method in permissions.SAFE_METHODS:
        return TokenScope.READ.value
    by_action = getattr(view, "token_scopes", {})
    return by_action.get(getattr(view, "action", None), TokenScope.PUBLISH.value)


class TokenHasScope(permissions.BasePermission):
    """A token request must carry the scope its method and action need (403 naming it)."""

    def has_permission(self, request: Request, view: object) -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        needed = required_scope(request, view)
        if not token.has_scope(needed):
            raise exceptions.PermissionDenied(
                f"The token {token.name!r} lacks the {needed!r} scope this request needs (it "
                f"has: {', '.join(token.scopes) or 'none'}). Create a token with the "
                f"{needed!r} scope (POST /api/v1/tokens/ or /accounts/tokens/)."
            )
        return True


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The schema's name for the scheme: an API key in ``Authorization`` (``Token``/``Bearer``)."""

    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "An API token: `Bearer <token>` or `Token <token>` (scopes: read, "
            "publish, review).",
        }


def user_from_request(request: Any) -> Any:
    """Who sends ``request`` to a plain Django view (``/c/…``, ``/tuf/…``): the owner of the API
    token in ``Authorization: Token|Bearer <token>`` or ``Basic <user:token>`` (what curl and krm
    send from a ``.netrc``), else the session's user (maybe anonymous). The token must carry the
    ``read`` scope (these are reads).

    Credentials that do not check out raise ``AuthenticationFailed``, whatever is asked for, so
    that a refusal never tells a private name from a missing one.
    """
    import base64
    import binascii

    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        return getattr(request, "user", None) or AnonymousUser()
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() in ("token", "bearer") and value and " " not in value:
        return _reader(value)
    if scheme.lower() == "basic":
        try:
            username, sep, key = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            sep = ""
        if sep and key:
            user = _reader(key)
            if user.get_username() == username:
                return user
        raise exceptions.AuthenticationFailed(
            _("Invalid credentials: use your user name and an API token as the password.")
        )
    raise exceptions.AuthenticationFailed(
        _("Unsupported Authorization header: send 'Bearer <token>', 'Token <token>' or Basic.")
    )


def _reader(secret: str) -> Any:
    user, token = ApiTokenAuthentication().authenticate_credentials(secret)
    if not token.has_scope(TokenScope.READ.value):
        raise exceptions.AuthenticationFailed(
            f"The token {token.name!r} lacks the 'read' scope this request needs."
        )
    return user
