"""Calibration of the serving model's constants from measured sweep points, and the calibration file.

The serving model (:mod:`pytest_roofline.model.serving`) prices a step from the spec sheet at achievable
fractions of peak (``hbm_efficiency``, ``flop_efficiency``) plus fixed costs (``step_overhead_s``,
``per_seq_overhead_s``, ``mem_latency_s``). Their defaults come from published figures; a real engine on a real
machine has its own. This module fits the fields in ``ServingConstants.FIELDS_FITTABLE`` (or a subset the user
names) to a few measured points — typically batch-1 and one high-concurrency point — so the rest of the sweep
is predicted from two measurements.

The fit
    Unknowns are the logarithms of the constants (all positive), so a step of 0.1 is a 10% change whatever the
    unit; an efficiency (a share of peak, in (0, 1]) is fitted through its logit, so it never leaves (0, 1).
    Residuals are weighted log-errors ``w × ln(predicted ÷ measured)`` of aggregate output throughput, TPOT p50
    and TTFT p50 at every given point (:data:`DEFAULT_WEIGHTS`). They are minimised by Levenberg–Marquardt with
    finite-difference Jacobians, written here in pure Python: the problem has at most a handful of unknowns, so
    a 6 × 6 normal-equation solve is instant, and scipy (not installed in this project) would be a large
    dependency for it. The simulator is deterministic for a fixed seed but piecewise (a step holds whole
    tokens), so the difference step is a few percent, not machine epsilon. :func:`screen_points` first drops a
    TTFT no constants can explain (below the prompt's compute floor at 100% of peak).

Prefix-cache hits
    A point that records its server's prefix-cache hit rate is simulated with it (:func:`serving_predictor`):
    a hit skips that share of the prompt's prefill, which lowers the prefill work in the mixed steps that
    throughput and TPOT average over — the run-average hit rate is the right input for those. TTFT is another
    matter: its median depends on *which* requests hit and *when*. vLLM hashes full blocks of ``block_size``
    tokens, each hash chained on its parent's (vllm/v1/core/kv_cache_utils.py, ``hash_block_tokens``), so a
    request hits the whole blocks of its longest cached prefix: hits come per request, some requests with
    most of their prompt cached and others with none, not as the same share of every prompt; and the rate
    moves during a run (the notebook's C=64 point drained from 45% to 16%). One average rate does not
    describe the TTFT distribution that follows. So a point whose hit rate is above the
    contamination threshold (``analytical.DEFAULT_CONTAMINATION_HIT_RATE``, 10%, which
    ``quantities.analysis.Thresholds`` also defaults to) contributes no TTFT residual (:func:`screen_points`):
    without this the fit lowers ``flop_efficiency`` to explain a TTFT set by cache hits and arrival waves.

Identifiability
    At the optimum the Gauss–Newton matrix ``H = JᵀJ`` gives the covariance ``σ² H⁻¹``, with σ² the residual
    variance (``RSS ÷ (n − p)``), never taken below a measurement-noise floor of :data:`NOISE_FLOOR_LOG` (5% per
    value). The Jacobian is taken on each parameter's own scale, max(fitted value, starting value), so an
    overhead the fit drove towards zero still gets a finite-difference step of the size it was expected to have.
    A parameter whose 1σ exceeds :data:`MAX_LOG_SD` (50%) of its fitted value (:func:`pinned`, the one rule: the
    same ± percentage the fit prints, so an overhead fitted at 7.8 µs ± 18.9 µs is not identified whatever its
    default), or that lies in a direction ``H`` cannot see (an eigenvalue under
    :data:`RANK_RTOL` of the largest: rank deficiency), is *not identified*: :func:`fit` raises
    :class:`~pytest_roofline.errors.CalibrationError` naming those parameters, the ones they trade off against,
    and a subset that can be fitted (itself fitted once to check), which the caller may then ask for explicitly
    (``fields=``; ``roofline calibrate --fit``). Without named fields, ``flop_efficiency`` is held at its
    default when no point has a usable TTFT p50: TTFT is the one metric that prices a prefill on its own, and
    read off the prefill share of high-load throughput it absorbs every batch-dependent cost the model holds
    fixed (the notebook's C=1/C=64 fit put it at 0.40 that way and doubled every low-load TTFT).

The calibration file (YAML, :class:`Calibration`, its own module :mod:`pytest_roofline.model.calibration_file`,
re-exported here) records what the constants were fitted on — hardware id,
model, engine name and version, engine limits, workload — with the fitted values, their uncertainties, the
points and their residuals, and the date. :meth:`Calibration.mismatches` names what differs when it is applied
to another setup (a warning for the caller to show, never a failure).

Reading results files is not done here (model layer): callers pass :class:`MeasuredPoint` objects
(``pytest_roofline.measure.calibpoints`` makes them from a results file).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from pytest_roofline.errors import CalibrationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import serving
from pytest_roofline.model._linalg import eigh as _eigh
from pytest_roofline.model._linalg import jtj as _jtj
from pytest_roofline.model._linalg import solve as _solve
from pytest_roofline.model.bands import PREFILL_BOUND_SHARE
from pytest_roofline.model.calibration_file import (
    SCHEMA,
    SCHEMA_VERSION,
    Calibration,
    dump_calibration,
    load_calibration,
)
from pytest_roofline.model.calibration_file import (
    round_sig as _round,
)
from pytest_roofline.model.setup import Setup
from pytest_roofline.units import signed_percent

__all__ = [
    "MeasuredPoint", "screen_points", "PointFit", "FitResult", "Calibration", "fit", "serving_predictor",
    "calibration_from_fit", "load_calibration", "dump_calibration", "METRICS", "DEFAULT_WEIGHTS",
    "NOISE_FLOOR_LOG", "MAX_LOG_SD", "RANK_RTOL", "SCHEMA", "SCHEMA_VERSION", "fit_by_metric", "MetricFit",
    "residuals_at", "screen_points_why", "check_fields", "pinned", "ServingPredictor", "ASYNC_PER_SEQ_NOTE",
]

#: the metrics the fit compares, as PointPrediction attribute names (and MeasuredPoint fields)
METRICS = ("output_throughput_tok_per_s", "tpot_p50_ms", "ttft_p50_ms")
#: weight of each metric's log-error. TTFT p50 counts half: in a closed loop it is set by how prefills collide
#: with each other (arrival waves), which moves a lot between runs of the same point, while throughput and TPOT
#: are averages over thousands of tokens.
DEFAULT_WEIGHTS: Mapping[str, float] = {"output_throughput_tok_per_s": 1.0, "tpot_p50_ms": 1.0, "ttft_p50_ms": 0.5}
#: the smallest residual standard deviation (log units) the uncertainty assumes: ~5% run-to-run noise
NOISE_FLOOR_LOG = 0.05
#: a parameter whose fitted log has a 1σ above this (≈ ±50%) is reported as not identified
MAX_LOG_SD = 0.5
#: eigenvalues of JᵀJ below this fraction of the largest mark a direction the points cannot see
RANK_RTOL = 1e-6
#: finite-difference step in log space (3%): larger than the simulator's step-quantisation wiggle
FD_STEP_LOG = 0.03
#: prefix-cache hit rate above which a point's TTFT is left out of the fit (the project's one contamination default)
CONTAMINATION = an.DEFAULT_CONTAMINATION_HIT_RATE
#: the value a zero-default parameter starts from when it is fitted (log space needs a positive start)
ZERO_START = {"_s": 1e-4, "efficiency": 0.5}


# ----------------------------------------------------------------------------------------- measured points
@dataclass(frozen=True)
class MeasuredPoint:
    """One measured sweep point: where it ran and what it measured (``None`` = not measured)."""

    id: str
    concurrency: int | None = None
    rate_req_per_s: float | None = None
    burstiness: float = 1.0
    #: open loop: how the point's sends spanned (model.workload.ARRIVAL_SPANS)
    arrival_span: str = "fixed"
    #: open loop: the sends the run recorded (s after the first), simulated in place of any schedule (a peer's
    #: per-request file); None: the schedule ``arrival_span`` names, seeded as the load generator seeds it
    sent_offsets_s: tuple[float, ...] | None = None
    num_requests: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    output_throughput_tok_per_s: float | None = None
    tpot_p50_ms: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_p99_ms: float | None = None
    #: the server's prefix-cache hit rate over the point (hits ÷ queried prompt tokens), where recorded
    prefix_cache_hit_rate: float | None = None

    @property
    def label(self) -> str:
        if self.concurrency is not None and self.rate_req_per_s is None:
            return f"C={self.concurrency}"
        if self.rate_req_per_s is not None:
            return f"R={self.rate_req_per_s:g}"
        return self.id

    def value(self, metric: str) -> float | None:
        v = getattr(self, metric)
        return None if v is None or not (v > 0) or not math.isfinite(v) else float(v)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if getattr(self, k) is not None}
        if "sent_offsets_s" in out:
            out["sent_offsets_s"] = list(out["sent_offsets_s"])
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MeasuredPoint:
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        if known.get("sent_offsets_s") is not None:
            known["sent_offsets_s"] = tuple(float(t) for t in known["sent_offsets_s"])
        return cls(**known)


#: predict(constants, point) -> {metric: value}; the serving model by default (serving_predictor)
class Constants(Protocol):
    """What :func:`fit` needs of a model's constants: ``ServingConstants``, or a stand-in with the same two
    methods (the tests' toy models)."""

    def replace(self, **kw: Any) -> Self: ...

    def to_dict(self) -> dict[str, float]: ...


Predictor = Callable[[Any, MeasuredPoint], Mapping[str, float]]


@dataclass(frozen=True)
class ServingPredictor:
    """The :data:`Predictor` :func:`serving_predictor` returns: ``run`` simulates a point, and ``hidden`` names the
    decode-step terms no measured point can move on this engine (``per_seq_overhead_s`` where it schedules
    asynchronously: the per-sequence CPU work runs while the GPU steps, model/serving/cost.py), which
    :func:`fit_by_metric` does not try (:data:`ASYNC_PER_SEQ_NOTE`)."""

    run: Callable[[Any, MeasuredPoint], Mapping[str, float]]
    hidden: tuple[str, ...] = ()

    def __call__(self, constants: Any, point: MeasuredPoint) -> Mapping[str, float]:
        return self.run(constants, point)


def serving_predictor(setup: Setup, *, engine: serving.EngineConfig | None = None, measured_hit_rates: bool = True,
                      **workload_kw: Any) -> ServingPredictor:
    """A :data:`Predictor` that simulates each point with the serving model on ``setup`` (a :class:`ServingPredictor`,
    which also says which step terms this engine hides).

    The point's own input/output lengths and request count are used where it records them (the same workload
    the load generator ran), else the setup's; its id is the load generator's point id, which (with the
    workload's ``seed``, passed in ``workload_kw``) gives the simulator the arrival times the load generator
    sent on. A recorded prefix-cache hit rate is simulated (``Workload.prefix_hit_rate``) when
    ``measured_hit_rates`` is true (the default) and the engine caches prefixes.
    """
    engine_cfg = engine if engine is not None else serving.EngineConfig.from_setup(setup)  # prefix caching?

    def predict(constants: Any, point: MeasuredPoint) -> Mapping[str, float]:
        s = setup
        changes = {}
        if point.input_len and point.input_len != setup.input_len:
            changes["input_len"] = int(point.input_len)
        if point.output_len and point.output_len != setup.output_len:
            changes["output_len"] = int(point.output_len)
        if changes:
            s = setup.with_changes(**changes)
        kw = dict(workload_kw)
        if point.rate_req_per_s is not None:
            kw["rate_req_per_s"] = float(point.rate_req_per_s)
            if point.burstiness != 1.0:
                kw["burstiness"] = float(point.burstiness)
            kw["arrival_span"] = point.arrival_span
            if point.sent_offsets_s is not None:
                kw["sent_offsets_s"] = point.sent_offsets_s
        else:
            kw["concurrency"] = int(point.concurrency or 1)
        if point.num_requests:
            kw["num_requests"] = int(point.num_requests)
        kw.setdefault("point_id", point.id)  # with the workload's seed: the arrivals the load generator sent
        hit = point.prefix_cache_hit_rate
        if measured_hit_rates and hit and hit > 0 and engine_cfg.enable_prefix_caching:
            kw["prefix_hit_rate"] = min(float(hit), 0.999)
        wl = serving.workload_for_point(s, **kw)
        pred = serving.simulate(s, wl, engine=engine, constants=constants)
        return {**{m: float(getattr(pred, m)) for m in METRICS},
                PREFILL_SHARE_KEY: float(pred.time_shares.get("prefill_compute", 0.0))}

    return ServingPredictor(predict, hidden=("per_seq_overhead_s",) if engine_cfg.async_scheduling else ())


#: the note :func:`fit_by_metric` gives when it leaves ``per_seq_overhead_s`` out (``ServingPredictor.hidden``)
ASYNC_PER_SEQ_NOTE = ("per_seq_overhead_s kept at its value: this engine schedules asynchronously (vLLM >= 0.14 on a "
                      "GPU), so the per-sequence CPU work runs while the GPU steps and no TPOT or throughput sees it "
                      "until it outlasts the GPU's step (model/serving/cost.py)")


def screen_points(points: Sequence[MeasuredPoint], setup: Setup, *,
                  contamination: float = CONTAMINATION) -> tuple[list[MeasuredPoint], list[str]]:
    """Drop measured values no constants can explain, with a note for each.

    A TTFT p50 measured with a prefix-cache hit rate above ``contamination`` is left out (the module's
    "Prefix-cache hits": cache hits, not the constants, set it); its throughput and TPOT stay.

    A TTFT p50 below the prompt's compute floor at 100% of the chip's peak FLOP/s (prompt tokens × 2P ÷ peak)
    cannot come from a full prefill: prefix-cache hits or a transcription slip. Fitting it would drive the
    compute efficiency to its bound to chase an impossible value, so that TTFT is left out of the fit (the
    other metrics of the point stay). Setups without a peak figure (the ``cpu`` pseudo-device) are not screened.
    """
    out, notes, _ = screen_points_why(points, setup, contamination=contamination)
    return out, notes


def screen_points_why(points: Sequence[MeasuredPoint], setup: Setup, *, contamination: float = CONTAMINATION
                      ) -> tuple[list[MeasuredPoint], list[str], dict[str, str]]:
    """:func:`screen_points`, and for each point whose TTFT it left out, by label, the measured value and why
    (``"23 ms, below the 1024-token prefill's compute floor (53.76 ms at 100% of peak)"``):
    :func:`fit_by_metric` takes them (``screened=``) so its notes never say a TTFT was not measured when it was."""
    contaminated, notes = [], []
    why: dict[str, str] = {}
    for pt in points:
        hit = pt.prefix_cache_hit_rate
        ttft = pt.value("ttft_p50_ms")
        if hit is not None and hit > contamination and ttft is not None:
            notes.append(f"{pt.label}: prefix-cache hit rate {100 * hit:.1f}% > {100 * contamination:g}%: its TTFT "
                         "p50 is left out of the fit (set by which requests hit, not by the prefill's cost)")
            why[pt.label] = (f"{ttft:,.4g} ms, at a prefix-cache hit rate of {100 * hit:.1f}% (above "
                             f"{100 * contamination:g}%: set by which requests hit, not by the prefill's cost)")
            pt = dataclasses.replace(pt, ttft_p50_ms=None)
        contaminated.append(pt)
    points = contaminated
    try:
        peak = float(setup.peak_flop_per_s)
    except Exception:  # no datasheet peak (cpu): nothing to screen against
        return list(points), notes, why
    out = []
    for pt in points:
        ttft = pt.value("ttft_p50_ms")
        n_in = pt.input_len or setup.input_len
        if ttft is not None and n_in:
            floor_ms = 1e3 * an.prefill_floor_s(int(n_in), setup.flop_per_token_per_gpu, peak)
            if ttft < floor_ms:
                notes.append(f"{pt.label}: TTFT p50 {ttft:,.4g} ms is below the {n_in}-token prefill's compute floor "
                             f"({floor_ms:,.4g} ms at 100% of peak): left out of the fit (prefix-cache hits?)")
                why[pt.label] = (f"{ttft:,.4g} ms, below the {n_in}-token prefill's compute floor "
                                 f"({floor_ms:,.4g} ms at 100% of peak)")
                pt = dataclasses.replace(pt, ttft_p50_ms=None)
        out.append(pt)
    return out, notes, why


# ----------------------------------------------------------------------------------------- fit result
@dataclass(frozen=True)
class PointFit:
    """One point after the fit: measured, predicted and the log-residual ln(pred ÷ meas) per metric."""

    id: str
    label: str
    measured: Mapping[str, float]
    predicted: Mapping[str, float]
    residuals: Mapping[str, float]
    #: metric -> why its measured value is not the model's to match (a held-out TTFT the fit's screen would leave
    #: out: prefix-cache hits set it), printed beside its residual (trial s24 M5)
    caveats: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "measured": {k: _round(v) for k, v in self.measured.items()},
                "predicted": {k: _round(v) for k, v in self.predicted.items()},
                "log_residual": {k: _round(v, 4) for k, v in self.residuals.items()},
                **({"caveats": dict(self.caveats)} if self.caveats else {})}


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit` found: the constants, the fitted values with 1σ uncertainties, the residuals."""

    constants: Constants  # ServingConstants (all fields: fitted ones replaced)
    fitted: tuple[str, ...]
    values: Mapping[str, float]
    uncertainty: Mapping[str, float]  # 1σ, in the parameter's own unit (first order: value × σ_log)
    log_sd: Mapping[str, float]  # 1σ of ln(value): a relative uncertainty
    points: tuple[PointFit, ...]
    rms_log_residual: float
    iterations: int
    warnings: tuple[str, ...] = ()
    #: residuals at points it was not fitted on (:func:`residuals_at`), where the caller has them
    held_out: tuple[PointFit, ...] = ()
    #: for a fitted constant whose 1σ holds only because another constant it trades off with was not fitted: those
    #: constants and the values they were held at (``fit(held=...)``; its 1σ is conditional on them)
    conditional_on: Mapping[str, Mapping[str, float]] = dataclasses.field(default_factory=dict)
    #: what each rms log-residual covers: (the metrics fitted, how many values, the rms, the stage), one per fit
    #: (:func:`fit_by_metric` fits the decode-step terms and the TTFT terms apart); the residual lines show every
    #: measured metric, fitted or not, so the rms line names which it is over (trial 22 L6)
    rms_parts: tuple[tuple[tuple[str, ...], int, float, str], ...] = ()
    #: whether a fit's noise, from which its 1σ is scaled, is the measurement-noise floor (:data:`NOISE_FLOOR_LOG`)
    #: rather than its residuals (RSS ÷ (n − p)): as many values as constants leave no residual to measure it, or
    #: the residuals were smaller (trial s26b #13: the heading said "from the covariance" alone)
    noise_floor: bool = False

    def _rms_line(self) -> str:
        """The rms log-residual(s), each naming the fitted metric and values it is over, and the metrics the
        residual lines show that no fit was over."""
        if not self.rms_parts:
            return f"rms log-residual {self.rms_log_residual:.4f} after {self.iterations} iterations"
        parts = [f"{rms:.4f} over {n} {' and '.join(_short(m) for m in metrics)} value{'' if n == 1 else 's'}"
                 + (f" ({stage})" if stage else "") for metrics, n, rms, stage in self.rms_parts]
        fitted = {m for metrics, _n, _r, _s in self.rms_parts for m in metrics}
        shown = [m for m in METRICS if m not in fitted and any(m in p.measured and m in p.predicted
                                                             for p in self.points)]
        rest = (f"; {', '.join(_short(m) for m in shown)} not fitted: {'its' if len(shown) == 1 else 'their'} "
                "residuals above are not in it" if shown else "")
        return (f"rms log-residual (of the fitted values only): {'; '.join(parts)}{rest}; after {self.iterations} "
                "iterations")

    def describe(self) -> str:
        """The fitted values with uncertainty, then the residuals per point (the CLI prints this)."""
        lines = ["fitted constants (1σ from the Gauss–Newton covariance at the optimum"
                 + (f", scaled by the assumed {NOISE_FLOOR_LOG:.0%} measurement noise, its floor: the fit's "
                    "residuals are smaller, or too few to measure it" if self.noise_floor
                    else ", scaled by the fit's residuals") + "):"]
        for name in self.fitted:
            v, u, r = self.values[name], self.uncertainty[name], self.log_sd[name]
            given = self.conditional_on.get(name) or {}
            held = ("; 1σ with " + ", ".join(f"{o} {'held ' if i == 0 else ''}at {_fmt(o, hv)}"
                                            for i, (o, hv) in enumerate(given.items()))
                    + f", {'a term' if len(given) == 1 else 'terms'} it trades off with, not fitted" if given else "")
            lines.append(f"  {name:<24} {_fmt(name, v):>12}  ± {_fmt(name, u):<11} (±{100 * r:.1f}%{held})")
        lines.append("residuals per point (predicted vs measured; error = (measured − predicted) ÷ predicted, as "
                     "pytest's and predict --simulate's):")
        lines += [_point_line(p) for p in self.points]
        lines.append(self._rms_line())
        if self.held_out:
            lines.append("held-out points (not fitted on; predicted with the fitted constants):")
            lines += [_point_line(p) for p in self.held_out]
            carry = self._held_out_line()
            if carry:
                lines.append(carry)
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _held_out_line(self) -> str | None:
        """Where the held-out residuals dwarf the fitted ones (rms over 3× theirs and over 10 %), that the constants do
        not carry to those points, naming the worst: a held-out C = 4 missed by 29-77 % after a fit at 0.027 rms, with
        no word (trial s25c #5). A point measured on a slowed machine, or in another regime, reads so."""
        vals = [(p.label, m, r) for p in self.held_out for m, r in p.residuals.items()
                if m not in p.caveats and math.isfinite(r)]
        if not vals:
            return None
        rms = math.sqrt(sum(r * r for _, _, r in vals) / len(vals))
        if rms <= max(3 * self.rms_log_residual, 0.1):
            return None
        label, metric, worst = max(vals, key=lambda v: abs(v[2]))
        times, err = rms / max(self.rms_log_residual, 1e-9), signed_percent(math.exp(-worst) - 1)
        return (f"warning: the held-out points miss by rms log-residual {rms:.3f}, {times:.0f}× the fitted "
                f"{self.rms_log_residual:.3f} (worst: {label} {_short(metric)} {err}): "
                "the fitted constants do not carry to them; check that point (a machine that ran slower then, "
                "another regime: the running batch, preemption, prefill-bound) or fit on it too")


def _measured_error(p: PointFit, metric: str) -> str:
    """(measured − predicted) ÷ predicted, the sign every other report of the project gives a model's miss (trial
    s24 M4: calibrate printed predicted ÷ measured − 1, the opposite sign of the same gap)."""
    predicted, measured = p.predicted[metric], p.measured[metric]
    return signed_percent(measured / predicted - 1) if predicted else "—"


def _point_line(p: PointFit) -> str:
    cells = [f"{_short(m)} {p.predicted[m]:,.4g} vs {p.measured[m]:,.4g} ({_measured_error(p, m)}"
             + (f"; not the model's to match: {p.caveats[m]}" if m in p.caveats else "") + ")"
             for m in METRICS if m in p.measured and m in p.predicted]
    return f"  {p.label:<8} " + "; ".join(cells)


def residuals_at(constants: Constants, points: Sequence[MeasuredPoint], *, predict: Predictor) -> tuple[PointFit, ...]:
    """Each point's measured and predicted metrics and log-residuals at ``constants``: a fit's held-out residuals
    when ``points`` are the ones it was not fitted on."""
    out = []
    for pt in points:
        pred = predict(constants, pt)
        meas = {m: v for m in METRICS for v in [pt.value(m)] if v is not None}
        res = {m: math.log(pred[m] / meas[m]) for m in meas if pred.get(m) and pred[m] > 0}
        out.append(PointFit(pt.id, pt.label, meas, {m: float(pred[m]) for m in METRICS if m in pred}, res))
    return tuple(out)


def _short(metric: str) -> str:
    return {"output_throughput_tok_per_s": "tok/s", "tpot_p50_ms": "TPOT p50 ms", "ttft_p50_ms": "TTFT p50 ms"}.get(
        metric, metric)


def _fmt(name: str, v: float, *, like: float | None = None) -> str:
    """A constant in its unit (a time in ms from 1 ms, else us); ``like``: another value the text sets beside it,
    whose unit it takes, so a value and its uncertainty read in one unit."""
    if name.endswith("_s") and abs(v) < 1e-9 and like is None:
        return "0 s"
    if name.endswith("_s"):
        ref = abs(like) if like is not None else abs(v)
        return f"{v * 1e3:.4g} ms" if ref >= 1e-3 else f"{v * 1e6:.4g} us"
    return f"{v:.4g}"


# ----------------------------------------------------------------------------------------- the fit
def _start_value(name: str, base: float) -> float:
    if _is_share(name):
        return min(max(base, 0.02), 0.98) if base > 0 else ZERO_START["efficiency"]
    if base > 0:
        return base
    return ZERO_START["_s"]


def _is_share(name: str) -> bool:
    """A share of a peak figure, bounded to (0, 1] (the serving model refuses more)."""
    return name.endswith("efficiency")


def _to_x(name: str, v: float) -> float:
    return math.log(v / (1.0 - v)) if _is_share(name) else math.log(v)


def _to_v(name: str, x: float) -> float:
    if _is_share(name):
        x = max(min(x, 30.0), -30.0)
        return 1.0 / (1.0 + math.exp(-x))
    return math.exp(x)



def _with_fitted(base: Constants, values: Mapping[str, float]) -> Constants:
    """``base`` with fitted ``values``: ServingConstants move the KV bandwidth with a fitted weight bandwidth
    (``ServingConstants.with_fitted``); another model's constants are replaced as given."""
    if isinstance(base, serving.ServingConstants):
        return base.with_fitted(**values)
    return base.replace(**values)

def fit(points: Sequence[MeasuredPoint], base: Constants, *, predict: Predictor, fields: Sequence[str] | None = None,
        weights: Mapping[str, float] | None = None, max_iterations: int = 40,
        max_log_sd: float = MAX_LOG_SD, held: Sequence[str] = (), screened: Collection[str] = (),
        _check_subset: bool = True) -> FitResult:
    """Fit ``fields`` (default: ``type(base).FIELDS_FITTABLE``) of the constants ``base`` to ``points``.

    ``predict(constants, point)`` returns ``{metric: value}`` for :data:`METRICS`. Raises
    :class:`CalibrationError` when there is nothing to fit, or when the points cannot identify a parameter (the
    message names it, what it is confounded with, and the subset that could be fitted with ``fields=``; the
    exception carries them as ``unidentified`` and ``identifiable``). The proposed subset is itself fitted
    before it is proposed (``_check_subset``): the model is nonlinear, so a subset that looks identifiable at
    one optimum need not be from the defaults.

    ``held`` names constants left at their values in ``base`` that the caller could have fitted: where freeing one
    would widen a fitted constant's 1σ by more than :data:`CONDITIONAL_WIDENING` (or leave it undetermined), the
    result's ``conditional_on`` says so (its interval is conditional on that value; :meth:`FitResult.describe`
    prints it beside the interval).

    A constant is identified when :func:`pinned` says so (1σ at most ``max_log_sd`` of its fitted value).
    ``screened``: labels of points whose TTFT p50 was measured and left out by :func:`screen_points_why`; a
    refusal never says such a point has no TTFT to fit.
    """
    names = tuple(fields) if fields is not None else tuple(getattr(type(base), "FIELDS_FITTABLE", ()))
    known = base.to_dict()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CalibrationError(f"unknown constant(s) {', '.join(unknown)}; fittable: "
                               f"{', '.join(getattr(type(base), 'FIELDS_FITTABLE', ()) or known)}")
    if not names:
        raise CalibrationError("no parameters to fit")
    w = dict(DEFAULT_WEIGHTS if weights is None else weights)
    held_back: list[str] = []
    if (fields is None and "flop_efficiency" in names and len(names) > 1 and w.get("ttft_p50_ms", 0.0) > 0
            and not any(pt.value("ttft_p50_ms") is not None for pt in points)):
        # A prefill's own cost is seen directly only in TTFT. Without one, flop_efficiency would be read off
        # the prefill share of high-load mixed steps, where it trades off against every other batch-dependent
        # cost the model holds at its default (per-sequence overhead, sampling, the API server): the fit would
        # charge those to the prefill and stretch every prompt at low load. So it is held at its published
        # default unless the caller names it.
        names = tuple(n for n in names if n != "flop_efficiency")
        held_back.append(f"flop_efficiency kept at its default ({known['flop_efficiency']:.3g}): no point has a "
                         "usable TTFT p50, the one metric that measures a prefill's cost (name it in fields= / "
                         "--fit to fit it anyway)")
    obs: list[tuple[int, str, float, float]] = []  # (point index, metric, ln(measured), weight)
    for i, pt in enumerate(points):
        for m in METRICS:
            v = pt.value(m)
            if v is not None and w.get(m, 0.0) > 0:
                obs.append((i, m, math.log(v), w[m]))
    p = len(names)
    if len(obs) < p:
        raise CalibrationError(
            f"{len(obs)} measured value(s) ({', '.join(pt.label for pt in points) or 'no points'}) cannot determine "
            f"{p} parameters ({', '.join(names)}): give more points, or fit fewer with --fit")
    used = {o[0] for o in obs}
    loads = {(pt.concurrency, pt.rate_req_per_s) for i, pt in enumerate(points) if i in used}
    fitted_metrics = " or ".join(_short(m) for m in METRICS if w.get(m, 0.0) > 0)

    cache: dict[tuple[float, ...], tuple[list[float], list[Mapping[str, float]]]] = {}

    def constants_at(x: Sequence[float], extra: Mapping[str, float] | None = None) -> Constants:
        return _with_fitted(base, {**{n: _to_v(n, xi) for n, xi in zip(names, x, strict=True)}, **(extra or {})})

    def residuals(x: Sequence[float], extra: Mapping[str, float] | None = None
                  ) -> tuple[list[float], list[Mapping[str, float]]]:
        """The weighted log-residuals at ``x`` (the fitted constants' logs), with ``extra`` held constants moved
        (:func:`_conditional_on`); cached by ``x`` where there are none."""
        key = tuple(round(xi, 12) for xi in x)
        if extra or key not in cache:
            c = constants_at(x, extra)
            preds = [predict(c, pt) for pt in points]
            r = []
            for i, m, lm, wt in obs:
                v = preds[i][m]
                if not (v > 0) or not math.isfinite(v):
                    raise CalibrationError(f"the model predicts {m} = {v} at {points[i].label}: cannot fit a log-error")
                r.append(wt * (math.log(v) - lm))
            if extra:  # a held constant moved: never the cache's entry for x, which the residual lines read back
                return r, preds
            cache[key] = (r, preds)
        return cache[key]

    def jacobian(x: list[float], r0: list[float], central: bool) -> list[list[float]]:
        cols = []
        for j in range(p):
            xp = x[:]
            xp[j] += FD_STEP_LOG
            rp = residuals(xp)[0]
            if central:
                xm = x[:]
                xm[j] -= FD_STEP_LOG
                rm = residuals(xm)[0]
                cols.append([(a - b) / (2 * FD_STEP_LOG) for a, b in zip(rp, rm, strict=True)])
            else:
                cols.append([(a - b) / FD_STEP_LOG for a, b in zip(rp, r0, strict=True)])
        return [[cols[j][k] for j in range(p)] for k in range(len(r0))]

    def scaled_jacobian(x: list[float], r0: list[float], scale: Sequence[float]) -> list[list[float]]:
        """d residual / d (value ÷ scale), by differences of FD_STEP_LOG × scale in the value: central where
        both sides are allowed, one-sided at a bound (an efficiency's 1, an overhead's 0)."""
        cols = []
        for j, n in enumerate(names):
            v = _to_v(n, x[j])
            dv = FD_STEP_LOG * scale[j]
            hi_ok = not (_is_share(n) and v + dv >= 1.0)
            lo_ok = v - dv > 0.0
            xp, xm = x[:], x[:]
            xp[j] = _to_x(n, v + dv) if hi_ok else x[j]
            xm[j] = _to_x(n, v - dv) if lo_ok else x[j]
            rp = residuals(xp)[0] if hi_ok else r0
            rm = residuals(xm)[0] if lo_ok else r0
            span = (dv if hi_ok else 0.0) + (dv if lo_ok else 0.0)
            cols.append([(a - b) * scale[j] / span for a, b in zip(rp, rm, strict=True)])
        return [[cols[j][k] for j in range(p)] for k in range(len(r0))]

    x = [_to_x(n, _start_value(n, float(known[n]))) for n in names]
    r, _ = residuals(x)
    cost = sum(v * v for v in r)
    mu = 1e-2
    it = 0
    while it < max_iterations:
        it += 1
        jac = jacobian(x, r, central=False)
        h = _jtj(jac)
        g = [sum(jac[k][i] * r[k] for k in range(len(r))) for i in range(p)]
        hmax = max(max(h[i][i] for i in range(p)), 1e-12)
        improved = False
        for _ in range(12):
            a = [[h[i][j] + (mu * (h[i][i] + 1e-9 * hmax) if i == j else 0.0) for j in range(p)] for i in range(p)]
            try:
                step = _solve(a, [-gi for gi in g])
            except ZeroDivisionError:
                mu *= 10
                continue
            big = max(abs(s) for s in step)
            if big > 2.0:  # never more than a factor e² per iteration
                step = [s * 2.0 / big for s in step]
            xn = [xi + si for xi, si in zip(x, step, strict=True)]
            rn, _ = residuals(xn)
            cn = sum(v * v for v in rn)
            if cn < cost:
                rel = (cost - cn) / max(cost, 1e-300)
                x, r, cost = xn, rn, cn
                mu = max(mu / 3.0, 1e-7)
                improved = True
                break
            mu *= 4.0
        if not improved or rel < 1e-7 or cost < 1e-14:
            break

    # --- uncertainty and identifiability at the optimum. The Jacobian is taken on each parameter's own scale,
    # max(fitted value, starting value), so an overhead the fit drove towards 0 still gets a difference step of the
    # size it was expected to have; whether the points pin it is judged against its fitted value (pinned()).
    vals = [_to_v(n, xi) for n, xi in zip(names, x, strict=True)]
    scale = [max(v, _start_value(n, float(known[n]))) for n, v in zip(names, vals, strict=True)]
    jac = scaled_jacobian(x, r, scale)  # d r / d (v / scale)
    h = _jtj(jac)
    n_obs = len(r)
    sigma2 = max(cost / (n_obs - p) if n_obs > p else 0.0, NOISE_FLOOR_LOG ** 2)
    eigval, eigvec = _eigh(h)
    lam_max = max(max(eigval), 0.0)
    deficient = [k for k, lam in enumerate(eigval) if lam <= RANK_RTOL * lam_max or lam <= 1e-18]
    sd_scaled = []
    for i in range(p):
        acc = 0.0
        for k, lam in enumerate(eigval):
            if k not in deficient:
                acc += eigvec[i][k] ** 2 / lam
        sd_scaled.append(math.sqrt(acc * sigma2))
    bad: dict[str, str] = {}
    for k in deficient:
        involved = [names[i] for i in range(p) if abs(eigvec[i][k]) > 0.3]
        for n in involved:
            others = [o for o in involved if o != n]
            bad[n] = ("has no measurable effect on the fitted metrics at these points" if not others else
                      f"is confounded with {', '.join(others)} (only a combination is determined)")
    for i, n in enumerate(names):
        sd = sd_scaled[i] * scale[i]  # 1σ in the constant's own unit
        if n not in bad and not pinned(sd, vals[i], max_log_sd):
            partners = _partners(h, i, names)
            # a fit at a thousandth of its own uncertainty is at its bound: said as about 0, in the sd's unit
            # (trial s24 L10 read "±856.2 ms (1σ; fitted 0.001663 us")
            if abs(vals[i]) < 1e-3 * sd:  # "fitted about 0 (4.126e-11 us): over 50% of its value" (s25c #5)
                bad[n] = (f"is determined only to ±{_fmt(n, sd)} (1σ), fitted about 0: the points cannot tell it "
                          "from 0" + (f", trading off against {', '.join(partners)}" if partners else ""))
                continue
            fitted = _fmt(n, vals[i], like=sd)
            bad[n] = (f"is determined only to ±{_fmt(n, sd)} (1σ; fitted {fitted}"
                      + (f", ±{100 * sd / vals[i]:.0f}% of it" if vals[i] > 0 and sd < 1e3 * vals[i] else "")
                      + f": over {100 * max_log_sd:.0f}% of its value)"
                      + (f", trading off against {', '.join(partners)}" if partners else ""))
    if bad:
        keep = _identifiable_subset(h, names, sigma2, max_log_sd, scale, vals)
        if keep and _check_subset:
            # the model is nonlinear: a subset that looks identifiable from this optimum may not be from the
            # defaults it would start at. Fit it to be sure, and propose what that fit accepts.
            try:
                fit(points, base, predict=predict, fields=keep, weights=weights, max_iterations=max_iterations,
                    max_log_sd=max_log_sd, screened=screened)
            except CalibrationError as sub:
                keep = tuple(getattr(sub, "identifiable", ()))
        where = ", ".join(sorted({pt.label for i, pt in enumerate(points) if i in used}))
        # a point whose TTFT was measured and left out by the screen did not fail to measure it: the screen's
        # note (and fit_by_metric's) say what it measured and why it was left out, so it is not listed here
        skip = set(screened) if w.get("ttft_p50_ms", 0.0) > 0 else set()
        idle = sorted({pt.label for i, pt in enumerate(points) if i not in used and pt.label not in skip})
        if idle:  # say which points carried the values: the others measure nothing these metrics fit
            where += f"; {', '.join(idle)} {'has' if len(idle) == 1 else 'have'} no {fitted_metrics} to fit"
        hint = (f"fit {', '.join(keep)} alone (roofline calibrate --fit {','.join(keep)}) to fit the identifiable "
                "subset and keep the others at their defaults" if keep
                else "no subset of them is identifiable from these points")
        # one load tells nothing apart only where there is more than one parameter to tell apart
        one_load = len(loads) == 1 and p >= 2
        err = CalibrationError(
            f"the points ({where}) cannot identify {', '.join(bad)}: "
            + "; ".join(f"{n} {why}" for n, why in bad.items())
            + (". All points run at one load, so per-step overhead and bandwidth/compute terms cannot be told "
               "apart: add a point at a very different concurrency or rate" if one_load else "")
            + f". {hint}" + "".join(f"; {n}" for n in held_back))
        err.unidentified = tuple(bad)
        err.identifiable = keep
        err.held_back = tuple(held_back)
        raise err
    log_sd = [sd_scaled[i] * scale[i] / vals[i] for i in range(p)]
    conditional = _conditional_on(names, known, held, x, r, jac, sd_scaled, sigma2, residuals)

    values = {n: _to_v(n, xi) for n, xi in zip(names, x, strict=True)}
    preds = residuals(x)[1]
    fits = []
    for i, pt in enumerate(points):
        meas: dict[str, float] = {}
        for m in METRICS:
            mv = pt.value(m)
            if mv is not None:
                meas[m] = mv
        pred = {m: float(preds[i][m]) for m in METRICS if m in preds[i]}
        res = {m: math.log(pred[m] / meas[m]) for m in meas if m in pred}
        fits.append(PointFit(pt.id, pt.label, meas, pred, res))
    warnings = list(held_back)
    for n, v in values.items():
        if _is_share(n) and v > 0.995:
            warnings.append(f"{n} = {v:.3g} sits at its bound of 1: the points ask for more than the catalog's "
                            "peak (a model that fits in cache, or a term the model misses)")
        elif not _is_share(n) and v < 1e-3 * _start_value(n, float(known[n])):
            warnings.append(f"{n} was driven to ~0 ({_fmt(n, v)}): the points leave no room for it")
    rms = math.sqrt(cost / max(n_obs, 1))
    floor = not (n_obs > p and cost / (n_obs - p) > NOISE_FLOOR_LOG ** 2)
    return FitResult(
        constants=constants_at(x), fitted=names, values=values,
        uncertainty={n: values[n] * sd for n, sd in zip(names, log_sd, strict=True)},
        log_sd=dict(zip(names, log_sd, strict=True)), points=tuple(fits), rms_log_residual=rms, iterations=it,
        warnings=tuple(warnings), conditional_on=conditional,
        rms_parts=((tuple(m for m in METRICS if w.get(m, 0.0) > 0), n_obs, rms, ""),), noise_floor=floor,
    )


#: a fitted constant's 1σ is reported as conditional on a constant held at its value when freeing that constant
#: would widen it by more than this factor (or leave it undetermined)
CONDITIONAL_WIDENING = 2.0


def _conditional_on(names: Sequence[str], known: Mapping[str, float], held: Sequence[str], x: list[float],
                    r: list[float], jac: list[list[float]], sd_scaled: Sequence[float], sigma2: float,
                    residuals: Callable[..., tuple[list[float], Any]]) -> dict[str, dict[str, float]]:
    """For each fitted constant, the held constants (not fitted, at their value) that its 1σ depends on: freeing
    one (its own column of the Jacobian, on its own scale, beside the fitted ones' ``jac``) widens that 1σ by more
    than :data:`CONDITIONAL_WIDENING`, or leaves the constant undetermined (a direction the points cannot see)."""
    out: dict[str, dict[str, float]] = {}
    p = len(names)
    for j in held:
        if j in names or known.get(j) is None:
            continue
        v = float(known[j])
        sc = _start_value(j, v)
        dv = FD_STEP_LOG * sc
        hi_ok = not (_is_share(j) and v + dv >= 1.0)
        lo_ok = v - dv > 0.0
        rp = residuals(x, {j: v + dv})[0] if hi_ok else r
        rm = residuals(x, {j: v - dv})[0] if lo_ok else r
        span = (dv if hi_ok else 0.0) + (dv if lo_ok else 0.0)
        col = [(a - b) * sc / span for a, b in zip(rp, rm, strict=True)]
        if not any(abs(c) > 1e-12 for c in col):
            continue  # it does not move these metrics at these points: nothing depends on it
        h = _jtj([row + [c] for row, c in zip(jac, col, strict=True)])
        sd = _sub_sd(h, range(p + 1), sigma2)
        for i, n in enumerate(names):
            if sd is None or sd[i] > CONDITIONAL_WIDENING * sd_scaled[i]:
                out.setdefault(n, {})[j] = v
    return out


def _partners(h: list[list[float]], i: int, names: Sequence[str]) -> list[str]:
    out = []
    for j, n in enumerate(names):
        if j != i and h[i][i] > 0 and h[j][j] > 0:
            corr = h[i][j] / math.sqrt(h[i][i] * h[j][j])
            if abs(corr) > 0.9:
                out.append(n)
    return out


def _sub_sd(h: list[list[float]], idx: Sequence[int], sigma2: float) -> list[float] | None:
    sub = [[h[i][j] for j in idx] for i in idx]
    ev, vec = _eigh(sub)
    lam_max = max(max(ev), 0.0)
    if any(lam <= RANK_RTOL * lam_max or lam <= 1e-18 for lam in ev):
        return None
    return [math.sqrt(sigma2 * sum(vec[a][k] ** 2 / ev[k] for k in range(len(idx)))) for a in range(len(idx))]


def pinned(sd: float, value: float, max_log_sd: float = MAX_LOG_SD) -> bool:
    """Whether the points pin a constant: its 1σ ``sd`` (in the constant's own unit) is at most ``max_log_sd``
    (:data:`MAX_LOG_SD`, 50%) of its fitted ``value``.  The one identifiability rule of every fit (:func:`fit`,
    its identifiable subset, and so :func:`fit_by_metric`'s stages and ``--joint``): judged against the value the
    fit would write, the same ± percentage it prints, never against the default it started from (a CPU
    per-sequence overhead fitted at 7.77 µs ± 18.9 µs, ±243%, is not pinned although 18.9 µs is 38% of its 50 µs
    default).  A value fitted at zero is never pinned (its 1σ is no share of it)."""
    return value > 0 and sd <= max_log_sd * value


def _identifiable_subset(h: list[list[float]], names: Sequence[str], sigma2: float, max_log_sd: float,
                         scale: Sequence[float], vals: Sequence[float]) -> tuple[str, ...]:
    """Drop the least determined parameter until the rest are identified (from the same Jacobian, taken on each
    parameter's ``scale``; :func:`pinned` against its fitted value ``vals``)."""
    idx = list(range(len(names)))
    while idx:
        sd = _sub_sd(h, idx, sigma2)
        if sd is not None and all(pinned(sd[a] * scale[i], vals[i], max_log_sd) for a, i in enumerate(idx)):
            return tuple(names[i] for i in idx)
        if sd is None:  # rank deficient: drop the one with the least information
            worst = min(idx, key=lambda i: h[i][i])
        else:  # the least pinned: the largest 1σ as a share of its value
            worst = idx[max(range(len(idx)), key=lambda a: sd[a] * scale[idx[a]] / max(vals[idx[a]], 1e-300))]
        idx.remove(worst)
    return ()


def calibration_from_fit(result: FitResult, setup: Setup, *, sources: Sequence[str] = (), notes: str = "",
                         created_at: str | None = None) -> Calibration:
    """The :class:`Calibration` recording ``result`` fitted on ``setup``."""
    return Calibration(
        hardware_id=str(setup.hardware.id), model_name=str(setup.model.name), engine_name=setup.engine_name,
        engine_version=setup.engine_version, input_len=int(setup.input_len), output_len=int(setup.output_len),
        constants=dict(result.constants.to_dict()), fitted=tuple(result.fitted),
        uncertainty=dict(result.uncertainty), points=tuple(p.to_dict() for p in result.points),
        engine_limits={k: int(getattr(setup, k)) for k in ("max_num_seqs", "max_num_batched_tokens", "block_size",
                                                            "tensor_parallel_size")},
        device=setup.device, weight_dtype=setup.weight_dtype, kv_dtype=setup.kv_dtype,
        created_at=created_at or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        sources=tuple(str(s) for s in sources), rms_log_residual=result.rms_log_residual, notes=notes,
    )


# -- fitting each parameter on the metric that measures it (issue 22) ---------------------------------------------

#: which measured metrics identify which constants: the decode step's terms show alone in TPOT (a closed loop's
#: throughput also carries the API server's time between a client's requests, so it is used for them only when no
#: point measured TPOT); a prefill's compute and the API server's time before the first step show in TTFT
STEP_FIELDS: tuple[str, ...] = ("hbm_efficiency", "step_overhead_s", "per_seq_overhead_s")
TTFT_FIELDS: tuple[str, ...] = ("frontend_in_s", "flop_efficiency")
STEP_METRICS: tuple[str, ...] = ("tpot_p50_ms",)
#: the step terms' metric when no point measured TPOT (throughput-only sweeps, e.g. published tok/s tables)
STEP_METRICS_FALLBACK: tuple[str, ...] = ("output_throughput_tok_per_s",)
TTFT_METRICS: tuple[str, ...] = ("ttft_p50_ms",)
#: rounds of the two stages at most: a TTFT-fitted prefill efficiency moves TPOT too (a prefill stalls the decode
#: steps it shares or interrupts), so the step terms are fitted again on TPOT with it, until nothing moves
MAX_ROUNDS = 4
#: a round changes no fitted value by more than this share: the stages agree
ROUND_RTOL = 0.01


@dataclass(frozen=True)
class MetricFit:
    """:func:`fit_by_metric`'s result: one :class:`FitResult` per stage (None where nothing was fitted), the
    final constants, and what the points could not identify with the point that would."""

    constants: Constants
    step: FitResult | None
    ttft: FitResult | None
    notes: tuple[str, ...]
    #: the metrics each stage was fitted on, e.g. {"step": ("tpot_p50_ms",), "ttft": ("ttft_p50_ms",)}
    metrics: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    rounds: int = 1

    @property
    def values(self) -> dict[str, float]:
        return {**(self.step.values if self.step else {}), **(self.ttft.values if self.ttft else {})}

    @property
    def log_sd(self) -> dict[str, float]:
        return {**(self.step.log_sd if self.step else {}), **(self.ttft.log_sd if self.ttft else {})}

    def as_fit_result(self) -> FitResult:
        """One :class:`FitResult` for the calibration file and the CLI: both stages' fitted values with their
        uncertainties, the final constants, the residuals of the last stage (at the final constants), the notes as
        warnings.  CalibrationError when neither stage fitted anything."""
        stages = [r for r in (self.step, self.ttft) if r is not None]
        if not stages:
            raise CalibrationError("nothing could be fitted: " + "; ".join(self.notes))
        last = stages[-1]
        return FitResult(
            constants=self.constants, fitted=tuple(n for r in stages for n in r.fitted), values=self.values,
            uncertainty={k: v for r in stages for k, v in r.uncertainty.items()}, log_sd=self.log_sd,
            points=last.points, rms_log_residual=last.rms_log_residual,
            rms_parts=tuple((metrics, n, rms, label) for r, label in ((self.step, "the decode-step terms"),
                                                                      (self.ttft, "the TTFT terms")) if r is not None
                            for metrics, n, rms, _stage in r.rms_parts),
            iterations=sum(r.iterations for r in stages),
            warnings=tuple(w for r in stages for w in r.warnings) + self.notes,
            conditional_on={k: v for r in stages for k, v in r.conditional_on.items()},
            noise_floor=any(r.noise_floor for r in stages))


def _at_defaults(c: Constants, names: Iterable[str], defaults: Constants | None) -> Constants:
    """``c`` with ``names`` at their values in ``defaults`` (none: ``c`` as it is): a constant a stage does not fit
    keeps its default, never a value an earlier round fitted and this one could not pin."""
    if defaults is None:
        return c
    d, now = defaults.to_dict(), c.to_dict()
    back = {n: float(d[n]) for n in names if n in d and now.get(n) != d[n]}
    return _with_fitted(c, back) if back else c


def _stage(points: Sequence[MeasuredPoint], base: Constants, names: list[str], metrics: Sequence[str],
           predict: Predictor, what: str, notes: list[str], *, family: Sequence[str] = (),
           none_left: str = "", screened: Collection[str] = (), defaults: Constants | None = None
           ) -> FitResult | None:
    """Fit ``names`` on ``metrics`` alone; on an identifiability refusal (:func:`pinned`, through :func:`fit`),
    the identifiable subset, with a note, the others held at their values in ``defaults`` (the caller keeps them
    there where this returns None).
    ``family``: the constants this metric fits, so an interval conditional on one of them held says so
    (``fit(held=)``); ``none_left``: why no point has a value of the metric, where one was measured and screened
    out (else the note says no point measures it); ``screened``: the labels of those points (:func:`fit`)."""
    if not names:
        return None
    if not any(pt.value(m) is not None for pt in points for m in metrics):
        notes.append(f"{', '.join(names)} kept at the defaults: {none_left or f'no point measures {what}'}")
        return None
    weights = {m: (DEFAULT_WEIGHTS.get(m, 1.0) or 1.0) if m in metrics else 0.0 for m in METRICS}
    n_values = sum(1 for pt in points for m in metrics if pt.value(m) is not None)
    if n_values < len(names):
        # fewer values than parameters: the first ones in the order the metric pins them best (a GPU's TPOT is
        # mostly the weight read; the CPU engine's mostly per-step overhead)
        cpu = getattr(base, "host_mem_bytes_per_s", None) is not None
        order = (("step_overhead_s", "per_seq_overhead_s", "hbm_efficiency") if cpu else
                 ("hbm_efficiency", "per_seq_overhead_s", "step_overhead_s")) + TTFT_FIELDS
        keep = [n for n in order if n in names][:n_values]
        notes.append(f"{n_values} value(s) of {what} cannot determine {len(names)} parameters: "
                     f"{', '.join(n for n in names if n not in keep)} kept at the defaults, {', '.join(keep)} tried "
                     "(the lines below say which of them the points identify)")
        base = _at_defaults(base, [n for n in names if n not in keep], defaults)
        names = keep
    try:
        return fit(points, base, predict=predict, fields=names, weights=weights,
                   held=[n for n in family if n not in names], screened=screened)
    except CalibrationError as exc:
        subset = tuple(getattr(exc, "identifiable", ()) or ())
        if not subset or set(subset) == set(names):
            notes.append(f"{', '.join(names)} not fitted from {what}: {exc}")
            return None
        left = [n for n in names if n not in subset]
        base = _at_defaults(base, left, defaults)
        values = base.to_dict()
        notes.append(f"{', '.join(left)} not identified by {what} of these points (tried with "
                     f"{', '.join(subset)}: {exc}); fitted {', '.join(subset)} only, with "
                     + ", ".join(f"{n} held at {_fmt(n, float(values[n]))}" for n in left if n in values))
        return fit(points, base, predict=predict, fields=subset, weights=weights,
                   held=[n for n in family if n not in subset], screened=screened)


#: the key under which :func:`serving_predictor` also returns the model's share of step time on prefill compute at
#: a point (a predictor that does not return it has every point decode-bound)
PREFILL_SHARE_KEY = "prefill_compute_share"


def _decode_bound(points: Sequence[MeasuredPoint], base: Constants, predict: Predictor,
                  notes: list[str]) -> list[MeasuredPoint]:
    """The points whose TPOT and throughput can fit the decode-step terms: those where the model, at the starting
    constants, spends less than half its step time on prefill compute (``model.bands.PREFILL_BOUND_SHARE``, the
    bands' own class boundary). At a prefill-bound point (a burst of long prompts) a TPOT is mostly the prefill
    chunks its steps carry, and fitting the bandwidth to it trades a prefill residual into a decode parameter
    (GPUStack's H100 bursts: ``hbm_efficiency`` 0.13; benchmarks/calibration_holdout.py)."""
    keep: list[MeasuredPoint] = []
    left: list[MeasuredPoint] = []
    for pt in points:
        share = float(predict(base, pt).get(PREFILL_SHARE_KEY, 0.0))
        (left if share >= PREFILL_BOUND_SHARE else keep).append(pt)
    if left:
        notes.append(f"{', '.join(pt.label for pt in left)}: prefill-bound in the model (at least half its step time "
                     "on prefill compute), so its TPOT and throughput are left out of the decode-step terms (they "
                     "measure the prefill chunks the steps carry); its TTFT still fits the prefill terms")
    return keep


def _step_metrics(points: Sequence[MeasuredPoint]) -> tuple[tuple[str, ...], str]:
    if any(pt.value(m) is not None for pt in points for m in STEP_METRICS):
        return STEP_METRICS, "TPOT"
    return STEP_METRICS_FALLBACK, "throughput (no point measured TPOT)"


def check_fields(fields: Sequence[str] | None, known: Iterable[str], *, joint: bool = False) -> None:
    """Refuse, naming them, constants the model does not have (``known``: its constants' names) and, fitting by
    metric (not ``joint``), constants no metric of their own fits: :func:`fit_by_metric`'s own check, which
    ``roofline calibrate`` makes before any work (so a typo in ``--fit`` is one line, not a fit's preamble)."""
    known = set(known)
    want = tuple(fields) if fields is not None else ()
    unknown = [n for n in want if n not in known]
    if unknown:
        raise CalibrationError(f"--fit: unknown constant(s) {', '.join(unknown)}; fittable: "
                               f"{', '.join(STEP_FIELDS + TTFT_FIELDS)} (each on its own metric), or any of "
                               f"{', '.join(sorted(known))} with --joint")
    other = [n for n in want if n not in STEP_FIELDS + TTFT_FIELDS]
    if other and not joint:
        raise CalibrationError(f"{', '.join(other)}: not fitted on a metric of its own (the decode-step terms "
                               f"{', '.join(STEP_FIELDS)} are fitted on TPOT, {', '.join(TTFT_FIELDS)} on TTFT); "
                               "pass --joint to fit it on every metric at once")


def fit_by_metric(points: Sequence[MeasuredPoint], base: Constants, *, predict: Predictor,
                  fields: Sequence[str] | None = None, screened: Mapping[str, str] | None = None,
                  held_out: Sequence[MeasuredPoint] = (), max_prompt: int | None = None) -> MetricFit:
    """Fit each constant on the metric that measures it, never one metric's residual into another's parameter:
    the decode-step terms (:data:`STEP_FIELDS`) on TPOT alone (on throughput where no point measured TPOT), the
    API-server and prefill terms (:data:`TTFT_FIELDS`) on TTFT alone.  ``fields`` limits both (default: all).

    The stages alternate, each from the other's latest values, until no fitted value moves by more than
    :data:`ROUND_RTOL` (at most :data:`MAX_ROUNDS`), where a TTFT term moves the step metric: a prefill efficiency
    read off TTFT also prices the prefills that stall decode steps, and where throughput stands in for TPOT the
    frontend delays a closed loop's next request; the step terms are then refitted with it (each term still on
    its own metric only).

    ``flop_efficiency`` is tried only where the TTFT points differ in prompt length: at one prompt length a
    per-token prefill cost and a per-request cost move TTFT alike, whatever the loads.  Whether the points then
    identify it is the fit's own test (the Gauss–Newton covariance; :func:`fit`).

    The notes say what the points left unidentified and what kind of point would identify it, never a load the
    fit already has (:func:`_step_advice`): a TTFT at C = 1 pins ``frontend_in_s``; ``flop_efficiency`` needs
    TTFTs of two prompt lengths; the decode-step terms need TPOTs at two batch sizes far apart, and all three of
    them TPOTs at two context lengths too.  ``screened`` (label → the measured TTFT and why it was left out:
    :func:`screen_points_why`) lets them say a TTFT was measured and screened out rather than not measured;
    ``max_prompt``: the longest prompt the engine serves beside the points' outputs, so no note asks for a longer one.
    ``held_out`` (the results' other points, screened alike) lets them name a point the results already hold:
    "fit with C = 8 too (it is in the file)"."""
    want = tuple(fields) if fields is not None else STEP_FIELDS + TTFT_FIELDS
    known = set(base.to_dict()) | ({f.name for f in dataclasses.fields(base)} if dataclasses.is_dataclass(base)
                                   else set())
    check_fields(want, known)
    screened = dict(screened or {})
    step_names = [n for n in STEP_FIELDS if n in want]
    hidden_per_seq = "per_seq_overhead_s" in step_names and "per_seq_overhead_s" in getattr(predict, "hidden", ())
    if hidden_per_seq:  # an async engine hides it behind the GPU's step: nothing the points measure moves it
        step_names.remove("per_seq_overhead_s")
        want = tuple(n for n in want if n != "per_seq_overhead_s")
    prefill_notes: list[str] = []
    step_points = _decode_bound(points, base, predict, prefill_notes) if step_names else list(points)
    step_metrics, step_what = _step_metrics(step_points or points)
    ttft_names = [n for n in TTFT_FIELDS if n in want]
    prompts = {pt.input_len for pt in points if pt.value("ttft_p50_ms") is not None}
    if "flop_efficiency" in ttft_names and len(prompts) < 2:
        # one prompt length: a per-token prefill cost and a per-request cost move a lone request's TTFT alike.
        # Loads far apart part them only through the queues in front of the engine (the API server takes
        # requests one at a time), where what the model does not hold is also largest: a prefill efficiency read
        # there absorbed it (Lambda's V0 runs: 0.36 on an H100 from N = 10 and N = 160, which then mispredicted
        # every TP > 1 run; docs/explanation/models.md)
        ttft_names.remove("flop_efficiency")
    left_out = [pt.label for pt in points if pt.label in screened]
    ttft_none_left = ("no TTFT is left to fit on (measured, but left out of the fit: "
                      + "; ".join(f"{lb}'s TTFT p50 {screened[lb]}" for lb in left_out) + ")" if left_out else "")
    step: FitResult | None = None
    ttft: FitResult | None = None
    current = base
    rounds = 0
    notes: list[str] = []
    previous: dict[str, float] = {}
    reclassed = False  # a point moved across the prefill-bound boundary at the fitted constants
    turned = False  # the stages were fitted again because a TTFT term moves the step metric
    seen = {tuple(pt.label for pt in step_points)}
    while rounds < MAX_ROUNDS:
        rounds += 1
        notes = list(prefill_notes)  # each round's notes replace the last's: the final round's say what the result is
        prefill_only = ""
        if (step_names and not any(_measures(pt, step_metrics) for pt in step_points)
                and any(_measures(pt, step_metrics) for pt in points)):
            prefill_only = (f"every point that measures {step_what.split(' ')[0]} is prefill-bound in the model "
                            "(its steps mostly carry prefill chunks)")
        step = _stage(step_points, current, step_names, step_metrics, predict, step_what, notes,
                      family=STEP_FIELDS, none_left=prefill_only, defaults=base)
        current = step.constants if step else _at_defaults(current, step_names, base)
        ttft = _stage(points, current, ttft_names, TTFT_METRICS, predict, "TTFT", notes, family=TTFT_FIELDS,
                      none_left=ttft_none_left, screened=left_out, defaults=base)
        current = ttft.constants if ttft else _at_defaults(current, ttft_names, base)
        values = {**(step.values if step else {}), **(ttft.values if ttft else {})}
        moved = any(abs(values[k] / previous[k] - 1.0) > ROUND_RTOL if previous.get(k) else True for k in values)
        # what the TTFT stage fits feeds back into the step metric only through a prefill efficiency (prefills
        # stall decode steps) or, where throughput stands in for TPOT, the frontend (a closed loop's client waits
        # for it between requests)
        feeds_back = ttft is not None and step is not None and (
            "flop_efficiency" in ttft.fitted
            or (step_metrics == STEP_METRICS_FALLBACK and "frontend_in_s" in ttft.fitted))
        if step_names and rounds < MAX_ROUNDS:
            # the boundary is the model's, so it moves with the fitted constants (a prefill efficiency read off
            # TTFT can make a point prefill-bound that was not at the start): class the points again and refit the
            # step terms on the new set, until it holds (a set seen before ends it: no oscillation)
            again: list[str] = []
            moved_set = _decode_bound(points, current, predict, again)
            labels = tuple(pt.label for pt in moved_set)
            if labels != tuple(pt.label for pt in step_points) and labels not in seen and moved_set:
                seen.add(labels)
                step_points, prefill_notes, reclassed = moved_set, again, True
                step_metrics, step_what = _step_metrics(step_points)
                previous = values
                continue
        if not feeds_back or (previous and not moved):
            break
        previous, turned = values, True
    if reclassed:
        notes.append("which points are prefill-bound was decided again at the fitted constants (the model's time "
                     "split moves with them), and the decode-step terms refitted on the points decode-bound there")
    if turned:
        notes.append(f"the step and TTFT stages were fitted in turn {rounds} times: a term read off TTFT also moves "
                     f"the {step_what.split(' ')[0]} the step terms are fitted on (each term still on its own metric)")
    if step_metrics == STEP_METRICS_FALLBACK and step is not None:
        notes.append("no point measured TPOT: the decode-step terms were fitted on throughput, which in a closed "
                     "loop also carries the API server's time between a client's requests (frontend_in_s at its "
                     "value); a measured TPOT would fit them on the decode step alone")
    if hidden_per_seq:
        notes.append(ASYNC_PER_SEQ_NOTE)
    unfitted = [n for n in STEP_FIELDS if n in want and not (step and n in step.fitted)]
    if unfitted:
        notes.append(_step_advice(unfitted, want, step_points, step_metrics, points, held_out, current, predict))
    if "frontend_in_s" in want and not (ttft and "frontend_in_s" in ttft.fitted):
        notes.append(_frontend_advice(points, held_out, screened))
    if "flop_efficiency" in want and not (ttft and "flop_efficiency" in ttft.fitted):
        notes.append(_prefill_advice(points, held_out, tried=len(prompts) >= 2, max_prompt=max_prompt))
    return MetricFit(constants=current, step=step, ttft=ttft, notes=tuple(notes),
                     metrics={"step": step_metrics if step else (), "ttft": TTFT_METRICS if ttft else ()},
                     rounds=rounds)


# -- what a fit by metric could not identify, and the point that would ------------------------------------------------
def _closed(pt: MeasuredPoint) -> bool:
    return pt.concurrency is not None and pt.rate_req_per_s is None


def _measures(pt: MeasuredPoint, metrics: Sequence[str]) -> bool:
    return any(pt.value(m) is not None for m in metrics)


def _in_file(candidates: Sequence[MeasuredPoint], fitted: Sequence[MeasuredPoint], why: str) -> str:
    """"fit with C=8 too (it is in the file: --points C=1,C=64,C=8): WHY" for the first candidate, else ""."""
    if not candidates:
        return ""
    pt = candidates[0]
    labels = list(dict.fromkeys([p.label for p in fitted] + [pt.label]))
    return f"fit with {pt.label} too (it is in the file: --points {','.join(labels)}): {why}"


def _loads_text(loads: Sequence[int]) -> str:
    return f"C = {loads[0]}" if len(loads) == 1 else f"C = {loads[0]} to C = {loads[-1]}"


def _step_advice(unfitted: Sequence[str], want: Sequence[str], step_points: Sequence[MeasuredPoint],
                 step_metrics: Sequence[str], points: Sequence[MeasuredPoint], held_out: Sequence[MeasuredPoint],
                 current: Constants, predict: Predictor) -> str:
    """What would identify the decode-step terms the fit left at their values, worked out from the model's step
    time (``serving.cost``): on the decode side a step takes ``weights ÷ hbm_efficiency + step_overhead_s`` plus,
    per running sequence, ``its KV read ÷ hbm_efficiency + per_seq_overhead_s`` (the KV bandwidth moves with the
    weights'; ``ServingConstants.with_fitted``).  At one prompt and output length that is a line in the batch size:
    loads far apart fix its intercept and slope, two quantities, so two of the three terms at most; further loads
    of the same lengths add none.  What separates the third is what differs between the terms: only the KV read
    grows with the context a sequence carries, so TPOTs at another context length part ``hbm_efficiency`` from
    ``per_seq_overhead_s``, and with it ``step_overhead_s`` from the weight read.  Never a load the fit already
    has; a held-out point of the results that has the property is named (it is in the file)."""
    terms = ", ".join(unfitted)
    tpot = tuple(step_metrics) == STEP_METRICS
    metric, metrics = ("TPOT", "TPOTs") if tpot else ("throughput", "throughputs")
    measured = [pt for pt in step_points if _measures(pt, step_metrics)]
    loads = sorted({int(pt.concurrency) for pt in measured if _closed(pt) and pt.concurrency})
    lengths = sorted({(pt.input_len or 0, pt.output_len or 0) for pt in measured})
    spread = len(loads) >= 2 and loads[-1] >= 8 * loads[0]
    all_three = all(n in want for n in STEP_FIELDS)
    # held-out points whose step metric the step fit would take (decode-bound at the fitted constants)
    spare = [pt for pt in held_out if _measures(pt, step_metrics) and pt not in points]

    def usable(cands: list[MeasuredPoint]) -> list[MeasuredPoint]:
        return [pt for pt in cands if _decode_bound([pt], current, predict, [])][:1]

    # two loads fix the step time's line in the batch size: two quantities, so two of the three terms at most; the
    # one wording of it, wherever the advice names loads for all three (trial 22 L4: the TTFT-only advice promised
    # all three from two loads)
    third = ("; at one prompt and output length, loads far apart part two of the three decode-step terms at "
             f"most: the third also needs {metrics} at another context length (other prompt or output tokens)"
             if all_three and len(lengths) <= 1 else "")
    # what two loads identify of the terms left: all three left, two of them (the per-step from the per-sequence)
    which = (f"two of {terms} (the per-step from the per-sequence ones)"
             if all_three and len(lengths) <= 1 and len(unfitted) == len(STEP_FIELDS) else terms)

    if list(unfitted) == ["step_overhead_s"] and tpot and "hbm_efficiency" in want and "per_seq_overhead_s" not in want:
        # the per-step term left alone beside hbm_efficiency (an async engine hides the per-sequence one): it sits in
        # every step's fixed part with the weight read ÷ hbm_efficiency, so only the precision of hbm_efficiency
        # (read off the KV read's slope in the load) separates the two; another load of the same lengths barely
        # helps (trial s24 M6)
        low = min((pt for pt in measured if _closed(pt) and pt.concurrency), key=lambda pt: int(pt.concurrency or 0),
                  default=None)
        step_ms = low.value("tpot_p50_ms") if low is not None else None
        overhead_ms = 1e3 * float(getattr(current, "step_overhead_s", 0.0) or 0.0)
        if low is not None and step_ms and overhead_ms and step_ms > overhead_ms:
            rest = step_ms - overhead_ms
            need = 50.0 * overhead_ms / rest
            return (f"step_overhead_s not determined beyond the measurement noise (see above): at {low.label} a "
                    f"decode step takes {step_ms:,.4g} ms, of which step_overhead_s is {overhead_ms:,.3g} ms at its "
                    f"value and the rest ({rest:,.4g} ms) the weight "
                    + ("read" if int(low.concurrency or 0) == 1 else "and KV reads") + " ÷ hbm_efficiency, so "
                    "telling it to ±50% "
                    f"needs hbm_efficiency to ±{need:.1f}% with step_overhead_s free (its ±σ above holds with "
                    "step_overhead_s at its value), which only the KV read's slope across loads gives; "
                    + ("more loads of these lengths add little: " if spread else
                       f"these run at {_loads_text(loads)} only, so loads far apart come first (C = "
                       f"{1 if loads and loads[0] >= 8 else 8 * (loads[-1] if loads else 1)} beside them), then ")
                    + f"{metrics} at high load and a longer context (more KV read per sequence: longer prompts or "
                    "outputs) sharpen that slope. Its value stays the default, the Day-3 notebook's measured gap "
                    "(docs/sources.md)")
    if not spread:
        if not loads and any(_measures(pt, step_metrics) for pt in points):  # measured, but prefill-bound
            return (f"{metrics} at decode-bound points (shorter prompts or more output tokens, so that decode "
                    f"dominates the steps), at two batch sizes far apart, would identify {which}{third}")
        if not loads:
            return (f"{metrics} at two batch sizes far apart (e.g. C = 1 and C = 32) would identify {which}"
                    + (third if which != terms else " apart from the other decode-step terms" + third))
        span = {pt.label: max(loads[-1], c) / min(loads[0], c) for pt in spare if _closed(pt)
                for c in [int(pt.concurrency or 0)] if c > 0}
        far = sorted((pt for pt in spare if span.get(pt.label, 0.0) >= 8), key=lambda pt: -span[pt.label])
        hint = _in_file(usable(far), points, f"its {metric} at a load far from these")
        if not hint:
            hint = f"add one at C = {1 if loads[0] >= 8 else 8 * loads[0]}"
        return (f"{metrics} at two batch sizes far apart would identify {terms} apart from the other decode-step "
                f"terms (the per-step from the per-sequence ones): the points here run at {_loads_text(loads)} "
                f"only; {hint}{third}")
    if all_three and len(lengths) == 1:
        i, o = lengths[0]
        at = f" ({i:,}/{o:,} tokens)" if i and o else ""
        other = [pt for pt in spare if (pt.input_len or 0, pt.output_len or 0) != lengths[0]]
        hint = _in_file(usable(other), points, f"its {metric} is at another context length")
        return (f"{terms} not identified, and more loads will not do it: at one prompt and output length{at} every "
                "decode step's time lies on one line in the batch size, its intercept the weight read ÷ "
                "hbm_efficiency + step_overhead_s, its slope the KV read per sequence ÷ hbm_efficiency + "
                f"per_seq_overhead_s. The loads here ({_loads_text(loads)}) already fix that line, so the three "
                "decode-step terms trade off along it (two quantities, three terms), and another load of these "
                f"lengths adds no third. What parts them is {metrics} at another context length (other prompt or "
                "output tokens), at loads as far apart: the KV read per sequence grows with the context, "
                "per_seq_overhead_s does not"
                + (f"; {hint}" if hint else ""))
    kinds = "load and context length" if len(lengths) >= 2 else "load"
    if len(lengths) == 1:
        # one prompt and output length: every step lies on one line in the batch, which the loads here already
        # fix, so another load of these lengths narrows little (trial s26b #12: "fit with C=2 too", then "C=4 too",
        # and all eight points left step_overhead_s at ±105%); a point at another context length is what parts it
        other = [pt for pt in spare if (pt.input_len or 0, pt.output_len or 0) != lengths[0]]
        hint = _in_file(usable(other), points, f"its {metric} is at another context length")
        return (f"{terms} not determined beyond the measurement noise (see above): at one prompt and output length "
                f"every decode step's time lies on one line in the batch size, which the loads here "
                f"({_loads_text(loads)}) already fix, so more loads of these lengths narrow it little; {metrics} at "
                "another context length (other prompt or output tokens) would"
                + (f"; {hint}" if hint else ""))
    hint = _in_file(usable(spare), points, f"one more {metric} narrows it")
    return (f"{terms} not determined beyond the measurement noise (see above), although the points differ in "
            f"{kinds} ({_loads_text(loads)}) enough to identify {'it' if len(unfitted) == 1 else 'them'} in the "
            f"model: more {metrics} narrow it; "
            + (hint or f"repeat these points, or add one beyond C = {loads[-1]}"))


def _frontend_advice(points: Sequence[MeasuredPoint], held_out: Sequence[MeasuredPoint],
                     screened: Mapping[str, str]) -> str:
    """What would identify ``frontend_in_s``: a concurrency-1 TTFT (the API server's time before the first step,
    with no queue in front of it).  Where the fit had one, the TTFTs disagree; where C = 1 measured one that the
    screen left out, say so and why; where the results hold one the fit was not given, name it."""
    ones = [pt for pt in points if _closed(pt) and pt.concurrency == 1 and pt.value("ttft_p50_ms") is not None]
    if ones:
        if sum(1 for pt in points if pt.value("ttft_p50_ms") is not None) > 1:
            return ("the TTFTs disagree about frontend_in_s (a mechanism at the higher load the model prices "
                    "differently: preemption, prefix-cache hits, the API server's work per output stream): "
                    "fit it on the concurrency-1 point's TTFT alone (--points C=1 --fit frontend_in_s)")
        return ("the concurrency-1 TTFT did not identify frontend_in_s beyond the measurement noise (see above): "
                + _short_prompt_ttft(ones[0]))
    spare = [pt for pt in held_out if _closed(pt) and pt.concurrency == 1 and pt.value("ttft_p50_ms") is not None
             and pt not in points]
    hint = _in_file(spare, points, "its TTFT would identify frontend_in_s")
    if hint:
        return hint
    gone = [pt.label for pt in list(points) + list(held_out) if _closed(pt) and pt.concurrency == 1
            and pt.label in screened]
    if gone:
        return (f"{gone[0]}'s TTFT p50 was measured, {screened[gone[0]]}, so it was left out of the fit and "
                "frontend_in_s keeps its value: a concurrency-1 TTFT that passes this screen would identify it, "
                + _short_prompt_ttft(None))
    return "a measured TTFT at concurrency 1 would identify frontend_in_s, " + _short_prompt_ttft(None)


def _short_prompt_ttft(pt: MeasuredPoint | None) -> str:
    """Which concurrency-1 TTFT identifies ``frontend_in_s``: one of a short prompt, where the API server's few ms are
    not lost under the prefill's (trial s26b #12: a C = 1 TTFT at 1,024 prompt tokens on an A100, 75 ms, left it at
    ±84%, after the advice had asked for exactly that point)."""
    n = int(pt.input_len) if pt is not None and pt.input_len else None
    at = f"; at {n:,} prompt tokens the prefill's time hides it" if n and n > 64 else ""
    return f"of a short prompt (a few dozen tokens, so the prefill does not dwarf the API server's few ms){at}"


def _prefill_advice(points: Sequence[MeasuredPoint], held_out: Sequence[MeasuredPoint], *, tried: bool,
                    max_prompt: int | None = None) -> str:
    """What would identify ``flop_efficiency`` apart from ``frontend_in_s``: TTFTs at two prompt lengths (a
    per-token cost and a per-request cost move one prompt length's TTFT alike); one the results hold is named."""
    lens = sorted({int(pt.input_len) for pt in points if pt.value("ttft_p50_ms") is not None and pt.input_len})
    if tried and len(lens) >= 2:
        return (f"the TTFTs at {lens[0]:,} and {lens[-1]:,} prompt tokens did not part flop_efficiency from "
                "frontend_in_s beyond the measurement noise: TTFTs at two prompt lengths farther apart would")
    if lens:  # one prompt length among the fitted TTFTs: a held-out TTFT at another one is the second
        spare = [pt for pt in held_out if pt.value("ttft_p50_ms") is not None and pt.input_len
                 and int(pt.input_len) not in lens and pt not in points]
        if spare:
            return _in_file(spare, points, f"its TTFT at {spare[0].input_len:,} prompt tokens beside these "
                                           f"{lens[0]:,}-token ones would identify flop_efficiency apart from "
                                           "frontend_in_s")
        return (f"TTFTs at two prompt lengths would identify flop_efficiency apart from frontend_in_s: these points' "
                f"TTFTs all have {lens[0]:,}-token prompts; add one at "
                f"{_other_length(lens[0], max_prompt):,} tokens")
    given = sorted({int(pt.input_len) for pt in points if pt.input_len})
    pair = (given[0], _other_length(given[0], max_prompt)) if len(given) == 1 else (128, 2048)
    return (f"TTFTs at two prompt lengths (e.g. {pair[0]:,} and {pair[1]:,} tokens) would identify flop_efficiency "
            "apart from frontend_in_s: no point here has a TTFT the fit could use")


def _other_length(n: int, cap: int | None = None) -> int:
    """A prompt length far from ``n`` (8x): long enough apart that a per-token cost shows beside a per-request one;
    no longer than ``cap`` (the longest prompt the engine serves beside the points' outputs: trial s23b L1 was told
    to add 1,032 tokens under a max_model_len of 1,024), shorter instead where ``cap`` leaves less than 2 x ``n``."""
    far = 8 * n if n <= 512 else n // 8
    if cap is not None and far > cap:
        return cap if cap >= 2 * n else max(16, n // 8)
    return far
