"""The contributions API: every endpoint as anonymous, author, other user, reviewer and staff."""

from __future__ import annotations

import pytest
import yaml
from rest_framework.test import APIClient

from catalogs.publishing.models import CatalogVersion
from catalogs.review import services as contributions
from catalogs.review.models import Contribution, ReviewEvent
from tests.catalogs.review import contribution_fixtures
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db

# The contribution fixtures the web UI tests use (that conftest is not on this folder's path).
contributor = contribution_fixtures.contributor
reviewer = contribution_fixtures.reviewer
published = contribution_fixtures.published
pending = contribution_fixtures.pending
other_owner = contribution_fixtures.other_owner

LIST = "/api/v1/contributions/"
ANONYMOUS = {"detail": "Authentication credentials were not provided."}
NOT_VISIBLE = {"detail": "Only its author and reviewers may see a contribution."}
NOT_REVIEWER = {
    "detail": "Only reviewers and owners of publisher 'example-co' may review contributions to it."
}
NOT_AUTHOR = {"detail": "Only the author of a contribution may edit it."}
OWN = {"detail": "Nobody reviews their own contribution."}
BODY = {"publisher": "example-co", "catalog": "functions", "definition": DEFINITION}


@pytest.fixture
def rejected(pending, reviewer):
    """``pending``, rejected by the reviewer."""
    return contributions.contribution_reject(
        contribution=pending, actor=reviewer, reason="Pin the image by digest."
    )


@pytest.fixture
def changes_requested(pending, reviewer):
    """``pending``, with changes requested by the reviewer."""
    return contributions.contribution_request_changes(
        contribution=pending, actor=reviewer, reason="Pin the image by digest."
    )


def _state() -> tuple:
    """Everything a contribution request could change."""
    return (
        list(
            Contribution.objects.order_by("pk").values_list(
                "pk", "catalog_id", "author_id", "content", "status", "revision", "reason"
            )
        ),
        list(ReviewEvent.objects.order_by("pk").values_list("pk", "action")),
        list(CatalogVersion.objects.order_by("pk").values_list("catalog_id", "number", "digest")),
    )


# --------------------------------------------------------------------------- submit


