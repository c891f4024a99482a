"""``krm build`` on hostile YAML (alias bomb, deep nesting): wall time, peak RSS, exit status.

Also the cost of the YAML limits on ordinary input: ``yamlio.load_all`` on a generated manifest
stream (CRD-like nesting, ~2 MB) with the check and with it replaced by a no-op, CPU time, best of
``--repeat``.

Run: ``.venv/bin/python bench/hostile_inputs.py [--repeat 5] [--timeout 60] [--json out.json]
[--engine OTHER_CHECKOUT]`` (``--engine`` runs the builds with another checkout's engine).

``--registry`` measures the registry instead, on a real gunicorn (2 workers x 4 threads, SQLite):
the catalog page of the largest catalog CATALOG_MAX_BYTES allows (time and bytes, first and
repeated), a 30,000-layer OCI manifest (time to its refusal, and a plain request answered
meanwhile), and ten parallel abusive requests of each kind (slowest answer, statuses).
``--registry --login-only`` runs only the sign-in cases (ten parallel wrong passwords for one user
name, and for ten user names from one address), without publishing the large catalog;
``--cache redis`` gives the web processes a private redis-server as their shared ``CACHE_URL``
(as production does), instead of each its own memory cache.
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
from typing import Any

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


def largest_catalog(limit: int) -> tuple[str, int]:
    """The catalog document with the most functions (each of a typical size) under ``limit``."""

    def document(n: int) -> str:
        head = "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n"
        body = "".join(
            f"  - group: example.co\n    names:\n      kind: Fn{i:05d}\n"
            f"    description: The Fn{i:05d} function.\n    publisher: example.co\n"
            "    tags: [mutator, test]\n    versions:\n    - name: v1\n      schema:\n"
            "        openAPIV3Schema:\n          type: object\n      idempotent: true\n"
            f"      runtime:\n        container:\n          image: registry.example.co/"
            f"fn{i:05d}:v1\n      usage: https://example.co/fn{i:05d}/README.md\n"
            "      license: Apache 2.0\n"
            for i in range(n)
        )
        return head + "  name: largest\nspec:\n  krmFunctions:\n" + body

    low, high = 1, 40_000
    while low < high:
        mid = (low + high + 1) // 2
        if len(document(mid).encode()) <= limit:
            low = mid
        else:
            high = mid - 1
    return document(low), low


def _timed(call: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def wrong_password(base: str, username: str = "alice") -> Any:
    """A sign-in with a wrong password through the real form (its CSRF cookie and token)."""
    from tests.live_registry import sign_in

    return sign_in(base, username, "nope")


def ten_parallel(call: Any) -> dict[str, object]:
    """``call(i)`` for i in 0..9 at once: the slowest answer, the wall time, the statuses."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(10) as pool:
        start = time.perf_counter()
        answers = list(pool.map(lambda i: _timed(lambda: call(i)), range(10)))
        wall = time.perf_counter() - start
    statuses: dict[str, int] = {}
    for _, response in answers:
        key = str(response.status_code)
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "slowest_s": round(max(t for t, _ in answers), 3),
        "wall_s": round(wall, 3),
        "statuses": statuses,
    }


def login_cases(base: str) -> dict[str, object]:
    """Ten parallel wrong passwords: for alice, then for ten other user names (none exists)."""
    return {
        "10 parallel: wrong password": ten_parallel(lambda _: wrong_password(base)),
        "10 parallel: 10 user names, one address": ten_parallel(
            lambda i: wrong_password(base, f"nobody{i}")
        ),
    }


def registry_cases(*, login_only: bool = False, cache: str = "none") -> dict[str, object]:
    """The registry's exhaustion figures (see the module's docstring)."""
    from contextlib import ExitStack

    from tests.live_registry import live_registry, redis_server

    results: dict[str, object] = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        served: dict[str, Any] = {"workers": 2, "threads": 4}
        if cache == "redis":
            served["CACHE_URL"] = stack.enter_context(redis_server(tmp))
        if login_only:
            return login_cases(stack.enter_context(live_registry(tmp, **served)).base)
        limit = 5 * 1024 * 1024
        document, count = largest_catalog(limit)
        r = stack.enter_context(live_registry(tmp, **served))
        results.update(_registry_figures(r, document, count))
    return results


