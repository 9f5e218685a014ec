"""The trend page (``roofline history URI``): each prediction night by night, read from a history store's index.

The two nights are the recorded CPU run (predictions/recorded/cpu-tiny-2026-12-01.results.json, vLLM 0.32.0) and
a copy of it with two measured numbers changed by hand, both scored by the scorecard's own scoring and stored
through the history layer (``build_records`` → ``DirectoryStore.add``), then read back with ``runs()``:

* ``queueing-past-the-cap`` (ttft_p50 at concurrency 32; predicted ``>= 100 ms``): the recording's client p50
  TTFT at C=32 is 1382.4199660000431 ms (``points[5].client.ttft_ms.p50``); the second night's is that × 1.25 =
  1728.0249575 ms. Drift against the previous night: 1.25 − 1 = +25.0%, beyond the default 10%;
* ``no-preemption`` (preemptions at concurrency 32; predicted 0, exact): the recording's ``server.preemptions`` is 0
  (pass); the second night's is set to 3 (a fail, drawn in the fail colour).
"""

from __future__ import annotations

import copy
import datetime
import math
import os
import re
import struct
import time
import zlib
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from support.browser import measure_in_chromium, needs_chromium, run_chromium
from support.paths import CPU_TINY, REPO
from support.recordings import starved_recording_path

from pytest_roofline.cli import main as roofline_main
from pytest_roofline.format.spec import load_spec
from pytest_roofline.history import (
    DirectoryStore,
    RunSummary,
    SetupKey,
    StoredValue,
    build_records,
    prediction_key,
    spec_setup_key,
)
from pytest_roofline.measure.results import load_results
from pytest_roofline.report.common import OUTCOME_COLOR
from pytest_roofline.report.scorecard import CSP, score_spec
from pytest_roofline.report.svg import PALETTE
from pytest_roofline.report.trend import render_trend, select_runs

SPEC = CPU_TINY
RECORDED = starved_recording_path("cpu-tiny")
SVG_NS = "{http://www.w3.org/2000/svg}"
TTFT_C32_MS = 1382.4199660000431  # the recording's points[concurrency=32].client.ttft_ms.p50
PASS_COLOR, FAIL_COLOR = OUTCOME_COLOR["passed"], OUTCOME_COLOR["failed"]


# ----------------------------------------------------------------------------------------------------------------
# building stored nights from recorded results
# ----------------------------------------------------------------------------------------------------------------
def _point(data: dict[str, Any], concurrency: int) -> dict[str, Any]:
    return next(p for p in data["points"] if p.get("concurrency") == concurrency)


def _night_two(data: dict[str, Any], version: str) -> dict[str, Any]:
    d = copy.deepcopy(data)
    c32 = _point(d, 32)
    c32["client"]["ttft_ms"]["p50"] *= 1.25
    c32["server"]["preemptions"] = 3
    d["engine_report"]["version"] = version
    d["setup"]["engine"]["version"] = version
    return d


def _store_night(store: DirectoryStore, data: dict[str, Any], *, started_at: str, commit: str) -> None:
    spec = load_spec(SPEC)
    verdicts = score_spec(spec, data)
    key = spec_setup_key(spec, data, gpu="cpu")
    for rec in build_records(verdicts, setups={str(spec.path): key}, results=[data], started_at=started_at,
                             mode="replay", commit=commit, label="cpu", rootdir=REPO):
        store.add(rec)


def two_nights(tmp_path: Path, version2: str) -> DirectoryStore:
    data = dict(load_results(RECORDED))
    assert _point(data, 32)["client"]["ttft_ms"]["p50"] == TTFT_C32_MS  # the fact the docstring works from
    store = DirectoryStore(tmp_path / "history")
    _store_night(store, data, started_at="2026-12-01T02:00:00Z", commit="aaaa1111")
    _store_night(store, _night_two(data, version2), started_at="2026-12-02T02:00:00Z", commit="bbbb2222")
    return store


def demo_nights(tmp_path: Path, n: int = 14) -> DirectoryStore:
    """``n`` nights made from the recording, for the browser test and docs/trend.png: every TTFT percentile of
    every point scaled by 1 + 3%·sin(1.3·i), by 0.9 from the upgrade to vLLM 0.33.0 on night 9, and by 1.15 more
    on the last night (a drift to spot in the morning); 2 preemptions at C=32 on night 11 (a failed night)."""
    data = dict(load_results(RECORDED))
    store = DirectoryStore(tmp_path / "demo-history")
    for i in range(n):
        d = copy.deepcopy(data)
        version = "0.32.0" if i < 9 else "0.33.0"
        factor = (1 + 0.03 * math.sin(1.3 * i)) * (0.9 if version == "0.33.0" else 1.0) * (1.15 if i == n - 1 else 1)
        for p in d["points"]:
            p["client"]["ttft_ms"] = {k: x * factor for k, x in p["client"]["ttft_ms"].items()}
        _point(d, 32)["server"]["preemptions"] = 2 if i == 11 else 0
        d["engine_report"]["version"] = d["setup"]["engine"]["version"] = version
        day = (datetime.date(2026, 11, 18) + datetime.timedelta(days=i)).isoformat()
        _store_night(store, d, started_at=f"{day}T02:00:00Z", commit=f"{0x5eed0 + 7 * i:07x}")
    return store


