"""The client's view of a sweep point and of the whole sweep: total and request throughput, the latency
statistics (TTFT, TPOT, ITL, E2E: mean and percentiles), the TTFT knee, Little's law, and goodput under SLOs;
each with the serving model's value where it predicts one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_roofline.errors import NotMeasured, PointError
from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup, SetupError
from pytest_roofline.quantities.analysis import Thresholds, goodput_table, is_flattered, point_notes, ttft_knee
from pytest_roofline.quantities.declare import client_quantity, point_at, serve_point, sim_explanation, sweep_points
from pytest_roofline.quantities.measurement import (
    Measurement,
    PointRecord,
    client_number,
    client_value,
    concurrency,
    point_id,
)
from pytest_roofline.quantities.quantity import MeasuredValue, ModelValue, Quantity, QuantityKind, QuantityPoints
from pytest_roofline.quantities.serving_values import ServingSweep

#: the client's latency statistics: metric -> what it is
_LATENCIES = (("ttft", "time to first token"), ("tpot", "time per output token (excl. the first)"),
              ("itl", "inter-token latency (chunk gaps)"), ("e2e", "end-to-end request latency"))
#: the statistics of each the serving model predicts (PointPrediction.<metric>_<stat>_ms)
_SIMULATED = {"ttft": ("mean", "p50", "p99"), "tpot": ("mean", "p50", "p99"), "itl": ("p50", "p99"), "e2e": ("mean",)}


def _ttft_knee_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = sweep_points(meas)
    raw = [(float(concurrency(p)), client_number(p, "ttft_ms", "p50"), client_number(p, "ttft_ms", "p99")) for p in pts]
    rows = [(c, p50, p99) for c, p50, p99 in raw if p50 is not None and p99 is not None]
    if not rows:
        raise NotMeasured("the TTFT knee needs TTFT p50/p99 at closed-loop sweep points")
    knee = ttft_knee(rows, th.ttft_knee_ratio)
    detail = ", ".join(f"{c:g}: {p99 / p50:.1f}×" for c, p50, p99 in rows)
    return MeasuredValue(knee, tuple(point_id(p) for p in pts),
                         (f"TTFT knee = smallest concurrency with p99 > {th.ttft_knee_ratio:g} × p50; "
                          f"p99/p50: {detail}", *[n for p in pts for n in point_notes(p, th, setup)]),
                         any(is_flattered(p, th, setup) for p in pts))


def _little_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    """λ·W ÷ C over the held window in a closed loop (the check that the load generator held C: a starved one
    reads the share it held and fails; the drain after the last send is outside the window), λ·W ÷ the client's
    own L in an open loop (bookkeeping): :func:`~pytest_roofline.measure.stats.held.littles_reading`. The point's
    held flag is not a note here: this verdict is the check of exactly that, so it must stay decisive."""
    from pytest_roofline.measure.stats.held import is_held_flag, littles_reading

    pt = point_at(meas, at)
    c = concurrency(pt) if str(pt.get("mode") or "closed") != "open" else 0
    closed = c > 0
    reading = littles_reading(pt.get("client"), c if closed else None)
    if reading is None:
        why = client_value(pt, "littles_law", "not_checked")
        if isinstance(why, str) and why:
            reason = f"point {pt.get('id')}: {why}"
        elif closed and client_value(pt, "littles_law", "held_requests") is not None:
            reason = (f"point {pt.get('id')}: no request was sent after its {c} clients were first all in flight, "
                      "so it has no held window to read λ·W over (more requests per point: sweep.requests_per_point)")
        else:
            reason = f"point {pt.get('id')} has no Little's-law record"
        raise NotMeasured(reason + littles_law_kept(pt))
    notes = [n for n in point_notes(pt, th, setup) if not is_held_flag(n.split(": ", 1)[-1])]
    return MeasuredValue(reading.ratio, (point_id(pt),), (reading.detail, *notes))


def littles_law_kept(pt: PointRecord) -> str:
    """What a point without a Little's-law reading (a peer's file) still says: ``"; λ·W = 0.9951 (12.431 req/s ×
    80.047 ms), 0.995 of the configured C = 1 over the whole run, drain included"``; empty where it has no λ·W. The
    skip line carries it; it is never scored: the whole run holds the drain after the last send, which is not the
    loop failing to hold C, and the file keeps no send times to find the held window."""
    lam_w = client_number(pt, "littles_law", "lambda_W")
    if lam_w is None:
        return ""
    lam, w_s = client_number(pt, "littles_law", "lambda_req_s"), client_number(pt, "littles_law", "W_s")
    parts = f" ({lam:.5g} req/s × {w_s * 1e3:.5g} ms)" if lam is not None and w_s is not None else ""
    conf = client_number(pt, "littles_law", "L_configured")
    share = f", {lam_w / conf:.3f} of the configured C = {conf:g} over the whole run, drain included" if conf else ""
    return f"; λ·W = {lam_w:.4g}{parts}{share}"


def _goodput(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> an.Goodput:
    rows = goodput_table(sweep_points(meas))
    if not rows:
        raise NotMeasured("goodput needs closed-loop sweep points with TTFT/TPOT percentiles")
    pct = str(at.get("percentile", "p99"))
    try:
        return an.goodput(rows, ttft_ms_max=_slo_ms(at["ttft"]), tpot_ms_max=_slo_ms(at["tpot"]), percentile=pct)
    except KeyError as exc:  # a sweep point that did not record the SLO's percentile
        raise NotMeasured(f"goodput at {pct} needs TTFT and TPOT {pct} at every sweep point ({exc.args[0]})") from None
    except ValueError as exc:  # a figure that is not a number
        raise PointError(f"goodput cannot be computed from the sweep: {exc}") from None


def _slo_ms(seconds: float) -> float | None:
    return None if math.isinf(seconds) else seconds * 1e3


def _goodput_points_notes(meas: Measurement, th: Thresholds, setup: Setup) -> list[str]:
    """The notes of every sweep point goodput read (each point is judged against the SLO): a point that did not
    hold its concurrency may meet an SLO only because it ran a lower load, so its flag must reach the verdict."""
    return [n for p in sweep_points(meas) for n in point_notes(p, th, setup)]


def _goodput_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    g = _goodput(meas, at, setup, th)
    return MeasuredValue(g.best_tok_per_s, (), (_goodput_note(g, at), *_goodput_points_notes(meas, th, setup)))


def _goodput_c_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    g = _goodput(meas, at, setup, th)
    return MeasuredValue(g.best_concurrency, (), (_goodput_note(g, at), *_goodput_points_notes(meas, th, setup)))


def _goodput_note(g: an.Goodput, at: Mapping[str, Any]) -> str:
    return (f"SLO TTFT ≤ {float(at['ttft']) * 1e3:g} ms and TPOT ≤ {float(at['tpot']) * 1e3:g} ms at "
            f"{at.get('percentile', 'p99')} (a value equal to its SLO meets it): best "
            f"{g.best_tok_per_s or 0:,.1f} tok/s at concurrency {g.best_concurrency}; raw max "
            f"{g.raw_max_tok_per_s:,.1f} tok/s")


def _serve_total(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    p, pp = sweep.at(at)
    tokens_in = p.input_len or sweep.setup.input_len
    # each completed request brings its prompt and its output: total = request rate × (in + out) tokens
    total = pp.output_throughput_tok_per_s + pp.request_throughput_req_per_s * tokens_in
    return ModelValue(total, sweep.inputs(), sim_explanation(p.id, pp))


def _serve_ttft_knee(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    rows = [(float(c), pp.ttft_p50_ms, pp.ttft_p99_ms) for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("the TTFT knee needs closed-loop sweep points (sweep: {concurrency: [...]})")
    knee = ttft_knee(rows, th.ttft_knee_ratio)
    detail = ", ".join(f"{c:g}: {p99 / p50:.1f}×" for c, p50, p99 in rows if p50)
    return ModelValue(None if knee is None else int(knee), sweep.inputs(),
                      f"serving model: smallest concurrency with p99 TTFT > {th.ttft_knee_ratio:g} × p50; "
                      f"p99/p50: {detail}")


def _serve_goodput_g(sweep: ServingSweep, at: Mapping[str, Any]) -> an.Goodput:
    pct = str(at.get("percentile", "p99"))
    if pct not in ("p50", "p99", "mean"):
        raise SetupError(f"the serving model predicts p50, p99 and mean latencies, not {pct}")
    rows = [{"concurrency": c, "output_tok_per_s": pp.output_throughput_tok_per_s,
             "ttft_ms": {"p50": pp.ttft_p50_ms, "p99": pp.ttft_p99_ms, "mean": pp.ttft_mean_ms},
             "tpot_ms": {"p50": pp.tpot_p50_ms, "p99": pp.tpot_p99_ms, "mean": pp.tpot_mean_ms}}
            for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("goodput needs closed-loop sweep points")
    return an.goodput(rows, ttft_ms_max=_slo_ms(at["ttft"]), tpot_ms_max=_slo_ms(at["tpot"]), percentile=pct)


def _serve_goodput(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    g = _serve_goodput_g(sweep, at)
    return ModelValue(g.best_tok_per_s, sweep.inputs(), "serving model: " + _goodput_note(g, at))


def _serve_goodput_c(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    g = _serve_goodput_g(sweep, at)
    return ModelValue(g.best_concurrency, sweep.inputs(), "serving model: " + _goodput_note(g, at))


#: the family, in the registry's order
QUANTITIES: tuple[Quantity, ...] = (
    client_quantity("total_throughput", "throughput", "input + output tokens/s of a sweep point",
                    ("total_throughput_tok_s",), "total throughput", serving=_serve_total, replicas="total"),
    client_quantity("request_throughput", "request_rate", "completed requests/s of a sweep point",
                    ("request_throughput_req_s",), "request throughput",
                    serving=serve_point("request_throughput_req_per_s"), replicas="total"),
    # the results file stores *_ms, and so does the serving model (where it predicts the statistic); quantities
    # work in seconds
    *(client_quantity(f"{metric}_{stat}", "time", f"{stat} {label} at a sweep point", (f"{metric}_ms", stat),
                      f"{metric} {stat}", scale=1e-3,
                      serving=serve_point(f"{metric}_{stat}_ms", 1e-3) if stat in _SIMULATED[metric] else None)
      for metric, label in _LATENCIES for stat in ("mean", "p50", "p90", "p95", "p99")),
    Quantity("ttft_knee_concurrency", "count", "smallest concurrency whose p99 TTFT exceeds "
             "thresholds.ttft_knee_ratio × its p50 TTFT (none = never)", kind=QuantityKind.OPTIONAL_NUMBER,
             measure=_ttft_knee_measure, points=QuantityPoints.ALL,
             serving=_serve_ttft_knee, replicas="sweep"),
    Quantity("littles_law_ratio", "ratio", "λ·W ÷ C at a closed-loop sweep point, over the held window (from C "
             "in flight to the last send): below 1 by the share of C the load generator did not hold; in an open "
             "loop λ·W ÷ the client's own L, a bookkeeping check",
             at=("concurrency", "rate"), measure=_little_measure, points=QuantityPoints.AT),
    Quantity("goodput", "throughput", "the highest output throughput among sweep points that meet every SLO "
             "(TTFT and TPOT at the chosen percentile)", at=("percentile", "ttft", "tpot"),
             measure=_goodput_measure, points=QuantityPoints.ALL, serving=_serve_goodput, replicas="sweep"),
    Quantity("goodput_concurrency", "count", "the sweep concurrency where goodput is reached",
             kind=QuantityKind.OPTIONAL_NUMBER, at=("percentile", "ttft", "tpot"), measure=_goodput_c_measure,
             points=QuantityPoints.ALL, serving=_serve_goodput_c, replicas="sweep"),
)
