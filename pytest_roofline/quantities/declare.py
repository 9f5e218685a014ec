"""The building blocks the quantity families declare their quantities with: the decode step at a batch and
the roofline's inputs (the model side), a sweep point picked and checked from a measurement (the measured side),
and a point of the serving model's simulated sweep (the serving side).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_roofline.errors import NotMeasured, PointError
from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup, SetupError
from pytest_roofline.quantities.analysis import Thresholds, closed_points, is_flattered, point_notes
from pytest_roofline.quantities.measurement import (
    Measurement,
    PointRecord,
    client_number,
    client_value,
    measured_number,
    point_failure,
    point_id,
)
from pytest_roofline.quantities.quantity import (
    MeasuredValue,
    MeasureFn,
    ModelFn,
    ModelValue,
    Quantity,
    QuantityKind,
    QuantityPoints,
    ReplicaScaling,
    ServingFn,
)
from pytest_roofline.quantities.serving_values import ServingSweep, shares_text
from pytest_roofline.units import format_value


def batch_of(setup: Setup, at: Mapping[str, Any]) -> float:
    if "batch" in at:
        return float(at["batch"])
    if "concurrency" in at:
        return float(at["concurrency"])
    raise SetupError("needs at: {batch: B} (or at: {concurrency: C})")


def kv_seq(setup: Setup, at: Mapping[str, Any]) -> float:
    return setup.kv_bytes_per_seq_at(at.get("context"))


# The decode roofline at tensor parallelism: every GPU of the group runs the same step on its shard, so the step
# time is one GPU's -- its weights (Setup.weight_bytes_per_gpu), its KV heads (kv_bytes_per_token_per_gpu), its
# FLOPs (flop_per_token / TP), its own bandwidth and peak -- plus the step's all-reduces (Setup.allreduce,
# analytical.tensor_parallel_allreduce); throughput is the whole group's (B sequences per step).  At TP = 1 each
# per-GPU figure is the whole-model one and the all-reduce time is 0, so every value is as before.  Pipeline
# parallelism is modelled for memory and the KV pool only (Setup.require_single_stage refuses the rest).
def kv_seq_gpu(setup: Setup, at: Mapping[str, Any]) -> float:
    return setup.kv_bytes_per_seq_per_gpu_at(at.get("context"))


def weights_gpu(setup: Setup) -> float:
    setup.require_single_stage("the decode roofline")
    return setup.weight_bytes_per_gpu


def flop_gpu(setup: Setup) -> float:
    setup.require_single_stage("the decode roofline")
    return setup.flop_per_token_per_gpu


def roofline_inputs(setup: Setup, at: Mapping[str, Any]) -> dict[str, str]:
    d = setup.describe()
    ctx = at.get("context", setup.kv_context_tokens)
    d["kv_per_seq"] = (f"{ctx:,.0f} tokens × {setup.kv_bytes_per_token:,.0f} B = "
                       f"{format_value(setup.kv_bytes_per_seq_at(ctx), 'bytes', 'GB', digits=5)}")
    d["flop_per_token"] = (f"2 × {float(setup.model.active_param_count()):,.0f} = "
                           f"{setup.flop_per_token / 1e9:,.5g} GFLOP")
    if setup.tensor_parallel_size > 1 and setup.pipeline_parallel_size == 1:
        tp = setup.tensor_parallel_size
        d["kv_per_seq_per_gpu"] = (f"{ctx:,.0f} tokens × {setup.kv_bytes_per_token_per_gpu:,.0f} B = "
                                   f"{format_value(setup.kv_bytes_per_seq_per_gpu_at(ctx), 'bytes', 'GB', digits=5)}")
        d["flop_per_token_per_gpu"] = (f"{setup.flop_per_token / 1e9:,.5g} GFLOP ÷ {tp} = "
                                       f"{setup.flop_per_token_per_gpu / 1e9:,.5g} GFLOP")
        try:
            ar = setup.allreduce()
            d["allreduce"] = (f"{ar.calls} all-reduces × (2 × {tp - 1}/{tp} × {ar.bytes_per_token_per_call:,.0f} B "
                              f"per token ÷ {format_value(ar.link_bytes_per_s, 'bandwidth', 'GB/s', digits=4)} "
                              f"+ {ar.latency_s * 1e6:.3g} us)")
        except SetupError:
            pass
    return d


def decode_step(setup: Setup, at: Mapping[str, Any]) -> an.DecodeStep:
    return setup.decode_step(batch_of(setup, at), at.get("context"))


def step_quantity(name: str, dim: str, desc: str, attr: str, *, kind: QuantityKind = QuantityKind.NUMBER,
                  measure: MeasureFn | None = None, points: QuantityPoints | None = None,
                  choices: tuple[str, ...] = (), serving: ServingFn | None = None,
                  replicas: ReplicaScaling | None = None) -> Quantity:
    """A figure of the decode step at batch B (``Setup.decode_step``), attribute ``attr`` of it. A quantity that is
    also measured (``measure``) is taken at an open-loop ``rate`` too, where the roofline has no batch to step: its
    model column says so there (the serving model, which simulates the rate, still predicts it)."""
    def model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
        if "rate" in at:
            raise SetupError("the roofline's decode step is taken at a batch (or concurrency); an open-loop rate "
                             "names neither, so it has no value at a rate: predict it with 'predicted: model' "
                             "(the serving model simulates the rate) or a number")
        s = decode_step(setup, at)
        ar = f", + all-reduce {s.t_allreduce_s * 1e3:.4g} ms (TP {setup.tensor_parallel_size})" \
            if s.t_allreduce_s else ""
        per_gpu = " per GPU" if setup.tensor_parallel_size > 1 else ""
        return ModelValue(getattr(s, attr), roofline_inputs(setup, at),
                          f"decode step at B={s.batch:g}{per_gpu}: t_mem {s.t_mem_s * 1e3:.4g} ms, "
                          f"t_comp {s.t_comp_s * 1e3:.4g} ms, {s.bound}-bound{ar}")

    at = ("batch", "concurrency", "rate", "context") if measure is not None else ("batch", "concurrency", "context")
    return Quantity(name, dim, desc, kind=kind, at=at, model=model, measure=measure,
                    points=points, choices=choices, serving=serving, replicas=replicas)


def fact(name: str, dim: str, desc: str, fn: Callable[[Setup, Mapping[str, Any]], Any],
         at: tuple[str, ...] = (), kind: QuantityKind = QuantityKind.NUMBER, required: tuple[str, ...] = (),
         measure: MeasureFn | None = None, points: QuantityPoints | None = None, explain: str = "") -> Quantity:
    """A figure of the setup, ``fn(setup, at)``, explained by the roofline's inputs."""
    def model(setup: Setup, at_: Mapping[str, Any]) -> ModelValue:
        return ModelValue(fn(setup, at_), roofline_inputs(setup, at_), explain)

    return Quantity(name, dim, desc, kind=kind, at=at, required_at=required, model=model, measure=measure,
                    points=points)


