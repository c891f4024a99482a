"""Load check: the catalog URL and every API list endpoint under wrk, on gunicorn.

Seeds a temporary SQLite database (the 200-function catalog of ``serve_catalog.py`` published
60 times, 60 publishers and catalogs, 60 contributions, a mirror source with 60 runs), serves it
with gunicorn as ``serve_catalog.py`` does (2 workers, DEBUG off) and loads each URL with
``wrk -c64 -d20s --latency`` as a staff user (a token header). Prints req/s, p99 and errors per
URL and each list endpoint's throughput against the catalog URL's. Targets: 0 non-2xx anywhere,
every list endpoint within 3× of the catalog URL (exit 1 when not met).

The web processes share a cache as production's ``CACHE_URL`` makes them: a private
``redis-server`` on a free port (``--cache none`` runs without one: list pages are then rendered
on every request, see catalogs/api/cache.py). The table also shows each run's CPU seconds
of gunicorn (all workers) per 1,000 requests.

    .venv/bin/python bench/load_api.py [--duration 20] [--connections 64] [--cache redis|none]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import httpx
from serve_catalog import (  # bench/ is this script's directory, first on sys.path
    CATALOG,
    PUBLISHER,
    BenchError,
    Processes,
    WrkResult,
    django_env,
    free_port,
    generate_catalog,
    manage,
    parse_wrk,
    wait_http,
)

ROWS = 60
SEED = """
import yaml
from django.contrib.auth.models import User
from catalogs.accounts.services import api_token_create
from catalogs.publishing import services
from catalogs.publishing.models import Catalog, Publisher
from catalogs.review.models import Contribution
from catalogs.mirroring.models import MirrorSource, SyncRun
staff = User.objects.create_user("bench", is_staff=True)
catalog = Catalog.objects.get(publisher__slug="{publisher}", name="{catalog}")
doc = yaml.safe_load(open("{catalog_file}"))
for i in range({rows}):
    doc["metadata"]["name"] = f"bench-{{i}}"
    services.catalog_version_publish(catalog=catalog, content=yaml.safe_dump(doc), actor=None)
for i in range({rows}):
    publisher = Publisher.objects.create(slug=f"p{{i:02d}}", display_name=f"Publisher {{i}}")
    publisher.owners.add(staff)
    Catalog.objects.create(publisher=publisher, name="c", description="A catalog.")
mirror = Catalog.objects.get(publisher__slug="p00")
source = MirrorSource.objects.create(name="src", url="https://h.example/c.yaml", catalog=mirror)
SyncRun.objects.bulk_create([SyncRun(source=source, status="succeeded") for _ in range({rows})])
latest = Catalog.objects.get(pk=catalog.pk).latest_version
for i in range({rows}):
    Contribution.objects.create(
        catalog=catalog, author=staff, reviewer=staff, content="x", group="g", kind=f"K{{i}}",
        published_version=latest, status="approved",
    )
