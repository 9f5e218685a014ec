"""Measured sweep points of a results file, as the typed points calibration and the accuracy benchmark take.

The results schema (docs/results-schema.md) stays here, in the measurement layer; the model layer's
:mod:`pytest_roofline.model.calibration` only sees :class:`~pytest_roofline.model.calibration.MeasuredPoint`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_roofline.errors import CalibrationError
from pytest_roofline.measure.results.match import recorded_span
from pytest_roofline.model.calibration import MeasuredPoint
from pytest_roofline.quantities.measurement import PointMode

__all__ = ["measured_points", "select_points", "parse_point_selector"]


def _pct(client: Mapping[str, Any], key: str, pct: str) -> float | None:
    d = client.get(key)
    if not isinstance(d, Mapping):
        return None
    v = d.get(pct)
    return None if v is None else float(v)


def measured_points(doc: Mapping[str, Any], *, include_batch1: bool = False) -> list[MeasuredPoint]:
    """Every measured point of a loaded results file (``measure.results.load_results``), in file order.

    The ``batch1`` point (a separate batch-1 run with its own lengths) is left out unless asked for: it repeats
    the concurrency-1 point with fewer requests. Points with errors, failed requests (``client.failed > 0`` is
    never a measurement, docs/results-schema.md) or nothing measured are skipped.
    """
    wl = dict((doc.get("setup") or {}).get("workload") or {})
    out = []
    for p in doc.get("points") or ():
        if p.get("id") == "batch1" and not include_batch1:
            continue
        c = p.get("client") or {}
        if not c or not c.get("completed") or c.get("failed"):
            continue
        mode = p.get("mode", PointMode.CLOSED)
        sent = _sent_offsets(p) if mode == PointMode.OPEN else None
        out.append(MeasuredPoint(
            id=str(p.get("id")),
            concurrency=(int(p["concurrency"]) if p.get("concurrency") is not None and mode == PointMode.CLOSED
                         else None),
            rate_req_per_s=(float(p["rate_req_s"]) if mode == PointMode.OPEN and p.get("rate_req_s") is not None
                            else None),
            burstiness=float(p.get("burstiness") or 1.0),
            # a point recorded before spans were recorded was sent on the drawn schedule, and so is read a peer's
            # that does not say (match.recorded_span: None there)
            arrival_span=recorded_span(doc, p) or "drawn",
            sent_offsets_s=sent,
            num_requests=len(sent) if sent else int(p["num_requests"]) if p.get("num_requests") else None,
            input_len=int(p.get("input_len") or wl.get("input_len") or 0) or None,
            output_len=int(p.get("output_len") or wl.get("output_len") or 0) or None,
            output_throughput_tok_per_s=_num(c.get("output_throughput_tok_s")),
            tpot_p50_ms=_pct(c, "tpot_ms", "p50"),
            ttft_p50_ms=_pct(c, "ttft_ms", "p50"),
            ttft_p99_ms=_pct(c, "ttft_ms", "p99"),
            itl_p99_ms=_pct(c, "itl_ms", "p99"),
            prefix_cache_hit_rate=_num((p.get("server") or {}).get("prefix_cache_hit_rate")),
        ))
    return out


def _sent_offsets(point: Mapping[str, Any]) -> tuple[float, ...] | None:
    """A point's recorded sends (``sent_offsets_s``: a peer's per-request file), or None where it has none or they
    are not a send order (the point is then simulated on the schedule ``arrival_span`` names)."""
    raw = point.get("sent_offsets_s")
    if not isinstance(raw, list) or not raw:
        return None
    try:
        sent = tuple(float(t) for t in raw)
    except (TypeError, ValueError):
        return None
    if any(not math.isfinite(t) for t in sent) or sent[0] != 0.0 or any(b < a for a, b in zip(sent, sent[1:])):
        return None
    return sent


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


def parse_point_selector(text: str) -> list[tuple[str, float]]:
    """``"C=1,C=64,R=8"`` -> ``[("C", 1.0), ("C", 64.0), ("R", 8.0)]`` (C: concurrency, R: rate in req/s)."""
    out = []
    for part in (t.strip() for t in text.split(",")):
        if not part:
            continue
        key, sep, val = part.partition("=")
        key = key.strip().upper()
        if not sep or key not in ("C", "R"):
            raise CalibrationError(f"point selector {part!r}: write C=<concurrency> or R=<rate>, e.g. C=1,C=64")
        try:
            out.append((key, float(val)))
        except ValueError:
            raise CalibrationError(f"point selector {part!r}: {val!r} is not a number") from None
    return out


def select_points(points: Sequence[MeasuredPoint], selectors: Iterable[tuple[str, float]]) -> list[MeasuredPoint]:
    """The points the selectors name, each once, in the order given; an unmatched selector is an error."""
    chosen: list[MeasuredPoint] = []
    for key, val in selectors:
        match = [p for p in points if (key == "C" and p.rate_req_per_s is None and p.concurrency is not None
                                       and abs(p.concurrency - val) < 1e-9)
                 or (key == "R" and p.rate_req_per_s is not None and abs(p.rate_req_per_s - val) < 1e-9)]
        if not match:
            have = ", ".join(p.label for p in points) or "none"
            raise CalibrationError(f"no measured point {key}={val:g} (the results have: {have})")
        for p in match:
            if p not in chosen:
                chosen.append(p)
    return chosen
