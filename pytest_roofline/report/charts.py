"""The scorecard's charts, as inline SVG (see :mod:`.svg`): the analytical model's curves against the sweep.

Each function takes the prediction file's :class:`~pytest_roofline.format.spec.Spec`, its resolved
:class:`~pytest_roofline.model.setup.Setup` (or None when it does not resolve), the results dict (or None in math
mode) and the verdict dicts with their outcomes, and returns a :class:`Figure` or None when it has nothing to
draw. No pytest import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_roofline.measure.results.match import recorded_span
from pytest_roofline.measure.stats.held import RATE_SHARE, is_rate_flag
from pytest_roofline.model import analytical as an
from pytest_roofline.model.band_reasons import NO_BAND_REASON
from pytest_roofline.model.bands import BAND_MEANING, NOMINAL_COVERAGE
from pytest_roofline.quantities.analysis import closed_points, goodput_rows, is_flattered, throughput_knee, ttft_knee
from pytest_roofline.quantities.littles import littles_reading
from pytest_roofline.quantities.measurement import concurrency
from pytest_roofline.quantities.serving_values import TERM_LABELS, dominant_term, shares_text
from pytest_roofline.report.common import OUTCOME_COLOR, Row, is_number
from pytest_roofline.report.svg import PALETTE, Axis, Chart, Legend, compact_number
from pytest_roofline.scoring import serving_sweep_for

__all__ = ["Figure", "sweep_batches", "throughput_chart",
           "per_request_chart", "ttft_chart", "tpot_chart", "littles_chart", "timeline_charts", "roofline_chart",
           "model_step", "serving_points", "serving_band", "SERVING_BAND_LABEL", "SERVING_P50_BAND_LABEL",
           "PER_REQUEST_NO_BAND", "open_points",
           "open_loop_charts"]

C_MODEL = PALETTE["blue"]
C_MEAS = PALETTE["red"]
C_P50 = PALETTE["sky"]
C_P99 = PALETTE["red"]
C_SLO = "#b2182b"
C_KNEE_MODEL = PALETTE["blue"]
C_KNEE_MEAS = PALETTE["red"]
C_GOODPUT = PALETTE["green"]
C_CONTAM = PALETTE["orange"]
C_SERV = PALETTE["green"]
#: the best-goodput column behind the TTFT and TPOT charts: yellow, so it is not read as the serving band (green)
C_GOODPUT_COLUMN = PALETTE["yellow"]
GOODPUT_COLUMN_LABEL = "best goodput point (SLO met)"
C_SERV_P99 = PALETTE["purple"]


@dataclass
class Figure:
    key: str
    title: str
    svg: str
    caption: str = ""
    wide: bool = False
    #: the same chart with the other y scale (the scorecard offers a toggle), and what the toggle says
    alt_svg: str = ""
    alt_label: str = ""


#: the y-axis scales a value chart can be drawn with ("auto": log where the values span ``LOG_SPAN`` or more)
Y_SCALES = ("auto", "log", "linear")
LOG_SPAN = 8.0


def choose_scale(values: Sequence[float], y_scale: str = "auto") -> str:
    """"log" or "linear" for a value axis: the choice made, or under "auto" log when the positive values span
    LOG_SPAN× or more (the notebook's 88.8 … 3,088 tok/s span 35×: on a linear axis C = 1–8 sit on the x axis)."""
    if y_scale not in Y_SCALES:
        raise ValueError(f"y_scale must be one of {', '.join(Y_SCALES)}, not {y_scale!r}")
    if y_scale != "auto":
        return y_scale
    pos = [v for v in values if is_number(v) and v > 0 and math.isfinite(v)]
    return "log" if pos and len(pos) == len([v for v in values if is_number(v)]) and max(pos) / min(pos) >= LOG_SPAN \
        else "linear"


# ----------------------------------------------------------------------------------------------------------------
# data helpers
# ----------------------------------------------------------------------------------------------------------------
def _get(d: Any, *path: str) -> Any:
    for k in path:
        if not isinstance(d, Mapping):
            return None
        d = d.get(k)
    return d


def sweep_batches(spec: Any, results: Mapping[str, Any] | None) -> list[float]:
    """The concurrencies the charts span: the swept ones, else those the predictions name, else 1…256."""
    vals: set[float] = {float(concurrency(p)) for p in closed_points(results)}
    vals |= {float(c) for c in getattr(spec.sweep, "concurrency", ()) or ()}
    for pred in spec.predictions:
        for k in ("concurrency", "batch"):
            x = pred.at.get(k) if isinstance(pred.at, dict) else None
            if is_number(x) and x > 0:
                vals.add(float(x))
    if not vals:
        vals = {2.0 ** k for k in range(9)}
    return sorted(vals)


def _x_axis(batches: Sequence[float], label: str = "concurrency (closed loop) = decode batch B") -> Axis:
    lo, hi = min(batches), max(batches)
    lo = min(lo, 1.0)
    hi = max(hi, lo * 4)
    ticks = [2.0 ** k for k in range(int(math.floor(math.log2(lo))), int(math.ceil(math.log2(hi))) + 1)]
    return Axis(lo / 1.25, hi * 1.25, "log", label, ticks=ticks, fmt=lambda t: f"{t:g}", base=2)


def _geom(lo: float, hi: float, n: int = 120) -> list[float]:
    return [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]


def model_step(setup: Any, batch: float) -> an.DecodeStep:
    """The setup's own decode roofline step (Setup.decode_step: one GPU's share and the all-reduces under TP)."""
    step: an.DecodeStep = setup.decode_step(batch)
    return step


def _ink(verdicts: Sequence[Row], quantity: str) -> list[Row]:
    out = []
    for v, outcome, pred in verdicts:
        if v.quantity != quantity or pred is None:
            continue
        if is_number(v.predicted_value):
            out.append((v, outcome, pred))
    return out


def _at_batch(pred: Any, keys: Sequence[str] = ("concurrency", "batch")) -> float | None:
    for k in keys:
        x = pred.at.get(k)
        if is_number(x):
            return float(x)
    return None


def _si(x: float, unit: str) -> str:
    """3.12e14, 'FLOP/s' → '312 TFLOP/s'."""
    c = compact_number(x)
    return f"{c[:-1]} {c[-1]}{unit}" if c[-1:].isalpha() else f"{c} {unit}"


def _fmt_tok(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _slo_goodput(results: Mapping[str, Any] | None, spec: Any) -> an.Goodput | None:
    pct = (spec.slo or {}).get("percentile", "p99")
    for g in goodput_rows(results, spec.slo):
        if g.percentile == pct:
            return g
    return None


def serving_points(spec: Any, setup: Any, mode: str = "closed") -> list[tuple[float, Any]]:
    """The serving model's sweep points of one loop as (concurrency, PointPrediction) for ``mode`` "closed", or
    (offered rate in req/s, PointPrediction) for "open", in rising order; [] when it cannot run.

    The same simulation the verdicts used (cached on the spec), so a chart never simulates a point twice."""
    swept = getattr(getattr(spec, "sweep", None), "concurrency" if mode == "closed" else "rates", None)
    if setup is None or not swept:
        return []
    try:
        sweep = serving_sweep_for(spec, None, setup)
        if mode == "closed":
            return [(float(c), pp) for c, pp in sweep.closed()]
        keys = sorted(p.key for p in sweep.points if p.key[0] == mode)
        return [(float(k[1]), sweep.predict(k)[1]) for k in keys]
    except (ValueError, ZeroDivisionError, AttributeError, KeyError):  # SetupError/SimulationError: ValueErrors
        return []


def open_points(results: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The open-loop (request-rate) sweep points, in rising offered rate."""
    pts = [p for p in (results or {}).get("points") or []
           if isinstance(p, Mapping) and p.get("mode") == "open" and is_number(p.get("rate_req_s"))]
    return sorted(pts, key=lambda p: float(p["rate_req_s"]))


def _at_c(c: float) -> str:
    """How a tooltip names a closed-loop point: ``C=8``."""
    return f"C={c:g}"


def _at_rate(r: float) -> str:
    """How a tooltip names an open-loop point: ``rate=12 req/s`` (the offered rate)."""
    return f"rate={r:g} req/s"


#: the legend entry of the serving model's band in the charts (docs/explanation/models.md: what the band means)
SERVING_BAND_LABEL = f"serving model band ({NOMINAL_COVERAGE:.0%} nominal)"
_SERVING_BAND_TIP = f"the serving model's band: {BAND_MEANING}"
#: the legend entry of a serving p50 band (TTFT, TPOT charts)
SERVING_P50_BAND_LABEL = f"serving model p50 band ({NOMINAL_COVERAGE:.0%} nominal)"
#: the per-request chart's serving line has no band: no public source of the accuracy corpus reports per-request
#: tok/s (model.band_reasons.NO_BAND_REASON, the reason ``roofline predict --simulate`` prints)
PER_REQUEST_NO_BAND = NO_BAND_REASON["per_request_output_tok_per_s"]


def serving_band(pp: Any, metric: str) -> tuple[float, float] | None:
    """The serving model's band ``(lo, hi)`` around one of a point's values (``PointPrediction.bands[metric]``),
    or None where the point has none: a regime with too few sources gets a note, never a made-up band."""
    band = (getattr(pp, "bands", None) or {}).get(metric)
    if not band or len(band) != 2:
        return None
    lo, hi = band
    return (float(lo), float(hi)) if is_number(lo) and is_number(hi) and 0 < lo <= hi else None


def _band_ribbon(chart: Chart, items: Sequence[tuple[float, float, float]], *, color: str,
                 opacity: float = 0.14) -> Legend | None:
    """A light shaded ribbon from each point's ``lo`` to its ``hi`` (items ``(x, lo, hi)``), joined from point to
    point as the serving model's dashed line is; drawn where it is called (before the line, so under it). Its two
    edges count as drawn lines for label placement, so no label is put across them. One point alone: a whisker.
    Returns the legend entry to add (after the line's, by :func:`_add_legend`), or None when nothing was drawn."""
    ax = chart.y
    pts = sorted((x, lo, hi) for x, lo, hi in items
                 if is_number(x) and is_number(lo) and is_number(hi) and lo <= hi
                 and (chart.x.scale != "log" or x > 0) and (ax.scale != "log" or lo > 0) and chart.x.contains(x))
    if len(pts) == 1:
        x, lo, hi = pts[0]
        chart.whiskers([(x, lo, (lo * hi) ** 0.5 if ax.scale == "log" else (lo + hi) / 2, hi)], color=color,
                       width=1.2)
        return Legend(SERVING_BAND_LABEL, color, "whisker", width=1.2)
    if len(pts) < 2:
        return None

    if not chart.ribbon(pts, color=color, opacity=opacity, title=_SERVING_BAND_TIP):
        return None
    return Legend(SERVING_BAND_LABEL, color, "band")


def _add_legend(chart: Chart, entry: Legend | None, label: str | None = None) -> None:
    """Put a legend entry that :func:`_band_ribbon` made into the chart's legend (``label`` replaces its text)."""
    if entry is not None:
        if label:
            entry.label = label
        chart.add_legend(entry)


def _serving_tip(c: float, pp: Any, what: str, where: Any = _at_c) -> str:
    top = dominant_term(pp.time_shares)
    return (f"{where(c)}: serving model {what}; busy time {shares_text(pp.time_shares)}"
            + (f" — dominated by {TERM_LABELS.get(top[0], top[0])}" if top else "")
            + (f"; {pp.preemptions:,} preemptions" if pp.preemptions else ""))


# ----------------------------------------------------------------------------------------------------------------
# throughput
# ----------------------------------------------------------------------------------------------------------------
def _model_curves(setup: Any, x: Axis) -> dict[str, Any] | None:
    """The model's throughput curve and landmarks over the x axis, or None when the setup cannot give them."""
    if setup is None:
        return None
    try:
        lm = setup.roofline_landmarks()  # per GPU under TP, as the quantities compute them
        return {
            "curve": [(b, model_step(setup, b).throughput_tok_per_s) for b in _geom(x.lo, x.hi)],
            "knee": lm.knee, "half": lm.half_saturation_batch, "asym": lm.throughput_asymptote_tok_per_s,
            "roof": lm.compute_roof_tok_per_s,
        }
    except (ValueError, ZeroDivisionError, AttributeError):  # SetupError is a ValueError
        return None


def _model_at(setup: Any, c: float, attr: str) -> float | None:
    try:
        return float(getattr(model_step(setup, c), attr))
    except (ValueError, ZeroDivisionError, AttributeError):
        return None


def throughput_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None,
                     verdicts: Sequence[Row], *, y_scale: str = "auto") -> Figure | None:
    """Aggregate throughput; drawn with a log y axis where the values span 8× or more (``y_scale`` "auto"), and
    the figure carries the other scale as ``alt_svg``."""
    # the measured points and the values in ink decide the scale: the model curve starts near zero at B → 0
    return _with_other_scale(lambda scale: _throughput_chart(spec, setup, results, verdicts, scale), y_scale)


def _with_other_scale(draw: Any, y_scale: str) -> Figure | None:
    """The figure ``draw(y_scale)`` returns (with the scale it chose), carrying the same chart drawn with the other
    y scale as ``alt_svg`` for the scorecard's toggle."""
    first = draw(y_scale)
    if first is None:
        return None
    fig, scale = first
    other = draw("linear" if scale == "log" else "log")
    if other is not None:
        fig.alt_svg, fig.alt_label = other[0].svg, f"{'linear' if scale == 'log' else 'log'} y axis"
    return fig


def _throughput_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None,
                      verdicts: Sequence[Row], y_scale: str) -> tuple[Figure, str] | None:
    th = spec.thresholds
    x = _x_axis(sweep_batches(spec, results))
    m = _model_curves(setup, x)
    pts = closed_points(results)
    meas = [(float(concurrency(p)), float(_get(p, "client", "output_throughput_tok_s"))) for p in pts
            if is_number(_get(p, "client", "output_throughput_tok_s"))]
    serv = [(c, pp.output_throughput_tok_per_s, pp) for c, pp in serving_points(spec, setup)]
    if m is None and not meas and not serv:
        return None
    inks = _ink(verdicts, "output_throughput")
    ys = ([y for _, y in m["curve"]] if m else []) + [y for _, y in meas] + [float(v.predicted_value)
                                                                              for v, _, _ in inks]
    ys += [y for _, y, _ in serv]
    serv_band = [(c, *b) for c, _y, pp in serv if (b := serving_band(pp, "output_throughput_tok_per_s"))]
    ys += [hi for _c, _lo, hi in serv_band]
    points = [y for _, y in meas] + [float(v.predicted_value) for v, _, _ in inks] + [y for _, y, _ in serv]
    scale = choose_scale(points or ys, y_scale)
    ymax = max(ys) * (1.12 if scale == "linear" else 1.6)
    if m is not None:
        if m["asym"] <= ymax * 1.6:
            ymax = max(ymax, m["asym"] * (1.08 if scale == "linear" else 1.5))
        if m["roof"] <= ymax * 1.25:
            ymax = max(ymax, m["roof"] * (1.06 if scale == "linear" else 1.5))
    ymin = 0.0 if scale == "linear" else min(v for v in (points or ys) if v > 0) / 1.8
    subtitle = (f"{setup.hardware.id} · {setup.model.name} · {setup.kv_context_tokens:,.0f} tokens of KV per "
                f"sequence" if setup is not None else "measured only: the setup gives the model no curve")
    if setup is not None and m is None:
        subtitle += " (the chip has no bandwidth/peak figures, so the model draws no curve)"
    ch = Chart(x, Axis(ymin, ymax, scale, "aggregate output tok/s" + (" (log scale)" if scale == "log" else "")),
               width=600, height=340,
               title="Aggregate throughput vs concurrency", subtitle=subtitle,
               description="measured aggregate output throughput per sweep point against the decode-roofline model")
    mknee = throughput_knee(meas, th.knee_gain) if len(meas) >= 2 else None
    if m is not None and m["knee"].batch is None:
        ch.note(f"model: no knee — KV-inclusive intensity never reaches the ridge; throughput only flattens "
                f"(half-saturation B = {m['half']:,.0f})", color=C_KNEE_MODEL)
    if mknee is None and len(meas) >= 2:
        ch.note(f"measured: no knee through C = {max(c for c, _ in meas):g} (each doubling adds ≥ "
                f"{th.knee_gain:.0%})", color=C_KNEE_MEAS)
    if m is not None:
        knee, half = m["knee"], m["half"]
        ch.hline(m["asym"], color=C_MODEL, dash="2 4", width=1.2, text_anchor="start",
                 text=f"memory asymptote BW ÷ KV/seq = {_fmt_tok(m['asym'])} tok/s")
        ch.hline(m["roof"], color=PALETTE["purple"], dash="2 4", text=f"compute roof = {_fmt_tok(m['roof'])} tok/s",
                 width=1.2, text_anchor="start")
        ch.line(m["curve"], color=C_MODEL, width=2.2, label="model: B ÷ max(t_mem, t_comp)",
                title="decode-roofline model (decode only: no prefill, no engine overhead)")
    if serv:
        _serving_curve(ch, serv, serv_band, "serving model: prefill, engine overhead, scheduling and KV pool included",
                       [_serving_tip(c, pp, f"{y:,.1f} tok/s") for c, y, pp in serv])
    if m is not None:
        knee, half = m["knee"], m["half"]
        if knee.batch is not None and x.contains(knee.batch):
            ch.vline(knee.batch, color=C_KNEE_MODEL, text=f"model knee B* = {knee.batch:,.0f}", label=None)
        elif knee.batch is None:
            ch.vline(half, color=C_KNEE_MODEL, dash="6 4", text=f"half-saturation B = {half:,.0f}", text_pos=0.1,
                     text_side="left" if half > x.hi / 3 else "right")
    if mknee is not None:
        ch.vline(mknee, color=C_KNEE_MEAS, text=f"measured knee C = {mknee:g}", text_pos=0.09,
                 text_side="right" if mknee < x.hi / 3 else "left")
    if meas:
        contaminated = _contaminated(pts, th, setup)
        tips = []
        for c, y in meas:
            mv = _model_at(setup, c, "throughput_tok_per_s") if m is not None else None
            tips.append(f"C={c:g}: {y:,.1f} tok/s measured" + (f"; model {mv:,.1f} ({y / mv:.0%} of the model)"
                                                                 if mv else "")
                        + (" — contaminated (prefix-cache hits)" if c in contaminated else ""))
        ch.line(meas, color=C_MEAS, width=1.6, opacity=0.85)
        ch.markers(meas, color=C_MEAS, label="measured", titles=tips)
        _ring_contaminated(ch, meas, contaminated)
    _ink_markers(ch, inks, setup, "tok/s")
    g = _slo_goodput(results, spec)
    if g is not None and g.best_concurrency is not None and g.best_tok_per_s is not None:
        ch.markers([(float(g.best_concurrency), g.best_tok_per_s)], color=C_GOODPUT, marker="star", size=6, dodge=True,
                   label=f"goodput ({g.percentile} SLO)",
                   titles=[f"goodput at {g.percentile}: {g.best_tok_per_s:,.1f} tok/s at C={g.best_concurrency}; "
                           f"raw max {g.raw_max_tok_per_s:,.1f} at C={g.raw_max_concurrency}"])
        ch.annotate(float(g.best_concurrency), g.best_tok_per_s, f"goodput {_fmt_tok(g.best_tok_per_s)} tok/s",
                    color=C_GOODPUT, dx=-9, dy=-12, anchor="end", weight="600")
    if scale == "log":
        cap_scale = "The y axis is logarithmic (the values span 8× or more); the toggle shows it linear. "
    else:
        cap_scale = ""
    cap = ""
    if m is not None:
        knee, half = m["knee"], m["half"]
        cap = ("Model: aggregate tok/s = B ÷ t_step with t_step = max((W + B·KV/seq) ÷ BW, B·2P ÷ peak). "
               + (f"Model knee at B* = {knee.batch:,.1f}. " if knee.batch is not None else
                  f"No roofline knee ({knee.reason.split(': ', 1)[-1]}); half-saturation at B = {half:,.1f}. "))
    if len(meas) >= 2:
        cap += (f"Measured knee (doubling adds < {th.knee_gain:.0%}): "
                + (f"C = {mknee:g}." if mknee is not None else "none — only flattening."))
    if serv:
        sknee = throughput_knee([(c, y) for c, y, _ in serv], th.knee_gain) if len(serv) >= 2 else None
        c_hi, _y, pp_hi = serv[-1]
        top = dominant_term(pp_hi.time_shares, beyond_roofline=True)
        cap += (" Serving model (dashed green): the step-level simulation of the sweep"
                + (f"; the light green band around it is {BAND_MEANING}" if serv_band else "")
                + (f", knee C = {sknee:g}" if sknee is not None else ", no knee")
                + (f"; at C = {c_hi:g} {TERM_LABELS.get(top[0], top[0])} takes {top[1]:.0%} of its step time, "
                   "a term the decode roofline leaves out." if top else "."))
    return Figure("throughput", ch.title, ch.render(), cap_scale + cap), scale


def _serving_curve(ch: Chart, serv: Sequence[tuple[float, float, Any]], band: Sequence[tuple[float, float, float]],
                   title: str, tips: Sequence[str]) -> None:
    """The serving model's throughput: its band shaded (under the line), the dashed green line, a square per point."""
    band_key = _band_ribbon(ch, band, color=C_SERV)
    ch.line([(x, y) for x, y, _ in serv], color=C_SERV, width=2.0, dash="6 3",
            label="serving model (step-level vLLM simulation)", title=title)
    _add_legend(ch, band_key)
    ch.markers([(x, y) for x, y, _ in serv], color=C_SERV, marker="square", size=3.5, titles=list(tips))


def _contaminated(pts: Sequence[Any], th: Any, setup: Any) -> set[float]:
    """The concurrencies of the points whose figures prefix-cache hits flattered (``is_flattered``)."""
    return {float(concurrency(p)) for p in pts if is_flattered(p, th, setup)}


def _ring_contaminated(ch: Chart, xy: Sequence[tuple[float, float]], contaminated: set[float]) -> None:
    """A ring around each plotted point whose concurrency is in ``contaminated``, with its legend entry."""
    ring = [(c, y) for c, y in xy if c in contaminated]
    if ring:
        ch.markers(ring, color=C_CONTAM, marker="circle", size=8, ring=True, label="contaminated (prefix-cache hits)")


def _ink_markers(ch: Chart, inks: Sequence[Row], setup: Any, unit: str, *,
                 keys: Sequence[str] = ("concurrency", "batch"), where: Any = _at_c, scale: float = 1.0,
                 stat: str = "") -> None:
    """Diamonds for the values in ink, coloured by outcome; hollow when computed for another setup. ``keys``: the
    ``at:`` keys that place one on the x axis; ``where``: how its tooltip names that point; ``scale``: from the
    value's SI unit to the chart's (1e3 for seconds drawn in ms); ``stat``: the statistic the chart's own line is
    (``p50``): an ink value of another one (a TTFT p99 on the TTFT chart) says which in its label."""
    first = True
    for v, outcome, pred in inks:
        b = _at_batch(pred, keys)
        if b is None:
            continue
        other = bool(pred.setup)
        y = float(v.predicted_value) * scale
        hw = pred.setup.get("hardware") if other else None
        which = _stat_of(v.quantity) if stat else ""
        tip = (f"{v.id}: ink {v.predicted_text} at {where(b)} — {outcome}" + (f" ({v.quantity})" if stat else "")
               + (f" (computed for {hw or 'another setup'})" if other else "")
               + (f"; measured {v.measured_text}" if v.measured_text else "")
               + (f"; model {v.model_text}" if v.model_text else ""))
        ch.markers([(b, y)], color=OUTCOME_COLOR.get(outcome, "#333"), marker="diamond", size=5, hollow=other,
                   titles=[tip], stroke="#111" if not other else None,
                   label="ink (colour = outcome)" if first else None, dodge=True)
        first = False
        label = str(v.predicted_text or "")
        if which and which != stat:
            label += f" {which}"
        if other and hw:
            label += f" ({hw})"
        if other:
            ch.annotate(b, y, label, color="#555", dx=8, dy=14, size=10)
        else:
            ch.annotate(b, y, label, color="#222", dx=-7, dy=-8, anchor="end", size=10)


#: the quantities drawn in ink on the TTFT and TPOT charts, by the chart's metric (their mean and percentiles)
_LATENCY_INK: dict[str, tuple[str, ...]] = {m: tuple(f"{m}_{s}" for s in ("mean", "p50", "p90", "p95", "p99"))
                                            for m in ("ttft", "tpot")}


def _stat_of(quantity: str) -> str:
    """The statistic of a latency quantity: ``ttft_p99`` -> ``p99``, ``tpot_mean`` -> ``mean``."""
    return quantity.rsplit("_", 1)[-1]


def _latency_inks(verdicts: Sequence[Row], metric: str, keys: Sequence[str] = ("concurrency", "batch")) -> list[Row]:
    """The ink values of ``metric``'s quantities (``_LATENCY_INK``) placed at a point by ``keys``."""
    return [row for q in _LATENCY_INK[metric] for row in _ink(verdicts, q) if _at_batch(row[2], keys) is not None]


def _ink_ms(inks: Sequence[Row]) -> list[float]:
    """The ink values of time quantities in ms (their verdicts hold seconds)."""
    return [float(v.predicted_value) * 1e3 for v, _, _ in inks]


def per_request_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None,
                      verdicts: Sequence[Row]) -> Figure | None:
    th = spec.thresholds
    x = _x_axis(sweep_batches(spec, results))
    curve: list[tuple[float, float]] = []
    ceiling = None
    if setup is not None:
        try:
            curve = [(b, model_step(setup, b).per_request_tok_per_s) for b in _geom(x.lo, x.hi)]
            ceiling = setup.roofline_landmarks().batch1_ceiling_tok_per_s  # one GPU's weights under TP
        except (ValueError, ZeroDivisionError, AttributeError):
            curve, ceiling = [], None
    pts = closed_points(results)
    meas = []
    for p in pts:
        per = _get(p, "client", "per_request_output_tok_s")
        val = per.get("mean", per.get("p50")) if isinstance(per, Mapping) else per
        if is_number(val):
            meas.append((float(concurrency(p)), float(val)))
    serv = [(c, float(pp.per_request_output_tok_per_s), pp) for c, pp in serving_points(spec, setup)
            if is_number(pp.per_request_output_tok_per_s) and pp.per_request_output_tok_per_s > 0]
    if not curve and not meas and not serv:
        return None
    inks = _ink(verdicts, "per_request_throughput")
    ys = ([y for _, y in curve] + [y for _, y in meas] + [float(v.predicted_value) for v, _, _ in inks]
          + ([ceiling] if ceiling else []) + [y for _, y, _ in serv])
    ch = Chart(x, Axis(0, max(ys) * 1.12, "linear", "output tok/s per request"), width=600, height=340,
               title="Per-request throughput vs concurrency",
               subtitle="what one user sees: 1 ÷ t_step (model) against the mean per-request tok/s",
               description="per-request decode speed against concurrency")
    if ceiling:
        ch.hline(ceiling, color=PALETTE["purple"], dash="2 4", width=1.2,
                 text=f"batch-1 ceiling BW ÷ W = {ceiling:,.1f} tok/s")
    if curve:
        ch.line(curve, color=C_MODEL, width=2.2, label="model: 1 ÷ t_step")
    if serv:
        ch.line([(c, y) for c, y, _ in serv], color=C_SERV, width=2.0, dash="6 3",
                label="serving model (step-level vLLM simulation; no band)",
                title="serving model: mean per-request output tok/s (tokens ÷ E2E), prefill and overhead included; "
                      + PER_REQUEST_NO_BAND)
        ch.markers([(c, y) for c, y, _ in serv], color=C_SERV, marker="square", size=3.5,
                   titles=[_serving_tip(c, pp, f"{y:,.1f} tok/s per request") for c, y, pp in serv])
    if meas:
        contaminated = _contaminated(pts, th, setup)
        ch.line(meas, color=C_MEAS, width=1.6, opacity=0.85)
        tips = []
        for c, y in meas:
            mv = _model_at(setup, c, "per_request_tok_per_s") if curve else None
            tips.append(f"C={c:g}: {y:,.1f} tok/s per request" + (f"; model {mv:,.1f}" if mv else ""))
        ch.markers(meas, color=C_MEAS, label="measured (mean)", titles=tips)
        _ring_contaminated(ch, meas, contaminated)
    b1 = next((p for p in (results or {}).get("points") or [] if p.get("id") == "batch1"), None)
    if b1 is not None and is_number(_get(b1, "client", "output_throughput_tok_s")):
        y = float(b1["client"]["output_throughput_tok_s"])
        ch.markers([(1.0, y)], color=PALETTE["black"], marker="square", size=4, label="clean batch-1 run", dodge=True,
                   titles=[f"batch1 point: {y:,.1f} tok/s" + (f" = {y / ceiling:.1%} of the weight-read ceiling"
                                                              if ceiling else "")])
    _ink_markers(ch, inks, setup, "tok/s")
    cap = ("Each request gets one token per decode step, so per-request speed is 1 ÷ t_step; the gap to the "
           "batch-1 ceiling is what the neighbours cost.")
    if serv:
        c_hi, _y, pp_hi = serv[-1]
        top = dominant_term(pp_hi.time_shares, beyond_roofline=True)
        cap += (" Serving model (dashed green): the mean over simulated requests of output tokens ÷ E2E latency, "
                "as measured (first-token wait, and the steps its neighbours' prefills stretch, included)"
                + (f"; at C = {c_hi:g} {TERM_LABELS.get(top[0], top[0])} takes {top[1]:.0%} of the step time."
                   if top else "."))
    return Figure("per_request", ch.title, ch.render(), cap)


# ----------------------------------------------------------------------------------------------------------------
# latency
# ----------------------------------------------------------------------------------------------------------------
def _latency_series(pts: Sequence[Mapping[str, Any]], metric: str, stat: str,
                    x_key: str = "concurrency") -> list[tuple[float, float]]:
    out = []
    for p in pts:
        val = _get(p, "client", metric, stat)
        if is_number(val):
            out.append((float(p[x_key]), float(val)))
    return out


#: the caption's sentence on the latency values in ink
_INK_CAPTION = (" Diamonds: the {what} values in ink at their concurrency, coloured by verdict; one that is not a "
                "p50 says which statistic it is (e.g. p99).")


def ttft_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None,
               verdicts: Sequence[Row]) -> Figure | None:
    pts = closed_points(results)
    p50 = _latency_series(pts, "ttft_ms", "p50")
    p99 = _latency_series(pts, "ttft_ms", "p99")
    sp = serving_points(spec, setup)
    s50 = [(c, pp.ttft_p50_ms) for c, pp in sp if pp.ttft_p50_ms > 0]
    s99 = [(c, pp.ttft_p99_ms) for c, pp in sp if pp.ttft_p99_ms > 0]
    if not (p50 or p99 or s50):
        return None
    th = spec.thresholds
    x = _x_axis(sweep_batches(spec, results))
    slo = (spec.slo or {}).get("ttft")
    floor = None
    if setup is not None:
        try:
            floor = an.prefill_floor_s(setup.input_len, setup.flop_per_token, setup.peak_flop_per_s) * 1e3
        except (ValueError, AttributeError):
            floor = None
    b50 = [(c, *b) for c, pp in sp if pp.ttft_p50_ms > 0 and (b := serving_band(pp, "ttft_p50_ms"))]
    inks = _latency_inks(verdicts, "ttft")
    vals = [y for _, y in p50 + p99 + s50 + s99] + ([slo * 1e3] if slo else []) + ([floor] if floor else [])
    vals += [v for _c, lo_, hi_ in b50 for v in (lo_, hi_)] + [y for y in _ink_ms(inks) if y > 0]
    lo, hi = min(vals) / 1.6, max(vals) * 1.6
    ch = Chart(x, Axis(lo, hi, "log", "TTFT (ms, log scale)"), width=600, height=340,
               title="Time to first token vs concurrency",
               subtitle="p50 and p99 per sweep point; the latency price of the throughput",
               description="TTFT percentiles against concurrency with the SLO")
    g = _slo_goodput(results, spec)
    if g is not None and g.best_concurrency is not None:
        ch.note(f"goodput ({g.percentile}): C = {g.best_concurrency} — {g.best_tok_per_s:,.1f} tok/s "
                f"(raw max {g.raw_max_tok_per_s:,.1f} at C = {g.raw_max_concurrency})", color=C_GOODPUT)
    elif g is not None:
        ch.note(f"no sweep point meets the SLO at {g.percentile}", color=C_SLO)
    if g is not None and g.best_concurrency is not None:
        ch.vband(g.best_concurrency / 1.12, g.best_concurrency * 1.12, color=C_GOODPUT_COLUMN, opacity=0.3,
                 label=GOODPUT_COLUMN_LABEL)
    if slo:
        ch.hline(slo * 1e3, color=C_SLO, dash="7 4", text=f"SLO TTFT {slo * 1e3:g} ms", label=None, width=1.6,
                 text_anchor="start")
    if floor:
        ch.hline(floor, color=C_MODEL, dash="2 4", text=f"prefill compute floor {floor:,.1f} ms (model)",
                 width=1.2)
    if s50:
        band_key = _band_ribbon(ch, b50, color=C_SERV, opacity=0.1)
        ch.line(s50, color=C_SERV, width=1.8, dash="6 3", label="serving model p50")
        _add_legend(ch, band_key, SERVING_P50_BAND_LABEL)
        ch.line(s99, color=C_SERV_P99, width=1.8, dash="6 3", label="serving model p99")
        ch.markers(s99, color=C_SERV_P99, marker="square", size=3.5,
                   titles=[_serving_tip(c, pp, f"p99 TTFT {pp.ttft_p99_ms:,.0f} ms, p50 {pp.ttft_p50_ms:,.0f} ms, "
                                              f"mean queue {pp.mean_queue_ms:,.0f} ms") for c, pp in sp
                           if pp.ttft_p99_ms > 0])
    if p50:
        ch.line(p50, color=C_P50, width=2, label="p50")
        ch.markers(p50, color=C_P50, titles=[f"C={c:g}: p50 TTFT {y:,.0f} ms" for c, y in p50])
    if p99:
        ch.line(p99, color=C_P99, width=2, label="p99")
        ch.markers(p99, color=C_P99, titles=[f"C={c:g}: p99 TTFT {y:,.0f} ms" for c, y in p99])
    _ring_contaminated(ch, p50 + p99, _contaminated(pts, th, setup))  # both percentiles of a flattered point
    _ink_markers(ch, inks, setup, "ms", scale=1e3, stat="p50")
    if floor:
        below = [(c, y) for c, y in p50 if y < floor]
        for c, y in below:
            ch.annotate(c, y, "below the floor: cache hits", color=C_CONTAM, dx=8, dy=12, size=10)
    rows = [(float(concurrency(p)), _get(p, "client", "ttft_ms", "p50"), _get(p, "client", "ttft_ms", "p99"))
            for p in pts]
    rows = [r for r in rows if is_number(r[1]) and is_number(r[2])]
    mk = ttft_knee(rows, th.ttft_knee_ratio) if len(rows) >= 2 else None  # a knee needs two points
    if mk is not None:
        ch.vline(mk, color=C_KNEE_MEAS, text=f"measured TTFT knee C = {mk:g}",
                 text_pos=0.0)
    for v, _outcome, _pred in _ink(verdicts, "ttft_knee_concurrency"):
        c = float(v.predicted_value)
        ch.vline(c, color="#444", dash="3 3", text=f"ink TTFT knee C = {c:g}", text_pos=0.08,
                 text_side="right")
    cap = ""
    if g is not None and g.best_concurrency is not None:  # said only where the column is drawn, in its colour
        cap = (f"The yellow column marks the goodput point: the highest-throughput concurrency whose {g.percentile} "
               "TTFT and TPOT both meet the SLO.")
    if s50:
        sk = ttft_knee([(c, pp.ttft_p50_ms, pp.ttft_p99_ms) for c, pp in sp], th.ttft_knee_ratio)
        cap += (" Dashed: the serving model's p50 and p99 (prefills queue behind the token budget and each other)"
                + (f"; the light green band is its p50's band ({NOMINAL_COVERAGE:.0%} nominal)" if b50 else "")
                + (f"; its TTFT knee is C = {sk:g}." if sk is not None else "; it predicts no TTFT knee."))
    if inks:
        cap += _INK_CAPTION.format(what="TTFT")
    return Figure("ttft", ch.title, ch.render(), cap.strip())


