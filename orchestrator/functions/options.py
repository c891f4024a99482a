"""Options, outcome and error types shared by the function runtimes."""

from __future__ import annotations

import os

from orchestrator.errors import KrmError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

DEFAULT_MAX_DOWNLOAD = 256 * 1024 * 1024  # one exec archive or script
DEFAULT_MAX_UNPACKED = 1024 * 1024 * 1024  # everything an archive unpacks to
DEFAULT_MAX_FILES = 10_000
DEFAULT_MAX_IMAGE_BYTES = 2 * 1024 * 1024 * 1024  # everything a container image unpacks to
DEFAULT_MAX_IMAGE_FILES = 50_000  # entries over all of an image's layers
DEFAULT_TIMEOUT = 300.0  # seconds a function may run


class FunctionError(KrmError):
    """A function could not be resolved, fetched, started, or it failed."""


class FnOptions:
    """What the user allowed on the command line, for every function of one build.

    A plain class rather than a dataclass: every ``krm build`` makes one, and importing
    ``dataclasses`` (with ``inspect``) would cost each run about a tenth of a small build.
    """

    _FIELDS = (
        "enable_exec",
        "enable_alpha_plugins",
        "network",
        "mounts",
        "env",
        "offline",
        "container_runtime",
        "results_dir",
        "cache_dir",
        "timeout",
        "max_download",
        "max_unpacked",
        "max_files",
        "max_image_bytes",
        "max_image_files",
        "runtime_preference",
        "catalog_keys",
        "base_keys",
        "strict_catalogs",
        "ca_file",
        "skip_schema",
        "lock_mode",
        "lock_file",
        "results_log",
        "as_current_user",
        "http_transport",
    )

    def __init__(
        self,
        enable_exec: bool = False,
        # --enable-alpha-plugins: run container and starlark functions that the repository
        # names itself (a runtime: field or the config.kubernetes.io/function annotation), as
        # kustomize asks.
        enable_alpha_plugins: bool = False,
        network: bool = False,
        # --mount values, docker's syntax: type=bind,src=...,dst=...[,rw]
        mounts: list[str] | None = None,
        # --env values: KEY=VALUE, or KEY to pass the caller's value through
        env: list[str] | None = None,
        offline: bool = False,
        container_runtime: str | None = None,
        results_dir: str | None = None,
        cache_dir: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_download: int = DEFAULT_MAX_DOWNLOAD,
        max_unpacked: int = DEFAULT_MAX_UNPACKED,
        max_files: int = DEFAULT_MAX_FILES,
        max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
        max_image_files: int = DEFAULT_MAX_IMAGE_FILES,
        # Which runtime to use when a catalog offers several (first available wins).
        runtime_preference: tuple[str, ...] = ("starlark", "exec", "container"),
        # --catalog-key files: public keys that must have signed every catalog without a key
        # of its own in the config file's trust section.
        catalog_keys: list[str] | None = None,
        # --base-key files: public keys one of which must have signed (cosign) every oci://
        # base and component.
        base_keys: list[str] | None = None,
        # --strict-catalogs: a function defined differently in a later trusted catalog is an
        # error.
        strict_catalogs: bool = False,
        # CA bundle for https downloads; None: the system's (or SSL_CERT_FILE, as curl and
        # git do).
        ca_file: str | None = None,
        # --skip-schema: do not check functionConfigs against their catalog schema (a warning
        # says so)
        skip_schema: bool = False,
        # krm.lock: "write" (--lock) records what the build used in lock_file, "check"
        # (--locked) uses exactly what lock_file pins; None: no lock file.
        lock_mode: str | None = None,
        lock_file: str | None = None,
        # Filled by the engine: one kpt results entry per function run of this build, in order.
        results_log: list[dict[str, Any]] | None = None,
        # --as-current-user: container functions run as the caller's uid:gid, not nobody.
        as_current_user: bool = False,
        # An httpx transport for every download (an embedding program's connection policy, e.g.
        # a registry that pins and checks each address it connects to); None: httpx's own.
        http_transport: Any = None,
    ) -> None:
        self.enable_exec = enable_exec
        self.enable_alpha_plugins = enable_alpha_plugins
        self.network = network
        self.mounts: list[str] = [] if mounts is None else mounts
        self.env: list[str] = [] if env is None else env
        self.offline = offline
        self.container_runtime = container_runtime
        self.results_dir = results_dir
        self.cache_dir = cache_dir
        self.timeout = timeout
        self.max_download = max_download
        self.max_unpacked = max_unpacked
        self.max_files = max_files
        self.max_image_bytes = max_image_bytes
        self.max_image_files = max_image_files
        self.runtime_preference = runtime_preference
        self.catalog_keys: list[str] = [] if catalog_keys is None else catalog_keys
        self.base_keys: list[str] = [] if base_keys is None else base_keys
        self.strict_catalogs = strict_catalogs
        self.ca_file = ca_file
        self.skip_schema = skip_schema
        self.lock_mode = lock_mode
        self.lock_file = lock_file
        self.results_log: list[dict[str, Any]] = [] if results_log is None else results_log
        self.as_current_user = as_current_user
        self.http_transport = http_transport

    def __repr__(self) -> str:
        shown = (f"{f}={getattr(self, f)!r}" for f in self._FIELDS if f != "results_log")
        return f"FnOptions({', '.join(shown)})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def cache_root(self) -> str:
        """$XDG_CACHE_HOME/krm (or ~/.cache/krm), unless cache_dir is set."""
        if self.cache_dir:
            return self.cache_dir
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "krm")

    def image_cache_root(self) -> str:
        """Where the builtin runtime keeps images: ``cache_root()/images``, except for root
        with neither cache_dir nor $XDG_CACHE_HOME: /var/cache/krm/images. Root's functions
        run as nobody, who cannot enter /root; an image there would be staged into a private
        mount before every run (tens of milliseconds), one under /var/cache is bound as it is.
        Where /var/cache/krm cannot be made, the usual place."""
        if self.cache_dir or os.environ.get("XDG_CACHE_HOME") or os.geteuid() != 0:
            return os.path.join(self.cache_root(), "images")
        shared = os.path.join(os.sep, "var", "cache", "krm", "images")
        try:
            os.makedirs(shared, mode=0o755, exist_ok=True)
        except OSError:
            return os.path.join(self.cache_root(), "images")
        return shared

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


class FnOutcome:
    """What one function run produced: the new resource list and its results."""

    def __init__(
        self,
        resources: list[Any],
        results: list[dict[str, Any]] | None = None,
        stderr: str = "",
    ) -> None:
        self.resources = resources
        self.results: list[dict[str, Any]] = [] if results is None else results
        self.stderr = stderr

    def __repr__(self) -> str:
        return (
            f"FnOutcome(resources={self.resources!r}, results={self.results!r}, "
            f"stderr={self.stderr!r})"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, FnOutcome)
        return (self.resources, self.results, self.stderr) == (
            other.resources,
            other.results,
            other.stderr,
        )

    __hash__ = None  # type: ignore[assignment]
