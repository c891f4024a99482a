"""Every mirror badge says how the upstream was verified (issue 25 item 13): a mirror synced from
an OCI upstream signed with the source's cosign key (Debian's docker-registry) and one synced from
an unverified HTTPS upstream (trustme) are both "signed by this registry", but only the first is
green, and the catalog page, the function page and the search card say which is which."""

from __future__ import annotations

import re

import pytest

from catalogs.mirroring import services as mirrors
from tests.catalogs.mirroring.conftest import catalog_doc, public_pem

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_mirrors(oci_settings, oci_upstream, https_upstream, cosign_key, sync):
    digest = oci_upstream.push_catalog("badges/verified:v1", catalog_doc("v", kinds=("Vouched",)))
    oci_upstream.sign("badges/verified", digest, cosign_key)
    verified = mirrors.mirror_source_create(
        name="vouched",
        url=oci_upstream.url("badges/verified:v1"),
        cosign_public_key=public_pem(cosign_key),
        actor=None,
    )
    url = https_upstream.serve("/badges/catalog.yaml", catalog_doc("u", kinds=("Unvouched",)))
    unverified = mirrors.mirror_source_create(name="unvouched", url=url, actor=None)
    for source in (verified, unverified):
        run = sync(source)
        assert run.status == "succeeded", run.reason
    return verified, unverified


def _badges(html: str) -> list[str]:
    """Each badge's class and text, in page order."""
    return [
        f"{cls}: {text}"
        for cls, text in re.findall(r'<span class="(badge[^"]*)"[^>]*>([^<]*)</span>', html)
    ]


def test_catalog_page_says_how_the_upstream_was_verified(client, two_mirrors):
    verified = client.get("/catalogs/mirrors/vouched/").content.decode()
    assert "badge ok mirror-upstream: mirror · upstream verified by cosign key" in _badges(verified)
    assert any(
        b.startswith("badge ok: signed by this registry (key id") for b in _badges(verified)
    ), _badges(verified)

    unverified = client.get("/catalogs/mirrors/unvouched/").content.decode()
    badges = _badges(unverified)
    assert "badge warn mirror-upstream: mirror · upstream not verified" in badges
    # Signed by this registry, but not in green: nothing upstream vouched for the content.
    assert any(b.startswith("badge: signed by this registry (key id") for b in badges), badges
    assert not any(b.startswith("badge ok: signed") for b in badges), badges


def test_function_page_says_how_the_upstream_was_verified(client, two_mirrors, catalog, owner):
    from catalogs.publishing.services import catalog_version_publish
    from tests.catalogs.factories import catalog_yaml

    page = client.get("/catalogs/mirrors/vouched/functions/example.co/Vouched/")
    assert page.status_code == 200
    badges = _badges(page.content.decode())
    assert "badge ok: ✓ signed by this registry" in badges
    assert "badge ok mirror-upstream: mirror · upstream verified by cosign key" in badges

    page = client.get("/catalogs/mirrors/unvouched/functions/example.co/Unvouched/")
    badges = _badges(page.content.decode())
    assert "badge: ✓ signed by this registry" in badges
    assert "badge warn mirror-upstream: mirror · upstream not verified" in badges

    # A first-party catalog: signed in green, no mirror badge.
    catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Own", "v1")), actor=owner
    )
    page = client.get("/catalogs/example-co/functions/functions/example.co/Own/")
    badges = _badges(page.content.decode())
    assert "badge ok: ✓ signed by this registry" in badges
    assert not any("mirror" in b for b in badges), badges


def test_search_cards_say_how_each_mirror_upstream_was_verified(client, two_mirrors):
    body = client.get("/?q=vouched").content.decode()
    cards = body.split('class="carriers"')[1:]
    assert len(cards) == 2, body[-4000:]
    by_kind = {}
    for kind in ("Unvouched", "Vouched"):
        [card] = [c for c in cards if f"/functions/example.co/{kind}/" in c.split("</ul>")[0]]
        by_kind[kind] = _badges(card.split("</ul>")[0])
    assert by_kind["Vouched"] == [
        "badge ok: signed",
        "badge ok mirror-upstream: mirror · upstream verified by cosign key",
    ]
    assert by_kind["Unvouched"] == [
        "badge: signed",
        "badge warn mirror-upstream: mirror · upstream not verified",
    ]


def test_search_and_function_apis_say_how_the_upstream_was_verified(
    client, two_mirrors, catalog, owner
):
    from catalogs.publishing.services import catalog_version_publish
    from tests.catalogs.factories import catalog_yaml

    catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Own", "v1")), actor=owner
    )
    verified, unverified = two_mirrors
    expected = {
        "Vouched": {"upstream": verified.url, "verified_by": "cosign"},
        "Unvouched": {"upstream": unverified.url, "verified_by": None},
        "Own": None,  # a first-party catalog is no mirror
    }
    response = client.get("/api/v1/search/")
    assert response.status_code == 200
    found = {r["kind"]: [c["mirror"] for c in r["catalogs"]] for r in response.json()["results"]}
    assert found == {kind: [mirror] for kind, mirror in expected.items()}

    response = client.get("/api/v1/functions/")
    assert response.status_code == 200
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    assert {r["kind"]: r["mirror"] for r in rows} == expected
    one = next(r for r in rows if r["kind"] == "Vouched")
    assert client.get(f"/api/v1/functions/{one['id']}/").json()["mirror"] == expected["Vouched"]
