"""kustomize ``replacements``: unit tests and differential tests against ``kubectl kustomize``."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.errors import KrmError, ValidationError
from orchestrator.filters import replacements
from orchestrator.filters.replacements import (
    parse_label_selector,
    resolve_scalar,
    scalar_text,
    split_path,
)
from orchestrator.resource import Resource

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl (the oracle) is not installed")

RESOURCES = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: src
  labels:
    role: source
data:
  port: "8080"
  host: db.example.com
  list: a,b,c
  number: "42"
  image: registry.local/app:1.2.3
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: other
data:
  user: YWRtaW4=
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: front
  annotations:
    note: x-y-z
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
        args: ["--port", "1"]
        env:
        - name: HOST
          value: localhost
        - name: PORT
          value: "80"
        ports:
        - containerPort: 80
      - name: web-sidecar
        image: envoy:1
        args: ["a", 5]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
  namespace: jobs
  labels:
    app: worker
    tier: back
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: worker
        image: busybox
---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations:
    owner: team-a
spec:
  ports:
  - port: 80
    targetPort: 8080
    name: http
"""


def _resources(text: str = RESOURCES) -> list[Resource]:
    return [Resource(obj=doc) for doc in yaml.safe_load_all(text) if doc]


def _by_key(objs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}


def _normalize(obj: Any) -> Any:
    """Our object as kubectl prints it, read back the same way (types included).

    kustomize's output step writes every metadata.annotations value as a string (that is the
    writer's job, not the replacement filter's), so that is applied here too.
    """
    obj = yaml.safe_load(yaml.safe_dump(obj))
    annotations = obj.get("metadata", {}).get("annotations")
    if annotations:
        obj["metadata"]["annotations"] = {k: scalar_text(v) for k, v in annotations.items()}
    return obj


