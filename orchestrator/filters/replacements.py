"""kustomize ``replacements:``: copy a field of one resource into fields of others.

Follows kustomize v5.5.0 (api/filters/replacement, kyaml PathMatcher/PathGetter): the source is
exactly one resource (matched on its current or any previous id), the value is the field at
``fieldPath`` (default ``metadata.name``), optionally one piece of it split on a delimiter; each
target field must exist unless ``options.create``; a scalar target keeps its YAML type and only
takes the new text, anything else takes the source node whole. Resources are mutated in place
(the fast path: only the addressed fields change).
"""

from __future__ import annotations

from functools import lru_cache

from orchestrator.errors import KrmError, ValidationError
from orchestrator.lazyre import Literal, Pattern
from orchestrator.resource import Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "MISSING",
    "LabelSelector",
    "ReplacementError",
    "apply",
    "get_field",
    "lookup",
    "parse_label_selector",
    "resolve_scalar",
    "scalar_text",
    "split_path",
]

_MAP, _SEQ, _SCALAR = "MappingNode", "SequenceNode", "ScalarNode"
_DEFAULT_FIELD_PATH = "metadata.name"
MISSING = object()
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_IDX_RE = Pattern(r"\d+")


class ReplacementError(KrmError):
    """A replacement could not be applied (no or several sources, missing target field)."""


# ---------------------------------------------------------------------------------------------
# Scalars: kyaml works on YAML nodes (tag + text); we work on PyYAML values, so convert.


def scalar_text(value: Any) -> str:
    """The text kyaml holds for a value (a YAML node's ``Value``); "" for maps and lists."""
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None or isinstance(value, dict | list):
        return "" if value is not None else "null"
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
    return str(value)