def tpot_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None,
               verdicts: Sequence[Row]) -> Figure | None:
    pts = closed_points(results)
    p50 = _latency_series(pts, "tpot_ms", "p50")
    p99 = _latency_series(pts, "tpot_ms", "p99")
    if setup is None and not (p50 or p99):
        return None
    th = spec.thresholds
    x = _x_axis(sweep_batches(spec, results))
    model = []
    if setup is not None:
        try:
            model = [(b, model_step(setup, b).t_step_s * 1e3) for b in _geom(x.lo, x.hi)]
        except (ValueError, ZeroDivisionError, AttributeError):
            model = []
    sw: Any = getattr(spec, "sweep", None)
    if not (p50 or p99) and (open_points(results) or (getattr(sw, "rates", None) and
                                                       not getattr(sw, "concurrency", None))):
        return None  # an open-loop sweep: its TPOT is drawn against the offered rate, the batch axis stays empty
    slo = (spec.slo or {}).get("tpot")
    sp = serving_points(spec, setup)
    s50 = [(c, pp.tpot_p50_ms) for c, pp in sp if pp.tpot_p50_ms > 0]
    b50 = [(c, *b) for c, pp in sp if pp.tpot_p50_ms > 0 and (b := serving_band(pp, "tpot_p50_ms"))]
    inks = _latency_inks(verdicts, "tpot")
    vals = ([y for _, y in p50 + p99 + model + s50] + ([slo * 1e3] if slo else []) + [hi for _c, _lo, hi in b50]
            + _ink_ms(inks))
    if not vals:
        return None
    ch = Chart(x, Axis(0, max(vals) * 1.15, "linear", "TPOT (ms)"), width=600, height=340,
               title="Time per output token vs concurrency" if (p50 or p99) else "Decode step time vs batch (model)",
               subtitle=("p50 and p99 per sweep point" + (" against the modelled decode step" if model else "")
                         if (p50 or p99) else
                         "the model's t_step = max(t_mem, t_comp): the floor under TPOT")
               + (f" (modelled at {setup.kv_context_tokens:,.0f} tokens of KV per sequence)"
                  if setup is not None and model else ""),
               description="TPOT percentiles" + (" and the modelled decode step time" if model else ""))
    g = _slo_goodput(results, spec)
    if g is not None and g.best_concurrency is not None:
        ch.vband(g.best_concurrency / 1.12, g.best_concurrency * 1.12, color=C_GOODPUT_COLUMN, opacity=0.3,
                 label=GOODPUT_COLUMN_LABEL)
    if slo:
        ch.hline(slo * 1e3, color=C_SLO, dash="7 4", text=f"SLO TPOT {slo * 1e3:g} ms", width=1.6)
    if model:
        ch.line(model, color=C_MODEL, width=2.2, label="model t_step (decode only)")
    if s50:
        band_key = _band_ribbon(ch, b50, color=C_SERV)
        ch.line(s50, color=C_SERV, width=2.0, dash="6 3", label="serving model p50 TPOT")
        _add_legend(ch, band_key, SERVING_P50_BAND_LABEL)
        ch.markers(s50, color=C_SERV, marker="square", size=3.5,
                   titles=[_serving_tip(c, pp, f"p50 TPOT {pp.tpot_p50_ms:,.2f} ms (p99 {pp.tpot_p99_ms:,.2f} ms, "
                                              f"p99 ITL {pp.itl_p99_ms:,.1f} ms)") for c, pp in sp
                           if pp.tpot_p50_ms > 0])
    if p50:
        ch.line(p50, color=C_P50, width=2, label="p50")
        def tip(c: float, y: float) -> str:
            step_s = _model_at(setup, c, "t_step_s") if model else None
            return f"C={c:g}: p50 TPOT {y:,.2f} ms" + (f"; model {step_s * 1e3:,.2f} ms ({y / (step_s * 1e3):.2f}×)"
                                                       if step_s is not None else "")

        ch.markers(p50, color=C_P50, titles=[tip(c, y) for c, y in p50])
    if p99:
        ch.line(p99, color=C_P99, width=2, label="p99")
        ch.markers(p99, color=C_P99, titles=[f"C={c:g}: p99 TPOT {y:,.2f} ms" for c, y in p99])
    cont = _contaminated(pts, th, setup)
    _ring_contaminated(ch, p50 + p99, cont)  # both percentiles of a flattered point
    clean = [(c, y) for c, y in p50 if c not in cont]
    if clean and model:
        c, y = clean[-1]
        m = model_step(setup, c).t_step_s * 1e3
        ch.annotate(c, y, f"{y / m:.1f}× the model", color=C_MEAS, dx=-8, dy=-8, anchor="end")
    _ink_markers(ch, inks, setup, "ms", scale=1e3, stat="p50")
    cap = ("The model is a decode-only roofline: measured TPOT above it is prefill sharing the steps plus "
           "per-step engine overhead." if model else "No model line: this setup has no roofline (the CPU "
           "engine has no bandwidth or peak in the catalog, or the setup does not resolve).")
    if s50:
        c_hi, pp_hi = sp[-1]
        top = dominant_term(pp_hi.time_shares, beyond_roofline=True)
        cap += (" The serving model (dashed green" + (", its band shaded" if b50 else "") + ") adds both: "
                + (f"at C = {c_hi:g}, {TERM_LABELS.get(top[0], top[0])} is {top[1]:.0%} of its step time."
                   if top else "its steps carry them."))
    if inks:
        cap += _INK_CAPTION.format(what="TPOT")
    return Figure("tpot", ch.title, ch.render(), cap)


