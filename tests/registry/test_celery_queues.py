"""Trial runs, mirror syncs and housekeeping have queues of their own; a worker started without
-Q still takes jobs from every one of them (so an existing deployment keeps working)."""

from __future__ import annotations

import pytest

from registry.celery import app

# What a worker imports at start (every app's tasks module), whatever this process imported.
app.loader.import_default_modules()

ROUTES = {
    "catalogs.tasks.contribution_trials_run_task": "trials",
    "catalogs.tasks.mirror_source_sync_task": "mirroring",
    "catalogs.tasks.mirror_sources_sync_due_task": "mirroring",
    "catalogs.tasks.blobs_garbage_collect_task": "housekeeping",
    "catalogs.tasks.oci_uploads_gc_task": "housekeeping",
    "catalogs.tasks.trial_cache_prune_task": "housekeeping",
    "catalogs.tasks.catalog_version_publish_task": "celery",
    "catalogs.tasks.catalog_version_verify_task": "celery",
    "catalogs.tasks.webhook_delivery_send_task": "celery",
    "catalogs.tasks.notification_email_send_task": "celery",
    "catalogs.tasks.tuf_refresh_task": "celery",
}


@pytest.mark.parametrize(("task", "queue"), sorted(ROUTES.items()))
def test_each_task_goes_to_its_queue(task, queue):
    assert task in app.tasks, sorted(t for t in app.tasks if t.startswith("catalogs."))
    assert app.amqp.router.route({}, task)["queue"].name == queue


def test_a_worker_without_q_consumes_every_queue():
    # The configured queues (app.amqp.queues also holds any a test sent a job to by name).
    assert sorted(app.conf.task_queues) == ["celery", "housekeeping", "mirroring", "trials"]
    # Every task of the registry is routed to one of them.
    registered = {t for t in app.tasks if t.startswith("catalogs.tasks.")}
    assert registered == set(ROUTES)
