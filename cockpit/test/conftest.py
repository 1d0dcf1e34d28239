"""pytest fixtures for the browser tests (see harness.py)."""

import pytest
from playwright.sync_api import sync_playwright

from harness import launch_browser


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        yield browser
        browser.close()
