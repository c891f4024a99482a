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
    serving = sys.modules.get("catalogs.serving")
    if serving is not None:
        serving.serving_caches_clear()


@pytest.fixture
def demo_catalog_bytes() -> bytes:
    """The demo catalog document that ``load_demo`` publishes."""
    return DEMO_CATALOG.read_bytes()


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
