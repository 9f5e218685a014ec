"""The serving model's predicted sweep, as the quantity registry reads it.

A :class:`ServingSweep` holds one setup, the serving constants and engine configuration it is simulated with,
and the sweep points of a prediction file (closed-loop concurrencies, open-loop rates, the batch-1 run). Each
point is simulated by :func:`pytest_roofline.model.serving.simulate` the first time a quantity asks for it and
kept: a file's predictions share one simulation per point, never one per prediction. The quantities' ``serving``
functions (in :mod:`pytest_roofline.quantities.registry`) turn a point's
:class:`~pytest_roofline.model.serving.PointPrediction` into a :class:`~pytest_roofline.quantities.registry.ModelValue`.

Which points exist is the caller's business (the scorer builds them from the file's ``sweep:`` with the same
plan the load generator runs); a point a prediction names that the sweep does not list is made on demand by
``make_point``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_roofline.errors import SetupError, SimulationError, WorkloadError
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import Setup
from pytest_roofline.units import format_value

__all__ = ["SweepPoint", "ServingSweep", "TERM_LABELS", "dominant_term", "shares_text"]

#: the words a miss's explanation uses for each term of PointPrediction.time_shares
TERM_LABELS: dict[str, str] = {
    "weights": "the weight read",
    "kv": "the KV-cache read (KV bound)",
    "prefill_compute": "prefill compute (the prefill share)",
    "decode_compute": "decode compute",
    "overhead": "engine overhead (per step and per sequence)",
    "allreduce": "tensor-parallel all-reduces",
}
#: the terms the decode roofline itself contains (everything else is what serving adds to decode)
ROOFLINE_TERMS = ("weights", "kv", "decode_compute")


@dataclass(frozen=True)
class SweepPoint:
    """One point of the sweep, described as the load generator runs it."""

    id: str
    concurrency: int | None = None
    rate_req_per_s: float | None = None
    num_requests: int = 1
    burstiness: float = 1.0
    input_len: int | None = None
    output_len: int | None = None
    warmup_requests: int = 0  # not simulated; a shared prefix is cached by them before the point
    arrival_span: str = "fixed"  # open loop: how the sends span (model.workload.ARRIVAL_SPANS)

    @property
    def key(self) -> tuple[str, float]:
        if self.id == "batch1":
            return ("batch1", 1.0)
        if self.concurrency is not None:
            return ("closed", float(self.concurrency))
        return ("open", float(self.rate_req_per_s or 0.0))


@dataclass
class ServingSweep:
    """The serving model's sweep for one setup: points simulated lazily, once each."""

    setup: Setup
    points: Sequence[SweepPoint]
    constants: sv.ServingConstants
    engine: sv.EngineConfig
    source: str = "default constants"  # or "calibration <file>", "+ serving: overrides"
    make_point: Callable[[str, float], SweepPoint] | None = None
    seed: int = 0
    #: the file's shared workload description as ``serving.workload_for_point`` arguments (length
    #: distributions, dataset lengths, prefix share, ramp-up: ``measure.workloads.ResolvedWorkload``); the
    #: batch-1 run keeps its fixed lengths
    shape: Mapping[str, Any] = field(default_factory=dict)
    #: where ``shape`` and the setup's lengths come from, for a point that cannot be simulated: the file's
    #: ``workload:`` or a prediction's ``setup: {workload: ...}`` override (it then names the prediction)
    workload_origin: str = "the file's workload:"
    _cache: dict[tuple[str, float], sv.PointPrediction] = field(default_factory=dict, repr=False)
    _extra: dict[tuple[str, float], SweepPoint] = field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------------------------------------- points
    def _find(self, key: tuple[str, float]) -> SweepPoint:
        for p in self.points:
            if p.key == key:
                return p
        if key in self._extra:
            return self._extra[key]
        if self.make_point is None or key[0] == "batch1":
            raise SetupError(f"the sweep has no {key[0]} point at {key[1]:g}")
        p = self.make_point(key[0], key[1])
        self._extra[key] = p
        return p

    def workload(self, p: SweepPoint) -> sv.Workload:
        shape: dict[str, Any] = {} if p.id == "batch1" else dict(self.shape)
        lengths: dict[str, Any] = {
            "input_len": p.input_len if p.input_len is not None else shape.pop("input_len", None),
            "output_len": p.output_len if p.output_len is not None else shape.pop("output_len", None)}
        shape.pop("input_len", None)
        shape.pop("output_len", None)
        if p.rate_req_per_s is None:
            shape.pop("ramp_up", None)  # a ramp-up shapes open-loop arrivals only
        return sv.workload_for_point(self.setup, concurrency=p.concurrency, rate_req_per_s=p.rate_req_per_s,
                                     num_requests=p.num_requests, burstiness=p.burstiness, seed=self.seed,
                                     arrival_span=p.arrival_span,  # type: ignore[arg-type]
                                     point_id=p.id,  # the load generator's point_id: same arrivals and lengths
                                     warmup_requests=p.warmup_requests, **lengths, **shape)

    def predict(self, key: tuple[str, float]) -> tuple[SweepPoint, sv.PointPrediction]:
        p = self._find(key)
        if key not in self._cache:
            try:
                self._cache[key] = sv.simulate(self.setup, self.workload(p), engine=self.engine,
                                               constants=self.constants)
            except (SimulationError, WorkloadError, ZeroDivisionError) as exc:
                raise SetupError(f"the serving model cannot simulate point {p.id} with {self.workload_origin}: "
                                 f"{exc}") from None
        return p, self._cache[key]

    def at(self, at: Mapping[str, Any]) -> tuple[SweepPoint, sv.PointPrediction]:
        """The point an ``at:`` names: a closed-loop concurrency or an open-loop rate — the deployment's load, so
        with ``engine.replicas`` R the point simulated is one replica's at 1/R of it."""
        if "context" in at:
            raise SetupError("the serving model simulates the workload's own lengths; at: {context: ...} is a "
                             "decode-roofline parameter (use a setup: {workload: ...} override instead)")
        if "concurrency" in at:  # a deployment's clients; each of its replicas sees its share (Setup.replica_load)
            clients = self.setup.replica_load(float(at["concurrency"]))
            if not clients.is_integer():
                raise SetupError(f"concurrency {at['concurrency']} over {self.setup.replicas} replicas is not a whole "
                                 "number of clients per replica; the serving model simulates whole clients (choose "
                                 "a concurrency that is a multiple of engine.replicas)")
            return self.predict(("closed", clients))
        if "batch" in at:  # a decode batch of B running sequences: the roofline's question, not a sweep point
            raise SetupError("at: {batch: B} is one decode step of B sequences (the decode roofline); the serving "
                             "model predicts sweep points: at: {concurrency: C} or at: {rate: R}")
        if "rate" in at:  # a deployment's arrival rate: each replica's share
            return self.predict(("open", self.setup.replica_load(float(at["rate"]))))
        raise SetupError("needs at: {concurrency: C} or at: {rate: R} to pick a sweep point")

    def closed(self) -> list[tuple[int, sv.PointPrediction]]:
        """Every closed-loop point of the sweep, in rising concurrency."""
        keys = sorted(p.key for p in self.points if p.key[0] == "closed")
        return [(int(k[1]), self.predict(k)[1]) for k in keys]

    def batch1(self) -> tuple[SweepPoint, sv.PointPrediction]:
        if any(p.key[0] == "batch1" for p in self.points):
            return self.predict(("batch1", 1.0))
        return self.predict(("closed", 1.0))

    # ---------------------------------------------------------------------------------------------- text
    def inputs(self) -> dict[str, str]:
        """The constants and scheduler the simulation ran with, for a verdict's model inputs."""
        d = {"serving_model": f"step-level vLLM simulation ({self.source})"}
        for k, val in self.constants.to_dict().items():
            d[k] = constant_text(k, val)
        e = self.engine
        d["scheduler"] = (f"max_num_seqs {e.max_num_seqs}, max_num_batched_tokens {e.max_num_batched_tokens}, "
                          f"chunked prefill {'on' if e.chunked_prefill else 'off'}"
                          + (", async scheduling" if e.async_scheduling else ""))
        d["kv_pool"] = f"{e.num_gpu_blocks:,} blocks × {e.block_size} tokens"
        return d


