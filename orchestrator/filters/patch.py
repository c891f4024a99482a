"""Patches: target selection and the PatchTransformer family (``patches``,
``patchesStrategicMerge``, ``patchesJson6902``).

The merge algorithms themselves live in :mod:`orchestrator.strategicmerge` and
:mod:`orchestrator.filters.json6902`; this module decides which resources a patch
applies to and keeps names, namespaces and kinds as kustomize does.
"""

from __future__ import annotations

import os

from orchestrator import yamlio
from orchestrator.errors import KrmError, PatchError, ValidationError, YamlError
from orchestrator.filters.base import PluginContext, scalar_text
from orchestrator.fs import display
from orchestrator.lazyre import Literal, Pattern
from orchestrator.resource import ResMap, Resource, effective_namespace, id_key, key_str

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    import re
    from typing import Any

# ----------------------------------------------------------------------------- selectors


class Selector:
    """A patch target: regexes on group/version/kind/name/namespace plus label and
    annotation selectors."""

    FIELDS = ("group", "version", "kind", "name", "namespace")

    def __init__(self, spec: dict[str, Any], *, source: str | None = None):
        if not isinstance(spec, dict):
            raise ValidationError(f"patch target must be a map, got {spec!r}", file=source)
        # Unknown fields are not checked here: a kustomization's targets were checked with the
        # kustomization, and plugin configs are decoded leniently, as kustomize does.
        self.spec = spec
        self.regex: dict[str, re.Pattern[str] | Literal] = {}
        for f in self.FIELDS:
            value = scalar_text(spec.get(f) or "")
            if value and Literal.usable(value):
                self.regex[f] = Literal(value)
            elif value:
                import re

                try:
                    self.regex[f] = re.compile("^(?:" + value + ")$")
                except re.error as exc:
                    raise ValidationError(
                        f"invalid {f} regex {value!r} in patch target: {exc}", file=source
                    ) from None
        self.labels = parse_label_selector(spec.get("labelSelector"), source)
        self.annotations = parse_label_selector(spec.get("annotationSelector"), source)

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.spec.items() if v)

    def matches(self, res: Resource) -> bool:
        """Whether the selector selects ``res``."""
        rx = self.regex
        if "namespace" in rx:
            org_ns = res.previous[0][0] if res.previous else res.namespace
            av, kind = res.api_version, res.kind
            if not rx["namespace"].match(effective_namespace(av, kind, org_ns)) and not rx[
                "namespace"
            ].match(res.effective_namespace()):
                return False
        if "name" in rx and not rx["name"].match(res.orig_name) and not rx["name"].match(res.name):
            return False
        if rx.keys() & {"group", "version", "kind"}:
            gvk = res.gvk
            if "group" in rx and not rx["group"].match(gvk.group):
                return False
            if "version" in rx and not rx["version"].match(gvk.version):
                return False
            if "kind" in rx and not rx["kind"].match(gvk.kind):
                return False
        md = res.obj.get("metadata") or {}
        if self.labels is not None and not _match_selector(self.labels, md.get("labels")):
            return False
        return self.annotations is None or _match_selector(self.annotations, md.get("annotations"))

    def select(self, resmap: ResMap) -> list[Resource]:
        """The selected resources, in order."""
        return [r for r in resmap if self.matches(r)]


# One requirement of a label selector.
_REQUIREMENT = Pattern(
    r"\s*(!?)\s*([^\s!=,()]+)\s*(?:(==|=|!=|\s+in\s+|\s+notin\s+)\s*(\([^)]*\)|[^,\s]*))?\s*"
)


