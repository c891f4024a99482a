"""Rate limits per upstream host (UPSTREAM_RATE_LIMIT): a sync over the limit is deferred, not
failed, records the deferral, and completes once the window has room; the counts are shared by
processes through Redis (services stage), or kept in this process's memory otherwise."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from catalogs import ratelimits
from catalogs.exceptions import SyncInProgressError
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import SyncRun
from catalogs.publishing.models import CatalogVersion
from tests.catalogs.factories import UserFactory
from tests.catalogs.mirroring.conftest import catalog_doc

ROOT = Path(__file__).resolve().parents[3]
SERVICES = os.environ.get("KRM_TEST_SERVICES") == "1"
SERVICES_REASON = (
    "needs Redis (and PostgreSQL for the worker): set KRM_TEST_SERVICES=1 "
    "(deploy/ci-services.sh does)"
)


@pytest.fixture
def upstream_limit(settings):
    """``upstream_limit(text, **per_host)``: set the limits, with a fresh limiter store.

    In-memory unless the services stage's Redis is there; each test counts on its own hosts
    or, in memory, on a store nobody else uses.
    """

    def configure(text: str, **per_host: str) -> None:
        settings.UPSTREAM_RATE_LIMIT = text
        settings.UPSTREAM_RATE_LIMITS = per_host
        ratelimits.upstream_limiter.cache_clear()

    yield configure
    ratelimits.upstream_limiter.cache_clear()


def unique_host() -> str:
    return f"h{uuid.uuid4().hex[:12]}.example.co"


# ----------------------------------------------------------------------------- the limiter


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://Mirror.Example.co:8443/c.yaml", "mirror.example.co"),
        ("git+https://git.example.co/org/repo.git//catalog.yaml?ref=v1", "git.example.co"),
        ("oci://127.0.0.1:5000/catalogs/demo:v1", "127.0.0.1"),
        ("/srv/git/repo//catalog.yaml", None),
        ("file:///srv/catalog.yaml", None),
    ],
)
def test_the_host_a_url_reads_from(url, host):
    assert ratelimits.upstream_host(url) == host


def test_at_most_r_starts_per_host_in_any_window(upstream_limit, settings):
    settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    upstream_limit("2/second")
    one, other = unique_host(), unique_host()
    urls = [f"https://{one}/a.yaml"]
    assert ratelimits.upstream_hosts_admit(urls=urls) is None
    assert ratelimits.upstream_hosts_admit(urls=urls) is None
    deferral = ratelimits.upstream_hosts_admit(urls=urls)
    assert deferral is not None
    assert (deferral.host, deferral.limit) == (one, "2 per 1 second")
    # Until the oldest start leaves the window (plus at most a quarter window of jitter).
    assert 0.1 <= deferral.retry_after <= 1.3
    assert deferral.message.startswith(f"Upstream host {one} is at its rate limit (2 per 1 second)")
    # Another host has its own budget.
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{other}/b.yaml"]) is None
    time.sleep(deferral.retry_after)
    assert ratelimits.upstream_hosts_admit(urls=urls) is None


def test_a_deferred_run_spends_no_other_hosts_budget(upstream_limit, settings):
    settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    full, free = unique_host(), unique_host()
    upstream_limit("1/minute")
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{full}/x"]) is None
    both = [f"https://{free}/runtime", f"https://{full}/example.yaml"]
    deferral = ratelimits.upstream_hosts_admit(urls=both)
    assert deferral is not None and deferral.host == full
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{free}/runtime"]) is None


def test_per_host_limits_and_exemptions(upstream_limit, settings):
    settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    busy, exempt, default = unique_host(), unique_host(), unique_host()
    upstream_limit("1/minute", **{busy: "3/minute", exempt: ""})
    assert [ratelimits.upstream_hosts_admit(urls=[f"https://{busy}/c"]) for _ in range(3)] == [
        None
    ] * 3
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{busy}/c"]) is not None
    assert all(
        ratelimits.upstream_hosts_admit(urls=[f"https://{exempt}/c"]) is None for _ in range(20)
    )
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{default}/c"]) is None
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{default}/c"]) is not None


def test_no_limit_configured_admits_everything(upstream_limit):
    upstream_limit("")
    host = unique_host()
    assert all(
        ratelimits.upstream_hosts_admit(urls=[f"https://{host}/c"]) is None for _ in range(50)
    )


def test_an_unreachable_store_admits_and_warns(upstream_limit, settings, caplog):
    """A rate limiter that is down must not stop mirroring (port 9 on loopback: nothing)."""
    settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "redis://127.0.0.1:9/0"
    upstream_limit("1/minute")
    assert ratelimits.upstream_hosts_admit(urls=[f"https://{unique_host()}/c"]) is None
    assert "upstream rate limits could not be read, admitting the run" in caplog.text


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"UPSTREAM_RATE_LIMIT": "ten a second"},
            "UPSTREAM_RATE_LIMIT: 'ten a second' is not a rate limit; write it like "
            "'10/second', '120/minute' or '1 per 2 seconds'.",
        ),
        (
            {"UPSTREAM_RATE_LIMITS": '{"github.com": "5/fortnight"}'},
            "UPSTREAM_RATE_LIMITS['github.com']: '5/fortnight' is not a rate limit; write it like "
            "'10/second', '120/minute' or '1 per 2 seconds'.",
        ),
        (
            {"UPSTREAM_RATE_LIMITS": '["github.com"]'},
            "UPSTREAM_RATE_LIMITS must be a JSON object of host to limit, "
            'e.g. {"github.com": "5/second"}.',
        ),
    ],
)
def test_a_bad_rate_limit_stops_the_settings_with_its_name(env, message):
    from tests.registry.conftest import _run

    proc = _run("registry.settings.base", env)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        f"django.core.exceptions.ImproperlyConfigured: {message}"
    )


# ----------------------------------------------------------------------------- sync runs


@pytest.mark.django_db
def test_a_deferred_run_is_recorded_stays_queued_and_reads_nothing(
    mirror_settings, https_upstream, upstream_limit
):
    mirror_settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    upstream_limit("1/minute")
    url = https_upstream.serve("/held.yaml", catalog_doc("held"))
    source = mirrors.mirror_source_create(name="held", url=url, actor=None)
    assert ratelimits.upstream_hosts_admit(urls=[url]) is None  # another run took the slot
    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)

    deferral = mirrors.sync_run_admit(run_pk=run.pk)

    assert deferral is not None and deferral.host == "127.0.0.1"
    run.refresh_from_db()
    assert (run.status, run.deferrals, run.reason) == ("queued", 1, "")
    assert run.deferred_until is not None and run.deferred_until > run.queued_at
    assert https_upstream.requests == []
    assert not CatalogVersion.objects.filter(catalog=source.catalog).exists()
    # A second sync request is refused as usual: the deferred run is alive, not stale, even
    # when it was queued longer ago than MIRROR_RUN_STALE_MINUTES (its deferral is recent).
    long_ago = run.queued_at - timedelta(minutes=mirror_settings.MIRROR_RUN_STALE_MINUTES + 5)
    SyncRun.objects.filter(pk=run.pk).update(queued_at=long_ago)
    with pytest.raises(SyncInProgressError, match="already has run"):
        mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    assert SyncRun.objects.get(pk=run.pk).status == "queued"
    # The API and the source's page show it.
    staff = APIClient()
    staff.force_authenticate(UserFactory(username="operator", is_staff=True))
    [shown] = staff.get(f"/api/v1/sources/{source.pk}/runs/").json()["results"]
    assert (shown["status"], shown["deferrals"]) == ("queued", 1)
    assert shown["deferred_until"]
    client = Client()
    client.force_login(UserFactory(username="operator-web", is_staff=True))
    page = client.get(f"/mirrors/{source.pk}/").content.decode()
    assert "held back 1× by an upstream rate limit" in page


@pytest.mark.django_db
def test_a_sync_over_the_limit_waits_then_completes(
    mirror_settings, https_upstream, upstream_limit, sync
):
    """Eager tasks (no broker) wait in place; the run records its deferrals and succeeds."""
    mirror_settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    # A window the first sync always ends within, even on a busy machine (with "1/second" a
    # first sync slower than a second left nothing to defer).
    upstream_limit("1 per 3 seconds")
    first = mirrors.mirror_source_create(
        name="first", url=https_upstream.serve("/first.yaml", catalog_doc("first")), actor=None
    )
    second = mirrors.mirror_source_create(
        name="second", url=https_upstream.serve("/second.yaml", catalog_doc("second")), actor=None
    )
    started = time.monotonic()
    one = sync(first)
    two = sync(second)
    elapsed = time.monotonic() - started

    assert (one.status, one.deferrals) == ("succeeded", 0)
    assert two.status == "succeeded", two.reason
    assert two.deferrals >= 1
    assert elapsed >= 2.9  # the second start waited for the first to leave the window
    for source in (first, second):
        assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 1


@pytest.mark.django_db
def test_a_finished_run_is_admitted_without_spending_a_slot(
    mirror_settings, https_upstream, upstream_limit, sync
):
    mirror_settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    upstream_limit("1/minute")
    url = https_upstream.serve("/done.yaml", catalog_doc("done"))
    source = mirrors.mirror_source_create(name="done", url=url, actor=None)
    run = sync(source)
    assert run.status == "succeeded"
    # A redelivered job of a finished run: nothing to do, so no slot and no deferral.
    assert mirrors.sync_run_admit(run_pk=run.pk) is None
    assert SyncRun.objects.get(pk=run.pk).deferrals == 0


# ----------------------------------------------------------------------------- across processes

COUNT_ADMITTED = """
import json, os, sys, time
import django
django.setup()
from catalogs import ratelimits
host, start = sys.argv[1], float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))  # both processes begin together
admitted = sum(
    ratelimits.upstream_hosts_admit(urls=[f"https://{host}/catalog.yaml"]) is None
    for _ in range(10)
)
print(json.dumps({"admitted": admitted, "store": ratelimits.upstream_storage_url()}))
"""


@pytest.mark.services
@pytest.mark.skipif(not SERVICES, reason=SERVICES_REASON)
def test_two_processes_share_one_budget_per_host():
    host = unique_host()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registry.settings.test",
        "KRM_TEST_SERVICES": "1",
        "UPSTREAM_RATE_LIMIT": "4/minute",
        "PYTHONPATH": str(ROOT),
    }
    start = str(time.time() + 3)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", COUNT_ADMITTED, host, start],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.splitlines()[-1]))
    assert all(r["store"].startswith("redis://") for r in results), results
    # 20 attempts in two processes, 4 slots on the host in all: the budget is shared.
    assert sum(r["admitted"] for r in results) == 4, results


@pytest.mark.services
@pytest.mark.skipif(not SERVICES, reason=SERVICES_REASON)
@pytest.mark.django_db(transaction=True)
def test_a_worker_defers_a_sync_over_the_limit_and_later_completes_it(
    https_upstream, tmp_path, upstream_limit, settings
):
    """A real worker: the job is retried through the broker (countdown), the run is not failed."""
    from catalogs.mirroring import tasks
    from registry.celery import app
    from tests.catalogs.mirroring.test_sync_sigkill import start_worker, wait_for

    limit = "1 per 6 seconds"
    upstream_limit(limit)  # this process counts in the same Redis store as the worker
    url = https_upstream.serve("/deferred.yaml", catalog_doc("deferred"))
    # Creation checks the policy and the certificate (a TLS handshake, no request): as the worker.
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_CA_BUNDLE = https_upstream.ca_path
    source = mirrors.mirror_source_create(name="deferred", url=url, actor=None)
    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    queue = f"mirror-ratelimit-{os.getpid()}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registry.settings.test",
        "KRM_TEST_SERVICES": "1",
        "MIRROR_ALLOWED_NETWORKS": "127.0.0.1/32",
        "MIRROR_CA_BUNDLE": https_upstream.ca_path,
        "MEDIA_ROOT": str(tmp_path / "media"),
        "UPSTREAM_RATE_LIMIT": limit,
    }
    log = tmp_path / "worker.log"
    name = f"ratelimit-{os.getpid()}"
    worker = start_worker(name, queue, env, log)
    try:
        wait_for(
            lambda: app.control.ping(destination=[f"{name}@{socket.gethostname()}"], timeout=1),
            "the worker to answer a ping",
            log,
        )
        # The host's only slot is taken just before the job arrives: the worker must defer it.
        assert ratelimits.upstream_hosts_admit(urls=[url]) is None
        tasks.mirror_source_sync_task.apply_async((run.pk,), queue=queue)
        wait_for(
            lambda: SyncRun.objects.get(pk=run.pk).deferrals >= 1, "the run to be deferred", log
        )
        held = SyncRun.objects.get(pk=run.pk)
        assert held.status == "queued"
        assert not any(path == "/deferred.yaml" for path, _ in https_upstream.requests)
        wait_for(
            lambda: SyncRun.objects.get(pk=run.pk).status in ("succeeded", "failed"),
            "the deferred run to finish",
            log,
        )
        done = SyncRun.objects.get(pk=run.pk)
        assert (done.status, done.reason) == ("succeeded", "")
        assert done.deferrals >= 1
        assert done.started_at >= held.deferred_until - timedelta(seconds=1)
        assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 1
        assert "Retry in" in log.read_text()  # celery retried the job; it did not fail it
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(timeout=10)


def test_deferred_jobs_are_retried_without_a_cap():
    """Celery gives up after ``max_retries`` (3 by default): a deferral must never fail a run."""
    from catalogs.mirroring import tasks
    from catalogs.review import tasks as review_tasks

    assert tasks.mirror_source_sync_task.max_retries is None
    assert review_tasks.contribution_trials_run_task.max_retries is None
