"""Helm chart inflation (``helmCharts``, ``HelmChartInflationGenerator``) as kustomize v5.5.0.

For each chart: ``helm version -c --short`` (helm 3 is required), ``helm pull --untar`` into
the chart home when the chart is not there yet, then ``helm template`` with one values file
that kustomize writes itself (the chart's or the given values file, merged with
``valuesInline`` per ``valuesMerge``), the additional values files, and the flags the chart
asks for. Every helm call gets ``HELM_CONFIG_HOME``/``HELM_CACHE_HOME``/``HELM_DATA_HOME``
under the configured config home, or under a temporary directory removed afterwards.

The values merge is kyaml's ``merge2`` with no schema (``orchestrator.strategicmerge``):
maps merge key by key, lists are replaced, ``null`` deletes. ``override`` (the default) lets
the inline values win, ``merge`` lets the values file win, ``replace`` passes the inline
values alone.
"""

from __future__ import annotations

import os

from orchestrator import yamlio
from orchestrator.errors import KrmError, LoadError, NotSupportedError, ValidationError
from orchestrator.lazyre import Pattern

_VERSION = Pattern(r"v?\d+(\.\d+)+")  # in `helm version` output

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MERGE_OPTIONS = ("merge", "override", "replace")
DEFAULT_HOME = "charts"

# HelmChartArgs (the deprecated ``helmChartInflationGenerator`` entries) → HelmChart fields.
_LEGACY_FIELDS = {
    "chartName": "name",
    "chartVersion": "version",
    "chartRepoUrl": "repo",
    "values": "valuesFile",
    "valuesLocal": "valuesInline",
    "valuesMerge": "valuesMerge",
    "releaseName": "releaseName",
}


class HelmOptions:
    """What the command line says about helm (kustomize's HelmConfig)."""

    __slots__ = ("command", "api_versions", "kube_version", "debug")

    def __init__(
        self,
        command: str = "helm",
        api_versions: tuple[str, ...] = (),
        kube_version: str = "",
        debug: bool = False,
    ) -> None:
        self.command = command
        self.api_versions = tuple(api_versions)
        self.kube_version = kube_version
        self.debug = debug


def charts_of(kustomization: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(globals, chart) for each chart of a kustomization: ``helmCharts`` and then the
    deprecated ``helmChartInflationGenerator`` entries, converted as kustomize converts them
    (their chart home and helm home become the globals when ``helmGlobals`` is not set)."""
    globals_ = kustomization.get("helmGlobals")
    charts = [c if isinstance(c, dict) else {} for c in kustomization.get("helmCharts") or []]
    legacy_globals: dict[str, Any] = {}
    for old in kustomization.get("helmChartInflationGenerator") or []:
        old = old if isinstance(old, dict) else {}
        charts.append({new: old[k] for k, new in _LEGACY_FIELDS.items() if k in old})
        if old.get("helmHome"):
            legacy_globals["configHome"] = old["helmHome"]
        if old.get("chartHome"):
            legacy_globals["chartHome"] = old["chartHome"]
    if globals_ is None:
        globals_ = legacy_globals
    return [(dict(globals_ or {}), chart) for chart in charts]


def inflate(
    config: dict[str, Any],
    *,
    root: str,
    read: Callable[[str], bytes],
    options: HelmOptions,
    source: str | None,
) -> bytes:
    """``helm template``'s output for one chart config (HelmGlobals and HelmChart fields in
    one map). ``read`` reads a file through the kustomization's loader (root restriction)."""
    import shutil
    import tempfile

    chart = _Chart(config, root=root, read=read, options=options, source=source)
    helm = shutil.which(options.command)
    if helm is None:
        raise NotSupportedError(
            f"helmCharts need the '{options.command}' binary, which is not on PATH",
            file=source,
        )
    with tempfile.TemporaryDirectory(prefix="krm-helm-") as tmp:
        return chart.run(helm, tmp)


def _join(*parts: str) -> str:
    """Go's filepath.Join: joined and cleaned."""
    return os.path.normpath(os.path.join(*parts))


def _text(value: Any) -> str:
    return "" if value is None else str(value)


