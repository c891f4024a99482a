"""Pulls over OCI: a GET of a catalog version's manifest (by tag or digest) counts one pull of that
version; HEAD, revalidations and manifests that are no version (cosign signatures) count none."""

from __future__ import annotations

import pytest

from catalogs.publishing import pulls
from catalogs.publishing.models import CatalogVersionPulls
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

REPO = "/v2/example-co/functions"


def test_manifest_gets_count_for_the_version(client, api_client, catalog, settings):
    settings.SIGNING_OCI_ARTIFACTS = True  # so that a signature manifest exists to pull
    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", "v1")), actor=None
    )
    digest = version.oci_manifest.digest
    for reference in ("latest", "v1", digest):
        assert client.get(f"{REPO}/manifests/{reference}").status_code == 200
    assert client.head(f"{REPO}/manifests/latest").status_code == 200
    assert (
        client.get(f"{REPO}/manifests/latest", HTTP_IF_NONE_MATCH=f'"{digest}"').status_code == 304
    )
    signature_tag = "sha256-" + digest.removeprefix("sha256:") + ".sig"
    assert client.get(f"{REPO}/manifests/{signature_tag}").status_code == 200
    assert client.get(f"{REPO}/blobs/{version.digest}").status_code == 200  # a layer: no pull

    assert pulls.pulls_pending() == 4  # three version manifests and the signature's
    assert pulls.pulls_flush() == 3
    row = CatalogVersionPulls.objects.get()
    assert (row.version_id, row.via, row.count) == (version.pk, "oci", 3)
    rows = api_client.get("/api/v1/catalogs/example-co/functions/versions/").json()["results"]
    assert [(r["version"], r["pulls"]) for r in rows] == [(1, 3)]
    days = api_client.get("/api/v1/catalogs/example-co/functions/pulls/?days=1").json()
    assert [(d["https"], d["oci"], d["total"]) for d in days] == [(0, 3, 3)]
