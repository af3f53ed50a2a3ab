"""Open an HTML page in headless Chromium (Selenium + Debian's ``chromium-driver``) and read
what a reader would see go wrong: images that did not load, tables without a data cell,
content wider than the window, console errors. Also a full-page screenshot.

Tests that use it skip with a message where no browser is installed, unless
``UDBENCH_REQUIRE_BROWSER=1`` (``.ci/run`` sets it): then a missing browser fails them.
Screenshots go to the folder named by ``UDBENCH_TEST_ARTIFACTS`` when set (``.ci/run``: a
``test-artifacts/`` folder in the checkout), else to the test's own temporary folder.
"""

from __future__ import annotations

import base64
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Where the Debian packages ``chromium`` and ``chromium-driver`` put their programs.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
DRIVER_NAMES = ("chromedriver",)

# one script, run in the page once it has loaded: every image, table and overflowing box
_INSPECT = """
const width = document.documentElement.clientWidth;
const images = Array.from(document.images).map(img => ({
    src: (img.currentSrc || img.src || "").slice(0, 200),
    loaded: img.complete && img.naturalWidth > 0,
}));
const tables = Array.from(document.querySelectorAll("table")).map((t, i) => ({
    index: i,
    caption: (t.caption ? t.caption.innerText : (t.previousElementSibling || {}).innerText || "")
        .slice(0, 120),
    cells: Array.from(t.querySelectorAll("td")).filter(td => td.innerText.trim() !== "").length,
}));
const scrolls = el => {  // inside a box that scrolls or clips horizontally
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== "visible") return true;
    }
    return false;
};
const wide = [];
for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1 && !scrolls(el)) {
        // report the outermost offender only, not each of its children
        if (!wide.some(w => w.node.contains(el))) {
            wide.push({node: el, tag: el.tagName.toLowerCase(), id: el.id,
                       cls: String(el.className).slice(0, 60), right: Math.round(r.right)});
        }
    }
}
return {
    width: width,
    scrollWidth: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
    images: images,
    tables: tables,
    wide: wide.map(w => ({tag: w.tag, id: w.id, cls: w.cls, right: w.right})),
};
"""


@dataclass
class PageCheck:
    """What the browser saw on one page at one window width.

    Attributes
    ----------
    width : int
        The page's client width in CSS pixels (the window width asked for).
    scroll_width : int
        The document's scroll width; larger than ``width`` means horizontal overflow.
    broken_images : list of str
        Sources of the images that did not load (not complete, or no pixels).
    empty_tables : list of str
        The tables without a non-empty ``<td>`` (index and caption or preceding text).
    overflow : list of str
        The outermost elements reaching past the right edge of the window (content of a box
        that scrolls horizontally, such as a wide table, does not count; the page's own
        overflow is ``scroll_width > width``).
    console_errors : list of str
        Console messages of level SEVERE (script errors, failed loads).
    n_images, n_tables : int
        How many images and tables the page holds.
    screenshot : Path
        The full-page PNG.
    """

    width: int
    scroll_width: int
    broken_images: list[str] = field(default_factory=list)
    empty_tables: list[str] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    n_images: int = 0
    n_tables: int = 0
    screenshot: Path = Path()

    def problems(self) -> list[str]:
        """One line per thing a reader would see go wrong (empty: the page is clean)."""
        out = [f"image did not load: {src}" for src in self.broken_images]
        out += [f"table without a data cell: {t}" for t in self.empty_tables]
        if self.scroll_width > self.width:
            out.append(
                f"horizontal overflow at {self.width} px (page {self.scroll_width} px wide): "
                + "; ".join(self.overflow)
            )
        out += [f"console: {line}" for line in self.console_errors]
        return out


def _which(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser() -> tuple[str, str]:
    """Paths of Chromium and chromedriver; skip (or fail, under ``UDBENCH_REQUIRE_BROWSER``)
    when either, or Selenium, is missing."""
    browser, driver = _which(BROWSER_NAMES), _which(DRIVER_NAMES)
    try:
        import selenium  # noqa: F401
    except ImportError:  # pragma: no cover - selenium is in the dev group
        browser = None
    if browser is None or driver is None:
        why = (
            "no headless browser installed (Debian: apt-get install chromium chromium-driver); "
            f"found browser={browser}, driver={driver}"
        )
        if os.environ.get("UDBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(why + " — and UDBENCH_REQUIRE_BROWSER=1 asks for one")
        pytest.skip(why)
    return browser, driver


def artifacts_dir(default: Path) -> Path:
    """``UDBENCH_TEST_ARTIFACTS`` (created) when set, else ``default``."""
    value = os.environ.get("UDBENCH_TEST_ARTIFACTS")
    folder = Path(value) if value else default
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Browser:
    """One headless Chromium session (close it, or use it as a context manager)."""

    def __init__(self, browser: str, driver: str) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        # the Debian driver, so Selenium Manager never tries to download one
        self.driver: Any = webdriver.Chrome(
            service=Service(executable_path=driver), options=options
        )
        self.driver.set_page_load_timeout(120)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the browser and its driver."""
        self.driver.quit()

    def check(self, page: Path, screenshot: Path, *, width: int = 1280) -> PageCheck:
        """Load ``page`` in a window ``width`` CSS pixels wide and inspect it.

        Parameters
        ----------
        page : Path
            An HTML file.
        screenshot : Path
            Where the full-page PNG is written.
        width : int, default 1280
            Window (viewport) width in CSS pixels, device scale 1.
        """
        d = self.driver
        metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        d.get_log("browser")  # drop what an earlier page logged
        d.get(page.resolve().as_uri())
        d.execute_async_script(  # until every image has finished (loaded or failed)
            "const done = arguments[arguments.length - 1];"
            "Promise.all(Array.from(document.images).map(i => i.complete ? 0 :"
            " new Promise(r => { i.onload = i.onerror = r; }))).then(() => done(0));"
        )
        seen = d.execute_script(_INSPECT)
        shot = d.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        errors = [
            str(entry.get("message", ""))[:300]
            for entry in d.get_log("browser")
            if entry.get("level") == "SEVERE"
        ]
        return PageCheck(
            width=int(seen["width"]),
            scroll_width=int(seen["scrollWidth"]),
            broken_images=[i["src"] for i in seen["images"] if not i["loaded"]],
            empty_tables=[
                f"#{t['index']} {t['caption']!r}" for t in seen["tables"] if t["cells"] == 0
            ],
            overflow=[
                f"<{w['tag']}{' id=' + w['id'] if w['id'] else ''}"
                f"{' class=' + w['cls'] if w['cls'] else ''}> to {w['right']} px"
                for w in seen["wide"]
            ],
            console_errors=errors,
            n_images=len(seen["images"]),
            n_tables=len(seen["tables"]),
            screenshot=screenshot,
        )
