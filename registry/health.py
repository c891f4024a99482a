"""Liveness (``/healthz``) and readiness (``/readyz``) probes for the web processes.

Both are answered by a middleware placed first, before host validation, HTTPS redirects and
sessions: the kubelet and compose probe a pod by its IP address, which is not in ALLOWED_HOSTS.
``/healthz`` touches nothing (the process answers); ``/readyz`` checks the database, the broker
(unless tasks run eagerly) and the default storage, and answers 503 when one of them fails. The
body names each check's status and only the class of a failure's exception (the full error is
logged): the endpoint needs no credentials and must not show where the database lives.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
# A broker that does not answer within this many seconds counts as down.
BROKER_TIMEOUT = 3.0

Check = Callable[[], str]


class CheckSkipped(Exception):
    """A check that does not apply to this configuration (e.g. no broker with eager tasks)."""


def check_database() -> str:
    """Open (or reuse) the default connection and run ``SELECT 1``."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def check_broker() -> str:
    """Connect to the Celery broker once, without Celery's retry loop."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        raise CheckSkipped("tasks run eagerly in the web process: no broker")
    from registry.celery import app

    # The URL from the settings, so that the check follows them (and tests can point it away).
    with app.connection_for_write(settings.CELERY_BROKER_URL) as conn:
        conn.ensure_connection(
            max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT
        )
    return "ok"


def check_storage() -> str:
    """The default storage answers: a local directory exists (or can be made) and is writable."""
    storage = default_storage
    if isinstance(storage, FileSystemStorage):  # the lazy object proxies isinstance
        location = Path(storage.location)
        location.mkdir(parents=True, exist_ok=True)
        if not os.access(location, os.W_OK | os.X_OK):
            raise PermissionError(f"{location} is not writable")
        return "ok"
    # A remote storage (object store): a metadata request reaches it.
    storage.exists("readyz-probe")
    return "ok"


CHECKS: dict[str, Check] = {
    "database": check_database,
    "broker": check_broker,
    "storage": check_storage,
}


def readiness() -> tuple[bool, dict[str, dict[str, object]]]:
    """Run every check; return whether all passed (skipped counts as passed) and each result."""
    results: dict[str, dict[str, object]] = {}
    ready = True
    for name, check in CHECKS.items():
        started = time.monotonic()
        try:
            status: dict[str, object] = {"status": check()}
        except CheckSkipped as exc:
            status = {"status": "skipped", "detail": str(exc)}
        except Exception as exc:  # noqa: BLE001 - any failure of a dependency means not ready
            logger.warning("readiness check %s failed: %r", name, exc)
            status = {"status": "fail", "error": type(exc).__name__}
            ready = False
        status["ms"] = round((time.monotonic() - started) * 1000, 1)
        results[name] = status
    return ready, results


def healthz_response() -> HttpResponse:
    return JsonResponse({"status": "ok"})


def readyz_response() -> HttpResponse:
    ready, checks = readiness()
    return JsonResponse(
        {"status": "ok" if ready else "fail", "checks": checks}, status=200 if ready else 503
    )


class HealthCheckMiddleware:
    """Answer the probe paths before any other middleware looks at the request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            if request.path == LIVENESS_PATH:
                return healthz_response()
            if request.path == READINESS_PATH:
                response = readyz_response()
                # The readiness of this instance, never a cached one.
                response["Cache-Control"] = "no-store"
                return response
        return self.get_response(request)
