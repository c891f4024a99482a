"""Patches that change a resource's name and kind (``allowNameChange``/``allowKindChange``) and
what later patches and name references find, on the inputs of kustomize v5.5.0's own tests
(``data/kustomize_gvknpatch.json``), against ``kubectl kustomize``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = json.loads((Path(__file__).parent / "data" / "kustomize_gvknpatch.json").read_text())
TESTS = DATA["tests"]


@pytest.mark.parametrize("name", sorted(TESTS))
def test_like_kubectl(tmp_path: Path, oracle, name: str) -> None:
    case = TESTS[name]
    for rel, text in case["files"].items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    root = tmp_path / case["target"]
    expected = oracle(root)
    got = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "--no-cache", str(root)],
        capture_output=True,
        text=True,
    )
    assert (got.returncode != 0) == case["fails"] == (expected.returncode != 0), got.stderr
    assert got.stdout == expected.stdout.decode()
    if case["fails"]:
        assert got.stderr.startswith("Error: ")
