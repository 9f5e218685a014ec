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
from pytest_roofline.quantities.littles import is_held_flag, littles_reading
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
_SIMULATED = {"ttft": ("mean", "p50", "p99"), "tpot": ("mean", "p50", "p99"), "itl": ("p50", "p99"),
              "e2e": ("mean", "p50", "p99")}


def _ttft_knee_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = sweep_points(meas)
    raw = [(p, float(concurrency(p)), client_number(p, "ttft_ms", "p50"), client_number(p, "ttft_ms", "p99"))
           for p in pts]
    kept = [(p, c, p50, p99) for p, c, p50, p99 in raw if p50 is not None and p99 is not None]
    if not kept:
        raise NotMeasured("the TTFT knee needs TTFT p50/p99 at closed-loop sweep points")
    rows = [(c, p50, p99) for _, c, p50, p99 in kept]
    knee = ttft_knee(rows, th.ttft_knee_ratio)
    detail = ", ".join(f"{c:g}: {p99 / p50:.1f}×" for c, p50, p99 in rows)
    sides = sorted((c, _knee_side(p, th.ttft_knee_ratio)) for p, c, _, _ in kept)
    swept = [c for c, _ in sides]
    cands, none_possible = _first_above([(c, side) for c, (side, _) in sides])
    notes = [f"TTFT knee = smallest concurrency with p99 > {th.ttft_knee_ratio:g} × p50; p99/p50: {detail}"]
    undecided = [why for _, (side, why) in sides if side == _UNDECIDED]
    ids, flattered = tuple(point_id(p) for p in pts), any(is_flattered(p, th, setup) for p in pts)
    notes += [n for p in pts for n in point_notes(p, th, setup)]
    if _decided(cands, none_possible):
        return MeasuredValue(knee, ids, tuple(notes), flattered)
    may = ", ".join(f"{c:g}" for c in cands) + (" or none" if none_possible else "")
    notes.insert(1, "the knee is undecided by the 95% intervals of the percentiles it reads: "
                 + "; ".join(undecided) + f"; it may be C = {may}")
    return _undecided_reading(knee, cands, none_possible, swept, tuple(notes), (ids, flattered),
                              min(_requests(p) for p in pts))


#: a point's side of a sweep reading's threshold, by its figures' 95% intervals (measure/stats/intervals.py):
#: above it (or: misses the SLO), below it (meets the SLO), or undecided (an interval reaches both sides)
_ABOVE, _BELOW, _UNDECIDED = "above", "below", "undecided"


def _iv(pt: PointRecord, metric: str, stat: str) -> tuple[float, float] | None:
    """The 95% interval (ms) the point recorded for ``metric``'s ``stat`` (``client.intervals["ttft_ms.p99"]``), an
    unbounded side as ±inf; None where it recorded none (a peer's file, a file from before intervals)."""
    iv = client_value(pt, "intervals", f"{metric}.{stat}")
    if not isinstance(iv, Mapping):
        return None
    lo, hi = iv.get("lo"), iv.get("hi")
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def _iv_text(iv: tuple[float, float]) -> str:
    lo = "−∞" if math.isinf(iv[0]) else f"{iv[0]:.4g}"
    return f"[{lo}, {'+∞' if math.isinf(iv[1]) else f'{iv[1]:.4g}'}] ms"


def _requests(pt: PointRecord) -> int:
    return int(client_number(pt, "completed") or 0)


def _knee_side(pt: PointRecord, ratio: float) -> tuple[str, str]:
    """Whether the point's TTFT p99 exceeds ``ratio`` × its p50: surely (p99's lower bound above ``ratio`` × p50's
    upper bound), surely not (p99's upper bound at or below ``ratio`` × p50's lower bound), or undecided; a point
    without intervals is read from its estimates, as before intervals."""
    p50, p99 = client_number(pt, "ttft_ms", "p50"), client_number(pt, "ttft_ms", "p99")
    est = _ABOVE if p50 and p99 is not None and p99 > ratio * p50 else _BELOW
    i50, i99 = _iv(pt, "ttft_ms", "p50"), _iv(pt, "ttft_ms", "p99")
    if i50 is None or i99 is None:
        return est, ""
    if i99[0] > ratio * i50[1]:
        return _ABOVE, ""
    if i99[1] <= ratio * i50[0]:
        return _BELOW, ""
    return _UNDECIDED, (f"C = {concurrency(pt)}: p99 {_iv_text(i99)} against {ratio:g} × p50 {_iv_text(i50)} "
                        f"({_requests(pt)} requests)")


def _first_above(sides: list[tuple[float, str]]) -> tuple[list[float], bool]:
    """The swept values (in order) that may be the first one above the threshold, and whether none may be."""
    cands: list[float] = []
    for c, side in sides:
        if side == _ABOVE:
            return [*cands, c], False
        if side == _UNDECIDED:
            cands.append(c)
    return cands, True


