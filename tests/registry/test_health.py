"""/healthz and /readyz: liveness needs nothing, readiness fails (503) on a refused dependency.

Refused dependencies are real: the database or broker setting points at a loopback port nobody
listens on, so the connection attempt is refused by the kernel (no mock).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A loopback port that was free a moment ago: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.django_db
def test_healthz_answers_without_dependencies(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def _local_storage(settings) -> None:
    """The default storage on local files (the services stage runs the suite on S3)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }


@pytest.mark.django_db
def test_readyz_ok_with_database_and_storage(client, settings, tmp_path):
    _local_storage(settings)
    settings.MEDIA_ROOT = str(tmp_path / "media")
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["storage"]["status"] == "ok"
    # Eager tasks (the default test settings) have no broker to check; the services stage's
    # Redis must answer.
    expected = "skipped" if settings.CELERY_TASK_ALWAYS_EAGER else "ok"
    assert body["checks"]["broker"]["status"] == expected
    assert response["Cache-Control"] == "no-store"
    # A fresh MEDIA_ROOT is created, so a first start is ready before the first upload.
    assert (tmp_path / "media").is_dir()


@pytest.mark.django_db
def test_readyz_503_when_broker_refuses(client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    started = time.monotonic()
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["checks"]["broker"] == {
        "status": "fail",
        "error": "OperationalError",
        "ms": body["checks"]["broker"]["ms"],
    }
    assert body["checks"]["database"]["status"] == "ok"
    # The address of the broker is not shown to an anonymous caller.
    assert b"127.0.0.1" not in response.content
    assert time.monotonic() - started < 10


@pytest.mark.django_db
def test_readyz_503_when_storage_is_unusable(client, settings, tmp_path):
    # MEDIA_ROOT under a regular file: the directory can never be made (fails as root too).
    blocker = tmp_path / "not-a-directory"
    blocker.write_bytes(b"")
    _local_storage(settings)
    settings.MEDIA_ROOT = str(blocker / "media")
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["storage"] == {
        "status": "fail",
        "error": "NotADirectoryError",
        "ms": checks["storage"]["ms"],
    }
    assert checks["database"]["status"] == "ok"


@pytest.fixture
def gunicorn_with_refused_database(tmp_path) -> Iterator[str]:
    """gunicorn serving the app with DATABASE_URL on a closed port; yields its base URL."""
    port = closed_port()
    db_port = closed_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KRM_", "CELERY_"))},
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "DATABASE_URL": f"postgres://registry:pw@127.0.0.1:{db_port}/registry",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "SIGNING_KEY_FILE": str(tmp_path / "signing-key.pem"),
        "ALLOWED_HOSTS": "registry.example.co",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "registry.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_readyz_503_when_database_refuses(gunicorn_with_refused_database):
    url = gunicorn_with_refused_database
    # The kubelet probes by pod address, which is not in ALLOWED_HOSTS: the probes still answer.
    live = httpx.get(f"{url}/healthz")
    assert live.status_code == 200
    assert live.json() == {"status": "ok"}
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["database"]["status"] == "fail"
    assert checks["database"]["error"] == "OperationalError"
    assert checks["storage"]["status"] == "ok"
    # Any other path still goes through host validation.
    assert httpx.get(f"{url}/api/v1/").status_code == 400
