"""Seeded random replacements, built by ``kubectl kustomize`` and by us: same output or both fail.

The building blocks (sources, target paths, selectors, options) are chosen to hit kyaml's
corners: list selectors, wildcards, indexes past the end, create, delimiters on both sides,
sources that a target rewrites, and values that do not fit their target's type.
"""

from __future__ import annotations

import copy
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.errors import KrmError
from orchestrator.filters import replacements
from orchestrator.filters.replacements import scalar_text
from orchestrator.resource import Resource

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl (the oracle) is not installed")

RESOURCES = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: src
  labels: {role: source}
data: {port: "8080", host: db.example.com, list: "a,b,c"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
  annotations: {note: x-y-z}
spec:
  replicas: 1
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.0
        args: ["--port", "1"]
        env:
        - {name: PORT, value: "80"}
      - name: web-sidecar
        image: envoy:1
        args: ["a", 5]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: jobs
  labels: {app: worker, tier: back}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: worker, image: busybox}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {owner: team-a}
spec:
  ports:
  - {port: 80, targetPort: 8080, name: http}
"""

SOURCES = [
    ("ConfigMap", "src", "data.port"),
    ("ConfigMap", "src", "data.list"),
    ("ConfigMap", "src", "data.host"),
    ("ConfigMap", "src", "metadata.labels"),
    ("Deployment", "web", "spec.replicas"),
    ("Deployment", "web", "spec.template.spec.containers.0.args"),
    ("Deployment", "web", "spec.template.spec.containers.[name=web].image"),
    ("Deployment", "web", "metadata.annotations.note"),
    ("Deployment", "web", "spec.template.spec.containers.1.args.1"),
    ("Service", "web", "spec.ports.0.port"),
    ("Service", "web", "spec.ports.[name=http].targetPort"),
    ("ConfigMap", "src", "data.nope"),
]
TARGETS = [
    "spec.replicas",
    "metadata.labels.tier",
    "metadata.annotations.note",
    "spec.template.spec.containers.*.image",
    "spec.template.spec.containers.[name=web].env.[name=PORT].value",
    "spec.template.spec.containers.[name=web].env.[name=NEW].value",
    "spec.template.spec.containers.0.args.1",
    "spec.template.spec.containers.0.args.2",
    "spec.template.spec.containers.0.args.[=--port]",
    "spec.template.spec.containers.1.args",
    "spec.template.metadata.labels",
    "spec.ports.0.port",
    "spec.ports.[name=http].name",
    "spec.new.field",
    "data.port",
]
SELECTS = [
    {"kind": "Deployment"},
    {"name": "web"},
    {"kind": "Service"},
    {"kind": "Deployment", "name": "worker", "namespace": "jobs"},
    {"labelSelector": "app=web"},
    {"annotationSelector": "owner"},
    {"kind": "ConfigMap"},
    {},
]


def _random_spec(rng: random.Random) -> list[dict[str, Any]]:
    spec = []
    for _ in range(rng.randint(1, 2)):
        kind, name, field = rng.choice(SOURCES)
        source: dict[str, Any] = {"kind": kind, "name": name, "fieldPath": field}
        if rng.random() < 0.25:
            source["options"] = {
                "delimiter": rng.choice([",", ".", ":"]),
                "index": rng.randint(-1, 3),
            }
        targets = []
        for _ in range(rng.randint(1, 2)):
            target: dict[str, Any] = {
                "select": copy.deepcopy(rng.choice(SELECTS)),
                "fieldPaths": rng.sample(TARGETS, rng.randint(1, 2)),
            }
            if rng.random() < 0.3:
                target["reject"] = [copy.deepcopy(rng.choice(SELECTS[:5]))]
            options: dict[str, Any] = {}
            if rng.random() < 0.5:
                options["create"] = True
            if rng.random() < 0.2:
                options.update(delimiter=rng.choice(["-", ":"]), index=rng.randint(-1, 4))
            if options:
                target["options"] = options
            targets.append(target)
        spec.append({"source": source, "targets": targets})
    return spec


def _normalize(obj: dict[str, Any]) -> dict[str, Any]:
    """Our object as kubectl prints it (its writer stringifies metadata.annotations values)."""
    obj = yaml.safe_load(yaml.safe_dump(obj))
    annotations = obj.get("metadata", {}).get("annotations")
    if annotations:
        obj["metadata"]["annotations"] = {k: scalar_text(v) for k, v in annotations.items()}
    return obj


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    md = obj["metadata"]
    return obj["kind"], md.get("namespace", ""), md["name"]


CASES = [(seed, i) for seed in range(2) for i in range(15)]


@pytest.mark.parametrize(("seed", "index"), CASES)
def test_random_replacements_match_kubectl(tmp_path: Path, seed: int, index: int):
    rng = random.Random(seed)
    for _ in range(index + 1):
        spec = _random_spec(rng)
    (tmp_path / "resources.yaml").write_text(RESOURCES)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": ["resources.yaml"], "replacements": spec})
    )
    proc = subprocess.run([KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True)
    resources = [Resource(obj=d) for d in yaml.safe_load_all(RESOURCES) if d]
    try:
        replacements.apply(resources, copy.deepcopy(spec))
    except KrmError as err:
        assert proc.returncode != 0, f"only we failed: {err}\n{yaml.safe_dump(spec)}"
        return
    assert proc.returncode == 0, f"only kubectl failed: {proc.stderr}\n{yaml.safe_dump(spec)}"
    expected = {_key(d): d for d in yaml.safe_load_all(proc.stdout) if d}
    ours = {_key(r.obj): _normalize(r.obj) for r in resources}
    assert ours == expected, yaml.safe_dump(spec)
