"""Test settings: fast hashing, in-memory cache, eager Celery.

With ``KRM_TEST_SERVICES=1`` (CI run 2) the tests use PostgreSQL and Redis with a real Celery
worker instead: ``DATABASE_URL``/``CELERY_BROKER_URL``/``CELERY_RESULT_BACKEND`` override the
defaults below, and the test database keeps the configured name, so that a worker started with
these same settings (``DJANGO_SETTINGS_MODULE=registry.settings.test KRM_TEST_SERVICES=1``) sees
the rows the tests commit (such tests must use ``@pytest.mark.django_db(transaction=True)``).
"""

import os
import tempfile

from registry.settings.base import *  # noqa: F403
from registry.settings.base import env

SECRET_KEY = "test-only-secret-key"
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "serving": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "krm-serving",
        "KEY_PREFIX": "krm-serving",
    },
}
# One process serves and publishes: its memory cache sees every invalidation (tests/conftest.py
# empties it after each test, whose database rows are rolled back).
CATALOG_SERVING_CACHE_SECONDS = 300
# Pulls are added to the database when a test calls pulls_flush() (no thread writing meanwhile).
USAGE_FLUSH_SECONDS = 0
REGISTRY_PUBLIC_URL = "http://testserver"
WHITENOISE_AUTOREFRESH = True

# A signing key created on first use in a temporary folder (never the development one);
# deploy/ci-services.sh names one file for the tests and their celery worker to share.
SIGNING_KEY_PEM = ""
SIGNING_KEY_FILE = env.str("SIGNING_KEY_FILE", default="") or os.path.join(
    tempfile.mkdtemp(prefix="krm-test-signing-"), "signing-key.pem"
)
SIGNING_KEY_CREATE = True
# Stored bytes (catalog versions, blobs…) in a temporary folder, never the checkout's media/;
# deploy/ci-services.sh uses STORAGE_BACKEND=s3 so that the tests and their worker share them.
MEDIA_ROOT = env.str("MEDIA_ROOT", default="") or tempfile.mkdtemp(prefix="krm-test-media-")
TRIAL_CACHE_DIR = os.path.join(MEDIA_ROOT, "trial-cache")

KRM_TEST_SERVICES = os.environ.get("KRM_TEST_SERVICES") == "1"

if KRM_TEST_SERVICES:
    DATABASES = {
        "default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/test")
    }
    DATABASES["default"]["TEST"] = {"NAME": DATABASES["default"]["NAME"]}
    CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
    CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default=CELERY_BROKER_URL)
    CELERY_TASK_ALWAYS_EAGER = False
    CELERY_TASK_EAGER_PROPAGATES = False
    # The worker's writes must end the test process's cached API pages: one shared cache.
    CACHES["default"] = env.cache_url("CACHE_URL", default="redis://127.0.0.1:6379/2")
else:
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = None
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True

# Jobs run in the test that queued them, so that it sees their results (their threads would
# outlive the test's transaction); tests/registry/test_jobs.py turns threads on.
EAGER_JOBS_IN_BACKGROUND = False

# Trial runs download runtimes: only the tests that serve them on loopback turn them on.
TRIAL_RUNS_ENABLED = False

# The API list cache is on in every test (one process: tests/conftest.py starts each test with a
# new generation, since rolled-back rows leave no write behind). Locmem is per process (each xdist
# worker its own); the prefix keeps even a shared backend's keys apart. With KRM_TEST_SERVICES the
# cache is Redis (above), shared with the worker, whose writes must end the tests' pages.
API_LIST_CACHE = "on"
CACHES["default"]["KEY_PREFIX"] = os.environ.get("PYTEST_XDIST_WORKER", "")
