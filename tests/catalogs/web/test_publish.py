"""Publishing through the web UI: upload or paste, inline errors with path and line, preview."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalogs.publishing.models import CatalogVersion
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db

URL = "/catalogs/example-co/functions/publish/"


@pytest.fixture
def owner_client(as_user, owner):
    return as_user(owner)


def test_the_publish_page_has_upload_and_paste(owner_client, published):
    body = owner_client.get(URL).content.decode()
    assert 'type="file" name="file"' in body and 'name="content"' in body


def test_preview_of_an_invalid_paste_shows_each_problem_with_path_and_line(owner_client, published):
    text = catalog_yaml(("example.co", "Fn", "v1")).replace(
        "      idempotent: true", "      idempotent: maybe"
    )
    response = owner_client.post(URL, {"content": text, "action": "preview"})
    assert response.status_code == 200
    problems = response.context["problems"]
    assert [(p.path, p.line) for p in problems] == [
        ("spec.krmFunctions[0].versions[0].idempotent", 18)
    ]
    assert text.splitlines()[17].strip() == "idempotent: maybe"
    body = response.content.decode()
    assert "The catalog document is invalid (1 problem)." in body
    assert "line 18" in body and "spec.krmFunctions[0].versions[0].idempotent" in body
    # The text comes back in the box so it can be fixed in place; nothing was published.
    assert "idempotent: maybe" in body
    assert CatalogVersion.objects.count() == 1


def test_a_yaml_syntax_error_shows_line_and_column(owner_client, published):
    response = owner_client.post(URL, {"content": "apiVersion: [\n", "action": "preview"})
    [problem] = response.context["problems"]
    assert (problem.path, problem.line) == ("", 2)
    assert problem.column is not None


def test_preview_of_a_valid_upload_lists_changes_and_capabilities(owner_client, published):
    text = catalog_yaml(("example.co", "Fn", "v1"), ("example.co", "Net", "v1")).replace(
        "image: registry.example.co/net:v1",
        "image: registry.example.co/net:v1\n          requireNetwork: true",
    )
    upload = SimpleUploadedFile("catalog.yaml", text.encode(), content_type="application/yaml")
    response = owner_client.post(URL, {"file": upload, "action": "preview"})
    assert response.status_code == 200
    changes = response.context["changes"]
    assert [(c.kind, c.change, c.needs_added) for c in changes.functions] == [
        ("Net", "added", ["network"])
    ]
    body = response.content.decode()
    assert "new requirement: network" in body and "Publish version 2" in body
    # The uploaded text is carried in the form, so "Publish" sends exactly what was previewed.
    assert response.context["text"] == text
    assert CatalogVersion.objects.count() == 1


def test_publish_creates_a_new_immutable_version(owner_client, published, owner):
    text = catalog_yaml(("example.co", "Fn", "v1"), ("example.co", "Two", "v1"))
    response = owner_client.post(URL, {"content": text, "action": "publish"})
    assert response.status_code == 302
    assert response["Location"] == "/catalogs/example-co/functions/"
    published.refresh_from_db()
    assert published.latest_version.number == 2
    assert published.latest_version.created_by == owner
    page = owner_client.get(response["Location"]).content.decode()
    assert "Published version 2." in page


def test_publishing_the_same_content_again_creates_nothing(owner_client, published):
    text = catalog_yaml(("example.co", "Fn", "v1"))
    response = owner_client.post(URL, {"content": text, "action": "publish"}, follow=True)
    assert "Nothing changed: version 1 has this content." in response.content.decode()
    assert CatalogVersion.objects.count() == 1


def test_publish_of_an_invalid_document_publishes_nothing(owner_client, published):
    response = owner_client.post(URL, {"content": "kind: Catalog\n", "action": "publish"})
    assert response.status_code == 200 and response.context["problems"]
    assert CatalogVersion.objects.count() == 1


def test_an_empty_submission_asks_for_a_document(owner_client, published):
    response = owner_client.post(URL, {"content": "  ", "action": "preview"})
    assert "Upload a YAML file or paste the YAML text." in response.content.decode()


def test_an_oversized_upload_is_refused_with_the_limit(owner_client, published, settings):
    settings.CATALOG_MAX_BYTES = 100
    upload = SimpleUploadedFile("big.yaml", b"#" * 150)
    response = owner_client.post(URL, {"file": upload, "action": "preview"})
    [problem] = response.context["problems"]
    assert problem.message == "catalog is 150 bytes, over the limit of 100 bytes"
    assert CatalogVersion.objects.count() == 1


def test_htmx_preview_answers_with_the_fragment_only(owner_client, published):
    response = owner_client.post(
        URL, {"content": "kind: Catalog\n", "action": "preview"}, headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="publish">') and "<html" not in body


def test_create_a_catalog_then_publish_its_first_version(owner_client, publisher):
    response = owner_client.post(
        "/catalogs/new/", {"publisher": publisher.pk, "name": "fresh", "description": "New."}
    )
    assert response["Location"] == "/catalogs/example-co/fresh/publish/"
    text = catalog_yaml(("example.co", "First", "v1"), name="fresh")
    preview = owner_client.post(response["Location"], {"content": text, "action": "preview"})
    assert preview.context["changes"].first_version
    assert "Publish version 1" in preview.content.decode()


def test_create_catalog_with_a_bad_name_shows_the_error(owner_client, publisher):
    response = owner_client.post("/catalogs/new/", {"publisher": publisher.pk, "name": "bad name"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "Invalid catalog name &#x27;bad name&#x27;" in body
    # Rendered field by field (styled), the error on its field, not Django's bare <p> list.
    assert '<form method="post" class="stacked form-fields">' in body
    assert '<p class="field has-error"><label for="id_name">' in body
    assert '<label for="id_description">Description <span class="muted small">(optional)' in body


def test_problem_messages_quoting_the_document_are_escaped(owner_client, published):
    text = catalog_yaml(("example.co", "Fn", "v1")).replace(
        "spec:\n", "spec:\n  <script>alert(1)</script>: 1\n"
    )
    response = owner_client.post(URL, {"content": text, "action": "preview"})
    assert response.context["problems"]
    body = response.content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_preview_of_an_identical_document_offers_nothing_to_publish(owner_client, published):
    # The same functions as version 1, written differently (a comment): the same canonical form.
    text = "# same again\n" + catalog_yaml(("example.co", "Fn", "v1"))
    response = owner_client.post(URL, {"content": text, "action": "preview"})
    body = response.content.decode()
    assert response.context["identical_to"].number == 1
    assert "This document is identical to" in body and ">version 1</a> (the latest)" in body
    assert "Publish version" not in body and 'value="publish"' not in body
    # An identical older version is named too, not only the latest.
    owner_client.post(
        URL, {"content": catalog_yaml(("example.co", "Other", "v1")), "action": "publish"}
    )
    body = owner_client.post(URL, {"content": text, "action": "preview"}).content.decode()
    assert ">version 1</a>: publishing it would create no version" in body
    assert "Publish version" not in body
    assert CatalogVersion.objects.filter(catalog=published).count() == 2


def test_preview_shows_a_changed_image_and_digest(owner_client, published):
    assert b"image: registry.example.co/fn:v1" in bytes(published.latest_version.content)
    digest = "ab" * 32
    text = catalog_yaml(("example.co", "Fn", "v1")).replace(
        "image: registry.example.co/fn:v1",
        f"image: registry.example.co/fn:v1-patched\n          sha256: {digest}",
    )
    response = owner_client.post(URL, {"content": text, "action": "preview"})
    assert response.status_code == 200
    [change] = response.context["changes"].functions
    assert change.runtime_changed == [
        "v1 image: registry.example.co/fn:v1 → registry.example.co/fn:v1-patched",
        f"v1 image digest: – → {digest}",
    ]
    body = response.content.decode()
    assert "v1 image: registry.example.co/fn:v1 → registry.example.co/fn:v1-patched" in body
    assert f"v1 image digest: – → {digest}" in body
