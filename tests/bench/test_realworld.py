"""bench/realworld.py on a tiny tree: it finds the kustomizations, skips what kustomize cannot
build, compares outputs and sums the figures. No timings are asserted (they belong to the bench).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.scripts import load_script

bench = load_script("bench/realworld.py", "bench_realworld")

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  a: "1"
"""


def _tree(root: Path) -> None:
    app = root / "repo" / "app"
    app.mkdir(parents=True)
    (app / "cm.yaml").write_text(CONFIGMAP)
    (app / "kustomization.yaml").write_text("resources:\n- cm.yaml\nnamePrefix: dev-\n")
    broken = root / "repo" / "broken"
    broken.mkdir()
    (broken / "kustomization.yaml").write_text("resources:\n- missing.yaml\n")
    # kustomize builds this one only without the load restrictor, as cluster-api's Makefile does
    outside = root / "repo" / "outside" / "overlay"
    outside.mkdir(parents=True)
    (root / "repo" / "outside" / "cm.yaml").write_text(CONFIGMAP)
    (outside / "kustomization.yaml").write_text("resources:\n- ../cm.yaml\n")
    (root / "repo" / ".git" / "x").mkdir(parents=True)
    (root / "repo" / ".git" / "x" / "kustomization.yaml").write_text("resources: []\n")


def test_find_kustomizations_skips_git(tmp_path: Path) -> None:
    _tree(tmp_path)
    found = [os.path.relpath(p, tmp_path) for p in bench.find_kustomizations(str(tmp_path))]
    assert found == ["repo/app", "repo/broken", "repo/outside/overlay"]


def test_runs_on_a_tiny_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("kubectl") is None:
        # As in tests/orchestrator/conftest.py: a missing oracle fails in CI, skips elsewhere.
        (pytest.fail if os.environ.get("CI") else pytest.skip)("kubectl is not installed")
    _tree(tmp_path)
    out = tmp_path / "out.json"
    krm = f"{sys.executable} -m orchestrator"
    assert bench.main([str(tmp_path), "--krm", krm, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert sorted(data["rows"]) == ["repo/app", "repo/outside/overlay"]
    assert data["rows"]["repo/outside/overlay"]["flags"] == bench.NONE_RESTRICTOR
    assert data["rows"]["repo/app"]["flags"] == []
    summary = data["summary"]
    assert summary["directories"] == 2
    assert summary["identical"] == 2
    assert summary["warm_identical"] == 2
    assert summary["small_dirs"] == 2
    assert summary["large_dirs"] == 0
    assert summary["minimal"] is None
    assert "load average" in data["load_before"]
    printed = capsys.readouterr().out
    assert "directories kustomize builds: 2  byte-identical: cold 2, warm 2" in printed


def test_summary_figures() -> None:
    def row(size: int, kus: float, cold: float, warm: float) -> dict:
        return {
            "bytes": size,
            "kustomize_s": kus,
            "nocache_s": cold * 0.8,
            "nocache_identical": True,
            "cold_s": cold,
            "warm_s": warm,
            "kustomize_rss_mib": 100.0,
            "cold_rss_mib": 40.0,
            "warm_rss_mib": 20.0,
            "identical": True,
            "warm_identical": True,
            "krm_rc": 0,
        }

    rows = {
        "a": row(1_000, 0.1, 0.05, 0.01),
        "b": row(2_000, 0.1, 0.2, 0.01),
        "c": row(3_000, 0.1, 0.07, 0.01),
        "argo-workflows/manifests/quick-start/minimal": row(12_000_000, 5.0, 1.0, 0.2),
    }
    s = bench.summarise(rows)
    assert s["small_dirs"] == 3
    assert s["small_median_cold_ratio"] == 0.7
    assert s["small_median_nocache_ratio"] == 0.56
    assert s["large_dirs"] == 1
    assert s["large_cold_ratio"] == 0.2
    assert s["cold_total_ratio"] == round(1.32 / 5.3, 3)
    assert s["minimal"]["cold_s"] == 1.0
    lines = bench.report(s)
    assert "target median ratio, outputs < 100 kB, --no-cache <= 0.6: 0.56 met" in lines
    assert "target cold ratio, outputs > 1 MB <= 0.15: 0.2 MISSED" in lines
    assert any(line.endswith("target cold <= 1.5s met") for line in lines)
