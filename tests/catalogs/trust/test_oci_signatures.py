"""cosign's signature layout for every version's OCI manifest, read over /v2/ and checked with
code independent of the signing code (the verifier of tests/catalogs/trust/test_signing.py), and
with
the registry's own mirror verifier (catalogs.mirroring.signatures.cosign_verify)."""

from __future__ import annotations

import base64
import json

import pytest
from django.core.management import call_command

from catalogs.distribution import selectors as oci_selectors
from catalogs.distribution.models import OciManifest, OciTag
from catalogs.mirroring.fetchers.base import CosignSignature
from catalogs.mirroring.signatures import cosign_verify
from catalogs.publishing import services
from tests.catalogs.factories import catalog_yaml
from tests.catalogs.trust.test_signing import independently_verified, own_key  # noqa: F401

pytestmark = pytest.mark.django_db

SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
ACCEPT = {"HTTP_ACCEPT": "application/vnd.oci.image.manifest.v1+json"}


@pytest.fixture(autouse=True)
def _fresh_oci_caches():
    oci_selectors.oci_caches_clear()
    yield
    oci_selectors.oci_caches_clear()


def _publish(catalog, *kinds: str):
    content = catalog_yaml(*[("example.co", k, "v1") for k in kinds])
    return services.catalog_version_publish(catalog=catalog, content=content, actor=None)[0]


def _signature_of(client, digest: str) -> tuple[dict, bytes]:
    tag = digest.replace(":", "-") + ".sig"
    resp = client.get(f"/v2/example-co/functions/manifests/{tag}", **ACCEPT)
    assert resp.status_code == 200, resp.content
    manifest = json.loads(resp.content)
    (layer,) = manifest["layers"]
    payload = client.get(f"/v2/example-co/functions/blobs/{layer['digest']}")
    assert payload.status_code == 200
    return manifest, b"".join(payload.streaming_content) if payload.streaming else payload.content


def test_each_version_has_a_cosign_signature_of_its_manifest(client, catalog, own_key):  # noqa: F811
    version = _publish(catalog, "First")
    latest = client.get("/v2/example-co/functions/manifests/latest", **ACCEPT)
    digest = latest["Docker-Content-Digest"]
    assert digest == version.oci_manifest.digest
    manifest, payload = _signature_of(client, digest)
    layer = manifest["layers"][0]
    assert layer["mediaType"] == SIMPLESIGNING
    assert manifest["subject"] == {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "size": len(latest.content),
        "digest": digest,
    }
    assert json.loads(payload) == {
        "critical": {
            "identity": {"docker-reference": "testserver/example-co/functions"},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": None,
    }
    pub = client.get("/signing-key.pub")
    signature = layer["annotations"]["dev.cosignproject.cosign/signature"].encode()
    assert independently_verified(pub.content, signature, payload)
    assert not independently_verified(pub.content, signature, payload.replace(b"sha256:", b"x"))
    # The config blob cosign's layout names is there too.
    assert (
        client.get(f"/v2/example-co/functions/blobs/{manifest['config']['digest']}").status_code
        == 200
    )

    # What the mirroring code accepts from any cosign-signed registry accepts it too.
    record = cosign_verify(
        public_key_pem=pub.content.decode(),
        signatures=[CosignSignature(payload=payload, signature_b64=signature.decode())],
        manifest_digest=digest,
    )
    assert record["type"] == "cosign"


def test_signature_is_listed_by_referrers(client, catalog, own_key):  # noqa: F811
    version = _publish(catalog, "First")
    digest = version.oci_manifest.digest
    resp = client.get(f"/v2/example-co/functions/referrers/{digest}")
    assert resp.status_code == 200
    (listed,) = json.loads(resp.content)["manifests"]
    assert listed["artifactType"] == "application/vnd.dev.cosign.artifact.sig.v1+json"
    tag = OciTag.objects.get(name=digest.replace(":", "-") + ".sig")
    assert listed["digest"] == tag.manifest.digest
    filtered = client.get(
        f"/v2/example-co/functions/referrers/{digest}?artifactType=application/x-other"
    )
    assert json.loads(filtered.content)["manifests"] == []


def test_every_version_and_a_resign_after_rotation(client, catalog, own_key, capsys):  # noqa: F811
    first, second = _publish(catalog, "First"), _publish(catalog, "First", "Second")
    tags = set(OciTag.objects.filter(name__endswith=".sig").values_list("name", flat=True))
    assert tags == {v.oci_manifest.digest.replace(":", "-") + ".sig" for v in (first, second)}
    old_pub = client.get("/signing-key.pub").content
    call_command("rotate_signing_key", "--resign")
    capsys.readouterr()
    oci_selectors.oci_caches_clear()
    new_pub = client.get("/signing-key.pub").content
    manifest, payload = _signature_of(client, first.oci_manifest.digest)
    signature = manifest["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"]
    assert independently_verified(new_pub, signature.encode(), payload)
    # The old signature artifact is still stored and listed: old keys keep verifying.
    resp = client.get(f"/v2/example-co/functions/referrers/{first.oci_manifest.digest}")
    assert len(json.loads(resp.content)["manifests"]) == 2
    assert old_pub != new_pub


def test_sign_versions_adds_missing_oci_signatures(catalog, own_key, capsys):  # noqa: F811
    version = _publish(catalog, "First")
    sig_tag = OciTag.objects.get(name__endswith=".sig")
    sig_manifest = sig_tag.manifest
    sig_tag.delete()
    OciManifest.objects.filter(pk=sig_manifest.pk).delete()
    call_command("sign_versions")
    assert capsys.readouterr().out.startswith("Signed 1 catalog version(s)")
    tag = OciTag.objects.get(name__endswith=".sig")
    assert tag.manifest.subject_digest == version.oci_manifest.digest
    payload = base64.b64decode(
        json.loads(bytes(tag.manifest.content))["layers"][0]["annotations"][
            "dev.cosignproject.cosign/signature"
        ]
    )
    assert payload  # a DER signature
    call_command("sign_versions")
    assert capsys.readouterr().out.startswith("Signed 0 catalog version(s)")


def test_upload_gc_keeps_signature_blobs(client, catalog, own_key):  # noqa: F811
    from datetime import timedelta

    from catalogs.distribution.services import oci_uploads_gc

    version = _publish(catalog, "First")
    assert oci_uploads_gc(older_than=timedelta(0)) == (0, 0)
    oci_selectors.oci_caches_clear()
    manifest, payload = _signature_of(client, version.oci_manifest.digest)
    assert json.loads(payload)["critical"]["image"]["docker-manifest-digest"] == (
        version.oci_manifest.digest
    )
