"""Limits on what a YAML (or JSON) text may make: nesting depth and alias expansion.

Checked on libyaml's event stream before anything is composed, in one linear pass with no
recursion, because the hostile cases break the later steps: PyYAML's C composer recurses on the
C stack (25,000 nested ``[`` kill the process with SIGSEGV), the constructor and every later step
recurse in Python, and nested aliases expand exponentially (the "billion laughs").

- Depth: at most ``MAX_DEPTH`` nested mappings/sequences, counting the nodes aliases stand for
  (real Kubernetes manifests stay under 50; kustomize's go-yaml stops at 10,000).
- Aliases: what they expand to may not take the document over ``max(ALIAS_FLOOR, ALIAS_RATIO
  times the nodes written)``: a few anchors reused in a file pass, a bomb stops at once.
  (go-yaml v3's "excessive aliasing" check follows the same idea.)
"""

from __future__ import annotations

from orchestrator.errors import YamlError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 100
ALIAS_FLOOR = 100_000  # expanded nodes any document may reach, however small
ALIAS_RATIO = 10  # expanded nodes per node written, for larger documents


def decode_error(data: bytes, exc: UnicodeDecodeError, source: str | None) -> YamlError:
    """The error for bytes that are not text in the encoding they claim (UTF-8 unless a BOM)."""
    if exc.encoding.replace("-", "").lower() != "utf8":
        return YamlError(f"not valid {exc.encoding.upper()} (at byte {exc.start})", file=source)
    # Offsets count the BOM, if any, that was cut off before decoding.
    start = exc.start + (3 if data[:3] == b"\xef\xbb\xbf" else 0)
    line, column = _line_column(data, start)
    return YamlError(
        f"not valid UTF-8: byte 0x{data[start]:02x} (line {line}, column {column})", file=source
    )


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset into UTF-8 bytes."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def _where(event: Any) -> str:
    mark = event.start_mark
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""


def check_text(text: str, *, source: str | None = None) -> None:
    """Raise YamlError when ``text`` nests deeper than MAX_DEPTH or its aliases blow up.

    Syntax errors are left to the real parse, which reports them with its own message.
    """
    import yaml  # only texts the fast reader declines come here: a small build never loads it

    loader = yaml.CSafeLoader(text)
    try:
        if "&" in text:
            _check_events_with_aliases(loader, source)
        else:  # no anchor, so no alias: only the depth counts
            _check_depth_events(loader, source)
    except yaml.reader.ReaderError as exc:
        # libyaml counts UTF-8 bytes; say where in lines and characters instead.
        line, column = _line_column(text.encode("utf-8", "surrogatepass"), exc.position)
        raise YamlError(
            f"invalid YAML: {exc.reason}: #x{exc.character:04x} (line {line}, column {column})",
            file=source,
        ) from None
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def _check_depth_events(loader: Any, source: str | None) -> None:
    import yaml

    get = loader.get_event
    start = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    end = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    stream_end = yaml.StreamEndEvent
    depth = 0
    while True:
        event = get()
        cls = event.__class__
        if cls in start:
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlError(
                    f"nested deeper than {MAX_DEPTH} levels{_where(event)}", file=source
                )
        elif cls in end:
            depth -= 1
        elif cls is stream_end:
            return


def _check_events_with_aliases(loader: Any, source: str | None) -> None:
    import yaml

    get = loader.get_event
    start = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    end = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    # Per open collection: [anchor, expanded nodes below it, height below it].
    stack: list[list[Any]] = []
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded nodes, height)
    written = 0
    expanded = 0
    while True:
        event = get()
        cls = event.__class__
        if cls is yaml.ScalarEvent:
            written += 1
            expanded += 1
            if stack:
                stack[-1][1] += 1
            if event.anchor is not None:
                anchors[event.anchor] = (1, 0)
        elif cls in start:
            written += 1
            expanded += 1
            if len(stack) >= MAX_DEPTH:
                raise YamlError(
                    f"nested deeper than {MAX_DEPTH} levels{_where(event)}", file=source
                )
            stack.append([event.anchor, 1, 1])
        elif cls in end:
            anchor, size, height = stack.pop()
            if stack:
                parent = stack[-1]
                parent[1] += size
                if height + 1 > parent[2]:
                    parent[2] = height + 1
            if anchor is not None:
                anchors[anchor] = (size, height)
        elif cls is yaml.AliasEvent:
            name = event.anchor
            if any(frame[0] == name for frame in stack):
                raise YamlError(
                    f"alias *{name} refers to a node that holds it{_where(event)}", file=source
                )
            if name not in anchors:
                return  # an undefined alias: the parse reports it
            size, height = anchors[name]
            if len(stack) + height > MAX_DEPTH:
                raise YamlError(
                    f"nested deeper than {MAX_DEPTH} levels through alias *{name}{_where(event)}",
                    file=source,
                )
            expanded += size
            if stack:
                parent = stack[-1]
                parent[1] += size
                if height + 1 > parent[2]:
                    parent[2] = height + 1
            if expanded > ALIAS_FLOOR and expanded > ALIAS_RATIO * written:
                raise YamlError(
                    f"too much aliasing: aliases expand to over "
                    f"{max(ALIAS_FLOOR, ALIAS_RATIO * written)} nodes from {written} written "
                    f"up to here{_where(event)}",
                    file=source,
                )
        elif cls is yaml.DocumentStartEvent:
            anchors.clear()
        elif cls is yaml.StreamEndEvent:
            return


def check_depth(obj: Any, *, source: str | None = None, limit: int = MAX_DEPTH) -> None:
    """Raise YamlError when parsed data (e.g. from ``json.loads``) nests deeper than ``limit``."""
    todo: list[tuple[Any, int]] = [(obj, 0)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            raise YamlError(f"nested deeper than {limit} levels", file=source)
        todo.extend((c, depth + 1) for c in children)
