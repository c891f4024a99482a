"""API list pages are cached (catalogs/api/cache.py) and every write that changes what a list
shows ends them: through each service, the admin-style ORM save, bulk updates and raw SQL, in
this thread's open transaction and from another thread's commit. A page cached for one caller
is never served to a caller who may see less.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from catalogs.api import cache as list_cache
from catalogs.mirroring import services as mirrors
from catalogs.mirroring.models import SyncRun
from catalogs.publishing import services
from catalogs.publishing.models import Catalog, Publisher
from catalogs.review import services as contributions
from catalogs.trust import revocations
from tests.catalogs.factories import UserFactory, api_token_key, catalog_yaml
from tests.catalogs.review import contribution_fixtures
from tests.catalogs.review.contribution_fixtures import DEFINITION

pytestmark = pytest.mark.django_db

contributor = contribution_fixtures.contributor
reviewer = contribution_fixtures.reviewer
published = contribution_fixtures.published
pending = contribution_fixtures.pending

PUBLISHERS = "/api/v1/publishers/"
CATALOGS = "/api/v1/catalogs/"
VERSIONS = "/api/v1/catalogs/example-co/functions/versions/"
FUNCTIONS = "/api/v1/functions/"
CONTRIBUTIONS = "/api/v1/contributions/"
SOURCES = "/api/v1/sources/"
REVOCATIONS = "/api/v1/catalogs/example-co/functions/revocations/"


def client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def results(client: APIClient, url: str) -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_a_second_read_is_served_from_the_cache(published, django_assert_num_queries):
    anonymous = client_for(None)
    first = anonymous.get(CATALOGS)
    with django_assert_num_queries(0):
        second = anonymous.get(CATALOGS)
    assert second.content == first.content
    assert second["Content-Type"] == first["Content-Type"] == "application/json"
    assert second["Vary"] == first["Vary"]
    assert second["Allow"] == first["Allow"]


def test_the_cache_is_keyed_by_the_whole_url_and_media_type(published):
    anonymous = client_for(None)
    one = anonymous.get(FUNCTIONS + "?page_size=1")
    assert anonymous.get(FUNCTIONS + "?page_size=1&kind=nothing").json()["results"] == []
    assert anonymous.get(FUNCTIONS + "?page_size=1").content == one.content
    indented = anonymous.get(FUNCTIONS + "?page_size=1", HTTP_ACCEPT="application/json; indent=4")
    assert indented.content != one.content
    assert indented.json() == one.json()
    other_host = anonymous.get(FUNCTIONS + "?page_size=1", HTTP_HOST="localhost")
    assert other_host.json()["results"][0]["catalog_url"].startswith("http://localhost/")
    # The browsable API is rendered each time, never cached as JSON.
    page = anonymous.get(FUNCTIONS + "?page_size=1", HTTP_ACCEPT="text/html")
    assert page["Content-Type"].startswith("text/html")


# --- Every write path ends the cached pages -------------------------------------------------


def publish(catalog: Catalog) -> None:
    services.catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Fn", "v2")), actor=None
    )


def test_publish_changes_the_version_catalog_and_function_lists(published):
    anonymous = client_for(None)
    before = {url: results(anonymous, url) for url in (VERSIONS, CATALOGS, FUNCTIONS)}
    publish(published)
    assert [v["version"] for v in results(anonymous, VERSIONS)] == [2, 1]
    assert [v["version"] for v in before[VERSIONS]] == [1]
    assert results(anonymous, CATALOGS)[0]["latest_version"] == 2
    assert {f["version"] for f in results(anonymous, FUNCTIONS)} == {"v2"}
    assert {f["version"] for f in before[FUNCTIONS]} == {"v1"}


def test_catalog_and_publisher_updates(published, owner, other_user):
    anonymous = client_for(None)
    assert results(anonymous, CATALOGS)[0]["description"] == "A test catalog."
    assert results(anonymous, PUBLISHERS)[0]["owners"] == ["owner"]
    services.catalog_update(catalog=published, actor=owner, description="Now described.")
    assert results(anonymous, CATALOGS)[0]["description"] == "Now described."
    # Owners are invited; "other" accepted an invitation before (the cache sees the removal).
    published.publisher.owners.add(other_user)
    services.publisher_update(
        publisher=published.publisher, actor=owner, display_name="Renamed", owners=["other"]
    )
    assert [(p["display_name"], p["owners"]) for p in results(anonymous, PUBLISHERS)] == [
        ("Renamed", ["other"])
    ]
    services.publisher_create(slug="newco", actor=other_user)
    assert [p["slug"] for p in results(anonymous, PUBLISHERS)] == ["example-co", "newco"]


def test_contribution_submit_review_and_resubmit(published, contributor, reviewer, owner):
    mine, queue = client_for(contributor), client_for(reviewer)
    assert results(mine, CONTRIBUTIONS) == results(queue, CONTRIBUTIONS) == []
    submitted = contributions.contribution_submit(
        catalog=published, content=DEFINITION, actor=contributor
    )
    assert [c["status"] for c in results(mine, CONTRIBUTIONS)] == ["pending"]
    assert [c["status"] for c in results(queue, CONTRIBUTIONS)] == ["pending"]
    contributions.contribution_request_changes(contribution=submitted, actor=reviewer, reason="No.")
    assert [c["status"] for c in results(mine, CONTRIBUTIONS)] == ["changes_requested"]
    contributions.contribution_resubmit(
        contribution=submitted, content=DEFINITION, actor=contributor
    )
    assert [c["revision"] for c in results(queue, CONTRIBUTIONS)] == [2]
    contributions.contribution_approve(contribution=submitted, actor=owner)
    assert [c["status"] for c in results(mine, CONTRIBUTIONS)] == ["approved"]
    assert [v["version"] for v in results(client_for(None), VERSIONS)] == [2, 1]


@pytest.fixture(autouse=True)
def _loopback_sources_allowed(settings):
    """Sources here name 127.0.0.1:9 (nothing listens); creation checks the network policy."""
    settings.MIRROR_ALLOWED_NETWORKS = ["127.0.0.1/32"]


def test_mirror_source_changes_and_runs(staff_user):
    operator = client_for(staff_user)
    assert results(operator, SOURCES) == []
    source = mirrors.mirror_source_create(
        name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )
    assert [s["name"] for s in results(operator, SOURCES)] == ["upstream"]
    mirrors.mirror_source_update(source=source, actor=None, enabled=False)
    assert results(operator, SOURCES)[0]["enabled"] is False
    runs = f"/api/v1/sources/{source.pk}/runs/"
    assert results(operator, runs) == []
    SyncRun.objects.create(source=source, status=SyncRun.Status.FAILED, reason="Down.")
    assert [r["reason"] for r in results(operator, runs)] == ["Down."]


def test_revocation(published, owner):
    anonymous = client_for(None)
    assert results(anonymous, REVOCATIONS) == []
    revocations.revocation_create(
        catalog=published,
        actor=owner,
        reason="compromised",
        group="example.co",
        kind="Fn",
        version="v1",
    )
    assert [(r["kind"], r["reason"]) for r in results(anonymous, REVOCATIONS)] == [
        ("Fn", "compromised")
    ]


def test_bulk_updates_raw_sql_and_deletes(published):
    anonymous = client_for(None)
    assert results(anonymous, CATALOGS)[0]["description"] == "A test catalog."
    Catalog.objects.filter(pk=published.pk).update(description="bulk")
    assert results(anonymous, CATALOGS)[0]["description"] == "bulk"
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Catalog._meta.db_table} SET description = %s", ["raw"])
    assert results(anonymous, CATALOGS)[0]["description"] == "raw"
    Publisher.objects.create(slug="gone", display_name="Gone")
    assert len(results(anonymous, PUBLISHERS)) == 2
    Publisher.objects.filter(slug="gone").delete()
    assert [p["slug"] for p in results(anonymous, PUBLISHERS)] == ["example-co"]


def test_only_writes_to_registry_tables_end_the_pages(published, owner):
    anonymous = client_for(None)
    results(anonymous, CATALOGS)
    generation = caches["default"].get(list_cache.GENERATION_KEY)
    api_token_key(owner)  # accounts_apitoken: no list shows it
    results(anonymous, CATALOGS)
    assert caches["default"].get(list_cache.GENERATION_KEY) == generation
    UserFactory(username="someone")  # auth_user: users and their roles decide visibility
    results(anonymous, CATALOGS)
    assert caches["default"].get(list_cache.GENERATION_KEY) != generation


def test_pull_count_flushes_keep_the_pages_until_they_expire(published, settings):
    """Under steady pulls a flush comes every few seconds: it must not end every list page."""
    from catalogs.publishing import pulls
    from catalogs.publishing.models import CatalogVersion, CatalogVersionPulls

    anonymous = client_for(None)
    first = results(anonymous, CATALOGS)
    generation = caches["default"].get(list_cache.GENERATION_KEY)
    version = CatalogVersion.objects.get(catalog=published)
    for _ in range(3):
        pulls.pull_record(
            via="https",
            publisher_slug="example-co",
            catalog_name="functions",
            digest=version.digest,
        )
    assert pulls.pulls_flush() == 3
    assert CatalogVersionPulls.objects.filter(version=version).count() == 1
    assert caches["default"].get(list_cache.GENERATION_KEY) == generation
    assert results(anonymous, CATALOGS) == first  # the page as cached, 0 pulls
    settings.API_LIST_CACHE_SECONDS = 0  # what expiry does: the page is rendered again
    list_cache.invalidate()
    assert [c["pulls"] for c in results(anonymous, CATALOGS)] == [3]


@pytest.mark.django_db(transaction=True)
def test_a_commit_in_another_thread_ends_this_threads_pages(owner):
    """What another process does reaches this one only through the shared generation: the
    writer's commit replaces it (this thread never saw the write)."""
    Publisher.objects.create(slug="first", display_name="First")
    anonymous = client_for(None)
    assert [p["slug"] for p in results(anonymous, PUBLISHERS)] == ["first"]
    cached = anonymous.get(PUBLISHERS).content
    assert anonymous.get(PUBLISHERS).content == cached

    def write() -> None:
        try:
            Publisher.objects.create(slug="second", display_name="Second")
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    assert not list_cache._state.written  # nothing written by this thread since the read
    assert [p["slug"] for p in results(anonymous, PUBLISHERS)] == ["first", "second"]


