"""Mirroring container images: a source with "mirror runtimes" copies every image its catalog names
(index, every platform's manifest, configs, layers) from the image's registry into the mirror's
own ``/v2/mirrors/<name>/…`` repositories, verified by digest (and by cosign when the source has a
key), and the served catalog names them there, pinned.

Real peers: the images are built with Debian's ``umoci`` from ``busybox-static`` and pushed with
``skopeo`` to a live Debian ``docker-registry`` (tests/orchestrator/functions/images.py); the
catalog is an oras artifact in the same registry or a document on a trustme HTTPS server. The air
gap test stops that registry and builds with ``krm build --container-runtime builtin`` against
the registry's ``live_server`` alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import RuntimeArtifact
from tests.catalogs.mirroring.conftest import OciUpstream, public_pem, stored_blobs
from tests.orchestrator.functions import images
from tests.orchestrator.functions.conftest import REGISTRY, start_registry, stop_registry

REPO = Path(__file__).resolve().parents[3]
BWRAP = shutil.which("bwrap")

# Not a skip: without these Debian packages (scripts/system-packages.sh) the tests fail, saying so.
MISSING = [
    name
    for name, found in (
        ("docker-registry", REGISTRY),
        ("umoci", images.UMOCI),
        ("skopeo", images.SKOPEO),
        ("busybox-static", images.BUSYBOX),
    )
    if found is None
]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """A docker-registry holding the umoci-built images: (host, storage, {tag: Pushed}, layout)."""
    assert not MISSING, f"missing Debian packages: {', '.join(MISSING)}"
    root = tmp_path_factory.mktemp("image-registry")
    proc, host = start_registry(root)
    build = tmp_path_factory.mktemp("image-build")
    try:
        yield host, root / "storage", images.build_images(build, host), build / "layout"
    finally:
        stop_registry(proc)


@pytest.fixture
def settings_for(oci_settings):
    """Mirror settings that also reach ``host`` over plain HTTP."""

    def allow(host: str):
        oci_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [
            *oci_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS,
            host,
        ]
        return oci_settings

    return allow


def catalog_of(functions: list[tuple[str, str, str | None]]) -> bytes:
    """A catalog with one container function per (kind, image, sha256 hex or None)."""
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        "  name: images",
        "spec:",
        "  krmFunctions:",
    ]
    for kind, image, sha in functions:
        lines += [
            "  - group: example.com",
            "    names:",
            f"      kind: {kind}",
            "    versions:",
            "    - name: v1",
            "      runtime:",
            "        container:",
            f"          image: {image}",
        ]
        if sha:
            lines.append(f'          sha256: "{sha}"')
    return ("\n".join(lines) + "\n").encode()


def served_images(client, name: str) -> dict[str, tuple[str, str]]:
    """kind -> (image, sha256) of the mirror's served catalog."""
    doc = yaml.safe_load(client.get(f"/c/mirrors/{name}/catalog.yaml").content)
    return {
        f["names"]["kind"]: (
            f["versions"][0]["runtime"]["container"]["image"],
            f["versions"][0]["runtime"]["container"]["sha256"],
        )
        for f in doc["spec"]["krmFunctions"]
    }


