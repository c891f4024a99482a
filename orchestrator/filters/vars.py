"""Legacy kustomize ``vars:``: substitute ``$(NAME)`` with a field of a referenced resource.

Follows kustomize v5.5.0 (api/types/var.go, api/internal/accumulator, api/filters/refvar): a
var's ``objref`` must match exactly one resource by group, version, kind and name (current or
any previous name), in the same namespace when one is given; its value is the field at
``fieldref.fieldPath`` (default ``metadata.name``) after all other transformations; ``$(NAME)``
is replaced only in the varReference fields below (plus any passed in), ``$$`` escapes ``$``,
and a field that is exactly ``$(NAME)`` takes the value's type. Resources are mutated in place.
"""

from __future__ import annotations

from functools import lru_cache

from orchestrator.errors import KrmError, ValidationError
from orchestrator.filters.replacements import MISSING, get_field, lookup, split_path
from orchestrator.lazyre import Pattern
from orchestrator.resource import Resource

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DEFAULT_VAR_REFERENCE", "REFVARS", "VarError", "apply", "bind", "expand"]


class VarError(KrmError):
    """A var is duplicated, ambiguous, or cannot be resolved."""


_POD_PATHS = tuple(
    f"{c}/{f}"
    for c in ("containers", "initContainers")
    for f in ("args", "command", "env/value", "volumeMounts/mountPath")
)


def _pod(kind: str, prefix: str) -> list[tuple[str, str]]:
    return [(kind, prefix + path) for path in _POD_PATHS]


# kustomize's builtin varReference field specs (api/internal/konfig/builtinpluginconsts/
# varreference.go), as (kind, path); an empty kind matches every resource. The CronJob nfs path
# really lacks a "spec/" in kustomize.
DEFAULT_VAR_REFERENCE: tuple[tuple[str, str], ...] = (
    *_pod("CronJob", "spec/jobTemplate/spec/template/spec/"),
    ("CronJob", "spec/jobTemplate/spec/template/volumes/nfs/server"),
    *_pod("DaemonSet", "spec/template/spec/"),
    ("DaemonSet", "spec/template/spec/volumes/nfs/server"),
    *_pod("Deployment", "spec/template/spec/"),
    ("Deployment", "spec/template/spec/volumes/nfs/server"),
    ("Deployment", "spec/template/metadata/annotations"),
    ("Ingress", "spec/rules/host"),
    ("Ingress", "spec/tls/hosts"),
    ("Ingress", "spec/tls/secretName"),
    *_pod("Job", "spec/template/spec/"),
    ("Job", "spec/template/spec/volumes/nfs/server"),
    *_pod("Pod", "spec/"),
    ("Pod", "spec/volumes/nfs/server"),
    *_pod("ReplicaSet", "spec/template/spec/"),
    ("ReplicaSet", "spec/template/spec/volumes/nfs/server"),
    ("Service", "spec/ports/port"),
    ("Service", "spec/ports/targetPort"),
    *_pod("StatefulSet", "spec/template/spec/"),
    ("StatefulSet", "spec/volumeClaimTemplates/spec/nfs/server"),
    ("PersistentVolume", "spec/nfs/server"),
    ("", "metadata/labels"),
    ("", "metadata/annotations"),
)

_SLICE_INDEX = Pattern(r"^(.*)\[(\d+)\]$")


def _str(spec: dict[str, Any], key: str, where: str) -> str:
    value = get_field(spec, key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"{where}.{key} must be a string, got {value!r}")
    return value


