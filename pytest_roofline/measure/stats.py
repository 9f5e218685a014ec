"""The metric glossary and the per-point client statistics.

:data:`GLOSSARY` defines every client metric once; the README and the HTML report print it verbatim.
:func:`summarize` turns a :class:`~pytest_roofline.measure.loadgen.LoadResult` into the ``client`` object of a
results-file point (docs/results-schema.md).

This module never imports pytest.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pytest_roofline.measure.loadgen import LoadResult, RequestRecord

__all__ = ["GLOSSARY", "PERCENTILES", "distribution", "summarize", "summarize_records", "measurement_window_s",
           "measured_duration_s", "failure_reasons", "loadgen_checks", "Interval", "INTERVAL_METHODS",
           "percentile_interval", "mean_interval", "rate_interval", "requests_to_decide", "order_statistic_ranks",
           "min_samples_for_bound", "t_quantile", "mser_truncation", "SteadyWindow", "steady_window",
           "steady_statistics", "steady_summary", "STEADY_MODES", "INTERVAL_FIGURES", "combine_repeats",
           "next_run_interval"]

#: Percentiles reported for every distribution (with ``mean``), as keys ``p50`` ... ``p99``.
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)

GLOSSARY: dict[str, str] = {
    "measurement_window": (
        "The time span the throughput and in-flight figures of a sweep point are computed over: from the "
        "start of the measurement phase (after all warm-up requests finished; in an open loop the time zero "
        "of the arrival schedule) to the end of the last measured request. Warm-up requests are never "
        "counted. All client times come from one monotonic clock (time.perf_counter); token arrival times "
        "are the kernel's receive timestamps of the socket reads that completed each server-sent event, so "
        "they do not include the client's own processing delay."
    ),
    "completed": (
        "Measured requests that finished successfully: HTTP 200, at least one chunk carrying tokens, no "
        "error event in the stream and a final data: [DONE]."
    ),
    "failed": (
        "Measured requests that did not complete: connection errors, HTTP errors, error events in the "
        "stream, truncated streams and client-side timeouts. Errors count in denominators: a success "
        "fraction or goodput fraction divides by completed + failed, never by completed alone. Failed "
        "requests are excluded from the latency distributions (TTFT, TPOT, ITL, E2E) but their time in "
        "flight counts towards the mean in-flight figure."
    ),
    "ttft_ms": (
        "Time to first token, per completed request: from the moment the request was written to the "
        "socket to the arrival of the first server-sent event whose choices list is non-empty (the first "
        "chunk carrying tokens), in milliseconds. It includes queueing and prefill on the server and one "
        "network transit each way, but not client-side waiting before the send (see schedule_lag_ms)."
    ),
    "tpot_ms": (
        "Time per output token, per completed request, with vLLM's definition: (E2E latency − TTFT) / "
        "(output tokens − 1), in milliseconds. It excludes the first token, so it is the mean decode "
        "interval a user experienced after the first token. Output tokens come from the server's usage "
        "(completion_tokens). Only requests with more than one output token contribute."
    ),
    "itl_ms": (
        "Inter-token latency: the gaps between consecutive chunks carrying tokens within a request, in "
        "milliseconds, pooled over all chunks of all completed requests (so long requests weigh more). "
        "When the server puts several tokens in one chunk the gap covers all of them; TPOT is the "
        "per-token figure."
    ),
    "e2e_ms": (
        "End-to-end latency, per completed request: from the send to the arrival of the last chunk "
        "carrying tokens, in milliseconds (vLLM's E2EL)."
    ),
    "output_throughput_tok_s": (
        "Output tokens of all completed requests (usage completion_tokens) divided by the measurement "
        "window, in tokens per second."
    ),
    "steady_output_throughput_tok_s": (
        "Output tokens that arrived inside the steady window divided by its length, in tokens per second. "
        "The steady window runs from the start of the measurement window to the last measured send: after "
        "it no new request starts and the requests in flight only drain, so the offered load is no longer "
        "the nominal one. Each chunk counts completion_tokens / chunks of its request. The throughput knee "
        "uses this figure (the ramp-down tail of a short closed-loop point otherwise flattens the curve)."
    ),
    "steady_mean_in_flight": (
        "The time-averaged number of requests in flight over the steady window (see "
        "steady_output_throughput_tok_s): the concurrency the server actually saw while the load was on."
    ),
    "total_throughput_tok_s": (
        "Prompt plus output tokens of all completed requests (usage prompt_tokens + completion_tokens) "
        "divided by the measurement window, in tokens per second."
    ),
    "request_throughput_req_s": (
        "Completed requests divided by the measurement window, in requests per second."
    ),
    "per_request_output_tok_s": (
        "Per completed request: its output tokens divided by its E2E latency, in tokens per second — the "
        "generation speed one user saw, first-token wait included."
    ),
    "schedule_lag_ms": (
        "Open loop only: actual send time minus the time the seeded arrival schedule assigned to the "
        "request, in milliseconds, for every measured request that was sent. It grows when a concurrency "
        "cap holds arrivals back or the client falls behind; latencies are measured from the actual send, "
        "so a large lag means the offered load was not the intended one. Null in a closed loop."
    ),
    "mean_in_flight": (
        "The time-averaged number of measured requests in flight (sent but not finished, failed ones "
        "included) over the measurement window, computed from the client's own send and end times: the "
        "sum of every request's time in flight divided by the window length."
    ),
    "littles_law": (
        "A consistency check by Little's law, L = λ·W: L is mean_in_flight, λ (lambda_req_s) is the request "
        "throughput, W (W_s) is the mean E2E latency of completed requests in seconds; ratio = (λ·W) / L, "
        "what Little's law gives back over the concurrency actually held. It is close to 1 in a steady, "
        "error-free run; it drops below 1 when failed requests held slots, when responses took long after "
        "their last token, or when the window holds long ramp-up/ramp-down phases."
    ),
    "token_count_mismatches": (
        "Completed requests whose server-reported usage differs from what was requested: prompt_tokens ≠ "
        "input_len or completion_tokens ≠ output_len, or no usage reported at all. Non-zero means the "
        "workload was not the one the prediction assumed (for example a BOS token added to token-id "
        "prompts, or EOS honoured)."
    ),
    "goodput": (
        "Requests per second that met every service-level objective given (TTFT and/or TPOT at the "
        "stated limits), divided by the measurement window; the goodput fraction divides the good requests "
        "by all measured requests, failed ones included. A request with one output token has TPOT 0 for "
        "this purpose (vLLM's convention). Computed by the scoring step from these per-point statistics."
    ),
    "steady_window": (
        "The part of the measurement window a point's intervals are computed over, found by measurement: the "
        "warm-up ends when the requests in flight first reach the target concurrency (closed loop) and the TTFT "
        "series in send order stops trending by the MSER-5 truncation rule (White 1997); the drain starts at the "
        "last measured send. Its requests are those sent inside it that finished before the drain; the results "
        "file records where it lies, how many requests it dropped at each end, and why. With "
        "sweep.steady_state: off it is the whole measurement window."
    ),
    "steady": (
        "The point's figures over its steady window (TTFT, TPOT, ITL, E2E distributions, throughputs): the values "
        "a live run's measured predictions are scored on."
    ),
    "intervals": (
        "Each figure's 95% confidence interval over the steady window, with the number of samples (n) and "
        "requests behind it: distribution-free order-statistic intervals for percentiles (the binomial "
        "distribution of the order statistics), batch-means Student-t intervals for means (up to 20 contiguous "
        "batches, so correlated neighbours widen it) and for throughputs (20 sub-windows). A side that n samples "
        "cannot bound is null: a p99 from 80 requests has no upper bound at 95%. With sweep.repeats >= 2 it is a "
        "Student-t interval over the repeats' values."
    ),
    "percentiles": (
        "Every distribution is reported as its mean and its 50th, 90th, 95th and 99th percentiles, "
        "computed with numpy's default linear interpolation between order statistics; all null when there "
        "is no sample."
    ),
}


def distribution(values: Iterable[float] | np.ndarray, scale: float = 1.0) -> dict[str, float | None]:
    """``{"mean", "p50", "p90", "p95", "p99"}`` of ``values`` × ``scale`` (all ``None`` when empty)."""
    arr = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=np.float64)
    out: dict[str, float | None] = {"mean": None}
    out.update({f"p{p}": None for p in PERCENTILES})
    if arr.size == 0:
        return out
    arr = arr * scale
    out["mean"] = float(arr.mean())
    for p, v in zip(PERCENTILES, np.percentile(arr, PERCENTILES)):
        out[f"p{p}"] = float(v)
    return out


def _output_tokens(r: RequestRecord) -> int:
    return r.completion_tokens if r.completion_tokens is not None else len(r.chunk_times_s)


def _prompt_tokens(r: RequestRecord) -> int:
    return r.prompt_tokens if r.prompt_tokens is not None else r.input_len


def measurement_window_s(records: Sequence[RequestRecord], window_start_s: float,
                         window_end_s: float | None = None) -> tuple[float, float]:
    """The (start, end) ``perf_counter`` times the point's rates are taken over: from ``window_start_s`` to
    ``window_end_s``, by default the end of the last measured (non-warm-up) request."""
    if window_end_s is None:
        ends = [r.end_s for r in records if r.in_sample and r.end_s is not None]
        window_end_s = max(ends) if ends else window_start_s
    return window_start_s, window_end_s


def measured_duration_s(result: LoadResult) -> float:
    """Seconds of the measurement window of one run: the divisor of every throughput in its ``client`` stats."""
    start, end = measurement_window_s(result.records, result.measure_start_s)
    return end - start


def summarize_records(
    records: Sequence[RequestRecord],
    window_start_s: float,
    window_end_s: float | None = None,
    *,
    open_loop: bool = False,
) -> dict[str, Any]:
    """The ``client`` statistics of one point from its records (warm-up records are ignored).

    ``window_end_s`` defaults to the end of the last measured request.  ``open_loop`` selects whether
    ``schedule_lag_ms`` is reported.  See :data:`GLOSSARY` for every figure.
    """
    measured = [r for r in records if r.in_sample]
    completed = [r for r in measured if r.ok]
    failed = len(measured) - len(completed)
    window_start_s, window_end_s = measurement_window_s(records, window_start_s, window_end_s)
    duration = window_end_s - window_start_s

    out_tok = [_output_tokens(r) for r in completed]
    prompt_tok = [_prompt_tokens(r) for r in completed]
    ttft = [r.ttft_s for r in completed if r.ttft_s is not None]
    e2e = [r.e2e_s for r in completed if r.e2e_s is not None]
    itl: list[float] = []
    tpot: list[float] = []
    per_req: list[float] = []
    for r, n in zip(completed, out_tok):
        itl.extend(r.itls_s)
        t, e = r.ttft_s, r.e2e_s
        if t is not None and e is not None:
            if n > 1:
                tpot.append((e - t) / (n - 1))
            if e > 0:
                per_req.append(n / e)

    out_tput: float | None
    total_tput: float | None
    req_tput: float | None
    if duration > 0:
        out_tput = sum(out_tok) / duration
        total_tput = (sum(out_tok) + sum(prompt_tok)) / duration
        req_tput = len(completed) / duration
        busy = 0.0
        for r in measured:
            if r.sent_s is None or r.end_s is None:
                continue
            lo = max(r.sent_s, window_start_s)
            hi = min(r.end_s, window_end_s)
            if hi > lo:
                busy += hi - lo
        mean_in_flight: float | None = busy / duration
    else:
        out_tput = total_tput = req_tput = mean_in_flight = None

    steady_tput, steady_in_flight = _steady(measured, completed, out_tok, window_start_s)

    w_s = float(np.mean(e2e)) if e2e else None
    lam_w = req_tput * w_s if (req_tput is not None and w_s is not None) else None
    littles = {
        "L": mean_in_flight,
        "lambda_req_s": req_tput,
        "W_s": w_s,
        "lambda_W": lam_w,
        "ratio": (lam_w / mean_in_flight) if (mean_in_flight and lam_w is not None) else None,
    }

    lag = None
    if open_loop:
        lag = distribution(
            [r.schedule_lag_s for r in measured if r.schedule_lag_s is not None], scale=1e3
        )

    mismatches = sum(
        1 for r in completed
        if r.prompt_tokens is None or r.completion_tokens is None
        or r.prompt_tokens != r.input_len or r.completion_tokens != r.output_len
    )

    return {
        "completed": len(completed),
        "failed": failed,
        "output_throughput_tok_s": out_tput,
        "steady_output_throughput_tok_s": steady_tput,
        "steady_mean_in_flight": steady_in_flight,
        "total_throughput_tok_s": total_tput,
        "request_throughput_req_s": req_tput,
        "per_request_output_tok_s": distribution(per_req),
        "ttft_ms": distribution(ttft, scale=1e3),
        "tpot_ms": distribution(tpot, scale=1e3),
        "itl_ms": distribution(itl, scale=1e3),
        "e2e_ms": distribution(e2e, scale=1e3),
        "schedule_lag_ms": lag,
        "mean_in_flight": mean_in_flight,
        "littles_law": littles,
        "token_count_mismatches": mismatches,
    }


def _steady(measured: Sequence[RequestRecord], completed: Sequence[RequestRecord], out_tok: Sequence[int],
            window_start_s: float) -> tuple[float | None, float | None]:
    """Throughput and in-flight over the steady window: measurement start → the last measured send."""
    sends = [r.sent_s for r in measured if r.sent_s is not None]
    if not sends:
        return None, None
    end = max(sends)
    span = end - window_start_s
    if span <= 0:
        return None, None
    tokens = 0.0
    for r, n in zip(completed, out_tok):
        chunks = r.chunk_times_s
        if chunks:
            per_chunk = n / len(chunks)
            tokens += per_chunk * sum(1 for t in chunks if window_start_s <= t <= end)
    busy = 0.0
    for r in measured:
        if r.sent_s is None:
            continue
        lo, hi = max(r.sent_s, window_start_s), min(r.end_s if r.end_s is not None else end, end)
        if hi > lo:
            busy += hi - lo
    return tokens / span, busy / span


def summarize(result: LoadResult, *, steady_state: str | None = "detect", level: float = 0.95) -> dict[str, Any]:
    """The ``client`` object of a results-file point for one :func:`~pytest_roofline.measure.loadgen.run_load` run.

    The window starts at ``result.measure_start_s`` and ends with the last measured request. With
    ``steady_state`` (``"detect"`` or ``"off"``, :data:`STEADY_MODES`) the object also holds the point's steady
    window, its figures over it and their intervals at ``level`` (:func:`steady_summary`); ``None`` leaves them
    out.
    """
    out = summarize_records(
        result.records, result.measure_start_s, open_loop=result.spec.mode == "open"
    )
    if steady_state is not None:
        out.update(steady_summary(result.records, result.measure_start_s, method=steady_state, level=level,
                                  concurrency=result.spec.concurrency if result.spec.mode == "closed" else None))
    return out


def failure_reasons(records: Sequence[RequestRecord], *, limit: int = 3, width: int = 200) -> list[tuple[str, int]]:
    """The first ``limit`` distinct reasons requests failed, each with how many failed for it, in the order first
    seen (warm-up included). A reason is the request's error text cut to ``width`` characters."""
    seen: dict[str, int] = {}
    for r in records:
        if r.ok or r.discarded:
            continue
        reason = " ".join(str(r.error or "request failed").split())
        if len(reason) > width:
            reason = reason[:width] + "…"
        seen[reason] = seen.get(reason, 0) + 1
    return list(seen.items())[:limit]


