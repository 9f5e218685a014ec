"""Where a point's time to first token went, split by vLLM's own timestamps, and how fast the client turned around.

A results file's point keeps the client's TTFT and, when the engine exported them, the means of three of vLLM's
own histograms (``server``: ``vllm:time_to_first_token_seconds``, ``vllm:request_queue_time_seconds``,
``vllm:request_prefill_time_seconds``; their sums and counts are exact, so their means are, where their quantiles
are not). The client's mean TTFT is then four legs that add up exactly:

- ``queue_ms`` and ``prefill_ms``: the engine core's own queue and prefill, as vLLM stamps them;
- ``api_server_ms``: the server's TTFT less both: from the API server's arrival stamp to the engine core and back
  to the output processor (tokenising, the IPC hops, the wait for the step that takes the request);
- ``http_ms``: the client's TTFT less the server's: the HTTP request and the first streamed chunk.

:func:`frontend_legs` computes them; the serving model's ``frontend_in_s`` / ``frontend_out_s`` defaults are the
legs of the committed CPU recordings (benchmarks/frontend_split.py prints them; docs/sources.md). The closed loop's
``client_jitter_s`` default comes from :func:`closed_loop_turnarounds_ms`: how long after a reply ended the client
sent the next request.

This module never imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FrontendLegs", "frontend_legs", "closed_loop_turnarounds_ms"]


@dataclass(frozen=True)
class FrontendLegs:
    """One point's mean TTFT in its legs (ms): ``client_ttft_ms`` = ``queue_ms + prefill_ms + api_server_ms +
    http_ms``. A leg the engine did not export is NaN (and so is every leg computed from it)."""

    client_ttft_ms: float
    server_ttft_ms: float
    queue_ms: float
    prefill_ms: float

    @property
    def api_server_ms(self) -> float:
        return self.server_ttft_ms - self.queue_ms - self.prefill_ms

    @property
    def http_ms(self) -> float:
        return self.client_ttft_ms - self.server_ttft_ms


def _mean_ms(block: Mapping[str, Any], key: str) -> float:
    value = (block.get(key) or {}).get("mean")
    return math.nan if value is None else float(value)


def frontend_legs(point: Mapping[str, Any]) -> FrontendLegs:
    """The legs of a results file's point (docs/results-schema.md: its ``client`` and ``server`` objects)."""
    server = point.get("server") or {}
    return FrontendLegs(client_ttft_ms=_mean_ms(point.get("client") or {}, "ttft_ms"),
                        server_ttft_ms=_mean_ms(server, "ttft_ms"), queue_ms=_mean_ms(server, "queue_ms"),
                        prefill_ms=_mean_ms(server, "prefill_ms"))


def closed_loop_turnarounds_ms(requests: Iterable[Mapping[str, Any]]) -> list[float]:
    """Each closed-loop send's delay after the latest reply that had ended before it, sorted (ms), from a point's
    request records (``sent_s``, ``end_s``, ``status``; the ``.requests.jsonl`` rows). Failed requests are left
    out; the first sends, which no reply precedes, have no turnaround."""
    ok = [r for r in requests if r.get("status") == "ok"]
    ends = sorted(float(r["end_s"]) for r in ok)
    delays = []
    for r in ok:
        sent = float(r["sent_s"])
        before = [e for e in ends if e <= sent]
        if before:
            delays.append((sent - before[-1]) * 1e3)
    return sorted(delays)
