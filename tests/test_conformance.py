"""The shared conformance corpus: krm build against kubectl kustomize's expected output.

Runs the corpus runner as a subprocess (``--json``) and checks the pass count cannot
regress. The corpus is vendored in tests/conformance ($CONFORMANCE_DIR runs another copy).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("CONFORMANCE_DIR", REPO / "tests" / "conformance"))
# What the engine reaches (254 of 254, all byte-exact): any regression fails.
MIN_PASSED = 254
MIN_BYTE_EXACT = 254


@pytest.mark.slow
def test_kustomize_corpus(tmp_path: Path) -> None:
    runner = CORPUS / "run"
    if not runner.exists():
        pytest.fail(f"conformance runner not found at {runner}; set CONFORMANCE_DIR")
    out = tmp_path / "result.json"
    cmd = f"{shlex.quote(sys.executable)} -m orchestrator build {{dir}}"
    proc = subprocess.run(
        [sys.executable, str(runner), "kustomize", "--cmd", cmd, "-j", "2", "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
    )
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    failures = [line for line in proc.stdout.splitlines() if line.startswith("FAIL ")]
    assert result["passed"] + result["failed"] >= 254
    assert result["passed"] >= MIN_PASSED, "\n".join(failures)
    assert result["byte_exact"] >= MIN_BYTE_EXACT, proc.stdout[-3000:]
