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

import functools
import os
import sys
import types

from orchestrator.lazyre import Pattern
from orchestrator.resource import ImplicitNullMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ENV = "KRM_YAML_FAST"
MIN_CHARS = 128 * 1024  # below this, PyYAML, once loaded, is quicker than importing ryml

_ryml: Any = None  # the ryml module, once imported
last_reason = ""  # why the last text was left to PyYAML (for tests and debugging)


class _Undecided(Exception):
    """The fast path cannot vouch for this text: read it with PyYAML."""


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
_LONG_LINE = Pattern(r"\n[^\n]{1000}")
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
# A line ending in a block scalar header (over-inclusive: a plain scalar may end so).
_HEADER_LINE = Pattern(r"(?:^ *|[:?-] +)([|>])([-+]?[0-9]?|[0-9][-+])[ \t]*(?:#[^\n]*)?$")
_INDICATOR_WORD = Pattern(r"\n *(?:- +)*[:?][^ \n]")
_DASHES = Pattern(r" *(?:- +)*")
_QUOTE_COLON = Pattern(r"['\"] *:[ \n]")
_SEQUENCE_AFTER = Pattern(r"['\"\]}] +-[ \n]")  # ryml reads '- "a" - b' as two entries
# In ryml's JSON: a string starting with a character no plain scalar may start with in libyaml
# (fine from a quoted or block scalar, which the tree tells: _check_plain_starts), or with a
# space (ryml misreads some invalid texts so, e.g. a less indented comment line in an indented
# block); aliases, anchors and tags are found in the tree (_scan_tree).
_INDICATOR_START = Pattern(r'"[@`#|>% ]')
_INDICATORS = frozenset(b"@`#|>% ")
_CLOSER_START = tuple(a + '"' + b for a in "[, \n" for b in "]},")
_SURROGATE = Pattern("[\ud800-\udfff]")

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

        @functools.wraps(func)
        def call(*args: Any, **kw: Any) -> Any:
            if not real:
                import deprecation  # type: ignore[import-untyped]

                real.append(deprecation.deprecated(**kwargs)(func))
            return real[0](*args, **kw)

        return call

    return decorate


def _import_ryml() -> Any:
    """Import ryml without loading the ``deprecation`` package, unless something else has.

    ``ryml/ryml.py`` imports ``deprecation`` only to decorate its old API (``parse``, ``emit``
    and such, unused here) with ``@deprecated(...)``, and that package imports
    ``packaging.version``, ``textwrap`` and ``typing``: 10 ms, two thirds of importing ryml.
    While ryml is imported, ``sys.modules`` holds a stand-in whose ``deprecated`` applies the
    real decorator when a decorated function is first called (so those still warn); it is
    removed right after, so a later ``import deprecation`` gets the real package. Only while
    this is the process's only thread: no other thread may import ``deprecation`` meanwhile.
    """
    global _ryml
    if _ryml is None:
        threading = sys.modules.get("threading")
        alone = threading is None or threading.active_count() == 1
        if "deprecation" in sys.modules or not alone:
            import ryml  # type: ignore[import-untyped]
        else:
            stand_in = types.ModuleType("deprecation")
            stand_in.deprecated = _deprecated  # type: ignore[attr-defined]
            sys.modules["deprecation"] = stand_in
            try:
                import ryml
            finally:
                del sys.modules["deprecation"]
        _ryml = ryml
    return _ryml


def preload() -> None:
    """Import what the fast path parses with now, unless it is turned off: a process about to
    fork children that will parse large texts (orchestrator.parallel) pays for it once."""
    if os.environ.get(ENV) != "0":
        import json  # noqa: F401  (load_docs's)

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


def _lines(text: str) -> str:
    """The distinct lines of ``text`` joined by newlines (large manifests repeat most lines)."""
    return "\n" + "\n".join(set(text.split("\n"))) + "\n"


