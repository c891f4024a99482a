"""YAML reading (go-yaml v3 scalars) and writing (kustomize's go-yaml v2 output style)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

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


# ----------------------------------------------------------------------------- PyYAML on demand

ROOT = Path(__file__).resolve().parents[2]
LAZY = ("yaml", "orchestrator.yamlpy", "deprecation")


def _fresh(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter on this checkout (the fast path at its defaults)."""
    environ = {k: v for k, v in os.environ.items() if k != "KRM_YAML_FAST"}
    environ.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120
    )


def test_importing_the_yaml_modules_does_not_load_pyyaml() -> None:
    code = (
        "import sys\n"
        "import orchestrator.yamlio, orchestrator.yamllimits, orchestrator.kustomization\n"
        f"print([m for m in {LAZY!r} if m in sys.modules])\n"
    )
    proc = _fresh(code)
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", "[]\n")


def test_a_small_build_does_not_load_pyyaml(tmp_path: Path) -> None:
    # Kustomization files are read with go-yaml v2 typing; files often lack a final line break.
    (tmp_path / "kustomization.yaml").write_text(
        "namePrefix: p-\ncommonAnnotations:\n  team: a\nresources:\n- deploy.yaml\n- svc.yaml"
    )
    (tmp_path / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n"
        "  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n"
        "        env:\n        - name: ON\n          value: 'yes'\n        resources:\n"
    )
    (tmp_path / "svc.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n"
        '    note: "0644"\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n'
    )
    code = (
        "import sys\n"
        "from orchestrator.cli import main\n"
        f"status = main(['build', {str(tmp_path)!r}, '--no-cache'])\n"
        f"sys.stderr.write(repr([m for m in {LAZY!r} if m in sys.modules]))\n"
        "sys.exit(status)\n"
    )
    fast = _fresh(code)
    assert (fast.returncode, fast.stderr) == (0, "[]")
    assert "name: p-web" in fast.stdout and "targetPort: 8080" in fast.stdout
    # The same output through PyYAML alone.
    slow = _fresh(code, KRM_YAML_FAST="0")
    assert (slow.returncode, slow.stderr) == (0, "['yaml', 'orchestrator.yamlpy']")
    assert slow.stdout == fast.stdout


def test_declined_texts_and_errors_load_pyyaml_on_demand() -> None:
    code = """if True:
        import json, sys
        from orchestrator import yamlio
        from orchestrator.errors import YamlError
        out = {"plain": yamlio.load_all("a: 1\\nb:\\n")}
        out["implicit"] = sorted(out["plain"][0].implicit_nulls)
        out["before"] = "yaml" in sys.modules
        out["anchor"] = yamlio.load_all("a: &x {b: 1}\\nc: *x\\n")
        out["after"] = "yaml" in sys.modules
        out["v2"] = yamlio.load_yaml11("a: yes\\nb: on\\nc: 0x1F")
        errors = []
        for text in ("a: [\\n", "a: 1\\na: 2\\n", "[" * 200 + "]" * 200 + "\\n"):
            try:
                yamlio.load_all(text, source="f.yaml")
            except YamlError as exc:
                errors.append(str(exc))
        out["errors"] = errors
        print(json.dumps(out))
    """
    proc = _fresh(code)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got.pop("plain") == [{"a": 1, "b": None}]
    assert got == {
        "implicit": ["b"],
        "before": False,
        "anchor": [{"a": {"b": 1}, "c": {"b": 1}}],
        "after": True,
        "v2": [{"a": True, "b": True, "c": 31}],
        "errors": [_error(t) for t in ("a: [\n", "a: 1\na: 2\n", "[" * 200 + "]" * 200 + "\n")],
    }


def _error(text: str) -> str:
    """The error this process (PyYAML loaded) gives for ``text``."""
    with pytest.raises(YamlError) as exc:
        yamlio.load_all(text, source="f.yaml")
    return str(exc.value)


def test_folded_scalars_of_resources_read_as_kustomize_leaves_them() -> None:
    """Resources (the default) get go-yaml's folded round trip (a line break gained before a
    more-indented line); documents kustomize never reads as resources, and kustomization files
    (go-yaml v2, straight to JSON), keep the value the YAML spec gives."""
    text = 'spec:\n  json: >\n    {\n      "id": 1\n    }\n'
    spec = '{\n  "id": 1\n}\n'
    assert yamlio.load_all(text)[0]["spec"]["json"] == '{\n\n  "id": 1\n}\n'
    assert yamlio.load(text, fold=False)["spec"]["json"] == spec
    assert yamlio.load_yaml11(text)[0]["spec"]["json"] == spec
