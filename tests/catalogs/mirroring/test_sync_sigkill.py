"""A real Celery worker SIGKILLed in the middle of a sync: after a worker restarts, the run
completes and exactly one new version exists (PostgreSQL + Redis stage, deploy/ci-services.sh).

The test starts its own workers on a private queue, so killing one never disturbs the stage's
shared worker. The upstream holds its response until the first worker is dead, so the kill
lands mid-fetch, with the job delivered and not yet acknowledged.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.catalogs.mirroring.conftest import catalog_doc

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(
        os.environ.get("KRM_TEST_SERVICES") != "1",
        reason="needs PostgreSQL, Redis and real celery workers: set KRM_TEST_SERVICES=1 "
        "(deploy/ci-services.sh does)",
    ),
]

ROOT = Path(__file__).resolve().parents[3]
VISIBILITY_TIMEOUT = 3
WAIT = 90


def start_worker(name: str, queue: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    handle = open(log, "ab")  # noqa: SIM115  (owned by the worker process until it exits)
    return subprocess.Popen(
        [
            str(Path(sys.executable).with_name("celery")),
            "-A",
            "registry",
            "worker",
            "-Q",
            queue,
            "--concurrency",
            "1",
            "--hostname",
            f"{name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the kill takes the pool child too
    )


def wait_for(predicate, what: str, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; worker log:\n" + log.read_text())
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_sync_then_restarted_publishes_once(https_upstream, tmp_path, settings):
    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring import tasks
    from catalogs.mirroring.models import SyncRun
    from catalogs.publishing.models import CatalogVersion

    doc = catalog_doc("survivor")
    gate = threading.Event()
    url = https_upstream.serve("/catalog.yaml", doc, gate=gate)
    # Creation checks the policy and the certificate (a TLS handshake, no request): as the worker.
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_CA_BUNDLE = https_upstream.ca_path
    source = mirrors.mirror_source_create(name="survivor", url=url, actor=None)
    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    queue = f"mirror-sigkill-{os.getpid()}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "registry.settings.test",
        "KRM_TEST_SERVICES": "1",
        "MIRROR_ALLOWED_NETWORKS": "127.0.0.1/32",
        "MIRROR_CA_BUNDLE": https_upstream.ca_path,
        "MIRROR_TIMEOUT": "120",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
    }
    log = tmp_path / "workers.log"
    first = start_worker(f"sigkill-first-{os.getpid()}", queue, env, log)
    second = None
    try:
        tasks.mirror_source_sync_task.apply_async((run.pk,), queue=queue)
        wait_for(
            lambda: any(path == "/catalog.yaml" for path, _ in https_upstream.requests),
            "the first worker to start fetching",
            log,
        )
        assert SyncRun.objects.get(pk=run.pk).status == "running"

        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        killed = SyncRun.objects.get(pk=run.pk)
        assert (killed.status, killed.attempts) == ("running", 1)
        assert not CatalogVersion.objects.filter(catalog=source.catalog).exists()

        gate.set()
        # Redis hands an unacknowledged job back once it is older than the visibility timeout.
        time.sleep(VISIBILITY_TIMEOUT + 1)
        second = start_worker(f"sigkill-second-{os.getpid()}", queue, env, log)
        wait_for(
            lambda: SyncRun.objects.get(pk=run.pk).status in ("succeeded", "failed"),
            "the restarted worker to finish the run",
            log,
        )
        finished = SyncRun.objects.get(pk=run.pk)
        assert (finished.status, finished.reason, finished.attempts) == ("succeeded", "", 2)
        assert CatalogVersion.objects.filter(catalog=source.catalog).count() == 1
        assert finished.catalog_version.number == 1
    finally:
        gate.set()
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait(timeout=10)
