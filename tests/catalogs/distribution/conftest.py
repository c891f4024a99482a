"""Fixtures of the OCI endpoint tests: a published catalog, its owner's API token."""

from __future__ import annotations

import base64

import pytest

from tests.catalogs.factories import catalog_yaml


@pytest.fixture(autouse=True)
def _fresh_oci_caches():
    """The serving caches are per process and outlive a test's database."""
    from catalogs.distribution import selectors

    selectors.oci_caches_clear()
    yield
    selectors.oci_caches_clear()


@pytest.fixture(autouse=True)
def _no_cosign_artifacts(settings):
    """These tests count tags, blobs and referrers of the OCI layer alone; the signature
    artifacts the registry adds are tested in tests/catalogs/trust/test_oci_signatures.py."""
    settings.SIGNING_OCI_ARTIFACTS = False


@pytest.fixture
def owner_token(owner) -> str:
    """The owner's API token (DRF), the password of HTTP Basic and of the token flow."""
    from tests.catalogs.factories import api_token_key

    return api_token_key(owner)


@pytest.fixture
def basic(owner_token) -> str:
    """``Authorization`` header value: the owner's name and API token."""
    return "Basic " + base64.b64encode(f"owner:{owner_token}".encode()).decode()


@pytest.fixture
def published(catalog, owner):
    """Version 1 of ``example-co/functions``."""
    from catalogs.publishing.services import catalog_version_publish

    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "SetLabels", "v1")), actor=owner
    )
    return version
