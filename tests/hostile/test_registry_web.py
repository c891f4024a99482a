# ruff: noqa: F811  (the fixtures imported below are used as test arguments)
"""Hostile bytes into the web forms (publish: upload and paste; contribute: upload) and into
``manage.py import_catalog``: the exact problem shown, and the registry exactly as it was.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from catalogs.publishing.models import Catalog, CatalogVersion, FunctionVersion, Publisher
from catalogs.review.models import Contribution
from tests.catalogs.review.contribution_fixtures import as_user, contributor, published  # noqa: F401
from tests.hostile.registry_payloads import HUGE, LIMIT, YAML_DOCUMENTS

pytestmark = pytest.mark.django_db

PUBLISH = "/catalogs/example-co/functions/publish/"
TEXT_DOCUMENTS = [n for n in YAML_DOCUMENTS if n not in ("invalid-utf8", "nul-byte")]


def _state(client) -> tuple:
    return (
        list(CatalogVersion.objects.values_list("catalog__name", "number", "digest")),
        FunctionVersion.objects.count(),
        Contribution.objects.count(),
        Publisher.objects.count(),
        Catalog.objects.count(),
        client.get("/c/example-co/functions/catalog.yaml").content,
    )


def _messages(response) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in response.context["problems"]]


def _expected(name: str) -> list[tuple[str, str]]:
    return [(path, message) for path, message, _, _ in YAML_DOCUMENTS[name][1]]


@pytest.mark.parametrize("action", ["preview", "publish"])
@pytest.mark.parametrize("name", YAML_DOCUMENTS)
def test_publish_form_upload(as_user, owner, published, name, action):
    client = as_user(owner)
    before = _state(client)
    upload = SimpleUploadedFile("catalog.yaml", YAML_DOCUMENTS[name][0])
    response = client.post(PUBLISH, {"file": upload, "action": action})
    assert response.status_code == 200
    assert _messages(response) == _expected(name)
    assert _state(client) == before


@pytest.mark.parametrize("name", TEXT_DOCUMENTS)
def test_publish_form_paste(as_user, owner, published, name):
    client = as_user(owner)
    before = _state(client)
    text = YAML_DOCUMENTS[name][0].decode()
    response = client.post(PUBLISH, {"content": text, "action": "publish"})
    assert response.status_code == 200
    assert _messages(response) == _expected(name)
    assert _state(client) == before


def test_publish_form_paste_with_a_nul_is_refused_by_the_form(as_user, owner, published):
    client = as_user(owner)
    before = _state(client)
    text = YAML_DOCUMENTS["nul-byte"][0].decode()
    response = client.post(PUBLISH, {"content": text, "action": "publish"})
    assert response.status_code == 200
    assert response.context["form"].errors == {"content": ["Null characters are not allowed."]}
    assert _state(client) == before


CONTRIBUTE_ERRORS = {
    "invalid-utf8": ["The file is not UTF-8 text."],
    "huge-scalar": [f"The file is {len(HUGE)} bytes, over the limit of {LIMIT}."],
}


@pytest.mark.parametrize("name", YAML_DOCUMENTS)
def test_contribute_form_upload(as_user, contributor, published, name):  # noqa: F811
    client = as_user(contributor)
    before = _state(client)
    upload = SimpleUploadedFile("definition.yaml", YAML_DOCUMENTS[name][0])
    response = client.post("/contribute/", {"catalog": published.pk, "file": upload})
    assert response.status_code == 200
    if name in CONTRIBUTE_ERRORS:
        assert response.context["form"].non_field_errors() == CONTRIBUTE_ERRORS[name]
    else:
        assert _messages(response) == _expected(name)
    assert _state(client) == before


@pytest.mark.parametrize("name", YAML_DOCUMENTS)
def test_import_catalog(as_user, published, tmp_path, name):
    client = as_user(None)
    before = _state(client)
    path = tmp_path / "catalog.yaml"
    path.write_bytes(YAML_DOCUMENTS[name][0])
    with pytest.raises(CommandError) as raised:
        call_command("import_catalog", str(path), "--publisher", "new-co", "--catalog", "functions")
    lines = str(raised.value).splitlines()
    assert lines[0] == "The catalog document is invalid (1 problem)."
    [(where, message)] = _expected(name)
    _, _, line, column = YAML_DOCUMENTS[name][1][0]
    location = f" (line {line}, column {column})" if line is not None else ""
    assert lines[1:] == [f"  {where or '(document)'}{location}: {message}"]
    # Neither the publisher nor the catalog the import would have created exists.
    assert _state(client) == before
