"""deploy/nginx/krm-registry.conf.template in front of a live gunicorn, with Debian's nginx.

Proves the deployed serving path: a pinned version comes back with the registry's bytes and
headers, the second request is answered by nginx without reaching Django (gunicorn's access log
does not grow), and `latest` shows a new publish within the configured microcache time.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from catalogs.distribution.auth import ANONYMOUS_TOKEN_PREFIX
from tests.catalogs.factories import catalog_yaml
from tests.live_registry import live_registry
from tests.scripts import load_script

MICROCACHE_SECONDS = 1

pytestmark = pytest.mark.skipif(
    shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
    reason="nginx is not installed (scripts/system-packages.sh installs nginx-light)",
)


bench = load_script("bench/serve_catalog.py", "bench_serve_catalog")


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """(nginx base URL, gunicorn server, gunicorn's access log) with one published version."""
    workdir = tmp_path_factory.mktemp("nginx")
    access_log = workdir / "access.log"
    with live_registry(
        workdir,
        workers=2,
        threads=4,
        GUNICORN_CMD_ARGS=f"--access-logfile {access_log}",
        SERVE_X_ACCEL_REDIRECT="/_krm_media/",
        # As deployed: nginx logs the catalog pulls, pulls_collect counts them.
        USAGE_CATALOG_PULLS_FROM_PROXY="true",
        USAGE_FLUSH_SECONDS="1",
    ) as server:
        procs = bench.Processes()
        try:
            static = workdir / "static"
            static.mkdir()
            base, _ = bench.start_nginx(
                procs,
                workdir,
                upstream=server.base.removeprefix("http://"),
                static_root=static,
                microcache=f"{MICROCACHE_SECONDS}s",
                media_root=server.media,
            )
            yield base, server, access_log
        finally:
            procs.stop()


def _publish(base: str, token: str, kind: str) -> str:
    response = httpx.post(
        f"{base}/api/v1/catalogs/acme/fns/versions/",
        content=catalog_yaml(("example.co", kind, "v1")).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/yaml"},
        timeout=60,
    )
    assert response.status_code == 201, response.text
    return response.json()["digest"]


def _django_saw(access_log: Path, path: str, *, settle: float = 0.5) -> int:
    """How many requests for ``path`` reached gunicorn (which logs just after it answered)."""
    time.sleep(settle)
    return sum(f"GET {path} " in line for line in access_log.read_text().splitlines())


def test_pinned_version_is_served_by_nginx_after_the_first_request(deployed):
    base, server, access_log = deployed
    # Published through nginx: everything but the immutable URLs passes straight through.
    digest = _publish(base, server.token, "Pinned")
    number = server.query(
        "SELECT v.number FROM catalogs_catalogversion v WHERE v.digest = ?", (digest,)
    )[0][0]
    for path in (
        f"/c/acme/fns/versions/{number}/catalog.yaml",
        f"/c/acme/fns/sha256/{digest.removeprefix('sha256:')}/catalog.yaml",
    ):
        first = httpx.get(base + path)
        assert first.status_code == 200
        assert first.headers["X-Cache-Status"] == "MISS"
        assert "sha256:" + hashlib.sha256(first.content).hexdigest() == digest
        assert first.headers["X-Content-Digest"] == digest
        assert first.headers["ETag"] == f'"{digest}"'
        assert first.headers["Content-Length"] == str(len(first.content))
        assert first.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert first.headers["Content-Type"] == "application/yaml"
        assert _django_saw(access_log, path) == 1

        again = httpx.get(base + path)
        head = httpx.head(base + path)
        not_modified = httpx.get(base + path, headers={"If-None-Match": f'"{digest}"'})
        assert again.headers["X-Cache-Status"] == head.headers["X-Cache-Status"] == "HIT"
        assert again.content == first.content
        for name in ("X-Content-Digest", "ETag", "Content-Length", "Cache-Control"):
            assert again.headers[name] == head.headers[name] == first.headers[name]
        assert not_modified.status_code == 304
        # Ranges from nginx's copy (sent from a read buffer, not sendfile: the template's
        # comment says why), the whole body byte for byte beside them.
        ranged = httpx.get(base + path, headers={"Range": "bytes=100-299"})
        tail = httpx.get(base + path, headers={"Range": "bytes=-7"})
        assert ranged.status_code == tail.status_code == 206
        assert ranged.headers["X-Cache-Status"] == "HIT"
        assert ranged.content == first.content[100:300]
        assert tail.content == first.content[-7:]
        assert ranged.headers["Content-Range"] == f"bytes 100-299/{len(first.content)}"
        assert _django_saw(access_log, path) == 1, "a cached request reached Django"


def test_a_private_catalog_is_never_kept_by_nginx(deployed):
    """Its pinned versions say Cache-Control: private, so every request reaches the registry,
    which checks who asks; nginx answers no one from a copy."""
    base, server, access_log = deployed
    auth = {"Authorization": f"Token {server.token}"}
    created = httpx.post(
        f"{base}/api/v1/catalogs/",
        json={"publisher": "acme", "name": "secret"},
        headers=auth,
        timeout=60,
    )
    assert created.status_code == 201, created.text
    private = httpx.patch(
        f"{base}/api/v1/catalogs/acme/secret/",
        json={"visibility": "private"},
        headers=auth,
        timeout=60,
    )
    assert private.json()["visibility"] == "private"
    published = httpx.post(
        f"{base}/api/v1/catalogs/acme/secret/versions/",
        content=catalog_yaml(("secret.example", "Hidden", "v1")).encode(),
        headers={**auth, "Content-Type": "application/yaml"},
        timeout=60,
    )
    assert published.status_code == 201, published.text
    digest = published.json()["digest"]
    path = "/c/acme/secret/versions/1/catalog.yaml"
    for _ in range(3):
        answer = httpx.get(base + path, headers=auth)
        assert answer.status_code == 200
        assert answer.headers["X-Content-Digest"] == digest
        assert answer.headers["Cache-Control"] == "private, max-age=31536000, immutable"
        assert answer.headers["X-Cache-Status"] != "HIT"
    assert httpx.get(base + path).status_code == 404
    assert _django_saw(access_log, path) == 4


def test_an_unknown_version_is_not_cached(deployed):
    base, server, access_log = deployed
    path = "/c/acme/fns/versions/999/catalog.yaml"
    assert httpx.get(base + path).status_code == 404
    assert httpx.get(base + path).status_code == 404
    assert _django_saw(access_log, path) == 2


def test_latest_shows_a_publish_within_the_microcache_time(deployed):
    base, server, access_log = deployed
    first = _publish(server.base, server.token, "LatestOne")
    deadline = time.monotonic() + MICROCACHE_SECONDS + 5
    while httpx.get(f"{base}/c/acme/fns/catalog.yaml").headers["X-Content-Digest"] != first:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Within the microcache, nginx answers repeated requests itself.
    seen = _django_saw(access_log, "/c/acme/fns/catalog.yaml")
    burst = [httpx.get(f"{base}/c/acme/fns/catalog.yaml") for _ in range(5)]
    assert {r.headers["X-Content-Digest"] for r in burst} == {first}
    assert _django_saw(access_log, "/c/acme/fns/catalog.yaml") <= seen + 1

    second = _publish(server.base, server.token, "LatestTwo")
    published = time.monotonic()
    while True:
        response = httpx.get(f"{base}/c/acme/fns/catalog.yaml")
        if response.headers["X-Content-Digest"] == second:
            break
        elapsed = time.monotonic() - published
        assert elapsed < MICROCACHE_SECONDS + 1.0, f"latest still old after {elapsed:.2f}s"
        time.sleep(0.05)
    assert "sha256:" + hashlib.sha256(response.content).hexdigest() == second
    # Clients are still told CATALOG_LATEST_MAX_AGE, not nginx's microcache time.
    assert response.headers["Cache-Control"] == "public, max-age=60"


def test_signatures_pass_through_with_their_own_lifetime(deployed):
    base, server, _ = deployed
    digest = _publish(server.base, server.token, "Signed")
    hexdigest = digest.removeprefix("sha256:")
    response = httpx.get(f"{base}/c/acme/fns/sha256/{hexdigest}/catalog.yaml.sig")
    assert response.status_code == 200
    assert response.headers["X-Content-Digest"] == digest
    assert response.headers["Cache-Control"] == "public, max-age=300"
    assert response.headers["X-Signing-Key-Id"]
    again = httpx.get(f"{base}/c/acme/fns/sha256/{hexdigest}/catalog.yaml.sig")
    assert again.headers["X-Cache-Status"] == "HIT" and again.content == response.content


def test_stored_blobs_are_sent_by_nginx_through_x_accel_redirect(deployed):
    base, server, access_log = deployed
    content = b"#!/bin/sh\necho a mirrored exec function\n" * 1000
    hexdigest = hashlib.sha256(content).hexdigest()
    storage_name = f"artifacts/sha256/{hexdigest}"
    (server.media / "artifacts" / "sha256").mkdir(parents=True)
    (server.media / storage_name).write_bytes(content)
    server.query(
        "INSERT INTO catalogs_runtimeartifact (digest, size, storage_name, source_uri, created_at)"
        " VALUES (?, ?, ?, '', '2026-01-01 00:00:00')",
        (f"sha256:{hexdigest}", len(content), storage_name),
    )
    path = f"/c/blobs/sha256/{hexdigest}"
    direct = httpx.get(server.base + path)
    assert (
        direct.content == b""
        and direct.headers["X-Accel-Redirect"] == f"/_krm_media/{storage_name}"
    )
    response = httpx.get(base + path)
    assert response.status_code == 200 and response.content == content
    assert response.headers["Content-Length"] == str(len(content))
    assert response.headers["ETag"] == f'"sha256:{hexdigest}"'
    assert response.headers["X-Content-Digest"] == f"sha256:{hexdigest}"
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "X-Accel-Redirect" not in response.headers
    # nginx's internal location is not reachable from outside.
    assert httpx.get(f"{base}/_krm_media/{storage_name}").status_code == 404


def test_pulls_nginx_answers_from_its_cache_are_counted_within_seconds(deployed):
    """The pulls log nginx writes, followed by manage.py pulls_collect (a real process, as in
    deploy/compose.yaml): cache hits that never reached Django count, each once."""
    base, server, access_log = deployed
    digest = _publish(base, server.token, "Counted")
    number = server.query(
        "SELECT v.number FROM catalogs_catalogversion v WHERE v.digest = ?", (digest,)
    )[0][0]
    pinned = f"/c/acme/fns/versions/{number}/catalog.yaml"
    log = access_log.parent / "pulls.log"
    collector = subprocess.Popen(
        # From the start: on a loaded machine it may open the log after the GETs below.
        [sys.executable, "manage.py", "pulls_collect", "--log", str(log), "--from-start"],
        env=server.env,
        cwd=bench.ROOT,
        start_new_session=True,
    )
    try:
        answers = [httpx.get(base + pinned) for _ in range(5)]
        answers.append(httpx.head(base + pinned))  # not a pull
        assert [r.headers["X-Cache-Status"] for r in answers[1:]] == ["HIT"] * 5
        assert _django_saw(access_log, pinned) == 1
        sql = (
            "SELECT COALESCE(SUM(p.count), 0) FROM catalogs_catalogversionpulls p "
            "JOIN catalogs_catalogversion v ON v.id = p.version_id WHERE v.digest = ?"
        )
        # nginx flushes each second, the collector too (once it has started: generous bounds).
        deadline = time.monotonic() + 30
        while server.query(sql, (digest,))[0][0] < 5 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.5)  # and nothing more comes: Django did not count its one request again
        assert server.query(sql, (digest,))[0][0] == 5
        api = httpx.get(f"{base}/api/v1/catalogs/acme/fns/versions/").json()["results"]
        assert {r["version"]: r["pulls"] for r in api}[number] == 5
    finally:
        os.killpg(collector.pid, signal.SIGTERM)
        collector.wait(timeout=20)


