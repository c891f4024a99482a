"""Real local upstreams for mirroring tests: an HTTPS server (trustme), git repositories and
Debian's ``docker-registry`` on a free loopback port (artifacts pushed with oras).

``docker-registry`` must be installed (``apt-get install -y docker-registry``); without it the OCI
tests fail loudly rather than skip.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

SIGSTORE_DATA = Path(__file__).resolve().parents[2] / "data" / "sigstore"  # vendored
CATALOG_MEDIA_TYPE = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
COSIGN_MEDIA_TYPE = "application/vnd.dev.cosign.simplesigning.v1+json"
BEACON = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"
    "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
GHA = "https://token.actions.githubusercontent.com"


def stored_blobs() -> list[str]:
    """Hex digests of the objects in the default storage's blob prefix (local files or S3)."""
    from django.core.files.storage import default_storage

    from catalogs.publishing import blobstore

    try:
        return sorted(default_storage.listdir(blobstore.blob_prefix())[1])
    except FileNotFoundError:
        return []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# ----------------------------------------------------------------------------- catalogs


def catalog_doc(name: str = "upstream", *, kinds: tuple[str, ...] = ("SetLabels",)) -> bytes:
    """A valid catalog with container-runtime functions (pinned images)."""
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  krmFunctions:",
    ]
    for kind in kinds:
        lines += [
            "  - group: example.co",
            "    names:",
            f"      kind: {kind}",
            "    description: A test function.",
            "    versions:",
            "    - name: v1",
            "      runtime:",
            "        container:",
            f"          image: registry.example.co/{kind.lower()}@sha256:{'a' * 64}",
        ]
    return ("\n".join(lines) + "\n").encode()


def exec_catalog_doc(artifacts: list[tuple[str, str, str]], *, image: str = "") -> bytes:
    """A catalog with one function per (kind, uri, sha256hex): exec runtime, optional image."""
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        "  name: with-runtimes",
        "spec:",
        "  krmFunctions:",
    ]
    for kind, uri, hexdigest in artifacts:
        lines += [
            "  - group: example.co",
            "    names:",
            f"      kind: {kind}",
            "    versions:",
            "    - name: v1",
            "      runtime:",
        ]
        if image:
            lines += ["        container:", f"          image: {image}"]
        lines += [
            "        exec:",
            "          platforms:",
            f"          - bin: {kind.lower()}",
            "            os: linux",
            "            arch: amd64",
            f"            uri: {uri}",
            f"            sha256: {hexdigest}",
        ]
    return ("\n".join(lines) + "\n").encode()


# ----------------------------------------------------------------------------- HTTPS server


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    delay: float = 0.0
    truncate_to: int | None = None
    location: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    gate: threading.Event | None = None  # the response waits until this is set


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        server: HttpsUpstream = self.server.upstream  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        server.requests.append((path, dict(self.headers)))
        required = server.required_authorization
        if required is not None and self.headers.get("Authorization") != required:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="upstream"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if server.git_root is not None and path.startswith("/git/"):
            self._git_http_backend(server.git_root)
            return
        route = server.routes.get(path)
        try:
            if route is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if route.delay:
                time.sleep(route.delay)
            if route.gate is not None:
                route.gate.wait(timeout=300)
            if route.location is not None:
                self.send_response(302)
                self.send_header("Location", route.location)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            etag = '"' + hashlib.sha256(route.body).hexdigest() + '"'
            if route.status == 200 and self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(route.status)
            self.send_header("Content-Length", str(len(route.body)))
            self.send_header("ETag", etag)
            for key, value in route.headers.items():
                self.send_header(key, value)
            self.end_headers()
            if route.truncate_to is not None:
                self.wfile.write(route.body[: route.truncate_to])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(route.body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    do_POST = do_GET  # noqa: N815  (git's smart HTTP posts to git-upload-pack)

    def _git_http_backend(self, root: Path) -> None:
        """Serve ``/git/<repo>/…`` with git's own smart-HTTP server, ``git http-backend`` (CGI)."""
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path[len("/git") :],
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_ADDR": "127.0.0.1",
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=True
        )
        # CGI headers end at the first blank line; the rest is binary pack data, left untouched.
        separator = b"\r\n\r\n" if b"\r\n\r\n" in done.stdout else b"\n\n"
        head, _, payload = done.stdout.partition(separator)
        status, headers = 200, []
        for line in head.decode().splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            else:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


