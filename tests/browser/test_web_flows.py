"""The web UI's main flows in a real browser, with a screenshot of each main page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from catalogs.review.models import Contribution
from tests.browser.conftest import sign_in
from tests.catalogs.factories import PublisherFactory, UserFactory, catalog_yaml
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def people(db):
    """An owner of ``platform-team``, a contributor and a reviewer."""
    owner = UserFactory(username="olivia")
    PublisherFactory(slug="platform-team", display_name="Platform Team", owners=[owner])
    reviewer = UserFactory(username="rita")
    group, _ = Group.objects.get_or_create(name="reviewers")
    reviewer.groups.add(group)
    UserFactory(username="carl")
    return owner


def _shot(page, folder, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_publish_contribute_review_search_and_copy(new_page, people, screenshots, tmp_path):
    # --- An owner creates a catalog and publishes it by upload, fixing a validation error.
    owner = new_page()
    owner.goto("/accounts/login/")
    _shot(owner, screenshots, "00a-sign-in")
    sign_in(owner, "olivia")
    owner.goto("/catalogs/new/")
    owner.select_option("#id_publisher", label="platform-team")
    owner.fill("#id_name", "platform")
    owner.fill("#id_description", "Functions the platform team supports.")
    _shot(owner, screenshots, "00b-new-catalog")
    owner.click("text=Create catalog")
    owner.wait_for_url("**/catalogs/platform-team/platform/publish/")

    good = catalog_yaml(("platform.example.org", "SetNamespace", "v1"), name="platform").replace(
        "The SetNamespace function.", "Sets the namespace of every resource."
    )
    bad = good.replace("      idempotent: true", "      idempotent: sometimes")
    upload = tmp_path / "catalog.yaml"
    upload.write_text(bad)
    owner.set_input_files("#id_file", str(upload))
    owner.click("button[value=preview]")
    owner.wait_for_selector(".problems")
    problem = owner.inner_text(".problems tr.problem")
    assert "line 18" in problem and "spec.krmFunctions[0].versions[0].idempotent" in problem
    _shot(owner, screenshots, "01-publish-validation-error")

    # The uploaded text is back in the box: fix it there and preview again.
    assert "idempotent: sometimes" in owner.input_value("#id_content")
    owner.fill("#id_content", good)
    owner.click("button[value=preview]")
    owner.wait_for_selector(".preview")
    assert "added" in owner.inner_text(".preview") and "SetNamespace" in owner.inner_text(
        ".preview"
    )
    _shot(owner, screenshots, "02-publish-preview")
    owner.click("button[value=publish]")
    owner.wait_for_url("**/catalogs/platform-team/platform/")
    assert "Published version 1." in owner.inner_text(".messages")
    _shot(owner, screenshots, "03-catalog")

    # --- A contributor proposes a function for the catalog.
    carl = new_page()
    sign_in(carl, "carl")
    carl.goto("/contribute/")
    carl.select_option("#id_catalog", label="platform-team/platform")
    carl.fill("#id_content", DEFINITION)
    _shot(carl, screenshots, "04-contribute")
    carl.click("text=Submit for review")
    carl.wait_for_url("**/contributions/")
    assert "Pending" in carl.inner_text("table.contributions")

    # --- A reviewer asks for changes (a reason is required), then approves the resubmission.
    rita = new_page()
    sign_in(rita, "rita")
    rita.click("text=Review queue")
    _shot(rita, screenshots, "05-review-queue")
    rita.click("table.queue >> text=SetOwner")
    rita.wait_for_selector("text=Approve and publish")
    # A reason is required by the browser too: an empty one is not even sent.
    assert rita.get_attribute("#id_reason", "required") is not None
    rita.click("form.request-changes button")
    assert rita.evaluate("document.querySelector('#id_changes').validity.valueMissing")
    assert "Changes requested" not in rita.inner_text("p:has(.badge)")
    rita.fill("#id_changes", "Pin the image to its digest, please.")
    rita.click("form.request-changes button")
    rita.wait_for_selector("text=Asked the author of contribution")
    _shot(rita, screenshots, "06-review-changes-requested")

    carl.goto("/contributions/")
    row = carl.inner_text("table.contributions")
    assert "Changes requested" in row and "Pin the image to its digest, please." in row
    _shot(carl, screenshots, "07-my-contributions-changes-requested")
    carl.click("text=Edit and resubmit")
    carl.fill("#id_content", DEFINITION.replace(":v1\n", ":v1@sha256:" + "d" * 64 + "\n"))
    carl.click("text=Resubmit for review")
    carl.wait_for_url("**/contributions/")
    assert "Pending" in carl.inner_text("table.contributions")

    contribution = Contribution.objects.get()
    rita.goto(f"/review/{contribution.pk}/")
    assert "schema valid" in rita.inner_text("body")
    _shot(rita, screenshots, "08-review-detail")
    rita.click("text=Approve and publish")
    rita.wait_for_selector("text=Approved; published platform-team/platform version 2.")
    rita.click("a:has-text('Full audit log')")
    rita.wait_for_url("**/review/log/")
    log = rita.inner_text("table.audit")
    for action in ("Submitted", "Changes requested", "Resubmitted", "Approved"):
        assert action in log
    _shot(rita, screenshots, "09-audit-log")

    # --- Anyone finds it through search and copies the --trusted-catalog line.
    visitor = new_page()
    visitor.goto("/")
    visitor.fill("input[name=q]", "owner label")
    visitor.press("input[name=q]", "Enter")
    visitor.wait_for_selector("ol.results >> text=SetOwner")
    _shot(visitor, screenshots, "10-search")
    visitor.click("ol.results >> text=SetOwner")
    visitor.wait_for_selector("table.schema")
    assert "owner" in visitor.inner_text("table.schema")
    _shot(visitor, screenshots, "11-function")
    visitor.click(".crumbs a")
    visitor.click(".copy-button")
    visitor.wait_for_selector(".copy-button:text('Copied')")
    copied = visitor.evaluate("navigator.clipboard.readText()")
    expected = (
        f"krm build . --trusted-catalog={visitor.url.split('/catalogs/')[0]}"
        "/c/platform-team/platform/catalog.yaml"
    )
    assert copied == expected
    # The copied URL serves the catalog, version 2, with the contributed function.
    served = visitor.request.get(expected.split("=", 1)[1])
    assert served.ok and "SetOwner" in served.text()
    _shot(visitor, screenshots, "12-catalog-after-approval")


def test_tokens_page(new_page, people, screenshots):
    page = new_page()
    sign_in(page, "olivia")
    page.click("text=API tokens")
    page.fill("#token-name", "laptop")
    page.check("input[value=publish]")
    page.click("text=Create a token")
    key = page.inner_text("#token-key")
    assert key.startswith("krm_") and len(key) == 47
    assert "read, publish" in page.inner_text("table.tokens")
    _shot(page, screenshots, "13-tokens")


def test_mirror_pages(new_page, people, screenshots, monkeypatch):
    from django.utils import timezone

    from catalogs.mirroring import services as mirrors
    from catalogs.mirroring.models import DriftEvent, SyncRun
    from registry.celery import app as celery_app

    # This checks the pages, not the worker: "sync now" runs in this process even in the
    # PostgreSQL + Redis CI stage, where a real worker (with its own settings) would pick it up.
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    UserFactory(username="sam", is_staff=True)
    # A loopback port nobody listens on: "sync now" runs eagerly here and must fail locally
    # (created while loopback is allowed: the policy is checked at creation too).
    from django.test import override_settings

    with override_settings(MIRROR_ALLOWED_NETWORKS=["127.0.0.1/32"]):
        source = mirrors.mirror_source_create(
            name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
        )
    SyncRun.objects.create(
        source=source,
        status=SyncRun.Status.FAILED,
        reason="Digest pin mismatch: pinned sha256:aa, upstream has sha256:bb.",
        finished_at=timezone.now(),
    )
    ok = SyncRun.objects.create(
        source=source, status=SyncRun.Status.SUCCEEDED, finished_at=timezone.now()
    )
    DriftEvent.objects.create(
        source=source,
        run=ok,
        image="registry.example.org/fn:v1",
        old_digest="sha256:" + "1" * 64,
        new_digest="sha256:" + "2" * 64,
    )
    page = new_page()
    sign_in(page, "sam")
    page.click("text=Mirrors")
    _shot(page, screenshots, "14-mirrors")
    page.click("table.mirrors >> text=upstream")
    page.click("button:has-text('Sync now')")  # not the schedule note that names it
    page.wait_for_selector("text=of upstream failed")  # eager Celery: the run has ended
    runs = page.inner_text("table.runs")
    assert "Digest pin mismatch" in runs
    # The queued run ran (eager celery here) and failed for a reason the operator can act on.
    assert "is private, loopback or link-local; refusing https://127.0.0.1:9/catalog.yaml" in runs
    _shot(page, screenshots, "15-mirror-detail")
