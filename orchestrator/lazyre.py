"""Regular expressions compiled on first use, so importing the engine's modules stays quick.

Compiling the YAML modules' and the filters' patterns at import took about 3 ms of every build's
start-up (the Unicode classes most), and a small build uses few of them. After the first call a
``Pattern``'s methods are the compiled pattern's own bound methods, held in slots: a call costs
what it did before.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

_METHODS = ("match", "fullmatch", "search", "findall", "finditer", "sub")


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
        compiled = re.compile(self.pattern)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
