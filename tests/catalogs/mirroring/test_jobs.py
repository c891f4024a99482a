"""Jobs: the Celery tasks, the beat schedule and ``manage.py sync_source``."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from catalogs.exceptions import SyncInProgressError
from catalogs.mirroring import services as mirrors
from catalogs.mirroring import tasks
from catalogs.mirroring.models import MirrorSource, SyncRun
from tests.catalogs.mirroring.conftest import catalog_doc, exec_catalog_doc, sha256

pytestmark = pytest.mark.django_db


def test_sync_task_acknowledges_late():
    task = tasks.mirror_source_sync_task
    assert task.acks_late is True
    assert task.reject_on_worker_lost is True


def test_beat_schedules_due_syncs():
    from registry.celery import app

    entry = app.conf.beat_schedule["mirror-sources-sync-due"]
    assert entry["task"] == "catalogs.tasks.mirror_sources_sync_due_task"
    assert entry["task"] in app.tasks


def test_due_task_queues_only_due_enabled_sources(
    mirror_settings, https_upstream, django_capture_on_commit_callbacks
):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    fresh = mirrors.mirror_source_create(name="fresh", url=url, actor=None, interval_minutes=60)
    stale = mirrors.mirror_source_create(name="stale", url=url, actor=None, interval_minutes=60)
    never = mirrors.mirror_source_create(name="never", url=url, actor=None)
    off = mirrors.mirror_source_create(name="off", url=url, actor=None, enabled=False)
    now = timezone.now()
    MirrorSource.objects.filter(pk=fresh.pk).update(last_synced_at=now - timedelta(minutes=5))
    MirrorSource.objects.filter(pk=stale.pk).update(last_synced_at=now - timedelta(minutes=61))

    with django_capture_on_commit_callbacks(execute=True):
        result = tasks.mirror_sources_sync_due_task.delay().get()

    synced = {run.source.name: run.status for run in SyncRun.objects.select_related("source")}
    assert synced == {"stale": "succeeded", "never": "succeeded"}
    assert sorted(result["queued"]) == sorted(SyncRun.objects.values_list("pk", flat=True))
    assert off.runs.count() == 0 and fresh.runs.count() == 0 and never.runs.count() == 1


def test_redelivered_finished_run_is_not_redone(mirror_settings, https_upstream, sync):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    run = sync(mirrors.mirror_source_create(name="once", url=url, actor=None))
    requests_before = len(https_upstream.requests)

    again = tasks.mirror_source_sync_task.delay(run.pk).get()

    assert again["status"] == "succeeded"
    assert len(https_upstream.requests) == requests_before
    assert SyncRun.objects.get(pk=run.pk).attempts == 1


def test_sync_source_command(mirror_settings, https_upstream, capsys):
    doc = catalog_doc("cli")
    url = https_upstream.serve("/catalog.yaml", doc)
    mirrors.mirror_source_create(name="cli", url=url, actor=None)

    call_command("sync_source", "cli")

    run = SyncRun.objects.get()
    out = capsys.readouterr().out
    assert out.strip() == (
        f"Run {run.pk} of 'cli' succeeded: version 1, upstream {sha256(doc)}, 1 function, "
        f"0 artifacts, {len(doc)} bytes"
    )
    # Unchanged upstream: the served version still holds its one function.
    call_command("sync_source", "cli")
    again = SyncRun.objects.latest("pk")
    assert capsys.readouterr().out.strip() == (
        f"Run {again.pk} of 'cli' unchanged: version 1, upstream {sha256(doc)}, 1 function, "
        "0 artifacts, 0 bytes"
    )
    assert again.function_count == 1


def test_sync_source_command_shows_progress_on_a_terminal(mirror_settings, https_upstream):
    """A real pseudo-terminal as stderr: the rich bar renders each stage, --no-progress none."""
    data = b"binary" * 1000
    bin_url = https_upstream.serve("/bin/tool", data)
    doc = exec_catalog_doc([("Tool", bin_url, hashlib.sha256(data).hexdigest())])
    url = https_upstream.serve("/catalog.yaml", doc)
    mirrors.mirror_source_create(name="bar", url=url, actor=None, mirror_runtimes=True)
    mirrors.mirror_source_create(name="quiet", url=url, actor=None, mirror_runtimes=True)

    def on_terminal(*args: str) -> str:
        master, replica = os.openpty()
        chunks: list[bytes] = []

        def drain() -> None:
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the terminal's last writer closed it
                    return
                if not chunk:
                    return
                chunks.append(chunk)

        reader = threading.Thread(target=drain)
        reader.start()
        with open(replica, "w", encoding="utf-8") as tty:
            call_command("sync_source", *args, stderr=tty, stdout=io.StringIO())
        reader.join(timeout=10)
        os.close(master)
        return b"".join(chunks).decode("utf-8", "replace")

    shown = on_terminal("bar")
    assert "fetch" in shown and "artifacts" in shown and "1/1" in shown
    assert on_terminal("quiet", "--no-progress") == ""
    assert list(SyncRun.objects.values_list("status", flat=True)) == ["succeeded"] * 2


def test_sync_source_command_failure_and_unknown_name(mirror_settings, https_upstream):
    url = https_upstream.serve("/broken.yaml", b"x", status=500)
    mirrors.mirror_source_create(name="broken", url=url, actor=None)
    with pytest.raises(CommandError) as err:
        call_command("sync_source", "broken", "--no-progress")
    run = SyncRun.objects.get()
    assert str(err.value) == f"Run {run.pk} of 'broken' failed: GET {url} answered HTTP 500"
    with pytest.raises(CommandError) as err:
        call_command("sync_source", "nope")
    assert str(err.value) == "Mirror source 'nope' does not exist."


def test_a_lost_run_is_abandoned_after_the_stale_limit(mirror_settings, https_upstream, sync):
    url = https_upstream.serve("/catalog.yaml", catalog_doc())
    source = mirrors.mirror_source_create(name="lost", url=url, actor=None)
    lost = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    SyncRun.objects.filter(pk=lost.pk).update(status="running", started_at=timezone.now())
    with pytest.raises(SyncInProgressError):
        mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    old = timezone.now() - timedelta(minutes=mirror_settings.MIRROR_RUN_STALE_MINUTES + 1)
    SyncRun.objects.filter(pk=lost.pk).update(started_at=old)

    run = sync(source)

    assert run.status == "succeeded"
    lost.refresh_from_db()
    assert (lost.status, lost.reason) == (
        "failed",
        f"Abandoned: no result after {mirror_settings.MIRROR_RUN_STALE_MINUTES} minutes "
        "(the job was lost).",
    )
