"""Two web replicas and a worker that share no filesystem: nothing depends on local disk.

Run by deploy/ci-services.sh (CI stage 3) with PostgreSQL, Redis and the object store (moto's
S3 server, ``STORAGE_BACKEND=s3``). Two gunicorn processes start with their own MEDIA_ROOT and
working directory; a catalog published through one is read through the other (catalog.yaml,
its signature, the OCI manifest and layer through /v2/), and a mirror synced by a separate
celery worker process (its own MEDIA_ROOT too) is served, runtime blobs included, by both.
"""

from __future__ import annotations

import hashlib
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from tests.catalogs.factories import catalog_yaml
from tests.catalogs.mirroring.conftest import HttpsUpstream, exec_catalog_doc
from tests.s3_server import free_port

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60

pytestmark = [
    pytest.mark.services,
    pytest.mark.replicas,
    pytest.mark.skipif(
        os.environ.get("KRM_TEST_SERVICES") != "1" or os.environ.get("STORAGE_BACKEND") != "s3",
        reason="needs PostgreSQL, Redis and the object store: deploy/ci-services.sh sets them up",
    ),
]


def _env(home: Path, **extra: str) -> dict[str, str]:
    """This process's settings (database, broker, object store, signing key), but its own
    MEDIA_ROOT and nothing of this checkout but the code on PYTHONPATH."""
    media = home / "media"
    media.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MEDIA_ROOT": str(media), "PYTHONPATH": str(ROOT), **extra}
    env.pop("KRM_TEST_WORKER", None)
    return env


def _log(home: Path) -> str:
    """The end of a process's stderr (a file, never a pipe nobody reads)."""
    return (home / "stderr.log").read_text(errors="replace")[-3000:]


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> None:
    """Quick shutdown (gunicorn: SIGINT; celery: SIGQUIT): nothing is left to finish."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory) -> Iterator[list[str]]:
    """Two gunicorn processes, each in its own working directory with its own MEDIA_ROOT."""
    tmp_path = tmp_path_factory.mktemp("replicas")
    procs, urls = [], []
    try:
        for name in ("web-a", "web-b"):
            home = tmp_path / name
            env = _env(home)
            port = free_port()
            procs.append(
                subprocess.Popen(
                    [
                        str(Path(sys.executable).parent / "gunicorn"),
                        "registry.wsgi:application",
                        "--bind",
                        f"127.0.0.1:{port}",
                        "--workers",
                        "1",
                        "--log-level",
                        "warning",
                    ],
                    cwd=home,
                    env=env,
                    stderr=(home / "stderr.log").open("wb"),
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + TIMEOUT
        homes = [tmp_path / "web-a", tmp_path / "web-b"]
        for proc, url, home in zip(procs, urls, homes, strict=True):
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None, _log(home)
                assert time.monotonic() < deadline, f"{url} did not start"
                time.sleep(0.2)
        yield urls
    finally:
        for proc in procs:
            _stop(proc)


@pytest.fixture(scope="module")
def https_upstream(tmp_path_factory) -> Iterator[HttpsUpstream]:
    tmp_path = tmp_path_factory.mktemp("upstream")
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    ca_path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    server = HttpsUpstream(str(ca_path), context)
    yield server
    server.close()


@pytest.fixture
def mirror_worker(tmp_path, https_upstream) -> Iterator[str]:
    """A celery worker of its own (its own queue, MEDIA_ROOT and working directory) that may
    mirror from the loopback HTTPS upstream; the name of its queue."""
    from registry.celery import app

    home = tmp_path / "worker"
    queue = f"two-replicas-{uuid.uuid4().hex[:8]}"
    name = f"{queue}@localhost"
    mirror_env = {
        "MIRROR_ALLOWED_HOSTS": "127.0.0.1",
        "MIRROR_ALLOWED_NETWORKS": "127.0.0.1/32",
        "MIRROR_CA_BUNDLE": https_upstream.ca_path,
    }
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "celery"),
            "-A",
            "registry",
            "worker",
            "--queues",
            queue,
            "--hostname",
            name,
            "--concurrency",
            "1",
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        env=_env(home, **mirror_env),
        cwd=home,
        stderr=(home / "stderr.log").open("wb"),
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not app.control.ping(destination=[name], timeout=1.0):
            assert proc.poll() is None, _log(home)
            assert time.monotonic() < deadline, "the mirror worker did not answer a ping"
        yield queue
    finally:
        _stop(proc, signal.SIGQUIT)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.mark.django_db(transaction=True)
def test_publish_through_one_replica_read_through_the_other(replicas):
    from catalogs.publishing import services
    from tests.catalogs.factories import UserFactory, api_token_key

    web_a, web_b = replicas
    owner = UserFactory(username="replica-owner")
    publisher = services.publisher_create(slug="replicas", display_name="R", actor=None)
    publisher.owners.add(owner)
    services.catalog_create(publisher=publisher, name="shared", actor=None)
    token = api_token_key(owner)

    document = catalog_yaml(("example.co", "Shared", "v1"))
    published = httpx.post(
        f"{web_a}/api/v1/catalogs/replicas/shared/versions/",
        content=document,
        headers={"Content-Type": "application/yaml", "Authorization": f"Token {token}"},
        timeout=TIMEOUT,
    )
    assert published.status_code == 201, published.text
    digest = published.json()["digest"]

    with httpx.Client(base_url=web_b, timeout=TIMEOUT) as b:
        served = b.get("/c/replicas/shared/catalog.yaml")
        assert served.status_code == 200
        assert _sha256(served.content) == digest == served.headers["X-Content-Digest"]
        signature = b.get("/c/replicas/shared/catalog.yaml.sig")
        assert signature.status_code == 200 and signature.text.strip()
        manifest = b.get(
            "/v2/replicas/shared/manifests/latest",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
        )
        assert manifest.status_code == 200, manifest.text
        layer = manifest.json()["layers"][0]
        assert layer["digest"] == digest
        blob = b.get(f"/v2/replicas/shared/blobs/{digest}")
        assert blob.status_code == 200 and blob.content == served.content


@pytest.mark.django_db(transaction=True)
def test_a_mirror_synced_by_a_worker_is_served_by_both_replicas(
    replicas, mirror_worker, https_upstream, settings
):
    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring.models import SyncRun
    from registry.celery import app

    settings.MIRROR_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_CA_BUNDLE = https_upstream.ca_path
    data = b"a mirrored exec binary\n" * 500
    hexdigest = hashlib.sha256(data).hexdigest()
    doc = exec_catalog_doc([("Tool", https_upstream.serve("/bin/tool", data), hexdigest)])
    url = https_upstream.serve("/catalog.yaml", doc)
    source = mirrors.mirror_source_create(
        name="replicated", url=url, actor=None, mirror_runtimes=True
    )
    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    result = app.send_task(
        "catalogs.tasks.mirror_source_sync_task", args=[run.pk], queue=mirror_worker
    )
    reply = result.get(timeout=TIMEOUT)
    assert reply["status"] == SyncRun.Status.SUCCEEDED, reply

    for web in replicas:
        served = httpx.get(f"{web}/c/mirrors/replicated/catalog.yaml", timeout=TIMEOUT)
        assert served.status_code == 200
        assert f"/c/blobs/sha256/{hexdigest}".encode() in served.content
        blob = httpx.get(f"{web}/c/blobs/sha256/{hexdigest}", timeout=TIMEOUT)
        assert blob.status_code == 200 and blob.content == data
