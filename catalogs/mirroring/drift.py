"""Drift of a mirror source's own tag: an OCI tag (of a catalog or a kustomization package) that
names another manifest than at the last good sync raises a drift event, as a moved container
image tag does, and tells the apps above (``MirrorDriftDetected``)."""

from __future__ import annotations

from catalogs import events
from catalogs.mirroring.events import MirrorDriftDetected
from catalogs.mirroring.models import DriftEvent, MirrorSource, SyncRun


def catalog_tag_drift_record(*, source: MirrorSource, run: SyncRun, digest: str) -> bool:
    """A DriftEvent when ``source`` is an OCI tag that moved from ``source.last_digest`` to
    ``digest`` (call before ``last_digest`` is updated); True when one was raised."""
    if not source.url.startswith("oci://") or "@" in source.url:
        return False  # a digest reference cannot move; https and git have no tags
    old = source.last_digest
    if not old or not digest or old == digest:
        return False
    drift = DriftEvent.objects.create(
        source=source, run=run, image=source.url, old_digest=old, new_digest=digest
    )
    events.emit(MirrorDriftDetected(drift=drift))
    return True
