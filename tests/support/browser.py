"""Headless Chromium for tests that look at a page as a person would: Debian's ``chromium`` and ``chromium-driver``.

1. ``start_browser()`` starts Debian's chromedriver on a free loopback port and opens one WebDriver session of
   headless Chromium with a fresh profile in a temp dir, every network feature that would reach outside the machine
   switched off (the machine's network is closed).
2. ``Browser`` speaks the W3C WebDriver protocol over HTTP with the standard library (no client package): open a
   URL, find elements by CSS selector, read their text and attributes, type, click, run a script, take a screenshot.
3. ``wait_for`` polls a condition until it holds or a deadline passes (pages of a single-page app render after
   their data arrives), and says what it last saw when it gives up.
4. ``Browser.close()`` ends the session and stops chromedriver by its process id (Chromium ends with the session).

A missing binary fails the test with the command that installs it (``scripts/test.sh`` installs both as root).
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.support.services import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Headless, no sandbox (tests run as root), and nothing that phones home or updates itself.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"
T = TypeVar("T")


class BrowserError(RuntimeError):
    """A WebDriver command failed; the message carries the driver's error and message."""


def wait_for(condition: Callable[[], T | None], timeout: float, what: str, interval: float = 0.5) -> T:
    """Poll ``condition`` until it returns a truthy value (returned), or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except (BrowserError, LookupError, OSError) as error:
            last_error = error
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not seen within {timeout:.0f} s (last error: {last_error})")
        time.sleep(interval)


@dataclass
class Element:
    """One element of the page, by its WebDriver reference."""

    browser: Browser
    ref: str

    def _path(self, suffix: str) -> str:
        return f"/element/{self.ref}/{suffix}"

    @property
    def text(self) -> str:
        """The element's rendered text."""
        return str(self.browser.command("GET", self._path("text")))

    def attribute(self, name: str) -> str | None:
        """The element's property or attribute ``name`` (``href`` resolved to a full URL)."""
        value = self.browser.command("GET", self._path(f"property/{name}"))
        if value is None:
            value = self.browser.command("GET", self._path(f"attribute/{name}"))
        return None if value is None else str(value)

    def click(self) -> None:
        self.browser.command("POST", self._path("click"), {})

    def type(self, text: str) -> None:
        """Type ``text`` into the element (after clearing it)."""
        self.browser.command("POST", self._path("clear"), {})
        self.browser.command("POST", self._path("value"), {"text": text})


