"""Queue a Celery task by its registered name once the current transaction commits.

Services queue their own app's tasks this way, by name, so that a service module never imports
the tasks module that imports it (no import cycle). The name is the task's explicit ``name=``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connections, transaction

logger = logging.getLogger(__name__)


def job_enqueue_on_commit(name: str, *args: Any, background: bool = False) -> None:
    """Queue task ``name`` with ``args`` when the transaction commits (at once outside one).

    In the embedded default (eager tasks) the task runs in this process at that point: in the
    request that queued it, or, with ``background`` (a long job such as a trial run) and
    EAGER_JOBS_IN_BACKGROUND, in a thread of its own, so that the request answers at once.
    """
    task = current_app.tasks[name]
    if background and current_app.conf.task_always_eager and settings.EAGER_JOBS_IN_BACKGROUND:
        transaction.on_commit(lambda: _run_in_thread(name, task, args))
    else:
        transaction.on_commit(lambda: task.delay(*args))


def _run_in_thread(name: str, task: Any, args: tuple[Any, ...]) -> threading.Thread:
    def run() -> None:
        try:
            task.apply(args=args, throw=True)
        except Exception:
            logger.exception("background job %s%r failed", name, args)
        finally:
            connections.close_all()  # this thread's own database connections

    thread = threading.Thread(target=run, name=f"job {name}", daemon=True)
    thread.start()
    return thread
