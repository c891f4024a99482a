"""The kustomization accumulator: kustomize's KustTarget, below the build façade.

:class:`Target` accumulates one Kustomization or Component directory into an
:class:`Accumulator` (resources files and sub-kustomizations, each built on its own, then
generators, components, the builtin transformers in kustomize's fixed order and the
``transformers:`` plugins). :class:`BuildState` is what every kustomization of one build
shares. The build façade (:mod:`orchestrator.build`) and Compositions
(:mod:`orchestrator.composition`) both sit on top of this module; it imports neither: a
Composition named in a kustomization is reached through ``BuildState.composition_plugin``,
set by whoever starts the build.
"""

from __future__ import annotations

import os
import stat
import sys

from orchestrator import fieldspec, yamlio
from orchestrator.errors import (
    KrmError,
    LoadError,
    NotSupportedError,
    ResourceConflictError,
    ValidationError,
)
from orchestrator.fieldspec import TransformerConfig
from orchestrator.filters import base as fbase
from orchestrator.fs import ROOT_ONLY, Loader, display, find_kustomization, repo_spec
from orchestrator.resource import ResMap, Resource, key_str

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from orchestrator.share import Share

# The fields of a transformer configuration file (``configurations:``).
CONFIG_KEYS = frozenset(
    {
        "namePrefix",
        "nameSuffix",
        "namespace",
        "commonLabels",
        "labels",
        "templateLabels",
        "commonAnnotations",
        "nameReference",
        "varReference",
        "images",
        "replicas",
    }
)
# The one Kubernetes OpenAPI version kustomize v5.5.0 has built in.
BUILTIN_OPENAPI = "v1.21.2"
# What kubectl's embedded kustomize (the oracle) reports as its version in labels.
MANAGED_BY = "kustomize-(devel)"
LOCAL_CONFIG = "config.kubernetes.io/local-config"
# Resource files this large may be parsed by a child process beside the parent
# (orchestrator.parallel) when those one kustomization lists are together this large: below that
# a fork and the pickled answer cost about as much as they save.
PREFETCH_MIN_FILE = 128 * 1024
PREFETCH_MIN_TOTAL = 1024 * 1024
# Builtins that may run a strategic merge, which loads kyaml's built-in schema (a
# PatchTransformer with a JSON 6902 patch does not; counted all the same).
_MERGING = frozenset({"PatchStrategicMergeTransformer", "PatchTransformer"})
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
TRANSFORMATIONS_ANNOTATION = "alpha.config.kubernetes.io/transformations"


class BuildOptions:
    """Options of a build (the CLI flags)."""

    # Plain classes, not dataclasses: importing dataclasses costs CLI start-up time.
    __slots__ = (
        "load_restrictor",
        "reorder",
        "enable_helm",
        "helm_command",
        "helm_api_versions",
        "helm_kube_version",
        "helm_debug",
        "debug",
        "functions",
        "trusted_catalogs",
        "managed_by_label",
    )

    def __init__(
        self,
        load_restrictor: str = ROOT_ONLY,
        reorder: str | None = None,
        enable_helm: bool = False,
        helm_command: str = "helm",
        debug: bool = False,
        functions: Any = None,
        trusted_catalogs: list[str] | None = None,
        managed_by_label: bool = False,
        helm_api_versions: tuple[str, ...] | list[str] = (),
        helm_kube_version: str = "",
        helm_debug: bool = False,
    ) -> None:
        # KRM functions: an orchestrator.functions.FnOptions (None: defaults) and the
        # --trusted-catalog references.
        self.functions = functions
        self.trusted_catalogs: list[str] = list(trusted_catalogs or [])
        self.load_restrictor = load_restrictor
        # "legacy", "none" or None (unspecified: legacy unless sortOptions says otherwise)
        self.reorder = reorder
        self.enable_helm = enable_helm
        self.helm_command = helm_command
        # --helm-api-versions, --helm-kube-version, --helm-debug: for charts that set none.
        self.helm_api_versions = tuple(helm_api_versions)
        self.helm_kube_version = helm_kube_version
        self.helm_debug = helm_debug
        self.debug = debug
        # --enable-managedby-label: what buildMetadata: [managedByLabel] does, for every build.
        self.managed_by_label = managed_by_label

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"BuildOptions({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BuildOptions):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)


