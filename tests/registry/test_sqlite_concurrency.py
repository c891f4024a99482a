"""The embedded default (SQLite, the quick start's runserver) under concurrent publishes.

A real server process on a temporary SQLite file, as ``scripts/serve.sh`` runs it; twelve
clients publish at once through the API with a real token.
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = """
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from catalogs import services
user = User.objects.create_user("alice")
publisher = services.publisher_create(slug="acme", actor=user)
services.catalog_create(publisher=publisher, name="fns", actor=user)
print(Token.objects.create(user=user).key)
"""


def _document(i: int) -> str:
    functions = "".join(
        f"  - group: example.co\n    names:\n      kind: K{i}x{j}\n    versions:\n"
        "    - name: v1\n      runtime:\n        container:\n          image: r.example.co/k:v1\n"
        for j in range(50)
    )
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        f"spec:\n  krmFunctions:\n{functions}"
    )


@pytest.fixture
def embedded_server(tmp_path):
    """``(base_url, token)`` of ``manage.py runserver`` on a fresh SQLite file."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True)
    token = subprocess.run(
        [*manage, "shell", "-v0", "-c", SETUP],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-1]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                httpx.get(f"{base}/api/v1/publishers/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base, token
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_concurrent_publishes_all_succeed_with_consecutive_numbers(embedded_server):
    base, token = embedded_server
    url = f"{base}/api/v1/catalogs/acme/fns/versions/"
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/yaml"}

    def publish(i: int) -> httpx.Response:
        return httpx.post(url, content=_document(i), headers=headers, timeout=60)

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(publish, range(24)))
    assert [r.status_code for r in responses] == [201] * 24
    assert sorted(r.json()["version"] for r in responses) == list(range(1, 25))
