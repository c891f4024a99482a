"""NamespaceTransformer: the ``namespace:`` field."""

from __future__ import annotations

from orchestrator import fieldspec
from orchestrator.errors import ResourceConflictError, ValidationError
from orchestrator.filters.base import PluginContext, apply_spec, field_specs, scalar_text
from orchestrator.resource import ResMap, is_cluster_scoped, key_str

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

_MODES = ("", "defaultOnly", "allServiceAccounts", "none")


class NamespaceTransformer:
    """Set metadata.namespace (and the namespace fields of its field specs) everywhere."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.ctx = ctx
        md = config.get("metadata") or {}
        self.namespace = scalar_text(md.get("namespace") or config.get("namespace") or "")
        self.specs = field_specs(config, ctx)
        self.unset_only = bool(config.get("unsetOnly"))
        self.mode = config.get("setRoleBindingSubjects") or ""
        if self.mode not in _MODES:
            raise ValidationError(
                f"invalid value {self.mode!r} for setRoleBindingSubjects: must be one of "
                "'defaultOnly', 'none' or 'allServiceAccounts'",
                file=ctx.source,
            )

    def _set(self, value: Any) -> Any:
        if self.unset_only and value not in (None, ""):
            return value
        return self.namespace

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        if not self.namespace:
            return
        cache: dict[Any, Any] = {}
        for res in resmap:
            if not res.obj:
                continue
            res.store_previous()
            av, kind = res.api_version, res.kind
            if not is_cluster_scoped(av, kind):
                md = res.metadata
                md["namespace"] = self._set(md.get("namespace"))
            is_rb = kind in ("RoleBinding", "ClusterRoleBinding")
            for fs in fieldspec.select(self.specs, res.gvk, cache):
                if fs.path == "metadata/namespace":
                    continue
                if fs.path == "metadata/name" and av != "v1":
                    continue
                if is_rb and fs.path == "subjects/namespace":
                    continue
                apply_spec(res, fs, self._set, "scalar", selected=True)
            if is_rb and self.mode != "none":
                for subject in res.obj.get("subjects") or []:
                    if not isinstance(subject, dict):
                        continue
                    if self.mode == "allServiceAccounts":
                        hit = subject.get("kind") == "ServiceAccount"
                    else:
                        hit = subject.get("name") == "default"
                    if hit:
                        subject["namespace"] = self._set(subject.get("namespace"))
        resmap.invalidate()
        seen: dict[tuple[Any, ...], Any] = {}
        for res in resmap:
            key = res.key()
            if key in seen:
                raise ResourceConflictError(
                    f"namespace transformation produces ID conflict: {key_str(key)}",
                    resource=res.describe(),
                )
            seen[key] = res
