"""Plan: which sweep points the *selected* predictions need (so ``-k one-prediction`` runs one point).

Pure functions over a :class:`~pytest_roofline.format.spec.Spec`; no pytest import, nothing measured here.

Each point also carries the *decision targets* of the predictions that read it (:class:`DecisionTarget`): the
tolerance band of a per-point prediction, in the SI unit of the statistic the adaptive sweep measures
(``measure/plan/stopping.py``), so that a point can stop once every band is decided without this layer knowing the
scoring rules. A prediction whose band depends on several points (a knee, Little's law's "at every point") gives
no target; it is listed in :attr:`PointPlan.untargeted` and reads the point at whatever count it stops.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pytest_roofline.format.spec import PredictedKind, Prediction, Spec
from pytest_roofline.model.workload import ArrivalSpan, fixed_span_applies
from pytest_roofline.quantities.measurement import PointMode

__all__ = ["PointPlan", "DecisionTarget", "plan_points", "needs_engine", "targets_for", "STATISTIC_OF_QUANTITY",
           "RUN_TO_CAP_QUANTITIES", "HELD_WINDOW_QUANTITIES",
           "is_knee_only", "KNEE_QUANTITIES", "workload_override", "unmeasured_reason", "MODEL_ONLY_WORKLOAD_KEYS"]


@dataclass(frozen=True)
class DecisionTarget:
    """The band a per-point prediction's measured statistic must fall in (SI units; None: unbounded side).

    ``statistic`` names what ``measure/plan/stopping.py`` computes from the point's requests, with an interval:
    ``output_throughput`` / ``total_throughput`` / ``request_throughput`` (tok/s, req/s), ``per_request_throughput``
    (the mean of each request's tok/s), ``ttft_p99``, ``tpot_p50``, ``e2e_mean``, ``itl_p99`` ... (seconds)."""

    quantity: str
    statistic: str
    lo: float | None
    hi: float | None
    prediction_id: str
    #: the prediction reads this point through the AND of its targets here (a goodput's SLOs: a point meets the
    #: SLO when TTFT *and* TPOT do), so one target decided outside decides the others too
    conjunction: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: measured per-point quantity -> the statistic adaptive.py measures for it (the same figure the registry reads
#: from the point's client stats: quantities/registry.py)
STATISTIC_OF_QUANTITY: dict[str, str] = {
    "output_throughput": "output_throughput",
    "total_throughput": "total_throughput",
    "per_request_throughput": "per_request_throughput",
    "request_throughput": "request_throughput",
    **{f"{m}_{s}": f"{m}_{s}" for m in ("ttft", "tpot", "itl", "e2e") for s in ("mean", "p50", "p90", "p95", "p99")},
}
#: per-point quantities whose verdict rests on the point's sample (an interval that narrows with its requests) but
#: whose band the stopping rule cannot read: a point one of them reads runs to its cap in an adaptive sweep (stopped
#: at its floor, 2 requests gave request_goodput a +-139% interval: trial s17 H1). Little's law, the knees and the
#: hygiene checks read the point at whatever count it stops at (untargeted)
RUN_TO_CAP_QUANTITIES = frozenset({"request_goodput"})
#: per-point quantities read over a closed loop's held window (from the moment C were first in flight to the last
#: send): an adaptive point one of them reads runs at least two rounds (2·C), since a point stopped after its first
#: round sent every request at once and holds C by construction (quantities.littles: not scored)
HELD_WINDOW_QUANTITIES = frozenset({"littles_law_ratio"})


@dataclass(frozen=True)
class PointPlan:
    """One sweep point to measure."""

    id: str
    mode: PointMode
    concurrency: int | None
    rate_req_s: float | None
    num_requests: int | None
    duration_s: float | None
    warmup_requests: int
    input_len: int
    output_len: int
    burstiness: float = 1.0
    #: open loop: how the point's sends span (``sweep.arrival_span``; ``model.workload.arrival_offsets_s``)
    arrival_span: ArrivalSpan = "fixed"
    #: the bands of the per-point predictions that read this point (adaptive sweeps stop on them)
    targets: tuple[DecisionTarget, ...] = field(default=(), compare=False)
    #: ids of predictions that read this point but give no per-point band (Little's law, knees, hygiene)
    untargeted: tuple[str, ...] = field(default=(), compare=False)
    #: ids of per-point predictions the stopping rule cannot read (RUN_TO_CAP_QUANTITIES): an adaptive sweep runs
    #: this point to its cap
    to_cap: tuple[str, ...] = field(default=(), compare=False)
    #: ids of per-point predictions read over the held window (HELD_WINDOW_QUANTITIES): an adaptive closed-loop
    #: point runs at least two rounds
    held_window: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The point as the results file records it (its decision targets are recorded by the adaptive sweep)."""
        d = asdict(self)
        d.pop("targets")
        d.pop("untargeted")
        d.pop("to_cap")
        d.pop("held_window")
        if self.mode != PointMode.OPEN:  # a closed loop sends on completions: no schedule to span
            d.pop("arrival_span")
        return d

    @property
    def sort_key(self) -> tuple:
        return (self.id != "batch1", self.mode, self.concurrency or 0, self.rate_req_s or 0.0)


def _closed(spec: Spec, c: int) -> PointPlan:
    sw = spec.sweep
    return PointPlan(
        id=f"closed-c{c}", mode=PointMode.CLOSED, concurrency=c, rate_req_s=None,
        num_requests=None if sw.duration_s else sw.num_requests(c), duration_s=sw.duration_s,
        # at least one warm-up request per client: every connection is open (and the server has accepted it)
        # before the measurement starts. With fewer, the CPU vLLM's API server was seen accepting the remaining
        # connections ~0.5 s late, so a closed loop of 8 ran its first requests one at a time.
        warmup_requests=max(sw.warmup, c),
        input_len=int(spec.workload.get("input_len", 1024)), output_len=int(spec.workload.get("output_len", 1024)),
    )


def open_span(spec: Spec, count: int | None) -> ArrivalSpan:
    """How an open point of ``count`` requests (None: duration-bound) is sent: the sweep's ``arrival_span``, but
    ``drawn`` where a fixed span cannot apply (model.workload.fixed_span_applies: a duration-bound point, a
    ramp-up, fewer than 2 requests), so the point records the schedule it was sent on (trial s23 M1: a
    duration-bound point recorded ``fixed`` and was then refused against a ``drawn`` sweep it had been sent as)."""
    want = spec.sweep.arrival_span
    if want == "fixed" and (spec.workload.get("ramp_up") or not fixed_span_applies(count=count, ramp_up=None)):
        return "drawn"
    return want


def _open(spec: Spec, rate: float) -> PointPlan:
    sw = spec.sweep
    n = None if sw.duration_s else (sw.requests_per_point or max(10, int(rate * 30)))
    return PointPlan(
        id=f"open-r{rate:g}", mode=PointMode.OPEN, concurrency=None, rate_req_s=rate,
        num_requests=n, duration_s=sw.duration_s, warmup_requests=sw.warmup,
        input_len=int(spec.workload.get("input_len", 1024)), output_len=int(spec.workload.get("output_len", 1024)),
        burstiness=sw.burstiness, arrival_span=open_span(spec, n),
    )


def _batch1(spec: Spec, workload: Mapping[str, Any] | None = None) -> PointPlan:
    b1 = dict(spec.sweep.batch1 or {})
    lens = {k: int(b1.get(k, spec.workload.get(k, 1024))) for k in ("input_len", "output_len")}
    for k in lens:  # a length the prediction's own workload writes (its mean, for a distribution) wins
        if workload is not None and workload.get(k) is not None and workload.get(k) != spec.workload.get(k):
            lens[k] = int(workload[k])
    return PointPlan(
        id="batch1", mode=PointMode.CLOSED, concurrency=1, rate_req_s=None, num_requests=int(b1.get("requests", 4)),
        duration_s=None, warmup_requests=int(b1.get("warmup", 1)), input_len=lens["input_len"],
        output_len=lens["output_len"],
    )


def batch1_point(spec: Spec, *, workload: Mapping[str, Any] | None = None) -> PointPlan:
    """The point of the dedicated batch-1 run (``sweep.batch1``), as it is measured. ``workload``: a prediction's
    ``setup: {workload: ...}``, whose lengths replace the run's (the serving model's batch-1 point for it; the
    measured run refuses such a prediction: :func:`unmeasured_reason`)."""
    return _batch1(spec, workload)


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


def _band(pred: Prediction) -> tuple[float | None, float | None] | None:
    """The prediction's measured tolerance band in SI units; None when it cannot be known before scoring (a
    ``predicted: model`` reference, a word, no tolerance written or inherited)."""
    if pred.tolerance is None or pred.predicted.kind is not PredictedKind.NUMBER:
        return None
    value = pred.predicted.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    lo, hi = pred.tolerance.bounds(float(value))
    return (lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)


def targets_for(spec: Spec, pred: Prediction, point: PointPlan) -> tuple[DecisionTarget, ...]:
    """The decision targets ``pred`` puts on ``point`` (empty when its band is not a per-point band).

    A per-point client quantity (``output_throughput at: {concurrency: 16}``) gives its tolerance band. A goodput
    prediction gives, at every closed sweep point, the SLOs as one-sided bands on the chosen percentile
    (``ttft_p99 <= 500 ms``, ``tpot_p99 <= 50 ms``): whether each point meets them decides which point is the
    goodput, though the goodput's own band (a throughput at a point not known in advance) is no per-point target."""
    if point.id == "batch1":
        return ()
    stat = STATISTIC_OF_QUANTITY.get(pred.quantity)
    if stat is not None and pred.q.points is not None and pred.q.points != "all":
        band = _band(pred)
        if band is None:
            return ()
        return (DecisionTarget(pred.quantity, stat, band[0], band[1], pred.id),)
    if pred.quantity in ("goodput", "goodput_concurrency") and point.mode == PointMode.CLOSED:
        pct = str(pred.at.get("percentile", spec.slo.get("percentile", "p99")))
        out = []
        for metric in ("ttft", "tpot"):
            limit = pred.at.get(metric, spec.slo.get(metric))
            if isinstance(limit, (int, float)) and math.isfinite(limit):
                out.append(DecisionTarget(f"{metric}_{pct}", f"{metric}_{pct}", None, float(limit), pred.id,
                                          conjunction=True))
        return tuple(out)
    return ()


