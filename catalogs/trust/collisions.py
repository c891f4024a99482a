"""Collisions: the same group/kind/version in more than one catalog.

Resolution takes the first match, silently; these selectors say, per function version of a
catalog's latest version, which other catalogs' latest versions define the same GVK and whether
their runtimes differ (the same runtime is harmless; a different one is the trap).
"""

from __future__ import annotations

from typing import Any

from catalogs.publishing.models import FunctionVersion
from catalogs.publishing.selectors import Viewer, catalogs_visible_q


def function_collisions(*, version: FunctionVersion, viewer: Viewer = None) -> list[dict[str, Any]]:
    """Other catalogs ``viewer`` may see whose latest version defines ``version``'s group, kind
    and version."""
    own_catalog = version.catalog_version.catalog_id
    others = (
        FunctionVersion.objects.filter(
            catalogs_visible_q(viewer, prefix="catalog_version__catalog__"),
            group=version.group,
            kind=version.kind,
            name=version.name,
            catalog_version__latest_of__isnull=False,
        )
        .exclude(catalog_version__catalog_id=own_catalog)
        .select_related("catalog_version__catalog__publisher")
        .order_by("catalog_version__catalog__publisher__slug", "catalog_version__catalog__name")
    )
    out = []
    for other in others:
        catalog = other.catalog_version.catalog
        out.append(
            {
                "catalog": f"{catalog.publisher.slug}/{catalog.name}",
                "publisher": catalog.publisher.slug,
                "name": catalog.name,
                "function_id": other.pk,
                "runtime_differs": other.runtime != version.runtime,
            }
        )
    return out
