"""A YAML writer for exactly the output ``kustomize build`` prints.

kustomize writes each resource through JSON and go-yaml v2, whose emitter is a port
of libyaml's. ``yamlio`` used to build PyYAML nodes and run libyaml's C emitter
(indent 2, width 80, unicode, indentless sequences in mappings); this module writes
the same bytes straight from Python objects: mappings in go-yaml's key order, block
collections, ``{}``/``[]`` for empty ones, and each scalar in the style libyaml
picks for it (plain, single- or double-quoted, literal block) with libyaml's line
folding at column 80 and its escapes.

Where this writer cannot be sure of libyaml's choice (a document that is a bare
scalar, keys libyaml would write as complex ``?`` keys, Unicode line separators,
lone surrogates, scalars that would need a tag) it raises :class:`Fallback` and the
caller writes the document with libyaml instead. ``tests/orchestrator/test_yamlemit.py``
compares both writers byte for byte.
"""

from __future__ import annotations

from orchestrator.lazyre import Pattern

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any

__all__ = ["Fallback", "Writer"]


class Fallback(Exception):
    """This document needs libyaml's emitter (a case the fast writer does not decide)."""


_WIDTH = 80  # libyaml best_width (go-yaml v2 uses the same)

# libyaml's IS_PRINTABLE (on code points): \n, 0x20-0x7E, 0xA0-0xD7FF, 0xE000-0xFFFD
# except the BOM. Anything else (tab, \r, C0/C1 controls, DEL, BOM, non-BMP) is
# "special": it rules out every style but double-quoted, where it is escaped.
# Each class has an ASCII-only twin for ASCII strings (most of them): the full ones take
# a millisecond to compile.
_SPECIAL = Pattern(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff\U00010000-\U0010ffff]"
)
_SPECIAL_ASCII = Pattern("[\x00-\x09\x0b-\x1f\x7f]")
# Characters this writer leaves to libyaml: line/paragraph separators (breaks libyaml
# copies raw into block and single-quoted scalars) and lone surrogates (not UTF-8).
_UNSURE = Pattern("[\u2028\u2029\ud800-\udfff]")
# Escapes in double-quoted scalars: non-printables, the BOM, breaks, '"' and '\'.
_ESCAPE = Pattern(
    '[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff\U00010000-\U0010ffff]'
)
_ESCAPE_ASCII = Pattern('[\x00-\x1f"\\\\\x7f]')
_NAMED_ESCAPES = {
    0x00: "\\0",
    0x07: "\\a",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
    0x1B: "\\e",
    0x22: '\\"',
    0x5C: "\\\\",
    0x85: "\\N",
    0xA0: "\\_",
    0x2028: "\\L",
    0x2029: "\\P",
}
# Block indicators of libyaml's scalar analysis (flow context never occurs here):
# a "---"/"..." prefix, an indicator as first character, "?"/"-" first and followed
# by whitespace, ":" followed by whitespace or the end, "#" after whitespace.
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_WS_AFTER_FIRST = frozenset(" \t\n\r\x85")
_COLON_WS = Pattern("[:][ \t\n\r\x85]")
_WS_HASH = Pattern("[ \t\n\r\x85][#]")


def _block_indicators(s: str) -> bool:
    first = s[0]
    if first in _FIRST_INDICATORS or s.startswith(("---", "...")):
        return True
    if (first == "?" or first == "-") and (len(s) == 1 or s[1] in _WS_AFTER_FIRST):
        return True
    if ":" in s and (s[-1] == ":" or _COLON_WS.search(s)):
        return True
    return "#" in s and _WS_HASH.search(s) is not None


_BREAKS = "\n\r\x85\u2028\u2029"
_SPACE_BREAK = Pattern("[ ][\n\r\x85]")
_BREAK_SPACE = Pattern("[\n\r\x85][ ]")
_HAS_BREAK = Pattern("[\n\r\x85]")

