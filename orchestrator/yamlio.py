"""YAML input and output, matching kustomize's reading and writing.

Reading follows go-yaml v3 (what kyaml uses): YAML 1.2 core-schema scalars, so
``yes``/``on``/``no`` and timestamps stay strings, and keys are always strings.
Writing follows what ``kustomize build`` prints: each resource goes through JSON
and go-yaml v2 (sigs.k8s.io/yaml), so keys are sorted in go-yaml's natural order,
sequences are indentless, strings that go-yaml v2 would read as something else are
double-quoted, and multi-line strings become literal block scalars. Both sides use
PyYAML's libyaml bindings (the C loader and emitter), the same emitter go-yaml ports.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable
from functools import cmp_to_key
from typing import Any

import yaml

from orchestrator import yamlemit, yamlfast
from orchestrator.errors import YamlError
from orchestrator.resource import ImplicitNullMap
from orchestrator.yamllimits import check_text, decode_error

# ----------------------------------------------------------------------------- reading

_INT_RE = re.compile(r"^[-+]?(?:0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)$")
_FLOAT_RE = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


class Loader(yaml.CSafeLoader):
    """C-accelerated safe loader with go-yaml v3 (YAML 1.2 core) scalar resolution."""


def _parse_go_int(text: str) -> int | None:
    """Parse like go-yaml v3: underscores dropped, then Go's base-0 ParseInt."""
    plain = text.replace("_", "")
    sign = 1
    body = plain
    if body[:1] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not body:
        return None
    low = body[:2].lower()
    try:
        if low == "0x":
            return sign * int(body[2:], 16)
        if low == "0o":
            return sign * int(body[2:], 8)
        if low == "0b":
            return sign * int(body[2:], 2)
        if len(body) > 1 and body[0] == "0":
            # YAML 1.1 style octal (0777) is still decoded by go-yaml v3.
            return sign * int(body[1:], 8)
        return sign * int(body, 10)
    except ValueError:
        return None


def scalar_text(key: Any) -> str:
    """The text of a YAML scalar as Go sees it (map keys, string fields)."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return ""
    if isinstance(key, float):
        return format_float(key)
    return str(key)


def _mark(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_NUM_START = frozenset("-+0123456789.")
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}


def _fast_resolve(self: Any, kind: Any, value: Any, implicit: Any) -> str:
    """go-yaml v3 implicit typing of plain scalars (the C composer calls this per scalar)."""
    if kind is yaml.ScalarNode:
        if not implicit[0]:
            return _STR
        if value in _NULLS:
            return _NULL
        if value in _BOOLS:
            return _BOOL
        if value == "<<":
            return _MERGE
        if value[0] in _NUM_START:
            if _INT_RE.match(value):
                return _INT
            if _FLOAT_RE.match(value):
                return _FLOAT
        return _STR
    if kind is yaml.SequenceNode:
        return _SEQ
    return _MAP


Loader.resolve = _fast_resolve  # type: ignore[method-assign]


def _scalar(node: yaml.ScalarNode, bools: dict[str, bool] = _BOOLS) -> Any:
    tag = node.tag
    value = node.value
    if tag == _STR:
        return value
    if tag == _INT:
        parsed = _parse_go_int(value)
        if parsed is not None:
            return parsed
        tag = _FLOAT if _FLOAT_RE.match(value.replace("_", "")) else _STR
    if tag == _FLOAT:
        v = value.replace("_", "")
        low = v.lower()
        if low.endswith(".inf"):
            return -math.inf if low.startswith("-") else math.inf
        if low == ".nan":
            return math.nan
        try:
            return float(v)
        except ValueError:
            return value
    if tag == _BOOL:
        b = bools.get(value)
        return value if b is None else b
    if tag == _NULL:
        return None if value in _NULLS else value
    # Timestamps, binary and custom tags keep their text, as kyaml does.
    return value


def _v3_plain(text: str) -> Any:
    """The value go-yaml v3 gives ``text`` written as a plain scalar."""
    return _scalar(yaml.ScalarNode(_fast_resolve(None, yaml.ScalarNode, text, (True, False)), text))


def _construct(node: Any, bools: dict[str, bool] = _BOOLS, dup_ok: bool = False) -> Any:
    """Plain Python data from a composed node (faster than PyYAML's constructor)."""
    cls = node.__class__
    if cls is yaml.ScalarNode:
        return _scalar(node, bools)
    if cls is yaml.SequenceNode:
        return [_construct(c, bools, dup_ok) for c in node.value]
    result: dict[str, Any] = {}
    merged: list[Any] = []
    seen: dict[str, Any] = {}
    implicit: list[str] | None = None
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            merged.append(value_node)
            continue
        if key_node.__class__ is not yaml.ScalarNode:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be scalars", key_node.start_mark
            )
        key = scalar_text(_scalar(key_node, bools))
        if key in seen and not dup_ok:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f'mapping key "{key_node.value}" already defined at line {seen[key].line + 1}',
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark
        value = result[key] = _construct(value_node, bools, dup_ok)
        if value is None and not value_node.value:
            implicit = [key] if implicit is None else [*implicit, key]
            if node.flow_style:
                result[key] = ""
    if merged:
        base: dict[str, Any] = {}
        for m in merged:
            sources = m.value if m.__class__ is yaml.SequenceNode else [m]
            for src in reversed(sources):
                if src.__class__ is not yaml.MappingNode:
                    raise yaml.constructor.ConstructorError(
                        None, None, "merge value must be a mapping", src.start_mark
                    )
                for k, v in _construct(src, bools, dup_ok).items():
                    base[k] = v
        base.update(result)
        result = base
    if implicit is not None:
        return ImplicitNullMap(result, frozenset(implicit))
    return result


