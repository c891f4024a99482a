"""functionConfig validation against the catalog's schema, before any function of a build runs.

A KEP-2906 function version may carry ``schema.openAPIV3Schema`` (a CRD-style structural
schema). :func:`precheck` walks the kustomization tree of a build (kustomization files and
plugin config files only: nothing is generated, transformed or run), resolves each function
config whose runtime comes from a catalog, and validates it with the ``jsonschema`` library
against :func:`to_json_schema` of that schema. Every problem of every config is collected and
raised as one :class:`FunctionConfigError`, with the file, the field path and the line (found
by re-parsing only the failing config's file with marks).

Opt-outs, each with a warning: ``--skip-schema`` (``FnOptions.skip_schema``) and, per function,
``skipSchema: [apiVersion/Kind | Kind, ...]`` in ``$XDG_CONFIG_HOME/krm/config.yaml``.
"""

from __future__ import annotations

import os

from orchestrator.functions.options import FnOptions, FunctionError
from orchestrator.functions.walk import Fields, Located
from orchestrator.lazyre import Pattern

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

JSON_SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
MAX_PROBLEMS = 200  # listed at most, for the whole build
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
# Fields every KRM object has; a functionConfig's schema need not list them.
_OBJECT_FIELDS = {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
}
_PLAIN_KEY = Pattern(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


class FunctionConfigError(FunctionError):
    """One or more functionConfigs break their catalog schema; nothing was run."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        count = len(problems)
        head = f"{count} functionConfig problem{'s' if count != 1 else ''}"
        lines = [f"{head} (schema check; no function was run; --skip-schema to bypass):"]
        lines += [f"  {p}" for p in problems[:MAX_PROBLEMS]]
        if count > MAX_PROBLEMS:
            lines.append(f"  ... and {count - MAX_PROBLEMS} more")
        super().__init__("\n".join(lines))


class Problem(Fields):
    """One way a functionConfig breaks its schema."""

    _fields = ("file", "line", "path", "message", "function")

    def __init__(
        self, file: str | None, line: int | None, path: str, message: str, function: str
    ) -> None:
        self.file = file
        self.line = line
        self.path = path
        self.message = message
        self.function = function

    def __str__(self) -> str:
        where = self.file or "<inline>"
        if self.line is not None:
            where += f":{self.line}"
        field_path = self.path or "(root)"
        return f"{where}: {field_path}: {self.message} [{self.function}]"


# ----------------------------------------------------------------------------- conversion


def to_json_schema(openapi: Any) -> dict[str, Any]:
    """A JSON Schema (2020-12) equivalent of a Kubernetes structural OpenAPI v3 schema.

    Handled: ``nullable``, ``x-kubernetes-int-or-string`` and ``format: int-or-string``,
    ``x-kubernetes-preserve-unknown-fields`` (else unknown fields of an object with
    ``properties`` are errors, as with ``kubectl --validate=strict``),
    ``x-kubernetes-embedded-resource``, ``int32``/``int64`` bounds, ``x-kubernetes-list-type:
    set``, OpenAPI's boolean ``exclusiveMinimum``/``exclusiveMaximum``. Other ``x-`` keys and
    CEL rules are ignored. The input is not modified.
    """
    import copy

    out: dict[str, Any] = _convert(
        copy.deepcopy(openapi) if isinstance(openapi, dict) else {}, root=True
    )
    out["$schema"] = JSON_SCHEMA_DRAFT
    return out


def _convert(node: Any, *, root: bool = False) -> Any:
    if not isinstance(node, dict):
        return node
    for key in ("properties", "patternProperties", "definitions", "$defs"):
        if isinstance(node.get(key), dict):
            node[key] = {k: _convert(v) for k, v in node[key].items()}
    for key in ("items", "additionalProperties", "not", "additionalItems"):
        if isinstance(node.get(key), dict):
            node[key] = _convert(node[key])
        elif isinstance(node.get(key), list):
            node[key] = [_convert(v) for v in node[key]]
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            node[key] = [_convert(v) for v in node[key]]
    int_or_string = node.pop("x-kubernetes-int-or-string", False) is True
    if node.get("format") == "int-or-string":
        int_or_string = True
        node.pop("format")
    if int_or_string:
        node.pop("type", None)
        node["anyOf"] = [*node.get("anyOf", []), {"type": "integer"}, {"type": "string"}]
    fmt = node.get("format")
    if node.get("type") == "integer" and fmt in ("int32", "int64"):
        low, high = _INT32 if fmt == "int32" else _INT64
        node["minimum"] = max(node.get("minimum", low), low)
        node["maximum"] = min(node.get("maximum", high), high)
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        # OpenAPI 3.0 (draft 4) spells these as booleans next to minimum/maximum.
        if isinstance(node.get(bound), bool) and node.pop(bound) and limit in node:
            node[bound] = node.pop(limit)
    preserve = node.pop("x-kubernetes-preserve-unknown-fields", False) is True
    embedded = node.pop("x-kubernetes-embedded-resource", False) is True
    if embedded:
        node.setdefault("type", "object")
    if embedded or root:
        props = node.setdefault("properties", {}) if (embedded or "properties" in node) else None
        if props is not None:
            for name, sub in _OBJECT_FIELDS.items():
                props.setdefault(name, dict(sub))
        if embedded:
            node.setdefault("required", [])
            node["required"] = sorted({*node["required"], "apiVersion", "kind"})
    if (
        "properties" in node
        and "additionalProperties" not in node
        and "patternProperties" not in node
        and not preserve
    ):
        node["additionalProperties"] = False
    if node.pop("x-kubernetes-list-type", None) == "set":
        node["uniqueItems"] = True
    if node.pop("nullable", False) is True:
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        elif "anyOf" in node:
            node["anyOf"] = [*node["anyOf"], {"type": "null"}]
        if isinstance(node.get("enum"), list) and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
    for key in [k for k in node if isinstance(k, str) and k.startswith("x-kubernetes-")]:
        node.pop(key)
    return node


def function_schema(version: Any) -> dict[str, Any] | None:
    """The JSON Schema of a catalog FunctionVersion's functionConfig, or None if it has none."""
    schema = getattr(version, "schema", None)
    openapi = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
    if not isinstance(openapi, dict):
        return None
    return to_json_schema(openapi)


# ----------------------------------------------------------------------------- validation


class _Compiled:
    """A catalog version's schema, compiled once per build."""

    def __init__(
        self,
        schema: dict[str, Any],
        # The fast yes/no (orchestrator.catalog.schema_predicate); None when the schema uses
        # a keyword it lacks. jsonschema (~100 ms to import, more to check a schema against
        # the metaschema) is loaded only to explain a no, or for those schemas.
        fast: Callable[[Any], bool] | None,
        slow: Any = None,  # the jsonschema validator, or the SchemaError of a broken schema
    ) -> None:
        self.schema = schema
        self.fast = fast
        self.slow = slow


def _compiled(version: Any, options: FnOptions) -> _Compiled | None:
    """The compiled schema of a catalog version (None: it has no schema)."""
    cache: dict[int, tuple[Any, _Compiled | None]] = options.__dict__.setdefault(
        "_schema_validators", {}
    )
    hit = cache.get(id(version))
    if hit is not None and hit[0] is version:
        return hit[1]
    schema = function_schema(version)
    compiled = None
    if schema is not None:
        from orchestrator.catalog import schema_predicate

        try:
            fast = schema_predicate(schema)
        except Exception:  # an unsupported keyword, or a broken schema: jsonschema decides
            fast = None
        compiled = _Compiled(schema, fast)
    cache[id(version)] = (version, compiled)
    return compiled


def _accepts(compiled: _Compiled, config: dict[str, Any]) -> bool:
    """The fast verdict: True only when the config surely satisfies the schema."""
    if compiled.fast is None:
        return False
    try:
        return compiled.fast(config)
    except Exception:  # e.g. a bound of the wrong type in the schema: let jsonschema say
        return False


def _validator(compiled: _Compiled) -> Any:
    """The jsonschema validator (or the SchemaError of a broken catalog schema)."""
    if compiled.slow is None:
        import jsonschema  # lazily: only to explain a failure

        schema = compiled.schema
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            compiled.slow = exc
        else:
            compiled.slow = cls(schema)
    return compiled.slow


def _fmt_path(segments: list[Any]) -> str:
    import json

    out = ""
    for seg in segments:
        if isinstance(seg, int):
            out += f"[{seg}]"
        elif _PLAIN_KEY.match(str(seg)):
            out += f".{seg}" if out else str(seg)
        else:
            out += f"[{json.dumps(str(seg))}]"
    return out


def _errors(validator: Any, config: dict[str, Any]) -> list[tuple[list[Any], str]]:
    """(path segments, message) for every way config breaks the schema."""
    out: list[tuple[list[Any], str]] = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.path))):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = error.schema.get("properties") or {}
            extra = [k for k in error.instance if k not in allowed]
            known = ", ".join(sorted(allowed)) or "none"
            for key in extra:
                out.append(([*path, key], f"unknown field (known fields: {known})"))
            if extra:
                continue
        out.append((path, error.message))
    return out