# Scalar kinds, cached per string.
_PLAIN = 0
_SINGLE = 1
_DOUBLE = 2
_LITERAL = 3


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    named = _NAMED_ESCAPES.get(c)
    if named is not None:
        return named
    if c <= 0xFF:
        return f"\\x{c:02X}"
    if c <= 0xFFFF:
        return f"\\u{c:04X}"
    return f"\\U{c:08X}"


def _escape(s: str) -> str:
    return (_ESCAPE_ASCII if s.isascii() else _ESCAPE).sub(_escape_char, s)


class Writer:
    """Writes documents; ``str_style`` and ``plain_implicit`` come from yamlio.

    ``str_style(s)`` is the style go-yaml v2 asks for (``None`` plain, ``'"'``, ``'|'``)
    and ``plain_implicit(s)`` tells whether a plain ``s`` reads back as a string.
    """

    def __init__(
        self,
        *,
        str_style: Callable[[str], str | None],
        plain_implicit: Callable[[str], bool],
        sorted_keys: Callable[[Any], tuple[str, ...]],
        scalar_text: Callable[[Any], str],
        number_text: Callable[[Any], str | None],
    ) -> None:
        self._str_style = str_style
        self._plain_implicit = plain_implicit
        self._sorted_keys = sorted_keys
        self._scalar_text = scalar_text
        self._number_text = number_text
        # value string -> (kind, " " + rendered text + "\n" unless folded, may fold)
        self._values: dict[str, tuple[int, str, bool]] = {}
        # key string -> rendered key + ":"
        self._keys: dict[str, str] = {}
        self._literals: dict[tuple[str, int], str] = {}
        self._folded: dict[tuple[str, int, int], str] = {}
        # a map's keys, in their order in the map -> in go-yaml's order (strings only)
        self._orders: dict[tuple[str, ...], tuple[str, ...]] = {}

    # ------------------------------------------------------------------ scalars

    def _kind(self, s: str, *, key: bool) -> int:
        """The style libyaml's select_scalar_style ends with for the string ``s``."""
        is_ascii = s.isascii()
        if not is_ascii and _UNSURE.search(s):
            raise Fallback
        style = self._str_style(s)
        if style == '"':
            return _DOUBLE
        special = (_SPECIAL_ASCII if is_ascii else _SPECIAL).search(s) is not None
        space_break = _SPACE_BREAK.search(s) is not None
        if key and (_HAS_BREAK.search(s) or len(s.encode("utf-8")) > 128):
            raise Fallback  # libyaml writes a complex "? key"
        if style == "|":
            trailing_space = s[-1] == " "
            if key or special or space_break or trailing_space:
                return _DOUBLE
            return _LITERAL
        # Plain requested.
        first, last = s[0], s[-1]
        if (
            not special
            and first != " "
            and last != " "
            and first not in _BREAKS
            and last not in _BREAKS
            and not _HAS_BREAK.search(s)
            and not _block_indicators(s)
            and self._plain_implicit(s)
        ):
            return _PLAIN
        if special or space_break or _BREAK_SPACE.search(s):
            return _DOUBLE
        return _SINGLE

    def _key(self, k: str) -> str:
        text = self._keys.get(k)
        if text is None:
            kind = self._kind(k, key=True)
            if kind == _PLAIN:
                text = k + ":"
            elif kind == _SINGLE:
                text = "'" + k.replace("'", "''") + "':"
            else:
                text = '"' + _escape(k) + '":'
            if len(self._keys) < 100000:
                self._keys[k] = text
        return text

    def _value(self, s: str) -> tuple[int, str, bool]:
        hit = self._values.get(s)
        if hit is None:
            kind = self._kind(s, key=False)
            if kind == _PLAIN:
                hit = (kind, " " + s + "\n", " " in s)
            elif kind == _SINGLE:
                hit = (kind, " '" + s.replace("'", "''") + "'\n", " " in s)
            elif kind == _DOUBLE:
                hit = (kind, ' "' + _escape(s) + '"\n', " " in s)
            else:
                hit = (kind, "", False)
            if len(self._values) < 200000:
                self._values[s] = hit
        return hit

    def _str(self, s: str, col: int, indent: int) -> str:
        """`` value\\n`` for a string written after an indicator ending at ``col``."""
        kind, text, foldable = self._values.get(s) or self._value(s)
        if kind == _LITERAL:
            return self._literal(s, indent)
        # The last character of the text sits at col + len(text) - 2 (before the newline):
        # only a longer line can have a space past the width.
        if foldable and col + len(text) > _WIDTH + 2:
            # CRDs repeat long descriptions at the same depth (argo's four workflow CRDs share
            # most of their schema): each folding is made once.
            key = (s, col, indent)
            folded = self._folded.get(key)
            if folded is None:
                if kind == _PLAIN:
                    folded = _fold_plain(s, col, indent)
                elif kind == _SINGLE:
                    folded = _fold_single(s, col, indent)
                else:
                    folded = _fold_double(s, col, indent)
                if len(self._folded) < 50000:
                    self._folded[key] = folded
            return folded
        return text

    def _literal(self, s: str, indent: int) -> str:
        hit = self._literals.get((s, indent))
        if hit is not None:
            return hit
        head = " |"
        if s[0] == " " or s[0] == "\n":
            head += "2"  # libyaml always gives its best_indent as the hint
        if s[-1] != "\n":
            head += "-"
            tail = "\n"
        else:
            tail = ""
            if len(s) == 1 or s[-2] == "\n":
                head += "+"
        pad = " " * indent
        body = "\n".join(pad + line if line else "" for line in s.split("\n"))
        text = head + "\n" + body + tail
        if len(self._literals) < 20000:
            self._literals[(s, indent)] = text
        return text

    def _scalar(self, v: Any, col: int, indent: int) -> str:
        """`` value\\n`` for any non-container value (col: column after the indicator)."""
        t = v.__class__
        if t is str:
            return self._str(v, col, indent)
        if t is bool:
            return " true\n" if v else " false\n"
        if t is int or t is float:
            text = self._number_text(v)
            if text is None:
                raise Fallback
            return " " + text + "\n"
        if v is None:
            return " null\n"
        if isinstance(v, bool):
            return self._scalar(bool(v), col, indent)
        if isinstance(v, int):
            return self._scalar(int(v), col, indent)
        if isinstance(v, float):
            return self._scalar(float(v), col, indent)
        return self._str(str(v), col, indent)

    # ------------------------------------------------------------------ collections

    def _mapping(self, d: dict[Any, Any], indent: int, first: str, out: list[str]) -> None:
        """A non-empty block mapping at ``indent``; ``first`` starts the first key's line."""
        # The key order of each key set met, known to hold only strings (a dict lookup, where
        # checking each key's type was a Python loop over every key of the output).
        order = self._orders.get(tuple(d))
        if order is None:
            keys = d.keys()
            for k in keys:
                if k.__class__ is not str:
                    d = {self._scalar_text(k): x for k, x in d.items()}
                    keys = d.keys()
                    break
            else:
                order = self._sorted_keys(keys)
                if len(self._orders) < 50000:
                    self._orders[tuple(d)] = order
            if order is None:
                order = self._sorted_keys(keys)
        pad = " " * indent
        lead = first
        key_text = self._key
        key_texts = self._keys
        values = self._values
        append = out.append
        for k in order:
            v = d[k]
            kt = key_texts.get(k) or key_text(k)
            append(lead)
            append(kt)
            lead = pad
            t = v.__class__
            if t is str:  # the most common value first
                hit = values.get(v)
                if (
                    hit is not None
                    and hit[0] != _LITERAL
                    and (not hit[2] or indent + len(kt) + len(hit[1]) <= _WIDTH + 2)
                ):
                    append(hit[1])  # the common case: a scalar that does not fold
                else:
                    append(self._str(v, indent + len(kt), indent + 2))
            elif t is dict or isinstance(v, dict):
                if v:
                    append("\n")
                    self._mapping(v, indent + 2, pad + "  ", out)
                else:
                    append(" {}\n")
            elif t is list or t is tuple or isinstance(v, (list, tuple)):
                if v:
                    append("\n")
                    self._sequence(v, indent, pad, out)
                else:
                    append(" []\n")
            else:
                append(self._scalar(v, indent + len(kt), indent + 2))

    def _sequence(self, items: Any, indent: int, first: str, out: list[str]) -> None:
        """A non-empty block sequence whose dashes sit at ``indent``."""
        pad = " " * indent
        lead = first
        for v in items:
            out.append(lead)
            out.append("-")
            lead = pad
            t = v.__class__
            if t is dict or (t is not str and isinstance(v, dict)):
                if v:
                    self._mapping(v, indent + 2, " ", out)
                else:
                    out.append(" {}\n")
            elif t is list or t is tuple or (t is not str and isinstance(v, (list, tuple))):
                if v:
                    self._sequence(v, indent + 2, " ", out)
                else:
                    out.append(" []\n")
            else:
                out.append(self._scalar(v, indent + 1, indent + 2))

    def dump(self, obj: Any) -> str:
        """One document, as libyaml would write it (raises :class:`Fallback`)."""
        t = obj.__class__
        out: list[str] = []
        if t is dict or (t is not str and isinstance(obj, dict)):
            if not obj:
                return "{}\n"
            self._mapping(obj, 0, "", out)
        elif t is list or t is tuple or (t is not str and isinstance(obj, (list, tuple))):
            if not obj:
                return "[]\n"
            self._sequence(obj, 0, "", out)
        else:
            raise Fallback  # a bare scalar document (libyaml adds "..." markers)
        return "".join(out)