# YAML 1.2 core schema ints and floats.
_INT = Pattern(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = Pattern(
    r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)


def resolve_scalar(text: str) -> Any:
    """The value an untagged plain scalar ``text`` means under YAML 1.2's core schema."""
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if _INT.fullmatch(text):
        return int(text, 0) if text[:2] in ("0o", "0x") else int(text, 10)
    if _FLOAT.fullmatch(text):
        lowered = text.lower()
        if lowered.endswith("inf"):
            return float("-inf") if text.startswith("-") else float("inf")
        if lowered.endswith("nan"):
            return float("nan")
        return float(text)
    return text


def _yaml_tag(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def _typed_like(target: Any, text: str) -> Any:
    """``text`` as a value of the same YAML type as ``target`` (kyaml keeps the target's tag).

    A text that does not fit the tag (``abc`` under ``!!int``) makes kustomize's writer fail;
    so does it here, with the same message.
    """
    if isinstance(target, str):
        return text
    resolved = resolve_scalar(text)
    have, want = _yaml_tag(resolved), _yaml_tag(target)
    if have == want or (want == "float" and have == "int"):
        return float(resolved) if want == "float" else resolved
    raise _Undecodable(f"yaml: cannot decode !!{have} `{text}` as a !!{want}", text)


class _Undecodable(Exception):
    """Text under a YAML tag it cannot have; kustomize only notices when it writes the result."""

    def __init__(self, message: str, text: str):
        super().__init__(message)
        self.text = text


class _Scalar:
    """A source value whose text was cut by ``options.delimiter``: keeps the source's type."""

    __slots__ = ("like", "text")

    def __init__(self, like: Any, text: str):
        self.like = like
        self.text = text

    def materialize(self) -> Any:
        return _typed_like(self.like, self.text)


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return _MAP
    if isinstance(value, list):
        return _SEQ
    return _SCALAR


# ---------------------------------------------------------------------------------------------
# Paths


@lru_cache(maxsize=1024)
def split_path(path: str) -> tuple[str, ...]:
    """kyaml's SmarterPathSplitter on ".": ``\\.`` escapes a dot, ``[a.b=c]`` stays whole."""
    parts = path.split(".")
    if len(parts) > 1 and parts[0] == "":
        parts = parts[1:]
    joined: list[str] = [parts[0]]
    for part in parts[1:]:
        if joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + "." + part
        else:
            joined.append(part)
    result: list[str] = []
    i = 0
    while i < len(joined):
        elem = joined[i]
        if elem.startswith("[") and not elem.endswith("]"):
            bracketed = [elem]
            while i < len(joined) - 1:
                i += 1
                bracketed.append(joined[i])
                if joined[i].endswith("]"):
                    break
            text = ".".join(bracketed)
            result.append(text if "=" in text else text.strip("[]"))
        else:
            result.append(elem)
        i += 1
    return tuple(result)


def _is_list_index(part: str) -> bool:
    return part.startswith("[") and part.endswith("]")


def _split_index(part: str) -> tuple[str, str]:
    name, sep, value = part[1:-1].partition("=")
    if not sep:
        raise ValidationError(
            "list path element must contain fieldName=fieldValue for element to match"
        )
    return name, value


def _kind_error(expected: str, value: Any) -> ReplacementError:
    return ReplacementError(f"wrong node kind: expected {expected} but got {_kind_of(value)}")


_REGEXES: dict[str, re.Pattern[str] | Literal] = {}


def _regex(pattern: str) -> re.Pattern[str] | Literal:
    """The list element selector ``pattern`` compiled (a plain name needs no ``re``)."""
    compiled = _REGEXES.get(pattern)
    if compiled is None:
        if Literal.usable(pattern):
            compiled = Literal(pattern)
        else:
            import re

            try:
                compiled = re.compile(pattern)
            except re.error as err:
                raise ValidationError(f"invalid regular expression {pattern!r}: {err}") from None
        if len(_REGEXES) < 256:
            _REGEXES[pattern] = compiled
    return compiled


def lookup(node: Any, parts: tuple[str, ...]) -> Any:
    """kyaml PathGetter without create: the node at ``parts`` or MISSING."""
    for part in (p.strip() for p in parts):
        if not part:
            continue
        if node is None:
            return MISSING
        if part.lstrip("-").isdigit() and part.isascii() and part != "-":
            index = int(part)
            if index < 0:
                raise ReplacementError(f"array index {index} cannot be negative")
            if not isinstance(node, list):
                raise _kind_error(_SEQ, node)
            if index >= len(node):
                return MISSING
            node = node[index]
        elif part == "-":
            if not isinstance(node, list):
                raise _kind_error(_SEQ, node)
            if not node:
                return MISSING
            node = node[-1]
        elif part == "*":
            raise ReplacementError("wildcard is not supported in PathGetter")
        elif _is_list_index(part):
            name, value = _split_index(part)
            if not isinstance(node, list):
                raise _kind_error(_SEQ, node)
            for elem in node:
                if name == "":
                    if scalar_text(elem) == value and not isinstance(elem, dict | list):
                        node = elem
                        break
                elif isinstance(elem, dict) and name in elem and scalar_text(elem[name]) == value:
                    node = elem
                    break
            else:
                return MISSING
        else:
            if not isinstance(node, dict):
                raise _kind_error(_MAP, node)
            if part not in node:
                return MISSING
            node = node[part]
    return node


class _Slot:
    """A place in a resource that a replacement writes to."""

    __slots__ = ("container", "key")

    def __init__(self, container: Any, key: Any):
        self.container = container
        self.key = key

    def get(self) -> Any:
        return self.container[self.key]

    def set(self, value: Any) -> None:
        self.container[self.key] = value


class _Plain(str):
    """Text of a scalar that ``options.create`` made: untagged, so YAML rules decide its type.

    It lives in the object only while a replacement runs; :meth:`_Matcher.settle` resolves it.
    """

    __slots__ = ()


class _Matcher:
    """kyaml's PathMatcher over PyYAML data, remembering the scalars it creates."""

    __slots__ = ("create", "created", "out")

    def __init__(self, create: str | None):
        self.create = create
        self.out: list[_Slot] = []
        self.created: list[_Slot] = []

    def new_node(self, container: Any, key: Any, next_part: str | None) -> Any:
        """kyaml's getPathPartKind: what an intermediate (or the leaf) node is created as."""
        if next_part is None:
            kind = self.create
        elif _is_list_index(next_part) or _IDX_RE.fullmatch(next_part) or next_part == "*":
            kind = _SEQ
        else:
            kind = _MAP
        node: Any = {} if kind == _MAP else [] if kind == _SEQ else _Plain("")
        if isinstance(container, list):
            container.append(node)
        else:
            container[key] = node
        if isinstance(node, _Plain):
            self.created.append(_Slot(container, key))
        return node

    def settle(self) -> None:
        """Give created scalars that nothing overwrote their YAML-resolved value."""
        for slot in self.created:
            value = slot.get()
            if isinstance(value, _Plain):
                slot.set(resolve_scalar(str(value)))
        self.created.clear()

    def match(self, slot: _Slot, parts: tuple[str, ...]) -> None:
        """Collect every slot matching ``parts`` below ``slot`` into ``out``."""
        if not parts:
            self.out.append(slot)
            return
        node = slot.get()
        part, rest = parts[0], parts[1:]
        next_part = rest[0] if rest else None
        create = self.create
        if part.isdigit() and part.isascii():
            if node is None:
                if not create:
                    raise ReplacementError(f"index {part} specified but only 0 elements found")
                node = []
                slot.set(node)
            if not isinstance(node, list):
                raise _kind_error(_SEQ, node)
            index = int(part)
            if index == len(node) and create:
                self.new_node(node, index, next_part)
            if index >= len(node):
                raise ReplacementError(
                    f"index {index} specified but only {len(node)} elements found"
                )
            self.match(_Slot(node, index), rest)
        elif _is_list_index(part):
            name, pattern = _split_index(part)
            if node is None:
                if not create:
                    return
                node = []
                slot.set(node)
            if not isinstance(node, list):
                raise _kind_error(_SEQ, node)
            regex = _regex(pattern)
            if not self.match_elements(node, name, regex, rest) and create:
                # kyaml appends an element whose (untagged) value is the pattern, then looks again.
                if name == "":
                    node.append(_Plain(pattern))
                    self.created.append(_Slot(node, len(node) - 1))
                else:
                    node.append({name: _Plain(pattern)})
                    self.created.append(_Slot(node[-1], name))
                self.match_elements(node, name, regex, rest)
        elif part == "*":
            if node is None:
                return
            if not isinstance(node, list):
                raise _kind_error(_SEQ, node)
            for i in range(len(node)):
                self.match(_Slot(node, i), rest)
        else:
            if node is None:
                if not create:
                    return
                node = {}
                slot.set(node)
            if not isinstance(node, dict):
                raise _kind_error(_MAP, node)
            if part not in node:
                if not create:
                    return
                self.new_node(node, part, next_part)
            self.match(_Slot(node, part), rest)

    def match_elements(
        self, node: list[Any], name: str, regex: re.Pattern[str] | Literal, rest: tuple[str, ...]
    ) -> bool:
        """Visit list elements whose field ``name`` (or the element itself) matches ``regex``."""
        found = False
        for i, elem in enumerate(node):
            if name == "":
                # kyaml matches the element's YAML text, unanchored, and does not recurse.
                if not isinstance(elem, dict | list) and regex.search(scalar_text(elem).strip()):
                    self.out.append(_Slot(node, i))
                    found = True
                continue
            if not isinstance(elem, dict) or elem.get(name) is None:
                continue
            if not regex.search(scalar_text(elem[name]).strip()):
                continue
            before = len(self.out)
            self.match(_Slot(node, i), rest)
            found = found or len(self.out) > before
        return found


# ---------------------------------------------------------------------------------------------
# Label and annotation selectors (Kubernetes label selector syntax)


class LabelSelector:
    """A parsed Kubernetes label selector: ``a=b,c!=d,e in (f,g),h notin (i),j,!k``."""

    __slots__ = ("requirements",)

    def __init__(self, requirements: list[tuple[str, str, frozenset[str]]]):
        self.requirements = requirements

    def matches(self, labels: dict[str, Any] | None) -> bool:
        """True if ``labels`` satisfies every requirement."""
        labels = labels or {}
        for key, op, values in self.requirements:
            present = key in labels
            value = scalar_text(labels[key]) if present else None
            if op == "exists":
                ok = present
            elif op == "!":
                ok = not present
            elif op in ("=", "==", "in"):
                ok = present and value in values
            else:  # "!=" and "notin" also match when the key is absent
                ok = not present or value not in values
            if not ok:
                return False
        return True


_SELECTOR_TOKEN = Pattern(
    r"\s*(?:(?P<set>[^\s,=!()]+)\s+(?P<setop>in|notin)\s*\((?P<vals>[^)]*)\)"
    r"|(?P<key>!?[^\s,=!()]+)\s*(?:(?P<op>==|=|!=)\s*(?P<val>[^\s,=!()]*))?)\s*(?P<end>,|$)"
)


@lru_cache(maxsize=256)
def parse_label_selector(text: str) -> LabelSelector:
    """Parse a label (or annotation) selector; raise ValidationError on bad syntax."""
    requirements: list[tuple[str, str, frozenset[str]]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _SELECTOR_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValidationError(f"unable to parse requirement: invalid selector {text!r}")
        if m.group("set"):
            values = frozenset(v.strip() for v in m.group("vals").split(",") if v.strip())
            requirements.append((m.group("set"), m.group("setop"), values))
        else:
            key = m.group("key")
            op = m.group("op")
            if op:
                if key.startswith("!"):
                    raise ValidationError(f"unable to parse requirement: invalid selector {text!r}")
                requirements.append((key, op, frozenset({m.group("val")})))
            elif key.startswith("!"):
                requirements.append((key[1:], "!", frozenset()))
            else:
                requirements.append((key, "exists", frozenset()))
        pos = m.end()
        if m.group("end") == "," and pos >= len(text):
            raise ValidationError(f"unable to parse requirement: invalid selector {text!r}")
    return LabelSelector(requirements)


# ---------------------------------------------------------------------------------------------
# Ids and selectors


def get_field(spec: dict[str, Any], key: str) -> Any:
    """Field lookup as Go's JSON decoding does it: exact name first, then case-insensitive."""
    if key in spec:
        return spec[key]
    lowered = key.lower()
    for k, v in spec.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return None


def _str_field(spec: dict[str, Any], key: str, where: str) -> str:
    value = get_field(spec, key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{where}.{key} must be a string, got {value!r}")
    return value


def _eff_ns(namespace: str) -> str:
    return "default" if namespace in ("", "default") else namespace


class _Selector:
    """A kustomize ResId selector (group/version/kind/name/namespace) plus label selectors."""

    __slots__ = ("annotations", "group", "kind", "labels", "name", "namespace", "version")

    def __init__(self, spec: Any, where: str, *, with_labels: bool):
        if not isinstance(spec, dict):
            raise ValidationError(f"{where} must be a map")
        self.group = _str_field(spec, "group", where)
        self.version = _str_field(spec, "version", where)
        self.kind = _str_field(spec, "kind", where)
        self.name = _str_field(spec, "name", where)
        self.namespace = _str_field(spec, "namespace", where)
        self.labels = self.annotations = None
        if with_labels:
            label_text = _str_field(spec, "labelSelector", where)
            anno_text = _str_field(spec, "annotationSelector", where)
            self.labels = parse_label_selector(label_text) if label_text else None
            self.annotations = parse_label_selector(anno_text) if anno_text else None

    def id_empty(self) -> bool:
        return not (self.group or self.version or self.kind or self.name or self.namespace)

    def selects_id(self, group: str, version: str, kind: str, name: str, namespace: str) -> bool:
        # kyaml ResId.IsSelectedBy; cluster scope never applies to these ids.
        return (
            (not self.name or self.name == name)
            and (not self.namespace or _eff_ns(self.namespace) == _eff_ns(namespace))
            and (not self.group or self.group == group)
            and (not self.version or self.version == version)
            and (not self.kind or self.kind == kind)
        )

    def selects_any(self, ids: list[tuple[str, str, str, str, str]]) -> bool:
        return any(self.selects_id(*i) for i in ids)

    def has_label_part(self) -> bool:
        return self.labels is not None or self.annotations is not None

    def matches_labels(self, res: Resource) -> bool:
        md = res.obj.get("metadata") or {}
        if self.labels is not None and not self.labels.matches(md.get("labels")):
            return False
        return self.annotations is None or self.annotations.matches(md.get("annotations"))

    def id_string(self) -> str:
        gvk = f"{self.kind or '[noKind]'}.{self.version or '[noVer]'}.{self.group or '[noGrp]'}"
        return f"{gvk}/{self.name or '[noName]'}.{self.namespace or '[noNs]'}"


def _ids(res: Resource) -> list[tuple[str, str, str, str, str]]:
    """The resource's current id and every previous one (kustomize's MakeResIds)."""
    group, version, kind = res.gvk
    ids = [(group, version, kind, res.name, res.namespace)]
    ids.extend((group, version, kind, name, ns) for ns, name in res.previous)
    return ids


# ---------------------------------------------------------------------------------------------
# The filter


def _options(spec: dict[str, Any], where: str) -> tuple[str, int, bool]:
    opts = get_field(spec, "options")
    if opts is None:
        return "", 0, False
    if not isinstance(opts, dict):
        raise ValidationError(f"{where}.options must be a map")
    delimiter = _str_field(opts, "delimiter", f"{where}.options")
    index = get_field(opts, "index") or 0
    if not isinstance(index, int) or isinstance(index, bool):
        raise ValidationError(f"{where}.options.index must be an integer, got {index!r}")
    create = get_field(opts, "create") or False
    if not isinstance(create, bool):
        raise ValidationError(f"{where}.options.create must be true or false, got {create!r}")
    return delimiter, index, create


def _source_string(
    sel: _Selector, field_path: str, delimiter: str, index: int, create: bool
) -> str:
    """kustomize's SourceSelector.String(), used in its error messages."""
    parts = [sel.id_string()]
    if field_path:
        parts.append(field_path)
    if delimiter or create:
        parts.append(f"{delimiter}({index}), create={'true' if create else 'false'}")
    return ":".join(parts)


def _source_value(resources: list[Resource], spec: Any, where: str) -> Callable[[], Any]:
    """The replacement's value, as a function: kyaml hands out the live source node."""
    if not isinstance(spec, dict):
        raise ValidationError(f"{where}.source must be a map")
    sel = _Selector(spec, f"{where}.source", with_labels=False)
    field_path = _str_field(spec, "fieldPath", f"{where}.source")
    delimiter, index, create = _options(spec, f"{where}.source")
    described = _source_string(sel, field_path, delimiter, index, create)
    matches = [res for res in resources if sel.selects_any(_ids(res))]
    if len(matches) > 1:
        found = ", ".join(r.describe() for r in matches)
        raise ReplacementError(f"multiple matches for selector {described} (found {found})")
    if not matches:
        raise ReplacementError(f"nothing selected by {described}")
    field_path = field_path or _DEFAULT_FIELD_PATH
    try:
        value = lookup(matches[0].obj, split_path(field_path))
    except ReplacementError as err:
        raise ReplacementError(f"error looking up replacement source: {err.message}") from None
    if value is MISSING or value is None or value == {} or value == []:
        raise ReplacementError(
            f"fieldPath `{field_path}` is missing for replacement source {sel.id_string()}",
            resource=matches[0].describe(),
        )
    if not delimiter:
        # Without a delimiter kustomize keeps a reference to the source node itself: a target
        # that rewrites the source changes what later targets receive. Re-read it each time.
        obj, parts = matches[0].obj, split_path(field_path)
        last = [value]

        def live() -> Any:
            try:
                current = lookup(obj, parts)
            except ReplacementError:
                current = MISSING
            # A rewritten parent detaches kyaml's node, which then keeps its last value.
            if current is not MISSING:
                last[0] = current
            return last[0]

        return live
    if isinstance(value, dict | list):
        raise ReplacementError("delimiter option can only be used with scalar nodes")
    pieces = scalar_text(value).split(delimiter)
    if index >= len(pieces) or index < 0:
        raise ReplacementError(
            f"options.index {index} is out of bounds for value {scalar_text(value)}"
        )
    snapshot = _Scalar(value, pieces[index])
    return lambda: snapshot


def _value_text(value: Any) -> str:
    return value.text if isinstance(value, _Scalar) else scalar_text(value)


def _write(slot: _Slot, value: Any, delimiter: str, index: int) -> str | None:
    """kustomize's setFieldValue for one target field; returns a deferred decode error."""
    try:
        _set_value(slot, value, delimiter, index)
    except _Undecodable as err:
        # Keep the text (as kustomize keeps it under the old tag) and report at the end.
        slot.set(err.text)
        return str(err)
    return None


def _set_value(slot: _Slot, value: Any, delimiter: str, index: int) -> None:
    target = slot.get()
    if delimiter:
        if isinstance(target, dict | list):
            raise ReplacementError("delimiter option can only be used with scalar nodes")
        pieces = scalar_text(target).split(delimiter)
        text = _value_text(value)
        if index < 0:
            pieces.insert(0, text)
        elif index >= len(pieces):
            pieces.append(text)
        else:
            pieces[index] = text
        like = value.like if isinstance(value, _Scalar) else value
        value = _Scalar(like if not isinstance(like, dict | list) else "", delimiter.join(pieces))
    if isinstance(target, _Plain):
        # A created scalar has no tag: the text is written plain and read back by YAML rules.
        slot.set(_Plain(_value_text(value)))
    elif not isinstance(target, dict | list):
        slot.set(_typed_like(target, _value_text(value)))
    elif isinstance(value, _Scalar):
        slot.set(value.materialize())
    else:
        import copy

        slot.set(copy.deepcopy(value))


def _field_error(field_path: str, create: bool) -> str:
    if create:
        return f'unable to find or create field "{field_path}" in replacement target'
    return f'unable to find field "{field_path}" in replacement target'


def _apply_target(
    resources: list[Resource],
    value_of: Callable[[], Any],
    spec: Any,
    where: str,
    deferred: list[KrmError],
    touched: list[Resource],
) -> None:
    if not isinstance(spec, dict):
        raise ValidationError(f"{where} must be a map")
    select_spec = get_field(spec, "select")
    if select_spec is None:
        raise ReplacementError("target must specify resources to select")
    select = _Selector(select_spec, f"{where}.select", with_labels=True)
    reject_specs = get_field(spec, "reject") or []
    if not isinstance(reject_specs, list):
        raise ValidationError(f"{where}.reject must be a list")
    rejects = [
        _Selector(r, f"{where}.reject[{i}]", with_labels=True) for i, r in enumerate(reject_specs)
    ]
    field_paths = get_field(spec, "fieldPaths") or [_DEFAULT_FIELD_PATH]
    if not isinstance(field_paths, list) or not all(isinstance(p, str) for p in field_paths):
        raise ValidationError(f"{where}.fieldPaths must be a list of strings")
    delimiter, index, create = _options(spec, where)
    for res in resources:
        if not select.matches_labels(res):
            continue
        if any(r.has_label_part() and r.matches_labels(res) for r in rejects):
            continue
        ids = _ids(res)
        if not select.selects_any(ids):
            continue
        if any(not r.id_empty() and r.selects_any(ids) for r in rejects):
            continue
        for field_path in field_paths:
            if not touched or touched[-1] is not res:
                touched.append(res)
            create_kind = None
            if create:
                value = value_of()
                create_kind = _kind_of(value) if not isinstance(value, _Scalar) else _SCALAR
            matcher = _Matcher(create_kind)
            root = {"": res.obj}
            try:
                try:
                    matcher.match(_Slot(root, ""), split_path(field_path))
                except (ReplacementError, ValidationError) as err:
                    raise ReplacementError(
                        f"{_field_error(field_path, create)}: {err.message}",
                        resource=res.describe(),
                    ) from None
                if not matcher.out:
                    raise ReplacementError(
                        _field_error(field_path, create), resource=res.describe()
                    )
                for slot in matcher.out:
                    if slot.container is root:
                        raise ReplacementError(
                            f"fieldPath {field_path!r} addresses the whole resource",
                            resource=res.describe(),
                        )
                    problem = _write(slot, value_of(), delimiter, index)
                    if problem:
                        deferred.append(ReplacementError(problem, resource=res.describe()))
                    if isinstance(slot.get(), _Plain):
                        matcher.created.append(slot)
            finally:
                matcher.settle()


def apply(
    resources: list[Resource], replacements: list[dict[str, Any]], *, source: str | None = None
) -> None:
    """Apply kustomize ``replacements`` to ``resources`` in order, mutating them in place.

    ``source`` names the kustomization (or replacement file) for error messages.
    """
    if not isinstance(replacements, list):
        raise ValidationError("replacements must be a list", file=source)
    deferred: list[KrmError] = []
    touched: list[Resource] = []
    for i, spec in enumerate(replacements):
        where = f"replacements[{i}]"
        try:
            if not isinstance(spec, dict):
                raise ValidationError(f"{where} must be a map")
            source_spec = get_field(spec, "source")
            targets = get_field(spec, "targets")
            if source_spec is None or targets is None:
                raise ReplacementError("replacements must specify a source and at least one target")
            if not isinstance(targets, list):
                raise ValidationError(f"{where}.targets must be a list")
            value = _source_value(resources, source_spec, where)
            for j, target in enumerate(targets):
                before = len(deferred)
                _apply_target(resources, value, target, f"{where}.targets[{j}]", deferred, touched)
                for err in deferred[before:]:
                    _name_error(err, where, source)
        except KrmError as err:
            raise _name_error(err, where, source)
    for res in touched:
        name = (res.obj.get("metadata") or {}).get("name")
        if not name or not isinstance(name, str):
            deferred.append(
                ReplacementError(
                    f"missing metadata.name in object {res.api_version} {res.kind}", file=source
                )
            )
    if deferred:
        # kustomize's writer reports these only after every replacement ran.
        raise deferred[0]


def _name_error(err: KrmError, where: str, source: str | None) -> KrmError:
    """Prefix an error with the replacement it is about and the file it came from."""
    err.file = err.file or source
    if not err.message.startswith(where):
        err.message = f"{where}: {err.message}"
        err.args = (err.message,)
    return err
