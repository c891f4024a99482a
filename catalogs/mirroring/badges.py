"""What a mirror's badges say about its upstream: how the last good sync verified what it
mirrored (TUF, a cosign key, a sigstore identity, or nothing), for the catalog page, the function
page and the search cards. "Signed by this registry" on a mirror only says the registry signed
what it fetched; this says whether anyone upstream vouched for it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from catalogs.mirroring.models import MirrorSource

# A sync run's verification type (catalogs.mirroring.services) -> how the badge names it.
VERIFIED_BY = {
    "tuf": "TUF",
    "cosign": "cosign key",
    "cosign-blob": "cosign key",
    "sigstore": "sigstore identity",
}


@dataclass(frozen=True)
class UpstreamCheck:
    """How a mirror's upstream was verified: ``how`` is "" when it was not."""

    how: str

    @property
    def ok(self) -> bool:
        return bool(self.how)

    @property
    def label(self) -> str:
        return f"upstream verified by {self.how}" if self.how else "upstream not verified"

    @property
    def title(self) -> str:
        if self.how:
            return (
                f"Mirrored from an upstream whose content the last sync verified by {self.how}; "
                "this registry signs what it serves."
            )
        return (
            "Mirrored from an upstream that nothing verified (no TUF metadata, key or identity "
            "configured): this registry's signature only says it served what it fetched."
        )


def upstream_check(verification_type: str | None) -> UpstreamCheck:
    """The check of a verification type ("tuf", "cosign", …; "none", "" or None: not verified)."""
    return UpstreamCheck(how=VERIFIED_BY.get(verification_type or "", ""))


def mirror_upstream_checks(*, catalog_ids: Iterable[int]) -> dict[int, UpstreamCheck]:
    """catalog id -> its mirror's upstream check, for those of ``catalog_ids`` that are mirrors
    (one query)."""
    rows = MirrorSource.objects.filter(catalog_id__in=list(catalog_ids)).values_list(
        "catalog_id", "verification"
    )
    return {
        catalog_id: upstream_check((verification or {}).get("type"))
        for catalog_id, verification in rows
    }


def mirror_upstream_check(*, catalog_id: int) -> UpstreamCheck | None:
    """The upstream check of the catalog's mirror, None when the catalog is no mirror."""
    return mirror_upstream_checks(catalog_ids=[catalog_id]).get(catalog_id)
