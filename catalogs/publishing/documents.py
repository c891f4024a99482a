"""Where in a YAML document a problem is: the line of the node a parser's path names, so that the
API and the web UI point at the line to fix."""

from __future__ import annotations

import re

import yaml

from catalogs.exceptions import ProblemDetail

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _path_parts(path: str) -> list[str | int]:
    """``spec.krmFunctions[2].versions`` -> ["spec", "krmFunctions", 2, "versions"]."""
    return [int(i) if i else key for key, i in _PATH_PART.findall(path)]


def yaml_line_of(text: str, path: str) -> int | None:
    """1-based line of the node at ``path`` in ``text`` (or of its deepest existing parent).

    Only called on text that parse_catalog already read, so composing it is safe: it has no
    aliases, is within the size limit and nests at most 100 levels.
    """
    try:
        node = yaml.compose(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in _path_parts(path):
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key, value in node.value:
                if getattr(key, "value", None) == part:
                    # The key's line, which is where a person looks for "that field".
                    line = key.start_mark.line + 1
                    child = value
                    break
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def _line_order(p: ProblemDetail) -> tuple[int, int]:
    # Document-level problems (no line) first, then top to bottom; sorted() keeps ties in order.
    return (p.line or 0, p.column or 0)


def problems_located(text: str, problems: list[ProblemDetail]) -> list[ProblemDetail]:
    """``problems`` with a line filled in from their path where the parser gave none, in line
    order."""
    out = []
    for p in problems:
        if p.line is None and p.path:
            p = ProblemDetail(path=p.path, message=p.message, line=yaml_line_of(text, p.path))
        out.append(p)
    return sorted(out, key=_line_order)
