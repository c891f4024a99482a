"""A sync run shows in /metrics (krm_sync_runs by status, versions, stored bytes)."""

from __future__ import annotations

import pytest

from catalogs.mirroring import services as mirrors
from tests.catalogs.mirroring.conftest import catalog_doc
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


def test_the_backlog_counts_due_queued_and_deferred_sources(
    mirror_settings, https_upstream, client
):
    from catalogs import ratelimits

    def backlog() -> dict[str, float]:
        found = scrape(client)
        counts = {state: found[("krm_mirror_backlog", (("state", state),))] for state in STATES}
        counts["oldest"] = found[("krm_mirror_backlog_oldest_seconds", ())]
        return counts

    STATES = ("due", "queued", "deferred")
    before = backlog()
    sources = [
        mirrors.mirror_source_create(
            name=f"backlog-{i}",
            url=https_upstream.serve(f"/backlog-{i}.yaml", catalog_doc(f"backlog-{i}")),
            actor=None,
        )
        for i in range(3)
    ]
    mirrors.mirror_source_create(
        name="backlog-off", url=https_upstream.url("/off.yaml"), actor=None, enabled=False
    )
    grown = backlog()
    assert [grown[s] - before[s] for s in STATES] == [3, 0, 0]  # never synced: due (enabled only)

    runs = [
        mirrors.mirror_source_sync_request(source=s, actor=None, enqueue=False) for s in sources[:2]
    ]
    queued = backlog()
    assert [queued[s] - before[s] for s in STATES] == [1, 2, 0]
    assert queued["oldest"] > 0

    # The host's only slot is taken: the second run is deferred (and still queued).
    mirror_settings.UPSTREAM_RATE_LIMIT = "1/minute"
    mirror_settings.UPSTREAM_RATE_LIMIT_STORAGE_URL = "memory://"
    ratelimits.upstream_limiter.cache_clear()
    try:
        assert mirrors.sync_run_admit(run_pk=runs[0].pk) is None
        assert mirrors.sync_run_admit(run_pk=runs[1].pk) is not None
        held = backlog()
        assert [held[s] - before[s] for s in STATES] == [1, 2, 1]

        assert mirrors.sync_run_execute(run_pk=runs[0].pk).status == "succeeded"
        after = backlog()
        assert [after[s] - before[s] for s in STATES] == [1, 1, 1]
    finally:
        ratelimits.upstream_limiter.cache_clear()
