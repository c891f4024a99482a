"""Events of distribution, for the apps above it (see ``catalogs.events``)."""

from __future__ import annotations

from dataclasses import dataclass

from catalogs.distribution.models import OciManifest


@dataclass(frozen=True)
class OciPackagePushed:
    """A kustomization package's manifest was stored (in the push transaction)."""

    manifest: OciManifest
