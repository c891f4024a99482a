"""The documentation site (``mkdocs build``) in chromium on a phone (390×844): no page scrolls
sideways, nothing is loaded from the internet (highlight.js is vendored in docs_theme/), no
script fails (the scrollspy takes numbered headings), and code blocks are highlighted.
Screenshots: ``docs-api-phone.png``, ``docs-operations-phone.png``.

The site is built into a temporary directory and served by a plain local HTTP server."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.browser.conftest import PHONE, WIDTH_JS

ROOT = Path(__file__).resolve().parents[2]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory):
    """(base URL, page paths) of the built docs, served on a free loopback port."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        timeout=120,
    )
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    pages = sorted(
        "/" + str(p.relative_to(site).parent).removeprefix(".") + ("/" if p.parent != site else "")
        for p in site.rglob("index.html")
    )
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", [p.replace("//", "/") for p in pages]
    finally:
        server.shutdown()
        server.server_close()


def test_every_docs_page_fits_a_phone_with_nothing_from_the_internet(
    browser, docs_site, screenshots
):
    base, pages = docs_site
    assert "/" in pages and "/api/" in pages and "/operations/" in pages
    assert "/guide/function-author/" in pages  # numbered headings ("1. Write the definition")
    context = browser.new_context(base_url=base, viewport=PHONE)
    outside: list[str] = []
    errors: list[str] = []
    context.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(f"{page.url}: {exc}"))
    page.on(
        "console",
        lambda m: (
            errors.append(f"{page.url}: {m.text}") if m.type in ("error", "warning") else None
        ),
    )
    too_wide = {}
    try:
        for path in pages:
            response = page.goto(path)
            assert response is not None and response.status == 200, path
            page.wait_for_load_state("load")
            if path in ("/api/", "/operations/"):
                name = path.strip("/")
                page.screenshot(path=str(screenshots / f"docs-{name}-phone.png"), full_page=True)
            width = page.evaluate(WIDTH_JS)
            if width > PHONE["width"]:
                too_wide[path] = width
        # Code blocks are highlighted by the vendored highlight.js.
        page.goto("/guide/developer/")
        assert page.locator("pre code.hljs").count() > 0
        assert page.locator("pre code .hljs-attr, pre code .hljs-string").count() > 0
        # The scrollspy follows the numbered headings: the one scrolled to is marked.
        page.goto("/guide/function-author/")
        page.evaluate("document.getElementById('2-propose-it').scrollIntoView()")
        page.wait_for_selector('.bs-sidebar a.active[href="#2-propose-it"]', state="attached")
    finally:
        context.close()
    assert too_wide == {}, f"pages wider than {PHONE['width']} px: {too_wide}"
    assert outside == [], f"requests left the docs site: {outside}"
    assert errors == [], f"console errors: {errors}"
