"""The scorecard of a run that did not finish says so: a live run stopped by Ctrl-C after its first point once
wrote a page reading "running" and "2 pass of 2 predictions" (of the 22 it collected), with a headline "TTFT knee
measured C = 1" drawn from that one point. The header now names the status and the points measured and kept, the
totals count the predictions that never ran, and no knee headline comes from a single point."""

from __future__ import annotations

import copy
import json

from support.html_pages import Page
from support.paths import CPU_TINY, RECORDED

from pytest_roofline.format.spec import load_spec
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.report.scorecard import _headlines, render_scorecard
from pytest_roofline.scoring import score

KEPT = "the 1 point above (closed-c1) was measured before it and kept"


def _cut(status: str) -> dict:
    """cpu-tiny's recording as a run stopped after its first point leaves it (``status``)."""
    data = copy.deepcopy(json.loads((RECORDED / "cpu-tiny-2026-12-05.results.json").read_text()))
    data["points"] = data["points"][:1]
    data["status"] = status
    if status == "interrupted":
        data["errors"] = [{"point": "closed-c2", "log_tail": "",
                           "message": f"interrupted by Ctrl-C (SIGINT) during point closed-c2 (2/6); {KEPT}"}]
    return data


def _page(data: dict) -> Page:
    spec = load_spec(CPU_TINY)
    # the live run scored the two math predictions that ran before the sweep, then Ctrl-C ended it
    verdicts = [score(spec, p, "math", None) for p in spec.predictions[:2]]
    return Page(render_scorecard(spec, verdicts, {**data, "_path": "out/cpu-tiny/results.json"}, mode="engine"))


def test_an_interrupted_run_says_interrupted_what_was_kept_and_what_never_ran() -> None:
    page = _page(_cut("interrupted"))
    (status,) = page.find("div", class_="run-status")
    assert status["text"].startswith("Interrupted: the run was stopped")
    assert "measured and kept: 1 point (closed-c1)" in status["text"]
    assert f"The run says: interrupted by Ctrl-C (SIGINT) during point closed-c2 (2/6); {KEPT}." in status["text"]
    (of,) = page.find("span", class_="of")
    # before: "of 2 predictions"
    assert of["text"] == "of 2 predictions scored; 20 of the 22 not run (the run was interrupted)"


def test_a_file_still_running_is_not_shown_as_a_finished_run() -> None:
    page = _page(_cut("running"))
    (status,) = page.find("div", class_="run-status")
    assert status["text"].startswith("Not finished: the results file still says running")
    (of,) = page.find("span", class_="of")
    assert of["text"].endswith("20 of the 22 not run (the run was not finished)")


def test_a_finished_run_has_no_status_line() -> None:
    data = json.loads((RECORDED / "cpu-tiny-2026-12-05.results.json").read_text())
    page = _page(data)
    assert not page.find("div", class_="run-status")
    (of,) = page.find("span", class_="of")
    assert of["text"] == "of 2 predictions"


def test_no_knee_headline_from_a_single_point() -> None:
    spec = load_spec(CPU_TINY)
    one = dict(_headlines(spec, spec_setup(spec), _cut("interrupted")))
    # before: "measured C = 1 (p99 > 2 × p50)", from the one point's p99/p50
    assert one["TTFT knee"] == "not measured: a knee needs two or more sweep points, this run has one (C = 1)"
    assert "measured C" not in one.get("throughput knee", "")
    whole = dict(_headlines(spec, spec_setup(spec), json.loads(
        (RECORDED / "cpu-tiny-2026-12-05.results.json").read_text())))
    assert whole["TTFT knee"].startswith("measured")  # the whole sweep still gets its knee


def test_no_knee_line_on_the_ttft_chart_from_a_single_point() -> None:
    """The chart follows the headline: one point whose p99 is over 2 × its p50 (the knee's rule) draws no
    "measured TTFT knee" rule (it drew "C = 1"); two points can."""
    from pytest_roofline.report.charts import ttft_chart

    spec = load_spec(CPU_TINY)
    data = _cut("interrupted")
    ttft = data["points"][0]["client"]["ttft_ms"]
    ttft["p99"] = 3 * ttft["p50"]
    one = ttft_chart(spec, spec_setup(spec), data, [])
    assert one is not None and "measured TTFT knee" not in str(one.svg)
    two = copy.deepcopy(data)
    second = copy.deepcopy(two["points"][0])
    second["id"], second["concurrency"] = "closed-c2", 2
    two["points"].append(second)
    assert "measured TTFT knee" in str(ttft_chart(spec, spec_setup(spec), two, []).svg)