def _kubectl(tmp_path: Path, text: str, spec: list[dict[str, Any]]) -> subprocess.CompletedProcess:
    (tmp_path / "resources.yaml").write_text(text)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": ["resources.yaml"], "replacements": spec})
    )
    return subprocess.run(
        [KUBECTL, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60
    )


def _compare_with_kubectl(tmp_path: Path, spec: list[dict[str, Any]], text: str = RESOURCES):
    proc = _kubectl(tmp_path, text, spec)
    assert proc.returncode == 0, proc.stderr
    expected = _by_key([d for d in yaml.safe_load_all(proc.stdout) if d])
    resources = _resources(text)
    replacements.apply(resources, copy.deepcopy(spec))
    ours = _by_key([_normalize(r.obj) for r in resources])
    assert ours.keys() == expected.keys()
    for key, obj in expected.items():
        assert ours[key] == obj, key
    return ours


def _src(field: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "ConfigMap", "name": "src", "fieldPath": field, **extra}


SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "scalar into int and str fields, list selectors": [
        {
            "source": _src("data.port"),
            "targets": [
                {
                    "select": {"kind": "Deployment", "name": "web"},
                    "fieldPaths": [
                        "spec.replicas",
                        "spec.template.spec.containers.[name=web].env.[name=PORT].value",
                        "spec.template.spec.containers.0.ports.0.containerPort",
                    ],
                }
            ],
        }
    ],
    "regex list selector is unanchored, wildcard and index": [
        {
            "source": _src("data.number"),
            "targets": [
                {
                    "select": {"kind": "Deployment", "name": "web"},
                    "fieldPaths": [
                        "spec.template.spec.containers.[name=web].args.1",
                        "spec.template.spec.containers.*.image",
                    ],
                }
            ],
        }
    ],
    "default fieldPath is metadata.name, into the Service": [
        {
            "source": {"kind": "Secret", "name": "creds"},
            "targets": [
                {"select": {"kind": "Service"}, "fieldPaths": ["metadata.annotations.owner"]}
            ],
        }
    ],
    "source delimiter and target delimiter": [
        {
            "source": _src("data.list", options={"delimiter": ",", "index": 2}),
            "targets": [
                {
                    "select": {"kind": "Deployment", "name": "web"},
                    "fieldPaths": ["metadata.annotations.note"],
                    "options": {"delimiter": "-", "index": 1},
                },
                {
                    "select": {"kind": "Deployment", "name": "web"},
                    "fieldPaths": ["spec.template.spec.containers.0.image"],
                    "options": {"delimiter": ":", "index": -1},
                },
                {
                    "select": {"kind": "Service"},
                    "fieldPaths": ["spec.ports.0.name"],
                    "options": {"delimiter": "-", "index": 9},
                },
            ],
        }
    ],
    "create missing fields, maps, lists and list entries": [
        {
            "source": _src("data.port"),
            "targets": [
                {
                    "select": {"kind": "Deployment"},
                    "fieldPaths": [
                        "metadata.annotations.created",
                        "spec.template.spec.containers.[name=web].env.[name=NEW].value",
                        "spec.extra.list.0.x",
                    ],
                    "options": {"create": True},
                }
            ],
        }
    ],
    "a map source replaces a map target": [
        {
            "source": {"kind": "Deployment", "name": "web", "fieldPath": "metadata.labels"},
            "targets": [
                {
                    "select": {"kind": "Deployment", "name": "worker"},
                    "fieldPaths": ["spec.template.metadata.labels"],
                    "options": {"create": True},
                }
            ],
        }
    ],
    "label and annotation selectors, reject": [
        {
            "source": _src("data.host"),
            "targets": [
                {
                    "select": {"kind": "Deployment", "labelSelector": "tier in (front,back)"},
                    "reject": [{"namespace": "jobs"}],
                    "fieldPaths": ["metadata.labels.tier"],
                },
                {
                    "select": {"annotationSelector": "owner=team-a"},
                    "fieldPaths": ["metadata.annotations.owner"],
                },
                {
                    "select": {"kind": "Deployment"},
                    "reject": [{"labelSelector": "app!=worker"}],
                    "fieldPaths": ["spec.template.spec.containers.0.image"],
                },
            ],
        }
    ],
    "namespaces: default equals empty, explicit namespace": [
        {
            "source": {"kind": "Secret", "namespace": "other", "fieldPath": "data.user"},
            "targets": [
                {
                    "select": {"kind": "Deployment", "namespace": "default"},
                    "fieldPaths": ["metadata.labels.tier"],
                },
                {
                    "select": {"kind": "Deployment", "namespace": "jobs"},
                    "fieldPaths": ["spec.template.spec.containers.0.image"],
                },
            ],
        }
    ],
    "int source into a string field and a list of mixed types": [
        {
            "source": {"kind": "Deployment", "name": "worker", "fieldPath": "spec.replicas"},
            "targets": [
                {
                    "select": {"kind": "Deployment", "name": "web"},
                    "fieldPaths": [
                        "metadata.labels.tier",
                        "spec.template.spec.containers.1.args.0",
                        "spec.template.spec.containers.1.args.1",
                    ],
                },
                {
                    "select": {"kind": "Service"},
                    "fieldPaths": ["metadata.annotations.new"],
                    "options": {"create": True},
                },
            ],
        }
    ],
    "version and group selectors, escaped dots": [
        {
            "source": _src("data.image"),
            "targets": [
                {
                    "select": {"group": "apps", "version": "v1", "kind": "Deployment"},
                    "fieldPaths": ["metadata.annotations.example\\.com/image"],
                    "options": {"create": True},
                },
                {"select": {"version": "v2"}, "fieldPaths": ["spec.nothing"]},
            ],
        }
    ],
    "several replacements in order, the second reads the first's result": [
        {
            "source": _src("data.port"),
            "targets": [{"select": {"kind": "Service"}, "fieldPaths": ["spec.ports.0.port"]}],
        },
        {
            "source": {"kind": "Service", "fieldPath": "spec.ports.0.port"},
            "targets": [{"select": {"name": "worker"}, "fieldPaths": ["spec.replicas"]}],
        },
    ],
}


@needs_kubectl
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenarios_match_kubectl(tmp_path, name):
    _compare_with_kubectl(tmp_path, SCENARIOS[name])


def test_scenario_results_are_what_kustomize_documents():
    # Independent of the oracle: a few values spelled out.
    resources = _resources()
    replacements.apply(
        resources, copy.deepcopy(SCENARIOS["scalar into int and str fields, list selectors"])
    )
    web = resources[2].obj
    assert web["spec"]["replicas"] == 8080  # int target keeps its type
    assert web["spec"]["template"]["spec"]["containers"][0]["env"][1]["value"] == "8080"
    resources = _resources()
    replacements.apply(resources, copy.deepcopy(SCENARIOS["source delimiter and target delimiter"]))
    assert resources[2].obj["metadata"]["annotations"]["note"] == "x-c-z"
    assert resources[2].obj["spec"]["template"]["spec"]["containers"][0]["image"] == "c:nginx:1.0"
    assert resources[4].obj["spec"]["ports"][0]["name"] == "http-c"


