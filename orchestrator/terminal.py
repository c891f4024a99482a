"""Text from documents made safe to print on a terminal.

A catalog, a kustomization, a resource or a function's output may hold control characters
(ESC starts the sequences that move the cursor, erase lines, set colours or the window title;
CR returns to the start of the line), C1 controls (a lone U+009B is CSI on some terminals) and
Unicode bidirectional controls (they reorder what is shown). Printed as they are, they can draw
lines the program never wrote, such as a forged "Signature: verified" line. Each of them is
shown as a visible escape instead (``\\x1b``, ``\\n``, ``\\u202e``); everything else, other
non-ASCII text included, is kept.

``field`` is for one value in a line of a table or report (a newline or tab there is also
escaped, so a value cannot start a line of its own); ``lines`` is for a message of several lines
(an error with its context), whose newlines and tabs are kept.
"""

from __future__ import annotations

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escaped(cp: int) -> str:
    if cp in _NAMED:
        return _NAMED[cp]
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


_FIELD: dict[int, str] = {
    cp: _escaped(cp) for cp in (*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI)
}
_LINES: dict[int, str] = {cp: s for cp, s in _FIELD.items() if cp not in (0x09, 0x0A)}


def field(text: str) -> str:
    """``text`` with every control character (newlines and tabs too) shown as an escape."""
    return text.translate(_FIELD)


def lines(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    return text.translate(_LINES)
