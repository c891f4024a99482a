"""Differential test of the fast YAML reader (rapidyaml + json) against the PyYAML reader.

The fast path (``orchestrator.yamlfast``) must give exactly what ``yamlio``'s PyYAML path gives
(types, key order, int/float typing, ``ImplicitNullMap`` keys) or decline (``None``), and decline
every text PyYAML refuses, so errors keep PyYAML's messages. Inputs: every YAML file of the
vendored corpora, the hostile inputs, a generated set of tricky scalars in every context, random
documents from hypothesis, and, when ``KRM_REALWORLD_DIR`` names fetched repositories, their files.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import yamlfast, yamlio
from orchestrator.errors import YamlError
from orchestrator.resource import ImplicitNullMap
from tests.hostile import engine_inputs as ei

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "conformance"


def reference(text: str, v2: bool = False) -> tuple[str, Any]:
    """("docs", documents) or ("error", message) from the PyYAML path (v2: YAML 1.1 typing)."""
    saved = os.environ.get(yamlfast.ENV)
    os.environ[yamlfast.ENV] = "0"
    try:
        return "docs", (yamlio.load_yaml11 if v2 else yamlio.load_all)(text)
    except YamlError as exc:
        return "error", str(exc)
    finally:
        if saved is None:
            del os.environ[yamlfast.ENV]
        else:
            os.environ[yamlfast.ENV] = saved


def fast(text: str, v2: bool = False) -> list[Any] | None:
    """The fast path as yamlio calls it (folded scalars as kustomize's round trip leaves them
    in the resources it reads with go-yaml v3's typing)."""
    plain = yamlio._v2_plain if v2 else yamlio._v3_plain
    return yamlfast.load_docs(text, None, plain, fold=not v2)


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down, key order and implicit-null keys included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if list(a) != list(b):
            return False
        if isinstance(a, ImplicitNullMap) and a.implicit_nulls != b.implicit_nulls:
            return False
        return all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def check(text: str, v2: bool = False) -> bool:
    """Assert the fast path agrees with PyYAML on ``text``; True when it decided."""
    got = fast(text, v2)
    if got is None:
        return False
    kind, want = reference(text, v2)
    assert kind == "docs", f"fast path accepted what PyYAML refuses ({want}): {text!r}"
    assert same(got, want), f"fast path differs on {text!r}:\n{got!r}\n{want!r}"
    return True


def yaml_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            if name.endswith((".yaml", ".yml")):
                yield Path(dirpath) / name


def check_files(root: Path) -> tuple[int, int]:
    """(files read, files the fast path decided); every decided one agrees with PyYAML.

    Kustomization files are read with go-yaml v2's typing too, as the engine reads them.
    """
    read = decided = 0
    for path in yaml_files(root):
        try:
            text = yamlio.decode(path.read_bytes())
        except YamlError:
            continue
        read += 1
        try:
            decided += check(text)
            if path.name.startswith("kustomization."):
                check(text, v2=True)
        except AssertionError as exc:
            raise AssertionError(f"{path}: {exc}") from None
    return read, decided


# ----------------------------------------------------------------------------- basics


def test_reads_a_manifest_and_marks_implicit_nulls() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  creationTimestamp: null\n"
        "data:\n  a: '1'\n  b:\n  c: ~x\nspec: {replicas: , tilde: null}\nlist:\n-\n- 1.5\n"
        "---\n---\nkind: Second\nnum: [0, -1, 1e3, 2.50, 10]\n"
    )
    docs = fast(text)
    assert docs is not None
    assert check(text)
    assert isinstance(docs[0]["data"], ImplicitNullMap)
    assert docs[0]["data"].implicit_nulls == frozenset({"b"})
    assert type(docs[0]["metadata"]) is dict and docs[0]["metadata"]["creationTimestamp"] is None
    assert docs[0]["spec"] == {"replicas": "", "tilde": None}
    assert docs[0]["spec"].implicit_nulls == frozenset({"replicas"})
    assert docs[1] == {"kind": "Second", "num": [0, -1, 1000.0, 2.5, 10]}
    assert [type(n) for n in docs[1]["num"]] == [int, int, float, float, int]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: &x 1\nb: *x\n", "alias"),
        ("a: {b: 1}\nc:\n  <<: {b: 2}\n", "merge key"),
        ("a: !!str 1\n", "tag"),
        ("1.0: x\n", "float key"),
        ("null: x\n", "null key"),
        ("'inf': x\n", "key ryml rewrites"),
        ("a: 1\na: 2\n", "duplicate key"),
        ("a:\tb\n", "tab"),
        ("a: |\n  x\n  # c", "no final line break after a block scalar ending in '#'"),
        ("a: |\n  x\n  ", "no final line break after a block scalar ending in spaces"),
        ("a: \ud800\n", "lone surrogate"),
        ("a: @x\n", "reserved indicator"),
        ("a: [\n", "syntax error"),
        (": v\nb: 1\n", "plain empty key"),
        ("a: b\rc\n", "a carriage return alone"),
        ("%YAML 1.1\n---\na: 1\n", "directive"),
        # Found by fuzzing: text libyaml refuses and ryml reads.
        ('- "/a" - b\n', "entry after a quoted scalar"),
        (": v\n", "empty key"),
        ("a: 1\n...\nb: 2\n", "content after a document end"),
        ("k: |+2  keep\n", "block scalar header"),
        ("k:\n | - 3\n", "block scalar header on its own line"),
        ("k: [1, {b:?}]\n", "colon before a flow indicator"),
        ("k: [?1, 2]\n", "question mark starting a flow entry"),
        ("k: {x\n  : [1,2]}\n", "flow key over two lines"),
        ("k: 'multi\n  line': v\n", "quoted key over two lines"),
        ("k: ]\n", "plain scalar starting with ]"),
        ("  v:\n  - a\n #c\n    b: n\n", "less indented comment: ryml reads a key '  b'"),
        # Found by bench/yaml_sweep.py: ryml takes the comment's '-' as the chomping indicator.
        ("k: | #>-\n  x\n", "block scalar header with a comment holding '-'"),
        ("k: > # 2 spaces\n  x\n", "block scalar header with a comment holding a digit"),
        # Found by fuzzing: a bad header on its own line after a commented line.
        ("-: #c\n      >1~\n", "bad block scalar header after a comment"),
        # Found by fuzzing the colon mask: text right after a quoted explicit key.
        ("? 'x':y\n", "explicit quoted key with ':' and a value right after it"),
        ("? 'x \\\n   : '?a.b'\n", "explicit quoted key with '?' right after it"),
    ],
)
def test_declines_what_it_cannot_vouch_for(text: str, why: str) -> None:
    assert fast(text) is None, why


