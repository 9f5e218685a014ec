"""The quantity registry: every named thing a prediction can be about.

Each :class:`Quantity` knows its dimension (so ``1,742 tok/s`` is checked to fit), which ``at:`` parameters it
takes, how the analytical model computes it from a :class:`~pytest_roofline.model.setup.Setup` (``model``), and how
it is extracted from a measurement (``measure``). A quantity with only ``model`` is checked in CPU-only mode;
one with only ``measure`` needs a GPU, an endpoint or a replayed results file; one with both is checked
against the model in CPU-only mode and against the measurement otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, cast

from pytest_roofline.errors import NotMeasured, PointError
from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup, SetupError, kv_accounting, reported_kv
from pytest_roofline.quantities.analysis import (
    Thresholds,
    closed_points,
    goodput_table,
    is_contaminated,
    point_notes,
    throughput_knee,
    ttft_knee,
)
from pytest_roofline.quantities.measurement import (
    BATCH1_ID,
    EngineReport,
    Measurement,
    PointRecord,
    client_number,
    client_value,
    concurrency,
    measured_number,
    point_failure,
    point_id,
    server_number,
)
from pytest_roofline.quantities.serving_values import ServingSweep, shares_text
from pytest_roofline.units import GIB, format_value

__all__ = [
    "AtParam", "AT_PARAMS", "Quantity", "QUANTITIES", "ModelValue", "MeasuredValue", "NotMeasured",
    "Thresholds", "get_quantity", "QuantityKind", "QuantityPoints",
]


@dataclass(frozen=True)
class AtParam:
    name: str
    dimension: str  # a units.DIMENSIONS key, "lengths" (list of token counts) or "choice"
    description: str
    choices: tuple[str, ...] = ()
    expandable: bool = False  # accepts "every" (one test per sweep point)


AT_PARAMS: dict[str, AtParam] = {p.name: p for p in [
    AtParam("batch", "count", "decode batch size B (running sequences per step)"),
    AtParam("concurrency", "count", "closed-loop concurrency of a sweep point; 'every' = each swept concurrency",
            expandable=True),
    AtParam("rate", "request_rate", "open-loop arrival rate of a sweep point (req/s); 'every' = each swept rate",
            expandable=True),
    AtParam("context", "count", "KV context per sequence in tokens (default: workload.kv_context)"),
    AtParam("prompt_tokens", "count", "prompt length in tokens (default: workload.input_len)"),
    AtParam("request_tokens", "count", "tokens per request for a max-concurrency figure (default: max_model_len)"),
    AtParam("pool", "bytes", "a KV pool size, e.g. 30 GiB"),
    AtParam("k", "count", "projection input width K"),
    AtParam("m", "count", "projection output width M"),
    AtParam("dtype_bytes", "count", "bytes per element of a projection (default 2)"),
    AtParam("lengths", "lengths", "sequence lengths of a static batch, e.g. [20, 50, 80, 200]"),
    AtParam("spacing", "time", "deterministic inter-arrival spacing, e.g. 20 ms"),
    AtParam("arrival_rate", "request_rate", "Poisson arrival rate of a dynamic batcher, e.g. 50 req/s"),
    AtParam("percentile", "choice", "percentile an SLO is judged at", choices=("p50", "p90", "p95", "p99", "mean")),
    AtParam("ttft", "time", "TTFT SLO (default: slo.ttft)"),
    AtParam("tpot", "time", "TPOT SLO (default: slo.tpot)"),
    AtParam("dtype", "choice", "tensor-core dtype of a ridge point", choices=("bf16", "fp16", "fp8", "tf32", "int8")),
]}


@dataclass(frozen=True)
class ModelValue:
    value: Any
    inputs: Mapping[str, str] = field(default_factory=dict)
    explanation: str = ""


@dataclass(frozen=True)
class MeasuredValue:
    value: Any
    points: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    contaminated: bool = False
    #: the value's confidence interval, as the results file stores it (``client.intervals``, docs/results-schema.md:
    #: estimate, lo, hi (null: unbounded), level, method, n, requests, note), in the quantity's SI unit; None when
    #: the point recorded none (a file from before intervals, a transcribed one)
    interval: Mapping[str, Any] | None = None


class QuantityKind(StrEnum):
    """What a quantity's value is, which decides how a prediction of it is written and compared."""

    NUMBER = "number"  # a number with a unit, compared within a tolerance
    OPTIONAL_NUMBER = "optional_number"  # a number, or none (e.g. a knee that does not exist)
    BOOL = "bool"  # true / false, compared exactly
    ENUM = "enum"  # one of Quantity.choices, compared exactly


class QuantityPoints(StrEnum):
    """Which sweep points a quantity's measurement needs (measure.plan measures exactly those)."""

    AT = "at"  # the point its at: names (concurrency, rate or batch)
    ALL = "all"  # every swept point (knees, goodput)
    BATCH1 = "batch1"  # the batch-1 point (else the concurrency-1 point)


ModelFn = Callable[[Setup, Mapping[str, Any]], ModelValue]
MeasureFn = Callable[[Measurement, Mapping[str, Any], Setup, Thresholds], MeasuredValue]
#: the serving model's value: (the simulated sweep, at, thresholds) -> ModelValue (see serving_values)
ServingFn = Callable[["ServingSweep", Mapping[str, Any], Thresholds], ModelValue]


@dataclass(frozen=True)
class Quantity:
    name: str
    dimension: str
    description: str
    kind: QuantityKind = QuantityKind.NUMBER
    at: tuple[str, ...] = ()
    required_at: tuple[str, ...] = ()
    model: ModelFn | None = None
    measure: MeasureFn | None = None
    choices: tuple[str, ...] = ()
    #: sweep points the measurement needs; None: none (the engine's own report, or nothing measured)
    points: QuantityPoints | None = None
    #: the step-level serving model's value of a measured quantity (quantities/serving_values.py), or None
    serving: ServingFn | None = None

    def __post_init__(self) -> None:  # registrations may name kinds by their value ("bool")
        object.__setattr__(self, "kind", QuantityKind(self.kind))
        if self.points is not None:
            object.__setattr__(self, "points", QuantityPoints(self.points))

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(m for m, f in (("math", self.model), ("measured", self.measure)) if f is not None)


QUANTITIES: dict[str, Quantity] = {}


def _register(q: Quantity) -> Quantity:
    QUANTITIES[q.name] = q
    return q


def get_quantity(name: str) -> Quantity:
    return QUANTITIES[name]


# --------------------------------------------------------------------------------------------------------------
# helpers shared by the model functions
# --------------------------------------------------------------------------------------------------------------
def _batch(setup: Setup, at: Mapping[str, Any]) -> float:
    if "batch" in at:
        return float(at["batch"])
    if "concurrency" in at:
        return float(at["concurrency"])
    raise SetupError("needs at: {batch: B} (or at: {concurrency: C})")


def _kv_seq(setup: Setup, at: Mapping[str, Any]) -> float:
    return setup.kv_bytes_per_seq_at(at.get("context"))


