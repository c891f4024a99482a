"""Prometheus metrics at ``/metrics`` (prometheus-client).

Two kinds of figures, so that N gunicorn processes report one truth:
- request counts and durations are counted in each process; with ``PROMETHEUS_MULTIPROC_DIR``
  set (the deployments set it) prometheus-client keeps them in files there and a scrape of any
  process adds up every process's files;
- everything the database knows (sync runs by status, the mirror backlog, published versions,
  stored bytes) and the broker's queue depth are read at scrape time, so they are the same
  whichever process answers.

``/metrics`` answers only to the addresses in ``METRICS_ALLOWED_IPS`` (loopback by default) or to
a request carrying ``Authorization: Bearer <METRICS_TOKEN>`` when that is set; anyone else gets
403. Like the probes it is served before host validation (Prometheus scrapes pod addresses).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from collections.abc import Callable, Iterator
from functools import cache
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# prometheus-client writes each process's values there; the directory must exist before the
# first value is counted (a fresh emptyDir or tmpfs in the deployments).
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

METRICS_PATH = "/metrics"
# Paths answered by registry.health's middleware: labelled by name, they have no URL pattern.
KNOWN_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
PROBE_VIEWS = {"/healthz": "healthz", "/readyz": "readyz", METRICS_PATH: "metrics"}

REQUESTS = Counter(
    "krm_http_requests",
    "HTTP requests answered by Django, by URL pattern name, method and status code.",
    ["view", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "krm_http_request_duration_seconds",
    "Time Django took to answer, by URL pattern name.",
    ["view"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)


def _view_name(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name or match._func_path
    # No URL pattern matched (404) or a middleware answered first: one label for all of them,
    # so that scanners cannot grow the number of series.
    return PROBE_VIEWS.get(request.path, "<unmatched>")


class RegistryCollector(Collector):
    """Figures read from the database and the broker at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        # The request counters are still worth serving while the database is down: say so
        # in one gauge instead of failing the whole scrape.
        try:
            families = list(self._database_families())
        except DatabaseError as exc:
            logger.warning("metrics: the database could not be read: %r", exc)
            families = []
        yield GaugeMetricFamily(
            "krm_database_up",
            "1 when this scrape could read the database figures, else 0.",
            value=1 if families else 0,
        )
        yield from families
        try:
            depth = queue_depth()
        except RedisError as exc:
            logger.warning("metrics: the broker backlog could not be read: %r", exc)
            depth = None
        if depth is not None:
            queued = GaugeMetricFamily(
                "krm_queue_depth",
                "Messages waiting in the Celery broker, by queue (Redis brokers only).",
                labels=["queue"],
            )
            for queue, n in depth.items():
                queued.add_metric([queue], n)
            yield queued

    def _database_families(self) -> Iterator[GaugeMetricFamily]:
        from catalogs.distribution.models import OciBlob, OciManifest
        from catalogs.mirroring.models import RuntimeArtifact, SyncRun
        from catalogs.publishing.models import CatalogVersion

        runs = GaugeMetricFamily(
            "krm_sync_runs", "Mirror sync runs recorded, by status.", labels=["status"]
        )
        counts = dict(SyncRun.objects.order_by().values_list("status").annotate(n=Count("id")))
        for status in SyncRun.Status.values:
            runs.add_metric([status], counts.get(status, 0))
        yield runs
        yield from _backlog_families()

        yield GaugeMetricFamily(
            "krm_catalog_versions",
            "Published catalog versions (all catalogs).",
            value=CatalogVersion.objects.count(),
        )

        stored = GaugeMetricFamily(
            "krm_storage_bytes",
            "Bytes of stored content by kind, summed from the database rows that reference it.",
            labels=["kind"],
        )
        for kind, model in (
            ("catalog_versions", CatalogVersion),
            ("runtime_artifacts", RuntimeArtifact),
            ("oci_manifests", OciManifest),
            ("oci_blobs", OciBlob),
        ):
            total = model.objects.order_by().aggregate(total=Sum("size"))["total"] or 0
            stored.add_metric([kind], total)
        yield stored


