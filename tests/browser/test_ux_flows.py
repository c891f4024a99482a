"""Issue 14's paths in a real browser: a new user's own publisher, co-owners and the verified
badge; the owner reviewing a contribution; mirror sources made in the UI; confirmations and the
styled error and sign-in pages. A screenshot of each page is saved."""

from __future__ import annotations

import re

import pytest

from catalogs.publishing import services
from catalogs.publishing.models import Publisher, VerificationRequest
from catalogs.review import services as contributions
from tests.browser.conftest import sign_in
from tests.catalogs.factories import UserFactory, catalog_yaml
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db(transaction=True)


def _shot(page, folder, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_a_new_user_runs_a_publisher_and_reviews_contributions(
    new_page, screenshots, settings, mailoutbox
):
    settings.SIGNUP_ENABLED = True
    UserFactory(username="sam", is_staff=True)
    UserFactory(username="carl")
    UserFactory(username="nina")

    page = new_page()
    page.goto("/accounts/signup/")
    _shot(page, screenshots, "20-sign-up")
    page.fill("#id_username", "dana")
    page.fill("#id_email", "dana@example.org")
    page.fill("#id_password1", "a-long-pass-9876")
    page.fill("#id_password2", "a-long-pass-9876")
    page.click("text=Create account")
    page.wait_for_selector("text=Sign out (dana)")
    # Until Dana opens the e-mailed link (Django's test outbox here) she creates no publisher.
    [mail] = [m for m in mailoutbox if m.to == ["dana@example.org"]]
    page.goto(re.search(r"/accounts/email/verify/\S+/", mail.body).group(0))
    page.click("text=Verify my e-mail address")
    page.wait_for_selector("text=Your e-mail address dana@example.org is verified.")

    # "New catalog" leads to creating a publisher first, then back to the catalog form.
    page.click("header >> text=New catalog")
    page.wait_for_selector("text=A catalog belongs to a publisher: create yours first.")
    page.fill("#id_slug", "mirrors")  # reserved: the service's error shows in the form
    page.click("text=Create publisher")
    page.wait_for_selector(".errorlist >> text=is reserved for mirrored catalogs")
    assert not Publisher.objects.exists()
    page.fill("#id_slug", "dana-co")
    page.fill("#id_display_name", "Dana Co")
    _shot(page, screenshots, "21-new-publisher")
    page.click("text=Create publisher")
    page.wait_for_url("**/catalogs/new/")
    page.fill("#id_name", "tools")
    page.click("text=Create catalog")
    page.wait_for_url("**/catalogs/dana-co/tools/publish/")
    publisher = Publisher.objects.get(slug="dana-co")
    catalog = publisher.catalogs.get(name="tools")
    services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Fn", "v1")), actor=None
    )

    # Invite a co-owner and ask for the verified badge.
    page.goto("/publishers/dana-co/")
    page.fill("#id_username", "nobody")
    page.click("text=Invite owner")
    page.wait_for_selector("text=Unknown user 'nobody': they must sign up first.")
    page.fill("#id_username", "nina")
    page.click("text=Invite owner")
    page.wait_for_selector("text=Invitation sent to nina: they own dana-co once they accept it.")
    # Nina owns it only once she says yes.
    assert list(publisher.owners.values_list("username", flat=True)) == ["dana"]
    nina = new_page()
    sign_in(nina, "nina")
    nina.click("header >> text=Invitations (1)")
    nina.click("button[value=accept]")
    nina.wait_for_selector("text=You now own dana-co.")
    assert sorted(publisher.owners.values_list("username", flat=True)) == ["dana", "nina"]
    page.fill("#id_message", "https://dana.example.co")
    page.click("text=Ask staff for the verified badge")
    page.wait_for_selector("text=waiting for staff")
    _shot(page, screenshots, "22-publisher")

    staff = new_page()
    sign_in(staff, "sam")
    staff.click("header >> text=Verification")
    _shot(staff, screenshots, "23-verification-queue")
    staff.click("text=Grant")
    staff.wait_for_selector("text=Verified badge granted for dana-co.")
    assert VerificationRequest.objects.get().status == "granted"

    # Carl contributes to dana-co/tools; Dana, its owner, reviews it with a comment.
    contribution = contributions.contribution_submit(
        catalog=catalog,
        content=DEFINITION,
        actor=UserFactory._meta.model.objects.get(username="carl"),
    )
    page.click("header >> text=Review queue")
    page.click("table.queue >> text=SetOwner")
    page.fill("#id_comment", "Thanks, welcome aboard.")
    _shot(page, screenshots, "24-review-as-owner")
    page.click("text=Approve and publish")
    page.wait_for_selector("text=Approved; published dana-co/tools version 2.")
    contribution.refresh_from_db()
    assert (contribution.status, contribution.reason) == ("approved", "Thanks, welcome aboard.")


def test_mirror_source_form_tokens_confirmation_and_error_pages(new_page, screenshots, settings):
    # The source's loopback URL is checked at creation against the network policy.
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    UserFactory(username="sam", is_staff=True)
    page = new_page()
    page.goto("/accounts/login/")
    _shot(page, screenshots, "25-sign-in")
    sign_in(page, "sam")

    page.click("header >> text=Mirrors")
    page.click("text=New source")
    page.fill("#id_name", "upstream")
    page.fill("#id_url", "https://127.0.0.1:9/catalog.yaml")
    page.fill("#id_digest", "sha256:short")
    page.click("text=Create source")
    page.wait_for_selector("text=digest must be sha256: and 64 lower-case hexadecimal characters.")
    _shot(page, screenshots, "26-mirror-form-error")
    page.fill("#id_digest", "")
    page.click("text=Create source")
    page.wait_for_selector("text=Source upstream created.")
    page.click("text=Edit")
    page.fill("#id_url", "https://127.0.0.1:9/v2/catalog.yaml")
    page.click("text=Save changes")
    page.wait_for_selector("text=Source upstream changed")
    assert "https://127.0.0.1:9/v2/catalog.yaml" in page.inner_text("dl.facts")

    page.click("header >> text=API tokens")
    page.fill("#token-name", "laptop")
    page.click("text=Create a token")
    key = page.inner_text("#token-key")
    page.click("text=Delete…")
    page.wait_for_selector("text=Delete the token laptop?")
    _shot(page, screenshots, "27-token-revoke-confirm")
    page.click("text=Cancel")
    page.wait_for_selector("table.tokens")
    assert key[:8] in page.inner_text("main") and key not in page.inner_text("main")

    page.goto("/no/such/page/")
    assert "Page not found" in page.inner_text("main")
    _shot(page, screenshots, "28-not-found")
