"""Blob garbage collection: blobs no runtime artifact references, past a grace period, go.

A worker that dies between storing a blob and committing its row leaves such a blob; here the
blob is left the same way (stored through the storage API, never recorded). Both a local and an
in-memory storage backend are collected, through the Django storage API only.
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command

from catalogs.mirroring import services as mirrors
from catalogs.mirroring import tasks
from catalogs.mirroring.models import RuntimeArtifact

pytestmark = pytest.mark.django_db

STORAGES = {
    "local": "django.core.files.storage.FileSystemStorage",
    "memory": "django.core.files.storage.InMemoryStorage",
}


@pytest.fixture(params=sorted(STORAGES))
def blob_storage(request, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": STORAGES[request.param]}}
    return request.param


def _store(data: bytes) -> str:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return default_storage.save(mirrors.blob_storage_name(digest), ContentFile(data))


def _age(name: str, hours: float) -> None:
    """Make a locally stored blob look ``hours`` old."""
    old = time.time() - hours * 3600
    os.utime(default_storage.path(name), (old, old))


def test_unreferenced_blobs_past_the_grace_period_are_deleted(blob_storage, settings):
    settings.BLOB_GC_GRACE_MINUTES = 60
    kept = _store(b"recorded artifact")
    RuntimeArtifact.objects.create(
        digest="sha256:" + hashlib.sha256(b"recorded artifact").hexdigest(),
        size=17,
        storage_name=kept,
    )
    orphan = _store(b"left by a worker that died mid-commit")
    young = _store(b"stored by a sync still running")
    grace = None  # BLOB_GC_GRACE_MINUTES
    if blob_storage == "local":
        _age(kept, 48)
        _age(orphan, 48)
    else:
        # In memory a blob cannot be made old: judge with no grace, without the young one.
        grace = timedelta(0)
        default_storage.delete(young)

    collected = mirrors.blob_garbage_collect(grace=grace)

    assert collected.deleted == [orphan]
    assert not default_storage.exists(orphan)
    assert default_storage.exists(kept)
    if blob_storage == "local":
        assert collected.kept_young == [young]
        assert default_storage.exists(young)


def test_dry_run_deletes_nothing(blob_storage):
    orphan = _store(b"orphan")
    collected = mirrors.blob_garbage_collect(grace=timedelta(0), dry_run=True)
    assert collected.deleted == [orphan]
    assert default_storage.exists(orphan)


def test_no_blob_directory_yet_is_nothing_to_do(blob_storage):
    assert mirrors.blob_garbage_collect(grace=timedelta(0)) == mirrors.BlobCollection([], [])


def test_the_command_and_the_task_report_what_they_deleted(blob_storage):
    first = _store(b"one")
    out = StringIO()
    call_command("gc_blobs", "--grace-minutes", "0", stdout=out)
    assert out.getvalue() == (
        f"Deleted {first}\nremoved 0 upload session(s) and 0 unreferenced blob(s)\n"
        "Deleted 1 unreferenced object(s); kept 0 younger than the grace period.\n"
    )
    second = _store(b"two")
    result = tasks.blobs_garbage_collect_task.apply(kwargs={}).get()
    # Default grace: a day.
    assert result == {"deleted": [], "kept_young": 1, "sessions": 0, "oci_blobs": 0}
    assert default_storage.exists(second)


def test_every_row_keeps_its_bytes_and_stale_uploads_go(blob_storage, catalog, owner, settings):
    """Versions, their OCI manifests and live upload sessions keep their objects, however old;
    bytes whose row was never committed (a crash) and an abandoned upload's bytes go."""
    from django.db import transaction

    from catalogs.distribution.models import OciManifest
    from catalogs.distribution.services import oci_upload_append, oci_upload_start
    from catalogs.publishing import blobstore, services
    from catalogs.publishing.models import CatalogVersion
    from tests.catalogs.factories import catalog_yaml

    version, _ = services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Kept", "v1")), actor=owner
    )
    live = oci_upload_start(catalog=catalog, actor=owner)
    oci_upload_append(upload=live, content=b"in progress")
    blobstore.upload_write(upload_id="abandoned", content=b"half")
    try:
        with transaction.atomic():
            crashed, _ = services.catalog_version_publish(
                catalog=catalog, content=catalog_yaml(("example.co", "Lost", "v1")), actor=owner
            )
            raise RuntimeError("died before the commit")
    except RuntimeError:
        pass
    if blob_storage == "local":
        for name in default_storage.listdir("blobs/sha256")[1]:
            _age(f"blobs/sha256/{name}", 48)
        for name in default_storage.listdir("uploads")[1]:
            _age(f"uploads/{name}", 48)
    grace = timedelta(hours=1) if blob_storage == "local" else timedelta(0)

    collected = mirrors.blob_garbage_collect(grace=grace)

    # The crashed publish's bytes (and its manifest and signature objects), the abandoned
    # upload: nothing a committed row names.
    assert {blobstore.blob_name(crashed.digest), "uploads/abandoned"} <= set(collected.deleted)
    named = {blobstore.blob_name(d) for d in mirrors._referenced_digests()}
    assert not named & set(collected.deleted)
    assert CatalogVersion.objects.count() == 1
    for name in named:
        assert default_storage.exists(name)
    assert blobstore.blob_name(version.digest) in named
    assert OciManifest.objects.filter(catalog_version=version).exists()
    assert default_storage.exists(f"uploads/{live.uuid}")
