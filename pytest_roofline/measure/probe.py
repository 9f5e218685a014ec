"""The host probe: a fixed piece of work timed on every core just before and just after each sweep point, so a
night can tell a slower machine from a slower engine.

Why. A slower machine moves every time-based figure of a point by about one factor, and so does a uniformly slower
engine: nothing in the figures tells them apart. On this project's shared 2-core machine, 4 of 32 identical CPU-engine
nights were 1.7-3.7x slower in every figure at once (benchmarks/RESULTS-drift.md, "A longer history"), with neither the
load average nor the other processes' CPU share showing it. A number measured on the machine itself, at the time the
point ran, can: each drift line notes a night whose probe ran well away from the other nights', and with
``--roofline-drift-machine`` drift calls its moves ``uncertain`` and leaves such a night out of the baseline and the
nights' spread (:mod:`pytest_roofline.history._machine`, where the rule and why it is an option live).

What. One thread per CPU the process may run on (its affinity mask; at most :data:`MAX_THREADS`), each multiplying two
float64 vectors of :data:`VECTOR_LEN` elements (256 KiB each, so the three of them stay in a core's L2 cache) into a
third, again and again for :data:`BUDGET_S` seconds. NumPy drops the GIL inside the multiply loop, so the threads run
on every core at once; the probe's figure is the multiplies done by all threads over the wall time they took
(``gflop_per_s``, one multiply counted as one floating-point operation). A core that another process (or a noisy
neighbour on the host) takes away shows as fewer multiplies: with one busy loop running beside it on the 2-core
machine the figure fell from 7.4-7.8 to 3.5-4.4 GFLOP/s (about half), and five probes on the idle machine spread by
about 5 %. It is taken while the point's load is not running, and only once the machine has gone quiet
(:func:`wait_quiet`, at most :data:`SETTLE_MAX_S`): vLLM goes on working for 0.3-0.6 s after a load's last response,
and probes taken at once read ~4 GFLOP/s on a quiet machine that read ~7 before the load. It costs :data:`BUDGET_S`
(and the wait) before and after each point.

What it is not. It probes the host's CPUs, the ones the load generator, vLLM's API server and its scheduler run on;
a GPU's clocks or a co-tenant on the GPU are not in it. Against a remote endpoint it probes the machine that runs the
load generator, not the server.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["HostProbe", "probe_host", "MACHINE_SHIFT", "slower_machine_flag", "BUDGET_S", "VECTOR_LEN", "MAX_THREADS",
           "PROBE_METHOD", "probe_threads",
           "SETTLE_MAX_S", "QUIET_SHARE", "wait_quiet"]

#: how long each probe keeps every core busy, in seconds
#: how far (as a ratio, either way) a host probe may depart from a reference (the other nights' median in drift,
#: the run's fastest point in a sweep) before that machine counts as another machine (history._machine re-exports it)
MACHINE_SHIFT = 0.20
BUDGET_S = 0.25
#: elements of each float64 vector (256 KiB: three of them fit a core's L2 cache, so the probe is not a test of the
#: memory bus, which the engine's threads would share)
VECTOR_LEN = 32768
#: the most threads a probe starts (a 192-core host need not be probed on every core to see it is slower)
MAX_THREADS = 64
#: the longest the probe waits for the machine to go quiet first, in seconds: vLLM keeps working for a while after
#: a load's last response (on the 2-core CPU engine 0.3-0.6 s at 0.5-1.2 cores), and a probe taken then measured
#: the engine's tail, not the machine (its figure fell from ~7 to ~4 GFLOP/s on a quiet machine)
SETTLE_MAX_S = 1.5
#: quiet: the machine's CPUs busy less than this share of the time over a 0.1 s window (from /proc/stat)
QUIET_SHARE = 0.25
#: how the probe's figure is made, as each results file records it
PROBE_METHOD = (f"after waiting (at most {SETTLE_MAX_S} s) for the machine to be under {QUIET_SHARE:.0%} busy, one "
                f"thread per usable CPU (at most {MAX_THREADS}), each numpy.multiply of two float64 vectors of "
                f"{VECTOR_LEN} elements, repeated for {BUDGET_S} s; gflop_per_s = multiplies of all threads / wall "
                "time")


def _busy_total() -> tuple[int, int] | None:
    """The machine's busy and total CPU time so far, in clock ticks (``/proc/stat``'s ``cpu`` line: user, nice,
    system, idle, iowait, irq, softirq, steal); None where there is no /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            f = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return sum(f) - f[3] - f[4], sum(f)


