"""``krm edit fix`` and ``krm create`` (kustomize v5.5's cases), and ``kubectl kustomize``
building every tree the commands wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TAIL = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
SERVICE = "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n"
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.0
"""


def _builds_like_kubectl(path: Path, oracle) -> str:
    """Build ``path`` with kubectl kustomize and krm; both must succeed with the same bytes."""
    want = oracle(path)
    assert want.returncode == 0, want.stderr.decode()
    got = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", str(path)], capture_output=True
    )
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == want.stdout
    return want.stdout.decode()


def test_fix_moves_legacy_fields_and_the_build_is_unchanged(edit, oracle, capsys):
    (edit.path / "deploy.yaml").write_text(DEPLOYMENT)
    (edit.path / "smp.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n"
    )
    edit.write(
        "# the app\nresources:\n- deploy.yaml\ncommonLabels:\n  team: a\n"
        "patchesStrategicMerge:\n- smp.yaml\n"
        "patchesJson6902:\n- path: j.yaml\n  target:\n    kind: Deployment\n    name: web\n"
    )
    (edit.path / "j.yaml").write_text("- op: add\n  path: /metadata/annotations\n  value: {a: b}\n")
    before = _builds_like_kubectl(edit.path, oracle)
    capsys.readouterr()
    code, err = edit("edit", "fix")
    assert code == 0, err
    # kustomize's message, and no warning: the build did not change.
    assert edit.out.startswith("\nFixed fields:\n")
    assert edit.out.endswith("where the change is easy to undo.\n")
    assert edit.read() == (
        "# the app\nresources:\n- deploy.yaml\n"
        + TAIL
        + "labels:\n- includeSelectors: true\n  pairs:\n    team: a\n"
        "patches:\n- path: j.yaml\n  target:\n    kind: Deployment\n    name: web\n"
        "- path: smp.yaml\n"
    )
    after = _builds_like_kubectl(edit.path, oracle)
    assert after == before


def test_fix_prints_kustomizes_message(edit, capsys):
    edit.write("resources: []\n")
    cli_out = subprocess.run(
        [sys.executable, "-m", "orchestrator", "edit", "fix"],
        capture_output=True,
        text=True,
        cwd=edit.path,
    )
    assert cli_out.returncode == 0
    assert cli_out.stdout.startswith(
        "\nFixed fields:\n  patchesJson6902 -> patches\n  patchesStrategicMerge -> patches\n"
    )
    assert "resource files \nand the resulting" in cli_out.stdout
    # The build fails before and after (no resources): kustomize warns with the new error.
    assert "Warning: 'Fixed' kustomization now produces the error when running" in cli_out.stdout


def test_fix_refuses_a_label_in_both_fields(edit):
    edit.write("commonLabels:\n  a: b\nlabels:\n- pairs:\n    a: c\n")
    assert edit.fails("edit", "fix").endswith(
        "label name 'a' exists in both commonLabels and labels\n"
    )


def test_create_with_no_flags(edit):
    edit.ok("create")
    assert edit.read() == TAIL


def test_create_with_every_flag(edit):
    (edit.path / "foo.yaml").write_text("")
    (edit.path / "bar.yaml").write_text("")
    text = edit.ok(
        "create",
        "--resources",
        "foo.yaml,bar.yaml",
        "--namespace",
        "foo",
        "--labels",
        "foo:bar,app",
        "--annotations",
        'foo:"bar:baz"',
        "--nameprefix",
        "foo-",
        "--namesuffix=-foo",
    )
    assert text == TAIL + (
        "resources:\n- foo.yaml\n- bar.yaml\n"
        "namePrefix: foo-\nnameSuffix: -foo\nnamespace: foo\n"
        'commonLabels:\n  app: ""\n  foo: bar\n'
        "commonAnnotations:\n  foo: bar:baz\n"
    )


def test_create_refusals_write_nothing(edit):
    (edit.path / "foo.yaml").write_text("")
    missing = edit.path / "bar.yaml"
    assert edit.fails("create", "--resources", "foo.yaml,bar.yaml") == (
        "bar.yaml has no match: must build at directory: evalsymlink failure on "
        f"'{missing}' : lstat {missing}: no such file or directory\n"
    )
    assert edit.fails("create", "--labels", ":x") == (
        "invalid label: ':x' (need k:v pair where v may be quoted)\n"
    )
    assert not (edit.path / "kustomization.yaml").exists()
    edit.write("resources: []\n")
    assert edit.fails("init") == "kustomization file already exists\n"


def _detect_tree(root: Path) -> None:
    (root / "test.yaml").write_text("\n" + SERVICE.format(name="test"))
    (root / "README.md").write_text("\n# Not a k8s resource\nThis file is not a valid object.")
    (root / "non-k8s.yaml").write_text("\n# Not a k8s resource\nother: yaml\nfoo:\n- bar\n- baz")
    (root / "sub").mkdir()
    (root / "sub" / "test.yaml").write_text(SERVICE.format(name="test2"))
    (root / "sub" / "README.md").write_text("\n# Not a k8s resource\nNot an object either.")
    (root / "sub" / "non-k8s.yaml").write_text("other: yaml\n")
    (root / "overlay").mkdir()
    (root / "overlay" / "test.yaml").write_text(SERVICE.format(name="test3"))
    (root / "overlay" / "kustomization.yaml").write_text("resources:\n- test.yaml\n")


