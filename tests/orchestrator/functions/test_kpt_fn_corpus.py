"""The exec cases of tests/conformance/kpt-fn that need no image, run through the engine.

Each case's expected resources are its ``resources.yaml`` with the case's ``.expected/diff.patch``
applied (by ``git apply``, the upstream runner's own check); the engine runs the same exec
function on the same resources. ``render__exec-without-permissions`` expects the run to be
refused without ``--allow-exec``: here, without ``--enable-exec``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator import yamlio
from orchestrator.functions import FunctionError, run_function_config
from orchestrator.resource import Resource

CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "kpt-fn" / "cases"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="kpt-fn corpus not present")

# case -> the exec command line its Kptfile / config.yaml / kpt invocation names
CASES = {
    "eval__exec-function": "./function.sh",
    "eval__exec-function-stderr": "./function.sh",
    "eval__save-fn__exec": "./function.sh",
    "render__exec-function-stderr": "./function.sh",
    "render__exec-function-with-args": "sed -e 's/foo/bar/'",
}


def _copy(case: str, tmp_path: Path) -> Path:
    dst = tmp_path / case
    shutil.copytree(CORPUS / case, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return dst


def _expected(pkg: Path) -> list[dict]:
    subprocess.run(["git", "init", "-q"], cwd=pkg, check=True)
    subprocess.run(
        ["git", "apply", "--include=resources.yaml", ".expected/diff.patch"], cwd=pkg, check=True
    )
    return yamlio.load_all((pkg / "resources.yaml").read_text())


def _config(command: str) -> dict:
    argv = shlex.split(command)
    spec = {"path": argv[0], "args": argv[1:]}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "function-input"},
        "runtime": {"exec": spec},
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_exec_case(case, tmp_path, options):
    pkg = _copy(case, tmp_path)
    resources = [
        Resource(obj=d, source=str(pkg / "resources.yaml"))
        for d in yamlio.load_all((pkg / "resources.yaml").read_text())
    ]
    expected = _expected(pkg)
    out = run_function_config(
        _config(CASES[case]),
        resources,
        role="transformer",
        kustomization_dir=str(pkg),
        catalogs=None,
        options=options(enable_exec=True),
    )
    assert [r.obj for r in out.resources] == expected
    if "stderr" in case:
        assert "Hello world" in out.stderr


def test_exec_without_permission_is_refused(tmp_path, options):
    pkg = _copy("render__exec-without-permissions", tmp_path)
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _config("sed -e 's/foo/bar/'"),
            [],
            role="transformer",
            kustomization_dir=str(pkg),
            catalogs=None,
            options=options(),
        )
    assert str(exc.value) == (
        "function v1/ConfigMap 'function-input': running exec.path sed needs --enable-exec"
    )
