"""Read and rewrite ``kustomization.yaml`` byte for byte as ``kustomize edit`` does.

kustomize decodes the file into its Go ``Kustomization`` type, applies its legacy-field fixes,
and writes each top-level field on its own through JSON and go-yaml v2 (so nested keys come
out sorted): first the fields the file had, in the file's order, each preceded by the comment
and blank lines that stood before it, then the remaining fields in its preferred order. Comments
that are not directly above a top-level field move up to the field before them; trailing
comments at the end of the file are dropped, as kustomize drops them.
"""

from __future__ import annotations

import os
import re

from orchestrator import yamlio
from orchestrator.errors import KrmError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

KUSTOMIZATION_VERSION = "kustomize.config.k8s.io/v1beta1"
COMPONENT_VERSION = "kustomize.config.k8s.io/v1alpha1"
FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

# kustomize's preferred order of the top-level fields, as (Go field name, JSON key).
FIELD_ORDER: tuple[tuple[str, str], ...] = (
    ("APIVersion", "apiVersion"),
    ("Kind", "kind"),
    ("MetaData", "metadata"),
    ("SortOptions", "sortOptions"),
    ("Resources", "resources"),
    ("Bases", "bases"),
    ("NamePrefix", "namePrefix"),
    ("NameSuffix", "nameSuffix"),
    ("Namespace", "namespace"),
    ("Crds", "crds"),
    ("CommonLabels", "commonLabels"),
    ("Labels", "labels"),
    ("CommonAnnotations", "commonAnnotations"),
    ("PatchesStrategicMerge", "patchesStrategicMerge"),
    ("PatchesJson6902", "patchesJson6902"),
    ("Patches", "patches"),
    ("ConfigMapGenerator", "configMapGenerator"),
    ("SecretGenerator", "secretGenerator"),
    ("HelmCharts", "helmCharts"),
    ("HelmChartInflationGenerator", "helmChartInflationGenerator"),
    ("HelmGlobals", "helmGlobals"),
    ("GeneratorOptions", "generatorOptions"),
    ("Vars", "vars"),
    ("Images", "images"),
    ("Replacements", "replacements"),
    ("Replicas", "replicas"),
    ("Configurations", "configurations"),
    ("Generators", "generators"),
    ("Transformers", "transformers"),
    ("Validators", "validators"),
    ("Components", "components"),
    ("OpenAPI", "openapi"),
    ("BuildMetadata", "buildMetadata"),
)
# Keys of the Go type that are not in the order above (a deprecated one, read and folded in).
_OTHER_KEYS = frozenset(("imageTags",))
_KNOWN_KEYS = frozenset(key for _, key in FIELD_ORDER) | _OTHER_KEYS
# Pointer-typed fields are written when present even if empty (``generatorOptions: {}``).
_POINTERS = frozenset(("metadata", "sortOptions", "helmGlobals", "generatorOptions"))
_STRINGS = frozenset(("apiVersion", "kind", "namePrefix", "nameSuffix", "namespace"))
_STRING_LISTS = frozenset(
    (
        "resources",
        "bases",
        "crds",
        "components",
        "configurations",
        "generators",
        "transformers",
        "validators",
        "buildMetadata",
        "patchesStrategicMerge",
    )
)
_STRING_MAPS = frozenset(("commonLabels", "commonAnnotations", "openapi"))
_FIELD_LINE = {go: re.compile("^" + re.escape(go) + ":", re.IGNORECASE) for go, _ in FIELD_ORDER}
_GO_TO_KEY = dict(FIELD_ORDER)


class KustFileError(KrmError):
    """The kustomization file is missing, ambiguous or not a valid Kustomization."""


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_BY_LOWER = {key.lower(): key for key in _KNOWN_KEYS}


def _canonical_keys(data: dict[str, Any]) -> dict[str, Any]:
    """Go's JSON decoding matches field names without regard to case (``RESOURCES:`` counts)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        out[key if key in _KNOWN_KEYS else _BY_LOWER.get(str(key).lower(), key)] = value
    return out


def _check_types(data: dict[str, Any]) -> None:
    """Refuse what Go's strict JSON decoding into ``Kustomization`` refuses, with its message."""
    for key, value in data.items():
        if key not in _KNOWN_KEYS:
            raise KustFileError(f'invalid Kustomization: json: unknown field "{key}"')
        if value is None:
            continue
        go = next((g for g, k in FIELD_ORDER if k == key), "ImageTags")
        where = f"Go struct field Kustomization.{key}"
        if key in _STRINGS and not isinstance(value, str):
            raise KustFileError(
                f"invalid Kustomization: json: cannot unmarshal {_json_type(value)} "
                f"into {where} of type string"
            )
        if key in _STRING_LISTS:
            if not isinstance(value, list):
                raise KustFileError(
                    f"invalid Kustomization: json: cannot unmarshal {_json_type(value)} "
                    f"into {where} of type []string"
                )
            for item in value:
                if not isinstance(item, str):
                    kind = (
                        "types.PatchStrategicMerge" if go == "PatchesStrategicMerge" else "string"
                    )
                    raise KustFileError(
                        f"invalid Kustomization: json: cannot unmarshal {_json_type(item)} "
                        f"into {where} of type {kind}"
                    )
        if key in _STRING_MAPS:
            if not isinstance(value, dict):
                raise KustFileError(
                    f"invalid Kustomization: json: cannot unmarshal {_json_type(value)} "
                    f"into {where} of type map[string]string"
                )
            for item in value.values():
                if not isinstance(item, str):
                    raise KustFileError(
                        f"invalid Kustomization: json: cannot unmarshal {_json_type(item)} "
                        f"into {where} of type string"
                    )