def _registry_figures(r: Any, document: str, count: int) -> dict[str, object]:
    """The figures of ``registry_cases`` on the running registry ``r``."""
    import base64
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    results: dict[str, object] = {}
    auth = {"Authorization": f"Token {r.token}", "Content-Type": "application/yaml"}
    publish_s, published = _timed(
        lambda: httpx.post(
            f"{r.base}/api/v1/catalogs/acme/fns/versions/",
            content=document.encode(),
            headers=auth,
            timeout=600,
        )
    )
    results["publish largest catalog"] = {
        "functions": count,
        "bytes": len(document.encode()),
        "status": published.status_code,
        "seconds": round(publish_s, 2),
    }
    page = f"{r.base}/catalogs/acme/fns/"
    timings = [_timed(lambda: httpx.get(page, timeout=120)) for _ in range(6)]
    results["catalog page"] = {
        "first_s": round(timings[0][0], 3),
        "repeated_best_s": round(min(t for t, _ in timings[1:]), 3),
        "repeated_worst_s": round(max(t for t, _ in timings[1:]), 3),
        "bytes": len(timings[0][1].content),
        "status": timings[0][1].status_code,
    }
    basic = "Basic " + base64.b64encode(f"alice:{r.token}".encode()).decode()
    layers = [
        {"mediaType": "application/octet-stream", "digest": f"sha256:{i:064x}", "size": 1}
        for i in range(30_000)
    ]
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": "sha256:" + "44136fa355b3678a1146ad16f7e8649e"
                "94fb4fc21fe77e8310c060f61caaff8a",
                "size": 2,
            },
            "layers": layers,
        }
    ).encode()
    deep = b"[" * 100_000 + b"]" * 100_000
    oci_headers = {
        "Authorization": basic,
        "Content-Type": "application/vnd.oci.image.manifest.v1+json",
    }

    def put(body: bytes) -> httpx.Response:
        return httpx.put(
            f"{r.base}/v2/acme/fns/manifests/x", content=body, headers=oci_headers, timeout=120
        )

    with ThreadPoolExecutor(2) as pool:
        refused = pool.submit(lambda: _timed(lambda: put(manifest)))
        time.sleep(0.05)
        plain = pool.submit(lambda: _timed(lambda: httpx.get(f"{r.base}/v2/", timeout=120)))
        (put_s, put_r), (plain_s, plain_r) = refused.result(), plain.result()
    results["30,000-layer manifest"] = {
        "bytes": len(manifest),
        "seconds": round(put_s, 3),
        "status": put_r.status_code,
        "code": put_r.json()["errors"][0]["code"],
        "plain request meanwhile_s": round(plain_s, 3),
        "plain status": plain_r.status_code,
    }
    kinds = {
        "catalog page": lambda _: httpx.get(page, timeout=120),
        "30,000-layer manifest": lambda _: put(manifest),
        "100,000-deep manifest": lambda _: put(deep),
    }
    for name, call in kinds.items():
        results[f"10 parallel: {name}"] = ten_parallel(call)
    results.update(login_cases(r.base))
    return results


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
    p.add_argument("--registry", action="store_true", help="measure the registry instead")
    p.add_argument(
        "--login-only", action="store_true", help="with --registry: only the sign-in cases"
    )
    p.add_argument(
        "--cache",
        choices=["none", "redis"],
        default="none",
        help="with --registry: the web processes' shared cache (default: each its own memory)",
    )
    args = p.parse_args()
    results: dict[str, object] = {}
    if args.registry:
        results = registry_cases(login_only=args.login_only, cache=args.cache)
        for name, value in results.items():
            print(f"{name:32} {value}")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        return 0
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
