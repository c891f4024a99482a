"""Hostile starlark scripts through ``krm build``: a script that builds a value nested far
deeper than any limit crashes starlark-rust (it walks values recursively on the native stack).
The run happens in a forked child, so the crash is the function's one-line error, exit 1, and an
existing ``-o`` output file keeps its content; what the child printed is never half-written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.yamllimits import MAX_DEPTH

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "previous good output\n"
FUNCTION = "function example.com/v1/Fn 'f' (starlark fn.star, from annotation)"
FN_CONFIG = (
    "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n"
    "    config.kubernetes.io/function: |\n      starlark:\n        path: fn.star\n"
)


def _build(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    app = tmp_path / "app"
    app.mkdir()
    (app / "r.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    (app / "fn.yaml").write_text(FN_CONFIG)
    (app / "fn.star").write_text(script)
    (app / "kustomization.yaml").write_text("resources:\n- r.yaml\ntransformers:\n- fn.yaml\n")
    (tmp_path / "out.yaml").write_text(PREVIOUS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "build",
            "app",
            "-o",
            "out.yaml",
            "--enable-alpha-plugins",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def _deep(levels: int, opener: str, tail: str) -> str:
    wrap = "v = [v]" if opener == "[" else 'v = {"a": v}'
    return f"v = []\nfor i in range({levels}):\n    {wrap}\n{tail}"


# Kept out of the output (the crash comes from the collector), or put into it.
KEPT = 'ctx.resource_list["items"][0]["data"] = {"built": "yes"}\n'
OUTPUT = 'ctx.resource_list["items"][0]["data"] = {"deep": v}\n'


@pytest.mark.parametrize("opener", ["[", "{"])
@pytest.mark.parametrize("tail", [KEPT, OUTPUT], ids=["kept", "output"])
def test_a_value_built_100000_deep_is_the_functions_error(
    tmp_path: Path, opener: str, tail: str
) -> None:
    proc = _build(tmp_path, _deep(100_000, opener, tail))
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        1,
        f"Error: {FUNCTION} crashed the starlark interpreter (SIGSEGV): starlark-rust walks "
        "values recursively, so a value nested tens of thousands of levels deep (a list or "
        "dict built inside itself in a loop) does this\n",
        "",
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS


def test_a_value_built_20000_deep_in_the_output_is_over_the_depth_limit(tmp_path: Path) -> None:
    proc = _build(tmp_path, _deep(20_000, "[", OUTPUT))
    assert (proc.returncode, proc.stderr) == (
        1,
        f"Error: {FUNCTION}: output nested deeper than {MAX_DEPTH} levels in a resource\n",
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS


def test_a_script_that_nests_within_the_limit_builds(tmp_path: Path) -> None:
    proc = _build(tmp_path, _deep(50, "[", OUTPUT))
    assert proc.returncode == 0, proc.stderr
    built = yaml.safe_load((tmp_path / "out.yaml").read_text())
    depth, value = 0, built["data"]["deep"]
    while value:
        depth, value = depth + 1, value[0]
    assert (built["metadata"]["name"], depth) == ("x", 50)