def _check_text(text: str, lines: str) -> str | None:
    """Raise _Undecided for text this path may read differently from libyaml.

    ``lines`` is _lines(text): the checks that look within one line run on it. Returns the
    reason to decline if the text turns out to hold a flow collection, else None.
    """
    if text.startswith(("|", ">", "...")):
        raise _Undecided("block scalar or document end at the start")
    if "<<" in lines:
        raise _Undecided("merge key")
    if (_UNSAFE_ASCII if lines.isascii() else _UNSAFE_CHAR).search(lines):
        raise _Undecided("character")
    if "\n%" in lines:
        raise _Undecided("directive")
    if "\n..." in lines:
        raise _Undecided("document end")  # libyaml wants a "---" after it, ryml does not
    # Patterns that cannot match are skipped, which spares compiling them (most small texts
    # hold no block scalar indicator, no line starting with ':' and no line of 1000 characters).
    blocks = "|" in lines or ">" in lines
    if _SEQUENCE_AFTER.search(lines):
        raise _Undecided(f"text libyaml refuses ({_SEQUENCE_AFTER.pattern})")
    if _INDICATOR_WORD.search(lines):
        # ':a' or '?a' first on a line: a plain scalar to libyaml, an indicator to ryml.
        raise _Undecided(f"text libyaml reads otherwise ({_INDICATOR_WORD.pattern})")
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
        # The two-line checks, for each place such a line is (CEL rules often start with ':').
        needle = "\n" + line + "\n"
        i = text.find(needle)
        while i >= 0:
            pair = text[text.rfind("\n", 0, i) + 1 : i] + needle
            for pattern in (_FLOW_KEY_LINES, _BAD_HEADER_LINES):
                if pattern.search(pair):
                    raise _Undecided(f"text libyaml refuses ({pattern.pattern})")
            i = text.find(needle, i + 1)
    for m in _QUOTE_COLON.finditer(lines):
        start = m.start()
        line = lines.rfind("\n", 0, start) + 1
        if "'" not in lines[line:start] and '"' not in lines[line:start]:
            raise _Undecided("quoted key over several lines")
    return flow_only


def _may_have_long_keys(lines: str) -> bool:
    """Whether a line has a ':' 1000 or more characters in: libyaml refuses a simple key whose
    ':' comes 1024 or more characters after it (ryml reads it). ``_check_key_lengths`` then
    looks at the keys ryml read (in JSON in a quoted scalar, such a ':' ends no key)."""
    if len(lines) > 1000 and _LONG_LINE.search(lines):
        for line in lines.split("\n"):
            if len(line) >= 1000 and _KEY_COLON.search(line, 1000) is not None:
                return True
    return False


def _check_key_lengths(tree: Any, ryml: Any) -> None:
    """Raise _Undecided for a key of 1000 characters or more."""
    has_any, node_key = ryml._ryml.Tree_type_has_any, ryml._ryml.Tree_key
    for node in range(tree.size()):
        if has_any(tree, node, ryml.KEY):
            key = node_key(tree, node)
            if key is not None and len(key) >= 1000:
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


def _mask_block_bodies(text: str) -> tuple[str, list[tuple[str, int, list[str]]], set[int]]:
    """``text`` with the content lines of its block scalars blanked, and for each block scalar
    (in text order) its style, its content's indentation and its content lines, and the
    indexes of those lines.

    Headers are found by their look (``key: |``, ``- >-``, ``|`` alone); ``_check_block_bodies``
    then holds the result to ryml's tree, so a plain scalar that looks like one is no risk.
    _Undecided for what this does not follow: content at column 0,
    a tab within the content's indentation, characters other than tabs that libyaml refuses.
    """
    lines = text.split("\n")
    out = list(lines)
    bodies: list[tuple[str, int, list[str]]] = []
    masked: set[int] = set()
    i = 0
    while i < len(lines):
        m = _HEADER_LINE.search(lines[i])
        i += 1
        if m is None:
            continue
        digits = [int(c) for c in m.group(2) if c.isdigit()]
        # The indentation the content must exceed: that of the key the header follows (after
        # any '- '), or of the last '- ' when the header is a sequence entry itself.
        line = lines[i - 1]
        dashes = _DASHES.match(line)
        key_column = dashes.end() if dashes is not None else 0
        if key_column >= m.start():
            parent = line.rstrip(" ").rfind("-", 0, m.start())
            parent = parent if parent >= 0 else len(line) - len(line.lstrip(" "))
        else:
            parent = key_column
        start = i
        while i < len(lines) and (
            not lines[i].strip(" \t") or len(lines[i]) - len(lines[i].lstrip(" ")) > parent
        ):
            i += 1
        body = lines[start:i]
        while body and not body[-1].strip(" \t"):
            body.pop()  # trailing blank lines: left as they are (and checked as text)
        i = start + len(body)
        first = next((b for b in body if b.strip(" \t")), None)
        indent = len(first) - len(first.lstrip(" ")) if first is not None else 0
        if digits:
            indent = parent + digits[0]  # libyaml's: the parent's indentation plus the digit
        if first is not None and (indent == 0 or first.lstrip(" ").startswith("\t")):
            raise _Undecided("block scalar content at column 0 or indented with a tab")
        for j, line in enumerate(body):
            if "\t" in line[:indent] or (_UNSAFE_CHAR.search(line.replace("\t", " "))):
                raise _Undecided("character")
            if line.strip(" \t") and not line.startswith(" " * indent):
                raise _Undecided("block scalar content less indented than its first line")
            out[start + j] = ""
            masked.add(start + j)
        bodies.append((m.group(1), indent, body))
    return "\n".join(out), bodies, masked


