"""Running Compositions: builtins (checked against kubectl kustomize), readers, inline
Kustomization, functions, and the KEP user stories."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.build import BuildOptions
from orchestrator.composition import build, build_composition
from orchestrator.errors import KrmError, LoadError

HEAD = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n"
Tree = Callable[[dict[str, str]], Path]

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.0
        envFrom:
        - configMapRef: {name: settings}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
"""


def docs(text: bytes | str) -> list[Any]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def alpha(**kw: Any) -> BuildOptions:
    """Build options with --enable-alpha-plugins: starlark that a Composition names itself
    (a runtime field) runs only with it."""
    from orchestrator.functions import FnOptions

    return BuildOptions(functions=FnOptions(enable_alpha_plugins=True), **kw)


def legacy(options: BuildOptions | None = None) -> BuildOptions:
    opts = options or BuildOptions()
    opts.reorder = "legacy"
    return opts


def test_builtins_without_field_specs_match_kubectl_kustomize(tree: Tree, oracle: Any) -> None:
    # Same inputs, same transformations: once as a Composition of builtins with no fieldSpecs
    # (kustomize's defaults apply), once as a Kustomization built by the real kustomize.
    root = tree(
        {
            "app.yaml": APP,
            "c/composition.yaml": HEAD
            + """\
transformers:
- kind: ResourceGenerator
  paths: [../app.yaml]
- kind: ConfigMapGenerator
  metadata: {name: settings}
  literals: [MODE=prod]
- kind: NamespaceTransformer
  metadata: {namespace: shop}
- kind: PrefixSuffixTransformer
  prefix: p-
  suffix: -s
- kind: LabelTransformer
  labels: {team: shop}
- kind: AnnotationsTransformer
  annotations: {owner: me}
- kind: ReplicaCountTransformer
  replica: {name: web, count: 3}
- kind: ImageTagTransformer
  imageTag: {name: nginx, newTag: "1.25"}
""",
            "k/kustomization.yaml": """\
resources: [app.yaml]
configMapGenerator:
- name: settings
  literals: [MODE=prod]
namespace: shop
namePrefix: p-
nameSuffix: -s
commonLabels: {team: shop}
commonAnnotations: {owner: me}
replicas:
- {name: web, count: 3}
images:
- {name: nginx, newTag: "1.25"}
""",
            "k/app.yaml": APP,
        }
    )
    # The Composition reads ../app.yaml, outside its directory.
    opts = legacy(BuildOptions(load_restrictor="LoadRestrictionsNone"))
    got = build(str(root / "c"), opts).to_yaml()
    want = oracle(root / "k")
    assert want.returncode == 0, want.stderr
    assert docs(got) == docs(want.stdout)
    # The defaults reached selectors and templates, which fieldSpecs-less kustomize skips.
    dep = next(d for d in docs(got) if d["kind"] == "Deployment")
    assert dep["spec"]["selector"]["matchLabels"] == {"app": "web", "team": "shop"}


def test_pipeline_order_is_kept_and_each_step_sees_the_previous_output(tree: Tree) -> None:
    root = tree(
        {
            "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "b.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n",
            "composition.yaml": HEAD
            + """\
transformers:
- kind: ResourceGenerator
  metadata: {name: first}
  files: [b.yaml]
- kind: LabelTransformer
  labels: {early: "true"}
- kind: ResourceGenerator
  metadata: {name: second}
  files: [a.yaml]
""",
        }
    )
    out = build(str(root)).resources
    # Unsorted (Secret before ConfigMap) and the label only on what existed before it ran.
    assert [(r["kind"], r["metadata"].get("labels")) for r in out] == [
        ("Secret", {"early": "true"}),
        ("ConfigMap", None),
    ]
    assert [r["kind"] for r in build(str(root), legacy()).resources] == ["ConfigMap", "Secret"]


def test_explicit_field_specs_win_over_defaults(tree: Tree) -> None:
    root = tree(
        {
            "app.yaml": APP,
            "composition.yaml": HEAD
            + """\
transformers:
- kind: ResourceAccumulator
  paths: [app.yaml]
- kind: LabelTransformer
  labels: {team: shop}
  fieldSpecs:
  - path: metadata/labels
    create: true
""",
        }
    )
    dep = next(r for r in build(str(root)).resources if r["kind"] == "Deployment")
    assert dep["metadata"]["labels"] == {"team": "shop"}
    assert dep["spec"]["selector"]["matchLabels"] == {"app": "web"}