def checked(pt: PointRecord) -> PointRecord:
    """``pt``, or PointError when it is not a measurement (failed requests, none completed): an ERROR, never a value
    taken from requests that did not happen."""
    why = point_failure(pt)
    if why is not None:
        raise PointError(why)
    return pt


def point_at(meas: Measurement, at: Mapping[str, Any]) -> PointRecord:
    if "concurrency" in at:
        return checked(meas.point(concurrency=int(at["concurrency"])))
    if "rate" in at:
        return checked(meas.point(rate=float(at["rate"])))
    if "batch" in at:
        return checked(meas.point(concurrency=int(at["batch"])))
    raise NotMeasured("needs at: {concurrency: C} or at: {rate: R} to pick a sweep point")


def sweep_points(meas: Measurement) -> list[PointRecord]:
    """The closed-loop sweep points, each checked (:func:`checked`): a whole-sweep figure (a knee, goodput, the
    preemption and queueing limits) needs every point it reads to be a measurement."""
    return [checked(p) for p in closed_points(meas.points())]


def engine_report(meas: Measurement) -> Mapping[str, Any]:
    rep = meas.engine_report()
    if rep is None:
        return {}
    if not isinstance(rep, Mapping):
        raise PointError(f"engine_report is a {type(rep).__name__}, not an object: it cannot be scored")
    return rep


