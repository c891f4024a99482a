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

import os
from typing import Any

from orchestrator.composition.schema import FILE_NAME

MARKER = "__krm_composition__"


def is_composition_path(full: str) -> bool:
    """A directory holding composition.yaml (and no kustomization), or a composition.yaml."""
    from orchestrator.fs import KUSTOMIZATION_FILES

    if os.path.isdir(full):
        has_k = any(os.path.isfile(os.path.join(full, n)) for n in KUSTOMIZATION_FILES)
        return not has_k and os.path.isfile(os.path.join(full, FILE_NAME))
    return os.path.basename(full) == FILE_NAME and os.path.isfile(full)


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
