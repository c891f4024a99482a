"""composition.yaml decoding and validation: every rejected input with its exact message."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.composition import schema
from orchestrator.composition.schema import CompositionError, kebab
from orchestrator.errors import YamlError

HEAD = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n"


def parse(text: str, tmp_path: Path) -> schema.Composition:
    f = tmp_path / "composition.yaml"
    f.write_text(text)
    return schema.load(str(f))


def problems(text: str, tmp_path: Path) -> tuple[str, list[str]]:
    with pytest.raises(CompositionError) as info:
        parse(text, tmp_path)
    return info.value.phase, info.value.problems


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("LabelTransformer", "label-transformer"),
        ("JavaApplication", "java-application"),
        ("HTTPRoute", "http-route"),
        ("Kustomization", "kustomization"),
        ("ConfigMapGenerator", "config-map-generator"),
        ("V2Thing", "v2-thing"),
    ],
)
def test_default_name_is_kind_in_kebab_case(kind: str, expected: str) -> None:
    assert kebab(kind) == expected


def test_valid_composition_with_every_field(tmp_path: Path) -> None:
    comp = parse(
        HEAD
        + """\
catalogs: [catalog.yaml]
transformersFrom:
- path: ../app/composition.yaml
  importMode: append
transformerOverrides:
- apiVersion: example.com/v1
  kind: JavaApplication
  metadata: {name: my-app}
  spec: {version: v3.1.3}
transformers:
- apiVersion: example.com/v1
  kind: Prometheus
  runtime: {container: {image: example/prometheus:v1.0.2}}
  metadata: {name: metrics-injector}
- kind: LabelTransformer
  labels: {a: b}
transformerOrder:
- name: my-app
- name: metrics-injector
  kind: Prometheus
  apiVersion: example.com/v1