# --- Visibility: a cached page never reaches a caller who may see less -------------------------


def test_an_operators_cached_sources_never_reach_others(staff_user, other_user):
    mirrors.mirror_source_create(
        name="upstream", url="https://127.0.0.1:9/catalog.yaml", actor=None
    )
    operator = client_for(staff_user)
    assert [s["name"] for s in results(operator, SOURCES)] == ["upstream"]
    assert operator.get(SOURCES).status_code == 200  # now a hit
    anonymous = client_for(None).get(SOURCES)
    assert anonymous.status_code == 401
    assert b"upstream" not in anonymous.content
    denied = client_for(other_user).get(SOURCES)
    assert denied.status_code == 403
    assert b"upstream" not in denied.content


def test_a_users_cached_contributions_never_reach_another_user(pending, contributor):
    assert [c["kind"] for c in results(client_for(contributor), CONTRIBUTIONS)] == ["SetOwner"]
    stranger = UserFactory(username="stranger")
    assert results(client_for(stranger), CONTRIBUTIONS) == []
    assert client_for(None).get(CONTRIBUTIONS).status_code == 401


def test_becoming_a_reviewer_or_operator_changes_what_the_user_sees(pending, other_user):
    user = client_for(other_user)
    assert results(user, CONTRIBUTIONS) == []
    assert user.get(SOURCES).status_code == 403
    group, _ = Group.objects.get_or_create(name=contributions.REVIEWERS_GROUP)
    other_user.groups.add(group)
    fresh = User.objects.get(pk=other_user.pk)  # permissions are cached on the user object
    assert [c["kind"] for c in results(client_for(fresh), CONTRIBUTIONS)] == ["SetOwner"]
    fresh.groups.clear()
    fresh = User.objects.get(pk=other_user.pk)
    assert results(client_for(fresh), CONTRIBUTIONS) == []
    fresh.user_permissions.add(Permission.objects.get(codename="operate_mirrors"))
    fresh = User.objects.get(pk=other_user.pk)
    assert client_for(fresh).get(SOURCES).status_code == 200


