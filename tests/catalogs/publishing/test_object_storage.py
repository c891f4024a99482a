"""Every stored byte in a real S3-compatible object store (moto's server on loopback).

Publish, serve (catalog.yaml, its .sig, revocation lists, OCI manifests and blobs through /v2/),
OCI uploads, the storage GC, a crash between the write and the commit, and a store that refuses
writes: nothing is half-published and the previous version is still served.
"""

from __future__ import annotations

import hashlib
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import transaction
from rest_framework.test import APIClient

from catalogs.distribution import services as oci_services
from catalogs.distribution.models import OciBlob, OciManifest, OciUpload
from catalogs.exceptions import StorageError
from catalogs.mirroring import services as mirrors
from catalogs.publishing import blobstore, services
from catalogs.publishing.models import CatalogVersion
from catalogs.trust import revocations
from catalogs.trust.models import RevocationList
from tests.catalogs.factories import catalog_yaml
from tests.s3_server import WriteRefusingProxy, bucket_keys, storage_options

pytestmark = pytest.mark.django_db

LATEST = "/c/example-co/functions/catalog.yaml"
VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"
REPO = "/v2/example-co/functions"


def _key(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def _fresh_reads() -> None:
    """Forget this process's content caches: the next read goes to the object store."""
    from tests.conftest import _content_caches_clear

    _content_caches_clear()


def _publish(api: APIClient, *functions: tuple[str, str, str]):
    return api.post(VERSIONS, catalog_yaml(*functions), content_type="application/yaml")


@pytest.fixture
def api(owner):
    client = APIClient()
    client.force_authenticate(owner)
    return client


def test_publish_stores_every_byte_in_s3_and_serves_it_from_there(
    s3_storage, api, catalog, client, settings
):
    s3, bucket = s3_storage
    assert _publish(api, ("example.co", "SetLabels", "v1")).status_code == 201
    version = CatalogVersion.objects.get()
    manifest = OciManifest.objects.get(catalog_version=version)
    revocations.revocation_create(
        catalog=catalog, actor=None, reason="broken", group="example.co", kind="SetLabels",
        version="v1",
    )  # fmt: skip
    listed = RevocationList.objects.get(sequence=1)

    keys = bucket_keys(s3, bucket)
    for digest in (version.digest, manifest.digest, listed.digest):
        assert _key(digest) in keys
    stored = s3.get_object(Bucket=bucket, Key=_key(version.digest))["Body"].read()
    assert "sha256:" + hashlib.sha256(stored).hexdigest() == version.digest
    # Nothing went to local disk.
    assert not (Path(settings.MEDIA_ROOT) / "blobs").exists()

    _fresh_reads()
    served = client.get(LATEST)
    assert served.status_code == 200 and served.content == stored
    pinned = client.get(f"/c/example-co/functions/sha256/{version.digest[7:]}/catalog.yaml")
    assert pinned.content == stored
    assert client.get(LATEST + ".sig").content.decode() == version.signature
    lists = client.get("/c/example-co/functions/revocations.yaml")
    assert lists.status_code == 200
    assert lists.content == s3.get_object(Bucket=bucket, Key=_key(listed.digest))["Body"].read()

    pulled = client.get(f"{REPO}/manifests/latest")
    assert pulled.status_code == 200
    assert pulled.content == s3.get_object(Bucket=bucket, Key=_key(manifest.digest))["Body"].read()
    layer = client.get(f"{REPO}/blobs/{version.digest}")
    assert layer.status_code == 200 and layer.content == stored


def test_oci_chunked_upload_keeps_its_bytes_in_s3_and_publishes_from_there(
    s3_storage, catalog, owner, django_capture_on_commit_callbacks
):
    s3, bucket = s3_storage
    data = catalog_yaml(("example.co", "Pushed", "v1")).encode()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    upload = oci_services.oci_upload_start(catalog=catalog, actor=owner)
    oci_services.oci_upload_append(upload=upload, content=data[:100], content_range="0-99")
    # The session's bytes so far are an object, not a database column.
    assert f"uploads/{upload.uuid}" in bucket_keys(s3, bucket)
    with django_capture_on_commit_callbacks(execute=True):
        oci_services.oci_upload_finish(upload=upload, digest=digest, content=data[100:])

    assert not OciUpload.objects.exists()
    keys = bucket_keys(s3, bucket)
    assert f"uploads/{upload.uuid}" not in keys and _key(digest) in keys
    assert OciBlob.objects.get().digest == digest

    # A digest that does not match what was uploaded stores nothing under it.
    upload = oci_services.oci_upload_start(catalog=catalog, actor=owner)
    with pytest.raises(Exception, match="did not match"):
        oci_services.oci_upload_finish(upload=upload, digest="sha256:" + "0" * 64, content=b"x")
    assert _key("sha256:" + "0" * 64) not in bucket_keys(s3, bucket)


def _age_apart(grace_seconds: int) -> None:
    # S3 keeps modification times to the second: wait well past the grace period.
    time.sleep(grace_seconds + 1.5)


def test_gc_removes_old_orphans_keeps_young_and_referenced_on_s3(s3_storage, catalog, owner):
    s3, bucket = s3_storage
    version, _ = services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=owner
    )
    old = blobstore.blob_put(content=b"left by a process that died mid-commit")
    stale_upload = "0f0e0d0c-0000-4000-8000-000000000000"
    blobstore.upload_write(upload_id=stale_upload, content=b"half an upload")
    _age_apart(2)
    young = blobstore.blob_put(content=b"written by a publish still running")

    collected = mirrors.blob_garbage_collect(grace=timedelta(seconds=2))

    assert sorted(collected.deleted) == sorted([_key(old), f"uploads/{stale_upload}"])
    assert collected.kept_young == [_key(young)]
    keys = bucket_keys(s3, bucket)
    assert _key(old) not in keys and f"uploads/{stale_upload}" not in keys
    assert _key(young) in keys
    # Everything a row names is kept, however old: the version, its manifest and signature.
    for digest in CatalogVersion.objects.values_list("digest", flat=True):
        assert _key(digest) in keys
    for digest in OciManifest.objects.values_list("digest", flat=True):
        assert _key(digest) in keys
    assert collected.deleted  # and the version is still served from the store
    _fresh_reads()
    assert bytes(version.content).startswith(b"apiVersion")


