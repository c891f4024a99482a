"""Conformance corpus: patch cases built with merge()/json6902.apply vs kustomize's output.

Each case under tests/conformance/kustomize/cases that only uses resources (files or
plain sub-kustomizations), patches, patchesStrategicMerge, patchesJson6902 and openapi is
rebuilt here with a minimal driver (the loader proper belongs to the core engine) and
compared with the case's expected.yaml, which kustomize v5.5.0 produced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.errors import KrmError
from orchestrator.filters import json6902
from orchestrator.openapi import PatchSchema
from orchestrator.resource import Gvk
from orchestrator.strategicmerge import merge

CASES = Path(__file__).resolve().parents[1] / "conformance" / "kustomize" / "cases"
SUPPORTED = {
    "apiVersion",
    "kind",
    "resources",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "openapi",
}
PATCH_CASE = (
    "patch",
    "merge",
    "keep-",
    "remove-",
    "null-values",
    "infer-merge",
    "openapi",
    "json",
    "strategic",
    "deployment-env-merge",
)


class Unsupported(Exception):
    pass


def _load_all(text: str) -> list[Any]:
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]


def _kustomization(path: Path) -> dict:
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        if (path / name).exists():
            return yaml.load((path / name).read_text(), Loader=yaml.CSafeLoader) or {}
    raise Unsupported(f"no kustomization in {path}")


def _gvk(obj: dict) -> Gvk:
    return Gvk.from_api_version(obj.get("apiVersion"), obj.get("kind"))


def _matches(res: dict, target: dict) -> bool:
    if set(target) - {"kind", "name", "group", "version", "namespace", "labelSelector"}:
        raise Unsupported(f"target {target}")
    target = dict(target)
    selector = target.pop("labelSelector", None)
    if selector is not None and not _selects(selector, (res.get("metadata") or {}).get("labels")):
        return False
    g = _gvk(res)
    md = res.get("metadata") or {}
    checks = {
        "kind": g.kind,
        "group": g.group,
        "version": g.version,
        "name": md.get("name"),
        "namespace": md.get("namespace"),
    }
    import re

    return all(re.fullmatch(str(v), checks[k] or "") for k, v in target.items())


def _selects(selector: str, labels: dict | None) -> bool:
    labels = labels or {}
    for term in selector.split(","):
        term = term.strip()
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.strip()) != v.strip().lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _apply_sm(resources: list[dict], patch: dict, target: dict | None, schema) -> list[dict]:
    out = []
    hit = False
    for res in resources:
        if target is not None:
            selected = _matches(res, target)
        else:
            pmd = patch.get("metadata") or {}
            md = res.get("metadata") or {}
            selected = (
                _gvk(res) == _gvk(patch)
                and md.get("name") == pmd.get("name")
                and (md.get("namespace") or "") == (pmd.get("namespace") or "")
            )
        if not selected:
            out.append(res)
            continue
        hit = True
        p = dict(patch)
        if target is not None:
            p["apiVersion"] = res.get("apiVersion")  # kustomize: patchCopy.SetGvk(res gvk)
        md = res.get("metadata") or {}
        merged = merge(res, p, gvk=_gvk(res), schema=schema)
        if merged is None:
            continue
        # kustomize's ApplySmPatch restores kind, name and namespace.
        merged["kind"] = res.get("kind")
        merged.setdefault("metadata", {})["name"] = md.get("name")
        if md.get("namespace"):
            merged["metadata"]["namespace"] = md["namespace"]
        else:
            merged["metadata"].pop("namespace", None)
        out.append(merged)
    if not hit and target is None:
        raise KrmError(f"no resource matches strategic merge patch {patch.get('metadata')}")
    return out


def build(path: Path, schema: PatchSchema | None = None) -> tuple[list[dict], PatchSchema]:
    """Tiny kustomize: resources + patches only."""
    k = _kustomization(path)
    if set(k) - SUPPORTED:
        raise Unsupported(f"fields {sorted(set(k) - SUPPORTED)}")
    if "openapi" in k:
        if set(k["openapi"]) != {"path"}:
            raise Unsupported("openapi version")
        text = (path / k["openapi"]["path"]).read_text()
        schema = PatchSchema.from_openapi(yaml.load(text, Loader=yaml.CSafeLoader))
    resources: list[dict] = []
    for r in k.get("resources") or []:
        p = path / r
        if p.is_dir():
            sub, schema = build(p, schema)
            resources += sub
        elif p.is_file():
            resources += _load_all(p.read_text())
        else:
            raise Unsupported(f"resource {r}")
    schema = schema or PatchSchema.default()
    for entry in k.get("patchesStrategicMerge") or []:
        text = (path / entry).read_text() if (path / entry).is_file() else entry
        for patch in _load_all(text):
            if not isinstance(patch, dict):
                raise KrmError(f"patch {entry!r} is not a file or a resource")
            resources = _apply_sm(resources, patch, None, schema)
    for entry in k.get("patches") or []:
        if set(entry) - {"path", "patch", "target"}:
            raise Unsupported(f"patch options {entry}")
        text = (path / entry["path"]).read_text() if "path" in entry else entry["patch"]
        docs = _load_all(text)
        if not docs:
            raise Unsupported("empty patch file (the loader's rule)")
        target = entry.get("target")
        if len(docs) == 1 and isinstance(docs[0], list):
            ops = json6902.parse_ops(text, "patch")
            resources = [
                json6902.apply(r, ops, source="patch") if _matches(r, target) else r
                for r in resources
            ]
            continue
        for patch in docs:
            resources = _apply_sm(resources, patch, target, schema)
    for entry in k.get("patchesJson6902") or []:
        text = (path / entry["path"]).read_text() if "path" in entry else entry["patch"]
        ops = json6902.parse_ops(text, "patch")
        target = {
            key: entry["target"][key]
            for key in ("kind", "name", "group", "version", "namespace")
            if key in entry["target"]
        }
        resources = [
            json6902.apply(r, ops, source="patch") if _matches(r, target) else r for r in resources
        ]
    return resources, schema


def _canon(docs: list[dict]) -> list[str]:
    return sorted(json.dumps(d, sort_keys=True) for d in docs)


def _has_patches(case: Path) -> bool:
    return any("patches" in k.read_text() for k in case.rglob("kustomization.y*ml") if k.is_file())


def _driver_can_build(case: Path) -> bool:
    """False for cases that need more than resources and patches (the conformance test has them)."""
    meta = yaml.safe_load((case / "case.yaml").read_text())
    try:
        build(case / meta.get("build", "."))
    except Unsupported:
        return False
    except Exception:
        return True  # an error case, or a real failure: the test shows which
    return True


def _cases() -> list[str]:
    assert CASES.is_dir(), f"conformance corpus not found at {CASES}"
    return sorted(
        c.name
        for c in CASES.iterdir()
        if (any(p in c.name for p in PATCH_CASE) or _has_patches(c)) and _driver_can_build(c)
    )


@pytest.mark.parametrize("name", _cases())
def test_corpus_case(name: str) -> None:
    case = CASES / name
    meta = yaml.safe_load((case / "case.yaml").read_text())
    if meta.get("expect") == "error":
        with pytest.raises(KrmError):
            build(case / meta.get("build", "."))
        return
    got, _ = build(case / meta.get("build", "."))
    expected = _load_all((case / "expected.yaml").read_text())
    assert _canon(got) == _canon(expected)