def test_generator_hash_and_name_reference(tree: Tree, oracle: Any) -> None:
    root = tree(
        {
            "composition.yaml": HEAD
            + """\
transformers:
- kind: ResourceGenerator
  paths: [app.yaml]
- kind: ConfigMapGenerator
  metadata: {name: settings}
  literals: [MODE=prod]
""",
            "app.yaml": APP,
            "k/kustomization.yaml": "resources: [app.yaml]\nconfigMapGenerator:\n"
            "- name: settings\n  literals: [MODE=prod]\n",
            "k/app.yaml": APP,
        }
    )
    got = docs(build(str(root), legacy()).to_yaml())
    want = oracle(root / "k")
    assert docs(want.stdout) == got
    dep = next(d for d in got if d["kind"] == "Deployment")
    ref = dep["spec"]["template"]["spec"]["containers"][0]["envFrom"][0]["configMapRef"]["name"]
    assert ref.startswith("settings-") and len(ref) == len("settings-") + 10


def test_resource_generator_reads_kustomizations_and_compositions(tree: Tree, oracle: Any) -> None:
    root = tree(
        {
            "kust/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: k-\n",
            "kust/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n",
            "comp/composition.yaml": HEAD
            + "transformers:\n- kind: ResourceGenerator\n  paths: [cm.yaml]\n"
            + "- kind: PrefixSuffixTransformer\n  prefix: c-\n",
            "comp/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\n",
            "file.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: three}\n",
            "composition.yaml": HEAD
            + "transformers:\n- kind: ResourceAccumulator\n"
            + "  paths: [kust, comp, file.yaml]\n",
        }
    )
    names = [r["metadata"]["name"] for r in build(str(root)).resources]
    assert names == ["k-one", "c-two", "three"]
    assert [d["metadata"]["name"] for d in docs(oracle(root / "kust").stdout)] == ["k-one"]


def test_composition_reading_itself_is_a_cycle(tree: Tree) -> None:
    root = tree(
        {
            "composition.yaml": HEAD + "transformers:\n- kind: ResourceGenerator\n  paths: [sub]\n",
            "sub/composition.yaml": HEAD + "transformers:\n- kind: ResourceGenerator\n"
            "  paths: [..]\n",
        }
    )
    with pytest.raises(LoadError) as info:
        build(str(root))
    assert info.value.message.endswith(
        f"composition cycle: {root}/composition.yaml -> {root}/sub/composition.yaml -> "
        f"{root}/composition.yaml"
    )


def test_inline_kustomization_gets_previous_output_first(tree: Tree) -> None:
    root = tree(
        {
            "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
            "composition.yaml": HEAD
            + """\
transformers:
- kind: ResourceGenerator
  paths: [a.yaml]
- apiVersion: kustomize.config.k8s.io/v1beta1
  kind: Kustomization
  resources: [b.yaml]
  namePrefix: x-
  commonLabels: {foo: bar}
""",
        }
    )
    out = build(str(root)).resources
    assert [r["metadata"]["name"] for r in out] == ["x-a", "x-b"]
    assert all(r["metadata"]["labels"] == {"foo": "bar"} for r in out)


def test_inline_kustomization_errors_name_the_transformer(tree: Tree) -> None:
    root = tree(
        {
            "composition.yaml": HEAD
            + "transformers:\n- apiVersion: kustomize.config.k8s.io/v1beta1\n"
            + "  kind: Kustomization\n  resources: [missing.yaml]\n"
        }
    )
    with pytest.raises(KrmError) as info:
        build(str(root))
    assert info.value.message == (
        'transformer "kustomize.config.k8s.io_v1beta1_Kustomization|default|kustomization" '
        f"({root}/composition.yaml:4 (transformers[0])): resource 'missing.yaml' does not exist "
        "(neither a file nor a kustomization directory)"
    )


