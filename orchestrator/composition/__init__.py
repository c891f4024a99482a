"""KEP-2299 Composition: ``composition.yaml`` loading, consolidation and execution.

Public API:

- :func:`build` ``(path, options) -> BuildResult``: build a directory holding a Composition,
  like ``krm build`` does for a Kustomization.
- :func:`build_composition` ``(path, options, resources=None) -> list[Resource]``: run a
  Composition over ``resources`` (empty for generator use) without the final build steps.
- :func:`consolidate` ``(path) -> Consolidated``: the ordered transformer list of a Composition
  tree, nothing run; :func:`format_consolidated` prints it (``krm consolidate``).
- :func:`is_composition_dir` ``(path) -> bool``.

The rules (imports, overrides, order, catalogs) are in
:mod:`orchestrator.composition.consolidate`, the schema in :mod:`orchestrator.composition.schema`
and execution in :mod:`orchestrator.composition.run`.

Where the KEP and the kustomize prototype (PR 4323, whose fixtures are the conformance corpus)
disagree, this follows the KEP, except where the corpus needs the prototype's leniency:

- a transformer without ``apiVersion`` is a builtin (the KEP requires apiVersion; every
  prototype fixture omits it for builtins); the Composition itself must have its apiVersion;
- ``apiVersion`` values may omit the group and use dashes (``builtin``, ``v1``,
  ``builtin-next``), which the KEP's own pattern rejects although its examples use them;
- ``metadata`` may also hold ``namespace`` (NamespaceTransformer's target), ``annotations``
  and ``labels`` (function settings), not only ``name``; names must be RFC 1123 subdomains, so
  the KEP's example ``myFancyNamePrefixer`` is rejected, as its own schema says;
- ``runtime`` also accepts ``starlark: {path}`` (the prototype's and KEP-2906's third runtime);
- ``transformerOrder`` entries also accept the prototype's ``group``, ``version`` and
  ``namespace`` selectors next to the KEP's ``kind`` and ``apiVersion``;
- an invalid ``importMode`` and a transformer without kind are reported while consolidating,
  as the prototype does, not while validating.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from orchestrator.composition.consolidate import Consolidated, consolidate
from orchestrator.composition.schema import API_VERSION, FILE_NAME, CompositionError, Transformer

if TYPE_CHECKING:
    from orchestrator.accumulator import BuildOptions, BuildResult
    from orchestrator.resource import Resource

__all__ = [
    "CompositionError",
    "Consolidated",
    "Transformer",
    "build",
    "build_composition",
    "consolidate",
    "format_consolidated",
    "is_composition_dir",
]


def is_composition_dir(path: str) -> bool:
    """Whether ``path`` is a directory holding a ``composition.yaml``."""
    return os.path.isfile(os.path.join(path, FILE_NAME))


def _check_dir(path: str) -> None:
    from orchestrator.errors import LoadError
    from orchestrator.fs import display

    if not os.path.isdir(path):
        raise LoadError(f"'{path}' is not a directory", file=display(path))
    # A kustomization next to composition.yaml is refused by schema.load, on every route.
    if not is_composition_dir(path):
        raise LoadError(f"no {FILE_NAME} in '{path}'", file=display(path))


def build_composition(
    path: str, options: BuildOptions | None = None, resources: list[Resource] | None = None
) -> list[Resource]:
    """Run the Composition in ``path`` over ``resources``; no hashes, name refs or sorting."""
    from orchestrator.composition.plugin import new_state
    from orchestrator.composition.run import build_resources

    _check_dir(path)
    acc = build_resources(path, new_state(options), resources=resources)
    out: list[Resource] = acc.resmap.resources()
    return out


def build(path: str, options: BuildOptions | None = None) -> BuildResult:
    """Build the Composition in directory ``path`` as ``krm build`` prints it."""
    from orchestrator import accumulator
    from orchestrator.composition.plugin import new_state
    from orchestrator.composition.run import build_resources
    from orchestrator.filters.hash import add_hashes
    from orchestrator.filters.namereference import NameReferenceTransformer

    _check_dir(path)
    state = new_state(options)
    acc = build_resources(path, state)
    resmap = acc.resmap
    add_hashes(resmap)
    NameReferenceTransformer(acc.config().name_reference).transform(resmap)
    if acc.vars:
        from orchestrator.filters import vars as kvars

        kvars.apply(resmap.resources(), acc.vars, field_specs=acc.var_field_specs or None)
    resources = [r for r in resmap if not accumulator.is_local_config(r)]
    if state.options.reorder == "legacy":
        from orchestrator import sort

        resources = sort.legacy_sort(resources)
    for r in resources:
        accumulator.normalise_annotations(r)
    if state.options.managed_by_label:
        accumulator.add_managed_by(resources)
    result: BuildResult = accumulator.BuildResult(
        resources=[r.obj for r in resources], results=state.results, warnings=state.warnings
    )
    return result


def format_consolidated(cons: Consolidated) -> str:
    """The consolidated list as a Composition document, each entry headed by its origin.

    The comments quote names from the documents: through ``terminal.field``, so a name can
    neither end its comment line (and add YAML) nor hold a terminal escape sequence.
    """
    from orchestrator import yamlio
    from orchestrator.fs import display
    from orchestrator.terminal import field

    lines = [
        f"# Consolidated from {field(display(cons.composition.file))}: "
        f"{len(cons.transformers)} transformer(s), in run order.",
        f"apiVersion: {API_VERSION}",
        "kind: Composition",
    ]
    if cons.catalogs:
        lines.append("catalogs:")
        for ref, directory in cons.catalogs:
            lines.append(f"# named in {field(display(os.path.join(directory, FILE_NAME)))}")
            lines.append("- " + yamlio.dump(ref).strip().removesuffix("\n..."))
    lines.append("transformers:" if cons.transformers else "transformers: []")
    for i, t in enumerate(cons.transformers, 1):
        lines.append(f"# {i}. {field(t.ident())}")
        lines.append(f"#    from {field(t.where())}")
        if t.imported_via:
            lines.append(f"#    imported via {field(' <- '.join(reversed(t.imported_via)))}")
        for ov in t.overridden_by:
            lines.append(f"#    overridden by {field(str(ov))}")
        if os.path.normpath(t.base_dir) != os.path.dirname(t.file):
            lines.append(f"#    paths relative to {field(display(t.base_dir)) or '.'}")
        body = yamlio.dump(t.resolved_config()).rstrip("\n").split("\n")
        lines.append("- " + body[0])
        lines.extend("  " + line for line in body[1:])
    return "\n".join(lines) + "\n"


def consolidate_text(path: str) -> str:
    """``krm consolidate DIR``: the consolidated list of the Composition in ``path``."""
    if os.path.isdir(path):
        _check_dir(path)
    elif not os.path.isfile(path):
        from orchestrator.errors import LoadError

        raise LoadError(f"'{path}' does not exist (expected a directory with {FILE_NAME})")
    return format_consolidated(consolidate(path))