# ----------------------------------------------------------------------------------------------------------------
# Little's law
# ----------------------------------------------------------------------------------------------------------------
def littles_chart(spec: Any, results: Mapping[str, Any] | None,
                  verdicts: Sequence[Row]) -> Figure | None:
    series = _littles_series(closed_points(results), lambda p: float(concurrency(p)))
    return _littles_figure("littles", series, verdicts, _x_axis(sweep_batches(spec, results)), _at_c,
                           "λ·W over the held window (from the moment C requests were first in flight to the last "
                           "send: request throughput × mean E2E latency of the requests that completed in it) ÷ C. "
                           "A load generator slow to send the next request reads the share of C it held, below the "
                           "band; the drain after the last send is outside the window. A file written before the "
                           "held window's λ and W were recorded shows its held in-flight average ÷ C.",
                           "λ·W ÷ C")


def _littles_series(pts: Sequence[Mapping[str, Any]], x_of: Any) -> list[tuple[float, float, Mapping[str, Any]]]:
    """(x, the Little's-law ratio the check reads, the point's littles_law dict) per point that has one
    (``quantities.littles.littles_reading``: λ·W over the held window ÷ C in a closed loop, λ·W ÷ L in an open
    one). A reading that holds by construction (every request out at once: ``LittlesReading.vacuous``) is not
    drawn: it measured nothing."""
    series = []
    for p in pts:
        c = p.get("concurrency") if p.get("mode") != "open" else None
        reading = littles_reading(p.get("client"), c if isinstance(c, int) and c > 0 else None)
        if reading is not None and not reading.vacuous:
            series.append((x_of(p), reading.ratio, _get(p, "client", "littles_law") or {}))
    return series


