""":func:`run_load`: plan the phases of a run, drive the event loop through them, assemble the result.

:func:`run_part` runs one process's share of a run (all of it when ``processes == 1``);
:mod:`~pytest_roofline.measure.loadgen._multiproc` runs N of them in worker processes and merges them."""

from __future__ import annotations

import gc
import ssl
import time
from collections.abc import Callable

import numpy as np

from pytest_roofline.measure.loadgen import _multiproc
from pytest_roofline.measure.loadgen._loop import EventLoop, Phase, clock_offset_ns
from pytest_roofline.measure.loadgen._multiproc import Part
from pytest_roofline.measure.loadgen._prompts import arrival_offsets
from pytest_roofline.measure.loadgen._records import LoadResult, LoadSpec, Progress
from pytest_roofline.quantities.measurement import PointMode, StopCheck, TimestampSource

__all__ = ["run_load", "run_part"]

perf_counter = time.perf_counter
WHOLE = Part(0, 1)


def _plan(loop: EventLoop, spec: LoadSpec, part: Part = WHOLE) -> list[Phase]:
    """Build the phases of ``part``'s share of the run and pre-serialise their requests.

    Part k of n takes the requests whose run index is k modulo n (so prompts and request ids are those of
    the one-process run), its share of the closed loop's streams, and in an open loop every n-th arrival of
    the one seeded schedule (offsets unchanged).  Every part has the same phases, so they can start together.
    """
    phases: list[Phase] = []
    w = spec.warmup_requests
    k, n = part.k, part.n
    cap_open = part.share(spec.concurrency) if spec.concurrency else 10**9
    streams = part.share(spec.concurrency or 1)
    if w:
        ph = Phase("warmup", True)
        warm = range(k, w, n)
        ph.total = len(warm)
        ph.reqs = loop.build_many(warm, True)
        ph.next_index = w
        ph.stride = n
        if spec.mode == PointMode.CLOSED:
            ph.cap = min(streams, len(warm))
        else:
            ph.schedule = arrival_offsets(spec, w, warmup=True)[k::n]
            ph.cap = cap_open
        phases.append(ph)
    ph = Phase("measure", False)
    ph.stride = n
    if spec.mode == PointMode.CLOSED:
        ph.cap = streams
        ph.total = part.share(spec.num_requests) if spec.num_requests is not None else None
        ph.duration = spec.duration_s
        count = ph.total if ph.total is not None else max(4 * ph.cap, 256)
    else:
        ph.schedule = arrival_offsets(spec)[k::n]
        ph.cap = cap_open
        ph.total = count = len(ph.schedule)
    ph.reqs = loop.build_many(range(w + k, w + k + n * count, n), False)
    ph.next_index = w + k + n * count
    phases.append(ph)
    return phases


def _wait_until(t: float) -> None:
    """Sleep, then spin the last 2 ms, until ``perf_counter() >= t``."""
    while (left := t - perf_counter()) > 0.002:
        time.sleep(left - 0.002)
    while perf_counter() < t:
        pass


