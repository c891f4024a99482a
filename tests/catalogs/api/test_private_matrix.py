"""The authorization matrix of private objects: every role × every endpoint and page.

Two private objects: catalog ``acme/secret`` (a private catalog of a public publisher) and
publisher ``hidden`` (private, so its catalog ``hidden/stuff`` is private too). Outsiders
(anonymous, signed in without owning them, and the owner of another publisher) get 404, the same
answer as for a name that does not exist; the owners and staff get 200. Members send their API
token the way each client does: session for pages and the API, ``Bearer``/``Token``/Basic for
``/c/`` and TUF, Basic for ``/v2/``. Lists, search counts and facets never show a private object
to an outsider.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from catalogs.accounts.services import api_token_create
from catalogs.publishing import services
from catalogs.publishing.models import Catalog, Publisher
from catalogs.trust.models import RevocationList
from tests.catalogs.factories import CatalogFactory, PublisherFactory, UserFactory, catalog_yaml

pytestmark = pytest.mark.django_db

# "reviewer" holds the review permission: a reviewer of every public catalog, an outsider here.
ROLES = ["anonymous", "signed-in", "other-owner", "reviewer", "owner", "staff"]
SEES = {"owner", "staff"}


@pytest.fixture
def world(db, jobs_in_this_process):
    owner = UserFactory(username="owner")
    users = {
        "signed-in": UserFactory(username="signed-in"),
        "other-owner": UserFactory(username="other-owner"),
        "reviewer": UserFactory(username="reviewer"),
        "owner": owner,
        "staff": UserFactory(username="staff", is_staff=True),
    }
    PublisherFactory(slug="elsewhere", owners=[users["other-owner"]])
    acme = PublisherFactory(slug="acme", owners=[owner])
    hidden = PublisherFactory(slug="hidden", owners=[owner])
    published = {}
    for publisher, name, group in (
        (acme, "open", "open.example"),
        (acme, "secret", "secret.example"),
        (hidden, "stuff", "stuff.example"),
    ):
        catalog = CatalogFactory(publisher=publisher, name=name)
        version, _ = services.catalog_version_publish(
            catalog=catalog, content=catalog_yaml((group, "Tool", "v1")), actor=None
        )
        published[name] = version
    services.catalog_update(
        catalog=Catalog.objects.get(name="secret"), actor=owner, visibility="private"
    )
    services.publisher_update(publisher=hidden, actor=owner, visibility="private")
    users["reviewer"].user_permissions.add(Permission.objects.get(codename="review_contribution"))
    tokens = {role: api_token_create(user=user, name=role)[1] for role, user in users.items()}
    sequence = RevocationList.objects.get(catalog__name="secret").sequence
    return {"users": users, "tokens": tokens, "versions": published, "sequence": sequence}


def _hex(world, name: str) -> str:
    return world["versions"][name].digest.removeprefix("sha256:")


# (kind, path): kind says how a member authenticates (session, token, oci).
def _requests(world) -> dict[str, tuple[str, str]]:
    secret, stuff = _hex(world, "secret"), _hex(world, "stuff")
    blob = world["versions"]["secret"].digest
    schema = "versions/1/functions/secret.example/Tool/v1/schema.json"
    return {
        # API
        "api-publisher": ("session", "/api/v1/publishers/hidden/"),
        "api-publisher-keys": ("session", "/api/v1/publishers/hidden/keys/"),
        "api-catalog": ("session", "/api/v1/catalogs/acme/secret/"),
        "api-catalog-of-private-publisher": ("session", "/api/v1/catalogs/hidden/stuff/"),
        "api-versions": ("session", "/api/v1/catalogs/acme/secret/versions/"),
        "api-version": ("session", "/api/v1/catalogs/acme/secret/versions/1/"),
        "api-revocations": ("session", "/api/v1/catalogs/hidden/stuff/revocations/"),
        "api-catalog-bearer": ("bearer", "/api/v1/catalogs/acme/secret/"),
        "api-tuf-role-template": ("session", "/api/v1/publishers/hidden/tuf/hidden.json"),
        # Pages
        "page-catalog": ("session", "/catalogs/acme/secret/"),
        "page-catalog-revocations": ("session", "/catalogs/acme/secret/revocations/"),
        "page-function": ("session", "/catalogs/acme/secret/functions/secret.example/Tool/"),
        "page-publisher": ("session", "/publishers/hidden/"),
        "page-private-publisher-catalog": ("session", "/catalogs/hidden/stuff/"),
        # /c/: every spelling, signatures, revocation lists, schemas
        "c-latest": ("bearer", "/c/acme/secret/catalog.yaml"),
        "c-latest-sig": ("token", "/c/acme/secret/catalog.yaml.sig"),
        "c-version": ("basic", "/c/acme/secret/versions/1/catalog.yaml"),
        "c-version-sig": ("bearer", "/c/acme/secret/versions/1/catalog.yaml.sig"),
        "c-digest": ("bearer", f"/c/acme/secret/sha256/{secret}/catalog.yaml"),
        "c-digest-upper": ("bearer", f"/c/acme/secret/sha256/{secret.upper()}/catalog.yaml"),
        "c-digest-sig": ("bearer", f"/c/acme/secret/sha256/{secret}/catalog.yaml.sig"),
        "c-private-publisher": ("bearer", f"/c/hidden/stuff/sha256/{stuff}/catalog.yaml"),
        "c-revocations": ("bearer", "/c/hidden/stuff/revocations.yaml"),
        "c-revocations-sig": ("bearer", "/c/hidden/stuff/revocations.yaml.sig"),
        "c-revocations-seq": (
            "bearer",
            f"/c/acme/secret/revocations/{world['sequence']}/revocations.yaml",
        ),
        "c-schema": ("bearer", f"/c/acme/secret/{schema}"),
        "c-session": ("session", "/c/acme/secret/catalog.yaml"),
        # TUF: the private publisher's role
        "tuf-role": ("bearer", "/tuf/1.hidden.json"),
        # OCI
        "oci-manifest": ("oci", "/v2/acme/secret/manifests/latest"),
        "oci-manifest-private-publisher": ("oci", "/v2/hidden/stuff/manifests/latest"),
        "oci-tags": ("oci", "/v2/acme/secret/tags/list"),
        "oci-blob": ("oci", f"/v2/acme/secret/blobs/{blob}"),
        "oci-referrers": ("oci", f"/v2/acme/secret/referrers/{blob}"),
    }


def _client(world, role: str, kind: str) -> tuple[Client, dict[str, str]]:
    client = Client()
    if role == "anonymous":
        return client, {}
    user, token = world["users"][role], world["tokens"][role]
    if kind == "session":
        client.force_login(user)
        return client, {}
    basic = base64.b64encode(f"{user.username}:{token}".encode()).decode()
    header = {
        "bearer": f"Bearer {token}",
        "token": f"Token {token}",
        "basic": f"Basic {basic}",
        "oci": f"Basic {basic}",
    }[kind]
    return client, {"HTTP_AUTHORIZATION": header}


def test_every_private_request_is_covered(world):
    assert len(_requests(world)) == 33


@pytest.mark.parametrize("role", ROLES)
def test_private_objects_are_404_to_outsiders_and_200_to_members(world, role):
    results = {}
    for name, (kind, path) in _requests(world).items():
        client, headers = _client(world, role, kind)
        response = client.get(path, **headers)
        results[name] = response.status_code
        if response.status_code == 200 and role not in SEES:
            pytest.fail(f"{role} saw {name}: {response.content[:200]!r}")
        if name.startswith("c-") and response.status_code == 200:
            assert response["Cache-Control"].startswith("private"), name
    expected = 200 if role in SEES else 404
    assert results == dict.fromkeys(results, expected), role


@pytest.mark.parametrize("role", ROLES)
def test_an_outsiders_404_is_the_answer_for_a_missing_name(world, role):
    """A private name is not confirmed: same status and body as one that never existed."""
    if role in SEES:
        return
    pairs = [
        ("/api/v1/catalogs/acme/secret/", "/api/v1/catalogs/acme/nothing/"),
        ("/c/acme/secret/catalog.yaml", "/c/acme/nothing/catalog.yaml"),
        ("/v2/acme/secret/manifests/latest", "/v2/acme/nothing/manifests/latest"),
    ]
    for private, missing in pairs:
        kind = "oci" if private.startswith("/v2/") else "session"
        client, headers = _client(world, role, kind)
        a = client.get(private, HTTP_ACCEPT="application/json", **headers)
        b = client.get(missing, HTTP_ACCEPT="application/json", **headers)
        assert a.status_code == b.status_code == 404
        if not private.startswith("/c/"):  # /c/'s 404 is the site's page (with a CSRF token)
            assert a.content.replace(b"secret", b"nothing") == b.content
        assert b"secret" not in a.content.replace(b"/secret", b"")
        assert b"private" not in a.content


@pytest.mark.parametrize("role", ROLES)
def test_lists_counts_and_facets_never_show_private_objects(world, role):
    client, _ = _client(world, role, "session")
    sees = role in SEES
    publishers = [p["slug"] for p in client.get("/api/v1/publishers/").json()["results"]]
    assert ("hidden" in publishers) is sees
    catalogs = [
        f"{c['publisher']}/{c['name']}" for c in client.get("/api/v1/catalogs/").json()["results"]
    ]
    want = {"acme/open", "acme/secret", "hidden/stuff"} if sees else {"acme/open"}
    assert set(catalogs) == want
    functions = client.get("/api/v1/functions/").json()
    assert functions["count"] == len(want)
    search = client.get("/api/v1/search/").json()
    assert (search["count"], search["catalogs"]) == (len(want), len(want))
    facets = {
        (value["param"], value["value"]): value["count"]
        for facet in search["facets"]
        for value in facet["values"]
    }
    assert (("publisher", "hidden") in facets) is sees
    assert facets[("publisher", "acme")] == (2 if sees else 1)
    by_group = client.get("/api/v1/search/?group=secret.example").json()
    assert by_group["count"] == (1 if sees else 0)
    acme_page = client.get("/publishers/acme/").content.decode()
    assert ("/catalogs/acme/open/" in acme_page, "/catalogs/acme/secret/" in acme_page) == (
        True,
        sees,
    )
    page = client.get("/?q=tool").content.decode()
    assert ("secret.example" in page) is sees
    assert ("hidden/stuff" in page or "stuff.example" in page) is sees


def test_landing_page_features_no_private_catalog(world):
    page = Client().get("/").content.decode()
    assert "acme/open" in page or "open" in page
    assert "secret" not in page and "stuff" not in page


@pytest.mark.parametrize("role", ["signed-in", "other-owner"])
def test_outsiders_cannot_change_visibility_or_learn_of_it(world, role):
    client, _ = _client(world, role, "session")
    before = list(Catalog.objects.values_list("name", "visibility"))
    for path in ("/api/v1/catalogs/acme/secret/", "/api/v1/publishers/hidden/"):
        response = client.patch(path, {"visibility": "public"}, content_type="application/json")
        assert response.status_code == 404
    public = client.patch(
        "/api/v1/catalogs/acme/open/", {"visibility": "private"}, content_type="application/json"
    )
    assert public.status_code == 403
    assert list(Catalog.objects.values_list("name", "visibility")) == before


def test_owner_toggles_visibility_and_serving_follows_at_once(world):
    owner, anonymous = Client(), Client()
    owner.force_login(world["users"]["owner"])
    pinned = f"/c/acme/open/sha256/{_hex(world, 'open')}/catalog.yaml"
    assert anonymous.get(pinned).status_code == 200  # warm in this process's caches now
    assert (
        anonymous.get(f"/v2/acme/open/blobs/{world['versions']['open'].digest}").status_code == 200
    )
    response = owner.patch(
        "/api/v1/catalogs/acme/open/", {"visibility": "private"}, content_type="application/json"
    )
    assert response.status_code == 200
    assert (response.json()["visibility"], response.json()["private"]) == ("private", True)
    assert anonymous.get(pinned).status_code == 404
    assert anonymous.get("/c/acme/open/catalog.yaml").status_code == 404
    blob = f"/v2/acme/open/blobs/{world['versions']['open'].digest}"
    assert anonymous.get(blob).status_code == 404
    assert owner.get(pinned).status_code == 200
    back = owner.patch(
        "/api/v1/publishers/hidden/", {"visibility": "public"}, content_type="application/json"
    )
    assert back.json()["visibility"] == "public"
    assert anonymous.get("/c/hidden/stuff/catalog.yaml").status_code == 200


def test_bad_visibility_is_one_clear_error_and_changes_nothing(world):
    owner = Client()
    owner.force_login(world["users"]["owner"])
    response = owner.patch(
        "/api/v1/catalogs/acme/open/", {"visibility": "secret"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {"visibility": ['"secret" is not a valid choice.']}
    assert Catalog.objects.get(name="open").visibility == "public"
    assert Publisher.objects.get(slug="hidden").visibility == "private"


def test_bad_credentials_are_401_whatever_the_name(world):
    for path in ("/c/acme/open/catalog.yaml", "/c/acme/secret/catalog.yaml", "/c/x/y/catalog.yaml"):
        response = Client().get(path, HTTP_AUTHORIZATION="Bearer not-a-token")
        assert response.status_code == 401, path
        assert response.content == b"Invalid token.\n"


def test_oci_token_flow_grants_pull_to_members_only(world):
    scope = "repository:acme/secret:pull"
    for role, granted in (("signed-in", False), ("owner", True)):
        user, key = world["users"][role], world["tokens"][role]
        basic = base64.b64encode(f"{user.username}:{key}".encode()).decode()
        client = Client()
        token = client.get(f"/v2/token?scope={scope}", HTTP_AUTHORIZATION=f"Basic {basic}").json()[
            "token"
        ]
        response = client.get(
            "/v2/acme/secret/manifests/latest", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == (200 if granted else 404), role
        if granted:
            body = response.content
            assert response["Docker-Content-Digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
    anonymous = Client().get(f"/v2/token?scope={scope}").json()["token"]
    denied = Client().get(
        "/v2/acme/secret/manifests/latest", HTTP_AUTHORIZATION=f"Bearer {anonymous}"
    )
    assert denied.status_code == 404


def test_members_see_the_private_badge_on_pages(world):
    owner = Client()
    owner.force_login(world["users"]["owner"])
    assert ">private</span>" in owner.get("/catalogs/acme/secret/").content.decode()
    assert ">private</span>" in owner.get("/catalogs/hidden/stuff/").content.decode()
    assert ">private</span>" in owner.get("/publishers/hidden/").content.decode()
    assert ">private</span>" not in owner.get("/catalogs/acme/open/").content.decode()
    assert ">private</span>" not in owner.get("/publishers/acme/").content.decode()


@pytest.mark.parametrize("role", ROLES)
def test_collisions_name_no_private_catalog_to_outsiders(world, role):
    """A public function whose GVK a private catalog defines too: the collision is the
    members' to see; to outsiders the private catalog does not exist."""
    services.catalog_version_publish(
        catalog=Catalog.objects.get(name="secret"),
        content=catalog_yaml(("secret.example", "Tool", "v1"), ("open.example", "Tool", "v1")),
        actor=None,
    )
    client, _ = _client(world, role, "session")
    open_fn = client.get("/api/v1/functions/?group=open.example").json()["results"]
    public = next(f for f in open_fn if f["catalog"] == "acme/open")
    found = client.get(f"/api/v1/functions/{public['id']}/collisions/").json()
    names = {c["catalog"] for c in found}
    assert ("acme/secret" in names) is (role in SEES)
    page = client.get("/catalogs/acme/open/functions/open.example/Tool/").content.decode()
    assert ("acme/secret" in page) is (role in SEES)