ERRORS: dict[str, tuple[list[dict[str, Any]], str]] = {
    "no source": (
        [{"source": _src("data.port", name="nope"), "targets": [{"select": {"kind": "Service"}}]}],
        "nothing selected by ConfigMap.[noVer].[noGrp]/nope.[noNs]:data.port",
    ),
    "several sources": (
        [{"source": {"kind": "Deployment"}, "targets": [{"select": {"kind": "Service"}}]}],
        "multiple matches for selector Deployment.[noVer].[noGrp]/[noName].[noNs]",
    ),
    "missing source field": (
        [{"source": _src("data.nope"), "targets": [{"select": {"kind": "Service"}}]}],
        "fieldPath `data.nope` is missing for replacement source "
        "ConfigMap.[noVer].[noGrp]/src.[noNs]",
    ),
    "missing target field": (
        [
            {
                "source": _src("data.port"),
                "targets": [{"select": {"kind": "Service"}, "fieldPaths": ["spec.nope"]}],
            }
        ],
        'unable to find field "spec.nope" in replacement target',
    ),
    "index out of bounds": (
        [
            {
                "source": _src("data.list", options={"delimiter": ",", "index": 3}),
                "targets": [{"select": {"kind": "Service"}}],
            }
        ],
        "options.index 3 is out of bounds for value a,b,c",
    ),
    "delimiter on a map": (
        [
            {
                "source": _src("data", options={"delimiter": ","}),
                "targets": [{"select": {"kind": "Service"}}],
            }
        ],
        "delimiter option can only be used with scalar nodes",
    ),
    "no select": (
        [{"source": _src("data.port"), "targets": [{"fieldPaths": ["spec.nope"]}]}],
        "target must specify resources to select",
    ),
    "no targets": (
        [{"source": _src("data.port")}],
        "replacements must specify a source and at least one target",
    ),
    "index past the end": (
        [
            {
                "source": _src("data.port"),
                "targets": [{"select": {"kind": "Service"}, "fieldPaths": ["spec.ports.3.port"]}],
            }
        ],
        'unable to find field "spec.ports.3.port" in replacement target: '
        "index 3 specified but only 1 elements found",
    ),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
    spec, message = ERRORS[name]
    resources = _resources()
    with pytest.raises(KrmError) as err:
        replacements.apply(resources, copy.deepcopy(spec), source="app/kustomization.yaml")
    assert err.value.message.startswith("replacements[0]")
    assert message in err.value.message
    assert str(err.value).startswith("app/kustomization.yaml: ")


@needs_kubectl
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_kubectl(tmp_path, name):
    spec, message = ERRORS[name]
    proc = _kubectl(tmp_path, RESOURCES, spec)
    assert proc.returncode != 0
    # klog quotes the error: undo its escaping of double quotes.
    assert message in proc.stderr.replace('\\"', '"')


def test_a_failed_source_lookup_changes_nothing():
    resources = _resources()
    before = [copy.deepcopy(r.obj) for r in resources]
    spec = ERRORS["no source"][0]
    with pytest.raises(KrmError):
        replacements.apply(resources, copy.deepcopy(spec))
    assert [r.obj for r in resources] == before


def test_previous_names_select_sources_and_targets():
    resources = _resources()
    src = resources[0]
    src.rename(name="prefix-src")
    spec = [
        {
            "source": {"kind": "ConfigMap", "name": "src", "fieldPath": "metadata.name"},
            "targets": [
                {
                    "select": {"name": "worker"},
                    "fieldPaths": ["metadata.labels.cm"],
                    "options": {"create": True},
                }
            ],
        }
    ]
    replacements.apply(resources, spec)
    assert resources[3].obj["metadata"]["labels"]["cm"] == "prefix-src"


def test_case_insensitive_keys_like_go_json():
    resources = _resources()
    spec = [
        {
            "source": {"Kind": "ConfigMap", "name": "src", "fieldpath": "data.port"},
            "targets": [{"select": {"kind": "Service"}, "fieldpaths": ["spec.ports.0.name"]}],
        }
    ]
    replacements.apply(resources, spec)
    assert resources[4].obj["spec"]["ports"][0]["name"] == "8080"


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("a.b.c", ("a", "b", "c")),
        (".a.b", ("a", "b")),
        ("a.[name=x.y].b", ("a", "[name=x.y]", "b")),
        ("metadata.annotations.example\\.com/x", ("metadata", "annotations", "example.com/x")),
        ("a.[0].b", ("a", "[0]", "b")),
        ("a.[x.y].b", ("a", "x.y", "b")),
    ],
)
def test_split_path(path, parts):
    assert split_path(path) == parts


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ("", {}, True),
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a!=b", {"a": "b"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("!a", {"b": "1"}, True),
        ("a in (x, y),b", {"a": "y", "b": "1"}, True),
        ("a notin (x,y)", {"a": "x"}, False),
        ("a notin (x,y)", {}, True),
        (
            "app.kubernetes.io/name=web,tier=front",
            {"app.kubernetes.io/name": "web", "tier": "front"},
            True,
        ),
    ],
)
def test_label_selector(selector, labels, matches):
    assert parse_label_selector(selector).matches(labels) is matches