def figure(html: str, prediction_id: str) -> tuple[ET.Element, str]:
    """The chart (parsed as XML) and the nights table (HTML text) of one prediction's figure."""
    for fig in re.findall(r'<figure class="chart trend".*?</figure>', html, flags=re.S):
        svg = re.search(r"<svg.*?</svg>", fig, flags=re.S)
        assert svg is not None
        root = ET.fromstring(svg.group(0))
        title = root.find(f"{SVG_NS}title")
        if title is not None and (title.text or "").split(" · ")[0] == prediction_id:
            return root, fig[svg.end():]
    raise AssertionError(f"no chart for {prediction_id}")


@dataclass(frozen=True)
class Point:
    """One measured point read back from a chart: its centre (px), its colour and its tooltip."""

    cx: float
    cy: float
    color: str
    tip: str | None


def points(svg: ET.Element) -> list[Point]:
    """The measured points, left to right. The points of one verdict are one ``<path class="rl-pt ...">`` whose
    subpaths ``Mx,yh0`` are the discs (drawn by the stroke's round caps, in the stroke's colour); a point's tooltip
    is the ``<title>`` of the invisible hover strip (``<g class="rl-hover">``, ``Mx0,yHx1``) through its centre,
    the topmost (last drawn) where strips cross, as a browser shows it."""
    strips = []
    for g in svg.iter(f"{SVG_NS}g"):
        if "rl-hover" in (g.get("class") or ""):
            for path in g.iter(f"{SVG_NS}path"):
                m = re.fullmatch(r"M([-\d.]+),([-\d.]+)H([-\d.]+)", path.get("d") or "")
                assert m is not None, path.get("d")
                title = path.find(f"{SVG_NS}title")
                strips.append((float(m[1]), float(m[2]), float(m[3]), title.text if title is not None else None))
    out = []
    for e in svg.iter():
        if "rl-pt" not in (e.get("class") or ""):
            continue
        assert e.tag == f"{SVG_NS}path" and e.get("stroke-linecap") == "round", e.tag
        for x, y in re.findall(r"M([-\d.]+),([-\d.]+)h0", e.get("d") or ""):
            cx, cy = float(x), float(y)
            tips = [t for x0, ys, x1, t in strips if x0 <= cx <= x1 and abs(ys - cy) < 0.06]
            out.append(Point(cx, cy, e.get("stroke") or "", tips[-1] if tips else None))
    return sorted(out, key=lambda p: p.cx)


def y_ticks(svg: ET.Element) -> list[tuple[float, float]]:
    """(value, y pixel) of the y axis' tick labels: texts anchored at their end, left of the plot."""
    out = []
    for t in svg.iter(f"{SVG_NS}text"):
        if t.get("text-anchor") == "end" and "rl-label" not in (t.get("class") or ""):
            txt = (t.text or "").replace(",", "")
            if re.fullmatch(r"-?\d+(\.\d+)?", txt):
                out.append((float(txt), float(t.get("y", "0")) - 3.5))  # the label sits 3.5 px below its line
    return out


def value_at(svg: ET.Element, y_px: float) -> float:
    """The axis value at pixel ``y_px``, by the straight line through the first and last tick."""
    ticks = y_ticks(svg)
    assert len(ticks) >= 2, ticks
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return v0 + (y_px - y0) * (v1 - v0) / (y1 - y0)


# ----------------------------------------------------------------------------------------------------------------
# the two-point chart
# ----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version2", ["0.32.0", "0.33.0"], ids=["same-engine", "engine-upgrade"])
def test_two_recorded_nights_make_a_two_point_chart(tmp_path: Path, version2: str) -> None:
    store = two_nights(tmp_path, version2)
    runs = store.runs()
    assert [r.setup.engine_version for r in runs] == ["0.32.0", version2]
    html = render_trend(runs, source=store.uri)

    svg, table = figure(html, "queueing-past-the-cap")
    pts = points(svg)
    assert len(pts) == 2
    first, second = (p.cy for p in pts)
    assert second < first  # 1,728 ms is drawn above 1,382 ms (SVG y grows downwards)
    # read back through the axis: the points sit where the hand-computed values belong (±0.5% of the axis)
    span = abs(y_ticks(svg)[-1][0] - y_ticks(svg)[0][0])
    assert value_at(svg, first) == pytest.approx(TTFT_C32_MS, abs=0.005 * span)
    assert value_at(svg, second) == pytest.approx(TTFT_C32_MS * 1.25, abs=0.005 * span)
    assert all(p.color == PASS_COLOR for p in pts)  # >= 100 ms holds on both nights
    assert any("rl-band" in (r.get("class") or "") for r in svg.iter(f"{SVG_NS}rect"))  # the band is drawn
    tips = [p.tip or "" for p in pts]
    assert tips[0].startswith("2026-12-01 02:00 UTC · aaaa1111 · vllm 0.32.0 — measured 1,382 ms")
    assert tips[1].startswith(f"2026-12-02 02:00 UTC · bbbb2222 · vllm {version2} — measured 1,728 ms")
    # the table under the chart: both nights, newest first, in the unit the prediction was written in (ms)
    assert table.index("1,728 ms") < table.index("1,382 ms")
    assert table.index("bbbb2222") < table.index("aaaa1111")

    # a verdict that changed colour: preemptions 0 (pass) then 3 (fail)
    svg_p, _ = figure(html, "no-preemption")
    fills = [p.color for p in points(svg_p)]
    assert fills == [PASS_COLOR, FAIL_COLOR]

    # the engine-version rule, on every chart of the setup when (and only when) the version changed
    rules = [ln for ln in svg.iter(f"{SVG_NS}line") if ln.get("stroke") == PALETTE["purple"]]
    labels = [t.text for t in svg.iter(f"{SVG_NS}text") if (t.text or "").startswith("vllm ")]
    summary = html[html.index('<table class="summary">'):html.index("</table>", html.index('<table class="summary">'))]
    if version2 == "0.32.0":
        assert rules == [] and labels == []
        assert "vllm 0.32.0 →" not in html
        # drift against the previous night of the same setup: 1728.02 / 1382.42 − 1 = +25.0% > 10%, but one earlier
        # night does not say what the night-to-night noise is: uncertain, never drifted, with the reason
        assert "+25.0% vs previous run (2026-12-01, aaaa1111; baseline 1,382 ms), beyond 10%" in summary
        assert 'class="drift drift-uncertain"' in summary and 'class="drift drift-drifted"' not in summary
        assert "1 of 3 earlier nights: the run-to-run noise is not known yet" in summary
    else:
        assert len(rules) == 1 and labels == ["vllm 0.33.0"]
        x_rule = float(rules[0].get("x1", "nan"))
        cxs = [p.cx for p in pts]
        assert cxs[0] < x_rule < cxs[1]  # between the two nights
        assert "vllm 0.32.0 → vllm 0.33.0" in html
        # a new engine version is a new setup: nothing earlier to drift from
        assert "new: no earlier run on this setup measured it" in summary


