"""The YAML depth limit and alias budget at their edges, and the readers that use them."""

from __future__ import annotations

import pytest

from orchestrator import yamlio
from orchestrator.errors import KrmError, PatchError, YamlError
from orchestrator.filters import json6902
from orchestrator.functions.options import FunctionError
from orchestrator.functions.resourcelist import decode as decode_resource_list
from orchestrator.yamllimits import ALIAS_FLOOR, ALIAS_RATIO, MAX_DEPTH, check_depth, check_text


def _flow(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_depth_limit_is_inclusive() -> None:
    assert yamlio.load(_flow(MAX_DEPTH)) is not None
    with pytest.raises(YamlError) as exc:
        yamlio.load(_flow(MAX_DEPTH + 1), source="f.yaml")
    assert str(exc.value) == f"f.yaml: nested deeper than {MAX_DEPTH} levels (line 1, column 101)"


def test_depth_counts_what_aliases_stand_for() -> None:
    # 60 levels anchored, then used 50 levels down: 110 once the alias is expanded.
    inner = "[" * 60 + "]" * 60
    text = f"a: &deep {inner}\nb: " + "[" * 49 + "*deep" + "]" * 49 + "\n"
    with pytest.raises(YamlError) as exc:
        yamlio.load(text, source="f.yaml")
    assert str(exc.value) == (
        f"f.yaml: nested deeper than {MAX_DEPTH} levels through alias *deep (line 2, column 53)"
    )
    assert yamlio.load(f"a: &deep {inner}\nb: " + "[" * 30 + "*deep" + "]" * 30 + "\n")


def test_alias_floor_and_ratio() -> None:
    # A small document may expand to ALIAS_FLOOR nodes, not one more.
    def doc(uses: int) -> str:
        items = ", ".join(["x"] * 999)
        return f"a: &a [{items}]\nb: [" + ", ".join(["*a"] * uses) + "]\n"

    # nodes: root, a, [..1000], b, [...]: 1,004 written; each alias stands for 1,000.
    under = (ALIAS_FLOOR - 1004) // 1000
    assert len(yamlio.load(doc(under))["b"]) == under
    with pytest.raises(YamlError) as exc:
        yamlio.load(doc(under + 1), source="f.yaml")
    assert str(exc.value).startswith(
        f"f.yaml: too much aliasing: aliases expand to over {ALIAS_FLOOR} nodes from "
    )
    # A big document may expand to ALIAS_RATIO times what it has written so far.
    filler = "".join(f"k{i}: v\n" for i in range(ALIAS_FLOOR // 4))  # ALIAS_FLOOR / 2 nodes
    assert ALIAS_RATIO * (ALIAS_FLOOR // 2) > ALIAS_FLOOR + 1000
    assert len(yamlio.load(filler + doc(under + 1))["b"]) == under + 1


def test_alias_inside_its_own_anchor_refused() -> None:
    with pytest.raises(YamlError) as exc:
        yamlio.load("a: &a [1, *a]\n", source="f.yaml")
    assert str(exc.value) == "f.yaml: alias *a refers to a node that holds it (line 1, column 11)"


def test_syntax_errors_are_left_to_the_parser() -> None:
    check_text("a: [1, 2\n")  # no error of its own
    with pytest.raises(YamlError) as exc:
        yamlio.load("a: [1, 2\n", source="f.yaml")
    assert str(exc.value).startswith("f.yaml: invalid YAML: ")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a: \xff\n", "f.yaml: not valid UTF-8: byte 0xff (line 1, column 4)"),
        (b"\xef\xbb\xbfa: b\nc: d\xc3\n", "f.yaml: not valid UTF-8: byte 0xc3 (line 2, column 5)"),
        (b"a: \xc3\xa9\xc3\n", "f.yaml: not valid UTF-8: byte 0xc3 (line 1, column 5)"),
        (b"\xff\xfea\x00:\x00 \x00\x00\xd8", "f.yaml: not valid UTF-16-LE (at byte 8)"),
    ],
)
def test_bytes_that_are_not_text(data: bytes, message: str) -> None:
    with pytest.raises(YamlError) as exc:
        yamlio.load_all(data, source="f.yaml")
    assert str(exc.value) == message


def test_check_depth_on_parsed_data() -> None:
    value: object = []
    for _ in range(MAX_DEPTH - 1):
        value = [value]
    check_depth(value)
    with pytest.raises(YamlError) as exc:
        check_depth({"a": value}, source="out")
    assert str(exc.value) == f"out: nested deeper than {MAX_DEPTH} levels"


@pytest.mark.parametrize("levels", [200, 100_000])
def test_json6902_ops_nested_too_deep(levels: int) -> None:
    json_text = '[{"op": "add", "path": "/a", "value": ' + _flow(levels) + "}]"
    with pytest.raises(KrmError) as exc:
        json6902.parse_ops(json_text, "p.json")
    if levels == 200:
        assert str(exc.value) == f"p.json: nested deeper than {MAX_DEPTH} levels"
    else:  # deeper than Python's json reader goes
        assert isinstance(exc.value, PatchError)
        assert str(exc.value).startswith("p.json: invalid JSON patch: maximum recursion depth")
    yaml_text = "- op: add\n  path: /a\n  value: " + _flow(levels) + "\n"
    with pytest.raises(YamlError) as exc:
        json6902.parse_ops(yaml_text, "p.yaml")
    assert str(exc.value) == f"p.yaml: nested deeper than {MAX_DEPTH} levels (line 3, column 108)"


def test_function_output_alias_bomb() -> None:
    bomb = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n" + "\n".join(
        [f"l0: &l0 [{', '.join(['x'] * 9)}]"]
        + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    )
    with pytest.raises(FunctionError) as exc:
        decode_resource_list(bomb, function="fn")
    assert str(exc.value) == (
        "fn wrote output that is not YAML: too much aliasing: aliases expand to over 100000 "
        "nodes from 28 written up to here (line 9, column 10)"
    )


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, 300, 20_000])
def test_starlark_output_nested_too_deep(levels: int) -> None:
    # Without the check, starlark's json.encode crashed the process (SIGSEGV) from ~300 levels.
    # (Far deeper values, ~100,000, crash starlark-rust itself: tests/hostile, in a child.)
    from orchestrator.functions import starlark
    from orchestrator.functions.options import FnOptions

    script = (
        "v = []\n"
        f"for i in range({levels}):\n"
        "    v = [v]\n"
        "ctx.resource_list['items'] = [{'kind': 'X', 'spec': v}]\n"
    )
    with pytest.raises(FunctionError) as exc:
        starlark.run(
            script,
            filename="fn.star",
            resource_list={"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList"},
            options=FnOptions(),
            function="fn",
        )
    assert str(exc.value) == f"fn: output nested deeper than {MAX_DEPTH} levels in a resource"


def test_starlark_output_up_to_the_limit() -> None:
    from orchestrator.functions import starlark
    from orchestrator.functions.options import FnOptions

    # spec is level 2 of the resource; MAX_DEPTH - 2 lists below it reach MAX_DEPTH.
    script = (
        f"v = []\nfor i in range({MAX_DEPTH - 3}):\n    v = [v]\n"
        "ctx.resource_list['items'] = [{'kind': 'X', 'spec': v}]\n"
    )
    out, _ = starlark.run(
        script,
        filename="fn.star",
        resource_list={"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList"},
        options=FnOptions(),
        function="fn",
    )
    assert out["items"][0]["kind"] == "X"