# The decode roofline at tensor parallelism: every GPU of the group runs the same step on its shard, so the step
# time is one GPU's -- its weights (Setup.weight_bytes_per_gpu), its KV heads (kv_bytes_per_token_per_gpu), its
# FLOPs (flop_per_token / TP), its own bandwidth and peak -- plus the step's all-reduces (Setup.allreduce,
# analytical.tensor_parallel_allreduce); throughput is the whole group's (B sequences per step).  At TP = 1 each
# per-GPU figure is the whole-model one and the all-reduce time is 0, so every value is as before.  Pipeline
# parallelism is modelled for memory and the KV pool only (Setup.require_single_stage refuses the rest).
def _kv_seq_gpu(setup: Setup, at: Mapping[str, Any]) -> float:
    return setup.kv_bytes_per_seq_per_gpu_at(at.get("context"))


def _w_gpu(setup: Setup) -> float:
    setup.require_single_stage("the decode roofline")
    return setup.weight_bytes_per_gpu


def _f_gpu(setup: Setup) -> float:
    setup.require_single_stage("the decode roofline")
    return setup.flop_per_token_per_gpu




def _roofline_inputs(setup: Setup, at: Mapping[str, Any]) -> dict[str, str]:
    d = setup.describe()
    ctx = at.get("context", setup.kv_context_tokens)
    d["kv_per_seq"] = (f"{ctx:,.0f} tokens × {setup.kv_bytes_per_token:,.0f} B = "
                       f"{format_value(setup.kv_bytes_per_seq_at(ctx), 'bytes', 'GB', digits=5)}")
    d["flop_per_token"] = f"2 × {float(setup.model.active_param_count()):,.0f} = {setup.flop_per_token:.5g} FLOP"
    if setup.tensor_parallel_size > 1 and setup.pipeline_parallel_size == 1:
        tp = setup.tensor_parallel_size
        d["kv_per_seq_per_gpu"] = (f"{ctx:,.0f} tokens × {setup.kv_bytes_per_token_per_gpu:,.0f} B = "
                                   f"{format_value(setup.kv_bytes_per_seq_per_gpu_at(ctx), 'bytes', 'GB', digits=5)}")
        d["flop_per_token_per_gpu"] = f"{setup.flop_per_token:.5g} ÷ {tp} = {setup.flop_per_token_per_gpu:.5g} FLOP"
        try:
            ar = setup.allreduce()
            d["allreduce"] = (f"{ar.calls} all-reduces × (2 × {tp - 1}/{tp} × {ar.bytes_per_token_per_call:,.0f} B "
                              f"per token ÷ {format_value(ar.link_bytes_per_s, 'bandwidth', 'GB/s', digits=4)} "
                              f"+ {ar.latency_s * 1e6:.3g} us)")
        except SetupError:
            pass
    return d


def _step(setup: Setup, at: Mapping[str, Any]) -> an.DecodeStep:
    return setup.decode_step(_batch(setup, at), at.get("context"))


def _step_q(name: str, dim: str, desc: str, attr: str, *, kind: QuantityKind = QuantityKind.NUMBER,
            measure: MeasureFn | None = None,
            points: QuantityPoints | None = None, choices: tuple[str, ...] = ()) -> Quantity:
    def model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
        s = _step(setup, at)
        ar = f", + all-reduce {s.t_allreduce_s * 1e3:.4g} ms (TP {setup.tensor_parallel_size})" \
            if s.t_allreduce_s else ""
        per_gpu = " per GPU" if setup.tensor_parallel_size > 1 else ""
        return ModelValue(getattr(s, attr), _roofline_inputs(setup, at),
                          f"decode step at B={s.batch:g}{per_gpu}: t_mem {s.t_mem_s * 1e3:.4g} ms, "
                          f"t_comp {s.t_comp_s * 1e3:.4g} ms, {s.bound}-bound{ar}")

    return _register(Quantity(name, dim, desc, kind=kind, at=("batch", "concurrency", "context"), model=model,
                              measure=measure, points=points, choices=choices))


def _fact(name: str, dim: str, desc: str, fn: Callable[[Setup, Mapping[str, Any]], Any],
          at: tuple[str, ...] = (), kind: QuantityKind = QuantityKind.NUMBER, required: tuple[str, ...] = (),
          measure: MeasureFn | None = None, points: QuantityPoints | None = None, explain: str = "") -> Quantity:
    def model(setup: Setup, at_: Mapping[str, Any]) -> ModelValue:
        return ModelValue(fn(setup, at_), _roofline_inputs(setup, at_), explain)

    return _register(Quantity(name, dim, desc, kind=kind, at=at, required_at=required, model=model,
                              measure=measure, points=points))


def _pure(name: str, dim: str, desc: str, fn: Callable[[Mapping[str, Any]], Any], at: tuple[str, ...],
          required: tuple[str, ...], kind: QuantityKind = QuantityKind.NUMBER,
          explain: Callable[[Mapping[str, Any]], str] | None = None
          ) -> Quantity:
    """A quantity computed from its at: parameters alone (batching arithmetic, projection traffic)."""

    def model(setup: Setup, at_: Mapping[str, Any]) -> ModelValue:
        inputs = {k: _show(v) for k, v in at_.items()}
        return ModelValue(fn(at_), inputs, explain(at_) if explain else "")

    return _register(Quantity(name, dim, desc, kind=kind, at=at, required_at=required, model=model))


def _show(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, float) and v.is_integer():
        return f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, (int, float)) else str(v)


# --------------------------------------------------------------------------------------------------------------
# measurement extraction
# --------------------------------------------------------------------------------------------------------------
def _checked(pt: PointRecord) -> PointRecord:
    """``pt``, or PointError when it is not a measurement (failed requests, none completed): an ERROR, never a value
    taken from requests that did not happen."""
    why = point_failure(pt)
    if why is not None:
        raise PointError(why)
    return pt


def _point(meas: Measurement, at: Mapping[str, Any]) -> PointRecord:
    if "concurrency" in at:
        return _checked(meas.point(concurrency=int(at["concurrency"])))
    if "rate" in at:
        return _checked(meas.point(rate=float(at["rate"])))
    if "batch" in at:
        return _checked(meas.point(concurrency=int(at["batch"])))
    raise NotMeasured("needs at: {concurrency: C} or at: {rate: R} to pick a sweep point")


def _sweep_points(meas: Measurement) -> list[PointRecord]:
    """The closed-loop sweep points, each checked (:func:`_checked`): a whole-sweep figure (a knee, goodput, the
    preemption and queueing limits) needs every point it reads to be a measurement."""
    return [_checked(p) for p in closed_points(meas.points())]


def _engine_report(meas: Measurement) -> Mapping[str, Any]:
    rep = meas.engine_report()
    if rep is None:
        return {}
    if not isinstance(rep, Mapping):
        raise PointError(f"engine_report is a {type(rep).__name__}, not an object: it cannot be scored")
    return rep


def _client(meas: Measurement, at: Mapping[str, Any], th: Thresholds, path: Sequence[str], what: str,
            setup: Setup | None = None, scale: float = 1.0) -> MeasuredValue:
    pt = _point(meas, at)
    interval = _client_interval(pt, path, scale)
    val = client_number(pt, *path) if interval is None else float(interval["estimate"]) / scale
    if val is None:
        raise NotMeasured(f"point {pt.get('id')} has no {what} (the results file does not record it)")
    # an unbounded side ("p99 from 80 samples: no upper bound at 95%") is said by the verdict's interval text
    return MeasuredValue(val * scale, (point_id(pt),), tuple(point_notes(pt, th, setup)), is_contaminated(pt, th),
                         interval)