def _check_block_bodies(tree: Any, ryml: Any, bodies: list[tuple[str, int, list[str]]]) -> None:
    """_Undecided unless ryml's block scalars are, in order, those ``_mask_block_bodies`` found,
    each holding its content lines (all of a literal's characters, a folded one's words)."""
    has_any = ryml._ryml.Tree_type_has_any
    if any(has_any(tree, node, ryml.KEY_LITERAL | ryml.KEY_FOLDED) for node in range(tree.size())):
        raise _Undecided("block scalar key")
    block = ryml.VAL_LITERAL | ryml.VAL_FOLDED
    nodes = [node for node in range(tree.size()) if has_any(tree, node, block)]
    if len(nodes) != len(bodies):
        raise _Undecided("block scalars not where the text shows them")
    for node, (style, indent, body) in zip(nodes, bodies, strict=True):
        value = bytes(tree.val(node)).decode("utf-8")
        literal = bool(has_any(tree, node, ryml.VAL_LITERAL))
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
    import json

    ryml = _ryml
    value_json = ryml.emit_json(ryml.parse_in_arena(f"[{token}]".encode()))[1:-1]
    key_json = ryml.emit_json(ryml.parse_in_arena(f"{{{token}: 0}}".encode()))[1:-4]
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


def load_docs(text: str, data: bytes | None, plain: Callable[[str], Any]) -> list[Any] | None:
    """The non-empty documents of ``text`` as yamlio makes them, or None to use PyYAML.

    ``data`` is ``text`` as UTF-8 when the caller has it (saves encoding it again); ``plain``
    gives the value a plain scalar has with the wanted typing (``yamlio._v3_plain``, or
    ``yamlio._v2_plain`` for kustomization files).
    """
    global last_reason
    import json

    if not text:
        return []
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
        lines = _lines(text)
        try:
            flow_only = _check_text(text, lines)
        except _Undecided:
            # What made the text suspect may lie in block scalars' content (heredocs with
            # '<<', tabs, tables of '|' in CRD descriptions): check the text without it, and
            # below, that ryml read those lines as the content of those block scalars.
            if "|" not in text and ">" not in text:
                raise
            masked, bodies, _ = _mask_block_bodies(text)
            flow_only = _check_text(masked, _lines(masked))
        ryml = _import_ryml()
        with _QuietStderr():
            bad_values: dict[str, set[str]] = {}
            bad_keys: set[str] = set()
            for token in _tokens(lines):
                value, key = _disagreement(token, plain)
                if value is not None:
                    bad_values.setdefault(value, set()).add(token)
                if key is not None:
                    bad_keys.add(key)
            tree = ryml.parse_in_arena(text.encode("utf-8") if data is None else data)
            js = ryml.emit_json(tree)
        if js is None:
            raise _Undecided("empty")
        if flow_only is not None and _has_flow(tree, ryml):
            raise _Undecided(flow_only)
        if _may_have_long_keys(lines):
            _check_key_lengths(tree, ryml)
        if bodies is not None:
            _check_block_bodies(tree, ryml, bodies)
        indicator_start, suspects = _check_json(js, text, bad_values)
        if '"": ' in js:
            _check_empty_keys(tree, ryml)
        if indicator_start:
            _check_plain_starts(tree, ryml)
        retyped = _plain_values(tree, ryml, suspects) if suspects else []
        last_block = None
        if unterminated and ("|" in text or ">" in text):
            last_block = _ends_in_block_scalar(text, tree, ryml)
        nulls = '": null' in js
        implicit = _scan_tree(tree, ryml, nulls) if nulls or _maybe_property(lines) else {}
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


def _check_json(js: str, text: str, bad_values: dict[str, set[str]]) -> tuple[bool, set[bytes]]:
    """Raise _Undecided when ryml's JSON shows something PyYAML may read differently.

    Returns whether a string starts with an indicator (``_check_plain_starts`` is to look
    further), and the tokens whose plain scalars ryml writes as a JSON string that the JSON
    holds (``"False"``: from a plain scalar, a boolean to go-yaml v3; from a quoted one, a
    string: ``_check_plain_values`` tells them apart).
    """
    if js[:2] in ('"]', '"}', '",'):
        raise _Undecided(f"string starting with {js[1]}")
    # JSON strings hold no line break: the checks run on the distinct lines.
    lines = _lines(js)
    indicator_start = any(
        lines[m.start() - 1] != "\\"  # a string's start, not an escaped quote inside one
        for m in _INDICATOR_START.finditer(lines)
    )
    for start in _CLOSER_START:
        if start in lines:
            raise _Undecided(f"string starting with {start[2]}")
    # Keys ryml rewrites even when quoted (nan and inf spellings), and empty keys (libyaml
    # refuses ``: value``; ryml reads a null key).
    for key in ('".nan": ', '".inf": ', '"-.inf": '):
        if key in lines:
            raise _Undecided(f"key {key}")
    suspects: set[bytes] = set()
    for value, tokens in bad_values.items():
        if value in lines:
            if not value.startswith('"'):
                raise _Undecided(f"scalar {value}")
            suspects.update(t.encode("utf-8") for t in tokens)
    if "\\" in text and not lines.isascii() and _SURROGATE.search(lines):
        raise _Undecided("surrogate")  # an escaped lone surrogate
    return indicator_start, suspects


