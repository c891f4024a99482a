"""JSON 6902 patches, applied like kustomize v5.5.0 (evanphx/json-patch v4).

The ``jsonpatch`` library does the work; ops are adjusted first where evanphx differs
from RFC 6902 as jsonpatch implements it: negative array indices count from the end
(``add`` at ``-1`` appends), ``replace`` of a missing map key adds it, and ``test`` reads a
missing map key as null.

kustomize reads the patched JSON back into Go's ``map[string]interface{}``, where every number
is a float64, and prints the resource through JSON and go-yaml v2: an integer beyond 2**53
comes out as the float64 nearest to it (and as a float beyond the 64-bit range). ``apply``
does the same to the resource's integers and to the values its operations add.
"""

from __future__ import annotations

import json

from orchestrator.errors import PatchError
from orchestrator.lazyre import Pattern
from orchestrator.yamlscalar import go_integral

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["apply", "parse_ops"]

_OPS = ("add", "remove", "replace", "move", "copy", "test")


def parse_ops(text: str, source: str | None = None) -> list[dict[str, Any]]:
    """Parse JSON 6902 operations given as a JSON array or YAML list."""
    from orchestrator.yamllimits import check_depth, check_text  # lazy: imports yaml

    stripped = text.strip()
    if not stripped:
        raise PatchError("empty json patch operations", file=source)
    if stripped.startswith("["):
        try:
            ops = json.loads(stripped)
        except (ValueError, RecursionError) as e:
            raise PatchError(f"invalid JSON patch: {e}", file=source) from None
        check_depth(ops, source=source)
    else:
        import yaml  # lazy: only YAML patches need it

        check_text(stripped, source=source)
        try:
            ops = yaml.load(stripped, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as e:
            raise PatchError(f"invalid JSON patch: {e}", file=source) from None
    if not isinstance(ops, list):
        raise PatchError(
            f"a JSON patch must be a list of operations, got {type(ops).__name__}", file=source
        )
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise PatchError(f"JSON patch operation {i} is not a map: {op!r}", file=source)
    return ops


def apply(
    obj: dict[str, Any], ops: list[dict[str, Any]], *, source: str | None = None
) -> dict[str, Any]:
    """Apply JSON 6902 ``ops`` to a copy of ``obj`` and return it (``obj`` is unchanged)."""
    import jsonpatch  # lazy: keeps the CLI import fast

    doc: Any = _go_json(obj)  # kustomize round-trips through JSON too
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise PatchError(f"JSON patch operation {i} is not a map: {op!r}", file=source)
        name = op.get("op")
        path = op.get("path")
        where = f"op {i} ({name} {path})" if path is not None else f"op {i} ({name})"
        if name not in _OPS:
            raise PatchError(f"{where}: Unexpected kind: {name}", file=source)
        if not isinstance(path, str):
            raise PatchError(f"{where}: operation has no 'path'", file=source)
        if name in ("move", "copy") and not isinstance(op.get("from"), str):
            raise PatchError(f"{where}: operation has no 'from'", file=source)
        if name in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"{where}: operation has no 'value'", file=source)
        op = _evanphx(doc, dict(op))
        if "value" in op:
            op["value"] = _go_json(op["value"])
        if name == "test" and op["value"] is None:
            parent, last = _parent(doc, op["path"])
            if isinstance(parent, dict) and last not in parent:
                continue  # evanphx v4 reads a missing map key as null, so the test passes
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            raise PatchError(f"{where}: testing value {path} failed: test failed", file=source)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            raise PatchError(f"{where}: {e}", file=source) from None
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise PatchError(f"{where}: {type(e).__name__}: {e}", file=source) from None
    if not isinstance(doc, dict):
        raise PatchError(f"JSON patch left a {type(doc).__name__}, not a map", file=source)
    return doc


# 16 digits in a row: the least an integer beyond 2**53 (9007199254740992) needs.
_LONG_DIGITS = Pattern(r"[0-9]{16}")


def _go_json(value: Any) -> Any:
    """A copy of ``value`` as Go holds it after json.Unmarshal into interface{} (see above)."""
    text = json.dumps(value)
    if _LONG_DIGITS.search(text) is None:
        return json.loads(text)
    return json.loads(text, parse_int=_go_int)


def _go_int(text: str) -> int | float:
    """The number kustomize prints for the JSON integer ``text`` read as a float64
    (``yamlscalar.go_integral``: an integer within int64/uint64, else a float)."""
    v = int(text)
    if -(2**53) <= v <= 2**53:
        return v
    try:
        f = float(v)
    except OverflowError:
        return v  # beyond float64: kustomize fails to read it back; keep it as written
    if abs(f) < 1e21:
        n = go_integral(f)
        if n is not None:
            return n
    return f


def _evanphx(doc: Any, op: dict[str, Any]) -> dict[str, Any]:
    """Rewrite one op so that jsonpatch does what evanphx/json-patch v4 does."""
    for key in ("path", "from"):
        if isinstance(op.get(key), str):
            op[key] = _positive_indices(doc, op[key], append=(key == "path" and op["op"] == "add"))
    if op["op"] == "replace":
        parent, last = _parent(doc, op["path"])
        if isinstance(parent, dict) and last not in parent:
            op["op"] = "add"  # evanphx v4 replaces a missing key by adding it
    return op


def _split(path: str) -> list[str]:
    if not path:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _join(parts: list[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _positive_indices(doc: Any, path: str, *, append: bool) -> str:
    parts = _split(path)
    node = doc
    changed = False
    for i, part in enumerate(parts):
        if isinstance(node, list) and part.startswith("-") and part[1:].isdigit():
            n = int(part)
            last = i == len(parts) - 1
            idx = len(node) + n + (1 if (append and last) else 0)
            if idx >= 0:
                parts[i] = str(idx)
                part = parts[i]
                changed = True
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            node = None
    return _join(parts) if changed else path


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    parts = _split(path)
    if not parts:
        return None, ""
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None, parts[-1]
    return node, parts[-1]
