"""A moved catalog tag of an OCI source raises a drift event (as a moved container image tag
does), and a source whose upstream serves no TUF metadata is verified with its cosign key,
which the run's provenance records."""

from __future__ import annotations

import pytest

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import DriftEvent
from tests.catalogs.mirroring.conftest import catalog_doc, public_pem

pytestmark = pytest.mark.django_db


def test_moved_catalog_tag_raises_a_drift_event(oci_settings, oci_upstream, sync, client):
    first = oci_upstream.push_catalog("drift/catalog:stable", catalog_doc("drift"))
    source = mirrors.mirror_source_create(
        name="drift-tag", url=oci_upstream.url("drift/catalog:stable"), actor=None
    )
    run = sync(source)
    assert run.status == "succeeded", run.reason
    assert not DriftEvent.objects.exists()

    moved = oci_upstream.push_catalog(
        "drift/catalog:stable", catalog_doc("drift", kinds=("SetLabels", "SetAnnotations"))
    )
    second = sync(source)

    assert second.status == "succeeded", second.reason
    event = DriftEvent.objects.get()
    assert (event.image, event.old_digest, event.new_digest, event.run) == (
        oci_upstream.url("drift/catalog:stable"),
        first,
        moved,
        second,
    )
    # A third sync of the same manifest raises nothing more.
    assert sync(source).status == "unchanged"
    assert DriftEvent.objects.count() == 1


def test_digest_reference_cannot_drift(oci_settings, oci_upstream, sync):
    digest = oci_upstream.push_catalog("drift/pinned:v1", catalog_doc("pinned"))
    source = mirrors.mirror_source_create(
        name="drift-pinned", url=oci_upstream.url(f"drift/pinned@{digest}"), actor=None
    )
    assert sync(source).status == "succeeded"
    assert not DriftEvent.objects.exists()


def test_upstream_without_tuf_metadata_falls_back_to_cosign(
    oci_settings, oci_upstream, sync, cosign_key
):
    """docker-registry answers 404 at /tuf/root.json: not a TUF registry, so the source's
    cosign key verifies the manifest's signature, and provenance says so."""
    digest = oci_upstream.push_catalog("fallback/catalog:v1", catalog_doc("fallback"))
    oci_upstream.sign("fallback/catalog", digest, cosign_key)
    source = mirrors.mirror_source_create(
        name="fallback",
        url=oci_upstream.url("fallback/catalog:v1"),
        actor=None,
        cosign_public_key=public_pem(cosign_key),
    )
    run = sync(source)
    assert run.status == "succeeded", run.reason
    assert run.verification["type"] == "cosign"
    assert run.provenance["verification"] == "cosign"
    source.refresh_from_db()
    assert source.upstream_tuf == {}


def test_root_digest_needs_a_registry_url(mirror_settings):
    from catalogs.exceptions import InvalidInputError

    with pytest.raises(InvalidInputError) as caught:
        mirrors.mirror_source_create(
            name="not-a-registry",
            url="https://127.0.0.1/catalog.yaml",
            actor=None,
            upstream_root_sha256="0" * 64,
        )
    assert caught.value.message.startswith(
        "upstream_root_sha256 pins the TUF root of a registry of this kind"
    )
    with pytest.raises(InvalidInputError) as caught:
        mirrors.mirror_source_create(
            name="bad-digest",
            url="https://127.0.0.1/c/acme/fns/catalog.yaml",
            actor=None,
            upstream_root_sha256="sha256:abc",
        )
    assert "64 lower-case hexadecimal characters" in caught.value.message
    from catalogs.mirroring.models import MirrorSource

    assert not MirrorSource.objects.exists()
