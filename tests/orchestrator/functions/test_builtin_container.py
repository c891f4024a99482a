"""The builtin container runtime against real peers: images built with umoci from busybox-static,
pushed with skopeo to a live docker-registry, run by ``krm build`` with no docker or podman on
PATH, inside bubblewrap."""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.functions import CatalogSet, FunctionError, TrustConfig, run_function_config
from orchestrator.functions.fetch import FetchError
from orchestrator.functions.image import image_prepare
from orchestrator.functions.jail import JailLimits, Mount, jail_check, jail_run
from orchestrator.functions.options import FnOptions
from orchestrator.resource import Resource
from tests.orchestrator.functions import images
from tests.orchestrator.functions.conftest import REGISTRY, start_registry, stop_registry

REPO = Path(__file__).resolve().parents[3]
BWRAP = shutil.which("bwrap")

pytestmark = pytest.mark.skipif(
    None in (REGISTRY, images.UMOCI, images.SKOPEO, images.BUSYBOX, BWRAP),
    reason="needs docker-registry, umoci, skopeo, busybox-static and bubblewrap",
)


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """The good images, built once and pushed to one registry for the module."""
    root = tmp_path_factory.mktemp("registry")
    proc, host = start_registry(root)
    try:
        yield host, root / "storage", images.build_images(tmp_path_factory.mktemp("build"), host)
    finally:
        stop_registry(proc)


@pytest.fixture
def bare_path(tmp_path):
    """A PATH with bubblewrap and nothing else: no docker, no podman."""
    bindir = tmp_path / "bare-bin"
    bindir.mkdir()
    assert BWRAP is not None
    (bindir / "bwrap").symlink_to(BWRAP)
    return str(bindir)


def _catalog(
    tmp_path: Path,
    image: str,
    sha256: str | None,
    *,
    kind: str = "Probe",
    network: bool = False,
    mount: bool = False,
) -> Path:
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        "  name: images",
        "spec:",
        "  krmFunctions:",
        "  - group: example.com",
        "    names:",
        f"      kind: {kind}",
        "    versions:",
        "    - name: v1",
        "      runtime:",
        "        container:",
        f"          image: {image}",
    ]
    if sha256:
        lines.append(f'          sha256: "{sha256.removeprefix("sha256:")}"')
    if network:
        lines.append("          requireNetwork: true")
    if mount:
        lines.append("          requireStorageMount: true")
    path = tmp_path / "catalog.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _app(tmp_path: Path, kind: str = "Probe") -> Path:
    app = tmp_path / "app"
    app.mkdir(exist_ok=True)
    (app / "kustomization.yaml").write_text("resources:\n- cm.yaml\ntransformers:\n- fn.yaml\n")
    (app / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  key: value\n"
    )
    (app / "fn.yaml").write_text(
        f"apiVersion: example.com/v1\nkind: {kind}\nmetadata:\n  name: f\n"
    )
    return app


