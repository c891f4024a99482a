"""Running a consolidated Composition: each transformer's output is the next one's input.

Kinds of transformer, by apiVersion and kind:

- ``apiVersion: builtin`` (or no apiVersion, as in the prototype): kustomize's builtin plugins
  from :mod:`orchestrator.filters`. When a config gives no ``fieldSpecs`` it gets kustomize's
  default ones for its kind (kustomize issue 4404 left them empty there). Generators
  (ConfigMapGenerator, SecretGenerator) append what they make.
- ``ResourceGenerator`` / ``ResourceAccumulator`` (builtin): append the resources read from
  ``paths`` (or the prototype's ``files``): resource files, kustomization directories (built),
  Composition directories or files (built eagerly, with empty input).
- ``kustomize.config.k8s.io/v1beta1`` ``Kustomization``: an inline Kustomization; the current
  resources come first in its ``resources``, its relative paths resolve against the
  Composition's directory.
- anything else: a KRM function, run through :mod:`orchestrator.functions` with the
  Composition tree's merged catalogs.

At the top level the build then does what ``kustomize build`` does last: hash suffixes for
generated resources, name references, local-config removal. Output keeps pipeline order (as the
prototype does); ``--reorder legacy`` sorts it.
"""

from __future__ import annotations

import os
from typing import Any

from orchestrator.composition.consolidate import (
    Consolidated,
    absolute_catalog_ref,
    composition_file,
    consolidate,
)
from orchestrator.composition.schema import BUILTIN, Transformer
from orchestrator.errors import KrmError, LoadError, NotSupportedError, ValidationError

KUSTOMIZATION_API = "kustomize.config.k8s.io/v1beta1"
READERS = ("ResourceGenerator", "ResourceAccumulator")
# kind -> the default transformer-config key (data/fieldspecs.yaml) used when none are given.
DEFAULT_SPECS = {
    "LabelTransformer": "commonLabels",
    "AnnotationsTransformer": "commonAnnotations",
    "NamespaceTransformer": "namespace",
    "PrefixTransformer": "namePrefix",
    "SuffixTransformer": "nameSuffix",
    "PrefixSuffixTransformer": "namePrefix",
    "ImageTagTransformer": "images",
    "ReplicaCountTransformer": "replicas",
}


class _Run:
    """State of one Composition run: the build state, restrictor and the compositions open."""

    def __init__(self, state: Any, stack: tuple[str, ...]):
        self.state = state
        self.stack = stack

    @property
    def options(self) -> Any:
        return self.state.options


def run_consolidated(
    cons: Consolidated, acc: Any, state: Any, *, stack: tuple[str, ...] = ()
) -> Any:
    """Run every transformer of ``cons`` over the accumulator ``acc``; returns the result."""
    run = _Run(state, (*stack, cons.composition.file))
    for t in cons.transformers:
        try:
            acc = _run_one(run, cons, t, acc)
        except KrmError as exc:
            if getattr(exc, "_composition_context", False):
                raise
            exc.message = f'transformer "{t.ident()}" ({t.where()}): {exc.message}'
            exc.args = (exc.message,)
            exc._composition_context = True  # type: ignore[attr-defined]
            raise
    return acc


def _ctx(run: _Run, t: Transformer, acc: Any) -> Any:
    from orchestrator.filters import base as fbase
    from orchestrator.fs import Loader, display

    loader = Loader(t.base_dir, restrictor=run.options.load_restrictor)
    return fbase.PluginContext(
        tconfig=acc.config(),
        read_file=loader.read,
        root=loader.root,
        source=display(t.file),
        schema=run.state.schema,
        warnings=run.state.warnings,
        options=run.options,
    )


def _run_one(run: _Run, cons: Consolidated, t: Transformer, acc: Any) -> Any:
    cfg = t.resolved_config()
    if t.api_version == BUILTIN:
        if t.kind in READERS:
            _read_paths(run, t, cfg, acc)
            return acc
        return _run_builtin(run, t, cfg, acc)
    if t.kind == "Kustomization" and t.api_version == KUSTOMIZATION_API:
        return _run_kustomization(run, t, cfg, acc)
    return _run_function(run, cons, t, cfg, acc)


