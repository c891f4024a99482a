"""Builtin plugins (generators and transformers), found through one registry.

Each builtin is a class taking ``(config, ctx)`` (its YAML config as a dict and a
:class:`~orchestrator.filters.base.PluginContext`) with ``transform(resmap)`` for
transformers or ``generate() -> list[Resource]`` for generators. Modules are imported
lazily so that ``krm`` starts fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# kind -> "module:Class" (modules under orchestrator.filters)
BUILTINS: dict[str, str] = {
    "AnnotationsTransformer": "labels:AnnotationsTransformer",
    "LabelTransformer": "labels:LabelTransformer",
    "NamespaceTransformer": "namespace:NamespaceTransformer",
    "PrefixTransformer": "prefixsuffix:PrefixTransformer",
    "SuffixTransformer": "prefixsuffix:SuffixTransformer",
    "PrefixSuffixTransformer": "prefixsuffix:PrefixSuffixTransformer",
    "ImageTagTransformer": "images:ImageTagTransformer",
    "ReplicaCountTransformer": "replicas:ReplicaCountTransformer",
    "PatchTransformer": "patch:PatchTransformer",
    "PatchStrategicMergeTransformer": "patch:PatchStrategicMergeTransformer",
    "PatchJson6902Transformer": "patch:PatchJson6902Transformer",
    "ReplacementTransformer": "plugins:ReplacementTransformer",
    "ConfigMapGenerator": "plugins:ConfigMapGenerator",
    "SecretGenerator": "plugins:SecretGenerator",
    "HashTransformer": "plugins:HashTransformer",
    "SortOrderTransformer": "plugins:SortOrderTransformer",
    "HelmChartInflationGenerator": "plugins:HelmChartInflationGenerator",
    "IAMPolicyGenerator": "iampolicygenerator:IAMPolicyGenerator",
}

GENERATORS = frozenset(
    {"ConfigMapGenerator", "SecretGenerator", "HelmChartInflationGenerator", "IAMPolicyGenerator"}
)


def lookup(kind: str) -> Any:
    """The class implementing builtin ``kind`` (None if there is none)."""
    ref = BUILTINS.get(kind)
    if ref is None:
        return None
    module, _, cls = ref.partition(":")
    # __import__ rather than importlib.import_module: importlib is not loaded otherwise.
    return getattr(__import__(f"orchestrator.filters.{module}", fromlist=[cls]), cls)