def _client_interval(pt: PointRecord, path: Sequence[str], scale: float) -> dict[str, Any] | None:
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


def _client_q(name: str, dim: str, desc: str, path: Sequence[str], what: str, model: ModelFn | None = None,
              scale: float = 1.0) -> Quantity:
    def measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
        return _client(meas, at, th, path, what, setup, scale)

    return _register(Quantity(name, dim, desc, at=("concurrency", "rate", "batch", "context"), measure=measure,
                              model=model, points=QuantityPoints.AT))


# --------------------------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------------------------
def _ridge(setup: Setup, at: Mapping[str, Any]) -> float:
    dtype = at.get("dtype") or setup.compute_dtype
    return an.ridge_flop_per_byte(setup.hardware.peak_for(dtype), setup.hbm_bytes_per_s)


_fact("ridge_point", "intensity", "peak FLOP/s ÷ peak HBM bytes/s: the intensity where a kernel turns compute-bound",
      _ridge, at=("dtype",))
_fact("param_count", "count", "total parameters, computed from the architecture", lambda s, a: s.model.param_count())
_fact("active_param_count", "count", "parameters touched per token (MoE: routed experts only)",
      lambda s, a: s.model.active_param_count())
_fact("weight_bytes", "bytes", "bytes of weights read per decode step (all parameters × bytes/param)",
      lambda s, a: s.weight_bytes)
_fact("flop_per_token", "flops", "linear FLOPs per generated token, 2 × active parameters",
      lambda s, a: s.flop_per_token)
_fact("kv_bytes_per_token", "bytes", "KV-cache bytes per token: 2 × layers × kv_heads × head_dim × bytes",
      lambda s, a: s.kv_bytes_per_token)
_fact("kv_bytes_per_seq", "bytes", "KV-cache bytes of one sequence at the KV context", _kv_seq, at=("context",))
_fact("kv_bytes_per_block", "bytes", "bytes of one vLLM KV block over all layers (page size × layers; one GPU's: "
      "its KV heads under TP, its stage's layers under PP)", lambda s, a: s.bytes_per_block)
_fact("weight_bytes_per_gpu", "bytes", "weight bytes one GPU holds: weight_bytes ÷ TP (+ K/V heads replicated when "
      "TP > KV heads; the largest pipeline stage's under PP); = weight_bytes on one GPU",
      lambda s, a: s.weight_bytes_per_gpu)
_fact("kv_bytes_per_token_per_gpu", "bytes", "KV bytes per token one GPU holds: its KV heads (replicated when TP > "
      "KV heads) × its stage's layers; = kv_bytes_per_token on one GPU", lambda s, a: s.kv_bytes_per_token_per_gpu)
_fact("num_gpus", "count", "GPUs one engine uses: tensor_parallel_size × pipeline_parallel_size",
      lambda s, a: s.num_gpus)

_step_q("decode_intensity", "intensity", "KV-inclusive arithmetic intensity of a decode step at batch B",
        "intensity_flop_per_byte")
_step_q("weight_only_intensity", "intensity", "weight-only arithmetic intensity of a decode step (KV ignored)",
        "weight_only_intensity_flop_per_byte")
_step_q("t_mem", "time", "memory time of a decode step: (weights + B × KV per seq) ÷ bandwidth", "t_mem_s")
_step_q("t_comp", "time", "compute time of a decode step: B × 2P ÷ peak FLOP/s", "t_comp_s")
_step_q("t_step", "time", "modelled decode step time, max(t_mem, t_comp) (+ t_allreduce under TP)", "t_step_s")
_step_q("t_allreduce", "time", "all-reduce time of a decode step at batch B under TP: 2 per layer of B × hidden × 2 "
        "bytes, ring: 2 (N-1)/N × bytes ÷ one link direction + latency per call (0 on one GPU)", "t_allreduce_s")
_step_q("decode_bytes", "bytes", "bytes moved by one decode step (weights + KV; one GPU's under TP)", "bytes_moved")
_step_q("decode_flops", "flops", "linear FLOPs of one decode step (one GPU's under TP)", "flops")
_step_q("kv_total_bytes", "bytes", "KV bytes read by one decode step at batch B (one GPU's under TP)", "kv_total_bytes")
_step_q("decode_bound", "ratio", "which roof binds a decode step: memory or compute", "bound", kind=QuantityKind.ENUM,
        choices=("memory", "compute"))


