"""Which runtime runs a function config, in KEP-2906's order.

1. a ``runtime:`` field in the config (``container.image``, ``exec.path``, ``starlark.path|url``);
2. the ``config.kubernetes.io/function`` annotation (or the older ``config.k8s.io/function``);
3. the catalogs, in :class:`CatalogSet` order, first match on group, kind and version.

Who may run code (docs/guide/developer.md, "Which functions run"): a runtime the repository
names itself (1 and 2) is code that anyone who wrote a base or a remote resource can add to a
build, so it never runs without the user's opt-in, as in kustomize: ``--enable-exec`` for an
``exec.path``, ``--enable-alpha-plugins`` for a ``container.image`` and for a ``starlark.path``
or ``starlark.url`` (in-process starlark has no host access, but it still computes the output
and reads what the build hands it). A runtime resolved through a catalog (3) needs no flag:
every catalog searched is the configured official one or one the user named with
``--trusted-catalog``, and that trust is the opt-in. When a catalog
version offers several runtimes, ``FnOptions.runtime_preference`` picks (starlark, then exec
for this platform, then container): in-process and verified beats a container engine this
machine may not have.
"""

from __future__ import annotations

import platform as _platform
import sys
from dataclasses import dataclass
from typing import Any

from orchestrator.functions.catalogs import CatalogSet, LoadedCatalog, Match
from orchestrator.functions.options import FnOptions, FunctionError
from orchestrator.functions.revocations import refuse_revoked

FUNCTION_ANNOTATIONS = ("config.kubernetes.io/function", "config.k8s.io/function")
KINDS = ("container", "exec", "starlark")

_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def host_platform() -> tuple[str, str]:
    """(os, arch) in Go's names, as catalogs write them."""
    os_name = {"linux": "linux", "darwin": "darwin", "win32": "windows"}.get(
        sys.platform, sys.platform
    )
    machine = _platform.machine().lower()
    return os_name, _ARCH.get(machine, machine)


@dataclass
class Resolved:
    """A runtime chosen for one function config."""

    kind: str  # container | exec | starlark
    spec: dict[str, Any]
    origin: str  # "runtime field", "annotation", or "catalog <ref>"
    catalog: LoadedCatalog | None = None
    require_network: bool = False
    require_mount: bool = False

    @property
    def explicit(self) -> bool:
        """Whether the user named the runtime (not a catalog)."""
        return self.catalog is None


def describe(config: dict[str, Any]) -> str:
    """How a function config is named in messages: apiVersion/kind 'name'."""
    md = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    name = (md or {}).get("name")
    text = f"{config.get('apiVersion')}/{config.get('kind')}"
    return f"function {text} '{name}'" if name else f"function {text}"


