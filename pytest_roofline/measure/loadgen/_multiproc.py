"""The load generator over several client processes, for loads one client core cannot feed.

:func:`run_processes` starts N worker processes (``multiprocessing`` with the ``spawn`` start method: a fresh
interpreter each, nothing inherited from the caller's sockets, epoll or threads), each running the ordinary
single-core epoll loop (``_run.run_part``) on its :class:`Part` of the run, and merges their records into one
:class:`~pytest_roofline.measure.loadgen.LoadResult`:

* **the split.** Worker k of n takes the requests whose run index is k modulo n: a closed loop's streams are
  dealt out (``Part.share``), an open loop's one seeded arrival schedule is dealt out arrival by arrival
  (worker k sends arrivals k, k+n, ...), so the offered arrival process is the one-process run's, offsets
  unchanged.  Prompts and request ids are the one-process run's (they are functions of the run index, and every
  worker uses the parent's request-id nonce).  An open loop's in-flight cap is split the same way, so a request
  waits for a free slot of its own worker.
* **one clock.** All times are ``time.perf_counter()``, which on Linux reads ``CLOCK_MONOTONIC``, "a
  nonsettable system-wide clock" (``man 2 clock_gettime``, https://man7.org/linux/man-pages/man2/clock_gettime.2.html;
  Python's ``time.perf_counter``/``time.monotonic`` use it: https://docs.python.org/3/library/time.html), so the
  workers' timestamps need no conversion.  That is checked, not assumed: each worker's clock read must fall
  inside the parent's send-receive round trip around it (``LoadResult.process_sync["clock_bracket_ms"]``, else
  a :class:`~pytest_roofline.errors.LoadgenError`).
* **one start.** Before each phase (warm-up, measurement) every worker waits at a barrier; the parent then
  sends one shared start time ``t0`` a little in the future and every worker's phase starts at exactly ``t0``
  (open-loop offsets are added to it), so the measurement window starts when every worker's warm-up has
  finished, as in one process.  ``process_sync["start_late_ms"]`` is how late the latest worker got there.
* **progress.** The workers' progress reports are summed per phase and passed to the caller's callback
  (at most every 0.2 s, and once at the end of each phase), from the calling thread.
* **failures.** A worker that raises or dies (killed, out of memory) makes the whole run a
  :class:`~pytest_roofline.errors.LoadgenError` naming the worker, its pid and how it ended; the other
  workers are stopped.  The run never returns a silently smaller sample.

``LoadSpec.max_failures`` is checked by each worker on its own requests and again on the merged record.  A
worker that aborts stops only itself; the merged result is then aborted too.

As with any ``spawn`` start, a script that calls the load generator with ``processes > 1`` must keep its own
top-level work under ``if __name__ == "__main__":`` (each worker imports the main module again).
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_roofline.errors import LoadgenError
from pytest_roofline.measure.loadgen._records import LoadResult, LoadSpec, Progress
from pytest_roofline.quantities.measurement import PointMode

__all__ = ["Part", "resolve_processes", "run_processes", "usable_cores", "CLIENT_CPU_S_PER_TOKEN"]

perf_counter = time.perf_counter

#: the client's CPU cost per streamed token, seconds: 7.5-8 µs at every rate (benchmarks/README.md, "What the
#: numbers decided": 21 % of a core at 25.6k tok/s, 47-50 % at 64k, 97 % at 128k)
CLIENT_CPU_S_PER_TOKEN = 8e-6
#: ``processes="auto"`` loads each worker to at most this fraction of a core: at 97 % of one core (128k tok/s)
#: the benchmark's ΔITL p99 rose from +0.01 ms to +0.25 ms, at 50 % it did not move
AUTO_CORE_FRACTION = 0.6
#: closed loops offer no rate up front: ``auto`` assumes one token per stream every 4 ms (the benchmark's
#: fastest decode step; a real engine's steps are slower, so this errs on the side of more processes)
AUTO_CLOSED_ITL_S = 0.004
#: how far ahead of "now" the parent puts a phase's shared start: long enough for the message to reach every
#: worker and the worker to wake up (the workers only wait for it)
START_MARGIN_S = 0.05


@dataclass(frozen=True)
class Part:
    """Worker ``k`` of ``n``: the requests whose run index is ``k`` modulo ``n``."""

    k: int
    n: int

    def share(self, total: int) -> int:
        """This part's share of ``total`` things dealt out one by one (streams, requests, slots)."""
        return len(range(self.k, total, self.n))


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which ``taskset`` narrows), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def resolve_processes(spec: LoadSpec, cores: int | None = None) -> int:
    """How many client processes ``spec`` runs on.

    An integer is taken as given (more processes than cores is allowed: it shows what extra processes cannot
    do), but never more than the streams of a closed loop or the in-flight cap of an open one.  ``"auto"`` is
    the number of cores the offered token rate needs at ``CLIENT_CPU_S_PER_TOKEN`` with each worker at most
    ``AUTO_CORE_FRACTION`` busy, capped by ``cores`` (default: :func:`usable_cores`).  The offered rate is
    ``rate_req_s × output_len`` in an open loop and ``concurrency / AUTO_CLOSED_ITL_S`` in a closed one.
    Worked example: 512 closed-loop streams → 128,000 tok/s × 8 µs = 1.02 cores → ceil(1.02 / 0.6) = 2.
    """
    want = spec.processes
    if want == "auto":
        if spec.mode == PointMode.OPEN:
            tok_s = float(spec.rate_req_s or 0.0) * spec.output_len
        else:
            tok_s = (spec.concurrency or 1) / AUTO_CLOSED_ITL_S
        need = math.ceil(tok_s * CLIENT_CPU_S_PER_TOKEN / AUTO_CORE_FRACTION)
        n = min(max(1, need), cores if cores is not None else usable_cores())
    else:
        n = int(want)
    if spec.concurrency:
        n = min(n, spec.concurrency)
    return max(1, n)


