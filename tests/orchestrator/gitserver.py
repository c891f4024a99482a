"""Real local git servers for the remote-base tests: smart HTTP through ``git http-backend``
(behind a small threaded HTTP server that counts requests) and ``git daemon``, both on loopback.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT = shutil.which("git")
GIT_CORE = (
    subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout.strip()
    if GIT
    else ""
)
# Commits with fixed dates and identities, so that commit ids are the same on every run.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path | str) -> str:
    """Run git in ``cwd`` with a fixed identity; return its stdout."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def commit_tree(work: Path, files: dict[str, str], message: str) -> str:
    """Write ``files`` into the work tree, commit them all, return the commit id."""
    for rel, text in files.items():
        p = work / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work).strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SmartHTTP:
    """``git http-backend`` behind a threaded HTTP server on 127.0.0.1; counts requests."""

    def __init__(self, root: Path, *, tls: object = None) -> None:
        # tls: an ssl.SSLContext to serve HTTPS with (None: plain HTTP)
        self.root = root
        self.scheme = "https" if tls is not None else "http"
        self.requests: list[str] = []
        # Plain files served by path, before git http-backend sees the request.
        self.files: dict[str, bytes] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

            def _cgi(self) -> None:
                server.requests.append(f"{self.command} {self.path}")
                path, _, query = self.path.partition("?")
                if path in server.files:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(server.files[path])))
                    self.end_headers()
                    self.wfile.write(server.files[path])
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = {
                    "PATH": os.environ.get("PATH", ""),
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type") or "",
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_ADDR": "127.0.0.1",
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol") or "",
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding") or "",
                }
                proc = subprocess.run(
                    [os.path.join(GIT_CORE, "git-http-backend")],
                    input=body,
                    capture_output=True,
                    env=env,
                )
                head, _, payload = proc.stdout.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _cgi
            do_POST = _cgi

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            import ssl

            assert isinstance(tls, ssl.SSLContext)
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, repo: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/{repo}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class GitDaemon:
    """``git daemon`` serving ``root`` on a loopback port; counts connections from its log."""

    def __init__(self, root: Path, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--verbose",
                f"--base-path={root}",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                str(root),
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(log, "wb"),  # noqa: SIM115 - closed with the process
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)

    def connections(self) -> int:
        return self.log.read_text().count("Connection from")

    def url(self, repo: str) -> str:
        return f"git://127.0.0.1:{self.port}/{repo}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
