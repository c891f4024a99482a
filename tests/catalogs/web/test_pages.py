"""Browse and search, catalog and function pages: content, filters, escaping."""

from __future__ import annotations

import pytest

from catalogs.publishing import services
from tests.catalogs.factories import CatalogFactory, PublisherFactory, catalog_yaml

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('x')</script>"


def _publish(catalog, text):
    version, _ = services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    catalog.refresh_from_db()
    return version


@pytest.fixture
def many(db):
    """Two publishers (one verified), three catalogs, functions of each runtime and need."""
    acme = PublisherFactory(slug="acme", verified=True)
    other = PublisherFactory(slug="zeta")
    net = catalog_yaml(("acme.io", "Fetcher", "v1")).replace(
        "image: registry.example.co/fetcher:v1",
        "image: registry.example.co/fetcher:v1\n          requireNetwork: true",
    )
    _publish(CatalogFactory(publisher=acme, name="net"), net)
    _publish(
        CatalogFactory(publisher=acme, name="bins"),
        catalog_yaml(("acme.io", "Binary", "v1"), runtime="exec").replace(
            "tags: [mutator, test]", "tags: [generator]"
        ),
    )
    storage = catalog_yaml(("zeta.io", "Plain", "v1")).replace(
        "image: registry.example.co/plain:v1",
        "image: registry.example.co/plain:v1\n          requireStorageMount: true",
    )
    _publish(CatalogFactory(publisher=other, name="misc"), storage)


def _kinds(response) -> list[str]:
    return [v.kind for v in response.context["page"]]


@pytest.mark.parametrize(
    ("query", "kinds"),
    [
        ("", ["Binary", "Fetcher", "Plain"]),
        ("?q=fetcher", ["Fetcher"]),
        ("?q=the+function", ["Binary", "Fetcher", "Plain"]),
        ("?q=zeta.io", ["Plain"]),
        ("?q=GENERATOR", ["Binary"]),
        ("?tag=generator", ["Binary"]),
        ("?runtime=exec", ["Binary"]),
        ("?publisher=zeta", ["Plain"]),
        ("?verified=on", ["Binary", "Fetcher"]),
        ("?network=on", ["Fetcher"]),
        ("?storage=on", ["Plain"]),
        ("?network=on&storage=on", []),
        ("?q=nothing-like-this", []),
    ],
)
def test_search_filters(client, many, query, kinds):
    response = client.get("/" + query)
    assert response.status_code == 200
    assert _kinds(response) == kinds


def test_search_pages_through_results(client, db, settings):
    catalog = CatalogFactory(publisher=PublisherFactory(slug="big"), name="big")
    _publish(catalog, catalog_yaml(*[("big.io", f"K{i:02d}", "v1") for i in range(25)]))
    first = client.get("/?q=big.io")
    assert len(first.context["page"]) == 20 and first.context["page"].paginator.count == 25
    assert b"page=2" in first.content
    second = client.get("/?q=big.io&page=2")
    assert _kinds(second) == [f"K{i:02d}" for i in range(20, 25)]


def test_search_lists_catalogs_on_the_front_page(client, many, other_user):
    client.force_login(other_user)  # a visitor gets the landing section's list instead
    body = client.get("/").content.decode()
    cards = body.split('<h2 id="catalogs">Catalogs</h2>', 1)[1]
    assert "acme/net" in cards and "acme/bins" in cards and "zeta/misc" in cards
    # Only acme is verified: its two catalogs carry the badge, zeta's does not.
    assert cards.count('<span class="badge ok">verified</span>') == 2
    zeta = cards.split("zeta/misc", 1)[1].split("</li>", 1)[0]
    assert "verified" not in zeta


def test_catalog_page_shows_versions_digests_and_the_trusted_catalog_line(client, published):
    v2 = _publish(published, catalog_yaml(("example.co", "Fn", "v1"), ("example.co", "G", "v2")))
    response = client.get("/catalogs/example-co/functions/")
    body = response.content.decode()
    line = "krm build . --trusted-catalog=http://testserver/c/example-co/functions/catalog.yaml"
    assert response.context["build_line"] == line
    assert f'<code id="build-line">{line}</code>' in body
    assert v2.digest in body and body.count("sha256:") >= 2
    assert "/c/example-co/functions/versions/1/catalog.yaml" in body
    assert f"/c/example-co/functions/sha256/{v2.digest[7:]}/catalog.yaml" in body
    # The trust view lists each function version with what it needs.
    rows = response.context["trust"]["functions"]
    assert [(r["apiVersion"], r["kind"], r["runtimes"]) for r in rows] == [
        ("example.co/v1", "Fn", ["container"]),
        ("example.co/v2", "G", ["container"]),
    ]
    assert "unverified publisher" in body


