"""The authorization matrix of mirror sources, sync runs and reserved publishers.

Every role × every method: the exact status code, nothing changed by a refusal, and something
changed by each allowed write. No credentials: 401 with a ``WWW-Authenticate: Token`` challenge;
signed in but not allowed: 403. "owner" owns the ``mirrors`` publisher, as a user who took it
before slugs were reserved would: that ownership must grant nothing.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import MirrorSource, SyncRun
from catalogs.publishing.models import Catalog, CatalogVersion, Publisher
from tests.catalogs.factories import UserFactory, catalog_yaml

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "signed-in", "owner", "operator", "staff"]
DOCUMENT = catalog_yaml(("example.co", "SetLabels", "v1"))
UPSTREAM = "https://upstream.example.co/catalog.yaml"


def _state() -> tuple:
    """Everything a request to these endpoints could change."""
    return (
        list(Publisher.objects.values_list("slug", "display_name", "owners__username")),
        list(Catalog.objects.values_list("publisher__slug", "name", "description")),
        list(CatalogVersion.objects.values_list("catalog__name", "number", "digest")),
        list(
            MirrorSource.objects.values_list(
                "name", "url", "digest", "enabled", "interval_minutes", "mirror_runtimes"
            )
        ),
        list(SyncRun.objects.values_list("pk", "source__name", "status")),
    )


@pytest.fixture
def world(db):
    """One mirror source with one finished run, and a user owning the mirror publisher."""
    source = mirrors.mirror_source_create(name="upstream", url=UPSTREAM, actor=None)
    run = SyncRun.objects.create(source=source, status=SyncRun.Status.FAILED, reason="offline")
    squatter = UserFactory(username="owner")
    source.catalog.publisher.owners.add(squatter)
    operator = UserFactory(username="operator")
    operator.user_permissions.add(Permission.objects.get(codename="operate_mirrors"))
    users = {
        "signed-in": UserFactory(username="signed-in"),
        "owner": squatter,
        "operator": operator,
        "staff": UserFactory(username="staff", is_staff=True),
    }
    return {"source": source.pk, "run": run.pk, "users": users}


def client_as(world, role: str) -> APIClient:
    client = APIClient()
    if role != "anonymous":
        client.force_authenticate(world["users"][role])
    return client


# (method, path, body, content type); {source} and {run} are filled in from the world.
REQUESTS = {
    "sources-list": ("get", "/api/v1/sources/", None, None),
    "sources-create": ("post", "/api/v1/sources/", {"name": "new", "url": UPSTREAM}, None),
    "sources-put": ("put", "/api/v1/sources/", {"name": "new", "url": UPSTREAM}, None),
    "sources-delete-all": ("delete", "/api/v1/sources/", None, None),
    "source-detail": ("get", "/api/v1/sources/{source}/", None, None),
    "source-detail-missing": ("get", "/api/v1/sources/999999/", None, None),
    "source-patch": ("patch", "/api/v1/sources/{source}/", {"enabled": False}, None),
    "source-patch-missing": ("patch", "/api/v1/sources/999999/", {"enabled": False}, None),
    "source-put": ("put", "/api/v1/sources/{source}/", {"name": "x", "url": UPSTREAM}, None),
    "source-delete": ("delete", "/api/v1/sources/{source}/", None, None),
    "source-sync": ("post", "/api/v1/sources/{source}/sync/", None, None),
    "source-sync-get": ("get", "/api/v1/sources/{source}/sync/", None, None),
    "source-runs": ("get", "/api/v1/sources/{source}/runs/", None, None),
    "source-runs-post": ("post", "/api/v1/sources/{source}/runs/", {}, None),
    "run-detail": ("get", "/api/v1/runs/{run}/", None, None),
    "run-detail-missing": ("get", "/api/v1/runs/999999/", None, None),
    "run-patch": ("patch", "/api/v1/runs/{run}/", {"status": "succeeded"}, None),
    "run-delete": ("delete", "/api/v1/runs/{run}/", None, None),
    # Reserved publishers and the mirror publisher's catalogs.
    "publisher-create-mirrors": ("post", "/api/v1/publishers/", {"slug": "mirrors"}, None),
    "publisher-create-official": ("post", "/api/v1/publishers/", {"slug": "official"}, None),
    "publisher-create-api": ("post", "/api/v1/publishers/", {"slug": "API"}, None),
    "mirrors-publisher-read": ("get", "/api/v1/publishers/mirrors/", None, None),
    "mirrors-publisher-rename": (
        "patch",
        "/api/v1/publishers/mirrors/",
        {"display_name": "Official mirrors"},
        None,
    ),
    "mirrors-publisher-owners": (
        "patch",
        "/api/v1/publishers/mirrors/",
        {"owners": ["signed-in"]},
        None,
    ),
    "mirrors-publisher-put": ("put", "/api/v1/publishers/mirrors/", {"slug": "x"}, None),
    "mirrors-publisher-delete": ("delete", "/api/v1/publishers/mirrors/", None, None),
    "mirror-catalog-read": ("get", "/api/v1/catalogs/mirrors/upstream/", None, None),
    "mirror-catalog-relabel": (
        "patch",
        "/api/v1/catalogs/mirrors/upstream/",
        {"description": "Trusted and official"},
        None,
    ),
    "mirror-catalog-create": (
        "post",
        "/api/v1/catalogs/",
        {"publisher": "mirrors", "name": "fake"},
        None,
    ),
    "mirror-catalog-publish": (
        "post",
        "/api/v1/catalogs/mirrors/upstream/versions/",
        DOCUMENT,
        "application/yaml",
    ),
    "mirror-catalog-delete": ("delete", "/api/v1/catalogs/mirrors/upstream/", None, None),
    "mirror-served": ("get", "/c/mirrors/upstream/catalog.yaml", None, None),
}

# Expected status per role, in ROLES order.
OPERATORS_ONLY = (401, 403, 403, 200, 200)
EXPECTED = {
    "sources-list": OPERATORS_ONLY,
    "sources-create": (401, 403, 403, 201, 201),
    "sources-put": (401, 403, 403, 405, 405),
    "sources-delete-all": (401, 403, 403, 405, 405),
    "source-detail": OPERATORS_ONLY,
    "source-detail-missing": (401, 403, 403, 404, 404),
    "source-patch": OPERATORS_ONLY,
    "source-patch-missing": (401, 403, 403, 404, 404),
    "source-put": (401, 403, 403, 405, 405),
    "source-delete": (401, 403, 403, 405, 405),
    "source-sync": (401, 403, 403, 202, 202),
    "source-sync-get": (401, 403, 403, 405, 405),
    "source-runs": OPERATORS_ONLY,
    "source-runs-post": (401, 403, 403, 405, 405),
    "run-detail": OPERATORS_ONLY,
    "run-detail-missing": (401, 403, 403, 404, 404),
    "run-patch": (401, 403, 403, 405, 405),
    "run-delete": (401, 403, 403, 405, 405),
    "publisher-create-mirrors": (401, 403, 403, 403, 403),
    "publisher-create-official": (401, 403, 403, 403, 403),
    "publisher-create-api": (401, 403, 403, 403, 403),
    "mirrors-publisher-read": (200, 200, 200, 200, 200),
    "mirrors-publisher-rename": (401, 403, 403, 200, 200),
    "mirrors-publisher-owners": (401, 403, 403, 403, 403),
    "mirrors-publisher-put": (401, 405, 405, 405, 405),
    "mirrors-publisher-delete": (401, 405, 405, 405, 405),
    "mirror-catalog-read": (200, 200, 200, 200, 200),
    "mirror-catalog-relabel": (401, 403, 403, 200, 200),
    "mirror-catalog-create": (401, 403, 403, 403, 403),
    "mirror-catalog-publish": (401, 403, 403, 409, 409),
    "mirror-catalog-delete": (401, 405, 405, 405, 405),
    "mirror-served": (404, 404, 404, 404, 404),  # public, but nothing synced yet
}
READS = {name for name, (method, *_rest) in REQUESTS.items() if method == "get"}


def test_every_request_has_expectations():
    assert set(EXPECTED) == set(REQUESTS)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", REQUESTS)
def test_authorization_matrix(world, name, role):
    method, path, body, content_type = REQUESTS[name]
    path = path.format(source=world["source"], run=world["run"])
    before = _state()
    kwargs = {"content_type": content_type} if content_type else {"format": "json"}
    client = client_as(world, role)
    if body is None:
        response = getattr(client, method)(path)
    else:
        response = getattr(client, method)(path, body, **kwargs)

    expected = EXPECTED[name][ROLES.index(role)]
    assert response.status_code == expected, (name, role, response.content)
    if expected == 401:
        assert response["WWW-Authenticate"] == "Token"
        assert response.json() == {"detail": "Authentication credentials were not provided."}
    else:
        assert "WWW-Authenticate" not in response
    if expected >= 400 or name in READS:
        assert _state() == before, "a refused request or a read changed something"
    else:
        assert _state() != before, "an allowed write changed nothing"


@pytest.mark.parametrize("role", ["signed-in", "owner"])
def test_refusals_name_who_may(world, role):
    client = client_as(world, role)
    sources = client.get("/api/v1/sources/")
    assert sources.json() == {
        "detail": "Only staff or mirror operators may see or change mirror sources and their runs."
    }
    relabel = client.patch(
        "/api/v1/catalogs/mirrors/upstream/", {"description": "x"}, format="json"
    )
    assert relabel.json() == {
        "detail": "Only staff or mirror operators may change the mirrored catalogs of publisher "
        "'mirrors'."
    }
    squat = client.post("/api/v1/publishers/", {"slug": "mirrors"}, format="json")
    assert squat.json() == {
        "detail": "Publisher slug 'mirrors' is reserved for mirrored catalogs: it is created by "
        "adding a mirror source (POST /api/v1/sources/), never by hand."
    }


def test_a_reserved_slug_is_refused_before_it_exists(db):
    """The original attack: no mirror source yet, a user takes ``mirrors`` (and ``official``)."""
    client = APIClient()
    client.force_authenticate(UserFactory(username="early-bird"))
    for slug in ("mirrors", "official"):
        response = client.post("/api/v1/publishers/", {"slug": slug}, format="json")
        assert response.status_code == 403
    assert not Publisher.objects.exists()