def test_a_crash_between_the_write_and_the_commit_leaves_an_orphan_the_gc_collects(
    s3_storage, catalog, owner, client
):
    s3, bucket = s3_storage
    document = catalog_yaml(("example.co", "Lost", "v1"))
    with pytest.raises(RuntimeError, match="worker died"), transaction.atomic():
        version, _ = services.catalog_version_publish(
            catalog=catalog, content=document, actor=owner
        )
        digest = version.digest
        raise RuntimeError("worker died before its commit")
    # The bytes were written first; the rows that would name them never committed.
    assert not CatalogVersion.objects.exists()
    assert _key(digest) in bucket_keys(s3, bucket)
    assert client.get(LATEST).status_code == 404

    out = StringIO()
    call_command("gc_blobs", "--grace-minutes", "0", stdout=out)
    assert f"Deleted {_key(digest)}" in out.getvalue()
    assert bucket_keys(s3, bucket) == []


@pytest.fixture
def refusing_store(s3_storage, s3_endpoint, settings):
    """The default storage reached through a proxy that can refuse every write."""
    _, bucket = s3_storage
    proxy = WriteRefusingProxy(s3_endpoint)
    settings.STORAGES = {**settings.STORAGES, "default": storage_options(proxy.url, bucket)}
    yield proxy
    proxy.close()


