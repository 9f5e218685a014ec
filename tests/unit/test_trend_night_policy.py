"""The trend page judges a night as the night judged itself (trial s24 M4): a nightly run with
``--roofline-drift-baseline median:3`` said its values were steady, and ``roofline history`` (run without
``--baseline``, as the nightly script does) recomputed them against the previous run and showed +41 % "beyond 10%".
A run now keeps the policy its drift was judged under, and the page uses it unless told otherwise."""

from __future__ import annotations

import re
from dataclasses import replace

from test_trend_trial import run, summary_rows, val

from pytest_roofline.history import DriftPolicy, drift_for
from pytest_roofline.history._records import RunSummary
from pytest_roofline.report.trend import render_trend

# five nights of one TTFT: 140, 140, 140, 100 ms, then tonight 141 ms: +41 % against the previous night (100 ms),
# +0.7 % against the median of the last 3 (140, 140, 100: 140 ms)
NIGHTS = [("2026-12-01T02:00:00Z", 140.0), ("2026-12-02T02:00:00Z", 140.0), ("2026-12-03T02:00:00Z", 140.0),
          ("2026-12-04T02:00:00Z", 100.0), ("2026-12-05T02:00:00Z", 141.0)]


def _runs(baseline: str) -> list[RunSummary]:
    runs = [run(t, val("ttft", x / 1e3)) for t, x in NIGHTS]
    return [replace(r, drift_threshold="10%", drift_baseline=baseline) for r in runs]


def test_the_page_judges_tonight_under_the_policy_tonight_was_judged_under() -> None:
    runs = _runs("median:3")
    # what the night itself said: the median of 140, 140, 100 is 140, so 141 is +0.7 %, steady
    d = drift_for(runs[-1].values, runs[:-1], DriftPolicy("10%", "median:3"), setup=runs[-1].setup)
    (only,) = d.values()
    assert only.status.value == "steady"
    html = render_trend(runs)
    row = summary_rows(html)["ttft"]
    assert "+0.7" in row and "+41" not in row, row
    assert "median of 3 nights" in html and "the policy its latest night was judged under" in html
    # --baseline previous on the command line sets another: +41 % against 100 ms
    prev = summary_rows(render_trend(runs, baseline="previous"))["ttft"]
    assert "+41" in prev, prev


def test_runs_stored_before_the_policy_was_kept_read_as_the_defaults() -> None:
    runs = _runs("")
    assert all(not r.drift_baseline for r in runs)
    assert RunSummary.from_dict(runs[-1].to_dict()).drift_baseline == ""
    html = render_trend([replace(r, drift_threshold="") for r in runs])
    assert "+41" in summary_rows(html)["ttft"]  # the previous run, the default
    assert "the policy its latest night was judged under" not in html
    kept = _runs("median:3")[-1]
    back = RunSummary.from_dict(kept.to_dict())
    assert (back.drift_threshold, back.drift_baseline) == ("10%", "median:3")
    assert re.search(r"median:3", str(kept.to_dict()))


def test_a_night_of_another_quantity_says_which_in_the_table_and_the_hover() -> None:
    """Trial s24c M7: a chart of total_throughput drew and listed the nights that measured output_throughput under
    the same id, with nothing saying so."""
    runs = [run(t, val("ttft", x / 1e3, quantity="ttft_p90" if t < "2026-12-05" else "ttft_p50"))
            for t, x in NIGHTS]
    html = render_trend(runs)
    assert html.count('<span class="other-q">(ttft_p90)</span>') == 4
    assert "this night measured ttft_p90, not ttft_p50" in html


def test_the_chart_does_not_join_nights_of_another_quantity() -> None:
    """Trial s24c M7: the measured line ran from the ttft_p90 nights into the ttft_p50 one; it breaks there now."""
    def lines(quantity_of) -> list[str]:
        runs = [run(t, val("ttft", x / 1e3, quantity=quantity_of(t))) for t, x in NIGHTS]
        return re.findall(r'<polyline points="([^"]*)" fill="none" stroke="#9aa3ad"', render_trend(runs))

    one = lines(lambda t: "ttft_p50")
    assert len(one) == 1 and len(one[0].split()) == 5  # five nights, one line
    two = lines(lambda t: "ttft_p90" if t < "2026-12-05" else "ttft_p50")
    assert len(two) == 1 and len(two[0].split()) == 4  # the four ttft_p90 nights; the last night stands alone


def test_each_night_is_judged_under_its_own_stored_policy() -> None:
    """Trial s26a #6: a night judged with --roofline-drift 5% failed on a -6.5 % move, and the page, judging every
    night under the latest night's 10 %, showed that night's row DRIFTED beside a green "-6.5%, within 10%" cell."""
    nights = [("2026-12-01T02:00:00Z", 100.0), ("2026-12-02T02:00:00Z", 100.0), ("2026-12-03T02:00:00Z", 100.0),
              ("2026-12-04T02:00:00Z", 93.5), ("2026-12-05T02:00:00Z", 93.6)]
    runs = [run(t, val("ttft", x / 1e3)) for t, x in nights]
    runs = [replace(r, drift_threshold="5%" if r.started_at.startswith("2026-12-04") else "10%",
                    drift_baseline="previous") for r in runs]
    html = render_trend(runs)
    cells = re.findall(r'class="drift drift-([a-z]+)" title="([^"]*)"', html)
    night4 = [(st, title) for st, title in cells if title.startswith("-6.5%")]
    assert night4 and all(st != "steady" for st, _t in night4), cells
    assert all("beyond 5%" in t for _st, t in night4), night4
    # given on the command line, one policy judges every night: the 5% night's move is within 10% there
    again = re.findall(r'class="drift drift-([a-z]+)" title="(-6.5%[^"]*)"', render_trend(runs, drift="10%"))
    assert again and all(st == "steady" for st, _t in again), again


def test_a_workload_change_is_ruled_on_the_chart_and_breaks_its_line() -> None:
    """Trial s26a #12: input 128 -> 256 tokens showed only as a '(workload changed)' table cell; the chart joined the
    measured line across it. It gets a rule, as a new vLLM version does, and the line breaks there."""
    wl = {t: ("in 128 / out 64 tokens" if t < "2026-12-04" else "in 256 / out 64 tokens") for t, _x in NIGHTS}
    runs = [run(t, replace(val("ttft", x / 1e3), workload=wl[t])) for t, x in NIGHTS]
    html = render_trend(runs)
    assert html.count(">workload changed<") == 1
    lines = re.findall(r'<polyline points="([^"]*)" fill="none" stroke="#9aa3ad"', html)
    assert [len(ln.split()) for ln in lines] == [3, 2]  # the three 128-token nights, then the two 256-token ones
    same = [run(t, replace(val("ttft", x / 1e3), workload="in 128 / out 64 tokens")) for t, x in NIGHTS]
    assert ">workload changed<" not in render_trend(same)