def _krm(
    tmp_path: Path, path: str, *args: str, bare_path: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": bare_path,
        "PYTHONPATH": str(REPO),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "HOME": str(tmp_path / "home"),
        "DOCKER_CONFIG": str(tmp_path / "docker-config"),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", path, *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def _probe(stdout: str) -> dict[str, str]:
    docs = [d for d in yaml.safe_load_all(stdout) if d]
    assert [d["metadata"]["name"] for d in docs] == ["app", "probe"], docs
    assert docs[0]["data"] == {"key": "value"}
    return docs[1]["data"]


@pytest.mark.parametrize("tag", ["one", "two", "multi", "user"])
def test_krm_build_runs_each_image_with_no_docker_or_podman(tmp_path, pushed, bare_path, tag):
    _host, _storage, imgs = pushed
    image = imgs[tag]
    cat = _catalog(tmp_path, image.ref, image.digest)
    proc = _krm(tmp_path, str(_app(tmp_path)), "--trusted-catalog", str(cat), bare_path=bare_path)
    assert proc.returncode == 0, proc.stderr
    data = _probe(proc.stdout)
    # the first layer's file is gone in the two-layer image, and only there
    assert data["removed"] == ("absent" if tag == "two" else "present")
    # the index gave this machine's platform (the arm64 variant says GREETING=arm64)
    assert data["greeting"] == "hello"
    assert (data["uid"], data["gid"]) == (("1000", "1001") if tag == "user" else ("65534", "65534"))
    assert data["cwd"] == "/work"
    assert data["rootfs"] == "read-only"
    assert data["tmp"] == "writable"
    assert data["hostname"] == "krm-function"  # its own UTS namespace
    assert int(data["pid"]) < 10  # its own PID namespace
    assert data["mounted"] == "none"
    # cached by content: the rootfs of this platform's manifest
    rootfs = tmp_path / "xdg-cache" / "krm" / "images" / "rootfs"
    assert len(list(rootfs.iterdir())) == 1


def test_builtin_is_also_chosen_explicitly_and_warm_start_needs_no_registry(
    tmp_path, pushed, bare_path
):
    image = pushed[2]["one"]
    cat = _catalog(tmp_path, image.ref, image.digest)
    args = ["--trusted-catalog", str(cat), "--container-runtime", "builtin"]
    first = _krm(tmp_path, str(_app(tmp_path)), *args, bare_path=bare_path)
    assert first.returncode == 0, first.stderr
    # warm: the cache alone (--offline forbids any download)
    again = _krm(tmp_path, str(_app(tmp_path)), *args, "--offline", bare_path=bare_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout


def test_a_docker_that_cannot_run_containers_leaves_the_builtin_runtime_to_run(
    tmp_path, pushed, bare_path
):
    """docker on PATH, its daemon unreachable (as on this machine): the builtin runtime runs the
    image, and says so in one line; asked for explicitly, docker is a clear error."""
    dead = Path(bare_path) / "docker"
    dead.write_text(
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?' >&2\nexit 1\n"
    )
    dead.chmod(0o755)
    image = pushed[2]["one"]
    cat = _catalog(tmp_path, image.ref, image.digest)
    proc = _krm(tmp_path, str(_app(tmp_path)), "--trusted-catalog", str(cat), bare_path=bare_path)
    assert proc.returncode == 0, proc.stderr
    assert _probe(proc.stdout)["uid"] == "65534"
    notices = [line for line in proc.stderr.splitlines() if "docker" in line]
    assert notices == [
        "Notice: docker (Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
        "Is the docker daemon running?) cannot run containers here; using the builtin container "
        "runtime"
    ]
    explicit = _krm(
        tmp_path,
        str(_app(tmp_path)),
        "--trusted-catalog",
        str(cat),
        "--container-runtime",
        "docker",
        bare_path=bare_path,
    )
    assert explicit.returncode == 1
    assert "container runtime 'docker' cannot run containers here: Cannot connect" in (
        explicit.stderr
    )
    assert explicit.stdout == ""


def test_tag_without_digest_is_refused_and_nothing_is_pulled(tmp_path, pushed, bare_path):
    image = pushed[2]["one"]
    cat = _catalog(tmp_path, image.ref, None)
    proc = _krm(
        tmp_path,
        str(_app(tmp_path)),
        "--trusted-catalog",
        str(cat),
        bare_path=bare_path,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[0] == (
        f"Error: function example.com/v1/Probe 'f' (image {image.ref}, from catalog {cat}): "
        f"image {image.ref} has a tag but no digest: the builtin runtime runs only pinned images "
        "(image@sha256:<digest>, or the catalog's sha256); nothing was run"
    )
    assert not (tmp_path / "xdg-cache" / "krm" / "images").exists()


def test_wrong_digest_is_refused_and_nothing_runs(tmp_path, pushed, bare_path):
    host, _storage, imgs = pushed
    wrong = "sha256:" + "0" * 64
    cat = _catalog(tmp_path, imgs["one"].ref, wrong)
    proc = _krm(tmp_path, str(_app(tmp_path)), "--trusted-catalog", str(cat), bare_path=bare_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[0] == (
        f"Error: function example.com/v1/Probe 'f' (image {imgs['one'].ref}, from catalog {cat}): "
        f"pulling manifest {host}/fn/one@{wrong}: HTTP 404 (MANIFEST_UNKNOWN: manifest unknown); "
        "nothing was run"
    )
    assert proc.stdout == ""
    assert not (tmp_path / "xdg-cache" / "krm" / "images" / "rootfs").exists()


def test_image_digest_conflicting_with_catalog_sha256_is_refused(tmp_path, pushed, options):
    imgs = pushed[2]
    pinned = f"{imgs['one'].ref}@{imgs['one'].digest}"
    with pytest.raises(FetchError) as exc:
        image_prepare(pinned, imgs["two"].digest, options=options())
    assert str(exc.value) == (
        f"image {pinned} names digest {imgs['one'].digest} but its sha256 says "
        f"{imgs['two'].digest}; refusing it"
    )


def _no_rootfs(opts: FnOptions) -> bool:
    """Nothing unpacked is left in the cache (not even a partial rootfs)."""
    rootfs = Path(opts.cache_root()) / "images" / "rootfs"
    return not rootfs.exists() or not any(rootfs.iterdir())


def _copy_registry(tmp_path: Path, storage: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """A second registry over a copy of the first one's storage (to damage it safely)."""
    root = tmp_path / "damaged"
    root.mkdir()
    shutil.copytree(storage, root / "storage", symlinks=True)
    proc, host = start_registry(root)
    return proc, host, root / "storage"


def test_a_registry_sending_other_bytes_is_refused(tmp_path, pushed, options):
    host, storage, imgs = pushed
    proc, other, copy = _copy_registry(tmp_path, storage)
    try:
        image = imgs["one"]
        manifest = json.loads(images.registry_blob_path(copy, image.digest).read_bytes())
        layer = manifest["layers"][0]["digest"]
        blob = images.registry_blob_path(copy, layer)
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0xFF  # same size, other bytes
        blob.write_bytes(bytes(data))
        ref = image.ref.replace(host, other)
        opts = options()
        with pytest.raises(FetchError) as exc:
            image_prepare(ref, image.digest, options=opts)
        assert str(exc.value).startswith(
            f"blob {layer} of {other}/fn/one: the registry sent bytes with digest sha256:"
        )
        assert str(exc.value).endswith("; refusing them")
        cache = Path(opts.cache_root()) / "images"
        assert _no_rootfs(opts)
        assert not (cache / "blobs" / "sha256" / layer.removeprefix("sha256:")).exists()
    finally:
        stop_registry(proc)


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def listener():
    _Counter.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/probe", _Counter.hits
    server.shutdown()
    server.server_close()


def test_no_network_without_the_flag_even_to_loopback(tmp_path, pushed, bare_path, listener):
    url, hits = listener
    image = pushed[2]["one"]
    cat = _catalog(tmp_path, image.ref, image.digest)
    app = str(_app(tmp_path))
    proc = _krm(
        tmp_path,
        app,
        "--trusted-catalog",
        str(cat),
        "--env",
        f"PROBE_URL={url}",
        "--network",
        bare_path=bare_path,
    )
    assert proc.returncode == 1
    assert "failed with exit code 1:\nwget: can't connect to remote host (127.0.0.1): " in (
        proc.stderr
    ), proc.stderr
    assert hits == []  # it never reached the host: its loopback is its own
    # a function that requires the network, with --network: it reaches the host
    cat = _catalog(tmp_path, image.ref, image.digest, network=True)
    proc = _krm(
        tmp_path,
        app,
        "--trusted-catalog",
        str(cat),
        "--env",
        f"PROBE_URL={url}",
        "--network",
        bare_path=bare_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert hits == ["/probe"]
    # requireNetwork without --network: refused before anything runs
    proc = _krm(
        tmp_path,
        app,
        "--trusted-catalog",
        str(cat),
        "--env",
        f"PROBE_URL={url}",
        bare_path=bare_path,
    )
    assert proc.returncode == 1
    assert "requires network access: pass --network to allow it" in proc.stderr
    assert hits == ["/probe"]


def test_mounts_only_with_the_flag_read_only_by_default(tmp_path, pushed, bare_path):
    image = pushed[2]["one"]
    host_dir = tmp_path / "host-data"
    host_dir.mkdir()
    (host_dir / "in.txt").write_text("from-the-host")
    cat = _catalog(tmp_path, image.ref, image.digest, mount=True)
    app = str(_app(tmp_path))
    proc = _krm(tmp_path, app, "--trusted-catalog", str(cat), bare_path=bare_path)
    assert proc.returncode == 1
    assert "requires a storage mount: pass --mount to provide one" in proc.stderr
    mount = f"type=bind,src={host_dir},dst=/data"
    proc = _krm(tmp_path, app, "--trusted-catalog", str(cat), "--mount", mount, bare_path=bare_path)
    assert proc.returncode == 0, proc.stderr
    assert _probe(proc.stdout)["mounted"] == "from-the-host"


def test_env_from_the_image_and_the_flag_host_env_not_passed(tmp_path, pushed, bare_path):
    image = pushed[2]["one"]
    cat = _catalog(tmp_path, image.ref, image.digest)
    proc = _krm(
        tmp_path,
        str(_app(tmp_path)),
        "--trusted-catalog",
        str(cat),
        "--env",
        "GREETING=over",
        "--env",
        "EXTRA",
        bare_path=bare_path,
        env={"EXTRA": "from-caller", "SECRET": "x"},
    )
    assert proc.returncode == 0, proc.stderr
    data = _probe(proc.stdout)
    assert (data["greeting"], data["extra"]) == ("over", "from-caller")


def _run_api(tmp_path: Path, cat: Path, opts: FnOptions, kind: str = "Probe") -> list[Resource]:
    trust = TrustConfig.load([str(cat)], config=str(tmp_path / "none"))
    cs = CatalogSet.for_kustomization(
        [], kustomization_dir=str(tmp_path), trust=trust, options=opts
    )
    cfg = {"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "f"}}
    res = [Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})]
    return run_function_config(
        cfg, res, role="transformer", kustomization_dir=str(tmp_path), catalogs=cs, options=opts
    ).resources


def test_same_output_as_the_exec_runtime_running_the_same_program(tmp_path, pushed, bare_path):
    """The differential test: one program, in the image and as an exec function on the host."""
    image = pushed[2]["annotate"]
    app = tmp_path / "app"
    app.mkdir()
    (app / "kustomization.yaml").write_text(
        "resources:\n- res.yaml\ntransformers:\n- fn.yaml\nnamePrefix: p-\n"
    )
    (app / "res.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    x: y\n"
        "data:\n  k: v\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n"
        "spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: c\n"
        "        image: nginx\n"
    )
    (app / "fn.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Annotate\nmetadata:\n  name: f\n"
    )
    program = tmp_path / "annotate"
    program.write_text(images.ANNOTATE_FN)
    program.chmod(0o755)
    import hashlib

    sha = hashlib.sha256(program.read_bytes()).hexdigest()
    exec_cat = tmp_path / "exec-catalog.yaml"
    exec_cat.write_text(
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: e\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Annotate\n"
        "    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n"
        f"          - os: linux\n            arch: amd64\n            uri: file://{program}\n"
        f"            sha256: {sha}\n            bin: annotate\n"
    )
    cat = _catalog(tmp_path, image.ref, image.digest, kind="Annotate")
    host_path = f"{bare_path}:/usr/bin:/bin"  # the exec program runs busybox from the host
    by_exec = _krm(tmp_path, str(app), "--trusted-catalog", str(exec_cat), bare_path=host_path)
    by_image = _krm(tmp_path, str(app), "--trusted-catalog", str(cat), bare_path=bare_path)
    assert by_exec.returncode == 0, by_exec.stderr
    assert by_image.returncode == 0, by_image.stderr
    assert by_image.stdout == by_exec.stdout
    docs = list(yaml.safe_load_all(by_image.stdout))
    assert [d["metadata"]["annotations"]["fn.example.com/ran"] for d in docs] == ["yes", "yes"]
    assert docs[0]["metadata"]["annotations"]["x"] == "y"


# Registry credentials ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory, pushed):
    """docker-registry with htpasswd (Basic): only user/secret may pull; holds image "one"."""
    import bcrypt

    root = tmp_path_factory.mktemp("auth-registry")
    hashed = bcrypt.hashpw(b"secret-pw", bcrypt.gensalt(rounds=4)).decode()
    (root / "htpasswd").write_text(f"user:{hashed}\n")
    auth = f"auth:\n  htpasswd:\n    realm: krm-test\n    path: {root / 'htpasswd'}\n"
    proc, host = start_registry(root, auth=auth)
    source = pushed[2]["one"]
    assert images.SKOPEO is not None
    subprocess.run(
        [
            images.SKOPEO,
            "copy",
            "--quiet",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            "--dest-creds",
            "user:secret-pw",
            f"docker://{source.ref}",
            f"docker://{host}/fn/one:v1",
        ],
        check=True,
    )
    try:
        yield host, source.digest
    finally:
        stop_registry(proc)


def test_credentials_from_docker_config(tmp_path, auth_registry, monkeypatch, options):
    host, digest = auth_registry
    config_dir = tmp_path / "docker"
    config_dir.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(config_dir))
    ref = f"{host}/fn/one:v1"
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, digest, options=options())
    assert str(exc.value) == (
        f"pulling manifest {host}/fn/one@{digest}: the registry asks for a login and "
        f"{config_dir / 'config.json'} has none for {host}"
    )
    login = base64.b64encode(b"user:secret-pw").decode()
    (config_dir / "config.json").write_text(
        json.dumps({"auths": {f"http://{host}": {"auth": login}}})
    )
    img = image_prepare(ref, digest, options=options())
    assert (Path(img.rootfs) / "bin" / "busybox").is_file()
    # a wrong password is the registry's answer, said plainly
    bad = base64.b64encode(b"user:wrong").decode()
    (config_dir / "config.json").write_text(json.dumps({"auths": {host: {"auth": bad}}}))
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, digest, options=options(cache_dir=str(tmp_path / "other-cache")))
    assert str(exc.value).startswith(f"pulling manifest {host}/fn/one@{digest}: HTTP 401")


# Hostile layers ---------------------------------------------------------------------------

R, D, S, H = tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
HOSTILE = {
    "traversal": ([images.member("../escape", data=b"x")], "unsafe path '../escape' in archive"),
    "absolute-link": (
        [images.member("etc", D), images.member("etc/evil", S, link="/etc/passwd")],
        "link 'etc/evil' in archive {where} points outside it",
    ),
    "link-up": (
        [images.member("up", S, link="../..")],
        "link 'up' in archive {where} points outside it",
    ),
    "through-link": (
        [images.member("d", S, link="."), images.member("d/x", data=b"x")],
        "'d/x' in archive {where} lies below the link 'd'",
    ),
    "hard-link-out": (
        [images.member("h", H, link="../../etc/passwd")],
        "link 'h' in archive {where} points outside it",
    ),
    "dangling-hard-link": (
        [images.member("h", H, link="etc/shadow")],
        "hard link 'h' in archive {where} does not name a file unpacked before it",
    ),
}


@pytest.fixture(scope="module")
def hostile_registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-registry")
    proc, host = start_registry(root)
    try:
        yield host, tmp_path_factory.mktemp("hostile")
    finally:
        stop_registry(proc)


def _push_layers(
    host: str, scratch: Path, name: str, layers: list[bytes], **kw: object
) -> tuple[str, str]:
    layout = images.layout_image(scratch, name, layers, entrypoint=["/bin/true"], **kw)
    ref = f"{host}/hostile/{name}:v1"
    return ref, images.push(layout, "v1", ref, scratch)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_layers_are_refused(hostile_registry, options, case):
    host, scratch = hostile_registry
    members, message = HOSTILE[case]
    ref, digest = _push_layers(host, scratch, case, [images.tar_layer(members)])
    opts = options()
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, digest, options=opts)
    where = f"{ref}@{digest} (layer "
    assert message.split("{where}")[0] in str(exc.value)
    if "{where}" in message:
        assert str(exc.value).startswith(message.split("{where}")[0] + where)
        assert str(exc.value).endswith(message.split("{where}")[1])
    assert _no_rootfs(opts)


def test_huge_file_is_refused_before_its_bytes_are_read(hostile_registry, options):
    host, scratch = hostile_registry
    info, _ = images.member("huge", size=3 * 1024**3)
    layer = images.tar_layer([(info, None)], raw_tail=b"\0" * 4096)  # the header lies: no data
    ref, digest = _push_layers(host, scratch, "huge", [layer])
    opts = options()
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, digest, options=opts)
    assert str(exc.value).endswith(
        f"'huge' is {3 * 1024**3} bytes; the image would unpack to over the limit of "
        f"{opts.max_image_bytes} bytes"
    )
    assert _no_rootfs(opts)


