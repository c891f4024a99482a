"""Differential tests: merge() against the real `kubectl kustomize` (kustomize v5.5.0).

Each test writes a tiny kustomization (resources + patches) to tmp_path, builds it with
kubectl, and compares the parsed output with what merge() makes of the same inputs.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.openapi import PatchSchema
from orchestrator.resource import Gvk
from orchestrator.strategicmerge import merge

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def kustomize(tmp_path: Path, resources: list[dict], patches: list[dict], **extra: Any) -> dict:
    """Build resources + one patch file each with kubectl; map name -> output object."""
    (tmp_path / "res.yaml").write_text(yaml.safe_dump_all(resources))
    for i, p in enumerate(patches):
        (tmp_path / f"p{i}.yaml").write_text(yaml.safe_dump(p))
    k = {
        "resources": ["res.yaml"],
        "patches": [{"path": f"p{i}.yaml"} for i in range(len(patches))],
    }
    k.update(extra)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(k))
    proc = subprocess.run(
        ["kubectl", "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(proc.stdout) if d}


def ours(target: dict, patch: dict, schema: PatchSchema | None = None) -> dict | None:
    """merge() plus what kustomize's ApplySmPatch and output do around it."""
    out = merge(
        target, patch, gvk=Gvk.from_api_version(target["apiVersion"], target["kind"]), schema=schema
    )
    if out is None:
        return None
    out["kind"] = target["kind"]
    out.setdefault("metadata", {})["name"] = target["metadata"]["name"]
    if not out["metadata"].get("annotations"):
        # kustomize drops empty annotations when it strips its internal ones (not SMP).
        out["metadata"].pop("annotations", None)
    return out


def dep(name: str, tspec: dict | None = None, **meta: Any) -> dict:
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, **meta}}
    if tspec is not None:
        d["spec"] = {"template": {"spec": tspec}}
    return d


def svc(name: str, ports: list | None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": ports},
    }


