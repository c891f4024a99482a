"""The build adapter: FunctionsContext and FunctionPlugin over a real ResMap; CLI flag parsing."""

from __future__ import annotations

import argparse

import pytest

from orchestrator.errors import LoadError
from orchestrator.functions import CatalogTrustError, FunctionError
from orchestrator.functions import cli as fcli
from orchestrator.functions.plugin import FunctionsContext
from orchestrator.resource import ResMap, Resource

STAR = (
    'for r in ctx.resource_list["items"]:\n  r["metadata"]["name"] = "x-" + r["metadata"]["name"]\n'
)
GEN = (
    'ctx.resource_list["items"].append(\n'
    '  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gen"}})\n'
)


def _cfg(path: str) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "F", "runtime": {"starlark": {"path": path}}}


def test_transform_generate_validate_through_resmap(tmp_path, write, options, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write("t.star", STAR)
    write("g.star", GEN)
    ctx = FunctionsContext(
        options(enable_alpha_plugins=True, results_dir=str(tmp_path / "res")), []
    )
    cs = ctx.catalogs([], str(tmp_path), None)
    assert ctx.catalogs([], str(tmp_path), None) is cs  # one set per kustomization
    rm = ResMap([Resource(obj={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})])
    ctx.plugin(
        _cfg("t.star"), role="transformer", kustomization_dir=str(tmp_path), catalogs=cs
    ).transform(rm)
    assert [r.name for r in rm] == ["x-s"]
    made = ctx.plugin(
        _cfg("g.star"), role="generator", kustomization_dir=str(tmp_path), catalogs=cs
    ).generate()
    assert [r.name for r in made] == ["gen"]
    write("v.star", "print(len(ctx.resource_list['items']))\n")
    ctx.plugin(
        _cfg("v.star"), role="validator", kustomization_dir=str(tmp_path), catalogs=cs
    ).transform(rm)
    assert [r.name for r in rm] == ["x-s"]
    with pytest.raises(FunctionError) as exc:
        ctx.plugin(
            _cfg("g.star"), role="validator", kustomization_dir=str(tmp_path), catalogs=cs
        ).transform(rm)
    assert str(exc.value).endswith("is a validator but modified the resources")
    assert [r.name for r in rm] == ["x-s"]
    assert len(ctx.results) == 4
    assert (tmp_path / "res" / "results.yaml").is_file()


def test_untrusted_catalogs_field(tmp_path, write, options, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    ctx = FunctionsContext(options(enable_alpha_plugins=True), [])
    with pytest.raises(CatalogTrustError) as exc:
        ctx.catalogs(["c.yaml"], str(tmp_path), "kustomization.yaml")
    assert str(exc.value) == (
        f"kustomization.yaml: catalog c.yaml is not trusted: pass --trusted-catalog="
        f"{tmp_path / 'c.yaml'} after reviewing it with 'krm view catalog'"
    )


def test_cli_flags():
    p = argparse.ArgumentParser()
    fcli.add_build_flags(p)
    args = p.parse_args(
        [
            "--trusted-catalog=a",
            "--trusted-catalog",
            "b",
            "--enable-exec",
            "--enable-alpha-plugins",
            "--network",
            "--mount",
            "type=bind,src=/a,dst=/b",
            "-e",
            "K=V",
            "--env",
            "X",
            "--results-dir",
            "r",
            "--container-runtime",
            "podman",
            "--offline",
        ]
    )
    assert args.trusted_catalog == ["a", "b"]
    o = fcli.fn_options(args)
    assert o.enable_alpha_plugins is True
    assert (o.enable_exec, o.network, o.offline, o.container_runtime, o.results_dir) == (
        True,
        True,
        True,
        "podman",
        "r",
    )
    assert o.mounts == ["type=bind,src=/a,dst=/b"] and o.env == ["K=V", "X"]


def test_open_api_from_kustomization_openapi_path(tmp_path, write, options, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write("schema.json", '{"definitions": {"io.example.App": {"type": "object"}}}')
    write(
        "o.star",
        'ctx.resource_list["items"][0]["metadata"]["annotations"] = {\n'
        '  "defs": ",".join(sorted(ctx.open_api().get("definitions", {}).keys()))}\n',
    )
    ctx = FunctionsContext(options(enable_alpha_plugins=True), [])
    rm = ResMap([Resource(obj={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})])
    cs = ctx.catalogs([], str(tmp_path), None)
    ctx.plugin(
        _cfg("o.star"),
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=cs,
        openapi={"path": "schema.json"},
    ).transform(rm)
    assert rm.resources()[0].obj["metadata"]["annotations"] == {"defs": "io.example.App"}
    ctx.plugin(
        _cfg("o.star"),
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=cs,
        openapi={"version": "v1.21.2"},
    ).transform(rm)
    assert rm.resources()[0].obj["metadata"]["annotations"] == {"defs": ""}


def test_open_api_path_out_of_the_root_is_refused_without_a_loader(
    tmp_path, write, options, monkeypatch
):
    # A caller that passes no read_file gets a loader of kustomization_dir: the same
    # restriction as the build's own loader, so ctx.open_api() cannot hand out a file
    # from outside, whoever set the openapi: field.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    write("private/kubeconfig.yaml", "users: [{token: SECRET}]\n")
    write("app/o.star", 'ctx.resource_list["items"][0]["data"] = ctx.open_api()\n')
    ctx = FunctionsContext(options(enable_alpha_plugins=True), [])
    rm = ResMap([Resource(obj={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})])
    outside = str(tmp_path / "private" / "kubeconfig.yaml")
    with pytest.raises(LoadError) as exc:
        ctx.plugin(
            _cfg("o.star"),
            role="transformer",
            kustomization_dir=str(tmp_path / "app"),
            catalogs=ctx.catalogs([], str(tmp_path / "app"), None),
            openapi={"path": outside},
            source="app/kustomization.yaml",
        ).transform(rm)
    assert str(exc.value) == (
        f"app/kustomization.yaml: openapi: security; file '{outside}' is not in or below "
        f"'{tmp_path / 'app'}'"
    )
    assert rm.resources()[0].obj == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
    }
