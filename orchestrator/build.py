"""The build façade: ``build(path, options) -> BuildResult``, like ``kustomize build``.

The algorithm follows kustomize's KustTarget: accumulate resources (files and
sub-kustomizations, each built on its own), run generators, apply components on
the accumulated resources, run the builtin transformers in kustomize's fixed order
and then the ``transformers:`` plugins; at the top level only, add hash suffixes,
fix name references, resolve vars, drop local configs and sort.
"""

from __future__ import annotations

import os
import sys
import types

from orchestrator.accumulator import (  # re-exported: the façade's public names
    BUILTIN_OPENAPI,
    CONFIG_KEYS,
    LOCAL_CONFIG,
    MANAGED_BY,
    ORIGIN_ANNOTATION,
    TRANSFORMATIONS_ANNOTATION,
    Accumulator,
    BuildOptions,
    BuildResult,
    BuildState,
    Target,
    accumulate_new,
    add_managed_by,
    is_local_config,
    may_be_composition,
    normalise_annotations,
    resources_from_bytes,
    strip_annotation,
    tree_prefetch,
)
from orchestrator.errors import LoadError, ValidationError
from orchestrator.fs import NONE, RESTRICTORS, ROOT_ONLY, Loader, repo_spec

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "BUILTIN_OPENAPI",
    "CONFIG_KEYS",
    "LOCAL_CONFIG",
    "MANAGED_BY",
    "ORIGIN_ANNOTATION",
    "TRANSFORMATIONS_ANNOTATION",
    "Accumulator",
    "BuildOptions",
    "BuildResult",
    "BuildState",
    "Target",
    "build",
    "resources_from_bytes",
]


def _composition_plugin(full: str) -> Any:
    """The Composition integration (KEP-2299) when ``full`` names a Composition, else None.

    Checked on the file system first so that builds without Compositions never import
    that package (it is not light).
    """
    if not may_be_composition(full):
        return None
    from orchestrator.composition import plugin

    return plugin if plugin.is_composition_path(full) else None


def build(path: str, options: BuildOptions | None = None) -> BuildResult:
    """Build the kustomization in directory ``path`` (kustomize's MakeCustomizedResMap)."""
    options = options or BuildOptions()
    if options.load_restrictor not in RESTRICTORS:
        raise ValidationError(
            f"invalid load restrictor {options.load_restrictor!r}: use {ROOT_ONLY} or {NONE}"
        )
    if options.reorder not in (None, "legacy", "none"):
        raise ValidationError(f"invalid --reorder {options.reorder!r}: use legacy or none")
    offline = bool(getattr(options.functions, "offline", False))
    spec = repo_spec(path)
    if path[:6].lower() == "oci://":
        # A kustomization tree packaged as an OCI artifact (orchestrator.ocibase).
        from orchestrator.fs import oci_loader

        loader = oci_loader(path, offline=offline, fn_options=options.functions)
        options_warning = None
    elif spec is not None:
        # A git URL, as kustomize reads it before looking for a local directory.
        from orchestrator import remote
        from orchestrator.fs import remote_loader

        loader = remote_loader(spec, offline=offline, fn_options=options.functions)
        if spec.forced:
            options_warning = remote.FORCED_GIT_WARNING
        else:
            options_warning = None
    else:
        if not os.path.isdir(path):
            if os.path.exists(path):
                raise LoadError("must be a directory", file=path)
            raise LoadError("directory does not exist", file=path)
        real = os.path.realpath(path)
        if _composition_plugin(real) is not None:
            from orchestrator import composition

            return composition.build(path, options)
        loader = Loader(
            real,
            restrictor=options.load_restrictor,
            real=True,
            offline=offline,
            fn_options=options.functions,
        )
        options_warning = None
    state = BuildState(options, _composition_plugin)
    if options_warning:
        state.warnings.append(options_warning)
    target = Target(state, loader)
    build_metadata = target.k.get("buildMetadata") or []
    # Any buildMetadata makes kustomize track origins; it prints only those asked for.
    state.origins = bool(build_metadata)
    from orchestrator.functions import walk

    found = walk.function_configs(target)
    if found:  # functionConfigs against catalog schemas, before anything runs
        from orchestrator.functions import schema as fn_schema

        fn_schema.precheck(target, found)
    state.tree_prefetch = tree_prefetch(target)
    try:
        acc = accumulate_new(target)
    finally:
        if state.tree_prefetch is not None:
            state.tree_prefetch.close()
            state.tree_prefetch = None
    resmap = acc.resmap
    from orchestrator.filters.hash import add_hashes

    add_hashes(resmap)
    from orchestrator.filters.namereference import NameReferenceTransformer

    NameReferenceTransformer(acc.config().name_reference).transform(resmap)
    if acc.vars:
        from orchestrator.filters import vars as kvars

        kvars.apply(
            resmap.resources(), acc.vars, field_specs=acc.var_field_specs or None, bound=True
        )
    resources = [r for r in resmap if not is_local_config(r)]
    sort_options = target.k.get("sortOptions")
    if sort_options is not None:
        from orchestrator import sort

        if options.reorder is not None:
            state.warnings.append(
                "Warning: Sorting order is set both in 'kustomization.yaml' ('sortOptions') "
                "and in the CLI flag ('--reorder'). Using the kustomization file over the CLI flag."
            )
        resources = sort.apply_sort_options(resources, sort_options, source=target.source)
    elif options.reorder in (None, "legacy"):
        from orchestrator import sort

        resources = sort.legacy_sort(resources)
    for r in resources:
        if state.origins:
            if "originAnnotations" not in build_metadata:
                strip_annotation(r, ORIGIN_ANNOTATION)
            if "transformerAnnotations" not in build_metadata:
                strip_annotation(r, TRANSFORMATIONS_ANNOTATION)
        normalise_annotations(r)
    if options.managed_by_label or "managedByLabel" in build_metadata:
        add_managed_by(resources)
    return BuildResult(
        resources=[r.obj for r in resources], results=state.results, warnings=state.warnings
    )


class _CallableModule(types.ModuleType):
    """Importing this module rebinds ``orchestrator.build`` to it; keep that name callable
    so ``orchestrator.build(path, options)`` works either way."""

    def __call__(self, path: str, options: BuildOptions | None = None) -> BuildResult:
        return build(path, options)


sys.modules[__name__].__class__ = _CallableModule
