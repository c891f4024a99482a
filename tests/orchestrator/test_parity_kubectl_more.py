"""Differential tests for differences found on a second set of public repositories.

Each case is the smallest input written here that showed the difference, plus its
neighbours; output must be byte-identical to ``kubectl kustomize`` (kustomize v5.5.0), and
where kubectl fails krm must fail too.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orchestrator.build import BuildOptions, build
from orchestrator.errors import KrmError
from orchestrator.fs import ROOT_ONLY

from .conftest import kubectl_kustomize


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _compare(path: Path, restrictor: str = ROOT_ONLY) -> str:
    """krm against kubectl on ``path``; returns kubectl's output (it must succeed)."""
    oracle = kubectl_kustomize(path, "--load-restrictor", restrictor)
    assert oracle.returncode == 0, oracle.stderr.decode()[-400:]
    try:
        ours = build(str(path), BuildOptions(load_restrictor=restrictor)).to_yaml()
    except KrmError as exc:
        pytest.fail(f"krm failed where kubectl succeeded: {exc}")
    assert ours == oracle.stdout.decode()
    return ours


# ------------------------------------------- JSON 6902 patch files ending in a block scalar

ARGOCD = """
    apiVersion: example.com/v1
    kind: ArgoCD
    metadata:
      name: gitops
    spec:
      checks: []
"""

# A patch file whose last value is a block scalar: its final line break is kept (kustomize
# trims inline ``patch:`` text, never a patch file).
OPS_CLIP = """
    - op: add
      path: /spec/checks/-
      value:
        kind: InstallPlan
        check: |
          hs = {}
          return hs
"""

OPS_KEEP = """
    - op: add
      path: /spec/checks/-
      value:
        check: |+
          keep

"""


@pytest.mark.parametrize(
    "kustomization",
    [
        # patches: with a path (the case seen on a public repository)
        """
        resources: [argocd.yaml]
        patches:
        - path: ops.yaml
          target: {kind: ArgoCD}
        - path: keep.yaml
          target: {kind: ArgoCD}
        """,
        # the legacy field becomes a patches: entry
        """
        resources: [argocd.yaml]
        patchesJson6902:
        - path: ops.yaml
          target: {group: example.com, version: v1, kind: ArgoCD, name: gitops}
        - path: keep.yaml
          target: {group: example.com, version: v1, kind: ArgoCD, name: gitops}
        """,
        # the builtin PatchJson6902Transformer configured under transformers:
        """
        resources: [argocd.yaml]
        transformers: [json6902.yaml]
        """,
    ],
    ids=["patches-path", "patchesJson6902-path", "transformer-config-path"],
)
def test_a_json_patch_file_keeps_the_final_line_break_of_a_block_scalar(
    tmp_path: Path, kustomization: str
) -> None:
    root = _write(
        tmp_path,
        {
            "kustomization.yaml": kustomization,
            "argocd.yaml": ARGOCD,
            "ops.yaml": OPS_CLIP,
            "keep.yaml": OPS_KEEP,
            "json6902.yaml": """
                apiVersion: builtin
                kind: PatchJson6902Transformer
                metadata:
                  name: ops
                target: {group: example.com, version: v1, kind: ArgoCD, name: gitops}
                path: ops.yaml
            """,
        },
    )
    out = _compare(root)
    assert "  - check: |\n      hs = {}\n      return hs\n" in out


def test_an_inline_json_patch_is_trimmed_like_kubectl(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "kustomization.yaml": """
                resources: [argocd.yaml]
                patches:
                - target: {kind: ArgoCD}
                  patch: |
                    - op: add
                      path: /spec/checks/-
                      value:
                        check: |
                          trimmed
            """,
            "argocd.yaml": ARGOCD,
        },
    )
    out = _compare(root)
    assert "  - check: trimmed\n" in out
