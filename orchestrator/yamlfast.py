"""The fast path for reading YAML: rapidyaml parses, emits JSON, and ``json`` builds the objects.

PyYAML's C composer makes a Python node object per scalar and collection; on large streams
(CRDs of several MB) that is most of a build's time. rapidyaml (``ryml``) parses into a C++
tree and writes it out as JSON in C++; ``json.loads`` turns that into dicts and lists in C.
Small texts are read this way too (see ``wanted``): a small build then never imports PyYAML,
which would cost it more than reading its few files. The result must be exactly what
``yamlio``'s PyYAML path makes (go-yaml v3 core-schema typing, or v2's for kustomization files,
``ImplicitNullMap`` for ``key:`` with no value, the same errors), so this path only answers
where it can prove it agrees, and returns ``None`` (read it with PyYAML) everywhere else:

- Text it does not read the same way: tabs other than at the end of a line or in a block
  scalar's content, carriage returns other than in CRLF line ends, characters libyaml refuses
  or treats as line breaks, directives, merge keys; and text libyaml refuses where ryml reads on
  (found by fuzzing against PyYAML: see tests/orchestrator/test_yamlfast.py), such as a
  reserved indicator starting a scalar, a bad block scalar header, content after a document
  end, ``?`` or ``:`` starting a flow entry, simple keys libyaml finds too long.
- Anchors, aliases and tags (ryml's tree flags them, looked at when the text may hold one).
- Plain scalars ryml's JSON types differently from go-yaml v3 (``~``, ``True``, ``0x1F``,
  ``0644``, ``1_000``, ``.inf``, a key ``1.0``) or v2 (also ``yes``, ``on``): every token
  that could be one is found with a regular expression, compared once per distinct token
  against both readers, and looked for in the JSON as ryml would show it. Where ryml shows it
  as a string, the plain ones (told from quoted ones by the tree) are typed here instead.
- Anything ryml or ``json`` rejects (so syntax errors keep PyYAML's messages), duplicate keys,
  documents nested deeper than ryml's emitter allows (64 levels, below ``MAX_DEPTH``: the depth
  and alias limits of ``yamllimits`` hold for what this path accepts).

What only looks suspect is decided with ryml's tree rather than declined (what fell off this
path in real repositories: tests/data/yamlfast, and bench/yaml_sweep.py to count the rest):
text that libyaml refuses only within flow collections (jsonPath values such as ``[-1:]``),
when no flow collection can hold it; text within block scalars' content (heredocs, tables of
``|``), when the tree's block scalars hold exactly those lines; a tab ending a line, dropped
outside block scalars; a block scalar ending the text with no line break, whose final line
break is taken off as libyaml does.

Which map values were written with nothing after the colon is read off ryml's tree (its
``VALNIL`` flag), only when the JSON holds a null map value at all. ryml prints its parse
errors on file descriptor 2; that is sent to /dev/null while it parses (single-threaded only).

``KRM_YAML_FAST=0`` turns the path off (to compare, or to rule it out when debugging);
``KRM_YAML_FAST=always`` uses it for texts of any size even when PyYAML is loaded (tests).
"""

from __future__ import annotations

import os
import sys
import types

from orchestrator.lazyre import Pattern, compile_pattern
from orchestrator.resource import ImplicitNullMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

ENV = "KRM_YAML_FAST"
MIN_CHARS = 128 * 1024  # below this, PyYAML, once loaded, is quicker than importing ryml

_ryml: Any = None  # the ryml module, once imported
last_reason = ""  # why the last text was left to PyYAML (for tests and debugging)


class _Undecided(Exception):
    """The fast path cannot vouch for this text: read it with PyYAML."""


class _ColonSuspect(_Undecided):
    """A ':' where libyaml may refuse it, most often inside a quoted scalar (_mask_colons)."""


_CHARACTER = "character"  # the reason for a character libyaml refuses or reads otherwise


