"""Differential tests for the real-world differences of issue 12, against kubectl kustomize.

Each case is the smallest input that showed a difference on a public repository (kubeflow
manifests, argo-cd, cluster-api), plus its neighbours: empty or null annotations, values
left empty (``key:``) under a strategic-merge patch, and symlinked kustomization files and
resources under both load restrictors. Output must be byte-identical; when kubectl fails,
krm must fail too.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from orchestrator.build import BuildOptions, build
from orchestrator.errors import KrmError, LoadError
from orchestrator.fs import NONE, ROOT_ONLY

from .conftest import kubectl_kustomize


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _compare(path: Path, restrictor: str = ROOT_ONLY) -> bool:
    """krm against kubectl on ``path``; returns whether kubectl succeeded."""
    oracle = kubectl_kustomize(path, "--load-restrictor", restrictor)
    try:
        ours = build(str(path), BuildOptions(load_restrictor=restrictor)).to_yaml()
        error = None
    except KrmError as exc:
        ours, error = None, str(exc)
    if oracle.returncode != 0:
        assert error is not None, f"kubectl failed but krm succeeded: {oracle.stderr[-400:]!r}"
        return False
    assert error is None, f"krm failed where kubectl succeeded: {error}"
    assert ours == oracle.stdout.decode()
    return True


# ----------------------------------------------------------------------------- A. annotations

SERVICE_ACCOUNTS = """
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: a
      annotations: {}
      labels: {}
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: b
      annotations:
      labels:
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata:
      name: c
      annotations: ~
      labels: null
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: f
    spec:
      template:
        metadata:
          annotations: {}
          labels: {}
"""


@pytest.mark.parametrize(
    "kustomization",
    [
        "resources: [r.yaml]\n",
        "resources: [r.yaml]\nnamePrefix: p-\ncommonLabels: {x: z}\n",
        "resources: [r.yaml]\nbuildMetadata: [originAnnotations]\n",
        "resources: [r.yaml]\ncommonAnnotations: {note: hello}\n",
        # A JSON patch that removes the only annotation leaves an empty map behind.
        "resources: [r.yaml, g.yaml]\npatches:\n- target: {kind: Secret}\n"
        '  patch: \'[{"op": "remove", "path": "/metadata/annotations/x"}]\'\n',
    ],
    ids=["plain", "prefix-and-labels", "origin", "common-annotations", "json-patch-empties"],
)
def test_empty_or_null_annotations_are_dropped_like_kubectl(
    tmp_path: Path, kustomization: str
) -> None:
    _write(
        tmp_path,
        {
            "kustomization.yaml": kustomization,
            "r.yaml": SERVICE_ACCOUNTS,
            "g.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: g, annotations: {x: '1'}}\n",
        },
    )
    assert _compare(tmp_path)
    out = build(str(tmp_path)).resources
    # Only metadata.annotations goes; empty labels and a template's empty maps stay.
    by_name = {o["metadata"]["name"].removeprefix("p-"): o for o in out}
    assert by_name["a"]["metadata"]["labels"] is not None
    if "commonAnnotations" not in kustomization and "origin" not in kustomization:
        assert all("annotations" not in o["metadata"] for o in out)
        assert by_name["f"]["spec"]["template"]["metadata"]["annotations"] == {}


NOT_A_MAP = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: d
      annotations: "not a map"
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: e
      annotations: []
"""


@pytest.mark.parametrize(
    ("kustomization", "builds"),
    [
        ("resources: [r.yaml]\n", True),
        ("resources: [r.yaml]\nnamePrefix: p-\n", True),
        (
            "resources: [r.yaml]\npatches:\n- target: {kind: ConfigMap}\n"
            '  patch: \'[{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]\'\n',
            True,
        ),
        # Transformers that write annotations fail on them, as kustomize does.
        ("resources: [r.yaml]\ncommonAnnotations: {note: hello}\n", False),
        ("resources: [r.yaml]\nbuildMetadata: [originAnnotations]\n", False),
    ],
    ids=["plain", "prefix", "json-patch-adds", "common-annotations", "origin"],
)
def test_annotations_that_are_not_a_map_like_kubectl(
    tmp_path: Path, kustomization: str, builds: bool
) -> None:
    _write(tmp_path, {"kustomization.yaml": kustomization, "r.yaml": NOT_A_MAP})
    assert _compare(tmp_path) is builds
    if not builds:
        with pytest.raises(KrmError) as err:
            build(str(tmp_path))
        assert "annotations" in err.value.message and "not a map" in err.value.message


