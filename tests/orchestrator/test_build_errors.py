"""Bad input: each gives one clear error naming the file (and resource), exit 1, nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.build import BuildOptions, build
from orchestrator.errors import (
    KrmError,
    LoadError,
    NotSupportedError,
    PatchError,
    ResourceConflictError,
    ValidationError,
    YamlError,
)
from orchestrator.functions import FnOptions

DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx
"""


def _krm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, cwd=cwd
    )


def test_missing_directory(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(LoadError) as err:
        build(missing)
    assert err.value.message == "directory does not exist"
    assert err.value.file == missing
    assert str(err.value) == f"{missing}: directory does not exist"


def test_missing_directory_on_the_cli_names_the_path_once(tmp_path: Path) -> None:
    proc = _krm("build", "nope", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "Error: nope: directory does not exist\n"
    assert proc.stdout == ""
    assert not (tmp_path / "nope").exists()


def test_a_file_on_the_cli_is_not_a_build_directory(tmp_path: Path) -> None:
    (tmp_path / "k.yaml").write_text("resources: []\n")
    proc = _krm("build", "k.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == "Error: k.yaml: must be a directory\n"
    assert (tmp_path / "k.yaml").read_text() == "resources: []\n"


def test_a_file_is_not_a_build_directory(tree) -> None:
    root = tree({"kustomization.yaml": "resources: []\n"})
    path = str(root / "kustomization.yaml")
    with pytest.raises(LoadError) as err:
        build(path)
    assert err.value.message == "must be a directory"
    assert err.value.file == path


def test_not_a_kustomization(tree) -> None:
    root = tree({"deploy.yaml": DEPLOY})
    with pytest.raises(LoadError) as err:
        build(str(root))
    assert "unable to find one of 'kustomization.yaml', 'kustomization.yml' or" in str(err.value)
    assert str(root) in str(err.value)


def test_missing_resource_file(tree) -> None:
    root = tree({"kustomization.yaml": "resources:\n- gone.yaml\n"})
    with pytest.raises(LoadError) as err:
        build(str(root))
    assert err.value.message == (
        "resource 'gone.yaml' does not exist (neither a file nor a kustomization directory)"
    )
    assert err.value.file.endswith("kustomization.yaml")


def test_unknown_field(tree) -> None:
    root = tree({"kustomization.yaml": "resources: []\nnamePrefx: a-\n"})
    with pytest.raises(ValidationError) as err:
        build(str(root))
    assert err.value.message == 'invalid Kustomization: json: unknown field "namePrefx"'
    assert err.value.file == str(root / "kustomization.yaml")


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "commonLabels: {version: 1}",
            "json: cannot unmarshal number into Go struct field Kustomization.commonLabels "
            "of type string",
        ),
        (
            "namePrefix: yes",
            "json: cannot unmarshal bool into Go struct field Kustomization.namePrefix "
            "of type string",
        ),
        (
            "images: [{name: nginx, newTag: 1.20}]",
            "json: cannot unmarshal number into Go struct field Image.images.newTag of type string",
        ),
        (
            'replicas: [{name: web, count: "3"}]',
            "json: cannot unmarshal string into Go struct field Replica.replicas.count "
            "of type int64",
        ),
        ("images: [{name: x, newTagz: v}]", 'json: unknown field "newTagz"'),
    ],
)
def test_kustomization_fields_are_strictly_typed_yaml11(tree, body: str, message: str) -> None:
    root = tree({"kustomization.yaml": f"resources: [d.yaml]\n{body}\n", "d.yaml": DEPLOY})
    with pytest.raises(ValidationError) as err:
        build(str(root))
    assert err.value.message == f"invalid Kustomization: {message}"


