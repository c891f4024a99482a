"""Who is calling the OCI endpoint: HTTP Basic (user name + API token) or a bearer token.

Bearer tokens come from ``GET /v2/token`` (the Docker/OCI token flow): Django-signed, short-lived,
and carrying the granted ``repository:<name>:<actions>`` scopes and a keyed fingerprint of the API
token they were issued for, so deleting or replacing that API token revokes them at once. A public
catalog's pulls need no credentials; bad credentials are refused all the same (401),
as other registries do. A private catalog's repository is seen only by its publisher's owners
(and staff): anyone else is told the name is unknown, as for a repository that does not exist.
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
from rest_framework.authtoken.models import Token

from catalogs.distribution.errors import UnauthorizedError
from catalogs.publishing.models import Catalog
from catalogs.publishing.selectors import user_is_owner_or_staff, visible_to
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

    def may(self, repository: str, action: str) -> bool:
        """Whether the token (if any) covers ``action`` on ``repository``."""
        if self.scopes is None:
            return True
        return action in self.scopes.get(repository, set())


def _fingerprint(key: str) -> str:
    """A keyed digest of an API token's key: names it in a bearer token without revealing it."""
    return salted_hmac(_SALT, key).hexdigest()[:32]


def _basic_token(header: str) -> Token:
    try:
        decoded = base64.b64decode(header.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise UnauthorizedError("malformed Basic credentials")
    username, sep, secret = decoded.partition(":")
    token = Token.objects.select_related("user").filter(key=secret).first() if sep else None
    if token is None or token.user.get_username() != username or not token.user.is_active:
        raise UnauthorizedError(
            "authentication required: use your user name and an API token (password) as the "
            "credentials"
        )
    return token


def identity_from_request(request: HttpRequest) -> Identity:
    """The caller of ``request``, or UnauthorizedError for credentials that do not check out."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if not header:
        return Identity()
    if scheme == "basic":
        token = _basic_token(value)
        return Identity(user=token.user, api_token=_fingerprint(token.key))
    if scheme == "bearer":
        try:
            claims = signing.loads(
                value.strip(), salt=_SALT, max_age=settings.OCI_TOKEN_TTL_SECONDS
            )
        except signing.SignatureExpired:
            raise UnauthorizedError("bearer token expired: ask /v2/token for a new one")
        except signing.BadSignature:
            raise UnauthorizedError("invalid bearer token")
        user, fingerprint = None, ""
        if claims.get("u") is not None:
            # The API token it was issued for must still be the user's (one query for both).
            api_token = (
                Token.objects.select_related("user")
                .filter(user_id=claims["u"], user__is_active=True)
                .first()
            )
            fingerprint = _fingerprint(api_token.key) if api_token is not None else ""
            if not fingerprint or not constant_time_compare(fingerprint, claims.get("k", "")):
                raise UnauthorizedError(
                    "invalid bearer token: the API token it was issued for was deleted or "
                    "replaced; sign in again"
                )
            user = api_token.user if api_token is not None else None
        return Identity(
            user=user,
            scopes={k: set(v) for k, v in claims.get("a", {}).items()},
            api_token=fingerprint,
        )
    raise UnauthorizedError(f"unsupported authorization scheme {scheme!r}")


def _granted(user: AuthUser | None, repository: str, actions: list[str]) -> list[str]:
    """What of ``actions`` the user may do on ``repository`` (pull: anyone on a public catalog,
    members on a private one; push: owners)."""
    granted = []
    if "pull" in actions:
        publisher, _, name = repository.partition("/")
        access = serving_access(publisher_slug=publisher, catalog_name=name)
        if access is None or visible_to(
            viewer=user or AnonymousUser(),  # None would be the system
            private=access.private,
            publisher_id=access.publisher_id,
        ):
            granted.append("pull")
    if "push" in actions and user is not None:
        publisher, _, name = repository.partition("/")
        catalog = Catalog.objects.select_related("publisher").filter(
            publisher__slug=publisher, name=name
        )
        found = catalog.first()
        if found is not None and user_is_owner_or_staff(publisher=found.publisher, user=user):
            granted.append("push")
    return granted


def oci_token_issue(*, user: AuthUser | None, scopes: list[str], api_token: str = "") -> dict:
    """A signed bearer token for the scopes requested (``repository:<name>:<a>,<b>``).

    ``api_token`` is the fingerprint of the API token the caller signed in with (required with a
    user): the bearer token stops working when that API token is deleted or replaced.
    """
    access: dict[str, list[str]] = {}
    for scope in scopes:
        parts = scope.split(":")
        if len(parts) != 3 or parts[0] != "repository":
            continue
        actions = [a for a in parts[2].split(",") if a]
        access.setdefault(parts[1], [])
        for action in _granted(user, parts[1], actions):
            if action not in access[parts[1]]:
                access[parts[1]].append(action)
    claims: dict = {"u": user.pk if user else None, "a": access}
    if user is not None:
        if not api_token:
            raise UnauthorizedError("a bearer token for a user needs the API token it comes from")
        claims["k"] = api_token
    token = signing.dumps(claims, salt=_SALT)
    issued = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ttl = settings.OCI_TOKEN_TTL_SECONDS
    return {"token": token, "access_token": token, "expires_in": ttl, "issued_at": issued}


def challenge(request: HttpRequest, *, repository: str = "", actions: str = "pull,push") -> str:
    """The ``WWW-Authenticate`` value that sends a client to the token endpoint."""
    host = request.get_host()
    realm = request.build_absolute_uri("/v2/token")
    value = f'Bearer realm="{realm}",service="{host}"'
    if repository:
        value += f',scope="repository:{repository}:{actions}"'
    return value
