"""Benchmark: serving catalog.yaml — nginx in front of the registry (the deployed path), gunicorn
alone, nginx serving the same file statically and Debian's docker-registry serving it as a blob.

Generates a 200-function KEP-2906 catalog, imports it into a temporary SQLite database with
``manage.py import_catalog``, serves it with gunicorn (2 workers, DEBUG off) behind Debian's nginx
running ``deploy/nginx/krm-registry.conf.template`` (the same nginx also serves the file from disk
on a second port, the static baseline, and from a read buffer, ``sendfile off`` as the pinned
location sends), and pushes the served bytes as a blob to Debian's ``docker-registry``
(distribution v2). All are loaded with ``wrk`` in one run: req/s, p50/p99, errors and the CPU
seconds the servers used; then the targets, with pull counting on: pinned ≥ 90 % of nginx static
and ≥ 5× docker-registry with 0 errors, latest ≥ 25 % of nginx static, the pulls stored ≥ 99 % of
the catalog GETs served (exit 1 when one is missed).

    .venv/bin/python bench/serve_catalog.py [--duration 20] [--connections 64] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
# Counted pulls of the catalog must be at least this share of the catalog GETs that were served.
PULLS_COUNTED_AT_LEAST = 0.99
PUBLISHER = "bench"
CATALOG = "functions"
REPOSITORY = "bench/catalog"
PLATFORMS = (("linux", "amd64"), ("linux", "arm64"), ("darwin", "arm64"))
APT_PACKAGES = {"docker-registry": "docker-registry", "wrk": "wrk", "nginx": "nginx-light"}
NGINX_TEMPLATE = ROOT / "deploy" / "nginx" / "krm-registry.conf.template"
# The targets: (what, numerator, denominator, at least).
TARGETS = (
    ("pinned (pulls counted) >= 90% of nginx static", "pinned", "nginx-static", 0.9),
    ("pinned >= 5x docker-registry", "pinned", "docker-registry", 5.0),
    ("latest >= 25% of nginx static", "latest", "nginx-static", 0.25),
)


class BenchError(Exception):
    """A benchmark step failed; the message says which and why."""


@dataclass
class WrkResult:
    """What one wrk run measured."""

    requests: int
    requests_per_sec: float
    p50_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: int

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors


def generate_catalog(count: int) -> bytes:
    """Return a valid KEP-2906 Catalog with ``count`` functions, alternating container and exec."""
    functions = []
    for i in range(count):
        name = f"fn-{i:03d}"
        if i % 2 == 0:
            runtime = {
                "container": {
                    "image": f"registry.example.co/krm-functions/{name}:v1.0.0",
                    "sha256": hashlib.sha256(f"image {name}".encode()).hexdigest(),
                    "requireNetwork": i % 10 == 0,
                    "requireStorageMount": False,
                }
            }
        else:
            runtime = {
                "exec": {
                    "platforms": [
                        {
                            "bin": f"{name}-{os_}-{arch}",
                            "os": os_,
                            "arch": arch,
                            "uri": f"https://downloads.example.co/{name}/v1.0.0/"
                            f"{name}-{os_}-{arch}.tar.gz",
                            "sha256": hashlib.sha256(f"{name} {os_} {arch}".encode()).hexdigest(),
                        }
                        for os_, arch in (
                            ("linux", "amd64"),
                            ("linux", "arm64"),
                            ("darwin", "arm64"),
                        )
                    ]
                }
            }
        functions.append(
            {
                "group": "bench.example.co",
                "names": {"kind": f"BenchFunction{i:03d}"},
                "description": f"Benchmark function number {i}, which sets a label on resources.",
                "publisher": "example.co",
                "versions": [
                    {
                        "name": "v1",
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {
                                        "type": "object",
                                        "properties": {"value": {"type": "string"}},
                                    }
                                },
                            }
                        },
                        "idempotent": True,
                        "runtime": runtime,
                        "usage": f"https://docs.example.co/functions/{name}/README.md",
                        "examples": [f"https://docs.example.co/functions/{name}/example.md"],
                        "license": "Apache 2.0",
                    }
                ],
                "home": f"https://docs.example.co/functions/{name}",
                "maintainers": ["platform@example.co"],
                "tags": ["mutator", "bench"],
            }
        )
    catalog = {
        "apiVersion": "config.kubernetes.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": "bench-functions", "labels": {"author": "ExampleCo"}},
        "spec": {"krmFunctions": functions},
    }
    return yaml.dump(catalog, Dumper=yaml.CSafeDumper, sort_keys=False).encode()


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ensure_tools() -> None:
    """Install docker-registry and wrk from Debian when missing (needs root), else explain."""
    missing = [pkg for tool, pkg in APT_PACKAGES.items() if shutil.which(tool) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BenchError(
            f"missing tools; install them with: apt-get install -y {' '.join(missing)}"
        )
    print(f"installing {' '.join(missing)} with apt-get", file=sys.stderr)
    proc = subprocess.run(
        ["apt-get", "install", "-y", *missing], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise BenchError(f"apt-get install {' '.join(missing)} failed:\n{proc.stderr[-2000:]}")


class Processes:
    """Started servers; each runs in its own session so its whole group is stopped at the end."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], *, env: dict[str, str], log: Path) -> None:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv,
                env=env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append((name, proc))

    def check_alive(self, log_dir: Path) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                tail = (log_dir / f"{name}.log").read_text(errors="replace")[-2000:]
                raise BenchError(f"{name} exited with code {proc.returncode}:\n{tail}")

    def stop(self) -> None:
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                # Only the process group we created: gunicorn's master and its workers.
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()


