"""Sign in and out, sign-up (open unless SIGNUP_ENABLED=false), the API tokens page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from catalogs.accounts.models import ApiToken
from catalogs.accounts.services import token_digest

pytestmark = pytest.mark.django_db


def test_sign_in_and_out(client, owner):
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and 'name="username"' in page.content.decode()
    response = client.post(
        "/accounts/login/", {"username": "owner", "password": "secret-password"}, follow=True
    )
    assert "Sign out (owner)" in response.content.decode()
    response = client.post("/accounts/logout/", follow=True)
    assert "Sign in" in response.content.decode()
    assert "Sign out" not in response.content.decode()


def test_a_wrong_password_is_refused(client, owner):
    response = client.post("/accounts/login/", {"username": "owner", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password." in response.content.decode()


def test_sign_up_is_open_by_default(client):
    assert '<a href="/accounts/signup/">Sign up</a>' in client.get("/").content.decode()
    response = client.post(
        "/accounts/signup/",
        {
            "username": "new",
            "email": "new@example.org",
            "password1": "a-long-pass-9876",
            "password2": "a-long-pass-9876",
        },
        follow=True,
    )
    assert "Sign out (new)" in response.content.decode()
    assert get_user_model().objects.get(username="new").email == "new@example.org"


def test_closed_sign_up_is_refused_and_creates_nobody(client, settings):
    settings.SIGNUP_ENABLED = False
    assert client.get("/").content.decode().count("Sign up") == 0
    response = client.post(
        "/accounts/signup/",
        {
            "username": "new",
            "email": "new@example.org",
            "password1": "a-long-pass-9876",
            "password2": "a-long-pass-9876",
        },
    )
    assert response.status_code == 403
    assert "Sign-up is closed; ask an administrator for an account." in response.content.decode()
    assert not get_user_model().objects.filter(username="new").exists()


@pytest.mark.parametrize(
    ("form", "message"),
    [
        (
            {"password1": "a-long-pass-9876", "password2": "other-pass-1234"},
            "The two password fields didn’t match.",
        ),
        ({"email": ""}, "This field is required."),
        ({"email": "not-an-address"}, "Enter a valid email address."),
    ],
)
def test_a_bad_sign_up_says_why_and_creates_nobody(client, form, message):
    data = {
        "username": "new",
        "email": "new@example.org",
        "password1": "a-long-pass-9876",
        "password2": "a-long-pass-9876",
        **form,
    }
    response = client.post("/accounts/signup/", data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not get_user_model().objects.filter(username="new").exists()


def test_tokens_page_creates_named_scoped_tokens_shown_once_and_deletes_them(client, owner):
    client.force_login(owner)
    assert "You have no token." in client.get("/accounts/tokens/").content.decode()
    created = client.post(
        "/accounts/tokens/",
        {"action": "create", "name": "ci", "scopes": ["read", "publish"], "expires_in_days": "30"},
    )
    body = created.content.decode()
    token = ApiToken.objects.get(user=owner)
    secret = body.split('<code id="token-key">')[1].split("</code>")[0]
    assert secret.startswith("krm_") and token.digest == token_digest(secret)
    assert (token.name, token.scopes) == ("ci", ["read", "publish"])
    assert token.expires_at is not None
    # The token works against the API; the list page never shows the secret again.
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.post("/api/v1/publishers/", {"slug": "by-token"}, format="json").status_code == 201
    listed = client.get("/accounts/tokens/").content.decode()
    assert secret not in listed and token.hint in listed and "read, publish" in listed
    # Deleting asks first, then the token stops working.
    asked = client.post("/accounts/tokens/", {"action": "delete", "token": token.pk})
    assert "Delete the token ci?" in asked.content.decode()
    assert ApiToken.objects.filter(pk=token.pk).exists()
    client.post("/accounts/tokens/", {"action": "delete", "token": token.pk, "confirm": "yes"})
    assert not ApiToken.objects.filter(user=owner).exists()
    assert api.get("/api/v1/publishers/").status_code == 401


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"name": "", "scopes": ["read"]}, 400, "name: give the token a name of 1 to 100"),
        ({"name": "x", "scopes": []}, 400, "scopes: give at least one of read, publish, review"),
        ({"name": "x", "scopes": ["admin"]}, 400, "scopes: unknown scope &#x27;admin&#x27;"),
        ({"name": "x", "scopes": ["read"], "expires_in_days": "0"}, 400, "a whole number of days"),
        ({"name": "x", "scopes": ["read"], "expires_in_days": "soon"}, 400, "a whole number"),
        (
            {"name": "old", "scopes": ["read"]},
            409,
            "you already have a token named &#x27;old&#x27;",
        ),
    ],
)
def test_a_bad_token_form_says_why_and_changes_nothing(client, owner, form, status, message):
    from tests.catalogs.factories import api_token_key

    api_token_key(owner)
    owner.api_tokens.update(name="old")
    client.force_login(owner)
    response = client.post("/accounts/tokens/", {"action": "create", **form})
    assert response.status_code == status
    assert message in response.content.decode()
    assert list(owner.api_tokens.values_list("name", flat=True)) == ["old"]


def test_an_unknown_token_action_is_refused_and_keeps_the_tokens(client, owner):
    from tests.catalogs.factories import api_token_key

    api_token_key(owner)
    client.force_login(owner)
    response = client.post("/accounts/tokens/", {"action": "delete-all"})
    assert response.status_code == 400
    assert (
        "Unknown action &#x27;delete-all&#x27;: use create or delete." in response.content.decode()
    )
    assert owner.api_tokens.count() == 1


@pytest.mark.parametrize(
    "path",
    ["catalogs/htmx.min.js", "catalogs/htmx.LICENSE", "catalogs/site.css", "catalogs/site.js"],
)
def test_vendored_assets_are_served_by_the_registry(client, path):
    response = client.get(f"/static/{path}")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert len(body) > 100


def test_pages_load_nothing_from_elsewhere(client):
    for path in ("/", "/accounts/login/"):
        body = client.get(path).content.decode()
        assert "//cdn" not in body and "https://" not in body.split("<main>")[0]
    # htmx comes from this server (the search page at "/" needs none and links none).
    assert '<script src="/static/catalogs/htmx.min.js" defer></script>' in body