def _explicit(config: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    runtime = config.get("runtime")
    if runtime is not None:
        if not isinstance(runtime, dict) or not any(k in runtime for k in KINDS):
            raise FunctionError(f"{describe(config)}: runtime must set container, exec or starlark")
        return runtime, "runtime field"
    md = config.get("metadata")
    annotations = md.get("annotations") if isinstance(md, dict) else None
    if isinstance(annotations, dict):
        for key in FUNCTION_ANNOTATIONS:
            if key in annotations:
                from orchestrator import yamlio

                value = yamlio.load(str(annotations[key]), source=f"annotation {key}")
                if not isinstance(value, dict) or not any(k in value for k in KINDS):
                    raise FunctionError(
                        f"{describe(config)}: annotation {key} must set container, exec or starlark"
                    )
                return value, "annotation"
    return None


def _from_explicit(
    runtime: dict[str, Any], origin: str, config: dict[str, Any], options: FnOptions
) -> Resolved:
    for kind in options.runtime_preference:
        spec = runtime.get(kind)
        if not isinstance(spec, dict):
            continue
        if kind == "exec":
            if not spec.get("path"):
                raise FunctionError(f"{describe(config)}: exec needs a path")
            if not options.enable_exec:
                raise FunctionError(
                    f"{describe(config)}: running exec.path {spec['path']} needs --enable-exec"
                )
        if kind == "container":
            if not spec.get("image"):
                raise FunctionError(f"{describe(config)}: container needs an image")
            if not options.enable_alpha_plugins:
                raise FunctionError(
                    f"{describe(config)}: external plugins disabled; unable to run container "
                    f"image {spec['image']} named by its {origin} without "
                    "--enable-alpha-plugins (or resolve it from a --trusted-catalog)"
                )
        if kind == "starlark":
            script = spec.get("path") or spec.get("url")
            if not script:
                raise FunctionError(f"{describe(config)}: starlark needs a path or url")
            if not options.enable_alpha_plugins:
                raise FunctionError(
                    f"{describe(config)}: external plugins disabled; unable to run starlark "
                    f"{script} named by its {origin} without --enable-alpha-plugins (or "
                    "resolve it from a --trusted-catalog)"
                )
        return Resolved(
            kind,
            spec,
            origin,
            require_network=bool(spec.get("network")) if kind == "container" else False,
            require_mount=False,
        )
    raise FunctionError(f"{describe(config)}: {origin} names no usable runtime")


def resolve(config: dict[str, Any], catalogs: CatalogSet | None, options: FnOptions) -> Resolved:
    """The runtime for a function config; raises FunctionError naming what was searched."""
    explicit = _explicit(config)
    if explicit is not None:
        return _from_explicit(explicit[0], explicit[1], config, options)
    api_version = config.get("apiVersion")
    kind = config.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        raise FunctionError(f"{describe(config)}: a function config needs apiVersion and kind")
    group, _, version = api_version.rpartition("/")
    searched = [str(r) for r in catalogs.refs] if catalogs is not None else []
    match = catalogs.find(group, kind, version) if catalogs is not None else None
    if match is None:
        where = ", ".join(searched) if searched else "none (add catalogs: or --trusted-catalog)"
        raise FunctionError(
            f"no runtime for {api_version} {kind}: no catalog defines it; catalogs searched: "
            f"{where}"
        )
    runtime = match.version.runtime
    origin = f"catalog {match.catalog.ref}"
    os_name, arch = host_platform()
    for rkind in options.runtime_preference:
        spec = runtime.get(rkind)
        if spec is None:
            continue
        if rkind == "exec":
            spec = _exec_platform(spec, (os_name, arch))
            if spec is None:
                continue
        _admit(match, api_version, kind, rkind, spec, options)
        return Resolved(
            rkind,
            spec,
            origin,
            catalog=match.catalog,
            require_network=match.version.requires_network,
            require_mount=match.version.requires_storage_mount,
        )
    offered = ", ".join(sorted(runtime)) or "none"
    raise FunctionError(
        f"{api_version} {kind} in {origin} has no runtime usable here ({os_name}/{arch}); "
        f"it offers: {offered}"
    )


def pin_legacy(
    config: dict[str, Any], path: str, catalogs: CatalogSet | None, options: FnOptions
) -> str | None:
    """A legacy exec plugin (``path``) checked against the catalogs: where one defines its
    group, kind and version, the plugin runs only if that definition pins this binary by
    sha256 for this platform (and does not revoke it). Returns the catalog that pinned it, or
    None when no catalog defines the function (the plugin runs as kustomize runs it)."""
    api_version = str(config.get("apiVersion") or "")
    kind = str(config.get("kind") or "")
    group, _, version = api_version.rpartition("/")
    match = catalogs.find(group, kind, version) if catalogs is not None else None
    if match is None:
        return None
    ref = match.catalog.ref
    exec_spec = match.version.runtime.get("exec")
    if not exec_spec:
        offered = ", ".join(sorted(match.version.runtime)) or "none"
        raise FunctionError(
            f"legacy plugin {path} for {api_version} {kind}: catalog {ref} defines that "
            f"function with another runtime ({offered}) and pins no binary for it; it is not "
            "run (remove the plugin, or pin it with an exec runtime in the catalog)"
        )
    os_name, arch = host_platform()
    spec = _exec_platform(exec_spec, (os_name, arch))
    if spec is None:
        pinned = ", ".join(f"{p['os']}/{p['arch']}" for p in exec_spec.get("platforms", []))
        raise FunctionError(
            f"legacy plugin {path} for {api_version} {kind}: catalog {ref} pins it for "
            f"{pinned or 'no platform'}, not {os_name}/{arch}; it is not run"
        )
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != spec["sha256"]:
        raise FunctionError(
            f"legacy plugin {path} for {api_version} {kind} has sha256 {digest.hexdigest()}; "
            f"catalog {ref} pins sha256 {spec['sha256']}: it is not run"
        )
    _admit(match, api_version, kind, "exec", spec, options)
    return str(ref)


def _exec_platform(spec: dict[str, Any], os_arch: tuple[str, str]) -> dict[str, Any] | None:
    """The exec runtime's platform entry for this (os, arch), if the catalog lists one."""
    platforms: list[dict[str, Any]] = spec.get("platforms", [])
    for platform in platforms:
        if (platform["os"], platform["arch"]) == os_arch:
            return platform
    return None


def _admit(
    match: Match,
    api_version: str,
    kind: str,
    runtime: str,
    spec: dict[str, Any],
    options: FnOptions,
) -> None:
    """A catalog function's chosen runtime: refused when revoked; --lock notes it, --locked
    holds it to the lock file."""
    group, _, version = api_version.rpartition("/")
    refuse_revoked(
        match.catalog.revocations,
        catalog=str(match.catalog.ref),
        group=group,
        kind=kind,
        version=version,
        spec=spec,
    )
    if options.lock_mode:
        from orchestrator.functions import lockfile

        lockfile.record_function(
            options,
            catalog=match.catalog,
            api_version=api_version,
            kind=kind,
            runtime=runtime,
            spec=spec,
        )
