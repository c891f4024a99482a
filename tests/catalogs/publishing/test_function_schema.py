"""A function version's functionConfig schema served as JSON Schema, and the editor line."""

from __future__ import annotations

import json

import jsonschema
import pytest

from catalogs.publishing import services
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

SCHEMA = (
    "          type: object\n"
    "          properties:\n"
    "            spec:\n"
    "              type: object\n"
    "              required: [port]\n"
    "              properties:\n"
    "                port: {x-kubernetes-int-or-string: true}\n"
    "                note: {type: string, nullable: true}\n"
)
URL = "/c/example-co/functions/versions/{n}/functions/example.co/Tool/v1/schema.json"


def _publish(catalog, schema: str = SCHEMA, kind: str = "Tool"):
    text = catalog_yaml(("example.co", kind, "v1")).replace("          type: object\n", schema)
    version, _ = services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    catalog.refresh_from_db()
    return version


def test_schema_url_serves_json_schema_immutably(client, catalog):
    v1 = _publish(catalog)
    response = client.get(URL.format(n=v1.number))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/schema+json"
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    doc = json.loads(response.content)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["$id"] == "http://testserver" + URL.format(n=v1.number)
    assert doc["title"] == "example.co/v1 Tool"
    validator = jsonschema.Draft202012Validator(doc)
    good = {"apiVersion": "example.co/v1", "kind": "Tool", "spec": {"port": "http", "note": None}}
    assert validator.is_valid(good)
    assert not validator.is_valid({"spec": {"port": 1.5}})
    assert not validator.is_valid({"spec": {"port": 80, "typo": 1}})
    again = client.get(URL.format(n=v1.number), HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    # A later version with another schema leaves version 1's URL as it was.
    v2 = _publish(catalog, schema="          type: object\n          properties: {}\n")
    assert client.get(URL.format(n=v1.number)).content == response.content
    assert (
        json.loads(client.get(URL.format(n=v2.number)).content)["properties"] != doc["properties"]
    )


@pytest.mark.parametrize(
    "url",
    [
        URL.format(n=9),
        URL.format(n=1).replace("/v1/", "/v2/"),
        URL.format(n=1).replace("/Tool/", "/Other/"),
        URL.format(n=1).replace("example-co", "nobody"),
    ],
)
def test_unknown_function_versions_are_404(client, catalog, url):
    _publish(catalog)
    assert client.get(url).status_code == 404


def test_a_version_without_schema_is_404_and_its_page_has_no_line(client, catalog):
    text = catalog_yaml(("example.co", "Tool", "v1")).replace(
        "      schema:\n        openAPIV3Schema:\n          type: object\n", ""
    )
    services.catalog_version_publish(catalog=catalog, content=text, actor=None)
    assert client.get(URL.format(n=1)).status_code == 404
    body = client.get("/catalogs/example-co/functions/functions/example.co/Tool/").content
    assert b"yaml-language-server" not in body


def test_function_page_shows_the_modeline_for_the_latest_version(client, catalog):
    _publish(catalog)
    v2 = _publish(catalog)
    response = client.get("/catalogs/example-co/functions/functions/example.co/Tool/")
    assert response.status_code == 200
    line = f"# yaml-language-server: $schema=http://testserver{URL.format(n=v2.number)}"
    assert line in response.content.decode()
    [item] = response.context["versions"]
    assert item["modeline"] == line
    # The URL on the page serves the schema.
    served = client.get(line.split("=", 1)[1].removeprefix("http://testserver"))
    assert served.status_code == 200