def test_oci_blobs_are_cached_for_anonymous_tokens_and_not_for_credentials(deployed):
    """The Docker CLI and skopeo pull public blobs with an anonymous bearer token (``/v2/`` is a
    401 challenge): those share nginx's cache with tokenless pulls. A user's credentials go to
    the registry every time, which checks them, and their answers are not kept."""
    base, server, access_log = deployed
    digest = _publish(base, server.token, "OciBlob")
    path = f"/v2/acme/fns/blobs/{digest}"
    scope = {"scope": "repository:acme/fns:pull"}
    anonymous = httpx.get(f"{base}/v2/token", params=scope).json()["token"]
    first = httpx.get(base + path, headers={"Authorization": f"Bearer {anonymous}"})
    assert first.status_code == 200 and first.headers["X-Cache-Status"] == "MISS"
    assert "sha256:" + hashlib.sha256(first.content).hexdigest() == digest
    again = httpx.get(base + path, headers={"Authorization": f"Bearer {anonymous}"})
    tokenless = httpx.get(base + path)
    assert again.headers["X-Cache-Status"] == tokenless.headers["X-Cache-Status"] == "HIT"
    assert again.content == tokenless.content == first.content
    assert _django_saw(access_log, path) == 1, "a cached request reached Django"

    basic = "Basic " + base64.b64encode(f"alice:{server.token}".encode()).decode()
    user_token = httpx.get(
        f"{base}/v2/token", params=scope, headers={"Authorization": basic}
    ).json()["token"]
    # The prefix the template matches (nginx cannot check a signature; the registry can).
    assert anonymous.startswith(ANONYMOUS_TOKEN_PREFIX)
    assert not user_token.startswith(ANONYMOUS_TOKEN_PREFIX)
    assert f'"~^Bearer {ANONYMOUS_TOKEN_PREFIX}"' in bench.NGINX_TEMPLATE.read_text()
    for authorization, status in ((basic, 200), (f"Bearer {user_token}", 200), ("Basic eDp5", 401)):
        response = httpx.get(base + path, headers={"Authorization": authorization})
        assert response.status_code == status
        assert response.headers["X-Cache-Status"] == "BYPASS"
    assert _django_saw(access_log, path) == 4