def test_public_lists_are_the_same_for_everyone(published, staff_user, other_user):
    for url in (PUBLISHERS, CATALOGS, VERSIONS, FUNCTIONS, REVOCATIONS):
        anonymous = client_for(None).get(url).content
        assert client_for(staff_user).get(url).content == anonymous, url
        assert client_for(other_user).get(url).content == anonymous, url


# --- When the cache is on ------------------------------------------------------------------


def test_auto_is_on_only_with_a_cache_every_process_shares(settings):
    settings.API_LIST_CACHE = "auto"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    assert list_cache.enabled() is False  # locmem: one process's memory
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        }
    }
    assert list_cache.enabled() is True
    settings.API_LIST_CACHE = "off"
    assert list_cache.enabled() is False


def test_off_renders_every_time(settings, published):
    settings.API_LIST_CACHE = "off"
    anonymous = client_for(None)
    anonymous.get(CATALOGS)
    with CaptureQueriesContext(connection) as queries:
        anonymous.get(CATALOGS)
    assert len(queries) > 0


def test_a_cache_outage_is_a_miss(settings, published):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # nothing listens there
        }
    }
    response = client_for(None).get(CATALOGS)
    assert response.status_code == 200
    assert response.json()["results"][0]["name"] == "functions"


def test_a_source_url_change_shows(staff_user):
    source = mirrors.mirror_source_create(name="s", url="https://127.0.0.1:9/a.yaml", actor=None)
    operator = client_for(staff_user)
    assert results(operator, SOURCES)[0]["url"].endswith("/a.yaml")
    mirrors.mirror_source_update(source=source, actor=None, url="https://127.0.0.1:9/b.yaml")
    assert results(operator, SOURCES)[0]["url"].endswith("/b.yaml")