# ---------------------------------------------------------------------------------------------------------
# the worker side
# ---------------------------------------------------------------------------------------------------------


def _worker_main(conn: Any, runner: Callable[..., tuple[LoadResult, bytes]], base_url: str, spec: LoadSpec,
                 api_key: str | None, k: int, n: int, nonce: str, report_progress: bool) -> None:
    """A worker process: say hello, answer the clock probe, run part k of n, send the result."""
    from pytest_roofline.measure.engine._process import exit_with_parent

    exit_with_parent()  # a SIGKILLed pytest leaves no worker loading the server (issue 23, case 9.81)
    late: list[float] = []
    try:
        conn.send(("hello", os.getpid()))
        msg = conn.recv()
        if msg[0] != "ping":
            raise LoadgenError(f"unexpected message {msg[0]!r} from the parent")
        conn.send(("pong", perf_counter()))

        def sync(phase: str) -> float:
            conn.send(("ready", phase))
            reply = conn.recv()
            if reply[0] != "go":
                raise LoadgenError(f"unexpected message {reply[0]!r} from the parent")
            t0 = float(reply[1])
            late.append(perf_counter() - t0)
            return t0

        def progress(p: Progress) -> None:
            conn.send(("progress", p))

        result, lag = runner(base_url, spec, api_key=api_key, on_progress=progress if report_progress else None,
                             part=Part(k, n), sync=sync, rid_nonce=nonce)
        conn.send(("result", result, lag, late))
    except BaseException as exc:
        try:
            conn.send(("error", type(exc).__name__, str(exc)))
        except Exception:
            pass
        raise SystemExit(1) from None
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------------------
# the parent side
# ---------------------------------------------------------------------------------------------------------