def _littles_figure(key: str, series: Sequence[tuple[float, float, Mapping[str, Any]]], verdicts: Sequence[Row],
                    x: Axis, where: Any, caption: str, ylabel: str = "λ·W ÷ L") -> Figure | None:
    """Little's law per point on the x axis ``x`` (concurrency or offered rate; ``where`` names a point)."""
    if not series:
        return None
    tol = 0.02
    for v, _, _ in _ink(verdicts, "littles_law_ratio"):
        if is_number(v.lo) and is_number(v.hi) and is_number(v.reference_value):
            tol = max(abs(v.hi - v.reference_value), abs(v.reference_value - v.lo))
            break
    dev = max(abs(r - 1) for _, r, _ in series)
    span = max(tol * 2.5, dev * 1.4, 0.01)
    ch = Chart(x, Axis(1 - span, 1 + span, "linear", ylabel, fmt=lambda t: f"{t:.3g}"), width=600, height=260,
               title="Little's law per sweep point",
               subtitle=("throughput (req/s) × mean latency ÷ C over the held window — 1.0 when the loop held C"
                         if ylabel == "λ·W ÷ C" else
                         "throughput (req/s) × mean latency ÷ the client's own count in flight (bookkeeping)"),
               description="Little's law ratio per point with the tolerance band")
    ch.hband(1 - tol, 1 + tol, color=C_GOODPUT, opacity=0.14, label=f"1 ± {tol:.0%} (the prediction's tolerance)")
    ch.hline(1.0, color="#555", dash=None, width=1)
    ok = [(c, r) for c, r, _ in series if abs(r - 1) <= tol + 1e-12]
    bad = [(c, r) for c, r, _ in series if abs(r - 1) > tol + 1e-12]
    tips = {c: _littles_tip(c, r, ll, where) for c, r, ll in series}
    ch.markers(ok, color=C_GOODPUT, label="holds", titles=[tips[c] for c, _ in ok])
    if bad:
        ch.markers(bad, color=C_MEAS, marker="cross", label="off", titles=[tips[c] for c, _ in bad])
    for c, r, _ in series:
        ch.annotate(c, r, f"{r:.3f}", dx=0, dy=-9, anchor="middle", size=9.5, color="#333")
    return Figure(key, ch.title, ch.render(), caption)


