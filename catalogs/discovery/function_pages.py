"""The function page: what a developer needs to use a function, in one place.

Selectors only (nothing is written). For a function of a catalog's latest version:

- a ready-to-paste functionConfig per version: one of the definition's ``examples`` (or a fenced
  YAML block of its ``usage``) that is a config of this kind and version, else one generated from
  ``schema.openAPIV3Schema`` (required fields, defaults, enums, formats and types turned into
  placeholders) and checked against that schema the way ``krm build`` checks it;
- the kustomization that uses it (``generators:`` for a function tagged ``generator``, else
  ``transformers:``) and the ``krm build`` lines trusting this catalog, latest and pinned;
- ``usage`` and example text as sanitized Markdown (:mod:`catalogs.markdown`); URLs stay links
  (the registry does not fetch them);
- versions side by side and what changed between consecutive versions, both between the API
  versions of the latest catalog version and across the catalog versions that carried it:
  runtime (image, digests, exec platforms, starlark), functionConfig schema (fields added,
  removed, retyped, newly required, enums) and capabilities (network, storage mount, binary).
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import yaml
from django.urls import reverse

from catalogs.discovery.revoked import catalog_revocations, revoked_versions
from catalogs.exceptions import NotFoundError
from catalogs.markdown import markdown_code_blocks, markdown_html
from catalogs.mirroring.badges import mirror_upstream_check
from catalogs.publishing.models import Catalog, FunctionDefinition, FunctionVersion
from catalogs.publishing.selectors import Viewer
from catalogs.trust.collisions import function_collisions
from orchestrator import yamlio
from orchestrator.errors import KrmError

MAX_HISTORY = 8  # catalog versions compared on the page
MAX_CHANGES = 40  # per comparison; the rest are counted
MAX_GENERATED_FIELDS = 60
MAX_OPTIONAL_PER_OBJECT = 8
MAX_EXAMPLE_CHARS = 20_000
MAX_EXAMPLES = 10  # per version, read and shown
MAX_SCHEMA_ROWS = 50  # shown on the page; the JSON Schema link has every field
_OBJECT_FIELDS = ("apiVersion", "kind", "metadata")
_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STRING_FORMATS = {
    "date-time": "2025-01-01T00:00:00Z",
    "date": "2025-01-01",
    "time": "12:00:00",
    "email": "team@example.com",
    "idn-email": "team@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "duration": "30s",
    "byte": "",
    "password": "",
}


# ----------------------------------------------------------------------------- small helpers


def kebab(name: str) -> str:
    """``SetNamespace`` -> ``set-namespace`` (file and metadata names)."""
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name)
    return re.sub(r"[^a-z0-9-]+", "-", out.lower()).strip("-") or "function"


def version_priority(name: str) -> tuple[int, int, int, str]:
    """Sort key putting the version Kubernetes prefers first (v2, v1, v1beta2, v1alpha1, other)."""
    m = _KUBE_VERSION.match(name)
    if not m:
        return (3, 0, 0, name)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), "")


def api_version(group: str, name: str) -> str:
    return f"{group}/{name}" if group else name


def container_digest(container: Any) -> str:
    """The digest a container runtime pins: its sha256, or the one in ``image@sha256:...``."""
    if not isinstance(container, dict):
        return ""
    if container.get("sha256"):
        return f"sha256:{container['sha256']}"
    _, at, digest = str(container.get("image", "")).partition("@")
    return digest if at else ""


def short_digest(digest: str) -> str:
    """``sha256:`` and the first 12 hex: enough to tell two apart on a page."""
    algo, _, hexpart = digest.rpartition(":")
    return f"{algo + ':' if algo else ''}{hexpart[:12]}…" if len(hexpart) > 12 else digest


def _openapi(version: Any) -> dict[str, Any] | None:
    schema = getattr(version, "schema", None)
    openapi = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
    return openapi if isinstance(openapi, dict) else None


def _is_url(text: str) -> bool:
    return text.strip().lower().startswith(("https://", "http://")) and "\n" not in text.strip()


# ----------------------------------------------------------------------------- schema fields


def schema_rows(schema: Any, prefix: str = "", depth: int = 0) -> list[dict[str, Any]]:
    """openAPIV3Schema properties as flat rows: field path, type, required, description."""
    rows: list[dict[str, Any]] = []
    if not isinstance(schema, dict) or depth > 20:
        return rows
    props = schema.get("properties") or {}
    req = set(schema.get("required") or [])
    for name, sub in props.items() if isinstance(props, dict) else ():
        if not isinstance(sub, dict):
            continue
        path = f"{prefix}.{name}" if prefix else name
        kind = sub.get("type", "")
        if kind == "array" and isinstance(sub.get("items"), dict):
            kind = f"array of {sub['items'].get('type', 'object')}"
        rows.append(
            {
                "path": path,
                "type": str(kind),
                "required": name in req,
                "description": sub.get("description", ""),
                "enum": sub.get("enum") or [],
                "default": sub.get("default"),
            }
        )
        rows += schema_rows(sub, path, depth=depth + 1)
        if isinstance(sub.get("items"), dict):
            rows += schema_rows(sub["items"], f"{path}[]", depth=depth + 1)
    return rows


# ----------------------------------------------------------------------------- functionConfig


@dataclass
class ConfigSnippet:
    """A functionConfig to paste, where it came from, and what the schema says of it."""

    text: str
    source: str  # "example" | "usage" | "schema" | "skeleton"
    label: str
    problems: list[str] = field(default_factory=list)
    checked: bool = False  # validated against the version's schema

    @property
    def generated(self) -> bool:
        return self.source in ("schema", "skeleton")


def _schema_problems(config: Any, version: Any) -> tuple[bool, list[str]]:
    """(checked, problems) of ``config`` against the version's schema, as ``krm build`` sees it."""
    from orchestrator.functions.schema import function_schema

    schema = function_schema(version)
    if schema is None:
        return False, []
    import jsonschema

    try:
        validator = jsonschema.Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    except (jsonschema.SchemaError, RecursionError, ValueError, TypeError) as exc:
        return False, [f"the schema itself is invalid: {exc}"[:300]]
    out = []
    for err in errors[:10]:
        where = ".".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}"[:300])
    return True, out


