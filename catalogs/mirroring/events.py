"""Events of mirroring, for the apps above it (see ``catalogs.events``)."""

from __future__ import annotations

from dataclasses import dataclass

from catalogs.mirroring.models import DriftEvent, SyncRun


@dataclass(frozen=True)
class MirrorRunFailed:
    """Sync run ``run`` ended failed (its ``reason`` says why)."""

    run: SyncRun


@dataclass(frozen=True)
class MirrorDriftDetected:
    """An upstream image tag moved between two syncs of a source (``drift``)."""

    drift: DriftEvent