@pytest.mark.parametrize(
    ("transformer", "message"),
    [
        (
            "- kind: Kubeval\n",
            "unknown builtin kind 'Kubeval'; builtin kinds are: AnnotationsTransformer, "
            "ConfigMapGenerator, HashTransformer, HelmChartInflationGenerator, "
            "IAMPolicyGenerator, ImageTagTransformer, LabelTransformer, NamespaceTransformer, "
            "PatchJson6902Transformer, PatchStrategicMergeTransformer, PatchTransformer, "
            "PrefixSuffixTransformer, PrefixTransformer, "
            "ReplacementTransformer, ReplicaCountTransformer, ResourceAccumulator, "
            "ResourceGenerator, SecretGenerator, SortOrderTransformer, SuffixTransformer",
        ),
        (
            "- kind: ResourceGenerator\n  paths: [nope.yaml]\n",
            "ResourceGenerator: path 'nope.yaml' does not exist (neither a file, a kustomization "
            "nor a composition)",
        ),
        (
            "- kind: ResourceGenerator\n  paths: nope.yaml\n",
            "ResourceGenerator: paths must be a list of non-empty strings",
        ),
        (
            "- kind: ResourceGenerator\n  path: [a.yaml]\n",
            "ResourceGenerator: unknown field(s) path (use paths, or files as in the prototype)",
        ),
    ],
)
def test_transformer_errors(tree: Tree, transformer: str, message: str) -> None:
    root = tree({"composition.yaml": HEAD + "transformers:\n" + transformer})
    with pytest.raises(KrmError) as info:
        build(str(root))
    name = transformer.split("kind: ")[1].split("\n")[0]
    prefix = (
        f'transformer "~G_builtin_{name}|default|{_kebab(name)}" '
        f"({root}/composition.yaml:4 (transformers[0])): "
    )
    assert info.value.message == prefix + message


def _kebab(kind: str) -> str:
    from orchestrator.composition.schema import kebab

    return kebab(kind)


def test_both_composition_and_kustomization_is_an_error(tree: Tree) -> None:
    root = tree({"composition.yaml": HEAD, "kustomization.yaml": "resources: []\n"})
    with pytest.raises(LoadError) as info:
        build(str(root))
    assert info.value.message == (
        f"both 'kustomization.yaml' and 'composition.yaml' found in '{root}'; keep only one"
    )


def test_build_composition_transforms_given_resources(tree: Tree) -> None:
    from orchestrator.resource import Resource

    root = tree(
        {"composition.yaml": HEAD + "transformers:\n- kind: LabelTransformer\n  labels: {x: y}\n"}
    )
    res = Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}})
    out = build_composition(str(root), None, [res])
    assert [r.obj["metadata"] for r in out] == [{"name": "m", "labels": {"x": "y"}}]


# ----------------------------------------------------------------------------- functions

JAVA_STAR = """\
def run(rl):
    spec = rl["functionConfig"]["spec"]
    rl["items"].append({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": spec["application"].split("/")[-1],
                     "labels": {"version": spec["version"]}},
    })
run(ctx.resource_list)
"""

ANNOTATE_STAR = """\
def run(rl):
    spec = rl["functionConfig"]["spec"]
    for item in rl["items"]:
        md = item["metadata"]
        if md.get("annotations") == None:
            md["annotations"] = {}
        md["annotations"][spec["key"]] = spec["value"]
run(ctx.resource_list)
"""


def _fn(kind: str, script: str, spec: str, name: str = "") -> str:
    meta = f"  metadata: {{name: {name}}}\n" if name else ""
    return (
        f"- apiVersion: example.com/v1\n  kind: {kind}\n{meta}"
        f"  runtime: {{starlark: {{path: {script}}}}}\n  spec: {spec}\n"
    )


def test_story_1_sequence_of_plugin_abstractions(tree: Tree) -> None:
    # KEP-2299 story 1 (container runtimes replaced by pinned Starlark ones: no image needed).
    # The scripts sit in the Composition's directory: one out of it is refused like any file.
    root = tree(
        {
            "app/fns/java.star": JAVA_STAR,
            "app/fns/logger.star": ANNOTATE_STAR,
            "app/composition.yaml": HEAD
            + "transformers:\n"
            + _fn(
                "JavaApplication",
                "fns/java.star",
                "{application: team/my-app, version: v1.0}",
                "my-app",
            )
            + _fn("Logger", "fns/logger.star", "{key: logger, value: injected}", "logger"),
        }
    )
    (dep,) = build(str(root / "app"), alpha()).resources
    assert dep["metadata"] == {
        "name": "my-app",
        "labels": {"version": "v1.0"},
        "annotations": {"logger": "injected"},
    }


