"""Unit tests of merge(): every directive and list strategy, kustomize v5.5.0 semantics.

The expected values here were checked against `kubectl kustomize` (kustomize v5.5.0);
test_strategicmerge_kubectl.py re-checks such pairs against the real binary.
"""

from __future__ import annotations

import copy

import pytest

from orchestrator.errors import PatchError
from orchestrator.openapi import PatchSchema
from orchestrator.resource import Gvk
from orchestrator.strategicmerge import merge

DEPLOY = Gvk("apps", "v1", "Deployment")
SERVICE = Gvk("", "v1", "Service")
THING = Gvk("example.com", "v1", "Thing")


def deployment(containers: list, **spec) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": containers, **spec}}},
    }


def containers_of(obj: dict) -> list:
    return obj["spec"]["template"]["spec"]["containers"]


# -- maps and scalars -------------------------------------------------------------------


def test_maps_merge_recursively_and_scalars_are_replaced() -> None:
    target = {"kind": "X", "a": {"b": 1, "c": {"d": 2}}, "e": "keep"}
    patch = {"kind": "X", "a": {"c": {"d": 3, "f": 4}}, "g": "new"}
    assert merge(target, patch, gvk=THING) == {
        "kind": "X",
        "a": {"b": 1, "c": {"d": 3, "f": 4}},
        "e": "keep",
        "g": "new",
    }


def test_null_in_patch_deletes_the_field() -> None:
    target = {"kind": "X", "a": {"b": 1, "c": 2}, "l": [1], "s": "x"}
    patch = {"kind": "X", "a": {"b": None}, "l": None, "s": None}
    assert merge(target, patch, gvk=THING) == {"kind": "X", "a": {"c": 2}}


def test_null_in_target_is_kept_when_patch_does_not_touch_it() -> None:
    assert merge({"kind": "X", "f": None}, {"kind": "X"}, gvk=THING) == {
        "kind": "X",
        "f": None,
    }


def test_null_in_patch_for_missing_field_adds_nothing() -> None:
    assert merge({"kind": "X"}, {"kind": "X", "f": None, "m": {"x": None}}, gvk=THING) == {
        "kind": "X",
        "m": {},
    }


def test_empty_map_and_list_from_patch_are_kept() -> None:
    assert merge({"kind": "X"}, {"kind": "X", "m": {}, "l": []}, gvk=THING) == {
        "kind": "X",
        "m": {},
        "l": [],
    }


