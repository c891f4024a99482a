"""KEP-2906 function catalogs: parse, validate and write one canonical form.

One parser reads both shapes the KEP shows: ``kind: Catalog`` and ``kind: KRMFunctionCatalog``
(``apiVersion: config.kubernetes.io/v1alpha1``), a function's kind as ``names.kind`` or a bare
``kind``, and its runtime per version (``versions[].runtime``) or once beside ``versions`` (the
KEP's minimal example), which then applies to every version that has none. It writes ONE
canonical form -- ``kind: Catalog``, ``names.kind``, runtime per version, a fixed key order,
free-form maps (metadata, openAPIV3Schema) with sorted keys, optional fields omitted when empty --
so parse -> canonical_bytes -> parse is the identity and ``Catalog.digest`` is the sha256 of those
bytes. The writer is this module's own (block YAML, JSON-style double quotes where a plain scalar
could be misread by a YAML 1.1 or 1.2 reader), so digests do not depend on PyYAML's emitter.

Validation has two layers:

- ``orchestrator/data/catalog.schema.json``, derived from the KEP's "Full OpenAPI schema" and
  adapted to both shapes. It is compiled once into a small predicate (``_compile``) for the fast
  yes/no; when that says no, the ``jsonschema`` library (imported only then) lists every error.
  A property test keeps the two in agreement. (jsonschema alone takes ~80 ms on a 200-function
  catalog; the compiled predicate a few.)
- The KEP's rules that a schema cannot say well: an exec platform needs ``sha256`` (64 hex; also
  in the schema); a container image whose tag is a semantic version (``:v1.2.3``) needs
  ``sha256`` or an ``@sha256:`` digest, and the two must agree; ``names.kind`` and ``kind`` must
  agree; exec ``bin`` must be a relative path without ``..``; one (os, arch) per exec runtime;
  and a (group, kind, version) defined twice is an error with ``strict=True`` (the default),
  while ``strict=False`` keeps both and :meth:`Catalog.find` returns the first, as the KEP's
  resolution order says. Note that the KEP's own story examples (``image: ...:v1.0.0`` without
  ``sha256``) fail the semver rule: the rule is the KEP's, the examples predate it.

Leniency, where the KEP's own examples are loose and real catalogs are too: only ``group``, a
kind, ``versions[].name`` and a runtime are required (``description``, ``publisher``, ``schema``,
``idempotent``, ``usage``, ``examples``, ``license`` are optional); ``license`` is any non-empty
string, not the KEP's one-value enum; sha256 may carry a ``sha256:`` prefix and upper-case hex
(the canonical form is 64 lower-case hex); story 7's ``requireFilesystem`` reads as
``requireStorageMount``; exec ``os``/``arch`` accept a few more Go platform names than the KEP's
enum; an empty ``krmFunctions`` list is allowed (a registry catalog starts empty). Extension: a
``starlark`` runtime is a URI string (the KEP's example) or ``{uri | path, sha256}``. Unknown
fields are errors everywhere except in ``metadata`` and ``openAPIV3Schema``: a typo must not
silently drop a runtime setting.

Hostile input: documents over ``max_bytes`` (default 5 MiB) are refused before parsing; input
must be UTF-8; exactly one YAML document; the document must be a mapping. YAML aliases are
refused outright (anchors alone are harmless): the canonical form has none, a catalog is a trust
document read by people, and refusing them removes alias-expansion ("billion laughs") attacks
with no budget to tune. Nesting deeper than 100 levels is refused (libyaml's composer would
overflow the C stack, so this module reads libyaml's events instead). Scalars follow YAML 1.2's
core schema (``on``/``yes``/``no`` and timestamps stay strings); mapping keys must be strings and
must not repeat; tags other than the core ones are refused.

Errors: :class:`CatalogError` carries every :class:`Problem`; each names the path in the form
``spec.krmFunctions[2].versions[0].runtime.exec.platforms[0].sha256``, or, for errors found while
reading the YAML text, the 1-based line and column. Document-level problems (size, empty, not a
mapping) have an empty path and no line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from orchestrator.errors import ValidationError

__all__ = [
    "API_VERSION",
    "DEFAULT_MAX_BYTES",
    "KINDS",
    "MAX_DEPTH",
    "SCHEMA_PATH",
    "Catalog",
    "CatalogError",
    "FunctionDefinition",
    "FunctionVersion",
    "Problem",
    "dump_canonical",
    "parse_catalog",
    "schema_problems",
]

API_VERSION = "config.kubernetes.io/v1alpha1"
KINDS = ("Catalog", "KRMFunctionCatalog")
DEFAULT_MAX_BYTES = 5 * 1024 * 1024
MAX_DEPTH = 100
MAX_PROBLEMS = 1000  # schema errors listed at most, for one document
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "data", "catalog.schema.json")


# ----------------------------------------------------------------------------- errors


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a catalog: where (path, or line/column) and what."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.path:
            return f"{self.path}: {self.message}"
        if self.line is not None:
            return f"line {self.line}, column {self.column}: {self.message}"
        return self.message


class CatalogError(ValidationError):
    """A catalog document is unreadable or invalid; ``problems`` lists every reason."""

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None):
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems), file=source)

    def __str__(self) -> str:
        # One problem per line, exactly; the file is in .file for callers that want to show it.
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (self.problems, self.file))


def _rebuild_error(problems: list[Problem], source: str | None) -> CatalogError:
    return CatalogError(problems, source=source)


def _show(value: Any) -> str:
    """How a value is named in a message: strings quoted, everything else by its type."""
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _join_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        key_text = json.dumps(key, ensure_ascii=False)
        return f"{path}[{key_text}]"
    return f"{path}.{key}" if path else key


# ----------------------------------------------------------------------------- reading YAML


class _CatalogLoader(yaml.CSafeLoader):
    """libyaml's parser; the catalog reader consumes its events and resolves scalars itself."""