def _decided(cands: list[float], none_possible: bool) -> bool:
    return len(cands) + none_possible == 1


def _undecided_reading(value: float | None, cands: list[float], none_possible: bool, swept: list[float],
                       notes: tuple[str, ...], base: tuple[tuple[str, ...], bool], requests: int) -> MeasuredValue:
    """A sweep reading (a concurrency) that its points' intervals leave undecided among ``cands`` (and none, where
    ``none_possible``). A value carries the open interval between the swept concurrencies around the candidates
    (the knee lies strictly between them; above the last swept point, up to its doubling): a band it straddles is
    INCONCLUSIVE. A measured none carries the smallest candidate as the value from which the points say nothing
    (``unknown_from``): a numeric ink there or above is INCONCLUSIVE, one wholly below still fails."""
    if value is None:
        return MeasuredValue(None, base[0], notes, base[1], unknown_from=min(cands), undecided=tuple(cands))
    lo = max((c for c in swept if c < min(cands)), default=0.0)
    hi = None if none_possible else min((c for c in swept if c > max(cands)), default=2 * max(cands))
    interval = {"estimate": value, "lo": lo, "hi": hi, "level": 0.95, "method": "percentile intervals", "n": 0,
                "requests": requests,
                "note": "the swept concurrencies the reading may be lie strictly inside (the percentiles' intervals "
                        "leave it undecided)"}
    return MeasuredValue(value, base[0], notes, base[1], interval=interval)


def _little_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    """λ·W ÷ C over the held window in a closed loop (the check that the load generator held C: a starved one
    reads the share it held and fails; the drain after the last send is outside the window), λ·W ÷ the client's
    own L in an open loop (bookkeeping): :func:`~pytest_roofline.quantities.littles.littles_reading`. The point's
    held flag is not a note here: this verdict is the check of exactly that, so it must stay decisive."""
    pt = point_at(meas, at)
    c = concurrency(pt) if str(pt.get("mode") or "closed") != "open" else 0
    closed = c > 0
    reading = littles_reading(pt.get("client"), c if closed else None)
    if reading is None or reading.vacuous:
        why = client_value(pt, "littles_law", "not_checked")
        if isinstance(why, str) and why:
            reason = f"point {pt.get('id')}: {why}"
        elif closed and client_value(pt, "littles_law", "held_requests") is not None:
            reason = (f"point {pt.get('id')}: no request was sent after its {c} clients were first all in flight, "
                      "so it has no held window to read λ·W over: C in flight there is true by construction, not "
                      "measured (more requests per point: sweep.requests_per_point)")
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


def _slo_side(pt: PointRecord, at: Mapping[str, Any]) -> tuple[str, str]:
    """Whether the point meets every SLO at the chosen percentile by its figures' 95% intervals: surely
    (``_BELOW``: each interval's upper bound at or below its SLO), surely not (``_ABOVE``: an interval's lower
    bound above its SLO), or undecided; a point without intervals is read from its estimates."""
    pct = str(at.get("percentile", "p99"))
    sides, whys = [], []
    for metric in ("ttft", "tpot"):
        limit = _slo_ms(at[metric])
        if limit is None:
            continue
        est = client_number(pt, f"{metric}_ms", pct)
        iv = _iv(pt, f"{metric}_ms", pct)
        if iv is None:
            sides.append(_BELOW if est is not None and est <= limit else _ABOVE)
        elif iv[0] > limit:
            sides.append(_ABOVE)
        elif iv[1] <= limit:
            sides.append(_BELOW)
        else:
            sides.append(_UNDECIDED)
            whys.append(f"{metric.upper()} {pct} {_iv_text(iv)} against its {limit:g} ms SLO")
    if _ABOVE in sides:
        return _ABOVE, ""
    if _UNDECIDED in sides:
        return _UNDECIDED, f"C = {concurrency(pt)}: " + ", ".join(whys) + f" ({_requests(pt)} requests)"
    return _BELOW, ""


def _goodput_reading(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds,
                     ) -> tuple[an.Goodput, list[tuple[float, float, str]], list[str], list[str]]:
    """The goodput of the sweep by its estimates, each point's (concurrency, output throughput, side of the SLO),
    the undecided points' reasons and the points' notes."""
    g = _goodput(meas, at, setup, th)
    pts = [p for p in sweep_points(meas) if client_number(p, "output_throughput_tok_s") is not None]
    rows, whys = [], []
    for p in pts:
        side, why = _slo_side(p, at)
        rows.append((float(concurrency(p)), float(client_number(p, "output_throughput_tok_s") or 0.0), side))
        if why:
            whys.append(why)
    return g, sorted(rows), whys, _goodput_points_notes(meas, th, setup)


