"""PrefixTransformer, SuffixTransformer (namePrefix, nameSuffix), PrefixSuffixTransformer."""

from __future__ import annotations

from orchestrator import fieldspec
from orchestrator.errors import KrmError
from orchestrator.filters.base import PluginContext, apply_spec, field_specs, scalar_text
from orchestrator.resource import Gvk, ResMap, Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# Kinds whose names kustomize never prefixes or suffixes (the selector is matched on the
# original id).
_SKIP = (
    Gvk("", "", "CustomResourceDefinition"),
    Gvk("apiregistration.k8s.io", "", "APIService"),
    Gvk("", "", "Namespace"),
)


def _skipped(res: Resource) -> bool:
    gvk = res.gvk
    return any(sel.kind == gvk.kind and (not sel.group or sel.group == gvk.group) for sel in _SKIP)


def _affix_setter(res: Resource, path: str, prefix: str, suffix: str) -> Any:
    def setter(value: Any) -> Any:
        """Compute the new value of one field."""
        if isinstance(value, (dict, list)):
            raise KrmError(f"field '{path}' is not a scalar", resource=res.describe())
        return f"{prefix}{scalar_text(value)}{suffix}"

    return setter


def _add(
    resmap: ResMap, ctx: PluginContext, config: dict[str, Any], prefix: str, suffix: str
) -> None:
    specs = field_specs(config, ctx)
    cache: dict[Any, Any] = {}
    for res in resmap:
        if _skipped(res):
            continue
        for fs in fieldspec.select(specs, res.gvk, cache):
            if fs.path == "metadata/name":
                if prefix:
                    res.prefixes.append(prefix)
                    res.store_previous()
                if suffix:
                    res.suffixes.append(suffix)
                    res.store_previous()

            apply_spec(
                res, fs, _affix_setter(res, fs.path, prefix, suffix), "scalar", selected=True
            )
    resmap.invalidate()


class PrefixTransformer:
    """Prepend ``prefix`` to the names selected by its field specs."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.config, self.ctx = config, ctx
        self.prefix = scalar_text(config.get("prefix") or "")

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        if self.prefix:
            _add(resmap, self.ctx, self.config, self.prefix, "")


class SuffixTransformer:
    """Append ``suffix`` to the names selected by its field specs."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.config, self.ctx = config, ctx
        self.suffix = scalar_text(config.get("suffix") or "")

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        if self.suffix:
            _add(resmap, self.ctx, self.config, "", self.suffix)


class PrefixSuffixTransformer:
    """Legacy plugin doing both at once."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.config, self.ctx = config, ctx

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        prefix = scalar_text(self.config.get("prefix") or "")
        suffix = scalar_text(self.config.get("suffix") or "")
        if prefix:
            _add(resmap, self.ctx, self.config, prefix, "")
        if suffix:
            _add(resmap, self.ctx, self.config, "", suffix)
