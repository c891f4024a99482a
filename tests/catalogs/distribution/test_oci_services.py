"""catalogs.distribution.services: version manifests built at publish, oci_artifact_store, GC of
uploads."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from catalogs.distribution import manifests as m
from catalogs.distribution.errors import (
    DeniedError,
    DigestInvalidError,
    ManifestBlobUnknownError,
    ManifestInvalidError,
    TagInvalidError,
)
from catalogs.distribution.models import OciBlob, OciManifest, OciTag, OciUpload
from catalogs.distribution.services import (
    oci_artifact_store,
    oci_catalog_versions_backfill,
    oci_upload_start,
    oci_uploads_gc,
)
from catalogs.publishing import blobstore
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


def _publish(catalog, owner, kind="SetLabels"):
    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", kind, "v1")), actor=owner
    )
    return version


def _tags(catalog) -> dict[str, str]:
    return dict(OciTag.objects.filter(catalog=catalog).values_list("name", "manifest__digest"))


def test_publish_stores_the_version_manifest_with_the_served_bytes_as_its_one_layer(catalog, owner):
    version = _publish(catalog, owner)
    row = OciManifest.objects.get(catalog_version=version)
    manifest = json.loads(bytes(row.content))
    assert row.digest == "sha256:" + hashlib.sha256(bytes(row.content)).hexdigest()
    assert manifest["schemaVersion"] == 2
    assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert manifest["artifactType"] == "application/vnd.cncf.kubernetes.krm-func-catalog.v1"
    assert manifest["config"] == {
        "mediaType": "application/vnd.oci.empty.v1+json",
        "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        "size": 2,
        "data": "e30=",
    }
    assert manifest["layers"] == [
        {
            "mediaType": "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml",
            "digest": version.digest,
            "size": len(bytes(version.content)),
            "annotations": {"org.opencontainers.image.title": "catalog.yaml"},
        }
    ]
    assert manifest["annotations"] == {
        "org.opencontainers.image.created": version.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "org.opencontainers.image.source": (
            "http://testserver/c/example-co/functions/versions/1/catalog.yaml"
        ),
        "org.opencontainers.image.version": "1",
    }
    assert _tags(catalog) == {"latest": row.digest, "v1": row.digest}


def test_a_second_version_moves_latest_and_keeps_v1(catalog, owner):
    first = OciManifest.objects.get(catalog_version=_publish(catalog, owner)).digest
    second = OciManifest.objects.get(catalog_version=_publish(catalog, owner, "Other")).digest
    assert first != second
    assert _tags(catalog) == {"latest": second, "v1": first, "v2": second}


def test_republishing_the_same_bytes_stores_nothing_new(catalog, owner):
    _publish(catalog, owner)
    before = list(OciManifest.objects.values_list("digest", flat=True))
    _publish(catalog, owner)
    assert list(OciManifest.objects.values_list("digest", flat=True)) == before


def test_backfill_builds_the_same_manifest_as_publish(catalog, owner):
    version = _publish(catalog, owner)
    row = OciManifest.objects.get(catalog_version=version)
    digest, content = row.digest, bytes(row.content)
    OciTag.objects.all().delete()
    row.delete()
    assert oci_catalog_versions_backfill() == 1
    again = OciManifest.objects.get(catalog_version=version)
    assert (again.digest, bytes(again.content)) == (digest, content)
    assert oci_catalog_versions_backfill() == 0


def _signature(subject: str, payload: bytes) -> bytes:
    return m.manifest_bytes(
        {
            "schemaVersion": 2,
            "mediaType": m.OCI_MANIFEST,
            "config": m.EMPTY_DESCRIPTOR,
            "layers": [
                {
                    "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
                    "digest": m.sha256_digest(payload),
                    "size": len(payload),
                    "annotations": {"dev.cosignproject.cosign/signature": "MEUC"},
                }
            ],
            "subject": {"mediaType": m.OCI_MANIFEST, "digest": subject, "size": 100},
            "annotations": {"org.example": "yes"},
        }
    )


def test_artifact_store_keeps_blobs_subject_and_tags(catalog, owner):
    version = _publish(catalog, owner)
    subject = version.oci_manifest.digest
    payload = b'{"critical": {}}'
    manifest = _signature(subject, payload)
    tag = f"sha256-{subject.removeprefix('sha256:')}.sig"
    digest = oci_artifact_store(
        catalog=catalog,
        manifest=manifest,
        media_type=m.OCI_MANIFEST,
        blobs={m.sha256_digest(payload): payload},
        tags=[tag],
    )
    assert digest == m.sha256_digest(manifest)
    row = OciManifest.objects.get(catalog=catalog, digest=digest)
    assert bytes(row.content) == manifest
    assert row.subject_digest == subject
    # No artifactType: the referrers API uses the config's media type.
    assert row.artifact_type == m.EMPTY_MEDIA_TYPE
    assert row.annotations == {"org.example": "yes"}
    assert row.catalog_version is None
    assert bytes(OciBlob.objects.get(digest=m.sha256_digest(payload)).content) == payload
    assert _tags(catalog)[tag] == digest
    # Storing it again (a re-sign) is idempotent.
    again = oci_artifact_store(
        catalog=catalog, manifest=manifest, media_type=m.OCI_MANIFEST, blobs={}, tags=[tag]
    )
    assert again == digest and OciManifest.objects.filter(digest=digest).count() == 1


@pytest.mark.parametrize(
    ("blobs", "tags", "error", "message"),
    [
        ({}, ["sig"], ManifestBlobUnknownError, "manifest references sha256:"),
        ({"sha256:" + "0" * 64: b"x"}, [], DigestInvalidError, "provided digest sha256:000"),
        ({"md5:abc": b"x"}, [], DigestInvalidError, "invalid digest 'md5:abc'"),
        (None, ["latest"], DeniedError, "tag 'latest' is reserved"),
        (None, ["v3"], DeniedError, "tag 'v3' is reserved"),
        (None, ["-bad"], TagInvalidError, "invalid tag '-bad'"),
    ],
)
def test_artifact_store_refuses_bad_input_and_stores_nothing(
    catalog, owner, blobs, tags, error, message
):
    version = _publish(catalog, owner)
    payload = b"payload"
    if blobs is None:
        blobs = {m.sha256_digest(payload): payload}
    before = (OciManifest.objects.count(), OciBlob.objects.count(), _tags(catalog))
    with pytest.raises(error, match=re.escape(message)):
        oci_artifact_store(
            catalog=catalog,
            manifest=_signature(version.oci_manifest.digest, payload),
            media_type=m.OCI_MANIFEST,
            blobs=blobs,
            tags=tags,
        )
    assert (OciManifest.objects.count(), OciBlob.objects.count(), _tags(catalog)) == before


@pytest.mark.parametrize(
    ("manifest", "media_type", "message"),
    [
        (b"{not json", m.OCI_MANIFEST, "manifest is not valid JSON"),
        (b"[]", m.OCI_MANIFEST, "manifest is not a JSON object"),
        (b'{"schemaVersion": 1}', m.OCI_MANIFEST, "schemaVersion must be 2, got 1"),
        (
            b'{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json"}',
            m.OCI_MANIFEST,
            "manifest mediaType 'application/vnd.oci.image.index.v1+json' does not match",
        ),
        (b'{"schemaVersion": 2}', "text/plain", "unsupported manifest media type 'text/plain'"),
        (
            b'{"schemaVersion": 2, "config": {"mediaType": "a/b", "digest": "sha256:1", '
            b'"size": 1}, "layers": []}',
            m.OCI_MANIFEST,
            "config.digest 'sha256:1' is not a sha256 digest",
        ),
        (
            b'{"schemaVersion": 2, "config": {"mediaType": "a/b", "digest": "sha256:'
            + b"a" * 64
            + b'", "size": -1}, "layers": []}',
            m.OCI_MANIFEST,
            "config.size -1 is not a non-negative integer",
        ),
    ],
)
def test_invalid_manifests_are_manifest_invalid(catalog, manifest, media_type, message):
    with pytest.raises(ManifestInvalidError, match=re.escape(message)):
        oci_artifact_store(
            catalog=catalog, manifest=manifest, media_type=media_type, blobs={}, tags=[]
        )
    assert OciManifest.objects.count() == 0


def test_gc_removes_stale_sessions_and_unreferenced_blobs_only(catalog, owner):
    version = _publish(catalog, owner)
    payload = b"referenced"
    oci_artifact_store(
        catalog=catalog,
        manifest=_signature(version.oci_manifest.digest, payload),
        media_type=m.OCI_MANIFEST,
        blobs={m.sha256_digest(payload): payload},
        tags=[],
    )
    orphan = b"never referenced"
    blobstore.blob_put(content=orphan)
    OciBlob.objects.create(catalog=catalog, digest=m.sha256_digest(orphan), size=len(orphan))
    oci_upload_start(catalog=catalog, actor=owner)
    assert oci_uploads_gc(older_than=timedelta(minutes=5)) == (0, 0)  # all still fresh
    assert oci_uploads_gc(older_than=timedelta(seconds=-1)) == (1, 1)
    assert list(OciBlob.objects.values_list("digest", flat=True)) == [m.sha256_digest(payload)]
    assert OciUpload.objects.count() == 0


def test_gc_command_reports_what_it_removed(catalog, owner):
    from io import StringIO

    from django.core.management import call_command

    oci_upload_start(catalog=catalog, actor=owner)
    out = StringIO()
    call_command("oci_gc_uploads", stdout=out)
    assert "removed 0 upload session(s) and 0 unreferenced blob(s)\n" in out.getvalue()
    OciUpload.objects.update(updated_at=timezone.now() - timedelta(minutes=61))
    out = StringIO()
    call_command("oci_gc_uploads", stdout=out)
    assert "removed 1 upload session(s) and 0 unreferenced blob(s)\n" in out.getvalue()


def test_celery_beat_runs_the_upload_gc_in_the_storage_gc_task(catalog, owner):
    from catalogs.mirroring.tasks import blobs_garbage_collect_task, oci_uploads_gc_task
    from registry.celery import app

    entry = app.conf.beat_schedule["blobs-garbage-collect"]
    assert entry == {"task": "catalogs.tasks.blobs_garbage_collect_task", "schedule": 900.0}
    assert "oci-uploads-gc" not in app.conf.beat_schedule  # one GC task, not two
    oci_upload_start(catalog=catalog, actor=owner)
    assert blobs_garbage_collect_task()["sessions"] == 0
    OciUpload.objects.update(updated_at=timezone.now() - timedelta(minutes=61))
    # The former task name (messages already queued) runs the same collection.
    result = oci_uploads_gc_task()
    assert (result["sessions"], result["oci_blobs"]) == (1, 0)