_INT_DEC = re.compile(r"[-+]?[0-9]+\Z")
_INT_OCT = re.compile(r"0o[0-7]+\Z")
_INT_HEX = re.compile(r"0x[0-9a-fA-F]+\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)\Z")
_NULLS = frozenset({"~", "null", "Null", "NULL"})
_TRUES = frozenset({"true", "True", "TRUE"})
_FALSES = frozenset({"false", "False", "FALSE"})
_SPECIAL_FIRST = frozenset("-+.0123456789~nNtTfF")
_NOT_STRING = object()

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + "str", _TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"}


def _resolve_plain(value: str) -> Any:
    """YAML 1.2 core schema: the type of an untagged plain scalar."""
    if not value:
        return None
    if value[0] not in _SPECIAL_FIRST:
        return value
    if value in _NULLS:
        return None
    if value in _TRUES:
        return True
    if value in _FALSES:
        return False
    if _INT_DEC.match(value):
        return int(value)
    if _INT_OCT.match(value):
        return int(value[2:], 8)
    if _INT_HEX.match(value):
        return int(value[2:], 16)
    if _FLOAT.match(value):
        return float(value)
    if _INF.match(value):
        return -math.inf if value[0] == "-" else math.inf
    if _NAN.match(value):
        return math.nan
    return value


def _tagged_scalar(tag: str, value: str) -> Any:
    """An explicitly tagged core scalar (``!!int 3``); _NOT_STRING when it is not one."""
    if tag == _TAG + "str":
        return value
    resolved = _resolve_plain(value)
    kind = tag[len(_TAG) :]
    if kind == "null" and resolved is None:
        return None
    if kind == "bool" and isinstance(resolved, bool):
        return resolved
    if kind == "int" and type(resolved) is int:
        return resolved
    if kind == "float" and isinstance(resolved, (int, float)) and not isinstance(resolved, bool):
        return float(resolved)
    return _NOT_STRING


class _YamlProblem(Exception):
    def __init__(self, message: str, mark: Any):
        self.message = message
        self.mark = mark


