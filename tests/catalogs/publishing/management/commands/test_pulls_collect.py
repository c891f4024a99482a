"""manage.py pulls_collect: the catalog pulls nginx logged (deploy/nginx's krm_pulls format) are
counted like the registry's own; what is no pull (HEAD, 304, a signature, an error) is not."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import CommandError, call_command

from catalogs.publishing.models import CatalogVersionPulls
from catalogs.publishing.services import catalog_version_publish
from tests.catalogs.factories import catalog_yaml

pytestmark = pytest.mark.django_db


def test_a_log_is_counted_once_per_get_answered_200(catalog, tmp_path):
    version, _ = catalog_version_publish(
        catalog=catalog, content=catalog_yaml(("example.co", "A", "v1")), actor=None
    )
    d = version.digest
    now = f"{time.time():.3f}"
    pinned = "/c/example-co/functions/versions/1/catalog.yaml"
    lines = [
        f"{now} 200 GET {pinned} {d}",
        f"{now} 200 GET /c/example-co/functions/sha256/{d[7:]}/catalog.yaml {d}",
        f"{now} 200 GET /c/example-co/functions/catalog.yaml {d}",
        f"{now} 200 HEAD {pinned} {d}",
        f"{now} 304 GET {pinned} {d}",
        f"{now} 200 GET /c/example-co/functions/catalog.yaml.sig {d}",
        f"{now} 404 GET /c/example-co/functions/versions/9/catalog.yaml -",
        f"{now} 200 GET /c/other/functions/versions/1/catalog.yaml {d}",  # no such catalog
        "a line nginx never writes",
        f"{now} 200 GET {pinned}",  # cut short
    ]
    log = tmp_path / "pulls.log"
    log.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    call_command("pulls_collect", "--log", str(log), "--once", "--from-start", stdout=out)
    assert out.getvalue().strip() == f"3 pulls stored from {log}"
    row = CatalogVersionPulls.objects.get()
    assert (row.version_id, row.via, row.count) == (version.pk, "https", 3)
    # Without --from-start only what is written from now on counts: nothing here.
    call_command("pulls_collect", "--log", str(log), "--once", stdout=io.StringIO())
    assert CatalogVersionPulls.objects.get().count == 3


def test_a_missing_log_is_named(tmp_path):
    missing = tmp_path / "nope.log"
    with pytest.raises(CommandError, match=rf"--log {missing}: no such file"):
        call_command("pulls_collect", "--log", str(missing), "--once")
    assert CatalogVersionPulls.objects.count() == 0


def test_following_needs_periodic_flushes(tmp_path):
    log = tmp_path / "pulls.log"
    log.write_text("")
    with pytest.raises(CommandError, match="USAGE_FLUSH_SECONDS is 0"):
        call_command("pulls_collect", "--log", str(log))
