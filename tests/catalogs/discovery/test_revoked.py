"""A revoked function is shown as revoked everywhere: the function page, the catalog page, the
search card and facet, and the search API (a field and a filter)."""

from __future__ import annotations

import pytest

from catalogs.publishing import services
from catalogs.trust.revocations import revocation_create

pytestmark = pytest.mark.django_db

CATALOG = """\
apiVersion: config.kubernetes.io/v1alpha1
kind: Catalog
metadata:
  name: revoked-demo
spec:
  krmFunctions:
  - group: example.co
    names:
      kind: SetTier
    description: Sets a tier label.
    versions:
    - name: v2
      runtime:
        container:
          image: registry.example.co/set-tier:v2
    - name: v1
      runtime:
        container:
          image: registry.example.co/set-tier:v1
  - group: example.co
    names:
      kind: Packer
    description: Packs things.
    versions:
    - name: v1
      runtime:
        exec:
          platforms:
          - {bin: packer, os: linux, arch: amd64, uri: "https://example.co/p.tar.gz",
             sha256: "%s"}
  - group: example.co
    names:
      kind: Untouched
    description: Nothing revoked here.
    versions:
    - name: v1
      runtime:
        container:
          image: registry.example.co/untouched:v1
"""
DIGEST = "ab" * 32
FN_PAGE = "/catalogs/example-co/functions/functions/example.co/{kind}/"


@pytest.fixture
def revoked(catalog, owner):
    services.catalog_version_publish(catalog=catalog, content=CATALOG % DIGEST, actor=None)
    catalog.refresh_from_db()
    revocation_create(
        catalog=catalog,
        actor=owner,
        reason="compromised",
        group="example.co",
        kind="SetTier",
        version="v2",
        detail="its image was replaced upstream",
        replacement="example.co/v1 SetTier",
    )
    revocation_create(
        catalog=catalog, actor=owner, reason="broken", runtime_digest="sha256:" + DIGEST
    )
    return catalog


def test_the_function_page_shows_a_banner_and_builds_an_unrevoked_version(client, revoked):
    body = client.get(FN_PAGE.format(kind="SetTier")).content.decode()
    assert 'class="revoked-banner"' in body
    assert "<strong>v2</strong>: compromised — its image was replaced upstream" in body
    assert "Use <strong>example.co/v1 SetTier</strong> instead" in body
    assert '<span class="badge rejected"' in body
    assert body.count('<span class="badge rejected">revoked: compromised</span>') == 1  # v2 only
    # the "Use it" snippets are those of v1, the version that is not revoked
    assert "The snippets below use v1, which is not revoked." in body
    assert "apiVersion: example.co/v1\n" in body
    assert "apiVersion: example.co/v2\n" not in body


def test_a_function_whose_every_version_is_revoked_offers_no_build_line(client, revoked):
    body = client.get(FN_PAGE.format(kind="Packer")).content.decode()
    assert "<code>krm build</code> refuses this function" in body
    assert '(its runtime <code class="small">sha256:abababababab…</code>): broken' in body
    assert 'id="build-latest"' not in body


def test_an_unrevoked_function_has_no_banner(client, revoked):
    body = client.get(FN_PAGE.format(kind="Untouched")).content.decode()
    assert "revoked-banner" not in body
    assert 'id="build-latest"' in body


def test_the_catalog_page_lists_the_revoked_versions(client, revoked):
    body = client.get("/catalogs/example-co/functions/").content.decode()
    assert 'class="revoked-banner"' in body
    assert ">SetTier</a> v2: compromised" in body
    assert ">Packer</a> v1: broken" in body
    assert ">v2 revoked</span>" in body
    assert ">Untouched</a> v1" not in body


def test_the_search_card_and_facet_show_revocation(client, revoked):
    body = client.get("/?q=example.co").content.decode()
    assert body.count('<span class="badge rejected">revoked</span> v') == 2
    assert "v2: compromised (its image was replaced upstream); use example.co/v1 SetTier" in body
    assert "Revoked" in body and "revoked=on" in body
    only = client.get("/?revoked=on").content.decode()
    assert ">SetTier</a>" in only and ">Packer</a>" in only and ">Untouched</a>" not in only


def test_the_search_api_has_a_revoked_field_and_filter(client, revoked):
    data = client.get("/api/v1/search/", {"q": "example.co", "sort": "name"}).json()
    by_kind = {r["kind"]: r for r in data["results"]}
    # by name, but revoked functions last
    assert [r["kind"] for r in data["results"]] == ["Untouched", "Packer", "SetTier"]
    assert by_kind["Untouched"]["revoked"] is False
    assert by_kind["Untouched"]["catalogs"][0]["revoked"] == []
    assert by_kind["SetTier"]["revoked"] is True
    assert by_kind["SetTier"]["catalogs"][0]["revoked"] == [
        {
            "version": "v2",
            "reason": "compromised",
            "detail": "its image was replaced upstream",
            "replacement": "example.co/v1 SetTier",
            "runtime_digest": "",
        }
    ]
    assert by_kind["Packer"]["catalogs"][0]["revoked"][0]["runtime_digest"] == "sha256:" + DIGEST
    trust = next(f for f in data["facets"] if f["label"] == "Trust")
    assert {"param": "revoked", "value": "on", "label": "Revoked", "count": 2} in trust["values"]
    only = client.get("/api/v1/search/", {"revoked": "true"}).json()
    assert sorted(r["kind"] for r in only["results"]) == ["Packer", "SetTier"]
    none = client.get("/api/v1/search/", {"revoked": "false"}).json()
    assert [r["kind"] for r in none["results"]] == ["Untouched"]
    bad = client.get("/api/v1/search/", {"revoked": "yes"})
    assert bad.status_code == 400
    assert bad.json()["revoked"] == ["Must be true or false, not 'yes'."]


def test_the_revoked_facet_combines_with_ticked_facets(client, revoked):
    both = client.get("/api/v1/search/?revoked=true&runtime=exec&runtime=container").json()
    assert sorted(r["kind"] for r in both["results"]) == ["Packer", "SetTier"]
    one = client.get("/api/v1/search/?revoked=true&runtime=exec").json()
    assert [r["kind"] for r in one["results"]] == ["Packer"]
    # The ticked runtime counts among the revoked functions as if it were not ticked.
    [runtime] = [f for f in one["facets"] if f["label"] == "Runtime"]
    assert {v["value"]: v["count"] for v in runtime["values"]} == {"container": 1, "exec": 1}
    unrevoked = client.get("/api/v1/search/?revoked=false&runtime=exec").json()
    assert unrevoked["count"] == 0
    # The page: the Revoked checkbox, ticked, with its count.
    body = client.get("/?revoked=on&runtime=exec").content.decode()
    assert (
        '<a href="?runtime=exec" role="checkbox" aria-checked="true" class="selected" '
        'rel="nofollow"><span class="box" aria-hidden="true"></span><span class="label">Revoked'
        '</span><span class="count">1</span>'
    ) in body
