"""Held concurrency: whether a closed loop kept the concurrency it was asked for, detected and named.

A closed loop at concurrency C sends the next request as soon as one of its C finishes, so while the load is on,
C requests are in flight: queued or running on the server, they are the client's until their reply ends. The
client's own records say how many were, time-averaged over the steady window (``client.steady_mean_in_flight``,
:mod:`~pytest_roofline.measure.stats.steady`). Well below C means the client was slow to send the next request:
a starved load generator. On a 2-core machine serving vLLM's CPU engine (the worker on one core, the engine-core
process waiting for it in a busy loop, the API server and the load generator sharing what is left) 23 of 26
runs had a point at 0.21-0.81 of C, while runs whose client kept up held 0.94-1.00
(benchmarks/drift_noise_sources.py, docs/how-to/nightly.md). Such a point measured a lower load than its
``at: {concurrency: C}`` says, and its latencies and throughput moved from run to run with how starved the
client was. It is flagged, with the client's socket read lag (``loadgen.read_lag_ms``), and every verdict at it
says so (the flag becomes a note, as the bursts flag does).

This module never imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["HELD_SHARE", "held_flag"]

#: a closed-loop point is flagged when it held less than this share of its concurrency in flight on average
HELD_SHARE = 0.9


def held_flag(client: Mapping[str, Any] | None, concurrency: int | None,
              read_lag_ms: Mapping[str, Any] | None = None, num_requests: int | None = None) -> str | None:
    """The point's flag when a closed loop at ``concurrency`` held less than :data:`HELD_SHARE` of it in flight
    over its steady window (``client["steady_mean_in_flight"]``, else ``client["mean_in_flight"]``); None for an
    open loop (``concurrency`` None), a point that held it, or one without the figure. A point of fewer measured
    requests (``num_requests``) than clients could never hold its concurrency: its flag says that, not that the
    load generator was slow."""
    if not isinstance(client, Mapping) or not isinstance(concurrency, int) or concurrency < 1:
        return None
    held = client.get("steady_mean_in_flight")
    if isinstance(held, bool) or not isinstance(held, (int, float)) or not math.isfinite(held):
        held = client.get("mean_in_flight")
    if isinstance(held, bool) or not isinstance(held, (int, float)) or not math.isfinite(held):
        return None
    share = held / concurrency
    if share >= HELD_SHARE:
        return None
    if isinstance(num_requests, int) and not isinstance(num_requests, bool) and 0 < num_requests < concurrency:
        return (f"concurrency not held: {held:.2f} of {concurrency} requests in flight on average ({share:.0%}): "
                f"the point measured {num_requests} requests, fewer than its {concurrency} clients, so at most "
                f"{num_requests} were ever in flight (sweep.requests_per_point). The point measured a lower load than "
                f"its concurrency says")
    lag = read_lag_ms.get("p99") if isinstance(read_lag_ms, Mapping) else None
    why = (f"; the client read the socket {lag:,.0f} ms after the data arrived (read lag p99)"
           if isinstance(lag, (int, float)) and not isinstance(lag, bool) and math.isfinite(lag) else "")
    return (f"concurrency not held: {held:.2f} of {concurrency} requests in flight on average ({share:.0%}), "
            f"below {HELD_SHARE:.0%}: the load generator was slow to send the next request (a starved client "
            f"machine){why}. The point measured a lower load than its concurrency says")
