"""Issue 14's whole new-user story in one walk, at desktop and at phone size.

A new user signs up, creates a publisher and a catalog, publishes it through the web form; another
user contributes a function to it; the owner reviews and approves it; an operator creates a mirror
source in the UI (the registry runs on pytest-django's live server, a random port, never 8000)
whose runtimes are mirrored; ``krm build`` then builds an app against that mirror, fetching the
runtimes from the registry, not from upstream. Every page is screenshotted at both sizes
(``walk-<size>-NN-<page>.png``) and checked for sideways scroll and page weight.
"""

from __future__ import annotations

import re

import pytest

from catalogs.mirroring.models import MirrorSource
from catalogs.publishing.models import Catalog
from catalogs.review.models import Contribution
from tests.browser.conftest import DESKTOP, PHONE, TRANSFERRED, WIDTH_JS
from tests.catalogs.factories import UserFactory, catalog_yaml
from tests.catalogs.review.contribution_fixtures import DEFINITION
from tests.e2e.test_trusted_catalog import _app, _krm, serve_catalog_with_runtimes
from tests.smtp_server import smtp  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

SIZES = {"desktop": DESKTOP, "phone": PHONE}
PAGE_BUDGET = 100 * 1024


class Walk:
    """One browser page at one size: every step is screenshotted (``<prefix>-<size>-NN-<name>.png``)
    and checked for fit and weight."""

    def __init__(self, page, size: str, folder, shots: list[str], prefix: str = "walk") -> None:
        self.page = page
        self.prefix = prefix
        self.size = size
        self.folder = folder
        self.shots = shots

    def goto(self, url: str) -> None:
        self.page.goto(url)

    def sign_in(self, username: str, password: str = "secret-password") -> None:
        """Sign in through the real form (on a phone the nav, and its Sign out, is folded away)."""
        self.goto("/accounts/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("form.stacked button[type=submit]")
        self.page.wait_for_selector(f"text=Sign out ({username})", state="attached")

    def shot(self, name: str) -> None:
        page = self.page
        page.wait_for_load_state("load")
        width = page.evaluate(WIDTH_JS)
        viewport = page.viewport_size["width"]
        assert width <= viewport, f"{name} scrolls sideways at {self.size}: {width} > {viewport}"
        weight = page.evaluate(TRANSFERRED)
        assert weight <= PAGE_BUDGET, f"{name} weighs {weight} bytes at {self.size}"
        path = self.folder / f"{self.prefix}-{self.size}-{len(self.shots):02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        self.shots.append(path.name)


@pytest.mark.parametrize("size", list(SIZES))
def test_new_user_story(
    size,
    new_page,
    live_server,
    screenshots,
    settings,
    https_upstream,
    jobs_in_this_process,
    tmp_path,
    smtp,  # noqa: F811
):
    settings.SIGNUP_ENABLED = True
    settings.REGISTRY_PUBLIC_URL = live_server.url
    settings.MIRROR_ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MIRROR_CA_BUNDLE = https_upstream.ca_path
    settings.MEDIA_ROOT = str(tmp_path / "media")
    assert not live_server.url.endswith(":8000")
    UserFactory(username="carl")
    UserFactory(username="sam", is_staff=True, is_superuser=True)

    shots: list[str] = []

    def walker() -> Walk:
        return Walk(new_page(SIZES[size]), size, screenshots, shots)

    # --- Dana signs up, creates her publisher and a catalog, publishes through the web form.
    dana = walker()
    dana.goto("/")
    dana.shot("landing")
    dana.goto("/accounts/signup/")
    dana.page.fill("#id_username", "dana")
    dana.page.fill("#id_email", "dana@example.org")
    dana.page.fill("#id_password1", "a-long-pass-9876")
    dana.page.fill("#id_password2", "a-long-pass-9876")
    dana.shot("sign-up")
    dana.page.click("text=Create account")
    dana.page.wait_for_selector("text=Sign out (dana)", state="attached")
    # The verification link arrives at the real SMTP server; Dana opens it and confirms.
    [(_, mail)] = smtp.bodies_to("dana@example.org")
    link = re.search(r"https?://\S+/accounts/email/verify/\S+/", mail)
    assert link, mail
    dana.goto(link.group(0))
    dana.shot("verify-email")
    dana.page.click("text=Verify my e-mail address")
    dana.page.wait_for_selector("text=Your e-mail address dana@example.org is verified.")
    dana.goto("/catalogs/new/")
    dana.page.wait_for_selector("text=A catalog belongs to a publisher: create yours first.")
    dana.page.fill("#id_slug", "dana-co")
    dana.page.fill("#id_display_name", "Dana Co")
    dana.shot("new-publisher")
    dana.page.click("text=Create publisher")
    dana.page.wait_for_url("**/catalogs/new/")
    dana.page.fill("#id_name", "tools")
    dana.page.fill("#id_description", "Functions Dana's team supports.")
    dana.shot("new-catalog")
    dana.page.click("text=Create catalog")
    dana.page.wait_for_url("**/catalogs/dana-co/tools/publish/")
    dana.page.fill("#id_content", catalog_yaml(("dana.example.co", "SetTier", "v1")))
    dana.page.click("button[value=preview]")
    dana.page.wait_for_selector(".preview")
    dana.shot("publish-preview")
    dana.page.click("button[value=publish]")
    dana.page.wait_for_url("**/catalogs/dana-co/tools/")
    assert "Published version 1." in dana.page.inner_text(".messages")
    dana.shot("catalog")
    catalog = Catalog.objects.get(publisher__slug="dana-co", name="tools")
    assert catalog.versions.count() == 1

    # --- Carl contributes a function to Dana's catalog.
    carl = walker()
    carl.sign_in("carl")
    carl.goto("/contribute/")
    carl.page.select_option("#id_catalog", label="dana-co/tools")
    carl.page.fill("#id_content", DEFINITION)
    carl.shot("contribute")
    carl.page.click("text=Submit for review")
    carl.page.wait_for_url("**/contributions/")
    carl.shot("my-contributions")
    contribution = Contribution.objects.get()
    assert contribution.status == "pending"

    # --- Dana, the catalog's owner, reviews and approves it.
    dana.goto("/review/")
    dana.page.wait_for_selector("text=SetOwner")
    dana.shot("review-queue")
    dana.page.click("text=SetOwner")
    dana.page.wait_for_selector("text=Approve and publish")
    dana.page.fill("#id_comment", "Thanks, welcome aboard.")
    dana.shot("review")
    dana.page.click("text=Approve and publish")
    dana.page.wait_for_selector("text=Approved; published dana-co/tools version 2.")
    contribution.refresh_from_db()
    assert contribution.status == "approved"
    assert contribution.reviewer.username == "dana"
    assert catalog.versions.count() == 2

    # --- Anyone finds the new function through search and opens its page.
    visitor = walker()
    visitor.goto("/?q=owner")
    visitor.page.wait_for_selector("main a:has-text('SetOwner')")
    visitor.shot("search")
    visitor.page.click("main a:has-text('SetOwner')")
    visitor.page.wait_for_url("**/functions/**")
    assert "dana-co/tools" in visitor.page.inner_text("main")
    visitor.shot("function")

    # --- Sam, the operator, mirrors an upstream catalog with runtimes, from the UI.
    upstream_url = serve_catalog_with_runtimes(https_upstream)
    sam = walker()
    sam.sign_in("sam")
    sam.goto("/mirrors/")
    sam.shot("mirrors")
    sam.page.click("text=New source")
    sam.page.fill("#id_name", "upstream")
    sam.page.fill("#id_url", upstream_url)
    sam.page.check("#id_mirror_runtimes")
    sam.shot("mirror-form")
    sam.page.click("text=Create source")
    sam.page.wait_for_selector("text=Source upstream created.")
    sam.page.click("button:has-text('Sync now')")  # not the schedule note that names it
    sam.page.wait_for_selector("text=succeeded")
    sam.goto(sam.page.url)
    sam.shot("mirror")
    source = MirrorSource.objects.get(name="upstream")
    assert source.runs.filter(status="succeeded").count() == 1

    # --- The mirrored catalog is found and used: krm builds against the mirror.
    catalog_url = f"{live_server.url}/c/mirrors/upstream/catalog.yaml"
    sam.goto("/catalogs/mirrors/upstream/")
    assert catalog_url in sam.page.inner_text("main")
    sam.shot("mirrored-catalog")
    served = sam.page.request.get(catalog_url)
    assert served.ok and f"{live_server.url}/c/blobs/sha256/" in served.text()
    assert https_upstream.url("/fn") not in served.text()

    upstream_requests = len(https_upstream.requests)
    home = tmp_path / "home"
    proc = _krm(
        _app(tmp_path),
        f"--trusted-catalog={catalog_url}",
        ca_file=https_upstream.ca_path,
        home=home,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tier: web-exec" in proc.stdout
    assert "starlark.example.com/team: payments" in proc.stdout
    later = https_upstream.requests[upstream_requests:]
    assert not any(path.startswith("/fn/") for path, _ in later), later
    assert len(shots) >= 16