def _matches(doc: Any, *, group: str, kind: str, name: str) -> bool:
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        return False
    return doc.get("apiVersion") in (None, api_version(group, name))


def _configs_in_yaml(text: str, *, group: str, kind: str, name: str) -> tuple[str, ...]:
    """The functionConfigs of this kind and version in a YAML text, as text to paste."""
    if len(text) > MAX_EXAMPLE_CHARS:
        return ()
    return _configs_in_yaml_cached(text, group, kind, name)


@functools.lru_cache(maxsize=512)  # published text never changes; keys are at most 20,000 chars
def _configs_in_yaml_cached(text: str, group: str, kind: str, name: str) -> tuple[str, ...]:
    try:
        docs = yamlio.load_all(text)
    except (KrmError, RecursionError, ValueError):
        return ()
    found: list[str] = []
    for doc in docs:
        wrapped = isinstance(doc, dict) and doc.get("kind") == "ResourceList"
        if wrapped:
            doc = doc.get("functionConfig")
        if not _matches(doc, group=group, kind=kind, name=name):
            continue
        assert isinstance(doc, dict)
        whole = len(docs) == 1 and not wrapped
        named = isinstance(doc.get("metadata"), dict) and doc["metadata"].get("name")
        if whole and "apiVersion" in doc and named:
            # The author's own text (comments, order) when it is the whole config.
            found.append(text.strip().removeprefix("---").strip() + "\n")
        else:
            # What krm needs to resolve and run it, then the example's fields.
            given = doc.get("metadata")
            meta: dict[str, Any] = (
                {k: v for k, v in given.items() if v} if isinstance(given, dict) else {}
            )
            config = {
                "apiVersion": api_version(group, name),
                "kind": kind,
                "metadata": {"name": kebab(kind), **meta},
            }
            config.update({k: v for k, v in doc.items() if k not in config})
            found.append(_dump(config))
    return tuple(found)