def test_story_2_reuse_and_override_imported_transformers(tree: Tree) -> None:
    # KEP-2299 story 2: import app/, override my-app's version, add a transformer, reorder.
    root = tree(
        {
            "app/fns/java.star": JAVA_STAR,
            "app/fns/logger.star": ANNOTATE_STAR,
            "prod/fns/logger.star": ANNOTATE_STAR,
            "app/composition.yaml": HEAD
            + "transformers:\n"
            + _fn(
                "JavaApplication",
                "fns/java.star",
                "{application: team/my-app, version: v1.0}",
                "my-app",
            )
            + _fn("Logger", "fns/logger.star", "{key: logger, value: injected}", "logger"),
            "prod/composition.yaml": HEAD
            + "transformersFrom:\n- path: ../app/composition.yaml\n"
            + "transformerOverrides:\n- apiVersion: example.com/v1\n  kind: JavaApplication\n"
            + "  metadata: {name: my-app}\n  spec: {version: v3.1.3}\n"
            + "transformers:\n"
            + _fn("Prometheus", "fns/logger.star", "{key: metrics, value: on}", "metrics")
            + "transformerOrder:\n- name: my-app\n- name: metrics\n- name: logger\n",
        }
    )
    (dep,) = build(str(root / "prod"), alpha()).resources
    assert dep["metadata"] == {
        "name": "my-app",
        "labels": {"version": "v3.1.3"},
        "annotations": {"logger": "injected", "metrics": "on"},
    }
    # The imported Composition is untouched by the override.
    (base,) = build(str(root / "app"), alpha()).resources
    assert base["metadata"]["labels"] == {"version": "v1.0"}


def _catalog(entries: dict[str, tuple[str, str]]) -> str:
    fns = []
    for kind, (path, digest) in entries.items():
        fns.append(
            f"  - group: example.com\n    names: {{kind: {kind}}}\n    versions:\n"
            f"    - name: v1\n      runtime:\n"
            f"        starlark: {{path: {path}, sha256: {digest}}}\n"
        )
    return (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\n"
        "metadata: {name: example-co}\nspec:\n  krmFunctions:\n" + "".join(fns)
    )


def test_kep_2906_story_3_catalog_with_a_pinned_runtime(tree: Tree) -> None:
    # KEP-2906 story 3: JavaApplication and Logger resolve through the catalog; SecretSidecar
    # pins its runtime, so the catalog's (different) SecretSidecar must not run.
    sidecar_catalog = ANNOTATE_STAR.replace('spec["value"]', '"from-catalog"')
    files = {
        "fns/java.star": JAVA_STAR,
        "fns/logger.star": ANNOTATE_STAR,
        "fns/sidecar.star": sidecar_catalog,
        "app/pinned.star": ANNOTATE_STAR,
    }
    sha = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in files.items()}
    root = tree(
        {
            **files,
            "catalog.yaml": _catalog(
                {
                    "JavaApplication": ("fns/java.star", sha["fns/java.star"]),
                    "Logger": ("fns/logger.star", sha["fns/logger.star"]),
                    "SecretSidecar": ("fns/sidecar.star", sha["fns/sidecar.star"]),
                }
            ),
            "app/composition.yaml": HEAD
            + "catalogs:\n- ../catalog.yaml\n"
            + "modules:\n"
            + "- apiVersion: example.com/v1\n  kind: JavaApplication\n"
            + "  spec: {application: team/my-app, version: v1.0}\n"
            + "- apiVersion: example.com/v1\n  kind: Logger\n  metadata: {name: my-logger}\n"
            + "  spec: {key: log-path, value: /var/logs}\n"
            + _fn("SecretSidecar", "pinned.star", "{key: secret, value: pinned}", "my-secrets"),
        }
    )
    untrusted = BuildOptions()
    with pytest.raises(KrmError) as info:
        build(str(root / "app"), untrusted)
    assert "../catalog.yaml is not trusted" in info.value.message

    # The pinned runtime is named by the Composition itself: it needs --enable-alpha-plugins.
    opts = BuildOptions()
    opts.trusted_catalogs = [str(root / "catalog.yaml")]  # type: ignore[attr-defined]
    with pytest.raises(KrmError) as info:
        build(str(root / "app"), opts)
    assert "without --enable-alpha-plugins" in info.value.message
    opts = alpha(trusted_catalogs=[str(root / "catalog.yaml")])
    (dep,) = build(str(root / "app"), opts).resources
    assert dep["metadata"]["annotations"] == {"log-path": "/var/logs", "secret": "pinned"}


