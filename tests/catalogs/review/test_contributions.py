"""Contributions: submit, review (approve / request changes / reject), resubmit, the audit log,
change previews."""

# The shared fixtures are imported by name (tests/catalogs has no conftest of its own): F811.
# ruff: noqa: F811

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from catalogs.exceptions import InvalidCatalogError, InvalidInputError, NotAllowedError
from catalogs.publishing.documents import yaml_line_of
from catalogs.publishing.models import CatalogVersion
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent
from catalogs.review.services import (
    catalog_changes,
    catalog_document_check,
    contribution_approve,
    contribution_definition_parse,
    contribution_reject,
    contribution_resubmit,
    contribution_submit,
)
from orchestrator.catalog import parse_catalog
from tests.catalogs.factories import UserFactory, catalog_yaml
from tests.catalogs.review.contribution_fixtures import (  # noqa: F401 (fixtures)
    DEFINITION,
    contributor,
    other_owner,
    pending,
    published,
    reviewer,
)

pytestmark = pytest.mark.django_db

BARE = DEFINITION.split("spec:\n", 1)[1].replace("\n  ", "\n").removeprefix("  ")


def _state():
    """Everything a forbidden action must leave unchanged."""
    return (
        list(Contribution.objects.values_list("pk", "status", "revision", "content", "reason")),
        ReviewEvent.objects.count(),
        CatalogVersion.objects.count(),
    )


def test_submit_creates_a_pending_contribution_and_logs_it(published, contributor):
    c = contribution_submit(catalog=published, content=DEFINITION, actor=contributor)
    assert (c.status, c.group, c.kind, c.revision) == (
        "pending",
        "contrib.example.org",
        "SetOwner",
        1,
    )
    assert c.content == DEFINITION
    events = list(c.events.values_list("action", "actor__username"))
    assert events == [("submitted", "contributor")]


def test_a_bare_spec_is_accepted_too(published, contributor):
    assert BARE.startswith("group: contrib.example.org\nnames:")
    c = contribution_submit(catalog=published, content=BARE, actor=contributor)
    assert (c.group, c.kind) == ("contrib.example.org", "SetOwner")


def test_an_invalid_definition_lists_path_and_line_and_saves_nothing(published, contributor):
    bad = DEFINITION.replace(
        "        image: registry.example.org/set-owner:v1\n", "        imag: x\n"
    )
    before = _state()
    with pytest.raises(InvalidCatalogError) as err:
        contribution_submit(catalog=published, content=bad, actor=contributor)
    assert err.value.message.startswith("The function definition is invalid (")
    lines = bad.splitlines()
    where = {p.path: lines[p.line - 1].strip() for p in err.value.problems}
    # Lines are those of the text the user wrote, not of any wrapper around it.
    assert where == {
        "spec.versions[0].runtime.container.imag": "imag: x",
        "spec.versions[0].runtime.container.image": "container:",
    }, err.value.problems
    assert _state() == before


def test_a_yaml_syntax_error_points_at_the_users_line(published, contributor):
    bad = DEFINITION.replace("  description: Sets", "  description: [Sets")
    with pytest.raises(InvalidCatalogError) as err:
        contribution_submit(catalog=published, content=bad, actor=contributor)
    [problem] = err.value.problems
    assert problem.path == ""
    assert problem.line is not None and 7 <= problem.line <= 9, problem


def test_an_empty_definition_is_refused(published, contributor):
    with pytest.raises(InvalidCatalogError) as err:
        contribution_submit(catalog=published, content="# nothing\n\n", actor=contributor)
    assert [p.message for p in err.value.problems] == ["the definition is empty"]


def test_a_leading_document_marker_keeps_line_numbers(published, contributor):
    text = "---\n" + DEFINITION.replace("kind: SetOwner", "kind: 7")
    with pytest.raises(InvalidCatalogError) as err:
        contribution_definition_parse(content=text)
    lines = {p.line for p in err.value.problems if p.path.startswith("spec.names")}
    assert lines == {7}, err.value.problems


def test_a_definition_with_aliases_is_refused(published, contributor):
    text = "group: &g x\nnames: {kind: A}\ndescription: *g\nversions: []\n"
    with pytest.raises(InvalidCatalogError) as err:
        contribution_definition_parse(content=text)
    assert any("alias" in p.message for p in err.value.problems), err.value.problems


def test_anonymous_cannot_contribute(published):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(NotAllowedError, match="^Sign in to contribute a function.$"):
        contribution_submit(catalog=published, content=DEFINITION, actor=AnonymousUser())
    assert Contribution.objects.count() == 0


def test_a_mirrored_catalog_takes_no_contributions(contributor, settings):
    from catalogs.mirroring import services as mirrors

    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # checked at creation: 127.0.0.1:9
    source = mirrors.mirror_source_create(
        name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )
    message = (
        "Catalog 'mirrors/upstream' is a mirror of https://127.0.0.1:9/catalog.yaml; "
        "contribute to its upstream instead."
    )
    with pytest.raises(InvalidInputError) as err:
        contribution_submit(catalog=source.catalog, content=DEFINITION, actor=contributor)
    assert err.value.message == message
    assert _state() == ([], 0, 0)


