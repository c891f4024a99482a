"""``oci://`` bases, components and build targets, and ``krm push``, against a real registry.

The registry is Debian's ``docker-registry`` on a free loopback port. Artifacts come from
``krm push`` and, independently of the engine, from the ``oras`` Python package with a tarball
written here by ``tarfile`` in the layout ``flux push artifact`` produces (one
``application/vnd.cncf.flux.content.v1.tar+gzip`` layer, files at the tar's root): the ``flux``
and ``oras`` command-line tools are not installed on this machine. The differential: an
``oci://`` base builds exactly as the same tree given as a local base. Hostile artifacts are
built by hand (a path leaving the tree, a link out, too many bytes, a tampered layer in the
registry's storage) and must be refused with an error naming the reference.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.accumulator import BuildOptions
from orchestrator.build import build
from orchestrator.errors import KrmError
from orchestrator.functions.options import FnOptions
from orchestrator.ocibase import FLUX_CONFIG, FLUX_CONTENT, OCI_TAR_GZIP
from orchestrator.ocipush import tree_pack
from tests.orchestrator.functions.conftest import REGISTRY, start_registry, stop_registry
from tests.orchestrator.functions.images import registry_blob_path

pytestmark = pytest.mark.skipif(REGISTRY is None, reason="docker-registry is not installed")

KUSTOMIZATION = "resources:\n- cm.yaml\nnamePrefix: base-\ncommonLabels:\n  tier: web\n"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  a: '1'\n"
COMPONENT = (
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
    "commonAnnotations:\n  from: component\n"
)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(host:port, storage root) of a docker-registry shared by this module's tests."""
    root = tmp_path_factory.mktemp("oci-registry")
    proc, host = start_registry(root)
    try:
        yield host, root / "storage"
    finally:
        stop_registry(proc)


def targz(files: dict[str, str | bytes], *, links: dict[str, str] | None = None) -> bytes:
    """A gzipped tar written by tarfile (not by the engine): files, then symbolic links."""
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buf.getvalue()


def oras_push(
    host: str, ref: str, layer: bytes, scratch: Path, *, media_type: str = FLUX_CONTENT
) -> str:
    """Push ``layer`` as a one-layer artifact with the oras package; the manifest digest."""
    import oras.oci
    import oras.provider

    client = oras.provider.Registry(hostname=host, insecure=True)
    container = client.get_container(f"{host}/{ref}")
    scratch.mkdir(parents=True, exist_ok=True)
    cfg = scratch / "config.json"
    cfg.write_bytes(b"{}")
    config_type = FLUX_CONFIG if media_type == FLUX_CONTENT else "application/vnd.oci.empty.v1+json"
    config, _ = oras.oci.ManifestConfig(str(cfg), config_type)
    client.upload_blob(str(cfg), container, config)
    layer_path = scratch / "layer.tar.gz"
    layer_path.write_bytes(layer)
    desc = oras.oci.NewLayer(str(layer_path), media_type)
    client.upload_blob(str(layer_path), container, desc)
    manifest = oras.oci.NewManifest()
    manifest["config"] = config
    manifest["layers"].append(desc)
    resp = client.upload_manifest(manifest, container)
    assert resp.status_code == 201, resp.text
    return str(resp.headers["Docker-Content-Digest"])


def krm(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        timeout=300,
    )


def build_yaml(path: str | Path, tmp_path: Path, **fn: object) -> str:
    fn.setdefault("cache_dir", str(tmp_path / "cache"))
    options = BuildOptions(functions=FnOptions(**fn))  # type: ignore[arg-type]
    return build(str(path), options).to_yaml()


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    return root


# ---------------------------------------------------------------- push, then build as a base


