"""The build's side of functions: one context per build, one plugin object per function config.

``build.py`` keeps a :class:`FunctionsContext` for the whole build and asks it for a plugin with
the same ``generate()`` / ``transform(resmap)`` methods as the builtin plugins.
"""

from __future__ import annotations

import os
from typing import Any

from orchestrator.functions.catalogs import CatalogSet, TrustConfig
from orchestrator.functions.options import FnOptions
from orchestrator.functions.run import run_function_config
from orchestrator.resource import Resource


class FunctionsContext:
    """Options and trust for one build, and the catalog set of each kustomization."""

    def __init__(
        self,
        options: FnOptions | None = None,
        trusted: list[str] | None = None,
        results: list[dict[str, Any]] | None = None,
    ):
        self.options = options or FnOptions()
        if results is not None:  # results entries land in the caller's list (BuildResult)
            self.options.results_log = results
        self.trust = TrustConfig.load(list(trusted or []), keys=list(self.options.catalog_keys))
        self._sets: dict[tuple[str, tuple[str, ...]], CatalogSet] = {}

    def catalogs(self, refs: Any, kustomization_dir: str, source: str | None) -> CatalogSet:
        """The catalog set for a kustomization's ``catalogs:`` (trust checked here)."""
        key = (kustomization_dir, tuple(map(str, refs or [])))
        found = self._sets.get(key)
        if found is None:
            found = CatalogSet.for_kustomization(
                refs or [],
                kustomization_dir=kustomization_dir,
                trust=self.trust,
                options=self.options,
                source=source,
            )
            self._sets[key] = found
        return found

    def plugin(
        self,
        config: dict[str, Any],
        *,
        role: str,
        kustomization_dir: str,
        catalogs: CatalogSet,
        openapi: dict[str, Any] | None = None,
        source: str | None = None,
    ) -> FunctionPlugin:
        """A plugin object that runs config as a KRM function (source: its kustomization file)."""
        return FunctionPlugin(
            config,
            role=role,
            kustomization_dir=kustomization_dir,
            catalogs=catalogs,
            options=self.options,
            openapi=openapi,
            source=source,
        )

    @property
    def results(self) -> list[dict[str, Any]]:
        """Every function run's results entry so far (kpt's results.yaml items)."""
        return list(self.options.results_log)


class FunctionPlugin:
    """A function config with the builtin plugins' interface."""

    def __init__(
        self,
        config: dict[str, Any],
        *,
        role: str,
        kustomization_dir: str,
        catalogs: CatalogSet,
        options: FnOptions,
        openapi: dict[str, Any] | None = None,
        source: str | None = None,
    ):
        self.config = config
        self.source = source
        self.role = role
        self.kustomization_dir = kustomization_dir
        self.catalogs = catalogs
        self.options = options
        self.openapi = openapi

    def _openapi(self) -> dict[str, Any] | None:
        """The schema for ``ctx.open_api()``: a kustomization's ``openapi: {path}`` is read."""
        spec = self.openapi
        if isinstance(spec, dict) and spec and set(spec) <= {"path", "version"}:
            path = spec.get("path")
            if not path:
                return None  # a built-in version: no document to hand out
            from orchestrator import yamlio
            from orchestrator.functions.fetch import read_limited

            full = os.path.join(self.kustomization_dir, str(path))
            doc = yamlio.load(read_limited(full, 64 * 1024 * 1024), source=full)
            return doc if isinstance(doc, dict) else None
        return spec

    def _run(self, resources: list[Resource]) -> list[Resource]:
        return run_function_config(
            self.config,
            resources,
            role=self.role,
            kustomization_dir=self.kustomization_dir,
            catalogs=self.catalogs,
            options=self.options,
            openapi=self._openapi(),
            source=self.source,
        ).resources

    def generate(self) -> list[Resource]:
        """Run as a generator: the resources it made."""
        return self._run([])

    def transform(self, resmap: Any) -> None:
        """Run as a transformer or validator over the ResMap (replaced in place)."""
        out = self._run(resmap.resources())
        if self.role != "validator":
            resmap.set_list(out)
