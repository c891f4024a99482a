"""kustomize's ``build`` flags that krm takes too, ``krm version`` and ``krm completion``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator import cli

RES = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  labels: null
data:
  x: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
"""


def _krm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cwd or Path.cwd()) + "/.cache"}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


def test_enable_managedby_label_writes_what_kubectl_writes_for_build_metadata(tree, oracle):
    # kubectl kustomize has no such flag; kustomize's flag does what buildMetadata:
    # [managedByLabel] does, so the oracle is that field, and the label's value is kubectl's.
    flagged = tree({"flag/kustomization.yaml": "resources: [res.yaml]\n", "flag/res.yaml": RES})
    tree(
        {
            "meta/kustomization.yaml": "resources: [res.yaml]\nbuildMetadata: [managedByLabel]\n",
            "meta/res.yaml": RES,
        }
    )
    expected = oracle(flagged / "meta")
    assert expected.returncode == 0, expected.stderr
    p = _krm("build", "--enable-managedby-label", str(flagged / "flag"), cwd=flagged)
    assert p.returncode == 0, p.stderr
    assert p.stdout == expected.stdout.decode()
    labels = [d["metadata"]["labels"] for d in yaml.safe_load_all(p.stdout)]
    assert labels == [
        {"app.kubernetes.io/managed-by": "kustomize-(devel)"},
        {"app": "web", "app.kubernetes.io/managed-by": "kustomize-(devel)"},
    ]
    plain = _krm("build", str(flagged / "flag"), cwd=flagged)
    assert "managed-by" not in plain.stdout  # the cached build is keyed by the flag too


@pytest.mark.parametrize(
    "flags",
    [["--network-name", "kind"], ["--as-current-user"], ["--network-name=x", "--as-current-user"]],
)
def test_function_flags_are_accepted_like_kubectl(tree, oracle, flags):
    root = tree({"kustomization.yaml": "resources: [res.yaml]\n", "res.yaml": RES})
    expected = oracle(root, *flags)
    assert expected.returncode == 0, expected.stderr
    p = _krm("build", str(root), *flags, cwd=root)
    assert p.returncode == 0, p.stderr
    assert p.stdout == expected.stdout.decode()


def test_stack_trace_shows_the_traceback(tree):
    root = tree({"kustomization.yaml": "resources: [missing.yaml]\n"})
    short = _krm("build", str(root), cwd=root)
    assert short.returncode == 1
    assert short.stderr.startswith("Error: ") and "Traceback" not in short.stderr
    for argv in (["build", str(root), "--stack-trace"], ["--stack-trace", "build", str(root)]):
        long = _krm(*argv, cwd=root)
        assert long.returncode == 1
        assert "Traceback (most recent call last)" in long.stderr
        assert "resource 'missing.yaml' does not exist" in long.stderr


def test_version_line_and_details(tmp_path):
    p = _krm("version", cwd=tmp_path)
    assert p.returncode == 0
    assert p.stdout == "krm v0.1.0 (kustomize v5.5.0)\n"
    details = json.loads(_krm("version", "-o", "json", cwd=tmp_path).stdout)
    assert details["version"] == "v0.1.0" and details["kustomizeVersion"] == "v5.5.0"
    assert yaml.safe_load(_krm("version", "-o", "yaml", cwd=tmp_path).stdout) == details
    bad = _krm("version", "-o", "xml", cwd=tmp_path)
    assert bad.returncode == 2
    assert "argument -o/--output: invalid choice: 'xml'" in bad.stderr


def test_completion_refuses_an_unknown_shell(tmp_path):
    p = _krm("completion", "tcsh", cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert "argument shell: invalid choice: 'tcsh' (choose from 'bash', 'zsh', 'fish')" in p.stderr


# (words typed, the word being completed) -> the completions every shell must offer.
CASES = [
    (
        ["krm", ""],
        [
            "build",
            "catalog",
            "completion",
            "consolidate",
            "create",
            "edit",
            "fn",
            "init",
            "push",
            "trust",
            "version",
            "view",
        ],
    ),
    (["krm", "bu"], ["build"]),
    (["krm", "build", "--reo"], ["--reorder"]),
    (["krm", "edit", ""], ["add", "alpha-list-builtin-plugin", "fix", "remove", "set"]),
    (["krm", "edit", "set", "im"], ["image"]),
    (["krm", "build", "--reorder", ""], ["legacy", "none"]),
    (["krm", "build", "-o", "out", "--container-runtime", ""], ["builtin", "docker", "podman"]),
    (["krm", "completion", ""], ["bash", "fish", "zsh"]),
    (["krm", "--debug", "view", "c"], ["catalog"]),
    (["krm", "build", "--enable-m"], ["--enable-managedby-label"]),
]


def _script(shell: str, tmp_path: Path) -> Path:
    path = tmp_path / f"krm.{shell}"
    path.write_text(_krm("completion", shell, cwd=tmp_path).stdout)
    return path


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_completion(tmp_path):
    script = _script("bash", tmp_path)
    for words, expected in CASES:
        quoted = " ".join(f"'{w}'" for w in words)
        probe = (
            f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
            '_krm_completions; printf "%s\\n" "${COMPREPLY[@]}"'
        )
        out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
        assert sorted(out.stdout.split()) == expected, words


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh not installed")
def test_zsh_completion(tmp_path):
    script = _script("zsh", tmp_path)
    for words, expected in CASES:
        quoted = " ".join(f"'{w}'" for w in words)
        probe = (
            f"autoload -U compinit && compinit -u -d {tmp_path}/zcompdump; source {script}; "
            f"setopt ksharrays; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
            '_krm_completions; print -l -- "${COMPREPLY[@]}"; print -- "${_comps[krm]}"'
        )
        out = subprocess.run(
            ["zsh", "-f", "-c", probe],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        *got, registered = out.stdout.splitlines()
        assert registered == "_bash_complete -o filenames -F _krm_completions"
        # zsh's compgen leaves matching the typed prefix to compadd, as the shell does here.
        assert sorted(w for w in got if w and w.startswith(words[-1])) == expected, words


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish not installed")
def test_fish_completion(tmp_path):
    script = _script("fish", tmp_path)
    for words, expected in CASES:
        line = " ".join(words)
        out = subprocess.run(
            ["fish", "--no-config", "-c", f"source {script}; complete -C '{line}'"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        got = sorted(row.split("\t")[0] for row in out.stdout.splitlines())
        assert got == expected, words


def test_completion_covers_every_command_and_flag():
    # A flag added later completes without touching the completion module.
    from orchestrator import completion

    text = completion.bash(cli._parser())
    for flag in ("--enable-managedby-label", "--network-name", "--as-current-user", "--offline"):
        assert flag in text
    assert (
        "'build view fn trust edit create init catalog consolidate push version completion'" in text
    )
    assert "--base-key" in text


def test_the_version_is_the_installed_distributions() -> None:
    """``krm version`` reads the package's __version__, from which pyproject.toml takes the
    distribution's (no metadata lookup at run time): the two must be one."""
    from importlib import metadata

    import orchestrator

    assert metadata.version("krm-catalog-registry") == orchestrator.__version__
