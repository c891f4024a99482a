"""Kustomize's content hash: the 10-character name suffix of generated ConfigMaps and Secrets.

kustomize (api/hasher) encodes a few fields of the object as Go's ``encoding/json`` would
(sorted keys, no spaces, HTML-safe escapes), takes the sha256 hex digest and maps five of the
first ten hex characters onto letters so the suffix never looks like a number.
"""

from __future__ import annotations

import sys

from orchestrator import jsonc
from orchestrator.errors import KrmError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["content_hash", "encode_hex", "go_json"]

# kustomize's (and kubectl's) substitution of ambiguous hex digits.
_SUFFIX_TABLE = str.maketrans({"0": "g", "1": "h", "3": "k", "a": "m", "e": "t"})
# Go's json escapes these even inside strings (HTMLEscape + JS line separators); Python does not.
_GO_EXTRA_ESCAPES = str.maketrans(
    {
        "<": "\\u003c",
        ">": "\\u003e",
        "&": "\\u0026",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)
# kustomize looks the name up as ONE top-level key "metadata/name", which never exists, so in
# practice every hash is computed with an empty name; we reproduce that faithfully.
_NAME_KEY = "metadata/name"
# C-accelerated when available; escapes exactly what Go >= 1.22 escapes besides the above.
_encode_str = jsonc.encode_basestring


def _go_float(value: float) -> str:
    """Format a float as Go's encoding/json does (shortest repr, 'e' outside [1e-6, 1e21))."""
    if value != value or value in (float("inf"), float("-inf")):
        raise KrmError(f"json: unsupported value: {value}")
    magnitude = abs(value)
    if magnitude == 0 or 1e-6 <= magnitude < 1e21:
        from decimal import Decimal  # rare (floats in ConfigMap data): keep imports light

        text = format(Decimal(repr(value)), "f")
        return text[:-2] if text.endswith(".0") else text
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    sign = exponent[0] if exponent[:1] in "+-" else "+"
    digits = exponent.lstrip("+-").lstrip("0") or "0"
    # Go writes at least two exponent digits, then trims "e-07" to "e-7" (but not "e+07").
    if len(digits) < 2 and sign == "+":
        digits = "0" + digits
    return f"{mantissa}e{sign}{digits}"


def _encode(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_encode_str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_go_float(value))
    elif isinstance(value, dict):
        out.append("{")
        # Go sorts map keys bytewise; for str that equals code point order.
        items = sorted((str(k), v) for k, v in value.items())
        for i, (key, item) in enumerate(items):
            if i:
                out.append(",")
            out.append(_encode_str(key))
            out.append(":")
            _encode(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, bytes):
        out.append(_encode_str(value.decode("utf-8", "replace")))
    elif _is_date(value):
        # YAML timestamps that a YAML 1.1 loader turned into dates; Go keeps RFC 3339 text.
        out.append(_encode_str(value.isoformat()))
    else:
        out.append(_encode_str(str(value)))


def _is_date(value: Any) -> bool:
    # No value can be a date unless something imported datetime: importing it only for this
    # check would cost every build's start-up.
    dt = sys.modules.get("datetime")
    return dt is not None and isinstance(value, dt.datetime | dt.date)


def _plain(value: Any) -> bool:
    """True if the stdlib encoder already writes ``value`` as Go does (no floats, dates...)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, sub in item.items():
                if type(key) is not str:
                    return False
                stack.append(sub)
        elif kind is list:
            stack.extend(item)
        elif kind is not str and kind is not int and kind is not bool and item is not None:
            return False
    return True


def go_json(value: Any) -> str:
    """Encode ``value`` exactly as Go's ``json.Marshal`` does for YAML-decoded data."""
    if _plain(value):
        # Fast path (the usual ConfigMap/Secret): the C encoder, sorted keys, no spaces.
        text = jsonc.dumps_sorted_compact(value)
    else:
        out: list[str] = []
        _encode(value, out)
        text = "".join(out)
    return text.translate(_GO_EXTRA_ESCAPES)


def encode_hex(hex_digest: str) -> str:
    """Turn a hex digest into kustomize's 10-character suffix alphabet."""
    if len(hex_digest) < 10:
        raise KrmError("input length must be at least 10")
    return hex_digest[:10].translate(_SUFFIX_TABLE)


def _field(obj: dict[str, Any], key: str) -> Any:
    """A field as kustomize's hasher sees it: missing (or null) becomes the empty string."""
    value = obj.get(key)
    return "" if value is None else value


def content_hash(obj: dict[str, Any]) -> str:
    """Kustomize's 10-character content hash of a ConfigMap, Secret or any other object."""
    kind = obj.get("kind")
    if kind == "ConfigMap":
        encoded: dict[str, Any] = {
            "kind": "ConfigMap",
            "name": _field(obj, _NAME_KEY),
            "data": _field(obj, "data"),
        }
        # binaryData only counts when it is a map, so old hashes stay stable.
        if isinstance(obj.get("binaryData"), dict):
            encoded["binaryData"] = obj["binaryData"]
    elif kind == "Secret":
        encoded = {
            "kind": "Secret",
            "type": _field(obj, "type"),
            "name": _field(obj, _NAME_KEY),
            "data": _field(obj, "data"),
        }
        if isinstance(obj.get("stringData"), dict):
            encoded["stringData"] = obj["stringData"]
    else:
        encoded = obj
    text = go_json(encoded)
    from orchestrator.digest import sha256

    return encode_hex(sha256(text.encode("utf-8")).hexdigest())


def add_hashes(resmap: Any) -> None:
    """Append the content hash to the name of every generated resource still waiting for one."""
    for res in resmap:
        if res.needs_hash:
            h = content_hash(res.obj)
            res.store_previous()
            res.metadata["name"] = f"{res.name}-{h}"
            res.needs_hash = False
    resmap.invalidate()
