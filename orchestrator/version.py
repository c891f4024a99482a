"""``krm version``: krm's own version and the kustomize release whose output it reproduces."""

from __future__ import annotations

import json
import platform
import sys

# The kustomize release krm builds like (the oracle of the test suite, in kubectl).
KUSTOMIZE_VERSION = "v5.5.0"
DIST = "krm-catalog-registry"


def krm_version() -> str:
    """The installed distribution's version, or ``(devel)`` when running from a source tree."""
    from importlib import metadata

    try:
        return "v" + metadata.version(DIST)
    except metadata.PackageNotFoundError:
        return "(devel)"


def info() -> dict[str, str]:
    """What ``krm version -o yaml|json`` prints."""
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return {
        "version": krm_version(),
        "kustomizeVersion": KUSTOMIZE_VERSION,
        "pythonVersion": platform.python_version(),
        "platform": f"{sys.platform}/{arch}",
    }


def text(output: str | None = None) -> str:
    """One line (``krm v0.1.0 (kustomize v5.5.0)``), or the details as YAML or JSON."""
    details = info()
    if output == "json":
        return json.dumps(details, indent=2) + "\n"
    if output == "yaml":
        from orchestrator import yamlio

        return yamlio.dump(details)
    return f"krm {details['version']} (kustomize {details['kustomizeVersion']})\n"