def parse_label_selector(text: Any, source: str | None = None) -> list[tuple[Any, ...]] | None:
    """Parse a Kubernetes label selector string into (key, op, values) requirements."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise ValidationError(f"label selector must be a string, got {text!r}", file=source)
    reqs: list[tuple[Any, ...]] = []
    for part in _split_top(text):
        m = _REQUIREMENT.fullmatch(part)
        if not m:
            raise ValidationError(f"unable to parse label selector {text!r}", file=source)
        neg, key, op, value = m.groups()
        op = (op or "").strip()
        if neg:
            if op:
                raise ValidationError(f"unable to parse label selector {text!r}", file=source)
            reqs.append((key, "!", ()))
        elif not op:
            reqs.append((key, "exists", ()))
        elif op in ("=", "=="):
            reqs.append((key, "=", (value,)))
        elif op == "!=":
            reqs.append((key, "!=", (value,)))
        else:
            values = tuple(v.strip() for v in value.strip("()").split(",") if v.strip())
            reqs.append((key, op, values))
    return reqs


def _split_top(text: str) -> list[str]:
    parts, depth = [], 0
    cur: list[str] = []
    for c in text:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def _match_selector(reqs: list[tuple[Any, ...]], labels: Any) -> bool:
    labels = labels if isinstance(labels, dict) else {}
    for key, op, values in reqs:
        present = key in labels
        value = scalar_text(labels.get(key)) if present else None
        if op == "exists" and not present:
            return False
        if op == "!" and present:
            return False
        if op == "=" and value != values[0]:
            return False
        if op == "!=" and present and value == values[0]:
            return False
        if op == "in" and (not present or value not in values):
            return False
        if op == "notin" and present and value in values:
            return False
    return True


# ----------------------------------------------------------------------------- applying


def _smp_merge(
    target: dict[str, Any], patch: dict[str, Any], res: Resource, ctx: PluginContext
) -> dict[str, Any] | None:
    from orchestrator import strategicmerge

    return strategicmerge.merge(target, patch, gvk=res.gvk, schema=ctx.schema)


def apply_smp(
    res: Resource, patch: Resource, ctx: PluginContext, *, options: dict[str, Any]
) -> bool:
    """Apply one strategic-merge patch to ``res`` in place; False if it deleted ``res``."""
    name, ns, kind = res.name, res.namespace, res.kind
    allow_name = bool(options.get("allowNameChange"))
    allow_kind = bool(options.get("allowKindChange"))
    if allow_name or allow_kind:
        res.store_previous()
        res.extra.setdefault("prev_kinds", []).append(kind)
    try:
        merged = _smp_merge(res.obj, patch.obj, res, ctx)
    except KrmError as exc:
        if not exc.file:
            exc.file = patch.source
        if not exc.resource:
            exc.resource = res.describe()
        raise
    if merged is None or not merged:
        return False
    from orchestrator.filters.labels import rebind_aliases

    rebind_aliases(res, res.obj, merged)
    res.obj = merged
    md = res.metadata
    if not allow_kind:
        merged["kind"] = kind
    if not allow_name:
        md["name"] = name
    if ns:
        md["namespace"] = ns
    else:
        md.pop("namespace", None)
    return True


def apply_json6902(
    res: Resource, ops: list[dict[str, Any]], source: str | None, *, store_previous: bool = False
) -> None:
    """Apply JSON6902 operations to ``res`` in place."""
    from orchestrator.filters import json6902

    if store_previous:
        res.store_previous()
    internal = _internal_annotations(res)
    obj = res.obj
    md = obj.get("metadata")
    had_annotations = isinstance(md, dict) and isinstance(md.get("annotations"), dict)
    if internal and isinstance(md, dict):
        # kustomize's resources carry its bookkeeping as annotations while a JSON patch runs,
        # so e.g. ``add /metadata/annotations/x`` works there without an annotations map.
        current = md["annotations"] if had_annotations else {}
        md = {**md, "annotations": {**current, **internal}}
        obj = {**obj, "metadata": md}
    try:
        patched = json6902.apply(obj, ops, source=source)
    except KrmError as exc:
        if not exc.resource:
            exc.resource = res.describe()
        raise
    ann = (patched.get("metadata") or {}).get("annotations") if internal else None
    if isinstance(ann, dict):
        for key in internal:
            ann.pop(key, None)
        if not ann and not had_annotations:
            del patched["metadata"]["annotations"]
    res.obj = patched


def _internal_annotations(res: Resource) -> dict[str, str]:
    """The internal annotations kustomize v5 would have on ``res`` at this point."""
    out: dict[str, str] = {}
    if res.prefixes:
        out["internal.config.kubernetes.io/prefixes"] = ",".join(res.prefixes)
    if res.suffixes:
        out["internal.config.kubernetes.io/suffixes"] = ",".join(res.suffixes)
    if res.previous:
        out["internal.config.kubernetes.io/previousKinds"] = ",".join(res.previous_kinds())
        out["internal.config.kubernetes.io/previousNames"] = ",".join(n for _, n in res.previous)
        out["internal.config.kubernetes.io/previousNamespaces"] = ",".join(
            ns or "default" for ns, _ in res.previous
        )
    if res.needs_hash:
        out["internal.config.kubernetes.io/needsHashSuffix"] = "enabled"
    return out


def parse_json_ops(text: str, source: str | None) -> list[dict[str, Any]]:
    """JSON6902 operations from JSON or YAML text.

    The text is read as given: kustomize trims an inline ``patch:`` (PatchTransformer does
    that before it gets here) but not a patch file, so a block scalar ending the file keeps
    its final line break. kustomize turns YAML operations into JSON with sigs.k8s.io/yaml,
    that is with go-yaml v2's YAML 1.1 typing: ``yes``, ``on``, ``y`` are booleans there."""
    if not text.strip():
        raise PatchError("empty json patch operations", file=source)
    docs = yamlio.load_yaml11(text, source=source)
    if len(docs) > 1:
        raise YamlError("expected a single YAML document", file=source)
    data = docs[0] if docs else None
    if not isinstance(data, list):
        raise PatchError("JSON patch must be a list of operations", file=source)
    for op in data:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError(f"invalid JSON patch operation {op!r}", file=source)
    return data