def test_push_then_build_equals_the_local_base(registry, tmp_path):
    host, _ = registry
    base = write_tree(tmp_path / "base", {"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM})
    cache = tmp_path / "xdg"
    pushed = krm("push", str(base), f"oci://{host}/apps/web:v1", cache=cache)
    assert pushed.returncode == 0, pushed.stderr
    digest = pushed.stdout.strip()
    assert digest.startswith("sha256:") and len(digest) == 71
    assert pushed.stderr == f"pushed oci://{host}/apps/web:v1@{digest}\n"

    overlay = "namespace: prod\nnameSuffix: -x\nresources:\n- {}\n"
    write_tree(tmp_path / "local", {"kustomization.yaml": overlay.format("../base")})
    expected = krm("build", str(tmp_path / "local"), cache=cache)
    assert expected.returncode == 0, expected.stderr
    assert "name: base-one-x" in expected.stdout
    for ref in (f"oci://{host}/apps/web:v1", f"oci://{host}/apps/web@{digest}"):
        write_tree(tmp_path / "remote", {"kustomization.yaml": overlay.format(ref)})
        got = krm("build", str(tmp_path / "remote"), cache=cache)
        assert got.returncode == 0, got.stderr
        assert got.stdout == expected.stdout
    # As the build target, too.
    target = krm("build", f"oci://{host}/apps/web@{digest}", cache=cache)
    assert target.returncode == 0, target.stderr
    assert target.stdout == krm("build", str(base), cache=cache).stdout

    # The same tree pushes to the same digest (the artifact is reproducible).
    again = krm("push", str(base), f"oci://{host}/apps/web:v1-again", cache=cache)
    assert again.stdout.strip() == digest
    manifest = json.loads(
        subprocess.run(
            ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{host}/apps/web:v1"],
            capture_output=True,
            check=True,
        ).stdout
    )
    assert manifest["config"]["mediaType"] == FLUX_CONFIG
    assert [layer["mediaType"] for layer in manifest["layers"]] == [FLUX_CONTENT]


def test_flux_and_oras_artifacts_as_base_and_component(registry, tmp_path):
    host, _ = registry
    layer = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM})
    flux = oras_push(host, "flux/web:v1", layer, tmp_path / "a")
    component = targz({"kustomization.yaml": COMPONENT})
    plain = oras_push(host, "oras/comp:v1", component, tmp_path / "b", media_type=OCI_TAR_GZIP)
    overlay = write_tree(
        tmp_path / "overlay",
        {
            "kustomization.yaml": (
                f"resources:\n- oci://{host}/flux/web@{flux}\n"
                f"components:\n- oci://{host}/oras/comp:v1\n"
            )
        },
    )
    local = write_tree(
        tmp_path / "local",
        {
            "kustomization.yaml": "resources:\n- base\ncomponents:\n- comp\n",
            "base/kustomization.yaml": KUSTOMIZATION,
            "base/cm.yaml": CM,
            "comp/kustomization.yaml": COMPONENT,
        },
    )
    got = build_yaml(overlay, tmp_path)
    assert got == build_yaml(local, tmp_path)
    assert "from: component" in got and "name: base-one" in got
    assert plain.startswith("sha256:")


def test_subdirectory_and_origin_annotations(registry, tmp_path):
    host, _ = registry
    layer = targz({"app/kustomization.yaml": KUSTOMIZATION, "app/cm.yaml": CM})
    digest = oras_push(host, "flux/nested:v2", layer, tmp_path / "a")
    overlay = write_tree(
        tmp_path / "o",
        {
            "kustomization.yaml": (
                f"resources:\n- oci://{host}/flux/nested:v2//app\n"
                "buildMetadata: [originAnnotations]\n"
            )
        },
    )
    got = build_yaml(overlay, tmp_path)
    assert (
        "config.kubernetes.io/origin: |\n      path: app/cm.yaml\n"
        f"      repo: oci://{host}/flux/nested\n      ref: v2\n"
    ) in got
    missing = write_tree(
        tmp_path / "m",
        {"kustomization.yaml": f"resources:\n- oci://{host}/flux/nested@{digest}//nope\n"},
    )
    with pytest.raises(KrmError) as exc:
        build_yaml(missing, tmp_path)
    assert f"remote 'oci://{host}/flux/nested@{digest}//nope': 'nope' does not exist" in str(
        exc.value
    )