def _littles_tip(c: float, ratio: float, ll: Mapping[str, Any], where: Any = _at_c) -> str:
    """A point's Little's-law tooltip, with the figures the point has: L, λ (req/s), W (s) and λ·W where each is a
    number. A file that records λ·W alone (the Day 3 notebook's column) says so instead of printing a λ or W
    it does not have."""
    def num(key: str) -> float | None:
        v = ll.get(key)
        return float(v) if is_number(v) else None  # finite: never a NaN in the text

    big_l, lam, w, lw = num("L"), num("lambda_req_s"), num("W_s"), num("lambda_W")
    if num("held_lambda_W") is not None:  # a closed loop's held window: λ and W there, over C
        big_l, lam, w, lw = num("L_configured"), num("held_lambda_req_s"), num("held_W_s"), num("held_lambda_W")
        parts = [f"held window: λ={lam:.3g} req/s" if lam is not None else "held window"]
        parts += [f"W={w:.3g} s"] if w is not None else []
        parts += [f"λW={lw:.3g}"] + ([f"C={big_l:g}"] if big_l is not None else [])
        return f"{where(c)}: {', '.join(parts)} → ratio {ratio:.3f}"
    if lw is None and lam is not None and w is not None:
        lw = lam * w
    parts = [f"L={big_l:.3g}"] if big_l is not None else []
    parts += [f"λ={lam:.3g} req/s"] if lam is not None else []
    parts += [f"W={w:.3g} s"] if w is not None else []
    parts += [f"λW={lw:.3g}"] if lw is not None else []
    if lam is None and w is None:
        parts.append("λ and W not recorded separately")
    return f"{where(c)}: {', '.join(parts)} → ratio {ratio:.3f}"


