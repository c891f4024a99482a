import hashlib

import pytest
from django.core.management import call_command

from catalogs.publishing.models import Catalog, CatalogVersion, FunctionVersion

pytestmark = pytest.mark.django_db


def test_load_demo_publishes_the_demo_catalog_once(client, capsys):
    call_command("load_demo")
    call_command("load_demo")
    catalog = Catalog.objects.get()
    assert str(catalog) == "demo/functions"
    assert CatalogVersion.objects.count() == 1
    assert FunctionVersion.objects.count() == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Published demo/functions version 1 (sha256:")
    assert out[3].startswith("Already published demo/functions version 1 (sha256:")
    served = client.get("/c/demo/functions/catalog.yaml")
    assert served.status_code == 200
    assert served["X-Content-Digest"] == "sha256:" + hashlib.sha256(served.content).hexdigest()
