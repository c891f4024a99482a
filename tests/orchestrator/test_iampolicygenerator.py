"""The builtin IAMPolicyGenerator, from the inputs of kustomize v5.5.0's krusty tests
(api/krusty/iampolicygenerator_test.go), with kubectl kustomize as the expected output."""

from __future__ import annotations

import subprocess
import sys

import pytest

ONE = """generators:
- |-
  apiVersion: builtin
  kind: IAMPolicyGenerator
  metadata:
    name: my-gke-generator
  cloud: gke
  kubernetesService:
    name: k8s-sa-name
  serviceAccount:
    name: gsa-name
    projectId: project-id
"""
WITH_NAMESPACE = ONE.replace(
    "  kubernetesService:\n", "  kubernetesService:\n    namespace: k8s-namespace\n"
)
TWO = {
    "kustomization.yaml": "generators:\n- gkegenerator1.yaml\n- gkegenerator2.yaml\n",
    "gkegenerator1.yaml": """apiVersion: builtin
kind: IAMPolicyGenerator
metadata:
  name: my-gke-generator1
cloud: gke
kubernetesService:
  namespace: k8s-namespace-1
  name: k8s-sa-name-1
serviceAccount:
  name: gsa-name-1
  projectId: project-id-1
""",
    "gkegenerator2.yaml": """apiVersion: builtin
kind: IAMPolicyGenerator
metadata:
  name: my-gke-generator2
cloud: gke
kubernetesService:
  name: k8s-sa-name-2
serviceAccount:
  name: gsa-name-2
  projectId: project-id-2
""",
}


def _krm(root) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "--no-cache", str(root)],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "files",
    [
        {"kustomization.yaml": ONE},
        {"kustomization.yaml": WITH_NAMESPACE},
        TWO,
        # a prefix and a namespace transform the generated account like any resource
        {"kustomization.yaml": ONE + "namePrefix: p-\nnamespace: other\n"},
    ],
    ids=["one", "namespace", "two", "transformed"],
)
def test_builds_like_kubectl(tree, oracle, files) -> None:
    root = tree(files)
    expected = oracle(root)
    assert expected.returncode == 0, expected.stderr
    got = _krm(root)
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout.decode()
    assert "iam.gke.io/gcp-service-account: gsa-name" in got.stdout


def test_an_unknown_cloud_is_refused(tree, oracle) -> None:
    root = tree({"kustomization.yaml": ONE.replace("cloud: gke", "cloud: aws")})
    expected = oracle(root)
    assert expected.returncode == 1
    assert "cloud provider aws not supported yet" in expected.stderr.decode()
    got = _krm(root)
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr == (
        f"Error: {root / 'kustomization.yaml'}: cloud provider aws not supported yet\n"
    )