def test_catalog_page_marks_a_verified_publisher(client, published):
    published.publisher.verified = True
    published.publisher.save()
    assert "verified publisher" in client.get("/catalogs/example-co/functions/").content.decode()
    assert "unverified" not in client.get("/catalogs/example-co/functions/").content.decode()


def test_an_empty_catalog_says_so(client, catalog):
    body = client.get("/catalogs/example-co/functions/").content.decode()
    assert "No version published yet." in body and "--trusted-catalog" not in body


def test_function_page_shows_runtimes_badges_and_schema_fields(client, catalog):
    text = (
        catalog_yaml(("example.co", "Tool", "v1"), runtime="exec")
        .replace(
            "          type: object\n",
            "          type: object\n"
            "          required: [name]\n"
            "          properties:\n"
            "            name: {type: string, description: Resource name.}\n"
            "            ports:\n"
            "              type: array\n"
            "              items:\n"
            "                type: object\n"
            "                properties:\n"
            "                  port: {type: integer, enum: [80, 443]}\n",
        )
        .replace(
            "license: Apache 2.0", "license: Apache 2.0\n      maintainers: [ana@example.co, bo]"
        )
    )
    _publish(catalog, text)
    response = client.get("/catalogs/example-co/functions/functions/example.co/Tool/")
    assert response.status_code == 200
    body = response.content.decode()
    [item] = response.context["versions"]
    assert [(r["path"], r["type"], r["required"]) for r in item["schema_rows"]] == [
        ("name", "string", True),
        ("ports", "array of object", False),
        ("ports[].port", "integer", False),
    ]
    assert "linux/amd64" in body and "ab" * 32 in body
    assert "runs a binary" in body and "Apache 2.0" in body
    assert 'href="https://example.co/tool/README.md"' in body
    assert 'href="https://example.co/tool/example.md"' in body
    assert "<dt>Maintainers</dt><dd>ana@example.co, bo</dd>" in body
    # Once: the only version's maintainers are the function's.
    assert body.count("Maintainers") == 1


def test_function_page_lists_a_versions_own_maintainers_apart(client, catalog):
    version = (
        "    - name: {name}\n      maintainers: [{who}]\n      runtime:\n        container:\n"
        "          image: registry.example.co/tool:{name}\n"
    )
    text = (
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: m\n"
        "spec:\n  krmFunctions:\n  - group: example.co\n    names:\n      kind: Tool\n"
        "    versions:\n"
        + version.format(name="v1", who="ana")
        + version.format(name="v2", who="bo")
    )
    _publish(catalog, text)
    body = client.get("/catalogs/example-co/functions/functions/example.co/Tool/").content.decode()
    assert "<dt>Maintainers</dt><dd>–</dd>" in body
    assert "<dt>Maintainers of v1</dt><dd>ana</dd>" in body
    assert "<dt>Maintainers of v2</dt><dd>bo</dd>" in body
    assert body.count("<dt>Maintainers") == 3


def test_function_page_shows_container_image_digest_and_needs(client, catalog):
    digest = "c" * 64
    text = catalog_yaml(("example.co", "Net", "v1")).replace(
        "image: registry.example.co/net:v1",
        f"image: registry.example.co/net:v1\n          sha256: {digest}\n"
        "          requireNetwork: true\n          requireStorageMount: true",
    )
    _publish(catalog, text)
    body = client.get("/catalogs/example-co/functions/functions/example.co/Net/").content.decode()
    assert "registry.example.co/net:v1" in body and f"sha256:{digest}" in body
    assert "needs network" in body and "needs storage mount" in body


@pytest.mark.parametrize(
    "url",
    [
        "/catalogs/nobody/functions/",
        "/catalogs/example-co/functions/functions/example.co/Missing/",
    ],
)
def test_unknown_catalog_or_function_is_404(client, published, url):
    assert client.get(url).status_code == 404


