"""Legacy kustomize ``vars``: unit tests and differential tests against ``kubectl kustomize``."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.errors import KrmError, ValidationError
from orchestrator.filters import vars as kvars
from orchestrator.filters.replacements import scalar_text
from orchestrator.resource import Resource

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl (the oracle) is not installed")

RESOURCES = """
apiVersion: v1
kind: Service
metadata:
  name: db
  namespace: data
spec:
  ports:
  - port: 5432
    name: pg
  clusterIP: None
  publishNotReadyAddresses: true
  sessionAffinityConfig:
    clientIP:
      timeoutSeconds: 1.5
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
  list: a,b
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels:
    port: $(DB_PORT)
    text: v-$(MODE)
  annotations:
    ann: "$(DB_PORT)"
spec:
  template:
    metadata:
      annotations:
        whole: $(DB_PORT)
        flag: $(READY)
        part: ratio=$(RATIO)
    spec:
      initContainers:
      - name: init
        command: ["sh", "-c", "wait-for $(DB_HOST):$(DB_PORT)"]
      containers:
      - name: app
        image: app:1
        args:
        - --db=$(DB_HOST)
        - $(DB_PORT)
        - $$(DB_HOST)
        - $(UNKNOWN)
        - $(DB_HOST
        - "cost: $$5"
        command: ["$(MODE)"]
        env:
        - name: DB
          value: $(DB_HOST)
        - name: RATIO
          value: $(RATIO)
        - name: LIST
          value: $(CM_LIST)
        volumeMounts:
        - name: v
          mountPath: /data/$(MODE)
      volumes:
      - name: nfs
        nfs:
          server: $(DB_HOST)
          path: /
---
apiVersion: v1
kind: Pod
metadata:
  name: notouch
spec:
  hostname: $(DB_HOST)
  containers:
  - name: c
    image: busybox
    args: ["$(MODE)"]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  tls:
  - hosts: ["$(DB_HOST).example.com"]
    secretName: tls-$(MODE)
  rules:
  - host: $(DB_HOST).example.com
"""

VARS = [
    {"name": "DB_HOST", "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"}},
    {
        "name": "DB_PORT",
        "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"},
        "fieldref": {"fieldPath": "spec.ports[0].port"},
    },
    {
        "name": "READY",
        "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"},
        "fieldref": {"fieldpath": "spec.publishNotReadyAddresses"},
    },
    {
        "name": "RATIO",
        "objref": {"kind": "Service", "name": "db", "apiVersion": "v1", "namespace": "data"},
        "fieldref": {"fieldPath": "spec.sessionAffinityConfig.clientIP.timeoutSeconds"},
    },
    {
        "name": "MODE",
        "objref": {"kind": "ConfigMap", "name": "settings", "version": "v1"},
        "fieldref": {"fieldPath": "data.mode"},
    },
    {
        "name": "CM_LIST",
        "objref": {"kind": "ConfigMap", "name": "settings", "apiVersion": "v1"},
        "fieldref": {"fieldPath": "data.list"},
    },
]


def _resources(text: str = RESOURCES) -> list[Resource]:
    return [Resource(obj=doc) for doc in yaml.safe_load_all(text) if doc]


def _normalize(obj: Any) -> Any:
    """Our object as kubectl prints it, read back the same way (types included).

    kustomize's output step writes every metadata.annotations value as a string (the writer's
    job, not the vars filter's), so that is applied here too.
    """
    obj = yaml.safe_load(yaml.safe_dump(obj))
    annotations = obj.get("metadata", {}).get("annotations")
    if annotations:
        obj["metadata"]["annotations"] = {k: scalar_text(v) for k, v in annotations.items()}
    return obj


def _kubectl(tmp_path: Path, kust: dict[str, Any], text: str) -> subprocess.CompletedProcess:
    (tmp_path / "resources.yaml").write_text(text)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": ["resources.yaml"], **kust})
    )
    return subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60
    )


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


@needs_kubectl
def test_vars_match_kubectl(tmp_path):
    proc = _kubectl(tmp_path, {"vars": VARS}, RESOURCES)
    assert proc.returncode == 0, proc.stderr
    expected = {_key(d): d for d in yaml.safe_load_all(proc.stdout) if d}
    resources = _resources()
    kvars.apply(resources, copy.deepcopy(VARS))
    ours = {_key(r.obj): _normalize(r.obj) for r in resources}
    assert ours.keys() == expected.keys()
    for key, obj in expected.items():
        assert ours[key] == obj, key


def test_vars_values_spelled_out():
    resources = _resources()
    kvars.apply(resources, copy.deepcopy(VARS))
    app = resources[2].obj
    container = app["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == [
        "--db=db",
        5432,  # a whole-field var keeps its type
        "$(DB_HOST)",  # $$ escapes
        "$(UNKNOWN)",
        "$(DB_HOST",
        "cost: $5",
    ]
    assert container["env"][1]["value"] == 1.5
    assert app["spec"]["template"]["metadata"]["annotations"] == {
        "whole": 5432,
        "flag": True,
        "part": "ratio=1.5",
    }
    assert app["metadata"]["labels"] == {"port": 5432, "text": "v-fast"}
    # Pod hostname is not a varReference field.
    assert resources[3].obj["spec"]["hostname"] == "$(DB_HOST)"
    assert resources[3].obj["spec"]["containers"][0]["args"] == ["fast"]


@needs_kubectl
def test_prefixed_names_are_the_values_and_objref_uses_the_original_name(tmp_path):
    text = """
apiVersion: v1
kind: Service
metadata:
  name: db
---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: busybox
    args: ["$(DB)"]
"""
    spec = [{"name": "DB", "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"}}]
    proc = _kubectl(tmp_path, {"vars": spec, "namePrefix": "x-"}, text)
    assert proc.returncode == 0, proc.stderr
    expected = {_key(d): d for d in yaml.safe_load_all(proc.stdout) if d}
    resources = _resources(text)
    for res in resources:  # what the core's prefix transformer does before vars
        res.rename(name="x-" + res.name)
    kvars.apply(resources, spec)
    assert resources[1].obj["spec"]["containers"][0]["args"] == ["x-db"]
    assert _normalize(resources[1].obj) == expected[("Pod", "x-p")]


ERRORS: dict[str, tuple[list[dict[str, Any]], str]] = {
    "objref without apiVersion matches nothing": (
        [{"name": "A", "objref": {"kind": "Service", "name": "db"}}],
        "var '{A Service.[noVer].[noGrp] {metadata.name}}' cannot be mapped to a field "
        "in the set of known resources",
    ),
    "duplicate": (
        [
            {"name": "A", "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"}},
            {"name": "A", "objref": {"kind": "ConfigMap", "name": "settings", "apiVersion": "v1"}},
        ],
        "var 'A' already encountered",
    ),
    "missing field": (
        [
            {
                "name": "A",
                "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"},
                "fieldref": {"fieldPath": "spec.nope"},
            }
        ],
        "field specified in var '{A Service.v1.[noGrp] {spec.nope}}' "
        "not found in corresponding resource",
    ),
    "wrong namespace": (
        [
            {
                "name": "A",
                "objref": {"kind": "Service", "name": "db", "apiVersion": "v1", "namespace": "x"},
            }
        ],
        "var '{A Service.v1.[noGrp] {metadata.name}}' cannot be mapped to a field "
        "in the set of known resources",
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    spec, message = ERRORS[name]
    resources = _resources()
    before = [copy.deepcopy(r.obj) for r in resources]
    with pytest.raises(KrmError) as err:
        kvars.apply(resources, copy.deepcopy(spec))
    assert err.value.message == message
    assert [r.obj for r in resources] == before  # nothing substituted on failure


@needs_kubectl
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_kubectl(tmp_path, name):
    spec, message = ERRORS[name]
    proc = _kubectl(tmp_path, {"vars": spec}, RESOURCES)
    assert proc.returncode != 0
    assert message in proc.stderr.replace('\\"', '"')


@needs_kubectl
def test_ambiguous_objref_matches_kubectl(tmp_path):
    text = (
        RESOURCES
        + """
---
apiVersion: v1
kind: Service
metadata:
  name: db
  namespace: other
"""
    )
    spec = [{"name": "A", "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"}}]
    message = "found 2 resId matches for var {A Service.v1.[noGrp] {}} (unable to disambiguate)"
    proc = _kubectl(tmp_path, {"vars": spec}, text)
    assert proc.returncode != 0
    assert message in proc.stderr
    with pytest.raises(KrmError) as err:
        kvars.apply(_resources(text), spec)
    assert err.value.message == message
    # With a namespace the objref is unambiguous.
    spec[0]["objref"]["namespace"] = "other"
    resources = _resources(text)
    kvars.apply(resources, spec)


def test_expand_rules():
    counts: dict[str, int] = {}
    values = {"A": "x", "N": 3, "B": True, "F": 2.0}
    assert kvars.expand("$(A)", values, counts) == "x"
    assert kvars.expand("$(N)", values, counts) == 3
    assert kvars.expand("n=$(N),b=$(B),f=$(F)", values, counts) == "n=3,b=true,f=2"
    assert kvars.expand("$$(A) $$ $", values, counts) == "$(A) $ $"
    assert kvars.expand("$(A", values, counts) == "$(A"
    assert kvars.expand("$x$(A)$", values, counts) == "$xx$"
    assert counts == {"A": 2, "N": 2, "B": 1, "F": 1}


def test_extra_field_specs_from_configurations():
    text = """
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
spec:
  target: $(DB_HOST)
  other: $(DB_HOST)
"""
    resources = _resources(RESOURCES) + _resources(text)
    kvars.apply(
        resources,
        copy.deepcopy(VARS[:1]),
        field_specs=[{"kind": "Widget", "group": "example.com", "path": "spec/target"}],
    )
    assert resources[-1].obj["spec"] == {"target": "db", "other": "$(DB_HOST)"}


def test_non_string_list_item_in_a_var_field_is_an_error():
    text = """
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    args: ["$(DB_HOST)", 5]
"""
    with pytest.raises(KrmError) as err:
        kvars.apply(_resources(RESOURCES) + _resources(text), copy.deepcopy(VARS[:1]))
    assert err.value.message == (
        "considering field 'spec/containers/args' of object Pod.v1.[noGrp]/p.[noNs]: "
        "invalid value type expect a string"
    )


def test_bad_var_definitions():
    with pytest.raises(ValidationError) as err:
        kvars.apply(_resources(), [{"objref": {"kind": "Service"}}])
    assert err.value.message == "vars[0]: var must have a name"
    with pytest.raises(ValidationError) as err:
        kvars.apply(_resources(), [{"name": "A", "objref": "db"}])
    assert err.value.message == "vars[0] (var 'A'): objref must be a map"


def test_no_vars_changes_nothing():
    resources = _resources()
    before = [copy.deepcopy(r.obj) for r in resources]
    kvars.apply(resources, [])
    assert [r.obj for r in resources] == before


_BASE_SVC = """
apiVersion: v1
kind: Service
metadata:
  name: es
spec:
  ports:
  - port: {port}
"""


def _two_prefixed_bases(tmp_path: Path) -> Path:
    for base, port in (("dev", 9200), ("test", 9300)):
        d = tmp_path / base
        d.mkdir()
        (d / "svc.yaml").write_text(_BASE_SVC.format(port=port))
        (d / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "namePrefix": f"{base}-",
                    "resources": ["svc.yaml"],
                    "vars": [
                        {
                            "name": f"{base.upper()}_ES",
                            "objref": {"kind": "Service", "name": "es", "apiVersion": "v1"},
                        }
                    ],
                }
            )
        )
    top = tmp_path / "top"
    top.mkdir()
    (top / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
        "  - name: c\n    image: busybox\n    args: [$(DEV_ES), $(TEST_ES)]\n"
    )
    (top / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": ["../dev", "../test", "pod.yaml"]})
    )
    return top


def _simulate_two_prefixed_bases() -> list[Resource]:
    """What the core does: bind each base's vars after its prefix, resolve at the top."""
    all_vars = []
    resources: list[Resource] = []
    for base, port in (("dev", 9200), ("test", 9300)):
        spec = [
            {
                "name": f"{base.upper()}_ES",
                "objref": {"kind": "Service", "name": "es", "apiVersion": "v1"},
            }
        ]
        level = _resources(_BASE_SVC.format(port=port))
        for res in level:
            res.rename(name=f"{base}-{res.name}")
        kvars.bind(level, spec)
        resources.extend(level)
        all_vars.extend(spec)
    resources.extend(
        _resources(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
            "  - name: c\n    image: busybox\n    args: [$(DEV_ES), $(TEST_ES)]\n"
        )
    )
    kvars.apply(resources, all_vars, bound=True)
    return resources


def test_bound_vars_of_two_bases_with_different_prefixes():
    resources = _simulate_two_prefixed_bases()
    assert resources[2].obj["spec"]["containers"][0]["args"] == ["dev-es", "test-es"]
    # Unbound, the same objref is ambiguous at the top, as it would be in one kustomization.
    with pytest.raises(KrmError) as err:
        kvars.apply(
            resources,
            [{"name": "X", "objref": {"kind": "Service", "name": "es", "apiVersion": "v1"}}],
        )
    assert err.value.message.startswith("found 2 resId matches for var {X Service.v1.[noGrp] {}}")


@needs_kubectl
def test_bound_vars_match_kubectl(tmp_path):
    top = _two_prefixed_bases(tmp_path)
    proc = subprocess.run([KUBECTL, "kustomize", str(top)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    expected = {_key(d): d for d in yaml.safe_load_all(proc.stdout) if d}
    ours = {_key(r.obj): _normalize(r.obj) for r in _simulate_two_prefixed_bases()}
    assert ours == expected


def test_bind_without_a_match_makes_apply_fail_like_kustomize():
    # A var declared where its resource is not (yet) present is never bound.
    level = _resources(RESOURCES)
    spec = [{"name": "A", "objref": {"kind": "Service", "name": "nope", "apiVersion": "v1"}}]
    kvars.bind(level, spec)
    with pytest.raises(KrmError) as err:
        kvars.apply(level, spec, bound=True)
    assert err.value.message == (
        "var '{A Service.v1.[noGrp] {metadata.name}}' cannot be mapped to a field "
        "in the set of known resources"
    )


def test_bind_rejects_duplicates_and_ambiguity():
    level = _resources(RESOURCES)
    one = {"name": "A", "objref": {"kind": "Service", "name": "db", "apiVersion": "v1"}}
    with pytest.raises(KrmError) as err:
        kvars.bind(level, [one, copy.deepcopy(one)])
    assert err.value.message == "var 'A' already encountered"
    assert all(kvars.REFVARS not in r.extra or r.extra[kvars.REFVARS] == ["A"] for r in level)


@pytest.mark.parametrize(
    ("value", "text"),
    # Go's %v, as kubectl kustomize v5.5.0 writes these inside a longer string.
    [(100000.0, "100000"), (1234567.0, "1.234567e+06"), (0.00001, "1e-05"), (2.5, "2.5")],
)
def test_floats_inside_strings_use_go_formatting(value, text):
    assert kvars.expand("x$(F)", {"F": value}, {}) == "x" + text


def test_whole_field_integral_float_reads_back_as_an_integer():
    assert kvars.expand("$(F)", {"F": 100000.0}, {}) == 100000
    assert kvars.expand("$(F)", {"F": 2.5}, {}) == 2.5
