"""The scorecard and the pytest-html report measured in headless Chromium (a newcomer's visual trial of
2026-12-06; its findings H3, M9 and M10): what only a browser's layout decides.

* H3: at a 1400-px window every column of the predictions table is on screen, the drift column included (it was
  the last column of a table 1,362 px wide in a 1,228-px box);
* M10: at 800 px the goodput table's SLO cell takes at most two lines (it took one word a line), and each row's
  reason under the predictions table ends inside the visible box (it was cut at the card's edge, mid-word);
* M9: at 1400 px the pytest-html results table is no wider than the window (it was 1,537 px);
* L1: in every chart, the labels as the browser draws them (their glyphs' boxes, not the layout's estimate) are
  crossed by no vertical reference line but their own and overlap no other label (day3's TTFT knee label ran across
  the other knee's line, 68 px from its own).

A copy of each page gets a script that measures it and writes the numbers into the page (the pages have no script
of their own, and the scorecard's Content-Security-Policy, removed from the copy, would refuse one).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.browser import measure_in_chromium, needs_chromium, run_chromium
from support.paths import CPU_TINY, DAY3, DAY3_RESULTS
from support.pytest_run import NO_CACHE
from support.recordings import recording_path

from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.results import load_results
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.report.scorecard import _figures, _with_outcomes, render_scorecard, score_spec

pytestmark = needs_chromium

_MEASURE = r"""<script>
addEventListener('load', () => setTimeout(() => {
  const out = {viewport: document.documentElement.clientWidth, preds: [], slo: [], reasons: [], results: null};
  for (const t of document.querySelectorAll('table.preds')) {
    const box = t.closest('.scroll');
    const heads = [...t.querySelectorAll('thead th')].map(th => [th.textContent, th.getBoundingClientRect().right]);
    out.preds.push({scroll: t.scrollWidth, box: box.clientWidth, right: box.getBoundingClientRect().right,
                    heads});
    for (const s of t.querySelectorAll('tr.more > td > details > summary')) {
      const edge = box.getBoundingClientRect().right;
      out.reasons.push([s.textContent.slice(0, 40), s.getBoundingClientRect().right, edge]);
    }
  }
  for (const td of document.querySelectorAll('table.goodput td.slo')) {
    const r = document.createRange(); r.selectNodeContents(td);
    out.slo.push(new Set([...r.getClientRects()].map(c => Math.round(c.top))).size);
  }
  const rt = document.querySelector('#results-table');
  if (rt) out.results = {width: rt.getBoundingClientRect().width, rows: rt.querySelectorAll('tbody').length};
  document.body.textContent = 'MEASURED' + JSON.stringify(out) + 'MEASURED';
}, 300));
</script>"""


def _measure(tmp_path: Path, html: str, width: int, name: str) -> dict[str, Any]:
    return measure_in_chromium(tmp_path, html, _MEASURE, "MEASURED", f"{width},1200", f"{name}-{width}")


def _scorecard(yaml_path: Path, results: Path, *, drift: bool) -> str:
    spec = load_spec(yaml_path)
    data = json.loads(results.read_text(encoding="utf-8"))
    verdicts = score_spec(spec, data)
    drifts = ({(str(v.file), v.id): {"status": "drifted", "change_rel": -0.666, "text": "-66.6% vs previous run"}
               for v in verdicts} if drift else None)
    return render_scorecard(spec, verdicts, data, drifts=drifts)


@pytest.mark.parametrize("run", ["cpu-tiny", "day3"])
def test_h3_every_column_is_on_screen_at_1400(tmp_path: Path, run: str) -> None:
    yaml_path, results = (CPU_TINY, recording_path("cpu-tiny")) if run == "cpu-tiny" else (DAY3, DAY3_RESULTS)
    got = _measure(tmp_path, _scorecard(yaml_path, results, drift=True), 1400, run)
    [table] = got["preds"]
    assert table["scroll"] <= table["box"], table  # nothing to scroll to
    heads = dict(table["heads"])
    assert "drift" in heads and "allowed interval" in heads
    assert max(right for _h, right in table["heads"]) <= table["right"] + 0.5 <= got["viewport"]


def test_m10_at_800_the_slo_takes_two_lines_and_reasons_end_in_view(tmp_path: Path) -> None:
    got = _measure(tmp_path, _scorecard(DAY3, DAY3_RESULTS, drift=False), 800, "day3")
    assert got["slo"] == [2, 2]  # "TTFT ≤ 500 ms and" / "TPOT ≤ 50 ms", for p50 and p99
    assert len(got["reasons"]) == 36
    for text, right, box_right in got["reasons"]:
        assert right <= box_right + 0.5, text  # wrapped at a word inside the visible box, never cut at its edge


@pytest.mark.slow
def test_m9_the_pytest_html_table_fits_1400(tmp_path: Path, pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("day3.yaml").write_text(DAY3.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest_subprocess(*NO_CACHE, "--replay", str(DAY3_RESULTS), "day3.yaml",
                                           "--html", "report.html", "--self-contained-html")
    result.assert_outcomes(passed=26, xfailed=10)
    html = (pytester.path / "report.html").read_text(encoding="utf-8")
    got = _measure(tmp_path, html, 1400, "report")
    assert got["results"] is not None and got["results"]["rows"] >= 36
    assert got["results"]["width"] <= got["viewport"], got["results"]  # the Reason column is not cut off


_LABELS = r"""<script>
addEventListener('load', () => setTimeout(() => {
  const out = [];
  for (const svg of document.querySelectorAll('svg.rl-chart')) {
    // the vertical reference lines, by their geometry: from the plot's top to its bottom at one x, not the grid's
    const plot = svg.querySelector('rect[fill="#fcfcfd"]');
    const top = +plot.getAttribute('y'), bottom = top + +plot.getAttribute('height');
    const lines = [...svg.querySelectorAll('line')].filter(l => l.getAttribute('x1') === l.getAttribute('x2')
        && Math.abs(+l.getAttribute('y1') - top) < 0.05 && Math.abs(+l.getAttribute('y2') - bottom) < 0.05
        && l.getAttribute('stroke') !== '#ececec').map(l => l.getAttribute('x1'));
    const labels = [...svg.querySelectorAll('text.rl-label')].map(t => {
      const b = t.getBBox();
      return [[t.firstChild.textContent, ...[...t.querySelectorAll('tspan')].map(s => s.textContent)].join(' '),
              b.x, b.y, b.x + b.width, b.y + b.height, t.getAttribute('data-vline')];
    });
    out.push({chart: svg.getAttribute('aria-label'), lines, labels});
  }
  document.body.textContent = 'MEASURED' + JSON.stringify(out) + 'MEASURED';
}, 300));
</script>"""


def test_l1_no_label_as_drawn_is_crossed_by_another_vertical_line(tmp_path: Path) -> None:
    # every chart of both recorded runs, with either y axis, on one page (the scorecard hides the alternative axis,
    # and a hidden text has no box): the glyphs' boxes Chromium lays out, against the vertical lines' x
    svgs = []
    for yaml_path, results in ((CPU_TINY, recording_path("cpu-tiny")), (DAY3, DAY3_RESULTS)):
        spec = load_spec(yaml_path)
        data = dict(load_results(results))
        for f in _figures(spec, spec_setup(spec), data, _with_outcomes(spec, score_spec(spec, data))):
            svgs += [svg for svg in (f.svg, f.alt_svg) if svg.startswith("<svg")]
    page = tmp_path / "charts.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'></head><body>" + "".join(svgs) + _LABELS
                    + "</body></html>", encoding="utf-8")
    out = run_chromium(tmp_path, page.as_uri(), "--window-size=1400,1200", "--virtual-time-budget=10000",
                       "--dump-dom").stdout
    m = re.search(r"MEASURED(.*?)MEASURED", out, flags=re.S)
    assert m is not None, out[-2000:]
    charts = json.loads(m.group(1))
    assert len(charts) == len(svgs)
    texts = []
    for c in charts:
        for i, (text, x0, y0, x1, y1, own) in enumerate(c["labels"]):
            assert x1 - x0 > 5, (c["chart"], text)  # laid out
            texts.append(text)
            for x in c["lines"]:
                if x != own:
                    assert not x0 < float(x) < x1, f"{c['chart']}: the line at x = {x} crosses {text!r}"
            for t2, a0, b0, a1, b1, _ in c["labels"][i + 1:]:  # a glyph box is a line's height: 1 px may touch
                assert not (x0 < a1 and a0 < x1 and y0 + 1 < b1 and b0 + 1 < y1), (c["chart"], text, t2)
    assert "measured TTFT knee C = 2" in texts and "ink TTFT knee C = 4" in texts
    assert sum(len(c["lines"]) for c in charts) >= 8  # knees, the half-saturation B, the ridge, the asymptote


_MEASURE_NARROW = r"""<script>
addEventListener('load', () => setTimeout(() => {
  const vw = document.documentElement.clientWidth;
  const past = el => el.getBoundingClientRect().right > vw + 0.5;
  const out = {viewport: vw, page: document.documentElement.scrollWidth,
               cards: [...document.querySelectorAll('.card, figure.chart, header.top')].filter(past).length,
               cells: [...document.querySelectorAll('table.preds td[data-l]')].filter(
                 td => td.offsetParent !== null && past(td)).map(td => td.dataset.l),
               labelled: [...document.querySelectorAll('table.preds td[data-l]')].filter(
                 td => td.offsetParent !== null && getComputedStyle(td, '::before').content.includes(td.dataset.l)
               ).length,
               thead: [...document.querySelectorAll('table.preds thead')].filter(t => t.offsetParent !== null).length,
               misses: [...document.querySelectorAll('table.misses td')].filter(past).length};
  document.body.textContent = 'MEASURED' + JSON.stringify(out) + 'MEASURED';
}, 300));
</script>"""


def test_m5_at_420_px_nothing_is_cut_and_each_value_is_labelled(tmp_path: Path) -> None:
    """Trial s18 M5: at 420 px the Verdicts and Setup cards ran off the window and the predictions table hid its
    values in a sideways scroller with no hint. Now nothing on the page is wider than the window, and every value
    cell of a prediction is on screen under its own label (the table's head, which would be off screen, is hidden).
    Headless Chromium's --dump-dom lays a 420-px window out 500 px wide (its smallest); the narrow layout is the same
    from 700 px down, and without it this page was 835 px wide there with every value cell off screen."""
    html = _scorecard(DAY3, DAY3_RESULTS, drift=False)
    got = measure_in_chromium(tmp_path, html, _MEASURE_NARROW, "MEASURED", "420,1200", "narrow")
    assert got["page"] <= got["viewport"], got
    assert got["cards"] == 0 and got["misses"] == 0 and got["cells"] == [], got
    assert got["thead"] == 0 and got["labelled"] > 0, got