def _why_not_recorded(pt: Mapping[str, Any], path: Sequence[str]) -> str:
    """Why a point has no value at ``path``: what a peer's reader said its file does not report (the point's
    ``not_reported``, keyed by the figure: GuideLLM reports no ITL), else that the results file does not record it."""
    said = pt.get("not_reported")
    why = said.get(path[0]) if isinstance(said, Mapping) and path else None
    return str(why) if why else "the results file does not record it"


def client_measured(meas: Measurement, at: Mapping[str, Any], th: Thresholds, path: Sequence[str], what: str,
            setup: Setup | None = None, scale: float = 1.0) -> MeasuredValue:
    pt = point_at(meas, at)
    interval = client_interval(pt, path, scale)
    # the stored figure is the one scored (the mean over every completed request, as vllm bench serve defines
    # mean_*_ms); its interval is centred on it: a batch-means interval written before 2026-12-06 was centred on
    # the mean of the batches, which leave the last few requests out (30 of 32: TTFT mean 8.851 for 8.661 ms)
    val = client_number(pt, *path)
    if interval is not None:
        if val is None:
            val = float(interval["estimate"]) / scale
        elif path[-1] == "mean":
            interval = _centred(interval, val * scale)
    if val is None:
        raise NotMeasured(f"point {pt.get('id')} has no {what} ({_why_not_recorded(pt, path)})")
    # an unbounded side ("p99 from 80 samples: no upper bound at 95%") is said by the verdict's interval text
    return MeasuredValue(val * scale, (point_id(pt),), tuple(point_notes(pt, th, setup)), is_flattered(pt, th, setup),
                         interval)


def _centred(interval: dict[str, Any], value: float) -> dict[str, Any]:
    """A mean's interval moved to be centred on ``value`` (SI), its half-width kept."""
    shift = value - float(interval["estimate"])
    if shift == 0:
        return interval
    out = {**interval, "estimate": value}
    for k in ("lo", "hi"):
        if out.get(k) is not None:
            out[k] = float(out[k]) + shift
    return out


def client_interval(pt: PointRecord, path: Sequence[str], scale: float) -> dict[str, Any] | None:
    """The figure's interval over the point's steady window (``client.intervals``, written by a live sweep since
    issue 13), scaled to SI; None for a point without one, which is then scored on its stored figure as before."""
    ivs = client_value(pt, "intervals")
    iv = ivs.get(".".join(path)) if isinstance(ivs, Mapping) else None
    if not isinstance(iv, Mapping) or measured_number(iv.get("estimate"), "interval estimate") is None:
        return None
    out = dict(iv)
    for k in ("estimate", "lo", "hi"):
        if out.get(k) is not None:
            out[k] = float(out[k]) * scale
    return out


def client_quantity(name: str, dim: str, desc: str, path: Sequence[str], what: str, model: ModelFn | None = None,
                    scale: float = 1.0, serving: ServingFn | None = None,
                    replicas: ReplicaScaling | None = None) -> Quantity:
    """A figure of the client's record of a sweep point (``client.<path>``, × ``scale`` to SI)."""
    def measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
        return client_measured(meas, at, th, path, what, setup, scale)

    return Quantity(name, dim, desc, at=("concurrency", "rate", "batch", "context"), measure=measure, model=model,
                    points=QuantityPoints.AT, serving=serving, replicas=replicas)


def sim_explanation(point_id: str, pp: Any) -> str:
    return (f"serving model, {point_id}: {pp.num_requests:,} requests simulated in {pp.steps:,} engine steps, "
            f"mean running batch {pp.mean_running_batch:.1f} (max {pp.max_running_batch}), "
            f"{pp.preemptions:,} preemptions; busy time: {shares_text(pp.time_shares)}")


def serve_point(attr: str, scale: float = 1.0) -> ServingFn:
    def serving(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
        p, pp = sweep.at(at)
        return ModelValue(float(getattr(pp, attr)) * scale, sweep.inputs(), sim_explanation(p.id, pp))

    return serving
