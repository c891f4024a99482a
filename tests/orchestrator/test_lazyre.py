"""The engine's shipped regular expressions (``data/regex.marshal``) and its hand matchers.

A small build compiles its patterns from the table ``lazyre`` ships, and matches plain patch
selectors and image names by hand: both only to spare it importing ``re``. Each must answer
exactly as ``re`` would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import lazyre
from orchestrator.data import gen_regex
from tests.orchestrator.conftest import run_python


def test_the_shipped_table_is_current_for_this_python() -> None:
    """Run ``python -m orchestrator.data.gen_regex`` when this fails (a pattern changed)."""
    assert Path(lazyre.TABLE_FILE).read_bytes() == gen_regex.render()


def test_each_pattern_of_the_table_equals_what_re_compiles() -> None:
    patterns = gen_regex.engine_patterns()
    assert len(patterns) > 30
    for pattern in patterns:
        assert pattern in lazyre._load_table()
        # A compiled pattern's equality compares its flags, text and compiled code.
        assert lazyre.compile_pattern(pattern) == re.compile(pattern), pattern


def test_a_pattern_the_table_lacks_is_compiled_by_re() -> None:
    compiled = lazyre.compile_pattern(r"not (in)? the table \d+")
    assert compiled == re.compile(r"not (in)? the table \d+")
    assert compiled.search("x not in the table 42") is not None


def test_a_table_for_another_python_is_not_used(tmp_path: Path) -> None:
    """A table whose key is another engine's is ignored: every pattern goes to ``re``."""
    import marshal

    table = tmp_path / "regex.marshal"
    pattern = next(p for p in gen_regex.engine_patterns() if p.isascii() and p.isprintable())
    flags, code, groups, groupindex, indexgroup = lazyre._load_table()[pattern]
    wrong = [*code[:-1], 0]  # code that would not match as the real one does
    key = ("another", "engine")
    table.write_bytes(
        marshal.dumps((key, {pattern: (flags, wrong, groups, groupindex, indexgroup)}))
    )
    script = (
        "import sys; from orchestrator import lazyre; lazyre.TABLE_FILE = sys.argv[1]; "
        "import re; p = sys.argv[2]; "
        "print(lazyre._load_table() == {} and lazyre.compile_pattern(p) == re.compile(p))"
    )
    out = run_python(script, str(table), pattern)
    assert out.stdout.strip() == "True"


def test_an_unreadable_table_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "regex.marshal"
    broken.write_bytes(b"\x00not marshal")
    monkeypatch.setattr(lazyre, "TABLE_FILE", str(broken))
    monkeypatch.setattr(lazyre, "_table", None)
    assert lazyre._load_table() == {}
    assert lazyre.compile_pattern("a+") == re.compile("a+")


# Selectors and image names: mostly name-like text, with dots and line breaks where they matter.
_TEXT = st.text(alphabet="ab.-_/:@\n", max_size=8)


@settings(max_examples=3000, deadline=None)
@given(pattern=_TEXT, subject=_TEXT)
def test_literal_matches_as_the_regular_expression_would(pattern: str, subject: str) -> None:
    assert lazyre.Literal.usable(pattern)
    literal = lazyre.Literal(pattern)
    expected = re.compile("^(?:" + pattern + ")$").match(subject) is not None
    assert literal.match(subject) is expected
    assert literal.match_prefix(subject) is (re.match("^(?:" + pattern + ")", subject) is not None)
    # replacements' list selectors: Go's regexp.MatchString, unanchored
    assert literal.search(subject) is (re.search(pattern, subject) is not None)


@pytest.mark.parametrize("text", ["a*", "x|y", "(a)", "[ab]", "a+", "a?", "^a", "a$", "\\d", "{1}"])
def test_literal_refuses_text_with_special_characters(text: str) -> None:
    assert not lazyre.Literal.usable(text)
