"""Production settings: no defaults for secrets or infrastructure; refuses to start without them."""

import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from registry.settings.base import *  # noqa: F403
from registry.settings.base import env


def _required(name: str, why: str) -> str:
    """Return the environment variable ``name`` or stop with a message saying what it is for."""
    value = env.str(name, default="")
    if not value:
        raise ImproperlyConfigured(f"{name} must be set in production: {why}.")
    return value


DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = _required("SECRET_KEY", "it signs sessions and tokens")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must be set in production: the host names this registry is served as."
    )

_database_url = _required("DATABASE_URL", "a PostgreSQL URL such as postgres://user:pw@host/db")
DATABASES = {"default": env.db_url_config(_database_url)}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured(
        "DATABASE_URL must point to PostgreSQL in production "
        f"(got engine {DATABASES['default']['ENGINE']})."
    )
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)

# The key every catalog version is signed with: an ECDSA P-256 private key (PEM), given inline or
# as a file (e.g. a mounted secret). Nothing is generated in production.
SIGNING_KEY_PEM = env.str("SIGNING_KEY_PEM", default="")
SIGNING_KEY_FILE = env.str("SIGNING_KEY_FILE", default="")
SIGNING_KEY_CREATE = False
if not SIGNING_KEY_PEM and not SIGNING_KEY_FILE:
    raise ImproperlyConfigured(
        "SIGNING_KEY_PEM or SIGNING_KEY_FILE must be set in production: the ECDSA P-256 private "
        "key (PEM) the registry signs every catalog version with."
    )
if not SIGNING_KEY_PEM and not os.path.isfile(SIGNING_KEY_FILE):
    raise ImproperlyConfigured(
        f"SIGNING_KEY_FILE points at {SIGNING_KEY_FILE}, which is not a file: production never "
        "creates a signing key (see 'manage.py rotate_signing_key')."
    )

REGISTRY_PUBLIC_URL = _required(
    "REGISTRY_PUBLIC_URL",
    "the URL people and krm reach this registry at, such as https://registry.example.co "
    "(mirrored documents embed it)",
).rstrip("/")
_public = urlsplit(REGISTRY_PUBLIC_URL)
if _public.scheme not in ("http", "https") or not _public.hostname or _public.query:
    raise ImproperlyConfigured(
        f"REGISTRY_PUBLIC_URL must be an http(s) URL such as https://registry.example.co "
        f"(got {REGISTRY_PUBLIC_URL!r})."
    )

CELERY_BROKER_URL = _required("CELERY_BROKER_URL", "a Redis or RabbitMQ URL for the task queue")
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default=CELERY_BROKER_URL)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_EAGER_PROPAGATES = False

STORAGES = {
    # Local files or object storage, as STORAGE_BACKEND chose in base.py.
    "default": STORAGES["default"],  # noqa: F405
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = env.bool("WHITENOISE_USE_FINDERS", default=False)

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# TLS usually ends at the ingress or proxy in front of gunicorn; turn these on where it does not.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)

# The TUF timestamp is re-signed by Celery beat; the web process does not sign on a GET.
TRUST_TIMESTAMP_ON_DEMAND = env.bool("TRUST_TIMESTAMP_ON_DEMAND", default=False)