def test_yaml11_booleans_and_case_insensitive_fields(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": """
                resources: [d.yaml]
                NamePrefix: a-
                labels:
                - pairs: {team: web}
                  includeSelectors: no
                  includeTemplates: on
            """,
            "d.yaml": DEPLOY,
        }
    )
    (res,) = build(str(root)).resources
    assert res["metadata"]["name"] == "a-web"
    assert res["metadata"]["labels"] == {"team": "web"}
    assert res["spec"]["template"]["metadata"]["labels"] == {"team": "web"}
    assert "selector" not in res["spec"]


def test_cycle_between_kustomizations(tree) -> None:
    root = tree(
        {
            "a/kustomization.yaml": "resources:\n- ../b\n",
            "b/kustomization.yaml": "resources:\n- ../a\n",
        }
    )
    with pytest.raises(LoadError) as err:
        build(str(root / "a"))
    assert err.value.message == (
        f"resource '../a': cycle detected: candidate root '{root / 'a'}' contains visited root "
        f"'{root / 'a'}'"
    )
    assert err.value.file.endswith(os.path.join("b", "kustomization.yaml"))


def test_parent_directory_as_base_is_a_cycle(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources:\n- sub\n",
            "sub/kustomization.yaml": "resources:\n- ..\n",
        }
    )
    with pytest.raises(LoadError) as err:
        build(str(root))
    assert err.value.message == (
        f"resource '..': cycle detected: candidate root '{root}' contains visited root '{root}'"
    )
    assert err.value.file.endswith(os.path.join("sub", "kustomization.yaml"))


def test_both_composition_and_kustomization(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources: []\nnamePrefix: a-\n",
            "composition.yaml": "kind: Composition\n",
        }
    )
    with pytest.raises(LoadError) as err:
        build(str(root))
    assert "both 'kustomization.yaml' and 'composition.yaml' found" in err.value.message


def test_colliding_ids(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n",
            "a.yaml": DEPLOY,
            "b.yaml": DEPLOY,
        }
    )
    with pytest.raises(ResourceConflictError) as err:
        build(str(root))
    # As kustomize prints it: the namespace as written, [noNs] when there is none.
    assert err.value.message == (
        "may not add resource with an already registered id: Deployment.v1.apps/web.[noNs]"
    )
    assert err.value.file.endswith("b.yaml")
    assert err.value.resource == "Deployment/web"


@pytest.mark.parametrize(
    ("namespace", "shown"), [("", "other.[noNs]"), ("\n  namespace: default", "other.default")]
)
def test_patch_target_absent(tree, namespace: str, shown: str) -> None:
    """The patch's id as kustomize prints it: as written, [noNs] when it names no namespace."""
    patch = f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: other{namespace}\n"
    root = tree(
        {
            "kustomization.yaml": "resources:\n- d.yaml\npatches:\n- path: p.yaml\n",
            "d.yaml": DEPLOY,
            "p.yaml": patch,
        }
    )
    with pytest.raises(PatchError) as err:
        build(str(root))
    assert err.value.message == (
        f"no matches for Id Deployment.v1.apps/{shown}; "
        f"failed to find unique target for patch Deployment.v1.apps/{shown}"
    )
    assert err.value.file.endswith("p.yaml")


def test_component_in_resources(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources:\n- comp\n",
            "comp/kustomization.yaml": (
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnamePrefix: x-\n"
            ),
        }
    )
    with pytest.raises(ValidationError) as err:
        build(str(root))
    assert err.value.message.startswith("expected kind != 'Component' for path")


def test_kustomization_in_components(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "components:\n- base\n",
            "base/kustomization.yaml": "namePrefix: x-\n",
        }
    )
    with pytest.raises(ValidationError) as err:
        build(str(root))
    assert "expected kind 'Component' for path" in err.value.message
    assert err.value.message.endswith("but got 'Kustomization'")


def test_unknown_builtin_plugin_kind(tree) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources:\n- d.yaml\ntransformers:\n- t.yaml\n",
            "d.yaml": DEPLOY,
            "t.yaml": "apiVersion: builtin\nkind: NoSuchTransformer\nmetadata:\n  name: x\n",
        }
    )
    with pytest.raises(NotSupportedError) as err:
        build(str(root))
    assert err.value.message == (
        "unknown builtin plugin kind 'NoSuchTransformer' (apiVersion: builtin)"
    )


