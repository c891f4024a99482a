"""Consolidation: one Composition and its imports become one ordered transformer list.

Rules (KEP-2299, with the choices the KEP leaves open made explicit):

1. Each ``transformersFrom`` import is consolidated first, recursively, with its own imports,
   overrides and order applied. A path is a directory holding ``composition.yaml`` or the file
   itself. An import that leads back to a Composition already being consolidated is a cycle and
   an error naming the chain.
2. The list is: the ``prepend`` imports (the default mode) in ``transformersFrom`` order, then the
   Composition's own ``transformers`` (or ``modules``), then the ``append`` imports in order.
3. A transformer is identified by apiVersion (default ``builtin``), kind and metadata.name
   (default: the kind in kebab case). Two with the same identity in one list, or in the list an
   import produces, are an error.
4. ``transformerOverrides`` are strategic-merge patches onto imported transformers with the same
   identity; one that matches nothing is an error. The patched transformer's relative paths then
   resolve against the overriding file's directory when the override sets a path-bearing field
   (the prototype's fixtures override ``files`` with files of the overriding directory).
5. ``transformerOrder``: each entry must match exactly one transformer (by name, optionally
   kind, apiVersion, or group/version/namespace). Listed transformers run first, in the listed
   order; unlisted ones follow, keeping their relative order.
6. ``catalogs``: the Composition's own first, then each import's consolidated list in
   ``transformersFrom`` order; duplicates keep their first place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from orchestrator.composition.schema import (
    FILE_NAME,
    Composition,
    CompositionError,
    Transformer,
    load,
)

IMPORT_MODES = ("prepend", "append")
# Top-level config fields holding paths relative to the config's directory (builtins + runtime).
PATH_FIELDS = frozenset(
    {
        "files",
        "paths",
        "path",
        "envs",
        "env",
        "resources",
        "patches",
        "patchesStrategicMerge",
        "components",
        "runtime",
        "replacements",
        "configurations",
        "crds",
    }
)


@dataclass
class Consolidated:
    """The finalized transformer list of a Composition tree and its merged catalogs."""

    composition: Composition
    transformers: list[Transformer]
    # (catalog reference, directory of the Composition that named it)
    catalogs: list[tuple[str, str]] = field(default_factory=list)


def composition_file(path: str) -> str:
    """The ``composition.yaml`` a transformersFrom/resources path names (directory or file)."""
    return os.path.join(path, FILE_NAME) if os.path.isdir(path) else path


def consolidate(path: str, *, _stack: tuple[str, ...] = ()) -> Consolidated:
    """Consolidate the Composition in directory (or file) ``path`` and everything it imports."""
    file = os.path.abspath(composition_file(path))
    comp = load(file)
    return consolidate_loaded(comp, _stack=_stack)


def _fail(comp: Composition, problem: str) -> CompositionError:
    from orchestrator.fs import display

    return CompositionError(
        "failed to consolidate", comp.directory, [problem], file=display(comp.file)
    )


def consolidate_loaded(comp: Composition, *, _stack: tuple[str, ...] = ()) -> Consolidated:
    """Consolidate an already loaded Composition (see the module rules)."""
    stack = (*_stack, comp.file)
    own = list(comp.transformers)
    seen: dict[tuple[str, str, str], Transformer] = {}
    for t in own:
        if not t.name:
            raise _fail(
                comp,
                f"transformers field is invalid: line {t.line}: {t.field}[{t.index}]: transformer "
                f'identifier "{t.ident()}" must include a name (kind is required; '
                "metadata.name defaults to the kind in kebab case)",
            )
        if not t.kind:
            # The KEP schema requires kind; a named, kind-less config would otherwise pass
            # `krm consolidate` and fail only when run.
            raise _fail(
                comp,
                f"transformers field is invalid: line {t.line}: {t.field}[{t.index}]: transformer "
                f'identifier "{t.ident()}" must include a kind',
            )
        if t.key() in seen:
            raise _fail(comp, _duplicate_message(t, seen[t.key()]))
        seen[t.key()] = t

    prepended: list[Transformer] = []
    appended: list[Transformer] = []
    catalogs: list[tuple[str, str]] = [(ref, comp.directory) for ref in comp.catalogs]
    for imp in comp.imports:
        target = os.path.normpath(os.path.join(comp.directory, imp.path))
        if imp.mode not in IMPORT_MODES:
            raise _fail(
                comp,
                f'invalid import mode "{imp.mode}" specified for transformers from {target} '
                f"(line {imp.line}: transformersFrom[{imp.index}].importMode: use prepend or "
                "append)",
            )
        file = os.path.abspath(composition_file(target))
        if not os.path.exists(file):
            raise _fail(
                comp,
                f"line {imp.line}: transformersFrom[{imp.index}]: no {FILE_NAME} at {target}",
            )
        if file in stack:
            chain = " -> ".join(_short(f) for f in (*stack[stack.index(file) :], file))
            raise _fail(comp, f"transformersFrom cycle: {chain}")
        try:
            sub = consolidate(file, _stack=stack)
        except CompositionError as exc:
            raise _fail(comp, f'importing composition "{imp.path}": {exc.message}') from None
        for t in sub.transformers:
            other = seen.get(t.key())
            if other is not None:
                hint = ""
                if other.file == t.file and other.index == t.index:
                    hint = (
                        f"; {_short(t.file)} is imported twice (a diamond): import it once, or "
                        "render it eagerly with a ResourceAccumulator"
                    )
                elif not t.explicit_name and not other.explicit_name:
                    hint = (
                        "; metadata.name defaults to the kind in kebab case, so give each "
                        f"instance of {t.api_version}/{t.kind} its own metadata.name"
                    )
                raise _fail(
                    comp,
                    f'importing composition "{imp.path}" resulted in duplicate "{t.ident()}" '
                    f"transformer (imported from {t.where()}, also at {other.where()}){hint}",
                )
            seen[t.key()] = t
            t.imported_via.insert(0, _short(comp.file))
        (appended if imp.mode == "append" else prepended).extend(sub.transformers)
        catalogs.extend(sub.catalogs)

    imported = prepended + appended
    for ov in comp.overrides:
        _apply_override(comp, ov, imported)

    result = _apply_order(comp, prepended + own + appended)
    return Consolidated(comp, result, _dedupe_catalogs(catalogs))


def _short(file: str) -> str:
    from orchestrator.fs import display

    return display(file)


def _duplicate_message(t: Transformer, first: Transformer) -> str:
    hint = ""
    if not t.explicit_name and not first.explicit_name:
        hint = (
            "; metadata.name defaults to the kind in kebab case, so give each instance of "
            f"{t.api_version}/{t.kind} its own metadata.name"
        )
    return (
        f'transformers field is invalid: list contains multiple "{t.ident()}" transformers '
        f"({first.where()} and {t.where()}){hint}"
    )


def _apply_override(comp: Composition, ov: Transformer, imported: list[Transformer]) -> None:
    from orchestrator import strategicmerge
    from orchestrator.resource import Gvk

    matches = [t for t in imported if t.key() == ov.key() and ov.kind and ov.name]
    if not matches:
        raise _fail(
            comp,
            f'no transformer found for override "{ov.ident()}" ({ov.where()}; overrides match '
            "imported transformers by apiVersion, kind and metadata.name)",
        )
    target = matches[0]
    patch: dict[str, Any] = dict(ov.config)
    patch.setdefault("apiVersion", target.api_version)
    patch.setdefault("metadata", {})
    base = dict(target.config)
    base.setdefault("apiVersion", target.api_version)
    try:
        merged = strategicmerge.merge(
            base, patch, gvk=Gvk.from_api_version(target.api_version, target.kind)
        )
    except Exception as exc:  # the merge reports bad patches in its own words
        raise _fail(comp, f"applying override {ov.where()}: {exc}") from None
    if merged is None:
        raise _fail(comp, f"override {ov.where()} deletes the whole transformer config")
    # Keep the original identity text (e.g. a missing apiVersion stays missing).
    if "apiVersion" not in target.config and "apiVersion" not in ov.config:
        merged.pop("apiVersion", None)
    target.config = merged
    target.overridden_by.append(ov.where())
    if PATH_FIELDS & set(ov.config):
        target.base_dir = comp.directory


def _apply_order(comp: Composition, items: list[Transformer]) -> list[Transformer]:
    if not comp.order:
        return items
    chosen: list[Transformer] = []
    for entry in comp.order:
        found = [t for t in items if entry.matches(t)]
        where = f"line {entry.line}: transformerOrder[{entry.index}]"
        if not found:
            raise _fail(comp, f"{where}: no transformer matches {entry.describe()}")
        if len(found) > 1:
            ids = ", ".join(f'"{t.ident()}"' for t in found)
            raise _fail(
                comp,
                f"{where}: {entry.describe()} is ambiguous, it matches {ids}; add kind or "
                "apiVersion",
            )
        if any(found[0] is c for c in chosen):
            raise _fail(comp, f'{where}: "{found[0].ident()}" is listed twice')
        chosen.append(found[0])
    rest = [t for t in items if not any(t is c for c in chosen)]
    return chosen + rest


def _dedupe_catalogs(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for ref, directory in items:
        key = _catalog_key(ref, directory)
        if key not in seen:
            seen.add(key)
            out.append((ref, directory))
    return out


def _catalog_key(ref: str, directory: str) -> str:
    return absolute_catalog_ref(ref, directory)


def absolute_catalog_ref(ref: str, directory: str) -> str:
    """A catalog reference that means the same from any directory (local paths made absolute).

    Local references are ``path`` or ``repo//path?ref=REF`` (a local git repository), as
    :func:`orchestrator.functions.catalogs.parse_ref` reads them.
    """
    if "://" in ref or ref.startswith(("git+", "oci:", "git@")) or os.path.isabs(ref):
        return ref
    head, sep, query = ref.partition("?")
    if "//" in head:
        repo, _, sub = head.partition("//")
        return os.path.normpath(os.path.join(directory, repo)) + "//" + sub + sep + query
    return os.path.normpath(os.path.join(directory, ref))