def test_100000_entries_are_refused(hostile_registry, options, request):
    host, scratch = hostile_registry
    layer = images.many_files_layer(100_000)
    assert len(layer) == 100_000 * 512 + 1024  # a header per entry, then the end blocks
    last = tarfile.TarInfo.frombuf(layer[-1536:-1024], "utf-8", "surrogateescape")
    assert last.name == "f0099999"
    ref, digest = _push_layers(host, scratch, "many", [layer])
    # The limit is hit after 50,000 files are made: on a tmpfs that takes a second, on this
    # machine's disk half a minute.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    cache = tempfile.mkdtemp(prefix="krm-many-", dir=shm or str(scratch))
    request.addfinalizer(lambda: shutil.rmtree(cache, ignore_errors=True))
    opts = options(cache_dir=cache)
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, digest, options=opts)
    assert str(exc.value) == (
        f"archive {ref}@{digest} (layer {_layer_digest(scratch, 'many')}) has over "
        f"{opts.max_image_files} entries"
    )
    assert _no_rootfs(opts)


def _layer_digest(scratch: Path, name: str) -> str:
    layout = scratch / f"layout-{name}"
    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads(
        (layout / "blobs/sha256" / index["manifests"][0]["digest"][7:]).read_bytes()
    )
    return str(manifest["layers"][0]["digest"])


