"""Which part of a point's measurement a verdict is scored on: the whole run (the default) or its steady window.

The default is the whole run, the figure ``vllm bench serve``, GuideLLM and AIPerf print for the same run (output
tokens ÷ the run's duration; percentiles over every completed request): a user puts the two side by side. The
steady window (``measure.stats.steady_summary``: the closed loop's fill and MSER-5's warm-up left out, the drain
cut) is a second, labelled figure a prediction asks for with ``window: steady``
(``docs/explanation/measured-figures.md``).

A point's ``client`` holds both since issue 20: ``intervals`` over the whole run (``intervals_window: "run"``),
``steady`` and ``steady_intervals`` over the steady window, and ``steady_window`` saying how it was chosen (its
``method`` is ``"none"`` when the point has no steady state, and then its figures are the whole run's). A file
written before (``intervals`` without ``intervals_window``) holds steady-window intervals only: a whole-run
verdict on it is scored on the stored whole-run figure, without an interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast, get_args

from pytest_roofline.quantities.measurement import EngineReport, Measurement, PointRecord

__all__ = ["Window", "WINDOWS", "windowed", "window_point"]

#: the window a prediction is scored on (``window:`` in a prediction; default ``run``)
Window = Literal["run", "steady"]
WINDOWS: tuple[Window, ...] = get_args(Window)


def window_point(pt: PointRecord, window: Window) -> PointRecord:
    """``pt`` as a verdict scored on ``window`` reads it: its ``client.intervals`` (what the scorer takes the
    figure and its interval from) are that window's, and for ``steady`` its client figures are the steady
    window's, with a flag saying which window was scored and why (every verdict at the point lists it)."""
    client = pt.get("client")
    if not isinstance(client, Mapping):
        return pt
    new_file = client.get("intervals_window") == "run"
    if window == "run":
        if new_file or "intervals" not in client:
            return pt
        # a file from before issue 20: its intervals are the steady window's, not the whole run's
        return cast(PointRecord, {**pt, "client": {k: v for k, v in client.items() if k != "intervals"}})
    steady = client.get("steady")
    found = client.get("steady_window")
    win: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    ivs = client.get("steady_intervals") if new_file else client.get("intervals")
    flags = list(pt.get("flags") or ())
    if not isinstance(steady, Mapping) or not isinstance(ivs, Mapping):
        flags.append("window: steady asked for, but this point records no steady window: the whole run is scored")
        return cast(PointRecord, {**pt, "flags": flags})
    method = str(win.get("method") or "")
    if method == "none":
        flags.append(f"window: steady — {win.get('reason') or 'no steady state'}; the whole run is scored")
    else:
        flags.append(f"window: steady — {win.get('requests', steady.get('completed'))} requests "
                     f"(left out: fill {win.get('dropped_warmup', 0)}, drain {win.get('dropped_drain', 0)})")
    scored: dict[str, Any] = {**client, **{k: v for k, v in steady.items() if k != "completed"},
                              "intervals": ivs}
    return cast(PointRecord, {**pt, "client": scored, "flags": flags})


class _Windowed:
    """A :class:`Measurement` whose points are read through :func:`window_point`."""

    def __init__(self, inner: Measurement, window: Window):
        self._inner, self._window = inner, window

    def points(self) -> Sequence[PointRecord]:
        return [window_point(p, self._window) for p in self._inner.points()]

    def point(self, *, concurrency: int | None = None, rate: float | None = None) -> PointRecord:
        return window_point(self._inner.point(concurrency=concurrency, rate=rate), self._window)

    def engine_report(self) -> EngineReport | None:
        return self._inner.engine_report()


def windowed(meas: Measurement, window: Window) -> Measurement:
    """``meas`` read on ``window`` (see :func:`window_point`)."""
    return _Windowed(meas, window)
