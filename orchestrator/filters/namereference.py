"""Name references: after renames (prefix, suffix, namespace, hash), fix the fields that
refer to renamed resources by name (ConfigMap volumes, Secret refs, roleRef, subjects...).

Follows kustomize's nameref filter: a resource is a candidate for a reference if one of
its *previous* names equals the referenced name and its kind is the referral target; then
namespace, roleRef kind and prefix/suffix history break ties. Candidates are found through
an index of previous names, so the whole pass is linear in the number of referring fields.
"""

from __future__ import annotations

from orchestrator.errors import KrmError
from orchestrator.fieldspec import KEEP, FieldSpec, NameBackRef
from orchestrator.filters.base import apply_spec
from orchestrator.resource import (
    NOT_A_NAMESPACE,
    Gvk,
    ResMap,
    Resource,
    effective_namespace,
    is_cluster_scoped,
    key_str,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


def _same_ending(a: list[str], b: list[str]) -> bool:
    if len(a) > len(b):
        a, b = b, a
    diff = len(b) - len(a)
    if not a:
        return diff == 0
    return all(b[i + diff] == a[i] for i in range(len(a)))


def _ps_equals(r: Resource, o: Resource, allow_empty: bool) -> bool:
    rp, op, rs, os_ = r.prefixes, o.prefixes, r.suffixes, o.suffixes
    if allow_empty:
        return (not rp or not op or _same_ending(rp, op)) and (
            not rs or not os_ or _same_ending(rs, os_)
        )
    return _same_ending(rp, op) and _same_ending(rs, os_)


def _gvk_selected(gvk: Gvk, sel: Gvk) -> bool:
    return (
        (not sel.group or sel.group == gvk.group)
        and (not sel.version or sel.version == gvk.version)
        and (not sel.kind or sel.kind == gvk.kind)
    )


class _Index:
    """Lookups shared by every referrer: previous names and namespaces of all resources."""

    def __init__(self, resources: list[Resource]):
        self.by_prev_name: dict[str, list[Resource]] = {}
        # current effective namespace -> original effective namespaces found there
        self.org_ns_by_cur_ns: dict[str, set[str]] = {}
        self.cur_ns_present: set[str] = set()
        for r in resources:
            seen = set()
            for _, name in r.previous:
                if name not in seen:
                    seen.add(name)
                    self.by_prev_name.setdefault(name, []).append(r)
            cur = r.effective_namespace()
            org_ns = r.previous[0][0] if r.previous else r.namespace
            org = effective_namespace(r.api_version, r.kind, org_ns)
            self.org_ns_by_cur_ns.setdefault(cur, set()).add(org)


class _Referrer:
    """One referring resource: which candidates it may see (kustomize's
    SubsetThatCouldBeReferencedByResource)."""

    def __init__(self, res: Resource):
        self.res = res
        self.cluster = is_cluster_scoped(res.api_version, res.kind)
        self.ns = res.effective_namespace()
        self.rb_namespaces: set[str] = set()
        if res.kind == "RoleBinding":
            for s in res.obj.get("subjects") or []:
                if (
                    isinstance(s, dict)
                    and s.get("kind") == "ServiceAccount"
                    and isinstance(s.get("namespace"), str)
                ):
                    self.rb_namespaces.add(s["namespace"])

    def can_see(self, c: Resource) -> bool:
        """Whether the referrer may refer to ``c`` (namespaces, role binding subjects)."""
        if self.cluster:
            return True
        cns = c.effective_namespace()
        if cns == NOT_A_NAMESPACE or cns == self.ns:
            return True
        return c.namespace in self.rb_namespaces


class NameReferenceTransformer:
    """Update name references (kustomize's FixBackReferences)."""

    def __init__(self, backrefs: list[NameBackRef]):
        self.backrefs = backrefs

    def transform(self, resmap: ResMap) -> None:
        """Apply this transformer to the resources, in place."""
        resources = resmap.resources()
        for res in resources:
            if res.kind == "RoleBinding":
                _check_subject_namespaces(res)
        index = _Index(resources)
        if not index.by_prev_name:
            # Nothing was ever renamed: no reference can need an update.
            return
        # Only targets with a renamed resource of their kind can need an update.
        renamed = {g for rs in index.by_prev_name.values() for r in rs for g in _prev_gvks(r)}
        # Referrer field specs by kind, so each resource only meets the specs for its kind.
        by_kind: dict[str, list[tuple[FieldSpec, Gvk]]] = {}
        for br in self.backrefs:
            if not any(_gvk_selected(g, br.target) for g in renamed):
                continue
            for fs in br.referrers:
                by_kind.setdefault(fs.kind, []).append((fs, br.target))
        any_kind = by_kind.get("", [])
        for res in resources:
            gvk = _org_gvk(res)
            specs = by_kind.get(gvk.kind, [])
            if any_kind:
                specs = specs + any_kind
            ref = None
            for fs, target in specs:
                if not _gvk_selected(gvk, fs.gvk):
                    continue
                if ref is None:
                    ref = _Referrer(res)
                self._fix(ref, fs, target, index)
        resmap.invalidate()

    def _fix(self, ref: _Referrer, fs: FieldSpec, target: Gvk, index: _Index) -> None:
        def setter(value: Any) -> Any:
            """Compute the new value of one field."""
            if value is None:
                return KEEP
            if isinstance(value, str):
                return self._scalar(ref, fs, target, index, value)
            if isinstance(value, dict):
                self._mapping(ref, fs, target, index, value)
                return KEEP
            if isinstance(value, list):
                for i, el in enumerate(value):
                    if isinstance(el, str):
                        new = self._scalar(ref, fs, target, index, el)
                        if new is not KEEP:
                            value[i] = new
                    elif isinstance(el, dict):
                        self._mapping(ref, fs, target, index, el)
                return KEEP
            return KEEP

        if not fs.selects(ref.res.gvk):
            return
        try:
            apply_spec(ref.res, fs, setter, None, selected=True)
        except KrmError as exc:
            raise KrmError(
                f"updating name reference in '{fs.path}' field: {exc.message}",
                file=ref.res.source,
                resource=ref.res.describe(),
            ) from None

    def _candidates(
        self, ref: _Referrer, fs: FieldSpec, target: Gvk, index: _Index, name: str
    ) -> list[Resource]:
        out = []
        for c in index.by_prev_name.get(name, ()):
            if not ref.can_see(c):
                continue
            out.append(c)
        return out

    def _select(
        self,
        ref: _Referrer,
        fs: FieldSpec,
        target: Gvk,
        name: str,
        candidates: list[Resource],
        same_ns_too: bool,
    ) -> Resource | None:
        # Previous names already matched through the index; now the target kind.
        cands = [c for c in candidates if any(_gvk_selected(g, target) for g in _prev_gvks(c))]
        if fs.path.endswith("roleRef/name"):
            role_ref = ref.res.obj.get("roleRef")
            if isinstance(role_ref, dict) and "apiGroup" in role_ref and "kind" in role_ref:
                sel = Gvk(str(role_ref.get("apiGroup") or ""), "", str(role_ref.get("kind") or ""))
                cands = [c for c in cands if any(_gvk_selected(g, sel) for g in _prev_gvks(c))]
        if not ref.cluster:
            cands = [
                c
                for c in cands
                if is_cluster_scoped(c.api_version, c.kind)
                or c.kind == "ServiceAccount"
                or c.effective_namespace() == ref.ns
            ]
        if len(cands) == 1:
            return cands[0]
        cands = [c for c in cands if _ps_equals(c, ref.res, True)]
        if len(cands) > 1:
            cands = [c for c in cands if _ps_equals(c, ref.res, False)]
        if len(cands) == 1:
            return cands[0]
        if not cands:
            return None
        first = cands[0]
        if all(
            c.name == first.name and (not same_ns_too or c.namespace == first.namespace)
            for c in cands
        ):
            return first
        ids = ", ".join(key_str(c.key()) for c in cands)
        raise KrmError(f"found multiple possible referrals: {ids}")

    def _scalar(self, ref: _Referrer, fs: FieldSpec, target: Gvk, index: _Index, name: str) -> Any:
        cands = self._candidates(ref, fs, target, index, name)
        if not cands:
            return KEEP
        referral = self._select(ref, fs, target, name, cands, False)
        if referral is None or referral.name == name:
            return KEEP
        return referral.name

    def _mapping(
        self, ref: _Referrer, fs: FieldSpec, target: Gvk, index: _Index, node: dict[str, Any]
    ) -> None:
        if "name" not in node:
            raise KrmError("path config error; no 'name' field in node")
        name = node["name"]
        if not isinstance(name, str):
            return
        cands = self._candidates(ref, fs, target, index, name)
        if "namespace" in node:
            ns = node["namespace"] if isinstance(node["namespace"], str) else ""
            if self._org_ns_group_exists(ref, index, ns):
                cands = [c for c in cands if _org_eff_ns(c) == ns]
            else:
                cands = [c for c in cands if c.effective_namespace() == ns]
        if not cands:
            return
        referral = self._select(ref, fs, target, name, cands, True)
        if referral is None:
            return
        if referral.name == name and referral.namespace == "":
            return
        node["name"] = referral.name
        if referral.namespace:
            node["namespace"] = referral.namespace

    @staticmethod
    def _org_ns_group_exists(ref: _Referrer, index: _Index, ns: str) -> bool:
        if ns == NOT_A_NAMESPACE:
            return False
        if ref.cluster:
            return any(ns in orgs for orgs in index.org_ns_by_cur_ns.values())
        if ns in index.org_ns_by_cur_ns.get(ref.ns, ()):
            return True
        for cur, orgs in index.org_ns_by_cur_ns.items():
            if ns in orgs and cur != NOT_A_NAMESPACE and cur in ref.rb_namespaces:
                return True
        return False


def _check_subject_namespaces(res: Resource) -> None:
    """kustomize rejects a ServiceAccount subject whose namespace is present but not a string."""
    for s in res.obj.get("subjects") or []:
        if (
            isinstance(s, dict)
            and "namespace" in s
            and s.get("kind") == "ServiceAccount"
            and not isinstance(s["namespace"], str)
        ):
            raise KrmError(
                f"Invalid Input: namespace is blank for resource {key_str(res.key())!r}",
                file=res.source,
                resource=res.describe(),
            )


def _org_eff_ns(r: Resource) -> str:
    ns = r.previous[0][0] if r.previous else r.namespace
    return effective_namespace(r.api_version, r.kind, ns)


def _org_gvk(r: Resource) -> Gvk:
    kinds = r.extra.get("prev_kinds")
    gvk = r.gvk
    if kinds:
        return Gvk(gvk.group, gvk.version, kinds[0])
    return gvk


def _prev_gvks(r: Resource) -> list[Gvk]:
    gvk = r.gvk
    kinds = r.extra.get("prev_kinds")
    if kinds:
        return [Gvk(gvk.group, gvk.version, k) for k in kinds]
    return [gvk]
