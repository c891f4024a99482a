"""A sync run shows in /metrics (krm_sync_runs by status, versions, stored bytes)."""

from __future__ import annotations

import pytest

from catalogs import mirrors
from tests.catalogs.mirrors.conftest import catalog_doc
from tests.registry.test_metrics import scrape

pytestmark = pytest.mark.django_db


def test_sync_runs_by_status_move(mirror_settings, https_upstream, sync, client):
    before = scrape(client)
    url = https_upstream.serve("/catalog.yaml", catalog_doc("metered"))
    source = mirrors.mirror_source_create(name="metered", url=url, actor=None)
    assert sync(source).status == "succeeded"
    assert sync(source).status == "unchanged"
    https_upstream.routes.clear()  # the upstream is gone: the next run fails
    assert sync(source).status == "failed"

    after = scrape(client)

    for status, added in (("succeeded", 1), ("unchanged", 1), ("failed", 1), ("queued", 0)):
        key = ("krm_sync_runs", (("status", status),))
        assert after[key] == before[key] + added, status
    assert after[("krm_catalog_versions", ())] == before[("krm_catalog_versions", ())] + 1
