"""orchestrator.terminal: control characters from documents shown as escapes, text kept."""

from __future__ import annotations

import pytest

from orchestrator import terminal


@pytest.mark.parametrize(
    ("text", "field", "lines"),
    [
        ("plain Ünïcode ✓ text", "plain Ünïcode ✓ text", "plain Ünïcode ✓ text"),
        ("a\x1b[31mred\x1b[0m", "a\\x1b[31mred\\x1b[0m", "a\\x1b[31mred\\x1b[0m"),
        ("one\ntwo\tcol", "one\\ntwo\\tcol", "one\ntwo\tcol"),
        ("over\rwrite", "over\\rwrite", "over\\rwrite"),
        ("\x00\x07\x08\x7f", "\\x00\\x07\\x08\\x7f", "\\x00\\x07\\x08\\x7f"),
        ("csi\x9b2K nbsp\xa0", "csi\\x9b2K nbsp\xa0", "csi\\x9b2K nbsp\xa0"),
        ("ab\u202ecd\u2066\u200f", "ab\\u202ecd\\u2066\\u200f", "ab\\u202ecd\\u2066\\u200f"),
        ("back\\slash", "back\\slash", "back\\slash"),
    ],
)
def test_field_and_lines(text: str, field: str, lines: str) -> None:
    assert (terminal.field(text), terminal.lines(text)) == (field, lines)


def test_no_control_character_survives() -> None:
    every = "".join(map(chr, range(0x3000)))
    kept = {"\t", "\n"}
    for out, allowed in ((terminal.field(every), set()), (terminal.lines(every), kept)):
        left = {c for c in out if (c.isprintable() is False and c not in allowed)}
        # What is left unprintable is Unicode's own (unassigned, format, separators), never a
        # C0/C1 control or a bidirectional control.
        assert not {c for c in left if ord(c) < 0xA0 or 0x202A <= ord(c) <= 0x202E}
