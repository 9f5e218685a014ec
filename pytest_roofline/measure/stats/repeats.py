"""Repeats: one ``client`` object from ``sweep.repeats`` runs of a point, with intervals over the repeats and
where a rerun should land.

This module never imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_roofline.measure.stats.intervals import mean_interval, t_half_width
from pytest_roofline.measure.stats.steady import INTERVAL_FIGURES

__all__ = ["combine_repeats", "next_run_interval"]


def _mean_leaves(objs: Sequence[Any]) -> Any:
    """The element-wise mean of JSON-like values of the same shape: numbers are averaged (``None`` when any is
    missing), dicts key by key, anything else is the first one's."""
    first = objs[0]
    if isinstance(first, dict):
        return {k: _mean_leaves([o.get(k) if isinstance(o, dict) else None for o in objs]) for k in first}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        if any(o is None or isinstance(o, bool) or not isinstance(o, (int, float)) for o in objs):
            return None
        m = float(np.mean([float(o) for o in objs]))
        return int(round(m)) if all(isinstance(o, int) for o in objs) and m == int(m) else m
    return first


def next_run_interval(values: Sequence[float], level: float = 0.95, next_repeats: int | None = None
                      ) -> tuple[float, float]:
    """Where the next run's value should land, from ``values`` (one per repeat): the normal-theory prediction
    interval for the mean of ``next_repeats`` fresh repeats (default as many as ``values``),
    ``x̄ ± t(k−1) · s · √(1/k + 1/m)`` for k repeats now and m next. Unlike the confidence interval of the mean,
    which covers the *true* value at ``level`` but the next run's only ~83 % of the time (that run has its own
    error), it covers the next run's value at ``level`` when the runs are exchangeable (Hahn & Meeker,
    *Statistical Intervals*, §4.6). Infinite with fewer than 2 values."""
    x = np.asarray([float(v) for v in values], dtype=float)
    k = int(x.size)
    if k < 2:
        return -math.inf, math.inf
    half = t_half_width(x, level, k if next_repeats is None else int(next_repeats))
    return float(x.mean()) - half, float(x.mean()) + half


def _repeat_intervals(clients: Sequence[dict[str, Any]], level: float, source: Any) -> dict[str, dict[str, Any]]:
    """A Student-t interval over the repeats for each figure of :data:`INTERVAL_FIGURES`, read from ``source(c)``
    (a repeat's whole-run figures, or its steady window's)."""
    requests = sum(int((source(c) or {}).get("completed") or 0) for c in clients)
    intervals: dict[str, dict[str, Any]] = {}
    for key in INTERVAL_FIGURES:
        vals = []
        for c in clients:
            v: Any = source(c)
            for part in key.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            vals.append(v)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            iv = mean_interval([float(v) for v in vals], level, method="repeats")
            nlo, nhi = next_run_interval([float(v) for v in vals], level)
            intervals[key] = {**iv.to_json(), "requests": requests,  # and where a rerun of as many repeats lands
                              "next_lo": nlo if math.isfinite(nlo) else None,
                              "next_hi": nhi if math.isfinite(nhi) else None}
    return intervals


def combine_repeats(clients: Sequence[dict[str, Any]], level: float = 0.95) -> dict[str, Any]:
    """One ``client`` object from the ``client`` objects of ``sweep.repeats`` runs of one point: every figure is
    the mean over the repeats; each figure of :data:`INTERVAL_FIGURES` gets a Student-t interval over the repeats'
    whole-run values (``intervals``) and over their steady-window values (``steady_intervals``), ``method:
    repeats``, ``n`` = repeats, ``requests`` = the requests behind them all, which replaces the within-run
    interval (it holds the run-to-run spread too), with ``next_lo``/``next_hi`` where a rerun of as many repeats
    should land (:func:`next_run_interval`); ``repeats`` keeps every repeat's own object. ``completed``/``failed``
    are summed."""
    if len(clients) == 1:
        return dict(clients[0])
    out = _mean_leaves([{k: v for k, v in c.items()
                         if k not in ("repeats", "intervals", "steady_intervals", "steady_window")} for c in clients])
    out["completed"] = sum(int(c.get("completed") or 0) for c in clients)
    out["failed"] = sum(int(c.get("failed") or 0) for c in clients)
    # the whole-run figures (what a verdict is scored on) and the steady windows' (``window: steady``)
    out["intervals"] = _repeat_intervals(clients, level, lambda c: c)
    out["intervals_window"] = "run"
    out["steady_intervals"] = _repeat_intervals(clients, level, lambda c: c.get("steady") or c)
    out["steady_window"] = {"method": "repeats", "repeats": len(clients),
                            "windows": [c.get("steady_window") for c in clients]}
    out["repeats"] = [dict(c) for c in clients]
    return out
