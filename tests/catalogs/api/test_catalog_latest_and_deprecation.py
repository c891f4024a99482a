"""An owner makes an older version latest again (catalog.yaml, the OCI tag and the TUF pointer
follow) and deprecates a version with a message (npm's ``deprecate``) shown by the API."""

from __future__ import annotations

import pytest

from catalogs.publishing.models import Catalog, PublisherEvent
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

CATALOG = "/api/v1/catalogs/example-co/functions/"


@pytest.fixture
def two_versions(catalog, owner):
    v1, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=owner
    )
    v2, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v2")), actor=owner
    )
    return v1, v2


def test_an_owner_makes_an_older_version_latest_again(as_user, client, two_versions):
    v1, v2 = two_versions
    assert client.get("/c/example-co/functions/catalog.yaml")["X-Content-Digest"] == v2.digest
    response = as_user("owner").patch(CATALOG, {"latest_version": 1}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["latest_version"], response.json()["latest_digest"]) == (1, v1.digest)
    assert Catalog.objects.get().latest_version_id == v1.pk
    # Served as latest over HTTPS and OCI at once, and named by the TUF latest pointer.
    assert client.get("/c/example-co/functions/catalog.yaml")["X-Content-Digest"] == v1.digest
    manifest = client.get("/v2/example-co/functions/manifests/latest")
    assert manifest["Docker-Content-Digest"] == v1.oci_manifest.digest
    from catalogs.trust.models import TufTarget

    pointer = TufTarget.objects.get(path="example-co/functions/catalog.yaml")
    assert pointer.sha256 == v1.digest.removeprefix("sha256:")
    rows = as_user("anonymous").get(CATALOG + "versions/").json()["results"]
    assert [(r["version"], r["latest"]) for r in rows] == [(2, False), (1, True)]
    logged = PublisherEvent.objects.filter(action="latest_set").get()
    assert logged.detail == "Version 1 of 'example-co/functions' made latest again (was 2)."
    # The next publish is latest again, numbered after every earlier one.
    v3, _ = catalog_version_publish(
        catalog=Catalog.objects.get(),
        content=catalog_yaml(("example.co", "A", "v3")),
        actor=None,
    )
    assert (v3.number, Catalog.objects.get().latest_version_id) == (3, v3.pk)


@pytest.mark.parametrize(
    ("who", "body", "status", "message"),
    [
        ("other", {"latest_version": 1}, 403, "Only owners of publisher 'example-co'"),
        ("owner", {"latest_version": 9}, 404, "Catalog 'example-co/functions' has no version 9."),
        ("owner", {"latest_version": 0}, 400, "greater than or equal to 1"),
    ],
)
def test_a_refused_latest_change_names_why_and_changes_nothing(
    as_user, two_versions, who, body, status, message
):
    response = as_user(who).patch(CATALOG, body, format="json")
    assert response.status_code == status
    assert message in response.content.decode()
    assert Catalog.objects.get().latest_version_id == two_versions[1].pk


def test_an_owner_deprecates_a_version_and_withdraws_it(as_user, two_versions):
    url = CATALOG + "versions/1/"
    response = as_user("owner").patch(
        url, {"deprecation": "  Use v2: v1 leaks labels.  "}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["deprecation"] == "Use v2: v1 leaks labels."
    assert body["deprecated_at"]
    rows = as_user("anonymous").get(CATALOG + "versions/").json()["results"]
    assert [(r["version"], r["deprecation"]) for r in rows] == [
        (2, ""),
        (1, "Use v2: v1 leaks labels."),
    ]
    withdrawn = as_user("owner").patch(url, {"deprecation": ""}, format="json").json()
    assert (withdrawn["deprecation"], withdrawn["deprecated_at"]) == ("", None)
    actions = list(
        PublisherEvent.objects.filter(action__startswith="version_")
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == [
        "version_published",
        "version_published",
        "version_deprecated",
        "version_undeprecated",
    ]


@pytest.mark.parametrize(
    ("who", "body", "status", "message"),
    [
        ("anonymous", {"deprecation": "x"}, 401, ""),
        ("other", {"deprecation": "x"}, 403, "Only owners of publisher 'example-co'"),
        (
            "owner",
            {"deprecation": "x" * 1001},
            400,
            "deprecation: at most 1000 characters, not 1001.",
        ),
        (
            "owner",
            {"deprecation": "a\x07b"},
            400,
            "deprecation: control characters are not allowed.",
        ),
        ("owner", {}, 400, "This field is required."),
    ],
)
def test_a_refused_deprecation_names_why_and_changes_nothing(
    as_user, two_versions, who, body, status, message
):
    response = as_user(who).patch(CATALOG + "versions/1/", body, format="json")
    assert response.status_code in (status, 403 if status == 401 else status)
    assert message in response.content.decode()
    two_versions[0].refresh_from_db()
    assert (two_versions[0].deprecation, two_versions[0].deprecated_at) == ("", None)


def test_pages_show_the_deprecation(as_user, client, two_versions):
    as_user("owner").patch(
        CATALOG + "versions/2/", {"deprecation": "Moved to acme/fns."}, format="json"
    )
    page = client.get("/catalogs/example-co/functions/").content.decode()
    assert "The latest version (2) is deprecated:</strong> Moved to acme/fns." in page
    assert '<span class="badge warn" title="Deprecated' in page
    function = client.get("/catalogs/example-co/functions/functions/example.co/A/").content.decode()
    assert "Catalog version 2 is deprecated:</strong> Moved to acme/fns." in function
