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

import math
import re
from collections.abc import Iterable
from functools import cmp_to_key
from typing import Any

import yaml
from yaml.cyaml import CEmitter
from yaml.nodes import MappingNode

from orchestrator.errors import YamlError

# ----------------------------------------------------------------------------- reading

_INT_RE = re.compile(r"^[-+]?(?:0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)$")
_FLOAT_RE = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


class Loader(yaml.CSafeLoader):
    """C-accelerated safe loader with go-yaml v3 (YAML 1.2 core) scalar resolution."""


Loader.yaml_implicit_resolvers = {}
for _tag, _regex, _first in [
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    ("tag:yaml.org,2002:int", _INT_RE, list("-+0123456789")),
    ("tag:yaml.org,2002:float", _FLOAT_RE, list("-+.0123456789")),
    ("tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"]),
]:
    Loader.add_implicit_resolver(_tag, _regex, _first)


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


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    value = loader.construct_scalar(node)
    parsed = _parse_go_int(value)
    if parsed is not None:
        return parsed
    if _FLOAT_RE.match(value.replace("_", "")):
        return _construct_float(loader, node)
    return value


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    value = loader.construct_scalar(node).replace("_", "")
    low = value.lower()
    if low.endswith(".inf"):
        return -math.inf if low.startswith("-") else math.inf
    if low == ".nan":
        return math.nan
    try:
        return float(value)
    except ValueError:
        return value


def _key_str(key: Any) -> str:
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


def _construct_mapping(loader: yaml.SafeLoader, node: MappingNode) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            if key_node.value in seen:
                first = seen[key_node.value]
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f'mapping key "{key_node.value}" already defined at line {first.line + 1}',
                    key_node.start_mark,
                )
            seen[key_node.value] = key_node.start_mark
    loader.flatten_mapping(node)
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (list, dict)):
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be scalars", key_node.start_mark
            )
        result[_key_str(key)] = loader.construct_object(value_node, deep=True)
    return result


def _construct_timestamp_as_str(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_scalar(node)


Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)
Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_str)


def _mark(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def load_all(text: str | bytes, *, source: str | None = None) -> list[Any]:
    """Parse every document of a YAML stream; empty documents are dropped."""
    if isinstance(text, bytes):
        text = decode(text)
    try:
        return [d for d in yaml.load_all(text, Loader=Loader) if d is not None]
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {_mark(exc)}", file=source) from None


def load(text: str | bytes, *, source: str | None = None) -> Any:
    """Parse a single-document YAML text (None when empty)."""
    if isinstance(text, bytes):
        text = decode(text)
    try:
        return yaml.load(text, Loader=Loader)
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {_mark(exc)}", file=source) from None


def decode(data: bytes) -> str:
    """Decode file bytes as UTF-8 (or UTF-16/32 when a BOM says so)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16")
    if data[:3] == b"\xef\xbb\xbf":
        return data[3:].decode("utf-8")
    return data.decode("utf-8")


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
_V2_SPECIAL = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL ~ .nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF <<".split()
)
_V2_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
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


class _Representer(yaml.representer.SafeRepresenter):
    def represent_str_go(self, data: str) -> yaml.ScalarNode:
        if "\n" in data:
            style = "|"
        elif _v2_needs_quotes(data):
            style = '"'
        else:
            style = None
        return yaml.ScalarNode("tag:yaml.org,2002:str", data, style=style)

    def represent_dict_go(self, data: dict) -> yaml.MappingNode:
        value = []
        node = yaml.MappingNode("tag:yaml.org,2002:map", value, flow_style=False)
        for k in go_sorted_keys(str(k) for k in data):
            v = data[k]
            value.append((self.represent_str_go(k), self.represent_data(v)))
        return node

    def represent_list_go(self, data: list) -> yaml.SequenceNode:
        return yaml.SequenceNode(
            "tag:yaml.org,2002:seq", [self.represent_data(v) for v in data], flow_style=False
        )

    def represent_float_go(self, data: float) -> yaml.ScalarNode:
        text = format_float(data)
        tag = "tag:yaml.org,2002:int" if _GO_INT.match(text) else "tag:yaml.org,2002:float"
        return yaml.ScalarNode(tag, text)

    def represent_bool_go(self, data: bool) -> yaml.ScalarNode:
        return yaml.ScalarNode("tag:yaml.org,2002:bool", "true" if data else "false")

    def represent_none_go(self, data: None) -> yaml.ScalarNode:
        return yaml.ScalarNode("tag:yaml.org,2002:null", "null")

    def ignore_aliases(self, data: Any) -> bool:
        return True


_Representer.add_representer(str, _Representer.represent_str_go)
_Representer.add_representer(dict, _Representer.represent_dict_go)
_Representer.add_representer(list, _Representer.represent_list_go)
_Representer.add_representer(tuple, _Representer.represent_list_go)
_Representer.add_representer(float, _Representer.represent_float_go)
_Representer.add_representer(bool, _Representer.represent_bool_go)
_Representer.add_representer(type(None), _Representer.represent_none_go)


class _Resolver(yaml.resolver.BaseResolver):
    """go-yaml v2 plain-scalar resolution, so ints/bools/nulls are written untagged."""


for _tag, _regex, _first in [
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL)$"), ["~", "n", "N"]),
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), ["t", "f"]),
    ("tag:yaml.org,2002:int", _GO_INT, list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|-?\.inf|\.nan)$"),
        list("-+.0123456789"),
    ),
]:
    _Resolver.add_implicit_resolver(_tag, _regex, _first)


class Dumper(CEmitter, _Representer, _Resolver):
    """libyaml emitter + go-yaml v2 style representation."""

    def __init__(self, stream: Any, **kwds: Any) -> None:
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
        _Representer.__init__(self, default_style=None, default_flow_style=False, sort_keys=False)
        _Resolver.__init__(self)


def dump(obj: Any) -> str:
    """One object as kustomize prints it (no document separator)."""
    out = yaml.dump(obj, Dumper=Dumper)
    if out.endswith("\n...\n"):
        out = out[:-4]
    return out


def dump_all(objs: Iterable[Any]) -> str:
    """Objects as a kustomize stream: each dumped, joined with ``---`` lines."""
    return "---\n".join(dump(o) for o in objs)