@pytest.mark.parametrize(
    "text",
    [
        "a: |\n  x\nb: 1",  # no final line break, but the block scalar does not end the text
        # Plain scalars ryml writes as JSON strings, typed as go-yaml types them; quoted ones
        # stay strings.
        "a: 0644\nb: ~\nc: True\nd: 'True'\ne: [0o17, \"~\"]\n",
        '"": quoted empty key\n',
        'a:\r\n  b: |\r\n    x\r\n  c: "p\r\n   q"\r\n',  # CRLF line ends
        # A block scalar ending the text with no line break: libyaml keeps none, whatever the
        # chomping (ryml reads the text with one added; the fast path takes it off).
        "a: |\n  x",
        "a: b\nc: >\n  x\n  y",
        "a: |+\n  x\n\n  y",
        "a: |-\n  x",
        "- |\n  x",
        "a:\n  b: |2\n     x\n    z",
        "a: '#x'\nb: \"@y\"\n'%k': v\nc: |\n  # z\n",  # indicators starting quoted scalars
        "",
    ],
)
def test_decides_what_libyaml_reads_alike(text: str) -> None:
    assert check(text) and check(text, v2=True), yamlfast.last_reason


def test_parse_errors_print_nothing() -> None:
    # ryml writes its error messages to file descriptor 2 before raising; in a process with one
    # thread (as krm is; a fresh interpreter here) the fast path keeps that quiet.
    code = (
        "from orchestrator import yamlfast, yamlio\n"
        "assert yamlfast.load_docs('a: [\\nb: {\\n', None, yamlio._v3_plain) is None\n"
        "print(yamlfast.last_reason)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("ryml: ExceptionParse")


def test_off_switch_and_size_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml  # noqa: F401  (loaded, as the thresholds below assume)

    small, big = "a: 1\n", "a: 1\n" * (yamlfast.MIN_CHARS // 4)
    ryml = yamlfast._import_ryml()
    monkeypatch.delenv(yamlfast.ENV, raising=False)
    # PyYAML loaded, ryml not: only texts worth importing ryml for.
    monkeypatch.setattr(yamlfast, "_ryml", None)
    assert (yamlfast.wanted(small), yamlfast.wanted(big)) == (False, True)
    monkeypatch.setenv(yamlfast.ENV, "always")
    assert yamlfast.wanted(small)
    monkeypatch.setenv(yamlfast.ENV, "0")
    assert not yamlfast.wanted(big)
    monkeypatch.delenv(yamlfast.ENV)
    # ryml loaded, or PyYAML not loaded (importing ryml is cheaper): every text.
    monkeypatch.setattr(yamlfast, "_ryml", ryml)
    assert (yamlfast.wanted(small), yamlfast.wanted(big)) == (True, True)
    monkeypatch.delitem(sys.modules, "yaml")
    monkeypatch.setattr(yamlfast, "_ryml", None)
    assert (yamlfast.wanted(small), yamlfast.wanted(big)) == (True, True)
    monkeypatch.setenv(yamlfast.ENV, "0")
    assert not yamlfast.wanted(small)


def test_ryml_is_imported_without_the_deprecation_package() -> None:
    # ryml's deprecated functions still warn, and a later import gets the real package.
    code = (
        "import sys, warnings\n"
        "from orchestrator import yamlfast\n"
        "ryml = yamlfast._import_ryml()\n"
        "print('deprecation' in sys.modules)\n"
        "tree = ryml.parse_in_arena(b'a: 1\\n')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    same = ryml.compute_emit_yaml_length(tree) == ryml.compute_yaml_length(tree)\n"
        "print(same, [type(w.message).__name__ for w in caught])\n"
        "import deprecation\n"
        "print(deprecation.__name__, hasattr(deprecation, 'fail_if_not_removed'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "False\nTrue ['DeprecatedWarning']\ndeprecation True\n"


# ----------------------------------------------------------------------------- corpora


def test_vendored_corpus_agrees() -> None:
    read, decided = check_files(CORPUS)
    assert read > 1000
    assert decided > 0.8 * read  # the fast path must keep doing the work, not always decline


SHAPES = ROOT / "tests" / "data" / "yamlfast"


@pytest.mark.parametrize("name", sorted(p.name for p in SHAPES.glob("*.yaml")))
def test_shapes_that_fell_off_the_fast_path(name: str) -> None:
    text = (SHAPES / name).read_text(encoding="utf-8")
    if name.startswith("declined-"):
        assert fast(text) is None
        return
    # Each shape with the text before and after it, as in a larger file, and alone.
    for variant in (text, "a: 1\n" + text.rstrip("\n") + "\nzz: 2\n", text.rstrip("\n")):
        assert check(variant), f"{name}: declined ({yamlfast.last_reason})"


@pytest.mark.skipif(not os.environ.get("KRM_REALWORLD_DIR"), reason="KRM_REALWORLD_DIR not set")
def test_realworld_files_agree() -> None:
    read, decided = check_files(Path(os.environ["KRM_REALWORLD_DIR"]))
    assert decided > 0.5 * read


HOSTILE = {
    "flow[": " " + ei.nested_flow(150, "["),
    "flow{": " " + ei.nested_flow(150, "{"),
    "block": ei.nested_block(150, 0),
    "blockmap": ei.nested_block_mappings(150, 0),
    "deep_ok": " " + ei.nested_flow(60, "["),
    "alias_bomb": ei.alias_bomb(),
    "anchors_in_use": ei.anchors_in_use(),
    "duplicate_keys": " {a: 1, b: 2, a: 3}",
    "nul": " a\x00b",
    "control": " a\x07b",
    "huge_scalar": " " + "x" * 300_000,
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_inputs_keep_their_errors(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "apiVersion: v1\nkind: X\nmetadata:\n  name: x\nspec:" + HOSTILE[case] + "\n"
    check(text)
    monkeypatch.setenv(yamlfast.ENV, "always")
    try:
        through_fast: tuple[str, Any] = ("docs", yamlio.load_all(text))
    except YamlError as exc:
        through_fast = ("error", str(exc))
    want = reference(text)
    assert through_fast[0] == want[0]
    assert through_fast[0] == "docs" or through_fast == want


# ----------------------------------------------------------------------------- tricky scalars

SCALARS = [
    *["", "~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRUE", "false", "FALSE"],
    *["yes", "no", "on", "off", "y", "n", "Yes", "NO"],
    *["0", "-0", "+0", "00", "007", "0644", "08", "09", "0o17", "0O17", "0o8", "0x1F", "0X1f"],
    *["0xg", "0b101", "0B11", "0b2", "-0x1F", "+0x1F", "-0o17", "-0b1", "1_000", "1__0", "_1"],
    *["1_", "+1", "-1", "12345678901234567890123", "-12345678901234567890123", "1e3", "1E3"],
    *["1e+3", "1e-3", "-1e3", "+1e3", "0e5", "-0e5", "00e5", "1.", "-1.", "+1.", ".5", "-.5"],
    *["+.5", "0.", "0.0", "-0.0", "00.5", "1.50", "1.0e5", "1.e5", ".e5", "1e", "1e400"],
    *["-1e400", "1e-400", "0.1_0", "1_0.5", "9_", "0x", "0o", "0b", "0x_1", "1.2.3", "1-2"],
    *["2020-01-01", "2020-01-01T00:00:00Z", "12:30", "1:20:30", "0x1.8p3", "1.5e3.0"],
    *[".inf", ".Inf", ".INF", "-.inf", "+.inf", "-.Inf", ".nan", ".NaN", ".NAN", "inf", "Inf"],
    *["INF", "-inf", "+inf", "infinity", "-infinity", "Infinity", "nan", "NaN", "NAN", "-nan"],
    *["+nan", ".", "..", "...", "-", "--", "-.", "+", "+-1", "--1", "~x", "x~", "<<"],
    *["a", "1a", "a1", "1.0a", "v1", "é", "1\u00b5", "0777.", "65535."],
]
CONTEXTS = [
    "k: {s}\n",
    "{s}: v\n",
    "- {s}\n",
    "k: [{s}]\n",
    "k: [{s}, x]\n",
    "k: {{{s}: v}}\n",
    "k: {{x: {s}}}\n",
    "k: {{{s}}}\n",
    "k: {{{s}, x: y}}\n",
    "k: '{s}'\n",
    'k: "{s}"\n',
    "'{s}': v\n",
    '"{s}": v\n',
    "k: |\n  {s}\n",
    "k: >-\n  {s}\n",
    "k:\n  {s}\n",
    "--- {s}\n",
    "k: x {s}\n",
    "k: {s} x\n",
    "k: x\n  {s}\n",
    "k: {s} # c\n",
    "k: |\n  {s}\nz: x\n",
    "- >\n  {s}\n- x\n",
    "k: '#{s}'\n",
    'k: "@{s}"\n',
    "'%{s}': v\n",
    "k: |\n  #{s}\n",
    "k: [x, '`{s}', \"|{s}\"]\n",
]


@pytest.mark.parametrize("v2", [False, True], ids=["v3", "v2"])
def test_tricky_scalars_in_every_context(v2: bool) -> None:
    decided = 0
    for s, ctx in itertools.product(SCALARS, CONTEXTS):
        decided += check(ctx.format(s=s), v2)
        # The same in a larger document, where the scalar is one among many.
        decided += check("a: 1\nb: [x, z]\n" + ctx.format(s=s) + "c: {d: e}\n", v2)
        # With no line break at the end (files often lack one).
        decided += check(ctx.format(s=s).rstrip("\n"), v2)
    assert decided > len(SCALARS) * len(CONTEXTS) * 3 // 2


# ----------------------------------------------------------------------------- random documents

_FRAGMENT = st.sampled_from(SCALARS + ["x y", "'q'", '"d\\n"', "a: b", "[1, 2]", "{}", "[]"])
_KEY = st.sampled_from(["a", "b", "k", "1", "1.0", "null", "x y", "'s'", '"d"', "0x1", "-"])


@st.composite
def documents(draw: Any, depth: int = 0) -> str:
    """A block mapping of random keys and values, some nested, some flow, some empty."""
    lines = []
    indent = "  " * depth
    for _ in range(draw(st.integers(1, 4))):
        key = draw(_KEY)
        kind = draw(st.integers(0, 5 if depth < 3 else 2))
        if kind == 0:
            lines.append(f"{indent}{key}:")
        elif kind in (1, 2):
            lines.append(f"{indent}{key}: {draw(_FRAGMENT)}")
        elif kind == 3:
            items = draw(st.lists(_FRAGMENT, max_size=3))
            lines.append(f"{indent}{key}:")
            lines.extend(f"{indent}- {i}" for i in items)
        elif kind == 4:
            lines.append(f"{indent}{key}:")
            lines.append(draw(documents(depth + 1)))
        else:
            lines.append(f"{indent}{key}: {{{', '.join(draw(st.lists(_FRAGMENT, max_size=3)))}}}")
    return "\n".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    start=st.booleans(),
    end=st.booleans(),
    v2=st.booleans(),
)
def test_random_documents(docs: list[str], start: bool, end: bool, v2: bool) -> None:
    text = ("---\n" if start else "") + "\n---\n".join(docs) + ("\n" if end else "")
    check(text, v2)


# ----------------------------------------------------------------------------- mutated files

_PIECES = [*" \n:-,[]{}'\"#|>?!&*%@`~\\.0123456789abxyz", "  ", ": ", "- ", "\n  ", "---", "..."]


def test_mutated_corpus_files() -> None:
    """Corpus files with a few random edits: mostly invalid YAML, which must stay declined."""
    rng = random.Random(12)
    small = [p for p in yaml_files(CORPUS) if p.stat().st_size < 4000]
    decided = 0
    for i in range(3000):
        text = small[i % len(small)].read_text(encoding="utf-8", errors="replace")
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(text) + 1)
            piece = rng.choice(_PIECES) if rng.random() < 0.8 else rng.choice(SCALARS)
            op = rng.random()
            if op < 0.4:
                text = text[:pos] + piece + text[pos:]
            elif op < 0.7:
                text = text[:pos] + text[pos + rng.randint(1, 3) :]
            else:
                text = text[:pos] + piece + text[pos + 1 :]
        decided += check(text)
        decided += check(text.rstrip("\n") if text.endswith("\n") else text + "\n")
    assert decided > 1000


# ----------------------------------------------------------------------------- indicators in text

_ATOMS = ["a", "b:", "[", "]", "{", "}", ",", ":", "?", "-", " ", "x:y", "[-1:]", "[?(@.t)]"]
_ATOMS += [":80", "(?:[a]", ":]", "'q'", '"d"', "|", ">", "#c", "\t", "1", "True", "~", "&a"]


def test_flow_indicators_and_tabs_in_block_context() -> None:
    """Lines of keys and values made of flow indicators, colons, tabs and jsonPath-like text,
    some continued on the next line: where the fast path answers (it now answers such text
    outside flow collections), it answers as PyYAML does."""
    rng = random.Random(24)
    decided = 0
    for _ in range(4000):
        lines = []
        for _ in range(rng.randint(1, 5)):
            key = rng.choice(["k", "- k", "-", "? k", "kk", "- - k"])
            value = "".join(rng.choice(_ATOMS) for _ in range(rng.randint(0, 5)))
            indent = " " * rng.choice([0, 0, 2, 4])
            lines.append(indent + key + rng.choice([": ", ":", ": ", "  "]) + value)
            if rng.random() < 0.3:
                more = "".join(rng.choice(_ATOMS) for _ in range(rng.randint(1, 4)))
                lines.append(" " * rng.choice([2, 4, 6]) + more)
        decided += check("\n".join(lines) + rng.choice(["\n", ""]))
    assert decided > 300


# ----------------------------------------------------------------------------- large trees

# Shapes whose checks look at the tree's nodes (null values, block scalars and their content,
# scalars typed differently, flow collections, empty and quoted keys), repeated past
# yamlfast._BULK_MIN nodes so the tree's nodes are read at once.
LARGE_PART = (
    "- name: n{i}\n"
    "  empty:\n"
    "  text: |\n"
    "    | a | table |\n"
    "    :x after a line\n"
    "  folded: >-\n"
    "    some words\n"
    "  plain: True\n"
    "  quoted: 'True'\n"
    "  mode: 0777\n"
    "  flow: {{a: 1, b: [x, y]}}\n"
    '  "": quoted empty key\n'
    "  '#k': '@v'\n"
)


def large_text(parts: int = 500, extra: str = "") -> str:
    return "".join(LARGE_PART.format(i=i) for i in range(parts)) + extra


def test_bulk_read_of_large_trees_matches_the_api() -> None:
    ryml = yamlfast._import_ryml()
    assert yamlfast._bulk_layout_ok(ryml)  # else large trees are read a node at a time
    tree = ryml.parse_in_arena(large_text().encode())
    assert tree.size() >= yamlfast._BULK_MIN
    nodes = yamlfast._Nodes(tree, ryml)
    api = ryml._ryml
    sizes = [
        (len(k) if k is not None else 0)
        for k in map(api.Tree_key, [tree] * tree.size(), range(tree.size()))
    ]
    assert nodes.types == [api.Tree_type(tree, n) for n in range(tree.size())]
    assert nodes.keys == sizes
    assert nodes.vals == [len(api.Tree_val(tree, n) or b"") for n in range(tree.size())]


@pytest.mark.parametrize(
    "extra",
    ["", "- a: !!str 1\n", "- &x a: 1\n", "- {a: 1,\n   b: [:x]}\n", "- " + "k" * 1200 + ": 1\n"],
    ids=["plain", "tag", "anchor", "flow-over-lines", "long-key"],
)
def test_large_trees_read_alike_in_bulk_and_node_by_node(
    extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = large_text(extra=extra)
    bulk = fast(text)
    bulk_reason = yamlfast.last_reason
    monkeypatch.setattr(yamlfast, "_bulk_checked", [False])
    one_by_one = fast(text)
    assert (yamlfast.last_reason, bulk is None) == (bulk_reason, one_by_one is None)
    if bulk is not None:
        assert one_by_one is not None and same(bulk, one_by_one)
        assert check(text)
        assert isinstance(bulk[0][0], ImplicitNullMap)
    else:
        assert extra  # the plain text is read on this path


# ----------------------------------------------------------------------------- suspect colons

_LINE_WORDS = ["x", "[", "]", "{", "}", "'", "''", '"', '\\"', "\\", ":", ": ", " : ", "?", ","]
_LINE_WORDS += ["has(self[0])", "a.b", "#c", "- ", "y:", "0", "true", "\ue000"]


def test_suspect_colons_are_read_only_where_they_are_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines starting with ':' after lines holding '[' or '{', and quotes before ':', in
    quoted scalars over several lines, block scalars and comments (where both readers take
    the ':' as text) and out of them (flow collections, plain scalars, keys): where the fast
    path answers, it answers as PyYAML does, and it answers the quoted shapes."""
    masked = []
    mask = yamlfast._mask_colons

    def counting(text: str) -> tuple[str, int]:
        masked.append(text)
        return mask(text)

    monkeypatch.setattr(yamlfast, "_mask_colons", counting)
    rng = random.Random(36)
    decided = decided_masked = 0
    for _ in range(6000):
        words = [rng.choice(_LINE_WORDS) for _ in range(rng.randint(1, 4))]
        first = "".join(words)
        rest = "".join(rng.choice(_LINE_WORDS) for _ in range(rng.randint(0, 3)))
        indent = " " * rng.randint(0, 6)
        quote = rng.choice(["'", '"', "", "[", "{", "|\n  ", "# ", "x # "])
        close = {"'": "'", '"': '"', "[": "]", "{": "}"}.get(quote, "")
        lead = rng.choice(["k: ", "- ", "- k: ", "? ", ""])
        text = f"{lead}{quote}{first}\n{indent}:{rng.choice([' ', ''])}{rest}{close}\n"
        if rng.random() < 0.5:
            text = "a: 1\n" + text + "z: [2]\n"
        before = len(masked)
        answered = check(text)
        decided += answered
        decided_masked += answered and len(masked) > before
    assert decided > 350
    assert decided_masked > 50  # the shapes the mask is for are answered


# ----------------------------------------------------------------------------- masked first

_TABLE_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
{fields}
"""
_TABLE_FIELD = """          field{i}:
            description: |-
              Field {i}: one of
              | value | meaning |
              | ----- | ------- |
              | a:b   | [-1:] {{x}} |
            type: string
"""


def test_large_texts_with_block_scalars_masked_first_read_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Checked without the block scalars' content from the start (every text here, the choice
    forced): each text decided agrees with PyYAML, and every text the usual order decides is
    decided the same; a header in a quoted scalar that ryml's tree does not hold sends the
    text back to the usual order."""
    crd = _TABLE_CRD.format(fields="".join(_TABLE_FIELD.format(i=i) for i in range(400)))
    quoted = 'a: "x\n  b: |\n  c"\nd: |-\n  e\n'
    plain_crd = crd.replace("| ", "; ")
    assert len(crd) >= yamlfast._MASK_FIRST
    assert yamlfast._tables_in_blocks(crd, yamlfast._lines(crd)[1])
    assert not yamlfast._tables_in_blocks(plain_crd, yamlfast._lines(plain_crd)[1])
    assert not yamlfast._tables_in_blocks(quoted, yamlfast._lines(quoted)[1])  # small
    texts = [crd, quoted, plain_crd] + [
        p.read_text(encoding="utf-8") for p in SHAPES.glob("*.yaml")
    ]
    texts += [
        p.read_text(encoding="utf-8", errors="replace")
        for p in yaml_files(CORPUS)
        if "|" in p.read_text(encoding="utf-8", errors="replace")
    ]
    usual = {
        t: yamlfast.load_docs(t, None, yamlio._v3_plain, fold=True, mask_first=False) for t in texts
    }
    # the CRD's tables decline the whole text's checks (it is read after masking)
    assert usual[crd] is not None
    monkeypatch.setattr(yamlfast, "_tables_in_blocks", lambda text, lines: True)
    first_used = []
    real_first = yamlfast._check_masked_first

    def spy_first(text: str, lines: str) -> Any:
        found = real_first(text, lines)
        first_used.append(found is not None)
        return found

    retried = []
    real_load = yamlfast.load_docs

    def spy_load(text: str, data: Any, plain: Any, *, fold: bool, mask_first: bool = True) -> Any:
        if not mask_first:
            retried.append(text)
        return real_load(text, data, plain, fold=fold, mask_first=mask_first)

    monkeypatch.setattr(yamlfast, "_check_masked_first", spy_first)
    monkeypatch.setattr(yamlfast, "load_docs", spy_load)
    decided = 0
    for text in texts:
        got = yamlfast.load_docs(text, None, yamlio._v3_plain, fold=True)
        if usual[text] is not None:
            assert got is not None, f"declined masked first only: {text[:200]!r}"
            assert same(got, usual[text])
        if got is not None:
            decided += 1
            kind, want = reference(text)
            assert kind == "docs" and same(got, want), text[:200]
    assert sum(first_used) > 50 and decided > 100
    assert quoted in retried and fast(quoted) is not None
    assert crd not in retried
