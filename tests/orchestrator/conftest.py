"""Fixtures for the engine tests: write kustomization trees, run kubectl kustomize as oracle."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")


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
