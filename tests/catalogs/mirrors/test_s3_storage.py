"""STORAGE_BACKEND=s3: mirrored runtime artifacts in a real S3-compatible server on loopback.

The object store is moto's standalone server (a separate process speaking the S3 HTTP API);
the registry talks to it through django-storages and boto3 as it would to any S3 endpoint.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest
from botocore.config import Config

from catalogs import mirrors
from catalogs.models import CatalogVersion, RuntimeArtifact, SyncRun
from tests.catalogs.mirrors.conftest import exec_catalog_doc

pytestmark = pytest.mark.django_db
BUCKET = "krm-registry-test"
KEYS = {"access_key": "testing", "secret_key": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3-compatible server on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/moto-api/", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "moto server did not start"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def s3(s3_endpoint, mirror_settings):
    """A fresh bucket, and the default storage pointed at it (as STORAGE_BACKEND=s3 does)."""
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id=KEYS["access_key"],
        aws_secret_access_key=KEYS["secret_key"],
    )
    client.create_bucket(Bucket=BUCKET)
    mirror_settings.STORAGES = {
        **mirror_settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": s3_endpoint,
                "region_name": "us-east-1",
                "default_acl": None,
                **KEYS,
            },
        },
    }
    yield client
    for obj in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=obj["Key"])
    client.delete_bucket(Bucket=BUCKET)


def keys(client) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def test_mirrored_artifacts_are_stored_and_served_from_s3(
    s3, mirror_settings, https_upstream, sync, client
):
    data = b"an exec binary" * 4000
    hexdigest = hashlib.sha256(data).hexdigest()
    doc = exec_catalog_doc([("Tool", https_upstream.serve("/bin/tool", data), hexdigest)])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(name="on-s3", url=url, actor=None, mirror_runtimes=True)

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    assert keys(s3) == [f"blobs/sha256/{hexdigest}"]
    assert s3.get_object(Bucket=BUCKET, Key=f"blobs/sha256/{hexdigest}")["Body"].read() == data
    served = client.get(f"/c/blobs/sha256/{hexdigest}")
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == data
    # Nothing was written to the local MEDIA_ROOT.
    assert not (Path(mirror_settings.MEDIA_ROOT) / "blobs").exists()
    # The readiness probe reaches the object store.
    assert client.get("/readyz").json()["checks"]["storage"]["status"] == "ok"


def test_a_refused_write_publishes_nothing(s3, mirror_settings, https_upstream, sync, client):
    data = b"never stored" * 1000
    hexdigest = hashlib.sha256(data).hexdigest()
    doc = exec_catalog_doc([("Tool", https_upstream.serve("/bin/tool", data), hexdigest)])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(name="refused", url=url, actor=None, mirror_runtimes=True)
    # The store refuses every write: the bucket is gone (NoSuchBucket from the real server).
    s3.delete_bucket(Bucket=BUCKET)
    try:
        run = sync(source)
    finally:
        s3.create_bucket(Bucket=BUCKET)

    assert run.status == SyncRun.Status.FAILED
    assert "NoSuchBucket" in run.reason or "bucket" in run.reason.lower(), run.reason
    assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 0
    assert RuntimeArtifact.objects.count() == 0
    assert keys(s3) == []
    assert client.get("/c/mirrors/refused/catalog.yaml").status_code == 404
    assert client.get(f"/c/blobs/sha256/{hexdigest}").status_code == 404


def test_readyz_503_when_the_object_store_refuses(mirror_settings, client):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    mirror_settings.STORAGES = {
        **mirror_settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": f"http://127.0.0.1:{closed}",
                "region_name": "us-east-1",
                "client_config": Config(retries={"max_attempts": 1}, connect_timeout=2),
                **KEYS,
            },
        },
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"]["status"] == "fail"