def test_catalog_text_is_escaped_everywhere(as_user, catalog, contributor, reviewer):
    from catalogs.review import services as contributions

    catalog.description = HOSTILE
    catalog.save()
    text = (
        catalog_yaml(("example.co", "Evil", "v1"))
        .replace("description: The Evil function.", f'description: "{HOSTILE}"')
        .replace("https://example.co/evil/README.md", "javascript:alert(1)")
        .replace("tags: [mutator, test]", "tags: ['<b>bold</b>']")
    )
    _publish(catalog, text)
    definition = (
        "group: example.co\nnames: {kind: Evil}\n"
        f'description: "{HOSTILE}"\nversions:\n- name: v2\n  runtime:\n'
        "    container: {image: 'x/<img/src=x/onerror=alert(1)>'}\n"
    )
    pending = contributions.contribution_submit(
        catalog=catalog, content=definition, actor=contributor
    )
    contributions.contribution_reject(contribution=pending, actor=reviewer, reason=HOSTILE)
    pages = {
        None: [
            "/",
            "/?q=evil",
            "/catalogs/example-co/functions/",
            "/catalogs/example-co/functions/functions/example.co/Evil/",
        ],
        reviewer: [f"/review/{pending.pk}/", "/review/?status=", "/review/log/"],
        contributor: ["/contributions/", f"/contributions/{pending.pk}/edit/"],
    }
    for user, urls in pages.items():
        client = as_user(user)
        for url in urls:
            body = client.get(url).content.decode()
            assert "<script>alert" not in body, url
            assert "<b>bold</b>" not in body and "<img/src" not in body, url
            assert 'href="javascript:' not in body, url
    body = as_user(None).get("/catalogs/example-co/functions/functions/example.co/Evil/")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_trust_view_is_what_krm_view_catalog_shows(client, live_server, tmp_path, publisher):
    """The engine fetches the served catalog over real HTTP and must describe it the same way."""
    from orchestrator.functions import view
    from orchestrator.functions.options import FnOptions

    catalog = CatalogFactory(publisher=publisher, name="trust")
    text = catalog_yaml(("example.co", "Bin", "v1"), runtime="exec") + catalog_yaml(
        ("example.co", "Net", "v2")
    ).split("  krmFunctions:\n", 1)[1].replace(
        "image: registry.example.co/net:v2",
        "image: registry.example.co/net:v2\n          sha256: "
        + "e" * 64
        + "\n          requireNetwork: true",
    )
    _publish(catalog, text)
    page = client.get("/catalogs/example-co/trust/")
    shown = page.context["trust"]
    url = f"{live_server.url}/c/example-co/trust/catalog.yaml"
    fetched = view.summary(view.load(url, options=FnOptions(cache_dir=str(tmp_path))))
    assert shown["digest"] == fetched["digest"] == catalog.latest_version.digest
    assert shown["name"] == fetched["name"] and shown["publisher"] == fetched["publisher"]
    strip = [{k: v for k, v in f.items() if k != "group"} for f in shown["functions"]]
    assert strip == fetched["functions"]
    assert [f["needs"] for f in fetched["functions"]] == [["exec binary"], ["network"]]


def _has_layout(body: str) -> None:
    """The site's layout: stylesheet, favicon, navigation and a search box."""
    assert 'href="/static/catalogs/site.css"' in body
    assert 'rel="icon" href="/static/catalogs/favicon.svg" type="image/svg+xml"' in body
    assert '<a class="brand" href="/">KRM Catalog Registry</a>' in body
    assert '<form class="search" method="get" action="/" role="search">' in body


def test_a_missing_page_is_the_styled_404(client, db):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    _has_layout(body)
    assert "Page not found" in body and "There is nothing at this address." in body


def test_a_missing_catalog_404_says_which(client, db):
    response = client.get("/catalogs/nobody/nothing/")
    assert response.status_code == 404
    body = response.content.decode()
    _has_layout(body)
    assert "Catalog &#x27;nobody/nothing&#x27; does not exist." in body


def test_a_forbidden_page_is_styled_with_the_reason(as_user, other_user, published):
    response = as_user(other_user).get("/catalogs/example-co/functions/publish/")
    assert response.status_code == 403
    body = response.content.decode()
    _has_layout(body)
    assert "Only owners of publisher &#x27;example-co&#x27; may publish here." in body
    # The navigation knows who is signed in, as on every other page.
    assert "Sign out (other)" in body


def test_the_500_page_is_styled_and_needs_no_database(rf):
    from django.views.defaults import server_error

    body = server_error(rf.get("/")).content.decode()
    _has_layout(body)
    assert "Something went wrong on our side" in body


def test_sign_in_and_sign_up_pages_are_styled(client, settings, db):
    settings.SIGNUP_ENABLED = True
    login = client.get("/accounts/login/").content.decode()
    assert '<section class="auth-card">' in login and 'type="password"' in login
    assert '<a href="/accounts/signup/">Create an account</a>' in login
    signup = client.get("/accounts/signup/").content.decode()
    assert '<section class="auth-card">' in signup and "Create account</button>" in signup
    settings.SIGNUP_ENABLED = False
    assert "An administrator creates them." in client.get("/accounts/login/").content.decode()


def test_the_favicon_is_a_small_local_svg():
    from pathlib import Path

    import catalogs

    svg = Path(catalogs.__file__).parent / "static" / "catalogs" / "favicon.svg"
    text = svg.read_text()
    assert text.startswith("<svg") and len(text) < 2000 and "http://www.w3.org/2000/svg" in text
    assert "href=" not in text  # nothing fetched from elsewhere