def _dump(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _examples_configs(version: Any, *, group: str, kind: str) -> list[ConfigSnippet]:
    """functionConfigs given by the version: its examples first, then its usage's YAML blocks."""
    out: list[ConfigSnippet] = []
    name = version.name
    for i, example in enumerate((version.examples or [])[:MAX_EXAMPLES], start=1):
        if not isinstance(example, str) or _is_url(example):
            continue
        texts = _configs_in_yaml(example, group=group, kind=kind, name=name)
        if not texts:
            for info, code in markdown_code_blocks(example):
                if info in ("", "yaml", "yml"):
                    texts += _configs_in_yaml(code, group=group, kind=kind, name=name)
        out += [ConfigSnippet(t, "example", f"from the catalog's example {i}") for t in texts]
    usage = version.usage or ""
    if usage and not _is_url(usage):
        for info, code in markdown_code_blocks(usage):
            if info in ("", "yaml", "yml"):
                for t in _configs_in_yaml(code, group=group, kind=kind, name=name):
                    out.append(ConfigSnippet(t, "usage", "from the usage text"))
    return out


@dataclass
class _Budget:
    fields: int = MAX_GENERATED_FIELDS


def _placeholder(schema: Any, name: str, depth: int, budget: _Budget) -> Any:
    """A value ``schema`` accepts, or the closest sensible stand-in for one."""
    if not isinstance(schema, dict) or depth > 12:
        return None
    for key in ("default", "example"):
        if key in schema:
            return copy.deepcopy(schema[key])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return copy.deepcopy(schema["enum"][0])
    if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
        return 1
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        for key in ("oneOf", "anyOf", "allOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                return _placeholder(branches[0], name, depth, budget)
        kind = "object" if "properties" in schema else None
    if kind == "object":
        return _object(schema, depth, budget)
    if kind == "array":
        low_items = schema.get("minItems")
        count = min(10, low_items) if isinstance(low_items, int) and low_items > 1 else 1
        return [_placeholder(schema.get("items"), name, depth + 1, budget) for _ in range(count)]
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "string":
        text = _STRING_FORMATS.get(str(schema.get("format")), f"my-{kebab(name)}")
        low = schema.get("minLength")
        if isinstance(low, int) and len(text) < low:
            text += "x" * (low - len(text))
        high = schema.get("maxLength")
        return text[:high] if isinstance(high, int) and high >= 0 else text
    return None


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    """1, moved inside the schema's bounds (OpenAPI's boolean or JSON Schema's numeric
    exclusive bounds)."""
    value: float = 1
    low, high = schema.get("minimum"), schema.get("maximum")
    excl_low, excl_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    step = 1 if integer else 0.5
    if _is_number(low):
        value = max(value, low + (step if excl_low is True else 0))
    if _is_number(excl_low):
        value = max(value, excl_low + step)
    if _is_number(high) and value > high:
        value = high - (step if excl_high is True else 0)
    if _is_number(excl_high) and value >= excl_high:
        value = excl_high - step
    if integer:
        whole = math.ceil(value)
        return whole if not _is_number(high) or whole <= high else math.floor(value)
    return value


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _object(schema: dict[str, Any], depth: int, budget: _Budget) -> dict[str, Any]:
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and budget.fields > 0:
            budget.fields -= 1
            return {"key": _placeholder(extra, "value", depth + 1, budget)}
        return {}
    required = [p for p in schema.get("required") or [] if p in props]
    chosen = list(required)
    chosen += [
        p for p, s in props.items() if p not in chosen and isinstance(s, dict) and "default" in s
    ]
    if not chosen and depth < 4:
        # Nothing is required: show the fields there are, for the user to keep or delete.
        chosen = [p for p in props if isinstance(props[p], dict)][:MAX_OPTIONAL_PER_OBJECT]
    out: dict[str, Any] = {}
    for prop in chosen:
        if budget.fields <= 0:
            break
        budget.fields -= 1
        out[prop] = _placeholder(props[prop], prop, depth + 1, budget)
    return out


def config_generated(version: Any, *, group: str, kind: str) -> ConfigSnippet:
    """A functionConfig made from the version's schema (or a bare skeleton without one)."""
    schema = _openapi(version)
    config: dict[str, Any] = {
        "apiVersion": api_version(group, version.name),
        "kind": kind,
        "metadata": {"name": kebab(kind)},
    }
    if schema is not None:
        body = _object(schema, 0, _Budget())
        meta = body.pop("metadata", None)
        for key in _OBJECT_FIELDS:
            body.pop(key, None)
        if isinstance(meta, dict):
            config["metadata"] = {**meta, "name": kebab(kind)}
        config.update(body)
    checked, problems = _schema_problems(config, version)
    if schema is None:
        label = "a skeleton: this version has no schema, see its usage for the fields"
        return ConfigSnippet(_dump(config), "skeleton", label)
    label = "generated from the schema: replace the placeholders"
    return ConfigSnippet(commented_yaml(config, schema), "schema", label, problems, checked)


# ----------------------------------------------------------------------------- commented YAML

MAX_COMMENT = 90


def _scalar_yaml(value: Any) -> str:
    """One value as YAML on one line (flow style for empty maps and lists)."""
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1_000_000)
    return text.strip().removesuffix("...").strip()


def _comment(schema: Any, required: bool) -> str:
    """``  # required: what the schema says of the field`` (one line), or ""."""
    if not isinstance(schema, dict):
        return "  # required" if required else ""
    parts = []
    description = " ".join(str(schema.get("description") or "").split())
    if description:
        parts.append(description)
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) > 1:
        parts.append("one of: " + ", ".join(_scalar_yaml(v) for v in enum))
    text = "; ".join(parts)
    if required:
        text = f"required: {text}" if text else "required"
    if len(text) > MAX_COMMENT:
        text = text[: MAX_COMMENT - 1].rstrip() + "…"
    return f"  # {text}" if text else ""


