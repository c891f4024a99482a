"""``helmCharts``: chart inflation exactly as kustomize v5.5's HelmChartInflationGenerator.

For each chart (``helmGlobals`` applied to each ``helmCharts`` entry; the deprecated
``helmChartInflationGenerator`` list is converted as kustomize converts it), the helm binary is
run as kustomize runs it, with the same arguments, values and environment:

1. ``helm version -c --short``: the output must name a version 3.
2. When ``<chartHome>/<name>`` is not a directory (``chartHome`` is ``<chartHome>/<name>-<version>``
   when both ``version`` and ``repo`` are given), ``helm pull --untar --untardir <chartHome>``
   with ``--repo REPO NAME`` (or ``oci://REPO/NAME`` for an OCI repository) and
   ``--version``; no ``repo`` is an error.
3. A values file in a temporary directory (``<name>-kustomize-values.yaml``): the ``valuesFile``
   (default ``<chartHome>/<name>/values.yaml``) read through the loader, or, with
   ``valuesInline``, the inline values merged with it (``override``, the default: inline values
   win; ``merge``: the file's win) or alone (``replace``).
4. ``helm template RELEASE|--generate-name <chartHome>/<name> [--namespace NS]
   [--name-template T] -f VALUES [-f ADDITIONAL]... [--api-versions V]... [--kube-version V]
   [--include-crds] [--skip-tests] [--no-hooks] [--debug]``.

Every command runs with ``HELM_CONFIG_HOME`` (``configHome``, default ``<tmp>/helm``),
``HELM_CACHE_HOME=<that>/.cache`` and ``HELM_DATA_HOME=<that>/.data``. ``--helm-api-versions``,
``--helm-kube-version`` and ``--helm-debug`` override the charts' own fields.
"""

from __future__ import annotations

import os
import re

from orchestrator.errors import KrmError, LoadError, ValidationError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

DEFAULT_HOME = "charts"
MERGE_OPTIONS = ("merge", "override", "replace")
_VERSION = re.compile(r"v?\d+(\.\d+)+")


def charts_of(k: dict[str, Any]) -> list[dict[str, Any]]:
    """The plugin configs kustomize makes of a kustomization: ``helmGlobals`` merged into each
    ``helmCharts`` entry, after the deprecated ``helmChartInflationGenerator`` entries are
    converted and appended (their last non-empty ``helmHome``/``chartHome`` are the globals
    when ``helmGlobals`` is absent)."""
    charts = [dict(c) if isinstance(c, dict) else c for c in k.get("helmCharts") or []]
    globals_ = k.get("helmGlobals")
    legacy = k.get("helmChartInflationGenerator") or []
    if legacy:
        converted_globals: dict[str, Any] = {}
        for old in legacy:
            if not isinstance(old, dict):
                raise ValidationError(f"invalid helmChartInflationGenerator entry {old!r}")
            chart = {
                "name": old.get("chartName"),
                "version": old.get("chartVersion"),
                "repo": old.get("chartRepoUrl"),
                "valuesFile": old.get("values"),
                "valuesInline": old.get("valuesLocal"),
                "valuesMerge": old.get("valuesMerge"),
                "releaseName": old.get("releaseName"),
            }
            charts.append({key: v for key, v in chart.items() if v})
            if old.get("helmHome"):
                converted_globals["configHome"] = old["helmHome"]
            if old.get("chartHome"):
                converted_globals["chartHome"] = old["chartHome"]
        if globals_ is None:
            globals_ = converted_globals
    out = []
    for chart in charts:
        if not isinstance(chart, dict):
            raise ValidationError(f"invalid helmCharts entry {chart!r}")
        out.append({**(globals_ or {}), **chart})
    return out


def _merge(src: Any, dest: Any) -> Any:
    """kyaml's merge2.Merge(src, dest) as kustomize calls it on values (no schema): src's fields
    win, maps merge field by field, a null in src removes the field, lists (of maps too) and
    scalars are replaced (checked against kustomize: lists are not merged by ``name``)."""
    if isinstance(src, dict) and isinstance(dest, dict):
        out = dict(dest)
        for key, value in src.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = _merge(value, out[key])
            else:
                out[key] = value
        return out
    return src