def _run_builtin(run: _Run, t: Transformer, cfg: dict[str, Any], acc: Any) -> Any:
    from orchestrator import filters

    cls = filters.lookup(t.kind)
    if cls is None:
        known = ", ".join(sorted({*filters.BUILTINS, *READERS}))
        raise ValidationError(f"unknown builtin kind {t.kind!r}; builtin kinds are: {known}")
    key = DEFAULT_SPECS.get(t.kind)
    if key and not cfg.get("fieldSpecs"):
        cfg["fieldSpecs"] = acc.config().get(key)
    plugin = cls(cfg, _ctx(run, t, acc))
    if t.kind in filters.GENERATORS:
        for res in plugin.generate():
            acc.absorb(res)
    else:
        plugin.transform(acc.resmap)
        acc.resmap.invalidate()
    return acc


def _read_paths(run: _Run, t: Transformer, cfg: dict[str, Any], acc: Any) -> None:
    from orchestrator.accumulator import Accumulator, Target, resources_from_bytes
    from orchestrator.composition.schema import is_composition_path
    from orchestrator.fs import Loader, display

    unknown = sorted(set(cfg) - {"apiVersion", "kind", "metadata", "paths", "files"})
    if unknown:
        raise ValidationError(
            f"{t.kind}: unknown field(s) {', '.join(unknown)} (use paths, or files as in the "
            "prototype)"
        )
    paths = cfg.get("paths") if cfg.get("paths") is not None else cfg.get("files")
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths or []):
        raise ValidationError(f"{t.kind}: paths must be a list of non-empty strings")
    loader = Loader(t.base_dir, restrictor=run.options.load_restrictor)
    for path in paths:
        full = loader.abspath(path)
        if is_composition_path(full):
            sub = build_resources(full, run.state, stack=run.stack)
            _append(acc, sub.resmap, display(full))
            acc.merge(sub)
            continue
        if os.path.isdir(full):
            child = loader.child(path)
            sub = Target(run.state, child).accumulate(Accumulator())
            _append(acc, sub.resmap, display(full))
            acc.merge(sub)
            continue
        try:
            data = loader.read(path)
        except LoadError:
            if not os.path.exists(full):
                raise LoadError(
                    f"{t.kind}: path '{path}' does not exist (neither a file, a kustomization "
                    "nor a composition)",
                    file=display(t.file),
                ) from None
            raise
        where = display(full)
        _append(acc, resources_from_bytes(data, source=where), where)


def _append(acc: Any, resources: Any, where: str | None) -> None:
    from orchestrator.errors import ResourceConflictError

    for res in resources:
        try:
            acc.resmap.append(res)
        except ResourceConflictError as exc:
            exc.file = where
            raise


def _run_kustomization(run: _Run, t: Transformer, cfg: dict[str, Any], acc: Any) -> Any:
    import tempfile

    from orchestrator import yamlio
    from orchestrator.accumulator import Accumulator, Target
    from orchestrator.fs import Loader, display

    body = {k: v for k, v in cfg.items() if k != "metadata"}
    # An inline Kustomization has no file of its own: the engine reads it from a private
    # temporary file while its loader stays rooted at the Composition's directory, so its
    # relative paths mean what they say there.
    with tempfile.TemporaryDirectory(prefix="krm-inline-") as tmp:
        kfile = os.path.join(tmp, "kustomization.yaml")
        with open(kfile, "w", encoding="utf-8") as f:
            f.write(yamlio.dump(body))
        loader = Loader(t.base_dir, restrictor=run.options.load_restrictor)
        try:
            target = Target(run.state, loader, kfile)
        except KrmError as exc:
            exc.file = display(t.file)
            raise
    target.kfile = t.file
    target.source = display(t.file)
    new = Accumulator()
    new.tconfig = acc.tconfig
    new.vars = acc.vars
    new.var_field_specs = acc.var_field_specs
    # The previous transformers' output comes first, as if prepended to its resources.
    for res in acc.resmap:
        new.resmap.append_unchecked(res)
    return target.accumulate(new)


