"""Field specs: which fields of which kinds a builtin transformer touches.

A field spec is a slash-separated path (``spec/template/metadata/labels``; ``\\/``
escapes a slash inside a key, ``name[]`` insists on a list) plus an optional
group/version/kind selector and ``create`` (make missing fields on the way).
Paths walk through lists transparently, as kustomize's fieldspec filter does.
The defaults (kustomize v5.5.0's) live in ``data/fieldspecs.yaml``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from orchestrator.errors import ValidationError
from orchestrator.resource import Gvk

# Returned by a setter to leave the field as it is.
KEEP = object()


class FieldSpec(NamedTuple):
    """One field path plus the GVK selector it applies to."""

    path: str
    parts: tuple[str, ...]
    group: str = ""
    version: str = ""
    kind: str = ""
    create: bool = False

    @property
    def gvk(self) -> Gvk:
        return Gvk(self.group, self.version, self.kind)

    def selects(self, gvk: Gvk) -> bool:
        """True when the selector (empty parts are wildcards) matches ``gvk``."""
        return (
            (not self.kind or self.kind == gvk.kind)
            and (not self.group or self.group == gvk.group)
            and (not self.version or self.version == gvk.version)
        )

    def key(self) -> tuple[str, str, str, str]:
        return (self.group, self.version, self.kind, self.path)


def split_path(path: str) -> tuple[str, ...]:
    """Split a field-spec path on ``/``, honouring ``\\/`` escapes."""
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(path):
        c = path[i]
        if c == "\\" and i + 1 < len(path) and path[i + 1] == "/":
            cur.append("/")
            i += 2
            continue
        if c == "/":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return tuple(p for p in parts if p != "")


@functools.lru_cache(maxsize=4096)
def make(
    path: str, group: str = "", version: str = "", kind: str = "", create: bool = False
) -> FieldSpec:
    """Build (and cache) a FieldSpec."""
    return FieldSpec(path, split_path(path), group or "", version or "", kind or "", create)


def parse(items: Iterable[Any] | None, *, source: str | None = None) -> list[FieldSpec]:
    """Field specs from their YAML form (``path``, ``group``, ``version``, ``kind``, ``create``)."""
    out: list[FieldSpec] = []
    for item in items or []:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise ValidationError(f"invalid field spec {item!r}: needs a 'path'", file=source)
        out.append(
            make(
                item["path"],
                str(item.get("group") or ""),
                str(item.get("version") or ""),
                str(item.get("kind") or ""),
                bool(item.get("create")),
            )
        )
    return out


def merge(base: list[FieldSpec], extra: Iterable[FieldSpec]) -> list[FieldSpec]:
    """Union of two field-spec lists, keeping order and dropping duplicates."""
    seen = {fs.key(): fs for fs in base}
    out = list(base)
    for fs in extra:
        old = seen.get(fs.key())
        if old is None:
            seen[fs.key()] = fs
            out.append(fs)
        elif fs.create and not old.create:
            out[out.index(old)] = fs
            seen[fs.key()] = fs
    return out


class NameBackRef(NamedTuple):
    """Resources of ``target`` kind are referred to by name from the ``referrers`` fields."""

    target: Gvk
    referrers: list[FieldSpec]


class TransformerConfig:
    """The field specs every builtin transformer uses (defaults plus ``configurations:``/crds)."""

    def __init__(self, data: dict[str, Any]):
        self.specs: dict[str, list[FieldSpec]] = {}
        self.name_reference: list[NameBackRef] = []
        for key, items in data.items():
            if key == "nameReference":
                for entry in items or []:
                    self.add_name_reference(entry)
            else:
                self.specs[key] = merge(self.specs.get(key, []), parse(items))

    def add_name_reference(self, entry: dict[str, Any]) -> None:
        """Merge one ``nameReference`` entry (target gvk + referrer field specs)."""
        target = Gvk(
            str(entry.get("group") or ""), str(entry.get("version") or ""), str(entry.get("kind"))
        )
        refs = parse(entry.get("fieldSpecs") or entry.get("referrers"))
        for i, br in enumerate(self.name_reference):
            if br.target == target:
                self.name_reference[i] = NameBackRef(target, merge(br.referrers, refs))
                return
        self.name_reference.append(NameBackRef(target, refs))

    def get(self, key: str) -> list[FieldSpec]:
        return self.specs.get(key, [])

    def copy(self) -> TransformerConfig:
        new = TransformerConfig({})
        new.specs = {k: list(v) for k, v in self.specs.items()}
        new.name_reference = [NameBackRef(b.target, list(b.referrers)) for b in self.name_reference]
        return new

    def merge_config(self, other: TransformerConfig) -> None:
        """Add another config's specs to this one (``configurations:``, CRDs, sub-builds)."""
        for key, specs in other.specs.items():
            self.specs[key] = merge(self.specs.get(key, []), specs)
        for br in other.name_reference:
            self.add_name_reference(
                {
                    "group": br.target.group,
                    "version": br.target.version,
                    "kind": br.target.kind,
                    "referrers": [],
                }
            )
            for i, mine in enumerate(self.name_reference):
                if mine.target == br.target:
                    self.name_reference[i] = NameBackRef(
                        br.target, merge(mine.referrers, br.referrers)
                    )


