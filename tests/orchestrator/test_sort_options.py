"""``sortOptions`` checked like kustomize v5.5 (its SortOrderTransformer's validation), and
SortOrderTransformer refused under ``transformers:``, each against ``kubectl kustomize``."""

from __future__ import annotations

import subprocess
import sys

import pytest

RES = """apiVersion: v1
kind: Service
metadata:
  name: s
---
apiVersion: v1
kind: Namespace
metadata:
  name: n
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
"""
ORDER = "the field 'sortOptions.order' must be one of [fifo, legacy]"


def _krm(root) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "--no-cache", str(root)],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("{order: bogus}", ORDER),
        ("{order: Legacy}", ORDER),
        ("{}", ORDER),  # an order is required once sortOptions is given
        ('{order: ""}', ORDER),
        ("{legacySortOptions: {orderFirst: [Service], orderLast: []}}", ORDER),
        (
            "{order: fifo, legacySortOptions: {orderFirst: [Service]}}",
            "the field 'sortOptions.legacySortOptions' is set but the selected sort order is "
            "'fifo', not 'legacy'",
        ),
        (
            "{order: fifo, legacySortOptions: {}}",
            "the field 'sortOptions.legacySortOptions' is set but the selected sort order is "
            "'fifo', not 'legacy'",
        ),
    ],
)
def test_invalid_sort_options_are_refused_like_kustomize(tree, oracle, options, message) -> None:
    root = tree({"kustomization.yaml": f"resources: [res.yaml]\nsortOptions: {options}\n"})
    (root / "res.yaml").write_text(RES)
    expected = oracle(root)
    assert expected.returncode == 1
    assert message in expected.stderr.decode()
    got = _krm(root)
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == f"Error: {root / 'kustomization.yaml'}: {message}\n"


@pytest.mark.parametrize(
    "options",
    [
        "{order: legacy, legacySortOptions: {}}",  # empty lists: no kind ranked first or last
        "{order: legacy, legacySortOptions: {orderFirst: [Deployment], orderLast: [Namespace]}}",
        "{order: legacy, legacySortOptions: {orderLast: [Service]}}",
        "{order: fifo}",
        "null",
    ],
)
def test_valid_sort_options_order_like_kustomize(tree, oracle, options) -> None:
    root = tree({"kustomization.yaml": f"resources: [res.yaml]\nsortOptions: {options}\n"})
    (root / "res.yaml").write_text(RES)
    expected = oracle(root)
    assert expected.returncode == 0, expected.stderr
    got = _krm(root)
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout.decode()


def test_sort_order_transformer_is_no_builtin_of_a_kustomization(tree, oracle) -> None:
    root = tree(
        {
            "kustomization.yaml": "resources: [res.yaml]\ntransformers: [t.yaml]\n",
            "t.yaml": "apiVersion: builtin\nkind: SortOrderTransformer\nmetadata:\n  name: s\n"
            "sortOptions:\n  order: fifo\n",
        }
    )
    (root / "res.yaml").write_text(RES)
    expected = oracle(root)
    assert expected.returncode == 1
    assert "unable to load builtin SortOrderTransformer.builtin.[noGrp]" in expected.stderr.decode()
    got = _krm(root)
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == (
        f"Error: {root / 'kustomization.yaml'}: unable to load builtin "
        "SortOrderTransformer.builtin.[noGrp] (order the output with sortOptions: instead)\n"
    )