def loadgen_checks(result: LoadResult) -> dict[str, Any]:
    """The load generator's self-checks of one run, as a point stores them (``loadgen`` in
    docs/results-schema.md): where the arrival stamps came from, how late user space read the socket after the
    kernel stamped it, how many token chunks arrived coalesced, the wall-clock step over the run, and the
    measurement window's start relative to the run's start; how many client processes ran it (as asked:
    ``processes_requested``, an int or "auto"; as run: ``processes``), how well their clocks and starts agreed
    (``process_sync``, None for one process) and the CPUs the client could run on (``client_cores``)."""
    from pytest_roofline.measure.loadgen import usable_cores

    return {
        "processes": result.processes,
        "processes_requested": result.spec.processes,
        "process_sync": result.process_sync,
        "client_cores": usable_cores(),
        "timestamp_source": result.timestamp_source,
        "read_lag_ms": result.read_lag_ms,
        "coalesced_chunks": result.coalesced_chunks,
        "clock_offset_drift_ns": result.clock_offset_drift_ns,
        "measure_start_offset_s": result.measure_start_s - result.run_start_s,
        "request_timeout_s": result.spec.request_timeout_s,
        "aborted": result.aborted,
    }


# --------------------------------------------------------------------------------------------------------------
# Intervals: every measured number with its uncertainty (issue 13)
# --------------------------------------------------------------------------------------------------------------