def test_krm_function_in_transformers_runs(tree, monkeypatch) -> None:
    # A real Starlark function, run in-process by orchestrator.functions.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tree({}) / "xdg"))
    root = tree(
        {
            "kustomization.yaml": "resources:\n- d.yaml\ntransformers:\n- fn.yaml\n",
            "d.yaml": DEPLOY,
            "fn.yaml": """
                apiVersion: example.com/v1
                kind: AddPrefix
                metadata:
                  name: add-prefix
                runtime:
                  starlark:
                    path: prefix.star
            """,
            "prefix.star": (
                'for r in ctx.resource_list["items"]:\n'
                '  r["metadata"]["name"] = "fn-" + r["metadata"]["name"]\n'
            ),
        }
    )
    # Named by the kustomization itself: runs only with --enable-alpha-plugins.
    result = build(str(root), BuildOptions(functions=FnOptions(enable_alpha_plugins=True)))
    assert [r["metadata"]["name"] for r in result.resources] == ["fn-web"]
    assert len(result.results) == 1


def test_untrusted_catalog_is_an_error(tree, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tree({}) / "xdg"))
    root = tree(
        {
            "kustomization.yaml": "resources:\n- d.yaml\ncatalogs:\n- catalog.yaml\n",
            "d.yaml": DEPLOY,
        }
    )
    with pytest.raises(KrmError) as err:
        build(str(root))
    assert "catalog catalog.yaml is not trusted: pass --trusted-catalog=" in str(err.value)


def test_file_outside_root_is_restricted(tree) -> None:
    root = tree(
        {
            "app/kustomization.yaml": "resources:\n- ../d.yaml\n",
            "d.yaml": DEPLOY,
        }
    )
    with pytest.raises(LoadError) as err:
        build(str(root / "app"))
    assert err.value.message.startswith("security; file ")
    out = build(str(root / "app"), BuildOptions(load_restrictor="LoadRestrictionsNone"))
    assert [r["metadata"]["name"] for r in out.resources] == ["web"]


def test_malformed_yaml_resource(tree) -> None:
    root = tree({"kustomization.yaml": "resources:\n- d.yaml\n", "d.yaml": "a: [\n"})
    with pytest.raises(YamlError) as err:
        build(str(root))
    assert err.value.file.endswith("d.yaml")
    assert "invalid YAML" in err.value.message


def test_cli_error_is_one_line_exit_1_no_traceback(tree) -> None:
    root = tree({"kustomization.yaml": "resources:\n- gone.yaml\n"})
    p = _krm("build", str(root), cwd=root)
    assert p.returncode == 1
    assert p.stdout == ""
    lines = [line for line in p.stderr.splitlines() if line]
    assert lines == [
        "Error: kustomization.yaml: resource 'gone.yaml' does not exist (neither a file nor "
        "a kustomization directory)"
    ]


def test_cli_debug_shows_traceback(tree) -> None:
    root = tree({"kustomization.yaml": "resources:\n- gone.yaml\n"})
    p = _krm("--debug", "build", str(root), cwd=root)
    assert p.returncode == 1
    assert "Traceback (most recent call last)" in p.stderr
    assert "LoadError" in p.stderr


def test_cli_output_file_not_written_on_error(tree) -> None:
    root = tree({"kustomization.yaml": "resources:\n- gone.yaml\n"})
    out = root / "out.yaml"
    p = _krm("build", str(root), "-o", str(out), cwd=root)
    assert p.returncode == 1
    assert not out.exists()


def test_errors_are_krm_errors() -> None:
    for cls in (LoadError, ValidationError, ResourceConflictError, PatchError, YamlError):
        assert issubclass(cls, KrmError)


CRD_MANIFEST = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  group: example.com
  names: {kind: Foo, plural: foos}
  scope: Namespaced
  versions: []
"""


def test_a_crd_manifest_in_crds_is_an_error_as_in_kustomize(tmp_path: Path) -> None:
    (tmp_path / "crd.yaml").write_text(CRD_MANIFEST)
    (tmp_path / "kustomization.yaml").write_text("crds: [crd.yaml]\n")
    with pytest.raises(ValidationError) as err:
        build(str(tmp_path), BuildOptions())
    assert str(err.value) == (
        f"{tmp_path / 'kustomization.yaml'}: unable to parse open API definition from "
        "'crd.yaml': expected a map of OpenAPI definitions, got CustomResourceDefinition"
    )
    # the oracle fails on the same input
    oracle = subprocess.run(["kubectl", "kustomize", str(tmp_path)], capture_output=True)
    assert oracle.returncode != 0
