"""Contribute, my contributions, the review queue, approve / request changes / reject, resubmit,
the audit log."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalogs.publishing.models import CatalogVersion
from catalogs.review.models import Contribution
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db


def test_contribute_by_paste_lists_it_under_my_contributions(as_user, published, contributor):
    client = as_user(contributor)
    response = client.post("/contribute/", {"catalog": published.pk, "content": DEFINITION})
    assert response.status_code == 302 and response["Location"] == "/contributions/"
    c = Contribution.objects.get()
    assert (c.author, c.catalog, c.status, c.kind) == (
        contributor,
        published,
        "pending",
        "SetOwner",
    )
    body = client.get("/contributions/").content.decode()
    assert "SetOwner" in body and "Pending" in body and f"Contribution #{c.pk} sent" in body


def test_contribute_by_upload(as_user, published, contributor):
    upload = SimpleUploadedFile("fn.yaml", DEFINITION.encode())
    response = as_user(contributor).post("/contribute/", {"catalog": published.pk, "file": upload})
    assert response.status_code == 302
    assert Contribution.objects.get().content == DEFINITION


def test_a_mirrored_catalog_is_not_offered_and_is_refused(
    as_user, published, contributor, settings
):
    from catalogs.mirroring import services as mirrors

    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # the source names 127.0.0.1:9

    source = mirrors.mirror_source_create(
        name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )
    client = as_user(contributor)
    choices = client.get("/contribute/").context["form"].fields["catalog"].queryset
    assert list(choices) == [published]
    response = client.post("/contribute/", {"catalog": source.catalog.pk, "content": DEFINITION})
    assert response.status_code == 200
    assert "Select a valid choice." in response.content.decode()
    assert not Contribution.objects.exists()
    # Its page says where it comes from and offers no "Contribute a function".
    page = client.get("/catalogs/mirrors/upstream/").content.decode()
    assert "Mirrored from <code>https://127.0.0.1:9/catalog.yaml</code>" in page
    assert "Contribute a function" not in page
    assert "Contribute a function" in client.get("/catalogs/example-co/functions/").content.decode()


def test_an_invalid_contribution_shows_problems_and_saves_nothing(as_user, published, contributor):
    bad = DEFINITION.replace("    kind: SetOwner\n", "    kind: 12\n")
    response = as_user(contributor).post("/contribute/", {"catalog": published.pk, "content": bad})
    assert response.status_code == 200
    body = response.content.decode()
    assert "The function definition is invalid (1 problem)." in body
    [problem] = response.context["problems"]
    assert problem.path == "spec.names.kind" and problem.line == 6
    assert bad.splitlines()[5].strip() == "kind: 12"
    assert not Contribution.objects.exists()


def test_malformed_yaml_is_reported_on_the_pasted_lines(as_user, published, contributor):
    # An unclosed bracket: the YAML parser notices only past the end of the three lines.
    bad = "group: example.org\nnames: [\nkind: x"
    response = as_user(contributor).post("/contribute/", {"catalog": published.pk, "content": bad})
    body = response.content.decode()
    [problem] = response.context["problems"]
    assert (problem.line, problem.column) == (3, None)
    assert problem.message == (
        "did not find expected ',' or ']' (while parsing a flow sequence at line 2, column 8)"
    )
    assert "line 3</td>" in body
    assert not any(f"line {n}" in body for n in range(4, 10))
    assert not Contribution.objects.exists()


def test_contribution_problems_are_listed_in_line_order(as_user, published, contributor):
    bad = (
        "versions:\n- name: v1\n  idempotent: maybe\n  runtime:\n    container:\n"
        "      image: r.example.org/x:v1\nnames:\n  kind: 5\ngroup: 3\n"
    )
    response = as_user(contributor).post("/contribute/", {"catalog": published.pk, "content": bad})
    problems = response.context["problems"]
    assert [(p.path, p.line) for p in problems] == [
        ("versions[0].idempotent", 3),
        ("names.kind", 8),
        ("group", 9),
    ]


def test_a_non_utf8_upload_is_refused(as_user, published, contributor):
    upload = SimpleUploadedFile("fn.yaml", b"group: \xff\n")
    response = as_user(contributor).post("/contribute/", {"catalog": published.pk, "file": upload})
    assert "The file is not UTF-8 text." in response.content.decode()
    assert not Contribution.objects.exists()


def test_the_queue_filters_by_status_and_catalog(as_user, pending, reviewer, catalog):
    client = as_user(reviewer)
    assert [c.pk for c in client.get("/review/").context["page"]] == [pending.pk]
    assert list(client.get("/review/?status=rejected").context["page"]) == []
    assert [c.pk for c in client.get("/review/?status=").context["page"]] == [pending.pk]
    other = client.get("/review/?status=&catalog=999999")
    assert [c.pk for c in other.context["page"]] == [pending.pk]  # an unknown id is ignored
    assert [c.pk for c in client.get(f"/review/?catalog={catalog.pk}").context["page"]] == [
        pending.pk
    ]


def test_the_review_page_shows_definition_needs_diff_and_validity(as_user, published, reviewer):
    from catalogs.review.services import contribution_submit
    from tests.catalogs.factories import UserFactory

    text = (
        "group: example.co\nnames: {kind: Fn}\nversions:\n- name: v1\n  runtime:\n"
        "    container:\n      image: registry.example.co/fn:v2\n      requireNetwork: true\n"
    )
    c = contribution_submit(catalog=published, content=text, actor=UserFactory(username="a"))
    response = as_user(reviewer).get(f"/review/{c.pk}/")
    body = response.content.decode()
    assert response.context["valid"] and "schema valid" in body
    assert not response.context["is_new_function"]
    [change] = response.context["changes"]
    assert change.needs_added == ["network"] and "new requirement: network" in body
    diff = "\n".join(response.context["diff"])
    assert "-        image: registry.example.co/fn:v1" in diff
    assert "+        image: registry.example.co/fn:v2" in diff
    assert "Approve and publish" in body and "Submitted" in body


def test_reject_needs_a_reason_and_changes_nothing_without_one(as_user, pending, reviewer):
    response = as_user(reviewer).post(f"/review/{pending.pk}/reject/", {"reason": ""})
    assert response.status_code == 400
    assert "A reason is required to reject a contribution." in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == "pending" and pending.events.count() == 1


def test_request_changes_then_edit_and_resubmit_then_approve(
    as_user, pending, reviewer, contributor
):
    client = as_user(reviewer)
    response = client.post(f"/review/{pending.pk}/request-changes/", {"changes": "Pin the image."})
    assert response.status_code == 302
    body = as_user(contributor).get("/contributions/").content.decode()
    assert "Changes requested" in body and "Pin the image." in body and "Edit and resubmit" in body
    edit_url = f"/contributions/{pending.pk}/edit/"
    bad = as_user(contributor).post(edit_url, {"content": "group: ["})
    assert "The function definition is invalid" in bad.content.decode()
    pending.refresh_from_db()
    assert pending.status == "changes_requested"
    fixed = DEFINITION.replace(":v1\n", ":v1@sha256:" + "b" * 64 + "\n")
    response = as_user(contributor).post(edit_url, {"content": fixed})
    assert response.status_code == 302
    pending.refresh_from_db()
    assert (pending.status, pending.revision, pending.content) == ("pending", 2, fixed)
    # The reviewer sees the earlier reason as such, not as a decision on this revision.
    review = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    assert "Changes asked of the last revision: <strong>Pin the image.</strong>" in review
    response = as_user(reviewer).post(f"/review/{pending.pk}/approve/", follow=True)
    assert response.redirect_chain == [(f"/review/{pending.pk}/", 302)]
    page = response.content.decode()
    assert "Approved; published example-co/functions version 2." in page
    published = pending.catalog
    published.refresh_from_db()
    assert published.latest_version.number == 2
    log = as_user(reviewer).get("/review/log/")
    actions = [e.action for e in log.context["page"]]
    assert actions == ["approved", "resubmitted", "changes_requested", "submitted"]
    # A reason and a result each read on their own, never run together.
    text = log.content.decode()
    assert '<div class="audit-reason">Pin the image.</div>' in text
    assert '<div class="audit-result">published version 2</div>' in text
    # The function is now found through search.
    results = as_user(None).get("/?q=setowner").context["page"]
    assert [(r.kind, [c.catalog for c in r.carriers]) for r in results] == [
        ("SetOwner", ["functions"])
    ]


def test_editing_a_pending_contribution_is_refused(as_user, pending, contributor):
    response = as_user(contributor).post(
        f"/contributions/{pending.pk}/edit/", {"content": DEFINITION}
    )
    assert response.status_code == 400
    assert (
        "Only a contribution with changes requested can be resubmitted; this one is pending."
        in response.content.decode()
    )
    pending.refresh_from_db()
    assert pending.revision == 1


def test_approving_twice_shows_the_error_and_publishes_once(as_user, pending, reviewer):
    client = as_user(reviewer)
    client.post(f"/review/{pending.pk}/approve/")
    response = client.post(f"/review/{pending.pk}/approve/", follow=True)
    assert "Only a pending contribution can be reviewed; this one is approved." in (
        response.content.decode()
    )
    assert CatalogVersion.objects.filter(catalog=pending.catalog).count() == 2


def test_own_contribution_has_no_decision_buttons(as_user, published, reviewer):
    from catalogs.review.services import contribution_submit

    c = contribution_submit(catalog=published, content=DEFINITION, actor=reviewer)
    body = as_user(reviewer).get(f"/review/{c.pk}/").content.decode()
    assert "another reviewer must decide" in body and "Approve and publish" not in body


def test_contribute_with_the_form_fields(as_user, published, contributor):
    from catalogs.review.services import contribution_definition_parse

    data = {
        "mode": "fields",
        "fn-catalog": published.pk,
        "fn-group": "forms.example.org",
        "fn-kind": "AddLabel",
        "fn-version": "v1",
        "fn-description": "Adds a label.",
        "fn-image": "registry.example.org/add-label:v1",
        "fn-license": "MIT",
        "fn-usage": "https://example.org/add-label",
        "fn-requires_network": "on",
    }
    response = as_user(contributor).post("/contribute/", data)
    assert response.status_code == 302
    c = Contribution.objects.get()
    assert c.content.startswith("apiVersion: config.kubernetes.io/v1alpha1\n")
    parsed = contribution_definition_parse(content=c.content).function
    assert (parsed.group, parsed.kind, parsed.description) == (
        "forms.example.org",
        "AddLabel",
        "Adds a label.",
    )
    [version] = parsed.versions
    assert version.requires_network and version.license == "MIT"
    assert version.runtime["container"]["image"] == "registry.example.org/add-label:v1"


def test_the_form_fields_report_what_is_missing(as_user, published, contributor):
    data = {"mode": "fields", "fn-catalog": published.pk, "fn-group": "g.io", "fn-version": "v1"}
    response = as_user(contributor).post("/contribute/", data)
    assert response.status_code == 200
    errors = response.context["fields_form"].errors
    assert errors["kind"] == ["This field is required."]
    assert errors["image"] == ["This field is required."]
    assert not Contribution.objects.exists()


def test_the_form_fields_are_validated_like_yaml(as_user, published, contributor):
    data = {
        "mode": "fields",
        "fn-catalog": published.pk,
        "fn-group": "g.io",
        "fn-kind": "K",
        "fn-version": "v1",
        "fn-image": "has space:v1",
    }
    response = as_user(contributor).post("/contribute/", data)
    [problem] = response.context["problems"]
    assert problem.path == "spec.versions[0].runtime.container.image"
    assert problem.message == "must not contain whitespace"
    assert not Contribution.objects.exists()


def test_the_owner_of_the_target_reviews_from_the_queue(as_user, pending, owner, other_owner):
    client = as_user(owner)
    assert "Review queue" in client.get("/").content.decode()
    assert [c.pk for c in client.get("/review/").context["page"]] == [pending.pk]
    response = client.post(f"/review/{pending.pk}/approve/", {"comment": "Welcome aboard."})
    assert response.status_code == 302
    pending.refresh_from_db()
    assert (pending.status, pending.reviewer, pending.reason) == (
        "approved",
        owner,
        "Welcome aboard.",
    )
    page = client.get(f"/review/{pending.pk}/").content.decode()
    assert "Reviewer's comment: <strong>Welcome aboard.</strong>" in page
    # Another publisher's owner sees an empty queue and no log entries of example-co.
    other = as_user(other_owner)
    assert list(other.get("/review/").context["page"]) == []
    assert list(other.get("/review/log/").context["page"]) == []


def test_the_review_page_pairs_each_decision_with_its_field(as_user, pending, reviewer):
    body = as_user(reviewer).get(f"/review/{pending.pk}/").content.decode()
    approve_at = body.index(f'action="/review/{pending.pk}/approve/"')
    reject_at = body.index(f'action="/review/{pending.pk}/reject/"')
    approve_form = body[approve_at : body.index("</form>", approve_at)]
    reject_form = body[reject_at : body.index("</form>", reject_at)]
    assert 'name="comment"' in approve_form and "Approve and publish" in approve_form
    assert 'name="reason"' not in approve_form
    assert 'name="reason"' in reject_form and "Reason (required)" in reject_form
    assert ">Reject</button>" in reject_form