# ----------------------------------------------------------------------------- B. implicit nulls

DEPLOYMENT_WITH_EMPTIES = """
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: d
      labels:
    spec:
      replicas:
      paused: null
      minReadySeconds: ~
      template:
        spec:
          affinity:
            nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: }
          tolerations:
          - key: a
            value:
          containers:
          - name: c
            image: i
            args:
            command: null
            env:
            - name: A
              value:
          volumes:
          - name: v
            emptyDir:
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: untouched
    data:
      a:
      b: null
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: flow
    data: {a: , b: null, c: ~, d: x}
    other: {a: }
    nested:
      m: {q: }
    list: [{a: }, {b: 1}]
    ---
    apiVersion: example.com/v1
    kind: Foo
    metadata:
      name: f
    spec:
      a:
      b: ~
      nested:
        c:
      list:
      - d:
        e: 1
"""

HOST_NETWORK = """
    - patch: |-
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: flow}
        data: {d: , e: 1}
    - patch: |-
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          template:
            spec:
              hostNetwork: true
    - patch: |-
        apiVersion: example.com/v1
        kind: Foo
        metadata: {name: f}
        spec:
          x: 1
"""


def test_the_issue_minimal_case_drops_empty_values_under_a_patch(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "kustomization.yaml": """
                resources: [d.yaml]
                patches:
                - patch: |-
                    apiVersion: apps/v1
                    kind: Deployment
                    metadata: {name: d}
                    spec:
                      template:
                        spec:
                          hostNetwork: true
            """,
            "d.yaml": """
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: d}
                spec:
                  replicas:
                  template:
                    spec:
                      affinity:
                        nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: }
                      containers:
                      - name: c
                        image: i
                        args:
            """,
        },
    )
    assert _compare(tmp_path)
    spec = build(str(tmp_path)).resources[0]["spec"]
    assert "replicas" not in spec
    assert spec["template"]["spec"]["affinity"] == {"nodeAffinity": {}}
    assert spec["template"]["spec"]["containers"] == [{"name": "c", "image": "i"}]


@pytest.mark.parametrize(
    "patches",
    [
        "patches:" + textwrap.indent(textwrap.dedent(HOST_NETWORK), "") + "\n",
        # The same through patchesStrategicMerge, and a JSON patch first (which reads the
        # resource through JSON: an empty value becomes an explicit null there).
        "patchesStrategicMerge:\n- |-\n  apiVersion: apps/v1\n  kind: Deployment\n"
        "  metadata: {name: d}\n  spec: {template: {spec: {hostNetwork: true}}}\n",
        "patches:\n- target: {kind: Deployment}\n"
        '  patch: \'[{"op": "add", "path": "/spec/paused", "value": true}]\'\n'
        + textwrap.dedent(HOST_NETWORK),
        # No patch at all: every null is printed.
        "",
    ],
    ids=["patches", "patchesStrategicMerge", "json-then-smp", "no-patch"],
)
def test_empty_values_differ_from_explicit_nulls_under_a_patch(
    tmp_path: Path, patches: str
) -> None:
    _write(
        tmp_path,
        {
            "kustomization.yaml": "resources: [d.yaml]\n" + patches,
            "d.yaml": DEPLOYMENT_WITH_EMPTIES,
        },
    )
    assert _compare(tmp_path)


