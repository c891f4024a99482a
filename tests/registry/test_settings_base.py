"""base.py: safe development defaults, each overridable from the environment."""

from pathlib import Path

import pytest

MODULE = "registry.settings.base"
ROOT = Path(__file__).resolve().parents[2]


def test_defaults_need_no_services(load_settings):
    values = load_settings(MODULE)
    assert values["DEBUG"] is False
    assert values["DB_ENGINE"] == "django.db.backends.sqlite3"
    assert values["DB_NAME"] == str(ROOT / "db.sqlite3")
    assert values["CELERY_TASK_ALWAYS_EAGER"] is True
    assert values["CATALOG_MAX_BYTES"] == 5 * 1024 * 1024
    assert values["MEDIA_ROOT"] == str(ROOT / "media")
    assert "127.0.0.1" in values["ALLOWED_HOSTS"]
    assert values["REGISTRY_PUBLIC_URL"] == "http://127.0.0.1:8000"
    assert values["API_LIST_CACHE"] == "auto"  # off on this default per-process cache


def test_a_bad_api_list_cache_mode_is_a_clear_error(settings_error):
    assert settings_error(MODULE, API_LIST_CACHE="sometimes") == (
        "django.core.exceptions.ImproperlyConfigured: "
        "API_LIST_CACHE must be auto, on or off, not 'sometimes'."
    )


def test_environment_overrides(load_settings):
    values = load_settings(
        MODULE,
        DEBUG="1",
        DATABASE_URL="postgres://u:p@db:5432/reg",
        CELERY_BROKER_URL="redis://r:6379/1",
        CATALOG_MAX_BYTES="1234",
        ALLOWED_HOSTS="a.example,b.example",
    )
    assert values["DEBUG"] is True
    assert (values["DB_ENGINE"], values["DB_NAME"]) == ("django.db.backends.postgresql", "reg")
    assert values["CELERY_BROKER_URL"] == "redis://r:6379/1"
    assert values["CELERY_TASK_ALWAYS_EAGER"] is False
    assert values["CATALOG_MAX_BYTES"] == 1234
    assert values["ALLOWED_HOSTS"] == ["a.example", "b.example"]


def test_a_non_numeric_size_limit_is_a_clear_error(settings_error):
    assert settings_error(MODULE, CATALOG_MAX_BYTES="5MB") == (
        "django.core.exceptions.ImproperlyConfigured: "
        "CATALOG_MAX_BYTES must be a whole number, got '5MB'."
    )


@pytest.mark.parametrize(
    ("addr", "public_url"),
    [
        ("127.0.0.1:8123", "http://127.0.0.1:8123"),
        ("8124", "http://127.0.0.1:8124"),
        ("0.0.0.0:8125", "http://127.0.0.1:8125"),
        ("localhost:8126", "http://localhost:8126"),
        ("[::1]:8127", "http://[::1]:8127"),
    ],
)
def test_the_quick_start_derives_the_public_url_from_krm_addr(load_settings, addr, public_url):
    assert load_settings(MODULE, KRM_ADDR=addr)["REGISTRY_PUBLIC_URL"] == public_url


def test_an_explicit_public_url_wins_over_krm_addr(load_settings):
    values = load_settings(
        MODULE, KRM_ADDR="127.0.0.1:8123", REGISTRY_PUBLIC_URL="https://reg.example/"
    )
    assert values["REGISTRY_PUBLIC_URL"] == "https://reg.example"