class _Var:
    """One parsed var definition."""

    __slots__ = (
        "field_path",
        "field_path_set",
        "group",
        "kind",
        "name",
        "namespace",
        "obj_name",
        "version",
    )

    def __init__(self, spec: Any, where: str):
        if not isinstance(spec, dict):
            raise ValidationError(f"{where} must be a map")
        self.name = _str(spec, "name", where)
        if not self.name:
            raise ValidationError(f"{where}: var must have a name")
        objref = get_field(spec, "objref")
        if not isinstance(objref, dict):
            raise ValidationError(f"{where} (var {self.name!r}): objref must be a map")
        ow = f"{where}.objref"
        self.group = _str(objref, "group", ow)
        self.version = _str(objref, "version", ow)
        api_version = _str(objref, "apiVersion", ow)
        if api_version:
            # kustomize's Target.GVK(): only a one- or two-part apiVersion overrides.
            parts = api_version.split("/")
            if len(parts) == 2:
                self.group, self.version = parts
            elif len(parts) == 1:
                self.version = parts[0]
        self.kind = _str(objref, "kind", ow)
        self.obj_name = _str(objref, "name", ow)
        self.namespace = _str(objref, "namespace", ow)
        fieldref = get_field(spec, "fieldref")
        if fieldref is not None and not isinstance(fieldref, dict):
            raise ValidationError(f"{where} (var {self.name!r}): fieldref must be a map")
        path = _str(fieldref or {}, "fieldPath", f"{where}.fieldref")
        self.field_path_set = bool(path)
        self.field_path = path or "metadata.name"

    def describe(self, *, defaulted: bool = True) -> str:
        """Go's ``%v`` of kustomize's Var struct, for identical messages."""
        gvk = f"{self.kind or '[noKind]'}.{self.version or '[noVer]'}.{self.group or '[noGrp]'}"
        field = self.field_path if defaulted or self.field_path_set else ""
        return f"{{{self.name} {gvk} {{{field}}}}}"

    def matches(self, res: Resource) -> bool:
        group, version, kind = res.gvk
        if (group, version, kind) != (self.group, self.version, self.kind):
            return False
        ids = [(res.namespace, res.name), *res.previous]
        for ns, name in ids:
            if name != self.obj_name:
                continue
            if not self.namespace or _eff_ns(self.namespace) == _eff_ns(ns):
                return True
        return False


def _eff_ns(namespace: str) -> str:
    return "default" if namespace in ("", "default") else namespace


@lru_cache(maxsize=256)
def _field_parts(path: str) -> tuple[str, ...]:
    """kyaml GetFieldValue's path: dots, with ``ports[0]`` meaning ``ports.0``."""
    parts: list[str] = []
    for part in split_path(path):
        m = _SLICE_INDEX.match(part) if part.endswith("]") else None
        if m is None:
            parts.append(part)
        else:
            if m.group(1):
                parts.append(m.group(1))
            parts.append(m.group(2))
    return tuple(parts)


def _go_value_text(value: Any) -> str:
    """Go's ``%v`` of a primitive var value, for substitution inside a longer string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_g(value)
    return str(value)


def _go_g(value: float) -> str:
    """Go's ``%v`` of a float64: shortest digits, exponent form below 1e-4 or from 1e6 on."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    if value == 0:
        return "0"
    digits, exp = _shortest(value)
    sign = "-" if value < 0 else ""
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    whole, frac = digits[: exp + 1].ljust(exp + 1, "0"), digits[exp + 1 :]
    return f"{sign}{whole}{'.' + frac if frac else ''}"


