"""``krm build`` on hostile YAML (alias bomb, deep nesting): wall time, peak RSS, exit status.

Also the cost of the YAML limits on ordinary input: ``yamlio.load_all`` on a generated manifest
stream (CRD-like nesting, ~2 MB) with the check and with it replaced by a no-op, CPU time, best of
``--repeat``.

Run: ``.venv/bin/python bench/hostile_inputs.py [--repeat 5] [--timeout 60] [--json out.json]
[--engine OTHER_CHECKOUT]`` (``--engine`` runs the builds with another checkout's engine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile import engine_inputs as ei  # noqa: E402

HEAD = "apiVersion: example.com/v1\nkind: Example\nmetadata:\n  name: x\nspec:"
CASES = {
    "alias bomb (9 x 9)": ei.alias_bomb(),
    "25,000 nested [": " " + ei.nested_flow(25_000),
    "100,000 nested [": " " + ei.nested_flow(100_000),
    "100,000 nested {": " " + ei.nested_flow(100_000, "{"),
    "100,000 nested block sequences": ei.nested_block(100_000, 0),
}


def run_build(directory: str, timeout: float, engine: str) -> dict[str, object]:
    """One ``krm build`` in a child process: wall seconds, its peak RSS (MiB), exit, stderr."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "build", "."],
            cwd=directory,  # not this checkout: `-m` puts the working directory on sys.path
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONPATH": engine},
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace").strip()
    if code == -9 and wall >= timeout:
        shown: object = f"killed after {timeout:g}s"
    else:
        shown = f"signal {-code}" if code < 0 else code
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "exit": shown,
        "stderr": stderr[:160],
    }


def manifest_stream(n: int = 400) -> str:
    """n CRD-like documents (~5 KB each, nesting ~20 levels)."""
    docs = []
    for i in range(n):
        props = "\n".join(
            f"{'  ' * (8 + d)}p{d}:\n{'  ' * (9 + d)}type: object\n{'  ' * (9 + d)}properties:"
            for d in range(10)
        )
        docs.append(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
            f"metadata:\n  name: r{i}.example.com\nspec:\n  versions:\n  - name: v1\n"
            "    schema:\n      openAPIV3Schema:\n        properties:\n"
            + props
            + f"\n{'  ' * 19}leaf: {{type: string, enum: [a, b, c], description: 'x y z'}}\n"
            + "".join(f"  extra{j}: [{j}, {j + 1}, {{k: v, w: [1, 2]}}]\n" for j in range(60))
        )
    return "---\n".join(docs)


def parse_cost(repeat: int) -> dict[str, float]:
    """What the limits pass adds to PyYAML's reading of a realistic stream (the pass runs only
    where PyYAML reads: texts the fast reader declines, or every text with KRM_YAML_FAST=0)."""
    from orchestrator import yamlfast, yamlio, yamllimits, yamlpy

    text = manifest_stream()
    previous = os.environ.get(yamlfast.ENV)
    os.environ[yamlfast.ENV] = "0"

    def best() -> float:
        times = []
        for _ in range(repeat):
            t = time.process_time()
            yamlio.load_all(text)
            times.append(time.process_time() - t)
        return min(times)

    try:
        with_check = best()
        original = yamlpy.check_text
        yamlpy.check_text = lambda text, source=None: None  # type: ignore[assignment]
        try:
            without = best()
        finally:
            yamlpy.check_text = original
    finally:
        if previous is None:
            os.environ.pop(yamlfast.ENV, None)
        else:
            os.environ[yamlfast.ENV] = previous
    t = time.process_time()
    yamllimits.check_text(text)
    check_only = time.process_time() - t
    return {
        "bytes": len(text.encode()),
        "load_all_with_check_ms": round(with_check * 1000, 1),
        "load_all_without_check_ms": round(without * 1000, 1),
        "check_only_ms": round(check_only * 1000, 1),
        "overhead_pct": round(100 * (with_check - without) / without, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--json", help="write the results to this file")
    p.add_argument(
        "--engine",
        default=str(ROOT),
        help="checkout whose orchestrator/ the builds run (compare with an older one)",
    )
    args = p.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, value in CASES.items():
            d = Path(tmp) / str(len(results))
            d.mkdir()
            (d / "kustomization.yaml").write_text("resources:\n- r.yaml\n")
            (d / "r.yaml").write_text(HEAD + value + "\n")
            results[name] = run_build(str(d), args.timeout, args.engine)
            print(f"{name:32} {results[name]}")
    results["parse cost"] = parse_cost(args.repeat)
    print(f"{'parse cost':32} {results['parse cost']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
