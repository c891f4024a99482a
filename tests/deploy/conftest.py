"""Fixtures for the deployment tests: load Django settings as a deployment would."""

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
import json
import django
from django.conf import settings
django.setup()
print(json.dumps({
    "DEBUG": settings.DEBUG,
    "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
    "DATABASE_ENGINE": settings.DATABASES["default"]["ENGINE"],
    "DATABASE_HOST": settings.DATABASES["default"]["HOST"],
    "DATABASE_NAME": settings.DATABASES["default"]["NAME"],
    "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    "CELERY_TASK_ALWAYS_EAGER": settings.CELERY_TASK_ALWAYS_EAGER,
}))
"""
# Variables the deployment must provide itself, never inherit from the machine running the tests.
SCRUBBED = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "SECRET_KEY",
    "DEBUG",
    "SIGNING_KEY_PEM",
    "SIGNING_KEY_FILE",
)


def _load_settings(env: dict[str, str]) -> dict:
    """Import ``env['DJANGO_SETTINGS_MODULE']`` in a fresh interpreter with ``env`` set."""
    full = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith("KRM_")}
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=full, cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture
def load_settings() -> Callable[[dict[str, str]], dict]:
    """Settings as a deployment's environment would load them (a fresh interpreter each call)."""
    return _load_settings
