"""Fetcher details a sync relies on: destination checks and the OCI layer's digest and size."""

from __future__ import annotations

import json

import pytest

from catalogs.exceptions import DestinationRefusedError, DigestMismatchError
from catalogs.mirroring.fetchers import check_destination, fetch
from catalogs.mirroring.limits import mirror_limits
from tests.catalogs.mirroring.conftest import CATALOG_MEDIA_TYPE, catalog_doc, sha256


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("https://10.1.2.3/catalog.yaml", "10.1.2.3"),
        ("https://192.168.0.7/catalog.yaml", "192.168.0.7"),
        ("https://169.254.169.254/latest/meta-data", "169.254.169.254"),
        ("https://127.0.0.1:8443/catalog.yaml", "127.0.0.1"),
        ("https://[::1]/catalog.yaml", "::1"),
        ("https://[fe80::1]/catalog.yaml", "fe80::1"),
    ],
)
def test_private_loopback_and_link_local_are_refused_by_default(settings, url, address):
    limits = mirror_limits()
    assert limits.allowed_networks == ()  # the shipped default
    with pytest.raises(DestinationRefusedError) as err:
        check_destination(url, limits=limits)
    assert err.value.message == (
        f"Address {address} of host '{address}' is private, loopback or link-local; "
        f"refusing {url} (allow it with MIRROR_ALLOWED_NETWORKS)"
    )


def test_an_allowed_network_lets_its_addresses_through(settings):
    settings.MIRROR_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    limits = mirror_limits()
    check_destination("https://10.1.2.3/catalog.yaml", limits=limits)
    with pytest.raises(DestinationRefusedError):
        check_destination("https://192.168.0.7/catalog.yaml", limits=limits)


def broken_registry(https_upstream, repo: str, *, layer: bytes, declared: bytes) -> str:
    """Serve an OCI manifest whose catalog layer declares ``declared`` but whose blob is ``layer``.

    A real registry checks blobs by digest on push, so it cannot send the wrong bytes; the
    fixture's HTTPS server stands in for a broken or hostile one, speaking the same URLs.
    """
    digest = sha256(declared)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.empty.v1+json",
            "digest": sha256(b"{}"),
            "size": 2,
        },
        "layers": [{"mediaType": CATALOG_MEDIA_TYPE, "digest": digest, "size": len(declared)}],
    }
    https_upstream.serve(
        f"/v2/{repo}/manifests/v1",
        json.dumps(manifest).encode(),
        headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
    )
    https_upstream.serve(f"/v2/{repo}/blobs/{digest}", layer)
    return f"oci://127.0.0.1:{https_upstream.port}/{repo}:v1"


@pytest.mark.parametrize("fault", ["other bytes", "short body"])
def test_oci_layer_digest_and_size_are_verified(mirror_settings, https_upstream, fault):
    declared = catalog_doc("declared")
    sent = catalog_doc("tampered") if fault == "other bytes" else declared[:-10]
    url = broken_registry(https_upstream, "broken/catalog", layer=sent, declared=declared)
    with pytest.raises(DigestMismatchError) as err:
        fetch(url, limits=mirror_limits())
    assert err.value.message == (
        f"Layer digest mismatch: manifest declares {sha256(declared)} ({len(declared)} bytes), "
        f"registry sent {sha256(sent)} ({len(sent)} bytes)"
    )


def test_oci_fetch_through_the_same_server_verifies_a_good_layer(mirror_settings, https_upstream):
    """The stand-in registry above is faithful: with matching bytes the fetch succeeds."""
    doc = catalog_doc("good")
    url = broken_registry(https_upstream, "good/catalog", layer=doc, declared=doc)
    fetched = fetch(url, limits=mirror_limits())
    assert fetched.content == doc
    assert fetched.provenance["layer_digest"] == sha256(doc)


def test_redirect_to_plain_http_is_refused(mirror_settings, https_upstream):
    url = https_upstream.serve("/c.yaml", location="http://127.0.0.1/c.yaml")
    with pytest.raises(DestinationRefusedError) as err:
        fetch(url, limits=mirror_limits())
    assert err.value.message == (
        f"Redirect from {url} refused: Only https:// is allowed, not http://127.0.0.1/c.yaml"
    )
    assert [path for path, _ in https_upstream.requests] == ["/c.yaml"]
