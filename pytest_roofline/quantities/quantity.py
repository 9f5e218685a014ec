"""What a quantity is: :class:`Quantity` (its dimension, ``at:`` parameters, kind, and the functions that give its
model, measured and serving-model values), the ``at:`` parameters (:data:`AT_PARAMS`), and the values those
functions return (:class:`ModelValue`, :class:`MeasuredValue`). The quantities themselves are declared family by
family (``roofline``, ``knee``, ``kv``, ``batching``, ``latency``, ``server``) and gathered once in
:mod:`pytest_roofline.quantities.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.analysis import Thresholds
from pytest_roofline.quantities.measurement import Measurement
from pytest_roofline.quantities.serving_values import ServingSweep

__all__ = ["AT_PARAMS", "LOADS", "AtParam", "MeasureFn", "MeasuredValue", "ModelFn", "ModelValue", "Quantity",
           "QuantityKind", "QuantityPoints", "ReplicaScaling", "ServingFn"]

#: how a quantity at a deployment's load relates to one replica (engine.replicas; README, "several replicas"):
#: ``total`` R × one replica's at load/R (the deployment's rates and counts add up); ``share`` one replica's at
#: load/R (latencies, per-request throughput, a decode step at the concurrency); ``sweep`` a whole-sweep analysis
#: of one engine, not scaled by the model; ``replica`` one replica's own (KV pool, batch-1, facts, at: batch)
ReplicaScaling = Literal["total", "share", "sweep", "replica"]
#: the at: parameters that name a deployment's load (split over its replicas)
LOADS = ("concurrency", "rate")



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
    AtParam("e2el", "time", "E2E latency SLO of request_goodput: --goodput e2el (default: slo.e2el)"),
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
    #: for a measured "none" (no knee among the measured points): the value from which the points say nothing, the
    #: largest concurrency measured (its doubling was never run), so a knee there or above is neither confirmed nor
    #: refuted; None where a "none" is the whole answer
    unknown_from: float | None = None
    #: for a measured "none" its points' intervals leave undecided: the readings the intervals still allow (the
    #: concurrencies a knee may be at; goodput's best throughput); an ink of none against it is not confirmed
    undecided: tuple[float, ...] = ()


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
    #: how the value at a deployment's load relates to one replica's (engine.replicas); None: ``share`` when an
    #: at: parameter names a load (concurrency, rate), else ``replica``. Applied once, when the registry is built
    #: (:func:`pytest_roofline.quantities.replicas.for_replicas`)
    replicas: ReplicaScaling | None = None

    def __post_init__(self) -> None:  # registrations may name kinds by their value ("bool")
        object.__setattr__(self, "kind", QuantityKind(self.kind))
        if self.replicas is None:
            object.__setattr__(self, "replicas", "share" if set(self.at) & set(LOADS) else "replica")
        if self.points is not None:
            object.__setattr__(self, "points", QuantityPoints(self.points))

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(m for m, f in (("math", self.model), ("measured", self.measure)) if f is not None)