def wait_http(url: str, procs: Processes, log_dir: Path, *, timeout: float = 60) -> None:
    """Poll ``url`` until it answers (any status), failing early if a server died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs.check_alive(log_dir)
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise BenchError(f"{url} did not answer within {timeout:.0f}s")


def django_env(workdir: Path) -> dict[str, str]:
    """Environment for manage.py and gunicorn: base settings, DEBUG off, a fresh SQLite file."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="registry.settings.base",
        DEBUG="false",
        SECRET_KEY="bench-" + hashlib.sha256(os.urandom(16)).hexdigest(),
        DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
        # Keep the connection per worker, as production does, instead of reopening per request.
        CONN_MAX_AGE="600",
        MEDIA_ROOT=str(workdir / "media"),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        LOG_LEVEL="WARNING",
    )
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        env.pop(name, None)
    return env


def manage(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise BenchError(f"manage.py {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def start_registry_app(
    procs: Processes,
    workdir: Path,
    catalog_file: Path,
    workers: int,
    threads: int = 1,
    extra_args: tuple[str, ...] = (),
) -> tuple[str, bytes]:
    """Import the catalog and serve it with gunicorn; return its base URL and the served bytes."""
    env = django_env(workdir)
    manage(env, "migrate", "--noinput")
    manage(env, "import_catalog", str(catalog_file), "--publisher", PUBLISHER, "--catalog", CATALOG)
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
            str(workers),
            # More than one thread makes gunicorn use gthread workers, which keep connections alive.
            "--threads",
            str(threads),
            "--log-level",
            "warning",
            *extra_args,
        ],
        env=env,
        log=workdir / "gunicorn.log",
    )
    base = f"http://127.0.0.1:{port}"
    url = f"{base}/c/{PUBLISHER}/{CATALOG}/catalog.yaml"
    wait_http(url, procs, workdir)
    response = httpx.get(url, timeout=10)
    if response.status_code != 200:
        raise BenchError(f"GET {url} answered {response.status_code}: {response.text[:500]}")
    digest = "sha256:" + hashlib.sha256(response.content).hexdigest()
    header = response.headers.get("X-Content-Digest")
    if header != digest:
        raise BenchError(f"X-Content-Digest {header!r} does not match the body's {digest}")
    return base, response.content


def render_nginx_site(values: dict[str, str], template: Path = NGINX_TEMPLATE) -> str:
    """The deploy template with its ``${KRM_*}`` variables replaced, as the nginx image's envsubst
    does; a variable without a value is an error (nginx would read ``${...}`` literally)."""
    text = template.read_text()
    missing = sorted(set(re.findall(r"\$\{(KRM_\w+)\}", text)) - set(values))
    if missing:
        raise BenchError(f"{template.name} needs values for {', '.join(missing)}")
    return re.sub(r"\$\{(KRM_\w+)\}", lambda m: values[m.group(1)], text)


def nginx_main_config(workdir: Path, site: Path, *, static_port: int, static_root: Path) -> str:
    """A whole nginx.conf for a private instance in ``workdir`` (pid, logs, temp files there)
    that includes ``site`` and serves ``static_root`` on ``static_port`` (the static baseline)."""
    temp = workdir / "nginx-temp"
    temp.mkdir(exist_ok=True)
    # As root, nginx's workers would switch to nobody, who cannot enter pytest's or mkdtemp's 0700
    # directories: keep them as the invoking user.
    user = "user root root;" if os.geteuid() == 0 else ""
    return f"""{user}
worker_processes auto;
daemon off;
pid {workdir / "nginx.pid"};
error_log {workdir / "nginx-error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    access_log {workdir / "nginx-access.log"} combined buffer=64k flush=1s;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    types {{ application/yaml yaml; }}
    default_type application/octet-stream;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {site};
    server {{
        listen 127.0.0.1:{static_port};
        root {static_root};
        # The same file sent from a read buffer, as the deployed pinned location sends its
        # cached copies (nginx-static-read, for comparison; the target's baseline is the above).
        location /read/ {{
            alias {static_root}/;
            sendfile off;
            output_buffers 1 512k;
        }}
    }}
}}
"""


