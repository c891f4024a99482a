"""Runtime artifact mirroring: blobs stored once by digest, served catalog pointing at them,
container image tags resolved at their registry with drift events when a tag moves."""

from __future__ import annotations

import hashlib
import re

import pytest
import yaml

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import DriftEvent, RuntimeArtifact
from tests.catalogs.mirroring.conftest import (
    BEACON,
    GHA,
    SIGSTORE_DATA,
    catalog_doc,
    exec_catalog_doc,
    sha256,
    stored_blobs,
)

pytestmark = pytest.mark.django_db


def create(name: str, url: str, **kwargs):
    return mirrors.mirror_source_create(name=name, url=url, actor=None, **kwargs)


def uris(served: bytes) -> list[str]:
    doc = yaml.safe_load(served)
    return [
        p["uri"]
        for f in doc["spec"]["krmFunctions"]
        for v in f["versions"]
        for p in v["runtime"]["exec"]["platforms"]
    ]


def test_artifacts_are_stored_once_and_served(mirror_settings, https_upstream, sync, client):
    one, two = b"binary one" * 5000, b"binary two" * 7000
    url_one = https_upstream.serve("/bin/one", one)
    url_two = https_upstream.serve("/bin/two", two)
    doc = exec_catalog_doc(
        [
            ("One", url_one, hashlib.sha256(one).hexdigest()),
            ("Two", url_two, hashlib.sha256(two).hexdigest()),
            ("Again", url_one, hashlib.sha256(one).hexdigest()),
        ]
    )
    source = create("runtimes", https_upstream.serve("/catalog.yaml", doc), mirror_runtimes=True)

    run = sync(source)

    assert (run.status, run.reason, run.artifact_count) == ("succeeded", "", 2)
    assert run.bytes == len(doc) + len(one) + len(two)
    assert [path for path, _ in https_upstream.requests].count("/bin/one") == 1
    served = client.get("/c/mirrors/runtimes/catalog.yaml").content
    hex_one, hex_two = hashlib.sha256(one).hexdigest(), hashlib.sha256(two).hexdigest()
    assert uris(served) == [
        f"http://testserver/c/blobs/sha256/{hex_one}",
        f"http://testserver/c/blobs/sha256/{hex_two}",
        f"http://testserver/c/blobs/sha256/{hex_one}",
    ]
    blob = client.get(f"/c/blobs/sha256/{hex_two}")
    assert blob.status_code == 200
    assert b"".join(blob.streaming_content) == two
    assert blob["X-Content-Digest"] == sha256(two)
    # Both artifacts once each, beside the version's own bytes and its OCI manifests.
    stored = stored_blobs()
    assert {hex_one, hex_two} <= set(stored) and len(stored) == len(set(stored))
    artifact = RuntimeArtifact.objects.get(digest=sha256(one))
    assert list(artifact.catalog_versions.all()) == [run.catalog_version]
    assert client.get(f"/c/blobs/sha256/{'0' * 64}").status_code == 404


def test_relative_artifact_uris_resolve_against_the_catalog(mirror_settings, https_upstream, sync):
    data = b"relative binary"
    https_upstream.serve("/dist/tool", data)
    doc = exec_catalog_doc([("Rel", "../dist/tool", hashlib.sha256(data).hexdigest())])
    url = https_upstream.serve("/catalogs/catalog.yaml", doc)
    run = sync(create("relative", url, mirror_runtimes=True))
    assert (run.status, run.reason, run.artifact_count) == ("succeeded", "", 1)


def starlark_doc(uri: str, hexdigest: str) -> bytes:
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: star\n"
        "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: Star\n"
        "    versions:\n    - name: v1\n      runtime:\n        starlark:\n"
        f"          uri: {uri}\n          sha256: {hexdigest}\n"
    ).encode()


