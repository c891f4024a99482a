"""The review page beyond approve: request changes, a required reason (in the browser too), the
conversation, the diff between revisions, trial outputs against the previous revision, what
runs (script or file listing), and the review queue of a private catalog."""

from __future__ import annotations

import re

import pytest

from catalogs.publishing import services as publishing
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent, TrialRun
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db

EDITED = DEFINITION.replace(
    "Sets an owner label on every resource.", "Sets an <script>alert(1)</script> label."
)


def _state():
    return (
        list(Contribution.objects.values_list("pk", "status", "revision", "reason")),
        list(ReviewEvent.objects.order_by("pk").values_list("action", "reason")),
    )


def test_the_decision_forms_require_a_reason_in_the_browser(as_user, pending, reviewer):
    body = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    for name in ("reason", "changes", "body"):
        [tag] = re.findall(rf"<textarea[^>]*name=\"{name}\"[^>]*>", body)
        assert " required" in tag, tag
    assert "Request changes" in body and "Final: the author cannot resubmit" in body


@pytest.mark.parametrize(
    ("action", "field"), [("reject", "reason"), ("request-changes", "changes")]
)
def test_the_server_requires_the_reason_whatever_the_browser_did(
    as_user, pending, reviewer, action, field
):
    before = _state()
    response = as_user(reviewer).post(f"/review/{pending.pk}/{action}/", {field: "  "})
    assert response.status_code == 400
    what = "reject a contribution" if action == "reject" else "request changes to a contribution"
    assert f"A reason is required to {what}." in response.content.decode()
    assert _state() == before


def test_request_changes_then_the_resubmission_shows_the_diff(
    as_user, pending, reviewer, contributor
):
    response = as_user(reviewer).post(
        f"/review/{pending.pk}/request-changes/", {"changes": "Say what it sets."}, follow=True
    )
    page = response.content.decode()
    assert f"Asked the author of contribution #{pending.pk} for changes." in page
    assert "Changes requested: <strong>Say what it sets.</strong>" in page
    edit = as_user(contributor).post(f"/contributions/{pending.pk}/edit/", {"content": EDITED})
    assert edit.status_code == 302
    page = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    assert "Changes since revision 1" in page
    # The diff is text: markup in a definition is shown, never run.
    assert '<span class="del">-  description: Sets an owner label on every resource.</span>' in page
    assert (
        '<span class="add">+  description: Sets an &lt;script&gt;alert(1)&lt;/script&gt; '
        "label.</span>" in page
    )
    assert "<script>alert(1)" not in page


def test_a_rejected_contribution_cannot_be_edited(as_user, pending, reviewer, contributor):
    as_user(reviewer).post(f"/review/{pending.pk}/reject/", {"reason": "Not for us."})
    body = as_user(contributor).get("/contributions/").content.decode()
    assert "Rejected" in body and "Edit and resubmit" not in body
    before = _state()
    response = as_user(contributor).post(f"/contributions/{pending.pk}/edit/", {"content": EDITED})
    assert response.status_code == 400
    assert "the rejection is final" in response.content.decode()
    assert _state() == before


def test_the_conversation_in_order_on_the_review_page(as_user, pending, reviewer, contributor):
    client = as_user(reviewer)
    response = client.post(f"/review/{pending.pk}/comment/", {"body": "Why <b>labels</b>?"})
    assert response.status_code == 302
    assert response["Location"] == f"/review/{pending.pk}/#conversation"
    contributions.contribution_comment_add(
        contribution=pending, author=contributor, body="Selectors\nneed them."
    )
    page = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    thread = page[page.index('<ol class="conversation-thread">') :]
    thread = thread[: thread.index("</ol>")]
    order = [thread.index(s) for s in ("submitted revision 1", "Why &lt;b&gt;labels", "Selectors")]
    assert order == sorted(order)
    assert "Selectors<br>need them." in thread


def test_an_empty_comment_shows_the_error_and_adds_nothing(as_user, pending, reviewer):
    before = _state()
    response = as_user(reviewer).post(f"/review/{pending.pk}/comment/", {"body": " "})
    assert response.status_code == 400
    assert "A comment needs some text." in response.content.decode()
    assert _state() == before


def _run(contribution, revision, output, **fields):
    return TrialRun.objects.create(
        contribution=contribution,
        revision=revision,
        version="v1",
        example="built-in",
        runtime="starlark",
        status="ok",
        output=output,
        **fields,
    )


def test_trial_outputs_are_compared_with_the_previous_revision(
    as_user, pending, reviewer, contributor
):
    _run(pending, 1, "kind: ConfigMap\nmetadata:\n  labels: {tier: one}\n")
    contributions.contribution_request_changes(contribution=pending, actor=reviewer, reason="2")
    contributions.contribution_resubmit(contribution=pending, content=EDITED, actor=contributor)
    script = 'print("<hello>")\n'
    _run(pending, 2, "kind: ConfigMap\nmetadata:\n  labels: {tier: two}\n", artifact=script)
    page = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    assert "Output against the previous revision" in page
    assert '<span class="del">-  labels: {tier: one}</span>' in page
    assert '<span class="add">+  labels: {tier: two}</span>' in page
    assert "v1: the starlark script" in page
    assert "print(&quot;&lt;hello&gt;&quot;)" in page


def test_what_runs_for_a_container_is_the_pinned_image(as_user, pending, reviewer):
    page = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    assert "A container image, pinned as shown" in page
    assert "fetched a starlark script" not in page


def test_what_runs_says_when_nothing_was_fetched_yet(as_user, published, contributor, reviewer):
    starlark = DEFINITION.replace(
        "      container:\n        image: registry.example.org/set-owner:v1\n",
        "      starlark:\n        uri: https://example.org/set-owner.star\n"
        "        sha256: " + "c" * 64 + "\n",
    )
    c = contributions.contribution_submit(catalog=published, content=starlark, actor=contributor)
    page = as_user(reviewer).get(f"/review/{c.pk}/").content.decode()
    assert "No trial run of revision 1 fetched a starlark script or an exec download yet" in page


def test_the_queue_of_a_reviewer_hides_private_catalogs(
    as_user, pending, reviewer, owner, staff_user
):
    publishing.catalog_update(catalog=pending.catalog, actor=owner, visibility="private")
    client = as_user(reviewer)
    queue = client.get("/review/")
    assert list(queue.context["page"]) == []
    # The catalog filter does not name it either.
    assert list(queue.context["form"].fields["catalog"].queryset) == []
    assert "example-co/functions" not in queue.content.decode()
    for path in ("", "approve/"):
        method = client.get if path == "" else client.post
        assert method(f"/review/{pending.pk}/{path}").status_code == 404
    before = _state()
    for action, data in [
        ("reject", {"reason": "x"}),
        ("request-changes", {"changes": "x"}),
        ("comment", {"body": "x"}),
    ]:
        assert client.post(f"/review/{pending.pk}/{action}/", data).status_code == 404
    assert _state() == before
    assert "SetOwner" not in client.get("/review/log/").content.decode()
    for user in (owner, staff_user):
        assert [c.pk for c in as_user(user).get("/review/").context["page"]] == [pending.pk]
        assert as_user(user).get(f"/review/{pending.pk}/").status_code == 200
