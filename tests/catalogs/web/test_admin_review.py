"""The Django admin's review actions call the same services as the web UI."""

from __future__ import annotations

import pytest

from catalogs.publishing.models import CatalogVersion

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/review/contribution/"


@pytest.fixture
def staff_reviewer(staff_user):
    staff_user.is_superuser = True
    staff_user.save()
    return staff_user


def test_admin_approve_publishes(client, pending, staff_reviewer):
    client.force_login(staff_reviewer)
    response = client.post(
        CHANGELIST, {"action": "approve_selected", "_selected_action": [pending.pk]}, follow=True
    )
    assert "1 contribution(s) done." in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == "approved" and pending.reviewer == staff_reviewer
    assert CatalogVersion.objects.filter(catalog=pending.catalog).count() == 2


def test_admin_reject_asks_for_a_reason_first(client, pending, staff_reviewer):
    client.force_login(staff_reviewer)
    ask = client.post(CHANGELIST, {"action": "reject_selected", "_selected_action": [pending.pk]})
    assert ask.status_code == 200 and "their authors see the reason" in ask.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending"
    client.post(
        CHANGELIST,
        {"action": "reject_selected", "_selected_action": [pending.pk], "reason": "Too broad."},
    )
    pending.refresh_from_db()
    assert (pending.status, pending.reason) == ("rejected", "Too broad.")


def test_admin_refuses_a_self_review(client, published, staff_reviewer):
    from catalogs.review.services import contribution_submit
    from tests.catalogs.review.contribution_fixtures import DEFINITION

    own = contribution_submit(catalog=published, content=DEFINITION, actor=staff_reviewer)
    client.force_login(staff_reviewer)
    response = client.post(
        CHANGELIST, {"action": "approve_selected", "_selected_action": [own.pk]}, follow=True
    )
    assert f"#{own.pk}: Nobody reviews their own contribution." in response.content.decode()
    own.refresh_from_db()
    assert own.status == "pending"


def test_the_contribution_admin_is_hidden_from_non_reviewers(client, pending, owner):
    owner.is_staff = False
    client.force_login(owner)
    assert client.get(CHANGELIST).status_code == 302  # to the admin login