@pytest.mark.parametrize("who", ["author", "other", "reviewer", "staff"])
def test_any_signed_in_user_submits(client_for, published, who):
    response = client_for(who).post(LIST, BODY, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    c = Contribution.objects.get()
    assert response["Location"] == body["url"] == f"http://testserver{LIST}{c.pk}/"
    user = {"author": "contributor", "other": "other", "reviewer": "reviewer", "staff": "staff"}
    assert (body["publisher"], body["catalog"], body["group"], body["kind"]) == (
        "example-co",
        "functions",
        "contrib.example.org",
        "SetOwner",
    )
    assert (body["status"], body["revision"], body["author"], body["content"]) == (
        "pending",
        1,
        user[who],
        DEFINITION,
    )
    assert [e["action"] for e in body["events"]] == ["submitted"]
    assert (c.author.username, c.content) == (user[who], DEFINITION)


def test_anonymous_cannot_submit(client_for, published):
    before = _state()
    response = client_for("anonymous").post(LIST, BODY, format="json")
    assert (response.status_code, response.json()) == (401, ANONYMOUS)
    assert response["WWW-Authenticate"] == "Token"
    assert _state() == before


def test_a_definition_as_a_json_object_is_stored_as_yaml(client_for, published):
    document = yaml.safe_load(DEFINITION)
    response = client_for("author").post(LIST, {**BODY, "definition": document}, format="json")
    assert response.status_code == 201, response.content
    stored = Contribution.objects.get().content
    assert yaml.safe_load(stored) == document
    assert stored.startswith("apiVersion: config.kubernetes.io/v1alpha1\n")


def test_an_invalid_definition_is_400_with_its_problems_and_saves_nothing(client_for, published):
    before = _state()
    bad = DEFINITION.replace("    kind: SetOwner\n", "    kind: 12\n")
    response = client_for("author").post(LIST, {**BODY, "definition": bad}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "The function definition is invalid (1 problem)."
    [problem] = body["problems"]
    assert (problem["path"], problem["line"]) == ("spec.names.kind", 6)
    assert _state() == before


@pytest.mark.parametrize(
    ("data", "code", "expected"),
    [
        (
            {},
            400,
            {
                "publisher": ["This field is required."],
                "catalog": ["This field is required."],
                "definition": ["This field is required."],
            },
        ),
        (
            {**BODY, "definition": ["a", "list"]},
            400,
            {"definition": ["Give the definition as YAML text or as a JSON object."]},
        ),
        (
            {**BODY, "catalog": "nope"},
            404,
            {"detail": "Catalog 'example-co/nope' does not exist."},
        ),
        (
            {**BODY, "definition": ""},
            400,
            {
                "detail": "The function definition is invalid (1 problem).",
                "problems": [
                    {"path": "", "message": "the definition is empty", "line": None, "column": None}
                ],
            },
        ),
    ],
    ids=["missing-fields", "definition-list", "unknown-catalog", "empty-definition"],
)
def test_bad_submissions_give_the_exact_error_and_save_nothing(
    client_for, published, data, code, expected
):
    before = _state()
    response = client_for("author").post(LIST, data, format="json")
    assert (response.status_code, response.json()) == (code, expected)
    assert _state() == before


def test_a_definition_nested_too_deeply_is_refused(client_for, published):
    deep: dict = {}
    node = deep
    for _ in range(150):
        node["x"] = {}
        node = node["x"]
    response = client_for("author").post(LIST, {**BODY, "definition": deep}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"definition": ["The definition is nested deeper than 100 levels."]},
    )
    assert not Contribution.objects.exists()


def test_an_oversized_body_is_refused_by_its_size(client_for, published, settings):
    settings.CATALOG_MAX_BYTES = 1000
    data = {**BODY, "definition": DEFINITION + "#" * 3000}
    response = client_for("author").post(LIST, data, format="json")
    assert response.status_code == 413
    size = int(response.wsgi_request.META["CONTENT_LENGTH"])
    assert response.json() == {
        "detail": f"The request body is {size} bytes, over the limit of 2000 bytes.",
        "limit": 2000,
    }
    assert not Contribution.objects.exists()


def test_a_yaml_body_is_415(client_for, published):
    response = client_for("author").post(LIST, DEFINITION, content_type="application/yaml")
    assert response.status_code == 415
    assert response.json() == {"detail": 'Unsupported media type "application/yaml" in request.'}
    assert not Contribution.objects.exists()


def test_a_mirrored_catalog_takes_no_contributions(client_for, published, settings):
    from catalogs.mirroring import services as mirrors

    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]  # checked at creation: 127.0.0.1:9
    mirrors.mirror_source_create(
        name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )
    before = _state()
    data = {**BODY, "publisher": "mirrors", "catalog": "upstream"}
    response = client_for("author").post(LIST, data, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {
            "detail": "Catalog 'mirrors/upstream' is a mirror of "
            "https://127.0.0.1:9/catalog.yaml; contribute to its upstream instead."
        },
    )
    assert _state() == before


# --------------------------------------------------------------------------- list


@pytest.fixture
def two(pending, other_user, published):
    """``pending`` by the contributor plus one by ``other``, rejected."""
    theirs = contributions.contribution_submit(
        catalog=published,
        content=DEFINITION.replace("SetOwner", "SetTeam"),
        actor=other_user,
    )
    Contribution.objects.filter(pk=theirs.pk).update(status="rejected")
    return pending, theirs


def _kinds(response) -> list[str]:
    assert response.status_code == 200, response.content
    return sorted(c["kind"] for c in response.json()["results"])


def test_list_shows_users_their_own_and_reviewers_everything(client_for, two):
    assert client_for("anonymous").get(LIST).json() == ANONYMOUS
    assert client_for("anonymous").get(LIST).status_code == 401
    assert _kinds(client_for("author").get(LIST)) == ["SetOwner"]
    assert _kinds(client_for("other").get(LIST)) == ["SetTeam"]
    assert _kinds(client_for("reviewer").get(LIST)) == ["SetOwner", "SetTeam"]
    assert _kinds(client_for("staff").get(LIST)) == ["SetOwner", "SetTeam"]
    # A filter never widens what a non-reviewer sees.
    assert _kinds(client_for("author").get(LIST, {"status": "rejected"})) == []
    assert _kinds(client_for("reviewer").get(LIST, {"mine": "true"})) == []
    # The owner of example-co reviews contributions to its catalogs.
    assert _kinds(client_for("owner").get(LIST)) == ["SetOwner", "SetTeam"]
    assert _kinds(client_for("owner").get(LIST, {"mine": "true"})) == []


