"""``json.loads`` and ``json.dumps`` by the ``_json`` C accelerators, without importing ``json``.

``import json`` loads ``json.decoder`` and ``json.scanner``, which import ``re`` (and with it
``enum``): about 4 ms of a small build's ~25 ms, for a module whose work is done in C anyway.
These functions call the same C scanner and encoder ``json`` would (so they give the same
objects and the same text), and hand anything unusual to the real ``json`` module: an error
(so its exception and message are ``json``'s own), trailing data, or a build of Python
without the accelerators.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_json: Any
try:
    import _json  # the accelerators json.decoder and json.encoder use
except ImportError:  # pragma: no cover - CPython always has it
    _json = None

_WHITESPACE = " \t\n\r"  # what json.decoder skips around a document


class _Context:
    """What the C scanner reads off a ``json.JSONDecoder`` (``_json.make_scanner``)."""

    __slots__ = (
        "strict",
        "object_hook",
        "object_pairs_hook",
        "parse_float",
        "parse_int",
        "parse_constant",
        "memo",
    )

    def __init__(
        self,
        strict: bool,
        object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None,
        parse_constant: Callable[[str], Any] | None,
    ) -> None:
        self.strict = strict
        self.object_hook = None
        self.object_pairs_hook = object_pairs_hook
        self.parse_float = float  # exactly float and int: the C scanner's own fast paths
        self.parse_int = int
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__
        self.memo: dict[str, str] = {}


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


def loads(
    s: str,
    *,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    parse_constant: Callable[[str], Any] | None = None,
    strict: bool = True,
) -> Any:
    """``json.loads(s, ...)`` for a ``str``: the same object, or ``json``'s own exception."""
    if _json is not None and isinstance(s, str) and not s.startswith("\ufeff"):
        scan = _json.make_scanner(_Context(strict, object_pairs_hook, parse_constant))
        start = len(s) - len(s.lstrip(_WHITESPACE))
        try:
            obj, end = scan(s, start)
        except (StopIteration, ValueError):
            pass  # json says what is wrong, and where (below)
        else:
            if end == len(s) or not s[end:].strip(_WHITESPACE):
                return obj
    import json

    return json.loads(
        s, object_pairs_hook=object_pairs_hook, parse_constant=parse_constant, strict=strict
    )


def _not_serializable(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def dumps_sorted_compact(obj: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``."""
    if _json is not None and not isinstance(obj, str):
        encode = _json.make_encoder(
            {}, _not_serializable, _json.encode_basestring, None, ":", ",", True, False, True
        )
        try:
            return "".join(encode(obj, 0))
        except (TypeError, ValueError, RecursionError):
            pass  # json raises its own error (below)
    import json

    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def encode_basestring(s: str) -> str:
    """``json.encoder.encode_basestring``: ``s`` as a JSON string, non-ASCII kept as it is."""
    if _json is not None:
        text: str = _json.encode_basestring(s)
        return text
    import json.encoder

    return json.encoder.encode_basestring(s)
