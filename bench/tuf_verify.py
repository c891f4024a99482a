"""Benchmark: what TUF verification costs a ``krm build`` with five catalog functions, warm cache.

In a temporary directory it writes --resources resources and a catalog of five exec functions
(``sed`` scripts in .tar.gz archives, sha256-pinned), publishes the catalog in a TUF repository
(python-tuf's Metadata API: root, targets delegating to the publisher's role, snapshot,
timestamp; tests/orchestrator/functions/tufrepo.py) served by a local HTTP server, and runs,
median of --repeat, each after a warm-up run that fills the caches:

1. ``krm build --trusted-catalog http://127.0.0.1:PORT/c/acme/functions/catalog.yaml``: the
   catalog and its revocation list verified through TUF (a timestamp download and a root
   rotation probe over loopback, every metadata signature checked, targets from the cache);
2. the same build with the same catalog bytes as a local file (no TUF, no network);
3. the checks alone, each in a fresh process with its imports: the warm check a build makes
   while the registry's timestamp is unchanged (the next root version and the timestamp over
   loopback, the two verified targets re-hashed; no tuf, no cryptography), and the full
   ngclient verification (trust store, refresh, every signature, the two targets).

The two builds run interleaved; the target is on CPU time (the process and its functions),
which the machine's load disturbs far less than wall time: (1 - 2) / 1 <= 5 % of the build
(exit 1 when missed). Wall times are printed too.

    .venv/bin/python bench/tuf_verify.py [--resources 1000] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
if not os.path.exists(PYTHON):
    PYTHON = sys.executable
sys.path.insert(0, ROOT)
FUNCTIONS = 5
TARGET = 0.05

VERIFY = """
import sys, time
t0 = time.perf_counter()
from orchestrator.functions.options import FnOptions
from orchestrator.functions import tufclient, tufpaths
t1 = time.perf_counter()
options = FnOptions(cache_dir=sys.argv[1])
target = tufpaths.for_url(sys.argv[2])
session = tufclient.open_session(target.registry, options=options, catalog=sys.argv[2])
session.refresh(sys.argv[2])
session.target_bytes(sys.argv[2], target.path)
session.target_bytes(sys.argv[2], target.revocations, what="revocation list")
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


