"""The quick start on a non-default port: every URL a document embeds or a command prints is one
the registry is reachable at (settings.REGISTRY_PUBLIC_URL, derived from KRM_ADDR).

Run as ``scripts/serve.sh`` runs it, in separate processes on a fresh SQLite file: migrate,
``load_demo``, a source with mirrored runtimes synced by ``sync_source``, then ``runserver`` on
``KRM_ADDR``; ``krm build`` then fetches the exec and starlark runtimes from the mirror.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.catalogs.mirroring.conftest import free_port
from tests.e2e.test_trusted_catalog import _app, _krm, serve_catalog_with_runtimes

ROOT = Path(__file__).resolve().parents[3]
CREATE = """
from catalogs.mirroring import services as mirrors
mirrors.mirror_source_create(name="upstream", url="{url}", actor=None, mirror_runtimes=True)
"""


def _manage(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _runtime_uris(doc: dict) -> list[str]:
    out = []
    for fn in doc["spec"]["krmFunctions"]:
        for version in fn["versions"]:
            runtime = version["runtime"]
            out += [p["uri"] for p in runtime.get("exec", {}).get("platforms", [])]
            if "starlark" in runtime:
                out.append(runtime["starlark"]["uri"])
    return out


def test_mirror_on_a_non_default_port_serves_urls_that_work(https_upstream, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "registry.settings.base",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "KRM_ADDR": f"127.0.0.1:{port}",
        "MIRROR_ALLOWED_HOSTS": "127.0.0.1",
        "MIRROR_ALLOWED_NETWORKS": "127.0.0.1/32",
        "MIRROR_CA_BUNDLE": https_upstream.ca_path,
    }
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    url = serve_catalog_with_runtimes(https_upstream)

    _manage(env, "migrate", "-v0")
    demo = _manage(env, "load_demo")
    assert f"latest: {base}/c/demo/functions/catalog.yaml" in demo
    assert ":8000" not in demo
    _manage(env, "shell", "-v0", "-c", CREATE.format(url=url))
    synced = _manage(env, "sync_source", "upstream", "--no-progress")
    assert "2 functions, 2 artifacts" in synced
    upstream_requests = len(https_upstream.requests)

    server = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runserver", env["KRM_ADDR"], "--noreload"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        catalog_url = f"{base}/c/mirrors/upstream/catalog.yaml"
        for _ in range(150):
            try:
                served = httpx.get(catalog_url, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert served.status_code == 200
        uris = _runtime_uris(yaml.safe_load(served.content))
        assert len(uris) == 2
        assert all(u.startswith(f"{base}/c/blobs/sha256/") for u in uris), uris

        app = _app(tmp_path)
        home = tmp_path / "home"
        proc = _krm(
            app, f"--trusted-catalog={catalog_url}", ca_file=https_upstream.ca_path, home=home
        )
        assert proc.returncode == 0, proc.stderr
        assert "tier: web-exec" in proc.stdout
        assert "starlark.example.com/team: payments" in proc.stdout
        # The runtimes came from the mirror, not from upstream.
        later = https_upstream.requests[upstream_requests:]
        assert not any(path.startswith("/fn/") for path, _ in later)
    finally:
        server.terminate()
        server.wait(timeout=10)
