"""Benchmark: mirroring a catalog with its runtime artifacts vs. ``curl`` + ``sha256sum``.

Generates a 100-function catalog whose exec runtimes point at 200 distinct 1 MiB artifacts served
by a local HTTPS server (threaded ``http.server`` with a trustme certificate, in a forked process),
then in the same run measures:

- baseline: one ``curl`` process downloading the 200 files (keep-alive, sequential) followed by
  ``sha256sum`` over them;
- mirror: a real sync run of the registry (``catalogs.mirroring.services``) on a temporary SQLite
database
  and media root: fetch, parse, download every artifact, verify its sha256, store it by digest,
  publish the rewritten catalog;
- Python's raw ``hashlib.sha256`` throughput over the same bytes in memory.

    .venv/bin/python bench/mirror.py [--artifacts 200] [--size-mib 1] [--repeat 3] [--json out.json]

Target: mirror time <= 1.5x the baseline (best of ``--repeat`` runs each).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.5


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        body = self.server.files.get(self.path)  # type: ignore[attr-defined]
        if body is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def start_server(files: dict[str, bytes], workdir: Path) -> tuple[ThreadingHTTPServer, str, str]:
    """An HTTPS server on a free loopback port; returns (server, base URL, CA file)."""
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(context)
    ca_path = workdir / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.files = files  # type: ignore[attr-defined]
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    return httpd, f"https://127.0.0.1:{httpd.server_address[1]}", str(ca_path)


def serve_in_child(httpd: ThreadingHTTPServer) -> multiprocessing.Process:
    """Serve from a forked process, so the server never competes with the client for the GIL."""
    process = multiprocessing.get_context("fork").Process(target=httpd.serve_forever, daemon=True)
    process.start()
    return process


def generate(base: str, artifacts: int, size: int) -> tuple[dict[str, bytes], bytes]:
    """(files by path, catalog document): two exec platforms per function."""
    files: dict[str, bytes] = {}
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        "  name: bench-mirror",
        "spec:",
        "  krmFunctions:",
    ]
    platforms = ("amd64", "arm64")
    for index in range(artifacts // len(platforms)):
        lines += [
            "  - group: bench.example.co",
            "    names:",
            f"      kind: Fn{index:03d}",
            "    versions:",
            "    - name: v1",
            "      runtime:",
            "        exec:",
            "          platforms:",
        ]
        for arch in platforms:
            data = os.urandom(size)
            path = f"/bin/fn{index:03d}-{arch}"
            files[path] = data
            lines += [
                f"          - bin: fn{index:03d}",
                "            os: linux",
                f"            arch: {arch}",
                f"            uri: {base}{path}",
                f"            sha256: {hashlib.sha256(data).hexdigest()}",
            ]
    document = ("\n".join(lines) + "\n").encode()
    files["/catalog.yaml"] = document
    return files, document


def baseline(base: str, paths: list[str], ca: str, workdir: Path) -> float:
    """Seconds for one curl downloading every artifact, then sha256sum over them."""
    out = workdir / "curl"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    command = ["curl", "--silent", "--show-error", "--fail", "--cacert", ca]
    names = []
    for i, path in enumerate(paths):
        name = str(out / f"a{i}")
        names.append(name)
        command += ["-o", name, base + path]
    started = time.perf_counter()
    subprocess.run(command, check=True)
    subprocess.run(["sha256sum", *names], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def setup_django(workdir: Path, ca: str) -> None:
    """A temporary SQLite registry with the mirror allowed to reach this loopback server."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "registry.settings.base"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    os.environ["MIRROR_ALLOWED_NETWORKS"] = "127.0.0.1/32"
    os.environ["MIRROR_CA_BUNDLE"] = ca
    os.environ["LOG_LEVEL"] = "WARNING"
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _artifact_names() -> list[str]:
    from catalogs.mirroring.models import RuntimeArtifact

    return list(RuntimeArtifact.objects.values_list("storage_name", flat=True))


