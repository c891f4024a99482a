"""The project's URL map."""

import pytest
from django.urls import resolve, reverse


@pytest.mark.parametrize(
    ("name", "kwargs", "path"),
    [
        ("catalogs:latest", {"publisher": "p", "catalog": "c"}, "/c/p/c/catalog.yaml"),
        (
            "catalogs:version",
            {"publisher": "p", "catalog": "c", "number": 3},
            "/c/p/c/versions/3/catalog.yaml",
        ),
        ("api:function-list", {}, "/api/v1/functions/"),
        ("schema", {}, "/api/schema/"),
        ("api-docs", {}, "/api/docs/"),
        ("admin:index", {}, "/admin/"),
    ],
)
def test_named_urls(name, kwargs, path):
    assert reverse(name, kwargs=kwargs) == path
    assert resolve(path).url_name == name.split(":")[-1]


@pytest.mark.django_db
def test_unknown_path_is_404(client):
    assert client.get("/nothing-here/").status_code == 404