def _patch_resources(docs: list[Any], source: str | None) -> list[Resource]:
    out = []
    for d in docs:
        if not isinstance(d, dict):
            raise PatchError("a strategic merge patch must be a map", file=source)
        out.append(Resource(obj=d, source=source))
    return out


def _remove_deleted(resmap: ResMap, deleted: list[Resource]) -> None:
    if deleted:
        gone = {id(r) for r in deleted}
        resmap.set_list([r for r in resmap.resources() if id(r) not in gone])


def _apply_by_id(
    resmap: ResMap, patch: Resource, ctx: PluginContext, options: dict[str, Any]
) -> None:
    md = patch.obj.get("metadata") or {}
    namespace = scalar_text(md.get("namespace") or "")
    key = id_key(patch.api_version, patch.kind, scalar_text(md.get("name") or ""), namespace)
    matches = resmap.by_any_key(key)
    if len(matches) != 1:
        what = "no matches" if not matches else f"multiple matches ({len(matches)})"
        # kustomize names the patch's id as written: no namespace reads [noNs], not "default".
        shown = key_str((*key[:4], namespace))
        raise PatchError(
            f"{what} for Id {shown}; failed to find unique target for patch {shown}",
            file=patch.source,
        )
    res = matches[0]
    if not apply_smp(res, patch, ctx, options=options):
        _remove_deleted(resmap, [res])
    elif options.get("allowNameChange") or options.get("allowKindChange"):
        resmap.invalidate()
    # Otherwise the id is unchanged (name, namespace and kind are restored): the index holds.