# ----------------------------------------------------------------------------------------------------------------
# open loop (a request-rate sweep): the same figures against the offered rate
# ----------------------------------------------------------------------------------------------------------------
def _arrivals(spec: Any, results: Mapping[str, Any] | None) -> str:
    """How the open-loop points' requests arrive: Poisson (burstiness 1, vllm bench serve's default), else gamma
    with the burstiness the points (or the sweep) name; and how each point's sends spanned (``arrival_span``:
    ``fixed``, N over N ÷ rate as vllm bench serve sends them, or ``drawn``; a point of this tool's file without
    one was sent drawn, a peer's file that does not say is not described)."""
    points = open_points(results)
    found = {float(p.get("burstiness") or 1.0) for p in points}
    if not found:
        found = {float(getattr(getattr(spec, "sweep", None), "burstiness", None) or 1.0)}
    kind = ("Poisson arrivals" if found == {1.0}
            else "gamma arrivals, burstiness " + ", ".join(f"{b:g}" for b in sorted(found)))
    if points:
        spans = {s for p in points if (s := recorded_span(results or {}, p)) is not None}
    else:
        spans = {str(getattr(getattr(spec, "sweep", None), "arrival_span", "fixed"))}
    words = {"fixed": "N sent over N ÷ rate", "drawn": "span as drawn"}
    return kind + "".join(f"; {words.get(s, s)}" for s in sorted(spans))


def _arrivals_subtitle(spec: Any, results: Mapping[str, Any] | None) -> str:
    """The open-loop charts' subtitle: :func:`_arrivals` as a sentence."""
    kind, _, span = _arrivals(spec, results).partition("; ")
    tail = {"N sent over N ÷ rate": ", each point's N requests sent over N ÷ rate (as vllm bench serve)",
            "span as drawn": ", each point's sends spanning as its draw fell"}
    return f"open loop: each point offers {kind} at a fixed rate" + "".join(tail.get(s, f"; {s}")
                                                                         for s in span.split("; ") if s)
#: achieved below this share of the offered rate, beyond chance: the engine no longer keeps up (the point's flag)
SATURATION_SHARE = RATE_SHARE


@dataclass(frozen=True)
class _RateMetric:
    """One value an open-loop point records and the serving model simulates, as a chart draws it."""
    key: str
    title: str
    ylabel: str
    unit: str
    client: str  # the point's client figure
    serving: str  # the PointPrediction attribute
    quantity: str  # the quantity of the predictions drawn in ink
    fmt: str
    offered: bool  # whether the offered rate itself is on this axis (achieved = offered)


