"""Load a settings module in a fresh interpreter with a controlled environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "DEBUG": settings.DEBUG,
    "SECRET_KEY": settings.SECRET_KEY,
    "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
    "DB_ENGINE": db["ENGINE"],
    "DB_NAME": str(db["NAME"]),
    "DB_TEST_NAME": db.get("TEST", {}).get("NAME"),
    "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
    "CELERY_TASK_ALWAYS_EAGER": settings.CELERY_TASK_ALWAYS_EAGER,
    "CELERY_TASK_EAGER_PROPAGATES": settings.CELERY_TASK_EAGER_PROPAGATES,
    "CATALOG_MAX_BYTES": settings.CATALOG_MAX_BYTES,
    "CACHE": settings.CACHES["default"]["BACKEND"],
    "CACHE_LOCATION": settings.CACHES["default"].get("LOCATION", ""),
    "API_LIST_CACHE": settings.API_LIST_CACHE,
    "PASSWORD_HASHERS": settings.PASSWORD_HASHERS[:1],
    "MEDIA_ROOT": str(settings.MEDIA_ROOT),
    "STATICFILES": settings.STORAGES["staticfiles"]["BACKEND"],
    "REGISTRY_PUBLIC_URL": settings.REGISTRY_PUBLIC_URL,
}))
"""


def _run(module: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the probe under settings ``module`` with only ``env`` (plus PATH) set."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DJANGO_SETTINGS_MODULE": module}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=full, cwd=ROOT, capture_output=True, text=True
    )


@pytest.fixture
def load_settings() -> Callable[..., dict]:
    """``load_settings(module, **env)``: the settings values, or a failed assertion with stderr."""

    def load(module: str, **env: str) -> dict:
        proc = _run(module, env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.splitlines()[-1])

    return load


@pytest.fixture
def settings_error() -> Callable[..., str]:
    """``settings_error(module, **env)``: the last stderr line of a settings module that fails."""

    def error(module: str, **env: str) -> str:
        proc = _run(module, env)
        assert proc.returncode != 0, proc.stdout
        return proc.stderr.strip().splitlines()[-1]

    return error
