"""ResourceList v1: the wire format between the engine and a function, and its results.

Items carry the internal annotations ``internal.config.kubernetes.io/path`` and ``index`` (and
the legacy ``config.kubernetes.io/path|index`` that older functions read) on the way in; every
internal annotation is removed on the way out. ``internal.config.kubernetes.io/id`` tracks each
item so that the engine's bookkeeping (original names, generator behaviour) follows a resource
through a function that keeps it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from typing import Any

from orchestrator import yamlio
from orchestrator.errors import KrmError
from orchestrator.functions.options import FunctionError
from orchestrator.resource import Resource

API_VERSION = "config.kubernetes.io/v1"
API_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1")
PATH = "internal.config.kubernetes.io/path"
INDEX = "internal.config.kubernetes.io/index"
ID = "internal.config.kubernetes.io/id"
LEGACY_PATH = "config.kubernetes.io/path"
LEGACY_INDEX = "config.kubernetes.io/index"
LEGACY_ID = "config.k8s.io/id"
INTERNAL = (
    PATH,
    INDEX,
    ID,
    LEGACY_PATH,
    LEGACY_INDEX,
    LEGACY_ID,
    "internal.config.kubernetes.io/annotations-migration-resource-id",
    "internal.config.kubernetes.io/seqindent",
)
SEVERITIES = ("error", "warning", "info")


def _item_path(res: Resource, kustomization_dir: str | None, seen: dict[str, str | None]) -> str:
    """A relative file path for the item, as kpt gives it (synthetic when there is no file)."""
    source = res.source
    if source and kustomization_dir:
        if source not in seen:
            rel = None
            full = source if os.path.isabs(source) else os.path.abspath(source)
            if os.path.isfile(full):
                rel = os.path.relpath(full, kustomization_dir)
                if rel.startswith(".."):
                    rel = None
            seen[source] = rel
        if seen[source]:
            return seen[source]  # type: ignore[return-value]
    kind = (res.kind or "resource").lower()
    return f"{kind}_{res.name or 'unnamed'}.yaml"


def to_items(
    resources: Iterable[Resource], kustomization_dir: str | None, *, deep: bool = True
) -> list[dict[str, Any]]:
    """Copies of the resources with path/index/id annotations set.

    ``deep``: for functions that get the items as objects and may change them in place (in
    process); otherwise (the items are only encoded) only the path to the annotations is copied.
    """
    items = []
    per_path: dict[str, int] = {}
    seen: dict[str, str | None] = {}
    for i, res in enumerate(resources):
        obj = copy.deepcopy(res.obj) if deep else dict(res.obj)
        md = obj.get("metadata")
        if not isinstance(md, dict):
            md = obj["metadata"] = {}
        elif not deep:
            md = obj["metadata"] = dict(md)
        ann = md.get("annotations")
        if not isinstance(ann, dict):
            ann = md["annotations"] = {}
        elif not deep:
            ann = md["annotations"] = dict(ann)
        path = ann.get(PATH) or ann.get(LEGACY_PATH) or _item_path(res, kustomization_dir, seen)
        index = per_path.get(path, 0)
        per_path[path] = index + 1
        ann[PATH] = ann[LEGACY_PATH] = path
        ann[INDEX] = ann[LEGACY_INDEX] = str(index)
        ann[ID] = str(i)
        items.append(obj)
    return items


def encode(items: list[dict[str, Any]], function_config: dict[str, Any] | None) -> bytes:
    """A ResourceList v1 as YAML bytes (the wire format functions read on stdin)."""
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "ResourceList", "items": items}
    if function_config is not None:
        doc["functionConfig"] = function_config
    return yamlio.dump(doc).encode("utf-8")


def decode(data: bytes | str, *, function: str) -> dict[str, Any]:
    """Parse a function's output (YAML or JSON) into {items, results, functionConfig}."""
    try:
        doc = yamlio.load(data, source=f"output of {function}")
    except KrmError as exc:
        raise FunctionError(f"{function} wrote output that is not YAML: {exc.message}") from None
    if doc is None:
        raise FunctionError(f"{function} wrote no output (expected a ResourceList on stdout)")
    if not isinstance(doc, dict) or doc.get("kind") != "ResourceList":
        got = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise FunctionError(f"{function} wrote output that is not a ResourceList (got {got!r})")
    if doc.get("apiVersion") not in API_VERSIONS:
        raise FunctionError(
            f"{function} wrote a ResourceList with apiVersion {doc.get('apiVersion')!r}, "
            f"expected one of {', '.join(API_VERSIONS)}"
        )
    items = doc.get("items") or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise FunctionError(
            f"{function} wrote a ResourceList whose items are not a list of objects"
        )
    results = doc.get("results") or []
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise FunctionError(f"{function} wrote results that are not a list of objects")
    return {"items": items, "results": results, "functionConfig": doc.get("functionConfig")}


