"""The catalog page's trust view, one page at a time, from the rows a publish stored.

``krm view catalog`` parses the whole document; for a catalog of thousands of functions that costs
seconds per request. The page shows the same data (``orchestrator.functions.view.summary``'s
shape and rules: ``needs`` and ``platforms`` are computed by the engine's own helpers) for one page
of functions, read with two bounded queries; only the document's head (its metadata, before
``spec:`` in the canonical form) is parsed, and cached by digest.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Page, Paginator

from catalogs.publishing.content import catalog_version_bytes
from catalogs.publishing.models import CatalogVersion, FunctionDefinition, FunctionVersion
from orchestrator import yamlio
from orchestrator.functions.view import _needs, _platforms

_SPEC = b"\nspec:\n"


def _head(version: CatalogVersion) -> dict[str, Any]:
    """The document's metadata (name, annotations), cached by digest (a version never changes)."""
    key = f"catalog-head:{version.digest}"
    found = cache.get(key)
    if found is None:
        content = catalog_version_bytes(version=version)
        # The canonical form is apiVersion, kind, metadata, spec: the head is all before spec.
        end = content.find(_SPEC)
        head = yamlio.load(content[: end + 1] if end >= 0 else content, fold=False) or {}
        found = head.get("metadata") or {} if isinstance(head, dict) else {}
        cache.set(key, found, None)
    return dict(found)


def _publisher(version: CatalogVersion, metadata: dict[str, Any]) -> str | None:
    annotations = metadata.get("annotations") or {}
    if annotations.get("publisher"):
        return str(annotations["publisher"])
    publishers = (
        FunctionDefinition.objects.filter(catalog_version=version)
        .exclude(publisher="")
        .order_by("publisher")
        .values_list("publisher", flat=True)
        .distinct()
    )
    names = list(publishers)
    return ", ".join(names) if names else None


def _entry(definition: FunctionDefinition, version: FunctionVersion) -> dict[str, Any]:
    """One row, as ``summary`` writes it."""
    entry: dict[str, Any] = {
        "apiVersion": f"{definition.group}/{version.name}" if definition.group else version.name,
        "kind": definition.kind,
        "runtimes": list(version.runtime_kinds or []),
        "needs": _needs(version),
        "group": definition.group,
    }
    platforms = _platforms(version)
    if platforms:
        entry["platforms"] = platforms
    container = (version.runtime or {}).get("container")
    if container:
        entry["image"] = container["image"]
        if container.get("sha256"):
            entry["imageDigest"] = "sha256:" + container["sha256"]
    if definition.publisher:
        entry["publisher"] = definition.publisher
    if definition.description:
        entry["description"] = definition.description
    return entry


def catalog_trust_page(
    *, version: CatalogVersion, source: str, page: str | int | None
) -> tuple[dict[str, Any], Page]:
    """The trust view of ``version`` for one page of its functions, and that page.

    The page's ``object_list`` are the FunctionDefinitions shown; ``functions`` of the view are
    their versions' rows, in the document's order.
    """
    definitions = FunctionDefinition.objects.filter(catalog_version=version).order_by("position")
    paginator = Paginator(definitions, settings.CATALOG_PAGE_FUNCTIONS)
    shown = paginator.get_page(page)
    rows = list(shown.object_list)
    versions: dict[int, list[FunctionVersion]] = {}
    for fv in FunctionVersion.objects.filter(function__in=[d.pk for d in rows]).order_by(
        "position", "pk"
    ):
        versions.setdefault(fv.function_id, []).append(fv)
    metadata = _head(version)
    view = {
        "name": metadata.get("name", version.document_name),
        "publisher": _publisher(version, metadata),
        "digest": version.digest,
        "source": source,
        "functions": [_entry(d, v) for d in rows for v in versions.get(d.pk, [])],
    }
    return view, shown
