"""Builtin plugins that wrap other modules: generators, replacements, hash and sort."""

from __future__ import annotations

from orchestrator import yamlio
from orchestrator.errors import ValidationError
from orchestrator.filters.base import PluginContext
from orchestrator.resource import ResMap, Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# Fields of a ConfigMapArgs/SecretArgs; plugin configs are decoded leniently by kustomize,
# so anything else is ignored.
_ARGS = ("name", "namespace", "behavior", "literals", "files", "envs", "env", "options", "type")


def _generator_args(config: dict[str, Any]) -> dict[str, Any]:
    md = config.get("metadata") or {}
    args = {k: v for k, v in config.items() if k in _ARGS}
    args.setdefault("name", md.get("name"))
    if md.get("namespace") and not args.get("namespace"):
        args["namespace"] = md["namespace"]
    return args


class ConfigMapGenerator:
    """A ConfigMapGenerator plugin config (``generators:``)."""

    module = "configmapgenerator"

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.args, self.ctx = _generator_args(config), ctx

    def generate(self) -> list[Resource]:
        """Make the resources of this generator."""
        import importlib

        mod = importlib.import_module(f"orchestrator.filters.{self.module}")
        res = mod.generate(self.args, options=None, read_file=self.ctx.read_file)
        return [res]


class SecretGenerator(ConfigMapGenerator):
    """A SecretGenerator plugin config (``generators:``)."""

    module = "secretgenerator"


class HelmChartInflationGenerator:
    """Registered so that ``generators:`` knows the kind; the kustomization's accumulator runs
    it (it needs the build's options and resource reader: orchestrator.helm)."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        raise ValidationError(
            "HelmChartInflationGenerator runs only in a kustomization's generators",
            file=ctx.source,
        )


class ReplacementTransformer:
    """``replacements``: entries inline or loaded from ``path`` files."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.ctx = ctx
        self.replacements: list[dict[str, Any]] = []
        for entry in config.get("replacements") or []:
            if isinstance(entry, dict) and "path" in entry and len(entry) == 1:
                docs = yamlio.load_all(ctx.read_file(str(entry["path"])), source=entry["path"])
                for d in docs:
                    self.replacements.extend(d if isinstance(d, list) else [d])
            else:
                self.replacements.append(entry)

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        from orchestrator.filters import replacements

        replacements.apply(resmap.resources(), self.replacements, source=self.ctx.source)
        resmap.invalidate()


class HashTransformer:
    """Append content hashes to generated resources' names."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        pass

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        from orchestrator.filters.hash import add_hashes

        add_hashes(resmap)


class SortOrderTransformer:
    """Reorder resources per ``sortOptions``."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.options = config.get("sortOptions") or {"order": "legacy"}

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        from orchestrator import sort

        resmap.set_list(sort.apply_sort_options(resmap.resources(), self.options))