def strip_internal(obj: dict[str, Any]) -> str | None:
    """Remove the internal annotations in place; returns the id annotation, if any."""
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return None
    ann = md.get("annotations")
    if not isinstance(ann, dict):
        return None
    ident = ann.get(ID)
    for key in INTERNAL:
        ann.pop(key, None)
    if not ann:
        del md["annotations"]
    return str(ident) if ident is not None else None


def from_items(
    items: list[dict[str, Any]], inputs: list[Resource], *, function: str
) -> list[Resource]:
    """Resources from output items; an item that kept its id keeps its bookkeeping."""
    out = []
    for obj in items:
        ident = strip_internal(obj)
        res: Resource | None = None
        if ident is not None and ident.isdigit() and int(ident) < len(inputs):
            res = inputs[int(ident)].copy(obj=obj)
        else:
            res = Resource(obj=obj, source=function)
        out.append(res)
    return out


def has_errors(results: list[dict[str, Any]]) -> bool:
    """Whether any result has severity error."""
    return any(str(r.get("severity", "")).lower() == "error" for r in results)


def format_result(result: dict[str, Any]) -> str:
    """One result as one readable line: [severity] resource field file: message."""
    parts = [f"[{str(result.get('severity') or 'info').lower()}]"]
    ref = result.get("resourceRef")
    if isinstance(ref, dict):
        ns = ref.get("namespace")
        parts.append(
            "/".join(
                str(x) for x in (ref.get("apiVersion"), ref.get("kind"), ns, ref.get("name")) if x
            )
        )
    fld = result.get("field")
    if isinstance(fld, dict) and fld.get("path"):
        parts.append(f"field {fld['path']}")
    f = result.get("file")
    if isinstance(f, dict) and f.get("path"):
        parts.append(f"file {f['path']}")
    return " ".join(parts) + f": {result.get('message', '')}"


def format_summary(function: str, results: list[dict[str, Any]]) -> str:
    """A readable block for one function's results (empty when there are none)."""
    if not results:
        return ""
    lines = [f"Results of {function}:"]
    lines.extend("  " + format_result(r) for r in results)
    return "\n".join(lines) + "\n"


def results_file(entries: list[dict[str, Any]]) -> str:
    """kpt's results.yaml shape: a FunctionResultList, one item per function run."""
    exit_code = 1 if any(e.get("exitCode") for e in entries) else 0
    doc = {
        "apiVersion": "kpt.dev/v1",
        "kind": "FunctionResultList",
        "metadata": {"name": "fnresults"},
        "exitCode": exit_code,
        # kpt's item shape: the readable "function" name is for the CLI's summary only.
        "items": [{k: v for k, v in e.items() if k != "function"} for e in entries],
    }
    return yamlio.dump(doc)


def write_results(directory: str, entries: list[dict[str, Any]]) -> str:
    """Write results.yaml into directory (created if needed); returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "results.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(results_file(entries))
    return path