def mirror_once(url: str, name: str) -> tuple[float, object]:
    """Seconds for one complete sync run of a new source at ``url``."""
    from catalogs.mirroring import services as mirrors

    source = mirrors.mirror_source_create(name=name, url=url, actor=None, mirror_runtimes=True)
    run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
    started = time.perf_counter()
    run = mirrors.sync_run_execute(run_pk=run.pk)
    elapsed = time.perf_counter() - started
    return elapsed, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=200)
    parser.add_argument("--size-mib", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    for tool in ("curl", "sha256sum"):
        if shutil.which(tool) is None:
            print(f"bench/mirror: '{tool}' is not installed", file=sys.stderr)
            return 2
    size = int(args.size_mib * 1024 * 1024)
    with tempfile.TemporaryDirectory(prefix="krm-bench-mirror-") as tmp:
        workdir = Path(tmp)
        files: dict[str, bytes] = {}
        httpd, base, ca = start_server(files, workdir)
        generated, document = generate(base, args.artifacts, size)
        files.update(generated)
        server = serve_in_child(httpd)
        paths = [p for p in files if p.startswith("/bin/")]
        total = sum(len(files[p]) for p in paths)
        setup_django(workdir, ca)
        from django.core.files.storage import default_storage
        from django.db import connection

        baselines, mirrors_s = [], []
        for attempt in range(args.repeat):
            baselines.append(baseline(base, paths, ca, workdir))
            # A fresh media root each time: the mirror must download and store every blob.
            shutil.rmtree(workdir / "media", ignore_errors=True)
            elapsed, run = mirror_once(f"{base}/catalog.yaml", f"bench-{attempt}")
            if run.status != "succeeded" or run.artifact_count != len(paths):
                print(f"bench/mirror: run {run.status}: {run.reason}", file=sys.stderr)
                return 1
            mirrors_s.append(elapsed)
        # Runtime artifacts stored, once each (the store also holds the versions' own bytes).
        artifacts = {n.removeprefix("blobs/sha256/") for n in _artifact_names()}
        stored = len(artifacts & set(default_storage.listdir("blobs/sha256")[1]))
        connection.close()
        blob = b"".join(files[p] for p in paths)
        started = time.perf_counter()
        hashlib.sha256(blob).hexdigest()
        raw_hash_s = time.perf_counter() - started
        server.terminate()
        server.join(10)
        httpd.server_close()
    mib = total / (1024 * 1024)
    best_base, best_mirror = min(baselines), min(mirrors_s)
    ratio = best_mirror / best_base
    figures = {
        "functions": args.artifacts // 2,
        "artifacts": len(paths),
        "artifact_mib": args.size_mib,
        "catalog_bytes": len(document),
        "blobs_stored": stored,
        "baseline_curl_sha256sum_s": baselines,
        "mirror_s": mirrors_s,
        "ratio_best": ratio,
        "mirror_mb_s": mib / best_mirror,
        "baseline_mb_s": mib / best_base,
        "python_sha256_mb_s": mib / raw_hash_s,
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio <= TARGET_RATIO,
    }
    print(
        f"artifacts: {len(paths)} x {args.size_mib:g} MiB ({mib:.0f} MiB), functions: "
        f"{args.artifacts // 2}, blobs stored: {stored}"
    )
    print(
        "baseline curl+sha256sum: "
        + ", ".join(f"{s:.3f}s" for s in baselines)
        + f"  -> {mib / best_base:.0f} MiB/s"
    )
    print(
        "registry mirror sync:    "
        + ", ".join(f"{s:.3f}s" for s in mirrors_s)
        + f"  -> {mib / best_mirror:.0f} MiB/s"
    )
    print(f"python raw sha256:       {raw_hash_s:.3f}s  -> {mib / raw_hash_s:.0f} MiB/s")
    print(
        f"ratio mirror/baseline (best of {args.repeat}): {ratio:.2f}x "
        f"(target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
