"""A real browser for the tests of what a page shows: Debian's Chromium, driven by Playwright's Python
API (never ``playwright install``, which downloads a browser of its own). Installed by
``scripts/install-test-deps.sh``; missing, the test is skipped locally and fails under CI."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import skip_or_fail

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def page_of(path: Path, width: int = 1280, height: int = 900) -> Iterator[tuple[Any, list[str], list[str]]]:
    """The file opened in headless Chromium: ``(page, requests, dialogs)``; ``requests`` lists every URL
    the page asked for (its own file included), ``dialogs`` every alert/confirm it tried to open.
    Any request that is not the file itself is refused."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed (scripts/install-test-deps.sh)")
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is missing: Debian's chromium package (scripts/install-test-deps.sh)")
    url = path.resolve().as_uri()
    requests: list[str] = []
    dialogs: list[str] = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=FLAGS,
            viewport={"width": width, "height": height}, java_script_enabled=True)
        try:
            page = browser.pages[0] if browser.pages else browser.new_page()
            browser.on("request", lambda r: requests.append(r.url))

            def refuse(route: Any) -> None:
                if route.request.url == url:
                    route.continue_()
                else:
                    route.abort()

            browser.route("**/*", refuse)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url)
            page.wait_for_load_state("load")
            yield page, requests, dialogs
        finally:
            browser.close()
