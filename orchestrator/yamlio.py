"""YAML input and output, matching kustomize's reading and writing.

Reading follows go-yaml v3 (what kyaml uses): YAML 1.2 core-schema scalars, so
``yes``/``on``/``no`` and timestamps stay strings, and keys are always strings.
Writing follows what ``kustomize build`` prints: each resource goes through JSON
and go-yaml v2 (sigs.k8s.io/yaml), so keys are sorted in go-yaml's natural order,
sequences are indentless, strings that go-yaml v2 would read as something else are
double-quoted, and multi-line strings become literal block scalars.

Texts are read by ``yamlfast`` (rapidyaml) where it can show it agrees with PyYAML's
libyaml bindings, and by ``yamlpy`` (PyYAML's C loader, with the limits of ``yamllimits``)
otherwise; output is written by ``yamlemit``, with libyaml's emitter (in ``yamlpy``) for the
rare documents it defers. ``yamlpy`` and PyYAML are imported only when a text or a document
needs them: a small build never loads them.
"""

from __future__ import annotations

import math
from functools import cmp_to_key

from orchestrator import yamlemit, yamlfast
from orchestrator.errors import YamlError
from orchestrator.lazyre import Pattern
from orchestrator.yamllimits import decode_error

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from orchestrator.yamlpy import Loader as Loader
    from orchestrator.yamlpy import Loader11 as Loader11
    from orchestrator.yamlpy import _construct as _construct
    from orchestrator.yamlpy import _mark as _mark

# Names of the PyYAML path that other modules reach through this one (``yamlio.Loader``...).
_PYYAML_NAMES = frozenset(("Loader", "Loader11", "_construct", "_mark"))


def __getattr__(name: str) -> Any:
    """``Loader``, ``Loader11``, ``_construct``, ``_mark``: imported from ``yamlpy`` when asked."""
    if name in _PYYAML_NAMES:
        from orchestrator import yamlpy

        return getattr(yamlpy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- reading

_INT_RE = Pattern(r"^[-+]?(?:0[bB][01_]+|0[oO][0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)$")
_FLOAT_RE = Pattern(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


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


# The resolvers below are PyYAML's ``resolve`` for yamlpy's loaders, with no import of PyYAML:
# its C composer calls them per node, with ``value`` None for a collection (``kind.id`` tells
# which) and ``implicit[0]`` true for a plain scalar. yamlfast calls them through _v3_plain.
_PLAIN = (True, False)


def _v3_resolve(self: Any, kind: Any, value: str | None, implicit: Any) -> str:
    """The tag go-yaml v3 (YAML 1.2 core) resolves a node to."""
    if value is None:
        return _SEQ if kind.id == "sequence" else _MAP
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


def _typed(tag: str, value: str, bools: dict[str, bool] = _BOOLS) -> Any:
    """The Python value of a scalar with ``tag`` (resolved or explicit) and text ``value``."""
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
    return _typed(_v3_resolve(None, None, text, _PLAIN), text)


_V2_BOOLS = {
    **{w: True for w in ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"]},
    **{
        w: False
        for w in ["n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"]
    },
}
_V2_FLOAT = Pattern(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_V2_SPECIAL_FLOATS = frozenset(
    sign + dot for sign in ("", "+", "-") for dot in (".inf", ".Inf", ".INF")
) | frozenset([".nan", ".NaN", ".NAN"])


def _v2_resolve(self: Any, kind: Any, value: str | None, implicit: Any) -> str:
    """The tag go-yaml v2 (YAML 1.1, as kustomize reads kustomization files) resolves to."""
    if value is None:
        return _SEQ if kind.id == "sequence" else _MAP
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


def _v2_plain(text: str) -> Any:
    """The value go-yaml v2 gives ``text`` written as a plain scalar."""
    return _typed(_v2_resolve(None, None, text, _PLAIN), text, _V2_BOOLS)


def load_all(text: str | bytes, *, source: str | None = None) -> list[Any]:
    """Parse every document of a YAML stream; empty documents are dropped."""
    return _load_docs(False, text, source)


def _load_docs(v2: bool, text: str | bytes, source: str | None) -> list[Any]:
    """The non-empty documents of a stream, with go-yaml v2's typing or else v3's."""
    raw = None
    if isinstance(text, bytes):
        if text[:2] not in (b"\xff\xfe", b"\xfe\xff") and text[:3] != b"\xef\xbb\xbf":
            raw = text  # UTF-8 as it is: the fast path parses these bytes
        text = decode(text, source=source)
    if yamlfast.wanted(text):
        fast = yamlfast.load_docs(text, raw, _v2_plain if v2 else _v3_plain)
        if fast is not None:
            return fast
    from orchestrator import yamlpy  # PyYAML: only for the texts the fast path declines

    return yamlpy.load_docs(v2, text, source)


def load_yaml11(text: str | bytes, *, source: str | None = None) -> list[Any]:
    """Parse a YAML stream with go-yaml v2's YAML 1.1 typing (y/yes/on are booleans)."""
    return _load_docs(True, text, source)


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
_SIMPLE_KEY = Pattern(r"^[A-Za-z]+$")


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
_V2_TIMESTAMP = Pattern(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?$"
)
_V2_BASE60 = Pattern(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_GO_INT = Pattern(
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


_DUMP_FLOAT = Pattern(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|-?\.inf|\.nan)$"
)


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
    from orchestrator import yamlpy

    return yamlpy.libyaml_dump(obj)


def dump_all(objs: Iterable[Any]) -> str:
    """Objects as a kustomize stream: each dumped, joined with ``---`` lines."""
    return "---\n".join(dump(o) for o in objs)
