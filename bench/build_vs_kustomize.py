"""Benchmark: ``krm build`` vs ``kubectl kustomize`` (kustomize v5.5.0) on generated trees.

For each size N (default 10, 250, 1000, 2000 resources) it writes a base with N/2
Deployments and N/2 Services and an overlay with namePrefix, namespace, labels with
selectors, an image override, a configMapGenerator referenced by every Deployment and a
strategic-merge patch; checks that both tools print byte-identical output; then times
both (median of --repeat runs, the two tools alternating) in wall-clock and CPU time (user + system
of the child, which other load on the machine disturbs less) and measures peak memory (max RSS
of the child process).
Prints one row per size with the krm/kustomize time ratio, then a least-squares line
through krm's CPU times (fixed start-up + ms per resource, with R²) and the marginal cost per
resource between sizes, which stays flat when growth is linear, and the issue's targets
(ratio <= 1.5 at 10 resources, <= 0.1 at 2,000). krm runs with ``--no-cache``: this measures
the engine, every run a full build (``realworld.py`` measures the build cache).

    .venv/bin/python bench/build_vs_kustomize.py [--sizes 10,250,1000,2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTHON = os.path.join(REPO, ".venv", "bin", "python")


def write_tree(root: str, n: int) -> str:
    """Write base + overlay for ``n`` resources; return the overlay directory."""
    base = os.path.join(root, "base")
    overlay = os.path.join(root, "overlay")
    os.makedirs(base)
    os.makedirs(overlay)
    apps = max(1, n // 2)
    docs = []
    for i in range(apps):
        docs.append(
            f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  labels:
    app: app-{i}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app-{i}
  template:
    metadata:
      labels:
        app: app-{i}
    spec:
      containers:
      - name: main
        image: nginx:1.25
        ports:
        - containerPort: 8080
        envFrom:
        - configMapRef:
            name: settings
        env:
        - name: INDEX
          value: "{i}"
"""
        )
        docs.append(
            f"""apiVersion: v1
kind: Service
metadata:
  name: app-{i}
spec:
  selector:
    app: app-{i}
  ports:
  - port: 80
    targetPort: 8080
"""
        )
    with open(os.path.join(base, "resources.yaml"), "w") as f:
        f.write("---\n".join(docs))
    with open(os.path.join(base, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- resources.yaml\n")
    with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
        f.write(
            """resources:
- ../base
namePrefix: prod-
namespace: production
labels:
- pairs:
    team: web
  includeSelectors: true
images:
- name: nginx
  newName: registry.example.com/nginx
  newTag: "1.27"
configMapGenerator:
- name: settings
  literals:
  - LOG_LEVEL=info
  - REGION=eu-west-1
patches:
- path: patch.yaml
"""
        )
    with open(os.path.join(overlay, "patch.yaml"), "w") as f:
        f.write(
            """apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-0
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: main
        resources:
          limits:
            memory: 256Mi
"""
        )
    return overlay


def run_once(cmd: list[str]) -> tuple[float, float, bytes]:
    """Wall time, CPU time (user + system) of the child, and stdout of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, check=False)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, proc.stdout


def measure_rss(cmd: list[str]) -> int:
    """Peak RSS in KiB of ``cmd``, measured in a fresh helper process."""
    code = (
        "import resource,subprocess,sys;"
        "subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def bench(sizes: list[int], repeat: int) -> list[dict]:
    """Benchmark each size; return one row per size."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            overlay = write_tree(os.path.join(tmp, str(n)), n)
            krm = [PYTHON, "-m", "orchestrator", "build", overlay, "--no-cache"]
            kubectl = ["kubectl", "kustomize", overlay]
            _, _, out_krm = run_once(krm)
            _, _, out_kus = run_once(kubectl)
            identical = out_krm == out_kus
            if not identical:
                raise SystemExit(f"size {n}: krm output differs from kubectl kustomize")
            # Alternate the two tools so that load from other processes hits both alike.
            krm_runs, kus_runs = [], []
            for _ in range(repeat):
                krm_runs.append(run_once(krm)[:2])
                kus_runs.append(run_once(kubectl)[:2])
            t_krm = statistics.median(r[0] for r in krm_runs)
            t_kus = statistics.median(r[0] for r in kus_runs)
            c_krm = statistics.median(r[1] for r in krm_runs)
            c_kus = statistics.median(r[1] for r in kus_runs)
            rows.append(
                {
                    "resources": out_kus.count(b"\nkind: ") + 1,
                    "size": n,
                    "krm_s": round(t_krm, 4),
                    "kustomize_s": round(t_kus, 4),
                    "ratio": round(t_krm / t_kus, 3),
                    "krm_cpu_s": round(c_krm, 4),
                    "kustomize_cpu_s": round(c_kus, 4),
                    "cpu_ratio": round(c_krm / c_kus, 3),
                    "krm_ms_per_resource": round(1000 * t_krm / n, 3),
                    "krm_rss_mib": round(measure_rss(krm) / 1024, 1),
                    "kustomize_rss_mib": round(measure_rss(kubectl) / 1024, 1),
                    "identical": identical,
                }
            )
            r = rows[-1]
            print(
                f"{n:>6} resources  wall: krm {r['krm_s']:.3f}s kustomize {r['kustomize_s']:.3f}s "
                f"ratio {r['ratio']:.3f}  cpu: krm {r['krm_cpu_s']:.3f}s "
                f"kustomize {r['kustomize_cpu_s']:.3f}s ratio {r['cpu_ratio']:.3f}  "
                f"krm {r['krm_ms_per_resource']:.3f} ms/resource  "
                f"RSS krm {r['krm_rss_mib']} MiB / kustomize {r['kustomize_rss_mib']} MiB  "
                f"output identical: {identical}",
                flush=True,
            )
    return rows


# The targets: krm/kustomize wall-time ratio at most this much at these sizes.
TARGETS = {10: 1.5, 2000: 0.1}


def linear_fit(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Least-squares line through (size, seconds): intercept, slope (s/resource) and R²."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    slope = sxy / sxx if sxx else 0.0
    intercept = my - slope * mx
    ss_tot = sum((y - my) ** 2 for _, y in points)
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in points)
    return intercept, slope, (1 - ss_res / ss_tot) if ss_tot else 1.0


def summarise(rows: list[dict]) -> list[str]:
    """Lines on linear growth (fit and marginal cost per resource) and on the targets."""
    lines = []
    if len(rows) >= 3:
        # CPU time: wall time on a shared machine is too noisy to show the shape of growth.
        a, b, r2 = linear_fit([(r["size"], r["krm_cpu_s"]) for r in rows])
        lines.append(
            f"krm cpu ~ {a:.3f}s + {1000 * b:.3f} ms x resources (least squares, R^2 {r2:.4f})"
        )
        for prev, cur in zip(rows, rows[1:], strict=False):
            marginal = (cur["krm_cpu_s"] - prev["krm_cpu_s"]) / (cur["size"] - prev["size"])
            lines.append(
                f"  marginal cost {prev['size']}->{cur['size']}: {1000 * marginal:.3f} ms/resource"
            )
    for r in rows:
        limit = TARGETS.get(r["size"])
        if limit is not None:
            verdict = "met" if r["ratio"] <= limit else "MISSED"
            lines.append(
                f"target ratio <= {limit} at {r['size']}: {r['ratio']:.3f} "
                f"(cpu {r['cpu_ratio']:.3f}) {verdict}"
            )
    return lines


def main() -> int:
    """Parse arguments, run, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,250,1000,2000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    args = ap.parse_args()
    rows = bench([int(s) for s in args.sizes.split(",")], args.repeat)
    for line in summarise(rows):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
