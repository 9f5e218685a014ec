"""Measurement analysis, defined once: which points form the sweep, the knees, contamination by prefix-cache hits,
goodput rows. The quantity registry (verdicts) and the report (charts, scorecard headlines) both call these, so a
chart can never disagree with the verdict beside it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_roofline.errors import PointError, SetupError
from pytest_roofline.model import analytical as an
from pytest_roofline.quantities.measurement import (
    PointRecord,
    client_number,
    client_value,
    concurrency,
    is_sweep_point,
    point_id,
    prefix_cache_hit_rate,
)

__all__ = ["SMALL_SAMPLE_PREFIX", "Thresholds", "closed_points", "throughput_knee", "ttft_knee", "cache_hit_reason",
           "is_flattered", "point_notes", "goodput_rows", "goodput_table"]


@dataclass(frozen=True)
class Thresholds:
    """Definitions a user can tune in the YAML ``thresholds:`` section."""

    knee_gain: float = 0.10  # throughput knee: smallest concurrency whose doubling adds less than this fraction
    queue_fraction: float = 0.10  # a point queues when vLLM's mean queue time exceeds this share of mean E2E
    ttft_knee_ratio: float = 2.0  # TTFT knee: smallest concurrency with p99 TTFT > ratio × p50 TTFT
    contamination: float = an.DEFAULT_CONTAMINATION_HIT_RATE  # prefix-cache hit rate marking a point contaminated


def closed_points(points: Iterable[PointRecord] | Mapping[str, Any] | None) -> list[PointRecord]:
    """The closed-loop sweep points (the batch-1 point and open-loop rates excluded), in concurrency order.

    Takes a list of points or a whole results dict (its ``points``)."""
    if points is None:
        return []
    if isinstance(points, Mapping):
        points = points.get("points") or []
    return sorted((p for p in points if is_sweep_point(p)), key=concurrency)


def throughput_knee(points: Sequence[tuple[float, float]], gain_threshold: float) -> float | None:
    """Smallest concurrency whose doubling adds less than ``gain_threshold`` (a fraction) of throughput.

    ``points`` are (concurrency, aggregate throughput) pairs. Gaps other than a doubling are normalised to a
    per-doubling gain: ``(X2/X1) ** (1/log2(c2/c1)) − 1``. None when throughput keeps growing (only flattening).
    """
    pts = sorted(points)
    for (c1, x1), (c2, x2) in zip(pts, pts[1:], strict=False):
        if c2 <= c1 or x1 <= 0:
            continue
        gain = (x2 / x1) ** (1.0 / math.log2(c2 / c1)) - 1.0
        if gain < gain_threshold:
            return c1
    return None


def ttft_knee(points: Sequence[tuple[float, float, float]], ratio: float) -> float | None:
    """Smallest concurrency whose p99 TTFT exceeds ``ratio`` × its p50 TTFT; ``points`` = (c, p50, p99)."""
    for c, p50, p99 in sorted(points):
        if p50 and p99 > ratio * p50:
            return c
    return None


def _prefill_floor(pt: PointRecord, setup: Any) -> tuple[int, float] | None:
    """The point's prompt length and the compute floor of its prefill at peak FLOP/s, in ms (None when it cannot
    be worked out: no setup, or no prompt length on the point or the setup)."""
    n = pt.get("input_len") or getattr(setup, "input_len", None)
    if setup is None or not n:
        return None
    try:
        return int(n), an.prefill_floor_s(int(n), setup.flop_per_token, setup.peak_flop_per_s) * 1e3
    except (SetupError, ValueError, AttributeError, ZeroDivisionError):
        return None


def _below_floor(pt: PointRecord, setup: Any) -> tuple[float, int, float] | None:
    """(TTFT p50 ms, prompt tokens, floor ms) when the point's TTFT p50 beats its prefill's compute floor."""
    p50 = client_value(pt, "ttft_ms", "p50")
    floor = _prefill_floor(pt, setup)
    if isinstance(p50, (int, float)) and not isinstance(p50, bool) and floor is not None and p50 < floor[1]:
        return float(p50), floor[0], floor[1]
    return None


def cache_hit_reason(pt: PointRecord, th: Thresholds, setup: Any = None) -> str | None:
    """Why a point's numbers are flattered by prefix-cache hits, or None: the one rule (the charts ring what it
    names, the verdicts flag it). A prefix-cache hit rate above ``th.contamination`` (where the point recorded
    none: its file marks it contaminated), or — given the setup — a TTFT p50 below the compute floor of the
    prompt's prefill, which only cached prompts beat."""
    rate = prefix_cache_hit_rate(pt)
    if rate is not None:
        if rate > th.contamination:
            return f"prefix-cache hit rate {rate:.0%} > {th.contamination:.0%}"
    elif pt.get("contaminated"):
        return "marked contaminated in the results file"
    below = _below_floor(pt, setup)
    if below is not None:
        p50, _n, floor = below
        return f"TTFT p50 {p50:,.0f} ms is below the {floor:,.1f} ms compute floor of its prefill"
    return None