def test_a_math_only_prediction_draws_its_model_line_only(tmp_path: Path) -> None:
    html = render_trend(two_nights(tmp_path, "0.32.0").runs())
    svg, table = figure(html, "kv-bytes-per-token")  # a math check: 512 B in ink, the model's 512 B
    assert points(svg) == []
    model_lines = [p for p in svg.iter(f"{SVG_NS}polyline") if p.get("stroke") == PALETTE["blue"]]
    assert len(model_lines) == 1
    ys = {float(xy.split(",")[1]) for xy in (model_lines[0].get("points") or "").split()}
    assert len(ys) == 1  # the same model value both nights: one flat line
    assert value_at(svg, ys.pop()) == pytest.approx(512, abs=1)
    assert table.count("512 B") >= 2


# ----------------------------------------------------------------------------------------------------------------
# hostile text, many nights, filters
# ----------------------------------------------------------------------------------------------------------------
def _value(key_id: str, measured: float | None, *, status: str = "pass", file: str = "predictions/x.yaml",
           at: dict[str, str] | None = None) -> StoredValue:
    at = at or {}
    return StoredValue(key=prediction_key(file, key_id, at), prediction_id=key_id, file=file, quantity="ttft_p50",
                       dimension="time", status=status, mode="measured" if measured is not None else "math",
                       at=at, unit="ms", measured=measured, model=0.095, predicted=0.1, lo=0.09, hi=0.11,
                       predicted_text="100 ms")


def test_hostile_text_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    img = "<img src=x onerror=alert(1)>"
    runs = [RunSummary(run_id=f"r{i}-{evil}", setup=SetupKey(img, f"m{evil}", f"0.3{i}.0{evil}"),
                       started_at=f"2026-12-0{i + 1}T02:00:00Z", mode="engine", commit=f"c{i}{evil}",
                       label=img, values=(_value(f"p{evil}", 0.1 + 0.001 * i, at={"k": evil}),))
            for i in range(2)]
    html = render_trend(runs, source=f"/tmp/{evil}", title=evil)
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html
    for svg in re.findall(r"<svg.*?</svg>", html, flags=re.S):
        ET.fromstring(svg)  # every chart is still well-formed XML


def _synthetic_nights(n: int, predictions: int) -> list[RunSummary]:
    runs = []
    for i in range(n):
        day = (datetime.date(2025, 6, 1) + datetime.timedelta(days=i)).isoformat()
        version = "0.32.0" if i < n * 3 // 4 else "0.33.0"
        values = tuple(_value(f"ttft[concurrency={k}]", 0.1 * (1 + 0.05 * math.sin(i / 7 + k)),
                              status="pass" if (i + k) % 11 else "fail", at={"concurrency": str(k)})
                       for k in range(predictions))
        runs.append(RunSummary(run_id=f"n{i:04d}", setup=SetupKey("h100-sxm5-80gb", "Qwen3-8B", version),
                               started_at=f"{day}T02:{i % 60:02d}:00Z", mode="engine", commit=f"{i:08x}",
                               values=values))
    return runs


