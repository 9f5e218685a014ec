"""A newcomer's visual trial of the outputs (2026-12-06), finding by finding: each test checks the property the trial
found broken, on the outputs of a replay of the recorded runs (no engine), with the expected values worked out
here from the files, not read back from the code under test.

The geometry a browser decides (a table that fits the window, a cell that wraps) is measured in headless Chromium
by tests/integration/test_scorecard_fits_the_window.py; these check what the markup and the text promise.

Numbers used below, from predictions/day3.yaml and its recording (predictions/recorded/day3-2026-07-31.results.json):

* throughput-c1: ink ``123.4 tok/s`` (±15%), measured 88.8 tok/s (transcribed with one decimal), so the error is
  88.8 − 123.4 = −34.6 tok/s; its xfail (mode: measured) expects the miss;
* the decode roofline at B = 1: weights 2 × 8,190,735,360 B = 16,381,470,720 B and KV 147,456 B × 1,000 tokens
  = 147,456,000 B, read at 2,039 GB/s: t_step = 16,528,926,720 ÷ 2.039e12 = 8.1064 ms, so 1 ÷ t_step = 123.36 tok/s;
* prefill-floor: ink ``53 ms`` (precision written: half of its last digit, 0.5 ms); params: ink ``8.2e9``, whose
  last written digit is the 0.1e9 place, so ±0.05e9 = ±50,000,000;
* the SLO: TTFT ≤ 0.5 s = 500 ms and TPOT ≤ 0.05 s = 50 ms at p99; goodput p99 639.5 tok/s at C = 8;
  goodput p50's band: 1,763 tok/s ± 5% = [1,674.85, 1,851.15] tok/s.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from support.paths import CPU_TINY, DAY3, DAY3_RESULTS
from support.recordings import recording_path

from pytest_roofline.format.spec import Spec, load_spec
from pytest_roofline.pytest_plugin import active
from pytest_roofline.report import charts as ch
from pytest_roofline.report.common import band_svg
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.report.points import goodput_table, points_table
from pytest_roofline.report.resources import css
from pytest_roofline.report.scorecard import (
    BAND_WIDTH,
    REASON_CHARS,
    _figures,
    _short_reason,
    _with_outcomes,
    render_scorecard,
    score_spec,
)
from pytest_roofline.report.svg import LINE_HEIGHT, PALETTE, Axis, Chart, lines_box, text_box
from pytest_roofline.report.terminal import drift_lines, summary_table, wrap_count
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus
from pytest_roofline.units import format_value

NS = "{http://www.w3.org/2000/svg}"


def _run(yaml_path: Path, results: Path | None) -> tuple[Spec, dict[str, Any] | None, list[Verdict]]:
    spec = load_spec(yaml_path)
    data = json.loads(results.read_text(encoding="utf-8")) if results is not None else None
    return spec, data, score_spec(spec, data)


@pytest.fixture(scope="module")
def day3() -> tuple[Spec, dict[str, Any] | None, list[Verdict]]:
    return _run(DAY3, DAY3_RESULTS)


@pytest.fixture(scope="module")
def by_id(day3: tuple[Spec, Any, list[Verdict]]) -> dict[str, Verdict]:
    return {v.id: v for v in day3[2]}


def _figs(run: tuple[Spec, Any, list[Verdict]]) -> dict[str, ch.Figure]:
    spec, data, verdicts = run
    return {f.key: f for f in _figures(spec, spec_setup(spec), data, _with_outcomes(spec, verdicts))}


class _Report:
    """What summary_table reads of a pytest report: the verdict's dict form and the outcome."""

    def __init__(self, v: Verdict, outcome: str):
        self.roofline, self.when = v.to_dict(), "call"
        self.outcome = "skipped" if outcome == "xfailed" else ("passed" if outcome == "xpassed" else outcome)
        self.failed, self.skipped = self.outcome == "failed", self.outcome == "skipped"
        if outcome in ("xfailed", "xpassed"):
            self.wasxfail = "expected"


def _reports(spec: Spec, verdicts: list[Verdict]) -> list[_Report]:
    return [_Report(v, o) for v, o, _p in _with_outcomes(spec, verdicts)]


def _table_rows(lines: list[str]) -> dict[str, str]:
    return {ln.split()[0]: ln for ln in lines[2:-1]}