def start_nginx(
    procs: Processes,
    workdir: Path,
    *,
    upstream: str,
    static_root: Path,
    microcache: str = "1s",
    media_root: Path | None = None,
    template: Path = NGINX_TEMPLATE,
) -> tuple[str, str]:
    """Run Debian's nginx with the deploy config in front of ``upstream`` (host:port); return
    the deployed base URL and the static baseline's base URL."""
    port, static_port = free_port(), free_port()
    cache = workdir / "nginx-cache"
    cache.mkdir(exist_ok=True)
    site = workdir / "krm-registry.conf"
    site.write_text(
        render_nginx_site(
            {
                "KRM_LISTEN": f"127.0.0.1:{port}",
                "KRM_UPSTREAM": upstream,
                "KRM_CACHE_DIR": str(cache),
                "KRM_LATEST_MICROCACHE": microcache,
                "KRM_MEDIA_ROOT": str(media_root or workdir / "media"),
                "KRM_PULLS_LOG": str(workdir / "pulls.log"),
            },
            template,
        )
    )
    conf = workdir / "nginx.conf"
    conf.write_text(
        nginx_main_config(workdir, site, static_port=static_port, static_root=static_root)
    )
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    check = subprocess.run(
        [nginx, "-t", "-q", "-p", str(workdir), "-c", str(conf)],
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        raise BenchError(f"nginx -t refused the config:\n{check.stderr}")
    procs.start(
        "nginx",
        [nginx, "-p", str(workdir), "-c", str(conf)],
        env=dict(os.environ),
        log=workdir / "nginx.log",
    )
    base, static = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{static_port}"
    wait_http(f"{static}/", procs, workdir)
    return base, static


def process_group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes of a process group (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command name may hold spaces and parentheses: split after its closing one.
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def start_docker_registry(procs: Processes, workdir: Path, blob: bytes) -> str:
    """Run docker-registry on a loopback port, push ``blob`` and return its blob URL."""
    port = free_port()
    storage = workdir / "oci-storage"
    storage.mkdir()
    config = {
        "version": 0.1,
        # Access logs off, as for gunicorn: both sides only do the serving work.
        "log": {"level": "error", "accesslog": {"disabled": True}},
        "storage": {
            "filesystem": {"rootdirectory": str(storage)},
            "cache": {"blobdescriptor": "inmemory"},
        },
        "http": {"addr": f"127.0.0.1:{port}"},
    }
    config_file = workdir / "docker-registry.yml"
    config_file.write_text(yaml.safe_dump(config))
    procs.start(
        "docker-registry",
        ["docker-registry", "serve", str(config_file)],
        env=dict(os.environ),
        log=workdir / "docker-registry.log",
    )
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/v2/", procs, workdir)
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    with httpx.Client(base_url=base, timeout=30) as client:
        started = client.post(f"/v2/{REPOSITORY}/blobs/uploads/")
        if started.status_code != 202:
            raise BenchError(f"blob upload start answered {started.status_code}: {started.text}")
        # The Location carries the upload's state in its query; the digest is appended to it.
        location = httpx.URL(started.headers["Location"])
        finished = client.put(
            location.copy_add_param("digest", digest),
            content=blob,
            headers={"Content-Type": "application/octet-stream"},
        )
        if finished.status_code != 201:
            raise BenchError(f"blob upload answered {finished.status_code}: {finished.text}")
        url = f"{base}/v2/{REPOSITORY}/blobs/{digest}"
        fetched = client.get(url)
    if fetched.status_code != 200 or fetched.content != blob:
        raise BenchError(f"GET {url} answered {fetched.status_code} with different bytes")
    return url


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * _UNITS_MS[unit]


def parse_wrk(output: str) -> WrkResult:
    """Parse the text wrk prints with ``--latency``."""
    try:
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
        requests = int(re.search(r"(\d+) requests in", output).group(1))
        p50 = _ms(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1))
        p99 = _ms(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1))
    except AttributeError:
        raise BenchError(f"could not parse wrk output:\n{output}")
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    sockets = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    return WrkResult(
        requests=requests,
        requests_per_sec=rps,
        p50_ms=p50,
        p99_ms=p99,
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=sum(int(n) for n in sockets.groups()) if sockets else 0,
    )


