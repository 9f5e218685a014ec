"""Steady state: which part of a point's measurement is the load it was meant to be (MSER-5 truncation, the
closed loop's fill, the drain), and the point's figures with their intervals over that window.

This module never imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.stats.glossary import PERCENTILES, distribution, output_tokens, prompt_tokens
from pytest_roofline.measure.stats.held import first_full_s
from pytest_roofline.measure.stats.intervals import (
    Interval,
    batch_means,
    completion_rate_interval,
    fixed_span_rate_interval,
    mean_interval,
    percentile_interval,
)

__all__ = ["MSER_BATCH", "STEADY_MODES", "MAX_DISCARD_SHARE", "MIN_STEADY_REQUESTS", "mser_truncation", "SteadyWindow",
           "steady_window", "run_window", "INTERVAL_FIGURES", "steady_statistics", "steady_summary",
           "latency_mean_interval"]

#: Batch size of the MSER-5 truncation rule (White 1997; White, Cobb & Spratt 2000).
MSER_BATCH = 5
#: Steady-window detection modes (``sweep.steady_state``): ``detect`` measures the warm-up and drain of each point
#: (:func:`steady_window`); ``off`` takes the whole measurement window, as before this option existed.
STEADY_MODES: tuple[str, ...] = ("detect", "off")
#: The most of a point's completed requests the steady window may leave out (fill and drain together). A window
#: that would leave out more is no steady state: the point says so, and its steady figures are the whole run's
#: (the newcomer's C=4 point of 64 requests lost 30 to MSER-5 and scored 1,237 tok/s where the run made 680).
MAX_DISCARD_SHARE = 0.25
#: Fewer completed requests than this have no steady state to find (MSER-5 needs four batches of five).
MIN_STEADY_REQUESTS = 4 * MSER_BATCH


def mser_truncation(series: Sequence[float] | np.ndarray, batch: int = MSER_BATCH) -> tuple[int, str]:
    """How many leading observations of ``series`` to drop as warm-up, by MSER-``batch`` (White, "An effective
    truncation heuristic for bias reduction in simulation output", Simulation 69(6), 1997; MSER-5 in White,
    Cobb & Spratt, Proc. Winter Simulation Conference 2000): average the series in batches of ``batch``, and drop
    the ``d`` leading batches that minimise ``MSER(d) = Σ_{i>d} (Z_i − Z̄_d)² / (k − d)²`` — the squared standard
    error of the remaining mean, which falls while dropping removes a transient and rises once it only removes
    data. ``d`` is searched over the first half of the batches (the rule's usual restriction: a minimum past the
    middle says the run is too short to have a steady part, reported as such). Returns (observations dropped,
    why)."""
    z_all = np.asarray(series, dtype=np.float64)
    k = z_all.size // batch
    if k < 4:
        return 0, f"{z_all.size} requests: too few for MSER-{batch} (needs ≥ {4 * batch}); none dropped"
    z = z_all[: k * batch].reshape(k, batch).mean(axis=1)
    best_d, best = 0, math.inf
    full_best_d, full_best = 0, math.inf
    for d in range(k - 1):
        rest = z[d:]
        m = float(((rest - rest.mean()) ** 2).sum()) / (k - d) ** 2
        if m < full_best:
            full_best_d, full_best = d, m
        if d <= k // 2 and m < best:
            best_d, best = d, m
    why = f"MSER-{batch} on the TTFT series in send order: {best_d} of {k} batches dropped"
    if full_best_d > k // 2:
        why += " (its minimum lies past the middle: the point may not have reached a steady state)"
    return best_d * batch, why


@dataclass(frozen=True)
class SteadyWindow:
    """The part of a point's measurement window that ran at the offered load (``perf_counter`` seconds).

    ``start_s`` is where the warm-up ends: the later of (closed loop) the first moment the requests in flight
    reached the target concurrency and the send time of the first request MSER-5 keeps; ``end_s`` is where the
    drain starts: the last measured send (after it no new request starts). The requests of the window are those
    sent at or after ``start_s`` that ended by ``end_s`` (their whole life saw the offered load); ``method`` is
    ``"detect"`` or ``"off"`` (the whole measurement window and every measured request, the rule before).
    In a closed loop the warm-up end is the send time of the earliest request still in flight when the count first
    reached the target: requests that finished before the target was reached ran under a lighter load."""

    start_s: float
    end_s: float
    method: str
    reason: str
    indices: tuple[int, ...]  # RequestRecord.index of the window's requests
    dropped_warmup: int = 0  # measured requests left out at the start
    dropped_drain: int = 0  # measured requests left out because they were still running when the drain began
    #: ``method`` is also ``"run"`` (the whole measurement window: the figure a verdict is scored on, as
    #: ``vllm bench serve`` reports it) and ``"none"`` (detection found no steady state: the whole run stands in)

    def to_json(self, origin_s: float) -> dict[str, Any]:
        return {"method": self.method, "start_offset_s": self.start_s - origin_s, "end_offset_s": self.end_s - origin_s,
                "requests": len(self.indices), "dropped_warmup": self.dropped_warmup,
                "dropped_drain": self.dropped_drain, "reason": self.reason}


def run_window(records: Sequence[RequestRecord], window_start_s: float, *, method: str = "run",
               reason: str = "the whole measurement window: first measured send to the end of the last measured "
                             "request (as vllm bench serve's duration)") -> SteadyWindow:
    """The whole measurement window of one point and every completed measured request in it."""
    measured = [r for r in records if r.in_sample and r.sent_s is not None]
    ends = [r.end_s for r in measured if r.end_s is not None]
    return SteadyWindow(window_start_s, max(ends) if ends else window_start_s, method, reason,
                        tuple(r.index for r in sorted(measured, key=lambda r: r.sent_s or 0.0) if r.ok))


def _no_steady_state(win: SteadyWindow, ok: int) -> str | None:
    """Why ``win`` (a detected window over ``ok`` completed requests) is no steady state, or None when it is one."""
    if ok < MIN_STEADY_REQUESTS:
        return f"{ok} requests: too few to find a steady state (needs ≥ {MIN_STEADY_REQUESTS})"
    dropped = win.dropped_warmup + win.dropped_drain
    if dropped > MAX_DISCARD_SHARE * ok:
        return (f"the steady window would leave out {dropped} of {ok} requests ({dropped / ok:.0%}; fill "
                f"{win.dropped_warmup}, drain {win.dropped_drain}), more than the {MAX_DISCARD_SHARE:.0%} it may")
    if "past the middle" in win.reason:
        return "MSER-5's minimum lies past the middle of the run"
    return None


def steady_window(records: Sequence[RequestRecord], window_start_s: float, *, concurrency: int | None = None,
                  method: str = "detect") -> SteadyWindow:
    """The steady window of one point (see :class:`SteadyWindow`); ``concurrency`` is the closed loop's target
    (``None`` in an open loop: MSER-5 alone decides the warm-up end)."""
    measured = sorted((r for r in records if r.in_sample and r.sent_s is not None), key=lambda r: r.sent_s or 0.0)
    ok = [r for r in measured if r.ok]
    ends = [r.end_s for r in measured if r.end_s is not None]
    if method == "off" or not ok:
        end = max(ends) if ends else window_start_s
        return SteadyWindow(window_start_s, end, "off", "the whole measurement window (sweep.steady_state: off)",
                            tuple(r.index for r in ok))
    drain_s = max(r.sent_s for r in measured if r.sent_s is not None)
    reasons = []
    start = window_start_s
    if concurrency:
        t_full = first_full_s(measured, concurrency)
        if t_full is not None:
            # the fill: the requests in flight when the count first reached the target all ran under it from
            # the moment the last of them was sent, and the earliest of them starts the window (in a closed loop
            # the first burst of sends, which the MSER rule below may still drop as a transient)
            in_flight = [r.sent_s for r in measured if r.sent_s is not None and r.sent_s <= t_full
                         and (r.end_s is None or r.end_s > t_full)]
            start = max(start, min(in_flight) if in_flight else t_full)
            reasons.append(f"in flight first reached {concurrency} at +{t_full - window_start_s:.3f} s")
        else:
            reasons.append(f"in flight never reached {concurrency}")
    ttft_series = [r.ttft_s for r in ok if r.ttft_s is not None]
    drop, why = mser_truncation(ttft_series)
    reasons.append(why)
    if drop:
        start = max(start, ok[drop].sent_s or start)
    kept = [r for r in ok if (r.sent_s or 0.0) >= start and r.end_s is not None and r.end_s <= drain_s]
    late = [r for r in ok if (r.sent_s or 0.0) >= start and (r.end_s is None or r.end_s > drain_s)]
    if len(kept) < max(2, len(ok) // 4):  # too little left (a short point): keep the in-flight tail too
        kept = [r for r in ok if (r.sent_s or 0.0) >= start]
        late = []
        reasons.append("few requests ended before the drain: the requests still running then are kept")
    reasons.append(f"drain from the last measured send at +{drain_s - window_start_s:.3f} s")
    early = sum(1 for r in ok if (r.sent_s or 0.0) < start)
    return SteadyWindow(start, drain_s, "detect", "; ".join(reasons), tuple(r.index for r in kept),
                        dropped_warmup=early, dropped_drain=len(late))


#: The client figures that get an interval (``client.intervals`` keys: the figure's path, dot-joined).
INTERVAL_FIGURES: tuple[str, ...] = (
    *(f"{m}.{s}" for m in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "per_request_output_tok_s")
      for s in ("mean", *(f"p{p}" for p in PERCENTILES))),
    "output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_req_s",
)


def latency_mean_interval(values: Sequence[float], level: float) -> Interval:
    """A latency mean's batch-means interval (:func:`mean_interval`) with its lower side kept where the samples can
    put it. A mean of non-negative samples is >= 0: clipped there (a Student-t over 2 batches reached -11 ms for a
    TPOT mean, trial s16 H1). And no lower than the smallest of k batch means where k says so: latencies are skewed
    right (mean >= median), so each batch mean lies above the true mean with probability at most 1/2 and all k do
    with at most 2^-k, within the interval's (1 - level)/2 from k >= 6 at 95 %. A burst of three slow batches among
    16 put a TTFT mean's t-interval at [0, 150] ms where every request took 6.5 ms or more, and a prediction of
    5 ms came out INCONCLUSIVE (trial s25b #9)."""
    iv = mean_interval(values, level)
    if iv.lo < 0 <= min(values):
        iv = replace(iv, lo=0.0)
    bm = batch_means(np.asarray(values, dtype=np.float64))
    floor = min(float(bm.min()), iv.estimate)
    if bm.size >= 2 and 2.0 ** -bm.size <= (1.0 - level) / 2 and floor > iv.lo:
        iv = replace(iv, lo=floor, note=f"{iv.note}; lower side at the smallest batch mean")
    return iv


def steady_statistics(records: Sequence[RequestRecord], window: SteadyWindow, level: float = 0.95, *,
                      concurrency: int | None = None,
                      fixed_span: bool = False) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The point's figures over its steady window (``client.steady``) and each one's interval at ``level``
    (``client.intervals``, keyed like :data:`INTERVAL_FIGURES`, in the figure's own unit: ms for ``*_ms``).

    Percentiles get distribution-free order-statistic intervals, means batch-means intervals over the requests
    in send order (clipped at 0: every sample is), throughputs one interval from the completion events
    (:func:`~pytest_roofline.measure.stats.intervals.completion_rate_interval`: batches of whole rounds of
    ``concurrency`` completions in a closed loop, the count interval in an open loop or a point of under 3
    rounds). ITL pools every token gap of the window's requests (its ``n`` counts gaps, ``requests`` the requests
    behind them)."""
    keep = set(window.indices)
    rs = sorted((r for r in records if r.index in keep and r.in_sample), key=lambda r: r.sent_s or 0.0)
    per_metric: dict[str, list[float]] = {"ttft_ms": [], "tpot_ms": [], "itl_ms": [], "e2e_ms": [],
                                          "per_request_output_tok_s": []}
    for r in rs:
        n_out = output_tokens(r)
        if r.ttft_s is not None:
            per_metric["ttft_ms"].append(r.ttft_s * 1e3)
        per_metric["itl_ms"].extend(g * 1e3 for g in r.itls_s)
        if r.ttft_s is not None and r.e2e_s is not None:
            per_metric["e2e_ms"].append(r.e2e_s * 1e3)
            if n_out > 1:
                per_metric["tpot_ms"].append((r.e2e_s - r.ttft_s) / (n_out - 1) * 1e3)
            if r.e2e_s > 0:
                per_metric["per_request_output_tok_s"].append(n_out / r.e2e_s)
    steady: dict[str, Any] = {"completed": len(rs)}
    intervals: dict[str, dict[str, Any]] = {}
    for name, values in per_metric.items():
        steady[name] = distribution(values)
        if not values:
            continue
        iv = latency_mean_interval(values, level)
        intervals[f"{name}.mean"] = {**iv.to_json(), "requests": len(rs)}
        for p in PERCENTILES:
            iv = percentile_interval(values, p / 100.0, level)
            intervals[f"{name}.p{p}"] = {**iv.to_json(), "requests": len(rs)}
    span = (window.start_s, window.end_s)
    # the throughputs as vLLM counts them (tokens of completed requests over the duration), each request counted at
    # its completion, so the three share one interval: exact multiples of each other where every request has the
    # same lengths (token chunks as events measured the step cadence inside requests: 3 requests gave output
    # throughput ±10%, total ±76% and request throughput none, one point FAIL and INCONCLUSIVE at once, trial s16 H1)
    done_t: list[float] = []
    done_sent: list[float] = []
    done_out: list[float] = []
    done_total: list[float] = []
    for r in (r for r in records if r.in_sample and r.ok):
        if r.end_s is not None:
            done_t.append(r.end_s)
            done_sent.append(r.sent_s if r.sent_s is not None else r.end_s)
            done_out.append(float(output_tokens(r)))
            done_total.append(float(output_tokens(r) + prompt_tokens(r)))
    for key, weights in (("output_throughput_tok_s", done_out), ("total_throughput_tok_s", done_total),
                         ("request_throughput_req_s", None)):
        if fixed_span:  # an open loop whose sends span N ÷ rate (intervals.fixed_span_rate_interval)
            iv = fixed_span_rate_interval(done_sent, done_t, span, level, weights=weights)
        else:
            iv = completion_rate_interval(done_t, span, level, concurrency=concurrency, weights=weights)
        steady[key] = iv.estimate if math.isfinite(iv.estimate) else None
        if math.isfinite(iv.estimate):
            intervals[key] = {**iv.to_json(), "requests": len(rs)}
    return steady, intervals


def steady_summary(records: Sequence[RequestRecord], window_start_s: float, *, concurrency: int | None = None,
                   method: str = "detect", level: float = 0.95, fixed_span: bool = False) -> dict[str, Any]:
    """The keys :func:`summarize` adds to a point's ``client``: ``intervals`` (each figure's interval over the whole
    run: what a verdict is scored on, the figure ``vllm bench serve`` prints), ``intervals_window: "run"``, and the
    steady window's ``steady_window``, ``steady`` (its figures) and ``steady_intervals`` (for a prediction with
    ``window: steady``). A detected window that leaves out more than :data:`MAX_DISCARD_SHARE` of the requests,
    or a point too short for one, has no steady state: ``steady_window.method`` is ``"none"`` with the reason, and
    its figures are the whole run's."""
    whole = run_window(records, window_start_s)
    # the whole run of an open loop sent on a fixed span: its throughputs' interval is the last latency's
    # (intervals.fixed_span_rate_interval); a steady window cuts the span, so it keeps the count interval
    run_stats, run_intervals = steady_statistics(records, whole, level, concurrency=concurrency,
                                                 fixed_span=fixed_span)
    win = steady_window(records, window_start_s, concurrency=concurrency, method=method)
    if win.method == "detect":
        why = _no_steady_state(win, len(whole.indices))
        if why is not None:
            win = run_window(records, window_start_s, method="none",
                             reason=f"no steady state: {why}; the whole run stands in ({win.reason})")
    if win.method in ("none", "off"):
        steady, steady_intervals = run_stats, run_intervals
    else:
        steady, steady_intervals = steady_statistics(records, win, level, concurrency=concurrency)
    return {"steady_window": win.to_json(window_start_s), "steady": steady, "steady_intervals": steady_intervals,
            "intervals": run_intervals, "intervals_window": "run"}
