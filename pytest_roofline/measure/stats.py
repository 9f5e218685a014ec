"""The metric glossary and the per-point client statistics.

:data:`GLOSSARY` defines every client metric once; the README and the HTML report print it verbatim.
:func:`summarize` turns a :class:`~pytest_roofline.measure.loadgen.LoadResult` into the ``client`` object of a
results-file point (docs/results-schema.md).

This module never imports pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from pytest_roofline.measure.loadgen import LoadResult, RequestRecord

__all__ = ["GLOSSARY", "PERCENTILES", "distribution", "summarize", "summarize_records", "measurement_window_s",
           "measured_duration_s", "failure_reasons", "loadgen_checks"]

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
        ends = [r.end_s for r in records if not r.warmup and r.end_s is not None]
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
    measured = [r for r in records if not r.warmup]
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


def summarize(result: LoadResult) -> dict[str, Any]:
    """The ``client`` object of a results-file point for one :func:`~pytest_roofline.measure.loadgen.run_load` run.

    The window starts at ``result.measure_start_s`` and ends with the last measured request.
    """
    return summarize_records(
        result.records, result.measure_start_s, open_loop=result.spec.mode == "open"
    )


def failure_reasons(records: Sequence[RequestRecord], *, limit: int = 3, width: int = 200) -> list[tuple[str, int]]:
    """The first ``limit`` distinct reasons requests failed, each with how many failed for it, in the order first
    seen (warm-up included). A reason is the request's error text cut to ``width`` characters."""
    seen: dict[str, int] = {}
    for r in records:
        if r.ok:
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
    measurement window's start relative to the run's start."""
    return {
        "timestamp_source": result.timestamp_source,
        "read_lag_ms": result.read_lag_ms,
        "coalesced_chunks": result.coalesced_chunks,
        "clock_offset_drift_ns": result.clock_offset_drift_ns,
        "measure_start_offset_s": result.measure_start_s - result.run_start_s,
        "request_timeout_s": result.spec.request_timeout_s,
        "aborted": result.aborted,
    }