_RATE_VALUES = (
    _RateMetric("open_requests", "Achieved request rate vs offered rate", "achieved requests/s", "req/s",
                "request_throughput_req_s", "request_throughput_req_per_s", "request_throughput", "{:,.2f}", True),
    _RateMetric("open_throughput", "Output throughput vs offered rate", "aggregate output tok/s", "tok/s",
                "output_throughput_tok_s", "output_throughput_tok_per_s", "output_throughput", "{:,.1f}", False),
)


def _rate_axis(spec: Any, results: Mapping[str, Any] | None) -> Axis:
    """The offered-rate x axis, drawn as the concurrency axis is (log, base 2), over the measured and swept rates."""
    rates = [float(p["rate_req_s"]) for p in open_points(results)]
    rates += [float(r) for r in getattr(getattr(spec, "sweep", None), "rates", ()) or ()
              if is_number(r) and 0 < r < math.inf]
    return _x_axis([r for r in rates if r > 0] or [1.0], f"offered request rate (req/s, {_arrivals(spec, results)})")


def open_loop_charts(spec: Any, setup: Any, results: Mapping[str, Any] | None, verdicts: Sequence[Row], *,
                     y_scale: str = "auto") -> list[Figure]:
    """An open-loop sweep's charts against the offered rate: achieved request rate and output throughput (each with
    the other y scale as ``alt_svg``), TTFT and TPOT, Little's law; [] for a sweep with no open-loop point."""
    if not open_points(results) and not serving_points(spec, setup, "open"):
        return []
    figs = [_with_other_scale(lambda scale, m=m: _rate_value_chart(spec, setup, results, verdicts, m, scale),
                              y_scale) for m in _RATE_VALUES]
    figs += [_rate_latency_chart(spec, setup, results, metric, verdicts) for metric in ("ttft", "tpot")]
    figs.append(_littles_figure(
        "open_littles", _littles_series(open_points(results), lambda p: float(p["rate_req_s"])), verdicts,
        _rate_axis(spec, results), _at_rate,
        "In an open loop L is whatever the arrivals and the latency make it: the ratio divides λ·W by the client's "
        "own time-averaged count in flight over the run, which holds every request whole, so it is close to 1 by "
        "construction, a check of the client's bookkeeping (failed requests, time after a response's last token), "
        "not of the engine (the offered-rate flag and the achieved-rate chart say whether it kept up)."))
    return [f for f in figs if f is not None]


def _rate_value_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None, verdicts: Sequence[Row],
                      m: _RateMetric, y_scale: str) -> tuple[Figure, str] | None:
    meas = [(float(p["rate_req_s"]), float(v)) for p in open_points(results)
            if is_number(v := _get(p, "client", m.client))]
    serv = [(r, float(getattr(pp, m.serving)), pp) for r, pp in serving_points(spec, setup, "open")
            if is_number(getattr(pp, m.serving, None)) and getattr(pp, m.serving) > 0]
    if not meas and not serv:
        return None
    inks = [row for row in _ink(verdicts, m.quantity) if _at_batch(row[2], ("rate",)) is not None]
    band = [(r, *b) for r, _y, pp in serv if (b := serving_band(pp, m.serving))]
    offered = [(r, r) for r in sorted({r for r, _ in meas} | {r for r, _, _ in serv})] if m.offered else []
    points = ([y for _, y in meas + offered] + [y for _, y, _ in serv]
              + [float(v.predicted_value) for v, _, _ in inks])
    scale = choose_scale(points, y_scale)
    ys = points + [v for _r, lo, hi in band for v in (lo, hi)]
    ymin = 0.0 if scale == "linear" else min(v for v in ys if v > 0) / 1.6
    ch = Chart(_rate_axis(spec, results),
               Axis(ymin, max(ys) * (1.12 if scale == "linear" else 1.6), scale,
                    m.ylabel + (" (log scale)" if scale == "log" else "")),
               width=600, height=340, title=m.title,
               subtitle=_arrivals_subtitle(spec, results),
               description=f"measured {m.ylabel} per offered rate against the serving model")
    fmt = m.fmt.format
    if offered:
        ch.line(offered, color=PALETTE["grey"], width=1.4, dash="2 4", label="achieved = offered",
                title="where the engine keeps up with every arrival")
    if serv:
        _serving_curve(ch, serv, band, "serving model: the same arrivals simulated step by step",
                       [_serving_tip(r, pp, f"{fmt(y)} {m.unit}", _at_rate) for r, y, pp in serv])
    if meas:
        ch.line(meas, color=C_MEAS, width=1.6, opacity=0.85)
        ch.markers(meas, color=C_MEAS, label="measured",
                   titles=[f"{_at_rate(r)}: {fmt(y)} {m.unit} measured" + (f" ({y / r:.0%} of offered)"
                                                                           if m.offered else "")
                           for r, y in meas])
    _ink_markers(ch, inks, setup, m.unit, keys=("rate",), where=_at_rate)
    cap = "Serving model (dashed green): the step-level simulation of each point's arrivals" + (
        ", its band shaded." if band else ".")
    if m.offered and meas:
        sat = next((float(p["rate_req_s"]) for p in open_points(results) if _saturated(p)), None)
        if sat is not None:
            ch.vline(sat, color=C_KNEE_MEAS, text=f"saturated from {sat:g} req/s", text_pos=0.05,
                     text_side="left" if sat > ch.x.hi / 3 else "right")
        cap = (f"Below the grey diagonal the engine falls behind its arrivals and the queue grows for as long as the "
               f"point runs; a point under {SATURATION_SHARE:.0%} of its offered rate, by more than its arrivals' "
               f"sampling explains (its flag 'offered rate not sustained'), is read as saturated. "
               + (f"Measured: saturated from {sat:g} req/s. " if sat is not None else
                  f"Measured: keeps up through {meas[-1][0]:g} req/s. ") + cap)
    return Figure(m.key, ch.title, ch.render(), cap), scale


def _saturated(p: Mapping[str, Any]) -> bool:
    """Whether an open-loop point fell behind its offered rate: its ``offered rate not sustained`` flag, the one
    rule (``measure.stats.held.rate_flag``: under 90% of the offered rate by more than the arrivals' sampling
    explains). A file written before that flag carries none, and draws no saturation line."""
    return any(is_rate_flag(f) for f in p.get("flags") or [])


def _rate_latency_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None, metric: str,
                        verdicts: Sequence[Row] = ()) -> Figure | None:
    """TTFT (log y) or TPOT (linear y) p50 and p99 per offered rate, with the serving model's p50 and its band, and
    the values in ink at a rate."""
    name, pts = metric.upper(), open_points(results)
    p50 = _latency_series(pts, f"{metric}_ms", "p50", "rate_req_s")
    p99 = _latency_series(pts, f"{metric}_ms", "p99", "rate_req_s")
    sp = [(r, pp) for r, pp in serving_points(spec, setup, "open") if getattr(pp, f"{metric}_p50_ms", 0) > 0]
    s50 = [(r, float(getattr(pp, f"{metric}_p50_ms"))) for r, pp in sp]
    b50 = [(r, *b) for r, pp in sp if (b := serving_band(pp, f"{metric}_p50_ms"))]
    if not (p50 or p99 or s50):
        return None
    slo = (spec.slo or {}).get(metric)
    inks = _latency_inks(verdicts, metric, ("rate",))
    vals = [y for _, y in p50 + p99 + s50] + [v for _r, lo, hi in b50 for v in (lo, hi)] + ([slo * 1e3] if slo else [])
    vals += [y for y in _ink_ms(inks) if y > 0 or metric != "ttft"]
    y = (Axis(min(vals) / 1.6, max(vals) * 1.6, "log", f"{name} (ms, log scale)") if metric == "ttft" else
         Axis(0, max(vals) * 1.15, "linear", f"{name} (ms)"))
    what = "time to first token" if metric == "ttft" else "time per output token"
    digits = 1 if metric == "ttft" else 2
    ch = Chart(_rate_axis(spec, results), y, width=600, height=340,
               title=f"{what[0].upper()}{what[1:]} vs offered rate",
               subtitle="p50 and p99 per point; " + ("past saturation the queue, and with it TTFT, grows with the run"
                                                     if metric == "ttft" else "what more requests in flight cost each "
                                                     "decode step"),
               description=f"{name} percentiles against the offered request rate")
    if slo:
        ch.hline(slo * 1e3, color=C_SLO, dash="7 4", text=f"SLO {name} {slo * 1e3:g} ms", width=1.6,
                 text_anchor="start")
    if s50:
        band_key = _band_ribbon(ch, b50, color=C_SERV, opacity=0.1)
        ch.line(s50, color=C_SERV, width=1.8, dash="6 3", label="serving model p50")
        _add_legend(ch, band_key, SERVING_P50_BAND_LABEL)
        ch.markers(s50, color=C_SERV, marker="square", size=3.5,
                   titles=[_serving_tip(r, pp, f"p50 {name} {getattr(pp, f'{metric}_p50_ms'):,.{digits}f} ms (p99 "
                                              f"{getattr(pp, f'{metric}_p99_ms'):,.{digits}f} ms)", _at_rate)
                           for r, pp in sp])
    for stat, series, color in (("p50", p50, C_P50), ("p99", p99, C_P99)):
        if series:
            ch.line(series, color=color, width=2, label=stat)
            ch.markers(series, color=color, titles=[f"{_at_rate(r)}: {stat} {name} {v:,.{digits}f} ms"
                                                    for r, v in series])
    _ink_markers(ch, inks, setup, "ms", keys=("rate",), where=_at_rate, scale=1e3, stat="p50")
    return Figure(f"open_{metric}", ch.title, ch.render(),
                  f"Measured {name} p50 and p99 at each offered rate; dashed green: the serving model's p50"
                  + (" with its band shaded." if b50 else ".")
                  + (_INK_CAPTION.format(what=name).replace("concurrency", "offered rate") if inks else ""))


