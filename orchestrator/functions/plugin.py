"""The build's side of functions: one context per build, one plugin object per function config.

``build.py`` keeps a :class:`FunctionsContext` for the whole build and asks it for a plugin with
the same ``generate()`` / ``transform(resmap)`` methods as the builtin plugins. Every file a
function config names for the engine to read (a starlark ``path:``, the kustomization's
``openapi: path:`` that ``ctx.open_api()`` hands out) is read through ``read_file``: the
kustomization's loader, so its load restrictor applies (by default, a loader of
``kustomization_dir`` that only reads below it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
        read_file: Callable[[str], bytes] | None = None,
    ) -> FunctionPlugin:
        """A plugin object that runs config as a KRM function (source: its kustomization file;
        read_file: its loader's ``read``)."""
        return FunctionPlugin(
            config,
            role=role,
            kustomization_dir=kustomization_dir,
            catalogs=catalogs,
            options=self.options,
            openapi=openapi,
            source=source,
            read_file=read_file,
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
        read_file: Callable[[str], bytes] | None = None,
    ):
        if read_file is None:
            from orchestrator.fs import Loader

            read_file = Loader(kustomization_dir).read
        self.read_file = read_file
        self.config = config
        self.source = source
        self.role = role
        self.kustomization_dir = kustomization_dir
        self.catalogs = catalogs
        self.options = options
        self.openapi = openapi

    def _openapi(self) -> dict[str, Any] | None:
        """The schema for ``ctx.open_api()``: a kustomization's ``openapi: {path}`` is read
        (through the kustomization's loader: this kustomization's ``openapi:`` may be one the
        build never read, when a parent kustomization set the schema first)."""
        spec = self.openapi
        if isinstance(spec, dict) and spec and set(spec) <= {"path", "version"}:
            path = spec.get("path")
            if not path:
                return None  # a built-in version: no document to hand out
            from orchestrator import yamlio
            from orchestrator.errors import LoadError
            from orchestrator.fs import display

            try:
                data = self.read_file(str(path))
            except LoadError as exc:
                raise LoadError(f"openapi: {exc.message}", file=self.source) from None
            full = os.path.join(self.kustomization_dir, str(path))
            doc = yamlio.load(data, source=display(full), fold=False)
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
            read_file=self.read_file,
        ).resources

    def generate(self) -> list[Resource]:
        """Run as a generator: the resources it made."""
        return self._run([])

    def transform(self, resmap: Any) -> None:
        """Run as a transformer or validator over the ResMap (replaced in place)."""
        out = self._run(resmap.resources())
        if self.role != "validator":
            resmap.set_list(out)