def test_layer_not_matching_its_diff_id_is_refused(hostile_registry, options):
    host, scratch = hostile_registry
    layer = images.tar_layer([images.member("a", data=b"a")])
    ref, digest = _push_layers(host, scratch, "diffid", [layer], diff_ids=["sha256:" + "1" * 64])
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, digest, options=options())
    assert str(exc.value) == (
        f"layer {_layer_digest(scratch, 'diffid')} of image {ref}@{digest}: its content does not "
        f"match the config's diff_id sha256:{'1' * 64}; refusing it"
    )


def test_whiteouts_opaque_whiteouts_replacement_and_hard_links(hostile_registry, options):
    """Layer semantics on hand-made layers: what the spec says, not what one tool writes."""
    host, scratch = hostile_registry
    m = images.member
    lower = images.tar_layer(
        [
            m("keep", D),
            m("keep/a", data=b"a"),
            m("keep/b", data=b"b"),
            m("opq", D),
            m("opq/old", data=b"old"),
            m("opq/sub", D),
            m("opq/sub/deep", data=b"d"),
            m("gone", D),
            m("gone/x", data=b"x"),
            m("file-to-dir", data=b"f"),
            m("dir-to-link", D),
            m("dir-to-link/y", data=b"y"),
            m("dev", D),
            m("hard", data=b"shared"),
        ]
    )
    char = tarfile.TarInfo("dev/null")
    char.type = tarfile.CHRTYPE
    upper = images.tar_layer(
        [
            m("keep/.wh.a"),
            m("opq/.wh..wh..opq"),
            m("opq/new", data=b"new"),
            m(".wh.gone"),
            m("file-to-dir", D),
            m("file-to-dir/z", data=b"z"),
            m("dir-to-link", S, link="keep"),
            (char, None),
            m("hard-link", H, link="hard"),
        ]
    )
    ref, digest = _push_layers(host, scratch, "semantics", [lower, upper])
    img = image_prepare(ref, digest, options=options())
    root = Path(img.rootfs)
    tree = sorted(
        str(p.relative_to(root)) + ("/" if p.is_dir() and not p.is_symlink() else "")
        for p in root.rglob("*")
    )
    assert tree == [
        "dev/",
        "dir-to-link",
        "file-to-dir/",
        "file-to-dir/z",
        "hard",
        "hard-link",
        "keep/",
        "keep/b",
        "opq/",
        "opq/new",
    ]
    assert os.readlink(root / "dir-to-link") == "keep"
    assert (root / "hard-link").read_bytes() == b"shared"
    assert os.stat(root / "hard").st_ino == os.stat(root / "hard-link").st_ino


