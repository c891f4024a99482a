"""The API index at /api/v1/ links to every collection, and each link answers."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_api_root_links_to_each_collection(client):
    response = client.get("/api/v1/")
    assert response.status_code == 200
    links = response.json()
    assert set(links) == {
        "publishers",
        "catalogs",
        "functions",
        "sources",
        "contributions",
        "signing-keys",
        "search",
        "schema",
    }
    assert links["functions"] == "http://testserver/api/v1/functions/"
    for name, url in links.items():
        # Contributions are private to their authors and reviewers, sources and runs to mirror
        # operators: anonymous users are asked to authenticate.
        expected = 401 if name in ("contributions", "sources") else 200
        assert client.get(url).status_code == expected, name
