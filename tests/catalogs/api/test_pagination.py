"""``page`` and ``page_size`` are whole numbers of at least 1 (``page`` may be ``last``): any
other value is refused with 400, as the OpenAPI schema says, never taken for the default."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.catalogs.factories import PublisherFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/publishers/"


@pytest.fixture
def three(db):
    for slug in ("a-co", "b-co", "c-co"):
        PublisherFactory(slug=slug)


@pytest.mark.parametrize("value", ["null", "", "0", "-1", "1.5", "2e1", "abc", "٣", " 2"])
@pytest.mark.parametrize("name", ["page", "page_size"])
def test_anything_but_a_whole_number_is_refused(three, name, value):
    response = APIClient().get(URL, {name: value})
    assert response.status_code == 400
    assert response.json() == {name: [f"Give {name} as a whole number of at least 1."]}


def test_page_size_is_capped_at_500_and_page_may_be_last(three):
    client = APIClient()
    assert len(client.get(URL, {"page_size": "100000"}).json()["results"]) == 3
    last = client.get(URL, {"page_size": "2", "page": "last"}).json()
    assert [p["slug"] for p in last["results"]] == ["c-co"]
    assert client.get(URL, {"page_size": "2", "page": "2"}).json() == last


def test_a_page_past_the_end_is_404(three):
    response = APIClient().get(URL, {"page": "3", "page_size": "2"})
    assert (response.status_code, response.json()) == (404, {"detail": "Invalid page."})


def test_the_schema_says_what_is_accepted():
    schema = APIClient().get("/api/schema/?format=json").json()
    parameters = {p["name"]: p for p in schema["paths"][URL]["get"]["parameters"]}
    assert parameters["page_size"]["schema"] == {"type": "integer", "minimum": 1}
    assert parameters["page"]["schema"] == {
        "oneOf": [{"type": "integer", "minimum": 1}, {"enum": ["last"]}]
    }