def fix(data: dict[str, Any]) -> None:
    """kustomize's ``FixKustomization``: defaults for kind and apiVersion, legacy fields folded."""
    if not data.get("kind"):
        data["kind"] = "Kustomization"
    if not data.get("apiVersion"):
        component = data["kind"] == "Component"
        data["apiVersion"] = COMPONENT_VERSION if component else KUSTOMIZATION_VERSION
    if data.get("bases"):
        data["resources"] = list(data.get("resources") or []) + list(data["bases"])
    data.pop("bases", None)
    if data.get("imageTags"):
        data["images"] = list(data.get("images") or []) + list(data["imageTags"])
    data.pop("imageTags", None)
    for key in ("configMapGenerator", "secretGenerator"):
        for gen in data.get(key) or []:
            # EnvSource (``env:``) is folded into EnvSources (``envs:``).
            if isinstance(gen, dict) and gen.get("env"):
                gen["envs"] = list(gen.get("envs") or []) + [gen["env"]]
                del gen["env"]


def _is_comment_or_blank(line: str) -> bool:
    s = line.lstrip(" ").rstrip("\n")
    return not s or s.startswith("#")


def _field_of(line: str) -> str | None:
    for go, pattern in _FIELD_LINE.items():
        if pattern.match(line):
            return go
    return None


def _empty(key: str, value: Any) -> bool:
    if value is None:
        return True
    if key in _POINTERS:
        return False
    return hasattr(value, "__len__") and len(value) == 0


class KustomizationFile:
    """The kustomization file of a directory, its decoded fields and its comments."""

    def __init__(self, directory: str = ".") -> None:
        found = [n for n in FILE_NAMES if os.path.exists(os.path.join(directory, n))]
        if not found:
            raise KustFileError("Missing kustomization file 'kustomization.yaml'.\n")
        if len(found) > 1:
            raise KustFileError(f"Found multiple kustomization file: [{' '.join(found)}]\n")
        self.name = found[0]
        self.path = os.path.join(directory, self.name)
        if os.path.isdir(self.path):
            raise KustFileError(f"{self.name} should be a file")
        self._fields: list[tuple[str, str]] = []  # (Go field name, comment text before it)

    def read(self) -> dict[str, Any]:
        """The file's fields (JSON keys), fixed as kustomize fixes them before editing."""
        with open(self.path, "rb") as f:
            raw = f.read()
        text = yamlio.decode(raw, source=self.name)
        docs = yamlio.load_yaml11(text, source=self.name) if text.strip() else []
        if len(docs) > 1:
            raise KustFileError("invalid Kustomization: yaml: more than one document")
        data = docs[0] if docs else {}
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise KustFileError(
                f"invalid Kustomization: json: cannot unmarshal {_json_type(data)} "
                "into Go value of type types.Kustomization"
            )
        data = _canonical_keys(data)
        _check_types(data)
        fix(data)
        self._parse_comments(text)
        return data

    def _parse_comments(self, text: str) -> None:
        comments: list[str] = []
        lines = text.split("\n")
        # Like Go's ReadBytes loop: a last line without a newline is never looked at.
        for body in lines[:-1]:
            line = body + "\n"
            if _is_comment_or_blank(line):
                comments.append(line)
                continue
            field = _field_of(line)
            if field is not None:
                self._fields.append((field, "".join(comments)))
                comments = []
            elif comments and self._fields:
                go, before = self._fields[-1]
                self._fields[-1] = (go, before + "".join(comments))
                comments = []

    def render(self, data: dict[str, Any]) -> str:
        """The file's new text: kept fields in the file's order, then the others."""
        out: list[str] = []
        seen = set()
        for go, comment in self._fields:
            seen.add(go)
            out.append(comment)
            out.append(_marshal(_GO_TO_KEY[go], data))
        for go, key in FIELD_ORDER:
            if go not in seen:
                out.append(_marshal(key, data))
        return "".join(out)

    def write(self, data: dict[str, Any]) -> None:
        """Rewrite the file in place (its mode is kept)."""
        text = self.render(data)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(text)


def _marshal(key: str, data: dict[str, Any]) -> str:
    value = data.get(key)
    if _empty(key, value):
        return ""
    return yamlio.dump({key: value})
