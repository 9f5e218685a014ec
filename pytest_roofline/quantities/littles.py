"""Little's law as a point's check, read from its ``client`` object: the one reading ``littles_law_ratio``, the
scorecard's chart and its sweep table share (:func:`littles_reading`), and the held-concurrency flag's prefix,
which the check keeps off its own verdict. The figures are measured in ``measure.stats.held``
(``held_littles_law``); this module reads them, so the quantities layer never imports the measure layer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["HELD_FLAG_PREFIX", "is_held_flag", "LittlesReading", "littles_reading"]

#: how every held-concurrency flag begins (the results file keeps flags as text, as the bursts flag does)
HELD_FLAG_PREFIX = "concurrency not held:"


def is_held_flag(flag: object) -> bool:
    """A point flag of :func:`held_flag`'s: the point measured a lower load than its concurrency says."""
    return isinstance(flag, str) and flag.startswith(HELD_FLAG_PREFIX)


class LittlesReading(NamedTuple):
    """What ``littles_law_ratio`` reads at a point (:func:`littles_reading`): the ratio and how it was taken."""

    ratio: float
    detail: str
    #: read where it cannot differ from 1: no request was sent after C were first in flight, so the held window is
    #: empty and its in-flight count is C by construction. Shown, never scored (the check would pass by definition)
    vacuous: bool = False


def _num(d: Mapping[str, Any] | None, key: str) -> float | None:
    v = d.get(key) if isinstance(d, Mapping) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def littles_reading(client: Mapping[str, Any] | None, concurrency: int | None) -> LittlesReading | None:
    """The Little's-law ratio of a point's ``client`` object, the one reading the check, the scorecard's chart
    and the sweep table share; None where the point has none (the caller says why).

    Closed loop (``concurrency`` C): λ·W over the held window ÷ C (``littles_law.held_lambda_W``,
    ``measure.stats.held.held_littles_law``), below 1 by the share of C the load generator failed to hold. A file
    written before
    it was recorded reads the held window's time-averaged in flight ÷ C instead (``held_mean_in_flight``, else
    the steady window's ``steady_mean_in_flight``): Little's law makes it λ·W over that window. A point whose held
    window is empty (every measured request was out when C were first in flight: an adaptive stop after C, or
    requests_per_point = C) reads ``held_mean_in_flight`` = C by construction, marked :attr:`LittlesReading.vacuous`
    (the check does not score it); fewer requests than clients never reach C and read their share. A file with
    neither but with the client's L (the Day-3 notebook's transcription) reads the whole run's λ·W ÷ C. A peer's
    file (``not_checked``) has none: its whole-run λ·W ÷ C holds the drain, which is not a failure to hold C.

    Open loop (``concurrency`` None): λ·W ÷ L with L the client's own time-averaged in flight over the run, a
    bookkeeping check (an open loop fixes λ, not L, and L over a window that holds every request whole is λ·W
    itself: only failed requests and the time after a request's last token move it)."""
    ll = client.get("littles_law") if isinstance(client, Mapping) else None
    if not isinstance(ll, Mapping):
        return None
    if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency >= 1:
        c = concurrency
        lam_w = _num(ll, "held_lambda_W")
        if lam_w is not None:
            lam, w_s, n = _num(ll, "held_lambda_req_s"), _num(ll, "held_W_s"), _num(ll, "held_requests")
            parts = (f" ({lam:.4g} req/s × {w_s * 1e3:.4g} ms, {n:.0f} requests)"
                     if lam is not None and w_s is not None and n is not None else "")
            return LittlesReading(lam_w / c, f"λ·W over the held window (from C in flight to the last send; W "
                                             f"the requests' time inside it) = {lam_w:.4g}{parts} ÷ C = {c}")
        if isinstance(ll.get("not_checked"), str):
            return None  # a peer's summary-only file
        empty = "held_requests" in ll  # one of ours whose held window is empty: no send after C were in flight
        for key, what in (("held_mean_in_flight", "the held window"), ("steady_mean_in_flight", "the steady window")):
            held = _num(client, key)
            if held is not None:
                if empty and key == "held_mean_in_flight":
                    return LittlesReading(held / c, f"no request was sent after the {c} clients were first all in "
                                                    f"flight (every measured request was out by then: an adaptive "
                                                    f"stop, or requests_per_point = C), so the loop held C by "
                                                    f"construction (held_mean_in_flight = {held:.4g}) ÷ C = {c}",
                                          vacuous=True)
                return LittlesReading(held / c, f"a file without the held window's λ and W: its time-averaged "
                                                f"in flight over {what} ({key}) = {held:.4g}, which Little's law "
                                                f"makes λ·W there, ÷ C = {c}")
        lam_w = _num(ll, "lambda_W")
        if lam_w is not None and _num(ll, "L") is not None:
            return LittlesReading(lam_w / c, f"a file without a held window: the whole run's λ·W = {lam_w:.4g} "
                                             f"÷ C = {c}")
        return None
    lam_w, big_l = _num(ll, "lambda_W"), _num(ll, "L")
    if lam_w is None or not big_l:
        return None
    return LittlesReading(lam_w / big_l, f"open loop: L (the client's time-averaged in flight) = {big_l:.4g}, "
                                         f"λ·W = {lam_w:.4g}; a bookkeeping check, close to 1 by construction")