class HttpsUpstream:
    """A threaded HTTPS server with a trustme certificate, serving ``routes`` by path."""

    def __init__(self, ca_path: str, context: ssl.SSLContext):
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, dict]] = []
        self.git_root: Path | None = None  # repositories served at /git/<name> when set
        # When set, every request without exactly this Authorization header gets a 401.
        self.required_authorization: str | None = None
        self.ca_path = ca_path
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.upstream = self  # type: ignore[attr-defined]
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, body: bytes = b"", **kwargs: object) -> str:
        self.routes[path] = Route(body=body, **kwargs)  # type: ignore[arg-type]
        return self.url(path)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="session")
def https_upstream_session(tmp_path_factory):
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    ca_path = tmp_path_factory.mktemp("trustme") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    server = HttpsUpstream(str(ca_path), context)
    yield server
    server.close()


@pytest.fixture
def https_upstream(https_upstream_session):
    """The HTTPS upstream with no routes."""
    https_upstream_session.routes.clear()
    https_upstream_session.requests.clear()
    https_upstream_session.git_root = None
    https_upstream_session.required_authorization = None
    return https_upstream_session


# ----------------------------------------------------------------------------- git


class GitUpstream:
    """A git repository on disk: commit files, read commits."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "test@example.co")
        self.git("config", "user.name", "Test")

    def git(self, *args: str) -> str:
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.path)}
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def commit(self, files: dict[str, bytes], message: str = "change") -> str:
        for name, data in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            self.git("add", name)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def git_upstream(tmp_path) -> GitUpstream:
    return GitUpstream(tmp_path / "upstream-repo")


# ----------------------------------------------------------------------------- OCI registry


class OciUpstream:
    """Debian's docker-registry on a loopback port, and pushes made with oras."""

    def __init__(self, host: str, scratch: Path, *, login: tuple[str, str] | None = None):
        import oras.provider

        self.host = host
        self.scratch = scratch
        if login is None:
            self.client = oras.provider.Registry(hostname=host, insecure=True)
        else:  # an htpasswd registry challenges with Basic, which oras's "basic" backend answers
            self.client = oras.provider.Registry(hostname=host, insecure=True, auth_backend="basic")
            self.client.auth.set_basic_auth(*login)

    def push(self, ref: str, layers: list[tuple[bytes, str, dict[str, str]]]) -> str:
        """Push an artifact ``repo:tag`` with the given (bytes, media type, annotations) layers."""
        import oras.oci

        container = self.client.get_container(f"{self.host}/{ref}")
        work = Path(tempfile.mkdtemp(dir=self.scratch))
        config_path = work / "config.json"
        config_path.write_bytes(b"{}")
        config, _ = oras.oci.ManifestConfig(str(config_path), "application/vnd.oci.empty.v1+json")
        assert self.client.upload_blob(str(config_path), container, config).status_code in (
            200,
            201,
            202,
        )
        manifest = oras.oci.NewManifest()
        manifest["config"] = config
        for index, (data, media_type, notes) in enumerate(layers):
            path = work / f"layer-{index}"
            path.write_bytes(data)
            layer = oras.oci.NewLayer(str(path), media_type)
            layer["annotations"] = dict(notes)
            response = self.client.upload_blob(str(path), container, layer)
            assert response.status_code in (200, 201, 202), response.text
            manifest["layers"].append(layer)
        response = self.client.upload_manifest(manifest, container)
        assert response.status_code == 201, response.text
        return response.headers["Docker-Content-Digest"]

    def push_catalog(self, ref: str, content: bytes, media_type: str = CATALOG_MEDIA_TYPE) -> str:
        return self.push(ref, [(content, media_type, {})])

    def sign(
        self,
        repo: str,
        manifest_digest: str,
        key: ec.EllipticCurvePrivateKey,
        *,
        tamper: bool = False,
    ) -> str:
        """Store a cosign simple-signing signature of ``manifest_digest`` made with ``key``.

        With ``tamper`` the stored payload differs by one byte from the signed one.
        """
        payload = json.dumps(
            {
                "critical": {
                    "identity": {"docker-reference": f"{self.host}/{repo}"},
                    "image": {"docker-manifest-digest": manifest_digest},
                    "type": "cosign container image signature",
                },
                "optional": None,
            }
        ).encode()
        signature = base64.b64encode(key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
        if tamper:
            payload = payload.replace(b'"optional": null', b'"optional": nulL')
        tag = manifest_digest.replace(":", "-") + ".sig"
        return self.push(
            f"{repo}:{tag}",
            [(payload, COSIGN_MEDIA_TYPE, {"dev.cosignproject.cosign/signature": signature})],
        )

    def url(self, ref: str) -> str:
        return f"oci://{self.host}/{ref}"


def _start_registry(root: Path, *, auth: str = "") -> tuple[subprocess.Popen, int, object]:
    binary = shutil.which("docker-registry")
    assert binary, (
        "docker-registry is not installed: the OCI mirroring tests need Debian's "
        "docker-registry (apt-get install -y docker-registry)"
    )
    port = free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: error\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'storage'}\n"
        "  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n" + auth
    )
    log = open(root / "registry.log", "wb")  # noqa: SIM115
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=log)
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1) as response:
                if response.status == 200:
                    break
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and auth:  # up, and asking for credentials
                break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(
                "docker-registry did not start: " + (root / "registry.log").read_text()[-2000:]
            )
        time.sleep(0.1)
    return process, port, log


