"""Trial runs are no SSRF and no port scanner: TRIAL_ALLOWED_NETWORKS, at submission and per hop.

A publisher owner submits runtime and example URLs pointing at this machine and at the cloud
metadata address: refused with a 400 naming the URL, nothing stored, no request reaches the
server. With loopback allowed for one address only, a redirect to another loopback address, a
closed port and an HTTP error all read the same in the trial run.
"""

# ruff: noqa: F811

from __future__ import annotations

import hashlib
import http.server
import socket
import threading

import pytest
from rest_framework.test import APIClient

from catalogs.review import sandbox, trials
from catalogs.review.models import Contribution, TrialRun, TrialRunStatus
from catalogs.review.services import contribution_submit
from catalogs.review.trial_fetch import UNREACHABLE
from tests.catalogs.review.contribution_fixtures import (  # noqa: F401 (fixtures)
    DEFINITION,
    contributor,
    published,
)

# Trial jobs run here, also on CI's worker stage: the worker has neither these settings nor rows.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("jobs_in_this_process")]

ANNOTATE = 'for r in ctx.resource_list["items"]:\n    r["metadata"]["labels"] = {"t": "y"}\n'


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []
    redirect_to = ""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen.append(self.path)
        if self.path == "/metrics":
            body = b"secret_counter 42\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", type(self).redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(settings, tmp_path):
    """A loopback server on 127.0.0.1 (and one on 127.0.0.2 serving /metrics)."""
    settings.TRIAL_RUNS_ENABLED = True
    settings.TRIAL_CACHE_DIR = str(tmp_path / "cache")
    _Handler.seen = []
    servers = [
        http.server.ThreadingHTTPServer((h, 0), _Handler) for h in ("127.0.0.1", "127.0.0.2")
    ]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    yield [f"http://{s.server_address[0]}:{s.server_address[1]}" for s in servers]
    for s in servers:
        s.shutdown()
        s.server_close()


def _starlark(url: str, sha: str = "ab" * 32) -> str:
    head, _, _ = DEFINITION.partition("    runtime:\n")
    return head + f"    runtime:\n      starlark:\n        uri: {url}\n        sha256: {sha}\n"


def _with_example(content: str, url: str) -> str:
    return content + f"    examples:\n    - {url}\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "where",
    ["runtime", "example"],
)
@pytest.mark.parametrize(
    "target",
    ["{local}/metrics", "http://localhost:{port}/metrics", "http://169.254.169.254/latest/x.yaml"],
)
def test_urls_on_non_public_addresses_are_refused_at_submission(
    server, published, contributor, where, target
):
    url = target.format(local=server[0], port=server[0].rsplit(":", 1)[1])
    if where == "runtime":
        content = _starlark(url)
    else:
        content = _with_example(_starlark("https://example.org/f.star"), url)
    client = APIClient()
    client.force_authenticate(contributor)
    response = client.post(
        "/api/v1/contributions/",
        {"publisher": "example-co", "catalog": "functions", "definition": content},
        format="json",
    )
    assert (response.status_code, response.json()) == (
        400,
        {
            "detail": f"Trial runs may not fetch {url}: it is not a public address "
            "(TRIAL_ALLOWED_NETWORKS); nothing was fetched."
        },
    )
    assert Contribution.objects.count() == 0
    assert TrialRun.objects.count() == 0
    assert _Handler.seen == []


@pytest.mark.skipif(sandbox.jail_available() is None, reason="no jail can be built here")
def test_redirects_closed_ports_and_http_errors_read_the_same(
    server, settings, published, contributor, django_capture_on_commit_callbacks
):
    """127.0.0.1 allowed; a redirect to 127.0.0.2 (open, serving /metrics) is refused there."""
    settings.TRIAL_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    _Handler.redirect_to = f"{server[1]}/metrics"
    metrics_sha = hashlib.sha256(b"secret_counter 42\n").hexdigest()
    urls = [
        f"{server[0]}/redirect",  # 302 to an open port on a refused address
        f"http://127.0.0.1:{_free_port()}/closed.star",  # nothing listens
        f"{server[0]}/missing.star",  # HTTP 404
    ]
    details = []
    for url in urls:
        with django_capture_on_commit_callbacks(execute=True):
            c = contribution_submit(
                catalog=published, content=_starlark(url, metrics_sha), actor=contributor
            )
        [run] = trials.trial_run_list(contribution=c)
        assert run.status == TrialRunStatus.NOT_RUN
        details.append(run.detail)
    assert details == [f"downloading {url}: {UNREACHABLE}" for url in urls]
    # The redirect was followed no further than the check: 127.0.0.2 saw nothing.
    assert "/metrics" not in _Handler.seen
    assert sorted(_Handler.seen) == ["/missing.star", "/redirect"]
