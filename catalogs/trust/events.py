"""Events of trust, for the apps above it (see ``catalogs.events``)."""

from __future__ import annotations

from dataclasses import dataclass

from catalogs.trust.models import Revocation


@dataclass(frozen=True)
class RevocationCreated:
    """``revocation`` was recorded and its list sequence published (in that transaction)."""

    revocation: Revocation