# ---------------------------------------------------------------- the cache and --offline


def test_digest_is_pulled_once_and_tags_resolve_offline(tmp_path):
    """Its own registry, stopped half-way: what the cache holds builds with no registry."""
    (tmp_path / "reg").mkdir()
    proc, host = start_registry(tmp_path / "reg")
    try:
        layer = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM})
        digest = oras_push(host, "c/web:v1", layer, tmp_path / "a")
        by_digest = f"oci://{host}/c/web@{digest}"
        by_tag = f"oci://{host}/c/web:v1"
        first = build_yaml(by_digest, tmp_path)
        assert build_yaml(by_tag, tmp_path) == first
    finally:
        stop_registry(proc)
    # No registry now: a digest comes from the cache, a tag only with --offline.
    assert build_yaml(by_digest, tmp_path) == first
    assert build_yaml(by_tag, tmp_path, offline=True) == first
    with pytest.raises(KrmError) as exc:
        build_yaml(by_tag, tmp_path)
    assert str(exc.value).startswith(f"remote '{by_tag}': pulling manifest {host}/c/web:v1: ")
    with pytest.raises(KrmError) as exc:
        build_yaml(f"oci://{host}/c/web:v2", tmp_path, offline=True)
    assert str(exc.value) == (
        f"remote 'oci://{host}/c/web:v2': tag 'v2' is not in the cache "
        f"({tmp_path / 'cache' / 'oci'}) and --offline forbids resolving it"
    )


# ---------------------------------------------------------------- refused


def test_unknown_tag_and_wrong_layer_type_name_the_reference(registry, tmp_path):
    host, _ = registry
    ref = f"oci://{host}/apps/none:v9"
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path)
    assert str(exc.value).startswith(f"remote '{ref}': pulling manifest {host}/apps/none:v9: ")
    assert "HTTP 404" in str(exc.value)

    oras_push(host, "other/kind:v1", b"not a tree", tmp_path / "a", media_type="text/plain")
    ref = f"oci://{host}/other/kind:v1"
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path)
    assert str(exc.value) == (
        f"remote '{ref}': a kustomization artifact has exactly one layer of media type "
        f"{FLUX_CONTENT} or {OCI_TAR_GZIP} (found ['text/plain'])"
    )
    assert not (tmp_path / "cache" / "oci" / "trees").exists() or not [
        p for p in (tmp_path / "cache" / "oci" / "trees").iterdir() if not p.name.startswith(".")
    ]


@pytest.mark.parametrize(
    ("files", "links", "reason"),
    [
        ({"kustomization.yaml": "", "../evil.yaml": CM}, None, "unsafe path '../evil.yaml'"),
        ({"kustomization.yaml": "", "/etc/evil": CM}, None, "unsafe path '/etc/evil'"),
        ({"kustomization.yaml": ""}, {"cm.yaml": "/etc/passwd"}, "link 'cm.yaml'"),
        ({"kustomization.yaml": ""}, {"sub/cm.yaml": "../../x"}, "link 'sub/cm.yaml'"),
    ],
    ids=["dotdot", "absolute", "link-absolute", "link-up"],
)
def test_hostile_trees_are_refused(registry, tmp_path, files, links, reason):
    host, _ = registry
    name = f"hostile/t{abs(hash(reason)) % 10**6}:v1"
    digest = oras_push(host, name, targz(files, links=links), tmp_path / "a")
    ref = f"oci://{host}/{name.split(':')[0]}@{digest}"
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path)
    text = str(exc.value)
    assert text.startswith(f"remote '{ref}': ") and reason in text, text
    trees = tmp_path / "cache" / "oci" / "trees"
    assert [p.name for p in trees.iterdir()] == []  # nothing half-unpacked is kept


