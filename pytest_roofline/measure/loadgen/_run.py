""":func:`run_load`: plan the phases of a run, drive the event loop through them, assemble the result."""

from __future__ import annotations

import gc
import ssl
import time
from collections.abc import Callable

import numpy as np

from pytest_roofline.measure.loadgen._loop import EventLoop, Phase, clock_offset_ns
from pytest_roofline.measure.loadgen._prompts import arrival_offsets
from pytest_roofline.measure.loadgen._records import LoadResult, LoadSpec, Progress

__all__ = ["run_load"]

perf_counter = time.perf_counter


def _plan(loop: EventLoop, spec: LoadSpec) -> list[Phase]:
    """Build the phases and pre-serialise their requests."""
    phases: list[Phase] = []
    w = spec.warmup_requests
    cap_open = spec.concurrency or 10**9
    if w:
        ph = Phase("warmup", True)
        ph.total = w
        ph.reqs = loop.build_many(range(w), True)
        ph.next_index = w
        if spec.mode == "closed":
            ph.cap = min(spec.concurrency or 1, w)
        else:
            ph.schedule = arrival_offsets(spec, w, warmup=True)
            ph.cap = cap_open
        phases.append(ph)
    ph = Phase("measure", False)
    if spec.mode == "closed":
        ph.cap = spec.concurrency or 1
        ph.total = spec.num_requests
        ph.duration = spec.duration_s
        n = spec.num_requests if spec.num_requests is not None else max(4 * ph.cap, 256)
    else:
        ph.schedule = arrival_offsets(spec)
        ph.cap = cap_open
        ph.total = len(ph.schedule)
        n = ph.total
    ph.reqs = loop.build_many(range(w, w + n), False)
    ph.next_index = w + n
    phases.append(ph)
    return phases


def run_load(
    base_url: str,
    spec: LoadSpec,
    *,
    api_key: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    tls: ssl.SSLContext | None = None,
) -> LoadResult:
    """Offer the load described by ``spec`` to ``base_url`` and record every request.

    Args:
        base_url: the server root (``http://host:port`` or ``https://...``) or its ``/v1`` URL; requests go
            to ``/v1/completions`` (``/v1/chat/completions`` when ``spec.api == "chat"``).
        spec: the load to offer (validated first).
        api_key: sent as ``Authorization: Bearer <key>``; never stored in records, errors or reprs.
        on_progress: optional callback receiving :class:`Progress`, called from the running thread.
        tls: the TLS context of an ``https`` URL (default: :func:`tls_context`, certificates verified).

    Returns:
        A :class:`LoadResult` with one record per request that was sent (warm-up first).

    Raises:
        ValueError: invalid spec.
        LoadgenError: the server could not be reached at the start of the run.

    The run blocks the calling thread (one epoll loop, no threads) and pauses the cyclic garbage collector
    while it runs.  If connections keep being refused mid-run the run stops early and
    ``LoadResult.aborted`` says why.
    """
    spec.validate()
    loop = EventLoop(base_url, spec, api_key, on_progress, tls)
    gc_was_enabled = gc.isenabled()
    try:
        phases = _plan(loop, spec)
        measure = phases[-1]
        if spec.mode == "closed":
            loop.phase.cap = spec.concurrency or 1
            loop.preconnect(spec.concurrency or 1)
        else:
            loop.phase.cap = 32
            loop.preconnect(min(spec.concurrency or 32, 32, max(1, measure.total or 1)))
        if gc_was_enabled:
            gc.collect()
            gc.disable()
        perf_anchor = perf_counter()
        wall_anchor = time.time()
        run_start = perf_counter()
        for ph in phases:
            if ph is measure:
                loop.finalize_all()
            loop.run_phase(ph)
            if loop.aborted is not None:
                break
        run_end = perf_counter()
        loop.offset_ns_end = clock_offset_ns()
        loop.t_offset1 = time.perf_counter_ns()
        loop.finalize_all()
    finally:
        loop.close()
        if gc_was_enabled:
            gc.enable()
    records = [loop.records[i] for i in sorted(loop.records)]
    kernel_reads = len(loop.read_lag)
    if kernel_reads and loop.ts_user_reads:
        source = "mixed"
    elif kernel_reads:
        source = "kernel"
    else:
        source = "user"
    lag = None
    if len(loop.read_lag):
        arr = np.frombuffer(loop.read_lag, dtype=np.int64).astype(np.float64) / 1e6
        lag = {"p50": float(np.percentile(arr, 50)), "p99": float(np.percentile(arr, 99)),
               "max": float(arr.max())}
    return LoadResult(
        spec=spec, records=records, run_start_s=run_start, measure_start_s=measure.start or run_start,
        run_end_s=run_end, wall_anchor=wall_anchor, perf_anchor_s=perf_anchor, timestamp_source=source,
        clock_offset_drift_ns=int(loop.offset_ns_end - loop.offset_ns), read_lag_ms=lag, url=loop.url,
        aborted=loop.aborted, coalesced_chunks=loop.coalesced,
    )
