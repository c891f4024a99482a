"""Rate limits per upstream host, shared by every worker (the `limits` library).

A sync run or trial run asks for a slot on each upstream host it will read before it starts
(``upstream_hosts_admit``). The counts live in Redis (``UPSTREAM_RATE_LIMIT_STORAGE_URL``, by
default the Celery broker) so that N workers on N machines share one budget per host; with no
Redis (the embedded default, eager tasks in one process) they live in this process's memory.
A moving window: at most R starts in any window of the limit's length, not R per clock tick.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

from celery import Task
from django.conf import settings
from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

logger = logging.getLogger(__name__)

NAMESPACE = "krm-upstream-host"


@dataclass(frozen=True)
class Deferral:
    """A run held back: the host whose limit is reached, the limit, and when to try again."""

    host: str
    limit: str
    retry_after: float  # seconds

    @property
    def message(self) -> str:
        return (
            f"Upstream host {self.host} is at its rate limit ({self.limit}); "
            f"retrying in {self.retry_after:.1f}s."
        )


def upstream_host(url: str) -> str | None:
    """The host a source or runtime URL reads from (lower case, no port), or None for a path."""
    if "://" not in url:
        return None  # a local git path: no upstream
    if url.startswith("git+"):
        url = url[len("git+") :]
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if urlsplit(url).scheme == "file":
        return None
    return host or None


def upstream_limit(host: str) -> RateLimitItem | None:
    """The limit for ``host``: its own entry in UPSTREAM_RATE_LIMITS, else UPSTREAM_RATE_LIMIT."""
    per_host: dict[str, str] = settings.UPSTREAM_RATE_LIMITS
    text = per_host.get(host, settings.UPSTREAM_RATE_LIMIT)
    return _parsed(str(text)) if text else None


@cache
def _parsed(text: str) -> RateLimitItem:
    return parse(text)


def upstream_storage_url() -> str:
    """Where the counts live: the configured URL, else a Redis broker, else process memory."""
    if settings.UPSTREAM_RATE_LIMIT_STORAGE_URL:
        return str(settings.UPSTREAM_RATE_LIMIT_STORAGE_URL)
    broker = str(settings.CELERY_BROKER_URL or "")
    if not settings.CELERY_TASK_ALWAYS_EAGER and urlsplit(broker).scheme in ("redis", "rediss"):
        return broker
    return "memory://"


@cache
def upstream_limiter(storage_url: str) -> MovingWindowRateLimiter:
    """One limiter per storage URL and process (``upstream_limiter.cache_clear()`` resets)."""
    options: dict[str, float | str | bool] = {"wrap_exceptions": True}
    if urlsplit(storage_url).scheme.startswith("redis"):
        options.update(key_prefix="krm-limits", socket_timeout=2.0, socket_connect_timeout=2.0)
    return MovingWindowRateLimiter(storage_from_string(storage_url, **options))


def upstream_hosts_admit(*, urls: Iterable[str]) -> Deferral | None:
    """Take one slot on each limited host ``urls`` read from; a Deferral if one is full.

    Every host is tested before any slot is taken, so a deferred run spends no other host's
    budget. When the shared store cannot be reached the run is admitted (and a warning logged):
    a rate limiter that is down must not stop mirroring.
    """
    hosts = sorted({h for h in (upstream_host(u) for u in urls) if h})
    checks = [(host, item) for host in hosts if (item := upstream_limit(host)) is not None]
    if not checks:
        return None
    limiter = upstream_limiter(upstream_storage_url())
    try:
        for host, item in checks:
            if not limiter.test(item, NAMESPACE, host):
                return _deferral(limiter, host, item)
        for host, item in checks:
            # Another worker can take the last slot between test and hit: then wait as well.
            if not limiter.hit(item, NAMESPACE, host):
                return _deferral(limiter, host, item)
    except StorageError as exc:
        logger.warning("upstream rate limits could not be read, admitting the run: %r", exc)
    return None


def _deferral(limiter: MovingWindowRateLimiter, host: str, item: RateLimitItem) -> Deferral:
    stats = limiter.get_window_stats(item, NAMESPACE, host)
    # The window frees its oldest slot at reset_time. The jitter (up to a quarter of the window)
    # spreads the runs waiting on one host, so they do not all come back at the same instant.
    wait = max(0.1, stats.reset_time - time.time())
    wait += random.uniform(0, item.get_expiry() / 4)  # noqa: S311  (spreading, not secrecy)
    return Deferral(host=host, limit=str(item), retry_after=round(wait, 3))


def task_wait_for_upstream(task: Task, admit: Callable[[], Deferral | None]) -> int:
    """Call ``admit`` until an upstream host's rate limit lets the run start; deferrals so far.

    With a broker the task is retried after the deferral (the worker is free meanwhile, and the
    run is not failed); eager tasks have no queue to come back through, so they wait here.
    """
    waited = 0
    while (deferral := admit()) is not None:
        if not task.request.is_eager:
            raise task.retry(countdown=deferral.retry_after)
        waited += 1
        time.sleep(deferral.retry_after)
    return (task.request.retries or 0) + waited


def rate_limit_hit(*, namespace: str, key: str, limit: str) -> float | None:
    """Take one slot of ``limit`` (e.g. "30/hour") for ``key``: None, or seconds until a slot.

    Counted where the upstream limits are (Redis shared by every process, else this process).
    An empty ``limit`` is no limit; a store that cannot be reached admits (and logs).
    """
    if not limit:
        return None
    item = _parsed(limit)
    limiter = upstream_limiter(upstream_storage_url())
    try:
        if limiter.hit(item, namespace, key):
            return None
        stats = limiter.get_window_stats(item, namespace, key)
    except StorageError as exc:
        logger.warning("rate limit %s could not be read, admitting: %r", namespace, exc)
        return None
    return max(0.0, stats.reset_time - time.time())
