"""Image references and registry credentials as the docker CLI reads them."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import threading

import pytest

from orchestrator.functions.fetch import FetchError
from orchestrator.functions.image import image_pinned, image_user, select_platform
from orchestrator.functions.oci import ImageRef, credentials, parse_image

HEX = "ab" * 32


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("busybox", ImageRef("docker.io", "library/busybox")),
        ("busybox:1.36", ImageRef("docker.io", "library/busybox", "1.36")),
        ("kpt/fn:v1", ImageRef("docker.io", "kpt/fn", "v1")),
        ("ghcr.io/a/b/c:v1.2.3", ImageRef("ghcr.io", "a/b/c", "v1.2.3")),
        ("127.0.0.1:5000/fn", ImageRef("127.0.0.1:5000", "fn")),
        ("localhost/fn:x", ImageRef("localhost", "fn", "x")),
        (
            f"127.0.0.1:5000/fn:v1@sha256:{HEX}",
            ImageRef("127.0.0.1:5000", "fn", "v1", f"sha256:{HEX}"),
        ),
        (f"fn@sha256:{HEX}", ImageRef("docker.io", "library/fn", None, f"sha256:{HEX}")),
    ],
)
def test_parse_image(text, expected):
    assert parse_image(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fn@sha512:abc", "image 'fn@sha512:abc': only sha256 digests are supported"),
        ("fn@sha256:ABC", "image 'fn@sha256:ABC': the digest is not 64 lower-case hex digits"),
        ("Host/UPPER:v1", "image 'Host/UPPER:v1': invalid repository name 'Host/UPPER'"),
        ("fn:bad tag", "image 'fn:bad tag': invalid tag 'bad tag'"),
        ("", "image '': invalid repository name 'library/'"),
    ],
)
def test_parse_image_errors(text, message):
    with pytest.raises(FetchError) as exc:
        parse_image(text)
    assert str(exc.value) == message


def test_image_pinned():
    assert image_pinned("fn:v1", HEX).digest == f"sha256:{HEX}"
    assert image_pinned(f"fn@sha256:{HEX}", None).digest == f"sha256:{HEX}"
    with pytest.raises(FetchError) as exc:
        image_pinned("fn:v1", "xyz")
    assert str(exc.value) == "image fn:v1: sha256 'xyz' is not 64 hexadecimal digits"


def _config(tmp_path, monkeypatch, doc):
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    (tmp_path / "config.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_credentials_entry_shapes(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "none"))
    assert credentials("reg.example") is None  # no file: anonymous
    auth = base64.b64encode(b"u:p:with:colons").decode()
    _config(tmp_path, monkeypatch, {"auths": {"https://reg.example/v2/": {"auth": auth}}})
    assert credentials("reg.example") == ("u", "p:with:colons")
    assert credentials("other.example") is None
    _config(
        tmp_path, monkeypatch, {"auths": {"reg.example:5000": {"username": "a", "password": "b"}}}
    )
    assert credentials("reg.example:5000") == ("a", "b")
    hub = base64.b64encode(b"hub:pw").decode()
    _config(tmp_path, monkeypatch, {"auths": {"https://index.docker.io/v1/": {"auth": hub}}})
    assert credentials("docker.io") == ("hub", "pw")


def test_credentials_file_errors(tmp_path, monkeypatch):
    _config(tmp_path, monkeypatch, "{not json")
    with pytest.raises(FetchError) as exc:
        credentials("reg.example")
    assert str(exc.value).startswith(
        f"cannot read registry credentials from {tmp_path / 'config.json'}: "
    )
    _config(
        tmp_path, monkeypatch, {"auths": {"reg.example": {"auth": "bm9jb2xvbg=="}}}
    )  # "nocolon"
    with pytest.raises(FetchError) as exc:
        credentials("reg.example")
    assert str(exc.value) == (
        f"{tmp_path / 'config.json'}: the auth entry for reg.example is not base64 of user:password"
    )


def test_select_platform_names_what_the_index_offers():
    ref = ImageRef("r", "fn", None, f"sha256:{HEX}")
    index = {
        "manifests": [
            {
                "digest": f"sha256:{'1' * 64}",
                "size": 1,
                "platform": {"os": "linux", "architecture": "arm64"},
            },
            {
                "digest": f"sha256:{'2' * 64}",
                "size": 1,
                "platform": {"os": "linux", "architecture": "amd64"},
            },
            {
                "digest": f"sha256:{'3' * 64}",
                "size": 1,
                "platform": {"os": "unknown", "architecture": "unknown"},
            },
        ]
    }
    assert select_platform(index, ref, ("linux", "amd64")) == f"sha256:{'2' * 64}"
    with pytest.raises(FetchError) as exc:
        select_platform(index, ref, ("linux", "riscv64"))
    assert str(exc.value) == (
        f"image r/fn@sha256:{HEX} has no linux/riscv64 variant (it offers linux/arm64, "
        "linux/amd64, unknown/unknown)"
    )


def test_image_user(tmp_path):
    ref = ImageRef("r", "fn")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0::/:/bin/sh\nfn:x:1000:1001::/:/bin/sh\n")
    (tmp_path / "etc" / "group").write_text("fng:x:1001:\n")
    root = str(tmp_path)
    assert image_user("", root, ref) == (65534, 65534)
    assert image_user("root", root, ref) == (65534, 65534)
    assert image_user("0:0", root, ref) == (65534, 65534)
    assert image_user("fn", root, ref) == (1000, 1001)
    assert image_user("fn:fng", root, ref) == (1000, 1001)
    assert image_user("1234", root, ref) == (1234, 1234)
    assert image_user("1234:0", root, ref) == (1234, 65534)
    with pytest.raises(FetchError) as exc:
        image_user("ghost", root, ref)
    assert str(exc.value) == "image r/fn: user 'ghost' is not in the image's /etc/passwd"


def test_schema1_manifest_is_refused_from_the_cache(tmp_path):
    from orchestrator.functions.image import image_prepare
    from orchestrator.functions.options import FnOptions

    data = json.dumps({"schemaVersion": 1, "name": "fn", "fsLayers": []}).encode()
    digest = hashlib.sha256(data).hexdigest()
    blobs = tmp_path / "images" / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    (blobs / digest).write_bytes(data)
    options = FnOptions(cache_dir=str(tmp_path), offline=True)
    with pytest.raises(FetchError) as exc:
        image_prepare(f"127.0.0.1:9/fn@sha256:{digest}", None, options=options)
    assert str(exc.value) == (
        f"image 127.0.0.1:9/fn@sha256:{digest}: manifest sha256:{digest} has schemaVersion 1; "
        "only OCI and docker v2 (schemaVersion 2) images can be run"
    )
    # a damaged cached manifest is not trusted: it would be pulled again (here: offline)
    (blobs / digest).write_bytes(data + b" ")
    with pytest.raises(FetchError) as exc:
        image_prepare(f"127.0.0.1:9/fn@sha256:{digest}", None, options=options)
    assert str(exc.value) == (
        f"cannot pull manifest 127.0.0.1:9/fn@sha256:{digest}: --offline and not in the cache"
    )


class _Redirecting(http.server.BaseHTTPRequestHandler):
    """A registry that wants Basic auth and sends blobs elsewhere (as registries send them to
    object storage): ``target`` is where, ``seen`` what each request carried."""

    target = ""
    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802
        cls = type(self)
        auth = self.headers.get("Authorization", "")
        cls.seen.append((self.path, auth))
        if self.path.startswith("/v2/") and not auth:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path.startswith("/v2/"):
            self.send_response(307)
            self.send_header("Location", cls.target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            body = b"not the manifest"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def redirecting(tmp_path, monkeypatch):
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting) for _ in "ab"]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    _Redirecting.seen = []
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    login = base64.b64encode(b"u:p").decode()
    host = f"127.0.0.1:{servers[0].server_address[1]}"
    (tmp_path / "config.json").write_text(json.dumps({"auths": {host: {"auth": login}}}))
    yield host, f"127.0.0.1:{servers[1].server_address[1]}"
    for server in servers:
        server.shutdown()
        server.server_close()


def test_redirects_drop_credentials_and_are_checked(redirecting, tmp_path):
    from orchestrator.functions.image import image_prepare
    from orchestrator.functions.options import FnOptions

    host, other = redirecting
    ref = f"{host}/fn@sha256:{HEX}"
    _Redirecting.target = f"http://{other}/storage/blob"
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, None, options=FnOptions(cache_dir=str(tmp_path / "c")))
    # the other host's bytes were checked against the digest, and got no credentials
    assert str(exc.value) == (
        f"manifest {host}/fn@sha256:{HEX}: the registry sent bytes with digest "
        f"sha256:{hashlib.sha256(b'not the manifest').hexdigest()}; refusing them"
    )
    login = "Basic " + base64.b64encode(b"u:p").decode()
    assert _Redirecting.seen == [
        (f"/v2/fn/manifests/sha256:{HEX}", ""),
        (f"/v2/fn/manifests/sha256:{HEX}", login),
        ("/storage/blob", ""),
    ]
    # plain http to a host that is not loopback is refused before any request
    _Redirecting.target = "http://registry.example/storage/blob"
    with pytest.raises(FetchError) as exc:
        image_prepare(ref, None, options=FnOptions(cache_dir=str(tmp_path / "c")))
    assert str(exc.value) == (
        f"pulling manifest {host}/fn@sha256:{HEX}: refusing to download "
        "http://registry.example/storage/blob: plain http is allowed only to loopback"
    )
    assert _Redirecting.seen[-1] == (f"/v2/fn/manifests/sha256:{HEX}", login)
