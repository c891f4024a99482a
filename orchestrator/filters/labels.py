"""LabelTransformer (commonLabels / labels) and AnnotationsTransformer (commonAnnotations)."""

from __future__ import annotations

from typing import Any

from orchestrator import fieldspec
from orchestrator.errors import KrmError
from orchestrator.filters.base import PluginContext, apply_spec, field_specs, string_map
from orchestrator.resource import ResMap


def _map_setter(pairs: dict[str, str], what: str):
    def setter(value: Any) -> Any:
        if value is None or value == "":
            value = {}
        if not isinstance(value, dict):
            raise KrmError(f"{what} field is not a map: {value!r}")
        for k in sorted(pairs):
            value[k] = pairs[k]
        return value

    return setter


class LabelTransformer:
    """Add labels to every field its field specs select (metadata, selectors, templates)."""

    key = "labels"
    default_specs = "commonLabels"

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.ctx = ctx
        self.pairs = string_map(config.get(self.key), self.key, ctx.source)
        self.specs = field_specs(config, ctx)

    def transform(self, resmap: ResMap) -> None:
        if not self.pairs:
            return
        setter = _map_setter(self.pairs, self.key)
        cache: dict = {}
        for res in resmap:
            for fs in fieldspec.select(self.specs, res.gvk, cache):
                apply_spec(res, fs, setter, "map", selected=True)


class AnnotationsTransformer(LabelTransformer):
    """Add annotations to every field its field specs select."""

    key = "annotations"
    default_specs = "commonAnnotations"
