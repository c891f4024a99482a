"""``jsonc`` gives what ``json`` gives (the same objects, text and errors), without importing it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import jsonc
from tests.orchestrator.conftest import run_python

_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


def _outcome(func: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", func(*args, **kwargs)
    except Exception as exc:  # the same type and message is what is compared
        return "error", (type(exc), str(exc))


@settings(max_examples=500, deadline=None)
@given(value=_VALUES, space=st.sampled_from(["", " ", "\n\t", " \r\n "]))
def test_loads_gives_what_json_gives(value: Any, space: str) -> None:
    text = space + json.dumps(value) + space
    assert jsonc.loads(text) == json.loads(text)
    assert jsonc.dumps_sorted_compact(value) == json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1} x',
        "",
        "   ",
        "[1,]",
        '{"a": "\t"}',
        '"\ufeff"',
        "\ufeff[]",
        "[NaN]",
        "{'a': 1}",
        '{"a":1,"a":2}',
        "[1e400, -0.0]",
        '"\\ud800"',
        "[" * 10 + "]" * 10,
    ],
)
@pytest.mark.parametrize("strict", [True, False])
def test_odd_and_invalid_texts_get_jsons_answer(text: str, strict: bool) -> None:
    expected = _outcome(json.loads, text, strict=strict)
    got = _outcome(jsonc.loads, text, strict=strict)
    assert repr(got) == repr(expected)


def test_hooks_are_called_as_json_calls_them() -> None:
    seen: list[Any] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen.append(items)
        return dict(items)

    text = '{"a": {"b": NaN}, "c": [Infinity]}'
    assert jsonc.loads(text, object_pairs_hook=pairs, parse_constant=str) == {
        "a": {"b": "NaN"},
        "c": ["Infinity"],
    }
    assert seen == [[("b", "NaN")], [("a", {"b": "NaN"}), ("c", ["Infinity"])]]


@pytest.mark.parametrize("value", [{"a": object()}, [math.nan], {(1, 2): 3}, {"k": "\u2028<>"}])
def test_dumps_errors_and_escapes_are_jsons(value: Any) -> None:
    expected = _outcome(
        json.dumps, value, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    )
    assert repr(_outcome(jsonc.dumps_sorted_compact, value)) == repr(expected)


def test_importing_and_using_it_does_not_import_json() -> None:
    script = (
        "import sys; from orchestrator import jsonc; "
        "jsonc.loads('{\"a\": [1, 2.5, null]}'); jsonc.dumps_sorted_compact({'b': [1]}); "
        "jsonc.encode_basestring('x'); print('json' in sys.modules, 're' in sys.modules)"
    )
    out = run_python(script)
    assert out.stdout.split() == ["False", "False"]