@pytest.mark.parametrize("bad", ["a=b,", "a in (x", "=b", "!a=b"])
def test_bad_label_selector(bad):
    with pytest.raises(ValidationError) as err:
        parse_label_selector(bad)
    assert err.value.message == f"unable to parse requirement: invalid selector {bad!r}"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8080", 8080),
        ("true", True),
        ("1.5", 1.5),
        ("", None),
        ("~", None),
        ("yes", "yes"),
        ("0x1F", 31),
        ("a", "a"),
    ],
)
def test_resolve_scalar_yaml12(text, value):
    assert resolve_scalar(text) == value


def test_bad_input_shapes():
    resources = _resources()
    with pytest.raises(ValidationError) as err:
        replacements.apply(resources, [{"source": "x", "targets": []}])
    assert err.value.message == "replacements[0].source must be a map"
    with pytest.raises(ValidationError) as err:
        replacements.apply(
            resources,
            [{"source": _src("data.port", options={"index": "one"}), "targets": []}],
        )
    assert err.value.message == (
        "replacements[0].source.options.index must be an integer, got 'one'"
    )


@needs_kubectl
@pytest.mark.parametrize(("field", "tag"), [("data.host", "str"), ("data.port", "int")])
def test_a_null_target_fails_like_kubectl(tmp_path, field, tag):
    text = RESOURCES.replace("  replicas: 1\n", "  replicas: null\n", 1)
    target = {"select": {"name": "web", "kind": "Deployment"}, "fieldPaths": ["spec.replicas"]}
    spec = [{"source": _src(field), "targets": [target]}]
    proc = _kubectl(tmp_path, text, spec)
    assert proc.returncode != 0
    value = "db.example.com" if tag == "str" else "8080"
    message = f"yaml: cannot decode !!{tag} `{value}` as a !!null"
    assert message in proc.stderr
    with pytest.raises(KrmError) as err:
        replacements.apply(_resources(text), spec)
    assert err.value.message.endswith(message)


def test_undecodable_text_is_reported_after_all_replacements():
    # kustomize keeps "db.example.com" under the int tag of spec.replicas and fails only when it
    # writes the result, so a later error in the same run wins.
    replicas = {"select": {"name": "worker"}, "fieldPaths": ["spec.replicas"]}
    spec = [
        {"source": _src("data.host"), "targets": [replicas]},
        {"source": _src("data.nope"), "targets": [{"select": {"kind": "Service"}}]},
    ]
    with pytest.raises(KrmError) as err:
        replacements.apply(_resources(), copy.deepcopy(spec))
    assert "fieldPath `data.nope` is missing" in err.value.message
    with pytest.raises(KrmError) as err:
        replacements.apply(_resources(), copy.deepcopy(spec[:1]))
    assert err.value.message == (
        "replacements[0]: yaml: cannot decode !!str `db.example.com` as a !!int"
    )


@needs_kubectl
def test_a_list_as_metadata_name_fails_like_kubectl(tmp_path):
    target = {"select": {"kind": "Deployment"}, "fieldPaths": ["metadata.name"]}
    spec = [{"source": {"kind": "Service", "fieldPath": "spec.ports"}, "targets": [target]}]
    proc = _kubectl(tmp_path, RESOURCES, spec)
    assert proc.returncode != 0
    assert "missing metadata.name in object" in proc.stderr
    with pytest.raises(KrmError) as err:
        replacements.apply(_resources(), spec)
    assert err.value.message == "missing metadata.name in object apps/v1 Deployment"