def test_create_autodetect(edit, oracle):
    _detect_tree(edit.path)
    assert edit.ok("create", "--autodetect") == TAIL + "resources:\n- test.yaml\n"
    out = _builds_like_kubectl(edit.path, oracle)
    assert "name: test\n" in out


def test_create_autodetect_recursive(edit, oracle):
    _detect_tree(edit.path)
    text = edit.ok("create", "--autodetect", "--recursive", "--resources", "test.yaml")
    assert text == TAIL + "resources:\n- test.yaml\n- overlay\n- sub/test.yaml\n"
    out = _builds_like_kubectl(edit.path, oracle)
    assert [line for line in out.splitlines() if line.startswith("  name:")] == [
        "  name: test",
        "  name: test2",
        "  name: test3",
    ]


def test_edited_tree_builds_like_kubectl(edit, oracle):
    """A sequence of edits on a real tree; kubectl kustomize and krm build the result alike."""
    (edit.path / "base").mkdir()
    (edit.path / "base" / "deploy.yaml").write_text(DEPLOYMENT)
    (edit.path / "base" / "kustomization.yaml").write_text("resources:\n- deploy.yaml\n")
    (edit.path / "svc.yaml").write_text(SERVICE.format(name="web"))
    (edit.path / "annotate.yaml").write_text(
        "- op: add\n  path: /metadata/annotations/patched\n  value: 'yes'\n"
    )
    edit.ok("create", "--resources", "base", "--namespace", "prod")
    for argv in (
        ["edit", "add", "resource", "svc.yaml"],
        ["edit", "set", "image", "nginx=registry.example/nginx:1.27"],
        ["edit", "set", "nameprefix", "acme-"],
        ["edit", "set", "namesuffix", "--", "-v2"],
        ["edit", "set", "replicas", "web=3"],
        ["edit", "add", "label", "team:platform"],
        ["edit", "add", "label", "--without-selector", "tier:web"],
        ["edit", "add", "annotation", "owner:ops"],
        ["edit", "add", "buildmetadata", "managedByLabel"],
        ["edit", "add", "patch", "--path", "annotate.yaml", "--kind", "Deployment"],
        ["edit", "fix"],
    ):
        edit.ok(*argv)
    out = _builds_like_kubectl(edit.path, oracle)
    assert "image: registry.example/nginx:1.27" in out
    assert "name: acme-web-v2" in out
    assert "replicas: 3" in out and 'patched: "yes"' in out
    edit.ok("edit", "remove", "patch", "--path", "annotate.yaml", "--kind", "Deployment")
    edit.ok("edit", "remove", "resource", "svc.yaml")
    edit.ok("edit", "remove", "buildmetadata", "managedByLabel")
    out = _builds_like_kubectl(edit.path, oracle)
    assert "replicas: 3" in out and "kind: Service" not in out and "patched" not in out


@pytest.mark.parametrize("name", ["kustomization.yml", "Kustomization"])
def test_edit_keeps_the_files_name(edit, name):
    edit.write("resources: []\n", name=name)
    code, err = edit("edit", "set", "namespace", "a")
    assert code == 0, err
    assert edit.read(name) == TAIL + "namespace: a\n"
    assert not (edit.path / "kustomization.yaml").exists()


def test_list_builtin_plugins(edit):
    code, err = edit("edit", "alpha-list-builtin-plugin")
    assert code == 0 and err == ""
    lines = edit.out.splitlines()
    assert lines[:2] == ["Builtin plugins:", ""]
    assert len(lines) == 2 + 18 and " * ReplacementTransformer" in lines


# ------------------------------------------------------------------- edit fix --vars

FIX_VARS = json.loads((Path(__file__).parent / "data" / "kustomize_fix_vars.json").read_text())


@pytest.mark.parametrize("case", sorted(FIX_VARS["cases"]))
def test_fix_vars_writes_what_kustomize_writes(tmp_path: Path, case: str) -> None:
    """kustomize v5.5's own fix --vars cases: the kustomization and every file it rewrote."""
    spec = FIX_VARS["cases"][case]
    for name, text in spec["files"].items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "edit", "fix", "--vars"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if spec["error"]:
        assert p.returncode == 1
        assert spec["error"] in p.stderr
        for name, text in spec["files"].items():  # nothing written
            assert (tmp_path / name).read_text() == text
        return
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("\nFixed fields:\n") and "  vars -> replacements\n" in p.stdout
    for name, text in spec["expected"].items():
        assert (tmp_path / name).read_text() == text, name
