"""A headless Chromium driven by Selenium, for the student pages: Debian's `chromium` and
`chromium-driver`, started so that it never tries the network on its own (no component
updates, sync or background fetches), its performance log on (every network event of
the page is read back), in a fresh profile, behind a proxy that answers nothing."""

from __future__ import annotations

import json
import shutil
import tempfile
from contextlib import contextmanager

INSTALL = "apt-get install -y chromium chromium-driver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage",
                  # a proxy nothing listens on: a request the page should never make could not leave either
                  "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>")


def missing_browser() -> str | None:
    """Why the browser tests cannot run (the command that installs what is missing), or None."""
    absent = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        absent.append("selenium (pip install '.[test]')")
    return None if not absent else f"{', '.join(absent)} missing: install with `{INSTALL}`"


@contextmanager
def chromium(width: int = 1280, height: int = 900):
    """A WebDriver on a fresh headless Chromium; quits and removes its profile afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="explorer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def network_requests(driver) -> list[str]:
    """The URLs of every request the browser sent since the last call (CDP Network events
    from the performance log) that could leave the machine: the page's own file:// load,
    its data: URLs and the browser's built-in chrome:// pages (its start page) aside."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if not url.startswith(("file://", "data:", "chrome://", "about:")):
                urls.append(url)
    return urls