class Inflator:
    """Runs helm for one kustomization's charts (kustomize's plugin, one instance per chart)."""

    def __init__(
        self, read_file: Callable[[str], bytes], root: str, options: Any, source: str | None
    ) -> None:
        self.read_file = read_file  # under the load restrictor
        self.root = root
        self.options = options
        self.source = source
        self.command = options.helm_command

    def inflate(self, chart: dict[str, Any]) -> bytes:
        """The output of ``helm template`` for one chart config."""
        import shutil
        import tempfile

        config = self._validated(chart)
        tmp = tempfile.mkdtemp(prefix="kustomize-helm-")
        try:
            config_home = config.get("configHome") or os.path.join(tmp, "helm")
            env = {
                "HELM_CONFIG_HOME": config_home,
                "HELM_CACHE_HOME": f"{config_home}/.cache",
                "HELM_DATA_HOME": f"{config_home}/.data",
            }
            self._check_version(env)
            home = self._chart_home(config)
            chart_dir = os.path.join(home, config["name"])
            if not os.path.isdir(chart_dir):
                if not config.get("repo"):
                    # kustomize names the path only when something that is no directory is there.
                    shown = chart_dir if os.path.exists(chart_dir) else ""
                    raise LoadError(
                        f"no repo specified for pull, no chart found at '{shown}'",
                        file=self.source,
                    )
                self._run(self._pull_args(config, home), env)
            config["valuesFile"] = self._values_file(config, tmp)
            return self._run(self._template_args(config, home), env)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _validated(self, chart: dict[str, Any]) -> dict[str, Any]:
        config = dict(chart)
        if not config.get("name"):
            raise ValidationError("chart name cannot be empty", file=self.source)
        for key in ("name", "version", "repo", "releaseName", "namespace", "nameTemplate"):
            if key in config and config[key] is not None and not isinstance(config[key], str):
                config[key] = str(config[key])
        if not config.get("chartHome"):
            config["chartHome"] = DEFAULT_HOME
        if not config.get("valuesFile"):
            config["valuesFile"] = os.path.join(
                self._chart_home(config), config["name"], "values.yaml"
            )
        additional = []
        for path in config.get("additionalValuesFiles") or []:
            try:
                self.read_file(str(path))  # the load restrictor applies, as in kustomize
            except LoadError as exc:
                raise LoadError(
                    f"could not load additionalValuesFile: {exc.message}", file=self.source
                ) from None
            additional.append(os.path.join(self.root, str(path)))
        config["additionalValuesFiles"] = additional
        merge = config.get("valuesMerge") or "override"
        if merge not in MERGE_OPTIONS:
            raise ValidationError(
                f"valuesMerge must be one of [{' '.join(MERGE_OPTIONS)}]", file=self.source
            )
        config["valuesMerge"] = merge
        # The command line's flags win over the chart's fields (kustomize's Config).
        if self.options.helm_kube_version:
            config["kubeVersion"] = self.options.helm_kube_version
        if self.options.helm_api_versions:
            config["apiVersions"] = list(self.options.helm_api_versions)
        if self.options.helm_debug:
            config["debug"] = True
        return config

    def _chart_home(self, config: dict[str, Any]) -> str:
        home = str(config.get("chartHome") or DEFAULT_HOME)
        if not os.path.isabs(home):
            home = os.path.join(self.root, home)
        if config.get("version") and config.get("repo"):
            return os.path.join(home, f"{config['name']}-{config['version']}")
        return home

    def _run(self, args: list[str], env: dict[str, str]) -> bytes:
        import subprocess

        try:
            proc = subprocess.run(
                [self.command, *args],
                capture_output=True,
                env={**os.environ, **env},
                check=False,
            )
        except OSError as exc:
            raise KrmError(
                f"unable to run: '{self.command} {' '.join(args)}' (is '{self.command}' "
                f"installed?): {exc.strerror or exc}",
                file=self.source,
            ) from None
        if proc.returncode != 0:
            stderr = proc.stderr.decode("utf-8", "replace").strip()
            raise KrmError(
                f"{stderr}: unable to run: '{self.command} {' '.join(args)}' (is "
                f"'{self.command}' installed?): exit status {proc.returncode}",
                file=self.source,
            )
        return bytes(proc.stdout)

    def _check_version(self, env: dict[str, str]) -> None:
        out = self._run(["version", "-c", "--short"], env).decode("utf-8", "replace")
        found = _VERSION.search(out)
        if found is None:
            raise KrmError(f"cannot find version string in {out}", file=self.source)
        version = found.group(0).removeprefix("v")
        if version.split(".")[0] != "3":
            raise KrmError(f"this plugin requires helm V3 but got v{version}", file=self.source)

    @staticmethod
    def _pull_args(config: dict[str, Any], home: str) -> list[str]:
        args = ["pull", "--untar", "--untardir", home]
        repo = str(config.get("repo") or "")
        if repo.startswith("oci://"):
            args.append(repo.rstrip("/") + "/" + config["name"])
        else:
            args += ["--repo", repo, config["name"]]
        if config.get("version"):
            args += ["--version", str(config["version"])]
        return args

    def _values_file(self, config: dict[str, Any], tmp: str) -> str:
        """The values file kustomize writes for helm (see the module's docstring)."""
        from orchestrator import yamlio

        inline = config.get("valuesInline")
        path = os.path.join(tmp, f"{config['name']}-kustomize-values.yaml")
        if inline:
            values = inline
            if config["valuesMerge"] in ("merge", "override"):
                loaded = yamlio.load(
                    self.read_file(config["valuesFile"]), source=config["valuesFile"]
                )
                chart_values = loaded if isinstance(loaded, dict) else {}
                if config["valuesMerge"] == "override":
                    values = _merge(inline, chart_values)
                else:
                    values = _merge(chart_values, inline)
            data = yamlio.dump(values).encode()
        else:
            data = self.read_file(config["valuesFile"])
        with open(path, "wb") as f:
            f.write(data)
        return path

    @staticmethod
    def _template_args(config: dict[str, Any], home: str) -> list[str]:
        args = ["template"]
        args += [config["releaseName"]] if config.get("releaseName") else ["--generate-name"]
        args.append(os.path.join(home, config["name"]))
        if config.get("namespace"):
            args += ["--namespace", config["namespace"]]
        if config.get("nameTemplate"):
            args += ["--name-template", config["nameTemplate"]]
        args += ["-f", config["valuesFile"]]
        for path in config["additionalValuesFiles"]:
            args += ["-f", path]
        for version in config.get("apiVersions") or []:
            args += ["--api-versions", str(version)]
        if config.get("kubeVersion"):
            args += ["--kube-version", str(config["kubeVersion"])]
        for flag, field in (
            ("--include-crds", "includeCRDs"),
            ("--skip-tests", "skipTests"),
            ("--no-hooks", "skipHooks"),
            ("--debug", "debug"),
        ):
            if config.get(field):
                args.append(flag)
        return args
