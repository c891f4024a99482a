"""Which shown function versions are revoked: for the search results, the function page and the
catalog page, so that nothing revoked is offered as if it were good.

A version is revoked by an entry naming it (group, kind, version) in its catalog's revocations,
or by one naming the sha256 of a runtime it uses (trust's ``runtime_digests``). Revocations are
few; the versions' runtimes are read only for catalogs that have a runtime digest revoked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from catalogs.publishing.models import FunctionVersion
from catalogs.trust.models import Revocation
from catalogs.trust.revocations import runtime_digests


@dataclass(frozen=True)
class Revoked:
    """One revoked version as the pages and the API show it."""

    catalog_id: int
    version: str
    reason: str
    detail: str
    replacement: str
    runtime_digest: str  # "" when the version itself was revoked

    def as_dict(self) -> dict[str, str]:
        return {
            "version": self.version,
            "reason": self.reason,
            "detail": self.detail,
            "replacement": self.replacement,
            "runtime_digest": self.runtime_digest,
        }


@dataclass
class CatalogRevocations:
    """The revocations of some catalogs, indexed for lookups by version and by digest."""

    versions: dict[tuple[int, str, str, str], Revocation] = field(default_factory=dict)
    digests: dict[tuple[int, str], Revocation] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.versions or self.digests)

    @property
    def digest_catalogs(self) -> set[int]:
        return {catalog_id for catalog_id, _ in self.digests}

    def match(
        self, *, catalog_id: int, group: str, kind: str, version: str, runtime: dict[str, Any]
    ) -> Revoked | None:
        """The revocation that applies to this version, or None."""
        row = self.versions.get((catalog_id, group, kind, version))
        if row is None and catalog_id in self.digest_catalogs:
            for digest in sorted(runtime_digests(runtime or {})):
                row = self.digests.get((catalog_id, digest))
                if row is not None:
                    break
        if row is None:
            return None
        return Revoked(
            catalog_id=catalog_id,
            version=version,
            reason=row.reason,
            detail=row.detail,
            replacement=row.replacement,
            runtime_digest=row.runtime_digest,
        )


def catalog_revocations(*, catalog_ids: Iterable[int]) -> CatalogRevocations:
    """Every revocation of the catalogs ``catalog_ids`` (one query)."""
    found = CatalogRevocations()
    rows = Revocation.objects.filter(catalog_id__in=set(catalog_ids)).order_by("sequence")
    for row in rows:
        if row.runtime_digest:
            found.digests.setdefault((row.catalog_id, row.runtime_digest.lower()), row)
        else:
            found.versions.setdefault((row.catalog_id, row.group, row.kind, row.version), row)
    return found


def revoked_versions(
    *, versions: Iterable[FunctionVersion], catalog_id: int, revocations: CatalogRevocations
) -> dict[str, Revoked]:
    """{version name: its revocation} among ``versions`` (rows of one catalog's function)."""
    out: dict[str, Revoked] = {}
    for v in versions:
        found = revocations.match(
            catalog_id=catalog_id, group=v.group, kind=v.kind, version=v.name, runtime=v.runtime
        )
        if found is not None:
            out[v.name] = found
    return out


def revoked_in_search(
    *, versions: Any, pairs: set[tuple[str, str]], catalog_ids: set[int]
) -> dict[tuple[str, str], list[Revoked]]:
    """{(group, kind): its revoked versions} among the search's ``versions`` (a FunctionVersion
    queryset) for the functions ``pairs`` carried by ``catalog_ids``; no query beyond the
    revocations' own when nothing is revoked."""
    revocations = catalog_revocations(catalog_ids=catalog_ids)
    if not revocations:
        return {}
    named = {(g, k) for _, g, k, _ in revocations.versions}
    rows = versions.filter(catalog_version__catalog_id__in=revocations.digest_catalogs)
    fields = ("catalog_version__catalog_id", "group", "kind", "name", "runtime")
    candidates = list(rows.order_by().values_list(*fields))
    if named:
        by_name = versions.filter(
            group__in={g for g, _ in named}, kind__in={k for _, k in named}
        ).exclude(catalog_version__catalog_id__in=revocations.digest_catalogs)
        candidates += list(by_name.order_by().values_list(*fields))
    out: dict[tuple[str, str], list[Revoked]] = {}
    for catalog_id, group, kind, name, runtime in candidates:
        if (group, kind) not in pairs:
            continue
        found = revocations.match(
            catalog_id=catalog_id, group=group, kind=kind, version=name, runtime=runtime
        )
        if found is not None and found not in out.get((group, kind), []):
            out.setdefault((group, kind), []).append(found)
    return out
