"""Hostile and invalid documents: the exact problems are reported and nothing is written."""

import pytest

from catalogs.exceptions import InvalidCatalogError
from catalogs.oversized import OversizedDocument
from catalogs.publishing.models import CatalogVersion, FunctionDefinition, FunctionVersion
from catalogs.publishing.services import catalog_import, catalog_version_publish
from orchestrator.catalog import CatalogError, parse_catalog
from tests.catalogs.bad_documents import BAD_DOCUMENTS, expected_problems
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(catalog):
    """example-co/functions with one good version, so "unchanged" has something to keep."""
    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "Good", "v1")), actor=None
    )
    return version


def _snapshot() -> tuple:
    return (
        list(CatalogVersion.objects.values_list("catalog_id", "number", "digest")),
        FunctionDefinition.objects.count(),
        FunctionVersion.objects.count(),
    )


@pytest.mark.parametrize("name", BAD_DOCUMENTS)
def test_bad_document_is_refused_with_every_problem_and_nothing_changes(
    name, catalog, published, owner
):
    before = _snapshot()
    with pytest.raises(InvalidCatalogError) as err:
        catalog_version_publish(catalog=catalog, content=BAD_DOCUMENTS[name][0], actor=owner)
    count = len(BAD_DOCUMENTS[name][1])
    assert err.value.message == (
        f"The catalog document is invalid ({count} problem{'s' if count != 1 else ''})."
    )
    assert [p.as_dict() for p in err.value.problems] == expected_problems(name)
    assert _snapshot() == before
    catalog.refresh_from_db()
    assert catalog.latest_version == published


def test_document_over_the_size_limit_is_refused(catalog, published, owner, settings):
    settings.CATALOG_MAX_BYTES = 1000
    document = catalog_yaml(*[("example.co", f"Fn{i}", "v1") for i in range(20)])
    assert len(document.encode()) > 1000
    before = _snapshot()
    with pytest.raises(InvalidCatalogError) as err:
        catalog_version_publish(catalog=catalog, content=document, actor=owner)
    assert [p.as_dict() for p in err.value.problems] == [
        {
            "path": "",
            "message": f"catalog is {len(document.encode())} bytes, over the limit of 1000 bytes",
            "line": None,
            "column": None,
        }
    ]
    assert _snapshot() == before


def test_oversized_body_reads_exactly_like_the_engines_size_error(catalog, owner, settings):
    settings.CATALOG_MAX_BYTES = 1000
    with pytest.raises(CatalogError) as engine:
        parse_catalog(b"x" * 1234, max_bytes=1000)
    with pytest.raises(InvalidCatalogError) as registry:
        catalog_version_publish(catalog=catalog, content=OversizedDocument(1234), actor=owner)
    assert [p.message for p in registry.value.problems] == [engine.value.problems[0].message]
    assert not CatalogVersion.objects.exists()


def test_import_of_a_bad_document_creates_no_publisher_or_catalog(db):
    from catalogs.publishing.models import Catalog, Publisher

    with pytest.raises(InvalidCatalogError):
        catalog_import(
            publisher_slug="new-co", catalog_name="new", content=BAD_DOCUMENTS["wrong-kind"][0]
        )
    assert not Publisher.objects.exists()
    assert not Catalog.objects.exists()