def test_approve_publishes_a_version_with_the_function(pending, reviewer):
    catalog = pending.catalog
    c = contribution_approve(contribution=pending, actor=reviewer)
    catalog.refresh_from_db()
    latest = catalog.latest_version
    assert latest.number == 2 and c.published_version == latest
    assert latest.created_by == reviewer
    parsed = parse_catalog(bytes(latest.content))
    assert [(f.group, f.kind) for f in parsed.functions] == [
        ("example.co", "Fn"),
        ("contrib.example.org", "SetOwner"),
    ]
    assert (c.status, c.reviewer) == ("approved", reviewer)
    assert list(c.events.values_list("action", flat=True)) == ["submitted", "approved"]
    assert c.events.last().catalog_version == latest


def test_approve_replaces_a_function_with_the_same_group_and_kind(published, contributor, reviewer):
    text = BARE.replace("contrib.example.org", "example.co").replace("SetOwner", "Fn")
    c = contribution_submit(catalog=published, content=text, actor=contributor)
    contribution_approve(contribution=c, actor=reviewer)
    published.refresh_from_db()
    parsed = parse_catalog(bytes(published.latest_version.content))
    [fn] = parsed.functions
    assert fn.versions[0].runtime["container"]["image"] == "registry.example.org/set-owner:v1"


def test_approve_into_an_empty_catalog(catalog, contributor, reviewer):
    c = contribution_submit(catalog=catalog, content=DEFINITION, actor=contributor)
    contribution_approve(contribution=c, actor=reviewer)
    catalog.refresh_from_db()
    assert catalog.latest_version.number == 1
    assert catalog.latest_version.document_name == "functions"


def test_nobody_reviews_their_own_contribution(published, reviewer):
    c = contribution_submit(catalog=published, content=DEFINITION, actor=reviewer)
    before = _state()
    with pytest.raises(NotAllowedError, match="^Nobody reviews their own contribution.$"):
        contribution_approve(contribution=c, actor=reviewer)
    with pytest.raises(NotAllowedError, match="^Nobody reviews their own contribution.$"):
        contribution_reject(contribution=c, actor=reviewer, reason="no")
    assert _state() == before


@pytest.mark.parametrize("who", ["contributor_2", "other_owner", "anonymous"])
def test_only_reviewers_and_owners_of_the_target_review(pending, other_owner, who):
    from django.contrib.auth.models import AnonymousUser

    actor = {
        "contributor_2": UserFactory(username="someone"),
        "other_owner": other_owner,
        "anonymous": AnonymousUser(),
    }[who]
    before = _state()
    message = (
        "^Only reviewers and owners of publisher 'example-co' may review contributions to it.$"
    )
    with pytest.raises(NotAllowedError, match=message):
        contribution_approve(contribution=pending, actor=actor)
    with pytest.raises(NotAllowedError, match=message):
        contribution_reject(contribution=pending, actor=actor, reason="no")
    assert _state() == before


def test_an_owner_of_the_target_publisher_approves_with_a_comment(pending, owner):
    approved = contribution_approve(contribution=pending, actor=owner, comment="  Welcome!  ")
    assert (approved.status, approved.reviewer, approved.reason) == ("approved", owner, "Welcome!")
    event = contributions.review_event_list(contribution=pending).last()
    assert (event.action, event.actor, event.reason) == ("approved", owner, "Welcome!")
    assert event.catalog_version.number == 2


def test_an_owner_does_not_review_their_own_contribution(published, owner):
    c = contribution_submit(catalog=published, content=DEFINITION, actor=owner)
    before = _state()
    with pytest.raises(NotAllowedError, match="^Nobody reviews their own contribution.$"):
        contribution_approve(contribution=c, actor=owner)
    assert _state() == before


def test_an_owners_queue_and_log_hold_only_their_publishers(pending, owner, other_owner, reviewer):
    assert contributions.user_can_review(user=owner)
    assert contributions.user_can_review(user=other_owner)
    assert list(contributions.contribution_list_reviewable(user=owner)) == [pending]
    assert list(contributions.contribution_list_reviewable(user=other_owner)) == []
    assert list(contributions.contribution_list_reviewable(user=reviewer)) == [pending]
    assert contributions.review_event_list(reviewer=owner).count() == 1
    assert contributions.review_event_list(reviewer=other_owner).count() == 0


def test_the_review_permission_and_staff_make_a_reviewer(db):
    plain = UserFactory(username="plain")
    assert not contributions.user_can_review(user=plain)
    plain.user_permissions.add(Permission.objects.get(codename="review_contribution"))
    plain = type(plain).objects.get(pk=plain.pk)  # drop the permission cache
    assert contributions.user_can_review(user=plain)
    assert contributions.user_can_review(user=UserFactory(username="st", is_staff=True))
    assert not contributions.user_can_review(user=None)


