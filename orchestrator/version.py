"""``krm version``: krm's own version and the kustomize release whose output it reproduces."""

from __future__ import annotations

import os
import sys

# The kustomize release krm builds like (the oracle of the test suite, in kubectl).
KUSTOMIZE_VERSION = "v5.5.0"
DIST = "krm-catalog-registry"


def krm_version() -> str:
    """krm's version: the distribution's, which pyproject.toml takes from the package (so no
    lookup of installed metadata: importlib.metadata alone took ~40 ms of ``krm version``)."""
    from orchestrator import __version__

    return "v" + __version__


def info() -> dict[str, str]:
    """What ``krm version -o yaml|json`` prints."""
    machine = os.uname().machine.lower() if hasattr(os, "uname") else _machine()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    major, minor, micro = sys.version_info[:3]
    return {
        "version": krm_version(),
        "kustomizeVersion": KUSTOMIZE_VERSION,
        "pythonVersion": f"{major}.{minor}.{micro}",
        "platform": f"{sys.platform}/{arch}",
    }


def _machine() -> str:
    import platform  # where os.uname is missing (Windows)

    return platform.machine().lower()


def text(output: str | None = None) -> str:
    """One line (``krm v0.1.0 (kustomize v5.5.0)``), or the details as YAML or JSON."""
    details = info()
    if output == "json":
        import json

        return json.dumps(details, indent=2) + "\n"
    if output == "yaml":
        from orchestrator import yamlio

        return yamlio.dump(details)
    return f"krm {details['version']} (kustomize {details['kustomizeVersion']})\n"
