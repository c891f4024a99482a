"""Real peers for the function tests: archives on disk, a local HTTPS server (trustme), Debian's
docker-registry on a free loopback port."""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
import trustme

from orchestrator.functions.options import FnOptions

REGISTRY = shutil.which("docker-registry")

# An exec function: adds a label to every item (awk over the YAML ResourceList) and, as proof
# that it ran, touches the marker file named by $MARKER (when set) in its working directory.
LABEL_FN = r"""#!/bin/sh
if [ -n "$MARKER" ]; then touch "$MARKER"; fi
exec {python} -c '
import sys, yaml
rl = yaml.safe_load(sys.stdin)
for item in rl.get("items") or []:
    item.setdefault("metadata", {}).setdefault("labels", {})["exec-fn"] = "ran"
yaml.safe_dump(rl, sys.stdout)
'
""".replace("{python}", sys.executable)


def sha256_of(path: Path | str) -> str:
    """Hex sha256 of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def make_tgz(path: Path, files: dict[str, str | bytes], *, mode: int = 0o755) -> str:
    """Write a .tar.gz holding files (all with mode); returns its sha256."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return sha256_of(path)


def make_zip(path: Path, files: dict[str, str], *, mode: int = 0o755) -> str:
    """Write a .zip holding files (unix mode kept in external_attr); returns its sha256."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            zf.writestr(info, content)
    return sha256_of(path)


@dataclass
class Server:
    """A local HTTPS (or HTTP) file server over a dict of path -> bytes, with ETags."""

    base: str
    ca_file: str
    files: dict[str, bytes] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location (302)
    requests: list[tuple[str, str, int]] = field(default_factory=list)  # (path, INM, status)
    authorizations: list[str] = field(default_factory=list)  # each request's Authorization

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}"


def _serve(tmp_path: Path, *, tls: bool) -> Iterator[Server]:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    state = Server(base="", ca_file=str(ca_file))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            data = state.files.get(path)
            inm = self.headers.get("If-None-Match") or ""
            headers: dict[str, str] = {}
            body = b""
            if path in state.redirects:
                status = 302
                headers["Location"] = state.redirects[path]
            elif data is None:
                status = 404
            else:
                headers["ETag"] = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
                if inm == headers["ETag"]:
                    status = 304
                else:
                    status, body = 200, data
                    headers["Content-Length"] = str(len(data))
            # Recorded before answering: a test may look as soon as its client has the answer.
            state.authorizations.append(self.headers.get("Authorization") or "")
            state.requests.append((path, inm, status))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    scheme = "https" if tls else "http"
    state.base = f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[Server]:
    """A real HTTPS server on a free loopback port, its certificate from a trustme CA."""
    (tmp_path / "tls").mkdir()
    yield from _serve(tmp_path / "tls", tls=True)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Server]:
    """A plain HTTP server on a free loopback port (http is allowed to loopback only)."""
    (tmp_path / "plain").mkdir()
    yield from _serve(tmp_path / "plain", tls=False)


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above, for tests (conftest modules are not importable by name)."""
    return SimpleNamespace(
        make_tgz=make_tgz, make_zip=make_zip, sha256_of=sha256_of, LABEL_FN=LABEL_FN
    )


@pytest.fixture
def options(tmp_path: Path) -> Callable[..., FnOptions]:
    """FnOptions with a cache in the test's tmp dir."""

    def make(**kw: object) -> FnOptions:
        kw.setdefault("cache_dir", str(tmp_path / "cache"))
        return FnOptions(**kw)  # type: ignore[arg-type]

    return make


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write a file under tmp_path (parents created); returns its path."""

    def _write(rel: str, content: str | bytes, mode: int | None = None) -> Path:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
        if mode is not None:
            os.chmod(p, mode)
        return p

    return _write


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_registry(root: Path, *, auth: str = "") -> tuple[subprocess.Popen[bytes], str]:
    """Start docker-registry storing under root; (process, "127.0.0.1:<port>") once it answers.

    ``auth`` is the YAML of the config's ``auth:`` section (htpasswd, token), if any.
    """
    assert REGISTRY is not None
    port = free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'storage'}\n"
        "  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n{auth}"
    )
    proc = subprocess.Popen(
        [REGISTRY, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1):
                break
        except urllib.error.HTTPError:
            break  # 401: up, and asking for credentials
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError("docker-registry did not start") from None
            time.sleep(0.1)
    return proc, f"127.0.0.1:{port}"


def stop_registry(proc: subprocess.Popen[bytes]) -> None:
    """Stop a registry started by start_registry."""
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """A docker-registry on a free loopback port; its "host:port"."""
    root = tmp_path / "registry"
    root.mkdir()
    proc, host = start_registry(root)
    yield host
    stop_registry(proc)
