"""The KRM build engine: builds Kustomizations, Components and Compositions like
``kustomize build``. Importable without Django; the CLI is :mod:`orchestrator.cli`.

Public API: ``build(path, options) -> BuildResult`` (imported lazily, so that
``import orchestrator.cli`` stays fast).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up

if TYPE_CHECKING:
    from typing import Any

    from orchestrator.build import BuildOptions, BuildResult

__all__ = ["BuildOptions", "BuildResult", "__version__", "build"]
# The distribution's version (pyproject.toml reads it from here: one place to change it).
__version__ = "0.1.0"


def build(path: str, options: BuildOptions | None = None) -> BuildResult:
    """Build the kustomization in ``path``; see :func:`orchestrator.build.build`."""
    import importlib

    # Importing the submodule rebinds ``orchestrator.build`` to it (it is callable too).
    result: BuildResult = importlib.import_module("orchestrator.build").build(path, options)
    return result


def __getattr__(name: str) -> Any:
    if name in ("BuildOptions", "BuildResult"):
        import importlib

        return getattr(importlib.import_module("orchestrator.build"), name)
    raise AttributeError(name)