@functools.lru_cache(maxsize=1)
def _default_data() -> dict[str, Any]:
    from orchestrator import yamlio

    here = os.path.join(os.path.dirname(__file__), "data", "fieldspecs.yaml")
    with open(here, "rb") as f:
        return yamlio.load(f.read(), source=here)


def default_config() -> TransformerConfig:
    """A fresh copy of kustomize's default transformer config."""
    return TransformerConfig(_default_data())


class FieldPathError(Exception):
    """A field-spec path runs into a scalar (raised to the transformer, which adds context)."""


def select(
    specs: list[FieldSpec], gvk: Gvk, cache: dict[Gvk, list[FieldSpec]] | None = None
) -> list[FieldSpec]:
    """The specs whose selector matches ``gvk`` (memoised in ``cache`` per GVK)."""
    if cache is not None:
        hit = cache.get(gvk)
        if hit is not None:
            return hit
    out = [fs for fs in specs if fs.selects(gvk)]
    if cache is not None:
        cache[gvk] = out
    return out


def apply_selected(
    obj: dict[str, Any],
    spec: FieldSpec,
    setter: Callable[[Any], Any],
    *,
    create_kind: str | None = None,
) -> None:
    """Like :func:`apply` for a spec already known to select ``obj``'s GVK."""
    _visit(obj, spec.parts, 0, setter, spec.create and create_kind is not None, create_kind)


def apply(
    obj: dict[str, Any],
    spec: FieldSpec,
    setter: Callable[[Any], Any],
    *,
    create_kind: str | None = None,
) -> None:
    """Call ``setter(value)`` on every field ``spec`` reaches in ``obj`` and store its result.

    ``create_kind`` ("scalar" or "map") says what to create for a missing last field when
    the spec has ``create``; intermediate fields are created as maps. The object is
    mutated in place (the fast path: transformers run over every resource).
    """
    if not spec.selects(Gvk.from_api_version(obj.get("apiVersion"), obj.get("kind"))):
        return
    _visit(obj, spec.parts, 0, setter, spec.create and create_kind is not None, create_kind)


def _visit(
    node: Any,
    parts: tuple[str, ...],
    i: int,
    setter: Callable[[Any], Any],
    create: bool,
    create_kind: str | None,
) -> None:
    if node is None:
        return
    if isinstance(node, list):
        for el in node:
            _visit(el, parts, i, setter, create, create_kind)
        return
    if not isinstance(node, dict):
        raise FieldPathError(f"expected sequence or mapping node at '{'/'.join(parts[:i])}'")
    name = parts[i]
    is_seq = name.endswith("[]")
    if is_seq:
        name = name[:-2]
    last = i == len(parts) - 1
    can_create = create and not is_seq
    if name not in node:
        if not can_create:
            return
        node[name] = "" if (last and create_kind == "scalar") else {}
    value = node[name]
    if value is None and can_create:
        value = node[name] = "" if (last and create_kind == "scalar") else {}
    if last:
        new = setter(value)
        if new is not KEEP:
            node[name] = new
        return
    _visit(value, parts, i + 1, setter, create, create_kind)