def _emit_map(value: dict[str, Any], schema: Any, indent: int, out: list[str]) -> None:
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    extra = schema.get("additionalProperties")
    required = set(schema.get("required") or [])
    pad = " " * indent
    for key, item in value.items():
        sub = props.get(key, extra if isinstance(extra, dict) else None)
        comment = _comment(sub, key in required) if indent or key not in _OBJECT_FIELDS else ""
        head = f"{pad}{_scalar_yaml(key)}:"
        if isinstance(item, dict) and item:
            out.append(head + comment)
            _emit_map(item, sub, indent + 2, out)
        elif isinstance(item, list) and item:
            out.append(head + comment)
            _emit_list(item, sub.get("items") if isinstance(sub, dict) else None, indent, out)
        else:
            out.append(f"{head} {_scalar_yaml(item)}{comment}")


def _emit_list(items: list[Any], schema: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, dict) and item:
            lines: list[str] = []
            _emit_map(item, schema, indent + 2, lines)
            out.append(f"{pad}- {lines[0][indent + 2 :]}")
            out.extend(lines[1:])
        elif isinstance(item, list) and item:
            out.append(f"{pad}-")
            inner = schema.get("items") if isinstance(schema, dict) else None
            _emit_list(item, inner, indent + 2, out)
        else:
            out.append(f"{pad}- {_scalar_yaml(item)}")


def commented_yaml(config: dict[str, Any], schema: Any) -> str:
    """``config`` as block YAML in its own key order, each field commented with what the
    schema says of it (required, description, allowed values)."""
    out: list[str] = []
    _emit_map(config, schema, 0, out)
    return "\n".join(out) + "\n"


def config_for(version: Any, *, group: str, kind: str) -> ConfigSnippet:
    """The functionConfig to show: the first example the schema accepts, else the first
    example, else one generated from the schema."""
    examples = _examples_configs(version, group=group, kind=kind)
    for snippet in examples:
        try:
            config = yamlio.load(snippet.text)
        except KrmError:
            continue
        snippet.checked, snippet.problems = _schema_problems(config, version)
        if not snippet.problems:
            return snippet
    return examples[0] if examples else config_generated(version, group=group, kind=kind)


# ----------------------------------------------------------------------------- changes


@dataclass(frozen=True)
class Change:
    """One difference between two versions of a function, for a "what changed" list."""

    area: str  # "runtime" | "schema" | "capability" | "version" | "details"
    text: str
    level: str = "changed"  # badge class: "added" | "removed" | "changed" | "warn"


