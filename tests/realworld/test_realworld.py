"""scripts/realworld_compare.py: krm build against kubectl kustomize over fetched repositories.

The comparison over real repositories runs only where they have been fetched: set
``KRM_REALWORLD_DIR`` to a folder holding one sub-folder per repository (e.g. kubeflow
manifests, argo-cd, cluster-api). The script itself is checked here on a small tree.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.scripts import load_script

rc = load_script("scripts/realworld_compare.py", "realworld_compare")

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None and not os.environ.get("CI"), reason="kubectl (the oracle) is not installed"
)


def test_finds_kustomization_dirs_and_picks_the_restrictor(tmp_path: Path) -> None:
    for d in ("a", "a/b", "c/.git/x", "repo/test/e2e/data/t"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "kustomization.yaml").write_text("resources: []\n")
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "Kustomization").write_text("resources: []\n")
    found = [p.relative_to(tmp_path).as_posix() for p in rc.kustomization_dirs(tmp_path)]
    assert found == ["a", "a/b", "k", "repo/test/e2e/data/t"]
    t = tmp_path / "repo" / "test" / "e2e" / "data" / "t"
    assert rc.restrictor_for(t.relative_to(tmp_path), rc.DEFAULT_NONE_GLOBS) == rc.NONE
    assert rc.restrictor_for(Path("repo/a"), rc.DEFAULT_NONE_GLOBS) == rc.ROOT_ONLY


@needs_kubectl
def test_counts_identical_and_failing_dirs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "ok").mkdir(parents=True)
    (repo / "ok" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (repo / "ok" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    (repo / "bad").mkdir()
    (repo / "bad" / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    outcomes = rc.compare_trees([("repo", repo)], kubectl=KUBECTL or "kubectl")
    assert {o.path.name: o.status for o in outcomes} == {"ok": "identical", "bad": "both-fail"}
    assert rc.summary(outcomes)["repo"] == {
        "found": 2,
        "covered": 1,
        "identical": 1,
        "different": 0,
        "krm-error": 0,
        "krm-only-builds": 0,
        "both-fail": 1,
    }


@needs_kubectl
@pytest.mark.parametrize("no_cache", [False, True])
def test_no_cache_builds_leave_the_build_cache_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_cache: bool
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (repo / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    outcomes = rc.compare_trees([("repo", repo)], kubectl=KUBECTL or "kubectl", no_cache=no_cache)
    assert [o.status for o in outcomes] == ["identical"]
    builds = tmp_path / "cache" / "krm" / "builds"
    assert (builds.is_dir() and any(builds.iterdir())) is not no_cache


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("KRM_REALWORLD_DIR"),
    reason="set KRM_REALWORLD_DIR to a folder of fetched repositories (one per sub-folder)",
)
def test_every_directory_kustomize_builds_is_byte_identical() -> None:
    root = Path(os.environ["KRM_REALWORLD_DIR"])
    repos = [(d.name, d) for d in sorted(root.iterdir()) if d.is_dir()]
    outcomes = rc.compare_trees(repos, kubectl=KUBECTL or "kubectl", jobs=2)
    bad = [f"{o.status}: {o.path}" for o in outcomes if o.status not in ("identical", "both-fail")]
    assert any(o.status == "identical" for o in outcomes), "no directory was covered"
    assert not bad, "\n".join(bad)
