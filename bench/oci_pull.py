"""Benchmark: pulling the catalog blob from the registry's /v2/ endpoint vs. docker-registry.

Generates a 200-function KEP-2906 catalog (the generator of ``serve_catalog.py``), imports it into
a temporary SQLite database, serves it with gunicorn (2 gthread workers of 8 threads, which keep
connections alive as docker-registry does; DEBUG off), and resolves
``/v2/<publisher>/<catalog>/manifests/latest`` to the catalog layer's blob URL. The same file is
pushed with ``oras`` (the Python package) to Debian's ``docker-registry`` (distribution v2).
Both blob URLs are then loaded with ``wrk`` at 64 connections in the same run, alternating who
goes first each round, and compared: req/s, p50/p99 latency, errors, and the machine's load.

    .venv/bin/python bench/oci_pull.py [--duration 20] [--connections 64] [--rounds 1]

Target: the registry serves at least 2x docker-registry's requests per second, with no errors
(exit 1 when not met, or when a step fails).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_catalog as common  # noqa: E402 - the sibling benchmark's servers and wrk parsing

CATALOG_LAYER = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
TARGET_RATIO = 2.0


def registry_blob_url(catalog_url: str, body: bytes) -> str:
    """The /v2/ blob URL of the catalog layer, checked against the HTTPS ``catalog.yaml``."""
    base = catalog_url.split("/c/", 1)[0]
    name = f"{common.PUBLISHER}/{common.CATALOG}"
    manifest = httpx.get(
        f"{base}/v2/{name}/manifests/latest", headers={"Accept": OCI_MANIFEST}, timeout=10
    )
    if manifest.status_code != 200:
        raise common.BenchError(f"manifest answered {manifest.status_code}: {manifest.text[:500]}")
    layers = [x for x in manifest.json()["layers"] if x["mediaType"] == CATALOG_LAYER]
    if len(layers) != 1:
        raise common.BenchError(f"expected one catalog layer, got {manifest.text[:500]}")
    url = f"{base}/v2/{name}/blobs/{layers[0]['digest']}"
    blob = httpx.get(url, timeout=10)
    if blob.status_code != 200 or blob.content != body:
        raise common.BenchError(f"GET {url} answered {blob.status_code} with other bytes")
    return url


def push_with_oras(registry_url: str, workdir: Path, body: bytes) -> str:
    """Push ``body`` as the catalog layer with oras; return its blob URL on that registry."""
    import oras.provider

    host = registry_url.removeprefix("http://")
    path = workdir / "catalog.yaml"
    path.write_bytes(body)
    client = oras.provider.Registry(hostname=host, insecure=True)
    response = client.push(
        target=f"{host}/{common.REPOSITORY}:latest",
        files=[f"{path}:{CATALOG_LAYER}"],
        disable_path_validation=True,
    )
    if response.status_code not in (200, 201):
        raise common.BenchError(f"oras push answered {response.status_code}: {response.text}")
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    url = f"{registry_url}/v2/{common.REPOSITORY}/blobs/{digest}"
    fetched = httpx.get(url, timeout=10)
    if fetched.status_code != 200 or fetched.content != body:
        raise common.BenchError(f"GET {url} answered {fetched.status_code} with other bytes")
    return url


def start_docker_registry(procs: common.Processes, workdir: Path) -> str:
    """docker-registry on a loopback port, from the sibling benchmark, without its own push."""
    # serve_catalog's starter also pushes a blob by hand; push an empty one there, ours with oras.
    url = common.start_docker_registry(procs, workdir, b"{}")
    return url.split("/v2/", 1)[0]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print both sides, the ratio and the load; exit 1 if below target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=20, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--functions", type=int, default=200, help="functions in the catalog")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--gunicorn-threads", type=int, default=8, help="threads per worker (gthread if > 1)"
    )
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unmeasured load first")
    parser.add_argument("--rounds", type=int, default=1, help="measured runs of each server")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, DB)")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="krm-bench-oci-"))
    procs = common.Processes()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    loads = {"before": os.getloadavg()}
    try:
        common.ensure_tools()
        catalog_file = workdir / "catalog.yaml"
        catalog_file.write_bytes(common.generate_catalog(args.functions))
        catalog_url, body = common.start_registry_app(
            procs, workdir, catalog_file, args.workers, args.gunicorn_threads
        )
        ours = registry_blob_url(catalog_url, body)
        theirs = push_with_oras(start_docker_registry(procs, workdir), workdir, body)
        print(f"catalog: {args.functions} functions, {len(body)} bytes; blob served by both")
        servers = [("registry", ours), ("docker-registry", theirs)]
        load = {"threads": args.threads, "connections": args.connections}
        for _, url in servers:
            if args.warmup:
                common.run_wrk(url, **load, duration=args.warmup)
        rounds: list[dict[str, common.WrkResult]] = []
        for number in range(args.rounds):
            order = servers if number % 2 == 0 else servers[::-1]
            measured = {n: common.run_wrk(u, **load, duration=args.duration) for n, u in order}
            rounds.append({name: measured[name] for name, _ in servers})
            procs.check_alive(workdir)
        loads["after"] = os.getloadavg()
    except common.BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        procs.stop()
        if args.keep:
            print(f"work dir kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s --latency, "
        f"gunicorn --workers {args.workers} --threads {args.gunicorn_threads}, "
        f"{args.rounds} round(s), {os.cpu_count()} CPUs"
    )
    print(
        "load average (1/5/15 min): before "
        + " ".join(f"{x:.2f}" for x in loads["before"])
        + ", after "
        + " ".join(f"{x:.2f}" for x in loads["after"])
    )
    print(
        f"{'round':<6}{'server':<16} {'req/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7} "
        f"{'requests':>9}"
    )
    ratios = []
    for number, measured in enumerate(rounds, 1):
        for name, r in measured.items():
            print(
                f"{number:<6}{name:<16} {r.requests_per_sec:>10.1f} {r.p50_ms:>9.2f} "
                f"{r.p99_ms:>9.2f} {r.errors:>7} {r.requests:>9}"
            )
        ratios.append(
            measured["registry"].requests_per_sec / measured["docker-registry"].requests_per_sec
        )
    ratio = statistics.median(ratios)
    errors = sum(m["registry"].errors for m in rounds)
    met = ratio >= TARGET_RATIO and errors == 0
    print(
        f"ratio registry/docker-registry (req/s): {ratio:.2f} (median; rounds: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + f"); target >= {TARGET_RATIO:.1f} with no errors: {'met' if met else 'NOT met'}"
    )
    if args.json:
        payload = {
            "rounds": [
                {name: asdict(r) | {"errors": r.errors} for name, r in measured.items()}
                for measured in rounds
            ],
            "ratios": ratios,
            "ratio": ratio,
            "load": loads,
            "target_met": met,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