def test_load_restrictor_applies_to_resource_paths(tree: Tree) -> None:
    root = tree(
        {
            "outside.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: o}\n",
            "c/composition.yaml": HEAD + "transformers:\n- kind: ResourceGenerator\n"
            "  paths: [../outside.yaml]\n",
        }
    )
    with pytest.raises(LoadError) as info:
        build(str(root / "c"))
    assert info.value.message.endswith(
        f"security; file '{root}/outside.yaml' is not in or below '{root}/c'"
    )
    opts = BuildOptions(load_restrictor="LoadRestrictionsNone")
    assert [r["metadata"]["name"] for r in build(str(root / "c"), opts).resources] == ["o"]


def test_untrusted_catalog_is_an_error_even_without_functions(tree: Tree) -> None:
    root = tree(
        {
            "catalog.yaml": _catalog({}),
            "base/composition.yaml": HEAD + "catalogs: [../catalog.yaml]\n",
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n",
        }
    )
    with pytest.raises(KrmError) as info:
        build(str(root))
    # The imported Composition's relative reference is shown resolved from the top.
    assert info.value.message == (
        f"catalog {root}/catalog.yaml is not trusted: pass --trusted-catalog={root}/catalog.yaml "
        "after reviewing it with 'krm view catalog'"
    )
    opts = BuildOptions(trusted_catalogs=[str(root / "catalog.yaml")])
    assert build(str(root), opts).resources == []


EXEC_FN = """\
#!/bin/sh
# Reads a ResourceList and writes it back with one more ConfigMap (a real exec function).
cat - > /dev/null
cat <<'OUT'
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: from-exec}
OUT
"""


def test_exec_function_needs_enable_exec_from_build_options(tree: Tree) -> None:
    from orchestrator.functions import FnOptions

    root = tree(
        {
            "fn.sh": EXEC_FN,
            "composition.yaml": HEAD
            + "transformers:\n- apiVersion: example.com/v1\n  kind: Maker\n"
            + "  runtime: {exec: {path: fn.sh}}\n",
        }
    )
    (root / "fn.sh").chmod(0o755)
    with pytest.raises(KrmError) as info:
        build(str(root))
    assert "--enable-exec" in info.value.message
    assert info.value.message.startswith(
        f'transformer "example.com_v1_Maker|default|maker" ({root}/composition.yaml:4 '
    )
    opts = BuildOptions(functions=FnOptions(enable_exec=True))
    assert [r["metadata"]["name"] for r in build(str(root), opts).resources] == ["from-exec"]


@pytest.mark.parametrize("ref", ["../b", "../b/composition.yaml"])
def test_cycle_through_a_kustomization_is_caught(tree: Tree, ref: str) -> None:
    root = tree(
        {
            "a/kustomization.yaml": f"resources: [{ref}]\n",
            "b/composition.yaml": HEAD + "transformers:\n- kind: ResourceGenerator\n"
            "  paths: [../a]\n",
        }
    )
    opts = BuildOptions(load_restrictor="LoadRestrictionsNone")
    with pytest.raises(LoadError) as info:
        build(str(root / "b"), opts)
    if ref == "../b":  # a directory: the loader's own cycle check sees it first
        tail = f"cycle detected: candidate root '{root}/b' contains visited root '{root}/b'"
    else:
        tail = f"composition cycle: {root}/b/composition.yaml -> {root}/b/composition.yaml"
    assert info.value.message.endswith(tail)


PATCH_APP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.0
        env:
        - name: PW
          valueFrom:
            secretKeyRef: {name: creds, key: pw}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: src
data:
  value: hello
