"""Shared fixtures. Django is imported lazily so the engine's tests run with ``-p no:django``."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO_CATALOG = ROOT / "catalogs" / "fixtures" / "demo-catalog.yaml"
# Where the browser tests (tests/browser/) save a screenshot of each main page.
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"


def pytest_configure(config: pytest.Config) -> None:
    """Keep krm's cache and config (and every CLI the tests start) out of the user's home."""
    xdg = Path(tempfile.mkdtemp(prefix="krm-tests-xdg-"))
    os.environ["XDG_CACHE_HOME"] = str(xdg / "cache")
    os.environ["XDG_CONFIG_HOME"] = str(xdg / "config")


@pytest.fixture(autouse=True)
def _serving_cache_forgotten():
    """Each test's rows are rolled back: the serving cache must not outlive them (a later test
    publishing another version 1 of the same catalog would otherwise get this one's bytes)."""
    yield
    serving = sys.modules.get("catalogs.publishing.serving")
    if serving is not None:
        serving.serving_caches_clear()


@pytest.fixture(autouse=True)
def _pulls_forgotten():
    """Pulls counted in memory and not flushed belong to the test that made them (its rows are
    rolled back): the next test starts from none."""
    yield
    pulls = sys.modules.get("catalogs.publishing.pulls")
    if pulls is not None:
        pulls.pulls_discard()


def _rate_limits_reset() -> None:
    ratelimits = sys.modules.get("catalogs.ratelimits")
    if ratelimits is None:
        return
    url = ratelimits.upstream_storage_url()
    if url != "memory://":
        # Redis (CI's services stage) outlives the test and the test run: the next run's test
        # database gives the same user ids again, so its counts would start where this one ended.
        ratelimits.upstream_limiter(url).storage.reset()
    ratelimits.upstream_limiter.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate limits start from zero in each test, in this process's memory (the default store)
    and in Redis alike: user ids repeat from test to test, their contributions must not add up."""
    _rate_limits_reset()
    yield
    _rate_limits_reset()


@pytest.fixture
def jobs_in_this_process():
    """Celery tasks run eagerly in the test process, also on CI's PostgreSQL + worker stage.

    For tests whose jobs need this process's settings (loopback allowed, a trustme CA, trial runs
    on) or its uncommitted rows: the shared worker has neither.
    """
    from registry.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


@pytest.fixture
def demo_catalog_bytes() -> bytes:
    """The demo catalog document that ``load_demo`` publishes."""
    return DEMO_CATALOG.read_bytes()


@pytest.fixture(autouse=True)
def _fresh_api_list_cache() -> None:
    """Each test starts a new generation of cached API list pages: a test's rows are rolled
    back, not deleted, so no write tells the cache that the pages stored during it are gone."""
    apps = sys.modules.get("django.apps")
    if apps is not None and apps.apps.ready:
        from catalogs.api import cache

        cache.invalidate()


@pytest.fixture
def api_client():
    """A DRF test client with nobody logged in."""
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def owner(db):
    """A user who owns the ``publisher`` fixture."""
    from tests.catalogs.factories import UserFactory

    return UserFactory(username="owner")


@pytest.fixture
def other_user(db):
    """A logged-in user who owns nothing."""
    from tests.catalogs.factories import UserFactory

    return UserFactory(username="other")


@pytest.fixture
def staff_user(db):
    """A staff user, who may write anywhere."""
    from tests.catalogs.factories import UserFactory

    return UserFactory(username="staff", is_staff=True)


@pytest.fixture
def publisher(owner):
    """Publisher ``example-co`` owned by ``owner``."""
    from tests.catalogs.factories import PublisherFactory

    return PublisherFactory(slug="example-co", display_name="Example Co", owners=[owner])


@pytest.fixture
def catalog(publisher):
    """An empty catalog ``example-co/functions``."""
    from tests.catalogs.factories import CatalogFactory

    return CatalogFactory(publisher=publisher, name="functions")


def pytest_terminal_summary(terminalreporter) -> None:
    """Print the screenshot folder after browser tests ran.

    It lives here, not in tests/browser/conftest.py: under xdist (scripts/test.sh) the
    controller prints the summary and only loads this top-level conftest.
    """
    ran = any(
        getattr(report, "when", None) == "call" and report.nodeid.startswith("tests/browser/")
        for reports in terminalreporter.stats.values()
        for report in reports
    )
    if ran:
        count = len(list(SCREENSHOTS.glob("*.png")))
        terminalreporter.write_line(f"browser screenshots ({count}): {SCREENSHOTS}")


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3-compatible server (moto's) on loopback: CI's (KRM_TEST_S3_ENDPOINT) or our own."""
    from tests.s3_server import moto_server

    shared = os.environ.get("KRM_TEST_S3_ENDPOINT")
    if shared:
        yield shared
        return
    with moto_server() as url:
        yield url


@pytest.fixture
def s3_storage(s3_endpoint, settings, tmp_path):
    """The default storage on a fresh bucket of the S3 server (as STORAGE_BACKEND=s3 sets it),
    with the per-process content caches emptied so that every read goes to the store, and an
    empty MEDIA_ROOT of its own (tests check that nothing lands on local disk)."""
    from tests.s3_server import bucket_empty, new_bucket, s3_client, storage_options

    client = s3_client(s3_endpoint)
    bucket = new_bucket(client)
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.STORAGE_BACKEND = "s3"
    settings.STORAGES = {**settings.STORAGES, "default": storage_options(s3_endpoint, bucket)}
    _content_caches_clear()
    yield client, bucket
    _content_caches_clear()
    bucket_empty(client, bucket)
    client.delete_bucket(Bucket=bucket)


def _content_caches_clear() -> None:
    from catalogs.distribution.selectors import oci_caches_clear
    from catalogs.publishing import content

    oci_caches_clear()
    content.content_cache.__init__(max_bytes=content.content_cache.max_bytes)  # type: ignore[misc]


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server of its own on a free loopback port (not the machine's shared one), for
    tests that must see exactly what their processes write; its URL (database 0)."""
    from tests.live_registry import redis_server

    with redis_server(tmp_path) as url:
        yield url
