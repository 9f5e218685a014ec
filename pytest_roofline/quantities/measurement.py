"""The measurement a scorer reads: its :class:`Measurement` interface and the records it serves.

A measurement is whatever answers "what was measured at this sweep point, and what did the engine say about
itself": a replayed results file (``measure.results.RecordedMeasurement``), a live sweep
(``measure.sweep._LiveMeasurement``), or a sweep against a running endpoint (the same class). The quantity
registry reads only this interface, so every provider is checked against one contract.

The records are the results file's JSON objects (``docs/results-schema.md``), typed at that boundary as
``TypedDict``s with the unit in every field name (``ttft_ms``, ``output_throughput_tok_s``). Every key may be
missing or ``null`` (a file transcribed from a notebook holds only what the notebook printed), so they are
declared ``total=False`` and read through the accessors below instead of ``dict.get(...) or {}`` chains.

:class:`Interval` (a figure's confidence interval, computed by ``measure.stats``) is read by the scorer too, so
it is defined here, once, for both sides.

Nothing here measures, reads a file or imports the measurement layer: this is the contract the layers above
(``measure``, ``scoring``, ``report``) meet on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from numbers import Real
from typing import Any, Literal, Protocol, TypedDict, cast, runtime_checkable

from pytest_roofline.errors import PointError

__all__ = [
    "Distribution", "LittlesLaw", "ClientStats", "ServerStats", "TimelineSample", "LoadgenChecks", "PointRecord",
    "HostProbeRecord",
    "CrossCheck", "EngineReport", "PointMode", "Measurement", "point_id", "point_mode", "same_rate", "RATE_REL_TOL",
    "client_stats", "server_stats",
    "client_value", "server_value", "concurrency", "prefix_cache_hit_rate", "is_sweep_point", "BATCH1_ID",
    "client_number", "server_number", "measured_number", "point_failure", "Interval", "IntervalMethod",
    "TimestampSource", "StopCheck",
]

#: the id of the batch-1 point (``sweep.batch1``), kept apart from the concurrency sweep
BATCH1_ID = "batch1"


class PointMode(StrEnum):
    """How a sweep point offered its load (the point's ``mode``)."""

    CLOSED = "closed"  # a fixed number of clients, each sending its next request when the last one finished
    OPEN = "open"  # requests arrive on a seeded schedule at ``rate_req_s``


#: where a load's chunk arrival times came from (``loadgen.timestamp_source``): kernel receive stamps
#: (SO_TIMESTAMPNS), ``perf_counter`` at read in user space, or both over a multi-process run
TimestampSource = Literal["kernel", "user", "mixed"]
#: how an :class:`Interval` was computed (``Interval.method``; ``measure.stats.INTERVAL_METHODS``)
IntervalMethod = Literal["order-statistic", "bootstrap", "batch-means", "repeats", "count", "fixed-span",
                         "rank rule"]
#: who made an engine report: an engine the plugin started, or a server it was pointed at (--endpoint)
EngineReportMode = Literal["engine", "endpoint"]


class Distribution(TypedDict, total=False):
    """Summary statistics of one per-request metric, in the unit its key names (``ttft_ms`` → ms)."""

    mean: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    count: float | None  # server-side histograms: how many observations the delta holds
    # server-side histograms only: the percentiles are estimates interpolated in vLLM's buckets
    estimated_from: Literal["histogram buckets"]
    exact: list[str]  # the statistics that are exact: ["count", "mean"]
    resolution_ms: dict[str, list[float | None]]  # per percentile: [lower, upper] edge of its bucket (None: +Inf)


class LittlesLaw(TypedDict, total=False):
    """L = λ·W over a point: time-averaged requests in flight against throughput × mean latency."""

    L: float | None  # the time-averaged count in flight; None when the source does not record it
    L_configured: float | None  # a peer's file: the configured number of clients (not L: the loop drains)
    not_checked: str  # why Little's law cannot be checked on this source (a skip, never a FAIL)
    lambda_req_s: float | None
    W_s: float | None
    lambda_W: float | None
    ratio: float | None


class ClientStats(TypedDict, total=False):
    """A point's ``client`` object: what the load generator saw (``measure.stats.summarize``)."""

    completed: int
    failed: int
    failure_reasons: list[list[Any]]  # a peer's file: [reason as the tool wrote it, how many], the commonest first
    output_throughput_tok_s: float | None
    steady_output_throughput_tok_s: float | None
    steady_mean_in_flight: float | None
    total_throughput_tok_s: float | None
    request_throughput_req_s: float | None
    per_request_output_tok_s: Distribution
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    e2e_ms: Distribution
    schedule_lag_ms: Distribution | None
    mean_in_flight: float | None
    littles_law: LittlesLaw
    token_count_mismatches: int
    # since issue 20: tokens delivered several per read (measure.stats.bursts), and the whole run's intervals
    # (intervals_window: "run") beside the steady window's (steady_intervals; quantities.window)
    bursts: dict[str, Any]
    intervals_window: Literal["run"]
    steady_intervals: dict[str, dict[str, Any]]
    note: str
    # since issue 13 (measure.stats.steady_summary / combine_repeats): the steady window chosen and why, the figures
    # over it, each figure's confidence interval keyed by its dot-joined path ("ttft_ms.p99"), every repeat's own
    # client object (sweep.repeats >= 2)
    steady_window: dict[str, Any]
    steady: dict[str, Any]
    intervals: dict[str, dict[str, Any]]
    repeats: list[dict[str, Any]]
    # vLLM's request_goodput under the file's slo: (measure.stats.goodput): slo_ms, good, completed, req_s, interval
    goodput: dict[str, Any]


class TimelineSample(TypedDict, total=False):
    """One poll of the engine's /metrics during a point; ``t_s`` is seconds since the point started."""

    t_s: float
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None
    preemptions: float | None


class ServerStats(TypedDict, total=False):
    """A point's ``server`` object: the engine's /metrics deltas over the point (``measure.engine.metrics``)."""

    prefix_cache_hit_rate: float | None
    prefix_cache_queries: float | None
    prefix_cache_hits: float | None
    preemptions: int | None
    max_num_requests_running: float | None
    max_num_requests_waiting: float | None
    max_kv_cache_usage: float | None
    prompt_tokens: float | None
    generation_tokens: float | None
    ttft_ms: Distribution | None
    itl_ms: Distribution | None
    tpot_ms: Distribution | None
    e2e_ms: Distribution | None
    queue_ms: Distribution | None
    prefill_ms: Distribution | None
    decode_ms: Distribution | None
    inference_ms: Distribution | None
    timeline: list[TimelineSample]
    not_measured: dict[str, str]  # figure -> why it is null (e.g. max_* without a timeline)
    counter_resets: list[str]
    contamination_threshold: float
    contaminated: bool
    note: str  # a transcribed file: where the figures came from
    # a deployment of several replicas (measure.engine.metrics.aggregate_replicas): counters summed, gauge peaks maxed
    requests_succeeded: int | None  # Δ vllm:request_success_total, summed over the replicas
    replica_count: int
    replicas: list[dict[str, Any]]  # each replica's own figures (url redacted, requests_succeeded, ...)


class LoadgenChecks(TypedDict, total=False):
    """A point's ``loadgen`` object: the load generator's self-checks of its run (``measure.stats.loadgen_checks``),
    so a results file shows how it was measured."""

    timestamp_source: TimestampSource  # kernel: SO_TIMESTAMPNS receive stamps; user: perf_counter at read
    read_lag_ms: dict[str, float] | None  # kernel stamp → user-space read: p50, p99, max; None without kernel stamps
    coalesced_chunks: int  # token chunks that arrived in the same read as the previous chunk of their request
    clock_offset_drift_ns: int  # change of CLOCK_REALTIME − CLOCK_MONOTONIC over the run (a stepped wall clock)
    measure_start_offset_s: float  # the measurement window's start, seconds after the run (warm-up) started
    request_timeout_s: float  # the per-request timeout in effect
    aborted: str | None  # why the load generator stopped the run early, else None
    processes: int  # client processes that ran the load (LoadSpec.processes resolved; sweep.processes)
    processes_requested: int | str  # sweep.processes as written: a whole number or "auto"
    process_sync: dict[str, float] | None  # clock_bracket_ms, start_late_ms over the processes; None for one
    client_cores: int  # the CPUs the client process could run on (its affinity mask)


class PointRecord(TypedDict, total=False):
    """One sweep point of a results file (``docs/results-schema.md``, "Point")."""

    id: str
    mode: PointMode  # read back from JSON it is the plain string, equal to the member (point_mode() checks it)
    concurrency: int | None
    rate_req_s: float | None
    burstiness: float
    arrival_span: str  # open loop: "fixed" or "drawn" (model.workload.ARRIVAL_SPANS); absent: "drawn" (older files)
    sent_offsets_s: list[float]  # open loop: each send, s after the first (a peer's start_times): calibrate simulates
    input_len: int
    output_len: int
    num_requests: int | None
    warmup_requests: int
    started_at: str | None
    finished_at: str | None
    duration_s: float | None  # the measurement window: first measured send to the last measured response
    client: ClientStats
    server: ServerStats | None
    contaminated: bool | None
    flags: list[str]
    requests_file: str | None
    loadgen: LoadgenChecks | None
    host_probe: HostProbeRecord | None  # the machine just before and after the load (measure/probe.py)


class HostProbeRecord(TypedDict, total=False):
    """A point's ``host_probe`` object: the host probe (``measure.probe``) timed just before and just after the
    point's load, with the engine idle: what drift reads to tell a slower machine from a slower engine."""

    before_gflop_per_s: float
    after_gflop_per_s: float
    threads: int
    method: str


class CrossCheck(TypedDict, total=False):
    ok: bool | None
    detail: str


class EngineReport(TypedDict, total=False):
    """What the engine said about itself: startup log and /metrics (``measure.engine.build_report``)."""

    version: str | None
    version_source: str | None
    kv_device: str | None
    num_gpu_blocks: int | None
    block_size: int | None
    kv_cache_tokens: int | None
    available_kv_cache_gib: float | None  # GiB = 2**30 bytes, as vLLM prints it
    max_concurrency: float | None
    max_concurrency_tokens_per_request: int | None
    weights_gib: float | None
    max_model_len: int | None
    sources: dict[str, Any]
    source_reasons: dict[str, Any]
    cross_check: CrossCheck
    reasons: dict[str, str]
    mode: EngineReportMode
    startup_s: float | None
    workers: dict[str, Any] | None  # expected / seen / missing_ranks (measure.engine workers_report)


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided confidence interval at ``level`` (SI units, like the estimate).

    ``lo``/``hi`` are ``-inf``/``+inf`` when ``n`` is too small to bound that side at ``level`` (a p99 from 80
    requests has no finite upper bound at 95 %: the chance that all 80 lie below the true p99 is
    0.99**80 ≈ 0.45 > 0.025). ``n`` is the number of samples behind the estimate (requests, token gaps,
    sub-windows or repeats; see ``note``).
    """

    estimate: float
    lo: float
    hi: float
    level: float
    method: IntervalMethod
    n: int
    note: str = ""
    #: The quantile (0..1) an order-statistic interval is of; ``None`` for means and rates.
    quantile: float | None = None

    @property
    def bounded(self) -> bool:
        """Both sides finite."""
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def contains(self, value: float) -> bool:
        """``lo <= value <= hi``."""
        return self.lo <= value <= self.hi

    def straddles(self, bound: float) -> bool:
        """The bound lies strictly inside the interval: the interval alone cannot say which side it is on."""
        return self.lo < bound < self.hi

    def scaled(self, factor: float) -> Interval:
        """The same interval in other units (``factor`` > 0), e.g. seconds → milliseconds."""
        return replace(self, estimate=self.estimate * factor, lo=self.lo * factor, hi=self.hi * factor)

    def to_json(self) -> dict[str, Any]:
        """The results-file form; infinite sides are written as ``null`` (JSON has no infinity)."""
        return {
            "estimate": self.estimate,
            "lo": self.lo if math.isfinite(self.lo) else None,
            "hi": self.hi if math.isfinite(self.hi) else None,
            "level": self.level,
            "method": self.method,
            "n": self.n,
            **({"note": self.note} if self.note else {}),
            **({"quantile": self.quantile} if self.quantile is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Interval:
        """The inverse of :meth:`to_json` (``null`` sides read back as ±inf)."""
        lo, hi = d.get("lo"), d.get("hi")
        return cls(estimate=float(d["estimate"]), lo=-math.inf if lo is None else float(lo),
                   hi=math.inf if hi is None else float(hi), level=float(d.get("level", 0.95)),
                   method=cast(IntervalMethod, str(d.get("method", ""))), n=int(d.get("n", 0)),
                   note=str(d.get("note", "")),
                   quantile=None if d.get("quantile") is None else float(d["quantile"]))

    def text(self, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
        """``"[lo, hi] unit (95 %, n=80)"`` with ``-inf``/``+inf`` spelled out as "no lower/upper bound"."""
        def fmt(v: float) -> str:
            return f"{v * scale:.{digits}g}"
        lo = fmt(self.lo) if math.isfinite(self.lo) else "-∞"
        hi = fmt(self.hi) if math.isfinite(self.hi) else "+∞"
        u = f" {unit}" if unit else ""
        out = f"[{lo}, {hi}]{u} ({self.level:.0%}, n={self.n})"
        if not math.isfinite(self.hi) and not math.isfinite(self.lo):
            out += f": n={self.n} bounds neither side at {self.level:.0%}"
        elif not math.isfinite(self.hi):
            out += f": no upper bound at {self.level:.0%}"
        elif not math.isfinite(self.lo):
            out += f": no lower bound at {self.level:.0%}"
        return out


class StopCheck(Protocol):
    """What the load generator asks while a point runs, to end its measurement early (an adaptive sweep's
    ``measure.plan.stopping.AdaptiveStop``): whether to look now, and, looking, whether to stop and why."""

    def wants_look(self, completed: int, elapsed_s: float) -> bool:
        """Look now, ``completed`` measured requests having finished ``elapsed_s`` seconds into the measurement?"""
        ...

    def __call__(self, records: Sequence[Any], window_s: tuple[float, float], elapsed_s: float) -> str | None:
        """The finished measured records (``loadgen.RequestRecord``), the window ``(measure start, oldest in-flight
        send)`` and the elapsed seconds: the reason to stop now, or None to go on."""
        ...


@runtime_checkable
class Measurement(Protocol):
    """What the quantity registry reads. ``point()`` raises ``errors.NotMeasured`` (the point is not in the
    sweep: the prediction is skipped) or ``errors.PointError`` (it should have been measured and could not be:
    an ERROR with the engine's log tail)."""

    def points(self) -> Sequence[PointRecord]:
        """Every measured point, in the order measured."""
        ...

    def point(self, *, concurrency: int | None = None, rate: float | None = None) -> PointRecord:
        """The closed-loop point at ``concurrency`` or the open-loop point at ``rate`` (batch-1 excluded)."""
        ...

    def engine_report(self) -> EngineReport | None:
        """The engine's own report, or None when the run has none."""
        ...


# --------------------------------------------------------------------------------------------------------------
# typed accessors: a missing key and a JSON null read the same
# --------------------------------------------------------------------------------------------------------------
def point_id(pt: PointRecord) -> str:
    return str(pt.get("id"))


#: how close two arrival rates are to be one sweep point: 0.1 %. A peer computes its rates (GuideLLM's sweep:
#: 1.9519971415157467 req/s) and prints them rounded; a user who writes the printed 1.952 names that point
#: (trial s25b #3: "the file has 1.952 req/s … and lacks 1.952 req/s"). Rates of one sweep are never that close.
RATE_REL_TOL = 1e-3


def same_rate(a: float, b: float) -> bool:
    """Whether two arrival rates (req/s) name one sweep point (:data:`RATE_REL_TOL`)."""
    return math.isclose(float(a), float(b), rel_tol=RATE_REL_TOL, abs_tol=1e-9)


def point_mode(pt: PointRecord) -> PointMode | None:
    """The point's mode; a point that names none is a closed-loop point (the schema's default), one that names
    a mode this version does not know has None."""
    try:
        return PointMode(pt.get("mode") or PointMode.CLOSED)
    except ValueError:
        return None


def is_sweep_point(pt: PointRecord) -> bool:
    """A closed-loop point of the concurrency sweep (not the batch-1 point, not an open-loop rate)."""
    return point_mode(pt) is PointMode.CLOSED and bool(pt.get("concurrency")) and pt.get("id") != BATCH1_ID


def concurrency(pt: PointRecord) -> int:
    """The point's closed-loop concurrency (0 for a point that has none: open loop, or not recorded)."""
    c = pt.get("concurrency")
    return c if c is not None else 0


def client_stats(pt: PointRecord) -> ClientStats:
    return pt.get("client") or {}


def server_stats(pt: PointRecord) -> ServerStats:
    """The point's server-side figures; empty when /metrics was not scraped (``"server": null``)."""
    return pt.get("server") or {}


def _walk(obj: Mapping[str, Any], path: Sequence[str]) -> Any:
    val: Any = obj
    for key in path:
        val = val.get(key) if isinstance(val, Mapping) else None
    return val


def client_value(pt: PointRecord, *path: str) -> Any:
    """A client-side figure by its key path, e.g. ``client_value(pt, "ttft_ms", "p50")``; None when absent."""
    return _walk(cast(Mapping[str, Any], client_stats(pt)), path)


def server_value(pt: PointRecord, *path: str) -> Any:
    """A server-side figure by its key path, e.g. ``server_value(pt, "queue_ms", "mean")``; None when absent."""
    return _walk(cast(Mapping[str, Any], server_stats(pt)), path)


def prefix_cache_hit_rate(pt: PointRecord) -> float | None:
    rate = server_stats(pt).get("prefix_cache_hit_rate")
    return None if rate is None else float(rate)


def measured_number(value: Any, where: str) -> float | None:
    """``value`` as a measured number: None when absent (a key missing or null); raises
    :class:`~pytest_roofline.errors.PointError` naming ``where`` when it is not a finite number (NaN, ±inf, a string,
    a bool, a list...): a figure that is not a number was not measured, and must never be scored as one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise PointError(f"{where} is {shown} ({type(value).__name__}), not a number: it cannot be scored")
    x = float(value)
    if not math.isfinite(x):
        raise PointError(f"{where} is {x!r}, not a measured value: it cannot be scored")
    return x


def client_number(pt: PointRecord, *path: str) -> float | None:
    """A client-side figure that must be a number (see :func:`measured_number`); None when absent."""
    return measured_number(client_value(pt, *path), f"point {point_id(pt)}: client.{'.'.join(path)}")


def server_number(pt: PointRecord, *path: str) -> float | None:
    """A server-side figure that must be a number (see :func:`measured_number`); None when absent."""
    return measured_number(server_value(pt, *path), f"point {point_id(pt)}: server.{'.'.join(path)}")


def point_failure(pt: PointRecord) -> str | None:
    """Why a stored point is not a measurement, or None: requests failed in it, or none completed. A live sweep never
    stores such a point (measure.sweep makes it an error); a file written otherwise may hold one."""
    failed = client_number(pt, "failed")
    completed = client_number(pt, "completed")
    src = pt.get("source_file")  # a peer's point: the file it was read from
    where = f"point {point_id(pt)}" + (f" ({src})" if src else "")
    reasons = client_value(pt, "failure_reasons")
    said = (" (" + ", ".join(f"{r[0]!r} ×{r[1]}" for r in reasons if isinstance(r, list) and len(r) == 2) + ")"
            if isinstance(reasons, list) and reasons else "")
    if failed:
        of = f" of {failed + completed:g}" if completed is not None else ""
        return (f"{where}: {failed:g}{of} measured requests failed{said}; a point with failed requests is not a "
                "measurement (vllm bench serve prints its figures over the completed ones; the load the point "
                "names was not served): rerun the point")
    if completed == 0:
        return f"{where}: no measured request completed (completed: 0){said}; nothing was measured"
    return None
