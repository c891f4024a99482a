"""Celery tasks: take primary keys and plain data, call one service, return JSON-ready results."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

from celery import Task, shared_task

from catalogs import services
from catalogs.models import Catalog, CatalogVersion
from catalogs.ratelimits import Deferral


@shared_task
def catalog_version_publish_task(catalog_pk: int, content: str) -> dict:
    """Publish ``content`` to catalog ``catalog_pk`` as a system caller."""
    catalog = Catalog.objects.select_related("publisher").get(pk=catalog_pk)
    version, created = services.catalog_version_publish(
        catalog=catalog, content=content, actor=None
    )
    return {"version": version.number, "digest": version.digest, "created": created}


@shared_task
def catalog_version_verify_task(version_pk: int) -> dict:
    """Re-hash a stored version's bytes and report whether they still match its digest."""
    version = CatalogVersion.objects.get(pk=version_pk)
    from catalogs import blobstore

    content = blobstore.blob_read(version.digest) or b""
    actual = "sha256:" + hashlib.sha256(content).hexdigest()
    return {"version": version.number, "digest": version.digest, "ok": actual == version.digest}


def _wait_for_upstream(task: Task, admit: Callable[[], Deferral | None]) -> int:
    """Call ``admit`` until an upstream host's rate limit lets the run start; deferrals so far.

    With a broker the task is retried after the deferral (the worker is free meanwhile, and the
    run is not failed); eager tasks have no queue to come back through, so they wait here.
    """
    waited = 0
    while (deferral := admit()) is not None:
        if not task.request.is_eager:
            raise task.retry(countdown=deferral.retry_after)
        waited += 1
        time.sleep(deferral.retry_after)
    return (task.request.retries or 0) + waited


# Unbounded retries: only a rate-limit deferral retries these, and each one waits for a free slot.
@shared_task(bind=True, max_retries=None)
def contribution_trials_run_task(self: Task, contribution_pk: int) -> dict:
    """Run a contribution's function in the trial sandbox and record the runs."""
    from catalogs import trials
    from catalogs.models import Contribution

    contribution = Contribution.objects.get(pk=contribution_pk)
    deferrals = _wait_for_upstream(
        self, lambda: trials.contribution_trials_admit(contribution=contribution)
    )
    runs = trials.contribution_trials_run(contribution=contribution, deferrals=deferrals)
    return {"runs": [r.pk for r in runs], "flagged": any(r.flagged for r in runs)}


# --- Mirroring (issue 6). Late acknowledgement: a worker killed mid-run leaves the message in
# the queue, the next worker restarts the run, and a finished run is never redone. ---


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def mirror_source_sync_task(self: Task, run_pk: int) -> dict:
    """Execute the queued sync run ``run_pk`` once its upstream host's rate limit allows."""
    from catalogs import mirrors

    _wait_for_upstream(self, lambda: mirrors.sync_run_admit(run_pk=run_pk))
    run = mirrors.sync_run_execute(run_pk=run_pk)
    return {"run": run.pk, "status": run.status, "reason": run.reason, "digest": run.digest}


@shared_task
def mirror_sources_sync_due_task() -> dict:
    """Queue a sync of every enabled source whose interval has passed (run by celery beat)."""
    from catalogs import mirrors
    from catalogs.exceptions import SyncInProgressError

    queued = []
    for source in mirrors.mirror_sources_due():
        try:
            queued.append(mirrors.mirror_source_sync_request(source=source, actor=None).pk)
        except SyncInProgressError:
            continue
    return {"queued": queued}


@shared_task
def blobs_garbage_collect_task() -> dict:
    """The storage GC (celery beat, every 15 minutes): stale OCI upload sessions, uploaded blobs
    no manifest references, and stored objects no row names past BLOB_GC_GRACE_MINUTES."""
    from catalogs import mirrors

    collected = mirrors.blob_garbage_collect()
    return {
        "deleted": collected.deleted,
        "kept_young": len(collected.kept_young),
        "sessions": collected.sessions,
        "oci_blobs": collected.oci_blobs,
    }


@shared_task
def oci_uploads_gc_task() -> dict:
    """The name the OCI upload GC had before it joined the storage GC (queued messages)."""
    return blobs_garbage_collect_task()  # type: ignore[no-any-return]