""",
        tmp_path,
    )
    assert [i.path for i in comp.imports] == ["../app/composition.yaml"]
    assert comp.imports[0].mode == "append"
    assert comp.catalogs == ["catalog.yaml"]
    assert [t.name for t in comp.transformers] == ["metrics-injector", "label-transformer"]
    assert comp.transformers[1].api_version == "builtin"
    assert comp.transformers[1].ident() == "~G_builtin_LabelTransformer|default|label-transformer"
    assert comp.transformers[0].ident() == "example.com_v1_Prometheus|default|metrics-injector"
    assert comp.overrides[0].key() == ("example.com/v1", "JavaApplication", "my-app")
    assert [(o.name, o.kind) for o in comp.order] == [
        ("my-app", ""),
        ("metrics-injector", "Prometheus"),
    ]
    assert comp.transformers[0].line == 13


def test_import_mode_defaults_to_prepend(tmp_path: Path) -> None:
    comp = parse(HEAD + "transformersFrom:\n- path: base\n", tmp_path)
    assert comp.imports[0].mode == "prepend"


def test_modules_is_an_alias_of_transformers(tmp_path: Path) -> None:
    comp = parse(HEAD + "modules:\n- apiVersion: example.com/v1\n  kind: Logger\n", tmp_path)
    assert comp.transformers_field == "modules"
    assert comp.transformers[0].name == "logger"
    assert comp.transformers[0].where().endswith("composition.yaml:4 (modules[0])")


DECODE_CASES = [
    (
        "extra: 1\n",
        "line 3: field extra not found in type types.Composition (at extra; known fields: "
        "apiVersion, kind, catalogs, transformersFrom, transformers, modules, "
        "transformerOverrides, transformerOrder)",
    ),
    (
        "transformersFrom:\n- path: a\n  mode: append\n",
        "line 5: field mode not found in type types.TransformerSource (at "
        "transformersFrom[0].mode; known fields: path, importMode)",
    ),
    (
        "transformers:\n- kind: A\n  metadata: {name: a, uid: x}\n",
        "line 5: field uid not found in type types.ObjectMeta (at transformers[0].metadata.uid; "
        "known fields: name, namespace, annotations, labels)",
    ),
    (
        "transformers:\n- kind: A\n  runtime: {docker: {image: x}}\n",
        "line 5: field docker not found in type runtimeutil.FunctionSpec (at "
        "transformers[0].runtime.docker; known fields: container, exec, starlark)",
    ),
    (
        "transformers:\n- kind: A\n  runtime:\n    container:\n      image: x\n"
        "      network: true\n",
        "line 8: field network not found in type runtimeutil.ContainerSpec (at "
        "transformers[0].runtime.container.network; known fields: image)",
    ),
    (
        "transformers:\n- kind: A\n  runtime:\n    exec: true\n",
        "line 6: cannot unmarshal !!bool `true` into runtimeutil.ExecSpec (at "
        "transformers[0].runtime.exec: expected a map)",
    ),
    (
        "transformers: {kind: A}\n",
        "line 3: cannot unmarshal !!map into []transformers (at transformers: expected a list)",
    ),
    (
        "transformers:\n- just-a-string\n",
        "line 4: cannot unmarshal !!str `just-a-string` into types.TransformerConfig (at "
        "transformers[0]: expected a map)",
    ),
    (
        "transformers:\n- kind: [A]\n",
        "line 4: cannot unmarshal !!seq into string (at transformers[0].kind: expected a string)",
    ),
    (
        "transformerOrder:\n- name: a\n  position: 1\n",
        "line 5: field position not found in type types.TransformerOrderEntry (at "
        "transformerOrder[0].position; known fields: name, kind, apiVersion, group, version, "
        "namespace)",
    ),
    (
        "catalogs:\n- {url: x}\n",
        "line 4: cannot unmarshal !!map into string (at catalogs[0]: expected a string)",
    ),
]


@pytest.mark.parametrize(("body", "message"), DECODE_CASES)
def test_decode_errors_name_line_and_path(body: str, message: str, tmp_path: Path) -> None:
    phase, found = problems(HEAD + body, tmp_path)
    assert phase == "failed to decode"
    assert found == [message]


def test_decode_error_lists_every_problem_and_the_directory(tmp_path: Path) -> None:
    text = HEAD + "a: 1\ntransformersFrom:\n- path: x\n  b: 2\n"
    with pytest.raises(CompositionError) as info:
        parse(text, tmp_path)
    msg = str(info.value)
    assert msg.startswith(
        f"{tmp_path}/composition.yaml: failed to decode Composition at path {tmp_path}:\n  line 3"
    )
    assert [p.split(":")[0] for p in info.value.problems] == ["line 3", "line 6"]


VALIDATION_CASES = [
    (
        "kind: Composition\n",
        "line 1: apiVersion: required field is missing (use kustomize.config.k8s.io/v1alpha1)",
    ),
    (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Composition\n",
        "line 1: apiVersion: must be 'kustomize.config.k8s.io/v1alpha1', got "
        "'kustomize.config.k8s.io/v1beta1'",
    ),
    (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Kustomization\n",
        "line 2: kind: must be 'Composition', got 'Kustomization'",
    ),
    (
        HEAD + "transformers:\n- kind: A\n  metadata: {name: myFancyNamePrefixer}\n",
        "line 4: transformers[0].metadata.name: invalid name 'myFancyNamePrefixer': use "
        "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
    ),
    (
        HEAD + "transformers:\n- kind: A\n  metadata: {name: " + "a" * 254 + "}\n",
        "line 4: transformers[0].metadata.name: name is longer than 253 characters",
    ),
    (
        HEAD + "transformers:\n- kind: A\n  apiVersion: Example.com/V1\n",
        "line 4: transformers[0].apiVersion: invalid apiVersion 'Example.com/V1' (expected "
        "'builtin' or 'group/version')",
    ),
    (
        HEAD + "transformers:\n- kind: ''\n  metadata: {name: a}\n",
        "line 4: transformers[0].kind: must not be empty",
    ),
    (
        HEAD + "transformers:\n- kind: A\n  runtime: {container: {image: ''}}\n",
        "line 4: transformers[0].runtime.container: set exactly one non-empty image",
    ),
    (
        HEAD + "transformers:\n- kind: A\n  runtime: {exec: {path: x}, starlark: {path: y}}\n",
        "line 4: transformers[0].runtime: set only one of exec, starlark",
    ),
    (
        HEAD + "transformers:\n- kind: A\nmodules:\n- kind: B\n",
        "line 5: modules: is an alias of transformers; use one of them, not both",
    ),
    (
        HEAD + "transformersFrom:\n- importMode: append\n",
        "line 4: transformersFrom[0]: transformersFrom entry is missing the path field",
    ),
    (
        HEAD + "transformerOverrides:\n- kind: A\n",
        "line 3: Composition contained overrides but did not import any transformers "
        "(transformerOverrides only apply to transformersFrom imports)",
    ),
    (
        HEAD + "transformerOrder:\n- kind: A\n",
        "line 4: transformerOrder[0].name: required field is missing",
    ),
    (
        HEAD + "transformerOrder:\n- name: a\n  apiVersion: x/v1\n  group: x\n",
        "line 4: transformerOrder[0]: give apiVersion or group/version, not both",
    ),
    (
        HEAD + "transformerOrder:\n- name: a\n  kind: ''\n",
        "line 4: transformerOrder[0].kind: must not be empty",
    ),
    (
        HEAD + "transformerOrder:\n- name: a\n  apiVersion:\n",
        "line 4: transformerOrder[0].apiVersion: must not be empty",
    ),
]


@pytest.mark.parametrize(("text", "message"), VALIDATION_CASES)
def test_validation_errors(text: str, message: str, tmp_path: Path) -> None:
    phase, found = problems(text, tmp_path)
    assert phase == "invalid"
    assert found == [message]


def test_bad_yaml_is_a_yaml_error(tmp_path: Path) -> None:
    with pytest.raises(YamlError) as info:
        parse(HEAD + "transformers: [\n", tmp_path)
    assert str(info.value) == (
        f"{tmp_path}/composition.yaml: invalid YAML: did not find expected node content "
        "(line 4, column 1)"
    )


def test_two_documents_are_refused(tmp_path: Path) -> None:
    with pytest.raises(YamlError) as info:
        parse(HEAD + "---\n" + HEAD, tmp_path)
    assert str(info.value) == (
        f"{tmp_path}/composition.yaml: a Composition file holds one YAML document, found "
        "another at line 3"
    )


def test_empty_file(tmp_path: Path) -> None:
    phase, found = problems("", tmp_path)
    assert (phase, found) == ("invalid", ["the file is empty"])


def test_rejected_file_is_left_untouched(tmp_path: Path) -> None:
    text = HEAD + "extra: 1\n"
    with pytest.raises(CompositionError):
        parse(text, tmp_path)
    assert (tmp_path / "composition.yaml").read_text() == text
