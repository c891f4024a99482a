"""The Docker CLI's authentication sequence against the live registry (pytest-django's
``live_server``), reproduced request by request with httpx.

The Docker CLI cannot run here: it needs a Docker daemon (``dockerd``), which these tests do not
have. So its documented sequence is reproduced instead, as moby's ``PingV2Registry`` and
docker/distribution's ``registry/client/auth`` perform it:

1. ``GET /v2/`` without credentials (the "ping"). Challenges are read from a **401 only**
   (``challenge.ResponseChallenges``: "Challenges are only checked if the response status code was
   a 401"); on a 200 Docker records none and never sends the credentials it has.
2. For a ``bearer`` challenge: ``GET <realm>?service=<service>&scope=repository:<name>:pull``, with
   HTTP Basic (and ``account=<user>``) when ``docker login`` stored credentials for the host,
   without any when it did not (anonymous pulls); ``docker login`` asks with ``client_id=docker``
   and ``offline_token=true`` and no scope, then checks ``GET /v2/`` with the token is a 200.
3. Every request to the repository carries ``Authorization: Bearer <token>``.

``skopeo`` and ``oras`` keep pulling public catalogs anonymously after the ping's change:
tests/catalogs/distribution/test_clients.py runs them against the same live server, and
:func:`test_skopeo_and_oras_pull_a_public_catalog_anonymously` below does it with no credentials
anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import oras.provider
import pytest

from catalogs.publishing import services
from tests.catalogs.factories import api_token_key

pytestmark = pytest.mark.django_db(transaction=True)

# What Docker asks a manifest GET for (moby's distribution/pull_v2.go: schema2, manifest list,
# OCI manifest and index).
DOCKER_MANIFEST_ACCEPT = ", ".join(
    (
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
    )
)
_PARAM = re.compile(r'(\w+)="([^"]*)"')


@dataclass
class DockerLikeClient:
    """The Docker CLI's registry client, reduced to its authentication steps (see the module
    docstring); ``creds`` are what ``docker login`` would have stored for the host."""

    base: str
    creds: tuple[str, str] | None = None
    challenges: dict[str, dict[str, str]] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)
    blob_cache_control: str = ""

    def ping(self) -> httpx.Response:
        response = httpx.get(f"{self.base}/v2/", headers={"User-Agent": "docker/27.0"})
        self.sent.append(f"GET /v2/ -> {response.status_code}")
        # challenge.ResponseChallenges: a 401's WWW-Authenticate, nothing from any other answer.
        self.challenges = {}
        if response.status_code == 401:
            for value in response.headers.get_list("www-authenticate"):
                scheme, _, params = value.partition(" ")
                self.challenges[scheme.lower()] = dict(_PARAM.findall(params))
        return response

    def token(self, *, scope: str = "", login: bool = False) -> str | None:
        """The bearer token Docker's token handler fetches; None when the ping gave no bearer
        challenge (then Docker sends the request with no credentials at all)."""
        bearer = self.challenges.get("bearer")
        if bearer is None:
            return None
        params = {"service": bearer["service"]}
        if scope:
            params["scope"] = scope
        if login:
            params |= {"client_id": "docker", "offline_token": "true"}
        headers = {}
        if self.creds is not None:
            params["account"] = self.creds[0]
            pair = f"{self.creds[0]}:{self.creds[1]}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        response = httpx.get(bearer["realm"], params=params, headers=headers)
        self.sent.append(
            f"GET /v2/token ({'Basic' if headers else 'anonymous'}) -> {response.status_code}"
        )
        if response.status_code != 200:
            return None
        body = response.json()
        return body.get("access_token") or body["token"]

    def login(self) -> bool:
        """``docker login``: ping, a token with the credentials, ``GET /v2/`` with it is a 200."""
        self.ping()
        token = self.token(login=True)
        if token is None:
            return False
        check = httpx.get(f"{self.base}/v2/", headers={"Authorization": f"Bearer {token}"})
        self.sent.append(f"GET /v2/ (Bearer) -> {check.status_code}")
        return check.status_code == 200

    def pull(self, name: str, reference: str) -> tuple[httpx.Response, bytes | None]:
        """``docker pull``: ping, a pull token, the manifest, then its first layer's blob."""
        self.ping()
        token = self.token(scope=f"repository:{name}:pull")
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        manifest = httpx.get(
            f"{self.base}/v2/{name}/manifests/{reference}",
            headers={**auth, "Accept": DOCKER_MANIFEST_ACCEPT},
        )
        self.sent.append(f"GET manifest -> {manifest.status_code}")
        if manifest.status_code != 200:
            return manifest, None
        digest = manifest.json()["layers"][0]["digest"]
        blob = httpx.get(f"{self.base}/v2/{name}/blobs/{digest}", headers=auth)
        self.sent.append(f"GET blob -> {blob.status_code}")
        assert blob.status_code == 200, blob.text
        assert "sha256:" + hashlib.sha256(blob.content).hexdigest() == digest
        self.blob_cache_control = blob.headers["Cache-Control"]
        return manifest, blob.content


