"""A mirror's catalog is an OCI repository too: its versions get manifests (source = the
upstream URL) when a sync publishes them, and mirrored runtime artifacts are its blobs."""

from __future__ import annotations

import hashlib
import json

import pytest

from catalogs.mirroring import services as mirrors
from tests.catalogs.mirroring.conftest import exec_catalog_doc

pytestmark = pytest.mark.django_db


def test_synced_version_has_a_manifest_and_its_artifacts_are_blobs(
    mirror_settings, https_upstream, sync, client
):
    one = b"binary one" * 5000
    url_one = https_upstream.serve("/bin/one", one)
    doc = exec_catalog_doc([("One", url_one, hashlib.sha256(one).hexdigest())])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(name="rt", url=url, actor=None, mirror_runtimes=True)
    assert sync(source).status == "succeeded"

    repo = "/v2/mirrors/rt"
    response = client.get(f"{repo}/manifests/latest")
    assert response.status_code == 200
    manifest = json.loads(response.content)
    assert manifest["annotations"]["org.opencontainers.image.source"] == url
    served = client.get("/c/mirrors/rt/catalog.yaml").content
    layer = client.get(f"{repo}/blobs/{manifest['layers'][0]['digest']}")
    assert layer.content == served

    digest = "sha256:" + hashlib.sha256(one).hexdigest()
    blob = client.get(f"{repo}/blobs/{digest}")
    assert blob.status_code == 200
    assert b"".join(blob.streaming_content) == one
    assert blob["Docker-Content-Digest"] == digest
    assert blob["Content-Length"] == str(len(one))
    ranged = client.get(f"{repo}/blobs/{digest}", HTTP_RANGE="bytes=10-19")
    assert ranged.status_code == 206 and ranged.content == one[10:20]
    head = client.head(f"{repo}/blobs/{digest}")
    assert head.status_code == 200 and head["Content-Length"] == str(len(one))
    # The artifact belongs to the mirror's repository only.
    other = client.get(f"/v2/mirrors/other/blobs/{digest}")
    assert other.status_code == 404


def test_an_artifact_whose_file_is_gone_is_blob_unknown(
    mirror_settings, https_upstream, sync, client
):
    from django.core.files.storage import default_storage

    from catalogs.mirroring.models import RuntimeArtifact

    one = b"binary gone" * 100
    url_one = https_upstream.serve("/bin/gone", one)
    doc = exec_catalog_doc([("Gone", url_one, hashlib.sha256(one).hexdigest())])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(name="gone", url=url, actor=None, mirror_runtimes=True)
    assert sync(source).status == "succeeded"
    default_storage.delete(RuntimeArtifact.objects.get().storage_name)
    digest = "sha256:" + hashlib.sha256(one).hexdigest()
    response = client.get(f"/v2/mirrors/gone/blobs/{digest}")
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "BLOB_UNKNOWN"
