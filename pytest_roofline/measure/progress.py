"""What a live sweep tells about itself while it runs: the engine's start, then each point as it is measured.

The measure layer reports through the :class:`SweepProgress` protocol and draws nothing; the pytest glue
implements it on pytest's terminal writer (``pytest_plugin/progress.py``). Calls come from the thread running
the sweep: an engine's start calls :meth:`SweepProgress.engine_waiting` about once a second while it waits,
a point calls :meth:`SweepProgress.point_update` from inside the load generator's event loop (at most every
0.2 s, see ``loadgen.Progress``), so an implementation must return quickly and decide itself how often to
print. None of it affects a measurement: a reporter that raises is switched off, never the sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["EngineWait", "PointUpdate", "SweepProgress", "output_tok_per_s"]


@dataclass(frozen=True)
class EngineWait:
    """An engine still starting: ``stage`` is what it waits for (``/health``, ``/v1/models``)."""

    name: str
    elapsed_s: float
    stage: str
    last_log_line: str


@dataclass(frozen=True)
class PointUpdate:
    """One sweep point so far. ``index`` counts from 1 of ``count`` points in the file's sweep; ``phase`` is
    ``warmup`` or ``measure``; the request counts and ``elapsed_s`` are the phase's. ``output_tok_per_s`` is the
    completed requests' output tokens over the elapsed time (each request streams exactly ``output_len``
    tokens: the load generator sends ``ignore_eos``), None before the measured phase has run a moment."""

    file: str
    point_id: str
    index: int
    count: int
    phase: str
    elapsed_s: float
    completed: int
    failed: int
    total: int | None
    in_flight: int
    output_tok_per_s: float | None
    #: why the point ended before its cap (an adaptive stop's reason, at ``point_done``); None: it ran to the cap
    stopped: str | None = None


def output_tok_per_s(completed: int, output_len: int, elapsed_s: float) -> float | None:
    """Output tokens per second of ``completed`` requests of ``output_len`` tokens in ``elapsed_s`` seconds."""
    if elapsed_s <= 0.0 or completed <= 0:
        return None
    return completed * output_len / elapsed_s


class SweepProgress(Protocol):
    """Receives a live sweep's progress (see the module docstring for when each is called)."""

    def engine_waiting(self, wait: EngineWait) -> None: ...

    def engine_done(self, name: str, elapsed_s: float, error: str | None) -> None: ...

    def point_started(self, update: PointUpdate) -> None: ...

    def point_update(self, update: PointUpdate) -> None: ...

    def point_done(self, update: PointUpdate, error: str | None) -> None: ...
