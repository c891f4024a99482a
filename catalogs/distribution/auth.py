"""Who is calling the OCI endpoint: HTTP Basic (user name + API token) or a bearer token.

Bearer tokens come from ``GET /v2/token`` (the Docker/OCI token flow): Django-signed, short-lived,
and carrying the granted ``repository:<name>:<actions>`` scopes, the API token's id and a keyed
fingerprint of its digest, so deleting that API token (or its expiry) revokes them at once. An API
token's scopes bound what it can do here too: ``push`` needs ``publish``, ``pull`` of a private
repository needs ``read``. A public catalog's pulls need no credentials; bad credentials are
refused all the same (401), as other registries do. A private catalog's repository is seen only by
its publisher's owners (and staff): anyone else is told the name is unknown, as for a repository
that does not exist.
"""

from __future__ import annotations

import base64
import binascii
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.models import User as AuthUser
from django.core import signing
from django.http import HttpRequest
from django.utils.crypto import constant_time_compare, salted_hmac

from catalogs.accounts.models import ApiToken, TokenScope
from catalogs.accounts.selectors import api_token_for_secret
from catalogs.accounts.services import api_token_mark_used
from catalogs.distribution.errors import UnauthorizedError
from catalogs.publishing.models import Catalog
from catalogs.publishing.selectors import user_may_publish, visible_to
from catalogs.publishing.serving import serving_access

_SALT = "catalogs.distribution.token"


@dataclass
class Identity:
    """The caller: a user or nobody, and, for bearer tokens, the scopes the token grants."""

    user: AuthUser | None = None
    # None: credentials given directly (Basic), so the user's own rights apply everywhere.
    scopes: dict[str, set[str]] | None = field(default=None)
    # The fingerprint of the API token behind these credentials (empty for nobody).
    api_token: str = ""
    # The API token behind these credentials (None for nobody).
    token: ApiToken | None = None

    def token_lacks(self, action: str) -> str:
        """The API token scope ``action`` needs that the token lacks, or ""."""
        needed = TokenScope.PUBLISH.value if action == "push" else TokenScope.READ.value
        if self.token is not None and not self.token.has_scope(needed):
            return needed
        return ""

    def may(self, repository: str, action: str) -> bool:
        """Whether the credentials (if any) cover ``action`` on ``repository``."""
        if self.token_lacks(action):
            return False
        if self.scopes is None:
            return True
        return action in self.scopes.get(repository, set())


def _fingerprint(token: ApiToken) -> str:
    """A keyed digest of an API token's digest: names it in a bearer token without revealing it."""
    return salted_hmac(_SALT, token.digest).hexdigest()[:32]