#: workload fields only the models read (the decode roofline's KV context per sequence); every other field of
#: ``workload:`` changes what the load generator sends (measure/sweep.py ``run_point``)
MODEL_ONLY_WORKLOAD_KEYS = ("kv_context",)


def _described(workload: Mapping[str, Any], key: str) -> str:
    if key in ("input_len", "output_len"):
        dist = workload.get(key.replace("_len", "_dist"))
        if dist:
            d = dist if dist.get("dist") != "file" else {"dist": "file", "path": dist.get("source")}
            return "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
    if key == "dataset" and workload.get("dataset"):
        return str(workload["dataset"].get("source") or workload["dataset"].get("path"))
    value = workload.get(key)
    return "none" if value is None else str(value)


def workload_override(spec: Spec, pred: Prediction) -> dict[str, tuple[str, str]]:
    """The fields of ``workload:`` a prediction's ``setup: {workload: ...}`` changes that the load generator
    sends: field -> (the file's, the prediction's), as written (a distribution as its parameters, a dataset as its
    path). Empty when the prediction has no override, or one that changes only what the models read."""
    own = pred.setup.get("workload")
    if own is None:
        return {}
    keys = {k.replace("_dist", "_len") for k in (*own, *spec.workload)} - set(MODEL_ONLY_WORKLOAD_KEYS)
    out = {}
    for key in sorted(keys):
        names = (key, key.replace("_len", "_dist")) if key in ("input_len", "output_len") else (key,)
        # a field the file leaves out and one written as its zero (seed 0, prefix_share 0) send the same requests
        if any((spec.workload.get(n) or None) != (own.get(n) or None) for n in names):
            out[key] = (_described(spec.workload, key), _described(own, key))
    return out


