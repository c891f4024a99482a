"""A private catalog of a public publisher on a live registry (gunicorn): its targets are in
the publisher's private role (``acme.private``), served only to members, so no public TUF
metadata names it; a member's ``krm build`` (``~/.netrc``) verifies it through that role, an
outsider's is refused before anything runs (the exec function touches ``ran-exec-function``)."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import threading

import httpx
import pytest

from tests.e2e.test_trusted_catalog import APP, EXEC_FN, STARLARK_FN, _catalog, _tgz
from tests.live_registry import ROOT, live_registry


@pytest.fixture(scope="module")
def files():
    """The function artifacts on loopback http (krm allows plain http to loopback)."""
    served = {"/set-tier.tar.gz": _tgz(EXEC_FN), "/set-team.star": STARLARK_FN.encode()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            data = served.get(self.path)
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def registry(tmp_path_factory, files):
    base, served = files
    document = _catalog(
        base,
        hashlib.sha256(served["/set-tier.tar.gz"]).hexdigest(),
        hashlib.sha256(served["/set-team.star"]).hexdigest(),
    )
    with live_registry(tmp_path_factory.mktemp("private-tuf"), workers=1, threads=4) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        published = httpx.post(
            f"{server.base}/api/v1/catalogs/acme/fns/versions/",
            content=document.encode(),
            headers={**auth, "Content-Type": "application/yaml"},
            timeout=120,
        )
        assert published.status_code == 201, published.text
        private = httpx.patch(
            f"{server.base}/api/v1/catalogs/acme/fns/",
            json={"visibility": "private"},
            headers=auth,
            timeout=60,
        )
        assert private.json()["visibility"] == "private"
        yield server


def _page(resp: httpx.Response) -> str:
    """A 404 page without its per-request CSRF token."""
    return re.sub(r'"X-CSRFToken": "[^"]*"', "", resp.text)


def _public_metadata(base: str) -> dict[str, httpx.Response]:
    """Every TUF metadata file an outsider is served, by name; a role it is refused: 404."""
    found = {name: httpx.get(f"{base}/tuf/{name}") for name in ("root.json", "timestamp.json")}
    ts = json.loads(found["timestamp.json"].content)["signed"]
    snap = f"{ts['meta']['snapshot.json']['version']}.snapshot.json"
    found[snap] = httpx.get(f"{base}/tuf/{snap}")
    for name, meta in json.loads(found[snap].content)["signed"]["meta"].items():
        found[f"{meta['version']}.{name}"] = httpx.get(f"{base}/tuf/{meta['version']}.{name}")
    return found


def test_outsiders_see_nothing_of_a_private_catalogs_path(registry):
    found = _public_metadata(registry.base)
    names = sorted(found)
    assert any(name.endswith(".acme.private.json") for name in names), names
    for name, resp in found.items():
        if name.endswith(".acme.private.json"):
            # The same answer as for a role that does not exist (but for the name it shows).
            missing = httpx.get(f"{registry.base}/tuf/{name.replace('acme', 'nobody')}")
            assert missing.status_code == 404
            assert (resp.status_code, _page(resp)) == (
                404,
                _page(missing).replace("nobody", "acme"),
            )
            continue
        assert resp.status_code == 200, name
        assert b"fns" not in resp.content, name
    # A member is served the private role, which lists the catalog's targets.
    member = {"Authorization": f"Bearer {registry.token}"}
    [private] = [n for n in names if n.endswith(".acme.private.json")]
    role = httpx.get(f"{registry.base}/tuf/{private}", headers=member)
    assert role.status_code == 200
    assert "acme/fns/catalog.yaml" in json.loads(role.content)["signed"]["targets"]


def _krm_build(tmp_path, url: str, netrc: str):
    app = tmp_path / "app"
    app.mkdir(parents=True, exist_ok=True)
    for name, text in APP.items():
        (app / name).write_text(text)
    (app / "ran-exec-function").unlink(missing_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "NETRC": netrc,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", str(app), f"--trusted-catalog={url}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc, app


def test_a_members_build_verifies_the_private_catalog_through_its_role(registry, tmp_path):
    url = f"{registry.base}/c/acme/fns/catalog.yaml"
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login alice password {registry.token}\n")
    os.chmod(netrc, 0o600)
    proc, app = _krm_build(tmp_path / "member", url, str(netrc))
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    assert "starlark.example.com/team: payments" in proc.stdout
    assert (app / "ran-exec-function").exists()
    # The private role is in the member's trust store: that is what verified the catalog.
    stores = list((tmp_path / "member" / "cache" / "krm" / "tuf").glob("*/metadata"))
    assert [s for s in stores if (s / "acme.private.json").is_file()], stores

    # An outsider (no credentials): refused, nothing ran.
    proc, app = _krm_build(tmp_path / "outsider", url, str(tmp_path / "none"))
    assert proc.returncode == 1
    assert "HTTP 404" in proc.stderr, proc.stderr
    assert "tier: web-exec" not in proc.stdout
    assert not (app / "ran-exec-function").exists()
