"""The starlark runtime: kpt/kustomize ctx API, print capture, errors, verified URLs, catalogs."""

from __future__ import annotations

import hashlib

import pytest

from orchestrator.functions import (
    CatalogSet,
    FetchError,
    FunctionError,
    TrustConfig,
    run_function_config,
)
from orchestrator.resource import Resource

# A typical kpt starlark function: top-level loop, mutation in place, functionConfig params.
SET_NS = """
def set_namespace(resources, namespace):
  for r in resources:
    r["metadata"]["namespace"] = namespace

ns = ctx.resource_list["functionConfig"]["spec"]["namespace"]
set_namespace(ctx.resource_list["items"], ns)
for r in ctx.resource_list["items"]:
  print("set", r["metadata"]["name"])
"""


def _res(n: int = 2) -> list[Resource]:
    return [
        Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
        for i in range(n)
    ]


def _cfg(**runtime: object) -> dict:
    return {
        "apiVersion": "example.com/v1",
        "kind": "SetNamespace",
        "metadata": {"name": "ns"},
        "spec": {"namespace": "prod"},
        **({"runtime": {"starlark": runtime}} if runtime else {}),
    }


def test_kpt_api_mutates_in_place_and_print_goes_to_stderr(tmp_path, write, options, capfd):
    write("set-ns.star", SET_NS)
    out = run_function_config(
        _cfg(path="set-ns.star"),
        _res(),
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=None,
        options=options(enable_alpha_plugins=True),
    )
    assert [r.obj["metadata"] for r in out.resources] == [
        {"name": "c0", "namespace": "prod"},
        {"name": "c1", "namespace": "prod"},
    ]
    assert out.stderr == "set c0\nset c1"
    assert capfd.readouterr().out == ""  # nothing on the build's stdout


def test_environment_open_api_results_and_generated_items(tmp_path, write, options):
    write(
        "s.star",
        'ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "ConfigMap",\n'
        '  "metadata": {"name": "env"}, "data": {"who": ctx.environment["WHO"],\n'
        '  "schema": str(len(ctx.open_api()))}})\n'
        'ctx.resource_list["results"] = [{"message": "made one", "severity": "info"}]\n',
    )
    out = run_function_config(
        _cfg(path="s.star"),
        _res(1),
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=None,
        options=options(enable_alpha_plugins=True, env=["WHO=me"]),
        openapi={"definitions": {}},
    )
    assert out.resources[1].obj["data"] == {"who": "me", "schema": "1"}
    assert out.results == [{"message": "made one", "severity": "info"}]


def test_script_error_is_reported_with_location(tmp_path, write, options):
    write("bad.star", 'print("before")\nfail("namespace is required")\n')
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg(path="bad.star"),
            _res(),
            role="transformer",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_alpha_plugins=True),
        )
    text = str(exc.value)
    assert text.startswith(
        "function example.com/v1/SetNamespace 'ns' (starlark bad.star, from runtime field) "
        "failed:\nbefore\n"
    )
    assert "namespace is required" in text and "bad.star:2" in text


def test_infinite_loop_times_out(tmp_path, write, options):
    write("loop.star", "def f():\n  for i in range(1000000000):\n    pass\nf()\n")
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg(path="loop.star"),
            _res(),
            role="transformer",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_alpha_plugins=True, timeout=0.5),
        )
    assert str(exc.value).endswith("timed out after 0.5s")


def test_url_with_sha256_verified(tmp_path, https_server, options):
    https_server.files["/s.star"] = SET_NS.encode()
    sha = hashlib.sha256(SET_NS.encode()).hexdigest()
    url = https_server.url("s.star")
    out = run_function_config(
        _cfg(url=url, sha256=sha),
        _res(),
        role="transformer",
        kustomization_dir=str(tmp_path),
        catalogs=None,
        options=options(enable_alpha_plugins=True, ca_file=https_server.ca_file),
    )
    assert out.resources[0].namespace == "prod"
    https_server.files["/s.star"] = b'fail("tampered")\n'
    with pytest.raises(FetchError) as exc:
        run_function_config(
            _cfg(url=url, sha256=sha),
            _res(),
            role="transformer",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(
                enable_alpha_plugins=True,
                ca_file=https_server.ca_file,
                cache_dir=str(tmp_path / "c2"),
            ),
        )
    assert str(exc.value).startswith(f"sha256 mismatch for {url}: expected {sha}, got ")


def test_catalog_starlark_remote_needs_sha256(tmp_path, https_server, write, options):
    https_server.files["/s.star"] = SET_NS.encode()
    url = https_server.url("s.star")
    sha = hashlib.sha256(SET_NS.encode()).hexdigest()
    cat = (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: s\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: SetNamespace\n"
        "    versions:\n    - name: v1\n      runtime:\n        starlark:\n"
        f"          uri: {url}\n{{sha}}"
    )
    write("good.yaml", cat.format(sha=f"          sha256: {sha}\n"))
    write("nosha.yaml", cat.format(sha=""))
    for name, ok in (("good.yaml", True), ("nosha.yaml", False)):
        opts = options(ca_file=https_server.ca_file)
        trust = TrustConfig.load([str(tmp_path / name)], config=str(tmp_path / "none"))
        cs = CatalogSet.for_kustomization(
            [], kustomization_dir=str(tmp_path), trust=trust, options=opts
        )
        cfg = _cfg()
        if ok:
            out = run_function_config(
                cfg,
                _res(),
                role="transformer",
                kustomization_dir=str(tmp_path),
                catalogs=cs,
                options=opts,
            )
            assert out.resources[0].namespace == "prod"
        else:
            with pytest.raises(FunctionError) as exc:
                run_function_config(
                    cfg,
                    _res(),
                    role="transformer",
                    kustomization_dir=str(tmp_path),
                    catalogs=cs,
                    options=opts,
                )
            assert str(exc.value) == (
                f"starlark {url} in catalog {tmp_path / name} has no sha256; refusing an "
                "unverified script"
            )


def test_validator_may_reorder_and_label_validated_by_but_not_modify(tmp_path, write, options):
    # kustomize compares a validator's output as a set and ignores its validated-by label.
    write(
        "ok.star",
        "items = ctx.resource_list['items']\n"
        "for r in items:\n"
        "  r['metadata'].setdefault('labels', {})['validated-by'] = 'ok'\n"
        "ctx.resource_list['items'] = [items[1], items[0]]\n",
    )
    res = _res()
    out = run_function_config(
        _cfg(path="ok.star"),
        res,
        role="validator",
        kustomization_dir=str(tmp_path),
        catalogs=None,
        options=options(enable_alpha_plugins=True),
    )
    assert out.resources == res
    assert [r.obj["metadata"] for r in res] == [{"name": "c0"}, {"name": "c1"}]
    write(
        "bad.star",
        "ctx.resource_list['items'][0]['metadata'].setdefault('labels', {})['other'] = 'x'\n",
    )
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg(path="bad.star"),
            res,
            role="validator",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_alpha_plugins=True),
        )
    assert str(exc.value) == (
        "function example.com/v1/SetNamespace 'ns' (starlark bad.star, from runtime field) is a "
        "validator but modified the resources"
    )
    write("drop.star", "ctx.resource_list['items'] = ctx.resource_list['items'][:1]\n")
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg(path="drop.star"),
            res,
            role="validator",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_alpha_plugins=True),
        )
    assert str(exc.value).endswith("is a validator but modified the resources")
    assert [r.obj["metadata"] for r in res] == [{"name": "c0"}, {"name": "c1"}]