"""

SMP = """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      template:
        spec:
          containers:
          - name: web
            image: nginx:2.0"""
JSON_OP = '[{"op": "replace", "path": "/spec/replicas", "value": 4}]'
ANNOTATE_OP = '[{"op": "add", "path": "/metadata/annotations", "value": {"patched": "yes"}}]'
REPLACEMENT = """\
  - source: {kind: ConfigMap, name: src, fieldPath: data.value}
    targets:
    - select: {kind: Deployment}
      fieldPaths: [spec.template.metadata.annotations.from]
      options: {create: true}
"""


def test_patch_replacement_and_secret_builtins_match_kubectl_kustomize(
    tree: Tree, oracle: Any
) -> None:
    # The builtins the fieldSpecs test above leaves out, checked against the oracle too.
    root = tree(
        {
            "c/app.yaml": PATCH_APP,
            "c/composition.yaml": HEAD
            + "transformers:\n"
            + "- kind: ResourceGenerator\n  paths: [app.yaml]\n"
            + "- kind: SecretGenerator\n  metadata: {name: creds}\n  literals: [pw=secret]\n"
            + f"- kind: PatchStrategicMergeTransformer\n  patches: |-\n{SMP}\n"
            + "- kind: PatchJson6902Transformer\n  target: {kind: Deployment, name: web}\n"
            + f"  jsonOp: '{JSON_OP}'\n"
            + f"- kind: PatchTransformer\n  patch: '{ANNOTATE_OP}'\n  target: {{kind: ConfigMap}}\n"
            + "- kind: ReplacementTransformer\n  replacements:\n"
            + REPLACEMENT,
            "k/app.yaml": PATCH_APP,
            "k/kustomization.yaml": "resources: [app.yaml]\n"
            + "secretGenerator:\n- name: creds\n  literals: [pw=secret]\n"
            + f"patches:\n- patch: |-\n{SMP}\n"
            + f"- target: {{kind: Deployment, name: web}}\n  patch: '{JSON_OP}'\n"
            + f"- target: {{kind: ConfigMap}}\n  patch: '{ANNOTATE_OP}'\n"
            + "replacements:\n"
            + REPLACEMENT,
        }
    )
    want = oracle(root / "k")
    assert want.returncode == 0, want.stderr
    got = docs(build(str(root / "c"), legacy()).to_yaml())
    assert got == docs(want.stdout)
    dep = next(d for d in got if d["kind"] == "Deployment")
    assert dep["spec"]["replicas"] == 4
    assert dep["spec"]["template"]["metadata"]["annotations"] == {"from": "hello"}
    secret_ref = dep["spec"]["template"]["spec"]["containers"][0]["env"][0]["valueFrom"]
    assert secret_ref["secretKeyRef"]["name"].startswith("creds-")


def test_builtin_and_function_transformers_interleave(tree: Tree) -> None:
    # builtin -> function -> builtin -> builtin: the function sees only what existed before it.
    root = tree(
        {
            "logger.star": ANNOTATE_STAR,
            "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
            "composition.yaml": HEAD
            + "transformers:\n"
            + "- apiVersion: builtin\n  kind: ResourceGenerator\n  metadata: {name: first}\n"
            + "  paths: [a.yaml]\n"
            + _fn("Logger", "logger.star", "{key: logged, value: 'yes'}")
            + "- apiVersion: builtin\n  kind: ResourceGenerator\n  metadata: {name: second}\n"
            + "  paths: [b.yaml]\n"
            + "- apiVersion: builtin\n  kind: LabelTransformer\n  labels: {all: 'yes'}\n",
        }
    )
    out = build(str(root), alpha()).resources
    assert [r["metadata"] for r in out] == [
        {"name": "a", "annotations": {"logged": "yes"}, "labels": {"all": "yes"}},
        {"name": "b", "labels": {"all": "yes"}},
    ]


def test_resource_generator_refuses_a_composition_next_to_a_kustomization(tree: Tree) -> None:
    root = tree(
        {
            "sub/composition.yaml": HEAD,
            "sub/kustomization.yaml": "resources: []\n",
            "composition.yaml": HEAD
            + "transformers:\n- kind: ResourceGenerator\n  paths: [sub/composition.yaml]\n",
        }
    )
    with pytest.raises(LoadError) as info:
        build(str(root))
    assert info.value.message.endswith(
        f"both 'kustomization.yaml' and 'composition.yaml' found in '{root}/sub'; keep only one"
    )