def _basic_token(header: str) -> ApiToken:
    try:
        decoded = base64.b64decode(header.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise UnauthorizedError("malformed Basic credentials")
    username, sep, secret = decoded.partition(":")
    token = api_token_for_secret(secret) if sep else None
    if token is None or token.user.get_username() != username or not token.user.is_active:
        raise UnauthorizedError(
            "authentication required: use your user name and an API token (password) as the "
            "credentials"
        )
    if token.is_expired():
        raise UnauthorizedError(f"the API token {token.name!r} has expired: create a new one")
    api_token_mark_used(token=token)
    return token


def identity_from_request(request: HttpRequest) -> Identity:
    """The caller of ``request``, or UnauthorizedError for credentials that do not check out
    (worked out once per request: the visibility and the push checks both ask)."""
    cached = request.__dict__.get("_oci_identity")
    if cached is None:
        cached = request.__dict__["_oci_identity"] = _identity_of(request)
    return cached


def _identity_of(request: HttpRequest) -> Identity:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if not header:
        return Identity()
    if scheme == "basic":
        token = _basic_token(value)
        return Identity(user=token.user, api_token=_fingerprint(token), token=token)
    if scheme == "bearer":
        try:
            claims = signing.loads(
                value.strip(), salt=_SALT, max_age=settings.OCI_TOKEN_TTL_SECONDS
            )
        except signing.SignatureExpired:
            raise UnauthorizedError("bearer token expired: ask /v2/token for a new one")
        except signing.BadSignature:
            raise UnauthorizedError("invalid bearer token")
        user, fingerprint, api_token = None, "", None
        if claims.get("u") is not None:
            # The API token it was issued for must still be the user's (one query for both).
            api_token = (
                ApiToken.objects.select_related("user")
                .filter(pk=claims.get("t"), user_id=claims["u"], user__is_active=True)
                .first()
            )
            fingerprint = _fingerprint(api_token) if api_token is not None else ""
            if not fingerprint or not constant_time_compare(fingerprint, claims.get("k", "")):
                raise UnauthorizedError(
                    "invalid bearer token: the API token it was issued for was deleted or "
                    "replaced; sign in again"
                )
            assert api_token is not None
            if api_token.is_expired():
                raise UnauthorizedError(
                    f"invalid bearer token: the API token {api_token.name!r} it was issued for "
                    "has expired"
                )
            user = api_token.user
        return Identity(
            user=user,
            scopes={k: set(v) for k, v in claims.get("a", {}).items()},
            api_token=fingerprint,
            token=api_token,
        )
    raise UnauthorizedError(f"unsupported authorization scheme {scheme!r}")


def _granted(
    user: AuthUser | None, repository: str, actions: list[str], token: ApiToken | None
) -> list[str]:
    """What of ``actions`` the user may do on ``repository`` (pull: anyone on a public catalog,
    members on a private one whose API token has the read scope; push: owners whose API token
    has the publish scope)."""
    granted = []
    if "pull" in actions:
        publisher, _, name = repository.partition("/")
        access = serving_access(publisher_slug=publisher, catalog_name=name)
        if access is None or not access.private:
            granted.append("pull")
        elif (token is None or token.has_scope("read")) and visible_to(
            viewer=user or AnonymousUser(),  # None would be the system
            private=access.private,
            publisher_id=access.publisher_id,
        ):
            granted.append("pull")  # a member's, with a token that may read
    if "push" in actions and user is not None and (token is None or token.has_scope("publish")):
        publisher, _, name = repository.partition("/")
        catalog = Catalog.objects.select_related("publisher").filter(
            publisher__slug=publisher, name=name
        )
        found = catalog.first()
        if found is not None and user_may_publish(publisher=found.publisher, user=user):
            granted.append("push")
    return granted


def oci_token_issue(
    *,
    user: AuthUser | None,
    scopes: list[str],
    api_token: str = "",
    token: ApiToken | None = None,
) -> dict:
    """A signed bearer token for the scopes requested (``repository:<name>:<a>,<b>``).

    ``api_token`` is the fingerprint of the API token ``token`` the caller signed in with
    (required with a user): the bearer token stops working when that API token is deleted or
    expires, and grants no more than its scopes.
    """
    access: dict[str, list[str]] = {}
    for scope in scopes:
        parts = scope.split(":")
        if len(parts) != 3 or parts[0] != "repository":
            continue
        actions = [a for a in parts[2].split(",") if a]
        access.setdefault(parts[1], [])
        for action in _granted(user, parts[1], actions, token):
            if action not in access[parts[1]]:
                access[parts[1]].append(action)
    # "u" first: an anonymous token's payload starts with {"u":null (ANONYMOUS_TOKEN_PREFIX),
    # which the nginx template (deploy/nginx/) tells apart to serve anonymous blob pulls from its
    # cache.
    claims: dict = {"u": user.pk if user else None, "a": access}
    if user is not None:
        if not api_token:
            raise UnauthorizedError("a bearer token for a user needs the API token it comes from")
        claims["k"] = api_token
        claims["t"] = token.pk if token is not None else None
    bearer = signing.dumps(claims, salt=_SALT)
    issued = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ttl = settings.OCI_TOKEN_TTL_SECONDS
    return {"token": bearer, "access_token": bearer, "expires_in": ttl, "issued_at": issued}


# The payload of every anonymous bearer token starts with {"u":null (see ``oci_token_issue``).
ANONYMOUS_TOKEN_PREFIX = "eyJ1IjpudWxs"


def anonymous_token_grants_pull(authorization: str, repository: str) -> bool:
    """Whether ``authorization`` is ``Bearer <token>`` with a valid, unexpired anonymous token of
    ``/v2/token`` that grants pull on ``repository``: such a request gets what a request without
    credentials gets (the WSGI fast path answers both). No database query."""
    scheme, _, value = authorization.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value.startswith(ANONYMOUS_TOKEN_PREFIX):
        return False
    try:
        claims = signing.loads(value, salt=_SALT, max_age=settings.OCI_TOKEN_TTL_SECONDS)
    except signing.BadSignature:  # expired ones too (SignatureExpired is one)
        return False
    if not isinstance(claims, dict) or claims.get("u") is not None:
        return False
    granted = claims.get("a", {})
    return isinstance(granted, dict) and "pull" in granted.get(repository, [])


def challenge(request: HttpRequest, *, repository: str = "", actions: str = "pull,push") -> str:
    """The ``WWW-Authenticate`` value that sends a client to the token endpoint."""
    host = request.get_host()
    realm = request.build_absolute_uri("/v2/token")
    value = f'Bearer realm="{realm}",service="{host}"'
    if repository:
        value += f',scope="repository:{repository}:{actions}"'
    return value
