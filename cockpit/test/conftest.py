"""pytest fixtures for the browser tests (see harness.py)."""

import pytest
from playwright.sync_api import expect, sync_playwright

from harness import launch_browser


# Generous for a loaded 2-core CI machine: an expectation polls until it
# holds, so a fast run is not slowed down.
expect.set_options(timeout=20_000)


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        yield browser
        browser.close()
