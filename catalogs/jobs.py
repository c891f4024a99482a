"""Queue a Celery task by its registered name once the current transaction commits.

Services queue their own app's tasks this way, by name, so that a service module never imports
the tasks module that imports it (no import cycle). The name is the task's explicit ``name=``.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction


def job_enqueue_on_commit(name: str, *args: Any) -> None:
    """Queue task ``name`` with ``args`` when the transaction commits (at once outside one).

    In the embedded default (eager tasks) the task runs in this process at that point.
    """
    task = current_app.tasks[name]
    transaction.on_commit(lambda: task.delay(*args))