def constant_text(name: str, value: float) -> str:
    """A serving constant in the unit its name says: a rate per second (``host_mem_bytes_per_s`` 20 TB/s,
    ``host_peak_flop_per_s`` 100 TFLOP/s), a time (``step_overhead_s`` 3.3 ms), else a bare number."""
    if name.endswith("bytes_per_s"):
        return format_value(value, "bandwidth", "GB/s", digits=4)
    if name.endswith("flop_per_s"):
        return format_value(value, "flop_rate", "TFLOP/s", digits=4)
    if name.endswith("_s"):
        return f"{value * 1e3:.4g} ms"
    return f"{value:.3g}"


def dominant_term(time_shares: Mapping[str, float], *, beyond_roofline: bool = False) -> tuple[str, float] | None:
    """The term with the largest share of busy time (``beyond_roofline``: among those decode leaves out)."""
    items = [(k, float(v)) for k, v in time_shares.items() if v and (not beyond_roofline or k not in ROOFLINE_TERMS)]
    if not items:
        return None
    return max(items, key=lambda kv: kv[1])


def shares_text(time_shares: Mapping[str, float]) -> str:
    """'weights 38%, overhead 31%, prefill compute 22%, kv 9%' (largest first, shares under 0.5% left out)."""
    items = sorted(((k, float(v)) for k, v in time_shares.items() if v and v >= 0.005), key=lambda kv: -kv[1])
    return ", ".join(f"{k.replace('_', ' ')} {v:.0%}" for k, v in items)
