"""Pull counts rise on the catalog page within seconds of a pull, the flushing thread running as
in a serving process (USAGE_FLUSH_SECONDS=1), at desktop and phone size."""

from __future__ import annotations

import io
import threading
import time

import pytest
from django.core.management import call_command

from catalogs.publishing import pulls
from tests.browser.conftest import DESKTOP, PHONE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def flushing(settings):
    """The flushing thread of this process (the live server's), stopped at the end."""
    call_command("load_demo", stdout=io.StringIO())
    settings.USAGE_FLUSH_SECONDS = 1
    pulls.pulls_discard()
    pulls._started = False  # earlier tests ran with the thread off
    yield
    settings.USAGE_FLUSH_SECONDS = 0
    pulls._wake.set()
    for thread in threading.enumerate():
        if thread.name == pulls.FLUSHER_NAME:
            thread.join(timeout=10)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_pull_counts_rise_on_the_catalog_page(new_page, flushing, viewport):
    page = new_page(viewport)
    page.goto("/catalogs/demo/functions/")
    assert page.locator("p.pulls").inner_text().startswith("0 pulls, 0 in the last 30 days")
    for _ in range(2):
        assert page.request.get("/c/demo/functions/catalog.yaml").ok
    deadline = time.monotonic() + 10
    while True:
        page.reload()
        text = page.locator("p.pulls").inner_text()
        if text.startswith("2 pulls"):
            break
        assert time.monotonic() < deadline, f"still {text!r} after 10 s"
        time.sleep(0.5)
    assert text.startswith("2 pulls, 2 in the last 30 days")
    row = page.locator("table.versions tbody tr").first
    assert row.locator("td.num").inner_text() == "2"
