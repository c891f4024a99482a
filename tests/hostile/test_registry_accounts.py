"""Guessing passwords and user names: sign-in is throttled (django-axes), sign-up does not tell.

A guesser gets LOGIN_FAILURE_LIMIT tries per user name and address, then a 429 that even the
right password does not lift until the lockout is over; another user is not affected. Sign-up
refuses a taken name in any case without saying that an account of that name exists.
"""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
LOCKED = "Signing in as this user from your address is locked for a while"


def _sign_in(client, username: str, password: str):
    return client.post(LOGIN, {"username": username, "password": password})


def test_forty_guesses_then_the_right_password_is_still_refused(client, owner, other_user):
    statuses = [_sign_in(client, "owner", f"guess-{i}").status_code for i in range(40)]
    # Five wrong answers are answered as such; from then on the pair is locked (429).
    assert statuses == [200] * 4 + [429] * 36
    response = _sign_in(client, "owner", "secret-password")
    assert response.status_code == 429
    assert LOCKED in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert AccessAttempt.objects.get(username="owner").failures_since_start == 41
    # The lockout is of that user name from that address: others still sign in.
    other = _sign_in(client, "other", "secret-password")
    assert (other.status_code, other.url) == (302, "/")


def test_a_lockout_ends_and_success_resets_the_count(client, owner, settings):
    for i in range(4):
        assert _sign_in(client, "owner", f"guess-{i}").status_code == 200
    assert _sign_in(client, "owner", "secret-password").status_code == 302
    assert not AccessAttempt.objects.filter(username="owner").exists()


@pytest.mark.parametrize("taken", ["owner", "OWNER", "Owner"])
def test_sign_up_does_not_say_that_a_name_exists(client, owner, settings, taken):
    settings.SIGNUP_ENABLED = True
    before = list(get_user_model().objects.values_list("username", flat=True))
    response = client.post(
        "/accounts/signup/",
        {"username": taken, "password1": "a-long-pass-9876", "password2": "a-long-pass-9876"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "This user name is not available: choose another." in page
    assert "already exists" not in page
    assert list(get_user_model().objects.values_list("username", flat=True)) == before
