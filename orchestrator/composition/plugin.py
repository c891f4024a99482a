"""A Composition directory used from a Kustomization (KEP-2299's Kustomization integration).

- ``resources:`` and ``generators:``: the Composition runs with no input; what it outputs is
  appended to the Kustomization's resources.
- ``transformers:``: it runs with the Kustomization's resources as input; its output replaces
  them.
- ``validators:``: it runs with (a copy of) the resources as input; its output is discarded,
  so only its errors matter.

The build calls :func:`is_composition_entry` on a generators/transformers/validators entry
and, when true, uses :class:`CompositionPlugin` instead of a plugin config.
"""

from __future__ import annotations

import sys
from typing import Any

from orchestrator.composition.schema import is_composition_path as is_composition_path

MARKER = "__krm_composition__"


def new_state(options: Any = None) -> Any:
    """The engine's per-build state (warnings, results, options) for a build that starts at a
    Composition: kustomizations it runs reach Compositions through this module."""
    from orchestrator.accumulator import BuildOptions, BuildState

    return BuildState(options or BuildOptions(), _composition_plugin)


def _composition_plugin(full: str) -> Any:
    """The Composition integration for kustomizations run from a Composition (KEP-2299)."""
    from orchestrator.accumulator import may_be_composition

    return sys.modules[__name__] if may_be_composition(full) and is_composition_path(full) else None


def marker_config(full: str) -> dict[str, Any]:
    """The placeholder a generators/transformers/validators list holds for a Composition."""
    return {MARKER: full}


def is_marker(config: Any) -> bool:
    return isinstance(config, dict) and MARKER in config


class CompositionPlugin:
    """Runs a Composition as a generator (empty input) or transformer (resources as input)."""

    def __init__(self, config: dict[str, Any], state: Any):
        self.path = config[MARKER]
        self.state = state

    def generate(self) -> list[Any]:
        from orchestrator.composition.run import build_resources

        generated: list[Any] = build_resources(self.path, self.state).resmap.resources()
        return generated

    def transform(self, resmap: Any) -> None:
        from orchestrator.composition.run import build_resources

        out = build_resources(self.path, self.state, resources=resmap.resources())
        resmap.set_list(out.resmap.resources())


def accumulate(state: Any, full: str, acc: Any, *, source: str | None = None) -> None:
    """``resources:`` entry naming a Composition: append its output (and its configs) to acc."""
    from orchestrator.composition.run import _append, build_resources

    sub = build_resources(full, state)
    _append(acc, sub.resmap, source)
    acc.merge(sub)
