"""Explicit exec functions (runtime field / annotation): flags, failures, environment, cwd."""

from __future__ import annotations

import sys

import pytest

from orchestrator.functions import FunctionError, run_function_config
from orchestrator.resource import Resource

PY = sys.executable


def _res() -> list[Resource]:
    return [Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})]


def _cfg(path: str, how: str = "annotation", **extra: object) -> dict:
    cfg: dict = {"apiVersion": "example.com/v1", "kind": "Fn", "metadata": {"name": "f"}, **extra}
    if how == "annotation":
        cfg["metadata"]["annotations"] = {
            "config.kubernetes.io/function": f"exec:\n  path: {path}\n"
        }
    else:
        cfg["runtime"] = {"exec": {"path": path}}
    return cfg


SCRIPT = f"""#!{PY}
import json, os, sys, yaml
rl = yaml.safe_load(sys.stdin)
for item in rl["items"]:
    item["metadata"].setdefault("annotations", {{}})["seen"] = json.dumps(
        [os.getcwd(), sorted(os.environ), os.environ.get("GREETING", ""),
         rl["functionConfig"]["kind"],
         item["metadata"]["annotations"].get("internal.config.kubernetes.io/path", "")])
yaml.safe_dump(rl, sys.stdout)
"""


@pytest.mark.parametrize("how", ["annotation", "runtime"])
def test_explicit_exec_needs_enable_exec(tmp_path, options, write, how):
    marker = tmp_path / "ran"
    write("fn.sh", f"#!/bin/sh\ntouch {marker}\ncat\n", 0o755)
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg("./fn.sh", how),
            _res(),
            role="transformer",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(),
        )
    assert str(exc.value) == (
        "function example.com/v1/Fn 'f': running exec.path ./fn.sh needs --enable-exec"
    )
    assert not marker.exists()


def test_exec_runs_in_kustomization_dir_with_minimal_env(tmp_path, options, write, monkeypatch):
    import json

    write("app/fn.py", SCRIPT, 0o755)
    monkeypatch.setenv("SECRET_TOKEN", "must-not-leak")
    monkeypatch.setenv("GREETING", "hello")
    out = run_function_config(
        _cfg("./fn.py", "runtime"),
        _res(),
        role="transformer",
        kustomization_dir=str(tmp_path / "app"),
        catalogs=None,
        options=options(enable_exec=True, env=["GREETING", "EXTRA=1"]),
    )
    seen = json.loads(out.resources[0].obj["metadata"]["annotations"]["seen"])
    cwd, env_names, greeting, fc_kind, path = seen
    assert cwd == str(tmp_path / "app")
    assert "SECRET_TOKEN" not in env_names
    assert {"GREETING", "EXTRA", "PATH"} <= set(env_names)
    assert greeting == "hello"
    assert fc_kind == "Fn"
    assert path == "configmap_a.yaml"
    # internal annotations are gone from the result
    assert set(out.resources[0].obj["metadata"]["annotations"]) == {"seen"}


def test_nonzero_exit_fails_with_stderr(tmp_path, options, write):
    write("fn.sh", "#!/bin/sh\necho 'bad config: replicas missing' >&2\nexit 3\n", 0o755)
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg("./fn.sh"),
            _res(),
            role="transformer",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_exec=True),
        )
    assert str(exc.value) == (
        "function example.com/v1/Fn 'f' (exec ./fn.sh, from annotation) failed with exit code 3:\n"
        "bad config: replicas missing"
    )


def test_error_result_fails_and_is_written_to_results_dir(tmp_path, options, write):
    write(
        "fn.sh",
        "#!/bin/sh\ncat >/dev/null\necho warn >&2\ncat <<'E'\n"
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n"
        "- message: replicas must be set\n  severity: error\n"
        "  resourceRef: {apiVersion: apps/v1, kind: Deployment, name: web}\nE\n",
        0o755,
    )
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg("./fn.sh"),
            _res(),
            role="transformer",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_exec=True, results_dir=str(tmp_path / "res")),
        )
    assert str(exc.value) == (
        "function example.com/v1/Fn 'f' (exec ./fn.sh, from annotation) reported errors:\n"
        "Results of function example.com/v1/Fn 'f' (exec ./fn.sh, from annotation):\n"
        "  [error] apps/v1/Deployment/web: replicas must be set\n"
        "stderr:\nwarn"
    )
    text = (tmp_path / "res" / "results.yaml").read_text()
    assert "kind: FunctionResultList" in text and "replicas must be set" in text
    assert "exitCode: 1" in text


def test_generator_gets_no_items_and_returns_generated(tmp_path, options, write):
    write(
        "gen.sh",
        "#!/bin/sh\ngrep -c 'name: a' >&2 || true\ncat <<'E'\n"
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: generated}}\nE\n",
        0o755,
    )
    out = run_function_config(
        _cfg("./gen.sh"),
        _res(),
        role="generator",
        kustomization_dir=str(tmp_path),
        catalogs=None,
        options=options(enable_exec=True),
    )
    assert [r.name for r in out.resources] == ["generated"]
    assert out.stderr.strip() == "0"


def test_validator_output_is_discarded_and_must_not_modify(tmp_path, options, write):
    write("ok.sh", "#!/bin/sh\ncat\n", 0o755)
    res = _res()
    out = run_function_config(
        _cfg("./ok.sh"),
        res,
        role="validator",
        kustomization_dir=str(tmp_path),
        catalogs=None,
        options=options(enable_exec=True),
    )
    assert out.resources == res
    write("bad.sh", "#!/bin/sh\nsed 's/name: a/name: z/'\n", 0o755)
    with pytest.raises(FunctionError) as exc:
        run_function_config(
            _cfg("./bad.sh"),
            res,
            role="validator",
            kustomization_dir=str(tmp_path),
            catalogs=None,
            options=options(enable_exec=True),
        )
    assert str(exc.value).endswith("is a validator but modified the resources")
    assert res[0].obj["metadata"]["name"] == "a"