# The jail's public API --------------------------------------------------------------------


def test_jail_run_limits_and_host_root_mode(tmp_path):
    assert jail_check() is None
    out = jail_run(["sh", "-c", "cat; id -u; ls /home 2>&1 || true"], b"in\n")
    assert out.exit_code == 0
    assert out.stdout.decode().splitlines()[:2] == ["in", "65534"]
    # a wall-clock limit kills the run and everything it forked
    slow = jail_run(["sh", "-c", "sleep 30 & sleep 30"], b"", limits=JailLimits(wall_seconds=1))
    assert slow.timed_out and slow.seconds < 10
    # an output limit too
    loud = jail_run(["sh", "-c", "yes"], b"", limits=JailLimits(max_output=1024 * 1024))
    assert loud.output_limited and len(loud.stdout) <= 1024 * 1024
    # CPU time: SIGXCPU at the limit (bwrap, as PID 1, exits with 128 + the signal)
    busy = jail_run(["sh", "-c", "while :; do :; done"], b"", limits=JailLimits(cpu_seconds=1))
    assert busy.exit_code == 128 + signal.SIGXCPU and not busy.timed_out
    # data size: an allocation over the limit fails inside
    big = jail_run(
        ["python3", "-c", "bytearray(600 << 20)"], b"", limits=JailLimits(memory_bytes=256 << 20)
    )
    assert big.exit_code == 1 and big.stderr.endswith(b"MemoryError\n")
    # a mount is the only host path it sees; read-only unless writable (and then writable as
    # nobody would find it, as with docker's --user 65534: this one is open to all)
    (tmp_path / "m").mkdir()
    (tmp_path / "m").chmod(0o777)
    ro = jail_run(["sh", "-c", "echo x > /m/f"], b"", mounts=[Mount(str(tmp_path / "m"), "/m")])
    assert ro.exit_code != 0 and b"Read-only file system" in ro.stderr
    rw = jail_run(
        ["sh", "-c", "echo x > /m/f"], b"", mounts=[Mount(str(tmp_path / "m"), "/m", True)]
    )
    assert rw.exit_code == 0 and (tmp_path / "m" / "f").read_text() == "x\n"