def upstream_manifest(host: str, repository: str, digest: str) -> bytes:
    accept = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json"
    request = urllib.request.Request(
        f"http://{host}/v2/{repository}/manifests/{digest}", headers={"Accept": accept}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def create(name: str, url: str, **kwargs):
    return mirrors.mirror_source_create(
        name=name, url=url, actor=None, mirror_runtimes=True, **kwargs
    )


@pytest.mark.django_db
def test_every_platform_config_and_layer_is_mirrored_and_served_pinned(
    upstream, settings_for, https_upstream, sync, client
):
    host, _storage, pushed, _layout = upstream
    settings_for(host)
    one, two, multi = pushed["one"], pushed["two"], pushed["multi"]
    doc = catalog_of(
        [
            ("One", one.ref, one.hex),  # by tag, with the catalog's sha256
            ("Two", f"{host}/fn/two@{two.digest}", None),  # by digest
            ("Multi", multi.ref, None),  # an index of two platforms, by tag alone
            ("Again", one.ref, None),  # the same image twice: mirrored once
        ]
    )
    source = create("images", https_upstream.serve("/catalog.yaml", doc))

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    base = "testserver/mirrors/images"
    assert served_images(client, "images") == {
        "One": (f"{base}/fn/one@{one.digest}", one.hex),
        "Two": (f"{base}/fn/two@{two.digest}", two.hex),
        "Multi": (f"{base}/fn/multi@{multi.digest}", multi.hex),
        "Again": (f"{base}/fn/one@{one.digest}", one.hex),
    }
    assert set(run.provenance["images"]) == {one.ref, f"{host}/fn/two@{two.digest}", multi.ref}
    assert run.provenance["images"][multi.ref]["manifests"] == 3  # the index and two platforms
    # Tags resolved at sync time are the source's image digests (drift is seen against them).
    source.refresh_from_db()
    assert source.image_digests == {one.ref: one.digest, multi.ref: multi.digest}

    # Every manifest byte for byte, every blob by digest, from the image's repository here.
    index = upstream_manifest(host, "fn/multi", multi.digest)
    response = client.get(f"/v2/mirrors/images/fn/multi/manifests/{multi.digest}")
    assert response.status_code == 200
    assert response.content == index
    assert response["Content-Type"] == "application/vnd.oci.image.index.v1+json"
    assert response["Docker-Content-Digest"] == multi.digest
    platforms = json.loads(index)["manifests"]
    assert {p["platform"]["architecture"] for p in platforms} == {"amd64", "arm64"}
    blobs = set()
    for child in platforms:
        got = client.get(f"/v2/mirrors/images/fn/multi/manifests/{child['digest']}")
        assert got.status_code == 200
        assert got.content == upstream_manifest(host, "fn/multi", child["digest"])
        manifest = json.loads(got.content)
        blobs.update(d["digest"] for d in [manifest["config"], *manifest["layers"]])
    for digest in blobs:
        got = client.get(f"/v2/mirrors/images/fn/multi/blobs/{digest}")
        assert got.status_code == 200
        data = b"".join(got.streaming_content)
        assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
    assert blobs <= set(RuntimeArtifact.objects.values_list("digest", flat=True))

    # Pulled by digest only: the upstream's tags are not the mirror's.
    by_tag = client.get("/v2/mirrors/images/fn/multi/manifests/v1")
    assert by_tag.status_code == 404
    assert by_tag.json()["errors"][0]["message"] == (
        "manifest unknown to registry: mirrors/images/fn/multi:v1 (an image mirrored under a "
        "catalog is pulled by digest)"
    )
    # Nobody pushes there.
    put = client.put(
        f"/v2/mirrors/images/fn/multi/manifests/{multi.digest}",
        data=index,
        content_type="application/vnd.oci.image.index.v1+json",
    )
    assert put.status_code in (401, 404)

    # A second sync of the same upstream changes nothing and downloads no layer again.
    blobs_before = stored_blobs()
    again = sync(source)
    assert again.status == "unchanged"
    assert stored_blobs() == blobs_before
    # A changed catalog naming the same images: a new version, and only the document is read
    # (the layers the registry keeps are linked to the new version, not downloaded again).
    changed = doc.replace(b"name: images", b"name: images-v2")
    https_upstream.serve("/catalog.yaml", changed)
    third = sync(source)
    assert (third.status, third.reason, third.bytes) == ("succeeded", "", len(changed))
    assert third.catalog_version.number == 2
    assert served_images(client, "images")["Multi"] == (
        f"{base}/fn/multi@{multi.digest}",
        multi.hex,
    )
    for digest in blobs:
        assert client.get(f"/v2/mirrors/images/fn/multi/blobs/{digest}").status_code == 200
    assert RuntimeArtifact.objects.get(digest=sorted(blobs)[0]).catalog_versions.count() == 2


def _damaged_copy(
    tmp_path: Path, storage: Path, digest: str, *, json_text: bool = False
) -> tuple[subprocess.Popen, str]:
    """A second registry over a copy of the first's storage, one blob's bytes changed (for a
    manifest, ``json_text``: one letter of a media type, so that it stays JSON)."""
    root = tmp_path / "damaged"
    root.mkdir()
    shutil.copytree(storage, root / "storage", symlinks=True)
    blob = images.registry_blob_path(root / "storage", digest)
    data = bytearray(blob.read_bytes())
    if json_text:
        data = bytearray(bytes(data).replace(b"vnd.oci.image.layer", b"vnd.oci.image.layeR", 1))
    else:
        data[len(data) // 2] ^= 0xFF  # same size, other bytes
    blob.write_bytes(bytes(data))
    return start_registry(root)


@pytest.mark.django_db
def test_a_layer_with_other_bytes_fails_the_run_and_the_served_version_stays(
    upstream, settings_for, https_upstream, sync, snapshot, tmp_path
):
    host, storage, pushed, _layout = upstream
    one = pushed["one"]
    good = catalog_of([("One", one.ref, one.hex)])
    url = https_upstream.serve("/catalog.yaml", good)
    settings_for(host)
    source = create("damaged", url)
    assert sync(source).status == "succeeded"
    before = snapshot(source)

    layer = json.loads(upstream_manifest(host, "fn/two", pushed["two"].digest))["layers"][-1]
    proc, other = _damaged_copy(tmp_path, storage, layer["digest"])
    try:
        settings_for(other)
        ref = f"{other}/fn/two@{pushed['two'].digest}"
        https_upstream.serve(
            "/catalog.yaml", catalog_of([("One", one.ref, one.hex), ("T", ref, None)])
        )
        run = sync(source)
    finally:
        stop_registry(proc)

    assert run.status == "failed"
    assert run.reason.startswith(
        f"Container image {ref}: Blob {layer['digest']} of {other}/fn/two: the manifest "
        f"declares {layer['size']} bytes, "
        f"the registry sent {layer['size']} bytes with digest sha256:"
    ), run.reason
    assert run.reason.endswith("; refused.")
    assert snapshot(source) == before  # the previous version, its blobs and artifacts, untouched


@pytest.mark.django_db
def test_a_catalog_sha256_the_tag_does_not_have_fails_the_run(
    upstream, settings_for, https_upstream, sync, snapshot
):
    host, _storage, pushed, _layout = upstream
    settings_for(host)
    one, two = pushed["one"], pushed["two"]
    source = create(
        "pinned", https_upstream.serve("/catalog.yaml", catalog_of([("One", one.ref, two.hex)]))
    )
    before = snapshot(source)

    run = sync(source)

    # Pulled by the pinned digest, which fn/one does not have (a digest names one content).
    assert run.status == "failed"
    assert run.reason == (
        f"Container image {one.ref}: GET http://{host}/v2/fn/one/manifests/{two.digest} "
        "answered HTTP 404"
    )
    assert snapshot(source) == before
    assert before["status"] == 404  # never served: no half-mirrored catalog either


@pytest.mark.django_db
def test_an_image_over_the_size_limit_fails_before_any_layer_is_read(
    upstream, settings_for, https_upstream, sync, snapshot
):
    host, _storage, pushed, _layout = upstream
    settings = settings_for(host)
    settings.MIRROR_IMAGE_MAX_BYTES = 1000
    multi = pushed["multi"]
    source = create(
        "big", https_upstream.serve("/catalog.yaml", catalog_of([("M", multi.ref, None)]))
    )
    before = snapshot(source)

    run = sync(source)

    assert run.status == "failed"
    assert run.reason.startswith(f"Container image {multi.ref} is ")
    assert run.reason.endswith(
        " bytes (configs and layers of every platform), over the limit of 1000 bytes "
        "(MIRROR_IMAGE_MAX_BYTES)."
    )
    assert snapshot(source) == before
    assert RuntimeArtifact.objects.count() == 0


@pytest.mark.django_db
def test_a_source_with_a_key_needs_each_image_signed_by_it(
    upstream,
    settings_for,
    sync,
    snapshot,
    client,
    cosign_key,
    other_cosign_key,
    tmp_path,
    staff_user,
):
    host, _storage, pushed, _layout = upstream
    settings_for(host)
    one = pushed["one"]
    registry = OciUpstream(host, tmp_path)
    catalog = catalog_of([("One", one.ref, None)])
    catalog_digest = registry.push_catalog("catalogs/signed:v1", catalog)
    registry.sign("catalogs/signed", catalog_digest, cosign_key)
    source = create(
        "signed", registry.url("catalogs/signed:v1"), cosign_public_key=public_pem(cosign_key)
    )
    before = snapshot(source)

    unsigned = sync(source)

    assert unsigned.status == "failed"
    tag = one.digest.replace(":", "-") + ".sig"
    assert unsigned.reason == (
        f"Container image {one.ref}: No cosign signature found for {one.digest} (tag {tag})."
    )
    assert snapshot(source) == before

    registry.sign("fn/one", one.digest, other_cosign_key)  # someone else's key
    wrong = sync(source)
    assert wrong.status == "failed"
    assert wrong.reason == (
        f"Container image {one.ref}: No cosign signature in {tag} verifies with the source's "
        "public key (1 checked)."
    )

    registry.sign("fn/one", one.digest, cosign_key)
    signed = sync(source)
    assert (signed.status, signed.reason) == ("succeeded", "")
    record = signed.provenance["images"][one.ref]
    assert record["verification"]["type"] == "cosign"
    assert record["verification"]["manifest_digest"] == one.digest
    assert served_images(client, "signed")["One"] == (
        f"testserver/mirrors/signed/fn/one@{one.digest}",
        one.hex,
    )
    # The operator's page of the source lists what the served version's images are.
    client.force_login(staff_user)
    page = client.get(f"/mirrors/{source.pk}/").content.decode()
    row = page[page.index('<table class="grid images">') :].split("</table>")[0]
    assert f"<code>{one.ref}</code>" in row
    assert f"testserver/mirrors/signed/fn/one@{one.digest}" in row
    assert "<td>cosign</td>" in row


# ----------------------------------------------------------------------------- air gap


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text("resources:\n- cm.yaml\ntransformers:\n- fn.yaml\n")
    (app / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  key: value\n"
    )
    (app / "fn.yaml").write_text("apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: f\n")
    return app


@pytest.mark.django_db(transaction=True)
def test_air_gapped_build_runs_the_mirrored_image_with_the_upstream_stopped(
    upstream, settings_for, https_upstream, live_server, tmp_path
):
    """Mirror a catalog whose function is a container image, stop the image's registry (and the
    catalog's server), then ``krm build --container-runtime builtin`` against the mirror: the
    function runs from the registry alone, with no docker or podman on PATH."""
    assert BWRAP is not None, "bubblewrap is missing (Debian package bubblewrap)"
    _host, _storage, pushed, layout = upstream
    root = tmp_path / "registry-a"
    root.mkdir()
    proc, host = start_registry(root)
    try:
        # The image "two" (its second layer deletes a file of the first) on registry A.
        digest = images.push(layout, "two", f"{host}/fn/probe:v1", tmp_path)
        assert digest == pushed["two"].digest
        settings = settings_for(host)
        settings.REGISTRY_PUBLIC_URL = live_server.url
        url = https_upstream.serve(
            "/catalog.yaml", catalog_of([("Probe", f"{host}/fn/probe:v1", None)])
        )
        source = create("airgap", url)
        run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
        run = mirrors.sync_run_execute(run_pk=run.pk)
        assert (run.status, run.reason) == ("succeeded", "")
    finally:
        stop_registry(proc)
    https_upstream.routes.clear()

    bindir = tmp_path / "bare-bin"
    bindir.mkdir()
    (bindir / "bwrap").symlink_to(BWRAP)
    env = {
        "PATH": str(bindir),
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "DOCKER_CONFIG": str(tmp_path / "docker-config"),
    }
    catalog_url = f"{live_server.url}/c/mirrors/airgap/catalog.yaml"
    with urllib.request.urlopen(catalog_url, timeout=10) as response:
        served = yaml.safe_load(response.read())
    container = served["spec"]["krmFunctions"][0]["versions"][0]["runtime"]["container"]
    mirrored = f"{live_server.url.removeprefix('http://')}/mirrors/airgap/fn/probe@{digest}"
    assert container == {"image": mirrored, "sha256": digest.removeprefix("sha256:")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "build",
            str(_app(tmp_path)),
            f"--trusted-catalog={catalog_url}",
            "--container-runtime",
            "builtin",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert [d["metadata"]["name"] for d in docs] == ["app", "probe"]
    probe = docs[1]["data"]
    assert probe["greeting"] == "hello"  # the image's own env
    assert probe["removed"] == "absent"  # the second layer's whiteout held
    assert probe["rootfs"] == "read-only"
    assert probe["cwd"] == "/work"
    # What ran came from the mirror: its rootfs is cached under the mirrored image's digest.
    assert os.listdir(tmp_path / "cache" / "krm" / "images" / "rootfs")


@pytest.mark.django_db
def test_a_manifest_with_more_descriptors_than_allowed_is_refused(
    upstream, settings_for, https_upstream, sync, snapshot
):
    host, _storage, pushed, _layout = upstream
    settings = settings_for(host)
    settings.OCI_MANIFEST_MAX_DESCRIPTORS = 2  # "two" has a config and two layers
    two = pushed["two"]
    doc = catalog_of([("Two", two.ref, None)])
    source = create("wide", https_upstream.serve("/catalog.yaml", doc))
    before = snapshot(source)

    run = sync(source)

    assert run.status == "failed"
    assert run.reason == (
        f"Container image {two.ref}: Manifest {two.ref} names 3 descriptors (a config and "
        "layers), over the limit of 2 (OCI_MANIFEST_MAX_DESCRIPTORS)."
    )
    assert snapshot(source) == before


@pytest.mark.django_db
def test_a_platform_manifest_with_other_bytes_than_its_digest_fails_the_run(
    upstream, settings_for, https_upstream, sync, snapshot, tmp_path
):
    host, storage, pushed, _layout = upstream
    multi = pushed["multi"]
    child = json.loads(upstream_manifest(host, "fn/multi", multi.digest))["manifests"][0]
    proc, other = _damaged_copy(tmp_path, storage, child["digest"], json_text=True)
    try:
        settings_for(other)
        ref = f"{other}/fn/multi@{multi.digest}"
        source = create(
            "lying", https_upstream.serve("/catalog.yaml", catalog_of([("M", ref, None)]))
        )
        before = snapshot(source)
        run = sync(source)
    finally:
        stop_registry(proc)

    assert run.status == "failed"
    assert run.reason.startswith(
        f"Container image {ref}: Manifest {other}/fn/multi@{child['digest']}: the registry sent "
        "a manifest with digest sha256:"
    ), run.reason
    assert run.reason.endswith(f", not {child['digest']}.")
    assert snapshot(source) == before
    assert RuntimeArtifact.objects.count() == 0


@pytest.mark.django_db
def test_a_docker_schema_2_image_is_kept_byte_for_byte(
    upstream, settings_for, https_upstream, sync, client, tmp_path
):
    """skopeo converts the umoci image to Docker's manifest format (v2s2) on push: the mirror
    serves that manifest with its own media type and digest."""
    host, _storage, _pushed, layout = upstream
    settings_for(host)
    assert images.SKOPEO is not None
    digestfile = tmp_path / "digest"
    subprocess.run(
        [
            images.SKOPEO,
            "copy",
            "--quiet",
            "--format",
            "v2s2",
            "--dest-tls-verify=false",
            "--digestfile",
            str(digestfile),
            f"oci:{layout}:one",
            f"docker://{host}/fn/docker:v1",
        ],
        check=True,
        capture_output=True,
    )
    digest = digestfile.read_text().strip()
    source = create(
        "docker",
        https_upstream.serve("/catalog.yaml", catalog_of([("D", f"{host}/fn/docker:v1", None)])),
    )

    run = sync(source)

    assert (run.status, run.reason) == ("succeeded", "")
    request = urllib.request.Request(
        f"http://{host}/v2/fn/docker/manifests/{digest}",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        upstream_bytes = response.read()
    served = client.get(f"/v2/mirrors/docker/fn/docker/manifests/{digest}")
    assert served.status_code == 200
    assert served["Content-Type"] == "application/vnd.docker.distribution.manifest.v2+json"
    assert served.content == upstream_bytes
    manifest = json.loads(upstream_bytes)
    for layer in manifest["layers"]:
        assert layer["mediaType"] == "application/vnd.docker.image.rootfs.diff.tar.gzip"
        got = client.get(f"/v2/mirrors/docker/fn/docker/blobs/{layer['digest']}")
        assert got.status_code == 200
        assert len(b"".join(got.streaming_content)) == layer["size"]
