"""Celery tasks of review: the trial runs of contributed functions.

Task names are explicit and kept from the single-app layout (queued messages still find them).
"""

from __future__ import annotations

from celery import Task, shared_task

from catalogs.ratelimits import task_wait_for_upstream
from catalogs.review import trials
from catalogs.review.models import Contribution


# Unbounded retries: only a rate-limit deferral retries these, and each one waits for a free slot.
@shared_task(bind=True, max_retries=None, name="catalogs.tasks.contribution_trials_run_task")
def contribution_trials_run_task(self: Task, contribution_pk: int) -> dict:
    """Run a contribution's function in the trial sandbox and record the runs."""
    contribution = Contribution.objects.get(pk=contribution_pk)
    deferrals = task_wait_for_upstream(
        self, lambda: trials.contribution_trials_admit(contribution=contribution)
    )
    runs = trials.contribution_trials_run(contribution=contribution, deferrals=deferrals)
    return {"runs": [r.pk for r in runs], "flagged": any(r.flagged for r in runs)}


@shared_task(name="catalogs.tasks.trial_cache_prune_task")
def trial_cache_prune_task() -> dict:
    """Keep the trial runs' download cache under TRIAL_CACHE_MAX_BYTES."""
    from catalogs.review.trial_cache import trial_cache_prune

    entries, freed = trial_cache_prune()
    return {"entries": entries, "bytes": freed}