def test_a_component_and_an_overlay_keep_the_difference(tmp_path: Path) -> None:
    # The resource crosses a kustomization boundary (built in the base, patched above).
    _write(
        tmp_path,
        {
            "base/kustomization.yaml": "resources: [d.yaml]\nnamePrefix: b-\n",
            "base/d.yaml": DEPLOYMENT_WITH_EMPTIES,
            "kustomization.yaml": "resources: [base]\ncomponents: [comp]\n",
            "comp/kustomization.yaml": """
                apiVersion: kustomize.config.k8s.io/v1alpha1
                kind: Component
                patches:
                - target: {kind: Foo}
                  patch: |-
                    apiVersion: example.com/v1
                    kind: Foo
                    metadata: {name: any}
                    spec: {x: 2}
            """,
        },
    )
    assert _compare(tmp_path)


# ----------------------------------------------------------------------------- D. symlinks


def _symlink_tree(root: Path) -> None:
    _write(
        root,
        {
            "elsewhere/kustomization.yaml": "resources: [cm.yaml]\n",
            "elsewhere/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: out}\n",
            "app/in/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in}\n",
            "app/in/k.yaml": "resources: [in/cm.yaml]\n",
            "app/sub/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: sub-\n",
            "app/sub/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
            "base/kustomization.yaml": "resources: [cm.yaml]\n",
            "base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\n",
        },
    )


CASES_SYMLINK = {
    # kustomization.yaml -> a file outside the root (argo-cd's guestbook-symlink-files)
    "kustomization-outside": {
        "app/kustomization.yaml": "../elsewhere/kustomization.yaml",
        "app/cm.yaml": "../elsewhere/cm.yaml",
    },
    # kustomization.yaml -> a file inside the root
    "kustomization-inside": {"app/kustomization.yaml": "in/k.yaml"},
    # a resource file -> outside / inside
    "resource-outside": {"app/link.yaml": "../elsewhere/cm.yaml"},
    "resource-inside": {"app/link.yaml": "in/cm.yaml"},
    # a resource directory (a kustomization) -> outside / inside
    "dir-outside": {"app/linkdir": "../base"},
    "dir-inside": {"app/linkdir": "sub"},
    # a directory holding a resource file -> inside
    "file-through-dir-inside": {"app/linkdir": "in"},
}
RESOURCES = {
    "resource-outside": "resources: [link.yaml]\n",
    "resource-inside": "resources: [link.yaml]\n",
    "dir-outside": "resources: [linkdir]\n",
    "dir-inside": "resources: [linkdir]\n",
    "file-through-dir-inside": "resources: [linkdir/cm.yaml]\n",
}


@pytest.mark.parametrize("restrictor", [ROOT_ONLY, NONE])
@pytest.mark.parametrize("case", sorted(CASES_SYMLINK))
def test_symlinks_follow_the_load_restrictor_like_kubectl(
    tmp_path: Path, case: str, restrictor: str
) -> None:
    _symlink_tree(tmp_path)
    for link, target in CASES_SYMLINK[case].items():
        os.symlink(target, tmp_path / link)
    if case in RESOURCES:
        (tmp_path / "app/kustomization.yaml").write_text(RESOURCES[case])
    built = _compare(tmp_path / "app", restrictor)
    outside_file = case in ("kustomization-outside", "resource-outside")
    assert built is not (outside_file and restrictor == ROOT_ONLY)


def test_a_kustomization_symlinked_outside_the_root_is_not_found(tmp_path: Path) -> None:
    _symlink_tree(tmp_path)
    for link, target in CASES_SYMLINK["kustomization-outside"].items():
        os.symlink(target, tmp_path / link)
    with pytest.raises(LoadError) as err:
        build(str(tmp_path / "app"))
    assert err.value.message.startswith(
        "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' "
        f"in directory '{tmp_path / 'app'}'"
    )
    # Nothing was touched: the link and its target are still there, and the same tree
    # builds once the user lifts the restriction.
    assert (tmp_path / "app/kustomization.yaml").is_symlink()
    out = build(str(tmp_path / "app"), BuildOptions(load_restrictor=NONE)).resources
    assert [o["metadata"]["name"] for o in out] == ["out"]


# ----------------------------------------------------------------------------- C. functions