def test_starlark_scripts_are_mirrored_and_checked(
    mirror_settings, https_upstream, sync, client, snapshot
):
    script = b"def run(items):\n    return items\n"
    script_url = https_upstream.serve("/scripts/star.star", script)
    hexdigest = hashlib.sha256(script).hexdigest()
    url = https_upstream.serve("/catalog.yaml", starlark_doc(script_url, hexdigest))
    source = create("star", url, mirror_runtimes=True)

    run = sync(source)

    assert (run.status, run.reason, run.artifact_count) == ("succeeded", "", 1)
    served = yaml.safe_load(client.get("/c/mirrors/star/catalog.yaml").content)
    starlark = served["spec"]["krmFunctions"][0]["versions"][0]["runtime"]["starlark"]
    assert starlark == {"uri": f"http://testserver/c/blobs/sha256/{hexdigest}", "sha256": hexdigest}
    assert b"".join(client.get(f"/c/blobs/sha256/{hexdigest}").streaming_content) == script

    before = snapshot(source)
    changed = b"def run(items):\n    return []\n"
    https_upstream.serve("/scripts/star.star", changed)
    wrong = "f" * 64
    https_upstream.serve("/catalog.yaml", starlark_doc(script_url, wrong))
    failed = sync(source)
    assert (failed.status, failed.reason) == (
        "failed",
        f"Runtime artifact {script_url} has {sha256(changed)}, the catalog declares "
        f"sha256:{wrong}.",
    )
    assert snapshot(source) == before


def test_rewritten_catalog_over_the_limit_fails_before_storing(
    mirror_settings, https_upstream, sync, snapshot
):
    """Blob URLs are longer than upstream ones: the rewritten document is checked before commit."""
    data = b"binary"
    doc = exec_catalog_doc(
        [("Big", https_upstream.serve("/b", data), hashlib.sha256(data).hexdigest())]
    )
    source = create("grows", https_upstream.serve("/catalog.yaml", doc), mirror_runtimes=True)
    mirror_settings.CATALOG_MAX_BYTES = len(doc)
    before = snapshot(source)

    run = sync(source)

    assert run.status == "failed"
    assert re.fullmatch(
        r"With its runtime URIs pointed at this registry, the catalog is invalid: "
        r"\(document\): catalog is (\d+) bytes, over the limit of " + str(len(doc)) + r" bytes",
        run.reason,
    ), run.reason
    assert snapshot(source) == before


def test_container_tag_drift_is_recorded(
    oci_settings, oci_upstream, https_upstream, sync, client, staff_user
):
    image_ref = "tools/setter:latest"
    first = oci_upstream.push(image_ref, [(b"layer one", "application/octet-stream", {})])
    data = b"exec"
    doc = exec_catalog_doc(
        [("Set", https_upstream.serve("/bin/set", data), hashlib.sha256(data).hexdigest())],
        image=f"{oci_upstream.host}/{image_ref}",
    )
    source = create("drift", https_upstream.serve("/catalog.yaml", doc), mirror_runtimes=True)
    run = sync(source)
    assert run.status == "succeeded"
    source.refresh_from_db()
    assert source.image_digests == {f"{oci_upstream.host}/{image_ref}": first}
    assert DriftEvent.objects.count() == 0

    moved = oci_upstream.push(image_ref, [(b"layer two", "application/octet-stream", {})])
    second = sync(source)

    assert second.status == "unchanged"  # the catalog did not change, the image tag did
    event = DriftEvent.objects.get()
    assert (event.image, event.old_digest, event.new_digest, event.run) == (
        f"{oci_upstream.host}/{image_ref}",
        first,
        moved,
        second,
    )
    client.force_login(staff_user)  # runs are for mirror operators
    shown = client.get(f"/api/v1/runs/{second.pk}/").json()["drift_events"]
    assert [(e["image"], e["old_digest"], e["new_digest"]) for e in shown] == [
        (f"{oci_upstream.host}/{image_ref}", first, moved)
    ]