class PatchTransformer:
    """One ``patches:`` entry: a strategic-merge or JSON6902 patch, inline or from a file."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.ctx = ctx
        path = config.get("path")
        patch = config.get("patch")
        if isinstance(patch, str):
            patch = patch.strip()
        self.options = config.get("options") or {}
        if not patch and not path:
            raise ValidationError("must specify one of patch and path", file=ctx.source)
        if patch and path:
            raise ValidationError("patch and path can't be set at the same time", file=ctx.source)
        if path:
            self.where: str | None = display(os.path.join(ctx.root, str(path)))
            text = yamlio.decode(ctx.read_file(str(path)), source=self.where)
        else:
            self.where = ctx.source
            text = patch if isinstance(patch, str) else yamlio.dump(patch)
        target = config.get("target")
        self.target = Selector(target, source=ctx.source) if target else None
        docs = yamlio.load_all(text, source=self.where)
        self.json_ops: list[dict[str, Any]] | None = None
        self.sm_patches: list[Resource] = []
        if len(docs) == 1 and isinstance(docs[0], list):
            self.json_ops = parse_json_ops(text, self.where)
        elif docs:
            self.sm_patches = _patch_resources(docs, self.where)
        else:
            if self.target is None:
                raise PatchError("must specify a target for JSON patch", file=self.where)
            raise PatchError("empty json patch operations", file=self.where)

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        if self.json_ops is not None:
            if self.target is None:
                raise PatchError("must specify a target for JSON patch", file=self.where)
            for res in self.target.select(resmap):
                apply_json6902(res, self.json_ops, self.where, store_previous=True)
            resmap.invalidate()
            return
        if self.target is None:
            before = len(resmap)
            for i, patch in enumerate(self.sm_patches):
                _apply_by_id(resmap, patch, self.ctx, self.options)
                if len(resmap) < before and i + 1 < len(self.sm_patches):
                    # kustomize v5.5.0 leaves the deleted resource behind as an empty node
                    # and crashes on the next patch of the same entry; fail as loudly.
                    raise PatchError(
                        "a patch that deletes a resource must be the last document of its "
                        "'patches' entry (kustomize v5.5.0 cannot apply further patches)",
                        file=self.where,
                    )
            return
        if len(self.sm_patches) > 1:
            raise PatchError(
                "Multiple Strategic-Merge Patches in one `patches` entry is not allowed to set "
                "`patches.target` field",
                file=self.where,
            )
        patch = self.sm_patches[0]
        deleted = []
        for res in self.target.select(resmap):
            copy = patch.copy()
            copy.obj["apiVersion"] = res.api_version
            copy.obj["kind"] = patch.kind
            if not apply_smp(res, copy, self.ctx, options=self.options):
                deleted.append(res)
        _remove_deleted(resmap, deleted)
        resmap.invalidate()


class PatchStrategicMergeTransformer:
    """``patchesStrategicMerge``: each entry a file path or an inline patch."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        self.ctx = ctx
        self.patches: list[Resource] = []
        paths = config.get("paths") or []
        for entry in paths:
            docs = None
            if isinstance(entry, str):
                try:
                    docs = yamlio.load_all(entry)
                except KrmError:
                    docs = None
                if docs and all(isinstance(d, dict) for d in docs):
                    self.patches.extend(_patch_resources(docs, ctx.source))
                    continue
                text = ctx.read_file(entry)
                where = display(os.path.join(ctx.root, entry))
                self.patches.extend(_patch_resources(yamlio.load_all(text, source=where), where))
            elif isinstance(entry, dict):
                self.patches.extend(_patch_resources([entry], ctx.source))
            else:
                raise ValidationError(
                    f"invalid patchesStrategicMerge entry {entry!r}", file=ctx.source
                )
        inline = config.get("patches")
        if inline:
            self.patches.extend(_patch_resources(yamlio.load_all(inline), ctx.source))
        if not self.patches:
            raise PatchError(f"patch appears to be empty; files={paths}", file=ctx.source)

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        for patch in self.patches:
            _apply_by_id(resmap, patch, self.ctx, {})


class PatchJson6902Transformer:
    """``patchesJson6902``: JSON6902 operations for one target."""

    def __init__(self, config: dict[str, Any], ctx: PluginContext):
        target = config.get("target")
        if not target:
            raise ValidationError("must specify a target for patch", file=ctx.source)
        self.target = Selector(target, source=ctx.source)
        path, ops = config.get("path"), config.get("jsonOp") or config.get("patch")
        if not path and not ops:
            raise ValidationError("empty file path and empty jsonOp", file=ctx.source)
        if path:
            self.where: str | None = display(os.path.join(ctx.root, str(path)))
            text = yamlio.decode(ctx.read_file(str(path)), source=self.where)
        else:
            self.where = ctx.source
            text = ops if isinstance(ops, str) else yamlio.dump(ops)
        self.ops = parse_json_ops(text, self.where)

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        for res in self.target.select(resmap):
            apply_json6902(res, self.ops, self.where)
        resmap.invalidate()