class _Worker:
    def __init__(self, k: int, n: int, proc: Any, conn: Any) -> None:
        self.k, self.n, self.proc, self.conn = k, n, proc, conn
        self.result: tuple[LoadResult, bytes, list[float]] | None = None
        self.waiting: str | None = None  # the phase it waits to start
        self.progress: Progress | None = None

    @property
    def name(self) -> str:
        return f"load generator worker {self.k + 1} of {self.n} (pid {self.proc.pid})"

    def died(self) -> LoadgenError:
        self.proc.join(2)
        code = self.proc.exitcode
        if code is None:
            how = "closed its pipe"
        elif code < 0:
            try:
                how = f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit code {code}"
        return LoadgenError(f"{self.name} died ({how}) before sending its records; a run with a missing worker "
                            "would be a smaller sample than asked for, so the run has no result")

    def recv(self) -> Any:
        """The next message (blocking), or the error that the worker died or failed."""
        while True:
            ready = multiprocessing.connection.wait([self.conn, self.proc.sentinel])
            if self.conn in ready or self.conn.poll():
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError):
                    raise self.died() from None
                if msg[0] == "error":
                    cls = ValueError if msg[1] == "ValueError" else LoadgenError
                    raise cls(f"{self.name}: {msg[1]}: {msg[2]}")
                return msg
            if self.proc.sentinel in ready:
                raise self.died()


def _sum_progress(workers: list[_Worker], phase: str) -> Progress:
    ps = [w.progress for w in workers if w.progress is not None and w.progress.phase == phase]
    totals = [p.total for p in ps]
    return Progress(phase=phase, sent=sum(p.sent for p in ps), completed=sum(p.completed for p in ps),
                    failed=sum(p.failed for p in ps), in_flight=sum(p.in_flight for p in ps),
                    total=None if any(t is None for t in totals) else sum(t for t in totals if t is not None),
                    elapsed_s=max((p.elapsed_s for p in ps), default=0.0))


def run_processes(runner: Callable[..., tuple[LoadResult, bytes]], base_url: str, spec: LoadSpec, n: int, *,
                  api_key: str | None = None, on_progress: Callable[[Progress], None] | None = None,
                  tls: ssl.SSLContext | None = None) -> LoadResult:
    """Run ``spec`` over ``n`` worker processes, each calling ``runner`` (``_run.run_part``) on its part, and
    merge their results (the module docstring says how)."""
    if tls is not None:
        raise ValueError("a TLS context cannot be handed to worker processes: with processes > 1 every worker "
                         "builds the default one (set SSL_CERT_FILE for a private CA)")
    ctx = multiprocessing.get_context("spawn")
    nonce = os.urandom(4).hex()
    workers: list[_Worker] = []
    try:
        for k in range(n):
            parent_conn, child_conn = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, name=f"roofline-loadgen-{k + 1}-of-{n}", daemon=True,
                               args=(child_conn, runner, base_url, spec, api_key, k, n, nonce,
                                     on_progress is not None))
            proc.start()
            child_conn.close()
            workers.append(_Worker(k, n, proc, parent_conn))
        for w in workers:
            if w.recv()[0] != "hello":
                raise LoadgenError(f"{w.name}: unexpected first message")
        bracket_s = 0.0
        for w in workers:
            t_a = perf_counter()
            w.conn.send(("ping",))
            msg = w.recv()
            t_b = perf_counter()
            if msg[0] != "pong" or not (t_a <= float(msg[1]) <= t_b):
                raise LoadgenError(
                    f"{w.name}: its perf_counter clock read {msg[1]!r} lies outside the parent's round trip "
                    f"[{t_a:.6f}, {t_b:.6f}] s around it: the workers are not on one clock (CLOCK_MONOTONIC)")
            bracket_s = max(bracket_s, t_b - t_a)
        perf_anchor = perf_counter()
        wall_anchor = time.time()
        _drive(workers, on_progress)
        results = [w.result for w in workers]
        assert all(r is not None for r in results)
        for w in workers:
            w.proc.join(30)
        return merge(spec, [r for r in results if r is not None], perf_anchor_s=perf_anchor,
                     wall_anchor=wall_anchor, clock_bracket_s=bracket_s)
    finally:
        for w in workers:
            if w.proc.is_alive():
                w.proc.terminate()
                w.proc.join(5)
                if w.proc.is_alive():
                    w.proc.kill()
                    w.proc.join(5)
            w.conn.close()


