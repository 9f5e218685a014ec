"""Held concurrency: whether a closed loop kept the concurrency it was asked for, detected and named.

A closed loop at concurrency C sends the next request as soon as one of its C finishes, so while the load is on, C
requests are in flight: queued or running on the server, they are the client's until their reply ends. The client's
own records say how many were, time-averaged from the moment the count first reached C to the last measured send
(``client.held_mean_in_flight``, :func:`held_in_flight`): the fill before it is the warm-up's business (a machine-
wide stall of 0.18 s while the first of 4 clients ran alone, on a 24-request point, read 81 % over the whole window
and 95 % from the fill, with a read lag p99 of 14 ms). Well below C means the client was slow to send the next
request: a starved load generator. On a 2-core machine serving vLLM's CPU engine (the worker on one core, the
engine-core process waiting for it in a busy loop, the API server and the load generator sharing what is left) 23 of
26 runs had a point at 0.21-0.81 of C, while runs whose client kept up held 0.94-1.00
(benchmarks/drift_noise_sources.py, docs/how-to/nightly.md). Such a point measured a lower load than its ``at:
{concurrency: C}`` says, and its latencies and throughput moved from run to run with how starved the client was. It
is flagged, with the client's socket read lag (``loadgen.read_lag_ms``), and every verdict at it says so (the flag
becomes a note, as the bursts flag does), and a pass or fail that rests on such a point is inconclusive
(``scoring``): it measured another load than the prediction names.

This module never imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_roofline.measure.loadgen import RequestRecord

__all__ = ["HELD_SHARE", "HELD_FLAG_PREFIX", "held_flag", "is_held_flag", "held_in_flight", "unheld_points",
           "first_full_s"]

#: a closed-loop point is flagged when it held less than this share of its concurrency in flight on average
HELD_SHARE = 0.9
#: how every held-concurrency flag begins (the results file keeps flags as text, as the bursts flag does)
HELD_FLAG_PREFIX = "concurrency not held:"


def is_held_flag(flag: object) -> bool:
    """A point flag of :func:`held_flag`'s: the point measured a lower load than its concurrency says."""
    return isinstance(flag, str) and flag.startswith(HELD_FLAG_PREFIX)


def first_full_s(records: Sequence[RequestRecord], concurrency: int) -> float | None:
    """The first moment (``perf_counter`` s) the requests of ``records`` in flight reached ``concurrency``, by
    their send and end times (an end at the same instant as a send counts first); None when it never did."""
    events = sorted([(r.sent_s, 1) for r in records if r.sent_s is not None]
                    + [(r.end_s, -1) for r in records if r.end_s is not None], key=lambda e: (e[0], -e[1]))
    level = 0
    for t, step in events:
        level += step
        if level >= concurrency:
            return t
    return None


def held_in_flight(records: Sequence[RequestRecord], concurrency: int) -> float | None:
    """The time-averaged number of requests in flight from the moment their count first reached ``concurrency``
    to the last measured send (after it no request replaces one that ends). Requests an adaptive stop discarded
    count while they were out: the server had them. A point whose measured requests were all sent by the moment
    the count reached ``concurrency`` held it by construction (``concurrency``); None when the count never
    reached it (the caller then falls back to the steady window's figure)."""
    out = [r for r in records if not r.warmup and r.sent_s is not None]
    sends = [r.sent_s for r in out if r.in_sample and r.sent_s is not None]
    if not sends or concurrency < 1:
        return None
    end = max(sends)
    start = first_full_s(out, concurrency)
    if start is None:
        return None
    if end <= start:
        return float(concurrency)
    busy = 0.0
    for r in out:
        lo = max(r.sent_s or start, start)
        hi = min(r.end_s if r.end_s is not None else end, end)
        if hi > lo:
            busy += hi - lo
    return busy / (end - start)


def held_flag(client: Mapping[str, Any] | None, concurrency: int | None,
              read_lag_ms: Mapping[str, Any] | None = None, num_requests: int | None = None) -> str | None:
    """The point's flag when a closed loop at ``concurrency`` held less than :data:`HELD_SHARE` of it in flight
    once it first reached it (``client["held_mean_in_flight"]``, else the steady window's
    ``client["steady_mean_in_flight"]``, else ``client["mean_in_flight"]``); None for an
    open loop (``concurrency`` None), a point that held it, or one without the figure. A point of fewer measured
    requests (``num_requests``) than clients could never hold its concurrency: its flag says that, not that the
    load generator was slow."""
    if not isinstance(client, Mapping) or not isinstance(concurrency, int) or concurrency < 1:
        return None
    held = next((float(x) for x in (client.get(k) for k in ("held_mean_in_flight", "steady_mean_in_flight",
                                                             "mean_in_flight"))
                 if not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)), None)
    if held is None:
        return None
    share = held / concurrency
    if share >= HELD_SHARE:
        return None
    if isinstance(num_requests, int) and not isinstance(num_requests, bool) and 0 < num_requests < concurrency:
        return (f"{HELD_FLAG_PREFIX} {held:.2f} of {concurrency} requests in flight on average ({share:.0%}): "
                f"the point measured {num_requests} requests, fewer than its {concurrency} clients, so at most "
                f"{num_requests} were ever in flight (sweep.requests_per_point). The point measured a lower load than "
                f"its concurrency says")
    lag = read_lag_ms.get("p99") if isinstance(read_lag_ms, Mapping) else None
    why = (f"; the client read the socket {lag:,.0f} ms after the data arrived (read lag p99)"
           if isinstance(lag, (int, float)) and not isinstance(lag, bool) and math.isfinite(lag) else "")
    return (f"{HELD_FLAG_PREFIX} {held:.2f} of {concurrency} requests in flight on average ({share:.0%}), "
            f"below {HELD_SHARE:.0%}: the load generator was slow to send the next request (a starved client "
            f"machine){why}. The point measured a lower load than its concurrency says")


def unheld_points(notes: Iterable[object]) -> tuple[str, ...]:
    """The ids of the points a verdict's ``measured_notes`` say did not hold their concurrency: every note
    ``point <id>: concurrency not held: ...`` (a point's flag as the verdict repeats it:
    :data:`HELD_FLAG_PREFIX`), each id once, in the notes' order."""
    marker = f": {HELD_FLAG_PREFIX}"
    out: list[str] = []
    for n in notes:
        if isinstance(n, str) and n.startswith("point ") and marker in n:
            point = n[len("point "):n.index(marker)]
            if point not in out:
                out.append(point)
    return tuple(out)
