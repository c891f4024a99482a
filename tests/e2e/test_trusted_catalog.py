"""End to end: publish a catalog to the real registry, build an app that trusts it.

The registry runs as pytest-django's ``live_server`` (a real HTTP server on a free loopback
port); the catalog is published through the API with a real DRF token; the exec function (a
shell script packed in .tar.gz) and the starlark script are served by a local HTTPS server with
a trustme certificate; ``krm build`` runs as a subprocess, as a user would run it. The app names
only apiVersion and kind of its two functions.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import ssl
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import httpx
import pytest
import trustme

from orchestrator.functions.resolve import host_platform

pytestmark = pytest.mark.django_db(transaction=True)

EXEC_FN = """#!/bin/sh
# proof that it ran: a marker file in the kustomization's directory
touch ran-exec-function
exec sed -e 's/^\\(  *\\)tier: web$/\\1tier: web-exec/'
"""
STARLARK_FN = """
for r in ctx.resource_list["items"]:
  r["metadata"].setdefault("annotations", {})["starlark.example.com/team"] = (
      ctx.resource_list["functionConfig"]["spec"]["team"])
"""
APP = {
    "kustomization.yaml": "resources:\n- deploy.yaml\ntransformers:\n- tier.yaml\n- team.yaml\n",
    "deploy.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n"
        "    tier: web\nspec:\n  replicas: 1\n"
    ),
    "tier.yaml": "apiVersion: fn.example.com/v1\nkind: SetTier\nmetadata:\n  name: tier\n",
    "team.yaml": (
        "apiVersion: fn.example.com/v1\nkind: SetTeam\nmetadata:\n  name: team\n"
        "spec:\n  team: payments\n"
    ),
}


@pytest.fixture
def files_server(tmp_path):
    """A local HTTPS server for the function artifacts (trustme CA in ca.pem)."""
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    files: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            data = files.get(self.path)
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"https://127.0.0.1:{httpd.server_address[1]}"
    yield base, files, str(ca_file)
    httpd.shutdown()
    httpd.server_close()


def _tgz(script: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = script.encode()
        info = tarfile.TarInfo("bin/set-tier")
        info.size = len(data)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _catalog(base: str, archive_sha: str, star_sha: str) -> str:
    os_name, arch = host_platform()
    return f"""apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: functions
spec:
  krmFunctions:
  - group: fn.example.com
    names:
      kind: SetTier
    publisher: example-co
    versions:
    - name: v1
      runtime:
        exec:
          platforms:
          - bin: bin/set-tier
            os: {os_name}
            arch: {arch}
            uri: {base}/set-tier.tar.gz
            sha256: "{archive_sha}"
  - group: fn.example.com
    names:
      kind: SetTeam
    publisher: example-co
    versions:
    - name: v1
      runtime:
        starlark:
          uri: {base}/set-team.star
          sha256: "{star_sha}"
