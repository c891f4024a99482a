"""STORAGE_BACKEND=s3: mirrored runtime artifacts in a real S3-compatible server on loopback.

The object store is moto's standalone server (a separate process speaking the S3 HTTP API);
the registry talks to it through django-storages and boto3 as it would to any S3 endpoint.
"""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import pytest
from botocore.config import Config

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import RuntimeArtifact, SyncRun
from catalogs.publishing.models import CatalogVersion
from tests.catalogs.mirroring.conftest import exec_catalog_doc
from tests.s3_server import KEYS, bucket_keys

pytestmark = pytest.mark.django_db
BUCKET = "krm-registry-test"


@pytest.fixture
def s3(s3_storage, mirror_settings):
    """A fresh bucket of the shared moto server, the default storage pointed at it."""
    client, bucket = s3_storage
    yield client
    # (s3_storage empties and deletes the bucket)


@pytest.fixture
def bucket(s3_storage) -> str:
    return s3_storage[1]


def keys(client, bucket) -> list[str]:
    return bucket_keys(client, bucket)


def test_mirrored_artifacts_are_stored_and_served_from_s3(
    s3, bucket, mirror_settings, https_upstream, sync, client
):
    data = b"an exec binary" * 4000
    hexdigest = hashlib.sha256(data).hexdigest()
    doc = exec_catalog_doc([("Tool", https_upstream.serve("/bin/tool", data), hexdigest)])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(name="on-s3", url=url, actor=None, mirror_runtimes=True)

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    version = CatalogVersion.objects.get(catalog=source.catalog)
    # The artifact, the version's bytes and its OCI manifest: every stored byte is in S3.
    stored = keys(s3, bucket)
    assert f"blobs/sha256/{hexdigest}" in stored
    assert f"blobs/sha256/{version.digest.removeprefix('sha256:')}" in stored
    assert all(key.startswith("blobs/sha256/") for key in stored)
    assert s3.get_object(Bucket=bucket, Key=f"blobs/sha256/{hexdigest}")["Body"].read() == data
    served = client.get(f"/c/blobs/sha256/{hexdigest}")
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == data
    # Nothing was written to the local MEDIA_ROOT.
    assert not (Path(mirror_settings.MEDIA_ROOT) / "blobs").exists()
    # The readiness probe reaches the object store.
    assert client.get("/readyz").json()["checks"]["storage"]["status"] == "ok"


def test_a_refused_write_publishes_nothing(
    s3, bucket, mirror_settings, https_upstream, sync, client
):
    data = b"never stored" * 1000
    hexdigest = hashlib.sha256(data).hexdigest()
    doc = exec_catalog_doc([("Tool", https_upstream.serve("/bin/tool", data), hexdigest)])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(name="refused", url=url, actor=None, mirror_runtimes=True)
    # The store refuses every write: the bucket is gone (NoSuchBucket from the real server).
    s3.delete_bucket(Bucket=bucket)
    try:
        run = sync(source)
    finally:
        s3.create_bucket(Bucket=bucket)

    assert run.status == SyncRun.Status.FAILED
    assert "NoSuchBucket" in run.reason or "bucket" in run.reason.lower(), run.reason
    assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 0
    assert RuntimeArtifact.objects.count() == 0
    assert keys(s3, bucket) == []
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