# A contribution to the private catalog, by its owner: what each role gets from its API record,
# its conversation and its review page (anonymous: 401 from the API, sent to sign in by pages).
CONTRIBUTION_EXPECTED = {
    "anonymous": (401, 401, 302),
    "signed-in": (404, 404, 403),
    "other-owner": (404, 404, 404),
    "reviewer": (404, 404, 404),
    "owner": (200, 200, 200),
    "staff": (200, 200, 200),
}


@pytest.mark.parametrize("role", ROLES)
def test_contributions_to_a_private_catalog_are_hidden_from_outsiders_and_reviewers(world, role):
    from catalogs.review import services as contributions
    from tests.catalogs.review.contribution_fixtures import DEFINITION

    owner = world["users"]["owner"]
    c = contributions.contribution_submit(
        catalog=Catalog.objects.get(name="secret"), content=DEFINITION, actor=owner
    )
    contributions.contribution_comment_add(contribution=c, author=owner, body="secret plans")
    client, _ = _client(world, role, "session")
    paths = (f"/api/v1/contributions/{c.pk}/", f"/api/v1/contributions/{c.pk}/comments/")
    got = tuple(client.get(path).status_code for path in paths)
    page = client.get(f"/review/{c.pk}/")
    assert (*got, page.status_code) == CONTRIBUTION_EXPECTED[role]
    if role not in SEES:
        assert b"secret plans" not in page.content
    if role != "anonymous":
        queue = client.get("/api/v1/contributions/").json()
        assert queue["count"] == (1 if role in SEES else 0)
        review = client.get("/review/")
        if review.status_code == 200:
            assert (b"SetOwner" in review.content) is (role in SEES)
