"""Consolidation: imports (prepend/append, recursive, cycles), overrides, order, catalogs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.composition import consolidate, format_consolidated
from orchestrator.composition.schema import CompositionError

HEAD = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n"

Tree = Callable[[dict[str, str]], Path]


def labeller(name: str) -> str:
    return f"- kind: LabelTransformer\n  metadata: {{name: {name}}}\n  labels: {{{name}: 'y'}}\n"


def names(path: Path) -> list[str]:
    return [t.name for t in consolidate(str(path)).transformers]


def fail(path: Path) -> CompositionError:
    with pytest.raises(CompositionError) as info:
        consolidate(str(path))
    assert info.value.phase == "failed to consolidate"
    return info.value


def test_prepend_is_default_and_append_goes_last(tree: Tree) -> None:
    root = tree(
        {
            "a/composition.yaml": HEAD + "transformers:\n" + labeller("a1") + labeller("a2"),
            "b/composition.yaml": HEAD + "transformers:\n" + labeller("b1"),
            "c/composition.yaml": HEAD + "transformers:\n" + labeller("c1"),
            "composition.yaml": HEAD
            + "transformersFrom:\n- path: b\n  importMode: append\n- path: a\n"
            + "- path: c/composition.yaml\n  importMode: prepend\n"
            + "transformers:\n"
            + labeller("own"),
        }
    )
    assert names(root) == ["a1", "a2", "c1", "own", "b1"]


def test_imports_are_consolidated_recursively_first(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD + "transformers:\n" + labeller("x") + labeller("y"),
            "mid/composition.yaml": HEAD
            + "transformersFrom:\n- path: ../base\n  importMode: append\n"
            + "transformers:\n"
            + labeller("m")
            + "transformerOverrides:\n- kind: LabelTransformer\n  metadata: {name: y}\n"
            + "  labels: {y: mid}\n"
            + "transformerOrder:\n- name: y\n",
            "composition.yaml": HEAD + "transformersFrom:\n- path: mid\n"
            "transformers:\n" + labeller("top"),
        }
    )
    cons = consolidate(str(root))
    assert [t.name for t in cons.transformers] == ["y", "m", "x", "top"]
    y = cons.transformers[0]
    assert y.config["labels"] == {"y": "mid"}
    assert y.overridden_by == [f"{root}/mid/composition.yaml:11 (transformerOverrides[0])"]
    assert y.imported_via == [f"{root}/composition.yaml", f"{root}/mid/composition.yaml"]


def test_import_cycle_is_named(tree: Tree) -> None:
    root = tree(
        {
            "composition.yaml": HEAD + "transformersFrom:\n- path: a\n",
            "a/composition.yaml": HEAD + "transformersFrom:\n- path: ../b\n",
            "b/composition.yaml": HEAD + "transformersFrom:\n- path: ../a\n",
        }
    )
    err = fail(root)
    chain = f"{root}/a/composition.yaml -> {root}/b/composition.yaml -> {root}/a/composition.yaml"
    assert err.problems == [
        f'importing composition "a": failed to consolidate Composition at path {root}/a:\n'
        f'  importing composition "../b": failed to consolidate Composition at path {root}/b:\n'
        f"  transformersFrom cycle: {chain}"
    ]


def test_self_import_is_a_cycle(tree: Tree) -> None:
    root = tree({"composition.yaml": HEAD + "transformersFrom:\n- path: .\n"})
    assert fail(root).problems == [
        f"transformersFrom cycle: {root}/composition.yaml -> {root}/composition.yaml"
    ]


def test_missing_import(tree: Tree) -> None:
    root = tree({"composition.yaml": HEAD + "transformersFrom:\n- path: nowhere\n"})
    assert fail(root).problems == [
        f"line 4: transformersFrom[0]: no composition.yaml at {root}/nowhere"
    ]


def test_two_unnamed_instances_of_one_gvk(tree: Tree) -> None:
    root = tree(
        {
            "composition.yaml": HEAD
            + "transformers:\n- kind: LabelTransformer\n  labels: {a: b}\n"
            + "- kind: LabelTransformer\n  labels: {c: d}\n"
        }
    )
    assert fail(root).problems == [
        'transformers field is invalid: list contains multiple "~G_builtin_LabelTransformer|'
        f'default|label-transformer" transformers ({root}/composition.yaml:4 (transformers[0]) '
        f"and {root}/composition.yaml:6 (transformers[1])); metadata.name defaults to the kind "
        "in kebab case, so give each instance of builtin/LabelTransformer its own metadata.name"
    ]


def test_same_name_different_gvk_is_fine(tree: Tree) -> None:
    root = tree(
        {
            "composition.yaml": HEAD
            + "transformers:\n"
            + labeller("x")
            + "- apiVersion: example.com/v1\n  kind: LabelTransformer\n  metadata: {name: x}\n"
        }
    )
    assert names(root) == ["x", "x"]


def test_import_collision_with_own(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD + "transformers:\n" + labeller("x"),
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n"
            "transformers:\n" + labeller("x"),
        }
    )
    assert fail(root).problems == [
        'importing composition "base" resulted in duplicate "~G_builtin_LabelTransformer|default|'
        f'x" transformer (imported from {root}/base/composition.yaml:4 (transformers[0]), also at '
        f"{root}/composition.yaml:6 (transformers[0]))"
    ]


def test_override_is_a_strategic_merge_patch(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD
            + "transformers:\n- apiVersion: example.com/v1\n  kind: JavaApplication\n"
            + "  metadata: {name: my-app}\n  spec:\n    application: team/my-app\n"
            + "    version: v1.0\n    env: {A: '1', B: '2'}\n",
            "composition.yaml": HEAD
            + "transformersFrom:\n- path: base\n"
            + "transformerOverrides:\n- apiVersion: example.com/v1\n  kind: JavaApplication\n"
            + "  metadata: {name: my-app}\n  spec:\n    version: v3.1.3\n"
            + "    env: {B: null, C: '3'}\n",
        }
    )
    (t,) = consolidate(str(root)).transformers
    assert t.config["spec"] == {
        "application": "team/my-app",
        "version": "v3.1.3",
        "env": {"A": "1", "C": "3"},
    }
    # Overriding a non-path field keeps the transformer's own directory.
    assert t.base_dir == str(root / "base")


def test_override_of_a_path_field_moves_its_base_directory(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD
            + "transformers:\n- kind: ResourceGenerator\n  metadata: {name: res}\n"
            + "  files: [a.yaml]\n",
            "composition.yaml": HEAD
            + "transformersFrom:\n- path: base\n"
            + "transformerOverrides:\n- kind: ResourceGenerator\n  metadata: {name: res}\n"
            + "  files: [b.yaml]\n",
        }
    )
    (t,) = consolidate(str(root)).transformers
    assert t.config["files"] == ["b.yaml"]
    assert t.base_dir == str(root)


@pytest.mark.parametrize(
    ("override", "ident"),
    [
        (
            "kind: LabelTransformer\n  metadata: {name: nope}",
            "~G_builtin_LabelTransformer|default|nope",
        ),
        (
            "apiVersion: example.com/v1\n  kind: LabelTransformer\n  metadata: {name: x}",
            "example.com_v1_LabelTransformer|default|x",
        ),
        ("labels: {a: b}", "~G_builtin_~K|default|~N"),
    ],
)
def test_override_matching_nothing(tree: Tree, override: str, ident: str) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD + "transformers:\n" + labeller("x"),
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n"
            f"transformerOverrides:\n- {override}\n",
        }
    )
    assert fail(root).problems == [
        f'no transformer found for override "{ident}" ({root}/composition.yaml:6 '
        "(transformerOverrides[0]); overrides match imported transformers by apiVersion, kind "
        "and metadata.name)"
    ]


def test_override_cannot_target_own_transformers(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD + "transformers:\n" + labeller("x"),
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n"
            "transformers:\n" + labeller("own") + "transformerOverrides:\n" + labeller("own"),
        }
    )
    assert (
        fail(root)
        .problems[0]
        .startswith('no transformer found for override "~G_builtin_LabelTransformer|default|own"')
    )


def test_order_rule_listed_first_then_unlisted_in_relative_order(tree: Tree) -> None:
    root = tree(
        {
            "composition.yaml": HEAD
            + "transformers:\n"
            + "".join(labeller(n) for n in ("a", "b", "c", "d", "e"))
            + "transformerOrder:\n- name: d\n- name: b\n"
        }
    )
    assert names(root) == ["d", "b", "a", "c", "e"]


def test_order_disambiguates_by_kind_or_api_version(tree: Tree) -> None:
    other = "- apiVersion: example.com/v1\n  kind: Other\n  metadata: {name: x}\n"
    root = tree(
        {
            "composition.yaml": HEAD
            + "transformers:\n"
            + labeller("x")
            + other
            + "transformerOrder:\n- name: x\n  apiVersion: example.com/v1\n"
            + "- name: x\n  kind: LabelTransformer\n  version: builtin\n"
        }
    )
    assert [t.kind for t in consolidate(str(root)).transformers] == ["Other", "LabelTransformer"]


@pytest.mark.parametrize(
    ("order", "problem"),
    [
        (
            "- name: zz\n",
            "line 11: transformerOrder[0]: no transformer matches name 'zz'",
        ),
        (
            "- name: x\n",
            "line 11: transformerOrder[0]: name 'x' is ambiguous, it matches "
            '"~G_builtin_LabelTransformer|default|x", "example.com_v1_Other|default|x"; add kind '
            "or apiVersion",
        ),
        (
            "- name: x\n  kind: Other\n- name: x\n  group: example.com\n",
            'line 13: transformerOrder[1]: "example.com_v1_Other|default|x" is listed twice',
        ),
    ],
)
def test_order_errors(tree: Tree, order: str, problem: str) -> None:
    other = "- apiVersion: example.com/v1\n  kind: Other\n  metadata: {name: x}\n"
    root = tree(
        {
            "composition.yaml": HEAD
            + "transformers:\n"
            + labeller("x")
            + other
            + "transformerOrder:\n"
            + order
        }
    )
    assert fail(root).problems == [problem]


def test_invalid_import_mode(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD,
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n  importMode: insert\n",
        }
    )
    assert fail(root).problems == [
        f'invalid import mode "insert" specified for transformers from {root}/base (line 4: '
        "transformersFrom[0].importMode: use prepend or append)"
    ]


def test_catalogs_merge_importer_first_then_imports_deduplicated(tree: Tree) -> None:
    root = tree(
        {
            "a/composition.yaml": HEAD + "catalogs: [cat.yaml, https://x.example/c.yaml]\n",
            "b/composition.yaml": HEAD
            + "catalogs: [../a/cat.yaml, oci://reg.example/c:1]\n"
            + "transformersFrom:\n- path: ../a\n",
            "composition.yaml": HEAD
            + "catalogs: [https://x.example/c.yaml, top.yaml]\n"
            + "transformersFrom:\n- path: b\n- path: a\n",
        }
    )
    cons = consolidate(str(root))
    assert cons.catalogs == [
        ("https://x.example/c.yaml", str(root)),
        ("top.yaml", str(root)),
        ("../a/cat.yaml", str(root / "b")),
        ("oci://reg.example/c:1", str(root / "b")),
    ]


def test_format_consolidated_names_origins(tree: Tree) -> None:
    root = tree(
        {
            "base/composition.yaml": HEAD + "transformers:\n" + labeller("x"),
            "composition.yaml": HEAD
            + "transformersFrom:\n- path: base\n"
            + "transformerOverrides:\n- kind: LabelTransformer\n  metadata: {name: x}\n"
            + "  labels: {x: top}\n"
            + "transformers:\n- kind: PrefixSuffixTransformer\n  prefix: p-\n",
        }
    )
    text = format_consolidated(consolidate(str(root)))
    assert text == (
        f"# Consolidated from {root}/composition.yaml: 2 transformer(s), in run order.\n"
        "apiVersion: kustomize.config.k8s.io/v1alpha1\n"
        "kind: Composition\n"
        "transformers:\n"
        "# 1. ~G_builtin_LabelTransformer|default|x\n"
        f"#    from {root}/base/composition.yaml:4 (transformers[0])\n"
        f"#    imported via {root}/composition.yaml\n"
        f"#    overridden by {root}/composition.yaml:6 (transformerOverrides[0])\n"
        "- apiVersion: builtin\n"
        "  kind: LabelTransformer\n"
        "  labels:\n"
        "    x: top\n"
        "  metadata:\n"
        "    name: x\n"
        "# 2. ~G_builtin_PrefixSuffixTransformer|default|prefix-suffix-transformer\n"
        f"#    from {root}/composition.yaml:10 (transformers[0])\n"
        "- apiVersion: builtin\n"
        "  kind: PrefixSuffixTransformer\n"
        "  metadata:\n"
        "    name: prefix-suffix-transformer\n"
        "  prefix: p-\n"
    )


def test_diamond_import_is_a_duplicate_with_a_hint(tree: Tree) -> None:
    root = tree(
        {
            "d/composition.yaml": HEAD + "transformers:\n" + labeller("shared"),
            "b/composition.yaml": HEAD + "transformersFrom:\n- path: ../d\n",
            "c/composition.yaml": HEAD + "transformersFrom:\n- path: ../d\n",
            "composition.yaml": HEAD + "transformersFrom:\n- path: b\n- path: c\n",
        }
    )
    where = f"{root}/d/composition.yaml:4 (transformers[0])"
    assert fail(root).problems == [
        'importing composition "c" resulted in duplicate "~G_builtin_LabelTransformer|default|'
        f'shared" transformer (imported from {where}, also at {where}); '
        f"{root}/d/composition.yaml is imported twice (a diamond): import it once, or render it "
        "eagerly with a ResourceAccumulator"
    ]


def test_named_transformer_without_kind(tree: Tree) -> None:
    # KEP schema: kind is required even when metadata.name is given (nothing to default).
    root = tree(
        {
            "composition.yaml": HEAD + "transformers:\n- apiVersion: example.com/v1\n"
            "  metadata: {name: x}\n"
        }
    )
    assert fail(root).problems == [
        "transformers field is invalid: line 4: transformers[0]: transformer identifier "
        '"example.com_v1_~K|default|x" must include a kind'
    ]


@pytest.mark.parametrize("path", ["base", "base/composition.yaml"])
def test_import_of_a_directory_with_both_files(tree: Tree, path: str) -> None:
    from orchestrator.errors import LoadError

    files = {
        "base/composition.yaml": HEAD + "transformers:\n" + labeller("x"),
        "base/kustomization.yaml": "resources: []\n",
        "composition.yaml": HEAD + f"transformersFrom:\n- path: {path}\n",
    }
    root = tree(files)
    with pytest.raises(LoadError) as info:
        consolidate(str(root))
    assert str(info.value) == (
        f"{root}/base: both 'kustomization.yaml' and 'composition.yaml' found in "
        f"'{root}/base'; keep only one"
    )
    for rel, text in files.items():
        assert (root / rel).read_text() == text


def test_unnamed_instances_of_one_gvk_across_an_import(tree: Tree) -> None:
    label = "transformers:\n- kind: LabelTransformer\n  labels: {a: b}\n"
    root = tree(
        {
            "base/composition.yaml": HEAD + label,
            "composition.yaml": HEAD + "transformersFrom:\n- path: base\n" + label,
        }
    )
    assert fail(root).problems == [
        'importing composition "base" resulted in duplicate "~G_builtin_LabelTransformer|default|'
        f'label-transformer" transformer (imported from {root}/base/composition.yaml:4 '
        f"(transformers[0]), also at {root}/composition.yaml:6 (transformers[0])); "
        "metadata.name defaults to the kind in kebab case, so give each instance of "
        "builtin/LabelTransformer its own metadata.name"
    ]
