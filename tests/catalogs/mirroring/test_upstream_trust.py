"""How a mirror trusts its upstream (``catalogs.mirroring.upstream_trust``) beside the e2e tests
against a live registry (tests/e2e/test_mirror_upstream_tuf.py): which registry and target a
source URL names; an upstream with no TUF metadata is verified with the source's cosign key,
as provenance records; one pinned before that stops serving it is refused; and a moved OCI
catalog tag raises a drift event, as a moved container image tag does."""

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


def test_pinned_upstream_that_stops_serving_tuf_is_refused(
    oci_settings, oci_upstream, sync, snapshot, client, staff_user
):
    """Once an upstream's root is pinned, metadata that disappears (a proxy answering 404, or
    an upstream swapped for a plain OCI registry) fails the run rather than fall back to
    unverified bytes. docker-registry serves no TUF metadata; the source's state says it did."""
    import datetime

    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import TOP_LEVEL_ROLE_NAMES, Metadata, Root
    from tuf.api.serialization.json import JSONSerializer

    oci_upstream.push_catalog("upstream/tools:latest", catalog_doc("tools"))
    source = mirrors.mirror_source_create(
        name="was-tuf", url=oci_upstream.url("upstream/tools:latest"), actor=None
    )
    signer = CryptoSigner.generate_ecdsa()
    root = Root(expires=datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1))
    for role in TOP_LEVEL_ROLE_NAMES:
        root.add_key(signer.public_key, role)
    md = Metadata(root)
    md.sign(signer)
    registry = f"http://{oci_upstream.host}"
    state = {
        "registry": registry,
        "pinned": {"version": 1, "sha256": "ab" * 32, "how": "first use"},
        "root": md.to_bytes(JSONSerializer()).decode(),
    }
    source.upstream_tuf = state
    source.save()
    before = snapshot(source)

    run = sync(source)

    assert run.status == "failed"
    assert run.reason.startswith(f"Upstream registry {registry} serves no TUF metadata ("), (
        run.reason
    )
    assert run.reason.endswith(
        "but its root is pinned (by first use); refusing to fall back to unverified catalogs."
    )
    assert snapshot(source) == before
    source.refresh_from_db()
    assert source.upstream_tuf == state
    # The mirror's page shows the root pinned, for an operator to compare.
    client.force_login(staff_user)
    page = client.get(f"/mirrors/{source.pk}/").content.decode()
    assert f'<code class="small">sha256:{"ab" * 32}</code> (version 1, pinned by first use)' in page


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://reg.example/c/acme/fns/catalog.yaml",
            ("https://reg.example", "acme", "fns", "acme/fns/catalog.yaml"),
        ),
        (
            "https://reg.example/c/acme/fns/versions/3/catalog.yaml",
            ("https://reg.example", "acme", "fns", "acme/fns/versions/3/catalog.yaml"),
        ),
        (
            "https://reg.example/c/acme/fns/catalog%2Eyaml",
            ("https://reg.example", "acme", "fns", "acme/fns/catalog.yaml"),
        ),
        (
            "https://reg.example/c/acme/fns/sha256/" + "a" * 64 + "/catalog.yaml",
            ("https://reg.example", "acme", "fns", ""),
        ),
        (
            "oci://reg.example/acme/fns",
            ("https://reg.example", "acme", "fns", "acme/fns/catalog.yaml"),
        ),
        (
            "oci://plain:5000/acme/fns:v2",
            ("http://plain:5000", "acme", "fns", "acme/fns/versions/2/catalog.yaml"),
        ),
        ("oci://reg.example/acme/fns:stable", ("https://reg.example", "acme", "fns", "")),
        (
            "oci://reg.example/acme/fns@sha256:" + "b" * 64,
            ("https://reg.example", "acme", "fns", ""),
        ),
        ("https://example.com/catalog.yaml", None),
        ("oci://reg.example/one/two/three:v1", None),
        ("git+https://example.com/repo.git//c/acme/fns/catalog.yaml?ref=main", None),
    ],
)
def test_which_upstream_a_source_url_names(url, expected):
    from catalogs.mirroring.upstream_trust import upstream_of

    found = upstream_of(url, plain_http_hosts=("plain:5000",))
    got = None if found is None else (found.registry, found.publisher, found.catalog, found.path)
    assert got == expected