def test_oversized_trees_are_refused(registry, tmp_path):
    host, _ = registry
    layer = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM + "#" * 4000})
    digest = oras_push(host, "big/t:v1", layer, tmp_path / "a")
    ref = f"oci://{host}/big/t@{digest}"
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path, max_unpacked=1000)
    assert str(exc.value).startswith(f"remote '{ref}': archive {ref} (layer ")
    assert "unpacks to over the limit of 1000 bytes" in str(exc.value)
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path, max_download=100)
    assert str(exc.value) == (
        f"remote '{ref}': the layer is {len(layer)} bytes, over the limit of 100 bytes"
    )


def test_tampered_layer_is_refused(tmp_path):
    (tmp_path / "reg").mkdir()
    proc, host = start_registry(tmp_path / "reg")
    try:
        layer = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM})
        digest = oras_push(host, "t/web:v1", layer, tmp_path / "a")
        layer_digest = "sha256:" + __import__("hashlib").sha256(layer).hexdigest()
        stored = registry_blob_path(tmp_path / "reg" / "storage", layer_digest)
        tampered = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM + "  b: '2'\n"})
        stored.write_bytes(tampered[: len(layer)].ljust(len(layer), b"\0"))
        ref = f"oci://{host}/t/web@{digest}"
        with pytest.raises(KrmError) as exc:
            build_yaml(ref, tmp_path)
    finally:
        stop_registry(proc)
    assert str(exc.value).startswith(
        f"remote '{ref}': blob {layer_digest} of {host}/t/web: the registry sent bytes with "
        "digest sha256:"
    )
    assert str(exc.value).endswith("; refusing them")
    assert [p.name for p in (tmp_path / "cache" / "oci" / "trees").iterdir()] == []


def test_the_load_restrictor_applies_inside_the_tree(registry, tmp_path):
    host, _ = registry
    # The tree is unpacked at <tmp>/cache/oci/trees/<hex>: four levels up is <tmp>.
    (tmp_path / "secret.yaml").write_text(CM)
    layer = targz({"kustomization.yaml": "resources:\n- ../../../../secret.yaml\n"})
    digest = oras_push(host, "esc/file:v1", layer, tmp_path / "a")
    with pytest.raises(KrmError) as exc:
        build_yaml(f"oci://{host}/esc/file@{digest}", tmp_path)
    assert f"security; file '{tmp_path / 'secret.yaml'}' is not in or below" in str(exc.value)
    outside = write_tree(tmp_path / "outside", {"kustomization.yaml": "resources: []\n"})
    layer = targz({"kustomization.yaml": f"resources:\n- {outside}\n"})
    digest = oras_push(host, "esc/base:v1", layer, tmp_path / "b")
    with pytest.raises(KrmError) as exc:
        build_yaml(f"oci://{host}/esc/base@{digest}", tmp_path)
    assert "bases in kustomizations found in cloned git repos must be within the repo" in str(
        exc.value
    )


def test_bad_references(tmp_path):
    for ref, reason in [
        ("oci://host-only", "expected oci://HOST/REPOSITORY[:TAG|@sha256:DIGEST]"),
        ("oci://h.io/r:v1//../x", "the directory '../x' leaves the artifact's tree"),
        ("oci://h.io/r@sha256:abc", "the digest is not 64 lower-case hex digits"),
        ("oci://h.io/UPPER:v1", "invalid repository name 'UPPER'"),
        ("oci:///repo:v1", "expected oci://HOST/REPOSITORY"),
    ]:
        with pytest.raises(KrmError) as exc:
            build_yaml(ref, tmp_path)
        assert str(exc.value).startswith(f"remote '{ref}': ") and reason in str(exc.value)


# ---------------------------------------------------------------- krm push refusals


