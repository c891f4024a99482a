"""YAML reading (go-yaml v3 scalars) and writing (kustomize's go-yaml v2 output style)."""

from __future__ import annotations

import glob
import os

import pytest

from orchestrator import yamlio
from orchestrator.errors import YamlError

CORPUS = os.environ.get(
    "CONFORMANCE_DIR",
    os.path.join(os.path.dirname(__file__), "..", "conformance"),
)
EXPECTED = sorted(glob.glob(os.path.join(CORPUS, "kustomize", "cases", "*", "expected.yaml")))


def test_reads_yaml12_core_scalars() -> None:
    doc = yamlio.load(
        "a: on\nb: yes\nc: true\nd: 0o17\ne: 0x1F\nf: 1.5\ng: ~\nh: 2024-01-02\n"
        "i: 1_000\nj: .inf\nk: '3'\nl: 0777\n"
    )
    assert doc == {
        "a": "on",
        "b": "yes",
        "c": True,
        "d": 15,
        "e": 31,
        "f": 1.5,
        "g": None,
        "h": "2024-01-02",
        "i": 1000,
        "j": float("inf"),
        "k": "3",
        "l": 511,
    }


def test_keys_are_strings_and_merge_keys_work() -> None:
    doc = yamlio.load("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n1: one\ntrue: t\n")
    assert doc == {"base": {"x": 1, "y": 2}, "d": {"x": 1, "y": 3}, "1": "one", "true": "t"}


def test_duplicate_key_is_an_error_with_lines() -> None:
    with pytest.raises(YamlError) as err:
        yamlio.load_all("a: 1\nb: 2\na: 3\n", source="res.yaml")
    assert str(err.value) == (
        'res.yaml: invalid YAML: mapping key "a" already defined at line 1 (line 3, column 1)'
    )


def test_syntax_error_names_file_and_position() -> None:
    with pytest.raises(YamlError) as err:
        yamlio.load_all("a: [1, 2\n", source="bad.yaml")
    assert str(err.value).startswith("bad.yaml: invalid YAML: ")
    assert "line " in str(err.value)


def test_multi_document_stream_drops_empty_documents() -> None:
    assert yamlio.load_all("---\na: 1\n---\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]


@pytest.mark.parametrize(
    "value, text",
    [
        ("true", '"true"'),
        ("on", '"on"'),
        ("y", '"y"'),
        ("3600", '"3600"'),
        ("1.5", '"1.5"'),
        ("2020-01-01", '"2020-01-01"'),
        ("null", '"null"'),
        ("", '""'),
        ("*", "'*'"),
        ("a: b", "'a: b'"),
        ("- x", "'- x'"),
        ("plain text", "plain text"),
        ("nginx:1.25", "nginx:1.25"),
    ],
)
def test_string_quoting_like_go_yaml_v2(value: str, text: str) -> None:
    assert yamlio.dump({"k": value}) == f"k: {text}\n"


def test_types_sorting_and_layout() -> None:
    obj = {
        "spec": {"b": [1, 2], "a": {}, "c": [], "n": None, "t": True, "f": 2.5, "i": 1.0},
        "apiVersion": "v1",
        "metadata": {"labels": {"a10": "x", "a9": "y", "a.b/c": "z"}},
    }
    assert yamlio.dump(obj) == (
        "apiVersion: v1\n"
        "metadata:\n"
        "  labels:\n"
        "    a.b/c: z\n"
        '    a9: "y"\n'
        "    a10: x\n"
        "spec:\n"
        "  a: {}\n"
        "  b:\n"
        "  - 1\n"
        "  - 2\n"
        "  c: []\n"
        "  f: 2.5\n"
        "  i: 1\n"
        '  "n": null\n'
        "  t: true\n"
    )


def test_multiline_strings_are_literal_blocks() -> None:
    assert yamlio.dump({"a": "x\ny\n", "b": "x\ny", "c": "x\n\n"}) == (
        "a: |\n  x\n  y\nb: |-\n  x\n  y\nc: |+\n  x\n\n"
    )


def test_long_strings_fold_at_80_columns() -> None:
    words = " ".join(["word"] * 30)
    out = yamlio.dump({"k": words})
    lines = out.splitlines()
    # libyaml (like go-yaml) breaks at the first space past column 80.
    assert len(lines) == 2
    assert len(lines[0]) <= 85 < len("k: " + words)
    assert yamlio.load(out) == {"k": words}


def test_dump_all_joins_with_separators() -> None:
    assert yamlio.dump_all([{"a": 1}, {"b": 2}]) == "a: 1\n---\nb: 2\n"


@pytest.mark.skipif(not EXPECTED, reason="conformance corpus not found")
def test_every_expected_output_round_trips_byte_exact() -> None:
    failures = []
    for path in EXPECTED:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if yamlio.dump_all(yamlio.load_all(text)) != text:
            failures.append(path)
    assert failures == []
    assert len(EXPECTED) >= 200
