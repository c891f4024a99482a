"""The Celery application; configuration comes from Django settings (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry.settings.base")

app = Celery("registry")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Celery beat: look for mirror sources whose interval has passed once a minute; each source's
# own interval (MirrorSource.interval_minutes) decides whether it is synced.
app.conf.beat_schedule = {
    **(app.conf.beat_schedule or {}),
    "mirror-sources-sync-due": {
        "task": "catalogs.tasks.mirror_sources_sync_due_task",
        "schedule": 60.0,
    },
    # The one storage GC: stale OCI upload sessions and uploaded blobs no manifest references
    # (OCI_UPLOAD_GC_MINUTES), and stored objects no row names (BLOB_GC_GRACE_MINUTES), on
    # local files and S3 alike.
    # The TUF timestamp expires after TRUST_TIMESTAMP_TTL (a day by default): re-signed once
    # half of that has passed (and snapshot, targets and the registry's roles likewise).
    "tuf-metadata-refresh": {
        "task": "catalogs.tasks.tuf_refresh_task",
        "schedule": 600.0,
    },
    "blobs-garbage-collect": {
        "task": "catalogs.tasks.blobs_garbage_collect_task",
        "schedule": 900.0,
    },
    # The trial runs' download cache, under TRIAL_CACHE_MAX_BYTES.
    "trial-cache-prune": {
        "task": "catalogs.tasks.trial_cache_prune_task",
        "schedule": 900.0,
    },
}