def _possible_best(rows: list[tuple[float, float, str]]) -> tuple[float | None, list[tuple[float, float, str]]]:
    """The best output throughput among the points that surely meet the SLOs (None: none does), and the undecided
    points above it: each may be the best point, so they leave goodput undecided."""
    sure = max((t for _, t, side in rows if side == _BELOW), default=None)
    return sure, [r for r in rows if r[2] == _UNDECIDED and (sure is None or r[1] > sure)]


def _goodput_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    g, rows, whys, notes = _goodput_reading(meas, at, setup, th)
    sure, undecided = _possible_best(rows)
    head = (_goodput_note(g, at),)
    if not undecided:
        return MeasuredValue(g.best_tok_per_s, (), (*head, *notes))
    why = _goodput_undecided_note(whys, sure, undecided)
    if g.best_tok_per_s is None:
        return MeasuredValue(None, (), (*head, why, *notes), unknown_from=min(t for _, t, _ in undecided),
                             undecided=tuple(t for _, t, _ in undecided))
    interval = {"estimate": g.best_tok_per_s, "lo": sure or 0.0, "hi": max(t for _, t, _ in undecided),
                "level": 0.95, "method": "percentile intervals", "n": 0,
                "requests": min((_requests(p) for p in sweep_points(meas)), default=0),
                "note": "between the best point that surely meets the SLOs and the best one that may"}
    return MeasuredValue(g.best_tok_per_s, (), (*head, why, *notes), interval=interval)


def _goodput_undecided_note(whys: list[str], sure: float | None, undecided: list[tuple[float, float, str]]) -> str:
    best = f"{sure:,.1f} tok/s" if sure is not None else "none"
    return ("goodput is undecided by the 95% intervals of the percentiles it reads: " + "; ".join(whys)
            + f"; surely meeting the SLOs: best {best}; may also meet them: "
            + ", ".join(f"C = {c:g} ({t:,.1f} tok/s)" for c, t, _ in undecided))


def _goodput_c_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    g, rows, whys, notes = _goodput_reading(meas, at, setup, th)
    sure, undecided = _possible_best(rows)
    head = (_goodput_note(g, at),)
    if not undecided:
        return MeasuredValue(g.best_concurrency, (), (*head, *notes))
    cands = sorted({c for c, _, _ in undecided} | {c for c, t, side in rows if side == _BELOW and t == sure})
    return _undecided_reading(None if g.best_concurrency is None else float(g.best_concurrency), cands,
                              sure is None, [c for c, _, _ in rows],
                              (*head, _goodput_undecided_note(whys, sure, undecided), *notes), ((), False),
                              min((_requests(p) for p in sweep_points(meas)), default=0))


def _goodput_note(g: an.Goodput, at: Mapping[str, Any]) -> str:
    return (f"SLO TTFT ≤ {float(at['ttft']) * 1e3:g} ms and TPOT ≤ {float(at['tpot']) * 1e3:g} ms at "
            f"{at.get('percentile', 'p99')} (a value equal to its SLO meets it): "
            + (f"best {g.best_tok_per_s:,.1f} tok/s at concurrency {g.best_concurrency}"
               if g.best_tok_per_s is not None else "no point meets them")
            + f"; raw max {g.raw_max_tok_per_s:,.1f} tok/s")


def _wanted_slo_ms(at: Mapping[str, Any]) -> dict[str, float]:
    """The SLOs a ``request_goodput`` prediction asks for (its at: or the file's ``slo:``), in ms: vLLM's --goodput
    keys (``ttft_ms``, ``tpot_ms``, ``e2el_ms``), an unbounded one left out."""
    out: dict[str, float] = {}
    for key in ("ttft", "tpot", "e2el"):
        val = at.get(key)
        if isinstance(val, (int, float)) and math.isfinite(float(val)):
            out[f"{key}_ms"] = float(val) * 1e3
    return out


def _slo_text(slo_ms: Mapping[str, Any]) -> str:
    names = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2el_ms": "E2E latency"}  # in vLLM's --goodput order
    keys = [k for k in names if k in slo_ms] + sorted(k for k in slo_ms if k not in names)
    return " and ".join(f"{names.get(k, k)} ≤ {float(slo_ms[k]):g} ms" for k in keys)


def _same_slo(a: Mapping[str, Any], b: Mapping[str, float]) -> bool:
    return set(a) == set(b) and all(math.isclose(float(a[k]), b[k], rel_tol=1e-9, abs_tol=1e-9) for k in b)


