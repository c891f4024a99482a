"""bench/serve_catalog.py: its catalog is valid, it talks to the real docker-registry and wrk."""

from __future__ import annotations

import hashlib
import http.server
import re
import shutil
import sys
import threading
from pathlib import Path

import httpx
import pytest
import yaml

from tests.scripts import load_script

bench = load_script("bench/serve_catalog.py", "bench_serve_catalog")
needs = {
    tool: pytest.mark.skipif(shutil.which(tool) is None, reason=f"{tool} is not installed")
    for tool in ("docker-registry", "wrk")
}


def test_generated_catalog_is_a_valid_kep_2906_catalog():
    from orchestrator.catalog import parse_catalog

    data = bench.generate_catalog(200)
    parsed = parse_catalog(data, strict=True)
    assert len(parsed.functions) == 200
    kinds = [set(f.versions[0].runtime) for f in parsed.functions]
    assert kinds.count({"container"}) == 100 and kinds.count({"exec"}) == 100
    raw = yaml.load(data, Loader=yaml.CSafeLoader)
    for function in raw["spec"]["krmFunctions"]:
        runtime = function["versions"][0]["runtime"]
        digests = (
            [runtime["container"]["sha256"]]
            if "container" in runtime
            else [p["sha256"] for p in runtime["exec"]["platforms"]]
        )
        assert all(len(d) == 64 and int(d, 16) >= 0 for d in digests)


def test_parse_wrk_rejects_unexpected_output():
    with pytest.raises(bench.BenchError, match="^could not parse wrk output:\nconnection refused$"):
        bench.parse_wrk("connection refused")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 - the name http.server dispatches to
        status = 200 if self.path == "/ok" else 404
        body = b"hello"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@needs["wrk"]
def test_run_wrk_counts_requests_and_non_2xx(http_server):
    ok = bench.run_wrk(f"{http_server}/ok", threads=1, connections=2, duration=1)
    assert ok.requests > 0 and ok.requests_per_sec > 0
    assert ok.errors == 0
    assert 0 < ok.p50_ms <= ok.p99_ms
    missing = bench.run_wrk(f"{http_server}/missing", threads=1, connections=2, duration=1)
    assert missing.non_2xx == missing.requests > 0
    assert missing.errors >= missing.requests


@needs["docker-registry"]
def test_docker_registry_serves_the_pushed_blob_and_is_stopped(tmp_path):
    blob = bench.generate_catalog(3)
    procs = bench.Processes()
    try:
        url = bench.start_docker_registry(procs, tmp_path, blob)
        assert url.endswith("/blobs/sha256:" + hashlib.sha256(blob).hexdigest())
        fetched = httpx.get(url)
        assert fetched.status_code == 200 and fetched.content == blob
        started = [proc for _, proc in procs.procs]
    finally:
        procs.stop()
    assert all(proc.poll() is not None for proc in started)
    with pytest.raises(httpx.TransportError):
        httpx.get(url, timeout=2)


def test_nginx_site_renders_every_variable_and_refuses_a_missing_one(tmp_path):
    values = {
        "KRM_LISTEN": "127.0.0.1:8080",
        "KRM_UPSTREAM": "127.0.0.1:8000",
        "KRM_CACHE_DIR": str(tmp_path),
        "KRM_LATEST_MICROCACHE": "1s",
        "KRM_MEDIA_ROOT": str(tmp_path / "media"),
        "KRM_PULLS_LOG": str(tmp_path / "pulls.log"),
    }
    rendered = bench.render_nginx_site(values)
    assert re.search(r"\$\{KRM_\w+\}", rendered) is None
    assert "server 127.0.0.1:8000;" in rendered and "listen 127.0.0.1:8080;" in rendered
    del values["KRM_UPSTREAM"]
    with pytest.raises(
        bench.BenchError, match=r"^krm-registry.conf.template needs values for KRM_UPSTREAM$"
    ):
        bench.render_nginx_site(values)


@pytest.mark.skipif(
    shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
    reason="nginx is not installed (scripts/system-packages.sh installs nginx-light)",
)
def test_nginx_runs_the_template_given_and_serves_the_baseline_file_both_ways(tmp_path):
    # --nginx-template: another version of the deploy site, here one that answers 418 to all.
    other = tmp_path / "other.conf.template"
    other.write_text(
        bench.NGINX_TEMPLATE.read_text().replace(
            "listen ${KRM_LISTEN};", "listen ${KRM_LISTEN};\n    return 418;", 1
        )
    )
    static_root = tmp_path / "static"
    static_root.mkdir()
    body = bench.generate_catalog(3)
    (static_root / "catalog.yaml").write_bytes(body)
    procs = bench.Processes()
    try:
        # Nothing listens on the upstream: the deploy template itself would answer 502.
        base, static = bench.start_nginx(
            procs, tmp_path, upstream="127.0.0.1:9", static_root=static_root, template=other
        )
        assert httpx.get(f"{base}/c/a/b/versions/1/catalog.yaml").status_code == 418
        for path in ("/catalog.yaml", "/read/catalog.yaml"):
            answer = httpx.get(static + path)
            assert answer.status_code == 200 and answer.content == body
    finally:
        procs.stop()


BUSY_THEN_SLEEP = """
import time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
print("burnt", flush=True)
time.sleep(60)
"""


def test_process_group_cpu_seconds_counts_a_busy_child():
    import select
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-c", BUSY_THEN_SLEEP], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        # Whatever else the machine is doing, the child says when it has burnt its 0.3 s.
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 300)
        assert ready, "the busy child did not finish burning its CPU time in 300 s"
        assert proc.stdout.readline() == b"burnt\n"
        # /proc counts in clock ticks, so allow for rounding.
        assert bench.process_group_cpu_seconds(proc.pid) >= 0.25
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert bench.process_group_cpu_seconds(proc.pid) == 0
