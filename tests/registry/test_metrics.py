"""/metrics: who may read it, the figures moving after a publish, N gunicorn processes as one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.catalogs.factories import catalog_yaml

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"


def samples(body: bytes | str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels."""
    text = body.decode() if isinstance(body, bytes) else body
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(client, **extra) -> dict:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return samples(response.content)


@pytest.mark.django_db
def test_metrics_refused_to_other_addresses(client):
    response = client.get("/metrics", REMOTE_ADDR="192.0.2.10")
    assert response.status_code == 403
    assert b"METRICS_ALLOWED_IPS" in response.content
    assert b"krm_" not in response.content


@pytest.mark.django_db
def test_metrics_allowed_network_and_token(client, settings):
    settings.METRICS_ALLOWED_IPS = ["192.0.2.0/24"]
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.10").status_code == 200
    # Loopback is no longer on the list.
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403
    settings.METRICS_TOKEN = "scrape-me"
    ok = client.get("/metrics", REMOTE_ADDR="198.51.100.1", HTTP_AUTHORIZATION="Bearer scrape-me")
    assert ok.status_code == 200
    bad = client.get("/metrics", REMOTE_ADDR="198.51.100.1", HTTP_AUTHORIZATION="Bearer nope")
    assert bad.status_code == 403


def test_bad_metrics_allowed_ips_stops_the_settings(load_settings):
    from tests.registry.conftest import _run

    proc = _run("registry.settings.base", {"METRICS_ALLOWED_IPS": "10.0.0.0/8,not-an-ip"})
    assert proc.returncode != 0
    assert "METRICS_ALLOWED_IPS: 'not-an-ip' is not an IP address or network." in proc.stderr


@pytest.mark.django_db
def test_publish_moves_the_counters(client, owner, catalog, settings):
    before = scrape(client)
    assert before[("krm_database_up", ())] == 1
    # Eager tasks: no broker backlog to report; a Redis broker (services stage) has one.
    has_depth = any(name == "krm_queue_depth" for name, _ in before)
    assert has_depth is not settings.CELERY_TASK_ALWAYS_EAGER
    client.force_login(owner)
    document = catalog_yaml(("example.co", "SetLabels", "v1"))
    response = client.post(VERSIONS, document, content_type="application/yaml")
    assert response.status_code == 201
    size = len(client.get("/c/example-co/functions/catalog.yaml").content)

    after = scrape(client)

    assert after[("krm_catalog_versions", ())] == before[("krm_catalog_versions", ())] + 1
    kind = ("krm_storage_bytes", (("kind", "catalog_versions"),))
    assert after[kind] == before[kind] + size
    # Counters live as long as the process (other tests in it have posted too): compare deltas.
    publish = [
        value - before.get((name, labels), 0.0)
        for (name, labels), value in after.items()
        if name == "krm_http_requests_total"
        and dict(labels)["method"] == "POST"
        and dict(labels)["status"] == "201"
        and value != before.get((name, labels), 0.0)
    ]
    assert publish == [1.0]
    assert ("krm_sync_runs", (("status", "succeeded"),)) in after


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gunicorn_processes_are_counted_together(tmp_path):
    """Two gunicorn workers with PROMETHEUS_MULTIPROC_DIR: a scrape adds up both processes."""
    multiproc = tmp_path / "prometheus"
    multiproc.mkdir()
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KRM_", "CELERY_"))},
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        # A database with no tables: the request counters are still served, and say so.
        "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "SIGNING_KEY_FILE": str(tmp_path / "signing-key.pem"),
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "registry.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "2"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/readyz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.2)
        # A new connection per request, until both workers have answered some (bounded).
        sent = 0
        while sent < 40 or len(list(multiproc.glob("counter_*.db"))) < 2:
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
            sent += 1
            assert sent < 1000, "one gunicorn worker answered every request"
        scraped = samples(httpx.get(f"{url}/metrics", timeout=10).text)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    # Every healthz request, whichever process answered it.
    labels = (("method", "GET"), ("status", "200"), ("view", "healthz"))
    healthz = ("krm_http_requests_total", labels)
    assert scraped[healthz] == sent
    assert scraped[("krm_database_up", ())] == 0


@pytest.mark.django_db
def test_queue_depth_counts_the_redis_backlog(client, settings, redis_url):
    from registry.celery import app

    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_url
    assert scrape(client)[("krm_queue_depth", (("queue", "celery"),))] == 0
    # Three real task messages, as a web process would enqueue them with no worker running.
    with app.connection_for_write(redis_url) as conn:
        for _ in range(3):
            app.send_task("catalogs.tasks.oci_uploads_gc_task", connection=conn)
    # Routed to the housekeeping queue (CELERY_TASK_ROUTES); the default queue stays empty.
    depth = scrape(client)
    assert depth[("krm_queue_depth", (("queue", "housekeeping"),))] == 3
    assert depth[("krm_queue_depth", (("queue", "celery"),))] == 0
    # /readyz sees this broker too.
    assert client.get("/readyz").json()["checks"]["broker"]["status"] == "ok"
