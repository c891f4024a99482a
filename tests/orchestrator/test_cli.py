"""The ``krm`` CLI: output options, ordering, warnings and a light import path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import cli

KUST = """
resources:
- res.yaml
commonLabels:
  app: demo
"""
RES = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
---
apiVersion: v1
kind: Service
metadata:
  name: web
---
apiVersion: v1
kind: Namespace
metadata:
  name: demo
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True
    )


def _kinds(text: str) -> list[str]:
    return [line.split(": ")[1] for line in text.splitlines() if line.startswith("kind: ")]


def test_build_prints_legacy_order_and_warns_on_stderr(tree) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    p = _run("build", str(root))
    assert p.returncode == 0, p.stderr
    assert _kinds(p.stdout) == ["Namespace", "Service", "Deployment"]
    assert "# Warning: 'commonLabels' is deprecated." in p.stderr
    assert "Warning" not in p.stdout


def test_reorder_none_keeps_input_order(tree) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    p = _run("build", str(root), "--reorder", "none")
    assert p.returncode == 0, p.stderr
    assert _kinds(p.stdout) == ["Deployment", "Service", "Namespace"]


def test_output_to_file(tree, tmp_path: Path) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    out = tmp_path / "out.yaml"
    assert cli.main(["build", str(root), "-o", str(out)]) == 0
    assert _kinds(out.read_text()) == ["Namespace", "Service", "Deployment"]


def test_output_to_directory_one_file_per_resource(tree, tmp_path: Path) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    outdir = tmp_path / "out"
    outdir.mkdir()
    assert cli.main(["build", str(root), "-o", str(outdir)]) == 0
    # kustomize's naming: group_version_kind_name, lower case.
    assert sorted(p.name for p in outdir.iterdir()) == [
        "apps_v1_deployment_web.yaml",
        "v1_namespace_demo.yaml",
        "v1_service_web.yaml",
    ]
    assert _kinds((outdir / "v1_service_web.yaml").read_text()) == ["Service"]


def test_output_to_a_directory_that_does_not_exist_yet(tree, tmp_path: Path) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    outdir = tmp_path / "new" / "out"
    assert cli.main(["build", str(root), "-o", f"{outdir}/"]) == 0
    assert sorted(p.name for p in outdir.iterdir()) == [
        "apps_v1_deployment_web.yaml",
        "v1_namespace_demo.yaml",
        "v1_service_web.yaml",
    ]


def test_a_failed_build_creates_no_output_directory(tree, tmp_path: Path, capsys) -> None:
    root = tree({"kustomization.yaml": "resources:\n- missing.yaml\n"})
    outdir = tmp_path / "out"
    assert cli.main(["build", str(root), "-o", f"{outdir}/"]) == 1
    assert "missing.yaml" in capsys.readouterr().err
    assert not outdir.exists()


def test_output_directory_prefixes_namespaces_when_several(tree, tmp_path: Path) -> None:
    res = RES.replace("name: web\n---", "name: web\n  namespace: a\n---", 1)
    root = tree({"kustomization.yaml": KUST, "res.yaml": res})
    outdir = tmp_path / "out"
    outdir.mkdir()
    assert cli.main(["build", str(root), "-o", str(outdir)]) == 0
    assert sorted(p.name for p in outdir.iterdir()) == [
        "a_apps_v1_deployment_web.yaml",
        "default_v1_service_web.yaml",
        "v1_namespace_demo.yaml",
    ]


def test_bad_flag_value_is_a_usage_error(tree) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    p = _run("build", str(root), "--reorder", "random")
    assert p.returncode == 2
    assert "invalid choice: 'random'" in p.stderr


def test_helm_charts_need_enable_helm(tree) -> None:
    root = tree({"kustomization.yaml": "helmCharts:\n- name: mychart\n"})
    p = _run("build", str(root))
    assert p.returncode == 1
    assert p.stderr.strip().endswith("must specify --enable-helm to use helmCharts")


def test_enable_helm_without_helm_binary(tree) -> None:
    root = tree({"kustomization.yaml": "helmCharts:\n- name: mychart\n"})
    p = _run("build", str(root), "--enable-helm", "--helm-command", "no-such-helm-binary")
    assert p.returncode == 1
    assert p.stderr.strip().endswith(
        "helmCharts need the 'no-such-helm-binary' binary, which is not on PATH"
    )


def test_krm_console_script(tree) -> None:
    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    krm = Path(sys.executable).parent / "krm"
    p = subprocess.run([str(krm), "build", str(root)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert _kinds(p.stdout) == ["Namespace", "Service", "Deployment"]


def test_public_api_build(tree) -> None:
    import orchestrator

    root = tree({"kustomization.yaml": KUST, "res.yaml": RES})
    result = orchestrator.build(str(root), orchestrator.BuildOptions(reorder="none"))
    assert [r["kind"] for r in result.resources] == ["Deployment", "Service", "Namespace"]
    assert result.results == []
    assert any("commonLabels" in w for w in result.warnings)
    # Calling it again works too (the submodule import must not shadow the function).
    assert len(orchestrator.build(str(root)).resources) == 3


def test_cli_import_is_light() -> None:
    code = (
        "import sys, json; import orchestrator.cli; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('yaml', 'jsonschema', 'httpx', 'django', 'rest_framework', 'celery', 'catalogs'))))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(p.stdout) == []


# helmCharts with a recording stand-in for helm: tests/orchestrator/test_helm_parity.py.


def test_load_restrictor_flag(tree) -> None:
    root = tree({"app/kustomization.yaml": "resources:\n- ../res.yaml\n", "res.yaml": RES})
    p = _run("build", str(root / "app"))
    assert p.returncode == 1
    assert "security; file " in p.stderr
    p = _run("build", str(root / "app"), "--load-restrictor", "LoadRestrictionsNone")
    assert p.returncode == 0, p.stderr
    assert _kinds(p.stdout) == ["Namespace", "Service", "Deployment"]


def test_sort_options_win_over_reorder_with_a_warning(tree) -> None:
    root = tree({"kustomization.yaml": "resources: [res.yaml]\nsortOptions: {order: fifo}\n"})
    (root / "res.yaml").write_text(RES)
    p = _run("build", str(root), "--reorder", "legacy")
    assert p.returncode == 0, p.stderr
    assert _kinds(p.stdout) == ["Deployment", "Service", "Namespace"]
    assert p.stderr.splitlines() == [
        "Warning: Sorting order is set both in 'kustomization.yaml' ('sortOptions') and in the "
        "CLI flag ('--reorder'). Using the kustomization file over the CLI flag."
    ]


@pytest.mark.parametrize(
    "options, message",
    [
        (
            "{order: fifo, legacySortOptions: {orderFirst: [Namespace]}}",
            "the field 'sortOptions.legacySortOptions' is set but the selected sort order is "
            "'fifo', not 'legacy'",
        ),
        ("{order: random}", "the field 'sortOptions.order' must be one of [fifo, legacy]"),
    ],
)
def test_bad_sort_options_name_the_kustomization(tree, options: str, message: str) -> None:
    root = tree({"kustomization.yaml": f"resources: [res.yaml]\nsortOptions: {options}\n"})
    (root / "res.yaml").write_text(RES)
    p = _run("build", str(root))
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.splitlines() == [f"Error: {root / 'kustomization.yaml'}: {message}"]


_RUN = """
import atexit, sys, threading, time
from orchestrator import cli
atexit.register(lambda: print("atexit ran", flush=False))
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread ran"))).start()
sys.argv = ["krm", "build", "--no-cache", sys.argv[2]]
raise SystemExit(cli.run())
"""


@pytest.mark.parametrize("mode", ["plain", "thread"])
def test_the_program_exits_quickly_but_completely(tree, mode: str) -> None:
    # cli.run ends the process with os._exit after main: buffered output still comes out,
    # atexit handlers still run, and a live thread keeps the usual exit (it finishes).
    root = tree({"kustomization.yaml": "resources: [res.yaml]\n", "res.yaml": RES})
    p = subprocess.run(
        [sys.executable, "-c", _RUN, mode, str(root)], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    assert _kinds(p.stdout.split("atexit ran")[0]) == ["Namespace", "Service", "Deployment"]
    assert p.stdout.rstrip("\n").endswith("atexit ran")
    assert ("thread ran" in p.stdout) is (mode == "thread")


def test_a_closed_pipe_ends_as_the_usual_exit_does(tree) -> None:
    docs = "".join(
        f"kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: c{i}\n---\n" for i in range(20000)
    )
    root = tree({"kustomization.yaml": "resources: [res.yaml]\n", "res.yaml": docs})
    outcomes = []
    for program in (
        "-m orchestrator",
        "-c 'import sys; from orchestrator.cli import main; sys.exit(main())'",
    ):
        p = subprocess.run(
            f"{sys.executable} {program} build --no-cache {root} | head -c 10; "
            'echo " ${PIPESTATUS[0]}"',
            shell=True,
            executable="bash",
            capture_output=True,
            text=True,
        )
        assert "Traceback" not in p.stderr
        outcomes.append((p.stdout, p.stderr.replace(sys.executable, "python")))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0].startswith("apiVersion")
