"""When a custom ``openapi: path:`` schema replaces kustomize's built-in one and when it adds
to it, against ``kubectl kustomize``.

kyaml loads its built-in schema lazily: once a strategic merge runs, or a resource type it
does not know by heart is looked up (kustomize looks up every resource it appends). A custom
schema that a kustomization or component sets after that is added to the built-in one, so its
``$ref``s to built-in types resolve and lists merge by key (kustomize issue #4179); set before
that, it stands alone. The schema below refers to the built-in PodTemplateSpec, which shows
the difference: merged lists, or lists replaced.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCHEMA = json.dumps(
    {
        "definitions": {
            "com.example.apps.v1.DeploymentConfig": {
                "type": "object",
                "properties": {
                    "spec": {"$ref": "#/definitions/com.example.apps.v1.DeploymentConfigSpec"}
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "apps.openshift.io", "kind": "DeploymentConfig", "version": "v1"}
                ],
            },
            "com.example.apps.v1.DeploymentConfigSpec": {
                "type": "object",
                "properties": {
                    "template": {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}
                },
            },
        }
    },
    indent=1,
)
DC = """apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
      - name: container
        env:
        - name: foo
          value: bar
        volumeMounts:
        - name: cm
          mountPath: /opt/cm
      volumes:
      - name: cm
        configMap:
          name: cm
"""
PATCH = """apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: my-dc
spec:
  template:
    spec:
      containers:
      - name: container
        volumeMounts:
        - name: extra
          mountPath: /mnt
      volumes:
      - name: extra
        configMap:
          name: extra
"""
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
COMPONENT = (
    "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
    "patches:\n- path: patch.yaml\nopenapi:\n  path: openapi.json\n"
)
BASE_WITH_SCHEMA = {
    "schemabase/kustomization.yaml": "resources: [dc.yaml]\npatches:\n- path: patch.yaml\n"
    "openapi:\n  path: openapi.json\n",
    "schemabase/dc.yaml": DC.format(name="my-dc"),
    "schemabase/patch.yaml": PATCH,
    "schemabase/openapi.json": SCHEMA,
}

CASES = {
    # kustomize #4179: the base's DeploymentConfig was looked up before the component's schema
    "component-after-a-base": (
        {
            "app/kustomization.yaml": "resources: [../base]\ncomponents: [../comp]\n",
            "base/kustomization.yaml": "resources: [dc.yaml]\n",
            "base/dc.yaml": DC.format(name="my-dc"),
            "comp/kustomization.yaml": COMPONENT,
            "comp/patch.yaml": PATCH,
            "comp/openapi.json": SCHEMA,
        },
        True,
    ),
    "base-with-schema-first": (
        {"app/kustomization.yaml": "resources: [../schemabase]\n", **BASE_WITH_SCHEMA},
        False,
    ),
    # a ConfigMap is a type kyaml knows by heart: looking it up loads nothing
    "after-a-configmap": (
        {
            "app/kustomization.yaml": "resources: [cm.yaml, ../schemabase]\n",
            "app/cm.yaml": CM,
            **BASE_WITH_SCHEMA,
        },
        False,
    ),
    "after-another-deploymentconfig": (
        {
            "app/kustomization.yaml": "resources: [../other, ../schemabase]\n",
            "other/kustomization.yaml": "resources: [dc.yaml]\n",
            "other/dc.yaml": DC.format(name="other-dc"),
            **BASE_WITH_SCHEMA,
        },
        True,
    ),
    "after-a-strategic-merge": (
        {
            "app/kustomization.yaml": "resources: [../patched, ../schemabase]\n",
            "patched/kustomization.yaml": "resources: [cm.yaml]\npatches:\n"
            "- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: c\n"
            "    data:\n      a: b\n",
            "patched/cm.yaml": CM,
            **BASE_WITH_SCHEMA,
        },
        True,
    ),
    "top-level-schema": (
        {
            "app/kustomization.yaml": "resources: [dc.yaml]\npatches:\n- path: patch.yaml\n"
            "openapi:\n  path: openapi.json\n",
            "app/dc.yaml": DC.format(name="my-dc"),
            "app/patch.yaml": PATCH,
            "app/openapi.json": SCHEMA,
        },
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_custom_schema_like_kubectl(tree, oracle, name) -> None:
    files, merged = CASES[name]
    root = tree(files)
    expected = oracle(root / "app")
    assert expected.returncode == 0, expected.stderr
    got = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "--no-cache", str(root / "app")],
        capture_output=True,
        text=True,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout.decode()
    # merged: the patch's mount joins the base's; replaced: it is the only one
    my_dc = got.stdout.split("name: my-dc")[1].split("---")[0]
    assert ("mountPath: /opt/cm" in my_dc) is merged