def _opt_outs() -> set[str]:
    """``skipSchema`` entries of $XDG_CONFIG_HOME/krm/config.yaml: apiVersion/Kind or Kind."""
    from orchestrator.functions.catalogs import config_path

    path = config_path()
    if not os.path.isfile(path):
        return set()
    from orchestrator import yamlio
    from orchestrator.functions.fetch import read_limited

    doc = yamlio.load(read_limited(path, 1 << 20), source=path, fold=False)
    value = doc.get("skipSchema") if isinstance(doc, dict) else None
    if value is None:
        return set()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FunctionError(f"{path}: skipSchema must be a list of 'apiVersion/Kind' or 'Kind'")
    return set(value)


def check_configs(
    items: list[tuple[Located, Any]], options: FnOptions, warnings: list[str]
) -> None:
    """Validate each (config, catalog Match) pair; raise one FunctionConfigError for all."""
    from orchestrator.functions.resolve import describe

    opt_outs = _opt_outs() if items else set()
    problems: list[Problem] = []
    for located, match in items:
        config = located.config
        name = f"{describe(config)}, schema from catalog {match.catalog.ref}"
        api_kind = f"{config.get('apiVersion')}/{config.get('kind')}"
        if api_kind in opt_outs or config.get("kind") in opt_outs:
            warnings.append(
                f"Warning: functionConfig schema check skipped for {api_kind} (skipSchema in "
                "the krm config file)"
            )
            continue
        compiled = _compiled(match.version, options)
        if compiled is None or _accepts(compiled, config):
            continue
        validator = _validator(compiled)
        if isinstance(validator, Exception):
            problems.append(
                Problem(
                    located.file,
                    None,
                    "",
                    f"the catalog's schema is invalid: {getattr(validator, 'message', validator)}",
                    name,
                )
            )
            continue
        errors = _errors(validator, config)
        if not errors:
            continue
        lines = _lines(located, [p for p, _ in errors])
        for (path, message), line in zip(errors, lines, strict=True):
            problems.append(Problem(located.file, line, _fmt_path(path), message, name))
    if problems:
        raise FunctionConfigError(problems)