def test_reject_needs_a_reason(pending, reviewer):
    before = _state()
    with pytest.raises(InvalidInputError, match="^A reason is required to reject a contribution.$"):
        contribution_reject(contribution=pending, actor=reviewer, reason="   ")
    assert _state() == before


def test_request_changes_then_resubmit_then_approve(pending, reviewer, contributor):
    c = contributions.contribution_request_changes(
        contribution=pending, actor=reviewer, reason="Pin the image digest."
    )
    assert (c.status, c.reason) == ("changes_requested", "Pin the image digest.")
    edited = DEFINITION.replace(":v1\n", ":v1@sha256:" + "a" * 64 + "\n")
    c = contribution_resubmit(contribution=c, content=edited, actor=contributor)
    assert (c.status, c.revision, c.content) == ("pending", 2, edited)
    c = contribution_approve(contribution=c, actor=reviewer)
    assert c.status == "approved"
    log = list(c.events.values_list("action", "revision", "reason"))
    assert log == [
        ("submitted", 1, ""),
        ("changes_requested", 1, "Pin the image digest."),
        ("resubmitted", 2, ""),
        ("approved", 2, ""),
    ]


def test_only_the_author_resubmits_and_only_when_changes_are_requested(
    pending, reviewer, contributor
):
    with pytest.raises(
        InvalidInputError,
        match="^Only a contribution with changes requested can be resubmitted; this one is "
        "pending.$",
    ):
        contribution_resubmit(contribution=pending, content=DEFINITION, actor=contributor)
    contributions.contribution_request_changes(contribution=pending, actor=reviewer, reason="no")
    before = _state()
    with pytest.raises(NotAllowedError, match="^Only the author of a contribution may edit it.$"):
        contribution_resubmit(contribution=pending, content=DEFINITION, actor=reviewer)
    with pytest.raises(InvalidCatalogError):
        contribution_resubmit(contribution=pending, content="group: [", actor=contributor)
    assert _state() == before


def test_a_decided_contribution_cannot_be_decided_again(pending, reviewer):
    contribution_approve(contribution=pending, actor=reviewer)
    before = _state()
    with pytest.raises(InvalidInputError, match="^Only a pending contribution can be reviewed"):
        contribution_reject(contribution=pending, actor=reviewer, reason="late")
    with pytest.raises(InvalidInputError, match="^Only a pending contribution can be reviewed"):
        contribution_approve(contribution=pending, actor=reviewer)
    assert _state() == before


def test_catalog_changes_lists_added_removed_changed_and_new_needs():
    old = parse_catalog(catalog_yaml(("a.co", "Keep", "v1"), ("a.co", "Gone", "v1")))
    new_text = catalog_yaml(("a.co", "Keep", "v1"), ("a.co", "New", "v1")).replace(
        "image: registry.example.co/keep:v1",
        "image: registry.example.co/keep:v1\n          requireNetwork: true",
    )
    changes = catalog_changes(old=old, new=parse_catalog(new_text))
    assert [(c.kind, c.change) for c in changes.functions] == [
        ("Keep", "changed"),
        ("New", "added"),
        ("Gone", "removed"),
    ]
    keep = changes.of("changed")[0]
    assert keep.needs_added == ["network"] and keep.versions_changed == ["v1"]
    assert not changes.unchanged
    assert catalog_changes(old=old, new=old).unchanged


def test_first_version_is_not_unchanged():
    empty = catalog_yaml().replace("krmFunctions:", "krmFunctions: []")
    changes = catalog_changes(old=None, new=parse_catalog(empty))
    assert changes.first_version and not changes.unchanged and changes.functions == []


def test_yaml_line_of_finds_nested_paths():
    text = catalog_yaml(("a.co", "One", "v1"), ("a.co", "Two", "v1"))
    lines = text.splitlines()
    line = yaml_line_of(text, "spec.krmFunctions[1].versions[0].runtime")
    assert lines[line - 1].strip() == "runtime:"
    second = yaml_line_of(text, "spec.krmFunctions[1]")
    assert lines[second - 1] == "  - group: a.co" and lines[second + 1] == "      kind: Two"
    assert second < line
    # A missing key answers with its deepest existing parent's line.
    assert yaml_line_of(text, "spec.krmFunctions[1].nope") == yaml_line_of(
        text, "spec.krmFunctions[1]"
    )


def test_catalog_document_check_adds_lines_to_schema_problems():
    text = catalog_yaml(("a.co", "One", "v1")).replace(
        "      idempotent: true", "      idempotent: 3"
    )
    with pytest.raises(InvalidCatalogError) as err:
        catalog_document_check(content=text)
    [problem] = err.value.problems
    assert problem.path == "spec.krmFunctions[0].versions[0].idempotent"
    assert text.splitlines()[problem.line - 1].strip() == "idempotent: 3"
