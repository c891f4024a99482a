"""Loading and checking a Kustomization or Component document (kustomize v5.5.0 schema)."""

from __future__ import annotations

import os
import sys

from orchestrator import yamlio
from orchestrator.errors import LoadError, ValidationError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from orchestrator.share import Share

KUSTOMIZATION_VERSION = "kustomize.config.k8s.io/v1beta1"
COMPONENT_VERSION = "kustomize.config.k8s.io/v1alpha1"

# The Kustomization schema (kustomize v5.5.0's Go types): kustomize decodes the file strictly
# (unknown fields and wrong scalar types are errors), after reading it as YAML 1.1.
S, B, INT, ANY = "string", "bool", "int64", "any"


def _map(v: Any) -> tuple[Any, ...]:
    return ("map", v)


def _list(v: Any) -> tuple[Any, ...]:
    return ("list", v)


def _struct(name: str, fields: dict[str, Any]) -> tuple[Any, ...]:
    return ("struct", name, fields)


_GVK = {"group": S, "version": S, "kind": S}
_FIELDSPEC = _struct("FieldSpec", {**_GVK, "path": S, "create": B})
_SELECTOR = _struct(
    "Selector",
    {**_GVK, "name": S, "namespace": S, "labelSelector": S, "annotationSelector": S},
)
_GEN_OPTIONS = _struct(
    "GeneratorOptions",
    {"labels": _map(S), "annotations": _map(S), "disableNameSuffixHash": B, "immutable": B},
)
_GEN_ARGS = {
    "namespace": S,
    "name": S,
    "behavior": S,
    "literals": _list(S),
    "files": _list(S),
    "envs": _list(S),
    "env": S,
    "options": _GEN_OPTIONS,
}
_PATCH = _struct("Patch", {"path": S, "patch": S, "target": _SELECTOR, "options": _map(B)})
_OBJECT_META = _struct(
    "ObjectMeta", {"name": S, "namespace": S, "labels": _map(S), "annotations": _map(S)}
)
KUSTOMIZATION = _struct(
    "Kustomization",
    {
        "apiVersion": S,
        "kind": S,
        "metadata": _OBJECT_META,
        "openapi": _map(S),
        "namePrefix": S,
        "nameSuffix": S,
        "namespace": S,
        "commonLabels": _map(S),
        "labels": _list(
            _struct(
                "Label",
                {
                    "pairs": _map(S),
                    "includeSelectors": B,
                    "includeTemplates": B,
                    "fields": _list(_FIELDSPEC),
                },
            )
        ),
        "commonAnnotations": _map(S),
        "patchesStrategicMerge": _list(S),
        "patchesJson6902": _list(_PATCH),
        "patches": _list(_PATCH),
        "images": _list(
            _struct(
                "Image",
                {"name": S, "newName": S, "tagSuffix": S, "newTag": S, "digest": S},
            )
        ),
        "imageTags": _list(
            _struct(
                "Image",
                {"name": S, "newName": S, "tagSuffix": S, "newTag": S, "digest": S},
            )
        ),
        "replacements": _list(ANY),
        "replicas": _list(_struct("Replica", {"name": S, "count": INT})),
        "vars": _list(
            _struct(
                "Var",
                {
                    "name": S,
                    "objref": _struct(
                        "Target", {**_GVK, "apiVersion": S, "name": S, "namespace": S}
                    ),
                    "fieldref": _struct("FieldSelector", {"fieldPath": S}),
                },
            )
        ),
        "sortOptions": _struct(
            "SortOptions",
            {
                "order": S,
                "legacySortOptions": _struct(
                    "LegacySortOptions", {"orderFirst": _list(S), "orderLast": _list(S)}
                ),
            },
        ),
        "resources": _list(S),
        "components": _list(S),
        "crds": _list(S),
        "bases": _list(S),
        "configMapGenerator": _list(_struct("ConfigMapArgs", _GEN_ARGS)),
        "secretGenerator": _list(_struct("SecretArgs", {**_GEN_ARGS, "type": S})),
        "helmGlobals": _struct("HelmGlobals", {"chartHome": S, "configHome": S}),
        "helmCharts": _list(ANY),
        "helmChartInflationGenerator": _list(ANY),
        "generatorOptions": _GEN_OPTIONS,
        "configurations": _list(S),
        "generators": _list(S),
        "transformers": _list(S),
        "validators": _list(S),
        "buildMetadata": _list(S),
        "catalogs": _list(ANY),
    },
)
FIELDS = KUSTOMIZATION[2]


def _json_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    return "array"


def _type_name(spec: Any) -> str:
    if isinstance(spec, str):
        return "interface {}" if spec == ANY else spec
    if spec[0] == "map":
        return f"map[string]{_type_name(spec[1])}"
    if spec[0] == "list":
        return f"[]{_type_name(spec[1])}"
    return f"types.{spec[1]}"