def _changed(file_value: Any, own: Any) -> bool:
    return (file_value or None) != (own or None)


def unmeasured_reason(spec: Spec, pred: Prediction) -> str | None:
    """Why a measured run does not measure ``pred`` (None: it does), when the prediction's ``setup:`` describes
    something other than what the run sends or launches. A measured run launches (or connects to, or replays) one
    engine per prediction file, its ``engine:`` and ``model:``, and sends its ``workload:`` at every point; every
    prediction reads those points at its concurrency or rate (``Measurement.point``) and the engine's own report
    (the KV blocks). So a prediction whose ``setup: {engine: ...}`` or ``{model: ...}`` differs from the file's, or
    whose ``setup: {workload: ...}`` changes what the load generator sends, would be scored against another
    engine's or another workload's figures: it is checked against the model instead, as without a GPU (the
    verdict says why: ``scoring.score``), and needs no point. A workload override of a quantity read from the
    engine's report alone (the KV blocks) sends no requests, and stays measured; so does an override of
    ``kv_context`` (the models read it, nothing sends it). A ``setup: {hardware: ...}`` override stays measured:
    the run measures the card it runs on, and a prediction written for another card (day3.yaml's PCIe draft) is
    the comparison the user asked for."""
    if pred.q.measure is None:
        return None
    what: list[str] = []
    own_engine = pred.setup.get("engine")
    if own_engine is not None:
        keys = sorted(k for k in set(own_engine) | set(spec.engine) if _changed(spec.engine.get(k), own_engine.get(k)))
        if keys:
            what.append("setup: {engine: ...} changes the engine the run launches ("
                        + "; ".join(f"{k}: {own_engine.get(k)!r} here, {spec.engine.get(k)!r} in the file"
                                    for k in keys) + ")")
    if "model" in pred.setup and (pred.setup.get("model") != spec.model
                                  or _changed(spec.model_overrides, pred.setup.get("model_overrides"))):
        what.append(f"setup: {{model: ...}} names another model ({pred.setup.get('model')!r} here, "
                    f"{spec.model!r} in the file)")
    changed = workload_override(spec, pred) if pred.q.points is not None else {}
    if changed:
        what.append("setup: {workload: ...} changes what the load generator sends ("
                    + "; ".join(f"{k}: {mine} here, {theirs} in the file" for k, (theirs, mine) in changed.items())
                    + ")")
    if not what:
        return None
    return (f"not measured: its {' and its '.join(what)}, and a measured run measures one engine, one model and "
            "one workload per prediction file, so it would be scored against the file's figures; it is checked "
            "against the model instead, as without a GPU. To measure it, move it to a prediction file whose "
            "engine:, model: and workload: are that setup (pytest runs several files in one session)")


