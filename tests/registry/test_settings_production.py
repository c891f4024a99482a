"""production.py refuses to start without its secrets and infrastructure."""

import pytest

MODULE = "registry.settings.production"
COMPLETE = {
    "SECRET_KEY": "s3cret-for-the-test",
    "ALLOWED_HOSTS": "registry.example.co",
    "DATABASE_URL": "postgres://registry:pw@db.example.co:5432/registry",
    "CELERY_BROKER_URL": "redis://redis.example.co:6379/0",
    # Presence is checked at start; the key itself is parsed on first use (tests/catalogs/
    # test_signing.py checks those errors).
    "SIGNING_KEY_PEM": "-----BEGIN PRIVATE KEY-----",
    "REGISTRY_PUBLIC_URL": "https://registry.example.co/",
}
PREFIX = "django.core.exceptions.ImproperlyConfigured: "


def test_starts_with_everything_set(load_settings):
    values = load_settings(MODULE, **COMPLETE)
    assert values["DEBUG"] is False
    assert values["SECRET_KEY"] == "s3cret-for-the-test"
    assert values["ALLOWED_HOSTS"] == ["registry.example.co"]
    assert values["DB_ENGINE"] == "django.db.backends.postgresql"
    assert values["DB_NAME"] == "registry"
    assert values["CELERY_BROKER_URL"] == "redis://redis.example.co:6379/0"
    assert values["CELERY_RESULT_BACKEND"] == "redis://redis.example.co:6379/0"
    assert values["CELERY_TASK_ALWAYS_EAGER"] is False
    assert values["STATICFILES"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert values["REGISTRY_PUBLIC_URL"] == "https://registry.example.co"


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("SECRET_KEY", "SECRET_KEY must be set in production: it signs sessions and tokens."),
        (
            "ALLOWED_HOSTS",
            "ALLOWED_HOSTS must be set in production: the host names this registry is served as.",
        ),
        (
            "DATABASE_URL",
            "DATABASE_URL must be set in production: a PostgreSQL URL such as "
            "postgres://user:pw@host/db.",
        ),
        (
            "CELERY_BROKER_URL",
            "CELERY_BROKER_URL must be set in production: a Redis or RabbitMQ URL for the task "
            "queue.",
        ),
        (
            "REGISTRY_PUBLIC_URL",
            "REGISTRY_PUBLIC_URL must be set in production: the URL people and krm reach this "
            "registry at, such as https://registry.example.co (mirrored documents embed it).",
        ),
    ],
)
def test_refuses_to_start_without(settings_error, missing, message):
    env = {k: v for k, v in COMPLETE.items() if k != missing}
    assert settings_error(MODULE, **env) == PREFIX + message


def test_refuses_an_empty_secret_key(settings_error):
    env = {**COMPLETE, "SECRET_KEY": ""}
    assert settings_error(MODULE, **env) == (
        PREFIX + "SECRET_KEY must be set in production: it signs sessions and tokens."
    )


def test_refuses_sqlite(settings_error):
    env = {**COMPLETE, "DATABASE_URL": "sqlite:////tmp/registry.sqlite3"}
    assert settings_error(MODULE, **env) == (
        PREFIX + "DATABASE_URL must point to PostgreSQL in production "
        "(got engine django.db.backends.sqlite3)."
    )


def test_refuses_to_start_without_a_signing_key(settings_error):
    env = {k: v for k, v in COMPLETE.items() if k != "SIGNING_KEY_PEM"}
    assert settings_error(MODULE, **env) == (
        PREFIX + "SIGNING_KEY_PEM or SIGNING_KEY_FILE must be set in production: the ECDSA P-256 "
        "private key (PEM) the registry signs every catalog version with."
    )


def test_refuses_a_signing_key_file_that_is_not_there(settings_error, tmp_path):
    env = {k: v for k, v in COMPLETE.items() if k != "SIGNING_KEY_PEM"}
    missing = tmp_path / "nope.pem"
    assert settings_error(MODULE, **env, SIGNING_KEY_FILE=str(missing)) == (
        PREFIX + f"SIGNING_KEY_FILE points at {missing}, which is not a file: production never "
        "creates a signing key (see 'manage.py rotate_signing_key')."
    )


def test_starts_with_a_signing_key_file(load_settings, tmp_path):
    env = {k: v for k, v in COMPLETE.items() if k != "SIGNING_KEY_PEM"}
    key = tmp_path / "signing-key.pem"
    key.write_text("(a mounted secret)")
    assert load_settings(MODULE, **env, SIGNING_KEY_FILE=str(key))["DEBUG"] is False


@pytest.mark.parametrize(
    "url", ["registry.example.co", "ftp://registry.example.co", "https:///registry"]
)
def test_refuses_a_public_url_that_is_not_http(settings_error, url):
    env = {**COMPLETE, "REGISTRY_PUBLIC_URL": url}
    assert settings_error(MODULE, **env) == (
        PREFIX + "REGISTRY_PUBLIC_URL must be an http(s) URL such as https://registry.example.co "
        f"(got {url!r})."
    )