def run_wrk(url: str, *, threads: int, connections: int, duration: int) -> WrkResult:
    proc = subprocess.run(
        [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{duration}s",
            "--latency",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=duration + 60,
    )
    if proc.returncode != 0:
        raise BenchError(f"wrk failed ({proc.returncode}):\n{proc.stderr}")
    return parse_wrk(proc.stdout)


def wait_for_pulls(workdir: Path, *, at_least: float, timeout: float = 30) -> int:
    """The catalog's pulls in the registry's database once they reach ``at_least`` (the web
    processes and the collector flush every few seconds), or what there is after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        with sqlite3.connect(workdir / "db.sqlite3", timeout=30) as db:
            (total,) = db.execute(
                "SELECT COALESCE(SUM(count), 0) FROM catalogs_catalogversionpulls"
            ).fetchone()
        if total >= at_least or time.monotonic() > deadline:
            return int(total)
        time.sleep(0.5)


def check_deployed(url: str, body: bytes) -> None:
    """``url`` through nginx answers ``body``, and from nginx's cache the second time."""
    for _ in (1, 2):
        response = httpx.get(url, timeout=10)
        if response.status_code != 200 or response.content != body:
            raise BenchError(f"GET {url} answered {response.status_code} with different bytes")
    if response.headers.get("X-Cache-Status") != "HIT":
        raise BenchError(f"GET {url} twice: not answered from nginx's cache: {response.headers}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print every server's figures and the targets; exit 1 on a miss."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=20, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--functions", type=int, default=200, help="functions in the catalog")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unmeasured load first")
    parser.add_argument("--rounds", type=int, default=1, help="measured runs of each server")
    parser.add_argument("--microcache", default="1s", help="nginx's cache time for latest")
    parser.add_argument(
        "--nginx-template",
        type=Path,
        default=NGINX_TEMPLATE,
        help="the deployed path's nginx site (default: deploy/nginx's; another version of it "
        "measures a change against the same static baseline)",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, DB)")
    args = parser.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="krm-bench-serve-"))
    procs = Processes()
    # A SIGTERM (e.g. a CI timeout) must still reach the finally below and stop the servers.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    load_before = os.getloadavg()
    try:
        ensure_tools()
        catalog_file = workdir / "catalog.yaml"
        catalog_file.write_bytes(generate_catalog(args.functions))
        gunicorn, body = start_registry_app(procs, workdir, catalog_file, args.workers)
        static_root = workdir / "static"
        static_root.mkdir()
        (static_root / "catalog.yaml").write_bytes(body)
        deployed, static = start_nginx(
            procs,
            workdir,
            upstream=gunicorn.removeprefix("http://"),
            static_root=static_root,
            microcache=args.microcache,
            template=args.nginx_template,
        )
        # Counting on: nginx logs the catalog GETs it answers, this collector counts them; the
        # gunicorn processes count the ones they answer themselves (gunicorn-pinned).
        procs.start(
            "pulls-collect",
            [
                sys.executable,
                "manage.py",
                "pulls_collect",
                "--log",
                str(workdir / "pulls.log"),
                "--from-start",
            ],
            env=django_env(workdir),
            log=workdir / "pulls-collect.log",
        )
        blob_url = start_docker_registry(procs, workdir, body)
        path = f"/c/{PUBLISHER}/{CATALOG}"
        servers = [
            ("nginx-static", f"{static}/catalog.yaml"),
            ("nginx-static-read", f"{static}/read/catalog.yaml"),
            ("pinned", f"{deployed}{path}/versions/1/catalog.yaml"),
            ("latest", f"{deployed}{path}/catalog.yaml"),
            ("gunicorn-pinned", f"{gunicorn}{path}/versions/1/catalog.yaml"),
            ("docker-registry", blob_url),
        ]
        check_deployed(dict(servers)["pinned"], body)
        check_deployed(dict(servers)["latest"], body)
        for name in ("nginx-static", "nginx-static-read"):
            if httpx.get(dict(servers)[name]).content != body:
                raise BenchError(f"{name}'s file differs from the served bytes")
        print(f"catalog: {args.functions} functions, {len(body)} bytes served by all")
        groups = [proc.pid for _, proc in procs.procs]
        load = {"threads": args.threads, "connections": args.connections}
        # Catalog GETs answered 200 so far: the start-up check, check_deployed's two per URL.
        catalog_gets = 1 + 2 + 2

        def counted(name: str, result: WrkResult) -> None:
            nonlocal catalog_gets
            if name in ("pinned", "latest", "gunicorn-pinned"):
                catalog_gets += result.requests - result.non_2xx

        for name, url in servers:
            if args.warmup:
                counted(name, run_wrk(url, **load, duration=args.warmup))
        rounds: list[dict[str, dict]] = []
        for number in range(args.rounds):
            # Alternate the order so drifting load on a shared machine hits all alike.
            order = servers if number % 2 == 0 else servers[::-1]
            measured: dict[str, dict] = {}
            for name, url in order:
                cpu_before = sum(process_group_cpu_seconds(g) for g in groups)
                wrk_before = os.times()
                result = run_wrk(url, **load, duration=args.duration)
                wrk_after = os.times()
                counted(name, result)
                measured[name] = asdict(result) | {
                    "errors": result.errors,
                    "servers_cpu_s": sum(process_group_cpu_seconds(g) for g in groups) - cpu_before,
                    "wrk_cpu_s": (wrk_after.children_user - wrk_before.children_user)
                    + (wrk_after.children_system - wrk_before.children_system),
                    "loadavg_1m": os.getloadavg()[0],
                }
            rounds.append({name: measured[name] for name, _ in servers})
            procs.check_alive(workdir)
        pulls_counted = wait_for_pulls(workdir, at_least=catalog_gets * PULLS_COUNTED_AT_LEAST)
        collector_cpu = process_group_cpu_seconds(dict(procs.procs)["pulls-collect"].pid)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        procs.stop()
        if args.keep:
            print(f"work dir kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()

    print(
        f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s --latency, "
        f"gunicorn --workers {args.workers}, nginx microcache {args.microcache} for latest, "
        f"{args.rounds} round(s); CPU s = servers' (nginx + gunicorn + docker-registry) / wrk's"
    )
    print(
        f"{'round':<6}{'server':<17} {'req/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7} "
        f"{'requests':>9} {'CPU s':>13} {'load':>6}"
    )
    for number, measured in enumerate(rounds, 1):
        for name, r in measured.items():
            print(
                f"{number:<6}{name:<17} {r['requests_per_sec']:>10.1f} {r['p50_ms']:>9.2f} "
                f"{r['p99_ms']:>9.2f} {r['errors']:>7} {r['requests']:>9} "
                f"{r['servers_cpu_s']:>6.1f}/{r['wrk_cpu_s']:<6.1f} {r['loadavg_1m']:>6.2f}"
            )
    targets = []
    for label, numerator, denominator, at_least in TARGETS:
        ratios = [
            m[numerator]["requests_per_sec"] / m[denominator]["requests_per_sec"] for m in rounds
        ]
        ratio = statistics.median(ratios)
        targets.append(
            {"target": label, "ratio": ratio, "rounds": ratios, "met": ratio >= at_least}
        )
    targets.append(
        {
            "target": f"pulls counted >= {PULLS_COUNTED_AT_LEAST:.0%} of catalog GETs served",
            "ratio": pulls_counted / catalog_gets,
            "counted": pulls_counted,
            "served": catalog_gets,
            "met": pulls_counted >= catalog_gets * PULLS_COUNTED_AT_LEAST,
        }
    )
    errors = {name: sum(m[name]["errors"] for m in rounds) for name in ("pinned", "latest")}
    targets.append(
        {"target": "0 errors (pinned, latest)", "errors": errors, "met": not any(errors.values())}
    )
    print(
        f"pulls counted: {pulls_counted} of {catalog_gets} catalog GETs served; "
        f"the collector (pulls_collect) used {collector_cpu:.1f} CPU s in all"
    )
    for t in targets:
        figure = f"{t['ratio']:.2f}" if "ratio" in t else str(t["errors"])
        print(f"{'met ' if t['met'] else 'MISSED'} {t['target']}: {figure}")
    # Not a target: the static file sent the way the pinned location sends its cached copies.
    read_ratios = [
        m["pinned"]["requests_per_sec"] / m["nginx-static-read"]["requests_per_sec"] for m in rounds
    ]
    print(
        f"pinned / nginx-static-read (sendfile off): {statistics.median(read_ratios):.2f} "
        f"(rounds {', '.join(f'{r:.2f}' for r in read_ratios)})"
    )
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} CPUs)"
    )
    if args.json:
        payload = {
            "rounds": rounds,
            "targets": targets,
            "pinned_to_static_read": read_ratios,
            "loadavg_before": load_before,
            "loadavg_after": load_after,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if all(t["met"] for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