def test_mount_syntax():
    assert Mount.parse("type=bind,src=/a,dst=/b") == Mount("/a", "/b", False)
    assert Mount.parse("type=bind,source=/a,target=/b,rw=true") == Mount("/a", "/b", True)
    assert Mount.parse("src=/a,dst=/b,readonly") == Mount("/a", "/b", False)
    with pytest.raises(FunctionError) as exc:
        Mount.parse("type=volume,src=v,dst=/b")
    assert str(exc.value) == (
        "--mount 'type=volume,src=v,dst=/b': only type=bind mounts can be made here"
    )
    with pytest.raises(FunctionError) as exc:
        Mount.parse("type=bind,src=/a,dst=/proc/x")
    assert str(exc.value) == (
        "--mount 'type=bind,src=/a,dst=/proc/x': dst may not be /, /proc, /dev or /tmp"
    )
    with pytest.raises(FunctionError) as exc:
        Mount.parse("type=bind,src=/a,dst=../b")
    assert str(exc.value) == (
        "--mount 'type=bind,src=/a,dst=../b': dst must be an absolute path without '..'"
    )


def test_no_namespaces_is_one_line_and_nothing_runs(tmp_path, pushed, bare_path):
    """Inside a jail that forbids user namespaces, krm's bwrap cannot make its own: refused."""
    image = pushed[2]["one"]
    cat = _catalog(tmp_path, image.ref, image.digest)
    app = _app(tmp_path)
    warm = _krm(tmp_path, str(app), "--trusted-catalog", str(cat), bare_path=bare_path)
    assert warm.returncode == 0, warm.stderr
    assert BWRAP is not None
    outer = [
        BWRAP,
        "--unshare-user",
        "--disable-userns",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--bind",
        str(tmp_path),
        str(tmp_path),
        "--",
        sys.executable,
        "-m",
        "orchestrator",
        "build",
        str(app),
        "--trusted-catalog",
        str(cat),
        "--offline",
    ]
    env = {
        "PATH": bare_path,
        "PYTHONPATH": str(REPO),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "HOME": str(tmp_path / "home"),
    }
    proc = subprocess.run(outer, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(
        f"Error: function example.com/v1/Probe 'f' (image {image.ref}, from catalog {cat}): "
        "cannot build the jail: bwrap cannot make namespaces here (bwrap: "
    ), proc.stderr
    assert lines[0].endswith("; refusing to run unsandboxed")
    assert proc.stdout == ""


# Bearer tokens: docker-registry's token auth, with a token service that signs JWTs ------------


class _TokenService(http.server.BaseHTTPRequestHandler):
    """Issues ES256 JWTs that docker-registry accepts (the x5c header names the certificate of
    its rootcertbundle); with a login required, only user/secret-pw gets one."""

    key: Any = None
    cert_der: bytes = b""
    require_login: bool = False
    requests: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802
        from urllib.parse import parse_qs, urlsplit

        cls = type(self)
        auth = self.headers.get("Authorization", "")
        cls.requests.append((self.path, auth))
        query = parse_qs(urlsplit(self.path).query)
        login = "Basic " + base64.b64encode(b"user:secret-pw").decode()
        if cls.require_login and auth != login:
            self.send_response(401)
            self.end_headers()
            return
        scope = query.get("scope", [""])[0]
        _kind, name, actions = scope.split(":")
        token = _jwt(cls.key, cls.cert_der, query["service"][0], name, actions.split(","))
        body = json.dumps({"token": token}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(key: Any, cert_der: bytes, service: str, name: str, actions: list[str]) -> str:
    import time as _time

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    now = int(_time.time())
    header = {"typ": "JWT", "alg": "ES256", "x5c": [base64.b64encode(cert_der).decode()]}
    claims = {
        "iss": "krm-test-issuer",
        "sub": "user",
        "aud": service,
        "exp": now + 300,
        "nbf": now - 10,
        "iat": now,
        "jti": f"t{now}",
        "access": [{"type": "repository", "name": name, "actions": actions}],
    }
    signing = (
        _b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())
    ).encode()
    r, s = decode_dss_signature(key.sign(signing, ec.ECDSA(hashes.SHA256())))
    return signing.decode() + "." + _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


@pytest.fixture
def token_registry(tmp_path, pushed):
    """docker-registry with token auth over a copy of the images' storage, and its token
    service (anonymous pulls allowed until ``require_login`` is set)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "krm-test-token")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    root = tmp_path / "token-registry"
    root.mkdir()
    (root / "root.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _TokenService.key = key
    _TokenService.cert_der = cert.public_bytes(serialization.Encoding.DER)
    _TokenService.require_login = False
    _TokenService.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenService)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    realm = f"http://127.0.0.1:{server.server_address[1]}/token"
    shutil.copytree(pushed[1], root / "storage", symlinks=True)
    auth = (
        f"auth:\n  token:\n    realm: {realm}\n    service: krm-test\n"
        f"    issuer: krm-test-issuer\n    rootcertbundle: {root / 'root.pem'}\n"
    )
    proc, host = start_registry(root, auth=auth)
    try:
        yield host, _TokenService, realm
    finally:
        stop_registry(proc)
        server.shutdown()
        server.server_close()


def test_bearer_token_flow_anonymous_and_with_a_login(
    tmp_path, pushed, token_registry, monkeypatch, options
):
    host, service, realm = token_registry
    image = pushed[2]["one"]
    ref = image.ref.replace(pushed[0], host)
    config_dir = tmp_path / "docker"
    config_dir.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(config_dir))
    img = image_prepare(ref, image.digest, options=options())  # anonymous token
    assert (Path(img.rootfs) / "bin" / "fn").is_file()
    assert service.requests[0] == ("/token?scope=repository%3Afn%2Fone%3Apull&service=krm-test", "")
    # the token service wants a login now: none in the docker config is said plainly
    service.require_login = True
    fresh = str(tmp_path / "fresh-cache")
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, image.digest, options=options(cache_dir=fresh))
    assert str(exc.value) == (
        f"pulling manifest {host}/fn/one@{image.digest}: the token service {realm} answered "
        f"HTTP 401 (no login for {host} in {config_dir / 'config.json'})"
    )
    login = base64.b64encode(b"user:secret-pw").decode()
    (config_dir / "config.json").write_text(json.dumps({"auths": {host: {"auth": login}}}))
    img = image_prepare(ref, image.digest, options=options(cache_dir=fresh))
    assert (Path(img.rootfs) / "bin" / "fn").is_file()
    assert service.requests[-1][1] == f"Basic {login}"