def _read_events(loader: _CatalogLoader) -> Any:
    """Build plain Python data from libyaml's events (no composer: it recurses in C)."""
    get = loader.get_event
    get()  # StreamStartEvent
    # Dispatched on ``kind = type(event)`` below (one type() per node), which mypy cannot narrow.
    event: Any = get()
    if type(event) is StreamEndEvent:
        return None
    no_key = _NOT_STRING
    root: Any = None
    # The container being filled, whether it is a list, and a mapping's pending key; the
    # enclosing ones wait on the stack. Locals, not frames: this loop runs once per YAML node.
    container: Any = None
    is_list = False
    key: Any = no_key
    stack: list[tuple[Any, bool, Any]] = []
    special = _SPECIAL_FIRST
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:
            value = event.value
            tag = event.tag
            if tag is None:
                if event.implicit[0] and (not value or value[0] in special):
                    try:
                        value = _resolve_plain(value)
                    except ValueError:  # int() refuses more than sys.get_int_max_str_digits()
                        raise _YamlProblem("number too long to read", event.start_mark) from None
            elif tag in _SCALAR_TAGS:
                try:
                    value = _tagged_scalar(tag, value)
                except ValueError:
                    raise _YamlProblem("number too long to read", event.start_mark) from None
                if value is _NOT_STRING:
                    raise _YamlProblem(
                        f"{event.value!r} is not a valid !!{tag[len(_TAG) :]}", event.start_mark
                    )
            elif tag != "!":
                raise _YamlProblem(f"unsupported YAML tag {tag}", event.start_mark)
            if is_list:
                container.append(value)
            elif container is None:
                root = value
            elif key is no_key:
                if type(value) is not str:
                    raise _YamlProblem(
                        f"mapping keys must be strings, found {event.value!r} (quote it)",
                        event.start_mark,
                    )
                if value in container:
                    raise _YamlProblem(f"duplicate key {value!r}", event.start_mark)
                key = value
            else:
                container[key] = value
                key = no_key
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            tag = event.tag
            mapping = kind is MappingStartEvent
            if (
                tag is not None
                and tag != "!"
                and tag != (_TAG + "map" if mapping else _TAG + "seq")
            ):
                raise _YamlProblem(f"unsupported YAML tag {tag}", event.start_mark)
            if len(stack) >= MAX_DEPTH:
                raise _YamlProblem(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
            new: Any = {} if mapping else []
            if is_list:
                container.append(new)
            elif container is None:
                root = new
            elif key is no_key:
                raise _YamlProblem(
                    "mapping keys must be strings, found a mapping or list (quote it)",
                    event.start_mark,
                )
            else:
                container[key] = new
            stack.append((container, is_list, no_key))
            container, is_list, key = new, not mapping, no_key
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            container, is_list, key = stack.pop()
        elif kind is AliasEvent:
            raise _YamlProblem(
                f"YAML aliases are not allowed in a catalog (*{event.anchor})", event.start_mark
            )
        elif kind is DocumentEndEvent:
            break
        else:  # pragma: no cover - libyaml emits nothing else inside a document
            raise _YamlProblem(f"unexpected YAML event {kind.__name__}", event.start_mark)

    event = get()
    if type(event) is not StreamEndEvent:
        raise _YamlProblem(
            "a catalog is one YAML document, but another document starts here", event.start_mark
        )
    return root


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def _load_yaml(data: bytes) -> Any:
    """Parse one UTF-8 YAML document into plain data, or raise CatalogError."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _line_column(data, exc.start)
        byte = data[exc.start]
        raise CatalogError(
            [
                Problem(
                    "",
                    f"not valid UTF-8 (byte 0x{byte:02x}); a catalog must be UTF-8",
                    line,
                    column,
                )
            ]
        ) from None
    loader = _CatalogLoader(data)
    try:
        return _read_events(loader)
    except _YamlProblem as exc:
        mark = exc.mark
        raise CatalogError([Problem("", exc.message, mark.line + 1, mark.column + 1)]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        message = exc.problem or "invalid YAML"
        if exc.context:
            cm = exc.context_mark
            where = f" at line {cm.line + 1}, column {cm.column + 1}" if cm is not None else ""
            message = f"{message} ({exc.context}{where})"
        at: tuple[int | None, int | None] = (None, None)
        if mark is not None:
            at = (mark.line + 1, mark.column + 1)
        raise CatalogError([Problem("", message, *at)]) from None
    except yaml.reader.ReaderError as exc:
        line, column = _line_column(data, exc.position)
        message = f"character #x{exc.character:04x} is not allowed: {exc.reason}"
        raise CatalogError([Problem("", message, line, column)]) from None
    except yaml.YAMLError as exc:  # pragma: no cover - libyaml reports the above kinds
        raise CatalogError([Problem("", f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()


# ----------------------------------------------------------------------------- schema

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "$defs", "title", "description", "default", "x-errors"}
)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int, float),
}


def _type_check(names: list[str]) -> Callable[[Any], bool]:
    """isinstance for JSON types: booleans are not numbers, 1.0 is an integer."""
    pytypes = tuple(t for n in names for t in _JSON_TYPES[n])
    numeric = "number" in names or "integer" in names
    if not numeric:
        return lambda x: isinstance(x, pytypes)
    allow_bool = "boolean" in names
    allow_float = "number" in names

    def check(x: Any) -> bool:
        if isinstance(x, bool):
            return allow_bool
        if isinstance(x, float) and not allow_float:
            return x.is_integer()
        return isinstance(x, pytypes)

    return check


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _all(checks: list[Callable[[Any], bool]]) -> Callable[[Any], bool]:
    if len(checks) == 1:
        return checks[0]

    def check(x: Any) -> bool:
        for c in checks:  # noqa: SIM110 - a plain loop is faster than all() with a generator
            if not c(x):
                return False
        return True

    return check


_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda x, b: x >= b,
    "maximum": lambda x, b: x <= b,
    "exclusiveMinimum": lambda x, b: x > b,
    "exclusiveMaximum": lambda x, b: x < b,
}


def _bound(compare: Callable[[Any, Any], bool], limit: Any) -> Callable[[Any], bool]:
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise TypeError(f"a numeric bound must be a number, got {limit!r}")

    def check(x: Any) -> bool:
        return isinstance(x, bool) or not isinstance(x, (int, float)) or compare(x, limit)

    return check


def schema_predicate(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """A fast yes/no check for a JSON Schema using the keywords below (NotImplementedError for
    others); the ``jsonschema`` library stays the one that explains a no."""
    return _compile(schema, schema, {})


def _compile(node: Any, root: dict[str, Any], refs: dict[str, Any]) -> Callable[[Any], bool]:
    """Compile the subset of JSON Schema that catalog.schema.json uses into a predicate."""
    if node is True:
        return lambda x: True
    if node is False:
        return lambda x: False
    checks: list[Callable[[Any], bool]] = []
    unknown = set(node) - _ANNOTATIONS - {
        "type", "properties", "required", "additionalProperties", "minProperties", "items",
        "minItems", "minLength", "pattern", "enum", "const", "$ref", "anyOf", "oneOf", "not",
        "if", "then", "else",
        # used by functionConfig schemas (orchestrator.functions.schema); "format" is an
        # annotation only, as in jsonschema without a format checker
        "maxItems", "maxLength", "maxProperties", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "allOf", "format",
    }  # fmt: skip
    if unknown:
        raise NotImplementedError(f"catalog schema keyword(s) not supported: {sorted(unknown)}")
    if "type" in node:
        names = [node["type"]] if isinstance(node["type"], str) else node["type"]
        checks.append(_type_check(names))
    if "enum" in node:
        options = node["enum"]
        checks.append(lambda x: any(_json_equal(x, o) for o in options))
    if "const" in node:
        const = node["const"]
        checks.append(lambda x: _json_equal(x, const))
    if "minLength" in node:
        n = node["minLength"]
        checks.append(lambda x: not isinstance(x, str) or len(x) >= n)
    if "pattern" in node:
        search = re.compile(node["pattern"]).search
        checks.append(lambda x: not isinstance(x, str) or search(x) is not None)
    if "minItems" in node:
        n = node["minItems"]
        checks.append(lambda x: not isinstance(x, list) or len(x) >= n)
    if "maxItems" in node:
        n_max_items = node["maxItems"]
        checks.append(lambda x: not isinstance(x, list) or len(x) <= n_max_items)
    if "maxLength" in node:
        n_max_len = node["maxLength"]
        checks.append(lambda x: not isinstance(x, str) or len(x) <= n_max_len)
    if "maxProperties" in node:
        n_max_props = node["maxProperties"]
        checks.append(lambda x: not isinstance(x, dict) or len(x) <= n_max_props)
    for word, compare in _BOUNDS.items():
        if word in node:
            checks.append(_bound(compare, node[word]))
    if "allOf" in node:
        checks.extend(_compile(s, root, refs) for s in node["allOf"])
    if "items" in node:
        item = _compile(node["items"], root, refs)

        def items(x: Any) -> bool:
            if isinstance(x, list):
                for i in x:
                    if not item(i):
                        return False
            return True

        checks.append(items)
    if {"properties", "required", "additionalProperties", "minProperties"} & set(node):
        props = {k: _compile(v, root, refs) for k, v in node.get("properties", {}).items()}
        required = tuple(node.get("required", ()))
        extra = node.get("additionalProperties", True)
        extra_check = None if extra is False else _compile(extra, root, refs)
        min_props = node.get("minProperties", 0)

        def obj(x: Any) -> bool:
            if not isinstance(x, dict):
                return True
            if len(x) < min_props:
                return False
            for k in required:
                if k not in x:
                    return False
            for k, v in x.items():
                p = props.get(k)
                if p is not None:
                    if not p(v):
                        return False
                elif extra_check is None or not extra_check(v):
                    return False
            return True

        checks.append(obj)
    if "$ref" in node:
        ref = node["$ref"]
        if ref not in refs:
            refs[ref] = None  # a placeholder first, so recursive references terminate
            target: Any = root
            for part in ref.removeprefix("#/").split("/"):
                target = target[part]
            refs[ref] = _compile(target, root, refs)
        checks.append(lambda x: refs[ref](x))
    if "anyOf" in node:
        subs = [_compile(s, root, refs) for s in node["anyOf"]]
        checks.append(lambda x: any(s(x) for s in subs))
    if "oneOf" in node:
        subs = [_compile(s, root, refs) for s in node["oneOf"]]
        checks.append(lambda x: sum(1 for s in subs if s(x)) == 1)
    if "not" in node:
        negated = _compile(node["not"], root, refs)
        checks.append(lambda x: not negated(x))
    if "if" in node:
        cond = _compile(node["if"], root, refs)
        then = _compile(node.get("then", True), root, refs)
        other = _compile(node.get("else", True), root, refs)
        checks.append(lambda x: then(x) if cond(x) else other(x))
    if not checks:
        return lambda x: True
    return _all(checks)


_schema_cache: dict[str, Any] = {}


def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _schema() -> dict[str, Any]:
    if "schema" not in _schema_cache:
        _schema_cache["schema"] = _read_json(SCHEMA_PATH)
    schema: dict[str, Any] = _schema_cache["schema"]
    return schema


def _schema_accepts(doc: Any) -> bool:
    """Fast yes/no from the compiled schema."""
    check = _schema_cache.get("check")
    if check is None:
        schema = _schema()
        check = _schema_cache["check"] = _compile(schema, schema, {})
    return check(doc)


_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
    "null": "null",
}


def schema_problems(doc: Any) -> list[Problem]:
    """Every way ``doc`` breaks catalog.schema.json, according to the jsonschema library."""
    import jsonschema  # lazily: ~70 ms to import, needed only to explain a rejection

    validator = _schema_cache.get("validator")
    if validator is None:
        validator = _schema_cache["validator"] = jsonschema.Draft202012Validator(_schema())
    problems: list[tuple[tuple[Any, ...], Problem]] = []
    seen_required: set[tuple[Any, ...]] = set()

    def add(segments: tuple[Any, ...], message: str) -> None:
        path = ""
        for s in segments:
            path = _join_path(path, s)
        problems.append((segments, Problem(path, message)))

    shown = 0
    for error in validator.iter_errors(doc):
        shown += 1
        if shown > MAX_PROBLEMS:
            # A hostile 5 MiB document can hold millions of errors; nobody reads past the first.
            problems.append(((), Problem("", f"more problems not shown (first {MAX_PROBLEMS})")))
            break
        segments = tuple(error.absolute_path)
        custom = error.schema.get("x-errors", {}) if isinstance(error.schema, dict) else {}
        kind = error.validator
        instance = error.instance
        if kind == "required":
            if (segments, id(error.schema)) in seen_required:
                continue
            seen_required.add((segments, id(error.schema)))
            for name in error.validator_value:
                if name not in instance:
                    add((*segments, name), custom.get("required", "required field is missing"))
        elif kind == "additionalProperties":
            allowed = list(error.schema.get("properties", {}))
            for name in instance:
                if name not in allowed:
                    add((*segments, name), _unknown_field(name, allowed))
        elif kind == "type":
            expected = error.validator_value
            names = [expected] if isinstance(expected, str) else expected
            wanted = " or ".join(_TYPE_NAMES[n] for n in names)
            add(segments, f"must be {wanted}, got {_show(instance)}")
        elif kind == "enum":
            options = ", ".join(str(o) for o in error.validator_value)
            add(segments, f"must be one of {options}; got {_show(instance)}")
        elif kind == "const":
            add(segments, f"must be {error.validator_value}, got {_show(instance)}")
        elif kind == "minLength" and error.validator_value == 1:
            add(segments, custom.get(kind, "must not be empty"))
        elif kind == "anyOf" and isinstance(custom.get("anyOf"), dict):
            spec = custom["anyOf"]
            add((*segments, *spec["field"].split(".")), spec["message"])
        elif kind in custom:
            add(segments, custom[kind])
        else:
            add(segments, error.message)
    # Sorted by path (documents order lists by index), the "more problems" note last.
    problems.sort(key=lambda item: (not item[0], tuple((isinstance(s, str), s) for s in item[0])))
    return list(dict.fromkeys(problem for _, problem in problems))


def _unknown_field(name: str, allowed: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field{hint}"


# ----------------------------------------------------------------------------- the model


def _sorted(value: Any) -> Any:
    """A deep copy of free-form data with mapping keys sorted (the canonical order)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _norm_sha(value: str) -> str:
    return value.lower().removeprefix("sha256:")


def _canonical_runtime(runtime: dict[str, Any]) -> dict[str, Any]:
    """A runtime in canonical shape and key order (idempotent)."""
    out: dict[str, Any] = {}
    container = runtime.get("container")
    if container is not None:
        c: dict[str, Any] = {"image": container["image"]}
        if container.get("sha256"):
            c["sha256"] = _norm_sha(container["sha256"])
        if container.get("requireNetwork"):
            c["requireNetwork"] = True
        if container.get("requireStorageMount") or container.get("requireFilesystem"):
            c["requireStorageMount"] = True
        out["container"] = c
    exec_ = runtime.get("exec")
    if exec_ is not None:
        out["exec"] = {
            "platforms": [
                {
                    "bin": p["bin"],
                    "os": p["os"],
                    "arch": p["arch"],
                    "uri": p["uri"],
                    "sha256": _norm_sha(p["sha256"]),
                }
                for p in exec_["platforms"]
            ]
        }
    starlark = runtime.get("starlark")
    if starlark is not None:
        if isinstance(starlark, str):
            out["starlark"] = {"uri": starlark}
        else:
            s = {k: starlark[k] for k in ("uri", "path") if k in starlark}
            if starlark.get("sha256"):
                s["sha256"] = _norm_sha(starlark["sha256"])
            out["starlark"] = s
    return out


@dataclass(kw_only=True, slots=True)
class FunctionVersion:
    """One version of a catalog function: its runtime and documentation."""

    name: str
    runtime: dict[str, Any]
    schema: dict[str, Any] | None = None
    idempotent: bool | None = None
    usage: str | None = None
    examples: list[str] = field(default_factory=list)
    license: str | None = None
    maintainers: list[str] = field(default_factory=list)

    @property
    def runtime_kinds(self) -> list[str]:
        """The runtimes this version offers (container, exec, starlark), sorted."""
        return sorted(self.runtime)

    @property
    def requires_network(self) -> bool:
        """Whether the container runtime asks for network access."""
        return bool(self.runtime.get("container", {}).get("requireNetwork"))

    @property
    def requires_storage_mount(self) -> bool:
        """Whether the container runtime asks for a storage mount."""
        container = self.runtime.get("container", {})
        return bool(container.get("requireStorageMount") or container.get("requireFilesystem"))

    def to_dict(self) -> dict[str, Any]:
        """This version in canonical form."""
        out: dict[str, Any] = {"name": self.name}
        if self.schema is not None:
            out["schema"] = _sorted(self.schema)
        if self.idempotent is not None:
            out["idempotent"] = self.idempotent
        out["runtime"] = _canonical_runtime(self.runtime)
        if self.usage is not None:
            out["usage"] = self.usage
        if self.examples:
            out["examples"] = list(self.examples)
        if self.license is not None:
            out["license"] = self.license
        if self.maintainers:
            out["maintainers"] = list(self.maintainers)
        return out


@dataclass(kw_only=True, slots=True)
class FunctionDefinition:
    """A function of a catalog (KRMFunctionDefinitionSpec): group, kind and versions."""

    group: str
    kind: str
    versions: list[FunctionVersion] = field(default_factory=list)
    description: str | None = None
    publisher: str | None = None
    home: str | None = None
    maintainers: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """This function in canonical form."""
        out: dict[str, Any] = {"group": self.group, "names": {"kind": self.kind}}
        for key in ("description", "publisher", "home"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.maintainers:
            out["maintainers"] = list(self.maintainers)
        if self.tags:
            out["tags"] = list(self.tags)
        out["versions"] = [v.to_dict() for v in self.versions]
        return out


@dataclass(kw_only=True, slots=True)
class Catalog:
    """A parsed, validated catalog; ``canonical_bytes()`` is what gets served and hashed."""

    metadata: dict[str, Any]
    functions: list[FunctionDefinition] = field(default_factory=list)

    @property
    def name(self) -> str:
        """metadata.name."""
        name: str = self.metadata["name"]
        return name

    def to_dict(self) -> dict[str, Any]:
        """The canonical form as plain data (a fresh copy)."""
        metadata = {"name": self.metadata["name"]}
        metadata.update(_sorted({k: v for k, v in self.metadata.items() if k != "name"}))
        return {
            "apiVersion": API_VERSION,
            "kind": "Catalog",
            "metadata": metadata,
            "spec": {"krmFunctions": [f.to_dict() for f in self.functions]},
        }

    def canonical_bytes(self) -> bytes:
        """The canonical YAML text, UTF-8."""
        return dump_canonical(self.to_dict()).encode("utf-8")

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the canonical bytes."""
        return "sha256:" + hashlib.sha256(self.canonical_bytes()).hexdigest()

    def find(
        self, group: str, kind: str, version: str
    ) -> tuple[FunctionDefinition, FunctionVersion] | None:
        """The first definition of group/version kind, as KEP-2906 resolves it, or None."""
        for function in self.functions:
            if function.group == group and function.kind == kind:
                for v in function.versions:
                    if v.name == version:
                        return function, v
        return None

    @classmethod
    def from_dict(cls, data: Any, *, strict: bool = True, source: str | None = None) -> Catalog:
        """Validate plain data in either KEP shape and build a Catalog (raises CatalogError)."""
        problem = _not_plain_data(data, "")
        if problem is not None:
            raise CatalogError([problem], source=source)
        return _build(data, strict=strict, source=source)


# ----------------------------------------------------------------------------- validation


def _not_plain_data(value: Any, path: str) -> Problem | None:
    """The first place where ``value`` is not YAML/JSON data (string keys, plain scalars)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return Problem(path, f"mapping keys must be strings, found {_show(key)}")
            problem = _not_plain_data(item, _join_path(path, key))
            if problem is not None:
                return problem
    elif isinstance(value, list):
        for i, item in enumerate(value):
            problem = _not_plain_data(item, _join_path(path, i))
            if problem is not None:
                return problem
    elif value is not None and not isinstance(value, (str, int, float)):
        return Problem(path, f"must be YAML data, got {_show(value)}")
    return None


_SEMVER_TAG = re.compile(
    r"v?(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)"
    r"(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
)
_OCI_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _check_container(container: dict[str, Any], path: str, problems: list[Problem]) -> None:
    image: str = container["image"]
    sha = container.get("sha256")
    reference, at, digest = image.partition("@")
    if at and not _OCI_DIGEST.fullmatch(digest):
        problems.append(
            Problem(
                f"{path}.image",
                "the digest after '@' must be sha256: and 64 lower-case hexadecimal characters",
            )
        )
        return
    if at and sha and _norm_sha(sha) != digest.removeprefix("sha256:"):
        problems.append(Problem(f"{path}.sha256", f"does not match the digest in image ({digest})"))
    last = reference.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if tag and not at and not sha and _SEMVER_TAG.fullmatch(tag):
        problems.append(
            Problem(
                f"{path}.sha256",
                f"required: the image tag {tag!r} is a semantic version, so the image must be "
                "pinned (sha256, or @sha256:<digest> in image)",
            )
        )


def _unsafe_relative(path: str) -> bool:
    parts = re.split(r"[/\\]", path)
    return path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path) is not None or ".." in parts


def _check_runtime(runtime: dict[str, Any], path: str, problems: list[Problem]) -> None:
    if "container" in runtime:
        _check_container(runtime["container"], f"{path}.container", problems)
    if "exec" in runtime:
        seen: dict[tuple[str, str], int] = {}
        for i, platform in enumerate(runtime["exec"]["platforms"]):
            ppath = f"{path}.exec.platforms[{i}]"
            if _unsafe_relative(platform["bin"]):
                problems.append(
                    Problem(
                        f"{ppath}.bin",
                        "must be a relative path inside the download, without '..'",
                    )
                )
            key = (platform["os"], platform["arch"])
            if key in seen:
                problems.append(
                    Problem(
                        ppath,
                        f"duplicate platform {key[0]}/{key[1]} "
                        f"(first at {path}.exec.platforms[{seen[key]}])",
                    )
                )
            else:
                seen[key] = i


def _build(doc: Any, *, strict: bool, source: str | None) -> Catalog:
    """Validate a document (either shape) and build the canonical Catalog."""
    if doc is None:
        raise CatalogError([Problem("", "the catalog is empty")], source=source)
    if not isinstance(doc, dict):
        raise CatalogError(
            [Problem("", f"a catalog must be a mapping, got {_show(doc)}")], source=source
        )
    header: list[Problem] = []
    if doc.get("apiVersion") != API_VERSION:
        got = f", got {_show(doc['apiVersion'])}" if "apiVersion" in doc else " (missing)"
        header.append(Problem("apiVersion", f"must be {API_VERSION}{got}"))
    if doc.get("kind") not in KINDS:
        got = f", got {_show(doc['kind'])}" if "kind" in doc else " (missing)"
        header.append(Problem("kind", f"must be Catalog or KRMFunctionCatalog{got}"))
    if header:
        # Not a catalog at all: the rest of the document would only add noise.
        raise CatalogError(header, source=source)
    if not _schema_accepts(doc):
        problems = schema_problems(doc)
        if problems:
            raise CatalogError(problems, source=source)

    problems = []
    functions: list[FunctionDefinition] = []
    first: dict[tuple[str, str, str], str] = {}
    for i, entry in enumerate(doc["spec"]["krmFunctions"]):
        fpath = f"spec.krmFunctions[{i}]"
        names_kind = entry.get("names", {}).get("kind")
        bare_kind = entry.get("kind")
        if names_kind is not None and bare_kind is not None and names_kind != bare_kind:
            problems.append(
                Problem(f"{fpath}.kind", f"{bare_kind!r} conflicts with names.kind {names_kind!r}")
            )
        kind = names_kind if names_kind is not None else bare_kind
        shared = entry.get("runtime")
        if shared is not None:
            _check_runtime(shared, f"{fpath}.runtime", problems)
            shared = _canonical_runtime(shared)
        versions = []
        for j, v in enumerate(entry["versions"]):
            vpath = f"{fpath}.versions[{j}]"
            if "runtime" in v:
                _check_runtime(v["runtime"], f"{vpath}.runtime", problems)
                runtime = _canonical_runtime(v["runtime"])
            else:
                runtime = _sorted(shared)  # a copy per version: editing one must not edit all
            key = (entry["group"], kind, v["name"])
            if key in first:
                if strict:
                    problems.append(
                        Problem(
                            f"{vpath}.name",
                            f"duplicate function {key[0]}/{key[2]} {key[1]} "
                            f"(first defined at {first[key]})",
                        )
                    )
            else:
                first[key] = vpath
            schema = v.get("schema")
            versions.append(
                FunctionVersion(
                    name=v["name"],
                    runtime=runtime,
                    schema=_sorted(schema) if schema is not None else None,
                    idempotent=v.get("idempotent"),
                    usage=v.get("usage"),
                    examples=list(v.get("examples", ())),
                    license=v.get("license"),
                    maintainers=list(v.get("maintainers", ())),
                )
            )
        functions.append(
            FunctionDefinition(
                group=entry["group"],
                kind=kind,
                versions=versions,
                description=entry.get("description"),
                publisher=entry.get("publisher"),
                home=entry.get("home"),
                maintainers=list(entry.get("maintainers", ())),
                tags=list(entry.get("tags", ())),
            )
        )
    if problems:
        raise CatalogError(problems, source=source)
    return Catalog(metadata=_sorted(doc["metadata"]), functions=functions)


def parse_catalog(
    data: bytes | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    strict: bool = True,
    source: str | None = None,
) -> Catalog:
    """Parse and validate a catalog document (either KEP shape); raises CatalogError."""
    if isinstance(data, str):
        try:
            data = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CatalogError(
                [Problem("", f"text cannot be encoded as UTF-8: {exc.reason}")], source=source
            ) from None
    if len(data) > max_bytes:
        raise CatalogError(
            [Problem("", f"catalog is {len(data)} bytes, over the limit of {max_bytes} bytes")],
            source=source,
        )
    try:
        doc = _load_yaml(data)
    except CatalogError as exc:
        exc.file = source
        raise
    return _build(doc, strict=strict, source=source)


# ----------------------------------------------------------------------------- writing YAML

# Plain (unquoted) only when every YAML 1.1 and 1.2 reader sees the same string: starts with a
# letter, no ": " or " #", no trailing ':' and not a 1.1 bool/null word such as yes, on, n.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./@+:=%?&~,'()-]*(?: [A-Za-z0-9_./@+:=%?&~,'()-]+)*\Z")
_PLAIN_WORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null"})
_ESCAPE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_MAX_SIMPLE_KEY = 1000  # libyaml refuses implicit keys over 1024 characters


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        if (
            _PLAIN.match(value)
            and ": " not in value
            and not value.endswith(":")
            and value.lower() not in _PLAIN_WORDS
        ):
            return value
        # JSON strings are YAML double-quoted scalars once YAML's non-printables are escaped too.
        quoted = json.dumps(value, ensure_ascii=False)
        return _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    raise TypeError(f"cannot write {type(value).__name__} in a catalog")


def _emit_value(value: Any, indent: int, head: str, out: list[str]) -> None:
    """Write ``head`` (e.g. 'key:' or '-') followed by value, block style."""
    if isinstance(value, dict) and value:
        out.append(head + "\n")
        _emit_map(value, indent, out)
    elif isinstance(value, list) and value:
        out.append(head + "\n")
        _emit_seq(value, indent, out)
    elif isinstance(value, dict):
        out.append(head + " {}\n")
    elif isinstance(value, list):
        out.append(head + " []\n")
    else:
        out.append(f"{head} {_scalar(value)}\n")


def _emit_map(mapping: dict[str, Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for key, value in mapping.items():
        key_text = _scalar(key)
        if len(key_text) > _MAX_SIMPLE_KEY:
            out.append(f"{pad}? {key_text}\n")
            _emit_value(value, indent + 2, f"{pad}:", out)
        else:
            _emit_value(value, indent + 2, f"{pad}{key_text}:", out)


def _emit_seq(items: list[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, dict) and item:
            start = len(out)
            _emit_map(item, indent + 2, out)
            out[start] = pad + "- " + out[start][indent + 2 :]
        else:
            _emit_value(item, indent + 2, f"{pad}-", out)


def dump_canonical(data: dict[str, Any]) -> str:
    """Block-style YAML for plain data, keys in the given order; the canonical catalog writer."""
    out: list[str] = []
    _emit_map(data, 0, out)
    return "".join(out)
