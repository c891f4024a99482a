"""Benchmark: writing a YAML stream with the fast writer (yamlemit) vs libyaml's emitter.

Reads a multi-document YAML file (e.g. the output of ``krm build DIR > out.yaml``), then
writes its documents the way ``krm build`` does, with ``yamlio.dump`` (the fast writer,
libyaml only for documents it defers) and with ``yamlio.libyaml_dump`` (PyYAML nodes and
libyaml's C emitter), each from empty caches, and prints the best CPU time of each, whether
both outputs are byte-identical to each other and to the input, and the machine load.

    PYTHONPATH=$PWD .venv/bin/python bench/dump.py out.yaml [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from orchestrator import yamlemit, yamlio  # noqa: E402


def _fresh_caches() -> None:
    """Empty every per-string cache the writers keep, so each round starts cold."""
    yamlio._WRITER = yamlemit.Writer(
        str_style=yamlio._str_style,
        plain_implicit=yamlio._plain_implicit,
        sorted_keys=yamlio.go_sorted_keys,
        scalar_text=yamlio.scalar_text,
        number_text=yamlio._number_text,
    )
    yamlio._STYLE_CACHE.clear()
    yamlio._ORDER_CACHE.clear()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="a YAML stream, as krm build prints it")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")
    docs = yamlio.load_all(data)
    outputs = {}
    for name, fn in (("fast writer", yamlio.dump), ("libyaml", yamlio.libyaml_dump)):
        best = float("inf")
        for _ in range(args.rounds):
            _fresh_caches()
            t0 = time.process_time()
            out = "---\n".join(fn(d) for d in docs)
            best = min(best, time.process_time() - t0)
        outputs[name] = out
        print(f"{name:12} {best:.3f}s CPU  same as input: {out == text}")
    print(f"documents: {len(docs)}  bytes: {len(data)}")
    print(f"identical outputs: {outputs['fast writer'] == outputs['libyaml']}")
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
