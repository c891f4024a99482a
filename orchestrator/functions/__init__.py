"""KRM functions and trusted catalogs (KEP-2906 + the KRM Functions Specification).

INTERFACE for the build (core calls exactly these; everything else is internal):

    from orchestrator.functions import (
        CatalogSet, FnOptions, FnOutcome, FunctionError, TrustConfig, run_function_config,
    )

    trust = TrustConfig.load(trusted=["https://reg/c/pub/cat/catalog.yaml"])  # + official catalog
    options = FnOptions(enable_exec=False, network=False, mounts=[], env=[], offline=False,
                        container_runtime=None, results_dir=None)
    # once per Kustomization/Component, with its ``catalogs:`` list (may be empty); raises
    # CatalogTrustError at once when a referenced catalog is not trusted:
    catalogs = CatalogSet.for_kustomization(k.get("catalogs") or [], kustomization_dir=dir,
                                            trust=trust, options=options)
    outcome = run_function_config(config, resources, role="transformer",  # or generator/validator
                                  kustomization_dir=dir, catalogs=catalogs, options=options)
    outcome.resources  # list[Resource]: the new resource list (generators: only what they
                       # generated, they get no input; validators: the input, unchanged)
    outcome.results    # list[dict]: the function's results, each with "function" added

    is_function_config(config) -> bool   # not ``apiVersion: builtin`` (cheap, no imports)

Convenience for build.py (orchestrator/functions/plugin.py): one ``FunctionsContext(options,
trusted)`` per build; ``ctx.catalogs(k.get("catalogs"), kdir, kfile)`` per kustomization;
``ctx.plugin(config, role=..., kustomization_dir=..., catalogs=...)`` returns an object with the
builtin plugins' ``generate()`` / ``transform(resmap)``. CLI flags and ``krm view catalog``:
orchestrator/functions/cli.py (``add_build_flags``, ``fn_options``, ``add_view_command``,
``run_view``).

The jail (``orchestrator.functions.jail``), for callers that run programs themselves (the
registry's trial runs): ``jail_check() -> str | None`` and ``jail_run(argv, stdin, rootfs=...,
env=..., cwd=..., user=..., network=..., mounts=[Mount(...)], limits=JailLimits(...)) ->
JailResult``; ``image_prepare(image, sha256, options=...)`` (``orchestrator.functions.image``)
pulls, verifies and unpacks a container image for it. See docs/container-runtime.md.

Resolution order (KEP-2906): a ``runtime:`` field in the config, then the
``config.kubernetes.io/function`` annotation, then the official catalog, the referenced catalogs
in order, the ``--trusted-catalog`` ones in order; first match on group, kind and version.
Errors are :class:`orchestrator.errors.KrmError` subclasses (``FunctionError``,
``CatalogTrustError``, ``FetchError``), one clear line each.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up

if TYPE_CHECKING:
    from typing import Any

    from orchestrator.functions.catalogs import CatalogSet, CatalogTrustError, TrustConfig
    from orchestrator.functions.fetch import FetchError
    from orchestrator.functions.image import image_prepare
    from orchestrator.functions.jail import (
        JailLimits,
        JailResult,
        JailUnavailable,
        Mount,
        jail_check,
        jail_run,
    )
    from orchestrator.functions.options import FnOptions, FnOutcome, FunctionError
    from orchestrator.functions.run import run_function_config

__all__ = [
    "CatalogSet",
    "CatalogTrustError",
    "FetchError",
    "FnOptions",
    "FnOutcome",
    "FunctionError",
    "JailLimits",
    "JailResult",
    "JailUnavailable",
    "Mount",
    "TrustConfig",
    "image_prepare",
    "is_function_config",
    "jail_check",
    "jail_run",
    "run_function_config",
]

# Lazy exports keep ``import orchestrator.functions`` cheap for the CLI path.
_EXPORTS = {
    "CatalogSet": "orchestrator.functions.catalogs",
    "CatalogTrustError": "orchestrator.functions.catalogs",
    "TrustConfig": "orchestrator.functions.catalogs",
    "FetchError": "orchestrator.functions.fetch",
    "FnOptions": "orchestrator.functions.options",
    "FnOutcome": "orchestrator.functions.options",
    "FunctionError": "orchestrator.functions.options",
    "run_function_config": "orchestrator.functions.run",
    "JailLimits": "orchestrator.functions.jail",
    "JailResult": "orchestrator.functions.jail",
    "JailUnavailable": "orchestrator.functions.jail",
    "Mount": "orchestrator.functions.jail",
    "jail_check": "orchestrator.functions.jail",
    "jail_run": "orchestrator.functions.jail",
    "image_prepare": "orchestrator.functions.image",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orchestrator.functions' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def is_function_config(config: dict[str, Any]) -> bool:
    """Whether a generators/transformers/validators entry is a KRM function, not a builtin."""
    return config.get("apiVersion") != "builtin"