def is_flattered(pt: PointRecord, th: Thresholds, setup: Any = None) -> bool:
    """A point whose numbers prefix-cache hits flatter (:func:`cache_hit_reason` gives the reason): what the
    charts ring and what a verdict that uses the point flags as ``contaminated``."""
    return cache_hit_reason(pt, th, setup) is not None


#: how the small-sample flag of a point begins (``measure.sweep.small_sample_flag``: fewer completed requests than
#: a p99 needs for an upper bound). It marks the point in the results file and the sweep table, and is not a
#: verdict's note: most points of a CPU run carry it, and each verdict's own interval already says what its
#: figure's sample decides (a p99 from 64 requests: "no upper bound at 95%").
SMALL_SAMPLE_PREFIX = "small sample:"


def point_notes(pt: PointRecord, th: Thresholds, setup: Any = None) -> list[str]:
    """What a verdict that uses this point must say about it: cache hits (by rate or by the prefill floor, the
    rule of :func:`cache_hit_reason`) and the flags the measurement raised (but the small-sample mark,
    :data:`SMALL_SAMPLE_PREFIX`)."""
    notes = []
    below = _below_floor(pt, setup)
    if below is not None:
        p50, n, floor = below
        notes.append(f"point {pt.get('id')}: TTFT p50 {p50:,.0f} ms is below the {floor:,.1f} ms "
                     f"compute floor of a {n:,}-token prefill — prompts were (partly) served "
                     "from the prefix cache")
    rate = prefix_cache_hit_rate(pt)
    if rate is not None and rate > th.contamination:
        notes.append(f"point {pt.get('id')} is contaminated: prefix-cache hit rate {rate:.0%} > "
                     f"{th.contamination:.0%} — prompts were served partly from cache")
    for flag in pt.get("flags") or ():
        if not str(flag).startswith(SMALL_SAMPLE_PREFIX):
            notes.append(f"point {point_id(pt)}: {flag}")
    return notes


def goodput_table(points: Iterable[PointRecord] | Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The sweep points as goodput rows (``analytical.goodput``'s input): the closed points that recorded an
    output throughput, with their TTFT and TPOT distributions."""
    rows = []
    for p in closed_points(points):
        tput = client_number(p, "output_throughput_tok_s")
        if tput is None:
            continue
        rows.append({"concurrency": concurrency(p), "output_tok_per_s": tput,
                     "ttft_ms": _distribution(p, "ttft_ms"), "tpot_ms": _distribution(p, "tpot_ms")})
    return rows


#: the statistics of a client distribution (``Distribution``), the numbers goodput reads
_STATISTICS = ("mean", "p50", "p90", "p95", "p99")


def _distribution(pt: PointRecord, key: str) -> dict[str, float]:
    """The recorded statistics of one client distribution, numbers only (absent ones left out); PointError when
    the file holds something else there."""
    d = client_value(pt, key)
    if d is None:
        return {}
    if not isinstance(d, Mapping):
        raise PointError(f"point {point_id(pt)}: client.{key} is a {type(d).__name__}, not an object")
    out = {}
    for stat in _STATISTICS:  # a distribution's other keys are words (a peer's "note", "estimated_from")
        if stat not in d:
            continue
        x = client_number(pt, key, stat)
        if x is not None:
            out[str(stat)] = x
    return out


def goodput_rows(points: Iterable[PointRecord] | Mapping[str, Any] | None,
                 slo: Mapping[str, Any] | None) -> list[an.Goodput]:
    """Goodput at p50 and p99 (and the SLO's own percentile) under a file's ``slo:`` (seconds), from the sweep."""
    rows = [r for r in goodput_table(points) if r["ttft_ms"] and r["tpot_ms"]]
    slo = slo or {}
    if not rows or not ({"ttft", "tpot"} & slo.keys()):
        return []
    out = []
    pcts = ["p50", "p99"]
    if slo.get("percentile") and slo["percentile"] not in pcts:
        pcts.append(slo["percentile"])
    for pct in pcts:
        try:
            out.append(an.goodput(rows, ttft_ms_max=slo["ttft"] * 1e3 if "ttft" in slo else None,
                                  tpot_ms_max=slo["tpot"] * 1e3 if "tpot" in slo else None, percentile=pct))
        except (KeyError, ValueError):
            continue
    return out