def test_five_hundred_nights_render() -> None:
    runs = _synthetic_nights(500, 20)
    t0 = time.perf_counter()
    html = render_trend(runs)
    elapsed = time.perf_counter() - t0
    print(f"500 nights × 20 predictions: {elapsed:.2f} s, {len(html) / 2**20:.1f} MiB")  # looked at, not asserted
    figs = re.findall(r'<figure class="chart trend".*?</figure>', html, flags=re.S)
    assert len(figs) == 20
    svg = ET.fromstring(re.search(r"<svg.*?</svg>", figs[0], flags=re.S).group(0))  # type: ignore[union-attr]
    pts = points(svg)
    assert len(pts) == 500
    assert all(p.tip for p in pts)  # every night's point has its tooltip, not only the latest ones
    # the first chart is the one prediction that failed last night (the attention order): fail when (i + k) % 11 == 0,
    # night 499 → k = 7. Night 0: 2025-06-01 02:00, commit 00000000, vLLM 0.32.0, 100 ms × (1 + 0.05·sin(7)) =
    # 100 × (1 + 0.05 × 0.65699) = 103.28 ms, (0 + 7) % 11 ≠ 0: a pass. Night 499: 2025-06-01 + 499 days =
    # 2026-10-13 at 02:(499 % 60 = 19), commit 0x1f3, vLLM 0.33.0 (from night 375), 100 ms × (1 + 0.05·sin(499/7 + 7))
    # = 100 × (1 + 0.05 × sin(2.8876 rad = 78.2857 − 24π) = 0.2515) = 101.26 ms: a fail
    assert pts[0].tip == "2025-06-01 02:00 UTC · 00000000 · vllm 0.32.0 — measured 103.3 ms: pass"
    assert pts[-1].tip == "2026-10-13 02:19 UTC · 000001f3 · vllm 0.33.0 — measured 101.3 ms: fail"
    assert (pts[0].color, pts[-1].color) == (PASS_COLOR, FAIL_COLOR)
    assert len([ln for ln in svg.iter(f"{SVG_NS}line") if ln.get("stroke") == PALETTE["purple"]]) == 1
    assert figs[0].count("<tr>") == 1 + 10  # the header and the latest ten nights
    assert "latest 10 of 500 nights" in figs[0]
    # a point costs its disc in its verdict's path (~13 B) and its hover strip with its tooltip (~130 B): 20 charts ×
    # 500 nights × ~145 B ≈ 1.45 MB, plus the tables; a point per element, as before, was twice that
    assert len(html) < 2 * 2**20


def test_the_model_line_and_the_band_step_where_the_yaml_or_the_model_changed() -> None:
    # nights 0-1: band [90, 110] ms and model 95 ms; nights 2-3: the YAML moved the band to [80, 100] ms and a
    # model change gives 85 ms. Expected: two band rectangles and a model line at two heights, the step halfway
    # between nights 1 and 2.
    runs = []
    for i in range(4):
        moved = i >= 2
        v = _value("p", 0.1)
        v = StoredValue(**{**v.to_dict(), "model": 0.085 if moved else 0.095, "lo": 0.08 if moved else 0.09,
                           "hi": 0.10 if moved else 0.11, "predicted_text": "90 ms" if moved else "100 ms"})
        runs.append(RunSummary(run_id=f"r{i}", setup=SetupKey("cpu", "m", "0.32.0"),
                               started_at=f"2026-12-0{i + 1}T02:00:00Z", mode="engine", values=(v,)))
    svg, _ = figure(render_trend(runs), "p")
    bands = [r for r in svg.iter(f"{SVG_NS}rect") if "rl-band" in (r.get("class") or "")]
    assert len(bands) == 2
    # each step says what it held and when (the band: its text and bounds in ms, as the YAML wrote them)
    assert [r.find(f"{SVG_NS}title").text for r in bands] == [  # type: ignore[union-attr]
        "predicted 100 ms [90 ms, 110 ms] · 2 nights, 2026-12-01 to 2026-12-02",
        "predicted 90 ms [80 ms, 100 ms] · 2 nights, 2026-12-03 to 2026-12-04"]
    hover = [t.text for g in svg.iter(f"{SVG_NS}g") if "rl-hover" in (g.get("class") or "")
             for t in g.iter(f"{SVG_NS}title")]
    assert "model 95 ms · 2 nights, 2026-12-01 to 2026-12-02" in hover
    assert "model 85 ms · 2 nights, 2026-12-03 to 2026-12-04" in hover
    (lo0, hi0), (lo1, hi1) = ((value_at(svg, float(r.get("y", "0")) + float(r.get("height", "0"))),
                                value_at(svg, float(r.get("y", "0")))) for r in bands)
    assert (lo0, hi0) == (pytest.approx(90, abs=0.5), pytest.approx(110, abs=0.5))
    assert (lo1, hi1) == (pytest.approx(80, abs=0.5), pytest.approx(100, abs=0.5))
    model = next(p for p in svg.iter(f"{SVG_NS}polyline") if p.get("stroke") == PALETTE["blue"])
    xy = [tuple(map(float, pt.split(","))) for pt in (model.get("points") or "").split()]
    assert sorted({round(value_at(svg, y), 1) for _, y in xy}) == [85.0, 95.0]
    xs = [p.cx for p in points(svg)]
    step_x = [x for (x, y), (x2, y2) in zip(xy, xy[1:]) if x == x2 and y != y2]
    assert len(step_x) == 1 and step_x[0] == pytest.approx((xs[1] + xs[2]) / 2, abs=0.5)


def test_select_runs_keeps_the_latest_nights_of_each_setup() -> None:
    runs = _synthetic_nights(30, 2) + [
        RunSummary(run_id=f"a{i}", setup=SetupKey("a100-sxm4-80gb", "Qwen3-8B", "0.32.0"),
                   started_at=f"2026-11-{10 + i}T02:00:00Z", mode="engine", values=(_value("x", 0.1),))
        for i in range(5)]
    kept = select_runs(runs, last=3)
    assert [r.run_id for r in kept if r.setup.hardware == "a100-sxm4-80gb"] == ["a2", "a3", "a4"]
    assert len([r for r in kept if r.setup.hardware == "h100-sxm5-80gb"]) == 3
    assert {r.setup.hardware for r in select_runs(runs, setup=["A100"])} == {"a100-sxm4-80gb"}
    assert {r.setup.engine_version for r in select_runs(runs, setup=["vllm 0.33"])} == {"0.33.0"}
    with pytest.raises(ValueError):
        select_runs(runs, last=0)


