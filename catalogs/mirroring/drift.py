"""Drift of a mirror source's catalog tag: an OCI tag that names another manifest than at the
last good sync raises a drift event, as a moved container image tag does."""

from __future__ import annotations

from catalogs.mirroring.models import DriftEvent, MirrorSource, SyncRun


def catalog_tag_drift_record(*, source: MirrorSource, run: SyncRun, digest: str) -> bool:
    """A DriftEvent when ``source`` is an OCI tag that moved from ``source.last_digest`` to
    ``digest`` (call before ``last_digest`` is updated); True when one was raised."""
    if not source.url.startswith("oci://") or "@" in source.url:
        return False  # a digest reference cannot move; https and git have no tags
    old = source.last_digest
    if not old or not digest or old == digest:
        return False
    DriftEvent.objects.create(
        source=source, run=run, image=source.url, old_digest=old, new_digest=digest
    )
    return True
