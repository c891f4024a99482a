"""The embedded default (SQLite, the quick start's runserver) under concurrent publishes.

A real server process on a temporary SQLite file, as ``scripts/serve.sh`` runs it; twelve
clients publish at once through the API with a real token.
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = """
from django.contrib.auth.models import User
from catalogs.accounts.services import api_token_create
from catalogs.publishing import services
user = User.objects.create_user("alice")
publisher = services.publisher_create(slug="acme", actor=user)
services.catalog_create(publisher=publisher, name="fns", actor=user)
print(api_token_create(user=user, name="script")[1])
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


# --- Issue 10, fault 4: 30 parallel publishes of 4,000-function catalogs on gunicorn threads. ---

FUNCTIONS = 4000


def _big_document(i: int) -> bytes:
    functions = "".join(
        f"  - group: example.co\n    names:\n      kind: K{i}x{j}\n    versions:\n"
        "    - name: v1\n      runtime:\n        container:\n          image: r.example.co/k:v1\n"
        for j in range(FUNCTIONS)
    )
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        f"spec:\n  krmFunctions:\n{functions}"
    ).encode()


@pytest.fixture
def threaded_server(tmp_path):
    """gunicorn, 2 workers × 8 threads, on a fresh SQLite file (the embedded default)."""
    from tests.live_registry import live_registry

    with live_registry(tmp_path, workers=2, threads=8) as server:
        yield server


def _publish_until_done(url: str, token: str, body: bytes) -> list[httpx.Response]:
    """POST ``body`` until it is published, honouring Retry-After; every answer, in order."""
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/yaml"}
    answers = []
    for _ in range(30):
        response = httpx.post(url, content=body, headers=headers, timeout=300)
        answers.append(response)
        if response.status_code != 503:
            break
        time.sleep(float(response.headers.get("Retry-After", "1")))
    return answers


def test_30_parallel_publishes_of_4000_functions_never_fail_nor_half_write(threaded_server):
    server = threaded_server
    url = f"{server.base}/api/v1/catalogs/acme/fns/versions/"
    bodies = [_big_document(i) for i in range(30)]
    with concurrent.futures.ThreadPoolExecutor(30) as pool:
        answers = list(pool.map(lambda b: _publish_until_done(url, server.token, b), bodies))

    every = [r for publish in answers for r in publish]
    assert {r.status_code for r in every} <= {201, 503}, [
        (r.status_code, r.text[:300]) for r in every if r.status_code not in (201, 503)
    ]
    for refused in (r for r in every if r.status_code == 503):
        assert refused.headers["Retry-After"].isdigit()
        assert refused.json()["detail"].startswith("The registry is busy")
    finals = [publish[-1] for publish in answers]
    assert [r.status_code for r in finals] == [201] * 30
    assert sorted(r.json()["version"] for r in finals) == list(range(1, 31))
    # Nothing half-written: every version has all its functions, latest is the last one.
    counts = server.query(
        "SELECT v.number, (SELECT COUNT(*) FROM catalogs_functionversion f "
        "WHERE f.catalog_version_id = v.id) FROM catalogs_catalogversion v ORDER BY v.number"
    )
    assert counts == [(n, FUNCTIONS) for n in range(1, 31)]
    [(latest,)] = server.query(
        "SELECT v.number FROM catalogs_catalog c JOIN catalogs_catalogversion v "
        "ON v.id = c.latest_version_id"
    )
    assert latest == 30


@pytest.fixture
def impatient_server(tmp_path):
    """A server that waits only one second for SQLite's write lock."""
    from tests.live_registry import live_registry

    with live_registry(tmp_path, workers=1, threads=4, SQLITE_TIMEOUT="1") as server:
        yield server


def _login(client: httpx.Client, base: str) -> None:
    client.get(f"{base}/accounts/login/")
    response = client.post(
        f"{base}/accounts/login/",
        data={
            "username": "alice",
            "password": "alice-password-1",
            "csrfmiddlewaretoken": client.cookies["csrftoken"],
        },
    )
    assert response.status_code == 302, response.text[:500]


def test_a_write_lock_held_too_long_is_503_with_retry_after_never_500(impatient_server):
    server = impatient_server
    url = f"{server.base}/api/v1/catalogs/acme/fns/versions/"
    headers = {"Authorization": f"Token {server.token}", "Content-Type": "application/yaml"}
    web = httpx.Client(timeout=60)
    _login(web, server.base)
    publish_page = f"{server.base}/catalogs/acme/fns/publish/"
    web.get(publish_page)
    # Another writer (this test) holds SQLite's write lock for longer than the server waits.
    holder = sqlite3.connect(server.database, timeout=10, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        api = httpx.post(url, content=_document(1), headers=headers, timeout=60)
        page = web.post(
            publish_page,
            data={
                "content": _document(1),
                "action": "publish",
                "csrfmiddlewaretoken": web.cookies["csrftoken"],
            },
            headers={"Accept": "text/html"},
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    detail = (
        "The registry is busy (another write holds the database); nothing was changed. "
        "Retry in a few seconds."
    )
    assert (api.status_code, api.headers["Retry-After"], api.json()) == (
        503,
        "2",
        {"detail": detail},
    )
    assert (page.status_code, page.headers["Retry-After"], page.text) == (503, "2", detail)
    assert server.query("SELECT COUNT(*) FROM catalogs_catalogversion") == [(0,)]
    # Once the lock is free, the same publish goes through as version 1.
    again = httpx.post(url, content=_document(1), headers=headers, timeout=60)
    assert (again.status_code, again.json()["version"]) == (201, 1)
