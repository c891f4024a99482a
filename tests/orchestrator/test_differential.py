"""Differential tests: generated kustomizations built by krm and by kubectl kustomize (v5.5.0).

The trees come from a seeded generator (``kustgen``) mixing namePrefix/nameSuffix,
namespace, commonLabels/labels, commonAnnotations, images, replicas, generators with
behaviors, patches of every style, components, bases and name references. Output must be
byte-identical; when kubectl fails, krm must fail too.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from orchestrator.build import build
from orchestrator.errors import KrmError, ValidationError
from tests.scripts import load_script

from .conftest import kubectl_kustomize

kustgen = load_script("tests/orchestrator/kustgen.py", "kustgen")

SEEDS = range(int(os.environ.get("KRM_DIFF_SEEDS", "40")))


def _compare(path: Path) -> bool:
    """Check krm against kubectl on ``path``; return whether kubectl succeeded."""
    oracle = kubectl_kustomize(path)
    try:
        ours = build(str(path)).to_yaml().encode()
        error = None
    except KrmError as exc:
        ours, error = None, str(exc)
    if oracle.returncode != 0:
        assert error is not None, f"kubectl failed but krm succeeded: {oracle.stderr[-400:]!r}"
        return False
    assert error is None, f"krm failed where kubectl succeeded: {error}"
    assert ours.decode() == oracle.stdout.decode()
    return True


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_tree_matches_kubectl(tmp_path: Path, seed: int) -> None:
    _compare(Path(kustgen.write_case(str(tmp_path), seed)))


def test_generator_is_deterministic(tmp_path: Path) -> None:
    a = kustgen.write_case(str(tmp_path / "a"), 7)
    b = kustgen.write_case(str(tmp_path / "b"), 7)
    for name in ("kustomization.yaml",):
        assert Path(a, name).read_text() == Path(b, name).read_text()


CASES = {
    "name-references-after-prefix-and-hash": {
        "kustomization.yaml": """
            namePrefix: p-
            nameSuffix: -s
            namespace: prod
            resources:
            - res.yaml
            configMapGenerator:
            - name: cfg
              literals: [a=1]
            secretGenerator:
            - name: sec
              literals: [b=2]
        """,
        "res.yaml": """
            apiVersion: v1
            kind: ServiceAccount
            metadata:
              name: sa
            ---
            apiVersion: rbac.authorization.k8s.io/v1
            kind: ClusterRoleBinding
            metadata:
              name: crb
            roleRef:
              apiGroup: rbac.authorization.k8s.io
              kind: ClusterRole
              name: cr
            subjects:
            - kind: ServiceAccount
              name: sa
              namespace: elsewhere
            - kind: ServiceAccount
              name: default
            ---
            apiVersion: rbac.authorization.k8s.io/v1
            kind: ClusterRole
            metadata:
              name: cr
            ---
            apiVersion: apps/v1
            kind: StatefulSet
            metadata:
              name: db
            spec:
              serviceName: db
              template:
                spec:
                  serviceAccountName: sa
                  imagePullSecrets:
                  - name: sec
                  containers:
                  - name: db
                    image: postgres
                    envFrom:
                    - configMapRef: {name: cfg}
                  volumes:
                  - name: v
                    projected:
                      sources:
                      - configMap: {name: cfg}
                      - secret: {name: sec}
            ---
            apiVersion: v1
            kind: Service
            metadata:
              name: db
            ---
            apiVersion: networking.k8s.io/v1
            kind: Ingress
            metadata:
              name: ing
              annotations:
                nginx.ingress.kubernetes.io/auth-secret: sec
            spec:
              tls:
              - secretName: sec
              defaultBackend:
                service: {name: db, port: {number: 80}}
        """,
    },
    "inline-builtin-generators-transformers-and-validators": {
        "kustomization.yaml": """
            resources: [cm.yaml]
            generators:
            - |-
              apiVersion: builtin
              kind: ConfigMapGenerator
              metadata:
                name: gen
              literals: [a=b]
            transformers:
            - |-
              apiVersion: builtin
              kind: PrefixSuffixTransformer
              metadata:
                name: p
              prefix: in-
              fieldSpecs:
              - path: metadata/name
            validators:
            - |-
              apiVersion: builtin
              kind: AnnotationsTransformer
              metadata:
                name: v
              annotations: {a: b}
              fieldSpecs:
              - path: spec/absent
        """,
        "cm.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: c}
        """,
    },
    "json-patches-see-kustomize-internal-annotations": {
        "kustomization.yaml": """
            resources: [res.yaml]
            namespace: prod
            configMapGenerator:
            - name: gen
              literals: [a=1]
            patches:
            - target: {kind: Service}
              patch: |-
                - op: add
                  path: /metadata/annotations/added
                  value: by-patches
            - target: {kind: Secret}
              patch: |-
                - op: add
                  path: /metadata/annotations/tmp
                  value: x
                - op: remove
                  path: /metadata/annotations/tmp
            patchesJson6902:
            - target: {version: v1, kind: ConfigMap, name: gen}
              patch: |-
                - op: add
                  path: /metadata/annotations/added
                  value: on-generated
            - target: {version: v1, kind: ServiceAccount, name: sa}
              patch: |-
                - op: add
                  path: /metadata/annotations/added
                  value: after-namespace
        """,
        "res.yaml": """
            apiVersion: v1
            kind: Service
            metadata: {name: s}
            ---
            apiVersion: v1
            kind: Secret
            metadata: {name: sec}
            ---
            apiVersion: v1
            kind: ServiceAccount
            metadata: {name: sa}
        """,
    },
    "labels-selectors-templates-and-fields": {
        "kustomization.yaml": """
            resources: [res.yaml]
            labels:
            - pairs: {a: "1"}
              includeSelectors: true
            - pairs: {b: "true"}
              includeTemplates: true
            - pairs: {c: x}
              fields:
              - path: spec/selector
                kind: Service
                create: true
            commonAnnotations:
              note: "yes"
        """,
        "res.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            spec:
              template:
                spec:
                  affinity:
                    podAntiAffinity:
                      requiredDuringSchedulingIgnoredDuringExecution:
                      - labelSelector:
                          matchLabels: {x: y}
                        topologyKey: k
                  containers: [{name: c, image: i}]
            ---
            apiVersion: batch/v1
            kind: CronJob
            metadata: {name: cj}
            spec:
              jobTemplate:
                spec:
                  template:
                    spec:
                      containers: [{name: c, image: i}]
            ---
            apiVersion: v1
            kind: Service
            metadata: {name: s}
            ---
            apiVersion: example.com/v1
            kind: Custom
            metadata: {name: cu}
        """,
    },
    "images-and-replicas": {
        "kustomization.yaml": """
            resources: [res.yaml]
            images:
            - name: nginx
              newName: my.registry:5000/nginx
              newTag: "1.27"
            - name: busybox
              digest: sha256:1111111111111111111111111111111111111111111111111111111111111111
            - name: my.registry:5000/tools
              tagSuffix: -debug
            replicas:
            - name: d
              count: 5
        """,
        "res.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            spec:
              template:
                spec:
                  initContainers: [{name: i, image: "busybox:1.36"}]
                  containers:
                  - {name: a, image: nginx}
                  - {name: b, image: "nginx:1.0@sha256:abc"}
                  - {name: t, image: "my.registry:5000/tools:v1"}
            ---
            apiVersion: example.com/v1
            kind: Pipeline
            metadata: {name: p}
            spec:
              steps:
              - containers: [{name: s, image: nginx}]
        """,
    },
    "namespace-on-cluster-kinds-and-webhooks": {
        "kustomization.yaml": """
            namespace: target
            namePrefix: x-
            resources: [res.yaml]
        """,
        "res.yaml": """
            apiVersion: v1
            kind: Namespace
            metadata: {name: old}
            ---
            apiVersion: admissionregistration.k8s.io/v1
            kind: ValidatingWebhookConfiguration
            metadata: {name: hook}
            webhooks:
            - name: a.example.com
              clientConfig:
                service: {name: svc, namespace: old}
            ---
            apiVersion: v1
            kind: Service
            metadata: {name: svc, namespace: old}
            ---
            apiVersion: apiextensions.k8s.io/v1
            kind: CustomResourceDefinition
            metadata: {name: things.example.com}
            spec:
              conversion:
                webhook:
                  clientConfig:
                    service: {name: svc, namespace: old}
        """,
    },
    "vars-replacements-and-build-metadata": {
        "kustomization.yaml": """
            namePrefix: p-
            resources: [base]
            buildMetadata: [originAnnotations, managedByLabel]
            configMapGenerator:
            - name: cm
              literals: [a=b]
            replacements:
            - path: repl.yaml
            - source: {kind: Service, fieldPath: metadata.name}
              targets:
              - select: {kind: Deployment}
                fieldPaths: [metadata.annotations.svc]
                options: {create: true}
        """,
        "repl.yaml": """
            - source: {kind: ConfigMap, name: p-cm, fieldPath: metadata.name}
              targets:
              - select: {kind: Deployment}
                fieldPaths: [spec.template.spec.containers.0.env.0.value]
        """,
        "base/kustomization.yaml": """
            resources: [res.yaml]
            configMapGenerator:
            - name: base-cm
              literals: [x=y]
            vars:
            - name: SVC
              objref: {kind: Service, name: web, apiVersion: v1}
              fieldref: {fieldpath: metadata.name}
        """,
        "base/res.yaml": """
            apiVersion: v1
            kind: Service
            metadata: {name: web}
            ---
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            spec:
              template:
                spec:
                  containers:
                  - name: c
                    image: nginx
                    args: ["--svc=$(SVC)"]
                    env:
                    - {name: HOST, value: "$(SVC).svc"}
        """,
    },
    "transformer-annotations-and-builtin-plugin": {
        "kustomization.yaml": """
            namePrefix: p-
            namespace: foo
            commonLabels: {a: b}
            resources: [res.yaml]
            buildMetadata: [transformerAnnotations, originAnnotations]
            transformers: [tr.yaml]
            configMapGenerator:
            - name: cm
              literals: [a=b]
        """,
        "tr.yaml": """
            apiVersion: builtin
            kind: PrefixSuffixTransformer
            metadata:
              name: ps
            prefix: zz-
            suffix: -yy
            fieldSpecs:
            - path: metadata/name
        """,
        "res.yaml": """
            apiVersion: v1
            kind: Service
            metadata: {name: web}
            ---
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            spec:
              template:
                spec:
                  containers:
                  - name: c
                    image: nginx
                    envFrom: [{configMapRef: {name: cm}}]
        """,
    },
    "configurations-replace-defaults-and-local-config-name-refs": {
        "kustomization.yaml": """
            namePrefix: prefix-
            resources: [res.yaml]
            configurations: [config.yaml]
        """,
        "config.yaml": """
            nameReference:
            - kind: IngressHost
              fieldSpecs:
              - {path: spec/rules/host, kind: Ingress}
            namePrefix:
            - {path: metadata/name, kind: IngressHost}
            - {path: metadata/name, kind: Deployment}
        """,
        "res.yaml": """
            apiVersion: local/v1
            kind: IngressHost
            metadata:
              name: test.example.com
              annotations:
                config.kubernetes.io/local-config: "true"
            ---
            apiVersion: networking.k8s.io/v1
            kind: Ingress
            metadata: {name: ing}
            spec:
              rules:
              - host: test.example.com
            ---
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
        """,
    },
    "overlay-label-rewrites-base-selector-values": {
        "kustomization.yaml": """
            resources: [base]
            labels:
            - pairs: {owner: bob}
            patches:
            - target: {kind: Deployment}
              patch: |
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: any}
                spec:
                  replicas: 2
        """,
        "base/kustomization.yaml": """
            resources: [res.yaml]
            labels:
            - pairs: {owner: alice}
              includeSelectors: true
        """,
        "base/res.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            spec:
              template:
                spec:
                  containers: [{name: c, image: i}]
            ---
            apiVersion: v1
            kind: Service
            metadata: {name: s}
        """,
    },
    "patch-selectors-regex-annotations-and-file-names": {
        "kustomization.yaml": """
            resources: [one, two]
            patches:
            - target: {kind: Deployment, annotationSelector: tier=front}
              patch: |-
                - op: add
                  path: /spec/replicas
                  value: 5
            - target: {name: "api-.*"}
              patch: |-
                - op: add
                  path: /metadata/annotations/matched
                  value: regex
            - target: {kind: "Service|ConfigMap", labelSelector: "app in (web,api)"}
              patch: |-
                apiVersion: v1
                kind: Service
                metadata:
                  name: ignored
                  annotations: {smp: "yes"}
            patchesJson6902:
            - target: {group: apps, version: v1, kind: Deployment, name: web}
              path: image.yaml
        """,
        "image.yaml": """
            - op: replace
              path: /spec/template/spec/containers/0/image
              value: nginx:2
        """,
        "one/kustomization.yml": """
            resources: [res.yaml]
            namePrefix: api-
        """,
        "one/res.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: server, labels: {app: api}}
            spec:
              template:
                spec:
                  containers: [{name: c, image: redis}]
            ---
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: conf, labels: {app: api}}
        """,
        "two/Kustomization": """
            apiVersion: kustomize.config.k8s.io/v1beta1
            kind: Kustomization
            resources: [res.yaml]
        """,
        "two/res.yaml": """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web, labels: {app: web}, annotations: {tier: front}}
            spec:
              template:
                spec:
                  containers: [{name: c, image: nginx}]
            ---
            apiVersion: v1
            kind: Service
            metadata: {name: web, labels: {app: web}}
        """,
    },
    "transformer-annotations-of-inline-builtins": {
        # kustomize records an inline config as configured in the kustomization.
        "kustomization.yaml": """
            resources: [res.yaml]
            buildMetadata: [transformerAnnotations, originAnnotations]
            transformers:
            - |-
              apiVersion: builtin
              kind: LabelTransformer
              metadata:
                name: inline
              labels: {a: b}
              fieldSpecs:
              - path: metadata/labels
                create: true
            - tr.yaml
            generators:
            - |-
              apiVersion: builtin
              kind: ConfigMapGenerator
              metadata:
                name: gen
              literals: [a=b]
        """,
        "tr.yaml": """
            apiVersion: builtin
            kind: AnnotationsTransformer
            metadata:
              name: fromfile
            annotations: {x: y}
            fieldSpecs:
            - path: metadata/annotations
              create: true
        """,
        "res.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: a}
        """,
    },
    "sort-options-legacy-custom": {
        "kustomization.yaml": """
            resources: [res.yaml]
            sortOptions:
              order: legacy
              legacySortOptions:
                orderFirst: [Service]
                orderLast: [ConfigMap]
        """,
        "res.yaml": """
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: c}
            ---
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: d}
            ---
            apiVersion: v1
            kind: Service
            metadata: {name: s}
        """,
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_feature_matches_kubectl(tmp_path: Path, name: str) -> None:
    for rel, text in CASES[name].items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    # Each feature case is meant to build: a case kubectl rejects would compare nothing.
    assert _compare(tmp_path), "kubectl kustomize failed on a feature case"


def test_json_patch_on_a_resource_without_internal_annotations_fails_like_kubectl(
    tmp_path: Path,
) -> None:
    # patchesJson6902 does not record a previous id: with no rename before it, kustomize has
    # no annotations map to add into, and fails.
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [cm.yaml]\n"
        "patchesJson6902:\n"
        "- target: {version: v1, kind: ConfigMap, name: c}\n"
        "  patch: '[{op: add, path: /metadata/annotations/x, value: y}]'\n"
    )
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    assert _compare(tmp_path) is False
    with pytest.raises(KrmError) as err:
        build(str(tmp_path))
    assert err.value.resource == "ConfigMap/c"
    assert "op 0 (add /metadata/annotations/x)" in err.value.message


def test_a_validator_that_modifies_resources_fails_like_kubectl(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: [cm.yaml]\nvalidators: [v.yaml]\n")
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    # Annotations on a field that is absent and not created change nothing: a valid validator.
    (tmp_path / "v.yaml").write_text(
        "apiVersion: builtin\nkind: AnnotationsTransformer\nmetadata: {name: v}\n"
        "annotations: {a: b}\nfieldSpecs: [{path: spec/absent}]\n"
    )
    assert _compare(tmp_path) is True
    (tmp_path / "v.yaml").write_text(
        "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: v}\nlabels: {a: b}\n"
        "fieldSpecs: [{path: metadata/labels, create: true}]\n"
    )
    assert _compare(tmp_path) is False
    with pytest.raises(ValidationError) as err:
        build(str(tmp_path))
    assert err.value.message == "validator LabelTransformer 'v' shouldn't modify the resource map"
    assert err.value.file == str(tmp_path / "kustomization.yaml")
