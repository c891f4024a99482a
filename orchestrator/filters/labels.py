"""LabelTransformer (commonLabels / labels) and AnnotationsTransformer (commonAnnotations)."""

from __future__ import annotations

from orchestrator import fieldspec
from orchestrator.errors import KrmError
from orchestrator.filters.base import PluginContext, apply_spec, field_specs, string_map
from orchestrator.resource import ResMap, Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ALIAS = "value_aliases"


def _map_setter(pairs: dict[str, str], what: str, res: Resource) -> Callable[[Any], Any]:
    """Set ``pairs`` in each map reached, emulating kyaml's shared value nodes.

    kustomize inserts ONE scalar node per label key and resource into every field it
    creates, and overwrites existing values in place; so a later transformer that
    overwrites such a value in one place changes it everywhere the node was inserted
    (e.g. an overlay's plain ``labels`` entry also rewrites selectors that a base's
    ``includeSelectors`` label created). ``res.extra[ALIAS]`` maps a location
    (container id, key) to the group of locations sharing its node.
    """
    aliases: dict[tuple[int, str], list[Any]] = res.extra.setdefault(ALIAS, {})
    created: dict[str, list[Any]] = {}

    def setter(value: Any) -> Any:
        """Compute the new value of one field."""
        if value is None or value == "":
            value = {}
        if not isinstance(value, dict):
            raise KrmError(f"{what} field is not a map: {value!r}")
        for k in sorted(pairs):
            v = pairs[k]
            if k in value:
                group = aliases.get((id(value), k))
                if group is not None:
                    for container, key in group:
                        container[key] = v
                else:
                    value[k] = v
            else:
                value[k] = v
                group = created.setdefault(k, [])
                group.append((value, k))
                aliases[(id(value), k)] = group
        return value

    return setter


def rebind_aliases(res: Resource, old: Any, new: Any) -> None:
    """Carry value aliases over to a patched copy of the object (kyaml patches in place,
    keeping the nodes a patch does not touch)."""
    aliases = res.extra.get(ALIAS)
    if not aliases:
        return
    mapping: dict[int, dict[str, Any]] = {}

    def walk(o: Any, n: Any) -> None:
        """Pair containers of the old and new objects by position."""
        if isinstance(o, dict) and isinstance(n, dict):
            mapping[id(o)] = n
            for k, ov in o.items():
                if k in n:
                    walk(ov, n[k])
        elif isinstance(o, list) and isinstance(n, list) and len(o) == len(n):
            for a, b in zip(o, n, strict=True):
                walk(a, b)

    walk(old, new)
    rebuilt: dict[tuple[int, str], list[Any]] = {}
    done: dict[int, list[Any]] = {}
    for group in aliases.values():
        if id(group) in done:
            continue
        fresh: list[Any] = []
        for container, key in group:
            nc = mapping.get(id(container))
            if nc is not None and key in nc and nc[key] == container.get(key):
                fresh.append((nc, key))
        done[id(group)] = fresh
        for nc, key in fresh:
            rebuilt[(id(nc), key)] = fresh
    res.extra[ALIAS] = rebuilt


class LabelTransformer:
    """Add labels to every field its field specs select (metadata, selectors, templates)."""

    key = "labels"
    default_specs = "commonLabels"

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.ctx = ctx
        self.pairs = string_map(config.get(self.key), self.key, ctx.source)
        self.specs = field_specs(config, ctx)

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        if not self.pairs:
            return
        cache: dict[Any, Any] = {}
        for res in resmap:
            specs = fieldspec.select(self.specs, res.gvk, cache)
            if not specs:
                continue
            setter = _map_setter(self.pairs, self.key, res)
            for fs in specs:
                apply_spec(res, fs, setter, "map", selected=True)


class AnnotationsTransformer(LabelTransformer):
    """Add annotations to every field its field specs select."""

    key = "annotations"
    default_specs = "commonAnnotations"
