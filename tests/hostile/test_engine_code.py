"""Code a build would run that the user never opted into, through ``krm build``.

Policy (docs/guide/developer.md, "Which functions run"): a function runtime that the
kustomization names itself (a ``runtime:`` field or the ``config.kubernetes.io/function``
annotation) is code anyone who wrote a base can add, so it runs only with a flag:
``--enable-alpha-plugins`` for starlark and container, ``--enable-exec`` for exec. A runtime
resolved through a catalog the user trusts (``--trusted-catalog``, or the configured official
one) needs no flag; a catalog the kustomization names but the user did not trust is refused.
Each refusal is checked for its exact message, that nothing ran (the scripts would print
``RAN`` and fail) or was fetched, and that an existing ``-o`` file keeps its content.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREVIOUS = "previous good output\n"
SCRIPT = 'print("RAN")\nctx.resource_list["items"][0]["metadata"]["name"] = "ran"\nfail("RAN")\n'
GOOD = 'ctx.resource_list["items"][0]["metadata"]["name"] = "renamed"\n'


class _Server(http.server.ThreadingHTTPServer):
    requests: list[str]


@pytest.fixture
def server() -> Iterator[_Server]:
    """A loopback HTTP server that serves the script and records every path asked for."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            srv.requests.append(self.path)
            body = SCRIPT.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    srv = _Server(("127.0.0.1", 0), Handler)
    srv.requests = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _app(tmp_path: Path, fn: str, *, kustomization: str = "") -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "r.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    (app / "fn.yaml").write_text(fn)
    (app / "fn.star").write_text(SCRIPT)
    (app / "kustomization.yaml").write_text(
        "resources: [r.yaml]\ntransformers: [fn.yaml]\n" + kustomization
    )
    (tmp_path / "out.yaml").write_text(PREVIOUS)


def _krm(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "build", "app", "-o", "out.yaml", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


HEAD = "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n"
ANNOTATION = (
    HEAD + "  annotations:\n    config.kubernetes.io/function: |\n      starlark:\n        {how}\n"
)
RUNTIME = HEAD + "runtime:\n  starlark:\n    {how}\n"


@pytest.mark.parametrize(
    ("fn", "origin"),
    [(ANNOTATION, "annotation"), (RUNTIME, "runtime field")],
    ids=["annotation", "runtime"],
)
@pytest.mark.parametrize("how", ["path", "url"])
def test_starlark_the_kustomization_names_needs_the_flag(
    tmp_path: Path, server: _Server, fn: str, origin: str, how: str
) -> None:
    script = "fn.star" if how == "path" else f"http://127.0.0.1:{server.server_port}/fn.star"
    _app(tmp_path, fn.format(how=f"{how}: {script}"))
    proc = _krm(tmp_path)
    assert (proc.returncode, proc.stderr, proc.stdout) == (
        1,
        f"Error: app/kustomization.yaml: function example.com/v1/Fn 'f': external plugins "
        f"disabled; unable to run starlark {script} named by its {origin} without "
        "--enable-alpha-plugins (or resolve it from a --trusted-catalog)\n",
        "",
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS
    assert server.requests == []
    # With the flag, the same script runs (and fails as it says): the refusal was the policy.
    proc = _krm(tmp_path, "--enable-alpha-plugins")
    assert proc.returncode == 1 and "RAN" in proc.stderr
    assert server.requests == ([] if how == "path" else ["/fn.star"])


CATALOG = """apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: local
spec:
  krmFunctions:
  - group: example.com
    names:
      kind: Fn
    versions:
    - name: v1
      runtime:
        starlark:
          path: good.star
          sha256: "{sha}"
"""


def _catalog(tmp_path: Path) -> Path:
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "good.star").write_text(GOOD)
    sha = hashlib.sha256(GOOD.encode()).hexdigest()
    path = tmp_path / "cat" / "catalog.yaml"
    path.write_text(CATALOG.format(sha=sha))
    return path


def test_starlark_from_a_trusted_catalog_needs_no_flag(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    _app(tmp_path, HEAD)
    proc = _krm(tmp_path, f"--trusted-catalog={catalog}")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "name: renamed" in (tmp_path / "out.yaml").read_text()


def test_a_catalog_the_kustomization_names_but_the_user_did_not_trust_is_refused(
    tmp_path: Path,
) -> None:
    catalog = _catalog(tmp_path)
    _app(tmp_path, HEAD, kustomization="catalogs: [../cat/catalog.yaml]\n")
    proc = _krm(tmp_path, "--enable-alpha-plugins")
    assert (proc.returncode, proc.stderr) == (
        1,
        "Error: app/kustomization.yaml: catalog ../cat/catalog.yaml is not trusted: pass "
        f"--trusted-catalog={catalog} after reviewing it with 'krm view catalog'\n",
    )
    assert (tmp_path / "out.yaml").read_text() == PREVIOUS