@pytest.mark.parametrize(
    ("field", "runtime"),
    [
        ("annotation", "container:\n  image: example/set-label:v1\n"),
        ("runtime", {"container": {"image": "example/set-label:v1"}}),
    ],
)
def test_a_container_named_in_the_repository_needs_an_opt_in_like_kubectl(
    tmp_path: Path, field: str, runtime: object
) -> None:
    from orchestrator import yamlio

    fn: dict = {"apiVersion": "example.com/v1", "kind": "SetLabel", "metadata": {"name": "s"}}
    if field == "annotation":
        fn["metadata"]["annotations"] = {"config.kubernetes.io/function": runtime}
    else:
        fn["runtime"] = runtime
    _write(
        tmp_path,
        {
            "kustomization.yaml": "resources: [r.yaml]\ntransformers: [fn.yaml]\n",
            "r.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        },
    )
    (tmp_path / "fn.yaml").write_text(yamlio.dump(fn))
    # kustomize: "external plugins disabled; unable to load external plugin 'SetLabel'"
    assert _compare(tmp_path) is False
    with pytest.raises(KrmError) as err:
        build(str(tmp_path))
    assert err.value.message.startswith(
        "function example.com/v1/SetLabel 's': external plugins disabled; unable to run "
        "container image example/set-label:v1"
    )
    assert "--enable-alpha-plugins" in err.value.message


# ----------------------------------------------------------------------------- the same families

FAMILY_CASES = {
    # kyaml's fieldspec filter turns a null met at a ``[]`` step into an empty sequence.
    "null-lists-under-field-specs": (
        "resources: [r.yaml]\ncommonLabels: {app: a}\nnamePrefix: p-\nnamespace: prod\n"
        "images:\n- name: nginx\n  newTag: '2'\n",
        """
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: s}
        spec:
          volumeClaimTemplates:
          template:
            spec:
              containers: null
              initContainers: {x: }
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d, namespace: }
        spec:
          template:
            spec: {containers: , initContainers: }
        ---
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: cj}
        spec:
          jobTemplate:
            spec:
              template:
                spec:
                  initContainers:
                  containers: [{name: c, image: nginx}]
        """,
    ),
    # Labels onto null/empty label maps and selectors.
    "labels-onto-nulls": (
        "resources: [r.yaml]\ncommonLabels: {app: a}\n"
        "labels:\n- pairs: {team: t}\n  includeTemplates: true\n",
        """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d, labels: }
        spec:
          selector:
            matchLabels:
          template:
            metadata:
              labels: ~
            spec:
              containers: [{name: c, image: }]
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: s, labels: {}}
        spec: {selector: {}}
        """,
    ),
    # JSON 6902 on null and empty values (the resource goes through JSON).
    "json6902-on-nulls": (
        "resources: [r.yaml]\npatches:\n- target: {kind: ConfigMap}\n  patch: |-\n"
        "    - {op: replace, path: /data/a, value: x}\n"
        "    - {op: add, path: /data/c, value: null}\n"
        "    - {op: test, path: /data/b, value: null}\n",
        """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c}
        data:
          a:
          b: null
          e:
        """,
    ),
    # Replacements from an empty string into null, empty and missing fields.
    "replacements-on-empties": (
        "resources: [r.yaml]\nreplacements:\n"
        "- source: {kind: ConfigMap, name: src, fieldPath: data.empty}\n"
        "  targets:\n  - select: {kind: ConfigMap, name: dst}\n"
        "    fieldPaths: [data.a, data.b, data.new]\n    options: {create: true}\n",
        """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: src}
        data: {empty: ""}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: dst}
        data:
          a:
          b: null
        """,
    ),
    # A patch's own nulls, empty maps and empty values.
    "patch-nulls-and-empty-maps": (
        "resources: [r.yaml]\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n"
        "    metadata: {name: c, annotations: , labels: {}}\n"
        "    data: {missing: null, gone: , emptymap: {}}\n    spec: {}\n",
        """
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c, annotations: {a: "1"}}
        data:
          gone: x
          keep:
        """,
    ),
}


@pytest.mark.parametrize("name", sorted(FAMILY_CASES))
def test_null_and_empty_families_match_kubectl(tmp_path: Path, name: str) -> None:
    kustomization, resources = FAMILY_CASES[name]
    _write(tmp_path, {"kustomization.yaml": kustomization, "r.yaml": resources})
    assert _compare(tmp_path)