def test_an_owner_reviews_only_contributions_to_their_publishers(client_for, pending, other_owner):
    client = APIClient()
    client.force_authenticate(other_owner)
    # other-co's owner has a (here empty) queue, and cannot see or decide example-co's.
    assert _kinds(client.get(LIST)) == []
    assert client.get(f"{LIST}{pending.pk}/").status_code == 403
    before = _state()
    response = client.post(f"{LIST}{pending.pk}/approve/", {"comment": "ok"}, format="json")
    assert (response.status_code, response.json()) == (403, NOT_REVIEWER)
    assert _state() == before


def test_approve_carries_an_optional_comment(client_for, pending):
    response = client_for("owner").post(
        f"{LIST}{pending.pk}/approve/", {"comment": " Thanks, nice function. "}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reason"] == "Thanks, nice function."
    assert [(e["action"], e["actor"], e["reason"]) for e in body["events"]][-1] == (
        "approved",
        "owner",
        "Thanks, nice function.",
    )
    assert client_for("author").get(f"{LIST}{pending.pk}/").json()["reason"] == (
        "Thanks, nice function."
    )


def test_reviewers_filter_the_queue_by_status_and_catalog(client_for, two, catalog):
    from tests.catalogs.factories import CatalogFactory

    CatalogFactory(publisher=catalog.publisher, name="empty")
    queue = client_for("reviewer")
    assert _kinds(queue.get(LIST, {"status": "pending"})) == ["SetOwner"]
    assert _kinds(queue.get(LIST, {"status": "rejected"})) == ["SetTeam"]
    both = ["SetOwner", "SetTeam"]
    assert _kinds(queue.get(LIST, {"catalog": "example-co/functions"})) == both
    assert _kinds(queue.get(LIST, {"catalog": "example-co/empty"})) == []
    assert _kinds(queue.get(LIST, {"catalog": "example-co/functions", "status": "pending"})) == [
        "SetOwner"
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"status": "bogus"}, {"status": ['"bogus" is not a valid choice.']}),
        ({"catalog": "functions"}, {"catalog": ["Give the catalog as <publisher>/<name>."]}),
    ],
)
def test_bad_list_filters_are_400(client_for, two, query, expected):
    response = client_for("reviewer").get(LIST, query)
    assert (response.status_code, response.json()) == (400, expected)


def test_a_list_filter_naming_no_catalog_is_404(client_for, two):
    response = client_for("reviewer").get(LIST, {"catalog": "example-co/nope"})
    assert (response.status_code, response.json()) == (
        404,
        {"detail": "Catalog 'example-co/nope' does not exist."},
    )


# --------------------------------------------------------------------------- detail


@pytest.mark.parametrize(
    ("who", "code"),
    [("anonymous", 401), ("author", 200), ("other", 403), ("reviewer", 200), ("staff", 200)],
)
def test_detail_is_for_its_author_and_reviewers(client_for, pending, who, code):
    response = client_for(who).get(f"{LIST}{pending.pk}/")
    assert response.status_code == code
    body = response.json()
    if who == "anonymous":
        assert body == ANONYMOUS
    elif who == "other":
        assert body == NOT_VISIBLE
    else:
        assert (body["id"], body["content"], body["status"]) == (pending.pk, DEFINITION, "pending")
        assert [(e["action"], e["actor"]) for e in body["events"]] == [("submitted", "contributor")]


def test_a_missing_contribution_is_404(client_for, db):
    response = client_for("reviewer").get(f"{LIST}999/")
    assert (response.status_code, response.json()) == (
        404,
        {"detail": "Contribution 999 does not exist."},
    )


# --------------------------------------------------------------------------- approve


@pytest.mark.parametrize(
    ("who", "expected"),
    [("anonymous", ANONYMOUS), ("author", NOT_REVIEWER), ("other", NOT_REVIEWER)],
)
def test_only_reviewers_approve(client_for, pending, who, expected):
    before = _state()
    response = client_for(who).post(f"{LIST}{pending.pk}/approve/")
    code = 401 if who == "anonymous" else 403
    assert (response.status_code, response.json()) == (code, expected)
    assert _state() == before


