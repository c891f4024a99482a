"""A real registry for tests: gunicorn (threaded workers) on a fresh SQLite file, with a token.

Used by the concurrency, request-limit and hostile-input tests, which need what only a real
server does: threads racing for SQLite's write lock, chunked request bodies decoded by gunicorn.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SETUP = """
from django.contrib.auth.models import User
from catalogs.accounts.services import api_token_create
from catalogs.publishing import services
user = User.objects.create_user("alice", password="alice-password-1")
publisher = services.publisher_create(slug="acme", actor=user)
services.catalog_create(publisher=publisher, name="fns", actor=user)
print(api_token_create(user=user, name="script")[1])
"""


@dataclass(frozen=True)
class LiveRegistry:
    """A running server: its base URL, alice's token (owner of ``acme/fns``), its files."""

    base: str
    token: str
    database: Path
    media: Path
    env: dict[str, str] = field(default_factory=dict)  # the server's, for manage.py commands

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Rows of ``sql`` read straight from the server's SQLite file."""
        with sqlite3.connect(self.database, timeout=60) as conn:
            return conn.execute(sql, params).fetchall()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def live_registry(
    workdir: Path,
    *,
    workers: int = 2,
    threads: int = 8,
    tls: tuple[Path, Path, Path] | None = None,
    **env_extra: str,
) -> Iterator[LiveRegistry]:
    """Migrate a fresh database in ``workdir``, create alice's catalog, serve it with gunicorn.

    ``tls``: (certificate, key, CA) files: gunicorn serves HTTPS with them (the base URL is
    ``https://``), checked against the CA.
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
        "MEDIA_ROOT": str(workdir / "media"),
        "SECRET_KEY": "live-registry-test-key",
        "LOG_LEVEL": "WARNING",
        **env_extra,
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
    port = _free_port()
    log = (workdir / "gunicorn.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "registry.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--timeout",
            "300",
            *(["--certfile", str(tls[0]), "--keyfile", str(tls[1])] if tls else []),
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if server.poll() is not None:
                raise RuntimeError((workdir / "gunicorn.log").read_text()[-3000:])
            try:
                httpx.get(f"{base}/api/v1/", timeout=2, verify=str(tls[2]) if tls else True)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield LiveRegistry(base, token, workdir / "db.sqlite3", workdir / "media", env)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """A redis-server of its own on a free loopback port (not the machine's shared one), its
    files in ``directory``; its URL (database 0)."""
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is missing: apt-get install -y redis-server")
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--dir", str(directory)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def sign_in(base: str, username: str, password: str, *, source: str = "") -> httpx.Response:
    """A sign-in through the real form (its CSRF cookie and token), from the loopback address
    ``source`` (any 127.x.y.z on Linux) when given; the POST's answer."""
    transport = httpx.HTTPTransport(local_address=source) if source else None
    with httpx.Client(base_url=base, timeout=120, transport=transport) as client:
        form = client.get("/accounts/login/").text
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        return client.post(
            "/accounts/login/",
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": found.group(1) if found else "",
            },
            headers={"Referer": f"{base}/accounts/login/"},
        )
