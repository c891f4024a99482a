"""OpenAPI 3 schema and the Swagger UI docs, served with no internet access (sidecar assets)."""

import re

import pytest
import yaml

pytestmark = pytest.mark.django_db


def test_schema_is_openapi_3_and_lists_the_endpoints(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.load(response.content, Loader=yaml.CSafeLoader)
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in [
        "/api/v1/publishers/",
        "/api/v1/publishers/{slug}/",
        "/api/v1/catalogs/",
        "/api/v1/catalogs/{publisher}/{catalog}/",
        "/api/v1/catalogs/{publisher}/{catalog}/versions/",
        "/api/v1/catalogs/{publisher}/{catalog}/versions/{number}/",
        "/api/v1/functions/",
    ]:
        assert path in paths, sorted(paths)
    publish = paths["/api/v1/catalogs/{publisher}/{catalog}/versions/"]["post"]
    assert "application/yaml" in publish["requestBody"]["content"]
    search = {p["name"] for p in paths["/api/v1/functions/"]["get"]["parameters"]}
    assert {"q", "group", "kind", "tag", "runtime", "page"} <= search
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])


def test_docs_page_loads_its_assets_from_this_server(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources, html
    for source in sources:
        assert source.startswith("/"), f"{source} would need the internet"
        if source.startswith("/static/"):
            asset = client.get(source)
            assert asset.status_code == 200, source
            assert b"".join(asset.streaming_content if asset.streaming else [asset.content])


def test_schema_generates_without_warnings_and_validates(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    assert yaml.load(out.read_bytes(), Loader=yaml.CSafeLoader)["info"]["title"] == (
        "KRM Catalog Registry API"
    )
