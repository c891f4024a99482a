"""Syncing sources from real local upstreams: HTTPS, git (file:// and local path) and OCI."""

from __future__ import annotations

import pytest

from catalogs.mirroring import services as mirrors
from catalogs.publishing.models import CatalogVersion
from orchestrator.catalog import parse_catalog
from tests.catalogs.mirroring.conftest import catalog_doc, public_pem, sha256

pytestmark = pytest.mark.django_db


def create(name: str, url: str, **kwargs):
    return mirrors.mirror_source_create(name=name, url=url, actor=None, **kwargs)


def canonical(doc: bytes) -> bytes:
    return parse_catalog(doc).canonical_bytes()


def test_https_source_is_mirrored_and_served(mirror_settings, https_upstream, sync, client):
    doc = catalog_doc("from-https")
    url = https_upstream.serve("/catalog.yaml", doc)
    source = create("from-https", url)

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    assert run.digest == sha256(doc)
    assert run.function_count == 1
    assert run.bytes == len(doc)
    assert run.started_at and run.finished_at and run.finished_at >= run.started_at
    served = client.get("/c/mirrors/from-https/catalog.yaml")
    assert served.status_code == 200
    assert served.content == canonical(doc)
    assert served["X-Content-Digest"] == sha256(canonical(doc))
    source.refresh_from_db()
    assert source.last_digest == sha256(doc)
    assert source.verification == {"type": "none"}


def test_same_digest_creates_nothing(mirror_settings, https_upstream, sync):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = create("same", url)
    assert sync(source).status == "succeeded"

    second = sync(source)

    assert second.status == "unchanged"
    assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 1
    # The second request was conditional, and the server answered 304.
    assert (
        https_upstream.requests[-1][1].get("If-None-Match")
        == '"' + sha256(catalog_doc()).removeprefix("sha256:") + '"'
    )


def test_changed_upstream_makes_a_new_version(mirror_settings, https_upstream, sync, client):
    url = https_upstream.serve("/catalog.yaml", catalog_doc(kinds=("A",)))
    source = create("changes", url)
    sync(source)
    https_upstream.serve("/catalog.yaml", catalog_doc(kinds=("A", "B")))

    run = sync(source)

    assert run.status == "succeeded"
    assert run.catalog_version.number == 2
    assert run.function_count == 2
    assert client.get("/c/mirrors/changes/catalog.yaml").content == canonical(
        catalog_doc(kinds=("A", "B"))
    )


def test_https_digest_pin_that_matches(mirror_settings, https_upstream, sync):
    doc = catalog_doc()
    source = create("pinned", https_upstream.serve("/c.yaml", doc), digest=sha256(doc))
    assert sync(source).status == "succeeded"


@pytest.mark.parametrize("form", ["git+file", "path"])
def test_git_source(mirror_settings, git_upstream, sync, client, form):
    commit = git_upstream.commit({"cat/catalog.yaml": catalog_doc("from-git")})
    repo = f"git+file://{git_upstream.path}" if form == "git+file" else str(git_upstream.path)
    source = create("from-git", f"{repo}//cat/catalog.yaml?ref=main", digest=commit)

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    assert run.digest == commit
    blob = git_upstream.git("rev-parse", "HEAD:cat/catalog.yaml")
    assert run.provenance["blob"] == blob
    assert run.provenance["sha256"] == sha256(catalog_doc("from-git"))
    assert client.get("/c/mirrors/from-git/catalog.yaml").content == canonical(
        catalog_doc("from-git")
    )


def test_git_https_source(mirror_settings, https_upstream, git_upstream, sync, client):
    """git+https through git's own smart-HTTP server behind the trustme HTTPS upstream."""
    https_upstream.git_root = git_upstream.path.parent
    doc = catalog_doc("over-https")
    commit = git_upstream.commit({"cat/catalog.yaml": doc})
    repo = https_upstream.url(f"/git/{git_upstream.path.name}")
    source = create("git-https", f"git+{repo}//cat/catalog.yaml?ref=main", digest=commit)

    run = sync(source)

    assert (run.status, run.reason, run.digest) == ("succeeded", "", commit)
    assert run.provenance["repository"] == repo
    assert run.provenance["blob"] == git_upstream.git("rev-parse", "HEAD:cat/catalog.yaml")
    assert client.get("/c/mirrors/git-https/catalog.yaml").content == canonical(doc)
    assert any(path.endswith("/git-upload-pack") for path, _ in https_upstream.requests)

    missing = sync(create("git-https-missing", f"git+{repo}//cat/catalog.yaml?ref=nope"))
    assert missing.status == "failed"
    assert missing.reason == (
        f"Cannot fetch ref 'nope' of {repo}: fatal: couldn't find remote ref nope"
    )


def test_git_source_follows_the_branch(mirror_settings, git_upstream, sync):
    git_upstream.commit({"catalog.yaml": catalog_doc(kinds=("A",))})
    source = create("branch", f"{git_upstream.path}//catalog.yaml?ref=main")
    assert sync(source).status == "succeeded"
    assert sync(source).status == "unchanged"
    second = git_upstream.commit({"catalog.yaml": catalog_doc(kinds=("A", "B"))})
    run = sync(source)
    assert (run.status, run.digest, run.function_count) == ("succeeded", second, 2)


def test_oci_source_by_tag_and_by_digest(oci_settings, oci_upstream, sync, client):
    doc = catalog_doc("from-oci")
    digest = oci_upstream.push_catalog("team/catalog:v1", doc)
    by_tag = create("oci-tag", oci_upstream.url("team/catalog:v1"), digest=digest)
    by_digest = create("oci-digest", oci_upstream.url(f"team/catalog@{digest}"))

    for source in (by_tag, by_digest):
        run = sync(source)
        assert (run.status, run.reason, run.digest) == ("succeeded", "", digest)
        assert run.provenance["layer_digest"] == sha256(doc)
        served = client.get(f"/c/mirrors/{source.name}/catalog.yaml")
        assert served.content == canonical(doc)