def wait_quiet(*, max_s: float = SETTLE_MAX_S, share: float = QUIET_SHARE, window_s: float = 0.1) -> float:
    """Wait until the machine's CPUs were busy less than ``share`` of a ``window_s`` window (an engine finishing its
    last steps, the load generator writing its records), at most ``max_s``; the seconds waited. A machine that
    another process keeps busy is waited on for ``max_s`` and then probed as it is: that is what the probe is for."""
    t0 = time.monotonic()
    last = _busy_total()
    if last is None:
        return 0.0
    while time.monotonic() - t0 < max_s:
        time.sleep(window_s)
        now = _busy_total()
        if now is None:
            break
        busy, total = now[0] - last[0], now[1] - last[1]
        last = now
        if total > 0 and busy / total < share:
            break
    return time.monotonic() - t0


@dataclass(frozen=True)
class HostProbe:
    """One probe: how many multiplies per second every core together did (GFLOP/s), on how many threads, over how
    long (seconds of wall time)."""

    gflop_per_s: float
    threads: int
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def probe_threads() -> int:
    """One thread per CPU this process may run on (its affinity mask, else the machine's count), at most
    :data:`MAX_THREADS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, n))


def probe_host(*, threads: int | None = None, budget_s: float = BUDGET_S, settle: bool = True) -> HostProbe:
    """Time the probe's fixed work on ``threads`` threads (default :func:`probe_threads`) for ``budget_s``, after
    :func:`wait_quiet` (``settle``)."""
    import numpy as np

    if settle:
        wait_quiet()
    n = threads or probe_threads()
    done = [0] * n
    spans: list[tuple[float, float]] = [(0.0, 0.0)] * n
    start = threading.Barrier(n)

    def work(i: int) -> None:
        a = np.full(VECTOR_LEN, 1.0001)
        b = np.full(VECTOR_LEN, 0.9999)
        c = np.empty(VECTOR_LEN)
        start.wait()
        t0 = time.perf_counter()
        k = 0
        while True:
            for _ in range(16):
                np.multiply(a, b, out=c)
            k += 16
            t1 = time.perf_counter()
            if t1 - t0 >= budget_s:
                break
        done[i], spans[i] = k, (t0, t1)

    workers = [threading.Thread(target=work, args=(i,), name=f"roofline-probe-{i}", daemon=True) for i in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    # from the first thread's start to the last one's end: each ran at least budget_s, so wall_s >= budget_s
    wall_s = max(t1 for _t0, t1 in spans) - min(t0 for t0, _t1 in spans)
    return HostProbe(gflop_per_s=sum(done) * VECTOR_LEN / wall_s / 1e9, threads=n, wall_s=wall_s)


def slower_machine_flag(probe_gflop_per_s: float, reference_gflop_per_s: float | None) -> str | None:
    """A point's flag where the host probe around it (the mean of before and after) is over :data:`MACHINE_SHIFT`
    below the run's fastest point before it: every figure at the point moves with the machine, not only with the
    engine (trial s25c #3: the probe read 3.44 GFLOP/s at C = 4 and C = 8 against 6.92 at C = 1, which explained a
    TPOT that fell from C = 4 to C = 8 at one running batch, and no report said so). None where it is not."""
    if not reference_gflop_per_s or probe_gflop_per_s <= 0:
        return None
    ratio = probe_gflop_per_s / reference_gflop_per_s
    if ratio >= 1 / (1 + MACHINE_SHIFT):
        return None
    return (f"machine slower: the host probe around this point read {probe_gflop_per_s:.3g} GFLOP/s, {ratio:.2f}x the "
            f"run's fastest point before it ({reference_gflop_per_s:.3g}): its figures move with the machine too "
            "(measure/probe.py; rerun the point on a quiet machine)")