# ----------------------------------------------------------------------------------------------------------------
# the command
# ----------------------------------------------------------------------------------------------------------------
def test_roofline_history_reads_a_database_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_roofline.history import open_store

    url = f"sqlite:///{tmp_path / 'history.db'}"
    db = open_store(url)
    for run in two_nights(tmp_path, "0.32.0").runs():
        db.add(store_record(run))
    db.close()
    out = tmp_path / "db.html"
    assert roofline_main(["history", url, "-o", str(out)]) == 0
    assert "(2 runs)" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert "+25.0% vs previous run (2026-12-01, aaaa1111; baseline 1,382 ms), beyond 10%" in page


def store_record(summary: RunSummary) -> Any:
    from pytest_roofline.history import RunRecord

    return RunRecord(summary=summary)


def test_roofline_history_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = two_nights(tmp_path, "0.33.0")
    monkeypatch.chdir(tmp_path)
    assert roofline_main(["history", str(store.root)]) == 0
    page = tmp_path / "roofline-history.html"
    assert f"wrote {page.name} (2 runs)" in capsys.readouterr().out
    html = page.read_text(encoding="utf-8")
    assert f'content="{CSP}"' in html and "queueing-past-the-cap" in html
    out = tmp_path / "sub" / "t.html"
    (tmp_path / "sub").mkdir()
    assert roofline_main(["history", store.root.as_uri(), "-o", str(out), "--setup", "vllm 0.33", "--last", "5"]) == 0
    assert "(1 run)" in capsys.readouterr().out
    assert "vllm 0.32.0" not in out.read_text(encoding="utf-8")
    assert roofline_main(["history", str(store.root), "-o", str(out), "--baseline", "median:3", "--drift", "5%"]) == 0
    assert "drift vs median of 3 nights" in out.read_text(encoding="utf-8")
    with pytest.raises(SystemExit):
        roofline_main(["history", str(store.root), "--drift", "5 parsecs"])
    assert "argument --drift" in capsys.readouterr().err
    assert roofline_main(["history", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert roofline_main(["history", str(store.root), "-o", str(tmp_path / "no" / "dir" / "t.html")]) == 2


def test_a_pinned_baseline_that_names_no_single_run_is_a_usage_error(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # as pytest's --roofline-drift-baseline: a run id that is not in the store, or a beginning that several runs
    # share, is one line naming the option and the fix, exit status 2, and no page
    store = two_nights(tmp_path, "0.32.0")
    first, second = (r.run_id for r in store.runs())
    out = tmp_path / "t.html"
    assert roofline_main(["history", str(store.root), "-o", str(out), "--baseline", "run:nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: --baseline run:nope: no run with that id in the store")
    assert "roofline compare --store URI" in err and "Traceback" not in err and err.count("\n") == 1
    assert roofline_main(["history", str(store.root), "-o", str(out), "--baseline", "run:2026120"]) == 2
    assert "--baseline run:2026120: 2 runs begin with that id in the store" in capsys.readouterr().err
    assert not out.exists()
    # a run id (or its unique beginning) is the baseline of the drift column
    assert roofline_main(["history", str(store.root), "-o", str(out), "--baseline", f"run:{first[:9]}"]) == 0
    html = out.read_text(encoding="utf-8")
    summary = html[html.index('<table class="summary">'):html.index("</table>", html.index('<table class="summary">'))]
    assert f"drift vs run {first[:9]}" in summary and "no run" not in summary
    assert f"vs pinned run {first}" in summary  # the latest night's drift, against the pinned first night
    assert second.startswith("20261202T")
    # the help lists the pinned form too
    with pytest.raises(SystemExit):
        roofline_main(["history", "-h"])
    assert "previous|median:N|run:ID" in capsys.readouterr().out


# ----------------------------------------------------------------------------------------------------------------
# commits, files, intervals and times as the page writes them
# ----------------------------------------------------------------------------------------------------------------
def _night_at(started_at: str, *values: StoredValue, commit: str | None = None, run_id: str = "") -> RunSummary:
    return RunSummary(run_id=run_id or started_at, setup=SetupKey("cpu", "m", "0.32.0"), started_at=started_at,
                      mode="engine", commit=commit, values=values)


def test_the_whole_commit_is_shown_dirty_mark_included() -> None:
    runs = [_night_at("2026-12-04T02:00:00Z", _value("p", 0.1), commit="586b4ff-dirty"),
            _night_at("2026-12-05T02:00:00Z", _value("p", 0.1),
                      commit="0123456789abcdef0123456789abcdef01234567-dirty")]
    html = render_trend(runs)
    svg, table = figure(html, "p")
    tips = [p.tip or "" for p in points(svg)]
    assert tips[0].startswith("2026-12-04 02:00 UTC · 586b4ff-dirty · vllm 0.32.0")  # the tooltip
    assert tips[1].startswith("2026-12-05 02:00 UTC · 0123456789ab-dirty · ")  # a long sha: 12 and the mark
    assert "<code>586b4ff-dirty</code>" in table and "<code>0123456789ab-dirty</code>" in table  # the nights table
    assert "(0123456789ab-dirty)" in html  # the setup's "latest run" line
    assert "-dirt<" not in html and "-dirt " not in html and "0123456789abc" not in html


def test_summary_rows_of_one_id_in_two_files_carry_their_file() -> None:
    ids = ("kv-tokens", "no-preemption")
    run = _night_at("2026-12-05T02:00:00Z", *(_value(i, 0.1, file=f) for f in ("predictions/cpu-tiny.yaml",
                                                                              "predictions/cpu-prefill-heavy.yaml")
                                              for i in ids))
    # an id's tokens are spans with a break opportunity between them (report.common.id_html): read them whole
    html = render_trend([run]).replace('</span><wbr><span class="rl-tok">', "")
    summary = re.search(r'<table class="summary">(.*?)</table>', html, flags=re.S)
    assert summary is not None
    assert "<th>prediction</th><th>file</th><th>quantity</th>" in summary.group(1)
    rows = re.findall(r'<td class="pid">.*?>([\w-]+)</span></a></td><td class="file">([^<]*)</td>',
                      summary.group(1))
    assert sorted(rows) == sorted((i, f) for i in ids for f in ("predictions/cpu-tiny.yaml",
                                                                  "predictions/cpu-prefill-heavy.yaml"))


def _with_interval(v: StoredValue, lo: float | None, hi: float | None, method: str = "order-statistic") -> StoredValue:
    return StoredValue(**{**v.to_dict(), "measured_lo": lo, "measured_hi": hi, "interval_method": method})


def whiskers(svg: ET.Element) -> list[tuple[float, float, float, list[float]]]:
    """Each whisker as ``(x, y_top, y_bottom, cap widths)`` (px): a ``<path>`` of ``<g class="rl-whisker">``,
    ``Mx,y0Vy1`` then a ``Mx,yhw`` per cap."""
    out = []
    for g in svg.iter(f"{SVG_NS}g"):
        if "rl-whisker" not in (g.get("class") or ""):
            continue
        for path in g.iter(f"{SVG_NS}path"):
            d = path.get("d") or ""
            m = re.match(r"M([-\d.]+),([-\d.]+)V([-\d.]+)", d)
            assert m is not None, d
            caps = [float(w) for w in re.findall(r"M[-\d.]+,[-\d.]+h([-\d.]+)", d)]
            y0, y1 = float(m[2]), float(m[3])
            out.append((float(m[1]), min(y0, y1), max(y0, y1), caps))
    return sorted(out)


def test_whiskers_span_the_stored_interval_and_show_beside_the_dot() -> None:
    # night 0: 100 ms in [80, 130] ms; night 1: 105 ms in [104, 106] ms (shorter than the dot); night 2: 110 ms
    # with no interval stored; the axis spans the band (90..110 ms) and the intervals
    runs = [_night_at("2026-12-03T02:00:00Z", _with_interval(_value("p", 0.100), 0.080, 0.130)),
            _night_at("2026-12-04T02:00:00Z", _with_interval(_value("p", 0.105), 0.104, 0.106)),
            _night_at("2026-12-05T02:00:00Z", _value("p", 0.110))]
    html = render_trend(runs)
    svg, _ = figure(html, "p")
    pts = points(svg)
    ws = whiskers(svg)
    assert len(ws) == 2  # the night that stored no interval has no whisker
    (x0, top0, bottom0, caps0), (x1, top1, bottom1, caps1) = ws
    assert (x0, x1) == (pytest.approx(pts[0].cx, abs=0.1), pytest.approx(pts[1].cx, abs=0.1))
    assert value_at(svg, top0) == pytest.approx(130, abs=0.5) and value_at(svg, bottom0) == pytest.approx(80, abs=0.5)
    assert value_at(svg, top1) == pytest.approx(106, abs=0.5) and value_at(svg, bottom1) == pytest.approx(104, abs=0.5)
    assert bottom0 - top0 > 50  # a whisker of 50 ms on an axis of about 60 ms: most of the plot's height
    # the caps are wider than the dot, so even night 1's short whisker shows on either side of it
    dot_r = max(float(e.get("data-r", "0")) for e in svg.iter() if "rl-pt" in (e.get("class") or ""))
    assert len(caps0) == len(caps1) == 2 and min(caps0 + caps1) > 2 * dot_r
    # the whiskers are drawn before (under) the dots
    order = [e for e in svg.iter() if "rl-whisker" in (e.get("class") or "") or "rl-pt" in (e.get("class") or "")]
    assert "rl-whisker" in (order[0].get("class") or "")
    # the legend: a whisker swatch (a vertical line with two caps) and a label that says not every night has one
    legend = [t.text for t in svg.iter(f"{SVG_NS}text") if "interval" in (t.text or "")]
    assert legend == ["95 % interval (2 of 3 nights)"]
    swatches = [p.get("d") or "" for p in svg.iter(f"{SVG_NS}path") if re.fullmatch(
        r"M[-\d.]+,[-\d.]+V[-\d.]+(M[-\d.]+,[-\d.]+h10){2}", p.get("d") or "")]
    assert len(swatches) == 1
    tips = [p.tip or "" for p in pts]
    assert tips[0].endswith("measured 100 ms, 95 % interval [80 ms, 130 ms]: pass")
    assert tips[2].endswith("measured 110 ms, no interval stored: pass")
    # a chart none of whose nights stored an interval says nothing of one
    plain, _ = figure(render_trend([_night_at("2026-12-05T02:00:00Z", _value("p", 0.1))]), "p")
    assert whiskers(plain) == [] and "interval" not in ET.tostring(plain, encoding="unicode")


def test_runs_in_the_same_minute_get_distinct_labels() -> None:
    # five runs of one day: two in the minute 19:48, two in the same second 19:50:00
    starts = ["2026-12-05T19:47:10Z", "2026-12-05T19:48:05Z", "2026-12-05T19:48:41Z", "2026-12-05T19:50:00Z",
              "2026-12-05T19:50:00Z"]
    runs = [_night_at(t, _value("p", 0.1 + 0.001 * i), run_id=f"r{i}") for i, t in enumerate(starts)]
    html = render_trend(runs)
    svg, table = figure(html, "p")
    ticks = [t.text for t in svg.iter(f"{SVG_NS}text") if (t.text or "").startswith("12-05")]
    # labels of up to 17 characters (about 116 px at 11 px) on 5 nights of a 468 px axis (94 px each) would
    # overlap: every other night is labelled, the first and the latest among them (all five are in the tooltips)
    assert ticks == ["12-05 19:47:10", "12-05 19:48:41", "12-05 19:50:00 #2"]
    heads = [(p.tip or "").split(" · ")[0] for p in points(svg)]
    assert len(set(heads)) == 5 and heads[1] == "2026-12-05 19:48:05 UTC"
    assert heads[4] == "2026-12-05 19:50:00 UTC #2"
    nights = re.findall(r"<tr><td>([^<]*)</td>", table)
    assert len(set(nights)) == 5 and nights[0] == "2026-12-05 19:50:00 #2"
    # runs a minute apart keep the minute
    minute = [_night_at(f"2026-12-05T19:4{i}:00Z", _value("p", 0.1), run_id=f"m{i}") for i in range(3)]
    svg_m, _ = figure(render_trend(minute), "p")
    assert [t.text for t in svg_m.iter(f"{SVG_NS}text") if (t.text or "").startswith("12-05")] == [
        "12-05 19:40", "12-05 19:41", "12-05 19:42"]


# ----------------------------------------------------------------------------------------------------------------
# in a real browser
# ----------------------------------------------------------------------------------------------------------------
def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """A PNG's width, height and its pixels as RGB byte triples, row by row (8-bit RGB or RGBA, not interlaced:
    what Chromium writes), decoded here so the test needs no imaging library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    pixels: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):  # undo each row's filter (PNG spec §9: None, Sub, Up, Average, Paeth)
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels += [bytes(line[i:i + 3]) for i in range(0, stride, channels)]
        prev = line
    return width, height, pixels


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunSummary]:
    return demo_nights(tmp_path_factory.mktemp("demo")).runs()


@pytest.fixture(scope="module")
def demo_page(demo_runs: list[RunSummary]) -> str:
    return render_trend(demo_runs, source="history/")


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_paints_in_a_browser(tmp_path: Path, demo_page: str, scheme: str) -> None:
    page = tmp_path / "trend.html"
    page.write_text(demo_page, encoding="utf-8")
    shot = tmp_path / "shot.png"
    dark = ("--force-dark-mode",) if scheme == "dark" else ()
    log = run_chromium(tmp_path, page.as_uri(), "--window-size=900,700", "--force-device-scale-factor=0.5",
                    f"--screenshot={shot}", *dark).stderr
    console = [ln for ln in log.splitlines() if ":CONSOLE" in ln]
    assert console == []  # no CSP violation, no error of any kind reported by the page
    width, height, px = png_pixels(shot)
    assert (width, height) == (450, 350)
    background, _ = Counter(px).most_common(1)[0]
    assert (sum(background) / 3 > 200) == (scheme == "light")  # the page follows the reader's colour scheme
    painted = sum(p != background for p in px)
    assert painted > 0.15 * len(px)  # cards, tables and charts, not a blank page
    assert len(set(px)) > 50  # text, badges and chart colours (anti-aliasing included)
    assert any(abs(p[0] - 0x00) < 30 and abs(p[1] - 0x9E) < 30 and abs(p[2] - 0x73) < 30 for p in px)  # pass green
    if os.environ.get("ROOFLINE_TREND_SCREENSHOT"):  # a full-size look for a person (docs/trend.png)
        run_chromium(tmp_path, page.as_uri(), "--window-size=1320,1500",
                  f"--screenshot={os.environ['ROOFLINE_TREND_SCREENSHOT']}-{scheme}.png", *dark)



#: injected into a copy of the page (the page itself has no script, and its CSP would refuse one): for every
#: measured point, the element the browser finds under the point's centre and the tooltip it would show
_HIT_SCRIPT = r"""<script>
addEventListener('load', () => {
  const tips = [];
  for (const svg of document.querySelectorAll('svg.rl-chart')) {
    svg.scrollIntoView();
    const ctm = svg.getScreenCTM();
    for (const path of svg.querySelectorAll('path.rl-pt')) {
      for (const m of path.getAttribute('d').matchAll(/M([-\d.]+),([-\d.]+)h0/g)) {
        const p = svg.createSVGPoint();
        p.x = +m[1]; p.y = +m[2];
        const c = p.matrixTransform(ctm);
        const el = document.elementFromPoint(c.x, c.y);
        const t = el && el.querySelector(':scope > title');
        tips.push(t ? t.textContent : 'no tooltip under ' + (el ? el.tagName : 'nothing'));
      }
    }
  }
  document.body.textContent = 'HITS' + JSON.stringify(tips) + 'HITS';
});
</script>"""


@needs_chromium
def test_every_point_shows_its_tooltip_in_a_browser(tmp_path: Path, demo_page: str) -> None:
    # the points are ink only (one path per verdict); the tooltip is an invisible strip above them. Chromium's own
    # hit test (elementFromPoint, which honours pointer-events) must find, at each point's centre, that night's
    # tooltip: the one the markup puts there (points()), and for night 0 of queueing-past-the-cap the recording's
    # 1,382.42 ms × (1 + 0.03·sin 0) = 1,382 ms on 2026-11-18, commit 0x5eed0, vLLM 0.32.0 (demo_nights)
    seen = measure_in_chromium(tmp_path, demo_page, _HIT_SCRIPT, "HITS", "1320,1000", "hit")
    tips = [p.tip for svg in re.findall(r"<svg.*?</svg>", demo_page, flags=re.S) for p in points(ET.fromstring(svg))]
    expected = [t for t in tips if t is not None]
    assert len(expected) == len(tips) >= 14 * 10  # every point has a tooltip; 14 nights of each measured prediction
    assert sorted(seen) == sorted(expected)
    assert "2026-11-18 02:00 UTC · 005eed0 · vllm 0.32.0 — measured 1,382 ms: pass" in seen


def test_select_runs_counts_nights_per_prediction_file() -> None:
    # a nightly that runs two prediction files in two pytest sessions a night: four nights are eight runs, and
    # --last 2 keeps the last two nights of each file (four runs), not the last two sessions (one night)
    setup = SetupKey("a100-sxm4-80gb", "Qwen3-8B", "0.32.0")
    runs = [RunSummary(run_id=f"n{night}-{f}", setup=setup, started_at=f"2026-11-{10 + night}T0{i}:00:00Z",
                       mode="engine", values=(_value("x", 0.1, file=f"predictions/{f}.yaml"),))
            for night in range(4) for i, f in enumerate(("a", "b"))]
    kept = [r.run_id for r in select_runs(runs, last=2)]
    assert kept == ["n2-a", "n2-b", "n3-a", "n3-b"]



def test_the_demo_store_without_probes_renders_as_before_the_marks(demo_runs: list[RunSummary],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the recording's nights keep no host probe and every point held its concurrency: the page the marks' code makes
    # is byte for byte the page without it (no column, no ring, no style, no hint, no table row; the marks
    # themselves: tests/unit/test_trend_marks.py)
    from pytest_roofline.report import trend

    assert all(v.host_probe_gflop_per_s is None and v.held for r in demo_runs for v in r.values)
    with_marks = render_trend(demo_runs, source="history/", generated_at="2026-12-07 06:00 UTC")
    monkeypatch.setattr(trend, "_night_marks", lambda group, policy: {})
    assert render_trend(demo_runs, source="history/", generated_at="2026-12-07 06:00 UTC") == with_marks
    assert "tmark" not in with_marks and "rl-unheld" not in with_marks


def _marked_nights() -> list[RunSummary]:
    """Five nights of one prediction whose host probes are 7.5, 7.0, 4.35, 8.0 and 7.2 GFLOP/s; night 4's C=8 point
    did not hold its concurrency, so its probe counts for no night's reference. Night 3 has two earlier probed nights
    (too few for drift to know the machine) and is compared with its nearest three others, median(7.5, 7.0, 7.2) =
    7.2: 4.35 / 7.2 = 0.604, its machine 40 % slower (tests/unit/test_trend_marks.py works out such marks)."""
    out = []
    for n, (ttft, probe) in enumerate(zip((0.100, 0.102, 0.160, 0.101, 0.099), (7.5, 7.0, 4.35, 8.0, 7.2)), start=1):
        v = replace(_value("ttft", ttft), host_probe_gflop_per_s=probe,
                    unheld_points=("closed-c8",) if n == 4 else ())
        out.append(_night_at(f"2026-12-0{n}T02:00:00Z", v, commit=f"abc{n}def", run_id=f"n{n}"))
    return out


@needs_chromium
def test_the_marks_show_in_a_browser(tmp_path: Path) -> None:
    # the shaded column paints behind night 3 (#F0E442 at opacity 0.28 over the plot's #fcfcfd: about
    # (249, 245, 201)); each point's tooltip, as Chromium's own hit test finds it at the point's centre (the ring
    # around night 4's dot takes no pointer from it), says why the night is marked
    html = render_trend(_marked_nights(), source="history/")
    seen = measure_in_chromium(tmp_path, html, _HIT_SCRIPT, "HITS", "1280,900", "marks")
    assert len(seen) == 5
    assert "the machine itself ran 40% slower than on the other nights (host probe 4.35 vs 7.2 GFLOP/s" in seen[2]
    assert "point closed-c8 did not hold its concurrency this night" in seen[3]
    assert not any("machine" in t or "concurrency" in t for n, t in enumerate(seen) if n not in (2, 3))
    page = tmp_path / "marks-shot.html"
    page.write_text(html, encoding="utf-8")
    shot = tmp_path / "marks.png"
    run_chromium(tmp_path, page.as_uri(), "--window-size=1280,900", f"--screenshot={shot}")
    _w, _h, px = png_pixels(shot)
    assert sum(abs(p[0] - 249) <= 3 and abs(p[1] - 245) <= 3 and abs(p[2] - 201) <= 4 for p in px) > 500