def run_load(
    base_url: str,
    spec: LoadSpec,
    *,
    api_key: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    tls: ssl.SSLContext | None = None,
    stop_check: StopCheck | None = None,
) -> LoadResult:
    """Offer the load described by ``spec`` to ``base_url`` and record every request.

    Args:
        base_url: the server root (``http://host:port`` or ``https://...``) or its ``/v1`` URL; requests go
            to ``/v1/completions`` (``/v1/chat/completions`` when ``spec.api == "chat"``).
        spec: the load to offer (validated first).
        api_key: sent as ``Authorization: Bearer <key>``; never stored in records, errors or reprs.
        on_progress: optional callback receiving :class:`Progress`, called from the running thread.
        tls: the TLS context of an ``https`` URL (default: :func:`tls_context`, certificates verified).
        stop_check: ends the measurement early (``measure.plan.stopping.AdaptiveStop``): ``wants_look(completed,
            elapsed_s)`` is asked every 0.1 s; when it says yes it is called with the finished measured records,
            the window ``(measure start, oldest in-flight send)`` and the elapsed seconds, and a reason it returns
            stops the run: nothing more is sent, requests in flight finish and are recorded, an open loop's due
            but unsent requests are dropped. One process only (``spec.processes`` must resolve to 1).

    Returns:
        A :class:`LoadResult` with one record per request that was sent (warm-up first).

    Raises:
        ValueError: invalid spec.
        LoadgenError: the server could not be reached at the start of the run, or (``spec.processes > 1``)
            a worker process failed or died: the error names it.

    The run blocks the calling thread (one epoll loop, no threads) and pauses the cyclic garbage collector
    while it runs.  If connections keep being refused mid-run the run stops early and
    ``LoadResult.aborted`` says why.  With ``spec.processes`` > 1 (or ``"auto"`` resolving to more than one)
    the calling thread waits for N worker processes instead, each running its share (``_multiproc``).
    """
    spec.validate()
    n = _multiproc.resolve_processes(spec)
    if n > 1 and stop_check is not None:
        raise ValueError(f"stop_check needs a one-process load generator (spec.processes resolves to {n})")
    if n > 1:
        return _multiproc.run_processes(run_part, base_url, spec, n, api_key=api_key, on_progress=on_progress,
                                        tls=tls)
    return run_part(base_url, spec, api_key=api_key, on_progress=on_progress, tls=tls, stop_check=stop_check)[0]


def run_part(
    base_url: str,
    spec: LoadSpec,
    *,
    api_key: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    tls: ssl.SSLContext | None = None,
    part: Part = WHOLE,
    sync: Callable[[str], float] | None = None,
    rid_nonce: str | None = None,
    stop_check: StopCheck | None = None,
) -> tuple[LoadResult, bytes]:
    """Run ``part``'s share of ``spec`` in this thread: the result (records with their run-wide indices) and
    the raw read lags (int64 ns) for pooling.  ``sync(phase_name)`` is called before each phase and returns
    the shared ``perf_counter`` time it starts at (the barrier of a multi-process run); ``rid_nonce``
    replaces the random part of the request ids' prefix (every worker of a run uses the parent's, so the
    ids are those of one run)."""
    spec.validate()
    loop = EventLoop(base_url, spec, api_key, on_progress, tls)
    loop.stop_check = stop_check
    if rid_nonce is not None:
        loop._rid_prefix = f"{loop._rid_prefix.rsplit('-', 1)[0]}-{rid_nonce}"
    gc_was_enabled = gc.isenabled()
    try:
        phases = _plan(loop, spec, part)
        measure = phases[-1]
        if spec.mode == PointMode.CLOSED:
            loop.phase.cap = max(1, measure.cap)
            loop.preconnect(max(1, measure.cap))
        else:
            loop.phase.cap = 32
            loop.preconnect(min(measure.cap, 32, max(1, measure.total or 1)))
        if gc_was_enabled:
            gc.collect()
            gc.disable()
        perf_anchor = perf_counter()
        wall_anchor = time.time()
        run_start = perf_counter()
        for ph in phases:
            if ph is measure:
                loop.finalize_all()
            if sync is not None:
                ph.start_at = sync(ph.name)
                _wait_until(ph.start_at)
            loop.run_phase(ph)
            if loop.aborted is not None:
                break
        run_end = perf_counter()
        loop.offset_ns_end = clock_offset_ns()
        loop.t_offset1 = time.perf_counter_ns()
        loop.finalize_all()
    except BaseException as exc:
        if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM: the requests that finished before it, for the caller
            exc.partial_records = [loop.records[i] for i in sorted(loop.records)]  # type: ignore[attr-defined]
        raise
    finally:
        loop.close()
        if gc_was_enabled:
            gc.enable()
    records = [loop.records[i] for i in sorted(loop.records)]
    kernel_reads = len(loop.read_lag)
    source: TimestampSource
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
    ), loop.read_lag.tobytes()
