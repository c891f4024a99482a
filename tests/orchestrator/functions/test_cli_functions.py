"""``krm build`` with functions and catalogs, and ``krm view catalog``, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from orchestrator.functions.resolve import host_platform


def _krm(*args: str, home, cwd=None) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def _setup(tmp_path, kit, write):
    sha = kit.make_tgz(tmp_path / "fn.tgz", {"bin/fn": kit.LABEL_FN})
    os_name, arch = host_platform()
    write(
        "catalog.yaml",
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: local\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Labeler\n"
        "    publisher: tests\n    versions:\n    - name: v1\n      runtime:\n        exec:\n"
        f"          platforms:\n          - bin: bin/fn\n            os: {os_name}\n"
        f"            arch: {arch}\n            uri: file://{tmp_path / 'fn.tgz'}\n"
        f'            sha256: "{sha}"\n',
    )
    write(
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\ncatalogs:\n- ../catalog.yaml\ntransformers:\n- labeler.yaml\n",
    )
    write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    write("app/labeler.yaml", "apiVersion: example.com/v1\nkind: Labeler\nmetadata:\n  name: l\n")
    return tmp_path / "app"


def test_build_with_catalogs_field_and_trust(tmp_path, kit, write):
    app = _setup(tmp_path, kit, write)
    home = tmp_path / "home"
    proc = _krm("build", "app", home=home, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "Error: app/kustomization.yaml: catalog ../catalog.yaml is not trusted: pass "
        f"--trusted-catalog={tmp_path / 'catalog.yaml'} after reviewing it with "
        "'krm view catalog'\n"
    )
    assert proc.stdout == ""
    proc = _krm(
        "build",
        str(app),
        f"--trusted-catalog={tmp_path / 'catalog.yaml'}",
        "--results-dir",
        str(tmp_path / "results"),
        home=home,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    exec-fn: ran\n  name: a\n"
    )
    results = (tmp_path / "results" / "results.yaml").read_text()
    assert "kind: FunctionResultList" in results and "exitCode: 0" in results


def test_view_catalog_table_and_json(tmp_path, kit, write):
    _setup(tmp_path, kit, write)
    proc = _krm("view", "catalog", "catalog.yaml", home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "Catalog:   local"
    assert "example.com/v1  Labeler  exec" in proc.stdout
    proc = _krm(
        "view", "catalog", "catalog.yaml", "-o", "json", home=tmp_path / "home", cwd=tmp_path
    )
    data = json.loads(proc.stdout)
    assert data["functions"][0]["needs"] == ["exec binary"]
    proc = _krm("view", "catalog", "missing.yaml", home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"Error: cannot fetch catalog missing.yaml: cannot read {tmp_path / 'missing.yaml'}"
    )


def test_cli_import_stays_light(tmp_path):
    code = (
        "import sys, orchestrator.cli as c; c._parser(); "
        "print(sorted(m for m in sys.modules if m.startswith('orchestrator.functions')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert proc.stdout.strip() == "['orchestrator.functions', 'orchestrator.functions.cli']"


def test_results_summary_printed_and_written(tmp_path, write):
    write(
        "app/warn.star",
        "ctx.resource_list['results'] = [\n"
        "  {'message': 'no owner label', 'severity': 'warning', 'resourceRef': {'apiVersion': 'v1',"
        " 'kind': 'ConfigMap', 'name': 'a'}, 'field': {'path': 'metadata.labels'},"
        " 'file': {'path': 'cm.yaml'}, 'tags': {'rule': 'owner'}},\n"
        "  {'message': 'checked 1 resource'}]\n",
    )
    write(
        "app/check.yaml",
        "apiVersion: fn.example.com/v1\nkind: Check\nmetadata:\n  name: check\n"
        "runtime:\n  starlark:\n    path: warn.star\n",
    )
    write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    write("app/kustomization.yaml", "resources:\n- cm.yaml\nvalidators:\n- check.yaml\n")
    proc = _krm(
        "build",
        "app",
        "--results-dir",
        "out",
        "--enable-alpha-plugins",
        home=tmp_path / "home",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
    assert proc.stderr == (
        "Results of function fn.example.com/v1/Check 'check' (starlark warn.star, from runtime "
        "field):\n"
        "  [warning] v1/ConfigMap/a field metadata.labels file cm.yaml: no owner label\n"
        "  [info]: checked 1 resource\n"
    )
    import yaml

    doc = yaml.safe_load((tmp_path / "out" / "results.yaml").read_text())
    assert doc["apiVersion"] == "kpt.dev/v1" and doc["kind"] == "FunctionResultList"
    assert doc["exitCode"] == 0
    (item,) = doc["items"]
    assert item["starlark"] == "warn.star" and item["exitCode"] == 0
    assert item["results"][0]["tags"] == {"rule": "owner"}
    assert item["results"][1] == {"message": "checked 1 resource"}


def test_summaries_of_functions_before_a_failure_still_print(tmp_path, write):
    write(
        "app/warn.star",
        "ctx.resource_list['results'] = [{'message': 'looks odd', 'severity': 'warning'}]\n",
    )
    write(
        "app/fail.star",
        "ctx.resource_list['results'] = [{'message': 'broken', 'severity': 'error'}]\n",
    )
    for kind in ("Warn", "Fail"):
        write(
            f"app/{kind.lower()}.yaml",
            f"apiVersion: fn.example.com/v1\nkind: {kind}\nmetadata:\n  name: {kind.lower()}\n"
            f"runtime:\n  starlark:\n    path: {kind.lower()}.star\n",
        )
    write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    write(
        "app/kustomization.yaml", "resources:\n- cm.yaml\nvalidators:\n- warn.yaml\n- fail.yaml\n"
    )
    proc = _krm("build", "app", "--enable-alpha-plugins", home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    warn = "function fn.example.com/v1/Warn 'warn' (starlark warn.star, from runtime field)"
    fail = "function fn.example.com/v1/Fail 'fail' (starlark fail.star, from runtime field)"
    assert proc.stderr == (
        f"Results of {warn}:\n  [warning]: looks odd\n"
        f"Error: {fail} reported errors:\nResults of {fail}:\n  [error]: broken\n"
    )


def test_function_without_runtime_names_the_kustomization_file(tmp_path, write):
    write("app/fn.yaml", "apiVersion: fn.example.com/v1\nkind: Nope\nmetadata:\n  name: nope\n")
    write("app/kustomization.yaml", "transformers:\n- fn.yaml\n")
    proc = _krm("build", "app", home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "Error: app/kustomization.yaml: no runtime for fn.example.com/v1 Nope: no catalog "
        "defines it; catalogs searched: none (add catalogs: or --trusted-catalog)\n"
    )
