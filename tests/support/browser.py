"""Headless Chromium for the tests that look at a report in a real browser.

``CHROMIUM`` is the browser found here (``ROOFLINE_CHROMIUM``, else ``chromium``, ``chromium-browser``,
``google-chrome`` or ``google-chrome-stable`` on PATH), or None; a test that needs it is marked
``@needs_chromium`` and is skipped, with how to install it, where there is none.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = next((p for p in (os.environ.get("ROOFLINE_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), shutil.which("google-chrome"),
                             shutil.which("google-chrome-stable")) if p), None)

needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian/Ubuntu: "
                                                             "apt-get install chromium; or set ROOFLINE_CHROMIUM)")


def run_chromium(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """Load ``url`` in headless Chromium with a fresh profile under ``tmp_path`` and no traffic of its own that a
    flag can turn off (updates, sync, first-run pages), with ``extra`` flags (``--dump-dom``, ``--screenshot=...``);
    the page's console messages go to stderr. Fails the test unless Chromium exits 0."""
    assert CHROMIUM is not None, "no Chromium here: mark the test @needs_chromium"
    run = tmp_path / f"chromium-{len(list(tmp_path.glob('chromium-*')))}"
    run.mkdir()
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           "--enable-logging=stderr", "--v=0", f"--user-data-dir={run / 'profile'}", *extra, url]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def measure_in_chromium(tmp_path: Path, html: str, script: str, marker: str, window: str, name: str) -> Any:
    """Lay ``html`` out in headless Chromium at ``window`` ("W,H") with ``script`` appended to its body (the page's
    Content-Security-Policy, which would block it, removed), and return the JSON the script wrote into the DOM
    between two ``marker`` words (``--dump-dom`` after a virtual-time budget, so the layout has settled)."""
    page = tmp_path / f"{name}.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
                    .replace("</body>", script + "</body>"), encoding="utf-8")
    out = run_chromium(tmp_path, page.as_uri(), f"--window-size={window}", "--virtual-time-budget=10000",
                       "--dump-dom").stdout
    m = re.search(rf"{marker}(.*?){marker}", out, flags=re.S)
    assert m is not None, out[-2000:]
    return json.loads(m.group(1))
