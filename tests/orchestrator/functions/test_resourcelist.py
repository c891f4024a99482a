"""ResourceList wire format: internal annotations in and out, decoding, results."""

from __future__ import annotations

import pytest

from orchestrator import yamlio
from orchestrator.functions import resourcelist as rl
from orchestrator.functions.options import FunctionError
from orchestrator.resource import Resource


def _cm(name: str, **md: object) -> Resource:
    return Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **md}})


def test_items_carry_path_index_and_legacy_annotations(tmp_path):
    (tmp_path / "cms.yaml").write_text("# the file the resources came from\n")
    a = _cm("a")
    a.source = str(tmp_path / "cms.yaml")
    b = _cm("b")
    b.source = str(tmp_path / "cms.yaml")
    c = _cm("c")
    items = rl.to_items([a, b, c], str(tmp_path))
    ann = [i["metadata"]["annotations"] for i in items]
    assert ann[0][rl.PATH] == ann[0][rl.LEGACY_PATH] == "cms.yaml"
    assert ann[1][rl.INDEX] == ann[1][rl.LEGACY_INDEX] == "1"
    assert ann[2][rl.PATH] == "configmap_c.yaml"
    assert ann[2][rl.ID] == "2"
    # the input resources are untouched
    assert "annotations" not in a.obj["metadata"]


@pytest.mark.parametrize("deep", [True, False])
def test_shallow_items_share_only_what_no_annotation_touches(deep):
    """Functions that read bytes get items copied down to the annotations only: the inputs,
    their labels and annotations stay as they were, and the items encode the same either way."""
    a = _cm("a", labels={"app": "x"}, annotations={"keep": "me"})
    b = Resource(obj={"apiVersion": "v1", "kind": "ConfigMap", "metadata": None})
    before = yamlio.dump(a.obj), yamlio.dump(b.obj)
    items = rl.to_items([a, b], None, deep=deep)
    assert (yamlio.dump(a.obj), yamlio.dump(b.obj)) == before
    assert items[0]["metadata"]["annotations"]["keep"] == "me"
    assert items[0]["metadata"]["annotations"][rl.ID] == "0"
    assert items[1]["metadata"]["annotations"][rl.ID] == "1"
    assert rl.encode(items, None) == rl.encode(rl.to_items([a, b], None), None)
    assert (items[0]["metadata"]["labels"] is a.obj["metadata"]["labels"]) is not deep


def test_an_output_item_keeps_its_bookkeeping_without_copying_the_input():
    a = _cm("a")
    a.previous.append(("", "old-a"))
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}
    new["metadata"]["annotations"] = {rl.ID: "0"}
    out = rl.from_items([new], [a], function="fn")
    assert out[0].obj is new and out[0].previous == [("", "old-a")] and out[0] is not a


def test_output_loses_internal_annotations_and_keeps_bookkeeping():
    a = _cm("a", annotations={"keep": "me"})
    a.previous.append(("", "old-a"))
    items = rl.to_items([a], None)
    items[0]["metadata"]["name"] = "renamed"
    items.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "new"}})
    out = rl.from_items(items, [a], function="fn")
    assert out[0].obj["metadata"] == {"name": "renamed", "annotations": {"keep": "me"}}
    assert out[0].previous == [("", "old-a")]
    assert out[1].obj == {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "new"}}
    assert out[1].source == "fn"


def test_encode_decode_roundtrip_and_v1beta1_and_json():
    data = rl.encode([{"kind": "A", "metadata": {"name": "x"}}], {"kind": "Cfg"})
    doc = yamlio.load(data)
    assert doc["apiVersion"] == "config.kubernetes.io/v1"
    assert doc["functionConfig"] == {"kind": "Cfg"}
    assert rl.decode(data, function="f")["items"] == [{"kind": "A", "metadata": {"name": "x"}}]
    beta = b"apiVersion: config.kubernetes.io/v1beta1\nkind: ResourceList\nitems: []\n"
    assert rl.decode(beta, function="f")["items"] == []
    as_json = (
        b'{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [{"a": 1}]}'
    )
    assert rl.decode(as_json, function="f")["items"] == [{"a": 1}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"kind: List\nitems: []\n", "fn wrote output that is not a ResourceList (got 'List')"),
        (
            b"apiVersion: v2\nkind: ResourceList\n",
            "fn wrote a ResourceList with apiVersion 'v2', expected one of "
            "config.kubernetes.io/v1, config.kubernetes.io/v1beta1",
        ),
        (
            b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [1]\n",
            "fn wrote a ResourceList whose items are not a list of objects",
        ),
        (b"- just a list\n", "fn wrote output that is not a ResourceList (got 'list')"),
        (b"", "fn wrote no output (expected a ResourceList on stdout)"),
        (b"a: [\n", "fn wrote output that is not YAML: invalid YAML: "),
    ],
)
def test_bad_output_is_a_clear_error(data, message):
    with pytest.raises(FunctionError) as exc:
        rl.decode(data, function="fn")
    if message.endswith(": "):  # the parser's own position text follows
        assert str(exc.value).startswith(message)
    else:
        assert str(exc.value) == message


def test_results_summary_and_file(tmp_path):
    results = [
        {
            "message": "too big",
            "severity": "error",
            "resourceRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "a"},
            "field": {"path": "data.x"},
            "file": {"path": "cm.yaml", "index": 0},
            "tags": {"team": "x"},
        },
        {"message": "fyi"},
    ]
    assert rl.has_errors(results)
    assert not rl.has_errors(results[1:])
    assert rl.format_summary("fn", results) == (
        "Results of fn:\n"
        "  [error] v1/ConfigMap/a field data.x file cm.yaml: too big\n"
        "  [info]: fyi\n"
    )
    path = rl.write_results(
        str(tmp_path / "r"), [{"exec": "./f", "exitCode": 1, "results": results}]
    )
    doc = yamlio.load((tmp_path / "r" / "results.yaml").read_text())
    assert path.endswith("results.yaml")
    assert doc["kind"] == "FunctionResultList" and doc["apiVersion"] == "kpt.dev/v1"
    assert doc["exitCode"] == 1
    assert doc["items"][0]["results"][0]["tags"] == {"team": "x"}