print(api_token_create(user=staff, name="bench")[1], source.pk)
"""


def ensure_wrk() -> None:
    """Install wrk from Debian when missing (needs root), else explain."""
    if shutil.which("wrk") is not None:
        return
    if os.geteuid() != 0:
        raise BenchError("wrk is missing; install it with: apt-get install -y wrk")
    proc = subprocess.run(["apt-get", "install", "-y", "wrk"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BenchError(f"apt-get install wrk failed:\n{proc.stderr[-2000:]}")


def ensure_redis() -> str:
    """The redis-server program, or an error that says how to install it."""
    found = shutil.which("redis-server")
    if found is None:
        raise BenchError(
            "redis-server is missing; install it with: apt-get install -y redis-server"
        )
    return found


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its children (gunicorn workers)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for one in pids:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def run_wrk(url: str, *, token: str, connections: int, duration: int) -> WrkResult:
    proc = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{duration}s",
            "--latency",
            "-H",
            f"Authorization: Token {token}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=duration + 60,
    )
    if proc.returncode != 0:
        raise BenchError(f"wrk failed ({proc.returncode}):\n{proc.stderr}")
    return parse_wrk(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    """Seed, serve, load each URL; print the table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=20, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--cache",
        choices=["redis", "none"],
        default="redis",
        help="the shared cache of the web processes (default: a private redis-server)",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="krm-bench-api-"))
    procs = Processes()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    results: dict[str, WrkResult] = {}
    cpu_per_1000: dict[str, float] = {}
    try:
        ensure_wrk()
        env = django_env(workdir)
        if args.cache == "redis":
            redis_port = free_port()
            procs.start(
                "redis",
                [
                    ensure_redis(),
                    "--port",
                    str(redis_port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ],
                env=env,
                log=workdir / "redis.log",
            )
            env["CACHE_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        catalog_file = workdir / "catalog.yaml"
        catalog_file.write_bytes(generate_catalog(200))
        manage(env, "migrate", "--noinput")
        manage(
            env, "import_catalog", str(catalog_file), "--publisher", PUBLISHER, "--catalog", CATALOG
        )
        seed = SEED.format(
            publisher=PUBLISHER, catalog=CATALOG, catalog_file=catalog_file, rows=ROWS
        )
        token, source = manage(env, "shell", "-v0", "-c", seed).split()[-2:]
        port = free_port()
        procs.start(
            "gunicorn",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "registry.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(args.workers),
                "--log-level",
                "warning",
            ],
            env=env,
            log=workdir / "gunicorn.log",
        )
        base = f"http://127.0.0.1:{port}"
        urls = {
            "catalog URL": f"/c/{PUBLISHER}/{CATALOG}/catalog.yaml",
            "publishers": "/api/v1/publishers/",
            "catalogs": "/api/v1/catalogs/",
            "versions": f"/api/v1/catalogs/{PUBLISHER}/{CATALOG}/versions/",
            "functions": "/api/v1/functions/",
            "contributions": "/api/v1/contributions/",
            "sources": "/api/v1/sources/",
            "runs": f"/api/v1/sources/{source}/runs/",
        }
        wait_http(base + urls["catalog URL"], procs, workdir)
        headers = {"Authorization": f"Token {token}"}
        for path in urls.values():
            check = httpx.get(base + path, headers=headers, timeout=30)
            if check.status_code != 200:
                raise BenchError(f"GET {path} answered {check.status_code}: {check.text[:300]}")
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        master = next(proc.pid for name, proc in procs.procs if name == "gunicorn")
        for name, path in urls.items():
            run_wrk(base + path, token=token, connections=args.connections, duration=2)  # warm
            cpu = process_tree_cpu(master)
            results[name] = run_wrk(
                base + path, token=token, connections=args.connections, duration=args.duration
            )
            requests = results[name].requests_per_sec * args.duration
            cpu_per_1000[name] = (process_tree_cpu(master) - cpu) / max(requests, 1) * 1000
            procs.check_alive(workdir)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        procs.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(
        f"wrk -t2 -c{args.connections} -d{args.duration}s --latency, gunicorn --workers "
        f"{args.workers}, cache {args.cache}; before: {uptime}"
    )
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"after: {after}")
    reference = results["catalog URL"].requests_per_sec
    print(
        f"{'endpoint':<15} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'ratio':>6} "
        f"{'cpu s/1k':>9}"
    )
    failed = False
    for name, r in results.items():
        ratio = reference / r.requests_per_sec if r.requests_per_sec else float("inf")
        print(
            f"{name:<15} {r.requests_per_sec:>9.1f} {r.p50_ms:>8.1f} {r.p99_ms:>8.1f} "
            f"{r.errors:>7} {ratio:>6.2f} {cpu_per_1000.get(name, 0.0):>9.2f}"
        )
        failed |= r.errors > 0 or ratio > 3.0
    print(
        "targets (0 errors, every list within 3x of the catalog URL):",
        "NOT MET" if failed else "met",
    )
    if args.json:
        payload = {
            name: asdict(r) | {"errors": r.errors, "cpu_s_per_1000": cpu_per_1000.get(name)}
            for name, r in results.items()
        }
        args.json.write_text(json.dumps({"uptime": [uptime, after], "results": payload}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
