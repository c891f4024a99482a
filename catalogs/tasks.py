"""Celery tasks: take primary keys and plain data, call one service, return JSON-ready results."""

from __future__ import annotations

import hashlib

from celery import shared_task

from catalogs import services
from catalogs.models import Catalog, CatalogVersion


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


@shared_task
def contribution_trials_run_task(contribution_pk: int) -> dict:
    """Run a contribution's function in the trial sandbox and record the runs."""
    from catalogs import trials
    from catalogs.models import Contribution

    contribution = Contribution.objects.get(pk=contribution_pk)
    runs = trials.contribution_trials_run(contribution=contribution)
    return {"runs": [r.pk for r in runs], "flagged": any(r.flagged for r in runs)}


# --- Mirroring (issue 6). Late acknowledgement: a worker killed mid-run leaves the message in
# the queue, the next worker restarts the run, and a finished run is never redone. ---


@shared_task(acks_late=True, reject_on_worker_lost=True)
def mirror_source_sync_task(run_pk: int) -> dict:
    """Execute the queued sync run ``run_pk``."""
    from catalogs import mirrors

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