@pytest.mark.parametrize("who", ["reviewer", "staff", "owner"])
def test_approve_publishes_a_version_with_the_function(client_for, pending, published, who):
    response = client_for(who).post(f"{LIST}{pending.pk}/approve/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["reviewer"], body["published_version"]) == ("approved", who, 2)
    assert body["published_version_url"] == (
        "http://testserver/c/example-co/functions/versions/2/catalog.yaml"
    )
    assert [(e["action"], e["catalog_version"]) for e in body["events"]] == [
        ("submitted", None),
        ("approved", 2),
    ]
    published.refresh_from_db()
    latest = contributions.catalog_parsed_latest(catalog=published)
    assert sorted((f.group, f.kind) for f in latest.functions) == [
        ("contrib.example.org", "SetOwner"),
        ("example.co", "Fn"),
    ]
    served = client_for("anonymous").get(body["published_version_url"])
    kinds = [f["names"]["kind"] for f in yaml.safe_load(served.content)["spec"]["krmFunctions"]]
    assert sorted(kinds) == ["Fn", "SetOwner"]
    # Approving again is refused and publishes nothing more.
    before = _state()
    again = client_for(who).post(f"{LIST}{pending.pk}/approve/")
    assert (again.status_code, again.json()) == (
        400,
        {"detail": "Only a pending contribution can be reviewed; this one is approved."},
    )
    assert _state() == before


@pytest.mark.parametrize("who", ["reviewer", "staff"])
def test_nobody_reviews_their_own(client_for, published, who):
    client = client_for(who)
    pk = client.post(LIST, BODY, format="json").json()["id"]
    before = _state()
    for action, data in [("approve", None), ("reject", {"reason": "No."})]:
        response = client.post(f"{LIST}{pk}/{action}/", data, format="json")
        assert (response.status_code, response.json()) == (403, OWN)
    assert _state() == before


# --------------------------------------------------------------------------- reject


@pytest.mark.parametrize(
    ("who", "expected"),
    [("anonymous", ANONYMOUS), ("author", NOT_REVIEWER), ("other", NOT_REVIEWER)],
)
def test_only_reviewers_reject(client_for, pending, who, expected):
    before = _state()
    response = client_for(who).post(f"{LIST}{pending.pk}/reject/", {"reason": "x"}, format="json")
    code = 401 if who == "anonymous" else 403
    assert (response.status_code, response.json()) == (code, expected)
    assert _state() == before


@pytest.mark.parametrize("who", ["author", "other"])
@pytest.mark.parametrize("data", [{}, {"reason": ""}, {"reason": ["not", "text"]}])
def test_a_non_reviewer_rejecting_with_a_bad_body_is_403_not_400(client_for, pending, who, data):
    """Permission is checked before the body: a refused user learns nothing from validation."""
    before = _state()
    response = client_for(who).post(f"{LIST}{pending.pk}/reject/", data, format="json")
    assert (response.status_code, response.json()) == (403, NOT_REVIEWER)
    assert _state() == before


@pytest.mark.parametrize("data", [{}, {"reason": ""}, {"reason": "   "}])
def test_reject_needs_a_reason(client_for, pending, data):
    before = _state()
    response = client_for("reviewer").post(f"{LIST}{pending.pk}/reject/", data, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"detail": "A reason is required to reject a contribution."},
    )
    assert _state() == before


@pytest.mark.parametrize("who", ["reviewer", "staff"])
def test_reviewers_reject_with_a_reason(client_for, pending, who):
    data = {"reason": "Pin the image by digest."}
    response = client_for(who).post(f"{LIST}{pending.pk}/reject/", data, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["reason"], body["reviewer"]) == (
        "rejected",
        "Pin the image by digest.",
        who,
    )
    assert CatalogVersion.objects.count() == 1
    # The author sees the reason.
    mine = client_for("author").get(f"{LIST}{pending.pk}/").json()
    assert (mine["status"], mine["reason"]) == ("rejected", "Pin the image by digest.")


# --------------------------------------------------------------------------- resubmit


