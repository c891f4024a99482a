"""A catalog pushed over OCI has one digest: the registry keeps the pusher's bytes (not always
the canonical form), and ``krm view catalog`` prints the digest of those bytes, the one the
registry serves them under (ETag, ``/sha256/<hex>/catalog.yaml``) and signs as a TUF target."""

from __future__ import annotations

import hashlib

import httpx
import oras.provider
import pytest

from catalogs.distribution import manifests as m
from catalogs.publishing.models import CatalogVersion
from orchestrator.catalog import parse_catalog
from tests.catalogs.factories import api_token_key, catalog_yaml
from tests.e2e.test_trusted_catalog import _krm_cmd

pytestmark = pytest.mark.django_db(transaction=True)


def test_view_prints_the_digest_the_registry_serves(live_server, catalog, owner, tmp_path):
    document = catalog_yaml(("example.co", "FromOras", "v1")).encode()
    canonical = parse_catalog(document).canonical_bytes()
    assert canonical != document, "the pushed bytes must not be the canonical form"
    path = tmp_path / "catalog.yaml"
    path.write_bytes(document)
    host = live_server.url.removeprefix("http://")
    registry = oras.provider.Registry(hostname=host, insecure=True)
    registry.auth.set_basic_auth("owner", api_token_key(owner))
    response = registry.push(
        target=f"{host}/example-co/functions:latest",
        files=[f"{path}:{m.CATALOG_LAYER}"],
        disable_path_validation=True,
    )
    assert response.status_code == 201, response.text
    digest = "sha256:" + hashlib.sha256(document).hexdigest()
    assert CatalogVersion.objects.get().digest == digest

    home = tmp_path / "home"
    base = f"{live_server.url}/c/example-co/functions"
    for ref in (f"oci://{host}/example-co/functions:latest", f"{base}/catalog.yaml"):
        view = _krm_cmd("view", "catalog", ref, ca_file="", home=home)
        assert view.returncode == 0, view.stderr
        assert f"Digest:    {digest}\n" in view.stdout, view.stdout
        assert "Signature: verified through TUF target example-co/functions/" in view.stdout
    pinned = httpx.get(f"{base}/sha256/{digest[7:]}/catalog.yaml")
    assert pinned.status_code == 200 and pinned.content == document
    assert pinned.headers["ETag"] == f'"{digest}"'
    # The canonical form's digest names nothing here.
    other = hashlib.sha256(canonical).hexdigest()
    assert httpx.get(f"{base}/sha256/{other}/catalog.yaml").status_code == 404
