"""Terminal escape sequences in documents, through ``krm``: shown as escapes, never acted on.

A catalog whose ``kind`` holds escape sequences (no whitespace needed: ESC [ 1 C moves the
cursor one column) would draw, on the previous line of ``krm view catalog``, a forged
``Signature: verified with key …`` line over the real "none found". The same sequences in a
starlark ``fail()`` message, in a function's results and in a Composition's names reach
stderr and ``krm consolidate``'s comments. Each test checks the exact escaped text and that no
control character other than newline reached the output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Erase the line, go up one, erase it, back to column 1, write the forged line.
FORGED_YAML = (
    r"Fn\e[2K\e[1A\e[2K\e[GSignature:\e[1Cverified\e[1Cwith\e[1Ckey\e[1CSHA256:forged"
    r"\u009b2K\u202eX"
)
FORGED_SHOWN = (
    r"Fn\x1b[2K\x1b[1A\x1b[2K\x1b[GSignature:\x1b[1Cverified\x1b[1Cwith\x1b[1Ckey"
    r"\x1b[1CSHA256:forged\x9b2K\u202eX"
)
CATALOG = f"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: "tools\\e]0;owned\\a"
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: "{FORGED_YAML}"
    versions:
    - name: v1
      runtime:
        starlark:
          uri: https://example.com/fn.star
          sha256: "{"0" * 64}"
"""


def _krm(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def _controls(text: str) -> set[str]:
    """Control characters (C0 but newline, DEL, C1) and bidirectional controls in text."""
    return {
        c
        for c in text
        if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) < 0xA0 or 0x202A <= ord(c) <= 0x202E
    }


def test_view_catalog_shows_escapes_and_no_forged_line(tmp_path: Path) -> None:
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    proc = _krm(tmp_path, "view", "catalog", "catalog.yaml")
    assert (proc.returncode, proc.stderr) == (0, "")
    digest = proc.stdout.splitlines()[2].removeprefix("Digest:    ")
    pad = " " * (len(FORGED_SHOWN) - len("KIND"))
    assert proc.stdout.splitlines() == [
        "Catalog:   tools\\x1b]0;owned\\x07",
        "Publisher: (not stated)",
        f"Digest:    {digest}",
        f"Source:    {tmp_path / 'catalog.yaml'}",
        f"Signature: none found [{tmp_path / 'catalog.yaml'}.sig]",
        "",
        f"APIVERSION      KIND{pad}  RUNTIMES  PLATFORMS  NEEDS",
        f"example.com/v1  {FORGED_SHOWN}  starlark  -          -",
    ]
    assert _controls(proc.stdout) == set()


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_view_catalog_machine_output_escapes_controls(tmp_path: Path, output: str) -> None:
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    proc = _krm(tmp_path, "view", "catalog", "catalog.yaml", "-o", output)
    assert proc.returncode == 0, proc.stderr
    # Both formats escape C0 and C1 controls in their own syntax (YAML keeps bidi controls in
    # the data: it is data, for programs, not a report).
    assert {c for c in _controls(proc.stdout) if not 0x202A <= ord(c) <= 0x202E} == set()
    assert ("\\e[2K" if output == "yaml" else "\\u001b[2K") in proc.stdout


FN = (
    "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\nruntime:\n  starlark:\n"
    "    path: fn.star\n"
)


def _app(tmp_path: Path, script: str) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "r.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    (app / "fn.yaml").write_text(FN)
    (app / "fn.star").write_text(script)
    (app / "kustomization.yaml").write_text("resources: [r.yaml]\ntransformers: [fn.yaml]\n")


def test_build_error_message_escapes_a_functions_text(tmp_path: Path) -> None:
    _app(tmp_path, 'fail("\\x1b[2K\\rbuild \\x1b[32mOK\\x1b[0m\\u202e")\n')
    proc = _krm(tmp_path, "build", "app", "--enable-alpha-plugins")
    assert proc.returncode == 1
    shown = proc.stderr.splitlines()
    assert shown[0] == (
        "Error: function example.com/v1/Fn 'f' (starlark fn.star, from runtime field) failed:"
    )
    assert "error: fail: \\x1b[2K\\rbuild \\x1b[32mOK\\x1b[0m\\u202e" in shown
    assert _controls(proc.stderr) == set()


def test_build_results_summary_escapes_messages(tmp_path: Path) -> None:
    _app(
        tmp_path,
        "ctx.resource_list['results'] = [{'message': 'ok\\x1b]0;owned\\x07\\rdone', "
        "'severity': 'warning'}]\n",
    )
    proc = _krm(tmp_path, "build", "app", "--enable-alpha-plugins")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        "Results of function example.com/v1/Fn 'f' (starlark fn.star, from runtime field):\n"
        "  [warning]: ok\\x1b]0;owned\\x07\\rdone\n"
    )


def test_consolidate_comments_cannot_add_yaml_or_escapes(tmp_path: Path) -> None:
    (tmp_path / "composition.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformers:\n"
        '- apiVersion: example.com/v1\n  kind: "Fn\\ninjected: true\\e[31m"\n'
        "  runtime: {starlark: {path: f.star}}\n"
    )
    proc = _krm(tmp_path, "consolidate", ".")
    assert proc.returncode == 0, proc.stderr
    ident = "example.com_v1_Fn\\ninjected: true\\x1b[31m"
    assert proc.stdout.splitlines()[4] == f"# 1. {ident}|default|fn\\ninjected: true\\x1b[31m"
    assert _controls(proc.stdout) == set()
    import yaml

    doc = yaml.safe_load(proc.stdout)
    assert set(doc) == {"apiVersion", "kind", "transformers"}
