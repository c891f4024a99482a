"""Collisions in ``krm build``: a function defined differently in a later trusted catalog is a
warning, and an error with ``--strict-catalogs`` (before anything runs); the same runtime is not
a collision. Also: a local catalog's ``revocations.yaml`` is honoured."""

from __future__ import annotations

from tests.orchestrator.functions.test_cli_functions import _krm

MARK = 'ctx.resource_list["items"][0]["metadata"]["labels"] = {"from": "%s"}\n'


def _catalog(star: str) -> str:
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n"
        "spec:\n  krmFunctions:\n  - group: fn.example.com\n    names:\n      kind: Label\n"
        "    versions:\n    - name: v1\n      runtime:\n        starlark:\n"
        f"          path: {star}\n"
    )


def _setup(tmp_path, write, second: str = "b.star"):
    write("a/a.star", MARK % "a")
    write("b/b.star", MARK % "b")
    write("a/catalog.yaml", _catalog(str(tmp_path / "a" / "a.star")))
    star = tmp_path / ("b" if second == "b.star" else "a") / second
    write("b/catalog.yaml", _catalog(str(star)))
    write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    write("app/label.yaml", "apiVersion: fn.example.com/v1\nkind: Label\nmetadata:\n  name: l\n")
    write("app/kustomization.yaml", "resources:\n- cm.yaml\ntransformers:\n- label.yaml\n")
    return [
        str(tmp_path / "app"),
        f"--trusted-catalog={tmp_path / 'a' / 'catalog.yaml'}",
        f"--trusted-catalog={tmp_path / 'b' / 'catalog.yaml'}",
    ]


def test_later_catalog_with_another_runtime_warns(tmp_path, write):
    args = _setup(tmp_path, write)
    proc = _krm("build", *args, home=tmp_path / "h")
    assert proc.returncode == 0, proc.stderr
    assert "from: a" in proc.stdout
    a, b = tmp_path / "a" / "catalog.yaml", tmp_path / "b" / "catalog.yaml"
    assert proc.stderr == (
        f"Warning: fn.example.com/v1 Label resolves in catalog {a} but catalog {b} also defines "
        "it with a different runtime; the first is used (--strict-catalogs makes this an error)\n"
    )


def test_strict_catalogs_is_an_error(tmp_path, write):
    args = _setup(tmp_path, write)
    proc = _krm("build", *args, "--strict-catalogs", home=tmp_path / "h")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "also defines it with a different runtime (--strict-catalogs)" in proc.stderr


def test_same_runtime_is_no_collision(tmp_path, write):
    args = _setup(tmp_path, write, second="a.star")
    proc = _krm("build", *args, "--strict-catalogs", home=tmp_path / "h")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_local_revocations_file_is_honoured(tmp_path, write):
    args = _setup(tmp_path, write)
    write(
        "a/revocations.yaml",
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: RevocationList\nsequence: 1\n"
        "revocations:\n- sequence: 1\n  group: fn.example.com\n  kind: Label\n  version: v1\n"
        "  reason: withdrawn\n  replacement: fn.example.com/v2 Label\n",
    )
    proc = _krm("build", *args, home=tmp_path / "h")
    assert proc.returncode == 1
    assert (
        "fn.example.com/v1 Label from catalog " in proc.stderr
        and "is revoked: withdrawn; use instead: fn.example.com/v2 Label" in proc.stderr
    )
    write("a/revocations.yaml", "kind: RevocationList\nsequence: x\n")
    proc = _krm("build", *args, home=tmp_path / "h")
    assert proc.returncode == 1
    assert "sequence must be an integer >= 0" in proc.stderr
