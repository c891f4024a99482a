"""``Authorization: Token <key>`` through the registry's own lookup (catalogs/api/auth.py): the
same users, errors and challenge as DRF's TokenAuthentication, with one plain SQL query."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication as DrfTokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIClient

from catalogs.api.auth import TokenAuthentication

pytestmark = pytest.mark.django_db


def test_the_user_and_token_are_those_drf_finds(staff_user):
    staff_user.last_login = timezone.now()
    staff_user.save()
    key = Token.objects.create(user=staff_user).key
    ours, theirs = (
        TokenAuthentication().authenticate_credentials(key),
        DrfTokenAuthentication().authenticate_credentials(key),
    )
    fields = [f.attname for f in type(staff_user)._meta.concrete_fields]
    assert [getattr(ours[0], f) for f in fields] == [getattr(theirs[0], f) for f in fields]
    assert timezone.is_aware(ours[0].date_joined) and timezone.is_aware(ours[0].last_login)
    assert (ours[1].key, ours[1].user_id, ours[1].created) == (
        theirs[1].key,
        theirs[1].user_id,
        theirs[1].created,
    )
    assert ours[1].user is ours[0]


def test_a_token_signs_the_caller_in(staff_user):
    key = Token.objects.create(user=staff_user).key
    response = APIClient().get("/api/v1/sources/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Token nosuchtoken", "Invalid token."),
        ("Token", "Invalid token header. No credentials provided."),
        ("Token a b", "Invalid token header. Token string should not contain spaces."),
    ],
)
def test_a_bad_token_is_401_with_the_challenge(header, detail):
    response = APIClient().get("/api/v1/publishers/", HTTP_AUTHORIZATION=header)
    assert (response.status_code, response.json()) == (401, {"detail": detail})
    assert response["WWW-Authenticate"] == "Token"


def test_an_inactive_users_token_is_refused(other_user):
    key = Token.objects.create(user=other_user).key
    other_user.is_active = False
    other_user.save()
    with pytest.raises(AuthenticationFailed) as err:
        TokenAuthentication().authenticate_credentials(key)
    assert str(err.value.detail) == "User inactive or deleted."
    response = APIClient().get("/api/v1/publishers/", HTTP_AUTHORIZATION=f"Token {key}")
    assert (response.status_code, response.json()) == (401, {"detail": "User inactive or deleted."})
