"""Kustomizations that name a file out of their root, through ``krm build``.

Every path a kustomization names reaches the file system through the load restrictor of that
kustomization's directory (``orchestrator.fs.Loader``), whichever field names it and whether or
not a parent kustomization already did the same job (the schema). Each case of
``engine_inputs.ROOT_ESCAPES`` is a base under an overlay naming a private file by absolute
path: the build fails with one line naming the file and the root, exit 1, nothing of the file
is printed or written, an existing ``-o`` file keeps its content and nothing runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile import engine_inputs as ei

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "previous good output\n"
RESOURCE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n"
# Stands in for helm (not installed here): answers kustomize's `helm version -c --short`;
# otherwise prints its -f values file into a ConfigMap, and leaves a mark that it ran.
FAKE_HELM = """#!/bin/sh
if [ "$1" = version ]; then echo v3.16.2; exit 0; fi
touch "$(dirname "$0")/helm-ran"
while [ $# -gt 0 ]; do
  if [ "$1" = -f ]; then values=$2; fi
  shift
done
printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: values\\ndata:\\n  v: |\\n'
sed 's/^/    /' "$values"
"""


def _tree(tmp_path: Path, case: ei.RootEscape) -> tuple[Path, Path, str]:
    """Write the private files, the overlay and the base; returns (base, private file, its
    path as the kustomization names it)."""
    private = tmp_path / "private"
    private.mkdir()
    for name, text in ei.PRIVATE_FILES.items():
        (private / name).write_text(text)
    out = str(private / case.out)
    app = tmp_path / "app"
    base = app / "base"
    base.mkdir(parents=True)
    (app / "kustomization.yaml").write_text("resources: [base]\n" + case.overlay)
    (base / "r.yaml").write_text(RESOURCE)
    (base / "kustomization.yaml").write_text(case.base.replace("{out}", out))
    for name, text in (case.files or {}).items():
        target = base / name
        target.parent.mkdir(parents=True, exist_ok=True)
        text = text.replace("{out}", out)
        if text.startswith("-> "):
            target.symlink_to(text[3:])
        else:
            target.write_text(text)
    (tmp_path / "helm").write_text(FAKE_HELM)
    (tmp_path / "helm").chmod(0o755)
    return base, private / case.out, out


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


def _expected(case: str, base: str, out: str) -> str:
    """The one line ``krm build`` prints for a case (after ``Error: ``)."""
    refused = f"security; file '{out}' is not in or below '{base}'"
    fn = "function example.com/v1/Fn 'f'"
    return {
        "openapi-read-by-starlark-after-parent-schema": f"{out}: {refused}",
        "openapi-after-parent-schema": f"{out}: {refused}",
        "openapi": f"{out}: {refused}",
        "crds": f"{out}: {refused}",
        "resources": f"{out}: {refused}",
        "configMapGenerator-files": f"{out}: configMapGenerator 'c': file sources: [{out}]: "
        f"{refused}",
        "configMapGenerator-envs": f"{out}: configMapGenerator 'c': env source files: [{out}]: "
        f"{refused}",
        "secretGenerator-files": f"{out}: secretGenerator 's': file sources: [{out}]: {refused}",
        "patches": f"{out}: {refused}",
        "patchesStrategicMerge": f"{out}: {refused}",
        "replacements": f"{out}: {refused}",
        "configurations": f"{out}: {refused}",
        "transformers-file": f"{out}: {refused}",
        "starlark-path": f"{fn} (starlark {out}, from annotation): {refused}",
        "starlark-url-file": f"{fn} (starlark file://{out}, from annotation): {refused}",
        "starlark-path-symlink": f"{fn} (starlark link.star, from annotation): "
        f"security; file '{out}' is not in or below '{base}'",
        "helm-valuesFile": f"{out}: {refused}",
    }[case]


@pytest.mark.parametrize("case", sorted(ei.ROOT_ESCAPES))
def test_a_path_out_of_the_root_is_refused(tmp_path: Path, case: str) -> None:
    base, private, out = _tree(tmp_path, ei.ROOT_ESCAPES[case])
    (tmp_path / "out.yaml").write_text(PREVIOUS)
    proc = _krm(
        tmp_path,
        "build",
        "app",
        "-o",
        "out.yaml",
        "--enable-alpha-plugins",
        "--enable-helm",
        f"--helm-command={tmp_path / 'helm'}",
    )
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        1,
        f"Error: {_expected(case, str(base), out)}\n",
        "",
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS
    assert not any(s in proc.stderr for s in ei.SECRETS)
    assert not (tmp_path / "helm-ran").exists()
    assert private.read_text() == ei.PRIVATE_FILES[private.name]


@pytest.mark.parametrize("case", sorted(ei.ROOT_ESCAPES))
def test_load_restrictions_none_lets_the_user_read_it(tmp_path: Path, case: str) -> None:
    """The same trees build (or fail for another reason) when the user lifts the restriction:
    the refusal above is the load restrictor's, not a field that never works."""
    _tree(tmp_path, ei.ROOT_ESCAPES[case])
    proc = _krm(
        tmp_path,
        "build",
        "app",
        "--load-restrictor=LoadRestrictionsNone",
        "--enable-alpha-plugins",
        "--enable-helm",
        f"--helm-command={tmp_path / 'helm'}",
    )
    assert "is not in or below" not in proc.stderr


@pytest.mark.parametrize("how", ["absolute", "relative"])
def test_a_composition_starlark_path_out_of_the_root_is_refused(tmp_path: Path, how: str) -> None:
    private = tmp_path / "private"
    private.mkdir()
    (private / "git-credentials").write_text(ei.PRIVATE_FILES["git-credentials"])
    app = tmp_path / "app"
    app.mkdir()
    path = str(private / "git-credentials") if how == "absolute" else "../private/git-credentials"
    (app / "composition.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformers:\n"
        f"- apiVersion: example.com/v1\n  kind: Fn\n  runtime: {{starlark: {{path: '{path}'}}}}\n"
    )
    (tmp_path / "out.yaml").write_text(PREVIOUS)
    proc = _krm(tmp_path, "build", "app", "-o", "out.yaml", "--enable-alpha-plugins")
    out = private / "git-credentials"
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        'Error: transformer "example.com_v1_Fn|default|fn" (app/composition.yaml:4 '
        "(transformers[0])): function example.com/v1/Fn 'fn' (starlark "
        f"{out}, from runtime field): security; file '{out}' is not in or below '{app}'\n"
    )
    assert not any(s in proc.stderr for s in ei.SECRETS)
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS
