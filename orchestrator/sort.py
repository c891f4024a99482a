"""Output order: kustomize's legacy kind order, or the input ("fifo") order."""

from __future__ import annotations

try:  # functools' own, in C: importing functools loads collections (~1.5 ms of start-up)
    from _functools import cmp_to_key  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - CPython has it
    from functools import cmp_to_key

from orchestrator.errors import ValidationError
from orchestrator.resource import Gvk, Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

ORDER_FIRST = (
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
)
ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _gvk_string(group: str, version: str, kind: str) -> str:
    return f"{group or '~G'}_{version or '~V'}_{kind or '~K'}"


def legacy_sort(
    resources: list[Resource],
    order_first: tuple[str, ...] | list[str] = ORDER_FIRST,
    order_last: tuple[str, ...] | list[str] = ORDER_LAST,
) -> list[Resource]:
    """Sort like kustomize's legacy order: by kind rank, then GVK, then namespace and name."""
    ranks: dict[str, int] = {}
    for i, k in enumerate(order_first):
        ranks[k] = -len(order_first) + i
    for i, k in enumerate(order_last):
        ranks[k] = 1 + i
    keyed: list[tuple[int, Gvk, str, str, Resource]] = []
    for r in resources:
        gvk = r.gvk
        ns, name = r.namespace, r.name
        id_string = "|".join(
            [
                ".".join(
                    [gvk.kind or "[noKind]", gvk.version or "[noVer]", gvk.group or "[noGrp]"]
                ),
                ns or "~X",
                name or "~N",
            ]
        )
        keyed.append((ranks.get(gvk.kind, 0), gvk, _gvk_string(*gvk), id_string, r))

    def cmp(a: tuple[int, Gvk, str, str, Resource], b: tuple[int, Gvk, str, str, Resource]) -> int:
        """kustomize's legacyIDSorter.Less as a three-way comparison."""
        if a[1] != b[1]:
            if a[0] != b[0]:
                return -1 if a[0] < b[0] else 1
            sa, sb = a[2], b[2]
            if a[1].kind == "Namespace" == b[1].kind and (not a[1].group or not b[1].group):
                sa, sb = sb, sa
            return -1 if sa < sb else (1 if sa > sb else 0)
        return -1 if a[3] < b[3] else (1 if a[3] > b[3] else 0)

    keyed.sort(key=cmp_to_key(cmp))
    return [k[-1] for k in keyed]


def apply_sort_options(
    resources: list[Resource], options: Any, *, source: str | None = None
) -> list[Resource]:
    """Order per a kustomization's ``sortOptions`` ({order: legacy|fifo, legacySortOptions})."""
    if not isinstance(options, dict):
        raise ValidationError(f"sortOptions must be a map, got {options!r}", file=source)
    order = options.get("order")
    legacy = options.get("legacySortOptions")
    # kustomize validates what was given: an order is required once sortOptions is set.
    if order not in ("legacy", "fifo"):
        raise ValidationError(
            "the field 'sortOptions.order' must be one of [fifo, legacy]", file=source
        )
    if order == "fifo":
        if legacy is not None:
            raise ValidationError(
                "the field 'sortOptions.legacySortOptions' is set but the selected sort order "
                "is 'fifo', not 'legacy'",
                file=source,
            )
        return resources
    if legacy is not None:
        if not isinstance(legacy, dict):
            raise ValidationError(
                f"sortOptions.legacySortOptions must be a map, got {legacy!r}", file=source
            )
        return legacy_sort(resources, legacy.get("orderFirst") or [], legacy.get("orderLast") or [])
    return legacy_sort(resources)
