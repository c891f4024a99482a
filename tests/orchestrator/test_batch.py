"""``krm build --batch ROOT -o OUT``: every kustomization under ROOT, built in one process with
what the builds share read once, each output the bytes a single ``krm build`` of that directory
prints (its error line when it fails)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator import batch, cli
from orchestrator.build import BuildOptions, build
from orchestrator.errors import KrmError
from tests.orchestrator.conftest import kubectl_kustomize

CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "kustomize" / "cases"

BASE = {
    "base/kustomization.yaml": """
        bases: []
        resources:
        - deploy.yaml
        configMapGenerator:
        - name: settings
          literals: [mode=base]
        commonLabels:
          app: web
    """,
    "base/deploy.yaml": """
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: web
        spec:
          template:
            spec:
              containers:
              - name: web
                image: nginx:1.25
                envFrom:
                - configMapRef:
                    name: settings
    """,
    "dev/kustomization.yaml": """
        resources: [../base]
        namePrefix: dev-
        images:
        - name: nginx
          newTag: "1.26"
    """,
    "prod/kustomization.yaml": """
        resources: [../base]
        namePrefix: prod-
        namespace: prod
        configMapGenerator:
        - name: settings
          behavior: merge
          literals: [mode=prod]
    """,
    "prod-eu/kustomization.yaml": """
        resources: [../prod]
        nameSuffix: -eu
    """,
    "broken/kustomization.yaml": """
        resources: [missing.yaml]
    """,
}


def _single(path: Path | str) -> tuple[str, str]:
    """(file name, text) a single build of ``path`` gives: build.yaml or error.txt."""
    try:
        return batch.BUILD_FILE, build(str(path), BuildOptions()).to_yaml()
    except (KrmError, OSError, RecursionError) as exc:
        return batch.ERROR_FILE, batch.error_line(exc, str(path))


def _outputs(out: Path) -> dict[str, tuple[str, str]]:
    found = {}
    for dirpath, _, files in os.walk(out):
        for name in files:
            if name != batch.WARNINGS_FILE:
                rel = os.path.relpath(dirpath, out)
                assert rel not in found, f"both build.yaml and error.txt in {rel}"
                found[rel] = (name, (Path(dirpath) / name).read_text(encoding="utf-8"))
    return found


def test_each_output_is_what_a_single_build_prints(tree, tmp_path: Path) -> None:
    root = tree(BASE)
    out = tmp_path / "out"
    result = batch.build_all(str(root), str(out), BuildOptions())
    assert result.built == ["base", "dev", "prod", "prod-eu"]
    assert result.failed == ["broken"]
    outputs = _outputs(out)
    assert sorted(outputs) == ["base", "broken", "dev", "prod", "prod-eu"]
    for rel, got in outputs.items():
        assert got == _single(root / rel), rel
    assert outputs["broken"][1] == (
        f"Error: {root / 'broken' / 'kustomization.yaml'}: resource 'missing.yaml' does not "
        "exist (neither a file nor a kustomization directory)\n"
    )
    assert "name: prod-settings-" in outputs["prod-eu"][1]
    assert "mode: prod" in outputs["prod-eu"][1] and "mode: base" not in outputs["prod-eu"][1]
    # base was accumulated once and handed to dev and prod; prod once and handed to prod-eu.
    assert result.share.hits["bases"] == 3
    # The base's deprecation warnings come out with every build that uses it.
    for rel in ("base", "dev", "prod", "prod-eu"):
        warnings = (out / rel / batch.WARNINGS_FILE).read_text()
        assert "# Warning: 'bases' is deprecated." in warnings, rel
        assert "# Warning: 'commonLabels' is deprecated." in warnings, rel


def test_outputs_match_kustomize(tree, tmp_path: Path) -> None:
    root = tree(BASE)
    out = tmp_path / "out"
    batch.build_all(str(root), str(out), BuildOptions())
    for rel in ("base", "dev", "prod", "prod-eu"):
        kus = kubectl_kustomize(root / rel)
        assert kus.returncode == 0, kus.stderr
        assert (out / rel / batch.BUILD_FILE).read_bytes() == kus.stdout, rel
    assert kubectl_kustomize(root / "broken").returncode != 0


def test_a_shared_base_is_not_used_where_its_directories_close_a_cycle(tree, tmp_path) -> None:
    # c builds alone (c -> x), and is shared; under x/overlay the same accumulation would reach
    # x, which contains x/overlay: the cycle error a single build of x/overlay reports.
    root = tree(
        {
            "c/kustomization.yaml": "resources: [../x]\n",
            "x/kustomization.yaml": "resources: [cm.yaml]\n",
            "x/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
            "x/overlay/kustomization.yaml": "resources: [../../c]\n",
        }
    )
    out = tmp_path / "out"
    result = batch.build_all(str(root), str(out), BuildOptions())
    assert result.built == ["c", "x"]
    assert result.failed == ["x/overlay"]
    error = (out / "x" / "overlay" / batch.ERROR_FILE).read_text()
    assert error == _single(root / "x" / "overlay")[1]
    assert "cycle detected" in error
    assert kubectl_kustomize(root / "x" / "overlay").returncode != 0


def test_the_conformance_corpus_batch_equals_single_builds_and_kustomize(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = batch.build_all(str(CONFORMANCE), str(out), BuildOptions())
    outputs = _outputs(out)
    dirs = batch.find_dirs(str(CONFORMANCE))
    assert len(dirs) > 400 and sorted(outputs) == dirs
    assert result.share.hits["bases"] > 0
    for rel in dirs:
        assert outputs[rel] == _single(CONFORMANCE / rel), rel
    # Where a case's expected output came from kustomize with no flags, the batch has it too.
    checked = 0
    for case in sorted(CONFORMANCE.iterdir()):
        spec = yaml.safe_load((case / "case.yaml").read_text())
        if spec["flags"] or spec["expect"] != "output":
            continue
        rel = os.path.normpath(os.path.join(case.name, spec["build"]))
        expected = (case / "expected.yaml").read_text(encoding="utf-8")
        assert outputs[rel] == (batch.BUILD_FILE, expected), rel
        checked += 1
    assert checked > 150


def test_cli_exit_status_summary_and_stale_files(tree, tmp_path: Path) -> None:
    root = tree(BASE)
    out = tmp_path / "out"
    (out / "broken").mkdir(parents=True)
    (out / "broken" / batch.BUILD_FILE).write_text("stale\n")
    (out / "dev").mkdir()
    (out / "dev" / batch.ERROR_FILE).write_text("stale\n")
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "--batch", str(root), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr == (
        f"built 4 of 5 directories into {out}; 1 failed (their error.txt says why):\n  broken\n"
    )
    assert sorted(os.listdir(out / "broken")) == [batch.ERROR_FILE]
    assert sorted(os.listdir(out / "dev")) == [batch.BUILD_FILE, batch.WARNINGS_FILE]
    (root / "broken" / "kustomization.yaml").unlink()
    (root / "broken" / "missing.yaml").write_text("")
    assert cli.main(["build", "--batch", str(root), "-o", str(out)]) == 0


def test_cli_batch_needs_an_output_directory_and_a_root(tree, tmp_path: Path, capsys) -> None:
    root = tree(BASE)
    assert cli.main(["build", "--batch", str(root)]) == 2
    assert capsys.readouterr().err == "Error: --batch needs -o OUTDIR\n"
    assert cli.main(["build", "--batch", str(root / "nowhere"), "-o", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == f"Error: {root / 'nowhere'}: directory does not exist\n"
    assert cli.main(["build", "--batch", str(root / "dev/kustomization.yaml"), "-o", "o"]) == 1
    assert (
        capsys.readouterr().err
        == f"Error: {root / 'dev/kustomization.yaml'}: must be a directory\n"
    )
    assert not (tmp_path / "o").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["build", "--batch", str(empty), "-o", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == f"Error: no kustomization found under '{empty}'\n"


def test_an_output_directory_inside_the_root_is_not_searched(tree) -> None:
    root = tree(BASE)
    out = root / "out"
    batch.build_all(str(root), str(out), BuildOptions())
    (out / "extra").mkdir()
    (out / "extra" / "kustomization.yaml").write_text("resources: []\n")
    assert "out/extra" not in batch.find_dirs(str(root), skip=str(out))
    assert batch.find_dirs(str(root), skip=str(out)) == ["base", "broken", "dev", "prod", "prod-eu"]


@pytest.mark.parametrize("name", ["kustomization.yml", "Kustomization"])
def test_every_kustomization_file_name_counts(tmp_path: Path, name: str) -> None:
    (tmp_path / "a" / ".git" / "b").mkdir(parents=True)
    (tmp_path / "a" / name).write_text("resources: []\n")
    (tmp_path / "a" / ".git" / "b" / name).write_text("resources: []\n")
    assert batch.find_dirs(str(tmp_path)) == ["a"]


def test_a_single_build_never_imports_the_share(tree) -> None:
    root = tree(BASE)
    code = (
        "import sys\nfrom orchestrator.build import build\n"
        f"build({str(root / 'prod-eu')!r})\nprint('orchestrator.share' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert (p.returncode, p.stdout) == (0, "False\n"), p.stderr
