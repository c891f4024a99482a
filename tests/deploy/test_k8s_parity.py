"""`krm build` renders the deployment manifests byte for byte as `kubectl kustomize` does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KRM = Path(sys.executable).parent / "krm"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (the oracle) is not installed")
@pytest.mark.parametrize("target", ["deploy/k8s/base", "deploy/k8s/overlays/production"])
def test_krm_build_matches_kubectl_kustomize(target):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ours = subprocess.run(
        [str(KRM), "build", target], cwd=ROOT, env=env, capture_output=True, timeout=120
    )
    assert ours.returncode == 0, ours.stderr.decode()[-2000:]
    oracle = subprocess.run(
        ["kubectl", "kustomize", target], cwd=ROOT, capture_output=True, timeout=120
    )
    assert oracle.returncode == 0, oracle.stderr.decode()[-2000:]
    assert oracle.stdout.count(b"\nkind: ") >= 6
    assert ours.stdout == oracle.stdout
