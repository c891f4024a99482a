"""A real S3-compatible object store for the tests: moto's standalone server on loopback.

The registry talks to it through django-storages and boto3 as it would to any S3 endpoint.
``deploy/ci-services.sh`` starts one for the whole run and names it in ``KRM_TEST_S3_ENDPOINT``;
otherwise the session fixture (tests/conftest.py) starts its own. ``WriteRefusingProxy`` sits
between the registry and that server and can refuse every write with S3's own error, for the
fault tests: no local peer refuses writes only, so this small proxy is the one stand-in.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

KEYS = {"access_key": "testing", "secret_key": "testing"}
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3-compatible server on a free loopback port; its URL."""
    port = free_port()
    # Its request log goes to a file: a pipe nobody reads would fill up and stop the server.
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{url}/moto-api/", timeout=1)
                    break
                except httpx.TransportError:
                    if proc.poll() is not None:
                        log.seek(0)
                        raise AssertionError(log.read().decode()[-2000:]) from None
                    assert time.monotonic() < deadline, "moto server did not start"
                    time.sleep(0.1)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def s3_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=KEYS["access_key"],
        aws_secret_access_key=KEYS["secret_key"],
    )


def storage_options(endpoint: str, bucket: str) -> dict[str, Any]:
    """The default storage as STORAGE_BACKEND=s3 configures it, on ``bucket`` at ``endpoint``."""
    from botocore.config import Config

    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint,
            "region_name": REGION,
            "default_acl": None,
            "file_overwrite": True,
            # One attempt: a refused write is reported at once, not after boto3's retries.
            "client_config": Config(retries={"max_attempts": 1}, connect_timeout=5),
            **KEYS,
        },
    }


def bucket_keys(client: Any, bucket: str) -> list[str]:
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    return sorted(keys)


def bucket_empty(client: Any, bucket: str) -> None:
    for key in bucket_keys(client, bucket):
        client.delete_object(Bucket=bucket, Key=key)


def new_bucket(client: Any) -> str:
    name = f"krm-test-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=name)
    return name


class WriteRefusingProxy:
    """An HTTP proxy to the S3 server that, while ``refusing``, answers every PUT, POST and
    DELETE with S3's 403 AccessDenied (as a bucket policy denying writes would); reads pass."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.refusing = False
        self.refused: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1: answers boto3's "Expect: 100-continue" at once (1.0 makes it wait 1 s).
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if proxy.refusing and self.command in ("PUT", "POST", "DELETE"):
                    proxy.refused.append(f"{self.command} {self.path}")
                    error = (
                        b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied'
                        b"</Code><Message>Access Denied</Message></Error>"
                    )
                    self.send_response(403)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(error)))
                    self.end_headers()
                    self.wfile.write(error)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                with httpx.Client(timeout=30) as client:
                    upstream = client.request(
                        self.command, proxy.upstream + self.path, headers=headers, content=body
                    )
                self.send_response(upstream.status_code)
                skip = ("transfer-encoding", "connection")
                if self.command != "HEAD":  # a HEAD answer tells the object's length
                    skip += ("content-length",)
                for key, value in upstream.headers.items():
                    if key.lower() not in skip:
                        self.send_header(key, value)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(upstream.content)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(upstream.content)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
