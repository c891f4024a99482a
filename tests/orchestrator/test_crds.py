"""``crds:``: the field specs OpenAPI definitions declare (name references into custom
resources, annotations, label selectors, identities), against ``kubectl kustomize``, on the
inputs of kustomize v5.5.0's own tests (``data/kustomize_crd.json``) and on more of our own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = json.loads((Path(__file__).parent / "data" / "kustomize_crd.json").read_text())


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _krm(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "--no-cache", str(root)],
        capture_output=True,
        text=True,
    )


def _same(root: Path, oracle) -> str:
    expected = oracle(root)
    assert expected.returncode == 0, expected.stderr
    got = _krm(root)
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout.decode()
    return got.stdout


@pytest.mark.parametrize("name", sorted(DATA["tests"]))
def test_kustomize_crd_tests(tmp_path: Path, oracle, name: str) -> None:
    case = DATA["tests"][name]
    _write(tmp_path, case["files"])
    out = _same(tmp_path / case["target"], oracle)
    if "mycrd.json" in str(case["files"]):
        assert "beeRef:\n    name: " in out and "-bee\n" in out


DEFS = {
    "example.com.v1.Widget": {
        "Schema": {
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"$ref": "example.com.v1.WidgetSpec"},
            }
        }
    },
    "example.com.v1.WidgetSpec": {
        "schema": {  # Go's JSON field match ignores case
            "properties": {
                "configName": {
                    "x-kubernetes-object-ref-api-version": "v1",
                    "x-kubernetes-object-ref-kind": "ConfigMap",
                    "x-kubernetes-object-ref-name-key": "ref",
                },
                "notes": {"x-kubernetes-annotation": ""},
                "selector": {"x-kubernetes-label-selector": ""},
                "serviceName": {"x-kubernetes-identity": ""},
            }
        }
    },
}
WIDGET = """apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
spec:
  configName:
    ref: settings
  notes: {}
  selector: {}
  serviceName: svc
"""


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_every_extension_like_kubectl(tmp_path: Path, oracle, fmt: str) -> None:
    text = json.dumps(DEFS, indent=1)  # JSON is YAML too: the .yaml file is read as YAML
    _write(
        tmp_path,
        {
            "kustomization.yaml": f"crds: [defs.{fmt}]\nresources: [widget.yaml]\n"
            "namePrefix: p-\ncommonLabels: {team: a}\ncommonAnnotations: {note: b}\n"
            "configMapGenerator:\n- name: settings\n  literals: [k=v]\n",
            f"defs.{fmt}": text if fmt == "json" else "\n" + text,  # not starting with "{"
            "widget.yaml": WIDGET,
        },
    )
    out = _same(tmp_path, oracle)
    assert "ref: p-settings-" in out and "serviceName: p-svc" in out
    assert "notes:\n    note: b" in out and "selector:\n    team: a" in out


def test_a_string_where_a_definition_belongs(tmp_path: Path, oracle) -> None:
    _write(
        tmp_path,
        {"kustomization.yaml": "crds: [defs.yaml]\n", "defs.yaml": "example.com.v1.X: nope\n"},
    )
    assert oracle(tmp_path).returncode == 1
    got = _krm(tmp_path)
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == (
        f"Error: {tmp_path / 'kustomization.yaml'}: unable to parse open API definition from "
        "'defs.yaml': the definition of 'example.com.v1.X' must be a map with a Schema\n"
    )


def test_a_type_that_refers_to_itself_ends(tmp_path: Path) -> None:
    # kustomize recurses forever on such a schema (so no oracle here); krm follows each
    # type once per path.
    defs = json.loads(json.dumps(DEFS))
    spec = defs["example.com.v1.WidgetSpec"]["schema"]["properties"]
    spec["self"] = {"$ref": "example.com.v1.WidgetSpec"}
    _write(
        tmp_path,
        {
            "kustomization.yaml": "crds: [defs.json]\nresources: [widget.yaml]\nnamePrefix: p-\n",
            "defs.json": json.dumps(defs),
            "widget.yaml": WIDGET,
        },
    )
    got = _krm(tmp_path)
    assert got.returncode == 0, got.stderr
    assert "serviceName: p-svc" in got.stdout
