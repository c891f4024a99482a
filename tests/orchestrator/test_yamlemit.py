"""The fast YAML writer (orchestrator/yamlemit.py) against libyaml's emitter, byte for byte.

``yamlio.libyaml_dump`` is the reference: PyYAML nodes styled like go-yaml v2 and written
by libyaml's C emitter, the writer that was checked byte-exact against kustomize on the
corpora and real trees. ``yamlio.fast_dump`` must print the same bytes for every document
it accepts, and accept every document of the corpora (it may defer only for the rare
shapes listed in yamlemit's docstring, which ``yamlio.dump`` then sends to libyaml).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator import yamlemit, yamlio
from tests.hostile import engine_inputs

CORPUS = Path(__file__).resolve().parents[1] / "conformance"


def _same(obj: Any) -> str:
    """Assert both writers agree on ``obj``; return the text (fallback allowed)."""
    try:
        reference = yamlio.libyaml_dump(obj)
    except UnicodeEncodeError:  # lone surrogates: libyaml's error stays the answer
        with pytest.raises(UnicodeEncodeError):
            yamlio.dump(obj)
        return ""
    try:
        fast = yamlio.fast_dump(obj)
    except yamlemit.Fallback:
        assert yamlio.dump(obj) == reference
        return reference
    assert fast == reference, (obj, fast, reference)
    assert yamlio.dump(obj) == reference
    return fast


def _fast_same(obj: Any) -> None:
    """Both writers agree and the fast writer did not defer."""
    assert yamlio.fast_dump(obj) == yamlio.libyaml_dump(obj), obj


# ----------------------------------------------------------------------------- corpora


def _corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def test_every_corpus_document_input_and_expected() -> None:
    files = _corpus_files()
    assert len(files) > 1000
    docs = 0
    for path in files:
        data = path.read_bytes()
        for loader in (yamlio.load_all, yamlio.load_yaml11):
            try:
                parsed = loader(data)
            except Exception:  # noqa: BLE001 - hostile or deliberately broken inputs
                continue
            for doc in parsed:
                if isinstance(doc, (dict, list)):
                    _fast_same(doc)
                else:
                    _same(doc)
                docs += 1
    assert docs > 2000


def test_expected_outputs_reproduced_by_the_fast_writer() -> None:
    expected = sorted((CORPUS / "kustomize" / "cases").glob("*/expected.yaml"))
    assert len(expected) >= 200
    for path in expected:
        text = path.read_text(encoding="utf-8")
        docs = yamlio.load_all(text)
        assert "---\n".join(yamlio.fast_dump(d) for d in docs) == text, path


def test_hostile_values() -> None:
    texts = [
        engine_inputs.nested_flow(90),
        engine_inputs.nested_flow(90, "{"),
        engine_inputs.nested_block(90, 2),
        engine_inputs.nested_block_mappings(90, 2),
        engine_inputs.alias_bomb(3, 3),
        engine_inputs.anchors_in_use(),
    ]
    for value in texts:
        doc = yamlio.load("top:\n  field: " + value.replace("\n", "\n  ") + "\n")
        _fast_same(doc)
        _fast_same([doc, [doc]])


# ----------------------------------------------------------------------------- tricky strings

PIECES = [
    "",
    " ",
    "  ",
    "\t",
    ": ",
    ":",
    " #",
    "#",
    "- ",
    "-",
    "? ",
    "'",
    '"',
    "\\",
    "\n",
    "\n\n",
    " \n",
    "\n ",
    "\r",
    "\r\n",
    "\x85",
    "\u2028",
    "\ufeff",
    "\x00",
    "\x07",
    "\x1b",
    "\x7f",
    "\xa0",
    "é",
    "中文",
    "\U0001f600",
    "\ud800",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&",
    "*",
    "!",
    "|",
    ">",
    "%",
    "@",
    "`",
    "~",
    "---",
    "...",
]
NUMBERS_AND_WORDS = [
    "true",
    "True",
    "yes",
    "on",
    "Off",
    "y",
    "n",
    "null",
    "Null",
    "~",
    "<<",
    "0",
    "007",
    "0x1F",
    "0o17",
    "0b101",
    "-0b1",
    "1_000",
    "1.5",
    "-.5",
    "1e3",
    "1E+3",
    ".inf",
    "-.Inf",
    ".NaN",
    "1:20:30",
    "2024-01-02",
    "2024-01-02T03:04:05Z",
    "2024-1-2 3:04:05 +01:00",
    "+1",
    "-",
    ".",
    "1.2.3",
    "v1",
    "nginx:1.25",
    "a:b",
    "a: b",
    "a #b",
    "a#b",
    "http://x/y?z=1#f",
]


def _long_strings() -> list[str]:
    """Strings whose spaces fall at every column around the fold width (80)."""
    out = []
    for n in range(55, 110):
        out.append("a" * n + " b")
        out.append("a" * n + " b c")
        out.append("a" * n + "  b")
        out.append("a" * n + " ")
        out.append(" " + "a" * n + " b")
        out.append("a" * (n - 50) + " " + "b" * 48 + " c d")
        out.append("word " * (n // 5) + "end")
        out.append("x" * n)  # a very long word: never folded
        out.append("a" * n + ": b")
        out.append("a" * n + " 'q' b")
        out.append("a" * n + ' "q" b')
        out.append("a" * n + " \t b")
        out.append("a" * n + " é b")
        out.append("a" * n + " \ufeff b")
        out.append("a" * n + " \\ b")
        out.append("a" * n + " b\nc d")
        out.append("a" * n + " b\n")
        out.append("a" * n + " b \nc")
        out.append("a " * (n // 2) + "\x85")
        out.append("é " * n)
    return out


def _context(value: Any, shape: int) -> Any:
    """``value`` placed at different columns and indentation depths."""
    if shape == 0:
        return {"k": value}
    if shape == 1:
        return {"key-" + "x" * 17: {"inner": value}}
    if shape == 2:
        return {"a": [value, {"b": [value]}]}
    if shape == 3:
        return [[value]]
    if shape == 4:
        return {"a": {"b": {"c": {"d": {"e": {"f": [{"g": value}]}}}}}}
    return [{"list": [[{"deep": value}]]}]


def test_tricky_strings_as_values_and_keys() -> None:
    strings = list(PIECES) + NUMBERS_AND_WORDS
    strings += [a + b for a, b in itertools.product(PIECES, ["x", "x y", "1"])]
    strings += [a + b for a, b in itertools.product(["x", "a b", "1", " "], PIECES)]
    strings += [a + "mid" + b for a, b in itertools.product(PIECES[:20], PIECES[:20])]
    strings += ["line one\nline two", "  indented\nblock", "\nleading", "trailing\n\n\n"]
    strings += ["a  \nb", "a\n  b\n", "x\n\n", "\n", "\n\n", "one\ttab\nline"]
    strings += _long_strings()
    fast = 0
    for s in strings:
        for shape in range(6):
            _same(_context(s, shape))
        _same({s: "v", "z": {s: [s]}})
        try:
            yamlio.fast_dump({"k": s})
            fast += 1
        except yamlemit.Fallback:
            assert any(c in s for c in "\u2028\ud800"), repr(s)
    assert fast > len(strings) * 0.95


def test_numbers_nulls_and_empty_containers() -> None:
    values: list[Any] = [
        None,
        True,
        False,
        0,
        -1,
        10**30,
        1.5,
        -0.0,
        2.0,
        1e21,
        1e20,
        1.5e-7,
        123456789.125,
        float("inf"),
        float("-inf"),
        float("nan"),
        {},
        [],
        {"a": {}},
        [[]],
        [{}],
        {"a": [[], {}, [[{}]]]},
        ("tu", "ple"),
    ]
    for v in values:
        for shape in range(6):
            _fast_same(_context(v, shape))
    _fast_same({1: "int key", False: "bool key", None: "null key", 2.5: "float key"})
    _fast_same({})
    _fast_same([])


def test_deep_indentation() -> None:
    doc: Any = "a " * 60
    for i in range(90):
        doc = {f"k{i}": doc} if i % 3 else [doc, "x"]
    _fast_same(doc)


def test_deferred_shapes_still_match_libyaml() -> None:
    for obj in ["scalar root", 5, None, {"k" * 200: 1}, {"a\nb": 1}, {"k": "a\u2028b"}]:
        with pytest.raises(yamlemit.Fallback):
            yamlio.fast_dump(obj)
        assert yamlio.dump(obj) == yamlio.libyaml_dump(obj)


# ----------------------------------------------------------------------------- generated

_ALPHABET = st.sampled_from(
    list("abc xyz019:#-?'\"\\{}[],&*!|>%@`~._/=+\n\t\r")
    + ["\xa0", "é", "\ufeff", "\x85", "\x00", "\x7f", "中", "\U0001f600", "  ", "\n\n", " \n"]
)
_TEXT = st.one_of(
    st.lists(_ALPHABET, max_size=12).map("".join),
    st.sampled_from(NUMBERS_AND_WORDS),
    st.lists(
        st.sampled_from(["word", "a", "longerword", "x" * 30, " ", " ", ": ", "é"]), max_size=60
    ).map("".join),
)
_SCALARS = st.one_of(
    _TEXT,
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
)
_DOCS = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_TEXT, children, max_size=4)
    ),
    max_leaves=30,
)


@settings(
    max_examples=int(os.environ.get("KRM_YAMLEMIT_EXAMPLES", "400")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_DOCS)
def test_generated_documents(doc: Any) -> None:
    _same(doc)
    _same({"spec": doc, "list": [doc]})


def test_plain_implicit_matches_the_libyaml_resolver() -> None:
    import yaml

    from orchestrator import yamlpy

    for s in [*NUMBERS_AND_WORDS, *PIECES, "TRUE", "False", "-.inf", ".nan", "1e+21", "0.5", "-0"]:
        expected = yamlpy._dump_resolve(None, yaml.ScalarNode, s, (True, False)) == yamlio._STR
        assert yamlio._plain_implicit(s) is expected, s
