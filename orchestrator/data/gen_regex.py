"""Generate ``regex.marshal``: the engine's regular expressions, compiled (see ``lazyre``).

Imports every module of the ``orchestrator`` package and stores, for each ``Pattern`` it
holds (at module level, in a module-level list or as a class attribute), the code ``re``'s
compiler makes for it, keyed by the pattern, under the key of the Python that made it
(``lazyre.table_key``). Run after changing a pattern (``tests/orchestrator/test_lazyre.py``
fails until then)::

    python -m orchestrator.data.gen_regex
"""

from __future__ import annotations

import importlib
import marshal
import pkgutil
import re._compiler  # type: ignore[import-not-found]
import re._parser  # type: ignore[import-not-found]
from typing import Any

import orchestrator
from orchestrator import lazyre


def engine_patterns() -> list[str]:
    """Every module-level ``Pattern`` of the engine's modules (sorted, distinct)."""
    found: set[str] = set()
    for info in pkgutil.walk_packages(orchestrator.__path__, "orchestrator."):
        if info.name.startswith("orchestrator.data.") or info.name == "orchestrator.__main__":
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type):
                holders = list(vars(value).values())
            elif isinstance(value, (list, tuple)):
                holders = list(value)
            else:
                holders = [value]
            found.update(h.pattern for h in holders if isinstance(h, lazyre.Pattern))
    return sorted(found)


def compiled(pattern: str) -> tuple[Any, ...]:
    """What ``re.compile(pattern)`` hands ``_sre.compile`` besides the pattern itself."""
    parsed = re._parser.parse(pattern, 0)
    code = [int(op) for op in re._compiler._code(parsed, 0)]
    groupindex = dict(parsed.state.groupdict)
    indexgroup = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (int(parsed.state.flags), code, parsed.state.groups - 1, groupindex, tuple(indexgroup))


def render() -> bytes:
    """The table's bytes for the running Python."""
    table = {pattern: compiled(pattern) for pattern in engine_patterns()}
    return marshal.dumps((lazyre.table_key(), table))


if __name__ == "__main__":
    with open(lazyre.TABLE_FILE, "wb") as f:
        f.write(render())
