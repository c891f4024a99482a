"""The sign-in gate (catalogs/accounts/login_gate.py), with a check held in flight by the test.

While a password check of a user name (or LOGIN_CHECKS_PER_ADDRESS of an address) is in flight,
another sign-in gets the lockout answer at once: nothing hashed, not counted by axes, the same for
a user that does not exist. Once the check ends the right password signs in. The live-server test
of guesses sent at once is tests/hostile/test_registry_login.py.
"""

from __future__ import annotations

import re
import time
from contextlib import ExitStack

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import hashers

from catalogs.accounts.login_gate import password_check_place

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
LOCKED = "Signing in as this user from your address is locked for a while"


@pytest.fixture
def hashes(monkeypatch):
    """One entry per password hashed (checked, or hashed for a user name that is nobody's)."""
    seen: list[str] = []
    hasher = hashers.get_hasher("default")
    encode = type(hasher).encode

    def counted(self, password, salt, *args, **kwargs):
        seen.append("hash")
        return encode(self, password, salt, *args, **kwargs)

    monkeypatch.setattr(type(hasher), "encode", counted)
    return seen


def _sign_in(client, username: str, password: str, address: str = "127.0.0.1"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.parametrize("held", ["owner", "OWNER"])
def test_a_sign_in_while_the_user_names_check_is_in_flight_is_refused_at_once(
    client, owner, hashes, held
):
    with password_check_place(username=held, address="192.0.2.9") as admitted:
        assert admitted
        response = _sign_in(client, "owner", "secret-password")
        assert response.status_code == 429
        assert LOCKED in response.content.decode()
        assert "_auth_user_id" not in client.session
        assert hashes == []
        # No password was checked: no failure is counted towards a lockout.
        assert not AccessAttempt.objects.exists()
    response = _sign_in(client, "owner", "secret-password")
    assert (response.status_code, response.url) == (302, "/")
    assert hashes == ["hash"]


def test_the_admin_sign_in_is_gated_too(client, staff_user, hashes):
    with password_check_place(username=staff_user.username, address=None):
        response = client.post(
            "/admin/login/?next=/admin/",
            {"username": staff_user.username, "password": "secret-password"},
        )
        assert response.status_code == 429
        assert LOCKED in response.content.decode()
        assert hashes == []
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": staff_user.username, "password": "secret-password"},
    )
    assert (response.status_code, response.url) == (302, "/admin/")


def test_the_refusal_does_not_tell_whether_the_user_exists(client, owner, hashes):
    pages = {}
    for name in ("owner", "nobody"):
        with password_check_place(username=name, address=None):
            response = _sign_in(client, name, "guess")
            page = re.sub(r'"[A-Za-z0-9]{64}"', "", response.content.decode())  # CSRF tokens
            pages[name] = (response.status_code, page)
    assert pages["owner"] == pages["nobody"]
    assert pages["owner"][0] == 429
    assert hashes == []


@pytest.mark.parametrize("limit", [1, 2])
def test_an_address_has_its_limit_of_checks_in_flight(
    client, owner, other_user, hashes, settings, limit
):
    settings.LOGIN_CHECKS_PER_ADDRESS = limit
    with ExitStack() as held:
        places = [
            held.enter_context(password_check_place(username=name, address="192.0.2.7"))
            for name in ("a", "b", "c")
        ]
        assert places == [True] * limit + [False] * (3 - limit)
        assert _sign_in(client, "owner", "secret-password", "192.0.2.7").status_code == 429
        assert hashes == []
        # Another address is not held up.
        response = _sign_in(client, "other", "secret-password", "192.0.2.8")
        assert (response.status_code, response.url) == (302, "/")
    client.logout()
    response = _sign_in(client, "owner", "secret-password", "192.0.2.7")
    assert (response.status_code, response.url) == (302, "/")


def test_a_wrong_password_gives_its_places_back_and_is_counted(client, owner, hashes):
    assert _sign_in(client, "owner", "wrong").status_code == 200
    assert hashes == ["hash"]
    assert AccessAttempt.objects.get(username="owner").failures_since_start == 1
    with password_check_place(username="owner", address="127.0.0.1") as admitted:
        assert admitted


def test_a_place_left_by_a_dead_process_frees_itself(settings):
    settings.LOGIN_GATE_SECONDS = 1
    held = password_check_place(username="owner", address="192.0.2.5")
    assert held.__enter__()  # never left: its process died during the check
    with password_check_place(username="owner", address="192.0.2.6") as admitted:
        assert not admitted
    time.sleep(1.2)
    with password_check_place(username="owner", address="192.0.2.5") as admitted:
        assert admitted


def test_a_cache_outage_leaves_sign_in_to_axes(client, owner, settings, caplog):
    # Nothing listens on port 9 (discard): every cache call fails at once.
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        },
    }
    assert _sign_in(client, "owner", "wrong").status_code == 200
    assert AccessAttempt.objects.get(username="owner").failures_since_start == 1
    response = _sign_in(client, "owner", "secret-password")
    assert (response.status_code, response.url) == (302, "/")
    assert "sign-in gate: the cache is unavailable, checking anyway" in caplog.text