class Browser:
    """A WebDriver session of headless Chromium (``start_browser``)."""

    def __init__(self, driver_url: str, session_id: str, driver: subprocess.Popen[bytes], profile: Path) -> None:
        self.driver_url = driver_url
        self.session_id = session_id
        self._driver = driver
        self._profile = profile

    def command(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one WebDriver command of this session; its ``value``."""
        return _request(method, f"{self.driver_url}/session/{self.session_id}{path}", body)

    def open(self, url: str) -> None:
        """Navigate to ``url`` and wait for the document to load."""
        self.command("POST", "/url", {"url": url})

    @property
    def url(self) -> str:
        return str(self.command("GET", "/url"))

    @property
    def title(self) -> str:
        return str(self.command("GET", "/title"))

    def find_all(self, css: str) -> list[Element]:
        """Every element matching the CSS selector, in document order."""
        found = self.command("POST", "/elements", {"using": "css selector", "value": css})
        return [Element(self, item[ELEMENT_KEY]) for item in found]

    def find(self, css: str) -> Element:
        """The first element matching the CSS selector; ``LookupError`` when there is none."""
        elements = self.find_all(css)
        if not elements:
            raise LookupError(f"no element matches {css!r} on {self.url}")
        return elements[0]

    def find_by_text(self, css: str, text: str) -> Element:
        """The first element matching ``css`` whose rendered text contains ``text``; ``LookupError`` if none."""
        for element in self.find_all(css):
            with contextlib.suppress(BrowserError):
                if text in element.text:
                    return element
        raise LookupError(f"no {css!r} element with text {text!r} on {self.url}")

    def script(self, source: str, *args: Any) -> Any:
        """Run JavaScript in the page (``return ...`` gives a value)."""
        return self.command("POST", "/execute/sync", {"script": source, "args": list(args)})

    def page_text(self) -> str:
        """The rendered text of the whole page."""
        return str(self.script("return document.body ? document.body.innerText : '';"))

    def text_through_scrolling(self, pause_ms: int = 200) -> str:
        """The page's text as seen while every scrollable box is scrolled from top to bottom, a screen at a time.

        Virtualized lists (Airflow's log viewer) render only the lines in view: this collects each view's text,
        pausing ``pause_ms`` after each scroll for the page to render it.
        """
        return str(
            self.command(
                "POST",
                "/execute/async",
                {
                    "script": """
                        const [pause, done] = arguments;
                        const seen = [document.body.innerText];
                        const scrolls = (box) => /auto|scroll/.test(getComputedStyle(box).overflowY);
                        const boxes = [...document.querySelectorAll('*')].filter((box) =>
                          box.scrollHeight > box.clientHeight + 4 && scrolls(box));
                        const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
                        (async () => {
                          for (const box of boxes) {
                            for (let top = 0; ; top += Math.max(box.clientHeight - 20, 20)) {
                              box.scrollTop = top;
                              await sleep(pause);
                              seen.push(box.innerText);
                              if (top + box.clientHeight >= box.scrollHeight) break;
                            }
                          }
                          done(seen.join('\\n'));
                        })();
                    """,
                    "args": [pause_ms],
                },
            )
        )

    def screenshot(self, path: Path) -> Path:
        """A PNG of the window, written to ``path``."""
        path.write_bytes(base64.b64decode(self.command("GET", "/screenshot")))
        return path

    def close(self) -> None:
        """End the session and stop chromedriver."""
        with contextlib.suppress(Exception):
            _request("DELETE", f"{self.driver_url}/session/{self.session_id}")
        self._driver.terminate()
        try:
            self._driver.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._driver.kill()
            self._driver.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)


def _request(method: str, url: str, body: dict[str, Any] | None = None, timeout: float = 120) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            payload = json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        payload = json.loads(error.read() or b"{}")
        value = payload.get("value") or {}
        raise BrowserError(f"{method} {url}: {value.get('error')}: {value.get('message', '')[:500]}") from None
    return payload.get("value")


def _check_installed() -> None:
    for binary, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(binary).is_file():
            raise RuntimeError(
                f"{binary} is missing: run 'apt-get install -y {package}' (scripts/test.sh does as root)"
            )


def start_browser(timeout: float = 60) -> Browser:
    """chromedriver on a free loopback port and a session of headless Chromium with a fresh profile."""
    _check_installed()
    port = free_port()
    profile = Path(tempfile.mkdtemp(prefix="aip-chromium-"))
    driver = subprocess.Popen(
        [CHROMEDRIVER, f"--port={port}", "--allowed-ips=127.0.0.1", "--log-level=WARNING"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    driver_url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _request("GET", f"{driver_url}/status", timeout=2).get("ready"), timeout, "chromedriver")
        capabilities = {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [*CHROMIUM_ARGS, f"--user-data-dir={profile}"]},
        }
        session = _request("POST", f"{driver_url}/session", {"capabilities": {"alwaysMatch": capabilities}})
    except (Exception, TimeoutError):
        driver.kill()
        driver.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
        raise
    return Browser(driver_url, session["sessionId"], driver, profile)


@contextlib.contextmanager
def browser_session(timeout: float = 60) -> Iterator[Browser]:
    """A browser for the duration of a ``with`` block."""
    browser = start_browser(timeout)
    try:
        yield browser
    finally:
        browser.close()


def log_in_to_airflow(browser: Browser, base_url: str, username: str, password: str, timeout: float = 120) -> None:
    """Sign in on the Airflow UI's login page (Simple auth manager) at ``base_url`` and wait for the home page."""
    browser.open(f"{base_url.rstrip('/')}/")
    wait_for(lambda: browser.find("input[name=username]"), timeout, "the Airflow login form").type(username)
    browser.find("input[name=password]").type(password)
    browser.find("button[type=submit]").click()
    wait_for(lambda: "/auth/login" not in browser.url, timeout, "the Airflow home page after signing in")
