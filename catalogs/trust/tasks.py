"""Celery tasks of trust: keeping the TUF repository's metadata fresh (run by Celery beat)."""

from __future__ import annotations

from celery import shared_task

from catalogs.trust import services, tuf


@shared_task(name="catalogs.tasks.tuf_refresh_task")
def tuf_refresh_task() -> dict:
    """Re-sign the TUF metadata that passed half of its lifetime (the timestamp above all)."""
    services.tuf_repository_ensure()
    signed = tuf.tuf_refresh()
    row = tuf.current("timestamp")
    return {
        "signed": signed,
        "timestamp_version": row.version if row else None,
        "expires": row.expires.isoformat() if row else None,
    }