def test_push_refuses_links_and_trees_without_a_kustomization(registry, tmp_path):
    host, _ = registry
    tree = write_tree(tmp_path / "t", {"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM})
    (tree / "link.yaml").symlink_to("/etc/hostname")
    got = krm("push", str(tree), f"oci://{host}/p/t:v1", cache=tmp_path / "xdg")
    assert got.returncode == 1 and got.stdout == ""
    assert got.stderr == (
        f"Error: cannot push '{tree}': 'link.yaml' is a symbolic link; an artifact holds only "
        "regular files and directories\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    got = krm("push", str(empty), f"oci://{host}/p/t:v1", cache=tmp_path / "xdg")
    assert got.returncode == 1 and "unable to find one of 'kustomization.yaml'" in got.stderr
    got = krm("push", str(tree), f"oci://{host}/p/t@sha256:{'0' * 64}", cache=tmp_path / "xdg")
    assert got.stderr.endswith("push to a tag (the digest is computed)\n")
    tags = subprocess.run(
        ["skopeo", "list-tags", "--tls-verify=false", f"docker://{host}/p/t"],
        capture_output=True,
        text=True,
    )
    assert tags.returncode != 0  # nothing was pushed


def test_tree_pack_is_reproducible(tmp_path):
    tree = write_tree(tmp_path / "t", {"kustomization.yaml": KUSTOMIZATION, "sub/cm.yaml": CM})
    first = tree_pack(str(tree))
    os.utime(tree / "sub" / "cm.yaml", (1, 1))
    assert tree_pack(str(tree)) == first
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        assert tar.getnames() == ["kustomization.yaml", "sub", "sub/cm.yaml"]


# ---------------------------------------------------------------- --base-key: cosign signatures


def test_base_key_requires_a_cosign_signature_of_the_manifest(registry, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from tests.orchestrator.functions.test_oci_catalog import _cosign_sign

    host, _ = registry
    key = ec.generate_private_key(ec.SECP256R1())
    pub = tmp_path / "base.pub"
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    other = tmp_path / "other.pub"
    other.write_bytes(
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    layer = targz({"kustomization.yaml": KUSTOMIZATION, "cm.yaml": CM})
    digest = oras_push(host, "signed/web:v1", layer, tmp_path / "a")
    ref = f"oci://{host}/signed/web:v1"
    where = f"oci://{host}/signed/web:{digest.replace(':', '-')}.sig"
    unsigned = build_yaml(ref, tmp_path)  # no --base-key: digests only
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path, base_keys=[str(pub)])
    assert str(exc.value) == (
        f"remote '{ref}': has no signature ({where} not found); a --base-key applies to it, "
        "so it is not used"
    )
    # A signature made for another repository (the same bytes pushed there) does not count.
    _cosign_sign(host, "signed/web", digest, key, tmp_path, identity=f"{host}/other/web")
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path, base_keys=[str(pub)])
    assert f"the signature is for {host}/other/web, not {host}/signed/web" in str(exc.value)
    _cosign_sign(host, "signed/web", digest, key, tmp_path)
    assert build_yaml(ref, tmp_path, base_keys=[str(pub)]) == unsigned
    assert build_yaml(ref, tmp_path, base_keys=[str(pub)], offline=True) == unsigned
    with pytest.raises(KrmError) as exc:
        build_yaml(ref, tmp_path, base_keys=[str(other)])
    assert str(exc.value).startswith(
        f"remote '{ref}': has a bad signature: none of its 1 signature(s) verifies with "
    )


def test_the_first_component_is_always_the_host():
    from orchestrator.ocibase import parse_oci

    spec = parse_oci("oci://myregistry/team/app:v1//overlays/prod")
    ref = spec.ref
    assert (ref.registry, ref.repository, ref.tag) == ("myregistry", "team/app", "v1")
    assert spec.subdir == "overlays/prod"
    assert spec.repository == "oci://myregistry/team/app"
    bare = parse_oci("oci://localhost:5000/app")
    assert (bare.ref.registry, bare.ref.repository, bare.reference) == (
        "localhost:5000",
        "app",
        "latest",
    )