#: How an :class:`Interval` was computed (``Interval.method``).
INTERVAL_METHODS: tuple[str, ...] = ("order-statistic", "bootstrap", "batch-means", "repeats")


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided confidence interval at ``level`` (SI units, like the estimate).

    ``lo``/``hi`` are ``-inf``/``+inf`` when ``n`` is too small to bound that side at ``level`` (a p99 from 80
    requests has no finite upper bound at 95 %: the chance that all 80 lie below the true p99 is
    0.99**80 ≈ 0.45 > 0.025). ``n`` is the number of samples behind the estimate (requests, token gaps,
    sub-windows or repeats; see ``note``).
    """

    estimate: float
    lo: float
    hi: float
    level: float
    method: str
    n: int
    note: str = ""
    #: The quantile (0..1) an order-statistic interval is of; ``None`` for means and rates.
    quantile: float | None = None

    @property
    def bounded(self) -> bool:
        """Both sides finite."""
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def contains(self, value: float) -> bool:
        """``lo <= value <= hi``."""
        return self.lo <= value <= self.hi

    def straddles(self, bound: float) -> bool:
        """The bound lies strictly inside the interval: the interval alone cannot say which side it is on."""
        return self.lo < bound < self.hi

    def scaled(self, factor: float) -> Interval:
        """The same interval in other units (``factor`` > 0), e.g. seconds → milliseconds."""
        return replace(self, estimate=self.estimate * factor, lo=self.lo * factor, hi=self.hi * factor)

    def to_json(self) -> dict[str, Any]:
        """The results-file form; infinite sides are written as ``null`` (JSON has no infinity)."""
        return {
            "estimate": self.estimate,
            "lo": self.lo if math.isfinite(self.lo) else None,
            "hi": self.hi if math.isfinite(self.hi) else None,
            "level": self.level,
            "method": self.method,
            "n": self.n,
            **({"note": self.note} if self.note else {}),
            **({"quantile": self.quantile} if self.quantile is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Interval:
        """The inverse of :meth:`to_json` (``null`` sides read back as ±inf)."""
        lo, hi = d.get("lo"), d.get("hi")
        return cls(estimate=float(d["estimate"]), lo=-math.inf if lo is None else float(lo),
                   hi=math.inf if hi is None else float(hi), level=float(d.get("level", 0.95)),
                   method=str(d.get("method", "")), n=int(d.get("n", 0)), note=str(d.get("note", "")),
                   quantile=None if d.get("quantile") is None else float(d["quantile"]))

    def text(self, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
        """``"[lo, hi] unit (95 %, n=80)"`` with ``-inf``/``+inf`` spelled out as "no lower/upper bound"."""
        def fmt(v: float) -> str:
            return f"{v * scale:.{digits}g}"
        lo = fmt(self.lo) if math.isfinite(self.lo) else "-∞"
        hi = fmt(self.hi) if math.isfinite(self.hi) else "+∞"
        u = f" {unit}" if unit else ""
        out = f"[{lo}, {hi}]{u} ({self.level:.0%}, n={self.n})"
        if not math.isfinite(self.hi) and not math.isfinite(self.lo):
            out += f": n={self.n} bounds neither side at {self.level:.0%}"
        elif not math.isfinite(self.hi):
            out += f": no upper bound at {self.level:.0%}"
        elif not math.isfinite(self.lo):
            out += f": no lower bound at {self.level:.0%}"
        return out


def _as_array(samples: Iterable[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(list(samples) if not isinstance(samples, np.ndarray) else samples, dtype=np.float64)
    return arr[np.isfinite(arr)]


def _binom_log_cdf(n: int, q: float) -> np.ndarray:
    """``log P(B <= k)`` for ``k = 0..n``, ``B ~ Binomial(n, q)``, 0 < q < 1, by the pmf recurrence
    ``pmf(k+1) = pmf(k) · (n-k)/(k+1) · q/(1-q)`` in log space (exact up to rounding for any n)."""
    k = np.arange(n, dtype=np.float64)
    log_pmf = np.empty(n + 1)
    log_pmf[0] = n * math.log1p(-q)
    log_pmf[1:] = log_pmf[0] + np.cumsum(np.log((n - k) / (k + 1.0)) + math.log(q) - math.log1p(-q))
    return np.logaddexp.accumulate(log_pmf)


def order_statistic_ranks(n: int, q: float, level: float = 0.95) -> tuple[int | None, int | None]:
    """1-based ranks ``(l, u)`` of the order statistics ``x_(l) <= ξ_q <= x_(u)`` that bound the ``q``-quantile
    ``ξ_q`` of a continuous distribution with probability ≥ ``level`` from ``n`` iid samples; ``None`` for a side
    ``n`` is too small to bound.

    Distribution-free: the number ``B`` of samples below ``ξ_q`` is Binomial(n, q), and ``x_(l) <= ξ_q`` ⇔
    ``B >= l``, ``x_(u) >= ξ_q`` ⇔ ``B <= u - 1``. Each side gets at most (1 - level)/2 of the miss probability:
    ``l`` is the largest rank with ``P(B <= l-1) <= α/2`` and ``u`` the smallest with ``P(B >= u) <= α/2``
    (Hahn & Meeker, *Statistical Intervals*, Wiley 1991, §5.2; Conover, *Practical Nonparametric Statistics*,
    3rd ed. 1999, §3.2).
    """
    if n <= 0 or not 0.0 < q < 1.0:
        return None, None
    half = (1.0 - level) / 2.0
    log_half = math.log(half)
    log_cdf = _binom_log_cdf(n, q)  # log_cdf[k] = log P(B <= k)
    # lower: largest l in 1..n with P(B <= l-1) <= α/2, i.e. log_cdf[l-1] <= log α/2
    ok_lo = np.nonzero(log_cdf[:n] <= log_half + 1e-12)[0]
    lo_rank = int(ok_lo[-1]) + 1 if ok_lo.size else None
    # upper: smallest u in 1..n with P(B >= u) = 1 - P(B <= u-1) <= α/2
    tail = -np.expm1(log_cdf[:n])  # tail[u-1] = P(B >= u)
    ok_hi = np.nonzero(tail <= half + 1e-12)[0]
    hi_rank = int(ok_hi[0]) + 1 if ok_hi.size else None
    return lo_rank, hi_rank


def min_samples_for_bound(q: float, level: float = 0.95, side: str = "upper") -> int:
    """The fewest samples whose order statistics bound the ``q``-quantile on ``side`` at ``level``: the upper side
    needs ``q**n <= (1-level)/2`` (otherwise all n samples lie below ξ_q too often), the lower side
    ``(1-q)**n <= (1-level)/2``. A p99 at 95 % needs ln(0.025)/ln(0.99) → 368 samples for an upper bound."""
    half = (1.0 - level) / 2.0
    p = q if side == "upper" else 1.0 - q
    n = math.ceil(math.log(half) / math.log(p))
    # guard the rounding at the exact boundary
    while p ** n > half:
        n += 1
    while n > 1 and p ** (n - 1) <= half:
        n -= 1
    return n


def percentile_interval(samples: Iterable[float] | np.ndarray, q: float, level: float = 0.95) -> Interval:
    """The ``q``-quantile (``q`` in (0, 1), or a percentile 1..99) of ``samples`` with its distribution-free
    confidence interval from the order statistics (:func:`order_statistic_ranks`). The estimate is numpy's
    default linear-interpolation percentile, the figure :func:`distribution` reports."""
    if q >= 1.0:
        q = q / 100.0
    arr = np.sort(_as_array(samples))
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, -math.inf, math.inf, level, "order-statistic", 0, "no samples", q)
    est = float(np.percentile(arr, q * 100.0))
    l_rank, u_rank = order_statistic_ranks(n, q, level)
    lo = float(arr[l_rank - 1]) if l_rank is not None else -math.inf
    hi = float(arr[u_rank - 1]) if u_rank is not None else math.inf
    notes = []
    if u_rank is None:
        notes.append(f"p{q * 100:g} from {n} samples: no upper bound at {level:.0%} "
                     f"(needs ≥ {min_samples_for_bound(q, level, 'upper')})")
    if l_rank is None:
        notes.append(f"p{q * 100:g} from {n} samples: no lower bound at {level:.0%} "
                     f"(needs ≥ {min_samples_for_bound(q, level, 'lower')})")
    return Interval(est, lo, hi, level, "order-statistic", n, "; ".join(notes), q)


def _t_pdf(x: float, dof: float) -> float:
    c = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    return math.exp(c - (dof + 1) / 2 * math.log1p(x * x / dof))


def _t_cdf_upper_half(x: float, dof: float) -> float:
    """P(0 <= T <= x) for x >= 0 by composite Simpson on the Student-t density (smooth, so 400 panels give
    ~1e-10 accuracy for the x the quantiles below need)."""
    m = 400
    h = x / m
    s = _t_pdf(0.0, dof) + _t_pdf(x, dof)
    for i in range(1, m):
        s += (4 if i % 2 else 2) * _t_pdf(i * h, dof)
    return s * h / 3.0


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, dof: float) -> float:
    """The ``p``-quantile (p > 0.5) of Student's t with ``dof`` degrees of freedom, by bisection on its CDF
    (numpy has no t distribution and scipy is not a dependency). ``t_quantile(0.975, 9)`` = 2.262. About 18 ms a
    call, and a run asks for the same few (level, dof) pairs over and over: the answers are kept."""
    if dof <= 0:
        return math.inf
    target = p - 0.5
    lo, hi = 0.0, 1.0
    while _t_cdf_upper_half(hi, dof) < target:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_cdf_upper_half(mid, dof) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _t_interval(values: np.ndarray, level: float, method: str, n: int, note: str = "") -> Interval:
    k = int(values.size)
    est = float(values.mean())
    if k < 2:
        return Interval(est, -math.inf, math.inf, level, method, n, note or "fewer than 2 batches")
    se = float(values.std(ddof=1)) / math.sqrt(k)
    half = t_quantile(0.5 + level / 2, k - 1) * se
    return Interval(est, est - half, est + half, level, method, n, note)


#: Batches of the batch-means method: at most this many (Schmeiser 1982, "Batch size effects in the analysis
#: of simulation output", Operations Research 30(3): 10–30 batches lose little efficiency and keep the batch
#: means close to independent and normal).
BATCHES = 20
#: The fewest samples per batch.
MIN_BATCH = 5


def batch_means(values: np.ndarray, batches: int = BATCHES, min_batch: int = MIN_BATCH) -> np.ndarray:
    """Means of ``k`` contiguous, equal batches of ``values`` (in their time order); ``k = min(batches,
    n // min_batch)``, at least 1; leftover samples at the end are dropped."""
    n = int(values.size)
    k = max(1, min(batches, n // min_batch))
    size = n // k
    return values[: k * size].reshape(k, size).mean(axis=1)


def mean_interval(samples: Iterable[float] | np.ndarray, level: float = 0.95, method: str = "batch-means",
                  *, seed: int = 0, resamples: int = 2000) -> Interval:
    """The mean of ``samples`` with its confidence interval.

    ``"batch-means"`` (the default): the samples, in time order, are cut into up to :data:`BATCHES` contiguous
    batches and a Student-t interval is taken over the batch means, so serial correlation between neighbouring
    requests (which share the server's batch) widens the interval instead of being ignored (Law & Kelton,
    *Simulation Modeling and Analysis*, §9.5.3). ``"bootstrap"``: the percentile bootstrap over iid resamples
    (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13), seeded. ``"repeats"``: each sample is
    one independent repeat's estimate; a Student-t interval over them.
    """
    arr = _as_array(samples)
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, -math.inf, math.inf, level, method, 0, "no samples")
    if method == "batch-means":
        bm = batch_means(arr)
        return _t_interval(bm, level, method, n, f"{bm.size} batches of {n // bm.size}")
    if method == "repeats":
        return _t_interval(arr, level, method, n, f"{n} repeats")
    if method == "bootstrap":
        est = float(arr.mean())
        if n < 2:
            return Interval(est, -math.inf, math.inf, level, method, n, "fewer than 2 samples")
        rng = np.random.default_rng(seed)
        means = rng.choice(arr, size=(resamples, n), replace=True).mean(axis=1) if n * resamples <= 4_000_000 \
            else np.array([rng.choice(arr, size=n).mean() for _ in range(resamples)])
        a = (1.0 - level) / 2
        lo, hi = np.quantile(means, [a, 1 - a])
        return Interval(est, float(lo), float(hi), level, method, n, f"{resamples} resamples")
    raise ValueError(f"unknown interval method {method!r}; one of {INTERVAL_METHODS}")


def rate_interval(event_times_s: Iterable[float] | np.ndarray, window_s: tuple[float, float], level: float = 0.95,
                  *, weights: Iterable[float] | np.ndarray | None = None, batches: int = BATCHES) -> Interval:
    """Events (or ``weights`` per event, e.g. tokens per chunk) per second over ``window_s = (start, end)``, with
    a batch-means interval over ``batches`` equal sub-windows: the estimate is the total in the window over its
    length, the interval a Student-t interval over the sub-windows' rates. ``n`` is the number of events."""
    t = np.asarray(list(event_times_s) if not isinstance(event_times_s, np.ndarray) else event_times_s,
                   dtype=np.float64)
    w = np.ones_like(t) if weights is None else np.asarray(
        list(weights) if not isinstance(weights, np.ndarray) else weights, dtype=np.float64)
    start, end = window_s
    span = end - start
    inside = (t >= start) & (t <= end)
    t, w = t[inside], w[inside]
    n = int(t.size)
    if span <= 0:
        return Interval(math.nan, -math.inf, math.inf, level, "batch-means", n, "empty window")
    est = float(w.sum()) / span
    k = max(1, min(batches, n // MIN_BATCH))
    if k < 2:
        return Interval(est, -math.inf, math.inf, level, "batch-means", n, "too few events for sub-windows")
    idx = np.minimum(((t - start) / span * k).astype(np.int64), k - 1)
    rates = np.bincount(idx, weights=w, minlength=k) / (span / k)
    iv = _t_interval(rates, level, "batch-means", n, f"{k} sub-windows of {span / k:.3g} s")
    return replace(iv, estimate=est)


def requests_to_decide(interval: Interval, bound: float, samples_n: int,
                       samples: Iterable[float] | np.ndarray | None = None) -> int | None:
    """How many more requests (beyond ``samples_n``, the requests behind ``interval``) would shrink ``interval``
    off ``bound``, assuming the estimate stays where it is; 0 when the bound is already outside, ``None`` when no
    number of requests would (the estimate sits on the bound, or nothing is known).

    Means, throughputs and repeats (``batch-means``/``bootstrap``/``repeats``): the half-width on the bound's
    side scales as 1/√n, so n must grow by ``(half-width / |estimate − bound|)²``. Percentiles
    (``order-statistic``): with ``samples`` given, the fraction ``p_b`` of samples at or below the bound stands
    for F(bound), and the bound leaves the interval once the order-statistic rank bounding that side passes it:
    by the normal approximation to the binomial, ``n ≥ (z·√(q(1−q)) / (p_b − q))²``; without samples the 1/√n
    rule on the finite side is used. Either way a side that is unbounded first needs
    :func:`min_samples_for_bound` samples. Samples per request (token gaps for ITL) are taken as
    ``interval.n / samples_n``.
    """
    if not interval.straddles(bound):
        return 0
    est = interval.estimate
    if samples_n <= 0 or interval.n <= 0 or not math.isfinite(est) or est == bound:
        return None
    per_request = interval.n / samples_n
    upper_side = bound > est
    half = (interval.hi - est) if upper_side else (est - interval.lo)
    dist = abs(bound - est)
    need_n: float | None = None
    if interval.method == "order-statistic":
        q = interval.quantile
        if q is not None and samples is not None:
            arr = _as_array(samples)
            if arr.size:
                p_b = float(np.mean(arr <= bound))
                if p_b != q:
                    z = _z(interval.level)
                    need_n = (z * math.sqrt(q * (1 - q)) / abs(p_b - q)) ** 2 + 1.0
        if need_n is None and math.isfinite(half) and half > 0:
            need_n = interval.n * (half / dist) ** 2
        if q is not None:
            floor_n = min_samples_for_bound(q, interval.level, "upper" if upper_side else "lower")
            need_n = max(need_n or 0.0, float(floor_n))
    elif math.isfinite(half) and half > 0:
        need_n = interval.n * (half / dist) ** 2
    if need_n is None or not math.isfinite(need_n):
        return None
    more = math.ceil(need_n / per_request - samples_n)
    return max(1, more)


def _z(level: float) -> float:
    """The standard normal (1+level)/2 quantile, by bisection on erf."""
    target = 0.5 + level / 2
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2



# --------------------------------------------------------------------------------------------------------------
# Steady state: which part of a point's measurement is the load it was meant to be
# --------------------------------------------------------------------------------------------------------------

#: Batch size of the MSER-5 truncation rule (White 1997; White, Cobb & Spratt 2000).
MSER_BATCH = 5
#: Steady-window detection modes (``sweep.steady_state``): ``detect`` measures the warm-up and drain of each point
#: (:func:`steady_window`); ``off`` takes the whole measurement window, as before this option existed.
STEADY_MODES: tuple[str, ...] = ("detect", "off")


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

    def to_json(self, origin_s: float) -> dict[str, Any]:
        return {"method": self.method, "start_offset_s": self.start_s - origin_s, "end_offset_s": self.end_s - origin_s,
                "requests": len(self.indices), "dropped_warmup": self.dropped_warmup,
                "dropped_drain": self.dropped_drain, "reason": self.reason}


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
        events = sorted([(r.sent_s, 1) for r in measured if r.sent_s is not None]
                        + [(r.end_s, -1) for r in measured if r.end_s is not None], key=lambda e: (e[0], -e[1]))
        level, t_full = 0, None
        for t, step in events:
            level += step
            if level >= concurrency:
                t_full = t
                break
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


def steady_statistics(records: Sequence[RequestRecord], window: SteadyWindow, level: float = 0.95
                      ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The point's figures over its steady window (``client.steady``) and each one's interval at ``level``
    (``client.intervals``, keyed like :data:`INTERVAL_FIGURES`, in the figure's own unit: ms for ``*_ms``).

    Percentiles get distribution-free order-statistic intervals, means batch-means intervals over the requests
    in send order, throughputs batch-means intervals over sub-windows of the steady window. ITL pools every
    token gap of the window's requests (its ``n`` counts gaps, ``requests`` the requests behind them)."""
    keep = set(window.indices)
    rs = sorted((r for r in records if r.index in keep and r.in_sample), key=lambda r: r.sent_s or 0.0)
    per_metric: dict[str, list[float]] = {"ttft_ms": [], "tpot_ms": [], "itl_ms": [], "e2e_ms": [],
                                          "per_request_output_tok_s": []}
    for r in rs:
        n_out = _output_tokens(r)
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
        iv = mean_interval(values, level)
        intervals[f"{name}.mean"] = {**iv.to_json(), "requests": len(rs)}
        for p in PERCENTILES:
            iv = percentile_interval(values, p / 100.0, level)
            intervals[f"{name}.p{p}"] = {**iv.to_json(), "requests": len(rs)}
    span = (window.start_s, window.end_s)
    chunk_t: list[float] = []
    chunk_w: list[float] = []
    chunk_total_w: list[float] = []
    done_t: list[float] = []
    for r in (r for r in records if r.in_sample and r.ok):
        n_out = _output_tokens(r)
        if r.chunk_times_s:
            per = n_out / len(r.chunk_times_s)
            # prompt tokens counted at the first chunk (prefill done), output tokens at their chunk
            for j, t in enumerate(r.chunk_times_s):
                chunk_t.append(t)
                chunk_w.append(per)
                chunk_total_w.append(per + (_prompt_tokens(r) if j == 0 else 0))
        if r.end_s is not None:
            done_t.append(r.end_s)
    for key, times, weights in (("output_throughput_tok_s", chunk_t, chunk_w),
                                ("total_throughput_tok_s", chunk_t, chunk_total_w),
                                ("request_throughput_req_s", done_t, None)):
        iv = rate_interval(times, span, level, weights=weights)
        steady[key] = iv.estimate if math.isfinite(iv.estimate) else None
        if math.isfinite(iv.estimate):
            intervals[key] = {**iv.to_json(), "requests": len(rs)}
    return steady, intervals


def steady_summary(records: Sequence[RequestRecord], window_start_s: float, *, concurrency: int | None = None,
                   method: str = "detect", level: float = 0.95) -> dict[str, Any]:
    """``{"steady_window", "steady", "intervals"}``: the keys :func:`summarize` adds to a point's ``client``."""
    win = steady_window(records, window_start_s, concurrency=concurrency, method=method)
    steady, intervals = steady_statistics(records, win, level)
    return {"steady_window": win.to_json(window_start_s), "steady": steady, "intervals": intervals}


def _mean_leaves(objs: Sequence[Any]) -> Any:
    """The element-wise mean of JSON-like values of the same shape: numbers are averaged (``None`` when any is
    missing), dicts key by key, anything else is the first one's."""
    first = objs[0]
    if isinstance(first, dict):
        return {k: _mean_leaves([o.get(k) if isinstance(o, dict) else None for o in objs]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        if any(o is None or isinstance(o, bool) or not isinstance(o, (int, float)) for o in objs):
            return None
        m = float(np.mean([float(o) for o in objs]))
        return int(round(m)) if all(isinstance(o, int) for o in objs) and m == int(m) else m
    return first


def next_run_interval(values: Sequence[float], level: float = 0.95, next_repeats: int | None = None
                      ) -> tuple[float, float]:
    """Where the next run's value should land, from ``values`` (one per repeat): the normal-theory prediction
    interval for the mean of ``next_repeats`` fresh repeats (default as many as ``values``),
    ``x̄ ± t(k−1) · s · √(1/k + 1/m)`` for k repeats now and m next. Unlike the confidence interval of the mean,
    which covers the *true* value at ``level`` but the next run's only ~83 % of the time (that run has its own
    error), it covers the next run's value at ``level`` when the runs are exchangeable (Hahn & Meeker,
    *Statistical Intervals*, §4.6). Infinite with fewer than 2 values."""
    x = np.asarray([float(v) for v in values], dtype=float)
    k = int(x.size)
    if k < 2:
        return -math.inf, math.inf
    m = k if next_repeats is None else int(next_repeats)
    half = t_quantile(0.5 + level / 2, k - 1) * float(x.std(ddof=1)) * math.sqrt(1.0 / k + 1.0 / m)
    return float(x.mean()) - half, float(x.mean()) + half


def combine_repeats(clients: Sequence[dict[str, Any]], level: float = 0.95) -> dict[str, Any]:
    """One ``client`` object from the ``client`` objects of ``sweep.repeats`` runs of one point: every figure is
    the mean over the repeats; each figure of :data:`INTERVAL_FIGURES` gets a Student-t interval over the repeats'
    steady-window values (``method: repeats``, ``n`` = repeats, ``requests`` = the requests behind them all),
    which replaces the within-run interval (it holds the run-to-run spread too), with ``next_lo``/``next_hi``
    where a rerun of as many repeats should land (:func:`next_run_interval`); ``repeats`` keeps every repeat's
    own object. ``completed``/``failed`` are summed."""
    if len(clients) == 1:
        return dict(clients[0])
    out = _mean_leaves([{k: v for k, v in c.items() if k not in ("repeats", "intervals", "steady_window")}
                        for c in clients])
    out["completed"] = sum(int(c.get("completed") or 0) for c in clients)
    out["failed"] = sum(int(c.get("failed") or 0) for c in clients)
    requests = sum(int((c.get("steady") or {}).get("completed") or 0) for c in clients)
    intervals: dict[str, dict[str, Any]] = {}
    for key in INTERVAL_FIGURES:
        vals = []
        for c in clients:
            v: Any = c.get("steady") or c
            for part in key.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            vals.append(v)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            iv = mean_interval([float(v) for v in vals], level, method="repeats")
            nlo, nhi = next_run_interval([float(v) for v in vals], level)
            intervals[key] = {**iv.to_json(), "requests": requests,  # and where a rerun of as many repeats lands
                              "next_lo": nlo if math.isfinite(nlo) else None,
                              "next_hi": nhi if math.isfinite(nhi) else None}
    out["intervals"] = intervals
    out["steady_window"] = {"method": "repeats", "repeats": len(clients),
                            "windows": [c.get("steady_window") for c in clients]}
    out["repeats"] = [dict(c) for c in clients]
    return out