# ----------------------------------------------------------------------------------------------------------------
# server timeline
# ----------------------------------------------------------------------------------------------------------------
def timeline_charts(spec: Any, results: Mapping[str, Any] | None, setup: Any = None) -> list[Figure]:
    out = []
    th = spec.thresholds
    for p in closed_points(results) + [p for p in (results or {}).get("points") or [] if p.get("mode") == "open"]:
        tl = _get(p, "server", "timeline") or []
        tl = [r for r in tl if isinstance(r, Mapping) and is_number(r.get("t_s"))]
        if len(tl) < 2:
            continue
        ts = [float(r["t_s"]) for r in tl]
        run = [(float(r["t_s"]), float(r["running"])) for r in tl if is_number(r.get("running"))]
        wait = [(float(r["t_s"]), float(r["waiting"])) for r in tl if is_number(r.get("waiting"))]
        kv = [(float(r["t_s"]), float(r["kv_cache_usage"]) * 100) for r in tl if is_number(r.get("kv_cache_usage"))]
        pre = [(float(r["t_s"]), float(r["preemptions"])) for r in tl if is_number(r.get("preemptions"))]
        ymax = max([y for _, y in run + wait] + [1.0]) * 1.15
        cont = is_flattered(p, th, setup)
        label = f"C = {p['concurrency']:g}" if is_number(p.get("concurrency")) else str(p.get("id"))
        hit = _get(p, "server", "prefix_cache_hit_rate")
        ch = Chart(Axis(min(ts), max(ts), "linear", "time into the point (s)"),
                   Axis(0, ymax, "linear", "requests"),
                   y2=Axis(0, 100, "linear", "KV cache %", fmt=lambda t: f"{t:g}%"),
                   width=420, height=220, title=f"{p.get('id')} ({label})",
                   subtitle=("⚠ contaminated: " if cont else "") + (
                       f"prefix-cache hit rate {hit:.0%}" if is_number(hit) else ""),
                   margin_left=52, description="server-side running/waiting requests and KV-cache usage over time")
        ch.line(kv, color=PALETTE["purple"], width=1.5, axis="y2", label="KV cache %", opacity=0.9)
        ch.line(run, color=C_MODEL, width=2, label="running", step=True)
        ch.line(wait, color=PALETTE["orange"], width=2, label="waiting", step=True)
        if pre:
            bumps = [(t, y) for (t, y), (_, y0) in zip(pre[1:], pre[:-1]) if y > y0]
            if bumps:
                ch.markers([(t, ymax / 1.15 * 1.05) for t, _ in bumps], color=C_MEAS, marker="down", size=4,
                           label="preemption", titles=[f"t={t:g} s: preemptions → {y:g}" for t, y in bumps])
        out.append(Figure(f"timeline-{p.get('id')}", ch.title, ch.render()))
    return out


# ----------------------------------------------------------------------------------------------------------------
# the roofline itself
# ----------------------------------------------------------------------------------------------------------------
def roofline_chart(spec: Any, setup: Any, results: Mapping[str, Any] | None) -> Figure | None:
    if setup is None:
        return None
    try:
        bw, peak = setup.hbm_bytes_per_s, setup.peak_flop_per_s
        ridge = an.ridge_flop_per_byte(peak, bw)
        batches = sweep_batches(spec, results)
        steps = [model_step(setup, b) for b in batches]
        asym = an.intensity_asymptote_flop_per_byte(setup.flop_per_token, setup.kv_bytes_per_seq)
    except (ValueError, ZeroDivisionError, AttributeError):
        return None
    intens = [s.intensity_flop_per_byte for s in steps] + [s.weight_only_intensity_flop_per_byte for s in steps]
    lo_i = min(min(intens), ridge) / 2.5
    hi_i = max(max(i for i in intens if math.isfinite(i)), ridge) * 2.5
    y_lo = lo_i * bw / 3
    ch = Chart(Axis(lo_i, hi_i, "log", "arithmetic intensity (FLOP/byte, log)"),
               Axis(y_lo, peak * 2.2, "log", "FLOP/s (log)"), width=600, height=340,
               title="Roofline of the decode step",
               subtitle=f"ridge {ridge:,.1f} FLOP/byte = {_si(peak, 'FLOP/s')} ÷ {_si(bw, 'B/s')}",
               description="roofline with decode steps at each swept batch")
    roof = [(i, min(peak, i * bw)) for i in _geom(lo_i, hi_i, 160)]
    ch.line(roof, color="#333", width=2.2, label="roof: min(peak, I × BW)")
    ch.vline(ridge, color=PALETTE["purple"], dash="4 3", text=f"ridge {ridge:,.0f}", text_pos=0.02,
             text_side="left")
    if math.isfinite(asym) and ch.x.contains(asym):
        ch.vline(asym, color=C_MODEL, dash="2 4", text=f"KV-inclusive asymptote {asym:,.0f}", text_pos=0.85,
                 text_side="left" if asym < ridge else "right")
    ch.markers([(s.weight_only_intensity_flop_per_byte, min(peak, s.weight_only_intensity_flop_per_byte * bw))
                for s in steps], color=PALETTE["grey"], hollow=True, size=3.5, label="weight-only intensity (≈ B)",
               titles=[f"B={s.batch:g}: weight-only intensity {s.weight_only_intensity_flop_per_byte:,.1f}"
                       for s in steps])
    ch.markers([(s.intensity_flop_per_byte, s.achieved_flop_per_s) for s in steps], color=C_MODEL, size=4,
               label="model decode step (KV included)",
               titles=[f"B={s.batch:g}: intensity {s.intensity_flop_per_byte:,.1f} FLOP/byte, "
                       f"{_si(s.achieved_flop_per_s, 'FLOP/s')} ({s.bound}-bound)" for s in steps])
    for s in steps:
        if s.batch in (batches[0], batches[-1]) or len(steps) <= 6:
            ch.annotate(s.intensity_flop_per_byte, s.achieved_flop_per_s, f"B={s.batch:g}", dx=-6, dy=-7,
                        anchor="end", size=9.5, color=C_MODEL)
    meas = []
    for p in closed_points(results):
        x = _get(p, "client", "output_throughput_tok_s")
        if is_number(x):
            s = model_step(setup, float(concurrency(p)))
            meas.append((s.intensity_flop_per_byte, float(x) * setup.flop_per_token, float(concurrency(p)), s))
    if meas:
        ch.markers([(i, f) for i, f, _, _ in meas], color=C_MEAS, marker="triangle", size=4,
                   label="measured tok/s × 2P",
                   titles=[f"C={c:g}: {_si(f, 'FLOP/s')} achieved = {f / s.achieved_flop_per_s:.0%} of the "
                           f"model, {f / peak:.1%} of peak" for _, f, c, s in meas])
    return Figure("roofline", ch.title, ch.render(),
                  "Blue: each swept batch's decode step under the model (KV traffic included), which never passes "
                  "the KV-inclusive asymptote; grey: the same batch with KV ignored (intensity ≈ B)."
                  + (" Red: the measured throughput turned into FLOP/s." if meas else ""))
