"""The client summary of one point: a :class:`~pytest_roofline.measure.loadgen.LoadResult` → the ``client`` object
of a results-file point (docs/results-schema.md), and the load generator's self-checks (``loadgen``).

This module never imports pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_roofline.measure.loadgen import LoadResult, RequestRecord
from pytest_roofline.measure.stats.bursts import bursts
from pytest_roofline.measure.stats.glossary import distribution, output_tokens, prompt_tokens
from pytest_roofline.measure.stats.held import held_in_flight, held_littles_law
from pytest_roofline.measure.stats.steady import steady_summary
from pytest_roofline.model import workload as _workload
from pytest_roofline.quantities.measurement import PointMode

__all__ = ["summarize", "summarize_records", "measurement_window_s", "measured_duration_s",
           "failure_reasons", "loadgen_checks"]


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

    out_tok = [output_tokens(r) for r in completed]
    prompt_tok = [prompt_tokens(r) for r in completed]
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
        "bursts": bursts(completed),  # tokens delivered several per read (measure.stats.bursts)
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
        result.records, result.measure_start_s, open_loop=result.spec.mode == PointMode.OPEN
    )
    if result.spec.mode == PointMode.CLOSED and result.spec.concurrency:
        c = result.spec.concurrency
        out["held_mean_in_flight"] = held_in_flight(result.records, c)
        # Little's law as the check that the loop held C: λ·W over the held window ÷ C
        # (quantities.littles.littles_reading);
        # ``ratio`` is that reading (None without a held window), ``L`` stays the client's whole-run in flight
        held: dict[str, Any] = held_littles_law(result.records, c) or {"held_lambda_W": None, "held_requests": 0}
        lam_w = held["held_lambda_W"]
        out["littles_law"] = {**out["littles_law"], "L_configured": float(c), **held,
                              "ratio": lam_w / c if lam_w is not None else None}
    if steady_state is not None:
        out.update(steady_summary(result.records, result.measure_start_s, method=steady_state, level=level,
                                  concurrency=(result.spec.concurrency if result.spec.mode == PointMode.CLOSED
                                               else None), fixed_span=sent_on_fixed_span(result)))
    return out


def sent_on_fixed_span(result: LoadResult) -> bool:
    """Whether an open-loop run sent every one of its ``num_requests`` on a fixed span (``arrival_span: fixed``,
    model/workload.py ``fixed_span_applies``): then its sends span N ÷ rate exactly, and its throughputs take
    :func:`~pytest_roofline.measure.stats.intervals.fixed_span_rate_interval`. A run stopped early (an adaptive
    point, a duration limit) sent fewer: its span is not fixed."""
    spec = result.spec
    if spec.mode != PointMode.OPEN or spec.arrival_span != "fixed":
        return False
    if not _workload.fixed_span_applies(count=spec.num_requests, ramp_up=spec.ramp_up):
        return False
    return sum(1 for r in result.records if not r.warmup) == spec.num_requests


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
