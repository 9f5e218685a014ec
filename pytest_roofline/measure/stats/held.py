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
from pytest_roofline.measure.stats.intervals import z_quantile
from pytest_roofline.quantities.littles import HELD_FLAG_PREFIX, LittlesReading, is_held_flag, littles_reading

__all__ = ["HELD_SHARE", "HELD_FLAG_PREFIX", "held_flag", "is_held_flag", "held_in_flight", "unheld_points",
           "first_full_s", "held_littles_law", "littles_reading", "LittlesReading", "RATE_SHARE", "RATE_FLAG_PREFIX",
           "rate_flag", "is_rate_flag", "rate_shortfall", "completion_rate"]

#: a closed-loop point is flagged when it held less than this share of its concurrency in flight on average
HELD_SHARE = 0.9


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


# --- Little's law over the held window: the check that the closed loop held C ------------------------------------
def held_littles_law(records: Sequence[RequestRecord], concurrency: int) -> dict[str, Any] | None:
    """Little's law over the held window of a closed loop at ``concurrency``: from the moment the requests in
    flight first reached ``concurrency`` (:func:`first_full_s`) to the last measured send. λ = the requests in
    flight at some time inside the window (as :func:`held_in_flight` counts them: failed and discarded ones too,
    the server had them) ÷ its length; W = their mean time inside it (a request sent before the window or ending
    after it counts its part inside). λ·W is then the window's time-averaged count in flight, which a loop that
    held C reads as C, and a load generator late to send the next request as the share of C it held; the drain
    after the last send (the last requests finishing with fewer in flight, an adaptive stop's) is outside it.

    Not the whole E2E latency of the requests completed in the window: its edges are not alike (at its start the
    C requests were just sent, at its end they are midway), so with few requests per client that count reads low
    — 0.70 on a held (7.997 of 8) live point of 3 requests per client with a 5 s E2E. None when the window is
    empty (no request was sent after the count reached ``concurrency``)."""
    out = [r for r in records if not r.warmup and r.sent_s is not None]
    sends = [r.sent_s for r in out if r.in_sample and r.sent_s is not None]
    if not sends or concurrency < 1:
        return None
    start, end = first_full_s(out, concurrency), max(sends)
    if start is None or end <= start:
        return None
    inside = []
    for r in out:
        lo = max(r.sent_s or start, start)
        hi = min(r.end_s if r.end_s is not None else end, end)
        if hi > lo:
            inside.append(hi - lo)
    if not inside:
        return None
    lam = len(inside) / (end - start)
    w_s = sum(inside) / len(inside)
    return {"held_lambda_req_s": lam, "held_W_s": w_s, "held_lambda_W": lam * w_s, "held_requests": len(inside),
            "held_window_s": end - start}


# --- open loop: an offered rate the engine did not sustain -------------------------------------------------------
#: an open-loop point is flagged when its engine completed requests at less than this share of the offered rate
RATE_SHARE = 0.9
#: how every offered-rate flag begins
RATE_FLAG_PREFIX = "offered rate not sustained:"
#: the two-sided 95% normal quantile of the count bound
_Z = z_quantile(0.95)


def is_rate_flag(flag: object) -> bool:
    """A point flag of :func:`rate_flag`'s: the engine fell behind the point's arrivals."""
    return isinstance(flag, str) and flag.startswith(RATE_FLAG_PREFIX)


def completion_rate(records: Sequence[RequestRecord]) -> tuple[float, int] | None:
    """(requests/s, intervals) the engine completed the measured requests at, from the first completion to the
    last: (n − 1) ÷ (last end − first end). Unlike the whole run's request throughput it holds neither the time to
    the first completion nor the drain after the last send, so a point whose engine keeps up reads its arrival
    rate however long its requests take. None below two completions."""
    ends = sorted(r.end_s for r in records if r.in_sample and r.ok and r.end_s is not None)
    if len(ends) < 2 or ends[-1] <= ends[0]:
        return None
    return (len(ends) - 1) / (ends[-1] - ends[0]), len(ends) - 1


def rate_shortfall(achieved: float, offered: float, n: int, burstiness: float = 1.0) -> float | None:
    """The achieved share of the offered rate when the engine fell behind it, not by chance: below
    :data:`RATE_SHARE`, and the offered rate above the count bound of the achieved one, achieved × (1 + z ÷
    √(n·k)) (n intervals; k the gamma arrivals' burstiness, 1 for Poisson, whose count variance is n ÷ k); None
    otherwise. With 60 Poisson arrivals (59 intervals) the bound is +26%: 46.5 req/s achieved of 60 offered (78%)
    is flagged, as 46.5 × 1.255 = 58.4 < 60; 50 of 60 (83%) is not (62.8)."""
    if offered <= 0 or n < 1 or achieved < 0:
        return None
    share = achieved / offered
    k = burstiness if burstiness > 0 else 1.0
    if share >= RATE_SHARE or achieved * (1 + _Z / math.sqrt(n * k)) >= offered:
        return None
    return share


def rate_flag(records: Sequence[RequestRecord], offered_req_s: float | None,
              burstiness: float | None = None) -> str | None:
    """The flag of an open-loop point whose engine completed requests at less than :data:`RATE_SHARE` of the
    offered rate, beyond what the arrivals' sampling explains (:func:`completion_rate`, :func:`rate_shortfall`):
    its queue grew for as long as the point ran, so its latencies grow with the point's length. None otherwise,
    for a closed loop (``offered_req_s`` None) or an infinite rate."""
    if offered_req_s is None or not math.isfinite(offered_req_s) or offered_req_s <= 0:
        return None
    got = completion_rate(records)
    if got is None:
        return None
    achieved, n = got
    share = rate_shortfall(achieved, offered_req_s, n, burstiness or 1.0)
    if share is None:
        return None
    return (f"{RATE_FLAG_PREFIX} the engine completed {achieved:,.3g} req/s of the {offered_req_s:g} offered "
            f"({share:.0%}, from the first completion to the last; chance explains up to "
            f"{_Z / math.sqrt(n * (burstiness or 1.0)):.0%} of {n + 1} requests): requests queued for as long as the "
            f"point ran, so its latencies grow with its length (requests_per_point)")