def _backlog_families() -> Iterator[GaugeMetricFamily]:
    """Mirror sources waiting for a sync, and how long the oldest queued run has waited."""
    from django.utils import timezone

    from catalogs.mirroring.models import SyncRun
    from catalogs.mirroring.services import mirror_sources_due

    now = timezone.now()
    queued = SyncRun.objects.filter(status=SyncRun.Status.QUEUED)
    backlog = GaugeMetricFamily(
        "krm_mirror_backlog",
        "Mirror sources waiting for a sync: due (interval passed, no run yet), queued (a run "
        "waits for a worker), deferred (of the queued, held back by an upstream rate limit).",
        labels=["state"],
    )
    backlog.add_metric(["due"], mirror_sources_due(now=now).count())
    backlog.add_metric(["queued"], queued.count())
    backlog.add_metric(["deferred"], queued.filter(deferred_until__gt=now).count())
    yield backlog
    oldest = queued.order_by("queued_at").values_list("queued_at", flat=True).first()
    yield GaugeMetricFamily(
        "krm_mirror_backlog_oldest_seconds",
        "Seconds the oldest queued sync run has waited (0 when none waits).",
        value=(now - oldest).total_seconds() if oldest else 0.0,
    )


@cache
def _redis_client(url: str):  # noqa: ANN202 - redis.Redis, imported lazily
    import redis

    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def queue_depth() -> dict[str, int] | None:
    """Messages waiting per Celery queue, or None where there is no backlog to read.

    Celery's Redis transport keeps a queue as a list named after it (and, with priorities, one
    list per priority step, named ``<queue>\\x06\\x16<n>``). Eager tasks have no queue; other
    brokers are not read here.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    url = settings.CELERY_BROKER_URL
    if urlsplit(url).scheme not in {"redis", "rediss"}:
        return None
    from registry.celery import app

    queues = {app.conf.task_default_queue or "celery"}
    # Every declared queue (CELERY_TASK_QUEUES: trials, mirroring, housekeeping, celery).
    queues.update(app.amqp.queues.keys())
    client = _redis_client(url)
    depth: dict[str, int] = {}
    for queue in sorted(queues):
        names = [queue, *(f"{queue}\x06\x16{step}" for step in range(1, 10))]
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.llen(name)
        depth[queue] = sum(pipe.execute())
    return depth


def _scrape() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_ProcessRegistry())
    registry.register(RegistryCollector())
    return generate_latest(registry)


class _ProcessRegistry(Collector):
    """This process's own metrics (single-process mode), added to each scrape's registry."""

    def collect(self) -> Iterator:
        yield from REGISTRY.collect()


@cache
def _allowed_networks(
    entries: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def metrics_allowed(request: HttpRequest) -> bool:
    """Whether ``request`` may read the metrics: an allowed address or the bearer token."""
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in net for net in _allowed_networks(tuple(settings.METRICS_ALLOWED_IPS)))


def metrics_response(request: HttpRequest) -> HttpResponse:
    if not metrics_allowed(request):
        return HttpResponse(
            "Metrics are served to METRICS_ALLOWED_IPS or with the METRICS_TOKEN bearer token.\n",
            status=403,
            content_type="text/plain",
        )
    try:
        body = _scrape()
    except Exception:
        logger.exception("metrics scrape failed")
        return HttpResponse("Metrics are unavailable.\n", status=503, content_type="text/plain")
    response = HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


# The URL pattern name of the OCI blob view, which the WSGI fast path answers for.
OCI_BLOB_VIEW = "oci:blob"


def count_oci_blob_fast_path(method: str, seconds: float) -> None:
    """Count a blob the OCI fast path (catalogs.distribution.wsgi) answered, as if the view had."""
    REQUEST_SECONDS.labels(OCI_BLOB_VIEW).observe(seconds)
    REQUESTS.labels(OCI_BLOB_VIEW, method, "200").inc()


class MetricsMiddleware:
    """Serve ``/metrics`` and count every other request Django answers (placed first)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == METRICS_PATH and request.method in ("GET", "HEAD"):
            return metrics_response(request)
        started = time.perf_counter()
        response = self.get_response(request)
        view = _view_name(request)
        REQUEST_SECONDS.labels(view).observe(time.perf_counter() - started)
        method = request.method if request.method in KNOWN_METHODS else "other"
        REQUESTS.labels(view, method, str(response.status_code)).inc()
        return response
