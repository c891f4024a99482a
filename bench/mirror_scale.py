"""Scale test: 200 mirror sources synced once by 1 and by 3 real Celery worker processes.

Every part is real: ``celery worker`` subprocesses (``--concurrency 1`` each, prefork) on a Redis
broker, a PostgreSQL database of its own (``krm_bench_mirror_scale``, recreated from a migrated
template for each worker count, so it never touches the test database), and 200 sources on a
local HTTPS server (trustme certificate, threaded ``http.server`` in a forked process). For each
worker count the script queues one sync of every source (a private queue on the broker), waits
until none is queued or running, and then proves:

- exactly one catalog version per source, and exactly one sync run per source, succeeded;
- no lost run: no run left queued or running, no run failed, 200 runs in all.

It reports the wall time (first job queued -> last run finished), the per-run overhead (wall/200
and the workers' CPU seconds per run, read from /proc for each worker's process tree, so worker
start-up is not counted), the HTTPS server's CPU, and the load average before and after.

The machine this was written on has 2 cores shared with other work: 3 workers cannot run 1.5x as
fast as 1 on it. The 1-vs-3 ratio shows what spreading runs over processes costs or saves
(database row locks, broker round trips, contention), not a parallel speed-up.

    .venv/bin/python bench/mirror_scale.py [--sources 200] [--workers 1,3] [--json out.json]
        [--database-url postgres://postgres@127.0.0.1:5432/krm_bench_mirror_scale]
        [--broker-url redis://127.0.0.1:6379/14] [--rate-limit ""]

Exit status 1 when a check fails (a lost run, a source without exactly one version).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/krm_bench_mirror_scale"
DEFAULT_BROKER = "redis://127.0.0.1:6379/14"
WAIT_SECONDS = 900


# ----------------------------------------------------------------------------- upstream


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802
        body = self.server.files.get(self.path.split("?", 1)[0])  # type: ignore[attr-defined]
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


def catalog(name: str, functions: int = 3) -> bytes:
    """A valid catalog of ``functions`` container-runtime functions (pinned images)."""
    lines = [
        "apiVersion: config.kubernetes.io/v1alpha1",
        "kind: Catalog",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  krmFunctions:",
    ]
    for i in range(functions):
        lines += [
            "  - group: example.co",
            "    names:",
            f"      kind: Fn{i}",
            f"    description: Function {i} of {name}.",
            "    versions:",
            "    - name: v1",
            "      runtime:",
            "        container:",
            f"          image: registry.example.co/{name}/fn{i}@sha256:{'a' * 64}",
        ]
    return ("\n".join(lines) + "\n").encode()


def start_upstream(
    files: dict[str, bytes], workdir: Path
) -> tuple[str, str, multiprocessing.Process]:
    """Serve ``files`` over HTTPS from a forked process; (base URL, CA file, process)."""
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
    process = multiprocessing.get_context("fork").Process(target=httpd.serve_forever, daemon=True)
    process.start()
    httpd.socket.close()
    return f"https://127.0.0.1:{httpd.server_address[1]}", str(ca_path), process


# ----------------------------------------------------------------------------- processes


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live descendants, from /proc."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / CLK_TCK
        for task in Path(f"/proc/{pid}/task").iterdir():
            children = (task / "children").read_text().split()
            total += sum(tree_cpu(int(child)) for child in children)
    except (FileNotFoundError, ProcessLookupError):
        pass
    return total


def start_worker(index: int, queue: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115  (owned by the worker until it exits)
    return subprocess.Popen(
        [
            str(Path(sys.executable).with_name("celery")),
            "-A",
            "registry",
            "worker",
            "-Q",
            queue,
            "--concurrency",
            "1",
            "--prefetch-multiplier",
            "1",
            "--hostname",
            f"bench-{index}-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(process: subprocess.Popen) -> None:
    """Warm shutdown of the worker (its pool child finishes and reports first), then the group."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


# ----------------------------------------------------------------------------- database


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def recreate(url: str, *, template: str | None = None) -> None:
    """Drop and create the database of ``url`` (optionally as a copy of ``template``)."""
    import psycopg
    from psycopg import sql

    name = database_name(url)
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if template:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            )
        else:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop(url: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(database_name(url))
            )
        )


# ----------------------------------------------------------------------------- one round


