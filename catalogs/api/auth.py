"""API authentication: DRF's token scheme with the lookup as one plain SQL query.

Every authenticated API request looks its token up; compiling the ORM query
(``Token.objects.select_related("user").get(key=...)``) costs more than running it, and more than
answering a cached list page (catalogs/api/cache.py). Same rules and messages as DRF's class.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token


@functools.cache
def _lookup() -> tuple[str, list[str], list[tuple[int, list, Any]]]:
    """The query (token's creation time, then every user column), the user's attribute names
    and, per value that needs them, the database converters the ORM would apply."""
    user_model = get_user_model()
    quote = connection.ops.quote_name
    fields = [Token._meta.get_field("created"), *user_model._meta.concrete_fields]
    converters = []
    for index, field in enumerate(fields):
        column = field.get_col(field.model._meta.db_table)
        found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if found:
            converters.append((index, found, column))
    columns = [str(field.column) for field in user_model._meta.concrete_fields]
    names = [field.attname for field in user_model._meta.concrete_fields]
    token_table = quote(Token._meta.db_table)
    user_table = quote(user_model._meta.db_table)
    assert user_model._meta.pk is not None
    user_pk = quote(str(user_model._meta.pk.column))
    select = ", ".join(f"u.{quote(c)}" for c in columns)
    sql = (
        f"SELECT t.{quote('created')}, {select} FROM {token_table} t JOIN {user_table} u "
        f"ON u.{user_pk} = t.{quote('user_id')} WHERE t.{quote('key')} = %s"
    )
    return sql, names, converters


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, as DRF's class answers it (401 + WWW-Authenticate)."""

    def authenticate_credentials(self, key: str):
        sql, names, converters = _lookup()
        with connection.cursor() as cursor:
            cursor.execute(sql, [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        values = list(row)
        for index, found, column in converters:
            for convert in found:
                values[index] = convert(values[index], column, connection)
        created = values.pop(0)
        user = get_user_model().from_db(connection.alias, names, values)
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token = Token.from_db(
            connection.alias, ["key", "user_id", "created"], [key, user.pk, created]
        )
        token.user = user
        return (user, token)


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <key>``: the same API tokens under the scheme most clients send."""

    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of ``BearerTokenAuthentication`` (drf-spectacular finds it
    by its target class; the ``Token`` scheme is its own ``tokenAuth``)."""

    target_class = "catalogs.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"
    priority = 1

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token: `Authorization: Bearer <key>` (the same tokens as "
            "`Token <key>`).",
        }


def user_from_request(request: Any) -> Any:
    """Who sends ``request`` to a plain Django view (``/c/…``, ``/tuf/…``): the owner of the API
    token in ``Authorization: Token|Bearer <key>`` or ``Basic <user:key>`` (what curl and krm
    send from a ``.netrc``), else the session's user (maybe anonymous).

    Credentials that do not check out raise ``AuthenticationFailed``, whatever is asked for, so
    that a refusal never tells a private name from a missing one.
    """
    import base64
    import binascii

    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        return getattr(request, "user", None) or _anonymous()
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() in ("token", "bearer") and value and " " not in value:
        return TokenAuthentication().authenticate_credentials(value)[0]
    if scheme.lower() == "basic":
        try:
            username, sep, key = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            sep = ""
        if sep and key:
            user = TokenAuthentication().authenticate_credentials(key)[0]
            if user.get_username() == username:
                return user
        raise exceptions.AuthenticationFailed(
            _("Invalid credentials: use your user name and an API token as the password.")
        )
    raise exceptions.AuthenticationFailed(
        _("Unsupported Authorization header: send 'Bearer <token>', 'Token <token>' or Basic.")
    )


def _anonymous() -> Any:
    from django.contrib.auth.models import AnonymousUser

    return AnonymousUser()