class _Chart:
    """One chart's configuration, checked as kustomize checks it."""

    def __init__(
        self,
        config: dict[str, Any],
        *,
        root: str,
        read: Callable[[str], bytes],
        options: HelmOptions,
        source: str | None,
    ) -> None:
        self.read, self.source, self.options = read, source, options
        self.name = _text(config.get("name"))
        if not self.name:
            raise ValidationError("chart name cannot be empty", file=source)
        self.version = _text(config.get("version"))
        self.repo = _text(config.get("repo"))
        self.release = _text(config.get("releaseName"))
        self.namespace = _text(config.get("namespace"))
        self.name_template = _text(config.get("nameTemplate"))
        self.inline = config.get("valuesInline") or {}
        if not isinstance(self.inline, dict):
            raise ValidationError("valuesInline must be a map", file=source)
        self.merge = _text(config.get("valuesMerge")) or "override"
        if self.merge not in MERGE_OPTIONS:
            raise ValidationError(
                f"valuesMerge must be one of [{' '.join(MERGE_OPTIONS)}]", file=source
            )
        # The command line's values apply where the chart sets none: kustomize sets them
        # first and then decodes the chart's config over them.
        self.api_versions = list(options.api_versions)
        if "apiVersions" in config:
            self.api_versions = [_text(v) for v in config["apiVersions"] or []]
        self.kube_version = options.kube_version
        if "kubeVersion" in config:
            self.kube_version = _text(config["kubeVersion"])
        # kustomize hands the plugin its config re-encoded with omitempty: "debug: false"
        # never reaches it, so --helm-debug holds for every chart.
        self.debug = options.debug or bool(config.get("debug"))
        self.include_crds = bool(config.get("includeCRDs"))
        self.skip_tests = bool(config.get("skipTests"))
        self.skip_hooks = bool(config.get("skipHooks"))
        home = _text(config.get("chartHome")) or DEFAULT_HOME
        # Paths are joined as Go's filepath.Join does: cleaned (charts/./x is charts/x).
        home = home if os.path.isabs(home) else _join(root, home)
        # A chart pulled by version from a repository has a home of its own.
        if self.version and self.repo:
            home = _join(home, f"{self.name}-{self.version}")
        self.home = home
        self.values_file = _text(config.get("valuesFile")) or _join(home, self.name, "values.yaml")
        self.additional = []
        for path in config.get("additionalValuesFiles") or []:
            try:
                read(_text(path))
            except KrmError as exc:
                exc.message = f"could not load additionalValuesFile: {exc.message}"
                raise
            self.additional.append(_join(root, _text(path)))
        self.config_home = _text(config.get("configHome"))

    def run(self, helm: str, tmp: str) -> bytes:
        config_home = self.config_home or os.path.join(tmp, "helm")
        env = {
            "HELM_CONFIG_HOME": config_home,
            "HELM_CACHE_HOME": f"{config_home}/.cache",
            "HELM_DATA_HOME": f"{config_home}/.data",
        }
        version = self._helm(helm, ["version", "-c", "--short"], env)
        self._check_version(version)
        if not os.path.isdir(os.path.join(self.home, self.name)):
            if not self.repo:
                chart = _join(self.home, self.name)
                raise LoadError(
                    f"no repo specified for pull, no chart found at '{chart}'", file=self.source
                )
            self._helm(helm, self._pull_args(), env)
        values = self._values()
        values_path = os.path.join(tmp, f"{self.name}-kustomize-values.yaml")
        with open(values_path, "wb") as f:
            f.write(values)
        return self._helm(helm, self._template_args(values_path), env)

    def _helm(self, helm: str, args: list[str], env: dict[str, str]) -> bytes:
        import subprocess

        proc = subprocess.run(
            [helm, *args], capture_output=True, env={**os.environ, **env}, check=False
        )
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace").strip()
            if "--debug" in args:
                stdout = proc.stdout.decode("utf-8", "replace")
                stderr = f"Helm stack trace:\n{stderr}\nHelm template:\n{stdout}"
            command = " ".join([self.options.command, *args])
            raise KrmError(
                f"helm failed for chart '{self.name}': '{command}' exited with status "
                f"{proc.returncode}: {stderr or '(no output)'}",
                file=self.source,
            )
        return proc.stdout

    def _check_version(self, out: bytes) -> None:
        found = _VERSION.search(out.decode("utf-8", "replace"))
        if found is None:
            raise KrmError(
                f"cannot find version string in {out.decode('utf-8', 'replace')}",
                file=self.source,
            )
        version = found.group(0).removeprefix("v")
        if version.split(".")[0] != "3":
            raise KrmError(f"this plugin requires helm V3 but got v{version}", file=self.source)

    def _pull_args(self) -> list[str]:
        args = ["pull", "--untar", "--untardir", self.home]
        if self.repo.startswith("oci://"):
            args.append(self.repo.rstrip("/") + "/" + self.name)
        else:
            args += ["--repo", self.repo, self.name]
        if self.version:
            args += ["--version", self.version]
        return args

    def _values(self) -> bytes:
        """The one values file kustomize writes for helm."""
        if not self.inline:
            return self.read(self.values_file)
        inline = self.inline
        if self.merge != "replace":
            from orchestrator import strategicmerge
            from orchestrator.resource import Gvk

            chart_values = yamlio.load(self.read(self.values_file), source=self.values_file)
            if chart_values is None:
                chart_values = {}
            if not isinstance(chart_values, dict):
                raise ValidationError(
                    "could not parse values file into rnode: not a map", file=self.values_file
                )
            # merge2.Merge(src, dest): src's values win. override: the inline values win.
            dest, src = (
                (chart_values, inline) if self.merge == "override" else (inline, chart_values)
            )
            inline = strategicmerge.merge(dest, src, gvk=Gvk("", "", "")) or {}
        return yamlio.dump(inline).encode()

    def _template_args(self, values_path: str) -> list[str]:
        args = ["template", self.release or "--generate-name"]
        args.append(_join(self.home, self.name))
        if self.namespace:
            args += ["--namespace", self.namespace]
        if self.name_template:
            args += ["--name-template", self.name_template]
        args += ["-f", values_path]
        for path in self.additional:
            args += ["-f", path]
        for api_version in self.api_versions:
            args += ["--api-versions", api_version]
        if self.kube_version:
            args += ["--kube-version", self.kube_version]
        if self.include_crds:
            args.append("--include-crds")
        if self.skip_tests:
            args.append("--skip-tests")
        if self.skip_hooks:
            args.append("--no-hooks")
        if self.debug:
            args.append("--debug")
        return args
