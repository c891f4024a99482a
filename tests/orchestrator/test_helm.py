"""``helmCharts`` against ``kubectl kustomize`` (v5.5) through a recording stand-in for helm.

Both tools run the same stand-in (``--helm-command``), which records every call: its arguments
(paths shown relative to the kustomization's directory, a values file as its parsed content),
and the ``HELM_*`` homes it was given; ``pull`` writes a chart where it is told to, ``template``
prints a ConfigMap. Each case is one field of a chart (or one flag) and must give the same calls
and the same output in both tools. A stand-in is used because there is no helm on this machine
and a real helm would need real charts and repositories; the stand-in is a real executable that
both tools run as they would run helm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")

STAND_IN = r"""#!{python}
import json, os, sys
import yaml

args = sys.argv[1:]
record = {"args": [], "values": [], "homes": None}
root = os.environ["HELM_TEST_ROOT"]
config_home = os.environ.get("HELM_CONFIG_HOME", "")
record["homes"] = [
    "<root>" + config_home[len(root):] if config_home.startswith(root)
    else os.path.basename(config_home),
    os.environ.get("HELM_CACHE_HOME", "") == config_home + "/.cache",
    os.environ.get("HELM_DATA_HOME", "") == config_home + "/.data",
]
previous = ""
for arg in args:
    if previous == "-f":
        with open(arg) as f:
            record["values"].append(yaml.safe_load(f))
        if arg.startswith(root):
            arg = "<root>" + arg[len(root):]
        else:
            arg = "<tmp>/" + os.path.basename(arg)
    elif arg.startswith(root):
        arg = "<root>" + arg[len(root):]
    record["args"].append(arg)
    previous = arg
with open(os.environ["HELM_RECORD"], "a") as f:
    f.write(json.dumps(record) + "\n")
if args[:1] == ["version"]:
    print("v3.16.2+g13654a5")
elif args[:1] == ["pull"]:
    home = args[args.index("--untardir") + 1]
    name = args[-1] if "--version" not in args else args[args.index("--version") - 1]
    name = name.rsplit("/", 1)[-1]
    os.makedirs(os.path.join(home, name), exist_ok=True)
    with open(os.path.join(home, name, "values.yaml"), "w") as f:
        f.write("pulled: true\nreplicas: 1\n")
elif args[:1] == ["template"]:
    release = args[1] if args[1] != "--generate-name" else "generated"
    print("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  n: '%d'"
          % (release, len(args)))