PAIRS = {
    "env-merge-order": (
        dep(
            "x",
            {"containers": [{"name": "c", "env": [{"name": "A"}, {"name": "S", "value": "1"}]}]},
        ),
        dep(
            "x",
            {"containers": [{"name": "c", "env": [{"name": "P"}, {"name": "S", "value": "2"}]}]},
        ),
    ),
    "add-container": (
        dep("x", {"containers": [{"name": "a", "image": "a"}]}),
        dep("x", {"containers": [{"name": "b", "image": "b"}]}),
    ),
    "delete-container": (
        dep("x", {"containers": [{"name": "a"}, {"name": "b"}]}),
        dep("x", {"containers": [{"name": "a", "$patch": "delete"}]}),
    ),
    "element-replace-quirk": (
        dep("x", {"containers": [{"name": "a", "image": "a", "args": ["x"]}]}),
        dep("x", {"containers": [{"name": "a", "image": "z", "$patch": "replace"}]}),
    ),
    "list-replace": (
        dep("x", {"containers": [{"name": "a"}, {"name": "b"}]}),
        dep("x", {"containers": [{"name": "c"}, {"$patch": "replace"}]}),
    ),
    "list-delete": (
        dep("x", {"containers": [{"name": "a"}], "volumes": [{"name": "v", "emptyDir": {}}]}),
        dep("x", {"volumes": [{"$patch": "delete"}]}),
    ),
    "map-replace": (
        dep("x", {"nodeSelector": {"a": "1", "b": "2"}}),
        dep("x", {"nodeSelector": {"$patch": "replace", "c": "3"}}),
    ),
    "volume-emptydir-to-pd": (
        dep("x", {"volumes": [{"name": "v", "emptyDir": {}}]}),
        dep(
            "x",
            {"volumes": [{"name": "v", "emptyDir": None, "gcePersistentDisk": {"pdName": "p"}}]},
        ),
    ),
    "finalizers-union": (
        dep("x", None, finalizers=["b", "c"]),
        dep("x", None, finalizers=["a", "b"]),
    ),
    "null-removes": (
        dep("x", {"containers": [{"name": "a", "args": ["1"], "image": "i"}]}, labels={"l": "v"}),
        dep("x", {"containers": [{"name": "a", "args": None}]}, labels={"l": None}),
    ),
    "keyless-empty-element": (
        dep("x", {"containers": [{"name": "a"}]}),
        dep("x", {"containers": [{"name": "b"}, {}]}),
    ),
    "directives-pass-through": (
        dep("x", {"containers": [{"name": "a"}, {"name": "b"}]}, finalizers=["f"]),
        {
            **dep("x", {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}),
            "metadata": {"name": "x", "$deleteFromPrimitiveList/finalizers": ["f"]},
        },
    ),
    "service-ports-two-keys": (
        svc("x", [{"port": 80, "protocol": "UDP"}, {"port": 443}]),
        svc("x", [{"port": 80, "protocol": "TCP", "name": "t"}, {"port": 443, "name": "s"}]),
    ),
    "quoted-port-style": (
        svc("x", [{"port": "80", "protocol": "TCP"}]),
        svc("x", [{"port": 80, "protocol": "TCP", "name": "h"}]),
    ),
    "patch-node-restyled-by-quoted-target": (
        svc(
            "x",
            [
                {"port": 443, "name": "http", "targetPort": 8080},
                {"port": "80", "protocol": "UDP", "targetPort": 8080},
                {"port": 80, "protocol": "UDP", "name": "http"},
                {"protocol": "UDP"},
            ],
        ),
        svc(
            "x",
            [
                {"port": 80, "protocol": "UDP", "name": "http"},
                {"port": 443, "protocol": "TCP", "name": "https"},
                {"port": 443, "protocol": "TCP", "targetPort": 8080, "$patch": "replace"},
                {"$patch": "replace"},
            ],
        ),
    ),
    "unknown-kind-replaces": (
        {
            "apiVersion": "ex.com/v1",
            "kind": "T",
            "metadata": {"name": "x"},
            "l": [{"name": "a", "v": 1}],
        },
        {"apiVersion": "ex.com/v1", "kind": "T", "metadata": {"name": "x"}, "l": [{"name": "a"}]},
    ),
    "delete-whole-resource": (
        dep("x", {"containers": [{"name": "a"}]}),
        {**dep("x"), "$patch": "delete"},
    ),
}


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_pair_matches_kubectl(tmp_path: Path, case: str) -> None:
    target, patch = PAIRS[case]
    keeper = dep("keeper", {"containers": [{"name": "k"}]})  # output is never empty
    got = kustomize(tmp_path, [target, keeper], [patch])
    assert got.get("x") == ours(target, patch)


# -- seeded random pairs ---------------------------------------------------------------


def _container(r: random.Random, patch: bool) -> dict:
    c: dict[str, Any] = {}
    if r.random() < 0.95:
        c["name"] = r.choice("abcd")
    if r.random() < 0.4:
        c["image"] = r.choice(["i1", "i2"])
    if r.random() < 0.4:
        c["args"] = [r.choice(["-a", "-b"]) for _ in range(r.randint(0, 2))]
    if r.random() < 0.4:
        env = []
        for _ in range(r.randint(0, 3)):
            e = {"name": r.choice(["E1", "E2", "E3"])}
            if r.random() < 0.7:
                e["value"] = r.choice(["1", "2"])
            if patch and r.random() < 0.15:
                e["$patch"] = "delete"
            env.append(e)
        c["env"] = env
    if r.random() < 0.4:
        ports = []
        for _ in range(r.randint(0, 3)):
            p: dict[str, Any] = {"containerPort": r.choice([80, 443])}
            if r.random() < 0.5:
                p["protocol"] = r.choice(["TCP", "UDP"])
            ports.append(p)
        c["ports"] = ports
    if patch and r.random() < 0.1:
        c["$patch"] = r.choice(["delete", "replace", "merge"])
    if patch and r.random() < 0.1:
        c[r.choice(["image", "args", "env"])] = None
    return c