"""


def serve_catalog_with_runtimes(upstream) -> str:
    """Serve the exec archive, the starlark script and a catalog naming both on ``upstream`` (the
    mirror tests' HTTPS server); returns the catalog's URL."""
    archive = _tgz(EXEC_FN)
    upstream.serve("/fn/set-tier.tar.gz", archive)
    upstream.serve("/fn/set-team.star", STARLARK_FN.encode())
    document = _catalog(
        upstream.url("/fn"),
        hashlib.sha256(archive).hexdigest(),
        hashlib.sha256(STARLARK_FN.encode()).hexdigest(),
    )
    return upstream.serve("/catalog.yaml", document.encode())


def _publish(live_server, owner, document: str) -> str:
    from tests.catalogs.factories import api_token_key

    token = api_token_key(owner)
    resp = httpx.post(
        f"{live_server.url}/api/v1/catalogs/example-co/functions/versions/",
        content=document.encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/yaml"},
    )
    assert resp.status_code == 201, resp.text
    url = resp.json()["catalog_url"]
    assert url.startswith(live_server.url)
    return url


def _krm(app: Path, *args: str, ca_file: str, home: Path) -> subprocess.CompletedProcess[str]:
    return _krm_cmd("build", str(app), *args, ca_file=ca_file, home=home)


def _krm_cmd(
    *args: str, ca_file: str, home: Path, token: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "SSL_CERT_FILE": ca_file,
    }
    if token:
        env["KRM_REGISTRY_TOKEN"] = token
    if "PYTHONPATH" in os.environ:  # a checkout run without installing it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    for name, text in APP.items():
        (app / name).write_text(text)
    return app


def test_build_with_trusted_registry_catalog(live_server, catalog, owner, files_server, tmp_path):
    base, files, ca_file = files_server
    archive = _tgz(EXEC_FN)
    files["/set-tier.tar.gz"] = archive
    files["/set-team.star"] = STARLARK_FN.encode()
    document = _catalog(
        base, hashlib.sha256(archive).hexdigest(), hashlib.sha256(STARLARK_FN.encode()).hexdigest()
    )
    url = _publish(live_server, owner, document)
    app = _app(tmp_path)

    # What a user reads before trusting it: publisher, digest, both functions and their needs.
    view = _krm_cmd("view", "catalog", url, ca_file=ca_file, home=tmp_path / "home")
    assert view.returncode == 0, view.stderr
    assert "Catalog:   functions" in view.stdout
    assert f"Source:    {url}" in view.stdout
    assert "fn.example.com/v1  SetTier  exec      linux/" in view.stdout
    assert "fn.example.com/v1  SetTeam  starlark  -" in view.stdout

    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    assert "starlark.example.com/team: payments" in proc.stdout
    assert (app / "ran-exec-function").exists()

    # Without --trusted-catalog the app's functions have no runtime: the error names them.
    proc = _krm(app, ca_file=ca_file, home=tmp_path / "home2")
    assert proc.returncode == 1
    assert "no runtime for fn.example.com/v1 SetTier" in proc.stderr


def test_catalogs_field_needs_trust(live_server, catalog, owner, files_server, tmp_path):
    base, files, ca_file = files_server
    document = _catalog(base, "a" * 64, "b" * 64)
    url = _publish(live_server, owner, document)
    app = _app(tmp_path)
    kust = app / "kustomization.yaml"
    kust.write_text(kust.read_text() + f"catalogs:\n- {url}\n")
    proc = _krm(app, ca_file=ca_file, home=tmp_path / "home")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(
        f"catalog {url} is not trusted: pass --trusted-catalog={url} after reviewing it with "
        "'krm view catalog'"
    )
    assert proc.stdout == ""


def test_tampered_archive_fails_before_running(live_server, catalog, owner, files_server, tmp_path):
    base, files, ca_file = files_server
    good = _tgz(EXEC_FN)
    files["/set-tier.tar.gz"] = _tgz(EXEC_FN.replace("web-exec", "evil"))  # not what was pinned
    files["/set-team.star"] = STARLARK_FN.encode()
    document = _catalog(
        base, hashlib.sha256(good).hexdigest(), hashlib.sha256(STARLARK_FN.encode()).hexdigest()
    )
    url = _publish(live_server, owner, document)
    app = _app(tmp_path)
    proc = _krm(app, f"--trusted-catalog={url}", ca_file=ca_file, home=tmp_path / "home")
    assert proc.returncode == 1
    assert f"sha256 mismatch for {base}/set-tier.tar.gz" in proc.stderr
    assert "nothing was unpacked or run" in proc.stderr
    assert not (app / "ran-exec-function").exists()
    assert proc.stdout == ""


def test_a_catalog_web_page_given_as_catalog_names_the_catalog_url(
    live_server, catalog, owner, files_server, tmp_path
):
    base, files, ca_file = files_server
    _publish(live_server, owner, _catalog(base, "a" * 64, "b" * 64))
    page = f"{live_server.url}/catalogs/example-co/functions/"
    app = _app(tmp_path)
    proc = _krm(app, f"--trusted-catalog={page}", ca_file=ca_file, home=tmp_path / "home")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(
        f"cannot fetch catalog {page}: {page} is an HTML page; the catalog is at "
        f"{live_server.url}/c/example-co/functions/catalog.yaml"
    ), proc.stderr
    assert proc.stdout == ""
    # Any other HTML page: said so, not a YAML parse error.
    files["/index.html"] = b"<!DOCTYPE html>\n<html><head><title>Hi</title></head></html>\n"
    other = f"{base}/index.html"
    proc = _krm(app, f"--trusted-catalog={other}", ca_file=ca_file, home=tmp_path / "home")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith(
        f"{other} is an HTML page, not a catalog; give the URL of its catalog YAML"
    ), proc.stderr