# ----------------------------------------------------------------------------- line numbers


def _lines(located: Located, paths: list[list[Any]]) -> list[int | None]:
    """1-based line of each path in the config's file (re-parsed with marks; None if unknown)."""
    if not located.file or not os.path.isfile(located.file):
        return [None] * len(paths)
    import yaml

    from orchestrator import yamlio

    try:
        with open(located.file, "rb") as f:
            nodes = _compose(yamlio.decode(f.read()))
        if located.doc >= len(nodes):
            return [None] * len(paths)
        root = nodes[located.doc]
        if located.inline_doc is None:
            return [_line_of(root, [*located.prefix, *path]) for path in paths]
        # Inline YAML text: find the scalar, parse its text with marks, add its offset.
        scalar = _node_at(root, located.prefix)
        if not isinstance(scalar, yaml.ScalarNode):
            return [None] * len(paths)
        inner = _compose(scalar.value)
        if located.inline_doc >= len(inner):
            return [None] * len(paths)
        # A block scalar's text starts on the line after its ``|`` indicator.
        offset = scalar.start_mark.line + (1 if scalar.style in ("|", ">") else 0)
        return [offset + _line_of(inner[located.inline_doc], path) for path in paths]
    except (OSError, yaml.YAMLError):
        return [None] * len(paths)


def _compose(text: str) -> list[Any]:
    """The non-empty documents of a YAML stream as nodes (with marks)."""
    import yaml

    from orchestrator import yamlio

    loader = yamlio.Loader(text)
    try:
        nodes = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None and not (
                isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null")
            ):
                nodes.append(node)
        return nodes
    finally:
        loader.dispose()


def _node_at(node: Any, path: list[Any]) -> Any:
    import yaml

    for seg in path:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if getattr(k, "value", None) == seg), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
            node = node.value[seg]
        else:
            return None
    return node


