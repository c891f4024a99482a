"""Time parse_catalog and canonical_bytes on a generated 200-function catalog.

    .venv/bin/python bench/parse_catalog.py [--functions N] [--repeat K]

Prints CPU and wall time (best of K) for parsing and for writing the canonical form,
next to PyYAML's CSafeLoader reading the same bytes as a baseline.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve_catalog import generate_catalog  # noqa: E402

from orchestrator.catalog import parse_catalog  # noqa: E402


def best(fn, repeat: int) -> tuple[float, float]:
    """Best CPU and best wall seconds of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)
    data = generate_catalog(args.functions)
    catalog = parse_catalog(data)  # first call compiles the schema check, as every process does
    rows = [
        ("parse_catalog", best(lambda: parse_catalog(data), args.repeat)),
        ("canonical_bytes", best(catalog.canonical_bytes, args.repeat)),
        ("yaml CSafeLoader", best(lambda: yaml.load(data, Loader=yaml.CSafeLoader), args.repeat)),
    ]
    print(f"catalog: {args.functions} functions, {len(data)} bytes; best of {args.repeat}")
    for name, (cpu, wall) in rows:
        print(f"{name:18} cpu {cpu * 1000:7.1f} ms   wall {wall * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