def plan_points(spec: Spec, predictions: Iterable[Prediction]) -> list[PointPlan]:
    """Unique points the given predictions need, in run order (batch-1 first, then rising load), each with the
    decision targets (and the untargeted predictions) of the predictions that read it. A prediction the measured
    run refuses (:func:`unmeasured_reason`) needs no point."""
    seen: dict[str, PointPlan] = {}
    targets: dict[str, list[DecisionTarget]] = {}
    untargeted: dict[str, list[str]] = {}
    to_cap: dict[str, list[str]] = {}
    held: dict[str, list[str]] = {}
    for pred in predictions:
        if pred.error is not None or unmeasured_reason(spec, pred) is not None:
            continue
        for p in points_for(spec, pred):
            seen.setdefault(p.id, p)
            got = targets_for(spec, pred, p)
            if got:
                targets.setdefault(p.id, []).extend(t for t in got if t not in targets.get(p.id, []))
            elif pred.id not in untargeted.setdefault(p.id, []):
                untargeted[p.id].append(pred.id)
            if pred.quantity in RUN_TO_CAP_QUANTITIES and pred.id not in to_cap.setdefault(p.id, []):
                to_cap[p.id].append(pred.id)
            if pred.quantity in HELD_WINDOW_QUANTITIES and pred.id not in held.setdefault(p.id, []):
                held[p.id].append(pred.id)
    out = [replace(p, targets=tuple(targets.get(pid, ())), untargeted=tuple(untargeted.get(pid, ())),
                   to_cap=tuple(to_cap.get(pid, ())), held_window=tuple(held.get(pid, ())))
           for pid, p in seen.items()]
    return sorted(out, key=lambda p: p.sort_key)


def is_knee_only(point: PointPlan, predictions: Iterable[Prediction]) -> bool:
    """Whether only throughput-knee predictions read ``point`` (an adaptive sweep may then skip it when the knee's
    bisection does not need it: adaptive.knee_bisection)."""
    ids = set(point.untargeted) | {t.prediction_id for t in point.targets}
    quantities = {p.quantity for p in predictions if p.id in ids}
    return (bool(quantities) and quantities <= set(KNEE_QUANTITIES) and point.mode == PointMode.CLOSED
            and point.id != "batch1")


#: quantities whose only use of the closed sweep is the throughput knee (bisection can find it: adaptive.py)
KNEE_QUANTITIES = ("knee_concurrency",)


def needs_engine(predictions: Iterable[Prediction]) -> bool:
    """Whether any prediction needs a measurement at all (points or the engine's own report)."""
    return any(p.error is None and p.q.measure is not None for p in predictions)