def _attainable(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    s = _step(setup, at)
    return ModelValue(s.flops / s.t_step_s, _roofline_inputs(setup, at), "decode FLOPs ÷ modelled step time")


def _utilisation(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    s = _step(setup, at)
    return ModelValue(s.flops / s.t_step_s / setup.peak_flop_per_s, _roofline_inputs(setup, at),
                      "attainable FLOP/s ÷ peak FLOP/s")


_register(Quantity("attainable_flop_rate", "flop_rate", "FLOP/s a decode step attains under the roofline",
                   at=("batch", "concurrency", "context"), model=_attainable))
_register(Quantity("compute_utilization", "ratio", "attainable ÷ peak FLOP/s of a decode step",
                   at=("batch", "concurrency", "context"), model=_utilisation))


def _measured_output_tput(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    return _client(meas, at, th, ("output_throughput_tok_s",), "output throughput", setup)


def _measured_per_request(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    return _client(meas, at, th, ("per_request_output_tok_s", "mean"), "per-request throughput", setup)


_step_q("output_throughput", "throughput", "aggregate output tokens/s at batch/concurrency B "
        "(model: B ÷ t_step; measured: the sweep point's output throughput)", "throughput_tok_per_s",
        measure=_measured_output_tput, points=QuantityPoints.AT)
_step_q("per_request_throughput", "throughput", "output tokens/s each request sees at B "
        "(model: 1 ÷ t_step; measured: mean per-request output tok/s)", "per_request_tok_per_s",
        measure=_measured_per_request, points=QuantityPoints.AT)

_fact("intensity_asymptote", "intensity", "limit of the KV-inclusive intensity as B → ∞: 2P ÷ KV bytes per seq "
      "(per GPU under TP)",
      lambda s, a: s.roofline_landmarks(a.get("context")).intensity_asymptote_flop_per_byte, at=("context",))
_fact("half_saturation_batch", "count", "batch where throughput reaches half its asymptote: weights ÷ KV per seq "
      "(per GPU under TP)",
      lambda s, a: s.roofline_landmarks(a.get("context")).half_saturation_batch, at=("context",))
_fact("throughput_asymptote", "throughput", "memory-bound throughput limit: bandwidth ÷ KV bytes per seq (one GPU's "
      "bandwidth ÷ its share of the KV under TP: the group's throughput)",
      lambda s, a: s.roofline_landmarks(a.get("context")).throughput_asymptote_tok_per_s, at=("context",))
_fact("compute_roof", "throughput", "compute-bound throughput limit: peak FLOP/s ÷ 2P (TP × peak ÷ 2P for the group)",
      lambda s, a: s.roofline_landmarks().compute_roof_tok_per_s)
_fact("t_comp_per_seq", "time", "compute time each added sequence costs a decode step",
      lambda s, a: _f_gpu(s) / s.peak_flop_per_s)
_fact("t_mem_per_seq", "time", "memory time each added sequence costs a decode step (its KV read)",
      lambda s, a: _kv_seq_gpu(s, a) / s.hbm_bytes_per_s, at=("context",))
_fact("t_mem_intercept", "time", "memory time of the weight read alone (B → 0; one GPU's share under TP)",
      lambda s, a: _w_gpu(s) / s.hbm_bytes_per_s)


def _knee_model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    k = setup.roofline_knee(at.get("context"))
    return ModelValue(k.batch, _roofline_inputs(setup, at), k.reason)


def _knee_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = _sweep_points(meas)

    def tput(p: PointRecord) -> float | None:  # the steady-window figure where the run recorded it
        return client_number(p, "steady_output_throughput_tok_s") or client_number(p, "output_throughput_tok_s")

    usable = [(float(c), x) for c, x in ((concurrency(p), tput(p)) for p in pts) if x]
    if len(usable) < 2:
        raise NotMeasured("the throughput knee needs at least two closed-loop sweep points")
    knee = throughput_knee(usable, th.knee_gain)
    gains = ", ".join(f"{c2:g}: {x2 / x1 - 1:+.0%}" for (c1, x1), (c2, x2) in zip(usable, usable[1:]))
    note = (f"knee = smallest concurrency whose doubling adds < {th.knee_gain:.0%} throughput; gains: {gains}")
    contaminated = any(is_contaminated(p, th) for p in pts)
    return MeasuredValue(knee, tuple(point_id(p) for p in pts),
                         (note, *[n for p in pts for n in point_notes(p, th, setup)]), contaminated)


_register(Quantity("knee_concurrency", "count", "where decode stops being memory-bound. Model: the roofline knee "
                   "B* where t_comp = t_mem (or none, with the reason). Measured: the smallest concurrency whose "
                   "doubling adds less than thresholds.knee_gain of aggregate throughput (none = only flattening)",
                   kind=QuantityKind.OPTIONAL_NUMBER, at=("context",), model=_knee_model, measure=_knee_measure,
                   points=QuantityPoints.ALL))
_fact("weight_only_knee", "count", "the naive knee with KV ignored: the batch where weight-only intensity = ridge",
      lambda s, a: an.roofline_knee(weight_bytes=_w_gpu(s), flop_per_token=_f_gpu(s), kv_bytes_per_seq=0.0,
                                    hbm_bytes_per_s=s.hbm_bytes_per_s, peak_flop_per_s=s.peak_flop_per_s).batch)
_fact("max_context_for_knee", "count", "largest KV context (tokens) at which a roofline knee exists",
      lambda s, a: an.max_context_for_knee_tokens(flop_per_token=_f_gpu(s), peak_flop_per_s=s.peak_flop_per_s,
                                                  hbm_bytes_per_s=s.hbm_bytes_per_s,
                                                  kv_bytes_per_token=s.kv_bytes_per_token_per_gpu))


def _batch1_ceiling(setup: Setup) -> float:
    """Bandwidth ÷ weight bytes, one GPU's share under TP (the all-reduces are left out: the weight read alone)."""
    return setup.roofline_landmarks().batch1_ceiling_tok_per_s


_fact("batch1_ceiling", "throughput", "batch-1 decode ceiling from the weight read alone: bandwidth ÷ weight bytes "
      "(one GPU's bandwidth ÷ its weights under TP)", lambda s, a: _batch1_ceiling(s))


def _batch1_point(meas: Measurement) -> PointRecord:
    for p in meas.points():
        if p.get("id") == BATCH1_ID:
            return _checked(p)
    return _checked(meas.point(concurrency=1))


def _batch1_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pt = _batch1_point(meas)
    x = client_number(pt, "output_throughput_tok_s")
    if x is None:
        raise NotMeasured(f"point {pt.get('id')} has no output throughput")
    return MeasuredValue(x, (point_id(pt),), tuple(point_notes(pt, th)), is_contaminated(pt, th))


def _batch1_fraction(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    mv = _batch1_measure(meas, at, setup, th)
    ceiling = _batch1_ceiling(setup)
    return MeasuredValue(mv.value / ceiling, mv.points,
                         (f"{mv.value:,.1f} tok/s ÷ ceiling {ceiling:,.1f} tok/s", *mv.notes), mv.contaminated)


_register(Quantity("batch1_throughput", "throughput", "single-request decode tokens/s (model: KV-inclusive "
                   "decode step at B=1; measured: the 'batch1' point, else the concurrency-1 point)",
                   at=("context",), model=lambda s, a: ModelValue(_step(s, {**a, "batch": 1}).throughput_tok_per_s,
                                                                  _roofline_inputs(s, a), "1 ÷ t_step(B=1)"),
                   measure=_batch1_measure, points=QuantityPoints.BATCH1))
_register(Quantity("batch1_fraction_of_ceiling", "ratio", "measured batch-1 tok/s ÷ the weight-read ceiling",
                   measure=_batch1_fraction, points=QuantityPoints.BATCH1))
_fact("prefill_floor", "time", "compute floor of a prefill (TTFT floor): prompt tokens × 2P ÷ peak FLOP/s (÷ TP; "
      "the all-reduces are left out of the floor)",
      lambda s, a: an.prefill_floor_s(int(a.get("prompt_tokens", s.input_len)), _f_gpu(s), s.peak_flop_per_s),
      at=("prompt_tokens",))


# --- vLLM KV accounting ----------------------------------------------------------------------------------------


def _kv_inputs(setup: Setup) -> dict[str, str]:
    acc = kv_accounting(setup)
    d = setup.describe()

    def gib(b: float | None) -> str:
        return format_value(b, "bytes", "GiB", digits=4)

    if setup.kv_cache_memory_bytes is not None:
        d["kv_pool"] = f"explicit {gib(setup.kv_cache_memory_bytes)} (kv_cache_memory_bytes / VLLM_CPU_KVCACHE_SPACE)"
    else:
        d["budget"] = f"{setup.gpu_memory_utilization:g} × {gib(setup.total_memory_bytes)} = {gib(acc.budget_bytes)}"
        d["weights"] = gib(acc.weight_bytes)
        d["activation_reserve"] = gib(acc.activation_bytes)
        if setup.activation_bytes is None and not (setup.model.hidden_size > 0 and setup.model.vocab_size > 0):
            d["activation_reserve"] += (" (no estimate: a nominal model without hidden_size/vocab_size; "
                                        "give engine.reserves.activation)")
        d["non_torch_reserve"] = gib(acc.non_torch_bytes)
        d["cuda_graph_reserve"] = gib(acc.cuda_graph_bytes)
    d["available_kv"] = gib(acc.available_kv_bytes)
    d["bytes_per_block"] = f"{setup.bytes_per_block:,.0f} B (block_size {setup.block_size})"
    return d


def _kv_q(name: str, dim: str, desc: str, fn: Callable[[an.KVAccounting, Setup, Mapping[str, Any]], Any],
          measure_key: str | None, at: tuple[str, ...] = (), measure_fn: MeasureFn | None = None) -> Quantity:
    def model(setup: Setup, at_: Mapping[str, Any]) -> ModelValue:
        acc = kv_accounting(setup)
        return ModelValue(fn(acc, setup, at_), _kv_inputs(setup),
                          "budget − weights − activation − non-torch − CUDA graphs, ÷ bytes per block")

    def measure(meas: Measurement, at_: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
        rep = cast(EngineReport, _engine_report(meas))
        val = measured_number(rep.get(measure_key), f"engine_report.{measure_key}") if measure_key else None
        if val is None:
            raise NotMeasured(f"the engine did not report {measure_key} (no startup log or cache_config_info)")
        if measure_key == "available_kv_cache_gib":
            val = float(val) * GIB
        return MeasuredValue(val, ("engine",), tuple(_report_notes(rep)))

    return _register(Quantity(name, dim, desc, at=at, model=model,
                              measure=measure_fn or (measure if measure_key else None), points=None))


def _report_notes(rep: EngineReport) -> list[str]:
    cc = rep.get("cross_check") or {}
    notes: list[str] = []
    if not isinstance(cc, Mapping):
        return notes
    if cc.get("detail"):
        notes.append(("cross-check ok: " if cc.get("ok") else "CROSS-CHECK FAILED: ") + str(cc["detail"]))
    return notes


def _request_tokens(setup: Setup, at: Mapping[str, Any]) -> int:
    if "request_tokens" in at:
        return int(at["request_tokens"])
    if setup.max_model_len:
        return setup.max_model_len
    return setup.input_len + setup.output_len


def _max_conc_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    rep = _engine_report(meas)

    def num(key: str) -> float | None:
        return measured_number(rep.get(key), f"engine_report.{key}")

    req = _request_tokens(setup, at)
    blocks, bs = num("num_gpu_blocks"), int(num("block_size") or setup.block_size)
    printed = num("max_concurrency")
    if printed is not None and rep.get("max_concurrency_tokens_per_request") == req:
        return MeasuredValue(printed, ("engine",), ("as printed in the startup log",))
    kv_tokens = num("kv_cache_tokens")
    if blocks is None and kv_tokens is not None:
        blocks = kv_tokens // bs
    if blocks is None:
        raise NotMeasured("the engine reported neither its block count nor its KV tokens")
    return MeasuredValue(blocks / math.ceil(req / bs), ("engine",),
                         (f"{blocks:,} blocks ÷ ceil({req:,} / {bs}) blocks per request",))


_kv_q("kv_budget_bytes", "bytes", "vLLM's memory budget: gpu_memory_utilization × total device memory",
      lambda acc, s, a: acc.budget_bytes, None)
_kv_q("available_kv_bytes", "bytes", "the KV pool vLLM allocates (log: 'Available KV cache memory')",
      lambda acc, s, a: acc.available_kv_bytes, "available_kv_cache_gib")
_kv_q("num_gpu_blocks", "count", "KV-cache blocks vLLM allocates (log '# GPU blocks' / cache_config_info)",
      lambda acc, s, a: acc.num_blocks, "num_gpu_blocks")
_kv_q("kv_cache_tokens", "count", "tokens the KV pool holds (log 'KV cache size: N tokens')",
      lambda acc, s, a: reported_kv(s, acc).kv_cache_tokens, "kv_cache_tokens")
_kv_q("max_concurrency", "ratio", "requests of request_tokens that fit the KV pool at once, as vLLM prints it",
      lambda acc, s, a: reported_kv(s, acc, _request_tokens(s, a)).max_concurrency,
      None, at=("request_tokens",), measure_fn=_max_conc_measure)


def _no_preempt_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = [p for p in _sweep_points(meas) if server_number(p, "preemptions") is not None]
    if not pts:
        raise NotMeasured("no sweep point recorded the preemption counter (/metrics not scraped)")
    clean = [concurrency(p) for p in pts if server_number(p, "preemptions") == 0]
    best = max(clean) if clean else 0
    return MeasuredValue(best, tuple(point_id(p) for p in pts),
                         ("largest swept concurrency with zero preemptions (a lower bound)",))


_kv_q("max_concurrency_without_preemption", "count", "requests of input+output tokens the KV pool holds before "
      "vLLM must preempt (model: KV tokens ÷ (input_len + output_len); measured: largest swept concurrency with "
      "zero preemptions)", lambda acc, s, a: math.floor(acc.kv_tokens / (s.input_len + s.output_len)), None,
      measure_fn=_no_preempt_measure)
def _admission_model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    acc = kv_accounting(setup)
    kv_seqs = math.floor(acc.kv_tokens / (setup.input_len + setup.output_len))
    limit = min(setup.max_num_seqs, kv_seqs)
    why = "max_num_seqs" if setup.max_num_seqs <= kv_seqs else "KV pool"
    return ModelValue(limit, {**_kv_inputs(setup), "max_num_seqs": str(setup.max_num_seqs),
                              "kv_sequences": f"{acc.kv_tokens:,} tokens ÷ {setup.input_len + setup.output_len:,} "
                                              f"= {kv_seqs:,}"},
                      f"min(max_num_seqs {setup.max_num_seqs}, KV sequences {kv_seqs:,}): the {why} binds")


def _admission_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    rows = []
    for p in _sweep_points(meas):
        q = server_number(p, "queue_ms", "mean")
        e2e = client_number(p, "e2e_ms", "mean")
        if q is not None and e2e:
            rows.append((concurrency(p), q, e2e, point_id(p)))
    if not rows:
        raise NotMeasured("needs vLLM's request_queue_time histogram on /metrics at closed-loop sweep points")
    clean = [c for c, q, e2e, _ in rows if q <= th.queue_fraction * e2e]
    detail = ", ".join(f"{c:g}: {q:,.1f} ms of {e2e:,.0f} ms" for c, q, e2e, _ in rows)
    return MeasuredValue(max(clean) if clean else 0, tuple(r[3] for r in rows),
                         (f"largest swept concurrency whose mean server-side queue time stays under "
                          f"{th.queue_fraction:.0%} of its mean E2E latency (a lower bound on the engine's limit); "
                          f"queue/E2E: {detail}",))


_register(Quantity("max_concurrency_without_queueing", "count", "the most concurrent requests vLLM runs before "
                   "new ones wait for a slot (the server-side knee). Model: min(max_num_seqs, KV sequences of "
                   "input_len + output_len tokens). Measured: the largest swept concurrency whose mean "
                   "vllm:request_queue_time stays under thresholds.queue_fraction of its mean E2E latency",
                   model=_admission_model, measure=_admission_measure, points=QuantityPoints.ALL))
_fact("max_num_seqs", "count", "vLLM's running-batch cap (default by version and GPU)", lambda s, a: s.max_num_seqs)
_fact("max_num_batched_tokens", "count", "vLLM's per-step token budget (default by version and GPU)",
      lambda s, a: s.max_num_batched_tokens)

# --- KV pool sizing (lesson §11) --------------------------------------------------------------------------------
_fact("kv_pool_sequences", "count", "whole sequences of the KV context that fit a pool",
      lambda s, a: an.kv_pool_sizing(float(a["pool"]), _kv_seq(s, a), 1).max_sequences, at=("pool", "context"),
      required=("pool",))
_fact("kv_required_bytes", "bytes", "KV bytes B sequences of the KV context need",
      lambda s, a: _batch(s, a) * _kv_seq(s, a), at=("batch", "concurrency", "context"))
_fact("kv_pool_fits", "ratio", "whether B sequences of the KV context fit a pool (true/false)",
      lambda s, a: an.kv_pool_sizing(float(a["pool"]), _kv_seq(s, a), int(_batch(s, a))).fits,
      at=("pool", "batch", "concurrency", "context"), kind=QuantityKind.BOOL, required=("pool",))
_fact("kv_pool_shortfall", "bytes", "bytes by which B sequences exceed a pool (0 when they fit)",
      lambda s, a: an.kv_pool_sizing(float(a["pool"]), _kv_seq(s, a), int(_batch(s, a))).shortfall_bytes,
      at=("pool", "batch", "concurrency", "context"), required=("pool",))

# --- projection traffic (lesson §2) ---------------------------------------------------------------------------
_PROJ_AT = ("batch", "k", "m", "dtype_bytes")


def _proj(attr: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda a: getattr(an.projection_traffic(int(a["batch"]), int(a["k"]), int(a["m"]),
                                                   int(a.get("dtype_bytes", 2))), attr)


for _name, _dim, _attr, _desc in [
    ("projection_weight_bytes", "bytes", "weight_bytes", "weight bytes of one K×M projection"),
    ("projection_input_bytes", "bytes", "input_bytes", "input activation bytes, dtype × B × K"),
    ("projection_output_bytes", "bytes", "output_bytes", "output activation bytes, dtype × B × M"),
    ("projection_total_bytes", "bytes", "total_bytes", "weights + input + output bytes of a projection"),
    ("projection_flops", "flops", "flops", "FLOPs of a projection, 2 × B × K × M"),
    ("projection_intensity", "intensity", "intensity_flop_per_byte", "projection intensity counting activations"),
    ("projection_weight_only_intensity", "intensity", "weight_only_intensity_flop_per_byte",
     "projection intensity counting weights only"),
    ("projection_activation_share", "ratio", "activation_share_of_traffic",
     "share of projection traffic that is activations"),
]:
    _pure(_name, _dim, _desc, _proj(_attr), _PROJ_AT, ("batch", "k", "m"))

# --- static and dynamic batching (lesson §7–8) ----------------------------------------------------------------
def _static_padding(attr: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda a: getattr(an.static_batch_padding(list(a["lengths"])), attr)


for _name, _dim, _attr, _desc in [
    ("static_slots", "count", "allocated_slots", "token slots a static batch allocates: n × max(lengths)"),
    ("static_useful_tokens", "count", "useful_tokens", "tokens a static batch actually generates: Σ lengths"),
    ("static_padded_slots", "count", "padded_slots", "padded (idle) slots of a static batch"),
    ("static_padded_ratio", "ratio", "padded_ratio", "padded slots ÷ allocated slots"),
]:
    _pure(_name, _dim, _desc, _static_padding(_attr), ("lengths",), ("lengths",))

_pure("aggregation_wait_mean", "time", "mean wait to fill a batch of B under deterministic spacing",
      lambda a: an.deterministic_aggregation_wait(float(a["spacing"]), int(a["batch"])).mean_s,
      ("spacing", "batch"), ("spacing", "batch"))
_pure("aggregation_wait_max", "time", "the first request's wait to fill a batch of B under deterministic spacing",
      lambda a: an.deterministic_aggregation_wait(float(a["spacing"]), int(a["batch"])).max_s,
      ("spacing", "batch"), ("spacing", "batch"))
_pure("poisson_first_wait", "time", "expected wait of a batch's first request under Poisson arrivals: (B − 1) ÷ λ "
      "(an Erlang mean, not a maximum)", lambda a: an.poisson_first_wait_s(float(a["arrival_rate"]), int(a["batch"])),
      ("arrival_rate", "batch"), ("arrival_rate", "batch"))


# --- measured serving quantities ------------------------------------------------------------------------------
_client_q("total_throughput", "throughput", "input + output tokens/s of a sweep point",
          ("total_throughput_tok_s",), "total throughput")
_client_q("request_throughput", "request_rate", "completed requests/s of a sweep point",
          ("request_throughput_req_s",), "request throughput")
for _metric, _label in (("ttft", "time to first token"), ("tpot", "time per output token (excl. the first)"),
                        ("itl", "inter-token latency (chunk gaps)"), ("e2e", "end-to-end request latency")):
    for _stat in ("mean", "p50", "p90", "p95", "p99"):
        # the results file stores *_ms; quantities work in seconds
        _client_q(f"{_metric}_{_stat}", "time", f"{_stat} {_label} at a sweep point", (f"{_metric}_ms", _stat),
                  f"{_metric} {_stat}", scale=1e-3)


def _ttft_knee_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = _sweep_points(meas)
    raw = [(float(concurrency(p)), client_number(p, "ttft_ms", "p50"), client_number(p, "ttft_ms", "p99")) for p in pts]
    rows = [(c, p50, p99) for c, p50, p99 in raw if p50 is not None and p99 is not None]
    if not rows:
        raise NotMeasured("the TTFT knee needs TTFT p50/p99 at closed-loop sweep points")
    knee = ttft_knee(rows, th.ttft_knee_ratio)
    detail = ", ".join(f"{c:g}: {p99 / p50:.1f}×" for c, p50, p99 in rows)
    return MeasuredValue(knee, tuple(point_id(p) for p in pts),
                         (f"TTFT knee = smallest concurrency with p99 > {th.ttft_knee_ratio:g} × p50; "
                          f"p99/p50: {detail}", *[n for p in pts for n in point_notes(p, th, setup)]),
                         any(is_contaminated(p, th) for p in pts))


_register(Quantity("ttft_knee_concurrency", "count", "smallest concurrency whose p99 TTFT exceeds "
                   "thresholds.ttft_knee_ratio × its p50 TTFT (none = never)", kind=QuantityKind.OPTIONAL_NUMBER,
                   measure=_ttft_knee_measure, points=QuantityPoints.ALL))


def _little_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pt = _point(meas, at)
    lam_w, in_flight = client_number(pt, "littles_law", "lambda_W"), client_number(pt, "littles_law", "L")
    if lam_w is not None and in_flight:
        ratio = lam_w / in_flight
    else:
        raise NotMeasured(f"point {pt.get('id')} has no Little's-law record")
    detail = f"L (time-averaged in flight) = {in_flight:.3g}, λ·W = {lam_w:.3g}"
    return MeasuredValue(ratio, (point_id(pt),), (detail,))


_register(Quantity("littles_law_ratio", "ratio", "λ·W ÷ L at a sweep point: throughput (req/s) × mean latency "
                   "over the time-averaged requests in flight; 1.0 when Little's law holds",
                   at=("concurrency", "rate"), measure=_little_measure, points=QuantityPoints.AT))


def _goodput(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> an.Goodput:
    rows = goodput_table(_sweep_points(meas))
    if not rows:
        raise NotMeasured("goodput needs closed-loop sweep points with TTFT/TPOT percentiles")
    pct = str(at.get("percentile", "p99"))
    try:
        return an.goodput(rows, ttft_ms_max=_slo_ms(at["ttft"]), tpot_ms_max=_slo_ms(at["tpot"]), percentile=pct)
    except KeyError as exc:  # a sweep point that did not record the SLO's percentile
        raise NotMeasured(f"goodput at {pct} needs TTFT and TPOT {pct} at every sweep point ({exc.args[0]})") from None
    except ValueError as exc:  # a figure that is not a number
        raise PointError(f"goodput cannot be computed from the sweep: {exc}") from None


def _slo_ms(seconds: float) -> float | None:
    return None if math.isinf(seconds) else seconds * 1e3


def _goodput_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    g = _goodput(meas, at, setup, th)
    return MeasuredValue(g.best_tok_per_s, (), (_goodput_note(g, at),))


def _goodput_c_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    g = _goodput(meas, at, setup, th)
    return MeasuredValue(g.best_concurrency, (), (_goodput_note(g, at),))


def _goodput_note(g: an.Goodput, at: Mapping[str, Any]) -> str:
    return (f"SLO TTFT < {float(at['ttft']) * 1e3:g} ms and TPOT < {float(at['tpot']) * 1e3:g} ms at "
            f"{at.get('percentile', 'p99')}: best {g.best_tok_per_s or 0:,.1f} tok/s at concurrency "
            f"{g.best_concurrency}; raw max {g.raw_max_tok_per_s:,.1f} tok/s; "
            f"SLOs are strict upper bounds (value < SLO is not required: value ≤ SLO passes)")


_register(Quantity("goodput", "throughput", "the highest output throughput among sweep points that meet every SLO "
                   "(TTFT and TPOT at the chosen percentile)", at=("percentile", "ttft", "tpot"),
                   measure=_goodput_measure, points=QuantityPoints.ALL))
_register(Quantity("goodput_concurrency", "count", "the sweep concurrency where goodput is reached",
                   kind=QuantityKind.OPTIONAL_NUMBER, at=("percentile", "ttft", "tpot"), measure=_goodput_c_measure,
                   points=QuantityPoints.ALL))


def _server_q(name: str, dim: str, desc: str, key: str) -> None:
    def measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
        pt = _point(meas, at)
        val = server_number(pt, key)
        if val is None:
            raise NotMeasured(f"point {pt.get('id')} has no server-side {key} (/metrics not scraped)")
        return MeasuredValue(val, (point_id(pt),), tuple(point_notes(pt, th)))

    _register(Quantity(name, dim, desc, at=("concurrency", "rate"), measure=measure, points=QuantityPoints.AT))


_server_q("preemptions", "count", "preemptions vLLM counted during a sweep point", "preemptions")
_server_q("prefix_cache_hit_rate", "ratio", "prefix-cache hits ÷ queries (tokens) during a sweep point",
          "prefix_cache_hit_rate")


# --------------------------------------------------------------------------------------------------------------
# the step-level serving model's values of the measured quantities
# --------------------------------------------------------------------------------------------------------------
def _sim_explanation(point_id: str, pp: Any) -> str:
    return (f"serving model, {point_id}: {pp.num_requests:,} requests simulated in {pp.steps:,} engine steps, "
            f"mean running batch {pp.mean_running_batch:.1f} (max {pp.max_running_batch}), "
            f"{pp.preemptions:,} preemptions; busy time: {shares_text(pp.time_shares)}")


def _serve_point(attr: str, scale: float = 1.0) -> ServingFn:
    def serving(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
        p, pp = sweep.at(at)
        return ModelValue(float(getattr(pp, attr)) * scale, sweep.inputs(), _sim_explanation(p.id, pp))

    return serving


def _serve_total(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    p, pp = sweep.at(at)
    tokens_in = p.input_len or sweep.setup.input_len
    # each completed request brings its prompt and its output: total = request rate × (in + out) tokens
    total = pp.output_throughput_tok_per_s + pp.request_throughput_req_per_s * tokens_in
    return ModelValue(total, sweep.inputs(), _sim_explanation(p.id, pp))


def _serve_ttft_knee(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    rows = [(float(c), pp.ttft_p50_ms, pp.ttft_p99_ms) for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("the TTFT knee needs closed-loop sweep points (sweep: {concurrency: [...]})")
    knee = ttft_knee(rows, th.ttft_knee_ratio)
    detail = ", ".join(f"{c:g}: {p99 / p50:.1f}×" for c, p50, p99 in rows if p50)
    return ModelValue(None if knee is None else int(knee), sweep.inputs(),
                      f"serving model: smallest concurrency with p99 TTFT > {th.ttft_knee_ratio:g} × p50; "
                      f"p99/p50: {detail}")


def _serve_knee(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    if "context" in at:
        raise SetupError("at: {context: ...} is a decode-roofline parameter")
    rows = [(float(c), pp.output_throughput_tok_per_s) for c, pp in sweep.closed()]
    if len(rows) < 2:
        raise SetupError("the throughput knee needs at least two closed-loop sweep points")
    knee = throughput_knee(rows, th.knee_gain)
    gains = ", ".join(f"{c2:g}: {x2 / x1 - 1:+.0%}" for (c1, x1), (c2, x2) in zip(rows, rows[1:], strict=False) if x1)
    return ModelValue(None if knee is None else int(knee), sweep.inputs(),
                      f"serving model: smallest concurrency whose doubling adds < {th.knee_gain:.0%} throughput; "
                      f"gains: {gains}")


def _serve_goodput_g(sweep: ServingSweep, at: Mapping[str, Any]) -> an.Goodput:
    pct = str(at.get("percentile", "p99"))
    if pct not in ("p50", "p99", "mean"):
        raise SetupError(f"the serving model predicts p50, p99 and mean latencies, not {pct}")
    rows = [{"concurrency": c, "output_tok_per_s": pp.output_throughput_tok_per_s,
             "ttft_ms": {"p50": pp.ttft_p50_ms, "p99": pp.ttft_p99_ms, "mean": pp.ttft_mean_ms},
             "tpot_ms": {"p50": pp.tpot_p50_ms, "p99": pp.tpot_p99_ms, "mean": pp.tpot_mean_ms}}
            for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("goodput needs closed-loop sweep points")
    return an.goodput(rows, ttft_ms_max=_slo_ms(at["ttft"]), tpot_ms_max=_slo_ms(at["tpot"]), percentile=pct)


def _serve_goodput(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    g = _serve_goodput_g(sweep, at)
    return ModelValue(g.best_tok_per_s, sweep.inputs(), "serving model: " + _goodput_note(g, at))


def _serve_goodput_c(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    g = _serve_goodput_g(sweep, at)
    return ModelValue(g.best_concurrency, sweep.inputs(), "serving model: " + _goodput_note(g, at))


def _serve_batch1(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    if "context" in at:
        raise SetupError("at: {context: ...} is a decode-roofline parameter")
    p, pp = sweep.batch1()
    return ModelValue(pp.output_throughput_tok_per_s, sweep.inputs(), _sim_explanation(p.id, pp))


def _serve_batch1_fraction(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    p, pp = sweep.batch1()
    ceiling = _batch1_ceiling(sweep.setup)
    return ModelValue(pp.output_throughput_tok_per_s / ceiling, sweep.inputs(),
                      f"serving model: {pp.output_throughput_tok_per_s:,.1f} tok/s at batch 1 ÷ ceiling "
                      f"{ceiling:,.1f} tok/s; " + _sim_explanation(p.id, pp))


def _serve_no_queue(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    rows = [(c, pp.mean_queue_ms, pp.e2e_mean_ms) for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("needs closed-loop sweep points")
    clean = [c for c, q, e2e in rows if q <= th.queue_fraction * e2e]
    detail = ", ".join(f"{c}: {q:,.1f} ms of {e2e:,.0f} ms" for c, q, e2e in rows)
    return ModelValue(max(clean) if clean else 0, sweep.inputs(),
                      f"serving model: largest swept concurrency whose mean queue time stays under "
                      f"{th.queue_fraction:.0%} of its mean E2E latency; queue/E2E: {detail}")


def _serve_no_preempt(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    rows = [(c, pp.preemptions) for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("needs closed-loop sweep points")
    clean = [c for c, n in rows if n == 0]
    return ModelValue(max(clean) if clean else 0, sweep.inputs(),
                      "serving model: largest swept concurrency with zero preemptions; preemptions: "
                      + ", ".join(f"{c}: {n:,}" for c, n in rows))


def _with_serving(name: str, fn: ServingFn) -> None:
    QUANTITIES[name] = replace(QUANTITIES[name], serving=fn)


for _name, _attr, _scale in [
    ("output_throughput", "output_throughput_tok_per_s", 1.0),
    ("per_request_throughput", "per_request_output_tok_per_s", 1.0),
    ("request_throughput", "request_throughput_req_per_s", 1.0),
    ("preemptions", "preemptions", 1.0),
    # the simulator reports latencies in ms; quantities work in seconds
    ("ttft_mean", "ttft_mean_ms", 1e-3), ("ttft_p50", "ttft_p50_ms", 1e-3), ("ttft_p99", "ttft_p99_ms", 1e-3),
    ("tpot_mean", "tpot_mean_ms", 1e-3), ("tpot_p50", "tpot_p50_ms", 1e-3), ("tpot_p99", "tpot_p99_ms", 1e-3),
    ("itl_p50", "itl_p50_ms", 1e-3), ("itl_p99", "itl_p99_ms", 1e-3), ("e2e_mean", "e2e_mean_ms", 1e-3),
]:
    _with_serving(_name, _serve_point(_attr, _scale))
_with_serving("total_throughput", _serve_total)
_with_serving("ttft_knee_concurrency", _serve_ttft_knee)
_with_serving("knee_concurrency", _serve_knee)
_with_serving("goodput", _serve_goodput)
_with_serving("goodput_concurrency", _serve_goodput_c)
_with_serving("batch1_throughput", _serve_batch1)
_with_serving("batch1_fraction_of_ceiling", _serve_batch1_fraction)
_with_serving("max_concurrency_without_queueing", _serve_no_queue)
_with_serving("max_concurrency_without_preemption", _serve_no_preempt)


# --------------------------------------------------------------------------------------------------------------
# a deployment of several replicas (engine.replicas): the one place the quantities scale by it
# --------------------------------------------------------------------------------------------------------------
#: rates and counts a deployment sums over its replicas: R × one replica's at 1/R of the load (Setup.replica_load,
#: Setup.deployment_total); each request is served by one replica, so the deployment's tokens, requests and
#: preemptions per second add up
REPLICA_TOTALS = frozenset({"output_throughput", "total_throughput", "request_throughput", "preemptions"})
#: analyses over the whole sweep of one engine (knees, goodput, the largest clean concurrency): not scaled by the
#: model at R > 1 (the sweep's concurrencies are the deployment's; an even split would put each at R × one
#: replica's, but the serving model simulates whole clients per replica): predict them in ink
REPLICA_SWEEP_ANALYSES = frozenset({"knee_concurrency", "ttft_knee_concurrency", "goodput", "goodput_concurrency",
                                    "max_concurrency_without_queueing", "max_concurrency_without_preemption"})
_LOADS = ("concurrency", "rate")


def replica_scaling(name: str) -> str:
    """How quantity ``name`` at a deployment's load relates to one replica (README, "several replicas"):
    ``total`` (R × one replica's at load/R), ``share`` (one replica's at load/R: latencies, per-request
    throughput, a decode step at the concurrency), ``sweep`` (not scaled by the model) or ``replica`` (one
    replica's own: KV pool and blocks, batch-1, facts, anything at: batch)."""
    if name in REPLICA_TOTALS:
        return "total"
    if name in REPLICA_SWEEP_ANALYSES:
        return "sweep"
    q = QUANTITIES[name]
    return "share" if set(q.at) & set(_LOADS) else "replica"


def _sweep_refusal(name: str, replicas: int) -> SetupError:
    return SetupError(f"{name} is a whole-sweep analysis of one engine; with engine.replicas: {replicas} the model "
                      "does not scale it (an even split puts the deployment's at about replicas × one replica's): "
                      "predict it in ink, the measured value is still scored")


def _scaled_note(setup: Setup, how: str, at: Mapping[str, Any]) -> str:
    load = next(f"{k} {at[k]} → {setup.replica_load(float(at[k])):g} per replica" for k in _LOADS if k in at)
    return (f"{setup.replicas} replicas, an even split assumed ({load}); "
            + (f"× {setup.replicas} replicas" if how == "total" else "one replica's value"))


def _replica_model(name: str, fn: ModelFn) -> ModelFn:
    def model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
        how = replica_scaling(name)
        if setup.replicas == 1 or how == "replica":
            return fn(setup, at)
        if how == "sweep":
            raise _sweep_refusal(name, setup.replicas)
        if "batch" in at or not set(at) & set(_LOADS):  # one engine's decode batch: no deployment load to split
            return fn(setup, at)
        share = {k: (setup.replica_load(float(v)) if k in _LOADS else v) for k, v in at.items()}
        mv = fn(setup, share)
        value = setup.deployment_total(mv.value) if how == "total" and mv.value is not None else mv.value
        return ModelValue(value, {**mv.inputs, "replicas": str(setup.replicas)},
                          f"{mv.explanation}; {_scaled_note(setup, how, at)}")

    return model


def _replica_serving(name: str, fn: ServingFn) -> ServingFn:
    def serving(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
        setup, how = sweep.setup, replica_scaling(name)
        if setup.replicas == 1 or how == "replica":
            return fn(sweep, at, th)  # (the batch-1 run and whole-engine facts are each replica's own)
        if how == "sweep":
            raise _sweep_refusal(name, setup.replicas)
        if not set(at) & set(_LOADS):
            return fn(sweep, at, th)
        mv = fn(sweep, at, th)  # ServingSweep.at simulates one replica at its share of the load
        value = setup.deployment_total(mv.value) if how == "total" and mv.value is not None else mv.value
        return ModelValue(value, {**mv.inputs, "replicas": str(setup.replicas)},
                          f"{mv.explanation}; {_scaled_note(setup, how, at)}")

    return serving


for _name, _q in list(QUANTITIES.items()):
    QUANTITIES[_name] = replace(
        _q, model=_replica_model(_name, _q.model) if _q.model is not None else None,
        serving=_replica_serving(_name, _q.serving) if _q.serving is not None else None)
