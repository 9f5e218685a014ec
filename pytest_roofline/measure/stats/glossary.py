"""The metric glossary: every client metric defined once (:data:`GLOSSARY`, the words the README and the HTML
report print verbatim), and the rules every figure shares: a distribution's statistics (:func:`distribution`) and
a request's token counts.

This module never imports pytest.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pytest_roofline.measure.loadgen import RequestRecord

__all__ = ["GLOSSARY", "PERCENTILES", "distribution", "output_tokens", "prompt_tokens"]

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
    "held_mean_in_flight": (
        "Closed loop only: the time-averaged number of measured requests in flight from the moment their count "
        "first reached the concurrency to the last measured send (null when it never reached it). Below 90% of "
        "the concurrency the point is flagged 'concurrency not held' and a pass or fail resting on it is "
        "inconclusive (except littles_law_ratio, the check of exactly this); the fill before it is left to the "
        "steady window."
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
        "Little's law, L = λ·W, as the check that a closed loop held its concurrency C (the Day-3 notebook's "
        "req/s × mean latency = C): held_lambda_req_s (λ) is the requests in flight inside the held window (from the "
        "moment C were first in flight to the last measured send; held_window_s long) ÷ its length, held_W_s (W) "
        "their mean time inside it, held_requests how many; ratio = held_lambda_W ÷ C (L_configured). A "
        "load generator slow to send the next request reads the share of C it held, and the drain after the last "
        "send (the last requests finishing with fewer in flight, an adaptive stop's) is outside the window. null "
        "when no request was sent after C were first in flight. L (mean_in_flight), lambda_req_s, W_s and lambda_W "
        "are the whole run's, kept as bookkeeping: over that window L equals λ·W by construction. In an open loop "
        "ratio is λ·W ÷ L over the whole run, that bookkeeping check (an open loop fixes λ, not L; only failed "
        "requests and time after a response's last token move it)."
    ),
    "token_count_mismatches": (
        "Completed requests whose server-reported usage differs from what was requested: prompt_tokens ≠ "
        "input_len or completion_tokens ≠ output_len, or no usage reported at all. Non-zero means the "
        "workload was not the one the prediction assumed (for example a BOS token added to token-id "
        "prompts, or EOS honoured)."
    ),
    "goodput": (
        "Two figures. vLLM's `request_goodput` (`vllm bench serve --goodput ttft:… tpot:… e2el:…`): the completed "
        "requests that met every service-level objective ÷ the run's duration (req/s; a value equal to its SLO "
        "meets it, a request with one output token has TPOT 0). A run whose file has an slo: section records it "
        "at every point as client.goodput by that rule, the `request_goodput` quantity: slo_ms (the SLOs used), "
        "good, completed, req_s (= request throughput × good ÷ completed) and its 95% interval, the good share's "
        "Wilson score interval × the request throughput; a replay under other SLOs recomputes it from the point's "
        "requests file, and a replayed vllm bench serve file keeps vLLM's. The `goodput` quantity is a different "
        "reading, of the whole sweep: the best output throughput (tok/s) among the closed-loop points whose TTFT "
        "and TPOT at the chosen percentile meet their SLOs, judged by each percentile's 95% interval (undecided: "
        "inconclusive). At a point meeting both at quantile q, vLLM's request_goodput is at least (2q − 1) × the "
        "request throughput."
    ),
    "steady_window": (
        "The part of the measurement window a point's steady_intervals are computed over, found by measurement: the "
        "warm-up ends when the requests in flight first reach the target concurrency (closed loop) and the TTFT "
        "series in send order stops trending by the MSER-5 truncation rule (White 1997); the drain starts at the "
        "last measured send. Its requests are those sent inside it that finished before the drain; the results "
        "file records where it lies, how many requests it dropped at each end, and why. With "
        "sweep.steady_state: off it is the whole measurement window. It may leave out at most 25% of the point's "
        "completed requests, and needs at least 20: otherwise the point has no steady state (method none, with the "
        "reason) and its steady figures are the whole run's."
    ),
    "steady": (
        "The point's figures over its steady window (TTFT, TPOT, ITL, E2E distributions, throughputs): the values "
        "a prediction with window: steady is scored on. A prediction without it is scored on the whole run, the "
        "figures vllm bench serve prints."
    ),
    "steady_intervals": (
        "Each figure's 95% confidence interval over the steady window (the same methods as intervals): what a "
        "prediction with window: steady is scored on."
    ),
    "intervals_window": (
        "Which window intervals covers: run, the whole measurement window (since issue 20). A results file "
        "without it holds steady-window intervals under intervals."
    ),
    "bursts": (
        "Tokens delivered several per read: requests whose output tokens arrived at fewer than half as many "
        "distinct times (gaps under 0.1 ms are one arrival), of the completed requests, their share, and the "
        "zero gaps among all token gaps. At 10% of the requests or more the point carries a flag, and every "
        "verdict at it says that TPOT and ITL time the delivery of the stream, not the engine's step."
    ),
    "intervals": (
        "Each figure's 95% confidence interval over the whole measurement window (the figure a verdict is scored "
        "on, as vllm bench serve reports it), with the number of samples (n) and requests behind it: "
        "distribution-free order-statistic intervals for percentiles (the binomial "
        "distribution of the order statistics), batch-means Student-t intervals for means (up to 20 contiguous "
        "batches, so correlated neighbours widen it; clipped at 0). The three throughputs share one interval, from "
        "the completed requests (what vLLM's throughputs count), so they are exact multiples where lengths are "
        "fixed: in a closed loop a ratio (delta-method) interval over up to 20 batches of whole rounds of C "
        "completions; an open loop and a point with fewer than 3 rounds get the count interval estimate x (1 +- "
        "1.96/sqrt(N)) for N completions; clipped at 0; an open loop that sent its N requests over exactly N / rate "
        "(arrival_span: fixed) gets, over the whole run, the percentile interval of the throughput with the last "
        "quarter of its requests' latencies resampled onto their sends (fixed-span: the window's end is the random "
        "part). Within-run: the run-to-run spread is sweep.repeats' and "
        "drift's to measure. A side that n samples "
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


def output_tokens(r: RequestRecord) -> int:
    """A request's output tokens: the usage count the engine reported, else the token chunks received."""
    return r.completion_tokens if r.completion_tokens is not None else len(r.chunk_times_s)


def prompt_tokens(r: RequestRecord) -> int:
    """A request's prompt tokens: the usage count the engine reported, else the length it was sent with."""
    return r.prompt_tokens if r.prompt_tokens is not None else r.input_len
