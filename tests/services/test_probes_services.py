"""The worker's exec probe (deploy/k8s/base/worker-deployment.yaml) answers for a live worker."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKER = os.environ.get("KRM_TEST_WORKER")

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(
        os.environ.get("KRM_TEST_SERVICES") != "1" or not WORKER,
        reason="needs the named celery worker that deploy/ci-services.sh starts",
    ),
]


def test_worker_probe_passes_against_the_running_worker():
    manifest = ROOT / "deploy" / "k8s" / "base" / "worker-deployment.yaml"
    spec = yaml.safe_load(manifest.read_text())["spec"]["template"]["spec"]
    command = spec["containers"][0]["livenessProbe"]["exec"]["command"]
    # The pod's HOSTNAME is its node name's host part; here the worker is named by the script.
    node_host = WORKER.split("@", 1)[1]
    node_name = WORKER.split("@", 1)[0]
    script = command[2].replace("celery@$HOSTNAME", f"{node_name}@{node_host}")
    bindir = str(ROOT / ".venv" / "bin")
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [*command[:2], script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pong" in proc.stdout
