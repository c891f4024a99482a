"""Regular expressions compiled on first use, so importing the engine's modules stays quick.

Compiling the YAML modules' and the filters' patterns at import took about 3 ms of every build's
start-up (the Unicode classes most), and a small build uses few of them. After the first call a
``Pattern``'s methods are the compiled pattern's own bound methods, held in slots: a call costs
what it did before.

Compiling on first use still cost a small build about 3 ms (the ~20 patterns its reading and
writing use), and importing ``re`` (with ``enum``) about 2.5 ms more. So the engine ships its
patterns compiled: ``data/regex.marshal`` holds, for each ``Pattern`` of the engine's modules,
the code ``re``'s compiler makes for it, which the regular expression engine (``_sre``) takes
as it is, and ``re`` is imported only for a pattern the table does not hold. The table is used
only by the Python it was made for (same ``_sre.MAGIC``, code size and version); anywhere else
every pattern is compiled by ``re``, as before. ``tests/orchestrator/test_lazyre.py`` checks
that the table is current and that each of its patterns equals ``re.compile``'s (a compiled
pattern's equality compares its code). Regenerate after changing a pattern::

    python -m orchestrator.data.gen_regex
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterator
    from typing import Any

_METHODS = ("match", "fullmatch", "search", "findall", "finditer", "sub")
TABLE_FILE = os.path.join(os.path.dirname(__file__), "data", "regex.marshal")
_table: dict[str, tuple[Any, ...]] | None = None


def table_key() -> tuple[Any, ...]:
    """What the compiled code depends on: the regular expression engine and Python version."""
    import _sre  # type: ignore[import-not-found]

    return (_sre.MAGIC, _sre.CODESIZE, sys.version_info[:2])


def _load_table() -> dict[str, tuple[Any, ...]]:
    """The shipped table, or an empty one when it is missing, unreadable or for another Python."""
    global _table
    if _table is None:
        import marshal

        try:
            with open(TABLE_FILE, "rb") as f:
                data = f.read()  # marshal.load(f) reads a file in many small calls
            key, patterns = marshal.loads(data)
        except (OSError, EOFError, ValueError, TypeError):
            key, patterns = None, {}
        _table = patterns if key == table_key() and isinstance(patterns, dict) else {}
    return _table


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``re.compile(pattern)``, from the shipped table when it holds ``pattern``."""
    entry = _load_table().get(pattern)
    if entry is not None:
        import _sre

        flags, code, groups, groupindex, indexgroup = entry
        compiled: re.Pattern[str] = _sre.compile(
            pattern, flags, list(code), groups, groupindex, indexgroup
        )
        return compiled
    import re

    return re.compile(pattern)


class Pattern:
    """``re.compile(pattern)``, done when one of its methods is first looked up."""

    __slots__ = ("pattern", *_METHODS)

    match: Callable[..., re.Match[str] | None]
    fullmatch: Callable[..., re.Match[str] | None]
    search: Callable[..., re.Match[str] | None]
    findall: Callable[..., list[Any]]
    finditer: Callable[..., Iterator[re.Match[str]]]
    sub: Callable[..., str]

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __getattr__(self, name: str) -> Any:
        # Only called while the slots are empty, i.e. on first use.
        if name not in _METHODS:
            raise AttributeError(name)
        compiled = compile_pattern(self.pattern)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


# What makes a regular expression more than its own text, besides '.' (matched by hand).
_SPECIAL = frozenset("^$*+?{}[]\\|()")


class Literal:
    """``re.compile("^(?:" + text + ")$")`` for a ``text`` with no special characters but
    '.': a user's selector is a regular expression to kustomize, but almost always a plain name,
    and matching one by hand spares a small build importing ``re``. ``match`` answers as the
    regular expression would (truth value only): '.' is any character but a line break, and
    ``$`` also matches before a line break ending the string.
    """

    __slots__ = ("text", "dots")

    def __init__(self, text: str) -> None:
        self.text = text
        self.dots = "." in text

    @staticmethod
    def usable(text: str) -> bool:
        """Whether ``text`` reads the same as a regular expression and as a ``Literal``."""
        return _SPECIAL.isdisjoint(text)

    def match_prefix(self, s: str) -> bool:
        """Whether ``s`` starts with what ``^(?:text)`` matches."""
        text = self.text
        if not self.dots:
            return s.startswith(text)
        if len(s) < len(text):
            return False
        return all(
            want == got or (want == "." and got != "\n")
            for want, got in zip(text, s[: len(text)], strict=True)
        )

    def match(self, s: str) -> bool:
        """Whether ``s`` is what ``^(?:text)$`` matches."""
        n = len(self.text)
        if len(s) == n + 1 and s[-1] == "\n":
            s = s[:n]
        return len(s) == n and self.match_prefix(s)

    def search(self, s: str) -> bool:
        """Whether ``text``, as a regular expression, matches somewhere in ``s`` (Go's
        ``regexp.MatchString``; truth value only)."""
        if not self.dots:
            return self.text in s
        return any(self.match_prefix(s[i:]) for i in range(len(s) - len(self.text) + 1))