@pytest.fixture(scope="session")
def oci_upstream(tmp_path_factory):
    root = tmp_path_factory.mktemp("oci-registry")
    process, port, log = _start_registry(root)
    yield OciUpstream(f"127.0.0.1:{port}", root)
    process.terminate()
    process.wait(timeout=10)
    log.close()  # type: ignore[attr-defined]


OCI_LOGIN = ("mirror-bot", "s3cr3t-registry-password")


@pytest.fixture(scope="session")
def oci_auth_upstream(tmp_path_factory):
    """docker-registry with htpasswd authentication: only ``OCI_LOGIN`` may pull or push."""
    import bcrypt

    root = tmp_path_factory.mktemp("oci-auth-registry")
    user, password = OCI_LOGIN
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    (root / "htpasswd").write_text(f"{user}:{hashed}\n")
    auth = f"auth:\n  htpasswd:\n    realm: test-registry\n    path: {root / 'htpasswd'}\n"
    process, port, log = _start_registry(root, auth=auth)
    yield OciUpstream(f"127.0.0.1:{port}", root, login=OCI_LOGIN)
    process.terminate()
    process.wait(timeout=10)
    log.close()  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- keys, settings


@pytest.fixture(scope="session")
def cosign_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="session")
def other_cosign_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


@pytest.fixture
def mirror_settings(settings, tmp_path, https_upstream_session):
    """Loopback and local git allowed, the trustme CA, a temporary MEDIA_ROOT."""
    settings.MIRROR_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_ALLOW_LOCAL_PATHS = True
    settings.MIRROR_CA_BUNDLE = https_upstream_session.ca_path
    settings.MIRROR_TIMEOUT = 2.0
    settings.MIRROR_SIGSTORE_TRUSTED_ROOT = str(
        SIGSTORE_DATA / "trusted_root" / "production.trusted_root.json"
    )
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.REGISTRY_PUBLIC_URL = "http://testserver"
    return settings


@pytest.fixture
def oci_settings(mirror_settings, oci_upstream):
    mirror_settings.MIRROR_OCI_PLAIN_HTTP_HOSTS = [oci_upstream.host]
    return mirror_settings


@pytest.fixture(autouse=True)
def jobs_in_process(request):
    """Run mirror jobs in this process, also in the PostgreSQL + Redis stage.

    The upstreams' settings (loopback allowed, the trustme CA) exist only in this process, and
    most tests keep their rows in an uncommitted transaction. The real-worker path is covered
    by test_sync_sigkill.py, which starts workers with those settings.
    """
    if request.node.get_closest_marker("services"):
        yield
        return
    yield request.getfixturevalue("jobs_in_this_process")


@pytest.fixture
def sync(django_capture_on_commit_callbacks):
    """``sync(source)``: request a sync as a system caller, run its job, return the run."""
    from catalogs.mirroring import services as mirrors

    def run(source):
        with django_capture_on_commit_callbacks(execute=True):
            queued = mirrors.mirror_source_sync_request(source=source, actor=None)
        return mirrors.sync_run_get(pk=queued.pk)

    return run


@pytest.fixture
def snapshot(client, mirror_settings):
    """``snapshot(source)``: served bytes, version count, blob files and artifact rows."""
    from catalogs.mirroring.models import RuntimeArtifact
    from catalogs.publishing.models import CatalogVersion

    def take(source) -> dict:
        response = client.get(f"/c/mirrors/{source.name}/catalog.yaml")
        return {
            "status": response.status_code,
            "body": response.content if response.status_code == 200 else None,
            "versions": CatalogVersion.objects.filter(catalog=source.catalog).count(),
            "blobs": stored_blobs(),
            "artifacts": sorted(RuntimeArtifact.objects.values_list("digest", flat=True)),
        }

    return take
