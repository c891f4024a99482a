"""Browser tests: Python playwright drives Debian's chromium against pytest-django's live server.

No browser is downloaded (``playwright install`` is never run): the system chromium at
/usr/bin/chromium (apt packages ``chromium`` and ``chromium-driver``) is launched directly.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.catalogs.mirroring.conftest import (  # noqa: F401 - the walk mirrors from it
    https_upstream,
    https_upstream_session,
)
from tests.conftest import SCREENSHOTS

CHROMIUM = os.environ.get("KRM_CHROMIUM", "/usr/bin/chromium")
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
# The page's width: more than the viewport's means it scrolls sideways.
WIDTH_JS = "document.documentElement.scrollWidth"
# The bytes the document and its assets took (bodies as sent, before decompression).
TRANSFERRED = """() => {
  let total = performance.getEntriesByType("navigation")[0].encodedBodySize;
  for (const r of performance.getEntriesByType("resource")) total += r.encodedBodySize;
  return total;
}"""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    """One headless chromium for the session."""
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium chromium-driver")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread while the browser is open; the ORM
    # calls the tests make between browser steps are still plain synchronous code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where page screenshots go; tests/conftest.py prints it at the end of the run."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def new_page(browser, live_server):
    """``new_page(viewport=DESKTOP)``: a page in a fresh context (its own cookies: one signed-in
    user per context); no request may leave the registry, no script may fail, nothing may
    break the Content-Security-Policy."""
    contexts = []

    outside: list[str] = []
    errors: list[str] = []

    def make(viewport: dict[str, int] = DESKTOP):
        context = browser.new_context(base_url=live_server.url, viewport=viewport)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
        context.set_default_timeout(15_000)
        # Every asset must come from the registry itself: nothing from the internet.
        context.on(
            "request",
            lambda r: None if r.url.startswith(live_server.url) else outside.append(r.url),
        )
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # Whatever the Content-Security-Policy refuses (chromium says so on the console).
        page.on(
            "console",
            lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None,
        )
        return page

    yield make
    for context in contexts:
        context.close()
    assert outside == [], f"requests left the registry: {outside}"
    assert errors == [], f"JavaScript errors: {errors}"


def sign_in(page, username: str, password: str = "secret-password") -> None:
    """Sign in through the real login form."""
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form.stacked button[type=submit]")
    page.wait_for_selector(f"text=Sign out ({username})")
