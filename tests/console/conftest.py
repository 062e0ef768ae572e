"""Fixtures of the console's browser tests: a headless Chromium (a fresh profile per module)
and a screenshot directory per test under pytest's output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_helpers import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def screenshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a test saves its screenshots: under the session's pytest output directory."""
    return tmp_path_factory.mktemp(f"screenshots-{request.node.name[:40]}", numbered=True)


@pytest.fixture
def page(browser_context: Any) -> Iterator[Any]:
    """A fresh tab of the module's browser (test_console_sasl's also clears its cookies)."""
    page = browser_context.new_page()
    yield page
    page.close()