WARM = """
import sys, time
t0 = time.perf_counter()
from orchestrator.functions.options import FnOptions
from orchestrator.functions import tufcache, tufpaths
t1 = time.perf_counter()
options = FnOptions(cache_dir=sys.argv[1])
target = tufpaths.for_url(sys.argv[2])
found = tufcache.warm_targets(
    tufcache.store_directory(options, target.registry), target.registry,
    [target.path, target.revocations], options,
)
assert found is not None
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _tgz(script: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = script.encode()
        info = tarfile.TarInfo("bin/fn")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _catalog(tmp: str) -> bytes:
    import platform

    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        "  name: functions",
        "spec:",
        "  krmFunctions:",
    ]
    for i in range(FUNCTIONS):
        archive = _tgz(f"#!/bin/sh\nexec sed 's/stage: s{i}$/stage: s{i + 1}/'\n")
        path = os.path.join(tmp, f"fn{i}.tgz")
        with open(path, "wb") as f:
            f.write(archive)
        lines += [
            "  - group: bench.example.com",
            "    names:",
            f"      kind: Step{i}",
            "    versions:",
            "    - name: v1",
            "      runtime:",
            "        exec:",
            "          platforms:",
            "          - bin: bin/fn",
            "            os: linux",
            f"            arch: {arch}",
            f"            uri: file://{path}",
            f'            sha256: "{hashlib.sha256(archive).hexdigest()}"',
        ]
    return ("\n".join(lines) + "\n").encode()


def _app(tmp: str, resources: int) -> str:
    app = os.path.join(tmp, "app")
    os.makedirs(app)
    docs = [
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  labels:\n"
        f"    stage: s0\ndata:\n  k: v{i}\n"
        for i in range(resources)
    ]
    with open(os.path.join(app, "resources.yaml"), "w") as f:
        f.write("---\n".join(docs))
    names = []
    for i in range(FUNCTIONS):
        name = f"step{i}.yaml"
        with open(os.path.join(app, name), "w") as f:
            f.write(f"apiVersion: bench.example.com/v1\nkind: Step{i}\nmetadata:\n  name: s{i}\n")
        names.append(name)
    with open(os.path.join(app, "kustomization.yaml"), "w") as f:
        f.write("resources:\n- resources.yaml\ntransformers:\n")
        f.writelines(f"- {n}\n" for n in names)
    return app


def _serve(files: dict[str, bytes]) -> tuple[str, http.server.ThreadingHTTPServer]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            data = files.get(self.path.split("?", 1)[0])
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


def _times(
    cmds: list[list[str]], env: dict[str, str], repeat: int
) -> list[tuple[float, float, str]]:
    """Median wall and CPU seconds (the process and its children) of each command, the
    commands interleaved so that a change in the machine's load hits them alike."""
    import resource

    for cmd in cmds:
        subprocess.run(cmd, env=env, check=True, capture_output=True)  # warm-up: fills caches
    walls: list[list[float]] = [[] for _ in cmds]
    cpus: list[list[float]] = [[] for _ in cmds]
    outs = [""] * len(cmds)
    for _ in range(repeat):
        for i, cmd in enumerate(cmds):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            walls[i].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[i].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            outs[i] = proc.stdout
    return [
        (statistics.median(w), statistics.median(c), o)
        for w, c, o in zip(walls, cpus, outs, strict=True)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from tests.orchestrator.functions.tufrepo import Repo

    with tempfile.TemporaryDirectory() as tmp:
        files: dict[str, bytes] = {}
        base, httpd = _serve(files)
        repo = Repo(files)
        repo.publisher("acme")
        catalog = _catalog(tmp)
        repo.publish_catalog("acme", "functions", catalog)
        repo.publish()
        local = os.path.join(tmp, "catalog", "catalog.yaml")
        os.makedirs(os.path.dirname(local))
        with open(local, "wb") as f:
            f.write(catalog)
        app = _app(tmp, args.resources)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), PYTHONPATH=ROOT)
        env["XDG_CONFIG_HOME"] = os.path.join(tmp, "config")
        url = f"{base}/c/acme/functions/catalog.yaml"
        krm = [PYTHON, "-m", "orchestrator", "build", app, "--no-cache"]
        (tuf_s, tuf_cpu, tuf_out), (file_s, file_cpu, file_out) = _times(
            [[*krm, f"--trusted-catalog={url}"], [*krm, f"--trusted-catalog={local}"]],
            env,
            args.repeat,
        )
        if tuf_out != file_out or f"stage: s{FUNCTIONS}" not in tuf_out:
            print("outputs differ, or the functions did not run", file=sys.stderr)
            return 2
        cache = os.path.join(tmp, "cache", "krm")
        verify, warm = [], []
        for _ in range(args.repeat):
            for script, out in ((WARM, warm), (VERIFY, verify)):
                proc = subprocess.run(
                    [PYTHON, "-c", script, cache, url], env=env, check=True, capture_output=True
                )
                imports, work = map(float, proc.stdout.split())
                out.append((imports, work))
        httpd.shutdown()
    share = (tuf_cpu - file_cpu) / tuf_cpu
    result = {
        "resources": args.resources,
        "functions": FUNCTIONS,
        "build_tuf_s": round(tuf_s, 4),
        "build_local_file_s": round(file_s, 4),
        "build_tuf_cpu_s": round(tuf_cpu, 4),
        "build_local_file_cpu_s": round(file_cpu, 4),
        "tuf_share_cpu": round(share, 4),
        "tuf_share_wall": round((tuf_s - file_s) / tuf_s, 4),
        "load_average": os.getloadavg()[0],
        "verify_import_s": round(statistics.median(v[0] for v in verify), 4),
        "verify_work_s": round(statistics.median(v[1] for v in verify), 4),
        "warm_import_s": round(statistics.median(v[0] for v in warm), 4),
        "warm_work_s": round(statistics.median(v[1] for v in warm), 4),
        "target": TARGET,
        "met": share <= TARGET,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{args.resources} resources, {FUNCTIONS} catalog functions, warm cache, median of "
            f"{args.repeat}:"
        )
        for name, wall, cpu in (
            ("build, catalog through TUF  ", tuf_s, tuf_cpu),
            ("build, catalog as a file    ", file_s, file_cpu),
        ):
            print(f"  {name} {wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU")
        print(
            f"  TUF share of the build (CPU) {share * 100:8.1f} %  (target <= {TARGET * 100:.0f} "
            f"%; wall {result['tuf_share_wall'] * 100:.1f} %, load {result['load_average']:.1f})"
        )
        print(
            f"  warm check alone (same timestamp): import {result['warm_import_s'] * 1000:.1f} "
            f"ms, two requests and two targets {result['warm_work_s'] * 1000:.1f} ms"
        )
        print(
            f"  full ngclient verification alone: import {result['verify_import_s'] * 1000:.1f} "
            f"ms, refresh and two targets {result['verify_work_s'] * 1000:.1f} ms"
        )
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
