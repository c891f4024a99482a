"""Benchmark: a Composition of 20 builtin transformers over 1,000 resources vs the same
transformations as a chain of 20 Kustomization layers built by ``kubectl kustomize``.

It writes, in a temporary directory, 1,000 resources (Deployments, Services, ConfigMaps), one
``composition.yaml`` (a ResourceGenerator plus 20 builtins: 6 LabelTransformer,
6 AnnotationsTransformer, 2 prefixes and 2 suffixes with PrefixSuffixTransformer, 1
NamespaceTransformer, 2 ImageTagTransformer, 1 ReplicaCountTransformer, no fieldSpecs so
kustomize's defaults apply) and the equivalent layers ``k00`` .. ``k20`` (each layer one
field, ``resources: [../previous]``). It checks that both print the same documents (``krm``
with ``--reorder legacy``), then times both in the same run (median of --repeat) and prints
the kubectl/krm time ratio, for the CLI (``python -m orchestrator build``, process start
included) and in-process (``orchestrator.composition.build``).

    .venv/bin/python bench/composition.py [--resources 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTHON = os.path.join(REPO, ".venv", "bin", "python")
sys.path.insert(0, REPO)

HEAD = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n"


def resources_yaml(n: int) -> str:
    """``n`` resources: Deployments, Services and ConfigMaps in equal parts."""
    docs = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            docs.append(
                f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n"
                f"spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: app-{i}}}\n"
                f"  template:\n    metadata:\n      labels: {{app: app-{i}}}\n"
                f"    spec:\n      containers:\n      - name: main\n        image: nginx:1.0\n"
                f"        envFrom:\n        - configMapRef: {{name: cfg-{i + 2}}}\n"
                f"      - name: side\n        image: busybox:1.0\n"
            )
        elif kind == 1:
            docs.append(
                f"apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\n"
                f"spec:\n  selector: {{app: app-{i - 1}}}\n  ports:\n  - port: 80\n"
            )
        else:
            docs.append(
                f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{i}\n"
                f"data:\n  key: value-{i}\n"
            )
    return "---\n".join(docs)


# (builtin config for the Composition, the same step as one Kustomization layer's fields)
STEPS: list[tuple[str, str]] = (
    [
        (
            f"- kind: LabelTransformer\n  metadata: {{name: l{i}}}\n  labels: {{l{i}: v{i}}}\n",
            f"commonLabels: {{l{i}: v{i}}}\n",
        )
        for i in range(6)
    ]
    + [
        (
            f"- kind: AnnotationsTransformer\n  metadata: {{name: a{i}}}\n"
            f"  annotations: {{a{i}: v{i}}}\n",
            f"commonAnnotations: {{a{i}: v{i}}}\n",
        )
        for i in range(6)
    ]
    + [
        (
            f"- kind: PrefixSuffixTransformer\n  metadata: {{name: p{i}}}\n  prefix: p{i}-\n",
            f"namePrefix: p{i}-\n",
        )
        for i in range(2)
    ]
    + [
        (
            f"- kind: PrefixSuffixTransformer\n  metadata: {{name: s{i}}}\n  suffix: -s{i}\n",
            f"nameSuffix: -s{i}\n",
        )
        for i in range(2)
    ]
    + [
        (
            "- kind: NamespaceTransformer\n  metadata: {name: ns, namespace: bench}\n",
            "namespace: bench\n",
        ),
        (
            "- kind: ImageTagTransformer\n  metadata: {name: i0}\n"
            "  imageTag: {name: nginx, newTag: '1.25'}\n",
            "images:\n- {name: nginx, newTag: '1.25'}\n",
        ),
        (
            "- kind: ImageTagTransformer\n  metadata: {name: i1}\n"
            "  imageTag: {name: busybox, newName: registry.example/busybox}\n",
            "images:\n- {name: busybox, newName: registry.example/busybox}\n",
        ),
        (
            "- kind: ReplicaCountTransformer\n  metadata: {name: r0}\n"
            "  replica: {name: p1-p0-app-0-s0-s1, count: 3}\n",
            "replicas:\n- {name: p1-p0-app-0-s0-s1, count: 3}\n",
        ),
    ]
)


def write_tree(root: str, n: int) -> tuple[str, str]:
    """Write the Composition and the layer chain; return (composition dir, top layer dir)."""
    comp = os.path.join(root, "composition")
    os.makedirs(comp)
    with open(os.path.join(comp, "resources.yaml"), "w") as f:
        f.write(resources_yaml(n))
    with open(os.path.join(comp, "composition.yaml"), "w") as f:
        f.write(HEAD + "transformers:\n- kind: ResourceGenerator\n  paths: [resources.yaml]\n")
        f.write("".join(step for step, _ in STEPS))
    layers = os.path.join(root, "layers")
    first = os.path.join(layers, "k00")
    os.makedirs(first)
    shutil.copy(os.path.join(comp, "resources.yaml"), first)
    with open(os.path.join(first, "kustomization.yaml"), "w") as f:
        f.write("resources: [resources.yaml]\n")
    top = first
    for i, (_, fields) in enumerate(STEPS, 1):
        top = os.path.join(layers, f"k{i:02d}")
        os.makedirs(top)
        with open(os.path.join(top, "kustomization.yaml"), "w") as f:
            f.write(f"resources: [../k{i - 1:02d}]\n" + fields)
    return comp, top


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(cmd: list[str]) -> bytes:
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr.decode()}")
    return proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--resources", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl is not installed: it is the peer this benchmark compares with")

    import yaml

    from orchestrator.build import BuildOptions
    from orchestrator.composition import build

    with tempfile.TemporaryDirectory(prefix="krm-bench-composition-") as tmp:
        comp, top = write_tree(tmp, args.resources)
        krm_cmd = [PYTHON, "-m", "orchestrator", "build", "--reorder", "legacy", comp]
        kube_cmd = [kubectl, "kustomize", top]
        ours = run(krm_cmd)
        theirs = run(kube_cmd)
        ours_docs = list(yaml.safe_load_all(ours))
        if ours_docs != list(yaml.safe_load_all(theirs)):
            raise SystemExit("outputs differ: the Composition and the layer chain disagree")
        opts = BuildOptions(reorder="legacy")
        t_kubectl = timed(lambda: run(kube_cmd), args.repeat)
        t_cli = timed(lambda: run(krm_cmd), args.repeat)
        t_lib = timed(lambda: build(comp, opts), args.repeat)
        print(
            f"resources: {len(ours_docs)}, transformers: {len(STEPS)} builtins "
            f"(+1 ResourceGenerator), layers for kubectl: {len(STEPS)}"
        )
        print(f"outputs identical as documents: yes; byte-identical: {ours == theirs}")
        print(f"kubectl kustomize (20 layers):   {t_kubectl * 1000:8.1f} ms")
        print(
            f"krm build (CLI, process start):  {t_cli * 1000:8.1f} ms  "
            f"ratio kubectl/krm = {t_kubectl / t_cli:.2f}"
        )
        print(
            f"krm composition (in-process):    {t_lib * 1000:8.1f} ms  "
            f"ratio kubectl/krm = {t_kubectl / t_lib:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
