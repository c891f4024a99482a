"""Field specs: which fields of which kinds a builtin transformer touches.

A field spec is a slash-separated path (``spec/template/metadata/labels``; ``\\/``
escapes a slash inside a key, ``name[]`` insists on a list) plus an optional
group/version/kind selector and ``create`` (make missing fields on the way).
Paths walk through lists transparently, as kustomize's fieldspec filter does.
The defaults (kustomize v5.5.0's) live in ``data/fieldspecs.yaml`` (read from its JSON copy).
"""

from __future__ import annotations

import os

from orchestrator.errors import ValidationError
from orchestrator.resource import Gvk, ImplicitNullMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, NamedTuple

    class _FieldSpecFields(NamedTuple):
        path: str
        parts: tuple[str, ...]
        group: str = ""
        version: str = ""
        kind: str = ""
        create: bool = False

    class _NameBackRefFields(NamedTuple):
        target: Gvk
        referrers: tuple[FieldSpec, ...]

else:
    # The classes typing.NamedTuple would make, without importing typing or collections (as
    # orchestrator.resource's Gvk and ResId: start-up time).
    from _collections import _tuplegetter

    from orchestrator.resource import Record

    class _FieldSpecFields(Record):
        __slots__ = ()
        _fields = __match_args__ = ("path", "parts", "group", "version", "kind", "create")
        path = _tuplegetter(0, "Alias for field number 0")
        parts = _tuplegetter(1, "Alias for field number 1")
        group = _tuplegetter(2, "Alias for field number 2")
        version = _tuplegetter(3, "Alias for field number 3")
        kind = _tuplegetter(4, "Alias for field number 4")
        create = _tuplegetter(5, "Alias for field number 5")

        def __new__(cls, path, parts, group="", version="", kind="", create=False):
            return tuple.__new__(cls, (path, parts, group, version, kind, create))

    class _NameBackRefFields(Record):
        __slots__ = ()
        _fields = __match_args__ = ("target", "referrers")
        target = _tuplegetter(0, "Alias for field number 0")
        referrers = _tuplegetter(1, "Alias for field number 1")

        def __new__(cls, target, referrers):
            return tuple.__new__(cls, (target, referrers))


# Returned by a setter to leave the field as it is.
KEEP = object()


class FieldSpec(_FieldSpecFields):
    """One field path plus the GVK selector it applies to."""

    __slots__ = ()

    @property
    def gvk(self) -> Gvk:
        """The group/version/kind of this resource or selector."""
        return Gvk(self.group, self.version, self.kind)

    def selects(self, gvk: Gvk) -> bool:
        """True when the selector (empty parts are wildcards) matches ``gvk``."""
        return (
            (not self.kind or self.kind == gvk.kind)
            and (not self.group or self.group == gvk.group)
            and (not self.version or self.version == gvk.version)
        )

    def key(self) -> tuple[str, str, str, str]:
        """Identity of the spec for de-duplication: GVK and path."""
        return (self.group, self.version, self.kind, self.path)


def split_path(path: str) -> tuple[str, ...]:
    """Split a field-spec path on ``/``, honouring ``\\/`` escapes."""
    if "\\" not in path:
        return tuple(filter(None, path.split("/")))
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


# FieldSpecs made, by their arguments (a dict, not functools.lru_cache: functools, with the
# collections it imports, is ~1.5 ms of a small build's start-up that nothing else there needs).
_MADE: dict[tuple[str, str, str, str, bool], FieldSpec] = {}
_MADE_SIZE = 4096


def make(
    path: str, group: str = "", version: str = "", kind: str = "", create: bool = False
) -> FieldSpec:
    """Build (and cache) a FieldSpec."""
    key = (path, group, version, kind, create)
    spec = _MADE.get(key)
    if spec is None:
        if len(_MADE) >= _MADE_SIZE:
            _MADE.clear()
        spec = FieldSpec(path, split_path(path), group or "", version or "", kind or "", create)
        _MADE[key] = spec
    return spec


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