def _line_of(node: Any, path: list[Any]) -> int:
    """Line of the deepest node along path (a key's line for a mapping entry)."""
    import yaml

    line: int = node.start_mark.line + 1
    for seg in path:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(seg):
                    line, node = key.start_mark.line + 1, value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int):
            if seg >= len(node.value):
                return line
            node = node.value[seg]
            line = node.start_mark.line + 1
        else:
            return line
    return line


# ----------------------------------------------------------------------------- the walk


def precheck(target: Any, found: list[tuple[Located, Any]]) -> None:
    """Validate every catalog-resolved functionConfig of a build before anything runs.

    ``target`` is the build's top ``orchestrator.build.Target`` (its ``build`` is used),
    ``found`` the functionConfigs of its tree (``orchestrator.functions.walk``). Resolution
    errors are left for the build to report where it meets them; only schema problems and
    revocations are raised here.
    """
    if not found:
        return
    from orchestrator.errors import KrmError
    from orchestrator.functions.resolve import resolve
    from orchestrator.functions.revocations import RevocationListError, RevokedError

    state = target.build
    ctx = state.functions()
    options = ctx.options
    checked: list[tuple[Located, Any]] = []
    for located, (k, loader, kfile) in found:
        config = located.config
        try:
            catalogs = ctx.catalogs(k.get("catalogs") or [], loader.root, kfile)
            resolved = resolve(config, catalogs, options)
            if resolved.catalog is None:
                continue  # an explicit runtime: no catalog schema applies
            group, _, version = str(config.get("apiVersion")).rpartition("/")
            match = catalogs.find(group, str(config.get("kind")), version)
        except (RevokedError, RevocationListError) as exc:
            # A revoked function anywhere in the build stops it before any function runs, not
            # only when the build reaches it (a function before it would already have run).
            if not exc.file:
                exc.file = kfile
            raise
        except KrmError:
            continue
        if match is not None:
            checked.append((located, match))
    if options.skip_schema:
        state.warnings.append(
            "Warning: --skip-schema: functionConfigs were not checked against their schemas"
        )
        return
    check_configs(checked, options, state.warnings)
    seen: set[str] = options.__dict__.setdefault("_schema_checked", set())
    seen.update(_key(located.config) for located, _ in found)


def _key(config: dict[str, Any]) -> str:
    import json

    return json.dumps(config, sort_keys=True, default=str)


def check_before_run(config: dict[str, Any], catalogs: Any, options: FnOptions) -> None:
    """The same check for one catalog-resolved config about to run, unless the precheck saw
    it (configs it cannot see: a Composition build, a plugin config built from a directory)."""
    if options.skip_schema or catalogs is None:
        return
    if _key(config) in options.__dict__.get("_schema_checked", ()):
        return
    group, _, version = str(config.get("apiVersion")).rpartition("/")
    match = catalogs.find(group, str(config.get("kind")), version)
    if match is not None:
        check_configs([(Located(config, None), match)], options, [])


# ----------------------------------------------------------------------------- krm fn schema


def schema_text(kind: str, catalogs: list[str], *, options: FnOptions) -> str:
    """``krm fn schema``: the JSON Schema of KIND (``Kind`` or ``apiVersion/Kind``), from the
    official catalog and then ``catalogs`` in order; the first definition that matches wins."""
    import json

    from orchestrator.functions.catalogs import CatalogSet, TrustConfig

    trust = TrustConfig.load(catalogs)
    found = CatalogSet.for_kustomization(
        [], kustomization_dir=os.getcwd(), trust=trust, options=options
    )
    if not found.refs:
        raise FunctionError("no catalog to search: pass --catalog REF (or set officialCatalog)")
    api_version, _, name = kind.rpartition("/")
    group, _, version = api_version.rpartition("/")
    for ref in found.refs:
        loaded = found.store.get(ref)
        for function in loaded.catalog.functions:
            if function.kind != name or (api_version and function.group != group):
                continue
            for v in function.versions:
                if api_version and v.name != version:
                    continue
                schema = function_schema(v)
                if schema is None:
                    raise FunctionError(
                        f"{function.group}/{v.name} {name} in catalog {ref} has no schema"
                    )
                gv = f"{function.group}/{v.name}" if function.group else v.name
                schema = {
                    "$schema": schema.pop("$schema"),
                    "title": f"{gv} {name}",
                    **schema,
                }
                return json.dumps(schema, indent=2, sort_keys=False) + "\n"
    searched = ", ".join(str(r) for r in found.refs)
    raise FunctionError(f"no catalog defines {kind}; catalogs searched: {searched}")