def test_a_refused_write_publishes_nothing_and_the_previous_version_is_still_served(
    refusing_store, s3_storage, api, catalog, client
):
    s3, bucket = s3_storage
    assert _publish(api, ("example.co", "Good", "v1")).status_code == 201
    good = CatalogVersion.objects.get()
    before = bucket_keys(s3, bucket)
    manifests = OciManifest.objects.count()

    refusing_store.refusing = True
    response = _publish(api, ("example.co", "Refused", "v1"))

    assert response.status_code == 503
    detail = response.json()["detail"]
    assert detail.startswith("Could not write blobs/sha256/") and "AccessDenied" in detail
    assert refusing_store.refused  # the store was asked, and said no
    assert list(CatalogVersion.objects.values_list("number", flat=True)) == [1]
    assert OciManifest.objects.count() == manifests
    assert bucket_keys(s3, bucket) == before
    _fresh_reads()
    served = client.get(LATEST)
    assert served.status_code == 200
    assert served["X-Content-Digest"] == good.digest
    assert client.get(f"{REPO}/manifests/latest").status_code == 200

    # Writes allowed again: the same document publishes as version 2.
    refusing_store.refusing = False
    assert _publish(api, ("example.co", "Refused", "v1")).status_code == 201
    assert client.get(LATEST)["X-Content-Digest"] != good.digest


def test_a_refused_upload_chunk_is_an_error_and_the_session_keeps_its_size(
    refusing_store, catalog, owner
):
    upload = oci_services.oci_upload_start(catalog=catalog, actor=owner)
    oci_services.oci_upload_append(upload=upload, content=b"first", content_range="0-4")
    refusing_store.refusing = True
    with pytest.raises(StorageError, match="AccessDenied"):
        oci_services.oci_upload_append(upload=upload, content=b"second", content_range="5-10")
    refusing_store.refusing = False
    assert OciUpload.objects.get().size == 5
    finished = oci_services.oci_upload_finish(
        upload=upload, digest="sha256:" + hashlib.sha256(b"first!").hexdigest(), content=b"!"
    )
    assert blobstore.blob_read(finished) == b"first!"


def test_local_storage_writes_content_addressed_files_under_media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }
    digest = blobstore.blob_put(content=b"bytes")
    assert (tmp_path / _key(digest)).read_bytes() == b"bytes"
    # A second write of the same bytes keeps one file under the same name (never "_abc12").
    default_storage.save("unrelated", ContentFile(b"x"))
    assert blobstore.blob_put(content=b"bytes") == digest
    assert sorted(p.name for p in (tmp_path / "blobs" / "sha256").iterdir()) == [digest[7:]]
    with pytest.raises(StorageError, match="does not match its digest"):
        blobstore.blob_put(content=b"other", digest=digest)


def test_an_object_lost_from_the_store_is_a_503_that_says_so_not_a_500(
    s3_storage, api, catalog, client, caplog
):
    """The row says the bytes exist, the store has lost them: the catalog URL and the OCI
    endpoint answer 503 naming the digest, and the operator finds it in the log."""
    from catalogs.publishing import serving

    s3, bucket = s3_storage
    assert _publish(api, ("example.co", "SetLabels", "v1")).status_code == 201
    version = CatalogVersion.objects.get()
    s3.delete_object(Bucket=bucket, Key=_key(version.digest))
    _fresh_reads()
    serving.serving_caches_clear()

    pinned = client.get(f"/c/example-co/functions/sha256/{version.digest[7:]}/catalog.yaml")
    assert pinned.status_code == 503
    assert pinned.json() == {
        "detail": "Stored content is unavailable: "
        f"{version.digest} is recorded but missing from the object store."
    }
    assert f"{version.digest} is recorded but missing from the object store" in caplog.text
    page = client.get(LATEST, HTTP_ACCEPT="text/html")
    assert page.status_code == 503 and page["Content-Type"].startswith("text/plain")
    layer = client.get(f"{REPO}/blobs/{version.digest}")
    assert layer.status_code == 503
    [error] = layer.json()["errors"]
    assert error["code"] == "UNAVAILABLE" and version.digest in error["message"]
