"""Plan: which sweep points the *selected* predictions need (so ``-k one-prediction`` runs one point).

Pure functions over a :class:`~pytest_roofline.format.spec.Spec`; no pytest import, nothing measured here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from pytest_roofline.format.spec import Prediction, Spec

__all__ = ["PointPlan", "plan_points", "needs_engine"]


@dataclass(frozen=True)
class PointPlan:
    """One sweep point to measure."""

    id: str
    mode: str  # closed | open
    concurrency: int | None
    rate_req_s: float | None
    num_requests: int | None
    duration_s: float | None
    warmup_requests: int
    input_len: int
    output_len: int
    burstiness: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def sort_key(self) -> tuple:
        return (self.id != "batch1", self.mode, self.concurrency or 0, self.rate_req_s or 0.0)


def _closed(spec: Spec, c: int) -> PointPlan:
    sw = spec.sweep
    return PointPlan(
        id=f"closed-c{c}", mode="closed", concurrency=c, rate_req_s=None,
        num_requests=None if sw.duration_s else sw.num_requests(c), duration_s=sw.duration_s,
        # at least one warm-up request per client: every connection is open (and the server has accepted it)
        # before the measurement starts. With fewer, the CPU vLLM's API server was seen accepting the remaining
        # connections ~0.5 s late, so a closed loop of 8 ran its first requests one at a time.
        warmup_requests=max(sw.warmup, c),
        input_len=int(spec.workload.get("input_len", 1024)), output_len=int(spec.workload.get("output_len", 1024)),
    )


def _open(spec: Spec, rate: float) -> PointPlan:
    sw = spec.sweep
    return PointPlan(
        id=f"open-r{rate:g}", mode="open", concurrency=None, rate_req_s=rate,
        num_requests=None if sw.duration_s else (sw.requests_per_point or max(10, int(rate * 30))),
        duration_s=sw.duration_s, warmup_requests=sw.warmup,
        input_len=int(spec.workload.get("input_len", 1024)), output_len=int(spec.workload.get("output_len", 1024)),
        burstiness=sw.burstiness,
    )


def _batch1(spec: Spec) -> PointPlan:
    b1 = dict(spec.sweep.batch1 or {})
    return PointPlan(
        id="batch1", mode="closed", concurrency=1, rate_req_s=None, num_requests=int(b1.get("requests", 4)),
        duration_s=None, warmup_requests=int(b1.get("warmup", 1)),
        input_len=int(b1.get("input_len", spec.workload.get("input_len", 1024))),
        output_len=int(b1.get("output_len", spec.workload.get("output_len", 1024))),
    )


def batch1_point(spec: Spec) -> PointPlan:
    """The point of the dedicated batch-1 run (``sweep.batch1``), as it is measured."""
    return _batch1(spec)


def all_points(spec: Spec) -> list[PointPlan]:
    return [_closed(spec, c) for c in spec.sweep.concurrency] + [_open(spec, r) for r in spec.sweep.rates]


def points_for(spec: Spec, pred: Prediction) -> list[PointPlan]:
    """The points one prediction needs (empty when it needs only the engine's own report, or nothing)."""
    q = pred.q
    if q.measure is None or q.points is None:
        return []
    if q.points == "all":
        return all_points(spec)
    if q.points == "batch1":
        return [_batch1(spec)] if spec.sweep.batch1 else [_closed(spec, 1)]
    at = pred.at
    if "concurrency" in at:
        return [_closed(spec, int(at["concurrency"]))]
    if "batch" in at:
        return [_closed(spec, int(at["batch"]))]
    if "rate" in at:
        return [_open(spec, float(at["rate"]))]
    return []


def plan_points(spec: Spec, predictions: Iterable[Prediction]) -> list[PointPlan]:
    """Unique points the given predictions need, in run order (batch-1 first, then rising load)."""
    seen: dict[str, PointPlan] = {}
    for pred in predictions:
        if pred.error is not None:
            continue
        for p in points_for(spec, pred):
            seen.setdefault(p.id, p)
    return sorted(seen.values(), key=lambda p: p.sort_key)


def needs_engine(predictions: Iterable[Prediction]) -> bool:
    """Whether any prediction needs a measurement at all (points or the engine's own report)."""
    return any(p.error is None and p.q.measure is not None for p in predictions)
