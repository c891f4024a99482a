"""Issue 25's team walk, at desktop (1280x900) and phone (390x844) size, on the live server.

An owner, in the browser, creates a publisher and a catalog, makes it private, creates a read-only
API token on the tokens page, subscribes a webhook and follows the catalog by e-mail, and publishes
a version through the web form. Then:

- the private catalog is refused anonymously and pulled with the token by the real ``krm`` CLI
  (credentials from a netrc file) and over OCI by ``skopeo --creds``;
- the webhook reaches a receiver that runs as its own process, imports nothing of the project
  (``tests/webhook_receiver.py`` under ``python -I``) and verifies ``X-Hub-Signature-256``;
- the e-mail reaches a real SMTP server (aiosmtpd, ``tests/smtp_server.py``);
- the pull count on the catalog page rises (the flushing thread runs as in a serving process);
- the owner revokes the function in the UI and it is shown revoked on the function page, the
  catalog page and the search card, while an outsider still gets 404.

The web UI has no form for a catalog's visibility, webhooks or subscriptions (the API is their
interface, issue 25 items 5 and 7): the walk calls the API from the owner's signed-in browser
session, as the pages' own scripts would (session cookie + CSRF header). Every page is
screenshotted (``team-<size>-NN-<page>.png``) and checked for sideways scroll and page weight.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from catalogs.publishing import pulls
from tests.browser.conftest import DESKTOP, PHONE
from tests.browser.test_new_user_story import Walk
from tests.catalogs.factories import UserFactory, catalog_yaml
from tests.e2e.test_private_catalog import _krm
from tests.smtp_server import smtp  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"desktop": DESKTOP, "phone": PHONE}
RECEIVER = Path(__file__).resolve().parents[1] / "webhook_receiver.py"
SECRET = "team-walk-webhook-secret"
OWNER, EMAIL = "olga", "olga@example.org"
PUBLISHER, CATALOG = "olga-team", "platform"
GROUP, KIND = "team.example.org", "SetCostCenter"
DEADLINE = 20.0
# The WCAG contrast ratio of an element's text colour on its background colour (both opaque rgb).
CONTRAST_JS = """(element) => {
  const style = getComputedStyle(element);
  const luminance = (css) => {
    const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [a, b] = [luminance(style.color), luminance(style.backgroundColor)];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def eventually(what: str, probe: Callable[[], Any], seconds: float = DEADLINE) -> Any:
    """``probe()``'s first truthy answer, polled until a deadline (then the test fails)."""
    deadline = time.monotonic() + seconds
    while True:
        got = probe()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {seconds} s (last: {got!r})"
        time.sleep(0.2)


class ReceiverProcess:
    """``tests/webhook_receiver.py`` as its own process; ``entries()`` reads what it logged."""

    def __init__(self, log: Path) -> None:
        self.log = log
        # -I: isolated mode, neither PYTHONPATH nor the script's folder is on sys.path, so the
        # receiver could not import the project even by mistake.
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(RECEIVER), SECRET, str(log)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=log.parent,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url

    def entries(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def of_type(self, event_type: str) -> list[dict]:
        return [e for e in self.entries() if e["type"] == event_type]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def receiver(tmp_path, settings, jobs_in_this_process) -> Iterator[ReceiverProcess]:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0
    process = ReceiverProcess(tmp_path / "webhook-log.jsonl")
    yield process
    process.stop()


@pytest.fixture
def flushing(settings) -> Iterator[None]:
    """Pull counts flushed every second by the live server's process, as when serving."""
    settings.USAGE_FLUSH_SECONDS = 1
    pulls.pulls_discard()
    pulls._started = False  # earlier tests ran with the thread off
    yield
    settings.USAGE_FLUSH_SECONDS = 0
    pulls._wake.set()
    for thread in threading.enumerate():
        if thread.name == pulls.FLUSHER_NAME:
            thread.join(timeout=10)


def api(page, method: str, path: str, data: dict) -> Any:
    """Call the API from the signed-in browser session (cookie + CSRF header)."""
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.fetch(
        path,
        method=method,
        data=json.dumps(data),
        headers={"Content-Type": "application/json", "X-CSRFToken": csrf},
    )
    assert response.ok, (method, path, response.status, response.text())
    return response.json()


def pulls_shown(walk: Walk, catalog_page: str) -> str:
    walk.goto(catalog_page)
    return walk.page.locator("p.pulls").inner_text()


@pytest.mark.parametrize("size", list(SIZES))
def test_team_walk(
    size,
    new_page,
    live_server,
    screenshots,
    settings,
    receiver,
    flushing,
    tmp_path,
    smtp,  # noqa: F811
):
    settings.REGISTRY_PUBLIC_URL = live_server.url
    UserFactory(username=OWNER, email=EMAIL)
    UserFactory(username="outsider")
    host = urlsplit(live_server.url).netloc
    catalog_page = f"/catalogs/{PUBLISHER}/{CATALOG}/"
    function_page = f"{catalog_page}functions/{GROUP}/{KIND}/"
    catalog_url = f"{live_server.url}/c/{PUBLISHER}/{CATALOG}/catalog.yaml"
    shots: list[str] = []
    olga = Walk(new_page(SIZES[size]), size, screenshots, shots, prefix="team")

    # --- The owner creates her publisher and catalog.
    olga.sign_in(OWNER)
    olga.goto("/catalogs/new/")
    olga.page.fill("#id_slug", PUBLISHER)
    olga.page.fill("#id_display_name", "Olga's platform team")
    olga.page.click("text=Create publisher")
    olga.page.wait_for_url("**/catalogs/new/")
    olga.page.fill("#id_name", CATALOG)
    olga.page.fill("#id_description", "Functions only the platform team may use.")
    olga.shot("new-catalog")
    olga.page.click("text=Create catalog")
    olga.page.wait_for_url(f"**{catalog_page}publish/")

    # --- A read-only token, created on the tokens page and shown once.
    olga.goto("/accounts/tokens/")
    olga.page.fill("#token-name", "ci-pull")
    assert olga.page.is_checked("input[name=scopes][value=read]")
    assert not olga.page.is_checked("input[name=scopes][value=publish]")
    olga.page.click("button[value=create]")
    token = olga.page.inner_text("#token-key").strip()
    assert len(token) >= 32, token
    assert "ci-pull" in olga.page.inner_text("table.tokens")
    olga.shot("token-created")

    # --- Private, a webhook, and an e-mail subscription (the API, from the browser session).
    catalog_api = f"/api/v1/catalogs/{PUBLISHER}/{CATALOG}/"
    changed = api(olga.page, "PATCH", catalog_api, {"visibility": "private"})
    assert changed["visibility"] == "private"
    hook = api(
        olga.page,
        "POST",
        f"/api/v1/publishers/{PUBLISHER}/webhooks/",
        {
            "url": receiver.url,
            "secret": SECRET,
            "events": ["catalog.version.published", "catalog.revocation.created"],
        },
    )
    assert "secret" not in hook
    api(olga.page, "POST", "/api/v1/subscriptions/", {"catalog": f"{PUBLISHER}/{CATALOG}"})
    olga.goto("/inbox/")
    assert f"catalog {PUBLISHER}/{CATALOG}" in olga.page.inner_text("main")
    olga.shot("inbox-follows")
    # The read token may read, not write.
    refused = olga.page.request.fetch(
        catalog_api,
        method="PATCH",
        data=json.dumps({"visibility": "public"}),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    assert refused.status == 403, refused.text()

    # --- She publishes version 1 through the web form.
    olga.goto(f"{catalog_page}publish/")
    olga.page.fill("#id_content", catalog_yaml((GROUP, KIND, "v1")))
    olga.page.click("button[value=preview]")
    olga.page.wait_for_selector(".preview")
    olga.page.click("button[value=publish]")
    olga.page.wait_for_url(f"**{catalog_page}")
    assert "Published version 1." in olga.page.inner_text(".messages")
    assert olga.page.locator("main .badge.warn:has-text('private')").is_visible()
    # The follow put the publication in her inbox: its count in the navigation is legible.
    unread = olga.page.locator("header.top a[href='/inbox/'] .badge")
    assert unread.text_content() == "1"
    assert unread.evaluate(CONTRAST_JS) >= 4.5
    olga.shot("private-catalog")

    # --- The webhook arrived, signed, at the receiver that shares no code with the registry.
    [published] = eventually(
        "the published event at the receiver", lambda: receiver.of_type("catalog.version.published")
    )
    assert published["signed"] is True, published
    assert published["content_type"].startswith("application/cloudevents+json")
    assert published["subject"] == f"{PUBLISHER}/{CATALOG}/versions/1"
    olga.goto(f"/publishers/{PUBLISHER}/webhooks/")
    eventually("the delivery logged", lambda: "succeeded" in olga.page.inner_text("main"))
    assert "verified" in olga.page.inner_text("table.deliveries")
    olga.shot("webhook-deliveries")

    # --- The e-mail arrived at the SMTP server.
    [(subject, body)] = eventually("the e-mail", lambda: smtp.bodies_to(EMAIL))
    assert subject == f"[KRM Catalog Registry] {PUBLISHER}/{CATALOG} published version 1"
    assert f"{live_server.url}{catalog_page}" in body

    # --- Pulls: refused anonymously; krm with a netrc, skopeo with --creds.
    assert pulls_shown(olga, catalog_page).startswith("0 pulls")
    assert httpx.get(catalog_url).status_code == 404
    netrc = tmp_path / "netrc"
    machine = urlsplit(live_server.url).hostname
    netrc.write_text(f"machine {machine} login {OWNER} password {token}\n")
    os.chmod(netrc, 0o600)
    shown = _krm("view", "catalog", catalog_url, netrc=str(netrc), tmp_path=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert KIND in shown.stdout
    # oras-py sends credentials only after a 401 challenge, and the registry answers an anonymous
    # request for a private repository 404 (as to an outsider); skopeo asks /v2/ first, whose
    # 401 starts the token flow with its --creds.
    skopeo = ["skopeo", "inspect", "--raw", "--tls-verify=false"]
    ref = f"docker://{host}/{PUBLISHER}/{CATALOG}:latest"
    env = {**os.environ, "HOME": str(tmp_path), "REGISTRY_AUTH_FILE": str(tmp_path / "auth.json")}
    anonymous = subprocess.run([*skopeo, ref], capture_output=True, text=True, env=env, timeout=60)
    assert anonymous.returncode != 0 and "not known to registry" in anonymous.stderr
    manifest = subprocess.run(
        [*skopeo, "--creds", f"{OWNER}:{token}", ref],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert manifest.returncode == 0, manifest.stderr
    served = olga.page.request.get(catalog_url)
    assert served.ok
    [layer] = json.loads(manifest.stdout)["layers"]
    assert layer["digest"] == "sha256:" + hashlib.sha256(served.body()).hexdigest()
    # krm, skopeo, and the browser's own request just now: three pulls, counted within seconds.
    text = eventually(
        "three pulls on the catalog page",
        lambda: (t := pulls_shown(olga, catalog_page)).startswith("3 pulls") and t,
    )
    assert text.startswith("3 pulls, 3 in the last 30 days"), text
    olga.shot("pull-counts")

    # --- She revokes the function in the UI (with the confirmation).
    olga.goto(f"{catalog_page}revocations/")
    olga.page.fill("#id_group", GROUP)
    olga.page.fill("#id_kind", KIND)
    olga.page.fill("#id_version", "v1")
    olga.page.select_option("#id_reason", "compromised")
    olga.page.fill("#id_detail", "its image pulled a tampered base layer")
    olga.page.fill("#id_replacement", "use v2 once published")
    olga.page.check("#id_confirm")
    olga.shot("revoke-form")
    olga.page.click("form.revoke button[type=submit]")
    olga.page.wait_for_selector("text=Revoked; revocation list sequence 1.")
    [revoked] = eventually(
        "the revocation event at the receiver",
        lambda: receiver.of_type("catalog.revocation.created"),
    )
    assert revoked["signed"] is True, revoked

    # --- Shown revoked everywhere the owner sees it; an outsider still sees nothing.
    for name, path, marker in (
        ("function-revoked", function_page, ".revoked-banner"),
        ("catalog-revoked", catalog_page, ".revoked-banner"),
        ("search-revoked", f"/?q={KIND}", ".result .badge.rejected"),
    ):
        olga.goto(path)
        assert olga.page.locator(marker).first.is_visible(), (name, size)
        text = olga.page.inner_text("main")
        assert "compromised" in text and "use v2 once published" in text, (name, size, text)
        olga.shot(name)
    assert olga.page.locator(".result").count() == 1
    outsider = Walk(new_page(SIZES[size]), size, screenshots, shots, prefix="team")
    outsider.sign_in("outsider")
    for path in (catalog_page, function_page):
        assert outsider.page.goto(path).status == 404, path
    outsider.goto(f"/?q={KIND}")
    assert outsider.page.locator(".result").count() == 0
    outsider.shot("outsider-search")
    assert len(shots) == 11
