"""A real headless Chromium, driven by Selenium through Debian's chromedriver (no driver or
browser download), and a wait for what a live page shows.

    driver = chromium_driver(tmp_path / "profile")    # pytest.skip where either is missing
    driver.get(url); wait_for(lambda: driver.find_element(...).text == "4/4", 20)
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Callable

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def chromium_driver(profile: Path, width: int = 1300, height: int = 2200):
    """A headless Chromium under chromedriver; ``get`` returns once the page's DOM is read
    (the view's pages poll for ever, so 'loaded' is the DOM, not the last request)."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("Chromium or chromedriver is not installed (Debian: apt-get install "
                    "chromium chromium-driver; scripts/setup.sh installs them)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-dev-shm-usage", f"--window-size={width},{height}",
                     f"--user-data-dir={profile}"):
        options.add_argument(argument)
    options.binary_location = CHROMIUM
    options.page_load_strategy = "eager"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    return driver


def wait_for(condition: Callable[[], Any], timeout: float, every: float = 0.2) -> Any:
    """The first truthy value of ``condition()`` within ``timeout`` seconds; fails the test
    (saying what it last saw) when none comes."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = condition()
        except Exception as error:   # the page may be between two renders
            last = error
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            pytest.fail(f"not seen within {timeout} s; last: {last!r}")
        time.sleep(every)