def _runtime_changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    out: list[Change] = []
    for kind in ("container", "exec", "starlark"):
        if kind in new and kind not in old:
            out.append(Change("runtime", f"{kind} runtime added", "added"))
        elif kind in old and kind not in new:
            out.append(Change("runtime", f"{kind} runtime removed", "removed"))
    oc, nc = old.get("container"), new.get("container")
    if isinstance(oc, dict) and isinstance(nc, dict):
        od, nd = container_digest(oc), container_digest(nc)
        digests = f"{short_digest(od) or 'none'} → {short_digest(nd) or 'none'}"
        if oc.get("image") != nc.get("image"):
            text = f"image {oc.get('image')} → {nc.get('image')}"
            out.append(Change("runtime", text + (f" (digest {digests})" if od != nd else "")))
        elif od != nd:
            # The same image reference, other content: a moved tag is worth a look.
            out.append(
                Change("runtime", f"image digest {digests}", "warn" if od and nd else "changed")
            )
    oe, ne = _platforms(old), _platforms(new)
    for key in sorted(ne.keys() - oe.keys()):
        out.append(Change("runtime", f"exec binary for {key} added", "added"))
    for key in sorted(oe.keys() - ne.keys()):
        out.append(Change("runtime", f"exec binary for {key} removed", "removed"))
    for key in sorted(oe.keys() & ne.keys()):
        a, b = oe[key], ne[key]
        if a.get("sha256") != b.get("sha256"):
            text = f"exec {key} sha256 {short_digest(str(a.get('sha256')))} → " + short_digest(
                str(b.get("sha256"))
            )
            out.append(Change("runtime", text, "warn"))
        elif a.get("uri") != b.get("uri"):
            out.append(Change("runtime", f"exec {key} download URL changed (same sha256)"))
    os_, ns = _starlark(old), _starlark(new)
    if os_ and ns and os_ != ns:
        if os_.get("sha256") != ns.get("sha256"):
            text = f"starlark sha256 {short_digest(str(os_.get('sha256') or 'none'))} → "
            out.append(Change("runtime", text + short_digest(str(ns.get("sha256") or "none"))))
        if (os_.get("uri") or os_.get("path")) != (ns.get("uri") or ns.get("path")):
            out.append(Change("runtime", "starlark script location changed"))
    return out


def _platforms(runtime: dict[str, Any]) -> dict[str, dict[str, Any]]:
    ex = runtime.get("exec")
    platforms = ex.get("platforms") if isinstance(ex, dict) else None
    return {f"{p.get('os')}/{p.get('arch')}": p for p in platforms or [] if isinstance(p, dict)}


def _starlark(runtime: dict[str, Any]) -> dict[str, Any]:
    s = runtime.get("starlark")
    if isinstance(s, str):
        return {"uri": s}
    return s if isinstance(s, dict) else {}


def _schema_changes(old: Any, new: Any) -> list[Change]:
    a, b = _openapi(old), _openapi(new)
    if a == b:  # also both None; dict equality is cheap next to walking two schemas
        return []
    if a is None:
        return [Change("schema", "functionConfig schema added (configs are now checked)", "added")]
    if b is None:
        return [Change("schema", "functionConfig schema removed", "removed")]
    ra = {r["path"]: r for r in schema_rows(a)}
    rb = {r["path"]: r for r in schema_rows(b)}
    out: list[Change] = []
    for path in [p for p in rb if p not in ra]:
        req = "required " if rb[path]["required"] else ""
        level = "warn" if req else "added"
        out.append(Change("schema", f"{req}field {path} added ({rb[path]['type']})", level))
    for path in [p for p in ra if p not in rb]:
        out.append(Change("schema", f"field {path} removed", "removed"))
    for path in [p for p in rb if p in ra]:
        x, y = ra[path], rb[path]
        if x["type"] != y["type"]:
            text = f"field {path}: type {x['type'] or 'any'} → {y['type'] or 'any'}"
            out.append(Change("schema", text, "warn"))
        if y["required"] and not x["required"]:
            out.append(Change("schema", f"field {path} is now required", "warn"))
        elif x["required"] and not y["required"]:
            out.append(Change("schema", f"field {path} is now optional"))
        if x["enum"] != y["enum"]:
            added = [str(v) for v in y["enum"] if v not in x["enum"]]
            removed = [str(v) for v in x["enum"] if v not in y["enum"]]
            parts = ([f"added {', '.join(added)}"] if added else []) + (
                [f"removed {', '.join(removed)}"] if removed else []
            )
            text = f"field {path}: allowed values {'; '.join(parts) or 'reordered'}"
            out.append(Change("schema", text, "warn" if removed else "changed"))
        if x["default"] != y["default"]:
            out.append(Change("schema", f"field {path}: default {x['default']} → {y['default']}"))
    if not out and a != b:
        out.append(Change("schema", "schema changed (constraints, not fields)"))
    return out