def _check_empty_keys(tree: Any, ryml: Any) -> None:
    """Raise _Undecided for an empty key not written quoted (libyaml refuses ``: value``; ryml
    reads a null key), unlike ``"": value``."""
    has_any, node_key = ryml._ryml.Tree_type_has_any, ryml._ryml.Tree_key
    quoted = ryml.KEY_SQUO | ryml.KEY_DQUO
    for node in range(tree.size()):
        if has_any(tree, node, ryml.KEY) and not has_any(tree, node, quoted):
            key = node_key(tree, node)
            if key is None or not len(key):
                raise _Undecided("empty key")


def _plain_values(tree: Any, ryml: Any, tokens: set[bytes]) -> list[tuple[int, str]]:
    """The plain (neither quoted nor block) scalar values among ``tokens``: (node, token).

    _Undecided for one that is a map key's value or a sequence's entry no path reaches (none)."""
    node_type, node_val = ryml._ryml.Tree_type, ryml._ryml.Tree_val
    val = ryml.VAL
    styled = ryml.VAL_SQUO | ryml.VAL_DQUO | ryml.VAL_LITERAL | ryml.VAL_FOLDED
    found = []
    for node in range(tree.size()):
        flags = node_type(tree, node)
        if flags & val and not flags & styled:
            v = node_val(tree, node)
            if v is not None and bytes(v) in tokens:
                found.append((node, bytes(v).decode("utf-8")))
    return found


def _check_plain_starts(tree: Any, ryml: Any) -> None:
    """Raise _Undecided for a scalar starting with ``@ ` # | > %`` or a space, unless quoted
    or a block scalar's content (about 1 µs a node: a fraction of what PyYAML would take)."""
    node_type, node_val, node_key = ryml._ryml.Tree_type, ryml._ryml.Tree_val, ryml._ryml.Tree_key
    val, key = ryml.VAL, ryml.KEY
    val_safe = ryml.VAL_SQUO | ryml.VAL_DQUO | ryml.VAL_LITERAL | ryml.VAL_FOLDED
    key_safe = ryml.KEY_SQUO | ryml.KEY_DQUO
    for node in range(tree.size()):
        flags = node_type(tree, node)
        if flags & val and not flags & val_safe:
            v = node_val(tree, node)
            if v is not None and len(v) and v[0] in _INDICATORS:
                raise _Undecided(f"plain scalar starting with {chr(v[0])!r}")
        if flags & key and not flags & key_safe:
            k = node_key(tree, node)
            if k is not None and len(k) and k[0] in _INDICATORS:
                raise _Undecided(f"plain key starting with {chr(k[0])!r}")


def _has_flow(tree: Any, ryml: Any) -> bool:
    """Whether the tree holds a non-empty flow collection written over several lines."""
    has_any, flow = ryml._ryml.Tree_type_has_any, ryml.FLOW_ML
    return any(has_any(tree, node, flow) and tree.has_children(node) for node in range(tree.size()))


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


def _scan_tree(tree: Any, ryml: Any, nulls: bool) -> dict[int, list[str]]:
    """Map nodes holding ``key:`` (no value) -> those keys; _Undecided for a tag, anchor, alias."""
    tags = ryml.KEYTAG | ryml.VALTAG | ryml.KEYANCH | ryml.VALANCH | ryml.KEYREF | ryml.VALREF
    has_any = ryml._ryml.Tree_type_has_any  # the C functions: no Python frame per node
    found: dict[int, list[str]] = {}
    if not nulls:
        for node in range(tree.size()):
            if has_any(tree, node, tags):
                raise _Undecided("tag, anchor or alias")
        return found
    valnil, keyval = ryml.VALNIL, ryml.KEYVAL
    has_all = ryml._ryml.Tree_type_has_all
    for node in range(tree.size()):
        if has_any(tree, node, tags | valnil):
            if has_any(tree, node, tags):
                raise _Undecided("tag, anchor or alias")
            if has_all(tree, node, keyval):
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