EDITED = DEFINITION.replace("set-owner:v1", "set-owner@sha256:" + "a" * 64)


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        ("anonymous", ANONYMOUS),
        ("other", NOT_VISIBLE),
        ("reviewer", NOT_AUTHOR),
        ("staff", NOT_AUTHOR),
    ],
)
def test_only_the_author_resubmits(client_for, changes_requested, who, expected):
    before = _state()
    url = f"{LIST}{changes_requested.pk}/resubmit/"
    response = client_for(who).post(url, {"definition": EDITED}, format="json")
    code = 401 if who == "anonymous" else 403
    assert (response.status_code, response.json()) == (code, expected)
    assert _state() == before


@pytest.mark.parametrize("who", ["reviewer", "staff"])
@pytest.mark.parametrize("data", [{}, {"definition": 7}, {"definition": "kind: [unclosed"}])
def test_a_non_author_resubmitting_a_bad_body_is_403_not_400(
    client_for, changes_requested, who, data
):
    """Reviewers see the contribution, but only its author edits it: 403 before any 400."""
    before = _state()
    response = client_for(who).post(f"{LIST}{changes_requested.pk}/resubmit/", data, format="json")
    assert (response.status_code, response.json()) == (403, NOT_AUTHOR)
    assert _state() == before


def test_the_author_resubmits_after_changes_are_requested(client_for, changes_requested):
    url = f"{LIST}{changes_requested.pk}/resubmit/"
    response = client_for("author").post(url, {"definition": EDITED}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["status"], body["revision"], body["content"], body["reviewer"]) == (
        "pending",
        2,
        EDITED,
        None,
    )
    assert [e["action"] for e in body["events"]] == [
        "submitted",
        "changes_requested",
        "resubmitted",
    ]
    # Back in the queue: a reviewer approves the edited definition.
    approved = client_for("reviewer").post(f"{LIST}{changes_requested.pk}/approve/")
    assert approved.json()["published_version"] == 2


def test_only_a_contribution_with_changes_requested_is_resubmitted(client_for, pending):
    before = _state()
    url = f"{LIST}{pending.pk}/resubmit/"
    response = client_for("author").post(url, {"definition": EDITED}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {
            "detail": "Only a contribution with changes requested can be resubmitted; this one "
            "is pending."
        },
    )
    assert _state() == before


def test_a_rejection_is_final(client_for, rejected):
    before = _state()
    url = f"{LIST}{rejected.pk}/resubmit/"
    response = client_for("author").post(url, {"definition": EDITED}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {
            "detail": "A rejected contribution cannot be resubmitted: the rejection is final. "
            "Submit a new contribution instead."
        },
    )
    assert _state() == before


def test_an_invalid_resubmission_changes_nothing(client_for, changes_requested):
    before = _state()
    url = f"{LIST}{changes_requested.pk}/resubmit/"
    bad = EDITED.replace("  group: contrib.example.org\n", "")
    response = client_for("author").post(url, {"definition": bad}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == "The function definition is invalid (1 problem)."
    assert _state() == before
    missing = client_for("author").post(url, {}, format="json")
    assert (missing.status_code, missing.json()) == (
        400,
        {"definition": ["This field is required."]},
    )
    assert _state() == before


# --------------------------------------------------------------------------- schema


def test_the_schema_documents_the_contribution_endpoints(client):
    schema = yaml.safe_load(client.get("/api/schema/").content)
    paths = schema["paths"]
    assert set(paths["/api/v1/contributions/"]) >= {"get", "post"}
    for action in ["resubmit", "approve", "reject", "request-changes", "comments"]:
        assert "post" in paths[f"/api/v1/contributions/{{id}}/{action}/"]
    params = {p["name"] for p in paths["/api/v1/contributions/"]["get"]["parameters"]}
    assert {"status", "catalog", "mine", "page"} <= params
    enum = schema["components"]["schemas"]["ContributionStatusEnum"]["enum"]
    assert enum == ["pending", "approved", "changes_requested", "rejected"]


def test_an_empty_mine_flag_is_refused_as_not_a_boolean(client, django_user_model):
    user = django_user_model.objects.create_user("flag-reader")
    client.force_login(user)
    response = client.get("/api/v1/contributions/?mine=")
    assert response.status_code == 400
    assert response.json() == {"mine": ["Must be a valid boolean."]}
    assert client.get("/api/v1/contributions/?mine=true").status_code == 200