def _random_resource(r: random.Random, name: str, patch: bool) -> dict:
    if r.random() < 0.3:
        ports = []
        for _ in range(r.randint(0, 3)):
            p: dict[str, Any] = {}
            if r.random() < 0.9:
                p["port"] = r.choice([80, 443, "80"])
            if r.random() < 0.5:
                p["protocol"] = r.choice(["TCP", "UDP"])
            if r.random() < 0.5:
                p["name"] = r.choice(["http", "https"])
            ports.append(p)
        return svc(name, ports)
    tspec: dict[str, Any] = {}
    if r.random() < 0.85:
        tspec["containers"] = [_container(r, patch) for _ in range(r.randint(0, 3))]
    if r.random() < 0.3:
        tspec["volumes"] = [
            {"name": r.choice(["v1", "v2"]), r.choice(["emptyDir", "configMap"]): {}}
            for _ in range(r.randint(0, 2))
        ]
    meta: dict[str, Any] = {}
    if r.random() < 0.3:
        meta["finalizers"] = [r.choice(["f1", "f2", "f3"]) for _ in range(r.randint(0, 3))]
    if r.random() < 0.3:
        meta["labels"] = {r.choice(["l1", "l2"]): r.choice(["v", None] if patch else ["v"])}
    d = dep(name, tspec, **meta)
    if r.random() < 0.2:
        d["apiVersion"] = "example.com/v1"  # unknown type: lists are replaced
    return d


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_pairs_match_kubectl(tmp_path: Path, seed: int) -> None:
    r = random.Random(seed)
    targets, patches = [], []
    for i in range(40):
        t = _random_resource(r, f"r{i}", False)
        p = _random_resource(random.Random(seed * 1000 + i), f"r{i}", True)
        p["apiVersion"], p["kind"] = t["apiVersion"], t["kind"]
        targets.append(t)
        patches.append(p)
    got = kustomize(tmp_path, targets, patches)
    for t, p in zip(targets, patches, strict=True):
        assert got.get(t["metadata"]["name"]) == ours(t, p), (t, p)


def test_openapi_field_schema_matches_kubectl(tmp_path: Path) -> None:
    schema_doc = {
        "definitions": {
            "v1.Thing": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "items": {
                                "type": "array",
                                "items": {"$ref": "#/definitions/v1.Item"},
                                "x-kubernetes-patch-strategy": "merge",
                                "x-kubernetes-patch-merge-key": "id",
                            }
                        },
                    }
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "example.com", "version": "v1", "kind": "Thing"}
                ],
            },
            "v1.Item": {"type": "object", "properties": {"id": {"type": "string"}}},
        }
    }
    (tmp_path / "schema.json").write_text(yaml.safe_dump(schema_doc))
    t = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "x"},
        "spec": {"items": [{"id": "a", "v": 1}, {"id": "b"}]},
    }
    p = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "x"},
        "spec": {"items": [{"id": "c"}, {"id": "a", "w": 2}]},
    }
    got = kustomize(tmp_path, [t], [p], openapi={"path": "schema.json"})
    assert got["x"] == ours(t, p, PatchSchema.from_openapi(schema_doc))
    assert [i["id"] for i in got["x"]["spec"]["items"]] == ["c", "a", "b"]


def test_crds_field_does_not_change_strategic_merge(tmp_path: Path) -> None:
    # kustomize v5.5.0 reads `crds:` only for name-reference configs, never for SMP keys:
    # the built-in schema (which does not know the type) decides, and the list is replaced.
    crd = {
        "com.example.v1.Thing": {
            "Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "items": {
                                "type": "array",
                                "items": {"type": "object"},
                                "x-kubernetes-patch-strategy": "merge",
                                "x-kubernetes-patch-merge-key": "id",
                            }
                        },
                    }
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "example.com", "kind": "Thing", "version": "v1"}
                ],
            }
        }
    }
    (tmp_path / "crd.json").write_text(yaml.safe_dump(crd))
    t = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "x"},
        "spec": {"items": [{"id": "a", "v": 1}]},
    }
    p = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "x"},
        "spec": {"items": [{"id": "b"}]},
    }
    got = kustomize(tmp_path, [t], [p], crds=["crd.json"])
    assert got["x"]["spec"]["items"] == [{"id": "b"}]
    assert got["x"] == ours(t, p, PatchSchema.default())