_NEEDS = (
    ("requires_network", "network (krm build needs --network)"),
    ("requires_storage_mount", "a storage mount (krm build needs --mount)"),
)


def _capability_changes(old: Any, new: Any) -> list[Change]:
    out = []
    for attr, what in _NEEDS:
        was, now = bool(getattr(old, attr)), bool(getattr(new, attr))
        if now and not was:
            out.append(Change("capability", f"now needs {what}", "warn"))
        elif was and not now:
            out.append(Change("capability", f"no longer needs {what.split(' (')[0]}", "added"))
    was_exec = "exec" in (old.runtime_kinds or [])
    now_exec = "exec" in (new.runtime_kinds or [])
    if now_exec != was_exec:
        text = "now runs a binary on the build machine" if now_exec else "no longer runs a binary"
        out.append(Change("capability", text, "warn" if now_exec else "added"))
    return out


def version_changes(old: Any, new: Any) -> list[Change]:
    """What changed from ``old`` to ``new`` (two FunctionVersion rows, any catalog versions)."""
    out = (
        _runtime_changes(old.runtime or {}, new.runtime or {}) if old.runtime != new.runtime else []
    )
    out += _schema_changes(old, new)
    out += _capability_changes(old, new)
    if (old.license or "") != (new.license or ""):
        out.append(Change("details", f"licence {old.license or '–'} → {new.license or '–'}"))
    if old.idempotent != new.idempotent:
        text = {True: "idempotent", False: "not idempotent"}.get(new.idempotent, "")
        out.append(Change("details", f"now {text or 'silent on idempotence'}"))
    if (old.usage or "") != (new.usage or "") or (old.examples or []) != (new.examples or []):
        out.append(Change("details", "usage or examples updated"))
    return out


def _capped(changes: list[Change]) -> tuple[list[Change], int]:
    return changes[:MAX_CHANGES], max(0, len(changes) - MAX_CHANGES)


def _by_priority(versions: Iterable[Any]) -> list[Any]:
    return sorted(versions, key=lambda v: (version_priority(v.name), v.position))


def function_history(
    *, catalog: Catalog, group: str, kind: str, limit: int = MAX_HISTORY
) -> dict[str, Any]:
    """The function in the newest ``limit`` catalog versions that carry it, newest first, each
    with what changed since the previous one."""
    defs = list(
        FunctionDefinition.objects.filter(catalog_version__catalog=catalog, group=group, kind=kind)
        .select_related("catalog_version")
        .prefetch_related("versions")
        .order_by("-catalog_version__number", "position")[: limit + 1]
    )
    seen: set[int] = set()
    unique = []
    for d in defs:  # the first definition per catalog version is the one krm resolves
        if d.catalog_version_id not in seen:
            seen.add(d.catalog_version_id)
            unique.append(d)
    more = len(unique) > limit
    entries = []
    for i, d in enumerate(unique[:limit]):
        previous = unique[i + 1] if i + 1 < len(unique) else None
        entry: dict[str, Any] = {
            "catalog_version": d.catalog_version,
            "api_versions": [v.name for v in _by_priority(d.versions.all())],
            "first": previous is None,
            "changes": [],
            "more": 0,
        }
        if previous is not None:
            entry["changes"], entry["more"] = _capped(_definition_changes(previous, d))
            entry["since"] = previous.catalog_version.number
        entries.append(entry)
    return {"entries": entries, "more": more}


def _definition_changes(old: FunctionDefinition, new: FunctionDefinition) -> list[Change]:
    before = {v.name: v for v in old.versions.all()}
    after = {v.name: v for v in new.versions.all()}
    out: list[Change] = []
    for name in [n for n in after if n not in before]:
        out.append(Change("version", f"version {name} added", "added"))
    for name in [n for n in before if n not in after]:
        out.append(Change("version", f"version {name} removed", "removed"))
    for name in [n for n in after if n in before]:
        prefix = f"{name}: " if len(after) > 1 else ""
        changes = version_changes(before[name], after[name])
        out += [Change(c.area, prefix + c.text, c.level) for c in changes]
    if old.description != new.description:
        out.append(Change("details", "description updated"))
    return out