def _request_goodput_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup,
                             th: Thresholds) -> MeasuredValue:
    """vLLM's request_goodput at the point (``client.goodput``, measure.stats.goodput): the completed requests
    meeting every SLO ÷ the point's duration, with the good share's Wilson score interval × request throughput."""
    want = _wanted_slo_ms(at)
    if not want:
        raise NotMeasured("request_goodput needs SLOs: slo: {ttft: …, tpot: …, e2el: …} in the file (any of them), "
                          "or at: {ttft: …}")
    pt = point_at(meas, at)
    gp = client_value(pt, "goodput")
    pid = pt.get("id")
    if not isinstance(gp, Mapping):
        raise NotMeasured(f"point {pid} recorded no request goodput (client.goodput): a run records it when its "
                          "file has an slo: section with ttft, tpot or e2el (a file from before 2026-12-06 has none)")
    if isinstance(gp.get("not_measured"), str):  # a replay that could not recompute it (measure.stats.goodput)
        raise NotMeasured(f"point {pid}: {gp['not_measured']}")
    have = gp.get("slo_ms")
    if not isinstance(have, Mapping):
        raise NotMeasured(f"point {pid}'s request goodput ({gp.get('req_s')} req/s) does not record the SLOs it was "
                          f"measured under, so it cannot be scored against {_slo_text(want)} "
                          "(vllm bench serve: --metadata roofline_goodput=ttft:…,tpot:… records them)")
    if not _same_slo(have, want):
        raise NotMeasured(f"point {pid}'s request goodput was measured under {_slo_text(have)}, not the "
                          f"prediction's {_slo_text(want)} (a run records it, and a replay recomputes it, under the "
                          "file's slo:; an at: that names other SLOs is not recomputed)")
    req_s, good, done = gp.get("req_s"), gp.get("good"), gp.get("completed")
    if not isinstance(req_s, (int, float)):
        raise NotMeasured(f"point {pid} has no request goodput (no completed request or no request throughput)")
    iv = gp.get("interval")
    interval = None
    if isinstance(iv, Mapping) and iv.get("lo") is not None and iv.get("hi") is not None:
        interval = {"estimate": float(req_s), "lo": float(iv["lo"]), "hi": float(iv["hi"]),
                    "level": iv.get("level", 0.95), "method": iv.get("method", "Wilson score"),
                    "n": int(done or 0), "requests": int(done or 0),
                    "note": "the good share's Wilson score interval × the request throughput"}
    count = f"{good} of {done} requests" if good is not None and done is not None else "the requests"
    head = (f"{count} met {_slo_text(have)} (vLLM's --goodput rule: a value equal to its SLO meets it, TPOT 0 for "
            "one output token) ÷ the point's duration")
    return MeasuredValue(float(req_s), (point_id(pt),), (head, *point_notes(pt, th, setup)),
                         is_flattered(pt, th, setup), interval)


def _serve_request_goodput(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    """The serving model's request_goodput at the point: its simulated requests meeting every SLO the prediction
    names (at: over the file's slo:), by vLLM's --goodput rule (``model.serving.prediction.meets_slos``, the rule
    the measured value counts by), ÷ the simulated duration. No band: no public run of the accuracy corpus reports
    request goodput (model.bands)."""
    want = _wanted_slo_ms(at)
    if not want:
        raise SetupError("request_goodput needs SLOs: slo: {ttft: …, tpot: …, e2el: …} in the file (any of them), "
                         "or at: {ttft: …}")
    p, pp = sweep.at(at)
    if not pp.requests:
        raise SetupError(f"the serving model kept no simulated requests at {p.id} to count against the SLOs")
    good, done = pp.good_requests(want), len(pp.requests)
    return ModelValue(pp.goodput_req_per_s(want), sweep.inputs(),
                      sim_explanation(p.id, pp) + f"; {good} of {done} met {_slo_text(want)} (vLLM's --goodput "
                      f"rule) ÷ the simulated duration {pp.duration_s:.4g} s; no band: no public run of the "
                      "accuracy corpus reports request goodput")


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
    Quantity("request_goodput", "request_rate", "vLLM's request_goodput at a sweep point: completed requests "
             "meeting every SLO (TTFT, TPOT, E2E latency: those given) ÷ the point's duration",
             at=("concurrency", "rate", "ttft", "tpot", "e2el"),
             measure=_request_goodput_measure, points=QuantityPoints.AT, serving=_serve_request_goodput,
             replicas="total"),
    Quantity("goodput", "throughput", "the highest output throughput among sweep points that meet every SLO "
             "(TTFT and TPOT at the chosen percentile)", at=("percentile", "ttft", "tpot"),
             measure=_goodput_measure, points=QuantityPoints.ALL, serving=_serve_goodput, replicas="sweep"),
    Quantity("goodput_concurrency", "count", "the sweep concurrency where goodput is reached",
             kind=QuantityKind.OPTIONAL_NUMBER, at=("percentile", "ttft", "tpot"), measure=_goodput_c_measure,
             points=QuantityPoints.ALL, serving=_serve_goodput_c, replicas="sweep"),
)
