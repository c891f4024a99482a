"""Celery tasks of mirroring: sync runs, the scheduled syncs and the storage GC.

Late acknowledgement for sync runs: a worker killed mid-run leaves the message in the queue, the
next worker restarts the run, and a finished run is never redone. Task names are explicit and
kept from the single-app layout (queued messages and celery beat entries still find them).
"""

from __future__ import annotations

from celery import Task, shared_task

from catalogs.exceptions import SyncInProgressError
from catalogs.mirroring import services as mirrors
from catalogs.ratelimits import task_wait_for_upstream


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=None,
    name="catalogs.tasks.mirror_source_sync_task",
)
def mirror_source_sync_task(self: Task, run_pk: int) -> dict:
    """Execute the queued sync run ``run_pk`` once its upstream host's rate limit allows."""
    task_wait_for_upstream(self, lambda: mirrors.sync_run_admit(run_pk=run_pk))
    run = mirrors.sync_run_execute(run_pk=run_pk)
    return {"run": run.pk, "status": run.status, "reason": run.reason, "digest": run.digest}


@shared_task(name="catalogs.tasks.mirror_sources_sync_due_task")
def mirror_sources_sync_due_task() -> dict:
    """Queue a sync of every enabled source whose interval has passed (run by celery beat)."""
    queued = []
    for source in mirrors.mirror_sources_due():
        try:
            queued.append(mirrors.mirror_source_sync_request(source=source, actor=None).pk)
        except SyncInProgressError:
            continue
    return {"queued": queued}


@shared_task(name="catalogs.tasks.blobs_garbage_collect_task")
def blobs_garbage_collect_task() -> dict:
    """The storage GC (celery beat, every 15 minutes): stale OCI upload sessions, uploaded blobs
    no manifest references, and stored objects no row names past BLOB_GC_GRACE_MINUTES."""
    collected = mirrors.blob_garbage_collect()
    return {
        "deleted": collected.deleted,
        "kept_young": len(collected.kept_young),
        "sessions": collected.sessions,
        "oci_blobs": collected.oci_blobs,
    }


@shared_task(name="catalogs.tasks.oci_uploads_gc_task")
def oci_uploads_gc_task() -> dict:
    """The name the OCI upload GC had before it joined the storage GC (queued messages)."""
    return blobs_garbage_collect_task()  # type: ignore[no-any-return]
