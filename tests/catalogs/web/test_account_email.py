"""Accounts over e-mail, received by a real local SMTP server (aiosmtpd): sign-up sends a signed,
expiring verification link that signs the account in; an unverified account cannot create
publishers or contribute; password reset through Django's e-mailed link. Also "My publishers" and
the "Install krm" page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from catalogs.accounts.models import EmailVerification
from catalogs.publishing.models import Publisher
from catalogs.review.models import Contribution
from tests.catalogs.factories import PublisherFactory, UserFactory
from tests.catalogs.review.contribution_fixtures import DEFINITION
from tests.smtp_server import smtp  # noqa: F401

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-pass-9876"
LINK = re.compile(r"http://testserver(/accounts/\S+/)")


def _sign_up(client: Client, username: str = "dana", address: str = "dana@example.org"):
    return client.post(
        "/accounts/signup/",
        {"username": username, "email": address, "password1": PASSWORD, "password2": PASSWORD},
        follow=True,
    )


def _link(smtp, address: str, subject: str) -> str:  # noqa: F811
    mails = [body for s, body in smtp.bodies_to(address) if s == subject]
    assert len(mails) == 1, smtp.messages
    found = LINK.search(mails[0])
    assert found, mails[0]
    return found.group(1)


def _state() -> tuple:
    return (
        list(EmailVerification.objects.values_list("user__username", "email", "verified_at")),
        list(Publisher.objects.values_list("slug", flat=True)),
        Contribution.objects.count(),
    )


VERIFY = "[KRM Catalog Registry] Verify your e-mail address"
RESET = "[KRM Catalog Registry] Reset your password"


def test_sign_up_verify_by_the_emailed_link_and_be_signed_in(smtp, published):  # noqa: F811
    browser = Client()
    page = _sign_up(browser).content.decode()
    assert "Sign out (dana)" in page
    assert "We sent a link to dana@example.org" in page
    notice = "Verify your e-mail address: open the link we sent to dana@example.org"
    assert notice in browser.get("/publishers/new/").text
    assert notice in browser.get("/contribute/").text
    path = _link(smtp, "dana@example.org", VERIFY)
    assert path.startswith("/accounts/email/verify/")

    # Unverified: signed in, but no publisher and no contribution (web and API alike).
    before = _state()
    refused = browser.post("/publishers/new/", {"slug": "dana-co", "display_name": "Dana"})
    assert refused.status_code == 403
    assert (
        "Verify your e-mail address to create a publisher: open the link we sent to "
        "dana@example.org" in refused.content.decode()
    )
    api = browser.post("/api/v1/publishers/", {"slug": "dana-co"}, content_type="application/json")
    assert api.status_code == 403
    contributed = browser.post("/contribute/", {"catalog": published.pk, "content": DEFINITION})
    assert contributed.status_code == 403
    assert "Verify your e-mail address to contribute a function" in contributed.content.decode()
    assert _state() == before

    # The link, opened in another browser: a GET only asks (a mail scanner verifies nothing) ...
    phone = Client()
    asked = phone.get(path)
    assert asked.status_code == 200 and "Verify my e-mail address</button>" in asked.text
    assert EmailVerification.objects.get().verified_at is None
    # ... the button verifies and signs in.
    done = phone.post(path, follow=True)
    assert "Sign out (dana)" in done.text
    assert "Your e-mail address dana@example.org is verified." in done.text
    assert "Verify your e-mail address:" not in phone.get("/publishers/new/").text
    assert EmailVerification.objects.get().verified_at is not None
    # Now Dana creates her publisher.
    created = phone.post("/publishers/new/", {"slug": "dana-co", "display_name": "Dana"})
    assert created.status_code == 302
    assert Publisher.objects.get(slug="dana-co").owners.get().username == "dana"
    # The same link again is no way in: it says verified and asks for the password.
    again = Client().post(path, follow=True)
    assert "Sign out" not in again.text and 'name="password"' in again.text


@pytest.mark.parametrize("damage", ["tampered", "expired", "address-changed"])
def test_a_bad_verification_link_says_why_and_verifies_nothing(
    smtp,  # noqa: F811
    settings,
    damage,
):
    _sign_up(Client())
    path = _link(smtp, "dana@example.org", VERIFY)
    user = get_user_model().objects.get(username="dana")
    if damage == "tampered":
        path = path.replace(":", ":x", 1)
        message = "This verification link is not valid"
    elif damage == "expired":
        settings.EMAIL_VERIFICATION_DAYS = 0
        message = "This verification link has expired"
    else:
        user.email = "other@example.org"
        user.save()
        message = "This verification link is for an address the account no longer has"
    browser = Client()
    response = browser.post(path)
    assert response.status_code == 400
    assert message in response.text
    assert EmailVerification.objects.get().verified_at is None
    assert "_auth_user_id" not in browser.session


def test_a_new_link_on_request_and_the_rate_limit(smtp, settings):  # noqa: F811
    settings.EMAIL_VERIFICATION_RATE = "2/hour"
    browser = Client()
    _sign_up(browser)  # the first e-mail
    sent = browser.post("/accounts/email/", follow=True)
    assert "We sent a new link to dana@example.org." in sent.text
    refused = browser.post("/accounts/email/", follow=True)
    assert "Too many verification e-mails: at most 2/hour" in refused.text
    assert len(smtp.bodies_to("dana@example.org")) == 2
    # Both links work: a link names the account and address, not the e-mail it came in.
    assert browser.get("/accounts/email/").status_code == 200


def test_an_account_an_administrator_made_needs_no_verification(client, owner):
    client.force_login(owner)
    assert "Verify your e-mail address" not in client.get("/publishers/new/").text
    response = client.post("/publishers/new/", {"slug": "owner-co", "display_name": "O"})
    assert response.status_code == 302
    assert 'is <span class="badge ok">verified</span>' in client.get("/accounts/email/").text


def test_password_reset_through_the_emailed_link(smtp, client):  # noqa: F811
    UserFactory(username="erin", email="erin@example.org")
    page = client.get("/accounts/login/").text
    assert '<a href="/accounts/password/reset/">Forgot your password?</a>' in page
    asked = client.post("/accounts/password/reset/", {"email": "erin@example.org"}, follow=True)
    assert "Check your e-mail" in asked.text
    path = _link(smtp, "erin@example.org", RESET)
    # Django swaps the token in the link for a session and a fixed URL, then asks the password.
    form = client.get(path, follow=True)
    assert "Choose a new password" in form.text and 'name="new_password1"' in form.text
    set_url = form.redirect_chain[-1][0]
    bad = client.post(set_url, {"new_password1": "a-new-pass-5555", "new_password2": "other"})
    assert "The two password fields didn’t match." in bad.text
    done = client.post(
        set_url, {"new_password1": "a-new-pass-5555", "new_password2": "a-new-pass-5555"}
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/password/reset/done/"
    erin = get_user_model().objects.get(username="erin")
    assert erin.check_password("a-new-pass-5555") and not erin.check_password("secret-password")
    # The link works once.
    used = Client().get(path, follow=True)
    assert "This link is not valid" in used.text


def test_password_reset_of_an_unknown_address_says_the_same_and_sends_nothing(
    smtp,  # noqa: F811
    client,
):
    response = client.post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/sent/"
    assert smtp.messages == []


def test_my_publishers_lists_the_ones_the_user_owns(client, owner, publisher):
    PublisherFactory(slug="not-mine")
    PublisherFactory(slug="second-co", owners=[owner])
    client.force_login(owner)
    page = client.get("/accounts/publishers/").text
    assert '<a href="/accounts/publishers/">My publishers</a>' in page
    assert page.index("example-co") < page.index("second-co")
    assert "not-mine" not in page
    nobody = UserFactory(username="nobody")
    client.force_login(nobody)
    assert "You own no publisher yet." in client.get("/accounts/publishers/").text


def test_the_navigation_links_the_docs_and_the_install_page(client, settings):
    page = client.get("/").text
    assert '<a href="/install/#docs">Docs</a>' in page
    assert '<a href="/install/">Install krm</a>' in page
    install = client.get("/install/").text
    assert "pip install -r requirements.txt" in install
    assert "python3 -m pip wheel --no-deps -w dist ." in install
    assert "--trusted-catalog=http://testserver/c/&lt;publisher&gt;/" in install
    settings.DOCS_URL = "https://docs.example.org/krm/"
    assert '<a href="https://docs.example.org/krm/">Docs</a>' in client.get("/").text