def test_oci_cosign_signature_verifies(oci_settings, oci_upstream, sync, cosign_key):
    digest = oci_upstream.push_catalog("signed/catalog:v1", catalog_doc("signed"))
    oci_upstream.sign("signed/catalog", digest, cosign_key)
    source = create(
        "signed", oci_upstream.url("signed/catalog:v1"), cosign_public_key=public_pem(cosign_key)
    )

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    assert run.verification["type"] == "cosign"
    assert run.verification["manifest_digest"] == digest
    source.refresh_from_db()
    assert source.verification == run.verification


def test_loopback_is_refused_by_default(mirror_settings, https_upstream, sync, snapshot):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = create("loopback", url)
    mirror_settings.MIRROR_ALLOWED_NETWORKS = []
    before = snapshot(source)

    run = sync(source)

    assert run.status == "failed"
    assert run.reason == (
        f"Address 127.0.0.1 of host '127.0.0.1' is private, loopback or link-local; "
        f"refusing {url} (allow it with MIRROR_ALLOWED_NETWORKS)"
    )
    assert https_upstream.requests == []
    assert snapshot(source) == before


def test_local_git_paths_are_refused_by_default(mirror_settings, git_upstream, sync):
    git_upstream.commit({"catalog.yaml": catalog_doc()})
    url = f"{git_upstream.path}//catalog.yaml"
    source = create("local", url)
    mirror_settings.MIRROR_ALLOW_LOCAL_PATHS = False

    run = sync(source)

    assert run.status == "failed"
    assert run.reason == (
        f"Local git sources are refused: '{url}' (allow them with MIRROR_ALLOW_LOCAL_PATHS)"
    )


def test_redirect_within_allowed_hosts_is_followed(mirror_settings, https_upstream, sync):
    doc = catalog_doc("moved")
    target = https_upstream.serve("/new/catalog.yaml", doc)
    url = https_upstream.serve("/old/catalog.yaml", location="/new/catalog.yaml")
    run = sync(create("moved", url))
    assert (run.status, run.digest) == ("succeeded", sha256(doc))
    assert run.provenance["final_url"] == target


def test_redirect_loop_stops_at_the_limit(mirror_settings, https_upstream, sync):
    url = https_upstream.serve("/loop", location="/loop")
    mirror_settings.MIRROR_MAX_REDIRECTS = 2
    run = sync(create("loop", url))
    assert (run.status, run.reason) == ("failed", f"More than 2 redirects from {url}")
    assert [p for p, _ in https_upstream.requests] == ["/loop"] * 3


def test_unreachable_upstream_fails_with_reason(mirror_settings, sync):
    run = sync(create("plain", "https://127.0.0.1:1/x.yaml"))
    assert run.status == "failed"
    assert run.reason.startswith("Cannot read https://127.0.0.1:1/x.yaml: ")


def _blob_signature(key, data: bytes) -> bytes:
    """What ``cosign sign-blob --key`` writes: base64 of the DER ECDSA-SHA256 signature."""
    import base64

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    return base64.b64encode(key.sign(data, ec.ECDSA(hashes.SHA256())))


def test_https_cosign_blob_signature_verifies(
    mirror_settings, https_upstream, sync, cosign_key, other_cosign_key
):
    doc = catalog_doc("blob-signed")
    url = https_upstream.serve("/signed/catalog.yaml", doc)
    https_upstream.serve("/signed/catalog.yaml.sig", _blob_signature(cosign_key, doc))
    source = create("blob-signed", url, cosign_public_key=public_pem(cosign_key))

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    assert run.verification["type"] == "cosign-blob"
    assert run.verification["signature"] == url + ".sig"
    # Signed by another key, or no signature at all: the run fails, nothing is published.
    https_upstream.serve("/signed/catalog.yaml", catalog_doc("blob-signed", kinds=("A", "B")))
    https_upstream.serve("/signed/catalog.yaml.sig", _blob_signature(other_cosign_key, doc))
    run = sync(source)
    assert (run.status, run.reason) == (
        "failed",
        f"The cosign signature at {url}.sig does not verify with the source's public key.",
    )
    https_upstream.serve("/signed/catalog.yaml.sig", b"", status=404)
    run = sync(source)
    assert (run.status, run.reason) == ("failed", f"No cosign signature found at {url}.sig.")
    assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 1


def test_git_cosign_blob_signature_verifies(mirror_settings, git_upstream, sync, cosign_key):
    doc = catalog_doc("git-signed")
    commit = git_upstream.commit(
        {"cat/catalog.yaml": doc, "cat/catalog.yaml.sig": _blob_signature(cosign_key, doc)}
    )
    url = f"{git_upstream.path}//cat/catalog.yaml?ref=main"
    source = create("git-signed", url, cosign_public_key=public_pem(cosign_key))
    run = sync(source)
    assert (run.status, run.reason) == ("succeeded", "")
    assert run.verification["signature"] == f"cat/catalog.yaml.sig at commit {commit}"
    # The signature of the previous bytes does not cover the new ones.
    changed = git_upstream.commit({"cat/catalog.yaml": catalog_doc("git-signed", kinds=("B",))})
    run = sync(source)
    assert (run.status, run.reason) == (
        "failed",
        f"The cosign signature at cat/catalog.yaml.sig at commit {changed} does not verify "
        "with the source's public key.",
    )
