"""Unit tests of the engine's building blocks: field specs, ids, sorting, selectors, loader."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import fieldspec, sort, yamlio
from orchestrator.errors import LoadError, ResourceConflictError, ValidationError
from orchestrator.filters.patch import Selector, parse_label_selector
from orchestrator.fs import Loader
from orchestrator.resource import ResMap, Resource, effective_namespace, id_key


def _res(kind: str, name: str, ns: str = "", api: str = "v1", **extra) -> Resource:
    md = {"name": name, **({"namespace": ns} if ns else {})}
    return Resource(obj={"apiVersion": api, "kind": kind, "metadata": md, **extra})


def test_split_path_honours_escaped_slashes() -> None:
    assert fieldspec.split_path("metadata/annotations/a.io\\/b") == (
        "metadata",
        "annotations",
        "a.io/b",
    )
    assert fieldspec.split_path("spec/containers[]/image") == ("spec", "containers[]", "image")


def test_apply_creates_only_with_create_and_walks_lists() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"image": "a"}, {}]}}
    fs = fieldspec.make("spec/containers/image")
    fieldspec.apply(obj, fs, lambda v: v + "!", create_kind=None)
    assert obj["spec"]["containers"] == [{"image": "a!"}, {}]
    created = fieldspec.make("metadata/labels", create=True)
    fieldspec.apply(obj, created, lambda v: {**v, "x": "y"}, create_kind="map")
    assert obj["metadata"] == {"labels": {"x": "y"}}
    other_kind = fieldspec.make("metadata/name", kind="Service", create=True)
    fieldspec.apply(obj, other_kind, lambda v: "changed", create_kind="scalar")
    assert "name" not in obj["metadata"]


def test_apply_into_a_scalar_is_an_error() -> None:
    obj = {"apiVersion": "v1", "kind": "Service", "spec": {"selector": "oops"}}
    with pytest.raises(fieldspec.FieldPathError) as err:
        fieldspec.apply(obj, fieldspec.make("spec/selector/app"), lambda v: v)
    assert str(err.value) == "expected sequence or mapping node at 'spec/selector'"


def test_default_config_has_kustomize_tables() -> None:
    tc = fieldspec.default_config()
    assert len(tc.get("commonLabels")) == 32
    kinds = [b.target.kind for b in tc.name_reference]
    assert len(kinds) == 16
    # Sorted as kustomize sorts its config: legacy kind rank first, then group_version_kind.
    assert kinds[:7] == [
        "StorageClass",
        "ServiceAccount",
        "Role",
        "ClusterRole",
        "ConfigMap",
        "Secret",
        "Service",
    ]


def test_config_merge_drops_general_spec_after_specific_one() -> None:
    specific = fieldspec.make("metadata/name", kind="Deployment")
    general = fieldspec.make("metadata/name")
    assert fieldspec.merge([specific], [general]) == [specific]
    assert fieldspec.merge([general], [specific]) == [general, specific]
    with pytest.raises(ValidationError):
        fieldspec.merge([general], [fieldspec.make("metadata/name", create=True)])


def test_id_equality_treats_default_namespace_as_empty() -> None:
    assert id_key("v1", "ConfigMap", "a", "") == id_key("v1", "ConfigMap", "a", "default")
    assert effective_namespace("v1", "Namespace", "x") == "_non_namespaceable_"


def test_resmap_rejects_duplicate_ids_and_finds_previous_names() -> None:
    m = ResMap([_res("ConfigMap", "a")])
    with pytest.raises(ResourceConflictError) as err:
        m.append(_res("ConfigMap", "a", "default"))
    assert err.value.message == (
        "may not add resource with an already registered id: ConfigMap.v1.[noGrp]/a.default"
    )
    (r,) = m.resources()
    r.store_previous()
    r.metadata["name"] = "p-a"
    m.invalidate()
    assert m.by_any_key(id_key("v1", "ConfigMap", "a", "")) == [r]
    assert m.by_current_key(id_key("v1", "ConfigMap", "a", "")) == []


def test_legacy_sort_order() -> None:
    items = [
        _res("Deployment", "b", api="apps/v1"),
        _res("ValidatingWebhookConfiguration", "w", api="admissionregistration.k8s.io/v1"),
        _res("Service", "s"),
        _res("Custom", "c", api="example.com/v1"),
        _res("Namespace", "n"),
        _res("Deployment", "a", api="apps/v1"),
        _res("ConfigMap", "z", ns="b"),
        _res("ConfigMap", "z", ns="a"),
    ]
    order = [(r.kind, r.namespace, r.name) for r in sort.legacy_sort(items)]
    assert order == [
        ("Namespace", "", "n"),
        ("ConfigMap", "a", "z"),
        ("ConfigMap", "b", "z"),
        ("Service", "", "s"),
        ("Deployment", "", "a"),
        ("Deployment", "", "b"),
        ("Custom", "", "c"),
        ("ValidatingWebhookConfiguration", "", "w"),
    ]


def test_label_selector_parsing_and_matching() -> None:
    reqs = parse_label_selector("app=web, tier in (a,b), !legacy, env!=prod")
    assert reqs == [
        ("app", "=", ("web",)),
        ("tier", "in", ("a", "b")),
        ("legacy", "!", ()),
        ("env", "!=", ("prod",)),
    ]
    sel = Selector({"kind": "Dep.*", "labelSelector": "app=web,tier in (a,b)"})
    good = _res("Deployment", "x", api="apps/v1")
    good.metadata["labels"] = {"app": "web", "tier": "a"}
    bad = _res("Deployment", "y", api="apps/v1")
    bad.metadata["labels"] = {"app": "web", "tier": "c"}
    assert sel.matches(good) and not sel.matches(bad)


def test_selector_regexes_are_anchored_and_match_original_names() -> None:
    r = _res("Service", "web")
    r.store_previous()
    r.metadata["name"] = "p-web"
    assert Selector({"name": "web"}).matches(r)
    assert Selector({"name": "p-web"}).matches(r)
    assert not Selector({"name": "we"}).matches(r)
    assert Selector({"namespace": "default"}).matches(r)


def test_loader_restricts_and_detects_cycles(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "secret.txt").write_text("x")
    ldr = Loader(str(tmp_path / "app"))
    with pytest.raises(LoadError) as err:
        ldr.read("../secret.txt")
    assert err.value.message.startswith("security; file ")
    assert (
        Loader(str(tmp_path / "app"), restrictor="LoadRestrictionsNone").read("../secret.txt")
        == b"x"
    )
    with pytest.raises(LoadError) as err:
        ldr.child("..")
    assert err.value.message.startswith("cycle detected: candidate root")


def test_go_yaml_key_order() -> None:
    # The order kubectl kustomize prints these ConfigMap keys in (checked against it).
    expected = [
        "_x", "1", "01", "9", "10", "A", "Z9", "a-1", "a.b", "a_1", "a1", "a01", "a2", "a10",
        "b", "z",
    ]  # fmt: skip
    shuffled = sorted(expected, key=lambda k: hash(k) % 7)
    assert list(yamlio.go_sorted_keys(shuffled)) == expected
