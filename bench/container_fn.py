"""Benchmark: a container function on the builtin runtime vs the same program on the exec runtime.

One program (a busybox ``sh`` + ``awk`` KRM function that annotates every item) is run through
the engine's ``run_function_config`` three ways, in the same run, alternating the order each
round:

- exec: the program as a catalog exec function (``file://`` URI with its sha256, cache warm),
  run directly on the host;
- builtin, cold: the same program in an image built with ``umoci`` from ``busybox-static`` and
  pushed with ``skopeo`` to a local ``docker-registry``: an empty cache each time, so pull,
  verify, unpack and run in bubblewrap;
- builtin, warm: the rootfs already cached: read three small verified files, run in bubblewrap.

    .venv/bin/python bench/container_fn.py [--rounds 20] [--items 50]

Target: warm median ≤ exec median + 50 ms (kpt's published figure for a docker start is
~0.7 s). Exit 1 when not met, or when a step fails.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.functions import CatalogSet, TrustConfig, run_function_config  # noqa: E402
from orchestrator.functions.options import FnOptions  # noqa: E402
from orchestrator.resource import Resource  # noqa: E402
from tests.orchestrator.functions import images  # noqa: E402 - the tests' image builder
from tests.orchestrator.functions.conftest import start_registry, stop_registry  # noqa: E402

TARGET_MS = 50.0
CONFIG = {"apiVersion": "example.com/v1", "kind": "Annotate", "metadata": {"name": "bench"}}


def _catalogs(work: Path, image: images.Pushed, program: Path) -> tuple[Path, Path]:
    sha = hashlib.sha256(program.read_bytes()).hexdigest()
    head = (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: b\n"
        "spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Annotate\n"
        "    versions:\n    - name: v1\n      runtime:\n"
    )
    exec_cat = work / "exec.yaml"
    exec_cat.write_text(
        head
        + "        exec:\n          platforms:\n          - os: linux\n            arch: amd64\n"
        f"            uri: file://{program}\n            sha256: {sha}\n            bin: annotate\n"
    )
    image_cat = work / "image.yaml"
    image_cat.write_text(
        head + f"        container:\n          image: {image.ref}\n"
        f'          sha256: "{image.hex}"\n'
    )
    return exec_cat, image_cat


def _once(work: Path, catalog: Path, options: FnOptions, resources: list[Resource]) -> float:
    trust = TrustConfig.load([str(catalog)], config=str(work / "no-config"))
    cs = CatalogSet.for_kustomization([], kustomization_dir=str(work), trust=trust, options=options)
    start = time.perf_counter()
    out = run_function_config(
        CONFIG,
        resources,
        role="transformer",
        kustomization_dir=str(work),
        catalogs=cs,
        options=options,
    )
    seconds = time.perf_counter() - start
    first = out.resources[0].obj["metadata"]["annotations"]
    if first.get("fn.example.com/ran") != "yes":
        raise SystemExit(f"the function did not run: {out.resources[0].obj}")
    return seconds


def _summary(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"{name:<16} median {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms   n={len(ms)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--items", type=int, default=50, help="ConfigMaps in the ResourceList")
    args = parser.parse_args()
    if None in (images.UMOCI, images.SKOPEO, images.BUSYBOX, shutil.which("bwrap")):
        print("needs umoci, skopeo, busybox-static and bwrap (scripts/system-packages.sh)")
        return 1
    work = Path(tempfile.mkdtemp(prefix="krm-bench-container-"))
    # As root's default image cache (/var/cache/krm/images) is, the caches here are ones the
    # jail's nobody can enter (mkdtemp makes 0700, which would stage the image every run).
    work.chmod(0o711)
    proc = None
    try:
        (work / "registry").mkdir()
        proc, host = start_registry(work / "registry")
        (work / "build").mkdir()
        image = images.build_images(work / "build", host)["annotate"]
        program = work / "annotate"
        program.write_text(images.ANNOTATE_FN)
        program.chmod(0o755)
        exec_cat, image_cat = _catalogs(work, image, program)
        resources = [
            Resource(
                obj={
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i}"},
                    "data": {"k": "v" * 40},
                }
            )
            for i in range(args.items)
        ]
        warm_cache = str(work / "warm-cache")
        exec_opts = FnOptions(cache_dir=str(work / "exec-cache"))
        warm_opts = FnOptions(cache_dir=warm_cache, container_runtime="builtin")
        _once(work, exec_cat, exec_opts, resources)  # fill the exec cache
        _once(work, image_cat, warm_opts, resources)  # fill the image cache
        samples: dict[str, list[float]] = {"exec": [], "builtin warm": [], "builtin cold": []}
        for r in range(args.rounds):
            cold_cache = str(work / f"cold-{r}")
            runs = [
                ("exec", exec_cat, exec_opts),
                ("builtin warm", image_cat, warm_opts),
                (
                    "builtin cold",
                    image_cat,
                    FnOptions(cache_dir=cold_cache, container_runtime="builtin"),
                ),
            ]
            if r % 2:
                runs.reverse()
            for name, catalog, opts in runs:
                samples[name].append(_once(work, catalog, opts, resources))
            shutil.rmtree(cold_cache, ignore_errors=True)
    finally:
        if proc is not None:
            stop_registry(proc)
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cpus")
    print(f"{args.items} ConfigMaps in, {args.rounds} rounds, order alternating")
    for name, values in samples.items():
        print(_summary(name, values))
    over = (statistics.median(samples["builtin warm"]) - statistics.median(samples["exec"])) * 1000
    cold_over = (
        statistics.median(samples["builtin cold"]) - statistics.median(samples["exec"])
    ) * 1000
    print(f"warm start over exec: {over:+.1f} ms (target ≤ {TARGET_MS:.0f} ms)")
    print(f"cold start over exec: {cold_over:+.1f} ms")
    return 0 if over <= TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
