"""``krm edit fix --vars``: vars turned into replacements, as kustomize v5.5 turns them.

For each var, every file the kustomization names (its resources, the resources of the
kustomizations in resource directories, its patch files) is searched for ``$(NAME)`` in a
scalar; each hit becomes a replacement target (the resource's kind, name, namespace, group and
version, the field's path with list indices as numbers and dotted keys in brackets, and a
delimiter and index when the var is part of a longer value), and the hits are rewritten to
``NAME_PLACEHOLDER`` in the files. Targets found in a patch file select what the patch
targets. The var's object and field become the replacement's source. Like kustomize, the
conversion replaces the kustomization's ``replacements`` and drops ``vars``; a var that sits in
a value with different characters on either side cannot be converted (an error, and nothing
is written).
"""

from __future__ import annotations

import os
import posixpath

from orchestrator import yamlio
from orchestrator.edit.kustfile import KustFileError
from orchestrator.errors import KrmError
from orchestrator.yamlscalar import scalar_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


class FixVarsError(KustFileError):
    """A var that cannot be converted."""


def vars_to_replacements(data: dict[str, Any]) -> None:
    """Convert ``data``'s vars in place, rewriting the files that use them."""
    variables = data.get("vars")
    if variables is None:
        return
    data["resources"] = [*(data.get("resources") or []), *(data.pop("bases", None) or [])]
    patch_of: dict[str, dict[str, Any]] = {}
    files = _files_touched(data, "", patch_of)
    # Every file is rewritten in memory first: an error leaves the tree as it was.
    texts: dict[str, str] = {}
    replacements = []
    for var in variables:
        name = str(var.get("name") or "")
        replacement: dict[str, Any] = {"source": _source(var)}
        targets = _targets(name, files, patch_of, texts)
        if targets:
            replacement["targets"] = targets
        for path in files:
            text = _read(path, texts)
            if text is not None:
                texts[path] = text.replace(f"$({name})", f"{name}_PLACEHOLDER")
        replacements.append(replacement)
    for path, text in texts.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    data["replacements"] = replacements
    del data["vars"]


def _read(path: str, texts: dict[str, str]) -> str | None:
    if path in texts:
        return texts[path]
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def _files_touched(
    k: dict[str, Any], prefix: str, patch_of: dict[str, dict[str, Any]]
) -> list[str]:
    """The files a kustomization names. As kustomize does, a resource directory's own
    kustomization is read at the resource's path as written (not below ``prefix``)."""
    out: list[str] = []
    for entry in k.get("resources") or []:
        resource = str(entry)
        try:
            names = sorted(os.listdir(resource))
        except OSError:
            names = []
        for name in names:
            if name not in KUSTOMIZATION_FILES:
                continue
            try:
                with open(posixpath.join(resource, name), "rb") as f:
                    sub = yamlio.load_yaml11(f.read(), source=name)
            except OSError:
                continue
            sub_k = sub[0] if sub and isinstance(sub[0], dict) else {}
            out.extend(_files_touched(sub_k, resource, patch_of))
        out.append(posixpath.join(prefix, resource))
    for patch in k.get("patches") or []:
        if isinstance(patch, dict) and patch.get("path"):
            path = posixpath.join(prefix, str(patch["path"]))
            out.append(path)
            patch_of[path] = patch
    return out


def _source(var: dict[str, Any]) -> dict[str, Any]:
    ref = var.get("objref") or {}
    group, _, version = str(ref.get("apiVersion") or "").rpartition("/")
    fields = {
        "group": group,
        "version": version,
        "kind": ref.get("kind"),
        "name": ref.get("name"),
        "namespace": ref.get("namespace"),
        "fieldPath": (var.get("fieldref") or {}).get("fieldpath"),
    }
    return {k: v for k, v in fields.items() if v}


def _targets(
    name: str, files: list[str], patch_of: dict[str, dict[str, Any]], texts: dict[str, str]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in files:
        text = _read(path, texts)
        if text is None:
            continue
        try:
            docs = yamlio.load_all(text, source=path)
        except KrmError:
            continue  # kustomize skips a file it cannot read as YAML
        for doc in docs:
            hits: list[tuple[str, dict[str, Any]]] = []
            _find(doc, f"$({name})", [], hits, path)
            out.extend(_to_targets(path, doc, hits, patch_of))
    return out


def _find(
    node: Any, needle: str, at: list[str], hits: list[tuple[str, dict[str, Any]]], path: str
) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _find(item, needle, [*at, str(i)], hits, path)
    elif isinstance(node, dict):
        for key, value in node.items():
            step = scalar_text(key).strip()
            _find(value, needle, [*at, f"[{step}]" if "." in step else step], hits, path)
    elif isinstance(node, str) and needle in node:
        hits.append((".".join(at), _options(node, needle, path)))


def _options(value: str, needle: str, path: str) -> dict[str, Any]:
    """Where the var sits in a longer value: its delimiter and index (kustomize's rules)."""
    if value == needle:
        return {}
    i = value.index(needle)
    end = i + len(needle)
    if i == 0:
        delimiter, index = value[end], 0
    elif end >= len(value):
        delimiter = value[i - 1]
        index = len(value.split(delimiter)) - 1
    else:
        delimiter = value[i - 1]
        if value[end] != delimiter:
            raise FixVarsError(
                f"error with {path}: cannot convert all vars to replacements; {needle} is not "
                "delimited"
            )
        parts = value.split(delimiter)
        if needle not in parts:
            raise FixVarsError(f"error with {path}: cannot find {needle} between '{delimiter}'")
        index = parts.index(needle)
    return {k: v for k, v in (("delimiter", delimiter), ("index", index)) if v}


def _to_targets(
    path: str,
    doc: Any,
    hits: list[tuple[str, dict[str, Any]]],
    patch_of: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    md = doc.get("metadata") if isinstance(doc, dict) else None
    md = md if isinstance(md, dict) else {}
    name, namespace = scalar_text(md.get("name") or ""), scalar_text(md.get("namespace") or "")
    kind = scalar_text(doc.get("kind") or "") if isinstance(doc, dict) else ""
    patch = patch_of.get(path)
    options = (patch or {}).get("options") or {}
    out = []
    if patch is not None and not (
        options.get("allowNameChange") and options.get("allowKindChange")
    ):
        # What the patch targets (one selector shared by all of this document's targets).
        select = dict(patch.get("target") or {})
        if options.get("allowNameChange"):
            select["name"] = name
        if options.get("allowKindChange"):
            select["kind"] = kind
        if namespace:
            select["namespace"] = namespace
        select = {k: v for k, v in select.items() if v}
    else:
        api_version = scalar_text(doc.get("apiVersion") or "") if isinstance(doc, dict) else ""
        group, _, version = api_version.rpartition("/")
        fields = {
            "group": group, "version": version, "kind": kind, "name": name, "namespace": namespace
        }  # fmt: skip
        select = {k: v for k, v in fields.items() if v}
    for field_path, field_options in hits:
        target: dict[str, Any] = {"select": select, "fieldPaths": [field_path]}
        if field_options:
            target["options"] = field_options
        out.append(target)
    return out