# ----------------------------------------------------------------------------------------------------------- H3
def test_h3_the_drift_column_sits_next_to_the_verdict(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    spec, data, verdicts = day3
    drifts = {(str(v.file), v.id): {"status": "drifted", "change_rel": -0.666, "text": "-66.6% vs previous run"}
              for v in verdicts}
    html = render_scorecard(spec, verdicts, data, drifts=drifts)
    table = html.split('<table class="preds"', 1)[1]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", table.split("</thead>", 1)[0])
    assert heads[:3] == ["", "drift", "prediction"]  # the last column of a wide table is the first to go unseen
    assert heads[-1] == "allowed interval"  # trial s18 M1: "band" is the serving model's alone
    rows = re.findall(r'<tr class="main">(.*?)</tr>', table, flags=re.S)
    assert len(rows) == len(verdicts) == 36
    for row in rows:
        cells = re.findall(r"<td( class=\"[^\"]*\")?", row)
        assert cells[1] == ' class="drift rl-drift-drifted"', row[:200]
        assert "-66.6%" in row.split('class="drift', 1)[1].split("</td>", 1)[0]
    # every row's band drawing is BAND_WIDTH wide, the width the page's columns were sized with (the 520-px ones
    # are in the rows' details)
    widths = {w for row in rows for w in re.findall(r'viewBox="0 0 (\d+) ', row.split('<td class="band"', 1)[1])}
    assert widths == {str(BAND_WIDTH)}


def test_h3_long_quantities_may_wrap_after_an_underscore(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    spec, data, verdicts = day3
    html = render_scorecard(spec, verdicts, data)
    cell = html.split('<td class="q">', 2)[1].split("</td>", 1)[0]  # params: param_count
    assert cell == "param_<wbr>count"


# ---------------------------------------------------------------------------------------------------------- M10
def test_m10_the_slo_cell_wraps_between_its_conditions_only(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    spec, data, _ = day3
    html = goodput_table(spec, data or {})
    slo_cells = re.findall(r'<td class="slo">(.*?)</td>', html)
    assert len(slo_cells) == 2  # p50 and p99
    for cell in slo_cells:
        assert cell == ('<span class="nw">TTFT ≤ 500 ms</span> and <span class="nw">TPOT ≤ 50 ms</span>')
    assert '<span class="nw">639.5 tok/s</span> <span class="nw">at C = 8</span>' in html
    sheet = css("scorecard")
    assert ".nw{white-space:nowrap}" in sheet and "table.goodput td.num{white-space:normal}" in sheet


def test_m10_a_reason_is_held_to_the_window_width() -> None:
    sheet = css("scorecard")
    rule = re.search(r"table\.preds tr\.more details\{([^}]*)\}", sheet)
    assert rule is not None
    assert "position:sticky" in rule.group(1) and "max-width:calc(100vw" in rule.group(1)


# ----------------------------------------------------------------------------------------------------------- M5
def test_m5_each_row_shows_the_tolerance_it_was_checked_with(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    spec, _, verdicts = day3
    lines = summary_table(_reports(spec, verdicts), width=200)
    assert lines[0].split()[-2:] == ["tolerance", "verdict"]
    rows = _table_rows(lines)
    assert rows["prefill-floor"].split()[-3:] == ["±0.5", "ms", "PASS"]  # 53 ms: half a unit of its last digit
    assert rows["params"].split()[-2:] == ["±50,000,000", "PASS"]  # 8.2e9: ±0.05e9, written out
    assert rows["throughput-c1"].split()[-2:] == ["±15%", "XFAIL"]


def test_m5_a_pass_far_from_the_ink_reads_with_its_one_sided_tolerance() -> None:
    spec, _, verdicts = _run(CPU_TINY, recording_path("cpu-tiny"))
    for width in (80, 120, 200):
        lines = summary_table(_reports(spec, verdicts), width=width)
        assert all(len(ln) <= width for ln in lines), (width, max(lines, key=len))
        row = next(ln for ln in lines if ln.startswith("queueing-past-the-cap"))
        assert row.split()[-4:-1] == [">=", "100", "ms"], row  # `>= 100 ms` in the file: any value above passes
        knee = next(ln for ln in lines if ln.startswith("knee"))
        assert "2..16" in knee


# ------------------------------------------------------------------------------------------------------ M4 + L5
def test_m4_the_table_uses_the_terminal_width_up_to_200() -> None:
    assert active.MAX_TABLE_WIDTH == 200


def test_m4_at_200_columns_the_models_show_with_their_units(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    spec, _, verdicts = day3
    lines = summary_table(_reports(spec, verdicts), width=200)
    assert max(len(ln) for ln in lines) <= 200
    head = lines[0].split()
    assert {"quantity", "roofline", "serving", "tolerance"} <= set(head)
    row = _table_rows(lines)["throughput-c1"]
    assert "123.36 tok/s" in row  # 1 ÷ (16,528,926,720 B ÷ 2.039e12 B/s), with its unit (L5)
    assert re.search(r"\d tok/s \[[\d,.]+–[\d,.]+\]", row), row  # the serving value keeps its unit; the band too
    assert "output_throughput" in row  # the quantity whole: no 14-character cut at 200 columns


# ----------------------------------------------------------------------------------------------------------- M1
def test_m1_the_caption_names_the_goodput_column_yellow(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    assert ch.C_GOODPUT_COLUMN == PALETTE["yellow"]
    cap = _figs(day3)["ttft"].caption
    assert cap.startswith("The yellow column marks the goodput point") and "green band marks" not in cap
    assert "p99 TTFT and TPOT" in cap  # the file's SLO percentile


@pytest.mark.parametrize("run", ["cpu-tiny", "math"])
def test_m1_no_goodput_caption_without_a_goodput_column(run: str) -> None:
    figs = _figs(_run(CPU_TINY, recording_path("cpu-tiny")) if run == "cpu-tiny" else _run(DAY3, None))
    for f in figs.values():
        assert "goodput point" not in f.caption, (run, f.key)
        assert ch.GOODPUT_COLUMN_LABEL not in f.svg, (run, f.key)


# ----------------------------------------------------------------------------------------------------------- M2
def test_m2_a_long_note_wraps_inside_the_chart() -> None:
    chart = Chart(Axis(1, 128, "log"), Axis(0, 10), width=600, height=340, title="t")
    note = ("model: no knee — KV-inclusive intensity never reaches the ridge; throughput only flattens "
            "(half-saturation B = 111)")
    chart.note(note, color="#0072B2")
    chart.line([(1, 1), (128, 9)], color="#000")
    root = ET.fromstring(chart.render())
    lines = [t for t in root.iter(f"{NS}text") if t.get("font-weight") == "600" and t.get("fill") == "#0072B2"]
    assert len(lines) == 2
    assert " ".join(t.text or "" for t in lines) == note  # nothing lost
    for t in lines:  # bold glyphs are ~6% wider than the layout estimate: checked with that margin
        x0, _, x1, _ = text_box(float(t.get("x", 0)), 0, t.text or "", 10.5 * 1.06, "start")
        assert x1 <= 600, (t.text, x1)
    # the plot keeps the height it has with a one-line note: the chart grows by the extra line
    one = Chart(Axis(1, 128, "log"), Axis(0, 10), width=600, height=340, title="t")
    one.note("short", color="#0072B2")
    assert chart._plot_h == one._plot_h
    assert float(root.get("height", 0)) == float(ET.fromstring(one.render()).get("height", 0)) + 15


def test_m2_the_half_saturation_note_is_drawn_whole(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    root = ET.fromstring(_figs(day3)["throughput"].svg)
    text = " ".join(t.text or "" for t in root.iter(f"{NS}text") if t.get("font-weight") == "600")
    assert "throughput only flattens (half-saturation B = 111)" in text  # 111.09 in the notebook


# ----------------------------------------------------------------------------------------------------------- M3
def _band_labels(svg: str) -> list[tuple[float, float, str]]:
    root = ET.fromstring(svg)
    out = []
    for t in root.iter(f"{NS}text"):
        if float(t.get("y", 0)) > 20:  # the end labels, under the band
            x0, _, x1, _ = text_box(float(t.get("x", 0)), 0, t.text or "", 10, t.get("text-anchor", "start"))
            out.append((x0, x1, t.text or ""))
    return out


def test_m3_the_band_end_labels_never_overlap(by_id: dict[str, Verdict]) -> None:
    v = by_id["goodput-p50"]
    assert (v.lo, v.hi) == pytest.approx((1763 * 0.95, 1763 * 1.05))
    labels = _band_labels(band_svg(v, width=520, height=64, labels=True))
    assert [t for _, _, t in labels] == ["1,675 tok/s", "1,851 tok/s"]
    (a0, a1, _), (b0, b1, _) = labels
    assert a1 + 2 <= b0, labels  # the trial's "1,675 tok/s1,851 tok/s"
    assert a0 >= 0 and b1 <= 520


def test_m3_a_band_too_narrow_for_two_labels_gets_one(by_id: dict[str, Verdict]) -> None:
    v = by_id["goodput-p50"]
    labels = _band_labels(band_svg(v, width=200, height=64, labels=True))
    assert [t for _, _, t in labels] == ["1,675 tok/s – 1,851 tok/s"]
    for i, (a0, a1, _) in enumerate(labels):
        assert a0 >= 0 and a1 <= 200
        for b0, b1, _ in labels[i + 1:]:
            assert a1 <= b0 or b1 <= a0, labels


# ---------------------------------------------------------------------------------------------------- M11 + L12
def _markers(root: ET.Element) -> list[tuple[str, float, float, str]]:
    out = []
    for e in root.iter():
        if e.get("data-r") is None:
            continue
        title = e.find(f"{NS}title")
        tip = title.text or "" if title is not None else ""
        tag = e.tag.replace(NS, "")
        if tag == "circle":
            out.append(("circle", float(e.get("cx", 0)), float(e.get("cy", 0)), tip))
        elif tag == "polygon":
            pts = [tuple(map(float, p.split(","))) for p in (e.get("points") or "").split()]
            shape = "diamond" if len(pts) == 4 else "star" if len(pts) == 10 else "triangle"
            cx = pts[0][0] if shape == "diamond" else sum(p[0] for p in pts) / len(pts)
            out.append((shape, cx, sum(p[1] for p in pts) / len(pts), tip))
    return out


def test_m11_every_marker_stays_on_its_concurrency(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    fig = _figs(day3)["throughput"]
    for svg in (fig.svg, fig.alt_svg):  # log and linear y
        root = ET.fromstring(svg)
        ms = _markers(root)
        pattern = re.compile(r"C=(\d+): [\d,.]+ tok/s measured")
        measured_x = {float(m.group(1)): x for _s, x, _y, tip in ms if (m := pattern.match(tip))}
        assert sorted(measured_x) == [1, 2, 4, 8, 16, 32, 64, 128]
        star = [x for s, x, _y, _t in ms if s == "star"]
        assert star == [pytest.approx(measured_x[8], abs=0.2)]  # goodput at C = 8, drawn at C = 8
        inks = [(x, tip) for s, x, _y, tip in ms if s == "diamond"]
        assert len(inks) == 5  # throughput-c1, -c16, -c64, -c128 and post-draft-c64
        for x, tip in inks:
            c = float(re.search(r" at C=(\d+)", tip).group(1))  # type: ignore[union-attr]
            assert x == pytest.approx(measured_x[c], abs=0.2), tip
        labels = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "rl-label"]
        assert "goodput 640 tok/s" in labels  # with its unit, as every other value label


def test_m11_no_marker_is_moved_off_its_value(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    # trial s13 item 6: the star lifted off the C = 8 point (639.5 tok/s) was drawn at ~1,030 tok/s on the log
    # axis. It now sits on the point itself, drawn beneath it, and nothing needs a leader back to its value
    fig = _figs(day3)["throughput"]
    for svg in (fig.svg, fig.alt_svg):
        root = ET.fromstring(svg)
        assert not [e for e in root.iter(f"{NS}path") if e.get("class") == "rl-leader"]
        ms = _markers(root)
        c8 = next((x, y) for _s, x, y, tip in ms if tip.startswith("C=8: 639.5 tok/s measured"))
        star = [(x, y) for s, x, y, _t in ms if s == "star"]
        assert star == [(pytest.approx(c8[0], abs=0.02), pytest.approx(c8[1], abs=0.02))]
        order = [tip for _s, _x, _y, tip in ms]
        star_at = next(i for i, t in enumerate(order) if t.startswith("goodput at p99"))
        assert star_at < order.index(next(t for t in order if t.startswith("C=8: 639.5 tok/s measured")))


def test_l12_contamination_rings_circle_both_percentiles(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    figs = _figs(day3)
    for key in ("ttft", "tpot"):
        root = ET.fromstring(figs[key].svg)
        rings = [(float(e.get("cx", 0)), float(e.get("cy", 0))) for e in root.iter(f"{NS}circle")
                 if e.get("stroke") == ch.C_CONTAM and e.get("fill") == "none" and e.get("data-r")]
        pts = [(float(e.get("cx", 0)), float(e.get("cy", 0)), e.get("fill")) for e in root.iter(f"{NS}circle")
               if e.get("data-r") and e.get("fill") in (ch.C_P50, ch.C_P99)]
        p99 = [(x, y) for x, y, f in pts if f == ch.C_P99]
        # 7 of the 8 points are flattered by prefix-cache hits (C = 1 … 64): a ring on each p50 and each p99
        assert len(rings) == 14, key
        assert sum(any(math.hypot(x - a, y - b) < 0.05 for a, b in rings) for x, y in p99) == 7, key


# ----------------------------------------------------------------------------------------------------------- M7
@pytest.mark.parametrize("si,dim,unit,text", [
    (88.8, "throughput", None, "88.8 tok/s"),  # never "88.800 tok/s"
    (123.4, "throughput", None, "123.4 tok/s"),
    (16.38e9, "bytes", "GB", "16.38 GB"),
    (0.9975, "ratio", "", "0.9975"),
    (1.0, "ratio", "", "1"),
    (52.50496e-3, "time", "ms", "52.505 ms"),  # five digits where the value has them
    (1740.8039, "throughput", None, "1,740.8 tok/s"),
    (5e7, "count", "", "50,000,000"),
])
def test_m7_no_zeros_past_the_digits_a_value_has(si: float, dim: str, unit: str | None, text: str) -> None:
    assert format_value(si, dim, unit, digits=5) == text


def test_m7_the_replayed_texts_say_what_was_transcribed(by_id: dict[str, Verdict]) -> None:
    c1 = by_id["throughput-c1"]
    assert c1.measured_text == "88.8 tok/s"
    assert c1.reason == "measured 88.8 tok/s is outside ±15% of predicted 123.4 tok/s"
    assert c1.error_text == "-28.04% (−34.6 tok/s)"  # 88.8 − 123.4
    assert by_id["per-request-c64"].measured_text == "39.1 tok/s"
    assert by_id["littles-law[concurrency=4]"].measured_text == "0.9975"
    assert by_id["params"].tolerance_text == "±50,000,000 (precision written)"
    for v in by_id.values():  # no scientific notation in a tolerance a reader checks
        assert not re.search(r"\de[+-]\d", v.tolerance_text), (v.id, v.tolerance_text)


# ---------------------------------------------------------------------------------------------------------- M13
def test_m13_an_expected_miss_says_so_in_its_verdict_row(by_id: dict[str, Verdict]) -> None:
    v = by_id["throughput-c1"]
    assert v.status is VerdictStatus.FAIL and v.mode is VerdictMode.MEASURED
    verdict = dict(v.explanation_rows())["verdict"]
    why = " ".join(v.xfail_reason.split())
    assert why.startswith("measured 88.8 tok/s: the decode roofline is a ceiling")
    assert verdict == f"FAIL, the expected miss (xfail: {why}) — {v.reason}"
    assert f"verdict   : FAIL, the expected miss (xfail: {why})" in v.explain()  # the --runxfail longrepr
    # the HTML explanation has the reason in its own paragraph under the table: the row points to it
    assert dict(v.explanation_rows(xfail_below=True))["verdict"].startswith(
        "FAIL, the expected miss (xfail, its reason below) — ")


def test_m13_an_xfail_for_the_measured_check_says_nothing_of_the_math_check() -> None:
    _, _, verdicts = _run(DAY3, None)
    v = next(v for v in verdicts if v.id == "throughput-c1")  # xfail: {mode: measured}
    assert v.mode is VerdictMode.MATH and v.xfail_reason == ""
    assert dict(v.explanation_rows())["verdict"].startswith(f"{v.status.value.upper()} — ")


# ----------------------------------------------------------------------------------------------------------- M9
def test_m9_the_roofline_columns_wrap_between_words() -> None:
    sheet = css("pytest-html")
    rule = re.search(r'#results-table td\[class\^="col-rl_"\]\{([^}]*)\}', sheet)
    assert rule is not None and "white-space:normal" in rule.group(1)
    assert "min-width:220px" in sheet  # the Reason column keeps room to be read


# ----------------------------------------------------------------------------------------------------------- L1
def _vline_labels(svg: str) -> tuple[dict[str, float], dict[str, tuple[list[str], tuple[float, ...], ET.Element]]]:
    """The x of each vertical reference line (by its colour) and each label: (its lines, its box, its element)."""
    root = ET.fromstring(svg)
    xs = {e.get("stroke") or "": float(e.get("x1", 0)) for e in root.iter(f"{NS}line") if e.get("class") == "rl-vline"}
    labels = {}
    for t in root.iter(f"{NS}text"):
        if t.get("class") == "rl-label":
            lines = [t.text or ""] + [ts.text or "" for ts in t.iter(f"{NS}tspan")]
            labels[" ".join(lines)] = (lines, tuple(float(v) for v in (t.get("data-box") or "").split()), t)
    return xs, labels


def _knees(c2: float, c4: float) -> str:
    """Two knee lines as the TTFT chart draws them (day3: the measured knee at C = 2, the ink's at C = 4)."""
    chart = Chart(Axis(0.8, 160, "log"), Axis(10, 20000, "log"), width=600, height=340, title="t", subtitle="s")
    chart.vline(c2, color="#D55E00", text=f"measured TTFT knee C = {c2:g}", text_pos=0.0)
    chart.vline(c4, color="#444", dash="3 3", text=f"ink TTFT knee C = {c4:g}", text_pos=0.08)
    return chart.render()


def test_l1_a_knee_label_never_runs_across_the_other_knee_line() -> None:
    # the trial: "the 'measured TTFT knee C = 2' label is crossed by the ink-knee line at C = 4". One doubling apart
    # the lines are 68 px apart and the label 164 px wide on one line: it is broken into lines, beside its own line
    xs, labels = _vline_labels(_knees(2, 4))
    measured, ink = xs["#D55E00"], xs["#444"]
    assert 60 < ink - measured < 75
    lines, box, el = labels["measured TTFT knee C = 2"]
    assert len(lines) > 1 and max(len(ln) for ln in lines) < len("measured TTFT knee C = 2")
    assert not box[0] < ink < box[2] and not box[0] < measured < box[2]
    assert min(abs(box[0] - measured), abs(box[2] - measured)) == pytest.approx(4, abs=0.01)  # beside its own
    assert box == pytest.approx(lines_box(float(el.get("x", 0)), float(el.get("y", 0)), lines, 11,
                                          el.get("text-anchor", "start")), abs=0.01)
    assert [float(ts.get("dy", 0)) for ts in el.iter(f"{NS}tspan")] == [11 * LINE_HEIGHT] * (len(lines) - 1)
    lines2, box2, _ = labels["ink TTFT knee C = 4"]
    assert lines2 == ["ink TTFT knee C = 4"] and not box2[0] < measured < box2[2]
    assert not (box[0] < box2[2] and box2[0] < box[2] and box[1] < box2[3] and box2[1] < box[3])


def test_l1_knee_lines_far_apart_keep_their_labels_on_one_line() -> None:
    xs, labels = _vline_labels(_knees(2, 32))
    for text in ("measured TTFT knee C = 2", "ink TTFT knee C = 32"):
        lines, box, _ = labels[text]
        assert lines == [text]
        assert all(not box[0] < x < box[2] for x in xs.values()), text
    # the measured one where it was asked for: right of its line, at the top of the plot
    _lines, box, el = labels["measured TTFT knee C = 2"]
    assert el.get("text-anchor") == "start" and box[0] == pytest.approx(xs["#D55E00"] + 4, abs=0.01)


# ----------------------------------------------------------------------------------------------------------- L8
#: the trial's count line: cpu-tiny's second night, 19 measured values compared, 1 drifted, 3 model-only
TRIAL_COUNT = "roofline drift: 19 compared (1 drifted, 18 steady), 3 not measured vs the previous run"


def _trial_drifts() -> list[tuple[str, dict[str, Any]]]:
    drifted = [("queueing-past-the-cap", {"status": "drifted", "text": "+25.0% vs previous run (2026-12-01, "
                                          "bb56575-dirty; baseline 1,382 ms), beyond 10%"})]
    steady = [(f"p{i}", {"status": "steady", "text": "+0.0% vs previous run"}) for i in range(18)]
    return drifted + steady + [(f"m{i}", {"status": "not_measured"}) for i in range(3)]


def test_l8_the_drift_count_line_fits_80_columns() -> None:
    assert len(TRIAL_COUNT) == 86  # the trial's line, 6 columns over
    for verbosity in (0, -1, -2):
        lines = drift_lines(_trial_drifts(), "the previous run", verbosity=verbosity, width=80)
        assert max(len(ln) for ln in lines) <= 80, lines
        count = lines[next(i for i, ln in enumerate(lines) if ln.startswith("roofline drift: ")):]
        assert count == ["roofline drift: 19 compared (1 drifted, 18 steady), 3 not measured",
                         "                vs the previous run"]
        assert " ".join(" ".join(count).split()) == TRIAL_COUNT  # every word, in order
    # the listed drift above it wraps under its text, as it did
    lines = drift_lines(_trial_drifts(), "the previous run", width=80)
    assert lines[0].startswith("queueing-past-the-cap DRIFTED   +25.0% vs previous run")


def test_l8_a_wide_terminal_keeps_the_count_on_one_line() -> None:
    for width in (86, 120, 200):
        assert drift_lines(_trial_drifts(), "the previous run", verbosity=-2, width=width) == [TRIAL_COUNT]
        assert drift_lines(_trial_drifts(), "the previous run", width=width)[-1] == TRIAL_COUNT


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_l8_a_long_count_line_breaks_between_clauses_never_inside_a_count(width: int) -> None:
    line = ("roofline drift: 44 compared (3 drifted, 2 uncertain, 39 steady), 2 prediction changed (measured against "
            "another definition: not judged as drift), 5 not judged (their point did not hold its concurrency), 2 new, "
            "3 not measured vs the median of the last 5 runs")
    lines = wrap_count(line, width)
    assert max(len(ln) for ln in lines) <= width, lines
    assert " ".join(" ".join(lines).split()) == line
    assert lines[0].startswith("roofline drift: 44 compared (3 drifted,")
    for count in ("3 drifted", "2 uncertain", "39 steady", "2 prediction changed", "2 new", "3 not measured"):
        assert any(count in ln for ln in lines), (count, lines)  # never "2 prediction" / "changed"
    assert all(ln.startswith(" " * 16) for ln in lines[1:])  # under the counts, not under "roofline drift:"
    # a word longer than the room left beside the indent (a run id) takes a shorter indent, and still fits
    stored = ("roofline drift: 0 compared, 21 new (this measurement is already stored as run "
              "20261201T090727Z-bb56575-dirty-6c4130: a replay is not compared with it, nor stored again) vs the "
              "previous run")
    lines = wrap_count(stored, width)
    assert max(len(ln) for ln in lines) <= width and " ".join(" ".join(lines).split()) == stored


def test_l8_a_long_id_puts_its_drift_under_it() -> None:
    pid = "littles-law-at-a-very-long-parametrised-id[concurrency=128]"
    lines = drift_lines([(pid, {"status": "drifted", "text": "+25.0% vs previous run (2026-12-01), beyond 10%"})],
                        "the previous run", width=80)
    assert max(len(ln) for ln in lines) <= 80, lines
    assert lines[0] == f"{pid} DRIFTED" and lines[1].startswith("    +25.0% vs previous run")


# ----------------------------------------------------------------------------------------------------------- L2
def test_l2_sweep_point_headers_carry_their_units(day3: tuple[Spec, Any, list[Verdict]]) -> None:
    spec, data, _ = day3
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", points_table(spec, spec_setup(spec), data or {}))
    assert {"per-req tok/s", "TTFT p50/p99 ms", "TPOT p50/p99 ms", "agg tok/s"} <= set(heads)


# ----------------------------------------------------------------------------------------------------------- L3
def test_l3_a_long_reason_is_cut_at_a_word_and_says_so(by_id: dict[str, Verdict]) -> None:
    words = [f"word{i:03d}" for i in range(60)]  # 60 × 8 characters: well over the limit
    v = Verdict(id="x", quantity="q", dimension="count", mode=VerdictMode.MATH, status=VerdictStatus.PASS,
                reason=" ".join(words))
    short = _short_reason(v)
    assert len(short) <= REASON_CHARS
    head, sep, note = short.partition(" … ")
    assert sep and note == "(cut: the whole reason is in the details)"
    assert head.split() == words[:len(head.split())]  # whole words only, from the start
    assert _short_reason(by_id["throughput-c1"]).endswith("leaves batch 1 at ~71% of it")  # short ones whole


# ----------------------------------------------------------------------------------------------------------- L4
def test_l4_the_header_bar_spans_the_card() -> None:
    rule = re.search(r"(?m)^\.bar\{([^}]*)\}", css("scorecard"))
    assert rule is not None and "max-width" not in rule.group(1)
