"""Every marker of the scorecard's value charts sits at its value, read back from the drawing (trial s13, item 6),
and no tooltip prints a NaN (item 10).

The trial found the Day 3 goodput star (639.5 tok/s at C = 8) drawn at about 1,030 tok/s on the log throughput
axis, and the clean batch-1 square (88.4 tok/s) at about 81.6 tok/s on the per-request chart: markers that
"stepped aside" along the value axis. Here each chart's axes are rebuilt from what the SVG draws (its gridlines
and their tick labels, nothing from the code under test), each marker's centre is mapped back through them, and
the result is compared with the number its tooltip states, on every chart of every recorded run (each replayed
against the prediction file its ``setup.predictions_file`` names), with either y scale.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.paths import DAY3, DAY3_RESULTS, RECORDED, REPO
from support.specs import serving_h100_head
from support.svg_markers import markers

from pytest_roofline.format.spec import load_spec
from pytest_roofline.report import charts as ch
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.report.scorecard import _figures, _with_outcomes, render_scorecard, score_spec
from pytest_roofline.report.svg import NEST_MARGIN, Axis, Chart

NS = "{http://www.w3.org/2000/svg}"
GRID = "#ececec"
RECORDINGS = sorted(RECORDED.glob("*.results.json"))
#: the charts whose markers stand for a value on a concurrency x axis, and (an open loop's) on an offered-rate one
VALUE_CHARTS = ("throughput", "per_request", "ttft", "tpot", "littles",
                "open_requests", "open_throughput", "open_ttft", "open_tpot", "open_littles")


def _predictions_for(results: Path) -> Path:
    """The prediction file a recording names: relative to the results file (``../cpu-tiny.yaml``) or to the
    repository (``predictions/day3.yaml``)."""
    name = json.loads(results.read_text(encoding="utf-8"))["setup"]["predictions_file"]
    for base in (results.parent, REPO):
        if (base / name).is_file():
            return (base / name).resolve()
    raise AssertionError(f"{results.name}: {name} not found")


def _figs(results: Path, yaml_path: Path | None = None) -> dict[str, ch.Figure]:
    spec = load_spec(yaml_path or _predictions_for(results))
    data = json.loads(results.read_text(encoding="utf-8"))
    rows = _with_outcomes(spec, score_spec(spec, data))
    return {f.key: f for f in _figures(spec, spec_setup(spec), data, rows)}


@pytest.fixture(scope="module", params=[p.name for p in RECORDINGS])
def run(request: pytest.FixtureRequest) -> tuple[str, dict[str, ch.Figure]]:
    return request.param, _figs(RECORDED / request.param)


@pytest.fixture(scope="module")
def day3() -> dict[str, ch.Figure]:
    return _figs(DAY3_RESULTS, DAY3)


# ---------------------------------------------------------------------------------------------------------------
# the drawing, read back
# ---------------------------------------------------------------------------------------------------------------
def _tick_value(text: str) -> float:
    """A tick label as the charts write it: '2,000', '12.5k', '1k', '0.0125', '1.04', '50%'."""
    t = text.strip().replace(",", "").rstrip("%")
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}.get(t[-1:], 1.0)
    return float(t[:-1] if scale != 1.0 else t) * scale


def _plot_rect(root: ET.Element) -> tuple[float, float, float, float]:
    r = next(e for e in root.iter(f"{NS}rect") if e.get("fill") == "#fcfcfd")
    x, y = float(r.get("x", 0)), float(r.get("y", 0))
    return x, y, x + float(r.get("width", 0)), y + float(r.get("height", 0))


def _axis_label(root: ET.Element, rotate: str) -> str:
    return next((t.text or "" for t in root.iter(f"{NS}text") if rotate in (t.get("transform") or "")), "")


def _mapping(ticks: list[tuple[float, float]], log: bool) -> Callable[[float], float]:
    """Pixel → value through the gridlines' (pixel, value) pairs: a straight line in value (or its log) against
    pixels, fitted on the two outermost ticks and checked on every other one."""
    assert len(ticks) >= 2, ticks
    f = (lambda v: math.log(v)) if log else (lambda v: v)
    (p0, v0), (p1, v1) = min(ticks), max(ticks)
    slope = (f(v1) - f(v0)) / (p1 - p0)

    def inverse(px: float) -> float:
        u = f(v0) + (px - p0) * slope
        return math.exp(u) if log else u

    for p, v in ticks:  # every gridline sits where its label says: the reading is the chart's own
        assert inverse(p) == pytest.approx(v, rel=1e-3, abs=1e-9), (ticks, log)
    return inverse


def _axes(root: ET.Element) -> tuple[Callable[[float], float], Callable[[float], float]]:
    """(x of a pixel column, y of a pixel row), from the gridlines and their tick labels."""
    left, top, right, bottom = _plot_rect(root)
    texts = [(float(t.get("x", 0)), float(t.get("y", 0)), t.text or "") for t in root.iter(f"{NS}text")
             if t.get("transform") is None and t.get("class") != "rl-label"]
    xs, ys = [], []
    for e in root.iter(f"{NS}line"):
        if e.get("stroke") != GRID:
            continue
        x1, y1, x2, y2 = (float(e.get(k, 0)) for k in ("x1", "y1", "x2", "y2"))
        if x1 == x2:  # an x gridline: its label centred 14 px under the plot
            lab = next(t for tx, ty, t in texts if abs(tx - x1) < 0.02 and abs(ty - (bottom + 14)) < 0.02)
            xs.append((x1, _tick_value(lab)))
        else:  # a y gridline: its label 5 px left of the plot, 3.5 px under the line
            lab = next(t for tx, ty, t in texts if abs(tx - (left - 5)) < 0.02 and abs(ty - (y1 + 3.5)) < 0.02)
            ys.append((y1, _tick_value(lab)))
    # every value chart's x is concurrency or offered rate on a base-2 log axis; its y is log where its label says so
    return _mapping(xs, log=True), _mapping(ys, log="log" in _axis_label(root, "rotate(-90"))


def _markers(root: ET.Element) -> list[dict[str, Any]]:
    return markers(root, other_polygons=False)


def _polygon(e: ET.Element) -> list[tuple[float, float]]:
    """A marker's outline as drawn (stroke left out): a circle as a 64-gon, a square by its corners, a diamond or a
    star by its points."""
    tag = e.tag.replace(NS, "")
    if tag == "circle":
        cx, cy, r = (float(e.get(k, 0)) for k in ("cx", "cy", "r"))
        return [(cx + r * math.cos(2 * math.pi * k / 64), cy + r * math.sin(2 * math.pi * k / 64)) for k in range(64)]
    if tag == "rect":
        x, y, w, h = (float(e.get(k, 0)) for k in ("x", "y", "width", "height"))
        return [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
    return [tuple(map(float, p.split(","))) for p in (e.get("points") or "").split()]  # type: ignore[misc]


def _inside(pt: tuple[float, float], poly: list[tuple[float, float]]) -> bool:
    """Whether pt lies inside the polygon (even-odd rule: a star's concave outline included)."""
    x, y = pt
    inside = False
    for (x0, y0), (x1, y1) in zip(poly, poly[1:] + poly[:1]):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside


def _shown(ms: list[dict[str, Any]], i: int, samples: int = 240) -> float:
    """The share of marker i's outline (``samples`` points spaced evenly along it) that no filled marker drawn
    after it covers."""
    poly = _polygon(ms[i]["el"])
    edges = list(zip(poly, poly[1:] + poly[:1]))
    total = sum(math.dist(a, b) for a, b in edges)
    pts, walked = [], 0.0
    for a, b in edges:
        n = math.dist(a, b)
        for k in range(samples):
            at = k * total / samples
            if walked <= at < walked + n:
                t = (at - walked) / n
                pts.append((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
        walked += n
    above = [_polygon(m["el"]) for m in ms[i + 1:] if m["fill"] != "none"]
    return sum(not any(_inside(p, q) for q in above) for p in pts) / len(pts)


_NUM = r"(?P<v>-?[\d,]*\.?\d+)"
#: a point as a tooltip names it: its concurrency (C=8) or its offered rate (rate=12 req/s)
_AT = r"(?:C=|rate=)(?P<c>[\d.]+)(?: req/s)?"
#: what a marker's tooltip says it stands for: its value (as written, so its rounding is known) and its C (or rate)
_TIPS = [
    re.compile(rf"{_AT}: (?:serving model )?{_NUM} (?:tok|req)/s"),  # measured and serving-model points
    re.compile(rf": ink {_NUM} (?:tok|req)/s at {_AT}"),  # values in ink
    re.compile(rf": ink {_NUM} ms at {_AT}"),  # TTFT and TPOT values in ink written in ms (the charts' unit)
    re.compile(rf"goodput at p\d+: {_NUM} tok/s at C=(?P<c>[\d.]+)"),  # the goodput star
    re.compile(rf"(?P<c>batch)1 point: {_NUM} tok/s"),  # the clean batch-1 run, at C = 1
    re.compile(rf"{_AT}: p\d+ T[TP][FO]T {_NUM} ms"),  # TTFT and TPOT percentiles
    re.compile(rf"{_AT}: serving model p\d+ T[TP][FO]T {_NUM} ms"),
    re.compile(rf"{_AT}: .*→ ratio {_NUM}$"),  # Little's law
]


def _stated(tip: str) -> tuple[float, float, float] | None:
    """(C, value, half a unit of its last written digit) from a tooltip, or None when it states neither."""
    for pat in _TIPS:
        m = pat.search(tip)
        if m:
            text = m.group("v").replace(",", "")
            half = 0.5 * 10 ** -(len(text.split(".")[1]) if "." in text else 0)
            c = 1.0 if m.group("c") == "batch" else float(m.group("c"))
            return c, float(text), half
    return None


def _misplaced(key: str, svg: str) -> tuple[int, list[str]]:
    """How many markers were read back, and those not drawn at the value and concurrency their tooltip states."""
    root = ET.fromstring(svg)
    x_of, y_of = _axes(root)
    checked, bad = 0, []
    for m in _markers(root):
        stated = _stated(m["tip"])
        if stated is None:
            continue
        c, v, half = stated
        checked += 1
        drawn = y_of(m["cy"])
        # the tooltip's rounding, and 0.05 px either way (coordinates are written with two decimals)
        lo = min(y_of(m["cy"] - 0.05), y_of(m["cy"] + 0.05))
        hi = max(y_of(m["cy"] - 0.05), y_of(m["cy"] + 0.05))
        if not (lo <= v + half and v - half <= hi):
            bad.append(f"{key}: {m['shape']} {m['tip'][:70]!r} drawn at {drawn:,.4g}, states {v:,}")
        if x_of(m["cx"]) != pytest.approx(c, rel=2e-3):
            bad.append(f"{key}: {m['shape']} {m['tip'][:70]!r} drawn at C={x_of(m['cx']):.4g}, states C={c:g}")
    return checked, bad


# ---------------------------------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------------------------------
def test_every_marker_is_drawn_at_its_value_and_concurrency(run: tuple[str, dict[str, ch.Figure]]) -> None:
    name, figs = run
    checked, bad = 0, []
    for key in VALUE_CHARTS:
        if key not in figs:
            continue
        for svg in (figs[key].svg, figs[key].alt_svg):
            if svg.startswith("<svg"):
                n, b = _misplaced(key, svg)
                checked += n
                bad += b
    assert not bad, f"{name}:\n" + "\n".join(bad)
    assert checked >= 20, name  # a rate sweep's charts are drawn against its offered rate


@pytest.mark.parametrize("which", ["svg", "alt_svg"])
def test_the_day3_goodput_star_and_batch1_square_sit_at_their_values(day3: dict[str, ch.Figure], which: str) -> None:
    # the trial's two: the star at 639.5 tok/s (drawn at ~1,030 on the log axis), the square at 88.4 (drawn at
    # ~81.6, below the C = 1 point's 88.8): read back to within the last written digit
    root = ET.fromstring(getattr(day3["throughput"], which))
    x_of, y_of = _axes(root)
    star = [m for m in _markers(root) if m["shape"] == "star"]
    assert len(star) == 1
    assert y_of(star[0]["cy"]) == pytest.approx(639.5, abs=0.5) and x_of(star[0]["cx"]) == pytest.approx(8, rel=1e-3)
    if which == "svg":
        root = ET.fromstring(day3["per_request"].svg)
        x_of, y_of = _axes(root)
        square = [m for m in _markers(root) if m["tip"].startswith("batch1 point")]
        c1 = next(m for m in _markers(root) if m["tip"].startswith("C=1: 88.8 tok/s per request"))
        assert len(square) == 1
        assert y_of(square[0]["cy"]) == pytest.approx(88.4, abs=0.05)
        assert x_of(square[0]["cx"]) == pytest.approx(1, rel=1e-3)
        assert square[0]["cy"] > c1["cy"]  # 88.4 is drawn below 88.8, as the table has them


#: what the tooltip of a marker that stays at its value and is drawn beneath what it would cover contains
_SETTLED = (": ink ", "goodput at ", "batch1 point")


def test_a_marker_that_would_cover_another_stays_in_view_beneath_it(run: tuple[str, dict[str, ch.Figure]]) -> None:
    # where a value in ink, the star or the batch-1 square would cover a filled marker it is drawn before it (so
    # beneath it), grown into a frame where that marker would hide it: most of its outline stays in view
    name, figs = run
    for key in VALUE_CHARTS:
        for svg in (figs[key].svg, figs[key].alt_svg) if key in figs else ():
            if not svg.startswith("<svg"):
                continue
            ms = _markers(ET.fromstring(svg))
            for i, m in enumerate(ms):
                if any(k in m["tip"] for k in _SETTLED):
                    assert _shown(ms, i) >= 0.5, (name, key, m["tip"][:60], _shown(ms, i))


def test_the_day3_markers_that_would_cover_a_point_are_drawn_beneath_it(day3: dict[str, ch.Figure]) -> None:
    # the star on the C = 8 point, the batch-1 square on the C = 1 point (88.4 and 88.8 tok/s, 0.74 px apart), the
    # two diamonds at C = 64 (5,060 and 4,802 tok/s, 1.8 px apart on the log axis): each drawn before the marker it
    # would cover, the later diamond grown into a frame round the earlier one, all centred on their own values
    for key, settled, covered in (("throughput", "goodput at p99", "C=8: 639.5 tok/s measured"),
                                  ("per_request", "batch1 point", "C=1: 88.8 tok/s per request"),
                                  ("throughput", "post-draft-c64", "throughput-c64")):
        ms = _markers(ET.fromstring(day3[key].svg))
        i = next(k for k, m in enumerate(ms) if m["tip"].startswith(settled))
        j = next(k for k, m in enumerate(ms) if m["tip"].startswith(covered))
        assert i < j and _shown(ms, i) >= 0.8, (key, settled, _shown(ms, i))
        assert math.hypot(ms[i]["cx"] - ms[j]["cx"], ms[i]["cy"] - ms[j]["cy"]) < 2.0  # the same point, nearly
    ms = _markers(ET.fromstring(day3["throughput"].svg))
    d64 = [m for m in ms if m["shape"] == "diamond" and "at C=64" in m["tip"]]
    assert len(d64) == 2 and d64[0]["r"] >= d64[1]["r"] + NEST_MARGIN


def test_a_dodging_marker_on_a_point_keeps_its_value_on_a_log_axis() -> None:
    chart = Chart(Axis(0.8, 160, "log", ticks=[1, 2, 4, 8, 16, 32, 64, 128]),
                  Axis(50, 20_000, "log", "tok/s (log scale)"))
    chart.markers([(8.0, 639.5)], color="#D55E00", titles=["C=8: 639.5 tok/s measured"])
    chart.markers([(8.0, 8.0 * 80)], color="#E69F00", size=8, ring=True)  # a ring: hides nothing
    chart.markers([(8.0, 639.5)], color="#009E73", marker="star", size=6, dodge=True,
                  titles=["goodput at p99: 639.5 tok/s at C=8"])
    svg = chart.render()
    root = ET.fromstring(svg)
    assert "rl-leader" not in svg
    x_of, y_of = _axes(root)
    ms = _markers(root)
    star = next(m for m in ms if m["shape"] == "star")
    assert y_of(star["cy"]) == pytest.approx(639.5, rel=1e-4) and x_of(star["cx"]) == pytest.approx(8, rel=1e-4)
    assert [m["fill"] for m in ms] == ["none", "#009E73", "#D55E00"]  # the ring, the star, the point on top
    assert star["cy"] == pytest.approx(chart.py(639.5), abs=0.01)
    assert _misplaced("synthetic", svg) == (2, [])


def _titles(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{NS}title")]


def test_no_tooltip_says_nan(run: tuple[str, dict[str, ch.Figure]]) -> None:
    name, figs = run
    tips = [t for f in figs.values() for svg in (f.svg, f.alt_svg) if svg.startswith("<svg") for t in _titles(svg)]
    assert tips, name
    assert not [t for t in tips if re.search(r"\bnan\b", t, re.IGNORECASE)], name


def test_no_nan_on_the_day3_page() -> None:
    spec = load_spec(DAY3)
    data = json.loads(DAY3_RESULTS.read_text(encoding="utf-8"))
    page = render_scorecard(spec, score_spec(spec, data), data)
    assert not re.findall(r"[^<>]{0,40}\bnan\b[^<>]{0,20}", page, re.IGNORECASE)


def test_littles_tooltips_show_the_figures_the_point_has(day3: dict[str, ch.Figure]) -> None:
    # the notebook recorded L and λ·W per point, not λ and W: the tooltip gives those two and says so
    tips = [m["tip"] for m in _markers(ET.fromstring(day3["littles"].svg))]
    assert "C=8: L=8, λW=7.97, λ and W not recorded separately → ratio 0.996" in tips
    assert len(tips) == 8 and all("λ=" not in t and "W=" not in t.replace("λW=", "") for t in tips)
    # a run the plugin measured has all four
    figs = _figs(RECORDED / "cpu-tiny-2026-12-05.results.json")
    tips = [m["tip"] for m in _markers(ET.fromstring(figs["littles"].svg))]
    assert tips and all(re.search(r"L=[\d.]+, λ=[\d.]+ req/s, W=[\d.]+ s, λW=[\d.]+ → ratio", t) for t in tips)


# ---------------------------------------------------------------------------------------------------------------
# an open-loop (request-rate) sweep: its charts against the offered rate
# ---------------------------------------------------------------------------------------------------------------
OPEN_LOOP = RECORDED / "cpu-open-loop-2026-12-05.results.json"


@pytest.fixture(scope="module")
def open_loop() -> dict[str, ch.Figure]:
    return _figs(OPEN_LOOP)


def test_an_open_loop_sweep_is_charted_against_its_offered_rate(open_loop: dict[str, ch.Figure]) -> None:
    assert {"open_requests", "open_throughput", "open_ttft", "open_tpot", "open_littles"} <= set(open_loop)
    for key in ("open_requests", "open_throughput", "open_ttft", "open_tpot", "open_littles"):
        root = ET.fromstring(open_loop[key].svg)
        assert "offered request rate (req/s" in " ".join(t.text or "" for t in root.iter(f"{NS}text")), key
    # the serving model is drawn beside the measured points, with its band where it has one
    tips = [m["tip"] for m in _markers(ET.fromstring(open_loop["open_throughput"].svg))]
    assert sum("serving model" in t for t in tips) == 6 and sum(t.endswith("measured") for t in tips) == 6
    assert ch.SERVING_BAND_LABEL in open_loop["open_throughput"].svg
    for key in ("open_ttft", "open_tpot"):
        assert "serving model p50 band" in open_loop[key].svg, key


def test_the_rate_axis_names_how_the_requests_arrive() -> None:
    # the recording's points are Poisson (burstiness 1, vllm bench serve's default); gamma arrivals say so
    spec = load_spec(_predictions_for(OPEN_LOOP))
    data = json.loads(OPEN_LOOP.read_text(encoding="utf-8"))
    # its points were sent before arrival_span was recorded: drawn
    assert ch._arrivals(spec, data) == "Poisson arrivals; span as drawn"
    for p in data["points"]:
        p["burstiness"] = 0.5
    assert ch._arrivals(spec, data) == "gamma arrivals, burstiness 0.5; span as drawn"
    fixed = {**data, "points": [{**p, "arrival_span": "fixed"} for p in data["points"]]}
    assert ch._arrivals(spec, fixed) == "gamma arrivals, burstiness 0.5; N sent over N ÷ rate"
    peer = {**data, "source": "vllm bench serve"}  # a peer's file that does not say: not described
    assert ch._arrivals(spec, peer) == "gamma arrivals, burstiness 0.5"
    rows = _with_outcomes(spec, score_spec(spec, data))
    figs = {f.key: f for f in _figures(spec, spec_setup(spec), data, rows)}
    assert "offered request rate (req/s, gamma arrivals, burstiness 0.5; span as drawn)" in figs["open_requests"].svg
    assert "Poisson" not in figs["open_requests"].svg


def test_an_open_loop_marker_sits_at_its_tooltip_value(open_loop: dict[str, ch.Figure]) -> None:
    # the recording's r12 point: 11.76 req/s achieved of 12 offered, read back from where its marker is drawn
    for which in ("svg", "alt_svg"):
        root = ET.fromstring(getattr(open_loop["open_requests"], which))
        x_of, y_of = _axes(root)
        m = next(m for m in _markers(root) if m["tip"].startswith("rate=12 req/s: 11.76 req/s measured"))
        assert x_of(m["cx"]) == pytest.approx(12, rel=1e-3) and y_of(m["cy"]) == pytest.approx(11.76, abs=0.01)
        ink = next(m for m in _markers(root) if ": ink 4 req/s at rate=4 req/s" in m["tip"])
        assert x_of(ink["cx"]) == pytest.approx(4, rel=1e-3) and y_of(ink["cy"]) == pytest.approx(4, rel=1e-3)
        n, bad = _misplaced("open_requests", getattr(open_loop["open_requests"], which))
        assert n >= 13 and not bad, bad


def test_the_open_loop_rows_have_the_serving_models_value() -> None:
    # each open-r* row's serving cell is the simulation the predictions use (serving_sweep_for, at: {rate: R})
    from pytest_roofline.report.points import points_table
    from pytest_roofline.scoring import serving_sweep_for

    spec = load_spec(_predictions_for(OPEN_LOOP))
    setup = spec_setup(spec)
    data = json.loads(OPEN_LOOP.read_text(encoding="utf-8"))
    html = points_table(spec, setup, data)
    rows = {r.split("</td>", 1)[0].split(">")[-1]: r for r in html.split("<tr")[1:] if "open-r" in r}
    assert len(rows) == 6
    for p in data["points"]:
        _, pp = serving_sweep_for(spec, None, setup).at({"rate": p["rate_req_s"]})
        cell = rows[p["id"]].split('<td class="num serving">', 1)[1].split("</td>", 1)[0]
        assert cell.startswith(f"{pp.output_throughput_tok_per_s:,.0f}"), (p["id"], cell)
        ratio = p["client"]["output_throughput_tok_s"] / pp.output_throughput_tok_per_s
        assert f'<td class="num">{ratio:.0%}</td>' in rows[p["id"]], p["id"]  # ÷ serving


# ---------------------------------------------------------------------------------------------------------------
# TTFT and TPOT values in ink (trial 22, M7): drawn on their charts as throughput ink is on its own
# ---------------------------------------------------------------------------------------------------------------
LATENCY_INK = serving_h100_head([1, 4, 16, 64]) + """\
  - {id: tput-c64, quantity: output_throughput, at: {concurrency: 64}, predicted: 4500 tok/s}
  - {id: ttft-c1, quantity: ttft_p50, at: {concurrency: 1}, predicted: 35 ms}
  - {id: ttft-c1-10s, quantity: ttft_p50, at: {concurrency: 1}, predicted: 10 s}
  - {id: ttft-c64, quantity: ttft_p50, at: {concurrency: 64}, predicted: 150 ms}
  - {id: ttft-p99-c64, quantity: ttft_p99, at: {concurrency: 64}, predicted: 400 ms}
  - {id: tpot-c1, quantity: tpot_p50, at: {concurrency: 1}, predicted: 7 ms}
  - {id: tpot-c1-below-floor, quantity: tpot_p50, at: {concurrency: 1}, predicted: 3 ms}
  - {id: tpot-c64, quantity: tpot_p50, at: {concurrency: 64}, predicted: 14 ms}
"""
#: each chart's ink: id -> (C, value in ms as drawn, the statistic its label names where it is not p50)
LATENCY_INK_DRAWN = {
    "ttft": {"ttft-c1": (1, 35.0, ""), "ttft-c1-10s": (1, 10_000.0, ""), "ttft-c64": (64, 150.0, ""),
             "ttft-p99-c64": (64, 400.0, "p99")},
    "tpot": {"tpot-c1": (1, 7.0, ""), "tpot-c1-below-floor": (1, 3.0, ""), "tpot-c64": (64, 14.0, "")},
}


@pytest.fixture(scope="module")
def latency_ink(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, ch.Figure], dict[str, str]]:
    """The math check's charts of a file with TTFT and TPOT ink (no measurement), and each prediction's outcome."""
    path = tmp_path_factory.mktemp("ink") / "ink.yaml"
    path.write_text(LATENCY_INK, encoding="utf-8")
    spec = load_spec(path)
    rows = _with_outcomes(spec, score_spec(spec, None))
    figs = {f.key: f for f in _figures(spec, spec_setup(spec), None, rows)}
    return figs, {v.id: outcome for v, outcome, _pred in rows}


@pytest.mark.parametrize("key", ["ttft", "tpot"])
def test_ttft_and_tpot_ink_is_drawn_at_its_value_and_concurrency(latency_ink, key: str) -> None:
    """The TTFT and TPOT charts drew the serving model's lines and band but none of the values in ink: each is now a
    diamond at its concurrency and its value in ms (10 s at 10,000 ms on the log TTFT axis), coloured by its
    outcome, its label naming a percentile other than the chart's p50 (``400 ms p99``); no other quantity's ink."""
    from pytest_roofline.report.common import OUTCOME_COLOR

    figs, outcomes = latency_ink
    root = ET.fromstring(figs[key].svg)
    x_of, y_of = _axes(root)
    diamonds = [m for m in _markers(root) if m["shape"] == "diamond"]
    drawn = {m["tip"].split(": ink ", 1)[0]: m for m in diamonds}
    assert sorted(drawn) == sorted(LATENCY_INK_DRAWN[key]) and len(diamonds) == len(drawn)
    labels = [t.text or "" for t in root.iter(f"{NS}text")]
    for pid, (c, ms, stat) in LATENCY_INK_DRAWN[key].items():
        m = drawn[pid]
        assert x_of(m["cx"]) == pytest.approx(c, rel=1e-3)
        assert y_of(m["cy"]) == pytest.approx(ms, rel=2e-3), (pid, y_of(m["cy"]))
        assert m["fill"] == OUTCOME_COLOR[outcomes[pid]], pid
        text = m["tip"].split(": ink ", 1)[1].split(" at ")[0]  # the ink as written: "35 ms", "10 s"
        assert (f"{text} {stat}" if stat else text) in labels, (pid, labels)
    assert "ink (colour = outcome)" in labels
    n, bad = _misplaced(key, figs[key].svg)  # and the chart's every other marker where its tooltip says
    assert n >= len(LATENCY_INK_DRAWN[key]) and not bad, bad


def test_the_latency_inks_outcomes_are_the_verdicts(latency_ink) -> None:
    # the diamonds' colours are the outcomes of the math check, which this file's ink spans: 35 ms inside the TTFT
    # band at C = 1, 10 s far outside it, 3 ms below the weight-read floor under TPOT
    _figs_, outcomes = latency_ink
    assert outcomes["ttft-c1"] == "passed" and outcomes["tpot-c1"] == "passed"
    assert outcomes["ttft-c1-10s"] == "failed" and outcomes["tpot-c1-below-floor"] == "failed"


def test_latency_ink_at_a_rate_is_drawn_on_the_open_loop_chart() -> None:
    # cpu-open-vs-closed.yaml writes a TTFT p50 of 25 ms at 4 req/s: on the open-loop TTFT chart (math check, no
    # measurement), at rate 4 and 25 ms; its closed-loop one (150 ms at C = 16) on the concurrency chart only
    spec = load_spec(REPO / "predictions" / "cpu-open-vs-closed.yaml")
    rows = _with_outcomes(spec, score_spec(spec, None))
    figs = {f.key: f for f in _figures(spec, spec_setup(spec), None, rows)}
    for key, pid, at, ms in (("open_ttft", "open-ttft-is-one-prefill", 4, 25.0),
                             ("ttft", "closed-ttft-includes-the-wait", 16, 150.0)):
        root = ET.fromstring(figs[key].svg)
        x_of, y_of = _axes(root)
        [ink] = [m for m in _markers(root) if m["shape"] == "diamond"]
        assert ink["tip"].startswith(f"{pid}: ink ")
        assert x_of(ink["cx"]) == pytest.approx(at, rel=1e-3) and y_of(ink["cy"]) == pytest.approx(ms, rel=2e-3)
        assert "Diamonds: the TTFT values in ink" in figs[key].caption
    assert not [m for m in _markers(ET.fromstring(figs["open_tpot"].svg)) if m["shape"] == "diamond"]