def test_real_sigstore_bundle_passes_before_catalog_validation(
    mirror_settings, https_upstream, sync
):
    """The real bundle verifies (right identity); a.txt then fails as a catalog, proving order."""
    a_txt = (SIGSTORE_DATA / "bundles" / "production" / "a.txt").read_bytes()
    url = https_upstream.serve("/a.txt", a_txt)
    bundle = SIGSTORE_DATA / "bundles" / "production" / "a.txt.v0.3.sigstore.json"
    https_upstream.serve("/a.txt.sigstore.json", bundle.read_bytes())
    source = create("real-bundle", url, sigstore_identity=BEACON, sigstore_issuer=GHA)

    run = sync(source)

    assert run.status == "failed"
    assert run.reason.startswith("The catalog document is invalid")
    assert "/a.txt.sigstore.json" in [path for path, _ in https_upstream.requests]


def test_sigstore_bundle_beside_git_file(mirror_settings, git_upstream, sync):
    a_txt = (SIGSTORE_DATA / "bundles" / "production" / "a.txt").read_bytes()
    bundle = (SIGSTORE_DATA / "bundles" / "production" / "a.txt.v0.3.sigstore.json").read_bytes()
    commit = git_upstream.commit({"a.txt": a_txt, "a.txt.sigstore.json": bundle})
    url = f"{git_upstream.path}//a.txt?ref=main"
    ok = sync(create("git-ok", url, sigstore_identity=BEACON, sigstore_issuer=GHA))
    wrong = sync(create("git-wrong", url, sigstore_identity="x@example.co", sigstore_issuer=GHA))

    assert ok.reason.startswith("The catalog document is invalid")
    assert wrong.reason.startswith(
        f"Sigstore bundle at a.txt.sigstore.json at commit {commit} does not verify for "
        "identity x@example.co"
    )


def test_catalog_without_runtime_mirroring_keeps_upstream_uris(
    mirror_settings, https_upstream, sync, client
):
    doc = exec_catalog_doc([("Keep", "https://example.invalid/keep", "ab" * 32)])
    source = create("keep", https_upstream.serve("/catalog.yaml", doc))
    assert sync(source).status == "succeeded"
    assert uris(client.get("/c/mirrors/keep/catalog.yaml").content) == [
        "https://example.invalid/keep"
    ]
    assert catalog_doc()  # the plain helper stays valid too


def test_artifacts_are_tuf_targets_of_the_mirrors_role(mirror_settings, https_upstream, sync):
    """Each exec artifact is a target ``mirrors/<catalog>/blobs/sha256/<hex>`` of the role the
    sync signs; artifacts mirrored before (the data migration records them) are signed by the
    next TUF refresh."""
    import importlib

    from django.apps import apps
    from tuf.api.metadata import Metadata

    from catalogs.trust import tuf
    from catalogs.trust.models import TufTarget

    one = b"binary one" * 100
    doc = exec_catalog_doc([("One", https_upstream.serve("/bin/one", one), sha256(one)[7:])])
    source = create("runtimes", https_upstream.serve("/catalog.yaml", doc), mirror_runtimes=True)
    assert sync(source).status == "succeeded"
    path = f"mirrors/runtimes/blobs/sha256/{sha256(one)[7:]}"

    def signed() -> dict:
        return Metadata.from_bytes(tuf.current("mirrors").data.encode()).signed.targets

    assert (signed()[path].length, signed()[path].hashes) == (
        len(one),
        {"sha256": sha256(one)[7:]},
    )
    # As before this release: no target, a role without it.
    TufTarget.objects.filter(path=path).delete()
    tuf.tuf_publish(publishers=["mirrors"])
    assert path not in signed()
    migration = importlib.import_module(
        "catalogs.mirroring.migrations.0004_runtime_artifact_tuf_targets"
    )
    migration.record(apps, None)
    assert TufTarget.objects.get(path=path).sha256 == sha256(one)[7:]
    tuf.tuf_refresh()
    assert path in signed()
