"""Options, outcome and error types shared by the function runtimes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from orchestrator.errors import KrmError

DEFAULT_MAX_DOWNLOAD = 256 * 1024 * 1024  # one exec archive or script
DEFAULT_MAX_UNPACKED = 1024 * 1024 * 1024  # everything an archive unpacks to
DEFAULT_MAX_FILES = 10_000
DEFAULT_TIMEOUT = 300.0  # seconds a function may run


class FunctionError(KrmError):
    """A function could not be resolved, fetched, started, or it failed."""


@dataclass
class FnOptions:
    """What the user allowed on the command line, for every function of one build."""

    enable_exec: bool = False
    # --enable-alpha-plugins: run container functions whose image the repository names itself
    # (a runtime: field or the config.kubernetes.io/function annotation), as kustomize asks.
    enable_alpha_plugins: bool = False
    network: bool = False
    # --mount values, docker's syntax: type=bind,src=...,dst=...[,rw]
    mounts: list[str] = field(default_factory=list)
    # --env values: KEY=VALUE, or KEY to pass the caller's value through
    env: list[str] = field(default_factory=list)
    offline: bool = False
    container_runtime: str | None = None
    results_dir: str | None = None
    cache_dir: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_download: int = DEFAULT_MAX_DOWNLOAD
    max_unpacked: int = DEFAULT_MAX_UNPACKED
    max_files: int = DEFAULT_MAX_FILES
    # Which runtime to use when a catalog offers several (first available wins).
    runtime_preference: tuple[str, ...] = ("starlark", "exec", "container")
    # --catalog-key files: public keys that must have signed every catalog without a key of its
    # own in the config file's trust section.
    catalog_keys: list[str] = field(default_factory=list)
    # --strict-catalogs: a function defined differently in a later trusted catalog is an error.
    strict_catalogs: bool = False
    # CA bundle for https downloads; None: the system's (or SSL_CERT_FILE, as curl and git do).
    ca_file: str | None = None
    # --skip-schema: do not check functionConfigs against their catalog schema (a warning says so)
    skip_schema: bool = False
    # Filled by the engine: one kpt results entry per function run of this build, in order.
    results_log: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def cache_root(self) -> str:
        """$XDG_CACHE_HOME/krm (or ~/.cache/krm), unless cache_dir is set."""
        if self.cache_dir:
            return self.cache_dir
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "krm")

    def env_pairs(self) -> dict[str, str]:
        """--env entries as a mapping (KEY alone takes the caller's value, if any)."""
        out: dict[str, str] = {}
        for entry in self.env:
            key, eq, value = entry.partition("=")
            if not key:
                raise FunctionError(f"invalid --env {entry!r}: expected KEY=VALUE or KEY")
            if eq:
                out[key] = value
            elif key in os.environ:
                out[key] = os.environ[key]
        return out


@dataclass
class FnOutcome:
    """What one function run produced: the new resource list and its results."""

    resources: list[Any]
    results: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
