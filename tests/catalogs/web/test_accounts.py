"""Sign in and out, sign-up behind SIGNUP_ENABLED, the API tokens page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

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


def test_sign_up_is_closed_by_default(client):
    assert client.get("/").content.decode().count("Sign up") == 0
    response = client.post(
        "/accounts/signup/",
        {"username": "new", "password1": "a-long-pass-9876", "password2": "a-long-pass-9876"},
    )
    assert response.status_code == 403
    assert "Sign-up is closed; ask an administrator for an account." in response.content.decode()
    assert not get_user_model().objects.filter(username="new").exists()


def test_sign_up_when_enabled(client, settings):
    settings.SIGNUP_ENABLED = True
    assert "Sign up" in client.get("/").content.decode()
    response = client.post(
        "/accounts/signup/",
        {"username": "new", "password1": "a-long-pass-9876", "password2": "a-long-pass-9876"},
        follow=True,
    )
    assert "Sign out (new)" in response.content.decode()
    assert get_user_model().objects.filter(username="new").exists()


def test_sign_up_with_mismatched_passwords_creates_nobody(client, settings):
    settings.SIGNUP_ENABLED = True
    response = client.post(
        "/accounts/signup/",
        {"username": "new", "password1": "a-long-pass-9876", "password2": "other-pass-1234"},
    )
    assert "The two password fields didn’t match." in response.content.decode()
    assert not get_user_model().objects.filter(username="new").exists()


def test_tokens_create_regenerate_and_revoke(client, owner):
    client.force_login(owner)
    assert "You have no token." in client.get("/accounts/tokens/").content.decode()
    created = client.post("/accounts/tokens/", {"action": "create"})
    key = Token.objects.get(user=owner).key
    assert key in created.content.decode()
    # The token works against the API.
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.post("/api/v1/publishers/", {"slug": "by-token"}, format="json").status_code == 201
    client.post("/accounts/tokens/", {"action": "regenerate", "confirm": "yes"})
    assert Token.objects.get(user=owner).key != key
    client.post("/accounts/tokens/", {"action": "revoke", "confirm": "yes"})
    assert not Token.objects.filter(user=owner).exists()


@pytest.mark.parametrize(
    ("action", "question", "button"),
    [
        ("regenerate", "Regenerate your token?", "Yes, regenerate it"),
        ("revoke", "Revoke your token?", "Yes, revoke it"),
    ],
)
def test_regenerate_and_revoke_ask_first_and_change_nothing_until_confirmed(
    client, owner, action, question, button
):
    client.force_login(owner)
    key = Token.objects.create(user=owner).key
    response = client.post("/accounts/tokens/", {"action": action})
    body = response.content.decode()
    assert response.status_code == 200
    assert question in body and button in body
    # The confirm button posts the same action with confirm=yes; Cancel goes back.
    assert f'<input type="hidden" name="action" value="{action}">' in body
    assert 'name="confirm" value="yes"' in body
    assert '<a href="/accounts/tokens/">Cancel</a>' in body
    assert Token.objects.get(user=owner).key == key
    # Anything but confirm=yes is still only the question.
    client.post("/accounts/tokens/", {"action": action, "confirm": "no"})
    assert Token.objects.get(user=owner).key == key


def test_an_unknown_token_action_is_refused_and_keeps_the_token(client, owner):
    client.force_login(owner)
    client.post("/accounts/tokens/", {"action": "create"})
    key = Token.objects.get(user=owner).key
    response = client.post("/accounts/tokens/", {"action": "delete-all"})
    assert response.status_code == 400
    assert (
        "Unknown action &#x27;delete-all&#x27;: use create, regenerate or revoke."
        in response.content.decode()
    )
    assert Token.objects.get(user=owner).key == key


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
