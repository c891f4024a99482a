"""Benchmark: reading the YAML a build reads, with the fast reader (rapidyaml) and with PyYAML.

Builds DIR once in process, recording every text the engine's YAML layer reads, then reads those
texts again with ``KRM_YAML_FAST`` on and off (best of ``--repeat`` runs each, alternating), and
prints wall and CPU seconds, how many texts the fast path decided, the total size, and the
machine load (``uptime``).

    PYTHONPATH=$PWD .venv/bin/python bench/yaml_read.py DIR [--repeat 3]

With ``--files``, the arguments are YAML files instead (large CRDs, say): each is read on its
own, and the median milliseconds of ``--repeat`` reads with each reader are printed per file.

    PYTHONPATH=$PWD .venv/bin/python bench/yaml_read.py --files F.yaml... [--repeat 7]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from orchestrator import yamlfast, yamlio  # noqa: E402
from orchestrator.cli import main  # noqa: E402


def record(path: str) -> list[tuple[Any, ...]]:
    """The (v2 typing?, text, source) of every read a build of ``path`` makes."""
    calls: list[tuple[Any, ...]] = []
    real = yamlio._load_docs

    def spy(v2: bool, text: Any, source: Any) -> list[Any]:
        calls.append((v2, text, source))
        return real(v2, text, source)

    yamlio._load_docs = spy  # type: ignore[assignment]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["build", path])
    finally:
        yamlio._load_docs = real  # type: ignore[assignment]
    return calls


def read_all(calls: list[tuple[Any, ...]]) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    for v2, text, source in calls:
        yamlio._load_docs(v2, text, source)
    return time.perf_counter() - t0, time.process_time() - c0


def per_file(paths: list[str], repeat: int) -> None:
    """Print, for each file, the median ms of reading it with each reader (alternating)."""
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    totals = {"1": 0.0, "0": 0.0}
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        times: dict[str, list[float]] = {"1": [], "0": []}
        for _ in range(repeat):
            for mode in ("1", "0"):
                os.environ[yamlfast.ENV] = "always" if mode == "1" else "0"
                t0 = time.perf_counter()
                yamlio.load_all(data)
                times[mode].append(time.perf_counter() - t0)
        fast, slow = (statistics.median(times[m]) * 1000 for m in ("1", "0"))
        totals["1"] += fast
        totals["0"] += slow
        text = yamlio.decode(data)
        os.environ[yamlfast.ENV] = "always"
        decided = yamlfast.load_docs(text, None, yamlio._v3_plain) is not None
        mark = "          " if decided else "(declined)"
        print(f"{fast:8.1f} ms fast {mark} {slow:8.1f} ms PyYAML  {path}")
    os.environ.pop(yamlfast.ENV, None)
    print(f"{totals['1']:8.1f} ms fast {'':10} {totals['0']:8.1f} ms PyYAML  total")
    print("load after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="+", help="a directory to build (or files, with --files)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", action="store_true", help="time reading each file given")
    args = ap.parse_args()
    if args.files:
        per_file(args.dir, args.repeat)
        return
    if len(args.dir) != 1:
        ap.error("one directory to build")
    args.dir = args.dir[0]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    calls = record(args.dir)
    size = sum(len(c[1]) for c in calls)
    decided = 0
    for v2, text, _ in calls:
        decoded = text if isinstance(text, str) else yamlio.decode(text)
        if yamlfast.wanted(decoded):
            plain = yamlio._v2_plain if v2 else yamlio._v3_plain
            decided += yamlfast.load_docs(decoded, None, plain) is not None
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeat):
        for mode in ("1", "0"):
            os.environ[yamlfast.ENV] = mode
            wall, cpu = read_all(calls)
            if mode not in best or wall < best[mode][0]:
                best[mode] = (wall, cpu)
    os.environ.pop(yamlfast.ENV, None)
    print(f"{args.dir}: {len(calls)} texts, {size / 1e6:.1f} MB; fast path decided {decided}")
    for mode, label in (("1", "fast reader"), ("0", "PyYAML only")):
        wall, cpu = best[mode]
        print(f"  {label:12s} wall {wall:.3f} s  cpu {cpu:.3f} s")
    print(f"  ratio (wall) {best['1'][0] / best['0'][0]:.3f}")
    print("load before:", uptime)
    print("load after: ", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main_()
