"""Little's law at a sweep point, L = λ·W, as a check that can fail: λ·W (request throughput × mean E2E latency,
from the client) against an L that is not computed from the same records.

- a closed-loop point: L is the configured concurrency C (the point's ``concurrency``; a peer's file's
  ``littles_law.L_configured``). λ·W ÷ C below 1 means the loop did not hold C: a load generator that sends late,
  client think time, or a long fill or drain at the ends of the run;
- an open-loop point: the arrival rate is fixed, not L, so L is the server's own count, the mean of vLLM's
  ``num_requests_running + num_requests_waiting`` over the polls of the point's /metrics timeline
  (``sweep.timeline``) inside its measurement window. W at the client also holds the frontend's time (tokenising,
  the HTTP stream) that the server's count does not, so the ratio reads a little above 1 on a healthy server.

The client's own time-averaged requests in flight (``littles_law.L``, ``mean_in_flight``) is never the divisor:
over the window the figures are taken on (first measured send → last end) every request lies wholly inside, so
it is Σ(end − send) ÷ window and λ·W equals it by construction. It is shown beside the check as bookkeeping.

This module never imports pytest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_roofline.errors import NotMeasured
from pytest_roofline.quantities.measurement import (
    PointMode,
    PointRecord,
    client_number,
    point_mode,
    server_stats,
)

__all__ = ["LittlesReading", "littles_reading", "reading_or_none", "server_in_flight", "NO_TIMELINE"]

#: why an open-loop point without a server timeline has no Little's-law ratio
NO_TIMELINE = ("an open loop fixes the arrival rate, not L, and the client's own time-averaged requests in flight "
               "equals λ·W by construction (every request lies inside the window it is averaged over), so L must "
               "come from the server: this point has no /metrics timeline (`sweep.timeline: 0.5 s` records "
               "vLLM's num_requests_running + num_requests_waiting while it runs)")


@dataclass(frozen=True)
class LittlesReading:
    """λ·W against an independent L at one point."""

    ratio: float  # λ·W ÷ L
    lam: float | None  # request throughput, req/s
    w_s: float | None  # mean E2E latency, s
    lam_w: float
    big_l: float  # the L divided by: the configured C, or the server's mean running + waiting
    source: str  # "configured" or "server"
    client_l: float | None  # the client's own time-averaged in flight (= λ·W by construction): bookkeeping
    polls: int = 0  # the server polls L is the mean of (source "server")

    def detail(self) -> str:
        """The verdict's detail line: λ, W, λ·W, the L divided by, and the client's in-flight as bookkeeping."""
        parts = []
        if self.lam is not None and self.w_s is not None:
            parts.append(f"λ = {self.lam:.4g} req/s × W = {self.w_s * 1e3:.4g} ms")
        parts.append(f"λ·W = {self.lam_w:.4g}")
        if self.source == "configured":
            parts.append(f"C (configured concurrency) = {self.big_l:g}")
        else:
            parts.append(f"L (server: mean running + waiting over {self.polls} polls) = {self.big_l:.4g}")
        text = ", ".join(parts)
        if self.client_l is not None:
            text += (f"; the client's own time-averaged in flight {self.client_l:.4g} is bookkeeping (it equals "
                     "λ·W by construction), not the L checked")
        return text


def server_in_flight(pt: PointRecord) -> tuple[float, int] | None:
    """The mean of vLLM's ``num_requests_running + num_requests_waiting`` over the point's timeline polls, and how
    many polls it is over; None without at least two polls that read both gauges.

    Polls are evenly spaced, so their mean is a time-average. Where the server object records the measurement
    window in the timeline's clock (``timeline_window_s``: [start, end] seconds since the first poll), only the
    polls inside it count; a file without it (older runs) drops the idle polls before the first and after the
    last busy one (the scraper starts before the point's first request and stops after its last)."""
    s = server_stats(pt)
    timeline = s.get("timeline") or []
    samples: list[tuple[float, float]] = []
    for t in timeline:
        if not isinstance(t, Mapping):
            continue
        ts, run, wait = t.get("t_s"), t.get("running"), t.get("waiting")
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (ts, run, wait)):
            samples.append((float(ts), float(run) + float(wait)))  # type: ignore[arg-type]
    window = s.get("timeline_window_s")
    if (isinstance(window, Sequence) and len(window) == 2
            and all(isinstance(v, int | float) for v in window)):
        lo, hi = float(window[0]), float(window[1])
        samples = [(ts, v) for ts, v in samples if lo <= ts <= hi]
    else:
        busy = [i for i, (_, v) in enumerate(samples) if v > 0]
        samples = samples[busy[0]:busy[-1] + 1] if busy else []
    if len(samples) < 2:
        return None
    return sum(v for _, v in samples) / len(samples), len(samples)


def _configured(pt: PointRecord) -> float | None:
    """A closed-loop point's configured concurrency C: its ``concurrency``, else a peer's ``L_configured``."""
    c = pt.get("concurrency")
    if isinstance(c, int | float) and not isinstance(c, bool) and c > 0:
        return float(c)
    conf = client_number(pt, "littles_law", "L_configured")
    return conf if conf else None


def littles_reading(pt: PointRecord) -> LittlesReading:
    """λ·W ÷ L at the point (see the module's docstring); raises NotMeasured, with the reason, where it has none."""
    pid = pt.get("id")
    lam_w = client_number(pt, "littles_law", "lambda_W")
    lam = client_number(pt, "littles_law", "lambda_req_s")
    w_s = client_number(pt, "littles_law", "W_s")
    if lam_w is None and lam is not None and w_s is not None:
        lam_w = lam * w_s
    if lam_w is None:
        raise NotMeasured(f"point {pid} has no λ·W (request throughput and mean E2E latency)")
    client_l = client_number(pt, "littles_law", "L")
    mode = point_mode(pt)
    if mode is PointMode.CLOSED:
        c = _configured(pt)
        if c is None:
            raise NotMeasured(f"point {pid}: a closed-loop point that records no configured concurrency")
        return LittlesReading(lam_w / c, lam, w_s, lam_w, c, "configured", client_l)
    if mode is PointMode.OPEN:
        got = server_in_flight(pt)
        if got is None:
            raise NotMeasured(f"point {pid}: {NO_TIMELINE}; λ·W = {lam_w:.4g}")
        big_l, polls = got
        if big_l <= 0:
            raise NotMeasured(f"point {pid}: the server counted no request in flight over its {polls} polls")
        return LittlesReading(lam_w / big_l, lam, w_s, lam_w, big_l, "server", client_l, polls)
    raise NotMeasured(f"point {pid} has a mode this version does not know: {pt.get('mode')!r}")


def reading_or_none(pt: Mapping[str, Any]) -> LittlesReading | None:
    """:func:`littles_reading`, None where the point has none (charts and tables)."""
    try:
        return littles_reading(pt)  # type: ignore[arg-type]
    except NotMeasured:
        return None
    except Exception:  # noqa: BLE001 - a malformed figure: the chart leaves the point out, the verdict says why
        return None