# ----------------------------------------------------------------------------- the page


def _usage(version: FunctionVersion) -> dict[str, str]:
    text = (version.usage or "").strip()
    if not text:
        return {}
    if _is_url(text):
        return {"url": text}
    return {"html": markdown_html(text)}


def _examples(version: FunctionVersion, *, group: str, kind: str) -> list[dict[str, str]]:
    out = []
    for example in (version.examples or [])[:MAX_EXAMPLES]:
        text = str(example).strip()
        if not text:
            continue
        if _is_url(text):
            out.append({"url": text})
        elif _configs_in_yaml(text, group=group, kind=kind, name=version.name):
            out.append({"yaml": text})
        else:
            out.append({"html": markdown_html(text, heading_offset=3)})
    return out


def _schema_modeline(catalog: Catalog, fn: FunctionDefinition, v: FunctionVersion) -> str:
    """The path of this version's JSON Schema, for the yaml-language-server line."""
    from catalogs.publishing.schema_views import CORE_GROUP

    assert catalog.latest_version is not None  # a catalog with a function has a version
    return reverse(
        "catalogs:function_schema",
        args=[
            catalog.publisher.slug,
            catalog.name,
            catalog.latest_version.number,
            fn.group or CORE_GROUP,
            fn.kind,
            v.name,
        ],
    )


def _needs(v: FunctionVersion) -> list[str]:
    out = [label.split(" (")[0] for attr, label in _NEEDS if getattr(v, attr)]
    if "exec" in (v.runtime_kinds or []):
        out.append("runs a binary")
    return out


