"""The reports in a real browser (headless Chromium): the scorecard renders and requests nothing from the
network, and pytest-html's own sort orders the roofline columns numerically.

How "nothing from the network" is proven: Chromium writes a NetLog (``--log-net-log``) of every URL request it
starts. Chromium also makes requests of its own (component updates, time sync, account checks) even with
``--disable-background-networking``; those carry ``initiator: "not an origin"``, while anything a page asks for
carries the page's origin (``"null"`` for a file:// page). A control page that links a web font and a remote
image must show up in that log, or the check itself is broken and the test fails. The scorecard is then loaded
twice: as written (its Content-Security-Policy would block a request anyway, so this run checks that the page
still renders under it) and with the CSP removed, where any reference to the network would be fetched and
logged.

Needs Chromium; skipped with the reason when it is not installed (Debian/Ubuntu: ``apt-get install chromium``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.browser import needs_chromium, run_chromium
from support.html_pages import parse_fragment as _tags
from support.notebook import notebook_results, write_notebook_results  # noqa: E402
from support.paths import DAY3
from support.pytest_run import NO_CACHE
from support.specs import NOTEBOOK_REPORT

from pytest_roofline.format.spec import load_spec  # noqa: E402
from pytest_roofline.report.scorecard import CSP, render_scorecard, score_spec  # noqa: E402

pytestmark = needs_chromium
NETWORK_SCHEMES = ("http:", "https:", "ws:", "wss:", "ftp:")


def chromium(tmp_path: Path, url: str, *extra: str) -> tuple[str, list[str]]:
    """Load ``url`` headless; return the DOM after load and the network URLs the page itself requested."""
    netlog = tmp_path / f"netlog-{len(list(tmp_path.glob('netlog-*')))}.json"
    proc = run_chromium(tmp_path, url, f"--log-net-log={netlog}", *extra)
    data = json.loads(netlog.read_text(encoding="utf-8"))
    names = {v: k for k, v in data["constants"]["logEventTypes"].items()}
    page_urls = []
    for ev in data["events"]:
        params = ev.get("params") or {}
        if names.get(ev["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        if params.get("initiator") == "not an origin":
            continue  # Chromium's own service traffic, not the page
        if params["url"].split("//")[0].lower() in NETWORK_SCHEMES:
            page_urls.append(params["url"])
    return proc.stdout, page_urls


def test_the_detector_sees_a_page_that_uses_the_network(tmp_path: Path) -> None:
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><html><head><link rel="stylesheet" '
                    'href="https://fonts.googleapis.com/css?family=Roboto"></head><body>'
                    '<img src="http://example.invalid/x.png"><p>control</p></body></html>', encoding="utf-8")
    dom, urls = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert "control" in dom
    assert any("fonts.googleapis.com" in u for u in urls), urls
    assert any("example.invalid" in u for u in urls), urls


@pytest.fixture(scope="module")
def scorecard_html() -> str:
    spec = load_spec(DAY3)
    data = notebook_results(timeline=True)
    return render_scorecard(spec, score_spec(spec, data), data)


def test_scorecard_renders_under_its_csp_and_requests_nothing(tmp_path: Path, scorecard_html: str) -> None:
    page = tmp_path / "scorecard.html"
    page.write_text(scorecard_html, encoding="utf-8")
    dom, urls = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert urls == []
    tags = _tags(dom)
    svgs = [a for t, a in tags.tags if t == "svg" and "rl-chart" in (a.get("class") or "")]
    assert len(svgs) >= 6 + 8  # six charts and eight server timelines
    assert "Aggregate throughput vs concurrency" in tags.text
    assert len([a for t, a in tags.tags if t == "tbody" and "pred" in (a.get("class") or "")]) == 36


@pytest.mark.slow
def test_scorecard_without_its_csp_still_requests_nothing(tmp_path: Path, scorecard_html: str) -> None:
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    assert meta in scorecard_html
    page = tmp_path / "no-csp.html"
    page.write_text(scorecard_html.replace(meta, ""), encoding="utf-8")
    shot = tmp_path / "shot.png"
    dom, urls = chromium(tmp_path, page.as_uri(), "--window-size=1320,2400", f"--screenshot={shot}")
    assert urls == []
    assert shot.exists() and shot.stat().st_size > 50_000  # something was drawn
    dom, urls = chromium(tmp_path, page.as_uri(), "--dump-dom")
    assert urls == [] and "Little's law per sweep point" in dom


@pytest.mark.slow
def test_pytest_html_sorts_the_error_column_numerically(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("pytest_html")
    pytester.makefile(".yaml", preds=NOTEBOOK_REPORT)
    write_notebook_results(pytester.path / "results.json")
    pytester.runpytest_subprocess(*NO_CACHE, "--replay", "results.json", "--html", "r.html",
                                  "--self-contained-html", "preds.yaml")
    report = pytester.path / "r.html"
    for column in ("rl_error", "rl_predicted"):
        dom, urls = chromium(tmp_path, report.as_uri() + f"?sort={column}", "--dump-dom")
        assert urls == []
        cells = re.findall(rf'<td class="col-{column}"[^>]*>(.*?)</td>', dom)
        assert len(cells) >= 9
        visible = [re.sub(r"<span[^>]*hidden[^>]*>.*?</span>", "", c) for c in cells]
        visible = [re.sub(r"<[^>]+>", "", c).strip() for c in visible]
        if column == "rl_error":
            # "-50.50% ×0.495": the relative error, then measured ÷ predicted
            nums = [abs(float(v.split()[0].rstrip("%").replace(",", ""))) for v in visible if v]
        else:
            nums = [float(v.split()[0].replace(",", "")) for v in visible if v.endswith("tok/s")]
        assert len(nums) >= 2
        assert nums == sorted(nums) or nums == sorted(nums, reverse=True), (column, visible)
