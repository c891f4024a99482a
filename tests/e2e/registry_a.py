"""Registry A: a second registry for the federation tests, as a subprocess of its own.

``manage.py runserver`` on a free loopback port with its own SQLite database, media folder and
signing key under ``data``; ``upstream/tools`` (two functions) is published before it serves, and
``shell`` (Python for ``manage.py shell -c``) runs after that, e.g. to revoke a version.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.catalogs.factories import catalog_yaml

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(data: Path, port: int) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "DATABASE_URL": f"sqlite:///{data / 'db.sqlite3'}",
        "MEDIA_ROOT": str(data / "media"),
        "SIGNING_KEY_FILE": str(data / "signing-key.pem"),
        "REGISTRY_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "SECRET_KEY": "registry-a-test-only",
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def registry_a_shell(data: Path, port: int, code: str) -> None:
    """Run ``code`` (``manage.py shell -c``) against registry A's database while it serves."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
        env=_env(data, port),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


@contextmanager
def registry_a(data: Path, *, shell: str | None = None) -> Iterator[tuple[str, int]]:
    """Start registry A; yields its base URL and port, stops it on exit."""
    port = free_port()
    env = _env(data, port)
    manage = [sys.executable, str(ROOT / "manage.py")]

    def run(*args: str, stdin: str | None = None) -> None:
        proc = subprocess.run(
            [*manage, *args], env=env, cwd=ROOT, input=stdin, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    data.mkdir(parents=True, exist_ok=True)
    run("migrate", "--noinput")
    document = catalog_yaml(("tools.example.co", "Lint", "v1"), ("tools.example.co", "Fmt", "v1"))
    run("import_catalog", "-", "--publisher", "upstream", "--catalog", "tools", stdin=document)
    if shell is not None:
        run("shell", "-c", shell)
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                # Up: /v2/ asks anonymous callers to authenticate (the Docker CLI's ping).
                if httpx.get(f"{base}/v2/").status_code == 401:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, "registry A exited"
            assert time.monotonic() < deadline, "registry A did not start"
            time.sleep(0.2)
        yield base, port
    finally:
        server.terminate()
        server.wait(timeout=30)