# Characters libyaml refuses or reads unlike ryml (tab, CR, NEL, LS, PS, BOM inside): the
# complement of "\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd" and
# non-BMP, written as the few characters it leaves out (compiling the negated class took 3 ms).
# Lone surrogates are not in it: a text holding one cannot be encoded for ryml (ValueError).
_UNSAFE_CHAR = Pattern("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_UNSAFE_ASCII = Pattern("[^\n\x20-\x7e]")
# Words and numbers whose plain-scalar typing may differ between the two readers (as values
# or keys), with go-yaml v3's typing or v2's (y, yes, on, off...). Over-inclusive: also found
# inside longer scalars and quoted ones.
_TOKEN = Pattern(
    r"[\s\[{,:?\-]"
    r"([-+]?(?:[0-9.][0-9A-Za-z_.+\-]*|inf|infinity|nan)|~|null|Null|NULL|True|TRUE|False|FALSE"
    r"|[yYnN]|[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF)"
    r"(?=[\s,\[\]{}:]|\Z)"
)
_KEY_COLON = Pattern(r":(?=[\s,\[\]{}]|\Z)")
# Text libyaml refuses where ryml reads on (over-inclusive): ':' right before a flow indicator;
# '?' or ':' starting a flow entry or a value; a line starting with ':' after one with a flow
# collection (a flow key over two lines); a block scalar header with more than indicators and a
# comment; a quote and ':' (checked further: a quoted key over several lines).
# Where a flow collection may start on a line (over-inclusive): '[' or '{' first on the line,
# or after an indicator ('- ', ': ', '? ') and spaces. Not after other text ('(?:[' in a
# pattern of a CEL rule): a flow collection in a flow collection is on a line that holds the
# outer one's start, or within one over several lines (declined after parsing).
_FLOW_START = Pattern(r"(?:^ *|[:?-] +)[\[{]")
_FLOW_COLON = Pattern(r":[,?\[\]{}]")
_FLOW_ENTRY = Pattern(r"[\[{,] *[?:]")
_VALUE_START = Pattern(r": +[?:]\S")
_LINE_START = Pattern(r"\n( *[:|>][^\n]*)")
_FLOW_KEY_LINES = Pattern(r"[{\[][^\n]*\n *:[ \n]")
# (A backslash right after the indicators, as in "...key: |-\\n..." within a double-quoted
# scalar, is not looked at: ryml refuses it too where it would be a header.)
_HEADER = r"[|>](?!(?:[-+][1-9]?|[1-9][-+]?)?(?:\\|(?: +#[^\n]*| *)(?:\n|\Z)))"
_BAD_HEADER = Pattern(r"[:?-] +" + _HEADER)
_BAD_HEADER_LINES = Pattern(r"[:?-] *(?: #[^\n]*)?\n *" + _HEADER)  # a comment may end the first
# ryml reads '-', '+' and digits in a block scalar header's comment as its indicators
# ('run: | #>-' strips the final line break); libyaml ignores the comment. Found by sweeping.
_HEADER_COMMENT = Pattern(r"[|>][-+0-9]* +#[^\n]*[-+0-9]")
# A line ending in a block scalar header (over-inclusive: a plain scalar may end so), and what
# ends every such line (found in the whole text at once: it starts with one of two characters).
_HEADER_LINE = Pattern(r"(?:^ *|[:?-] +)([|>])([-+]?[0-9]?|[0-9][-+])[ \t]*(?:#[^\n]*)?$")
_HEADER_END = Pattern(r"(?m)[|>](?:[-+]?[0-9]?|[0-9][-+])[ \t]*(?:#[^\n]*)?$")
# A line holding something other than spaces and tabs, its leading spaces a group.
_NONBLANK_LINE = Pattern(r"\n( *+)[ \t]*+[^ \t\n]")
_INDICATOR_WORD = Pattern(r"\n *(?:- +)*[:?][^ \n]")
_DASHES = Pattern(r" *(?:- +)*")
_QUOTE_COLON = Pattern(r"['\"] *:[ \n]")
_SEQUENCE_AFTER = Pattern(r"['\"\]}] +-[ \n]")  # ryml reads '- "a" - b' as two entries
# An explicit key ('? ' first on a line) quoted or on the next line, and a quote with '?' or
# ':' and more right after it: ryml reads "? 'x':y" and "? 'x'?a" (libyaml refuses both).
# Found by fuzzing.
_EXPLICIT_KEY = Pattern(r"\n(?:- +)*\?(?: +['\"]| *(?:#[^\n]*)?\n)")  # key quoted or further on
_QUOTE_ADJACENT = Pattern(r"['\"][?:][^ \n]")
# In ryml's JSON: a string starting with a character no plain scalar may start with in libyaml
# (fine from a quoted or block scalar, which the tree tells: _check_plain_starts), or with a
# space (ryml misreads some invalid texts so, e.g. a less indented comment line in an indented
# block); aliases, anchors and tags are found in the tree (_scan_tree).
_INDICATOR_AFTER = "@`#|>% "
_ODD_KEYS = ('".nan": ', '".inf": ', '"-.inf": ')
# (the lookahead of _JSON_SUSPECTS, without its closing parenthesis: _json_suspect adds to it)
_JSON_SUSPECT = r'(?=(?<=[\[, \n]")[\]},]|[@`#|>% ]|\.nan": |\.inf": |-\.inf": '
_JSON_SUSPECT_FIRST = r"\]},@`#|>% .\-"  # the characters that start those
_INDICATORS = frozenset(b"@`#|>% ")
_CLOSERS = frozenset(b"]},")
_CLOSER_START = tuple(a + '"' + b for a in "[, \n" for b in "]},")

# (token, typing) -> where the two readers disagree on it (see _disagreement)
_DISAGREE: dict[tuple[str, Callable[[str], Any]], tuple[str | None, str | None]] = {}


def wanted(text: str) -> bool:
    """Whether to try the fast path on ``text``: unless turned off, or PyYAML is quicker.

    Once ryml is loaded it reads texts of any size at least as fast as PyYAML (as fast under
    256 characters, a fifth faster and more above). Importing ryml (``_import_ryml``) costs
    a fifth of importing PyYAML, so ryml is imported unless PyYAML is loaded already; then
    only for texts large enough to repay it. ``KRM_YAML_FAST=0`` turns the fast path off,
    ``KRM_YAML_FAST=always`` tries it on any text (tests).
    """
    mode = os.environ.get(ENV)
    if mode == "0":
        return False
    return (
        _ryml is not None or "yaml" not in sys.modules or len(text) >= MIN_CHARS or mode == "always"
    )


def _deprecated(**kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``deprecation.deprecated``, applied when the decorated function is first called."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        real: list[Callable[..., Any]] = []

        def call(*args: Any, **kw: Any) -> Any:
            if not real:
                import deprecation  # type: ignore[import-untyped]

                real.append(deprecation.deprecated(**kwargs)(func))
            return real[0](*args, **kw)

        # What functools.wraps copies (functools imports collections: start-up time).
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(call, name, getattr(func, name, None))
        call.__dict__.update(getattr(func, "__dict__", {}))
        call.__wrapped__ = func  # type: ignore[attr-defined]
        return call

    return decorate


def _import_ryml() -> Any:
    """Import ryml without loading the ``deprecation`` package, unless something else has.

    ``ryml/ryml.py`` imports ``deprecation`` only to decorate its old API (``parse``, ``emit``
    and such, unused here) with ``@deprecated(...)``, and that package imports
    ``packaging.version``, ``textwrap`` and ``typing``: 10 ms, two thirds of importing ryml.
    While ryml is imported, ``sys.modules`` holds a stand-in whose ``deprecated`` applies the
    real decorator when a decorated function is first called (so those still warn); it is
    removed right after, so a later ``import deprecation`` gets the real package. Likewise
    its ``import collections.abc``, which SWIG writes into every module and nothing there
    uses: the ``collections`` package costs a small build ~2 ms (``collections.abc`` itself,
    ``_collections_abc``, is loaded at start-up and is what the stand-in holds). Only while
    this is the process's only thread: no other thread may import those meanwhile.
    """
    global _ryml
    if _ryml is None:
        threading = sys.modules.get("threading")
        alone = threading is None or threading.active_count() == 1
        if not alone:
            import ryml  # type: ignore[import-untyped]
        else:
            stand_ins: dict[str, types.ModuleType] = {}
            if "deprecation" not in sys.modules:
                stand_ins["deprecation"] = types.ModuleType("deprecation")
                stand_ins["deprecation"].deprecated = _deprecated  # type: ignore[attr-defined]
            if "collections" not in sys.modules:
                import _collections_abc

                stand_ins["collections"] = types.ModuleType("collections")
                stand_ins["collections"].abc = _collections_abc  # type: ignore[attr-defined]
                stand_ins["collections.abc"] = _collections_abc
            sys.modules.update(stand_ins)
            try:
                import ryml
            finally:
                for name, module in stand_ins.items():
                    if sys.modules.get(name) is module:
                        del sys.modules[name]
        _ryml = ryml
    return _ryml


def preload() -> None:
    """Import what the fast path parses with now, unless it is turned off: a process about to
    fork children that will parse large texts (orchestrator.parallel) pays for it once."""
    if os.environ.get(ENV) != "0":
        from orchestrator import jsonc  # noqa: F401  (load_docs's)

        _import_ryml()


class _QuietStderr:
    """Send file descriptor 2 to /dev/null: ryml prints its parse errors there before raising.

    Only while this is the process's only thread (as in ``krm``), so no other thread's output
    can be lost; with other threads running (a web server), a parse error leaves ryml's message.
    (A class rather than contextlib.contextmanager: contextlib costs start-up.)
    """

    def __enter__(self) -> None:
        self.saved = self.null = -1
        threading = sys.modules.get("threading")  # not imported: no other thread was started
        if threading is not None and threading.active_count() != 1:
            return
        if sys.stderr is not None:
            sys.stderr.flush()
        self.saved = os.dup(2)
        try:
            self.null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(self.null, 2)
        except OSError:
            self.__exit__()
            raise

    def __exit__(self, *exc: object) -> None:
        if self.saved >= 0:
            os.dup2(self.saved, 2)
            os.close(self.saved)
        if self.null >= 0:
            os.close(self.null)
        self.saved = self.null = -1


def _lines(text: str) -> tuple[set[str], str]:
    """The distinct lines of ``text``, and the distinct ones of those without their indentation,
    joined by newlines (with one before the first and after the last).

    Large manifests repeat most lines, and most of the rest at other depths (a CRD's schema
    repeats its descriptions): the joined lines hold a fifth of the text or less, and the
    checks that look within one line run on them. A check that tells a line's start by a
    ``\n`` followed by spaces finds the same there; one that needs the indentation (a key's
    column) uses the distinct lines, or the text.
    """
    distinct = set(text.split("\n"))
    return distinct, "\n" + "\n".join(set(map(str.lstrip, distinct, [" "] * len(distinct)))) + "\n"


class _Nodes:
    """The types of a tree's nodes, read once for the checks that look at all of them.

    ryml's Python API reads a node at a time (a third of a microsecond a call: 10 ms for a CRD
    of 3 MB, a pass). On large trees the types, and the lengths of keys and values, are read
    at once from ryml's node array (``_bulk_nodes``), where its layout is the one checked on
    first use; the lengths only narrow which nodes a check then looks at through the API.
    """

    __slots__ = ("tree", "ryml", "_types", "union", "keys", "vals")

    def __init__(self, tree: Any, ryml: Any) -> None:
        self.tree, self.ryml = tree, ryml
        self._types: list[int] | None = None
        self.union = 0  # the flags any node has (once ``types`` is read)
        self.keys: list[int] | None = None  # the length of each node's key, when read at once
        self.vals: list[int] | None = None  # and of its value

    @property
    def types(self) -> list[int]:
        if self._types is None:
            size = self.tree.size()
            bulk = _bulk_nodes(self.tree, self.ryml) if size >= _BULK_MIN else None
            if bulk is None:
                node_type = self.ryml._ryml.Tree_type
                self._types = list(map(node_type, [self.tree] * size, range(size)))
            else:
                self._types, self.keys, self.vals = bulk
            union = 0
            for flags in set(self._types):
                union |= flags
            self.union = union
        return self._types

    def where(self, flags: int, without: int = 0) -> list[int]:
        """The nodes with any of ``flags`` and none of ``without``, in order."""
        types = self.types
        if not self.union & flags:
            return []
        if without:
            return [node for node, t in enumerate(types) if t & flags and not t & without]
        return [node for node, t in enumerate(types) if t & flags]


_BULK_MIN = 4096  # nodes: below this reading them one at a time costs less than importing ctypes
_NODE_WORDS = 18  # 8-byte words a node takes in ryml's node array (checked: _bulk_layout_ok)
_bulk_checked: list[bool] = []  # [whether ryml's node array is laid out as read], once known


def _bulk_nodes(tree: Any, ryml: Any) -> tuple[list[int], list[int], list[int]] | None:
    """The type and the key and value lengths of each node of ``tree``, read at once from
    ryml's node array, or None where its layout is not the one this reads.

    ryml's ``Tree`` starts with its node array's address, capacity and size (checked against
    the API on each tree before the array is read); a node (``NodeData``) is its type, its key
    and its value (each a tag, the scalar and an anchor, each an address and a length), then
    five node ids. Checked once per process, field by field, against the API on a tree holding
    every kind of node (``_bulk_layout_ok``).
    """
    if not _bulk_checked:
        _bulk_checked.append(_bulk_layout_ok(ryml))
    if not _bulk_checked[0]:
        return None
    return _read_nodes(tree)


def _read_nodes(tree: Any) -> tuple[list[int], list[int], list[int]] | None:
    import ctypes

    size = tree.size()
    head = memoryview(ctypes.string_at(int(tree.this), 24)).cast("Q")
    if not head[0] or head[1] != tree.capacity() or head[2] != size or not size:
        return None
    array = (ctypes.c_char * (size * 8 * _NODE_WORDS)).from_address(head[0])
    words = memoryview(array).cast("B").cast("Q")
    step = _NODE_WORDS
    return words[0::step].tolist(), words[4::step].tolist(), words[10::step].tolist()


_LAYOUT_SAMPLE = (
    b"a: 1\nb:\n- x\n- 'y'\n- {p: \"q\", r: [s, t]}\n- [u,\n  v]\nc:\nd: |\n  e\nf: >-\n  g\n"
    b"'h': ~\n\"i\": &j k\nl: *j\nm: !!str n\n? o\n: p\n"
)


def _bulk_layout_ok(ryml: Any) -> bool:
    """Whether ``_read_nodes`` reads what the API reads, on a tree of every kind of node."""
    try:
        tree = ryml.Tree()
        tree.reserve(1024)  # an array far larger than what is read, whatever a node's size
        ryml.parse_in_arena(_LAYOUT_SAMPLE, tree=tree)
        read = _read_nodes(tree)
    except Exception:  # noqa: BLE001 (any failure: read one node at a time)
        return False
    if read is None:
        return False
    node_type, node_key, node_val = ryml._ryml.Tree_type, ryml._ryml.Tree_key, ryml._ryml.Tree_val
    for node, (t, k, v) in enumerate(zip(*read, strict=True)):
        key, val = node_key(tree, node), node_val(tree, node)
        if (t, k, v) != (node_type(tree, node), len(key or b""), len(val or b"")):
            return False
    return len(set(read[0])) > 10


def _check_text(text: str, distinct: set[str], lines: str) -> str | None:
    """Raise _Undecided for text this path may read differently from libyaml.

    ``distinct, lines`` is _lines(text): the checks that look within one line run on ``lines``.
    Returns the reason to decline if the text turns out to hold a flow collection, else None.
    """
    # First: any other reason means the text holds no such character (_mask_block_bodies).
    if (_UNSAFE_ASCII if lines.isascii() else _UNSAFE_CHAR).search(lines):
        raise _Undecided(_CHARACTER)
    if text.startswith(("|", ">", "...")):
        raise _Undecided("block scalar or document end at the start")
    if "<<" in lines:
        raise _Undecided("merge key")
    # At column 0 only (a '%' or '...' further in is a plain scalar's, or a block scalar's).
    if "\n%" in lines and any(line.startswith("%") for line in distinct):
        raise _Undecided("directive")
    if "\n..." in lines and any(line.startswith("...") for line in distinct):
        raise _Undecided("document end")  # libyaml wants a "---" after it, ryml does not
    # Patterns that cannot match are skipped, which spares compiling them (most small texts
    # hold no block scalar indicator, no line starting with ':' and no line of 1000 characters).
    blocks = "|" in lines or ">" in lines
    if _SEQUENCE_AFTER.search(lines):
        raise _Undecided(f"text libyaml refuses ({_SEQUENCE_AFTER.pattern})")
    if _INDICATOR_WORD.search(lines):
        # ':a' or '?a' first on a line: a plain scalar to libyaml, an indicator to ryml.
        raise _Undecided(f"text libyaml reads otherwise ({_INDICATOR_WORD.pattern})")
    if "?" in lines and _EXPLICIT_KEY.search(lines) and _QUOTE_ADJACENT.search(lines):
        raise _Undecided("explicit key and a quote right before '?' or ':'")
    flow_only = None
    for pattern in (_FLOW_COLON, _FLOW_ENTRY, _VALUE_START):
        for m in pattern.finditer(lines):
            # Refused inside flow collections only: jsonPath values such as [-1:] or
            # [?(@.type=="Ready")] and addresses such as ':8080' are plain scalars in block
            # context. Declined here when a flow collection may start on that line, and after
            # parsing when the tree holds a flow collection over several lines.
            flow_only = f"text libyaml refuses in flow context ({pattern.pattern})"
            where = lines[lines.rfind("\n", 0, m.start()) + 1 : lines.find("\n", m.end())]
            if _FLOW_START.search(where):
                raise _Undecided(flow_only)
    if blocks and _BAD_HEADER.search(lines):
        raise _Undecided(f"text libyaml refuses ({_BAD_HEADER.pattern})")
    if blocks and _HEADER_COMMENT.search(lines):
        raise _Undecided("block scalar header with a comment ryml misreads")
    starts = blocks or "\n:" in lines or " :" in lines
    for line in _LINE_START.findall(lines) if starts else ():
        # The two-line checks, for each place such a line is, at any indentation, after
        # another line (CEL rules often start with ':').
        needle = line + "\n"
        i = text.find(needle)
        while i >= 0:
            start = text.rfind("\n", 0, i) + 1
            if start and not text[start:i].strip(" "):
                pair = text[text.rfind("\n", 0, start - 1) + 1 : i + len(needle)]
                if _BAD_HEADER_LINES.search(pair):
                    raise _Undecided(f"text libyaml refuses ({_BAD_HEADER_LINES.pattern})")
                if _FLOW_KEY_LINES.search(pair):
                    raise _ColonSuspect(f"text libyaml refuses ({_FLOW_KEY_LINES.pattern})")
            i = text.find(needle, i + 1)
    for m in _QUOTE_COLON.finditer(lines):
        start = m.start()
        line = lines.rfind("\n", 0, start) + 1
        if "'" not in lines[line:start] and '"' not in lines[line:start]:
            raise _ColonSuspect("quoted key over several lines")
    return flow_only


# The character that stands in for a suspect ':' (_mask_colons): a private use one, which
# libyaml and ryml read as any other, and which no real text holds.
_MARK = "\ue000"
_MARK_BYTES = _MARK.encode("utf-8")


def _mask_colons(text: str) -> tuple[str, int]:
    """``text`` with each ':' that made it a _ColonSuspect replaced by _MARK, and how many.

    Such a ':' (a line starting with ':' after one holding '[' or '{', or a ':' after a quote
    with no quote before it on its line) is almost always inside a quoted scalar over several
    lines (CEL rules, JSON in a description), where it is text to both readers; in flow or
    block context libyaml refuses it or reads it otherwise. With _MARK in its place, the text is
    checked and read as any other, and ``_check_marks`` then holds ryml's tree to every _MARK
    being in a quoted or block scalar value or a comment: there, to libyaml too, a ':' is text
    like any other character (a backslash before it, an escape in a double-quoted scalar, is
    declined).
    """
    if _MARK in text:
        raise _Undecided("private use character U+E000")
    spots = {m.end() - 2 for m in _FLOW_KEY_LINES.finditer(text)}
    for m in _QUOTE_COLON.finditer(text):
        start = m.start()
        line = text.rfind("\n", 0, start) + 1
        if "'" not in text[line:start] and '"' not in text[line:start]:
            spots.add(m.end() - 2)
    pieces: list[str] = []
    done = 0
    for spot in sorted(spots):
        if text[spot - 1] == "\\":
            raise _Undecided("escaped ':' in a suspect place")
        pieces += text[done:spot], _MARK
        done = spot + 1
    pieces.append(text[done:])
    return "".join(pieces), len(spots)


def _check_marks(nodes: _Nodes, js: str) -> None:
    """_Undecided unless each _MARK ryml read is inside a quoted or block scalar value, where a
    ':' is text to libyaml too; the others (not in the JSON) are in comments, where it is too.
    (Tags and anchors, where one could also vanish from the JSON, are declined: _scan_tree.)"""
    tree, ryml = nodes.tree, nodes.ryml
    node_val = ryml._ryml.Tree_val
    found = 0
    for node in nodes.where(ryml.VAL_SQUO | ryml.VAL_DQUO | ryml.VAL_LITERAL | ryml.VAL_FOLDED):
        found += bytes(node_val(tree, node)).count(_MARK_BYTES)
    if found != js.count(_MARK):
        raise _Undecided("suspect ':' in a plain scalar or a key")


def _may_have_long_keys(distinct: set[str]) -> bool:
    """Whether a line (of the ``distinct`` ones) has a ':' 1000 or more characters in: libyaml
    refuses a simple key whose ':' comes 1024 or more characters after it (ryml reads it).
    ``_check_key_lengths`` then looks at the keys ryml read (in JSON in a quoted scalar, such a
    ':' ends no key)."""
    if max(map(len, distinct)) >= 1000:
        for line in distinct:
            if len(line) >= 1000 and _KEY_COLON.search(line, 1000) is not None:
                return True
    return False


def _check_key_lengths(nodes: _Nodes) -> None:
    """Raise _Undecided for a key of 1000 characters or more."""
    tree, ryml = nodes.tree, nodes.ryml
    node_key, key = ryml._ryml.Tree_key, ryml.KEY
    long_keys = nodes.where(key)
    if nodes.keys is not None:
        long_keys = [node for node in long_keys if nodes.keys[node] >= 1000]
    for node in long_keys:
        k = node_key(tree, node)
        if k is not None and len(k) >= 1000:
            raise _Undecided("long key")


def _strip_trailing_tabs(text: str) -> tuple[str, list[tuple[str, int, list[str]]]]:
    """``text`` without the white space ending a line that holds a tab there, except in block
    scalars' content (where it is content), and the block scalars found (to be held to ryml's
    tree: ``_check_block_bodies``).

    Elsewhere such white space means nothing to libyaml (it ends a plain or quoted scalar's
    line, or a comment, or follows a ':'), but ryml keeps a tab ending a line of a plain scalar
    over several lines. Kept, and so declined as a character: after a backslash (an escaped tab
    in a double-quoted scalar), after an indicator ('-' or '?': libyaml refuses '- \t') and
    on lines of white space only (libyaml refuses some).
    """
    _, bodies, masked = _mask_block_bodies(text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if i in masked or "\t" not in line:
            continue
        stripped = line.rstrip(" \t")
        if "\t" in line[len(stripped) :] and stripped.strip(" \t") and stripped[-1] not in "\\-?":
            lines[i] = stripped
    return "\n".join(lines), bodies


def _mask_block_bodies(
    text: str, *, clean: bool = False
) -> tuple[str, list[tuple[str, int, list[str]]], set[int]]:
    """``text`` with the content lines of its block scalars blanked, and for each block scalar
    (in text order) its style, its content's indentation and its content lines, and the
    indexes of those lines.

    Headers are found by their look (``key: |``, ``- >-``, ``|`` alone); ``_check_block_bodies``
    then holds the result to ryml's tree, so a plain scalar that looks like one is no risk.
    _Undecided for what this does not follow: content at column 0, a tab within the content's
    indentation, a content line less indented than the first, characters other than tabs that
    libyaml refuses (not looked for when ``clean``: the caller found none in ``text``).
    """
    lines = text.split("\n")
    out: list[str] = []  # the text's pieces, with the content lines blanked
    done = 0  # where in ``text`` the pieces in ``out`` end
    tabs = "\t" in text
    bodies: list[tuple[str, int, list[str]]] = []
    masked: set[int] = set()
    i = 0  # the first line not yet looked at (a header's content is not looked at for headers)
    row = at = 0  # the line ``at`` (a position in ``text``) is on
    # Only the lines that end as a header does are looked at.
    for end in _header_ends(text):
        row += text.count("\n", at, end)
        at = end
        if row < i:
            continue
        i = row + 1
        line = lines[row]
        m = _HEADER_LINE.search(line)
        if m is None:
            continue
        digits = [int(c) for c in m.group(2) if c.isdigit()]
        # The indentation the content must exceed: that of the key the header follows (after
        # any '- '), or of the last '- ' when the header is a sequence entry itself.
        dashes = _DASHES.match(line)
        key_column = dashes.end() if dashes is not None else 0
        if key_column >= m.start():
            parent = line.rstrip(" ").rfind("-", 0, m.start())
            parent = parent if parent >= 0 else len(line) - len(line.lstrip(" "))
        else:
            parent = key_column
        start = i
        line_end = text.find("\n", at)
        # The first content line: the next one holding something other than spaces and tabs,
        # if indented by more than ``parent`` (else the content is empty).
        first = _NONBLANK_LINE.search(text, line_end) if line_end >= 0 else None
        spaces = first.end(1) - first.start(1) if first is not None else 0
        if first is None or spaces <= parent:
            bodies.append((m.group(1), parent + digits[0] if digits else 0, []))
            continue
        # libyaml's indentation with a digit: the parent's plus the digit.
        indent = parent + digits[0] if digits else spaces
        if indent == 0 or text[first.end(1)] == "\t":
            raise _Undecided("block scalar content at column 0 or indented with a tab")
        # The content runs to the first line holding something other than spaces and tabs that
        # is indented by no more than ``parent``; one indented by more but by less than
        # ``indent`` is content less indented than the first line.
        found = _content_end(indent - 1).search(text, line_end)
        if found is not None and _indentation(text, found) > parent:
            raise _Undecided("block scalar content less indented than its first line")
        i = len(lines) if found is None else row + text.count("\n", line_end, found.start() + 1)
        body = lines[start:i]
        while body and not body[-1].strip(" \t"):
            body.pop()  # trailing blank lines: left as they are (and checked as text)
        i = start + len(body)
        # The content's lines are text[line_end + 1 : content_end].
        content_end = line_end + sum(map(len, body)) + len(body)
        if (tabs and "\t" in text[line_end:content_end]) or (
            not clean and _UNSAFE_CHAR.search(text, line_end, content_end)
        ):
            for line in body:  # which of the two reasons comes first
                if "\t" in line[:indent] or (_UNSAFE_CHAR.search(line.replace("\t", " "))):
                    raise _Undecided(_CHARACTER)
                if line.strip(" \t") and not line.startswith(" " * indent):
                    raise _Undecided("block scalar content less indented than its first line")
        out += text[done : line_end + 1], "\n" * (len(body) - 1)
        done = content_end
        masked.update(range(start, start + len(body)))
        bodies.append((m.group(1), indent, body))
    out.append(text[done:])
    return "".join(out), bodies, masked


def _indentation(text: str, found: Any) -> int:
    """The spaces starting the line after the line break ``found`` matched at."""
    line = text[found.start() + 1 : found.end()]
    return len(line) - len(line.lstrip(" "))


def _header_ends(text: str) -> Iterator[int]:
    """Where each line that ends as a block scalar header does ends it (its '|' or '>'), in
    order: found by character (str.find runs at memory speed, a regex search with a leading
    class does not), then matched."""
    match = _HEADER_END.match
    positions: list[int] = []
    for char in "|>":
        p = text.find(char)
        while p >= 0:
            positions.append(p)
            p = text.find(char, p + 1)
    positions.sort()
    for p in positions:
        if match(text, p) is not None:
            yield p


# The compiled patterns of _json_suspect and _content_end, by their argument (dicts, not
# functools caches: functools imports collections at start-up). The common ones are module
# constants, so that the shipped regex table (orchestrator.lazyre) holds them compiled.
_JSON_SUSPECTS = Pattern('"(?=[' + _JSON_SUSPECT_FIRST + "])" + _JSON_SUSPECT + ")")
_JSON_SUSPECTS_WITH: dict[tuple[str, ...], Any] = {}
# Characters of JSON text times strings looked for, above which one search for all of them
# costs less than a str.find for each (which spares importing re for small texts).
_FIND_SCAN = 1 << 20
_COMMON_INDENTS = 81  # CRD schemas nest descriptions 60 and more spaces deep


def _content_end_source(parent: int) -> str:
    return f"\n {{0,{parent}}}+(?! )[ \t]*+[^ \t\n]"


_CONTENT_ENDS = [Pattern(_content_end_source(p)) for p in range(_COMMON_INDENTS)]
_DEEPER: dict[str, Any] = {}  # the others, once compiled, by their source


# What re.escape escapes (without importing re for it).
_ESCAPES = {c: "\\" + chr(c) for c in b"()[]{}?*+-|^$\\.&~# \t\n\r\v\f"}


def _json_suspect(strings: tuple[str, ...]) -> Any:
    """_JSON_SUSPECTS completed with ``strings`` (JSON strings: each '"' that starts one).

    (The first lookahead, a character that starts one of them, spares trying them all.)
    """
    compiled = _JSON_SUSPECTS_WITH.get(strings)
    if compiled is None:
        if len(_JSON_SUSPECTS_WITH) >= 256:
            _JSON_SUSPECTS_WITH.clear()
        compiled = _JSON_SUSPECTS_WITH[strings] = compile_pattern(
            '"(?=['
            + _JSON_SUSPECT_FIRST
            + "".join(value[1].translate(_ESCAPES) for value in strings)
            + "])"
            + _JSON_SUSPECT
            + "".join("|" + value[1:].translate(_ESCAPES) for value in strings)
            + ")"
        )
    return compiled


def _content_end(parent: int) -> Any:
    """The line break before a line indented by ``parent`` spaces or fewer (then no space)
    holding something other than spaces and tabs."""
    if parent < _COMMON_INDENTS:
        return _CONTENT_ENDS[parent]
    return _deeper(_content_end_source(parent))


def _deeper(source: str) -> Any:
    """``source`` compiled, once per process (an indentation the shipped table lacks)."""
    compiled = _DEEPER.get(source)
    if compiled is None:
        compiled = _DEEPER[source] = compile_pattern(source)
    return compiled


def _check_block_bodies(nodes: _Nodes, bodies: list[tuple[str, int, list[str]]]) -> None:
    """_Undecided unless ryml's block scalars are, in order, those ``_mask_block_bodies`` found,
    each holding its content lines (all of a literal's characters, a folded one's words)."""
    tree, ryml, types = nodes.tree, nodes.ryml, nodes.types
    if nodes.union & (ryml.KEY_LITERAL | ryml.KEY_FOLDED):
        raise _Undecided("block scalar key")
    blocks = nodes.where(ryml.VAL_LITERAL | ryml.VAL_FOLDED)
    if len(blocks) != len(bodies):
        raise _Undecided("block scalars not where the text shows them")
    for node, (style, indent, body) in zip(blocks, bodies, strict=True):
        value = bytes(tree.val(node)).decode("utf-8")
        literal = bool(types[node] & ryml.VAL_LITERAL)
        if literal != (style == "|"):
            raise _Undecided("block scalars not where the text shows them")
        if literal:
            same = value.rstrip("\n") == "\n".join(line[indent:] for line in body).rstrip("\n")
        else:
            same = "".join(value.split()) == "".join("".join(body).split())
        if not same:
            raise _Undecided("block scalar content not what the text shows")


def _tokens(lines: str) -> set[str]:
    """The distinct _TOKEN matches in ``lines``, at whitespace speed.

    _TOKEN looks one character to each side, and whitespace counts as a boundary, so matching
    the distinct whitespace-separated words, joined by spaces, finds the same tokens.
    """
    return set(_TOKEN.findall(" " + " ".join(set(lines.split())) + " "))


def _maybe_property(lines: str) -> bool:
    """Whether a ``!``, ``&`` or ``*`` stands where a tag, anchor or alias may (over-inclusive)."""
    for char in "!&*":
        i = lines.find(char)
        while i >= 0:
            if lines[i - 1] in " \n[{,":
                return True
            i = lines.find(char, i + 1)
    return False


def _disagreement(token: str, plain: Callable[[str], Any]) -> tuple[str | None, str | None]:
    """Where ryml's JSON and the ``plain`` typing differ on a plain ``token``, and how it shows.

    Returns the JSON ryml writes for ``token`` as a value (when json would read it as something
    else than ``plain`` gives, and read it at all: invalid JSON fails the load anyway) and the
    key ryml writes for it (when yamlio would use another key). ``(None, None)`` when they agree.
    """
    hit = _DISAGREE.get((token, plain))
    if hit is not None:
        return hit
    ryml = _ryml
    value_json = ryml.emit_json(ryml.parse_in_arena(f"[{token}]".encode()))[1:-1]
    key_json = ryml.emit_json(ryml.parse_in_arena(f"{{{token}: 0}}".encode()))[1:-4]
    return _compare(token, plain, value_json, key_json)


def _learn_disagreements(tokens: set[str], plain: Callable[[str], Any]) -> None:
    """Fill ``_DISAGREE`` for the ``tokens`` not in it, with one ryml parse and emit for all
    their values (``[a, b, ...]``) and one for all their keys (``{a: 0, b: 0, ...}``) instead of
    two of each per token: a file of image tags and versions holds hundreds of tokens. A token
    holds no ',', quote, bracket or space, so neither does its JSON: the JSON splits at the
    commas. Anything unexpected leaves the tokens to ``_disagreement``, one at a time."""
    new = [t for t in tokens if (t, plain) not in _DISAGREE]
    if len(new) < 2 or len(_DISAGREE) + len(new) > 10000:
        return
    ryml = _ryml
    try:
        values = ryml.emit_json(ryml.parse_in_arena(("[" + ", ".join(new) + "]").encode()))
        keys = ryml.emit_json(ryml.parse_in_arena(("{" + ": 0, ".join(new) + ": 0}").encode()))
    except Exception as exc:
        if type(exc).__module__.startswith("ryml"):
            return
        raise
    if not (values.startswith("[") and values.endswith("]")):
        return
    if not (keys.startswith("{") and keys.endswith("}")):
        return
    value_parts = values[1:-1].split(",")
    key_parts = keys[1:-1].split(",")
    if len(value_parts) != len(new) or len(key_parts) != len(new):
        return
    if not all(part.endswith(": 0") for part in key_parts):
        return
    for token, value_json, key_part in zip(new, value_parts, key_parts, strict=True):
        _compare(token, plain, value_json, key_part[:-3])


def _compare(
    token: str, plain: Callable[[str], Any], value_json: str, key_json: str
) -> tuple[str | None, str | None]:
    """``_disagreement``'s answer from ryml's JSON for ``token`` as a value and as a key."""
    from orchestrator import jsonc as json

    mine = plain(token)
    bad_value: str | None = None
    try:
        value = json.loads(value_json, parse_constant=_reject)
    except (_Undecided, ValueError):
        pass
    else:
        same = type(value) is type(mine) and (value == mine or (value != value and mine != mine))
        bad_value = None if same else value_json
    key = json.loads(key_json)
    from orchestrator.yamlscalar import scalar_text

    result = (bad_value, None if key == scalar_text(mine) else key)
    if len(_DISAGREE) < 10000:
        _DISAGREE[token, plain] = result
    return result


def _reject(name: str) -> Any:
    raise _Undecided


def _pairs_checking(bad_keys: frozenset[str]) -> Callable[[list[tuple[str, Any]]], Any]:
    """json's object hook: a dict, refusing duplicate keys and keys ryml may have misread."""

    def pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        if len(d) != len(pairs):
            raise _Undecided("duplicate key")  # PyYAML says where
        if bad_keys and not bad_keys.isdisjoint(d):
            raise _Undecided("key typing")
        return d

    return pairs


def load_docs(
    text: str,
    data: bytes | None,
    plain: Callable[[str], Any],
    *,
    fold: bool = False,
    mask_first: bool = True,
) -> list[Any] | None:
    """The non-empty documents of ``text`` as yamlio makes them, or None to use PyYAML.

    ``data`` is ``text`` as UTF-8 when the caller has it (saves encoding it again); ``plain``
    gives the value a plain scalar has with the wanted typing (``yamlio._v3_plain``, or
    ``yamlio._v2_plain`` for kustomization files). ``fold``: folded scalars as kustomize's
    go-yaml round trip leaves them (``yamlscalar.goyaml_folded``), as yamlpy gives them too.
    ``mask_first``: a large text with block scalars may be checked without their content from
    the start (``_check_masked_first``).
    """
    global last_reason
    from orchestrator import jsonc as json

    if not text:
        return []
    given = text, data
    masked_first = False
    try:
        # libyaml reads the end of the text as a line break, except after a block scalar (it
        # keeps no line break there, ryml adds one): without one, ryml reads the text with it,
        # and the result stands unless a block scalar ends the text.
        if "\r" in text:
            # CRLF line ends: LF to libyaml too (line breaks are normalised in every scalar).
            lf = text.replace("\r\n", "\n")
            if "\r" not in lf:
                text, data = lf, None
        unterminated = not text.endswith("\n")
        if unterminated:
            text += "\n"
            data = None
        bodies: list[tuple[str, int, list[str]]] | None = None
        if "\t" in text:
            text, bodies = _strip_trailing_tabs(text)
            data = None
        marks = 0
        distinct, lines = _lines(text)
        first = _check_masked_first(text, lines) if mask_first and bodies is None else None
        if first is not None:
            masked_first = True
            flow_only, bodies, distinct, lines = first
        try:
            if first is None:
                flow_only, bodies = _check_all(text, distinct, lines, bodies)
        except _ColonSuspect:
            text, marks = _mask_colons(text)
            data = None
            distinct, lines = _lines(text)
            flow_only, bodies = _check_all(text, distinct, lines, bodies)
        ryml = _import_ryml()
        with _QuietStderr():
            bad_values: dict[str, set[str]] = {}
            bad_keys: set[str] = set()
            tokens = _tokens(lines)
            _learn_disagreements(tokens, plain)
            for token in tokens:
                value, key = _disagreement(token, plain)
                if value is not None:
                    bad_values.setdefault(value, set()).add(token)
                if key is not None:
                    bad_keys.add(key)
            tree = ryml.parse_in_arena(text.encode("utf-8") if data is None else data)
            js = ryml.emit_json(tree)
        if js is None:
            raise _Undecided("empty")
        nodes = _Nodes(tree, ryml)
        if flow_only is not None and _has_flow(nodes):
            raise _Undecided(flow_only)
        if _may_have_long_keys(distinct):
            _check_key_lengths(nodes)
        if bodies is not None:
            try:
                _check_block_bodies(nodes, bodies)
            except _Undecided:
                if masked_first:  # as if never masked first: the usual checks decide
                    return load_docs(*given, plain, fold=fold, mask_first=False)
                raise
        if marks:
            _check_marks(nodes, js)
            js = js.replace(_MARK, ":")
        starts, suspects = _check_json(js, text, bad_values)
        if '"": ' in js:
            _check_empty_keys(nodes)
        if starts:
            _check_plain_starts(nodes, starts)
        retyped = _plain_values(nodes, suspects) if suspects else []
        last_block = None
        if unterminated and ("|" in text or ">" in text):
            last_block = _ends_in_block_scalar(text, tree, ryml)
        nulls = '": null' in js
        implicit = _scan_tree(nodes, nulls) if nulls or _maybe_property(lines) else {}
        hook = _pairs_checking(frozenset(bad_keys))
        root = json.loads(js, object_pairs_hook=hook, parse_constant=_reject, strict=False)
        docs = root if tree.is_stream(tree.root_id()) else [root]
        if implicit:
            _mark_implicit_nulls(tree, docs, implicit)
        for node, token in retyped:
            # A plain scalar ryml writes as a JSON string (True, 0o17): typed as go-yaml does.
            holder, step = _holder(tree, docs, node)
            holder[step] = plain(token)
        if last_block is not None:
            # libyaml keeps no line break after a block scalar that ends the text without one
            # (whatever its chomping); ryml read the text with one added.
            holder, step = _holder(tree, docs, last_block)
            if holder[step].endswith("\n"):
                holder[step] = holder[step][:-1]
        if fold and ">" in text:
            from orchestrator.yamlscalar import goyaml_folded

            for node in nodes.where(ryml.VAL_FOLDED):
                holder, step = _holder(tree, docs, node)
                holder[step] = goyaml_folded(holder[step])
    except (_Undecided, ValueError, RecursionError) as exc:
        last_reason = f"{type(exc).__name__}: {exc}"
        return None
    except Exception as exc:
        if type(exc).__module__.startswith("ryml"):
            last_reason = f"ryml: {type(exc).__name__}"
            return None
        raise
    last_reason = ""
    return [d for d in docs if d is not None]


# A text at least this long whose lines include one starting with "| " (a row of a markdown
# table, as controller-gen copies Go doc comments into CRD descriptions) is checked without
# its block scalars' content from the start: outside a block scalar such a line is refused,
# so the whole text's checks would decline it, after which it is masked and checked again
# anyway (kueue's 1.4 MB Workload CRD: ~9 ms of its ~48 ms spent to decline).
_MASK_FIRST = 64 * 1024


def _tables_in_blocks(text: str, lines: str) -> bool:
    """Whether ``text`` is large and a line of it starts with "| " (``lines``: _lines(text)[1])."""
    return len(text) >= _MASK_FIRST and "\n| " in lines


def _check_masked_first(
    text: str, lines: str
) -> tuple[str | None, list[tuple[str, int, list[str]]], set[str], str] | None:
    """For a large text that looks as if it holds tables in block scalars (``lines`` is
    ``_lines(text)[1]``): ``_check_text`` on the text with its block scalars' content blanked,
    the block scalars found (which ``_check_block_bodies`` holds to ryml's tree), and the
    distinct lines and the joined ones of the masked text (what the later checks look at: the
    content of a block scalar holds no key, plain scalar, tag or anchor). None when the text
    does not look so, or any of this declines: then the usual order decides (``_check_all``),
    which masks only once the whole text declines. A text read this way is one the usual
    order reads the same (its fallback is these very checks)."""
    if not _tables_in_blocks(text, lines):
        return None
    try:
        masked, bodies, _ = _mask_block_bodies(text)
        distinct, masked_lines = _lines(masked)
        return _check_text(masked, distinct, masked_lines), bodies, distinct, masked_lines
    except _Undecided:
        return None


def _check_all(
    text: str, distinct: set[str], lines: str, bodies: list[tuple[str, int, list[str]]] | None
) -> tuple[str | None, list[tuple[str, int, list[str]]] | None]:
    """_check_text, and where it declines, the same for the text without its block scalars'
    content: what made the text suspect may lie there (heredocs with '<<', tabs, tables of '|'
    in CRD descriptions); ``_check_block_bodies`` is then to hold ryml's tree to the block
    scalars found (returned, or ``bodies`` when none were looked for)."""
    try:
        return _check_text(text, distinct, lines), bodies
    except _Undecided as exc:
        if "|" not in text and ">" not in text:
            raise
        masked, bodies, _ = _mask_block_bodies(text, clean=str(exc) != _CHARACTER)
        return _check_text(masked, *_lines(masked)), bodies


def _check_json(
    js: str, text: str, bad_values: dict[str, set[str]]
) -> tuple[frozenset[int], set[bytes]]:
    """Raise _Undecided when ryml's JSON shows something PyYAML may read differently.

    Returns the first characters some string may start with that no plain scalar may start
    with in libyaml (``_check_plain_starts`` is to look further: empty when none), and the
    tokens whose plain scalars ryml writes as a JSON string that the JSON
    holds (``"False"``: from a plain scalar, a boolean to go-yaml v3; from a quoted one, a
    string: ``_check_plain_values`` tells them apart).
    """
    if js[:2] in ('"]', '"}', '",'):
        raise _Undecided(f"string starting with {js[1]}")
    # One search of the JSON finds each '"' that may start what is looked for: a string
    # starting with an indicator or a closing bracket, a key below, a string among
    # ``bad_values``. It takes only the '"' (all the rest is looked ahead at), so each '"' is
    # looked at; then what follows it is told here. In a small JSON text those strings are
    # found by str.find instead (a pattern made for them costs importing re and compiling it).
    strings = tuple(value for value in bad_values if value.startswith('"'))
    shown: set[str] = set()
    if len(js) * len(strings) > _FIND_SCAN:
        found = [m.start() for m in _json_suspect(strings).finditer(js)]
        looked_for = (*_ODD_KEYS, *strings)
    else:
        found = [m.start() for m in _JSON_SUSPECTS.finditer(js)]
        looked_for = _ODD_KEYS
        for value in strings:
            i = js.find(value)
            if i >= 0:
                shown.add(value)
                if value[1] in "]}," or value[1] in _INDICATOR_AFTER:
                    while i >= 0:
                        found.append(i)
                        i = js.find(value, i + 1)
    closers: set[str] = set()
    indicator_start = False
    for i in found:
        after = js[i + 1]
        if after in "]},":
            closers.add(js[i - 1 : i + 2])
        elif after in _INDICATOR_AFTER and (i == 0 or js[i - 1] != "\\"):
            indicator_start = True  # a string's start, not an escaped quote inside one
        shown.update(value for value in looked_for if js.startswith(value, i))
    starts = _INDICATORS if indicator_start else frozenset()
    for start in _CLOSER_START:
        if start in closers:
            # A string starting with ']', '}' or ',' (or one ending with it, before a ',' of
            # the JSON: over-inclusive): fine unless a plain scalar (the tree tells).
            starts |= _CLOSERS
    return starts, _check_json_rest(js, text, bad_values, shown, strings)


def _check_json_rest(
    js: str, text: str, bad_values: dict[str, set[str]], shown: set[str], strings: tuple[str, ...]
) -> set[bytes]:
    """The rest of ``_check_json``: odd keys, typed values, surrogates."""
    # Keys ryml rewrites even when quoted (nan and inf spellings), and empty keys (libyaml
    # refuses ``: value``; ryml reads a null key).
    for key in _ODD_KEYS:
        if key in shown:
            raise _Undecided(f"key {key}")
    suspects: set[bytes] = set()
    for value, tokens in bad_values.items():
        if value in shown or (not value.startswith('"') and value in js):
            if not value.startswith('"'):
                raise _Undecided(f"scalar {value}")
            suspects.update(t.encode("utf-8") for t in tokens)
    if "\\" in text and not js.isascii() and _has_surrogate(js):
        raise _Undecided("surrogate")  # an escaped lone surrogate
    return suspects


def _has_surrogate(js: str) -> bool:
    """Whether ``js`` holds a surrogate code point: the only ones UTF-8 cannot encode (encoding
    takes a third of the time a search for them takes)."""
    try:
        js.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_empty_keys(nodes: _Nodes) -> None:
    """Raise _Undecided for an empty key not written quoted (libyaml refuses ``: value``; ryml
    reads a null key), unlike ``"": value``."""
    tree, ryml = nodes.tree, nodes.ryml
    node_key = ryml._ryml.Tree_key
    plain = nodes.where(ryml.KEY, ryml.KEY_SQUO | ryml.KEY_DQUO)
    for node in plain if nodes.keys is None else [n for n in plain if not nodes.keys[n]]:
        key = node_key(tree, node)
        if key is None or not len(key):
            raise _Undecided("empty key")


def _plain_values(nodes: _Nodes, tokens: set[bytes]) -> list[tuple[int, str]]:
    """The plain (neither quoted nor block) scalar values among ``tokens``: (node, token).

    _Undecided for one that is a map key's value or a sequence's entry no path reaches (none)."""
    tree, ryml = nodes.tree, nodes.ryml
    node_val = ryml._ryml.Tree_val
    styled = ryml.VAL_SQUO | ryml.VAL_DQUO | ryml.VAL_LITERAL | ryml.VAL_FOLDED
    found = []
    plain = nodes.where(ryml.VAL, styled)
    if nodes.vals is not None:
        sizes = {len(t) for t in tokens}
        plain = [node for node in plain if nodes.vals[node] in sizes]
    for node in plain:
        v = node_val(tree, node)
        if v is not None and bytes(v) in tokens:
            found.append((node, bytes(v).decode("utf-8")))
    return found


def _check_plain_starts(nodes: _Nodes, starts: frozenset[int] = _INDICATORS) -> None:
    """Raise _Undecided for a scalar starting with one of ``starts`` (``@ ` # | > %`` or a
    space, and ``] } ,`` when the JSON shows one), unless quoted or a block scalar's content
    (about 1 µs a node: a fraction of what PyYAML would take)."""
    tree, ryml, types = nodes.tree, nodes.ryml, nodes.types
    node_val, node_key = ryml._ryml.Tree_val, ryml._ryml.Tree_key
    val, key = ryml.VAL, ryml.KEY
    val_safe = ryml.VAL_SQUO | ryml.VAL_DQUO | ryml.VAL_LITERAL | ryml.VAL_FOLDED
    key_safe = ryml.KEY_SQUO | ryml.KEY_DQUO
    plain_values = nodes.where(val, val_safe)
    plain_keys = nodes.where(key, key_safe)
    if nodes.vals is not None and nodes.keys is not None:  # (empty ones start with nothing)
        plain_values = [node for node in plain_values if nodes.vals[node]]
        plain_keys = [node for node in plain_keys if nodes.keys[node]]
    for node in sorted({*plain_values, *plain_keys}):
        flags = types[node]
        if flags & val and not flags & val_safe:
            v = node_val(tree, node)
            if v is not None and len(v) and v[0] in starts:
                raise _Undecided(f"plain scalar starting with {chr(v[0])!r}")
        if flags & key and not flags & key_safe:
            k = node_key(tree, node)
            if k is not None and len(k) and k[0] in starts:
                raise _Undecided(f"plain key starting with {chr(k[0])!r}")


def _has_flow(nodes: _Nodes) -> bool:
    """Whether the tree holds a non-empty flow collection written over several lines."""
    return any(nodes.tree.has_children(node) for node in nodes.where(nodes.ryml.FLOW_ML))


def _ends_in_block_scalar(text: str, tree: Any, ryml: Any) -> int | None:
    """The node of the block scalar value (``|`` or ``>``) whose content ends ``text`` (read
    with a line break added at its end), or None when the last scalar is no block scalar;
    _Undecided when it is one but may not run to the end of the text."""
    node = tree.root_id()
    while tree.has_children(node):
        node = tree.last_child(node)
    block = ryml.VAL_LITERAL | ryml.VAL_FOLDED | ryml.KEY_LITERAL | ryml.KEY_FOLDED
    if not ryml._ryml.Tree_type_has_any(tree, node, block):
        return None
    last = text[text.rfind("\n", 0, len(text) - 1) + 1 :].strip()
    value = bytes(tree.val(node)).decode("utf-8") if tree.has_val(node) else ""
    if (
        ryml._ryml.Tree_type_has_any(tree, node, ryml.KEY_LITERAL | ryml.KEY_FOLDED)
        or not last
        or last.startswith("#")
        or not value.rstrip("\n").endswith(last)
    ):
        raise _Undecided("no final line break after a block scalar")
    return int(node)


def _holder(tree: Any, docs: list[Any], node: int) -> tuple[Any, Any]:
    """The container in ``docs`` holding ``node``'s value, and its key or index there."""
    path = _path(tree, node, tree.is_stream(tree.root_id()))
    holder: Any = docs
    for step in path[:-1]:
        holder = holder[step]
    return holder, path[-1]


def _scan_tree(nodes: _Nodes, nulls: bool) -> dict[int, list[str]]:
    """Map nodes holding ``key:`` (no value) -> those keys; _Undecided for a tag, anchor, alias."""
    tree, ryml, types = nodes.tree, nodes.ryml, nodes.types
    tags = ryml.KEYTAG | ryml.VALTAG | ryml.KEYANCH | ryml.VALANCH | ryml.KEYREF | ryml.VALREF
    if nodes.union & tags:
        raise _Undecided("tag, anchor or alias")
    found: dict[int, list[str]] = {}
    if not nulls:
        return found
    keyval = ryml.KEYVAL
    for node in nodes.where(ryml.VALNIL):
        if types[node] & keyval == keyval:
            parent = tree.parent(node)
            found.setdefault(parent, []).append(bytes(tree.key(node)).decode("utf-8"))
    return found


def _mark_implicit_nulls(tree: Any, docs: list[Any], found: dict[int, list[str]]) -> None:
    """Turn maps with ``key:`` (no value) into ImplicitNullMaps, as yamlio's constructor does."""
    stream = tree.is_stream(tree.root_id())
    for parent, keys in found.items():
        path = _path(tree, parent, stream)
        holder: Any = docs
        step: Any = path[0]
        for nxt in path[1:]:
            holder = holder[step]
            step = nxt
        current = holder[step]
        if tree.is_flow(parent):
            for k in keys:
                current[k] = ""
        holder[step] = ImplicitNullMap(current, frozenset(keys))


def _path(tree: Any, node: int, stream: bool) -> list[Any]:
    """Keys and indexes from the document list down to ``node``."""
    steps: list[Any] = []
    while True:
        parent = tree.parent(node)
        if parent == _ryml.NONE:
            break
        if tree.is_map(parent):
            steps.append(bytes(tree.key(node)).decode("utf-8"))
        else:
            steps.append(tree.child_pos(parent, node))
        node = parent
    if not stream:
        steps.append(0)
    steps.reverse()
    return steps