def _run_function(
    run: _Run, cons: Consolidated, t: Transformer, cfg: dict[str, Any], acc: Any
) -> Any:
    # The build's functions context carries --enable-exec, --network, trust and results.
    functions = run.state.functions()
    if functions is None:
        raise NotSupportedError(
            f"{t.api_version}/{t.kind}: KRM functions are not supported by this installation"
        )
    from orchestrator.fs import Loader

    config, root = _absolute_runtime(cfg, t, cons)
    plugin = functions.plugin(
        config,
        role="transformer",
        kustomization_dir=t.base_dir,
        catalogs=_catalog_set(run, cons),
        read_file=Loader(root, restrictor=run.options.load_restrictor).read,
    )
    plugin.transform(acc.resmap)
    acc.resmap.invalidate()
    return acc


def _absolute_runtime(
    cfg: dict[str, Any], t: Transformer, cons: Consolidated
) -> tuple[dict[str, Any], str]:
    """Resolve runtime paths: the defining directory first, then the build's root.

    The prototype resolved them against the working directory of its test harness (the build
    root); its fixtures rely on that for imported Compositions. Returns the config and the
    directory whose load restrictor applies to the files it names: the one the path was found
    below (else the defining directory).
    """
    runtime = cfg.get("runtime")
    if not isinstance(runtime, dict):
        return cfg, t.base_dir
    new_rt = dict(runtime)
    root = t.base_dir
    for key in ("exec", "starlark"):
        spec = runtime.get(key)
        if isinstance(spec, dict) and isinstance(spec.get("path"), str):
            path = spec["path"]
            if os.path.isabs(path):
                continue
            for base in (t.base_dir, cons.composition.directory):
                cand = os.path.normpath(os.path.join(base, path))
                if os.path.exists(cand):
                    new_rt[key] = {**spec, "path": cand}
                    if key == "starlark":
                        root = base
                    break
    return {**cfg, "runtime": new_rt}, root


def _catalog_set(run: _Run, cons: Consolidated) -> Any:
    from orchestrator.fs import display

    top = cons.composition.directory
    # Imported Compositions name local catalogs relative to themselves; the set is read from
    # the top directory, so those become absolute (same trust key: the real path).
    refs = [ref if d == top else absolute_catalog_ref(ref, d) for ref, d in cons.catalogs]
    functions = run.state.functions()
    if functions is None:
        raise NotSupportedError(
            "catalogs: needs the KRM functions support of krm", file=display(cons.composition.file)
        )
    return functions.catalogs(refs, top, display(cons.composition.file))


def build_resources(
    path: str, state: Any, *, resources: Any = None, stack: tuple[str, ...] = ()
) -> Any:
    """Consolidate and run the Composition at ``path``; returns the engine's accumulator.

    ``resources`` (a list of Resource) is the input; none for a generator-style use.
    """
    from orchestrator.accumulator import Accumulator
    from orchestrator.fs import display

    file = os.path.abspath(composition_file(path))
    # Compositions being run in this build, kept on the build state so that a cycle through
    # a Kustomization (composition -> kustomization -> composition) is caught too.
    active: list[str] = getattr(state, "_krm_compositions", None) or []
    state._krm_compositions = active
    chain_of = (*stack, *[f for f in active if f not in stack])
    if file in chain_of:
        chain = " -> ".join(display(f) for f in (*chain_of[chain_of.index(file) :], file))
        raise LoadError(f"composition cycle: {chain}", file=display(file))
    cons = consolidate(file)
    if cons.catalogs:
        # KEP-2906: a referenced catalog that is not trusted is an error at once, as for a
        # Kustomization, even if no function needs it.
        _catalog_set(_Run(state, stack), cons)
    acc = Accumulator()
    for res in resources or []:
        acc.resmap.append_unchecked(res)
    active.append(file)
    try:
        return run_consolidated(cons, acc, state, stack=stack)
    finally:
        active.pop()