def _shortest(value: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits of ``value`` and its decimal exponent."""
    text = repr(abs(value))
    if "e" in text:
        mantissa, _, exponent = text.partition("e")
        digits = mantissa.replace(".", "").rstrip("0") or "0"
        return digits, int(exponent)
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0")
    if whole != "0":
        return (whole + frac).rstrip("0") or "0", len(whole) - 1
    stripped = frac.lstrip("0")
    return stripped, -(len(frac) - len(stripped)) - 1


def expand(text: str, values: dict[str, Any], counts: dict[str, int]) -> Any:
    """kustomize's refvar.DoReplacements: replace ``$(NAME)``; ``$$`` is a literal ``$``."""
    if "$" not in text:
        return text
    out: list[str] = []
    checkpoint = 0
    cursor = 0
    n = len(text)
    while cursor < n:
        if text[cursor] == "$" and cursor + 1 < n:
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            if nxt == "$":
                out.append("$")
                advance = 1
            elif nxt == "(":
                close = text.find(")", cursor + 2)
                if close < 0:
                    out.append("$(")
                    advance = 1
                else:
                    name = text[cursor + 2 : close]
                    advance = close - cursor
                    if name in values:
                        counts[name] = counts.get(name, 0) + 1
                        mapped = values[name]
                        if text == f"$({name})":
                            # The whole field keeps the value's type; Go writes a float
                            # without ".0", which reads back as an integer.
                            if isinstance(mapped, float) and mapped.is_integer():
                                return int(mapped)
                            return mapped
                        out.append(_go_value_text(mapped))
                    else:
                        # Unknown (or non-primitive) var: left as written.
                        out.append(f"$({name})")
            else:
                out.append("$" + nxt)
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    out.append(text[checkpoint:])
    return "".join(out)


def _split_fs_path(path: str) -> list[str]:
    """kustomize's PathSplitter on "/": a leading "/" is ignored, ``\\/`` escapes."""
    parts = path.split("/")
    if len(parts) > 1 and parts[0] == "":
        parts = parts[1:]
    joined = [parts[0]]
    for part in parts[1:]:
        if joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + "/" + part
        else:
            joined.append(part)
    return [p[:-2] if p.endswith("[]") else p for p in joined]


class _Expander:
    """Applies the substitution along one field spec, as kustomize's fieldspec + refvar filters."""

    def __init__(self, values: dict[str, Any], counts: dict[str, int]):
        self.values = values
        self.counts = counts

    def walk(self, container: Any, key: Any, path: list[str], fs_path: str) -> None:
        node = container[key]
        if not path:
            self.set(container, key)
            return
        if node is None:
            return
        if isinstance(node, list):
            for i in range(len(node)):
                self.walk(node, i, path, fs_path)
        elif isinstance(node, dict):
            if path[0] == "":
                raise ValidationError("cannot set or create an empty field name")
            if path[0] in node:
                self.walk(node, path[0], path[1:], fs_path)
        else:
            raise VarError("expected sequence or mapping node")

    def set(self, container: Any, key: Any) -> None:
        node = container[key]
        if node is None:
            return
        if isinstance(node, str):
            container[key] = expand(node, self.values, self.counts)
        elif isinstance(node, dict):
            for k in list(node):
                if not isinstance(k, str):
                    raise VarError(f"invalid map key: value='{k}', tag='{_tag(k)}'")
                if isinstance(node[k], str):
                    node[k] = expand(node[k], self.values, self.counts)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if not isinstance(item, str):
                    raise VarError("invalid value type expect a string")
                node[i] = expand(item, self.values, self.counts)


def _tag(value: Any) -> str:
    if isinstance(value, bool):
        return "!!bool"
    if isinstance(value, int):
        return "!!int"
    if isinstance(value, float):
        return "!!float"
    return "!!null" if value is None else "!!str"


def _describe_id(res: Resource) -> str:
    group, version, kind = res.gvk
    gvk = f"{kind or '[noKind]'}.{version or '[noVer]'}.{group or '[noGrp]'}"
    return f"{gvk}/{res.name or '[noName]'}.{res.namespace or '[noNs]'}"


REFVARS = "refvars"


def _parse(var_defs: list[dict[str, Any]]) -> list[_Var]:
    if not isinstance(var_defs, list):
        raise ValidationError("vars must be a list")
    return [_Var(spec, f"vars[{i}]") for i, spec in enumerate(var_defs)]


def _bind(resources: list[Resource], var: _Var) -> Resource | None:
    """The one resource ``var``'s objref names (kustomize's MergeVars match), or None."""
    matched = [res for res in resources if var.matches(res)]
    if len(matched) > 1:
        raise VarError(
            f"found {len(matched)} resId matches for var {var.describe(defaulted=False)} "
            "(unable to disambiguate)"
        )
    return matched[0] if matched else None


def bind(resources: list[Resource], var_defs: list[dict[str, Any]]) -> None:
    """Attach one kustomization's ``vars`` to the resources they name (kustomize's MergeVars).

    Call it at the end of each kustomization's accumulation (after its transformers), with that
    kustomization's own vars, then :func:`apply` with ``bound=True`` at the top. This is what
    lets two bases declare vars on same-named resources that later get different prefixes.
    """
    seen: set[str] = set()
    for var in _parse(var_defs or []):
        owner = _bind(resources, var)
        if var.name in seen:
            raise VarError(f"var '{var.name}' already encountered")
        seen.add(var.name)
        if owner is not None:
            owner.extra.setdefault(REFVARS, []).append(var.name)


def apply(
    resources: list[Resource],
    var_defs: list[dict[str, Any]],
    *,
    field_specs: list[dict[str, Any]] | None = None,
    bound: bool = False,
) -> None:
    """Resolve kustomize ``vars`` against ``resources`` and substitute them in place.

    ``var_defs`` are all vars of the build. With ``bound=True`` each var's value comes from the
    resource :func:`bind` attached it to; otherwise the objref is matched here, on current and
    previous names. ``field_specs`` adds varReference entries (``{kind?, group?, version?,
    path}``) from a kustomization's ``configurations``.
    """
    if not var_defs:
        return
    parsed: dict[str, _Var] = {}
    owners: dict[str, Resource | None] = {}
    for var in _parse(var_defs):
        if var.name in parsed:
            raise VarError(f"var '{var.name}' already encountered")
        parsed[var.name] = var
        if bound:
            owners[var.name] = next(
                (res for res in resources if var.name in res.extra.get(REFVARS, ())), None
            )
        else:
            owners[var.name] = _bind(resources, var)
    values: dict[str, Any] = {}
    for name in sorted(parsed):
        var = parsed[name]
        owner = owners[name]
        if owner is None:
            raise VarError(
                f"var '{var.describe()}' cannot be mapped to a field in the set of known resources"
            )
        try:
            value = lookup(owner.obj, _field_parts(var.field_path))
        except KrmError:
            value = MISSING
        if value is MISSING:
            raise VarError(
                f"field specified in var '{var.describe()}' not found in corresponding resource",
                resource=owner.describe(),
            )
        if value is None:
            value = ""
        # Maps and lists cannot be spliced into text: kustomize leaves $(NAME) alone.
        if not isinstance(value, dict | list):
            values[name] = value
    specs: list[tuple[str, str, str, str]] = [
        ("", "", kind, path) for kind, path in DEFAULT_VAR_REFERENCE
    ]
    for j, fs in enumerate(field_specs or []):
        if not isinstance(fs, dict) or not isinstance(fs.get("path"), str):
            raise ValidationError(f"varReference[{j}] must be a map with a path")
        specs.append(
            (
                _str(fs, "group", f"varReference[{j}]"),
                _str(fs, "version", f"varReference[{j}]"),
                _str(fs, "kind", f"varReference[{j}]"),
                fs["path"],
            )
        )
    # kustomize merges field specs without duplicates (a second pass would re-expand "$$").
    specs = list(dict.fromkeys(specs))
    counts: dict[str, int] = {}
    expander = _Expander(values, counts)
    per_kind: dict[str, list[tuple[str, str, list[str], str]]] = {}
    for res in resources:
        group, version, kind = res.gvk
        kind_specs = per_kind.get(kind)
        if kind_specs is None:
            kind_specs = per_kind[kind] = [
                (fs_group, fs_version, _split_fs_path(path), path)
                for fs_group, fs_version, fs_kind, path in specs
                if not fs_kind or fs_kind == kind
            ]
        for fs_group, fs_version, parts, path in kind_specs:
            if (fs_group and fs_group != group) or (fs_version and fs_version != version):
                continue
            holder = {"": res.obj}
            try:
                expander.walk(holder, "", parts, path)
            except KrmError as err:
                raise VarError(
                    f"considering field '{path}' of object {_describe_id(res)}: {err.message}",
                    resource=res.describe(),
                ) from None