# ---------------------------------------------------------------------- folding
# Scalars long enough to reach column 80 are folded at single spaces as libyaml does:
# a space is replaced by a line break plus indentation when the column before it is
# past the width (plain: never the first or a space before another space; quoted:
# never the first or last character).


_SINGLE_SPACE = Pattern("(?<! ) (?! )")


def _fold_plain(s: str, col: int, indent: int) -> str:
    # A plain scalar neither starts nor ends with a space, and libyaml breaks only at a
    # space with no space on either side: the column before it is base + (p - start).
    out = [" "]
    base = col + 1
    start = 0
    brk = "\n" + " " * indent
    for m in _SINGLE_SPACE.finditer(s):
        p = m.start()
        if base + p - start > _WIDTH:
            out.append(s[start:p])
            out.append(brk)
            start = p + 1
            base = indent
    out.append(s[start:])
    out.append("\n")
    return "".join(out)


def _fold_single(s: str, col: int, indent: int) -> str:
    out = [" '"]
    column = col + 2
    spaces = False
    last = len(s) - 1
    brk = "\n" + " " * indent
    for i, ch in enumerate(s):
        if ch == " ":
            if not spaces and column > _WIDTH and i != 0 and i != last and s[i + 1] != " ":
                out.append(brk)
                column = indent
            else:
                out.append(" ")
                column += 1
            spaces = True
        else:
            if ch == "'":
                out.append("''")
                column += 2
            else:
                out.append(ch)
                column += 1
            spaces = False
    out.append("'\n")
    return "".join(out)


def _fold_double(s: str, col: int, indent: int) -> str:
    out = [' "']
    column = col + 2
    spaces = False
    last = len(s) - 1
    brk = "\n" + " " * indent
    esc = _ESCAPE_ASCII if s.isascii() else _ESCAPE
    for i, ch in enumerate(s):
        if ch == " ":
            if not spaces and column > _WIDTH and i != 0 and i != last:
                out.append(brk)
                column = indent
                if s[i + 1] == " ":
                    out.append("\\")
                    column += 1
            else:
                out.append(" ")
                column += 1
            spaces = True
        else:
            if esc.match(ch):
                e = _escape(ch)
                out.append(e)
                column += len(e)
            else:
                out.append(ch)
                column += 1
            spaces = False
    out.append('"\n')
    return "".join(out)
