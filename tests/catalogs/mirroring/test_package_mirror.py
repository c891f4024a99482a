"""Mirroring kustomization packages (Flux's artifact format) from Debian's docker-registry: stored
in the mirror's repository like a pushed package (signed by this registry, on the packages page),
built by ``krm`` from this registry as an ``oci://`` base with the same output as from upstream;
a moved upstream tag is a drift event; a tampered blob, a wrong digest, a bad signature and a
hostile archive are refused with nothing kept and the previously mirrored package untouched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from catalogs.distribution import manifests as m
from catalogs.distribution.models import OciBlob, OciManifest, OciPackage, OciTag
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import DriftEvent
from tests.catalogs.distribution.test_packages import targz
from tests.catalogs.mirroring.conftest import public_pem, stored_blobs
from tests.catalogs.trust.test_signing import independently_verified, own_key  # noqa: F401

KUSTOMIZATION = "resources:\n- cm.yaml\nnamePrefix: {prefix}-\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  a: '{value}'\n"


def tree(prefix: str, value: str) -> bytes:
    return targz(
        {
            "kustomization.yaml": KUSTOMIZATION.format(prefix=prefix),
            "cm.yaml": CM.format(value=value),
        }
    )


def push_package(upstream, ref: str, layer: bytes) -> str:
    return upstream.push(ref, [(layer, m.FLUX_CONTENT, {})])


def krm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


def run_sync(source):
    queued = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    return mirrors.sync_run_execute(run_pk=queued.pk)


def state(source) -> dict:
    """Everything a package sync may write, to compare before and after a refused one."""
    catalog = source.catalog
    source.refresh_from_db()
    return {
        "tags": sorted(OciTag.objects.filter(catalog=catalog).values_list("name", "manifest_id")),
        "manifests": sorted(
            OciManifest.objects.filter(catalog=catalog).values_list("digest", flat=True)
        ),
        "blobs_rows": sorted(OciBlob.objects.filter(catalog=catalog).values_list("digest", "size")),
        "packages": sorted(
            OciPackage.objects.filter(manifest__catalog=catalog).values_list(
                "manifest__digest", flat=True
            )
        ),
        "stored": stored_blobs(),
        "last_digest": source.last_digest,
        "verification": source.verification,
        "drift": DriftEvent.objects.filter(source=source).count(),
    }


@pytest.mark.django_db(transaction=True)
def test_mirrored_package_builds_from_this_registry_like_from_upstream(
    live_server,
    oci_settings,
    oci_upstream,
    cosign_key,
    own_key,  # noqa: F811
    tmp_path,
):
    oci_settings.SIGNING_OCI_ARTIFACTS = True
    oci_settings.REGISTRY_PUBLIC_URL = live_server.url
    repo = f"pkgs/web-{uuid.uuid4().hex[:8]}"
    first = push_package(oci_upstream, f"{repo}:stable", tree("web", "1"))
    oci_upstream.sign(repo, first, cosign_key)
    source = mirrors.mirror_source_create(
        name="web-pkg",
        kind="package",
        url=oci_upstream.url(f"{repo}:stable"),
        cosign_public_key=public_pem(cosign_key),
        actor=None,
    )
    run = run_sync(source)
    assert run.status == "succeeded", run.reason
    assert run.digest == first and run.verification["type"] == "cosign"
    package = OciPackage.objects.get(manifest__catalog=source.catalog)
    assert package.manifest.digest == first
    assert package.files == [
        ["cm.yaml", len(CM.format(value="1"))],
        ["kustomization.yaml", len(KUSTOMIZATION.format(prefix="web"))],
    ]
    assert OciTag.objects.get(catalog=source.catalog, name="stable").manifest == package.manifest

    # Served byte for byte: the manifest digest is upstream's.
    host = live_server.url.removeprefix("http://")
    served = httpx.get(f"{live_server.url}/v2/mirrors/web-pkg/manifests/stable")
    assert served.status_code == 200 and served.headers["Docker-Content-Digest"] == first

    # Signed by this registry, in cosign's layout, as a pushed package is.
    sig = OciTag.objects.get(catalog=source.catalog, name=first.replace(":", "-") + ".sig").manifest
    assert sig.subject_digest == first
    layer = json.loads(sig.content)["layers"][0]
    payload = httpx.get(f"{live_server.url}/v2/mirrors/web-pkg/blobs/{layer['digest']}").content
    assert json.loads(payload)["critical"]["image"]["docker-manifest-digest"] == first
    public = httpx.get(f"{live_server.url}/signing-key.pub").content
    assert independently_verified(
        public, layer["annotations"]["dev.cosignproject.cosign/signature"].encode(), payload
    )

    # krm builds it as a base from this registry (by tag, by digest, and with the registry's
    # key) with the output it builds from upstream.
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "DOCKER_CONFIG": str(tmp_path / "docker")}
    overlay = tmp_path / "overlay"
    overlay.mkdir()

    def build(ref: str, *extra: str) -> str:
        (overlay / "kustomization.yaml").write_text(f"resources:\n- {ref}\n")
        got = krm("build", *extra, str(overlay), env=env)
        assert got.returncode == 0, got.stderr
        return got.stdout

    from_upstream = build(f"oci://{oci_upstream.host}/{repo}:stable")
    assert "name: web-one" in from_upstream
    assert build(f"oci://{host}/mirrors/web-pkg:stable") == from_upstream
    assert build(f"oci://{host}/mirrors/web-pkg@{first}") == from_upstream
    key_file = tmp_path / "signing-key.pub"
    key_file.write_bytes(public)
    assert (
        build(f"oci://{host}/mirrors/web-pkg:stable", "--base-key", str(key_file)) == from_upstream
    )

    # The mirror's packages page lists it, signed.
    page = httpx.get(f"{live_server.url}/catalogs/mirrors/web-pkg/packages/").text
    assert first in page and "stable" in page and 'class="badge ok">signed' in page

    # Unchanged upstream: nothing new.
    again = run_sync(source)
    assert again.status == "unchanged", again.reason
    assert OciPackage.objects.filter(manifest__catalog=source.catalog).count() == 1

    # The upstream tag moves: a drift event, the tag moves here too, the old digest still served.
    second = push_package(oci_upstream, f"{repo}:stable", tree("web", "2"))
    oci_upstream.sign(repo, second, cosign_key)
    moved = run_sync(source)
    assert moved.status == "succeeded", moved.reason
    drift = DriftEvent.objects.get(source=source)
    assert (drift.image, drift.old_digest, drift.new_digest) == (source.url, first, second)
    assert OciTag.objects.get(catalog=source.catalog, name="stable").manifest.digest == second
    from_upstream = build(f"oci://{oci_upstream.host}/{repo}:stable")
    assert 'a: "2"' in from_upstream
    assert build(f"oci://{host}/mirrors/web-pkg:stable") == from_upstream
    assert 'a: "1"' in build(f"oci://{host}/mirrors/web-pkg@{first}")


def _blob_file(upstream, digest: str) -> Path:
    hexdigest = digest.removeprefix("sha256:")
    return (
        upstream.scratch
        / "storage"
        / "docker"
        / "registry"
        / "v2"
        / "blobs"
        / "sha256"
        / hexdigest[:2]
        / hexdigest
        / "data"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "fault", ["tampered blob", "wrong digest", "bad signature", "unsigned", "dotdot", "link-out"]
)
def test_refused_package_keeps_nothing_and_the_mirrored_one_stays(
    oci_settings, oci_upstream, cosign_key, other_cosign_key, fault
):
    repo = f"pkgs/fault-{uuid.uuid4().hex[:8]}"
    good = push_package(oci_upstream, f"{repo}:v1", tree("good", uuid.uuid4().hex))
    oci_upstream.sign(repo, good, cosign_key)
    source = mirrors.mirror_source_create(
        name="fault-pkg",
        kind="package",
        url=oci_upstream.url(f"{repo}:v1"),
        cosign_public_key=public_pem(cosign_key),
        actor=None,
    )
    assert run_sync(source).status == "succeeded"
    before = state(source)

    unique = uuid.uuid4().hex
    if fault == "dotdot":
        layer = targz({"kustomization.yaml": "resources: []\n", "../evil.yaml": unique})
    elif fault == "link-out":
        layer = targz({"kustomization.yaml": unique}, links={"sub/l": "../../etc/passwd"})
    else:
        layer = tree("bad", unique)
    bad = push_package(oci_upstream, f"{repo}:v1", layer)
    if fault == "bad signature":
        oci_upstream.sign(repo, bad, other_cosign_key)
    elif fault != "unsigned":
        oci_upstream.sign(repo, bad, cosign_key)
    if fault == "tampered blob":
        path = _blob_file(oci_upstream, m.sha256_digest(layer))
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    if fault == "wrong digest":
        mirrors.mirror_source_update(source=source, actor=None, digest=good)
        before = state(source)

    run = run_sync(source)
    assert run.status == "failed"
    expected = {
        "tampered blob": "Layer digest mismatch: manifest declares "
        f"{m.sha256_digest(layer)} ({len(layer)} bytes), registry sent sha256:",
        "wrong digest": f"Digest pin mismatch: pinned {good}, upstream has {bad}.",
        "bad signature": f"No cosign signature in {bad.replace(':', '-')}.sig verifies with the "
        "source's public key (1 checked).",
        "unsigned": f"No cosign signature found for {bad} (tag {bad.replace(':', '-')}.sig).",
        "dotdot": f"Package {source.url} refused: the package layer holds an unsafe path "
        "'../evil.yaml'",
        "link-out": f"Package {source.url} refused: the package layer holds a link 'sub/l' that "
        "points outside it",
    }[fault]
    assert run.reason.startswith(expected), run.reason
    assert state(source) == before
    assert OciTag.objects.get(catalog=source.catalog, name="v1").manifest.digest == good


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"url": "https://127.0.0.1/pkg.tar.gz"},
            "A kustomization package is an OCI artifact: its URL is oci://host/repository:tag "
            "or oci://host/repository@sha256:…",
        ),
        (
            {"mirror_runtimes": True},
            "A package source is verified by its digest and, optionally, a cosign public key; "
            "upstream_root_sha256, a sigstore identity and mirror_runtimes are for catalogs.",
        ),
        ({"kind": "chart"}, None),
    ],
    ids=["not-oci", "runtimes", "unknown-kind"],
)
def test_api_refuses_a_package_source_that_cannot_be_one(
    oci_settings, oci_upstream, extra, message
):
    from rest_framework.test import APIClient

    from catalogs.mirroring.models import MirrorSource
    from tests.catalogs.factories import UserFactory

    staff = APIClient()
    staff.force_authenticate(UserFactory(username="admin", is_staff=True))
    data = {"name": "pkg", "kind": "package", "url": oci_upstream.url("pkgs/x:v1"), **extra}
    response = staff.post("/api/v1/sources/", data, format="json")
    assert response.status_code == 400, response.content
    if message is not None:
        assert message in str(response.json())
    else:
        assert "kind" in response.json()
    assert not MirrorSource.objects.exists()
    created = staff.post(
        "/api/v1/sources/",
        {"name": "pkg", "kind": "package", "url": oci_upstream.url("pkgs/x:v1")},
        format="json",
    )
    assert created.status_code == 201 and created.json()["kind"] == "package"
    # Its operator page says what it mirrors and links the packages page it is served on.
    from django.test import Client

    web = Client()
    web.force_login(UserFactory(username="operator", is_staff=True))
    page = web.get(f"/mirrors/{created.json()['id']}/").content.decode()
    assert "<dt>Mirrors</dt><dd>a kustomization package (OCI)</dd>" in page
    assert 'href="/catalogs/mirrors/pkg/packages/">packages of mirrors/pkg</a>' in page
