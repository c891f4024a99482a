"""The PyYAML side of ``yamlio``: libyaml's C loader and emitter, set up like go-yaml's.

Imported only when needed (importing PyYAML costs a small build about a fifth of its time):
for a text ``yamlfast`` declines (anchors, tags, merge keys, duplicate keys, odd scalars,
syntax errors, whose messages come from here), and for a document ``yamlemit`` defers.
Scalars are typed by ``yamlscalar``'s functions, the ones ``yamlfast`` is checked against.
"""

from __future__ import annotations

import io

import yaml
from yaml._yaml import CEmitter

from orchestrator.errors import YamlError
from orchestrator.resource import ImplicitNullMap
from orchestrator.yamllimits import check_text
from orchestrator.yamlscalar import (
    _BOOL,
    _BOOLS,
    _DUMP_FLOAT,
    _FLOAT,
    _GO_INT,
    _INT,
    _MAP,
    _MERGE,
    _NULL,
    _NUM_START,
    _SEQ,
    _STR,
    _V2_BOOLS,
    _str_style,
    _typed,
    _v2_resolve,
    _v3_resolve,
    format_float,
    go_sorted_keys,
    goyaml_folded,
    scalar_text,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

# ----------------------------------------------------------------------------- reading


class Loader(yaml.CSafeLoader):
    """C-accelerated safe loader with go-yaml v3 (YAML 1.2 core) scalar resolution."""


Loader.resolve = _v3_resolve  # type: ignore[method-assign]


class Loader11(yaml.CSafeLoader):
    """go-yaml v2 (YAML 1.1) scalar typing: how kustomize reads kustomization files."""


Loader11.resolve = _v2_resolve  # type: ignore[method-assign]


def _mark(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def _construct(
    node: Any, bools: dict[str, bool] = _BOOLS, dup_ok: bool = False, fold: bool = False
) -> Any:
    """Plain Python data from a composed node (faster than PyYAML's constructor); ``fold``:
    folded scalars as kustomize's go-yaml round trip leaves them (``goyaml_folded``)."""
    cls = node.__class__
    if cls is yaml.ScalarNode:
        if fold and node.style == ">" and node.tag == _STR:
            return goyaml_folded(node.value)
        return _typed(node.tag, node.value, bools)
    if cls is yaml.SequenceNode:
        return [_construct(c, bools, dup_ok, fold) for c in node.value]
    result: dict[str, Any] = {}
    merged: list[Any] = []
    seen: dict[str, Any] = {}
    implicit: list[str] | None = None
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE:
            merged.append(value_node)
            continue
        if key_node.__class__ is not yaml.ScalarNode:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be scalars", key_node.start_mark
            )
        key = scalar_text(_typed(key_node.tag, key_node.value, bools))
        if key in seen and not dup_ok:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f'mapping key "{key_node.value}" already defined at line {seen[key].line + 1}',
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark
        value = result[key] = _construct(value_node, bools, dup_ok, fold)
        if value is None and not value_node.value:
            implicit = [key] if implicit is None else [*implicit, key]
            if node.flow_style:
                result[key] = ""
    if merged:
        base: dict[str, Any] = {}
        for m in merged:
            sources = m.value if m.__class__ is yaml.SequenceNode else [m]
            for src in reversed(sources):
                if src.__class__ is not yaml.MappingNode:
                    raise yaml.constructor.ConstructorError(
                        None, None, "merge value must be a mapping", src.start_mark
                    )
                for k, v in _construct(src, bools, dup_ok, fold).items():
                    base[k] = v
        base.update(result)
        result = base
    if implicit is not None:
        return ImplicitNullMap(result, frozenset(implicit))
    return result


def load_docs(v2: bool, text: str, source: str | None, *, fold: bool = False) -> list[Any]:
    """The non-empty documents of ``text``, with go-yaml v2's typing or else v3's (``fold``:
    folded scalars as kustomize's go-yaml round trip leaves them, ``goyaml_folded``)."""
    check_text(text, source=source)  # depth and alias budget, before the recursive composer
    loader = Loader11(text) if v2 else Loader(text)
    # go-yaml v2 (non-strict) lets a repeated key win over the earlier one.
    bools, dup_ok = (_V2_BOOLS, True) if v2 else (_BOOLS, False)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                doc = _construct(node, bools, dup_ok, fold)
                if doc is not None:
                    docs.append(doc)
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {_mark(exc)}", file=source) from None
    finally:
        loader.dispose()
    return docs


# ----------------------------------------------------------------------------- writing


def _node(v: Any) -> Any:
    """A YAML node for ``v`` styled like go-yaml v2 output."""
    t = v.__class__
    if t is str:
        return yaml.ScalarNode(_STR, v, style=_str_style(v))
    if t is dict:
        keys = v.keys()
        if not all(k.__class__ is str for k in keys):
            v = {scalar_text(k): x for k, x in v.items()}
            keys = v.keys()
        return yaml.MappingNode(
            _MAP,
            [
                (yaml.ScalarNode(_STR, k, style=_str_style(k)), _node(v[k]))
                for k in go_sorted_keys(keys)
            ],
            flow_style=False,
        )
    if t is list or t is tuple:
        return yaml.SequenceNode(_SEQ, [_node(x) for x in v], flow_style=False)
    if t is bool:
        return yaml.ScalarNode(_BOOL, "true" if v else "false")
    if t is int:
        return yaml.ScalarNode(_INT, str(v))
    if t is float:
        text = format_float(v)
        return yaml.ScalarNode(_INT if _GO_INT.match(text) else _FLOAT, text)
    if v is None:
        return yaml.ScalarNode(_NULL, "null")
    if isinstance(v, dict):
        return _node(dict(v))
    if isinstance(v, (list, tuple)):
        return _node(list(v))
    if isinstance(v, bool):
        return _node(bool(v))
    if isinstance(v, int):
        return _node(int(v))
    if isinstance(v, float):
        return _node(float(v))
    return _node(str(v))


def _dump_resolve(self: Any, kind: Any, value: Any, implicit: Any) -> str:
    """go-yaml v2 plain-scalar typing, so ints/bools/nulls are written without tags."""
    if kind is yaml.ScalarNode:
        if not implicit[0]:
            return _STR
        if value in ("null", "~", "Null", "NULL"):
            return _NULL
        if value == "true" or value == "false":
            return _BOOL
        if value and value[0] in _NUM_START:
            if _GO_INT.match(value):
                return _INT
            if _DUMP_FLOAT.match(value):
                return _FLOAT
        return _STR
    if kind is yaml.SequenceNode:
        return _SEQ
    return _MAP


class Dumper(CEmitter):
    """libyaml's emitter configured like go-yaml v2's (2-space indent, width 80, unicode)."""

    resolve = _dump_resolve

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """No path-dependent resolvers."""

    def ascend_resolver(self) -> None:
        """No path-dependent resolvers."""

    def __init__(self, stream: Any) -> None:
        CEmitter.__init__(
            self,
            stream,
            canonical=False,
            indent=2,
            width=80,
            allow_unicode=True,
            line_break="\n",
            encoding=None,
            explicit_start=False,
            explicit_end=False,
            version=None,
            tags=None,
        )


def libyaml_dump(obj: Any) -> str:
    """``yamlio.dump`` through PyYAML nodes and libyaml's emitter (the reference writer)."""
    stream = io.StringIO()
    emitter = Dumper(stream)
    emitter.open()
    emitter.serialize(_node(obj))
    emitter.close()
    out = stream.getvalue()
    if out.endswith("\n...\n"):
        out = out[:-4]
    return out