def merge(base: Iterable[FieldSpec], extra: Iterable[FieldSpec]) -> list[FieldSpec]:
    """kustomize's FsSlice.MergeAll: append each new spec unless one already there with the
    same path is selected by its GVK (so a general spec after a specific one is dropped)."""
    out = list(base)
    by_path: dict[str, list[FieldSpec]] = {}
    for x in out:
        by_path.setdefault(x.path, []).append(x)
    for fs in extra:
        same = by_path.get(fs.path)
        hit = None
        if same is not None:
            group, version, kind = fs.group, fs.version, fs.kind
            for x in same:
                if (
                    (not group or group == x.group)
                    and (not version or version == x.version)
                    and (not kind or kind == x.kind)
                ):
                    hit = x
                    break
        if hit is None:
            out.append(fs)
            if same is None:
                by_path[fs.path] = [fs]
            else:
                same.append(fs)
        elif hit.create != fs.create:
            raise ValidationError(
                f"conflicting fieldspecs: {fs.path} ({fs.kind or 'any kind'}) with and without "
                "create"
            )
    return out


_ORDER_FIRST = (
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
    "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
    "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
)  # fmt: skip
_TYPE_ORDER = {k: i - len(_ORDER_FIRST) for i, k in enumerate(_ORDER_FIRST)}
_TYPE_ORDER.update({"MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 2})


def gvk_sort_key(gvk: Gvk) -> tuple[int, str]:
    """kustomize's Gvk.IsLessThan as a key: kind rank, then group_version_kind."""
    return (
        _TYPE_ORDER.get(gvk.kind, 0),
        f"{gvk.group or '~G'}_{gvk.version or '~V'}_{gvk.kind or '~K'}",
    )


def sort_specs(specs: list[FieldSpec]) -> list[FieldSpec]:
    """Field specs in the order kustomize keeps them (its TransformerConfig.sortFields)."""
    return sorted(specs, key=_spec_sort_key)


def _spec_sort_key(fs: FieldSpec) -> tuple[int, str]:
    return (
        _TYPE_ORDER.get(fs.kind, 0),
        f"{fs.group or '~G'}_{fs.version or '~V'}_{fs.kind or '~K'}",
    )


class NameBackRef(_NameBackRefFields):
    """Resources of ``target`` kind are referred to by name from the ``referrers`` fields."""

    __slots__ = ()


class TransformerConfig:
    """The field specs every builtin transformer uses (defaults plus ``configurations:``/crds).

    Built and merged like kustomize's TransformerConfig: each list sorted by GVK, merges
    with :func:`merge` (whose order-dependent de-duplication is observable). The lists are
    kept as tuples, so that configs share them and merges of the same lists are done once.
    """

    def __init__(self, data: dict[str, Any]):
        self.specs: dict[str, tuple[FieldSpec, ...]] = {}
        self.name_reference: list[NameBackRef] = []
        for key, items in data.items():
            if key == "nameReference":
                self._merge_backrefs(self._parse_backref(entry) for entry in items or [])
            else:
                self.specs[key] = _merged(self.specs.get(key, ()), tuple(parse(items)))
        self._sort()

    @staticmethod
    def _parse_backref(entry: dict[str, Any]) -> NameBackRef:
        target = Gvk(
            str(entry.get("group") or ""), str(entry.get("version") or ""), str(entry.get("kind"))
        )
        return NameBackRef(target, tuple(parse(entry.get("fieldSpecs") or entry.get("referrers"))))

    def _merge_backrefs(self, backrefs: Iterable[NameBackRef]) -> bool:
        """Merge each into the entry for its target, or append it; whether one was appended."""
        refs = self.name_reference
        # Targets are unique in the list: an entry for a known target is merged into it.
        index = {br.target: i for i, br in enumerate(refs)}
        appended = False
        for br in backrefs:
            i = index.get(br.target)
            if i is None:
                index[br.target] = len(refs)
                refs.append(br)
                appended = True
                continue
            mine = refs[i]
            referrers = _merged(mine.referrers, br.referrers)
            if referrers is not mine.referrers:
                refs[i] = NameBackRef(mine.target, referrers)
        return appended

    def add_name_reference(self, entry: dict[str, Any]) -> None:
        """Merge one ``nameReference`` entry (target gvk + referrer field specs)."""
        self._merge_backrefs([self._parse_backref(entry)])
        self._sort()

    def _sort(self, backrefs: bool = True) -> None:
        # backrefs=False: no entry was added to the (sorted) name_reference list, so its
        # order stands.
        for key, specs in self.specs.items():
            self.specs[key] = _sorted(specs)
        if backrefs:
            self.name_reference.sort(key=lambda br: gvk_sort_key(br.target))

    def get(self, key: str) -> list[FieldSpec]:
        """The field specs of one category (e.g. ``commonLabels``)."""
        return list(self.specs.get(key, ()))

    def copy(self) -> TransformerConfig:
        """An independent copy."""
        new = TransformerConfig({})
        # Spec tuples and NameBackRefs are immutable: sharing them is copying.
        new.specs = dict(self.specs)
        new.name_reference = list(self.name_reference)
        return new

    def merge_config(self, other: TransformerConfig) -> None:
        """Merge another config into this one, in place (kustomize's TransformerConfig.Merge)."""
        for key, specs in other.specs.items():
            self.specs[key] = _merged(self.specs.get(key, ()), specs)
        self._sort(backrefs=self._merge_backrefs(other.name_reference))


# Every kustomization of a build merges the same default lists into its config and its
# parent's: :func:`merge` and :func:`sort_specs` of tuples already seen are looked up by
# identity. An entry keeps its tuples alive, so that their ids stay theirs.
_MERGED: dict[tuple[int, int], tuple[tuple[FieldSpec, ...], ...]] = {}
_SORTED: dict[int, tuple[tuple[FieldSpec, ...], tuple[FieldSpec, ...]]] = {}
_MEMO_SIZE = 1024


def _merged(base: tuple[FieldSpec, ...], extra: tuple[FieldSpec, ...]) -> tuple[FieldSpec, ...]:
    """:func:`merge` of two tuples, memoised; ``base`` itself when nothing was added."""
    hit = _MERGED.get((id(base), id(extra)))
    if hit is not None:
        return hit[2]
    out = merge(base, extra)
    if len(out) == len(base):
        result = base
    elif not base and len(out) == len(extra):
        result = extra
    else:
        result = tuple(out)
    if len(_MERGED) >= _MEMO_SIZE:
        _MERGED.clear()
    _MERGED[(id(base), id(extra))] = (base, extra, result)
    return result


def _sorted(specs: tuple[FieldSpec, ...]) -> tuple[FieldSpec, ...]:
    """:func:`sort_specs` of a tuple, memoised; ``specs`` itself when already in order."""
    hit = _SORTED.get(id(specs))
    if hit is not None:
        return hit[1]
    out = tuple(sort_specs(list(specs)))
    result = specs if out == specs else out
    if len(_SORTED) >= _MEMO_SIZE:
        _SORTED.clear()
    _SORTED[id(specs)] = (specs, result)
    return result


_DEFAULTS: dict[str, Any] = {}  # "data" and "master", once read


def _default_data() -> dict[str, Any]:
    # data/fieldspecs.json is generated from the commented fieldspecs.yaml (gen_fieldspecs.py):
    # JSON parses in a fraction of the YAML loader's time, which every build pays at start-up.
    specs: dict[str, Any] | None = _DEFAULTS.get("data")
    if specs is None:
        from orchestrator import jsonc

        here = os.path.join(os.path.dirname(__file__), "data", "fieldspecs.json")
        with open(here, encoding="utf-8") as f:
            specs = _DEFAULTS["data"] = jsonc.loads(f.read())
    return specs


def _default_master() -> TransformerConfig:
    master: TransformerConfig | None = _DEFAULTS.get("master")
    if master is None:
        master = _DEFAULTS["master"] = TransformerConfig(_default_data())
    return master


def default_config() -> TransformerConfig:
    """A fresh copy of kustomize's default transformer config (parsed and merged once)."""
    return _default_master().copy()


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
    elif is_seq and (value is None or (value == "" and name in _implicit(node))):
        # kyaml's fieldspec filter turns a null it meets at a ``[]`` step into an empty
        # sequence, created or not (printed ``[]``).
        value = node[name] = []
    if last:
        new = setter(value)
        if new is not KEEP:
            node[name] = new
        return
    _visit(value, parts, i + 1, setter, create, create_kind)


def _implicit(node: dict[str, Any]) -> frozenset[str]:
    # A value left empty in a flow mapping reads as "", but is null to kyaml.
    return node.implicit_nulls if node.__class__ is ImplicitNullMap else frozenset()