def one_round(
    *, workers: int, sources: int, base_env: dict[str, str], base_url: str, workdir: Path
) -> dict:
    """Queue one sync of each source for ``workers`` worker processes; measure and check."""
    from django.db import connections
    from django.db.models import Count

    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring import tasks
    from catalogs.mirroring.models import MirrorSource, SyncRun
    from catalogs.publishing.models import CatalogVersion
    from registry.celery import app

    created_at = time.perf_counter()
    names = [f"scale-{i:03d}" for i in range(sources)]
    made = [
        mirrors.mirror_source_create(name=name, url=f"{base_url}/{name}.yaml", actor=None)
        for name in names
    ]
    create_seconds = time.perf_counter() - created_at
    queue = f"krm-bench-scale-{os.getpid()}-{workers}"
    logs = [workdir / f"workers-{workers}-{i}.log" for i in range(workers)]
    procs = [start_worker(i, queue, base_env, logs[i]) for i in range(workers)]
    try:
        hostnames = [f"bench-{i}-{os.getpid()}@{os.uname().nodename}" for i in range(workers)]
        deadline = time.monotonic() + 120
        while len(app.control.ping(destination=hostnames, timeout=1.0)) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit("workers did not start:\n" + logs[0].read_text()[-4000:])
        cpu_before = sum(tree_cpu(p.pid) for p in procs)
        bench_cpu_before = time.process_time()
        load_before = os.getloadavg()

        started = time.perf_counter()
        for source in made:
            run = mirrors.mirror_source_sync_request(source=source, actor=None, enqueue=False)
            tasks.mirror_source_sync_task.apply_async((run.pk,), queue=queue)
        queued_seconds = time.perf_counter() - started
        deadline = time.monotonic() + WAIT_SECONDS
        active = SyncRun.objects.filter(status__in=("queued", "running"))
        while active.exists() or SyncRun.objects.count() < sources:
            if time.monotonic() > deadline:
                raise SystemExit("runs did not finish in time:\n" + logs[0].read_text()[-4000:])
            time.sleep(0.05)
        wall = time.perf_counter() - started
        cpu = sum(tree_cpu(p.pid) for p in procs) - cpu_before
        bench_cpu = time.process_time() - bench_cpu_before
        load_after = os.getloadavg()
    finally:
        for p in procs:
            stop(p)

    runs_by_status = dict(SyncRun.objects.order_by().values_list("status").annotate(n=Count("id")))
    per_source_runs = {
        row["source__name"]: row["n"]
        for row in SyncRun.objects.order_by().values("source__name").annotate(n=Count("id"))
    }
    per_source_versions = {
        row["catalog__name"]: row["n"]
        for row in CatalogVersion.objects.order_by().values("catalog__name").annotate(n=Count("id"))
    }
    one_version = [n for n in names if per_source_versions.get(n) == 1]
    one_run = [n for n in names if per_source_runs.get(n) == 1]
    succeeded_per_source = {
        row["source__name"]
        for row in SyncRun.objects.filter(status="succeeded").values("source__name")
    }
    lost = SyncRun.objects.filter(status__in=("queued", "running")).count()
    failures = list(SyncRun.objects.filter(status="failed").values_list("reason", flat=True)[:5])
    checks = {
        "sources": MirrorSource.objects.count() == sources,
        "exactly_one_version_per_source": len(one_version) == sources,
        "exactly_one_run_per_source": len(one_run) == sources,
        "every_source_succeeded_once": len(succeeded_per_source) == sources,
        "no_run_queued_or_running": lost == 0,
        "no_run_failed": runs_by_status.get("failed", 0) == 0,
        "runs_total": SyncRun.objects.count() == sources,
    }
    # Which worker ran how many jobs (each worker logs to its own file).
    runs_per_worker = [log.read_text().count("succeeded in") for log in logs]
    connections.close_all()
    return {
        "workers": workers,
        "sources": sources,
        "wall_seconds": round(wall, 3),
        "queue_seconds": round(queued_seconds, 3),
        "wall_per_run_ms": round(wall / sources * 1000, 2),
        "worker_cpu_seconds": round(cpu, 3),
        "worker_cpu_per_run_ms": round(cpu / sources * 1000, 2),
        "enqueuer_cpu_seconds": round(bench_cpu, 3),
        "runs_per_second": round(sources / wall, 1),
        "source_create_seconds": round(create_seconds, 2),
        "runs_by_status": runs_by_status,
        "deferrals": sum(SyncRun.objects.values_list("deferrals", flat=True)),
        "failures_sample": failures,
        "jobs_per_worker": runs_per_worker,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "checks": checks,
        "ok": all(checks.values()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=200)
    parser.add_argument("--workers", default="1,3", help="worker counts, comma-separated")
    parser.add_argument("--database-url", default=DEFAULT_DB)
    parser.add_argument("--broker-url", default=DEFAULT_BROKER)
    parser.add_argument(
        "--rate-limit", default="", help="UPSTREAM_RATE_LIMIT for the workers (default: off)"
    )
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    name = database_name(args.database_url)
    if "bench" not in name:
        parser.error(f"the database name must contain 'bench' (got {name!r}): it is dropped")
    counts = [int(n) for n in args.workers.split(",")]

    workdir = Path(tempfile.mkdtemp(prefix="krm-bench-scale-"))
    files = {f"/scale-{i:03d}.yaml": catalog(f"scale-{i:03d}") for i in range(args.sources)}
    base_url, ca_path, server = start_upstream(files, workdir)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    (workdir / "signing-key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    template_url = with_database(args.database_url, f"{name}_template")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KRM_TEST", "DJANGO_"))},
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.broker_url,
        "CELERY_RESULT_BACKEND": "",
        "MEDIA_ROOT": str(workdir / "media"),
        "SIGNING_KEY_FILE": str(workdir / "signing-key.pem"),
        "MIRROR_ALLOWED_NETWORKS": "127.0.0.1/32",
        "MIRROR_CA_BUNDLE": ca_path,
        "UPSTREAM_RATE_LIMIT": args.rate_limit,
        "UPSTREAM_RATE_LIMIT_STORAGE_URL": "",
        "CACHE_URL": "locmemcache://",
    }
    results = []
    django_ready = False
    try:
        print(f"migrating a template database ({database_name(template_url)}) ...", flush=True)
        recreate(template_url)
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"],
            cwd=workdir,
            env={**env, "DATABASE_URL": template_url},
            check=True,
        )
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        django_ready = True
        server_cpu_total = 0.0
        for workers in counts:
            from django.db import connections

            connections.close_all()
            recreate(args.database_url, template=database_name(template_url))
            shutil.rmtree(workdir / "media", ignore_errors=True)
            server_cpu = tree_cpu(server.pid or 0)
            result = one_round(
                workers=workers,
                sources=args.sources,
                base_env=env,
                base_url=base_url,
                workdir=workdir,
            )
            result["upstream_cpu_seconds"] = round(tree_cpu(server.pid or 0) - server_cpu, 3)
            server_cpu_total += result["upstream_cpu_seconds"]
            results.append(result)
            print(json.dumps(result, indent=2), flush=True)
    finally:
        if django_ready:
            from django.db import connections

            connections.close_all()
        for url in (args.database_url, template_url):
            drop(url)
        server.terminate()
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    print(
        f"{'workers':>7} {'wall s':>8} {'ms/run':>8} {'CPU s':>7} {'CPU ms/run':>10} "
        f"{'runs/s':>7} {'load before -> after (1/5/15 min)':>36} ok"
    )
    for r in results:
        print(
            f"{r['workers']:>7} {r['wall_seconds']:>8.2f} {r['wall_per_run_ms']:>8.1f} "
            f"{r['worker_cpu_seconds']:>7.2f} {r['worker_cpu_per_run_ms']:>10.1f} "
            f"{r['runs_per_second']:>7.1f} "
            f"{str(r['load_before']):>17} -> {str(r['load_after']):<17} {r['ok']}"
        )
    if len(results) >= 2:
        first, last = results[0], results[-1]
        print(
            f"wall {first['workers']} -> {last['workers']} workers: "
            f"{first['wall_seconds'] / last['wall_seconds']:.2f}x; CPU per run "
            f"{last['worker_cpu_per_run_ms'] / first['worker_cpu_per_run_ms']:.2f}x "
            f"(cores here: {os.cpu_count()})"
        )
    if args.json:
        args.json.write_text(json.dumps({"results": results, "cpus": os.cpu_count()}, indent=2))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
