"""JSON 6902 patches: each op, kustomize's (evanphx) deviations, errors, and kubectl parity."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestrator.errors import PatchError
from orchestrator.filters.json6902 import apply, parse_ops

CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c"},
    "data": {"a": "1"},
    "list": [1, 2, 3],
}


def test_add_remove_replace_move_copy_test() -> None:
    ops = [
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "remove", "path": "/list/0"},
        {"op": "replace", "path": "/data/a", "value": "x"},
        {"op": "move", "from": "/data/b", "path": "/data/m"},
        {"op": "copy", "from": "/data/a", "path": "/data/c"},
        {"op": "test", "path": "/data/c", "value": "x"},
        {"op": "add", "path": "/list/-", "value": 9},
    ]
    out = apply(CM, ops)
    assert out["data"] == {"a": "x", "m": "2", "c": "x"}
    assert out["list"] == [2, 3, 9]


def test_input_is_not_modified() -> None:
    before = copy.deepcopy(CM)
    apply(CM, [{"op": "add", "path": "/data/z", "value": "1"}])
    assert before == CM


def test_negative_indices_count_from_the_end_like_evanphx() -> None:
    assert apply(CM, [{"op": "remove", "path": "/list/-1"}])["list"] == [1, 2]
    assert apply(CM, [{"op": "add", "path": "/list/-1", "value": 9}])["list"] == [1, 2, 3, 9]
    assert apply(CM, [{"op": "replace", "path": "/list/-2", "value": 0}])["list"] == [1, 0, 3]


def test_replace_of_a_missing_key_adds_it_like_evanphx() -> None:
    assert apply(CM, [{"op": "replace", "path": "/data/b", "value": "x"}])["data"] == {
        "a": "1",
        "b": "x",
    }


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (
            {"op": "remove", "path": "/data/b"},
            "k.yaml: op 0 (remove /data/b): can't remove a non-existent object 'b'",
        ),
        (
            {"op": "test", "path": "/data/a", "value": "2"},
            "k.yaml: op 0 (test /data/a): testing value /data/a failed: test failed",
        ),
        (
            {"op": "bogus", "path": "/data/a"},
            "k.yaml: op 0 (bogus /data/a): Unexpected kind: bogus",
        ),
        ({"op": "add", "value": 1}, "k.yaml: op 0 (add): operation has no 'path'"),
        (
            {"op": "add", "path": "/data/a"},
            "k.yaml: op 0 (add /data/a): operation has no 'value'",
        ),
        (
            {"op": "move", "path": "/data/a"},
            "k.yaml: op 0 (move /data/a): operation has no 'from'",
        ),
        (
            {"op": "add", "path": "/list/7", "value": 9},
            "k.yaml: op 0 (add /list/7): can't insert outside of list",
        ),
    ],
)
def test_errors_name_op_path_and_source(op: dict, message: str) -> None:
    with pytest.raises(PatchError) as e:
        apply(CM, [op], source="k.yaml")
    assert str(e.value) == message


def test_test_null_on_a_missing_key_passes_like_evanphx() -> None:
    # kustomize reads a missing map key as null; the document is left as it was.
    assert apply(CM, [{"op": "test", "path": "/data/b", "value": None}]) == CM


@pytest.mark.parametrize(
    ("path", "message"),
    [
        # evanphx fails these too: a missing parent, an index past the end, an existing value.
        ("/nope/b", "p.yaml: op 0 (test /nope/b): testing value /nope/b failed: test failed"),
        ("/list/5", "p.yaml: op 0 (test /list/5): testing value /list/5 failed: test failed"),
        ("/data/a", "p.yaml: op 0 (test /data/a): testing value /data/a failed: test failed"),
    ],
)
def test_test_null_elsewhere_still_fails(path: str, message: str) -> None:
    with pytest.raises(PatchError) as e:
        apply(CM, [{"op": "test", "path": path, "value": None}], source="p.yaml")
    assert str(e.value) == message


def test_add_below_a_missing_parent_is_an_error() -> None:
    with pytest.raises(PatchError) as e:
        apply(CM, [{"op": "add", "path": "/nope/x", "value": 9}], source="p.yaml")
    assert str(e.value).startswith("p.yaml: op 0 (add /nope/x): ")


def test_parse_ops_json_and_yaml() -> None:
    assert parse_ops('[{"op": "remove", "path": "/a"}]') == [{"op": "remove", "path": "/a"}]
    assert parse_ops("- op: add\n  path: /a\n  value: 1\n") == [
        {"op": "add", "path": "/a", "value": 1}
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "p.yaml: empty json patch operations"),
        ("op: add", "p.yaml: a JSON patch must be a list of operations, got dict"),
        ("- 1", "p.yaml: JSON patch operation 0 is not a map: 1"),
    ],
)
def test_parse_ops_errors(text: str, message: str) -> None:
    with pytest.raises(PatchError) as e:
        parse_ops(text, "p.yaml")
    assert str(e.value) == message


def test_parse_ops_bad_json_is_an_error() -> None:
    with pytest.raises(PatchError) as e:
        parse_ops('[{"op": ', "p.yaml")
    assert str(e.value).startswith("p.yaml: invalid JSON patch: ")


KUBECTL_OPS = [
    [{"op": "remove", "path": "/list/-1"}],
    [{"op": "add", "path": "/list/-1", "value": 9}],
    [{"op": "add", "path": "/list/0", "value": 0}],
    [{"op": "replace", "path": "/data/b", "value": "x"}],
    [{"op": "move", "from": "/data/a", "path": "/data/z"}],
    [{"op": "copy", "from": "/list", "path": "/data2"}],
    [
        {"op": "add", "path": "/metadata/labels", "value": {"a/b": "c"}},
        {"op": "add", "path": "/metadata/labels/x~1y", "value": "z"},
    ],
    [
        {"op": "test", "path": "/data/missing", "value": None},
        {"op": "add", "path": "/data/missing", "value": "now"},
    ],
]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("ops", KUBECTL_OPS, ids=range(len(KUBECTL_OPS)))
def test_matches_kubectl(tmp_path: Path, ops: list) -> None:
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(CM))
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["cm.yaml"],
                "patches": [{"target": {"kind": "ConfigMap"}, "patch": yaml.safe_dump(ops)}],
            }
        )
    )
    proc = subprocess.run(
        ["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout) == apply(CM, parse_ops(yaml.safe_dump(ops)))
