"""Loading and checking a Kustomization or Component document (kustomize v5.5.0 schema)."""

from __future__ import annotations

import os
from typing import Any

from orchestrator import yamlio
from orchestrator.errors import LoadError, ValidationError

KUSTOMIZATION_VERSION = "kustomize.config.k8s.io/v1beta1"
COMPONENT_VERSION = "kustomize.config.k8s.io/v1alpha1"

# field -> expected YAML type ("list", "map", "str", "any")
FIELDS: dict[str, str] = {
    "apiVersion": "str",
    "kind": "str",
    "metadata": "map",
    "openapi": "map",
    "namePrefix": "str",
    "nameSuffix": "str",
    "namespace": "str",
    "commonLabels": "map",
    "labels": "list",
    "commonAnnotations": "map",
    "patchesStrategicMerge": "list",
    "patchesJson6902": "list",
    "patches": "list",
    "images": "list",
    "imageTags": "list",
    "replacements": "list",
    "replicas": "list",
    "vars": "list",
    "sortOptions": "map",
    "resources": "list",
    "components": "list",
    "crds": "list",
    "bases": "list",
    "configMapGenerator": "list",
    "secretGenerator": "list",
    "helmGlobals": "map",
    "helmCharts": "list",
    "helmChartInflationGenerator": "list",
    "generatorOptions": "map",
    "configurations": "list",
    "generators": "list",
    "transformers": "list",
    "validators": "list",
    "buildMetadata": "list",
    "catalogs": "list",
}

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

_TYPES = {"list": list, "map": dict, "str": str}


def load(path: str, *, warnings: list[str] | None = None) -> dict[str, Any]:
    """Read, check and normalise the kustomization file at ``path``."""
    from orchestrator.fs import display

    with open(path, "rb") as f:
        data = f.read()
    return parse(data, source=display(path), warnings=warnings)


def parse(data: bytes | str, *, source: str, warnings: list[str] | None = None) -> dict[str, Any]:
    """Check and normalise a kustomization document (legacy fields folded in)."""
    docs = yamlio.load_all(data, source=source)
    if len(docs) > 1:
        raise ValidationError("invalid Kustomization: more than one YAML document", file=source)
    k = docs[0] if docs else {}
    if not isinstance(k, dict):
        raise ValidationError("invalid Kustomization: not a YAML map", file=source)
    for key, value in k.items():
        want = FIELDS.get(key)
        if want is None:
            raise ValidationError(f"invalid Kustomization: unknown field {key!r}", file=source)
        if value is None:
            continue
        typ = _TYPES.get(want)
        if typ is str and isinstance(value, (int, float, bool)):
            k[key] = (
                yamlio.format_float(value)
                if isinstance(value, float)
                else (str(value).lower() if isinstance(value, bool) else str(value))
            )
            continue
        if typ is not None and not isinstance(value, typ):
            raise ValidationError(
                f"invalid Kustomization: field {key!r} must be a {want}, got {value!r}",
                file=source,
            )
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
            f"Failed to read kustomization file under {os.path.dirname(source)}: "
            "kind should be Kustomization or Component",
            file=source,
        )
    required = COMPONENT_VERSION if kind == "Component" else KUSTOMIZATION_VERSION
    if k.get("apiVersion") and k["apiVersion"] != required:
        raise ValidationError(
            f"Failed to read kustomization file under {os.path.dirname(source)}: "
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
    return LoadError(f"'{path}' is not a kustomization", file=path)
