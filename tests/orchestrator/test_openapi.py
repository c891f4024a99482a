"""PatchSchema: the generated patch-merge-key table, lookups, and extra schemas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.openapi import DATA_FILE as DATA_PATH
from orchestrator.openapi import PatchSchema, compile_definitions
from orchestrator.resource import Gvk

DATA_FILE = Path(DATA_PATH)

DEPLOY = Gvk("apps", "v1", "Deployment")
# A git directory of kubernetes-sigs/kustomize (e.g. a bare clone), given by the caller.
MIRROR = Path(os.environ.get("KRM_KUSTOMIZE_GIT_DIR") or "/nonexistent")
BUNDLE = "kyaml/openapi/kubernetesapi/data/kubernetes-openapi-union-v1.21.2.bundle-v1.json.gz"


@pytest.mark.parametrize(
    ("gvk", "path", "expected"),
    [
        (DEPLOY, ("spec", "template", "spec", "containers"), ("merge", "name")),
        (DEPLOY, ("spec", "template", "spec", "initContainers"), ("merge", "name")),
        (DEPLOY, ("spec", "template", "spec", "containers", "env"), ("merge", "name")),
        (DEPLOY, ("spec", "template", "spec", "containers", "ports"), ("merge", "containerPort")),
        (DEPLOY, ("spec", "template", "spec", "volumes"), ("merge,retainKeys", "name")),
        (DEPLOY, ("spec", "template", "spec", "containers", "args"), (None, None)),
        (DEPLOY, ("metadata", "finalizers"), ("merge", None)),
        (DEPLOY, ("metadata", "ownerReferences"), ("merge", "uid")),
        (DEPLOY, ("spec", "nonexistent"), (None, None)),
        (Gvk("", "v1", "Service"), ("spec", "ports"), ("merge", "port")),
        (Gvk("", "v1", "Pod"), ("spec", "containers"), ("merge", "name")),
        (
            Gvk("batch", "v1", "CronJob"),
            ("spec", "jobTemplate", "spec", "template", "spec", "containers"),
            ("merge", "name"),
        ),
        # Removed before Kubernetes v1.21: unknown to kustomize's schema, lists replace.
        (
            Gvk("extensions", "v1beta1", "Deployment"),
            ("spec", "template", "spec", "containers"),
            (None, None),
        ),
        (Gvk("example.com", "v1", "Unknown"), ("spec", "containers"), (None, None)),
    ],
)
def test_lookup(gvk: Gvk, path: tuple[str, ...], expected: tuple) -> None:
    assert PatchSchema.default().lookup(gvk, path) == expected


def test_list_map_keys_take_precedence_over_the_merge_key() -> None:
    s = PatchSchema.default()
    node = s.root(DEPLOY)
    for name in ("spec", "template", "spec", "containers"):
        node = s.field(node, name)
    ports = s.field(s.elements(node), "ports")
    assert s.merge_keys(ports) == ("merge", ["containerPort", "protocol"])


def test_default_is_cached() -> None:
    assert PatchSchema.default() is PatchSchema.default()


def test_table_is_small() -> None:
    # Its load time is part of krm's start-up, measured by bench/build_vs_kustomize.py (10
    # resources); no timing is asserted here.
    assert DATA_FILE.stat().st_size < 100_000


def test_engine_modules_import_neither_yaml_nor_django() -> None:
    code = (
        "import sys, orchestrator.strategicmerge, orchestrator.filters.json6902; "
        "print(sorted(m for m in ('yaml','django','jsonpatch') if m in sys.modules))"
    )
    assert subprocess.check_output([sys.executable, "-c", code], text=True).strip() == "[]"


@pytest.mark.skipif(
    not MIRROR.is_dir(), reason="set KRM_KUSTOMIZE_GIT_DIR to a kubernetes-sigs/kustomize git dir"
)
def test_table_regenerates_identically_from_kustomize_schema(tmp_path: Path) -> None:
    def show(rev_path: str) -> bytes:
        return subprocess.check_output(["git", f"--git-dir={MIRROR}", "show", rev_path])

    try:
        bundle = show(f"HEAD:{BUNDLE}")
        kust = show("kustomize/v5.5.0:kyaml/openapi/kustomizationapi/swagger.json")
    except subprocess.CalledProcessError:
        pytest.skip("mirror lacks the schema files")
    (tmp_path / "b.json.gz").write_bytes(bundle)
    (tmp_path / "k.json").write_bytes(kust)
    out = tmp_path / "patchkeys.json"
    gen = Path(__file__).parents[2] / "orchestrator" / "data" / "gen_patchkeys.py"
    subprocess.run(
        [
            sys.executable,
            str(gen),
            str(tmp_path / "b.json.gz"),
            str(tmp_path / "k.json"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert out.read_bytes() == DATA_FILE.read_bytes()


def test_compile_prunes_types_without_merge_lists_and_handles_recursion() -> None:
    defs = {
        "Root": {
            "type": "object",
            "properties": {
                "plain": {"$ref": "#/definitions/Plain"},
                "tree": {"$ref": "#/definitions/Tree"},
                "map": {"type": "object", "additionalProperties": {"$ref": "#/definitions/Tree"}},
            },
            "x-kubernetes-group-version-kind": [{"group": "g", "version": "v1", "kind": "Root"}],
        },
        "Plain": {"type": "object", "properties": {"s": {"type": "string"}}},
        "Tree": {
            "type": "object",
            "properties": {
                "children": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/Tree"},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "id",
                }
            },
        },
    }
    table = compile_definitions(defs)
    s = PatchSchema(table["types"], table["gvks"], table["defs"])
    root = Gvk("g", "v1", "Root")
    assert s.lookup(root, ("plain",)) == (None, None)
    assert s.field(s.root(root), "plain") == 0  # known, nothing merges below
    assert s.lookup(root, ("tree", "children", "children", "children")) == ("merge", "id")
    assert s.lookup(root, ("map", "anykey", "children")) == ("merge", "id")


def test_extended_with_a_crd() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "parts": {
                                            "type": "array",
                                            "items": {"type": "object"},
                                            "x-kubernetes-patch-strategy": "merge",
                                            "x-kubernetes-patch-merge-key": "name",
                                        }
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    widget = Gvk("example.com", "v1", "Widget")
    assert PatchSchema.default().lookup(widget, ("spec", "parts")) == (None, None)
    s = PatchSchema.default().extended([crd])
    assert s.lookup(widget, ("spec", "parts")) == ("merge", "name")
    assert s.lookup(DEPLOY, ("spec", "template", "spec", "containers")) == ("merge", "name")


def test_openapi_document_can_reference_builtin_definitions() -> None:
    doc = {
        "definitions": {
            "v1.MyCRD": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "template": {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}
                        },
                    }
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "example.com", "version": "v1", "kind": "MyCRD"}
                ],
            }
        }
    }
    s = PatchSchema.default().extended([doc])
    path = ("spec", "template", "spec", "containers")
    assert s.lookup(Gvk("example.com", "v1", "MyCRD"), path) == ("merge", "name")
    # kustomize's `openapi:` replaces the built-in schema: unresolved refs know nothing.
    only = PatchSchema.from_openapi(doc)
    assert only.lookup(Gvk("example.com", "v1", "MyCRD"), path) == (None, None)
    assert only.lookup(DEPLOY, path) == (None, None)


def test_table_records_its_origin() -> None:
    data = json.loads(DATA_FILE.read_text())
    assert "v1.21.2" in data["origin"] and "kustomize v5.5.0" in data["origin"]
