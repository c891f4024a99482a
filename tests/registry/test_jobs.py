"""Long jobs in the embedded default (eager tasks) run beside the request, not in it: a
contribution is answered at once and its trial runs follow in a thread of the web process."""

from __future__ import annotations

import threading
import time

import pytest
from celery import shared_task

from catalogs.jobs import job_enqueue_on_commit

# Eager jobs, also on CI's worker stage: the embedded default is what is tested here.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("jobs_in_this_process")]

FINISHED: dict[str, threading.Event] = {}


@shared_task(name="krm.test.slow_job")
def slow_job(seconds: float, marker: str) -> None:
    """A job that takes ``seconds``, then says so."""
    time.sleep(seconds)
    FINISHED[marker].set()


def _enqueue(django_capture_on_commit_callbacks, marker: str, background: bool) -> float:
    FINISHED[marker] = threading.Event()
    start = time.perf_counter()
    with django_capture_on_commit_callbacks(execute=True):
        job_enqueue_on_commit("krm.test.slow_job", 1.5, marker, background=background)
    return time.perf_counter() - start


def test_a_background_job_does_not_hold_the_request(settings, django_capture_on_commit_callbacks):
    settings.EAGER_JOBS_IN_BACKGROUND = True
    took = _enqueue(django_capture_on_commit_callbacks, "background", background=True)
    assert not FINISHED["background"].is_set()
    assert took < 1.5
    assert FINISHED["background"].wait(timeout=30)


def test_other_jobs_and_the_test_settings_run_in_the_request(
    settings, django_capture_on_commit_callbacks
):
    assert settings.EAGER_JOBS_IN_BACKGROUND is False  # registry/settings/test.py
    _enqueue(django_capture_on_commit_callbacks, "test-settings", background=True)
    assert FINISHED["test-settings"].is_set()
    settings.EAGER_JOBS_IN_BACKGROUND = True
    _enqueue(django_capture_on_commit_callbacks, "foreground", background=False)
    assert FINISHED["foreground"].is_set()