class BuildResult:
    """What a build produced: resources (plain dicts), function results and warnings."""

    __slots__ = ("resources", "results", "warnings")

    def __init__(
        self,
        resources: list[dict[str, Any]],
        results: list[dict[str, Any]] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.resources = resources
        self.results: list[dict[str, Any]] = results if results is not None else []
        self.warnings: list[str] = warnings if warnings is not None else []

    def __repr__(self) -> str:
        return (
            f"BuildResult(resources=<{len(self.resources)}>, results={self.results!r}, "
            f"warnings={self.warnings!r})"
        )

    def to_yaml(self) -> str:
        """The resources as ``kustomize build`` prints them."""
        return yamlio.dump_all(self.resources)

    def to_yaml_bytes(self) -> bytes:
        """``to_yaml()`` as UTF-8."""
        return yamlio.dump_all_bytes(self.resources)


class Accumulator:
    """Resources plus the transformer config and vars gathered so far."""

    def __init__(self) -> None:
        self.resmap = ResMap()
        self.tconfig: TransformerConfig | None = None
        self.vars: list[dict[str, Any]] = []
        self.var_field_specs: list[dict[str, Any]] = []

    def config(self) -> TransformerConfig:
        """The transformer config gathered so far (kustomize defaults if none yet)."""
        if self.tconfig is None:
            self.tconfig = fieldspec.default_config()
        return self.tconfig

    def merge_config(self, tc: TransformerConfig) -> None:
        """Merge ``tc`` into this accumulator's config (starting from an empty one, as
        kustomize's accumulator does: the merge order is observable)."""
        if self.tconfig is None:
            self.tconfig = TransformerConfig({})
        self.tconfig.merge_config(tc)

    def merge(self, other: Accumulator) -> None:
        """Merge a sub-kustomization's config, var field specs and vars into this one."""
        if other.tconfig is not None:
            self.merge_config(other.tconfig)
        for spec in other.var_field_specs:
            if spec not in self.var_field_specs:
                self.var_field_specs.append(spec)
        self.merge_vars(other.vars)

    def merge_vars(self, new: list[dict[str, Any]]) -> None:
        """Add vars, rejecting a name declared twice."""
        names = {v.get("name") for v in self.vars if isinstance(v, dict)}
        for v in new:
            if isinstance(v, dict) and v.get("name") in names:
                raise ResourceConflictError(f"var '{v.get('name')}' already encountered")
            names.add(v.get("name") if isinstance(v, dict) else None)
            self.vars.append(v)

    def absorb(self, res: Resource) -> None:
        """Add a generated resource, honouring behavior create/merge/replace."""
        matches = self.resmap.by_any_key(res.key())
        behavior = res.behavior or "create"
        if not matches:
            if behavior in ("merge", "replace"):
                raise ResourceConflictError(
                    f"id {key_str(res.key())} does not exist; cannot merge or replace",
                    file=res.source,
                    resource=res.describe(),
                )
            self.resmap.append(res)
            return
        if len(matches) > 1:
            raise ResourceConflictError(
                f"found multiple objects that could accept merge of {key_str(res.key())}",
                file=res.source,
                resource=res.describe(),
            )
        from orchestrator.filters import configmapgenerator

        old = matches[0]
        old_origin = ((old.obj.get("metadata") or {}).get("annotations") or {}).get(
            ORIGIN_ANNOTATION
        )
        configmapgenerator.merge_into(old, res)
        if behavior == "merge" and old_origin is not None:
            old.metadata.setdefault("annotations", {})[ORIGIN_ANNOTATION] = old_origin
        self.resmap.invalidate()


def _no_composition(full: str) -> None:
    return None


def may_be_composition(full: str) -> bool:
    """Whether ``full`` may name a Composition (a cheap file-system check, no import)."""
    if os.path.isdir(full):
        return os.path.isfile(os.path.join(full, "composition.yaml"))
    return os.path.basename(full) == "composition.yaml"


class BuildState:
    """State shared by every kustomization of one build."""

    def __init__(
        self, options: BuildOptions, composition_plugin: Callable[[str], Any] | None = None
    ):
        self.options = options
        # full path -> the Composition integration module when it names a Composition, else
        # None (KEP-2299); given by the caller so that this module never imports that package.
        self.composition_plugin: Callable[[str], Any] = composition_plugin or _no_composition
        # buildMetadata of the top kustomization: add config.kubernetes.io/origin annotations.
        self.origins = False
        self._functions: Any = None
        self.warnings: list[str] = []
        self.schema: Any = None
        self.schema_set = False
        # Until a kustomization sets a schema: the resource types met so far and whether a
        # strategic merge ran. kyaml loads its built-in schema when either needs it, and a
        # custom schema set after that extends the built-in one instead of replacing it.
        self.types_before_schema: set[str] = set()
        self.merged_before_schema = False
        self.results: list[dict[str, Any]] = []
        # kustomization file -> (parsed, its warnings): what the functions pre-check read of
        # the tree, handed to the Target that loads the file next instead of parsing it again.
        self.preloaded: dict[str, tuple[dict[str, Any], list[str]]] = {}
        # The whole tree's large files being parsed beside the build (orchestrator.parallel),
        # set by the build façade when that is worth a fork; None otherwise.
        self.tree_prefetch: Any = None
        # Effects beyond the accumulated resources (functions, helm, Compositions), counted so
        # that a base whose accumulation had one is never shared (orchestrator.share).
        self.side_effects = 0
        # The kustomization directories visited so far, when a share is active.
        self.visited: list[str] = []

    def functions(self) -> Any:
        """The KRM functions context of this build (created on first use)."""
        self.side_effects += 1
        if self._functions is None:
            from orchestrator.functions.plugin import FunctionsContext

            self._functions = FunctionsContext(
                self.options.functions,
                list(self.options.trusted_catalogs or []),
                results=self.results,
            )
        return self._functions


class Target:
    """One Kustomization or Component directory."""

    def __init__(
        self,
        build: BuildState,
        loader: Loader,
        kfile: str | None = None,
        origin: str = "",
        origin_repo: str = "",
    ):
        from orchestrator import kustomization

        self.build = build
        # Path of this kustomization relative to the top one, or to the root of the remote
        # repository it is in, and then the "repo:" and "ref:" lines of origin annotations.
        self.origin = origin
        self.origin_repo = origin_repo
        self.loader = loader
        self.kfile = kfile or find_kustomization(
            loader.root, loader.restrictor, real_root=loader.root
        )
        preloaded = build.preloaded.pop(self.kfile, None)
        if preloaded is None:
            self.k = kustomization.load(self.kfile, warnings=build.warnings)
        else:
            self.k, warnings = preloaded
            build.warnings.extend(warnings)
        self.kind = self.k["kind"]
        if _active_share() is not None:
            build.visited.append(loader.root)
        self._catalogs: Any = None
        self.source = display(self.kfile)
        if self.k.get("catalogs"):
            # A referenced catalog that is not trusted is an error at once (KEP-2906).
            self.catalog_set()

    # ------------------------------------------------------------------ helpers

    def catalog_set(self) -> Any:
        """This kustomization's catalogs (its ``catalogs:`` plus the trusted ones)."""
        if self._catalogs is None:
            self._catalogs = self.build.functions().catalogs(
                self.k.get("catalogs") or [], self.loader.root, self.source
            )
        return self._catalogs

    def ctx(self, acc: Accumulator) -> fbase.PluginContext:
        """The plugin context for this kustomization."""
        return fbase.PluginContext(
            tconfig=acc.config(),
            read_file=self.loader.read,
            root=self.loader.root,
            source=self.source,
            schema=self.build.schema,
            warnings=self.build.warnings,
            options=self.build.options,
        )

    def _set_schema(self) -> None:
        openapi = self.k.get("openapi")
        if not openapi:
            return
        path = openapi.get("path") if isinstance(openapi, dict) else None
        if self.build.schema_set:
            # The first schema set wins, but the file is read as kustomize reads it: through
            # this kustomization's loader, so one out of its root fails the build here too.
            if path:
                self.loader.read(str(path))
            return
        version = openapi.get("version") if isinstance(openapi, dict) else None
        if path and version:
            raise ValidationError(
                "builtin version and custom schema provided, cannot use both", file=self.source
            )
        if version and version != BUILTIN_OPENAPI:
            raise ValidationError(
                f"the specified OpenAPI version is not built in: {version!r} "
                f"(only {BUILTIN_OPENAPI} is)",
                file=self.source,
            )
        if path:
            docs = yamlio.load_all(self.loader.read(str(path)), source=str(path), fold=False)
            from orchestrator import openapi as _openapi

            # A custom schema replaces the built-in one (kustomize's openapi: path:), unless
            # kyaml had loaded that already (see BuildState): then it adds to it.
            base = (
                _openapi.PatchSchema.default()
                if self._builtin_schema_loaded()
                else _openapi.PatchSchema.empty()
            )
            self.build.schema = _extend_schema(base, docs, source=str(path))
        elif version:
            self.build.schema = None
        else:
            raise ValidationError("openapi needs 'path' or 'version'", file=self.source)
        self.build.schema_set = True

    def _builtin_schema_loaded(self) -> bool:
        """Whether kustomize would have parsed its built-in schema by now: a strategic merge
        ran, or a resource type outside it was looked up (namespace scope, on every append)."""
        state = self.build
        if state.merged_before_schema:
            return True
        if not state.types_before_schema:
            return False
        from orchestrator import openapi as _openapi

        known = _openapi.PatchSchema.default().gvks
        return any(t not in known for t in state.types_before_schema)

    # ------------------------------------------------------------------ accumulation

    def accumulate(self, acc: Accumulator) -> Accumulator:
        """kustomize's accumulateTarget: resources, generators, components, transformers."""
        self._set_schema()
        k = self.k
        self.accumulate_resources(acc, k.get("resources") or [])
        tc = fieldspec.default_config()
        if k.get("configurations"):
            extra = TransformerConfig({})
            for path in k["configurations"]:
                data = yamlio.load(self.loader.read(path), source=path) or {}
                if not isinstance(data, dict):
                    raise ValidationError("a configurations file must be a map", file=path)
                unknown = sorted(set(data) - CONFIG_KEYS)
                if unknown:
                    raise ValidationError(
                        f"invalid transformer configuration: unknown field {unknown[0]!r}",
                        file=display(self.loader.abspath(path)),
                    )
                if "varReference" in data:
                    acc.var_field_specs.extend(data.get("varReference") or [])
                extra.merge_config(TransformerConfig(data))
            tc.merge_config(extra)
        acc.merge_config(tc)
        if k.get("crds"):
            self.load_crds(acc, k["crds"])
        self.run_generators(acc)
        for path in k.get("components") or []:
            self.accumulate_directory(acc, path, component=True)
        self.run_transformers(acc)
        self.run_validators(acc)
        if k.get("vars"):
            from orchestrator.filters import vars as kvars

            # Bind each var to its resource now, among this kustomization's resources
            # (kustomize's MergeVars), so that diamonds resolve like kustomize.
            kvars.bind(acc.resmap.resources(), k["vars"])
        acc.merge_vars(k.get("vars") or [])
        return acc

    def accumulate_resources(self, acc: Accumulator, paths: list[str]) -> None:
        """Add the resources of files and kustomization directories, in order."""
        if self.build.tree_prefetch is not None:
            self._accumulate_resources(acc, paths, self.build.tree_prefetch)
            return
        prefetch = self._prefetch(paths)
        try:
            self._accumulate_resources(acc, paths, prefetch)
        finally:
            if prefetch is not None:
                prefetch.close()

    def _prefetch(self, paths: list[str]) -> Any:
        """Children parsing the large local files of ``paths`` while this process goes through
        them in order (orchestrator.parallel), or None where that is not worth a fork."""
        if len(paths) < 2 or os.environ.get("KRM_PARALLEL") == "0":
            return None
        files = []
        for path in paths:
            if "://" in path:
                continue
            full = self.loader.abspath(path)
            st = _stat(full)
            if st is not None and stat.S_ISREG(st.st_mode):
                files.append(_prefetch_entry(full, st.st_size))
        if sum(size for _, _, size, large in files if large) < PREFETCH_MIN_TOTAL:
            return None
        from orchestrator import parallel

        workers = parallel.children()
        return parallel.prefetch(files, workers) if workers else None

    def _accumulate_resources(self, acc: Accumulator, paths: list[str], prefetch: Any) -> None:
        for path in paths:
            comp = self.build.composition_plugin(self.loader.abspath(path))
            if comp is not None:
                # KEP-2299: a Composition in resources: appends what it generates.
                if self.loader.is_dir(path):
                    self.loader.child(path)  # the same cycle check as for kustomizations
                self.build.side_effects += 1
                comp.accumulate(self.build, self.loader.abspath(path), acc, source=self.source)
                continue
            if self.loader.is_dir(path) or path[:6].lower() == "oci://":
                self.accumulate_directory(acc, path, component=False)
                continue
            if path[:8].lower().startswith(("http://", "https://")) or (
                not self.loader.exists(path) and repo_spec(path) is not None
            ):
                self.accumulate_remote(acc, path)
                continue
            try:
                data = self.loader.read(path)
            except LoadError as exc:
                if not self.loader.exists(path):
                    raise LoadError(
                        f"resource '{path}' does not exist (neither a file nor a "
                        "kustomization directory)",
                        file=self.source,
                    ) from None
                raise exc
            full = self.loader.abspath(path)
            parse = resources_from_bytes
            if prefetch is not None and prefetch.has(full):
                parse = _prefetched(prefetch, full)
            self._append_file(acc, data, path, display(full), parse)

    def _append_file(
        self,
        acc: Accumulator,
        data: bytes,
        path: str,
        where: str,
        parse: Callable[..., list[Resource]] | None = None,
    ) -> None:
        """Add the resources of file ``path`` read as ``data``, parsed by ``parse`` (called
        like :func:`resources_from_bytes`, the default) unless the share of a run of builds has
        them."""
        if parse is None:
            parse = resources_from_bytes
        origin = None
        if self.build.origins:
            origin = f"path: {os.path.normpath(os.path.join(self.origin, path))}\n"
            origin += self.origin_repo
        share = _active_share()
        if share is None:
            found = parse(data, source=where, origin=origin)
        else:
            found = share.file_resources(where, origin, data, parse)
        for res in found:
            if not self.build.schema_set:
                gvk = res.gvk
                self.build.types_before_schema.add(f"{gvk.group}/{gvk.version}/{gvk.kind}")
            try:
                acc.resmap.append(res)
            except ResourceConflictError as exc:
                exc.file = where
                raise

    def accumulate_remote(self, acc: Accumulator, path: str) -> None:
        """A URL in ``resources:``, in kustomize's order: an http(s) URL is downloaded as a
        file first; one that is not a file there, or no http(s) URL, is built as a git base."""
        from orchestrator import remote

        cache = remote.GitCache(offline=self.loader.offline)
        file_error: KrmError | None = None
        is_repository = False
        # Offline, a URL that may be a repository is not tried as a file first.
        offline_repository = self.loader.offline and repo_spec(path) is not None
        if (
            remote.is_remote_file(path)
            and not offline_repository
            and not cache.known_repository(path)
        ):
            try:
                data = self.loader.read(path)
            except remote.IsRepository:
                is_repository = True
            except remote.HTTPStatusError as exc:
                exc.file = self.source
                raise
            except remote.RemoteError as exc:
                file_error = exc
            else:
                try:
                    self._append_file(acc, data, path, path)
                    return
                except KrmError as exc:
                    file_error = exc
        if repo_spec(path) is None:
            assert file_error is not None  # an http(s) URL that parses as no repository
            file_error.file = file_error.file or self.source
            raise file_error
        try:
            self.accumulate_directory(acc, path, component=False)
        except KrmError as exc:
            exc.file = exc.file if exc.file and exc.file != path else self.source
            if file_error is not None:
                exc.message += f" (and as a file: {file_error.message})"
                exc.args = (exc.message,)
            raise
        if is_repository:
            cache.remember_repository(path)

    def accumulate_directory(self, acc: Accumulator, path: str, *, component: bool) -> None:
        """Build a sub-kustomization (or apply a component) and add its resources."""
        oci = path[:6].lower() == "oci://"
        if component and not oci and not self.loader.is_dir(path) and repo_spec(path) is None:
            raise LoadError(
                f"component '{path}' must be a directory with a kustomization of kind Component",
                file=self.source,
            )
        what = "component" if component else "resource"
        spec = repo_spec(path) if not oci and not self.loader.is_dir(path) else None
        if spec is not None and spec.forced:
            from orchestrator import remote

            self.build.warnings.append(remote.FORCED_GIT_WARNING)
        try:
            child = self.loader.child(path)
        except LoadError as exc:
            if exc.message.startswith("cycle detected"):
                # Name the kustomization that closes the cycle, not just the reference.
                raise LoadError(f"{what} '{path}': {exc.message}", file=self.source) from None
            if exc.file is None:
                exc.file = self.source
            raise
        if component and self.build.composition_plugin(child.root) is not None:
            raise ValidationError(
                f"expected kind 'Component' for path '{child.root}' but got 'Composition'",
                file=self.source,
            )
        if oci:
            # Like a git base's: paths relative to the artifact's tree, which repo: and ref:
            # name.
            from orchestrator import ocibase

            oci_spec = ocibase.parse_oci(path)
            origin = oci_spec.subdir
            origin_repo = f"repo: {oci_spec.repository}\nref: {oci_spec.reference}\n"
        elif spec is not None:
            # kustomize's Origin.Append: paths below a remote base are relative to its
            # repository, which the repo: and ref: lines name.
            origin = os.path.normpath(spec.kust_root) if spec.kust_root.strip("/") else ""
            origin_repo = f"repo: {spec.clone_spec}\n" + (f"ref: {spec.ref}\n" if spec.ref else "")
        else:
            origin = os.path.normpath(os.path.join(self.origin, path))
            origin_repo = self.origin_repo
        try:
            sub = Target(self.build, child, origin=origin, origin_repo=origin_repo)
        except LoadError as exc:
            if "unable to find" in exc.message:
                raise LoadError(f"{what} '{path}': {exc.message}", file=self.source) from None
            raise
        if component and sub.kind != "Component":
            raise ValidationError(
                f"expected kind 'Component' for path '{child.root}' but got '{sub.kind}'",
                file=self.source,
            )
        if not component and sub.kind == "Component":
            raise ValidationError(
                f"expected kind != 'Component' for path '{child.root}'", file=self.source
            )
        if component:
            sub.accumulate(acc)
            return
        sub_acc = accumulate_new(sub)
        for res in sub_acc.resmap:
            try:
                acc.resmap.append(res)
            except ResourceConflictError as exc:
                exc.file = self.kfile
                raise
        acc.merge(sub_acc)

    def load_crds(self, acc: Accumulator, paths: list[str]) -> None:
        """The field specs that the OpenAPI definitions listed in ``crds:`` declare.

        As kustomize v5.5.0 reads them (they never change strategic merge, checked against
        kubectl): a map of type name -> ``{Schema, Dependencies}``; in every type with
        ``kind``, ``apiVersion`` and ``metadata`` properties, a property (followed through
        ``$ref`` to other types of the map) marked ``x-kubernetes-annotation``,
        ``x-kubernetes-label-selector`` or ``x-kubernetes-identity`` gets the common
        annotations, common labels or name prefix, and one with
        ``x-kubernetes-object-ref-api-version`` and ``-kind`` refers by name (its
        ``x-kubernetes-object-ref-name-key``, default ``name``) to objects of that kind. A CRD
        manifest there is an error, as in kustomize.
        """
        data: dict[str, list[Any]] = {}
        for path in paths:
            for doc in yamlio.load_all(self.loader.read(path), source=path, fold=False):
                if not isinstance(doc, dict) or "kind" in doc or "apiVersion" in doc:
                    what = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
                    raise ValidationError(
                        f"unable to parse open API definition from '{path}': expected a map "
                        f"of OpenAPI definitions, got {what or 'a resource'}",
                        file=self.kfile,
                    )
                _crd_field_specs(doc, data, path, self.kfile)
        if data:
            acc.merge_config(TransformerConfig(data))

    # ------------------------------------------------------------------ generators

    def run_generators(self, acc: Accumulator) -> None:
        """Run configMapGenerator, secretGenerator, helmCharts and ``generators:``."""
        k = self.k
        options = k.get("generatorOptions")
        if k.get("configMapGenerator") or k.get("secretGenerator"):
            from orchestrator.filters import configmapgenerator, secretgenerator
        for args in k.get("configMapGenerator") or []:
            self._check_generator_args(args, "configMapGenerator")
            res = configmapgenerator.generate(args, options=options, read_file=self.loader.read)
            self._absorb(acc, res)
        for args in k.get("secretGenerator") or []:
            self._check_generator_args(args, "secretGenerator")
            res = secretgenerator.generate(args, options=options, read_file=self.loader.read)
            self._absorb(acc, res)
        if k.get("helmCharts") or k.get("helmChartInflationGenerator"):
            for res in self.helm(acc):
                self._absorb(acc, res)
        for config in self.plugin_configs(k.get("generators") or [], "generators"):
            md = config.get("metadata") or {}
            origin = str((md.get("annotations") or {}).get(ORIGIN_ANNOTATION) or "")
            by = (
                str(config.get("apiVersion") or ""),
                str(config.get("kind") or ""),
                str(md.get("name") or ""),
                # A plugin config read from a file is "configured in" that file.
                _origin_path(origin),
            )
            for res in self.make_plugin(config, acc, generator=True).generate():
                self._absorb(acc, res, by)

    def _absorb(
        self, acc: Accumulator, res: Resource, by: tuple[str, str, str, str] | None = None
    ) -> None:
        if self.build.origins:
            kind, name = by[1:3] if by else (res.kind + "Generator", "")
            configured_in = (by[3] if by else "") or os.path.normpath(
                os.path.join(self.origin, os.path.basename(self.kfile))
            )
            text = (
                f"{self.origin_repo}configuredIn: {configured_in}\nconfiguredBy:\n"
                f"  apiVersion: {by[0] if by else 'builtin'}\n  kind: {kind}\n"
            )
            if name:
                text += f"  name: {name}\n"
            _annotate(res, ORIGIN_ANNOTATION, text)
        try:
            acc.absorb(res)
        except KrmError as exc:
            exc.file = self.kfile
            raise

    def _check_generator_args(self, args: Any, what: str) -> None:
        if not isinstance(args, dict):
            raise ValidationError(f"{what} entries must be maps, got {args!r}", file=self.source)

    def helm(self, acc: Accumulator) -> list[Resource]:
        """helmCharts (and the deprecated helmChartInflationGenerator): each chart inflated
        with helm as kustomize does (needs --enable-helm)."""
        from orchestrator import helm

        out: list[Resource] = []
        for globals_, chart in helm.charts_of(self.k):
            out.extend(self.inflate_chart({**globals_, **chart}))
        return out

    def inflate_chart(self, config: dict[str, Any]) -> list[Resource]:
        """The resources of one chart config (HelmGlobals and HelmChart fields)."""
        from orchestrator import helm

        opts = self.build.options
        self.build.side_effects += 1
        if not opts.enable_helm:
            raise NotSupportedError(
                "must specify --enable-helm to use helmCharts", file=self.source
            )
        out = helm.inflate(
            config,
            root=self.loader.root,
            read=self.loader.read,
            options=helm.HelmOptions(
                opts.helm_command, opts.helm_api_versions, opts.helm_kube_version, opts.helm_debug
            ),
            source=self.source,
        )
        return resources_from_bytes(out, source=f"helm chart {config.get('name')}")

    # ------------------------------------------------------------------ transformers

    def builtin_transformer_configs(self, acc: Accumulator) -> list[tuple[str, dict[str, Any]]]:
        """The kustomization's fields as builtin plugin configs, in kustomize's order."""
        k, tc = self.k, acc.config()
        out: list[tuple[str, dict[str, Any]]] = []
        if k.get("patchesStrategicMerge"):
            out.append(("PatchStrategicMergeTransformer", {"paths": k["patchesStrategicMerge"]}))
        for p in k.get("patches") or []:
            if not isinstance(p, dict):
                raise ValidationError(f"invalid patches entry {p!r}", file=self.source)
            out.append(("PatchTransformer", p))
        if k.get("namespace"):
            out.append(
                (
                    "NamespaceTransformer",
                    {"metadata": {"namespace": k["namespace"]}, "fieldSpecs": tc.get("namespace")},
                )
            )
        if k.get("namePrefix"):
            out.append(
                (
                    "PrefixTransformer",
                    {"prefix": k["namePrefix"], "fieldSpecs": tc.get("namePrefix")},
                )
            )
        if k.get("nameSuffix"):
            out.append(
                (
                    "SuffixTransformer",
                    {"suffix": k["nameSuffix"], "fieldSpecs": tc.get("nameSuffix")},
                )
            )
        labels = k.get("labels") or []
        if labels or k.get("commonLabels"):
            for label in labels:
                if not isinstance(label, dict):
                    raise ValidationError(f"invalid labels entry {label!r}", file=self.source)
                specs = fieldspec.merge(
                    fieldspec.parse(label.get("fields"), source=self.kfile), tc.get("labels")
                )
                if label.get("includeSelectors"):
                    specs = fieldspec.merge(specs, tc.get("commonLabels"))
                else:
                    if label.get("includeTemplates"):
                        specs = fieldspec.merge(specs, tc.get("templateLabels"))
                    specs = fieldspec.merge(specs, [fieldspec.make("metadata/labels", create=True)])
                out.append(
                    ("LabelTransformer", {"labels": label.get("pairs") or {}, "fieldSpecs": specs})
                )
            out.append(
                (
                    "LabelTransformer",
                    {"labels": k.get("commonLabels") or {}, "fieldSpecs": tc.get("commonLabels")},
                )
            )
        if k.get("commonAnnotations"):
            out.append(
                (
                    "AnnotationsTransformer",
                    {
                        "annotations": k["commonAnnotations"],
                        "fieldSpecs": tc.get("commonAnnotations"),
                    },
                )
            )
        for p in k.get("patchesJson6902") or []:
            if not isinstance(p, dict):
                raise ValidationError(f"invalid patchesJson6902 entry {p!r}", file=self.source)
            out.append(
                (
                    "PatchJson6902Transformer",
                    {"target": p.get("target"), "path": p.get("path"), "jsonOp": p.get("patch")},
                )
            )
        for r in k.get("replicas") or []:
            out.append(
                ("ReplicaCountTransformer", {"replica": r, "fieldSpecs": tc.get("replicas")})
            )
        for img in k.get("images") or []:
            out.append(("ImageTagTransformer", {"imageTag": img, "fieldSpecs": tc.get("images")}))
        if k.get("replacements"):
            out.append(("ReplacementTransformer", {"replacements": k["replacements"]}))
        return out

    def run_transformers(self, acc: Accumulator) -> None:
        """Run the builtin transformers in kustomize's order, then ``transformers:``."""
        from orchestrator import filters

        configured_in = os.path.normpath(os.path.join(self.origin, os.path.basename(self.kfile)))
        for kind, config in self.builtin_transformer_configs(acc):
            if kind in _MERGING and not self.build.schema_set:
                self.build.merged_before_schema = True
            plugin = filters.lookup(kind)(config, self.ctx(acc))
            plugin.transform(acc.resmap)
            acc.resmap.invalidate()
            if self.build.origins:
                _record_transformation(
                    acc.resmap,
                    f"{self.origin_repo}configuredIn: {configured_in}\nconfiguredBy:\n"
                    f"  apiVersion: builtin\n  kind: {kind}\n",
                )
        for config in self.plugin_configs(self.k.get("transformers") or [], "transformers"):
            self.make_plugin(config, acc, generator=False).transform(acc.resmap)
            acc.resmap.invalidate()
            md = config.get("metadata") or {}
            origin = str((md.get("annotations") or {}).get(ORIGIN_ANNOTATION) or "")
            if self.build.origins and "__krm_composition__" not in config:
                # A config read from a file is configured in that file, an inline one in this
                # kustomization.
                where = _origin_path(origin) or configured_in
                entry = (
                    f"{self.origin_repo}configuredIn: {where}\nconfiguredBy:\n"
                    f"  apiVersion: {config.get('apiVersion')}\n  kind: {config.get('kind')}\n"
                )
                if md.get("name"):
                    entry += f"  name: {md['name']}\n"
                if md.get("namespace"):
                    entry += f"  namespace: {md['namespace']}\n"
                _record_transformation(acc.resmap, entry)

    def run_validators(self, acc: Accumulator) -> None:
        """Run ``validators:`` on a copy of the resources."""
        for config in self.plugin_configs(self.k.get("validators") or [], "validators"):
            copies = ResMap([r.copy() for r in acc.resmap])
            self.make_plugin(config, acc, generator=False, role="validator").transform(copies)
            # kustomize fails on a changed map rather than dropping the change silently; a
            # Composition's output is discarded instead (KEP-2299).
            composition = "__krm_composition__" in config
            if not composition and [r.obj for r in copies] != [r.obj for r in acc.resmap]:
                md = config.get("metadata") or {}
                raise ValidationError(
                    f"validator {config.get('kind')} '{md.get('name') or ''}' shouldn't modify "
                    "the resource map",
                    file=self.source,
                )

    # ------------------------------------------------------------------ plugins

    def plugin_configs(self, entries: list[Any], field_name: str) -> list[dict[str, Any]]:
        """Plugin config documents from file paths, directories or inline YAML."""
        configs: list[dict[str, Any]] = []
        for entry in entries:
            if isinstance(entry, dict):
                configs.append(entry)
                continue
            if not isinstance(entry, str):
                raise ValidationError(f"invalid {field_name} entry {entry!r}", file=self.source)
            comp = self.build.composition_plugin(self.loader.abspath(entry))
            if comp is not None:
                self.build.side_effects += 1
                configs.append(comp.marker_config(self.loader.abspath(entry)))
                continue
            if (
                "\n" in entry
                or (
                    ":" in entry
                    and not self.loader.exists(entry)
                    # a URL is a file or a base to read, as kustomize reads it
                    and not entry[:8].lower().startswith(("http://", "https://"))
                    and repo_spec(entry) is None
                )
            ):
                docs = yamlio.load_all(entry, source=self.kfile)
                configs.extend(d for d in docs if isinstance(d, dict))
                continue
            sub = Accumulator()
            self.accumulate_resources(sub, [entry])
            configs.extend(r.obj for r in sub.resmap)
        return configs

    def _legacy_plugin(self, config: dict[str, Any]) -> tuple[Any, str]:
        """kustomize's legacy exec plugin for ``config`` under --enable-alpha-plugins (it comes
        before the catalogs, as it does in kustomize), or None and what to add to the message
        if no catalog defines the function either."""
        if _names_runtime(config):
            return None, ""
        from orchestrator import execplugin

        fn_options = self.build.options.functions
        if fn_options is None or not fn_options.enable_alpha_plugins:
            path, _ = execplugin.find(config)
            if path is None:
                return None, ""
            return None, f"an exec plugin exists at {path}: --enable-alpha-plugins runs it"
        plugin = execplugin.load(
            config,
            root=self.loader.root,
            read_file=self.loader.read,
            parse=resources_from_bytes,
            source=self.source,
        )
        if plugin is not None:
            # A trusted catalog that defines this function pins the binary (sha256).
            from orchestrator.functions.resolve import pin_legacy

            pin_legacy(config, plugin.path, self.catalog_set(), fn_options)
            return plugin, ""
        return None, execplugin.find(config)[1]

    def make_plugin(
        self,
        config: dict[str, Any],
        acc: Accumulator,
        *,
        generator: bool,
        role: str | None = None,
    ) -> Any:
        """The plugin for one generators/transformers/validators config."""
        from orchestrator import filters

        role = role or ("generator" if generator else "transformer")

        # orchestrator.composition.plugin.MARKER, spelled out to avoid importing that package.
        marker = config.get("__krm_composition__")
        comp = self.build.composition_plugin(marker) if isinstance(marker, str) else None
        if comp is not None and comp.is_marker(config):
            return comp.CompositionPlugin(config, self.build)

        kind = config.get("kind") or ""
        api_version = config.get("apiVersion") or ""
        if api_version != "builtin":
            legacy, note = self._legacy_plugin(config)
            if legacy is not None:
                return legacy
            # Not a builtin: a KRM function (KEP-2906 runtimes and catalogs).
            plugin = self.build.functions().plugin(
                config,
                role=role,
                kustomization_dir=self.loader.root,
                catalogs=self.catalog_set(),
                openapi=self.k.get("openapi"),
                source=self.source,
                read_file=self.loader.read,
            )
            return _NoteWhenUnresolved(plugin, note) if note else plugin
        if kind == "SortOrderTransformer":
            # kustomize runs it for sortOptions only; it is no builtin a kustomization can name.
            raise NotSupportedError(
                "unable to load builtin SortOrderTransformer.builtin.[noGrp] (order the output "
                "with sortOptions: instead)",
                file=self.source,
            )
        if kind == "HelmChartInflationGenerator" and generator:
            return _HelmChartPlugin(self, config)
        cls = filters.lookup(kind)
        if cls is None:
            raise NotSupportedError(
                f"unknown builtin plugin kind {kind!r} (apiVersion: builtin)", file=self.source
            )
        if generator != (kind in filters.GENERATORS) and generator:
            raise ValidationError(f"{kind} is not a generator", file=self.source)
        return cls(config, self.ctx(acc))


class _HelmChartPlugin:
    """A HelmChartInflationGenerator config under ``generators:`` (a builtin: HelmGlobals and
    HelmChart fields at its top level)."""

    def __init__(self, target: Target, config: dict[str, Any]) -> None:
        self.target, self.config = target, config

    def generate(self) -> list[Resource]:
        """The chart's resources."""
        return self.target.inflate_chart(self.config)


class _NoteWhenUnresolved:
    """A function plugin whose "no runtime" error also says what the legacy exec plugin
    lookup found (kustomize would have looked there)."""

    def __init__(self, plugin: Any, note: str) -> None:
        self.plugin = plugin
        self.note = note

    def _noted(self, exc: KrmError) -> None:
        if exc.message.startswith("no runtime for "):
            exc.message = f"{exc.message}; {self.note}"
            exc.args = (exc.message,)

    def generate(self) -> list[Resource]:
        try:
            out: list[Resource] = self.plugin.generate()
        except KrmError as exc:
            self._noted(exc)
            raise
        return out

    def transform(self, resmap: ResMap) -> None:
        try:
            self.plugin.transform(resmap)
        except KrmError as exc:
            self._noted(exc)
            raise


def _crd_schemas(doc: dict[str, Any], path: str, kfile: str) -> dict[str, dict[str, Any]]:
    """Type name -> its schema, from a ``crds:`` document (``{name: {Schema: ...}}``)."""
    out: dict[str, dict[str, Any]] = {}
    for name, definition in doc.items():
        if not isinstance(definition, dict):
            raise ValidationError(
                f"unable to parse open API definition from '{path}': the definition of "
                f"{name!r} must be a map with a Schema",
                file=kfile,
            )
        # Go's encoding/json: the field name matches in any case, an exact match first.
        key = (
            "Schema"
            if "Schema" in definition
            else next((k for k in definition if isinstance(k, str) and k.lower() == "schema"), None)
        )
        schema = definition.get(key) if key is not None else None
        if schema is not None and not isinstance(schema, dict):
            raise ValidationError(
                f"unable to parse open API definition from '{path}': the Schema of {name!r} "
                "must be a map",
                file=kfile,
            )
        out[str(name)] = schema or {}
    return out


def _extension(prop: dict[str, Any], name: str) -> str | None:
    """A string ``x-`` extension of a schema (kube-openapi keeps their keys lower-cased)."""
    for key, value in prop.items():
        if isinstance(key, str) and key.lower() == name and isinstance(value, str):
            return value
    return None


def _crd_field_specs(
    doc: dict[str, Any], data: dict[str, list[Any]], path: str, kfile: str
) -> None:
    """Add the field specs one ``crds:`` document declares to ``data`` (a configuration)."""
    schemas = _crd_schemas(doc, path, kfile)

    def walk(kind: str, type_name: str, where: list[str], seen: tuple[str, ...]) -> None:
        if type_name in seen:  # kustomize would recurse forever; a cycle adds nothing new
            return
        props = (schemas.get(type_name) or {}).get("properties")
        if not isinstance(props, dict):
            return
        for prop_name in sorted(props, key=str):
            prop = props[prop_name]
            if not isinstance(prop, dict):
                continue
            field = [*where, str(prop_name)]
            spec = {"kind": kind, "path": "/".join(field)}
            if _extension(prop, "x-kubernetes-annotation") is not None:
                data.setdefault("commonAnnotations", []).append(spec)
            if _extension(prop, "x-kubernetes-label-selector") is not None:
                data.setdefault("commonLabels", []).append(spec)
            if _extension(prop, "x-kubernetes-identity") is not None:
                data.setdefault("namePrefix", []).append(spec)
            version = _extension(prop, "x-kubernetes-object-ref-api-version")
            ref_kind = _extension(prop, "x-kubernetes-object-ref-kind")
            if version is not None and ref_kind is not None:
                name_key = _extension(prop, "x-kubernetes-object-ref-name-key") or "name"
                data.setdefault("nameReference", []).append(
                    {
                        "kind": ref_kind,
                        "version": version,
                        "fieldSpecs": [{"kind": kind, "path": "/".join([*field, name_key])}],
                    }
                )
            ref = prop.get("$ref")
            if isinstance(ref, str) and ref:
                walk(kind, ref, field, (*seen, type_name))

    for type_name, schema in schemas.items():
        props = schema.get("properties")
        if isinstance(props, dict) and {"kind", "apiVersion", "metadata"} <= set(props):
            # kustomize's type: the last dot-separated part of the name, as the kind only
            walk(type_name.split(".")[-1], type_name, [], ())


def _names_runtime(config: dict[str, Any]) -> bool:
    """Whether a config names its KRM function runtime (a runtime: field or the function
    annotation), which kustomize runs as a function rather than as an exec plugin."""
    if "runtime" in config:
        return True
    md = config.get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    return isinstance(ann, dict) and any(
        k in ann for k in ("config.kubernetes.io/function", "config.k8s.io/function")
    )


def _origin_path(origin: str) -> str:
    """The path of an origin annotation (``path: P`` then maybe ``repo:`` and ``ref:``)."""
    if not origin.startswith("path: "):
        return ""
    return origin[6:].split("\n", 1)[0].strip()


def _active_share() -> Share | None:
    """The share of a run of builds (orchestrator.share), if one is active; a single build never
    imports that module, and no share can be active without it."""
    module = sys.modules.get("orchestrator.share")
    share: Share | None = module.current() if module is not None else None
    return share


def accumulate_new(target: Target) -> Accumulator:
    """``target`` accumulated into a new Accumulator; with a share active, a copy of the same
    accumulation by an earlier build of the run when there is one (orchestrator.share)."""
    share = _active_share()
    state = target.build
    if share is None or state.schema_set:
        return target.accumulate(Accumulator())
    from orchestrator import share as _share

    loader = target.loader
    key = (loader.root, loader.restrictor, target.origin if state.origins else None)
    entry = share.base(key, loader.parents)
    if entry is not None:
        acc = Accumulator()
        acc.resmap.set_list(list(_share.entries(entry)))
        acc.tconfig = entry.tconfig.copy() if entry.tconfig is not None else None
        acc.var_field_specs = _share.copy_tree(entry.var_field_specs)
        acc.vars = _share.copy_tree(entry.vars)
        state.warnings.extend(entry.warnings)
        state.visited.extend(entry.roots)
        return acc
    effects, warned, visited = state.side_effects, len(state.warnings), len(state.visited)
    acc = target.accumulate(Accumulator())
    if state.side_effects == effects and not state.schema_set and share.wants(loader.root):
        share.bases[key] = _share.BaseEntry(
            [_share.copy_resource(r) for r in acc.resmap],
            acc.tconfig.copy() if acc.tconfig is not None else None,
            _share.copy_tree(acc.var_field_specs),
            _share.copy_tree(acc.vars),
            state.warnings[warned:],
            (loader.root, *state.visited[visited:]),
        )
    return acc


def _extend_schema(schema: Any, docs: list[Any], *, source: str) -> Any:
    """``schema`` extended with the OpenAPI definitions in ``docs`` (from ``openapi: path:``)."""
    try:
        return schema.extended(docs)
    except KrmError:
        raise
    except Exception as exc:  # the schema module reports bad documents its own way
        raise ValidationError(f"invalid openapi/CRD document: {exc}", file=source) from None


def _prefetched(prefetch: Any, full: str) -> Callable[..., list[Resource]]:
    """A ``resources_from_bytes`` that takes the documents a child parsed from file ``full``
    when it read the same bytes (orchestrator.parallel); asked only where no share has them."""

    def parse(data: bytes, *, source: str, origin: str | None = None) -> list[Resource]:
        docs = prefetch.docs(full, data)
        if docs is None:
            return resources_from_bytes(data, source=source, origin=origin)
        return resources_from_docs(docs, source=source, origin=origin)

    return parse


def tree_prefetch(target: Target) -> Any:
    """Children parsing the large files of ``target``'s whole tree from the start of the build
    while this process parses the others ahead of their turn (orchestrator.parallel), or None
    where that is not worth a fork (small trees never import that module).

    Called once the functions pre-check has read every kustomization of the tree
    (``build.preloaded``): the files are those their ``resources:`` and ``components:`` name,
    in about the order the build reads them. Per kustomization, the big files of one
    ``resources:`` list come late in a build or early (kueue's 1.4 MB CRD is its fourth file):
    parsed from the start, beside everything else, they are ready when the build gets there.
    """
    if os.environ.get("KRM_PARALLEL") == "0" or _active_share() is not None:
        return None
    files: list[tuple[str, str, int, bool]] = []
    _tree_files(target.k, target.loader, target.build.preloaded, files, set())
    if sum(size for _, _, size, large in files if large) < PREFETCH_MIN_TOTAL:
        return None
    from orchestrator import parallel

    workers = parallel.children()
    return parallel.prefetch(files, workers, whole_tree=True) if workers else None


def _tree_files(
    k: dict[str, Any],
    loader: Loader,
    preloaded: dict[str, tuple[dict[str, Any], list[str]]],
    out: list[tuple[str, str, int, bool]],
    seen: set[str],
) -> None:
    """The local files the kustomization ``k`` (read by ``loader``) and those below it name,
    as (path, source, size, large); a kustomization not in ``preloaded`` is not looked into."""
    for entry in [*(k.get("resources") or []), *(k.get("components") or [])]:
        if not isinstance(entry, str) or "://" in entry or repo_spec(entry) is not None:
            continue
        full = loader.abspath(entry)
        st = _stat(full)
        if st is None:
            continue
        if stat.S_ISREG(st.st_mode):
            if full not in seen:
                seen.add(full)
                out.append(_prefetch_entry(full, st.st_size))
        elif stat.S_ISDIR(st.st_mode):
            try:
                child = loader.child(entry)
                found = preloaded.get(find_kustomization(child.root))
            except KrmError:
                continue
            if found is not None and child.root not in seen:
                seen.add(child.root)
                _tree_files(found[0], child, preloaded, out, seen)


def _stat(full: str) -> os.stat_result | None:
    """``os.stat(full)``, None when it fails: with os.stat, which the build cache's Recorder
    does not note, as the prefetch only decides who parses a file and when, never what the
    build reads or prints."""
    try:
        return os.stat(full)
    except (OSError, ValueError):
        return None


def _prefetch_entry(full: str, size: int) -> tuple[str, str, int, bool]:
    """A file as ``orchestrator.parallel.prefetch`` takes it: (path, source, size, large)."""
    return (full, display(full), size, size >= PREFETCH_MIN_FILE)


def resources_from_bytes(data: bytes, *, source: str, origin: str | None = None) -> list[Resource]:
    """Resources of a YAML stream; ``List`` kinds are flattened. ``origin``: the value of
    the ``config.kubernetes.io/origin`` annotation to add (buildMetadata)."""
    return resources_from_docs(yamlio.load_all(data, source=source), source=source, origin=origin)


def resources_from_docs(
    docs: list[Any], *, source: str, origin: str | None = None
) -> list[Resource]:
    """Resources of parsed YAML documents (see :func:`resources_from_bytes`)."""
    out: list[Resource] = []
    for doc in docs:
        _add_doc(doc, source, out, origin)
    return out


def _add_doc(doc: Any, source: str, out: list[Resource], origin: str | None = None) -> None:
    if not isinstance(doc, dict):
        raise ValidationError(
            f"a resource must be a YAML map, got {type(doc).__name__}", file=source
        )
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            _add_doc(item, source, out, origin)
        return
    if not kind:
        raise ValidationError(
            f"missing Resource metadata: kind is empty in {_short(doc)}", file=source
        )
    md = doc.get("metadata")
    if not (isinstance(md, dict) and (md.get("name") or md.get("generateName"))):
        raise ValidationError(f"missing metadata.name in object {_short(doc)}", file=source)
    res = Resource(obj=doc, source=source)
    if origin is not None:
        _annotate(res, ORIGIN_ANNOTATION, origin)
    out.append(res)


def _short(doc: dict[str, Any]) -> str:
    text = yamlio.dump(doc).strip().replace("\n", " ")
    return "{" + (text[:80] + "..." if len(text) > 80 else text) + "}"


def _record_transformation(resmap: ResMap, entry: str) -> None:
    """Append one transformer to every resource's transformations annotation."""
    item = "- " + entry.replace("\n", "\n  ").rstrip(" ")
    for res in resmap:
        md = res.metadata
        ann = md.get("annotations")
        if not isinstance(ann, dict):
            ann = md["annotations"] = {}
        ann[TRANSFORMATIONS_ANNOTATION] = (ann.get(TRANSFORMATIONS_ANNOTATION) or "") + item


def strip_annotation(res: Resource, key: str) -> None:
    md = res.obj.get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    if isinstance(ann, dict) and key in ann:
        del ann[key]
        if not ann and isinstance(md, dict):
            del md["annotations"]


def _annotate(res: Resource, key: str, value: str) -> None:
    md = res.metadata
    ann = md.get("annotations")
    if ann is not None and not isinstance(ann, dict):
        raise ValidationError(
            f"cannot add annotation {key}: metadata/annotations is not a map",
            file=res.source,
            resource=res.describe(),
        )
    if ann is None:
        ann = md["annotations"] = {}
    ann[key] = value


def normalise_annotations(res: Resource) -> None:
    # kustomize rewrites every non-empty annotation map as map[string]string at the end
    # (RemoveBuildAnnotations), so non-string values come out as strings, and it drops an
    # empty or null one (kyaml's ClearEmptyAnnotations), unlike empty labels.
    md = res.obj.get("metadata")
    if not isinstance(md, dict):
        return
    ann = md.get("annotations", res)
    if ann is res:
        return
    if not ann or not isinstance(ann, dict):
        del md["annotations"]
        return
    for k, v in ann.items():
        if not isinstance(v, str):
            ann[k] = fbase.scalar_text(v) if not isinstance(v, (dict, list)) else v


def add_managed_by(resources: list[Resource]) -> None:
    """Label every resource ``app.kubernetes.io/managed-by`` (kustomize's managedByLabel)."""
    for r in resources:
        labels = r.metadata.setdefault("labels", {}) or {}
        labels["app.kubernetes.io/managed-by"] = MANAGED_BY
        r.metadata["labels"] = labels


def is_local_config(res: Resource) -> bool:
    md = res.obj.get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    return isinstance(ann, dict) and str(ann.get(LOCAL_CONFIG)) == "true"