@pytest.fixture
def private(published, owner):
    services.catalog_update(catalog=published.catalog, actor=owner, visibility="private")
    return published


@pytest.fixture
def outsider(db):
    from django.contrib.auth.models import User

    user = User.objects.create_user("outsider", password="not-used-here")
    return "outsider", api_token_key(user)


def test_the_ping_is_a_401_bearer_challenge_without_credentials(live_server, published):
    docker = DockerLikeClient(live_server.url)
    response = docker.ping()
    assert response.status_code == 401
    assert response.json()["errors"][0]["code"] == "UNAUTHORIZED"
    assert response.headers["Docker-Distribution-API-Version"] == "registry/2.0"
    host = live_server.url.removeprefix("http://")
    assert docker.challenges == {
        "bearer": {"realm": f"{live_server.url}/v2/token", "service": host}
    }


def test_docker_login_checks_the_credentials(live_server, published, owner_token):
    assert DockerLikeClient(live_server.url, creds=("owner", owner_token)).login()
    wrong = DockerLikeClient(live_server.url, creds=("owner", "not-the-token"))
    assert not wrong.login()
    assert wrong.sent == ["GET /v2/ -> 401", "GET /v2/token (Basic) -> 401"]


def test_docker_pulls_a_private_repository_with_the_logged_in_credentials(
    live_server, private, owner_token
):
    docker = DockerLikeClient(live_server.url, creds=("owner", owner_token))
    manifest, layer = docker.pull("example-co/functions", "latest")
    assert manifest.status_code == 200, manifest.text
    assert manifest.content == bytes(private.oci_manifest.content)
    assert layer == bytes(private.content)
    assert docker.sent == [
        "GET /v2/ -> 401",
        "GET /v2/token (Basic) -> 200",
        "GET manifest -> 200",
        "GET blob -> 200",
    ]
    # For this caller only: no shared cache (nginx, a CDN) may keep a private answer.
    assert manifest.headers["Cache-Control"].startswith("private")
    assert docker.blob_cache_control == "private, max-age=31536000, immutable"


def test_a_private_repository_stays_unknown_to_outsiders_as_a_missing_one(
    live_server, private, outsider
):
    for creds in (None, outsider):
        answers = []
        for name in ("example-co/functions", "example-co/no-such-catalog"):
            manifest, layer = DockerLikeClient(live_server.url, creds=creds).pull(name, "latest")
            assert layer is None
            body = manifest.json()
            answers.append(
                (manifest.status_code, body["errors"][0]["code"], json.dumps(body).count(name))
            )
        assert answers[0] == answers[1] == (404, "NAME_UNKNOWN", answers[0][2])
    # Nor does the blob answer an outsider's token.
    docker = DockerLikeClient(live_server.url, creds=outsider)
    docker.ping()
    token = docker.token(scope="repository:example-co/functions:pull")
    blob = httpx.get(
        f"{live_server.url}/v2/example-co/functions/blobs/{private.digest}",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert blob.status_code == 404 and bytes(private.content) not in blob.content


def test_docker_pulls_a_public_repository_anonymously(live_server, published):
    docker = DockerLikeClient(live_server.url)
    manifest, layer = docker.pull("example-co/functions", "v1")
    assert manifest.content == bytes(published.oci_manifest.content)
    assert layer == bytes(published.content)
    assert docker.sent[:2] == ["GET /v2/ -> 401", "GET /v2/token (anonymous) -> 200"]
    assert docker.blob_cache_control == "public, max-age=31536000, immutable"
    # And with no token at all, as curl or a client that never pings does.
    plain = httpx.get(f"{live_server.url}/v2/example-co/functions/manifests/v1")
    assert plain.status_code == 200 and plain.content == bytes(published.oci_manifest.content)


def test_skopeo_and_oras_pull_a_public_catalog_anonymously(live_server, published, tmp_path):
    host = live_server.url.removeprefix("http://")
    if shutil.which("skopeo") is None:
        pytest.fail("skopeo is missing: scripts/system-packages.sh installs it")
    raw = subprocess.run(
        [
            "skopeo",
            "inspect",
            "--raw",
            "--tls-verify=false",
            "--no-creds",
            f"docker://{host}/example-co/functions:v1",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == bytes(published.oci_manifest.content)
    registry = oras.provider.Registry(hostname=host, insecure=True)
    files = registry.pull(target=f"{host}/example-co/functions:v1", outdir=str(tmp_path))
    assert [Path(f).read_bytes() for f in files] == [bytes(published.content)]
