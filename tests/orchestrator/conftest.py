"""Fixtures for the engine tests: write kustomization trees, run kubectl kustomize as oracle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
# The checkout the engine is imported from (a fresh interpreter gets it on its path).
ENGINE_ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def tree(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write ``{relative path: text}`` under a temp dir (text is dedented); return the dir."""

    def write(files: dict[str, str]) -> Path:
        for rel, text in files.items():
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(text).lstrip("\n"))
        return tmp_path

    return write


def kubectl_kustomize(path: Path | str, *flags: str) -> subprocess.CompletedProcess[bytes]:
    """Run the oracle, kustomize v5.5.0 as embedded in kubectl."""
    if KUBECTL is None:
        if os.environ.get("CI"):
            # In CI a missing oracle must not turn the differential tests into green skips.
            pytest.fail("kubectl (the kustomize oracle) is not installed")
        pytest.skip("kubectl (the kustomize oracle) is not installed")
    return subprocess.run([KUBECTL, "kustomize", str(path), *flags], capture_output=True)


@pytest.fixture
def oracle() -> Callable[..., subprocess.CompletedProcess[bytes]]:
    """``oracle(path, *flags)`` runs ``kubectl kustomize``."""
    return kubectl_kustomize


def run_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c script args`` in a fresh interpreter that sees only this checkout (no site
    customisation of the test process): for what a module imports or does at start-up."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": ENGINE_ROOT},
    )