def _side_by_side(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per version, the facts compared in the versions table."""
    rows = []
    for item in items:
        v = item["row"]
        runtime = v.runtime or {}
        artifacts = []
        if item["container"]:
            artifacts.append(str(item["container"].get("image", "")))
        artifacts += [f"exec {p}" for p in _platforms(runtime)]
        if item["starlark"]:
            s = _starlark(runtime)
            artifacts.append(f"starlark {s.get('uri') or s.get('path') or ''}".strip())
        digests = [item["image_digest"]] if item["image_digest"] else []
        digests += [f"sha256:{p.get('sha256')}" for p in _platforms(runtime).values()]
        if _starlark(runtime).get("sha256"):
            digests.append(f"sha256:{_starlark(runtime)['sha256']}")
        rows.append(
            {
                "name": v.name,
                "api_version": api_version(v.group, v.name),
                "runtimes": v.runtime_kinds or [],
                "artifacts": artifacts,
                "digests": [(d, short_digest(d)) for d in digests],
                "needs": _needs(v),
                "fields": item["schema_fields"],
                "required": item["schema_required"],
                "has_schema": item["has_schema"],
                "license": v.license,
                "idempotent": v.idempotent,
            }
        )
    return rows


def function_page(
    *,
    catalog: Catalog,
    group: str,
    kind: str,
    absolute_url: Callable[[str], str],
    viewer: Viewer = None,
) -> dict[str, Any]:
    """Everything the function page shows, for the function ``group``/``kind`` of the catalog's
    latest version; ``absolute_url`` turns a path into a URL (the request's host)."""
    fn = (
        FunctionDefinition.objects.filter(
            catalog_version=catalog.latest_version, group=group, kind=kind
        )
        .select_related("catalog_version__signing_key")
        .prefetch_related("versions")
        .first()
        if catalog.latest_version
        else None
    )
    if fn is None:
        raise NotFoundError(f"Catalog '{catalog}' has no function {group}/{kind}.")
    latest = fn.catalog_version
    revoked = revoked_versions(
        versions=fn.versions.all(),
        catalog_id=catalog.pk,
        revocations=catalog_revocations(catalog_ids=[catalog.pk]),
    )
    versions = []
    for v in _by_priority(fn.versions.all()):
        schema = _openapi(v)
        runtime = v.runtime or {}
        config = config_for(v, group=fn.group, kind=fn.kind)
        rows = schema_rows(schema)
        schema_path = _schema_modeline(catalog, fn, v) if schema else ""
        versions.append(
            {
                "row": v,
                "exec_platforms": (runtime.get("exec") or {}).get("platforms", []),
                "container": runtime.get("container"),
                "image_digest": container_digest(runtime.get("container")),
                "starlark": runtime.get("starlark"),
                "schema_rows": rows[:MAX_SCHEMA_ROWS],
                "schema_rows_more": max(0, len(rows) - MAX_SCHEMA_ROWS),
                "schema_fields": len(rows),
                "schema_required": sum(1 for r in rows if r["required"]),
                "schema_url": schema_path,
                "has_schema": bool(schema),
                "modeline": (
                    "# yaml-language-server: $schema=" + absolute_url(schema_path)
                    if schema
                    else None
                ),
                "collisions": function_collisions(version=v, viewer=viewer),
                "config": config,
                "config_file": f"{kebab(fn.kind)}.yaml",
                "usage": _usage(v),
                "examples": _examples(v, group=fn.group, kind=fn.kind),
                "api_version": api_version(fn.group, v.name),
                "revoked": revoked.get(v.name),
            }
        )
    # Maintainers once: the function's, else the versions' when they all agree; a version
    # lists its own only where they differ.
    per_version = {tuple(item["row"].maintainers or []) for item in versions}
    maintainers = list(fn.maintainers or [])
    if not maintainers and len(per_version) == 1:
        maintainers = list(next(iter(per_version)))
    for item in versions:
        own = list(item["row"].maintainers or [])
        item["own_maintainers"] = own if own and own != maintainers else []
    for item in versions[1:]:
        item["usage_repeated"] = item["usage"] == versions[0]["usage"]
        same = item["has_schema"] and _openapi(item["row"]) == _openapi(versions[0]["row"])
        item["schema_same_as"] = versions[0]["row"].name if same else ""
    # Consecutive API versions: what the preferred one changes from the next older one.
    for newer, older in zip(versions, versions[1:], strict=False):
        newer["changes_from"] = older["row"].name
        newer["changes"], newer["more_changes"] = _capped(
            version_changes(older["row"], newer["row"])
        )
    slug, name = catalog.publisher.slug, catalog.name
    latest_url = absolute_url(reverse("catalogs:latest", args=[slug, name]))
    pinned_url = absolute_url(reverse("catalogs:digest", args=[slug, name, latest.digest[7:]]))
    # Snippets for the preferred version that is not revoked (krm build refuses a revoked one).
    use = next((item for item in versions if not item["revoked"]), None)
    flags = ""
    if use and use["row"].requires_network:
        flags += " --network"
    field = kustomization_field(fn.tags or [])
    return {
        "catalog": catalog,
        "function": fn,
        "catalog_version": latest,
        "versions": versions,
        "use": use,
        "maintainers": maintainers,
        "signed": latest.signing_key_id is not None,
        # A mirror: how its upstream was verified (its badges say so beside the signature).
        "mirror_upstream": mirror_upstream_check(catalog_id=catalog.pk),
        "kustomization": kustomization_snippet(file_name=f"{kebab(fn.kind)}.yaml", field=field),
        "field_name": field,
        "build_latest": f"krm build . --trusted-catalog={latest_url}{flags}",
        "build_pinned": f"krm build . --trusted-catalog={pinned_url}{flags}",
        "latest_url": latest_url,
        "pinned_url": pinned_url,
        "needs_mount": bool(use and use["row"].requires_storage_mount),
        "side_by_side": _side_by_side(versions),
        "history": function_history(catalog=catalog, group=fn.group, kind=fn.kind),
        "revoked": [revoked[item["row"].name] for item in versions if item["revoked"]],
    }


def kustomization_field(tags: list) -> str:
    """Where a kustomization names the function, from its tags: ``generators`` for a generator,
    ``validators`` for a validator (it only checks; kustomize and krm run it on a copy), else
    ``transformers``."""
    lowered = {str(t).lower() for t in tags}
    if "generator" in lowered:
        return "generators"
    if "validator" in lowered:
        return "validators"
    return "transformers"


def kustomization_snippet(*, file_name: str, field: str) -> str:
    """The kustomization.yaml that runs the function's config file under ``field``."""
    lines = [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
    ]
    if field != "generators":
        lines += ["resources:", "- deployment.yaml  # your manifests"]
    lines += [f"{field}:", f"- {file_name}"]
    return "\n".join(lines) + "\n"