def _drive(workers: list[_Worker], on_progress: Callable[[Progress], None] | None) -> None:
    """Relay progress and release the phase barriers until every worker has sent its result."""
    last_emit = 0.0
    phase: str | None = None
    while True:
        pending = [w for w in workers if w.result is None]
        if not pending:
            break
        waitables: list[Any] = []
        for w in pending:
            waitables += [w.conn, w.proc.sentinel]
        multiprocessing.connection.wait(waitables, timeout=1.0)
        for w in pending:
            while w.result is None and (w.conn.poll() or not w.proc.is_alive()):
                msg = w.recv()
                kind = msg[0]
                if kind == "progress":
                    w.progress = msg[1]
                    phase = msg[1].phase
                elif kind == "ready":
                    w.waiting = msg[1]
                elif kind == "result":
                    w.result = (msg[1], msg[2], msg[3])
                else:
                    raise LoadgenError(f"{w.name}: unexpected message {kind!r}")
        pending = [w for w in workers if w.result is None]
        now = perf_counter()
        if pending and all(w.waiting is not None for w in pending):
            names = {w.waiting for w in pending}
            if len(names) != 1:
                raise LoadgenError(f"the workers wait for different phases: {sorted(n for n in names if n)}")
            if on_progress is not None and phase is not None:
                on_progress(_sum_progress(workers, phase))
                last_emit = now
            t0 = perf_counter() + START_MARGIN_S
            for w in pending:
                w.waiting = None
                w.conn.send(("go", t0))
        elif not pending:
            if on_progress is not None and phase is not None:
                on_progress(_sum_progress(workers, phase))
        elif on_progress is not None and phase is not None and now - last_emit >= 0.2:
            on_progress(_sum_progress(workers, phase))
            last_emit = now


def merge(spec: LoadSpec, parts: list[tuple[LoadResult, bytes, list[float]]], *, perf_anchor_s: float,
          wall_anchor: float, clock_bracket_s: float = 0.0) -> LoadResult:
    """One :class:`LoadResult` from the workers' ``(result, raw read lags, phase start lateness)``.

    Records are merged in run-index order (each index once); the measurement window starts at the shared
    start; the run spans from the earliest worker's start to the latest one's end; read lags are pooled
    before their percentiles are taken; coalesced chunks are summed; a worker's abort is the run's.
    """
    results = [p[0] for p in parts]
    records = sorted((r for res in results for r in res.records), key=lambda r: r.index)
    seen: set[int] = set()
    for r in records:
        if r.index in seen:
            raise LoadgenError(f"request index {r.index} was sent by two workers")
        seen.add(r.index)
    sources = {res.timestamp_source for res in results}
    source = sources.pop() if len(sources) == 1 else "mixed"
    lag_arr = np.concatenate([np.frombuffer(p[1], dtype=np.int64) for p in parts]) if parts else np.zeros(0)
    lag = None
    if len(lag_arr):
        ms = lag_arr.astype(np.float64) / 1e6
        lag = {"p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)), "max": float(ms.max())}
    n = len(parts)
    aborted = [f"worker {k + 1} of {n}: {res.aborted}" for k, res in enumerate(results) if res.aborted]
    failed = [r for r in records if not r.ok and not r.discarded]
    limit = spec.max_failures
    if not aborted and limit is not None and len(failed) > limit:
        aborted.append(f"aborted: {len(failed)} request(s) failed, more than the {limit} allowed "
                       f"(first: {failed[0].error})")
    drift = max((res.clock_offset_drift_ns for res in results), key=abs, default=0)
    late = [x for p in parts for x in p[2]]
    return LoadResult(
        spec=spec, records=records, run_start_s=min(res.run_start_s for res in results),
        measure_start_s=max(res.measure_start_s for res in results),
        run_end_s=max(res.run_end_s for res in results), wall_anchor=wall_anchor, perf_anchor_s=perf_anchor_s,
        timestamp_source=source, clock_offset_drift_ns=drift, read_lag_ms=lag, url=results[0].url,
        aborted="; ".join(aborted) or None, coalesced_chunks=sum(res.coalesced_chunks for res in results),
        processes=n,
        process_sync={"clock_bracket_ms": clock_bracket_s * 1e3,
                      "start_late_ms": max(0.0, max(late, default=0.0)) * 1e3},
    )
