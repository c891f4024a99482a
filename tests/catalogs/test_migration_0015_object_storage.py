"""Migration 0015 moves every stored byte from the database into the object store, and back."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from catalogs.publishing import blobstore

BEFORE = [("catalogs", "0014_upstream_rate_limits")]
AFTER = [("catalogs", "0015_object_storage")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _digest(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


@pytest.mark.django_db(transaction=True)
def test_bytes_move_to_the_store_and_back(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    }
    latest = _migrate_latest_targets()
    try:
        old = _migrate(BEFORE)
        publisher = old.get_model("catalogs", "Publisher").objects.create(
            slug="migrated", display_name="M"
        )
        catalog = old.get_model("catalogs", "Catalog").objects.create(
            publisher=publisher, name="bytes"
        )
        document = b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\n"
        version = old.get_model("catalogs", "CatalogVersion").objects.create(
            catalog=catalog,
            number=1,
            content=document,
            digest=_digest(document),
            size=len(document),
        )
        manifest = b'{"schemaVersion": 2}'
        old.get_model("catalogs", "OciManifest").objects.create(
            catalog=catalog,
            digest=_digest(manifest),
            media_type="application/vnd.oci.image.manifest.v1+json",
            content=manifest,
            size=len(manifest),
        )
        blob = b"a pushed blob"
        old.get_model("catalogs", "OciBlob").objects.create(
            catalog=catalog, digest=_digest(blob), size=len(blob), content=blob
        )
        upload = old.get_model("catalogs", "OciUpload").objects.create(
            catalog=catalog, content=b"half", size=4
        )

        new = _migrate(AFTER)

        for content in (document, manifest, blob):
            assert blobstore.blob_read(_digest(content)) == content
        assert blobstore.upload_read(upload_id=str(upload.uuid), size=4) == b"half"
        fields = {f.name for f in new.get_model("catalogs", "CatalogVersion")._meta.get_fields()}
        assert "content" not in fields

        back = _migrate(BEFORE)
        restored = back.get_model("catalogs", "CatalogVersion").objects.get(pk=version.pk)
        assert bytes(restored.content) == document
        restored_blob = back.get_model("catalogs", "OciBlob").objects.get()
        assert bytes(restored_blob.content) == blob
        assert bytes(back.get_model("catalogs", "OciUpload").objects.get().content) == b"half"
    finally:
        _migrate(latest)


def _migrate_latest_targets():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()
