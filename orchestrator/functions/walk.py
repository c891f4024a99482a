"""The functionConfigs of a build's tree, found before anything runs (``schema.precheck``).

Every build walks its tree for them, and most find none: this module is kept light (the schema
machinery, ``orchestrator.functions.schema``, is imported only when one is found).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class Fields:
    """What ``dataclasses.dataclass`` would add to a class of plain values (without importing
    dataclasses at start-up): ``repr`` and ``==`` by the attributes named in ``_fields``, and
    no hash (the values may be lists)."""

    _fields: tuple[str, ...] = ()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]


class Located(Fields):
    """A functionConfig found in the tree, and how to find its node again for line numbers."""

    _fields = ("config", "file", "doc", "prefix", "inline_doc")

    def __init__(
        self,
        config: dict[str, Any],
        file: str | None,  # the file the config is written in
        doc: int = 0,  # index among the file's non-empty documents
        prefix: list[str | int] | None = None,  # path to it inside that document
        # For inline YAML text in a kustomization (the scalar at ``prefix``): the document's
        # index.
        inline_doc: int | None = None,
    ) -> None:
        self.config = config
        self.file = file
        self.doc = doc
        self.prefix: list[str | int] = [] if prefix is None else prefix
        self.inline_doc = inline_doc


def _plugin_entries(k: dict[str, Any], loader: Any, kfile: str) -> list[Located]:
    """The non-builtin generators/transformers/validators configs of one kustomization."""
    from orchestrator import yamlio
    from orchestrator.errors import KrmError

    found: list[Located] = []
    for field_name in ("generators", "transformers", "validators"):
        for i, entry in enumerate(k.get(field_name) or []):
            if isinstance(entry, dict):
                found.append(Located(entry, kfile, 0, [field_name, i]))
                continue
            if not isinstance(entry, str):
                continue  # an error the build reports
            if "\n" in entry:  # inline YAML text
                try:
                    docs = yamlio.load_all(entry, source=kfile)
                except KrmError:
                    continue
                for d, doc in enumerate(docs):
                    if isinstance(doc, dict):
                        found.append(Located(doc, kfile, 0, [field_name, i], inline_doc=d))
                continue
            try:
                if loader.is_dir(entry) or os.path.basename(entry) == "composition.yaml":
                    continue  # built when the build gets there; checked before it runs
                full = loader.abspath(entry)
                docs = yamlio.load_all(loader.read(entry), source=full)
            except KrmError:
                continue  # the build reports it in its own order
            for d, doc in enumerate(docs):
                if isinstance(doc, dict) and doc.get("kind") != "List":
                    found.append(Located(doc, full, d))
    return [f for f in found if f.config.get("apiVersion") != "builtin"]


def _walk(
    k: dict[str, Any],
    loader: Any,
    kfile: str,
    out: list[tuple[Located, Any]],
    preloaded: dict[str, tuple[dict[str, Any], list[str]]],
) -> None:
    """Every function config of the tree below one kustomization, with its kustomization.

    Each kustomization read is left in ``preloaded`` (with its warnings) for the build."""
    from orchestrator import kustomization
    from orchestrator.errors import KrmError
    from orchestrator.fs import find_kustomization

    for located in _plugin_entries(k, loader, kfile):
        out.append((located, (k, loader, kfile)))
    for path in [*(k.get("resources") or []), *(k.get("components") or [])]:
        if not isinstance(path, str):
            continue
        try:
            if not loader.is_dir(path):
                continue
            child = loader.child(path)
            child_file = find_kustomization(child.root)
            warnings: list[str] = []
            child_k = kustomization.load(child_file, warnings=warnings)
        except KrmError:
            continue
        preloaded[child_file] = (child_k, warnings)
        _walk(child_k, child, child_file, out, preloaded)


def function_configs(target: Any) -> list[tuple[Located, Any]]:
    """Every functionConfig of ``target``'s tree (the build's top ``orchestrator.build.Target``:
    its ``k``, ``loader``, ``kfile`` and ``build`` are used), with its kustomization, loader and
    kustomization file; each kustomization read is left in the build's ``preloaded``."""
    found: list[tuple[Located, Any]] = []
    _walk(target.k, target.loader, target.kfile, found, target.build.preloaded)
    return found
