"""Functions inside a real build: generators, transformers, validators, components, order."""

from __future__ import annotations

import pytest

from orchestrator.build import BuildOptions, build
from orchestrator.errors import KrmError
from orchestrator.functions import FnOptions

GEN = (
    'ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "ConfigMap",\n'
    '  "metadata": {"name": "generated"}, "data": {"from": "starlark"}})\n'
)
CHECK = (
    "for r in ctx.resource_list['items']:\n"
    "  if r['kind'] == 'Deployment' and 'replicas' not in r['spec']:\n"
    "    ctx.resource_list['results'] = [{'message': 'replicas must be set',"
    " 'severity': 'error', 'resourceRef': {'apiVersion': 'apps/v1', 'kind': 'Deployment',"
    " 'name': r['metadata']['name']}}]\n"
)
LABEL = (
    "for r in ctx.resource_list['items']:\n"
    "  r['metadata'].setdefault('labels', {})['seen-prefix'] = "
    "str(r['metadata']['name'].startswith('p-'))\n"
)


def _fn(kind: str, script: str) -> str:
    return (
        f"apiVersion: fn.example.com/v1\nkind: {kind}\nmetadata:\n  name: {kind.lower()}\n"
        f"runtime:\n  starlark:\n    path: {script}\n"
    )


def _opts(tmp_path, *, alpha: bool = False, **kw) -> BuildOptions:
    # alpha: --enable-alpha-plugins, which starlark named by the kustomization itself needs.
    fn = FnOptions(cache_dir=str(tmp_path / "cache"), enable_alpha_plugins=alpha)
    return BuildOptions(functions=fn, **kw)


@pytest.fixture(autouse=True)
def _no_official_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_generator_runs_before_builtin_transformers(tmp_path, write):
    write("gen.star", GEN)
    write("label.star", LABEL)
    write("gen.yaml", _fn("Gen", "gen.star"))
    write("label.yaml", _fn("Label", "label.star"))
    write(
        "kustomization.yaml",
        "namePrefix: p-\ngenerators:\n- gen.yaml\ntransformers:\n- label.yaml\n",
    )
    result = build(str(tmp_path), _opts(tmp_path, alpha=True))
    (cm,) = result.resources
    # the generated ConfigMap got the prefix; the transformers: function ran after the builtins
    assert cm["metadata"] == {"name": "p-generated", "labels": {"seen-prefix": "True"}}
    assert [r.get("starlark") for r in result.results] == ["gen.star", "label.star"]


def test_validator_error_fails_build_and_output_is_discarded(tmp_path, write):
    write("check.star", CHECK)
    write("check.yaml", _fn("Check", "check.star"))
    write("d.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec: {}\n")
    write("kustomization.yaml", "resources:\n- d.yaml\nvalidators:\n- check.yaml\n")
    with pytest.raises(KrmError) as exc:
        build(str(tmp_path), _opts(tmp_path, alpha=True))
    assert "[error] apps/v1/Deployment/web: replicas must be set" in str(exc.value)
    write(
        "d.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n",
    )
    result = build(str(tmp_path), _opts(tmp_path, alpha=True))
    assert result.resources[0]["spec"] == {"replicas": 1}


def test_component_catalogs_and_trusted_flag(tmp_path, write):
    write(
        "catalog.yaml",
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        "spec:\n  krmFunctions:\n  - group: fn.example.com\n    names:\n      kind: Label\n"
        f"    versions:\n    - name: v1\n      runtime:\n        starlark:\n"
        f"          path: {tmp_path / 'label.star'}\n",
    )
    write("label.star", LABEL)
    write(
        "comp/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncatalogs:\n"
        "- ../catalog.yaml\ntransformers:\n- label.yaml\n",
    )
    write("comp/label.yaml", "apiVersion: fn.example.com/v1\nkind: Label\nmetadata:\n  name: l\n")
    write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p-x\n")
    write("kustomization.yaml", "resources:\n- cm.yaml\ncomponents:\n- comp\n")
    with pytest.raises(KrmError) as exc:
        build(str(tmp_path), _opts(tmp_path))
    assert "catalog ../catalog.yaml is not trusted" in str(exc.value)
    result = build(
        str(tmp_path), _opts(tmp_path, trusted_catalogs=[str(tmp_path / "catalog.yaml")])
    )
    assert result.resources[0]["metadata"]["labels"] == {"seen-prefix": "True"}


WARN = (
    "ctx.resource_list['results'] = [{'message': 'no owner label', 'severity': 'warning',"
    " 'resourceRef': {'apiVersion': 'v1', 'kind': 'ConfigMap', 'name': 'a'}}]\n"
)


def test_python_api_prints_nothing_and_returns_the_results(tmp_path, write, capfd):
    import yaml

    write("warn.star", WARN)
    write("warn.yaml", _fn("Warn", "warn.star"))
    write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    write("kustomization.yaml", "resources:\n- cm.yaml\nvalidators:\n- warn.yaml\n")
    opts = _opts(tmp_path, alpha=True)
    opts.functions.results_dir = str(tmp_path / "out")
    result = build(str(tmp_path), opts)
    # The engine returns data; only the CLI formats it.
    assert capfd.readouterr() == ("", "")
    warning = {
        "message": "no owner label",
        "severity": "warning",
        "resourceRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "a"},
    }
    assert result.results == [
        {
            "function": "function fn.example.com/v1/Warn 'warn' (starlark warn.star, from "
            "runtime field)",
            "starlark": "warn.star",
            "exitCode": 0,
            "results": [warning],
        }
    ]
    # results.yaml keeps kpt's item shape: the readable name is left out.
    doc = yaml.safe_load((tmp_path / "out" / "results.yaml").read_text())
    assert doc["items"] == [{"starlark": "warn.star", "exitCode": 0, "results": [warning]}]


def test_function_without_runtime_or_catalog_names_the_kustomization(tmp_path, write):
    write("fn.yaml", "apiVersion: fn.example.com/v1\nkind: Nope\nmetadata:\n  name: nope\n")
    write("kustomization.yaml", "transformers:\n- fn.yaml\n")
    opts = _opts(tmp_path)
    opts.functions.results_dir = str(tmp_path / "out")
    with pytest.raises(KrmError) as exc:
        build(str(tmp_path), opts)
    kfile = str(tmp_path / "kustomization.yaml")
    assert exc.value.file == kfile
    assert str(exc.value) == (
        f"{kfile}: no runtime for fn.example.com/v1 Nope: no catalog defines it; catalogs "
        "searched: none (add catalogs: or --trusted-catalog)"
    )
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was recorded