"""

CHART_VALUES = (
    "replicas: 1\nimage:\n  repository: nginx\n  tag: '1.0'\nlist: [a, b]\n"
    "containers:\n- name: app\n  port: 80\n- name: side\n  port: 81\n"
)

CASES = {
    "release-name": "helmCharts:\n- name: web\n  releaseName: rel\n",
    "generate-name": "helmCharts:\n- name: web\n",
    "namespace-and-template": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  namespace: ns\n"
        "  nameTemplate: x-{{ .Release.Name }}\n"
    ),
    "values-file": "helmCharts:\n- name: web\n  releaseName: rel\n  valuesFile: my-values.yaml\n",
    "inline-override": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  valuesInline:\n    replicas: 3\n"
        "    image:\n      tag: '2.0'\n    list: [c]\n    containers:\n    - name: side\n"
        "      port: 90\n    - name: extra\n      port: 91\n"
    ),
    "inline-merge": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  valuesMerge: merge\n  valuesInline:\n"
        "    replicas: 3\n    image:\n      pullPolicy: Always\n"
    ),
    "inline-replace": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  valuesMerge: replace\n"
        "  valuesFile: my-values.yaml\n  valuesInline:\n    replicas: 3\n"
    ),
    "inline-null-removes": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  valuesInline:\n    image: null\n"
    ),
    "additional-values": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  additionalValuesFiles:\n"
        "  - extra/one.yaml\n  - extra/two.yaml\n"
    ),
    "api-and-kube-versions": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  apiVersions: [v1, apps/v1]\n"
        "  kubeVersion: '1.29'\n"
    ),
    "flags": (
        "helmCharts:\n- name: web\n  releaseName: rel\n  includeCRDs: true\n  skipTests: true\n"
        "  skipHooks: true\n"
    ),
    "pull-from-repo": (
        "helmCharts:\n- name: remote\n  repo: https://charts.example.com\n  releaseName: r\n"
    ),
    "pull-version-home": (
        "helmCharts:\n- name: remote\n  repo: https://charts.example.com\n  version: 1.2.3\n"
        "  releaseName: r\n"
    ),
    "pull-oci": (
        "helmCharts:\n- name: remote\n  repo: oci://registry.example.com/charts/\n"
        "  version: 0.1.0\n  releaseName: r\n"
    ),
    "globals-chart-home": (
        "helmGlobals:\n  chartHome: other-charts\nhelmCharts:\n- name: web\n  releaseName: rel\n"
    ),
    "config-home": (
        "helmGlobals:\n  configHome: HOME_DIR\nhelmCharts:\n- name: web\n  releaseName: rel\n"
    ),
    "two-charts": (
        "helmCharts:\n- name: web\n  releaseName: one\n- name: web\n  releaseName: two\n"
        "  namespace: b\n"
    ),
    "legacy-generator": (
        "helmChartInflationGenerator:\n- chartName: web\n  releaseName: old\n"
        "  values: my-values.yaml\n"
    ),
}

# A HelmChartInflationGenerator config under generators: (helmCharts and helmGlobals fields
# inline).
GENERATOR = (
    "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: h\n"
    "name: web\nreleaseName: gen\nchartHome: other-charts\nvaluesInline:\n  replicas: 9\n"
)
CASES["generators-field"] = "generators:\n- helm.yaml\n"

FLAG_CASES = {
    "cli-api-versions": ["--helm-api-versions", "v2,batch/v1", "--helm-api-versions", "x/v1"],
    "cli-kube-version": ["--helm-kube-version", "1.30"],
    "cli-debug": ["--helm-debug"],
}


def _tree(root: Path, kustomization: str) -> None:
    root.mkdir(parents=True)
    (root / "kustomization.yaml").write_text(kustomization.replace("HOME_DIR", str(root / "h")))
    for home in ("charts", "other-charts"):
        (root / home / "web").mkdir(parents=True)
        (root / home / "web" / "values.yaml").write_text(CHART_VALUES)
    (root / "my-values.yaml").write_text("replicas: 5\nimage:\n  tag: mine\n")
    (root / "extra").mkdir()
    (root / "extra" / "one.yaml").write_text("one: 1\n")
    (root / "extra" / "two.yaml").write_text("two: 2\n")
    (root / "helm.yaml").write_text(GENERATOR)


def _run(tool: list[str], root: Path, stand_in: Path, record: Path) -> tuple[str, list]:
    env = {**os.environ, "HELM_RECORD": str(record), "HELM_TEST_ROOT": str(root)}
    proc = subprocess.run(
        [*tool, "--enable-helm", "--helm-command", str(stand_in), str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    return proc.stdout, calls


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    path = tmp_path / "helm"
    path.write_text(STAND_IN.replace("{python}", sys.executable))
    path.chmod(0o755)
    return path


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (the kustomize oracle) is not installed")
@pytest.mark.parametrize("case", [*CASES, *FLAG_CASES])
def test_helm_calls_match_kustomize(case, tmp_path, stand_in):
    kustomization = CASES.get(case) or "helmCharts:\n- name: web\n  releaseName: rel\n"
    flags = FLAG_CASES.get(case, [])
    got = {}
    for name, tool in (
        ("kustomize", [KUBECTL, "kustomize", *flags]),
        ("krm", [sys.executable, "-m", "orchestrator", "build", "--no-cache", *flags]),
    ):
        root = tmp_path / name / "k"
        _tree(root, kustomization)
        got[name] = _run(tool, root, stand_in, tmp_path / f"{name}.jsonl")
    assert got["krm"][1] == got["kustomize"][1]
    assert got["krm"][0] == got["kustomize"][0]
    assert any(call["args"][0] == "template" for call in got["krm"][1])


ERROR_CASES = {
    "bad-merge": (
        "helmCharts:\n- name: web\n  valuesMerge: bogus\n  valuesInline: {a: 1}\n",
        "valuesMerge must be one of [merge override replace]",
    ),
    "no-chart-no-repo": (
        "helmCharts:\n- name: missing\n",
        "no repo specified for pull, no chart found at '",  # krm names the path
    ),
    "no-name": ("helmCharts:\n- releaseName: x\n", "chart name cannot be empty"),
    "additional-values-outside": (
        "helmCharts:\n- name: web\n  additionalValuesFiles: [../outside.yaml]\n",
        "could not load additionalValuesFile",
    ),
}


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (the kustomize oracle) is not installed")
@pytest.mark.parametrize("case", ERROR_CASES)
def test_helm_errors_match_kustomize(case, tmp_path, stand_in):
    kustomization, reason = ERROR_CASES[case]
    for name, tool in (
        ("kustomize", [KUBECTL, "kustomize"]),
        ("krm", [sys.executable, "-m", "orchestrator", "build", "--no-cache"]),
    ):
        root = tmp_path / name / "k"
        _tree(root, kustomization)
        (root.parent / "outside.yaml").write_text("x: 1\n")
        env = {
            **os.environ,
            "HELM_RECORD": str(tmp_path / f"{name}.jsonl"),
            "HELM_TEST_ROOT": str(root),
        }
        proc = subprocess.run(
            [*tool, "--enable-helm", "--helm-command", str(stand_in), str(root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 1, (name, proc.stdout)
        assert reason in proc.stderr, (name, proc.stderr)
        assert proc.stdout == ""


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (the kustomize oracle) is not installed")
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("v2.17.0+ga690bad", "this plugin requires helm V3 but got v2.17.0"),
        ("no version here", "cannot find version string in no version here"),
    ],
)
def test_helm_version_is_checked_like_kustomize(tmp_path, answer, reason):
    helm = tmp_path / "helm2"
    helm.write_text(f"#!/bin/sh\necho '{answer}'\n")
    helm.chmod(0o755)
    for name, tool in (
        ("kustomize", [KUBECTL, "kustomize"]),
        ("krm", [sys.executable, "-m", "orchestrator", "build", "--no-cache"]),
    ):
        root = tmp_path / name / "k"
        _tree(root, "helmCharts:\n- name: web\n  releaseName: rel\n")
        proc = subprocess.run(
            [*tool, "--enable-helm", "--helm-command", str(helm), str(root)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1 and proc.stdout == "", name
        assert reason in proc.stderr, (name, proc.stderr)