def test_inputs_are_not_modified() -> None:
    target = deployment([{"name": "a", "image": "a", "env": [{"name": "E", "value": "1"}]}])
    patch = deployment([{"name": "a", "env": [{"name": "F", "value": "2"}], "$patch": "merge"}])
    before_t, before_p = copy.deepcopy(target), copy.deepcopy(patch)
    out = merge(target, patch, gvk=DEPLOY)
    assert target == before_t and patch == before_p
    out["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "Z"})
    assert patch == before_p  # the result does not share the patch's lists


def test_quoted_string_in_target_keeps_its_style() -> None:
    # kyaml's FieldSetter copies the old value's (quoted) style onto the new value.
    target = {"kind": "X", "port": "80", "plain": "abc"}
    patch = {"kind": "X", "port": 81, "plain": 5}
    assert merge(target, patch, gvk=THING) == {"kind": "X", "port": "81", "plain": 5}


# -- $patch on maps ----------------------------------------------------------------------


def test_patch_delete_on_the_whole_object_returns_none() -> None:
    assert merge({"kind": "X", "a": 1}, {"kind": "X", "$patch": "delete"}, gvk=THING) is None


def test_patch_delete_on_a_nested_map_removes_it() -> None:
    target = {"kind": "X", "a": {"b": 1}, "c": 2}
    assert merge(target, {"kind": "X", "a": {"$patch": "delete"}}, gvk=THING) == {
        "kind": "X",
        "c": 2,
    }


def test_patch_replace_on_a_map_replaces_it() -> None:
    target = {"kind": "X", "a": {"b": 1, "c": 2}}
    patch = {"kind": "X", "a": {"$patch": "replace", "d": 3}}
    assert merge(target, patch, gvk=THING) == {"kind": "X", "a": {"d": 3}}


def test_patch_merge_on_a_map_merges() -> None:
    target = {"kind": "X", "a": {"b": 1}}
    patch = {"kind": "X", "a": {"$patch": "merge", "d": 3}}
    assert merge(target, patch, gvk=THING) == {"kind": "X", "a": {"b": 1, "d": 3}}


def test_unknown_patch_directive_is_an_error() -> None:
    with pytest.raises(PatchError) as e:
        merge({"kind": "X", "a": {"b": 1}}, {"kind": "X", "a": {"$patch": "nope"}}, gvk=THING)
    assert str(e.value) == "unknown patch strategy 'nope'"


def test_patch_emptying_the_object_deletes_it() -> None:
    assert merge({"a": 1}, {"a": None}, gvk=THING) is None


# -- lists with merge strategy ---------------------------------------------------------------


def test_merge_list_by_key_patch_elements_first() -> None:
    target = deployment([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
    patch = deployment([{"name": "c", "image": "c"}, {"name": "b", "image": "B"}])
    assert containers_of(merge(target, patch, gvk=DEPLOY)) == [
        {"name": "c", "image": "c"},
        {"name": "b", "image": "B"},
        {"name": "a", "image": "a"},
    ]


def test_env_merge_order_matches_kustomize() -> None:
    # corpus case deployment-env-merge
    target = deployment(
        [{"name": "t", "env": [{"name": "B1"}, {"name": "B2"}, {"name": "S", "value": "o"}]}]
    )
    patch = deployment(
        [{"name": "t", "env": [{"name": "P1"}, {"name": "P2"}, {"name": "S", "value": "n"}]}]
    )
    env = containers_of(merge(target, patch, gvk=DEPLOY))[0]["env"]
    assert [e["name"] for e in env] == ["P1", "P2", "S", "B1", "B2"]
    assert env[2] == {"name": "S", "value": "n"}


def test_element_patch_delete_removes_the_element() -> None:
    target = deployment([{"name": "a"}, {"name": "b"}])
    patch = deployment([{"name": "a", "$patch": "delete"}])
    assert containers_of(merge(target, patch, gvk=DEPLOY)) == [{"name": "b"}]


def test_list_patch_replace_replaces_the_list() -> None:
    target = deployment([{"name": "a"}, {"name": "b"}])
    patch = deployment([{"name": "c"}, {"$patch": "replace"}])
    assert containers_of(merge(target, patch, gvk=DEPLOY)) == [{"name": "c"}]


def test_list_patch_delete_removes_the_list() -> None:
    target = deployment([{"name": "a"}], volumes=[{"name": "v"}])
    patch = deployment([{"$patch": "delete"}])
    assert "containers" not in merge(target, patch, gvk=DEPLOY)["spec"]["template"]["spec"]


def test_element_patch_replace_keeps_the_target_element_like_kyaml() -> None:
    # kyaml quirk (checked with kubectl): the target's element wins back in the final append.
    target = deployment([{"name": "a", "image": "a", "args": ["x"]}])
    patch = deployment([{"name": "a", "image": "z", "$patch": "replace"}])
    assert containers_of(merge(target, patch, gvk=DEPLOY)) == [
        {"name": "a", "image": "a", "args": ["x"]}
    ]


def test_keyless_empty_element_in_patch_wipes_keyed_target_elements_like_kyaml() -> None:
    # kyaml quirk (checked with kubectl): `{}` has key value "", whose delete matches
    # every element that has a name; the `{}` itself drops out too.
    target = deployment([{"name": "a"}])
    patch = deployment([{"name": "b"}, {}])
    assert containers_of(merge(target, patch, gvk=DEPLOY)) == [{"name": "b"}]


def test_empty_list_in_patch_keeps_the_target_list() -> None:
    target = deployment([{"name": "a"}])
    assert containers_of(merge(target, deployment([]), gvk=DEPLOY)) == [{"name": "a"}]


def test_null_list_in_patch_deletes_it() -> None:
    target = deployment([{"name": "a"}])
    out = merge(target, deployment(None), gvk=DEPLOY)
    assert out["spec"]["template"]["spec"] == {}


def test_primitive_merge_list_is_a_union_patch_first() -> None:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"finalizers": ["b", "c"]}}
    patch = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"finalizers": ["a", "b"]}}
    assert merge(target, patch, gvk=DEPLOY)["metadata"]["finalizers"] == ["a", "b", "c"]


