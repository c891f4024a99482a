"""Scalars as go-yaml types and writes them: the part of the YAML layer that the readers
(``yamlfast``, ``yamlpy``) and the writers (``yamlio``, ``yamlemit``'s callbacks, ``yamlpy``)
share, so that none of them imports another to get it.

Reading follows go-yaml v3's YAML 1.2 core schema (``_v3_resolve``) or v2's YAML 1.1 one
(``_v2_resolve``, for kustomization files); writing follows go-yaml v2 (sigs.k8s.io/yaml): which
strings need quotes, how floats are printed, the natural order of keys.
"""

from __future__ import annotations

try:  # functools' own, in C: importing functools loads collections (~1.5 ms of start-up)
    from _functools import cmp_to_key  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - CPython has it
    from functools import cmp_to_key


from orchestrator.lazyre import Pattern

# float("inf") and float("nan"): the math module is a shared library to load at start-up.
_INF = float("inf")
_NAN = float("nan")

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

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
            return -_INF if low.startswith("-") else _INF
        if low == ".nan":
            return _NAN
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


def go_integral(f: float) -> int | None:
    """The integer kustomize prints for an integral float64 below 1e21, or None when it prints
    a float: Go's encoding/json writes the fewest digits that read back the same (as repr
    chooses them), padded with zeros, and go-yaml v2 reads that back as an integer only within
    int64 or uint64 (else as a float, printed in exponent form)."""
    n = int(f)
    if -(2**53) <= n <= 2**53:
        return n
    from decimal import Decimal  # lazy: only integers this large need it

    n = int(Decimal(repr(f)))
    return n if -(2**63) <= n < 2**64 else None


def format_float(f: float) -> str:
    """Format a float the way the JSON round trip plus go-yaml v2 would."""
    if f != f:  # NaN
        return ".nan"
    if f in (_INF, -_INF):
        return ".inf" if f > 0 else "-.inf"
    if f == int(f) and abs(f) < 1e21:
        n = go_integral(f)
        if n is not None:
            return str(n)
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


# ----------------------------------------------------------------------------- folded scalars

# What makes go-yaml v3 write a string in double quotes where a folded block scalar was asked
# for (yaml_emitter_analyze_scalar: a space before a line break, a space ending it, a character
# it does not print as it is; tabs and line feeds it writes).
_NOT_BLOCK = Pattern(" \n| $|[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\ufffe\uffff\U00010000-\U0010ffff]")


def goyaml_folded(value: str) -> str:
    """The string go-yaml v3 reads back after writing ``value`` as a folded block scalar (``>``).

    kustomize turns each resource into JSON (kyaml's RNode.MarshalJSON) by writing its node
    out with go-yaml v3 and reading it back, and the node keeps the style it was read with.
    go-yaml's folded writer asks "is the next line more indented?" of the first character of
    the whole value instead of the character after the current line break(s)
    (yaml_emitter_write_folded_scalar), so it writes one line break too many, or one too few,
    wherever the two answers differ. After a line that does not start with a blank:

    - when the value starts (after its line breaks) with no blank, each run of line breaks
      is written with one more break, as folding wants it unless the next line is more
      indented or the run ends a kept (``>+``) value: there the value gains a line break;
    - when it starts with a blank, each run is written as it is, which folding reads with one
      break less: a single line break becomes a space.

    Line breaks after a more-indented line (one starting with a blank) are written and read
    as they are. A value go-yaml will not write as a block scalar comes back unchanged, and so,
    here, does one holding U+2028 or U+2029, which go-yaml's writer also breaks lines at (not
    followed: left as read).
    """
    if "\n" not in value or _NOT_BLOCK.search(value) or "\u2028" in value or "\u2029" in value:
        return value
    first = value.lstrip("\n")
    extra = first[:1] not in (" ", "\t")
    keep = value.endswith("\n\n") or value == "\n"
    out: list[str] = []
    end = len(value)
    i = 0
    while True:
        j = value.find("\n", i)
        if j < 0:
            out.append(value[i:])
            break
        k = j
        while k < end and value[k] == "\n":
            k += 1
        run = k - j
        out.append(value[i:j])
        if j == 0 or value[i] in " \t":
            out.append("\n" * run)  # the value's leading breaks, or after a more-indented line
        else:
            written = run + extra
            if k == end:  # the breaks ending the value: kept all, or clipped to one
                out.append("\n" * (written if keep else run))
            elif value[k] in " \t":  # a more-indented line next: every break is kept
                out.append("\n" * written)
            else:  # folded: a single break is a space, of more the first is dropped
                out.append(" " if written == 1 else "\n" * (written - 1))
        i = k
        if i == end:
            break
    return "".join(out)
