"""Compositions through ``krm`` (real subprocesses) and from Kustomizations."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator import build
from orchestrator.composition import consolidate, format_consolidated
from orchestrator.errors import KrmError

HEAD = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n"
Tree = Callable[[dict[str, str]], Path]

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {}}}\n"
LABEL = HEAD + "transformers:\n- kind: LabelTransformer\n  labels: {by: composition}\n"
GEN = HEAD + "transformers:\n- kind: ResourceGenerator\n  paths: [gen.yaml]\n"


def krm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True
    )


def names(out: Any) -> list[tuple[str, dict | None]]:
    return [(r["metadata"]["name"], r["metadata"].get("labels")) for r in out]


def test_krm_build_builds_a_composition_dir(tree: Tree) -> None:
    root = tree({"composition.yaml": GEN, "gen.yaml": CM.format("g")})
    proc = krm("build", str(root))
    assert proc.returncode == 0, proc.stderr
    assert list(yaml.safe_load_all(proc.stdout)) == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g"}}
    ]


def test_krm_build_refuses_both_files(tree: Tree) -> None:
    root = tree({"composition.yaml": GEN, "kustomization.yaml": "resources: []\n"})
    proc = krm("build", str(root))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"Error: {root}: both 'kustomization.yaml' and 'composition.yaml' found in '{root}'; "
        "keep only one\n"
    )


def test_krm_build_reports_schema_errors_in_one_message(tree: Tree) -> None:
    root = tree({"composition.yaml": HEAD + "extra: 1\n"})
    proc = krm("build", str(root))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: {root}/composition.yaml: failed to decode Composition at path {root}:\n"
        "  line 3: field extra not found in type types.Composition (at extra; known fields: "
        "apiVersion, kind, catalogs, transformersFrom, transformers, modules, "
        "transformerOverrides, transformerOrder)\n"
    )
    assert "Traceback" not in proc.stderr


def test_krm_consolidate_prints_the_list_without_running(tree: Tree) -> None:
    # gen.yaml does not exist: consolidating must not read it.
    root = tree(
        {
            "base/composition.yaml": GEN,
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n  importMode: append\n"
            "transformers:\n- kind: LabelTransformer\n  labels: {a: b}\n",
        }
    )
    proc = krm("consolidate", str(root))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == format_consolidated(consolidate(str(root)))
    assert [t["kind"] for t in yaml.safe_load(proc.stdout)["transformers"]] == [
        "LabelTransformer",
        "ResourceGenerator",
    ]
    assert krm("build", str(root)).returncode == 1


def test_krm_consolidate_errors(tree: Tree) -> None:
    root = tree({"composition.yaml": HEAD + "transformersFrom:\n- path: .\n"})
    proc = krm("consolidate", str(root))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: {root}/composition.yaml: failed to consolidate Composition at path {root}:\n"
        f"  transformersFrom cycle: {root}/composition.yaml -> {root}/composition.yaml\n"
    )


def test_kustomization_resources_and_generators_append_composition_output(tree: Tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources: [own.yaml, comp]\ngenerators: [comp2]\n"
            "commonLabels: {k: v}\n",
            "own.yaml": CM.format("own"),
            "comp/composition.yaml": GEN,
            "comp/gen.yaml": CM.format("from-resources"),
            "comp2/composition.yaml": GEN,
            "comp2/gen.yaml": CM.format("from-generators"),
        }
    )
    out = build(str(root)).resources
    assert names(out) == [
        ("from-generators", {"k": "v"}),
        ("from-resources", {"k": "v"}),
        ("own", {"k": "v"}),
    ]


def test_kustomization_transformers_replace_resources_with_composition_output(
    tree: Tree,
) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources: [own.yaml]\ntransformers: [comp]\n",
            "own.yaml": CM.format("own"),
            "comp/composition.yaml": LABEL,
        }
    )
    assert names(build(str(root)).resources) == [("own", {"by": "composition"})]


def test_kustomization_validators_discard_composition_output(tree: Tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources: [own.yaml]\nvalidators: [comp]\n",
            "own.yaml": CM.format("own"),
            "comp/composition.yaml": LABEL,
        }
    )
    assert names(build(str(root)).resources) == [("own", None)]
    (root / "comp" / "composition.yaml").write_text(
        HEAD + "transformers:\n- kind: ResourceGenerator\n  paths: [missing.yaml]\n"
    )
    with pytest.raises(KrmError) as info:
        build(str(root))
    assert "ResourceGenerator: path 'missing.yaml' does not exist" in info.value.message


def test_composition_is_not_a_component(tree: Tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources: [own.yaml]\ncomponents: [comp]\n",
            "own.yaml": CM.format("own"),
            "comp/composition.yaml": LABEL,
        }
    )
    with pytest.raises(KrmError) as info:
        build(str(root))
    assert info.value.message == (
        f"expected kind 'Component' for path '{root}/comp' but got 'Composition'"
    )


def test_krm_consolidate_missing_path(tmp_path: Path) -> None:
    proc = krm("consolidate", str(tmp_path / "nowhere"))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"Error: '{tmp_path}/nowhere' does not exist (expected a directory with composition.yaml)\n"
    )
