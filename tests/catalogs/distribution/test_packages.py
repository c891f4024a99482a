"""Kustomization packages on the registry's ``/v2/``: pushed by ``krm push`` and by the ``oras``
package (Flux's artifact format), signed in cosign's layout, listed on the repository's packages
page, and built by ``krm`` as ``oci://`` bases from pytest-django's ``live_server`` (a real HTTP
server on a loopback port). Hostile trees are refused at push time with nothing stored.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

import httpx
import pytest

from catalogs.distribution import manifests as m
from catalogs.distribution.models import OciManifest, OciPackage, OciTag
from tests.catalogs.trust.test_signing import independently_verified, own_key  # noqa: F401

KUSTOMIZATION = "resources:\n- cm.yaml\nnamePrefix: pkg-\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  a: '1'\n"
REPO = "/v2/example-co/functions"


@pytest.fixture
def signing(settings, own_key):  # noqa: F811
    """Sign OCI artifacts (this folder's conftest turns it off) with this test's own key."""
    settings.SIGNING_OCI_ARTIFACTS = True
    return own_key


def targz(files: dict[str, str], *, links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        for name, text in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buf.getvalue()


def flux_manifest(layer: bytes) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": m.OCI_MANIFEST,
            "config": {"mediaType": m.FLUX_CONFIG, "digest": m.EMPTY_DIGEST, "size": 2},
            "layers": [
                {
                    "mediaType": m.FLUX_CONTENT,
                    "digest": m.sha256_digest(layer),
                    "size": len(layer),
                }
            ],
        }
    ).encode()


def krm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


@pytest.mark.django_db(transaction=True)
def test_krm_push_then_build_it_from_the_registry(
    live_server, catalog, owner_token, signing, tmp_path
):
    host = live_server.url.removeprefix("http://")
    docker = tmp_path / "docker"
    docker.mkdir()
    auth = base64.b64encode(f"owner:{owner_token}".encode()).decode()
    (docker / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    env = {"DOCKER_CONFIG": str(docker), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    base = tmp_path / "base"
    (base / "sub").mkdir(parents=True)
    (base / "kustomization.yaml").write_text(KUSTOMIZATION)
    (base / "cm.yaml").write_text(CM)
    (base / "sub" / "notes.txt").write_text("not built\n")

    pushed = krm("push", str(base), f"oci://{host}/example-co/functions:web-1", env=env)
    assert pushed.returncode == 0, pushed.stderr
    digest = pushed.stdout.strip()
    package = OciPackage.objects.get(manifest__digest=digest)
    assert package.files == [
        ["cm.yaml", len(CM)],
        ["kustomization.yaml", len(KUSTOMIZATION)],
        ["sub/notes.txt", 10],
    ]
    assert package.pushed_by.username == "owner"
    assert OciTag.objects.get(name="web-1").manifest.digest == digest

    # Signed in cosign's layout, checked with code independent of the signing code.
    sig_tag = digest.replace(":", "-") + ".sig"
    sig = OciTag.objects.get(name=sig_tag).manifest
    assert sig.subject_digest == digest
    layer = json.loads(sig.content)["layers"][0]
    payload = httpx.get(f"{live_server.url}{REPO}/blobs/{layer['digest']}").content
    assert json.loads(payload)["critical"]["image"]["docker-manifest-digest"] == digest
    public = httpx.get(f"{live_server.url}/signing-key.pub").content
    assert independently_verified(
        public, layer["annotations"]["dev.cosignproject.cosign/signature"].encode(), payload
    )

    # Built as a base from the registry, by tag and by digest: the local base's output.
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    local = krm("build", str(base), env=env)
    assert local.returncode == 0 and "name: pkg-one" in local.stdout
    for ref in ("functions:web-1", f"functions@{digest}"):
        (overlay / "kustomization.yaml").write_text(
            f"resources:\n- oci://{host}/example-co/{ref}\n"
        )
        got = krm("build", str(overlay), env=env)
        assert got.returncode == 0, got.stderr
        assert got.stdout == local.stdout

    # --base-key with the registry's key: the signature it made verifies in krm.
    key_file = tmp_path / "signing-key.pub"
    key_file.write_bytes(public)
    got = krm("build", "--base-key", str(key_file), str(overlay), env=env)
    assert got.returncode == 0, got.stderr
    assert got.stdout == local.stdout

    # The packages page lists it.
    page = httpx.get(f"{live_server.url}/catalogs/example-co/functions/packages/").text
    assert digest in page and "web-1" in page and "sub/notes.txt" in page
    assert 'class="badge ok">signed' in page


@pytest.mark.django_db(transaction=True)
def test_oras_pushed_flux_artifact_is_a_package(live_server, catalog, owner_token, tmp_path):
    import oras.oci
    import oras.provider

    from orchestrator.accumulator import BuildOptions
    from orchestrator.build import build
    from orchestrator.functions.options import FnOptions

    host = live_server.url.removeprefix("http://")
    client = oras.provider.Registry(hostname=host, insecure=True)
    client.auth.set_basic_auth("owner", owner_token)
    container = client.get_container(f"{host}/example-co/functions:flux-1")
    cfg = tmp_path / "config.json"
    cfg.write_bytes(b"{}")
    config, _ = oras.oci.ManifestConfig(str(cfg), m.FLUX_CONFIG)
    client.upload_blob(str(cfg), container, config)
    layer_path = tmp_path / "layer.tar.gz"
    layer_path.write_bytes(targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM}))
    layer = oras.oci.NewLayer(str(layer_path), m.FLUX_CONTENT)
    client.upload_blob(str(layer_path), container, layer)
    manifest = oras.oci.NewManifest()
    manifest["config"] = config
    manifest["layers"].append(layer)
    resp = client.upload_manifest(manifest, container)
    assert resp.status_code == 201, resp.text
    digest = resp.headers["Docker-Content-Digest"]
    assert OciPackage.objects.get(manifest__digest=digest).files == [
        ["cm.yaml", len(CM)],
        ["kustomization.yaml", len(KUSTOMIZATION)],
    ]
    options = BuildOptions(functions=FnOptions(cache_dir=str(tmp_path / "cache")))
    got = build(f"oci://{host}/example-co/functions@{digest}", options).to_yaml()
    assert "name: pkg-one" in got

    # A Component, pushed the same way, used under components:.
    container = client.get_container(f"{host}/example-co/functions:comp-1")
    comp_path = tmp_path / "comp.tar.gz"
    comp_path.write_bytes(
        targz(
            {
                "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\n"
                "kind: Component\ncommonAnnotations:\n  from: component\n"
            }
        )
    )
    comp_layer = oras.oci.NewLayer(str(comp_path), m.OCI_TAR_GZIP)
    client.upload_blob(str(comp_path), container, comp_layer)
    comp_manifest = oras.oci.NewManifest()
    comp_manifest["config"] = config
    comp_manifest["layers"].append(comp_layer)
    assert client.upload_manifest(comp_manifest, container).status_code == 201
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        f"resources:\n- oci://{host}/example-co/functions@{digest}\n"
        f"components:\n- oci://{host}/example-co/functions:comp-1\n"
    )
    got = build(str(overlay), options).to_yaml()
    assert "name: pkg-one" in got and "from: component" in got


def _upload(client, basic, data: bytes) -> None:
    response = client.post(
        f"{REPO}/blobs/uploads/?digest={m.sha256_digest(data)}",
        data=data,
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=basic,
    )
    assert response.status_code == 201, response.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("layer", "reason"),
    [
        (targz({"../evil.yaml": CM}), "the package layer holds an unsafe path '../evil.yaml'"),
        (targz({"/etc/x": CM}), "the package layer holds an unsafe path '/etc/x'"),
        (
            targz({"k.yaml": CM}, links={"sub/l": "../../out"}),
            "the package layer holds a link 'sub/l' that points outside it",
        ),
        (
            targz({"k.yaml": CM}, links={"l": "/etc/passwd"}),
            "the package layer holds a link 'l' that points outside it",
        ),
        (b"plain bytes", "the package layer is not a gzipped tar archive: "),
    ],
    ids=["dotdot", "absolute", "link-up", "link-absolute", "not-tar"],
)
def test_hostile_packages_are_refused_with_nothing_stored(client, catalog, basic, layer, reason):
    _upload(client, basic, layer)
    response = client.put(
        f"{REPO}/manifests/bad-1",
        data=flux_manifest(layer),
        content_type=m.OCI_MANIFEST,
        HTTP_AUTHORIZATION=basic,
    )
    assert response.status_code == 400, response.content
    error = response.json()["errors"][0]
    assert error["code"] == "MANIFEST_INVALID"
    assert error["message"].startswith(reason), error["message"]
    assert not OciManifest.objects.exists() and not OciPackage.objects.exists()
    assert not OciTag.objects.filter(name="bad-1").exists()


@pytest.mark.django_db
def test_oversized_packages_and_reserved_tags_are_refused(client, catalog, basic, settings):
    settings.OCI_PACKAGE_MAX_UNPACKED_BYTES = 100
    layer = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM + "#" * 200})
    _upload(client, basic, layer)
    response = client.put(
        f"{REPO}/manifests/big-1",
        data=flux_manifest(layer),
        content_type=m.OCI_MANIFEST,
        HTTP_AUTHORIZATION=basic,
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == (
        "the package layer unpacks to over 100 bytes (OCI_PACKAGE_MAX_UNPACKED_BYTES)"
    )
    settings.OCI_PACKAGE_MAX_UNPACKED_BYTES = 1 << 20
    for tag in ("latest", "v1"):
        response = client.put(
            f"{REPO}/manifests/{tag}",
            data=flux_manifest(layer),
            content_type=m.OCI_MANIFEST,
            HTTP_AUTHORIZATION=basic,
        )
        assert response.status_code == 403, response.content
        assert response.json()["errors"][0]["message"] == (
            f"tag {tag!r} is reserved: 'latest' and 'v<n>' name catalog versions"
        )
    assert not OciManifest.objects.exists() and not OciPackage.objects.exists()
    # The same package under an ordinary tag is stored, and the page lists it.
    ok = client.put(
        f"{REPO}/manifests/big-1",
        data=flux_manifest(layer),
        content_type=m.OCI_MANIFEST,
        HTTP_AUTHORIZATION=basic,
    )
    assert ok.status_code == 201, ok.content
    digest = "sha256:" + hashlib.sha256(flux_manifest(layer)).hexdigest()
    assert ok["Docker-Content-Digest"] == digest
    page = client.get("/catalogs/example-co/functions/packages/")
    assert page.status_code == 200
    assert digest in page.content.decode() and "big-1" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_packages_of_a_pinned_registry_must_carry_its_signature(
    live_server, catalog, owner, owner_token, signing, settings, tmp_path
):
    """Once the registry's TUF root is pinned here, krm verifies each package's cosign
    signature with the online key that root names, with no --base-key (as for catalogs)."""
    from catalogs.publishing.services import catalog_version_publish
    from tests.catalogs.factories import catalog_yaml

    catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", "v1")), actor=owner
    )
    host = live_server.url.removeprefix("http://")
    docker = tmp_path / "docker"
    docker.mkdir()
    auth = base64.b64encode(f"owner:{owner_token}".encode()).decode()
    (docker / "config.json").write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    env = {"DOCKER_CONFIG": str(docker), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    trees = {}
    for name in ("signed", "unsigned"):
        tree = tmp_path / name
        tree.mkdir()
        (tree / "kustomization.yaml").write_text(KUSTOMIZATION.replace("pkg-", f"{name}-"))
        (tree / "cm.yaml").write_text(CM)
        trees[name] = tree
    signed = krm("push", str(trees["signed"]), f"oci://{host}/example-co/functions:s-1", env=env)
    assert signed.returncode == 0, signed.stderr
    settings.SIGNING_OCI_ARTIFACTS = False
    unsigned = krm(
        "push", str(trees["unsigned"]), f"oci://{host}/example-co/functions:u-1", env=env
    )
    assert unsigned.returncode == 0, unsigned.stderr
    refs = {
        "signed": f"oci://{host}/example-co/functions@{signed.stdout.strip()}",
        "unsigned": f"oci://{host}/example-co/functions@{unsigned.stdout.strip()}",
    }
    # Not pinned: digests only, both build.
    for ref in refs.values():
        assert krm("build", ref, env=env).returncode == 0
    pinned = krm("trust", "add", live_server.url, env=env)
    assert pinned.returncode == 0, pinned.stderr
    got = krm("build", refs["signed"], env=env)
    assert got.returncode == 0, got.stderr
    assert "name: signed-one" in got.stdout
    refused = krm("build", refs["unsigned"], env=env)
    digest = unsigned.stdout.strip()
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (
        f"Error: remote '{refs['unsigned']}': has no signature (oci://{host}/example-co/"
        f"functions:{digest.replace(':', '-')}.sig not found); registry {live_server.url} is "
        "pinned in the trust store and its TUF root names the key that signs its packages, so "
        "it is not used\n"
    )