def test_multi_key_list_map_keys_service_ports() -> None:
    # Service ports merge on (port, protocol): x-kubernetes-list-map-keys wins over merge key.
    target = {
        "apiVersion": "v1",
        "kind": "Service",
        "spec": {"ports": [{"port": 80, "protocol": "UDP"}]},
    }
    patch = {
        "apiVersion": "v1",
        "kind": "Service",
        "spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "t"}]},
    }
    assert merge(target, patch, gvk=SERVICE)["spec"]["ports"] == [
        {"port": 80, "protocol": "TCP", "name": "t"},
        {"port": 80, "protocol": "UDP"},
    ]


def test_lists_without_merge_strategy_are_replaced() -> None:
    target = deployment([{"name": "a", "args": ["1", "2"]}])
    patch = deployment([{"name": "a", "args": ["3"]}])
    assert containers_of(merge(target, patch, gvk=DEPLOY))[0]["args"] == ["3"]


def test_unknown_kinds_do_not_infer_merge_keys() -> None:
    # corpus case reference__infer-merge-keys: kustomize replaces the list.
    target = {"apiVersion": "custom", "kind": "Deployment", "containers": [{"name": "f", "i": 1}]}
    patch = {"apiVersion": "custom", "kind": "Deployment", "containers": [{"name": "f", "c": 2}]}
    assert merge(target, patch, gvk=Gvk("", "custom", "Deployment"))["containers"] == [
        {"name": "f", "c": 2}
    ]


def test_nested_object_with_apiversion_and_kind_gets_its_schema() -> None:
    # kyaml looks up the type of a nested map that carries apiVersion/kind.
    inner_t = deployment([{"name": "a"}])
    inner_p = deployment([{"name": "b"}])
    out = merge({"kind": "Wrap", "x": inner_t}, {"kind": "Wrap", "x": inner_p}, gvk=THING)
    assert containers_of(out["x"]) == [{"name": "b"}, {"name": "a"}]


# -- directives kustomize does not interpret -------------------------------------------------


@pytest.mark.parametrize(
    "field",
    ["$setElementOrder/containers", "$retainKeys", "$deleteFromPrimitiveList/finalizers"],
)
def test_apimachinery_only_directives_pass_through_like_kustomize(field: str) -> None:
    target = deployment([{"name": "a"}])
    patch = deployment([{"name": "a"}])
    patch["spec"]["template"]["spec"][field] = [{"name": "a"}]
    out = merge(target, patch, gvk=DEPLOY)
    assert out["spec"]["template"]["spec"][field] == [{"name": "a"}]


# -- errors and schema variants -----------------------------------------------------------


def test_kind_mismatch_is_a_clear_error() -> None:
    with pytest.raises(PatchError) as e:
        merge({"kind": "X", "a": {"b": 1}}, {"kind": "X", "a": [1]}, gvk=THING)
    assert str(e.value) == (
        "wrong node kind: expected MappingNode but got SequenceNode: node contents:\n- 1\n"
    )


def test_custom_openapi_schema_makes_a_crd_list_merge() -> None:
    doc = {
        "definitions": {
            "v1.Thing": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"id": {"type": "string"}}},
                        "x-kubernetes-patch-strategy": "merge",
                        "x-kubernetes-patch-merge-key": "id",
                    }
                },
                "x-kubernetes-group-version-kind": [
                    {"group": "example.com", "version": "v1", "kind": "Thing"}
                ],
            }
        }
    }
    target = {"apiVersion": "example.com/v1", "kind": "Thing", "items": [{"id": "a", "v": 1}]}
    patch = {"apiVersion": "example.com/v1", "kind": "Thing", "items": [{"id": "b"}]}
    assert merge(target, patch, gvk=THING)["items"] == [{"id": "b"}]
    schema = PatchSchema.default().extended([doc])
    assert merge(target, patch, gvk=THING, schema=schema)["items"] == [
        {"id": "b"},
        {"id": "a", "v": 1},
    ]