def check(value: Any, spec: Any, path: str, struct: str, source: str) -> None:
    """Check ``value`` against ``spec`` like Go's strict JSON decoding; raise on mismatch."""
    if value is None or spec == ANY:
        return

    def bad() -> ValidationError:
        """The Go-style type mismatch error for this value."""
        return ValidationError(
            f"invalid Kustomization: json: cannot unmarshal {_json_type(value)} into Go struct "
            f"field {struct}.{path} of type {_type_name(spec)}",
            file=source,
        )

    if spec == S:
        if not isinstance(value, str):
            raise bad()
    elif spec == B:
        if not isinstance(value, bool):
            raise bad()
    elif spec == INT:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad()
        if isinstance(value, float) and value != int(value):
            raise bad()
    elif spec[0] == "map":
        if not isinstance(value, dict):
            raise bad()
        for v in value.values():
            check(v, spec[1], path, struct, source)
    elif spec[0] == "list":
        if not isinstance(value, list):
            raise bad()
        for v in value:
            check(v, spec[1], path, struct, source)
    else:
        if not isinstance(value, dict):
            raise bad()
        name, fields = spec[1], spec[2]
        for k in list(value):
            key = k
            if k not in fields:
                # Go's JSON decoding matches field names case-insensitively.
                key = next((f for f in fields if f.lower() == k.lower()), None)
                if key is None:
                    raise ValidationError(
                        f'invalid Kustomization: json: unknown field "{k}"', file=source
                    )
                value[key] = value.pop(k)
            check(value[key], fields[key], f"{path}.{key}" if path else key, name, source)


_DEPRECATED = {
    "bases": "# Warning: 'bases' is deprecated. Please use 'resources' instead.",
    "commonLabels": "# Warning: 'commonLabels' is deprecated. Please use 'labels' instead.",
    "imageTags": "# Warning: 'imageTags' is deprecated. Please use 'images' instead.",
    "patchesJson6902": "# Warning: 'patchesJson6902' is deprecated. Please use 'patches' instead.",
    "patchesStrategicMerge": "# Warning: 'patchesStrategicMerge' is deprecated. "
    "Please use 'patches' instead.",
    "vars": "# Warning: 'vars' is deprecated. Please use 'replacements' instead.",
}
_FIX = " Run 'kustomize edit fix' to update your Kustomization automatically."
_FIX_EXPERIMENTAL = (
    " [EXPERIMENTAL] Run 'kustomize edit fix' to update your Kustomization automatically."
)


def load(path: str, *, warnings: list[str] | None = None) -> dict[str, Any]:
    """Read, check and normalise the kustomization file at ``path``."""
    from orchestrator.fs import display

    with open(path, "rb") as f:
        data = f.read()
    module = sys.modules.get("orchestrator.share")  # a single build never imports it
    shared: Share | None = module.current() if module is not None else None
    if shared is None:
        return parse(data, source=display(path), warnings=warnings)
    k, found = shared.kustomization(
        path, data, lambda w: parse(data, source=display(path), warnings=w)
    )
    if warnings is not None:
        warnings.extend(found)
    return k


def parse(data: bytes | str, *, source: str, warnings: list[str] | None = None) -> dict[str, Any]:
    """Check and normalise a kustomization document (legacy fields folded in)."""
    docs = yamlio.load_yaml11(data, source=source)
    k = docs[0] if docs else {}
    if not isinstance(k, dict):
        raise ValidationError(
            f"invalid Kustomization: json: cannot unmarshal {_json_type(k)} into Go value of "
            "type types.Kustomization",
            file=source,
        )
    check(k, KUSTOMIZATION, "", "Kustomization", source)
    k = {key: v for key, v in k.items() if v is not None}
    # A `patches:` list with plain strings is the legacy patchesStrategicMerge.
    if any(isinstance(p, str) for p in k.get("patches") or []):
        k["patchesStrategicMerge"] = k.pop("patches")
    if warnings is not None:
        for key, msg in _DEPRECATED.items():
            if key in k:
                warnings.append(msg + (_FIX_EXPERIMENTAL if key == "vars" else _FIX))
    kind = k.get("kind") or "Kustomization"
    if kind not in ("Kustomization", "Component"):
        raise ValidationError(
            f"Failed to read kustomization file under {os.path.dirname(os.path.abspath(source))}: "
            "kind should be Kustomization or Component",
            file=source,
        )
    required = COMPONENT_VERSION if kind == "Component" else KUSTOMIZATION_VERSION
    if k.get("apiVersion") and k["apiVersion"] != required:
        raise ValidationError(
            f"Failed to read kustomization file under {os.path.dirname(os.path.abspath(source))}: "
            f"apiVersion for {kind} should be {required}",
            file=source,
        )
    k["kind"] = kind
    k.setdefault("apiVersion", required)
    if set(k) <= {"kind", "apiVersion"}:
        raise ValidationError("kustomization.yaml is empty", file=source)
    k["resources"] = list(k.get("resources") or []) + list(k.pop("bases", None) or [])
    k["images"] = list(k.get("images") or []) + list(k.pop("imageTags", None) or [])
    for gen in ("configMapGenerator", "secretGenerator"):
        for args in k.get(gen) or []:
            if isinstance(args, dict) and args.get("env"):
                args["envs"] = list(args.get("envs") or []) + [args.pop("env")]
    for field in ("resources", "components", "crds", "configurations"):
        for item in k.get(field) or []:
            if not isinstance(item, str):
                raise ValidationError(
                    f"invalid Kustomization: {field} entries must be strings, got {item!r}",
                    file=source,
                )
    return k


def not_a_kustomization(path: str) -> LoadError:
    """The error for a directory without a kustomization file."""
    return LoadError(f"'{path}' is not a kustomization", file=path)