def load_all(text: str | bytes, *, source: str | None = None) -> list[Any]:
    """Parse every document of a YAML stream; empty documents are dropped."""
    return _load_docs(Loader, text, source)


def _load_docs(
    loader_class: type, text: str | bytes, source: str | None, **construct: Any
) -> list[Any]:
    """The non-empty documents of a stream, read with ``loader_class``'s scalar typing."""
    raw = None
    if isinstance(text, bytes):
        if text[:2] not in (b"\xff\xfe", b"\xfe\xff") and text[:3] != b"\xef\xbb\xbf":
            raw = text  # UTF-8 as it is: the fast path parses these bytes
        text = decode(text, source=source)
    if loader_class is Loader and yamlfast.wanted(text):
        fast = yamlfast.load_docs(text, raw, _v3_plain)
        if fast is not None:
            return fast
    check_text(text, source=source)  # depth and alias budget, before the recursive composer
    loader = loader_class(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                doc = _construct(node, **construct)
                if doc is not None:
                    docs.append(doc)
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {_mark(exc)}", file=source) from None
    finally:
        loader.dispose()
    return docs


class Loader11(yaml.CSafeLoader):
    """go-yaml v2 (YAML 1.1) scalar typing: how kustomize reads kustomization files."""


_V2_BOOLS = {
    **{w: True for w in ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"]},
    **{
        w: False
        for w in ["n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"]
    },
}
_V2_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_V2_SPECIAL_FLOATS = frozenset(
    sign + dot for sign in ("", "+", "-") for dot in (".inf", ".Inf", ".INF")
) | frozenset([".nan", ".NaN", ".NAN"])


def _v2_resolve(self: Any, kind: Any, value: Any, implicit: Any) -> str:
    if kind is yaml.ScalarNode:
        if not implicit[0]:
            return _STR
        if value in _NULLS:
            return _NULL
        if value in _V2_BOOLS:
            return _BOOL
        if value == "<<":
            return _MERGE
        if value in _V2_SPECIAL_FLOATS:
            return _FLOAT
        if value[0] in _NUM_START:
            plain = value.replace("_", "")
            if _INT_RE.match(value) and _parse_go_int(value) is not None:
                return _INT
            if _V2_FLOAT.match(plain):
                return _FLOAT
        return _STR
    if kind is yaml.SequenceNode:
        return _SEQ
    return _MAP


Loader11.resolve = _v2_resolve  # type: ignore[method-assign]


def load_yaml11(text: str | bytes, *, source: str | None = None) -> list[Any]:
    """Parse a YAML stream with go-yaml v2's YAML 1.1 typing (y/yes/on are booleans)."""
    # go-yaml v2 (non-strict) lets a repeated key win over the earlier one.
    return _load_docs(Loader11, text, source, bools=_V2_BOOLS, dup_ok=True)


def load(text: str | bytes, *, source: str | None = None) -> Any:
    """Parse a single-document YAML text (None when empty)."""
    docs = load_all(text, source=source)
    if len(docs) > 1:
        raise YamlError("expected a single YAML document", file=source)
    return docs[0] if docs else None


def decode(data: bytes, *, source: str | None = None) -> str:
    """Decode file bytes as UTF-8 (or UTF-16/32 when a BOM says so)."""
    try:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return data.decode("utf-16")
        if data[:3] == b"\xef\xbb\xbf":
            return data[3:].decode("utf-8")
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise decode_error(data, exc, source) from None


# ----------------------------------------------------------------------------- writing


def _go_less(a: str, b: str) -> bool:
    """go-yaml's keyList.Less for two string keys: natural order, letters before digits."""
    ar, br = a, b
    digits = False
    n = min(len(ar), len(br))
    for i in range(n):
        ca, cb = ar[i], br[i]
        if ca == cb:
            digits = ca.isdigit()
            continue
        al, bl = ca.isalpha(), cb.isalpha()
        if al and bl:
            return ca < cb
        if al or bl:
            return al if digits else bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and ar[j].isdigit():
                if ar[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(ar) and ar[ai].isdigit():
            an = an * 10 + int(ar[ai])
            ai += 1
        bi = i
        while bi < len(br) and br[bi].isdigit():
            bn = bn * 10 + int(br[bi])
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(ar) < len(br)


def _go_cmp(a: str, b: str) -> int:
    if _go_less(a, b):
        return -1
    if _go_less(b, a):
        return 1
    return 0


_GO_KEY = cmp_to_key(_go_cmp)
_ORDER_CACHE: dict[tuple[str, ...], tuple[str, ...]] = {}
_SIMPLE_KEY = re.compile(r"^[A-Za-z]+$")


def go_sorted_keys(keys: Iterable[str]) -> tuple[str, ...]:
    """Keys in go-yaml's map key order (cached per key set: manifests repeat them)."""
    tkeys = tuple(keys)
    hit = _ORDER_CACHE.get(tkeys)
    if hit is not None:
        return hit
    if all(_SIMPLE_KEY.match(k) for k in tkeys):
        # Only letters: go-yaml compares rune by rune, i.e. plain code point order.
        order = tuple(sorted(tkeys))
    else:
        order = tuple(sorted(tkeys, key=_GO_KEY))
    if len(_ORDER_CACHE) < 50000:
        _ORDER_CACHE[tkeys] = order
    return order


# Strings go-yaml v2 would read back as another type when written plain.
_V2_SPECIAL = (
    frozenset(_V2_BOOLS) | frozenset(["null", "Null", "NULL", "~", "<<"]) | _V2_SPECIAL_FLOATS
)
_V2_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$"
)
_V2_BASE60 = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_GO_INT = re.compile(
    r"^[-+]?(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|0(?:_?[0-7])*|[1-9](?:_?[0-9])*)$"
)


def _v2_needs_quotes(s: str) -> bool:
    """True when go-yaml v2 would resolve the plain scalar ``s`` to a non-string."""
    if s in _V2_SPECIAL or s == "":
        return True
    c = s[0]
    if c.isdigit() or c in "+-.":
        if c.isdigit() and _V2_TIMESTAMP.match(s):
            return True
        plain = s.replace("_", "")
        if _GO_INT.match(plain) or _V2_FLOAT.match(plain):
            return True
        if plain.startswith(("0b", "-0b")):
            return True
        if _V2_BASE60.match(s):
            return True
    return False


def format_float(f: float) -> str:
    """Format a float the way the JSON round trip plus go-yaml v2 would."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    if f == int(f) and abs(f) < 1e21:
        return str(int(f))
    r = repr(f)
    if "e" in r:
        mant, _, exp = r.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        exp = exp.lstrip("+-").lstrip("0") or "0"
        if len(exp) < 2:
            exp = "0" + exp
        return f"{mant}e{sign}{exp}"
    return r


_STYLE_CACHE: dict[str, str | None] = {}


def _str_style(data: str) -> str | None:
    style = _STYLE_CACHE.get(data, 0)
    if style == 0:
        if "\n" in data:
            style = "|"
        elif _v2_needs_quotes(data):
            style = '"'
        else:
            style = None
        if len(_STYLE_CACHE) < 100000:
            _STYLE_CACHE[data] = style
    return style  # type: ignore[return-value]


def _node(v: Any) -> Any:
    """A YAML node for ``v`` styled like go-yaml v2 output."""
    t = v.__class__
    if t is str:
        return yaml.ScalarNode(_STR, v, style=_str_style(v))
    if t is dict:
        keys = v.keys()
        if not all(k.__class__ is str for k in keys):
            v = {scalar_text(k): x for k, x in v.items()}
            keys = v.keys()
        return yaml.MappingNode(
            _MAP,
            [
                (yaml.ScalarNode(_STR, k, style=_str_style(k)), _node(v[k]))
                for k in go_sorted_keys(keys)
            ],
            flow_style=False,
        )
    if t is list or t is tuple:
        return yaml.SequenceNode(_SEQ, [_node(x) for x in v], flow_style=False)
    if t is bool:
        return yaml.ScalarNode(_BOOL, "true" if v else "false")
    if t is int:
        return yaml.ScalarNode(_INT, str(v))
    if t is float:
        text = format_float(v)
        return yaml.ScalarNode(_INT if _GO_INT.match(text) else _FLOAT, text)
    if v is None:
        return yaml.ScalarNode(_NULL, "null")
    if isinstance(v, dict):
        return _node(dict(v))
    if isinstance(v, (list, tuple)):
        return _node(list(v))
    if isinstance(v, bool):
        return _node(bool(v))
    if isinstance(v, int):
        return _node(int(v))
    if isinstance(v, float):
        return _node(float(v))
    return _node(str(v))


def _dump_resolve(self: Any, kind: Any, value: Any, implicit: Any) -> str:
    """go-yaml v2 plain-scalar typing, so ints/bools/nulls are written without tags."""
    if kind is yaml.ScalarNode:
        if not implicit[0]:
            return _STR
        if value in ("null", "~", "Null", "NULL"):
            return _NULL
        if value == "true" or value == "false":
            return _BOOL
        if value and value[0] in _NUM_START:
            if _GO_INT.match(value):
                return _INT
            if _DUMP_FLOAT.match(value):
                return _FLOAT
        return _STR
    if kind is yaml.SequenceNode:
        return _SEQ
    return _MAP


_DUMP_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|-?\.inf|\.nan)$"
)


_DUMPER: list[Any] = []


def _dumper_class() -> Any:
    """libyaml's emitter configured like go-yaml v2's (made on first use: the fast writer
    in yamlemit needs it only for the documents it defers)."""
    if _DUMPER:
        return _DUMPER[0]
    from yaml._yaml import CEmitter

    class Dumper(CEmitter):
        """libyaml's emitter configured like go-yaml v2's (2-space indent, width 80, unicode)."""

        resolve = _dump_resolve

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            """No path-dependent resolvers."""

        def ascend_resolver(self) -> None:
            """No path-dependent resolvers."""

        def __init__(self, stream: Any) -> None:
            CEmitter.__init__(
                self,
                stream,
                canonical=False,
                indent=2,
                width=80,
                allow_unicode=True,
                line_break="\n",
                encoding=None,
                explicit_start=False,
                explicit_end=False,
                version=None,
                tags=None,
            )

    _DUMPER.append(Dumper)
    return Dumper


def _plain_implicit(s: str) -> bool:
    """True when ``_dump_resolve`` types the plain scalar ``s`` as a string (no libyaml tag)."""
    if s in ("null", "~", "Null", "NULL", "true", "false"):
        return False
    return not (s and s[0] in _NUM_START and (_GO_INT.match(s) or _DUMP_FLOAT.match(s)))


_NUMBER_CACHE: dict[float, str | None] = {}


def _number_text(v: Any) -> str | None:
    """The plain text of an int or float, or None when libyaml would need a tag."""
    if v.__class__ is int:
        return str(v)
    hit = _NUMBER_CACHE.get(v, 0)
    if hit == 0:
        text = format_float(v)
        # _node tags it int or float; it is written plain only if it resolves back.
        hit = text if (_GO_INT.match(text) or _DUMP_FLOAT.match(text)) else None
        if len(_NUMBER_CACHE) < 10000:
            _NUMBER_CACHE[v] = hit
    return hit  # type: ignore[return-value]


_WRITER = yamlemit.Writer(
    str_style=_str_style,
    plain_implicit=_plain_implicit,
    sorted_keys=go_sorted_keys,
    scalar_text=scalar_text,
    number_text=_number_text,
)


def fast_dump(obj: Any) -> str:
    """``dump`` by the fast writer alone (raises ``yamlemit.Fallback`` where it defers)."""
    return _WRITER.dump(obj)


def dump(obj: Any) -> str:
    """One object as kustomize prints it (no document separator)."""
    try:
        return _WRITER.dump(obj)
    except yamlemit.Fallback:
        return libyaml_dump(obj)


def libyaml_dump(obj: Any) -> str:
    """``dump`` through PyYAML nodes and libyaml's emitter (the reference writer)."""
    stream = io.StringIO()
    emitter = _dumper_class()(stream)
    emitter.open()
    emitter.serialize(_node(obj))
    emitter.close()
    out = stream.getvalue()
    if out.endswith("\n...\n"):
        out = out[:-4]
    return out


def dump_all(objs: Iterable[Any]) -> str:
    """Objects as a kustomize stream: each dumped, joined with ``---`` lines."""
    return "---\n".join(dump(o) for o in objs)
