"""Every answer carries the Content-Security-Policy: scripts, styles and images from this site
only, no inline script, no framing, forms post here. (tests/browser checks that the pages pass it
in chromium: their ``new_page`` fails a test on any violation.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


def _directives(header: str) -> dict[str, str]:
    return dict(
        (part.strip().split(" ", 1) + [""])[:2] for part in header.split(";") if part.strip()
    )


@pytest.mark.parametrize(
    "path",
    ["/", "/accounts/login/", "/publishers/example-co/", "/api/v1/publishers/", "/nowhere/"],
)
def test_pages_and_answers_carry_the_policy(client, publisher, path):
    response = client.get(path)
    assert _directives(response["Content-Security-Policy"]) == _directives(POLICY)


def test_the_api_docs_page_allows_only_swagger_uis_own_style(client):
    response = client.get("/api/docs/")
    style = "'sha256-MMpT0iDxyjALd9PdfepImGX3DBfJPXZ4IlDWdPAgtn0='"
    expected = _directives(POLICY) | {"style-src": f"'self' {style}"}
    assert _directives(response["Content-Security-Policy"]) == expected
    # No inline script: Swagger UI's start-up script is loaded from this URL.
    html = response.content.decode()
    assert "<script>" not in html and 'src="/api/docs/?script="' in html


@pytest.mark.parametrize("path", ["/v2/", "/c/example-co/functions/catalog.yaml"])
def test_documents_and_blobs_carry_no_page_policy(client, catalog, path):
    assert "Content-Security-Policy" not in client.get(path)
