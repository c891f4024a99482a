"""A Content-Length that is not a number is a 400 JSON problem, and nothing is read or written."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_non_numeric_content_length_is_a_400_problem(client):
    response = client.post(
        "/api/v1/catalogs/acme/fns/versions/",
        data=b"{}",
        content_type="application/json",
        CONTENT_LENGTH="twelve",
    )
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "The Content-Length header is not a number."}
