"""Scoring: a prediction, the model and (optionally) a measurement become a :class:`Verdict`.

Two checks exist:

* **math** (CPU-only mode, and for model-only quantities in every mode): the value in ink against the
  analytical model's value, within the *math tolerance* — by default half a unit in the last digit written
  (``1,742`` claims ±0.5), or ``math_tolerance`` from the prediction / ``defaults``.
* **measured** (``--gpu``, ``--endpoint``, ``--replay``): the measured value against the ink value (or the model's
  value when the prediction says ``predicted: model``), within ``tolerance``.

No pytest import here: the plugin turns a verdict's ``status`` into pass/fail/skip and applies xfail marks.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from pytest_roofline.quantities import registry as qreg
from pytest_roofline.model.setup import Setup, SetupError, build_setup
from pytest_roofline.format.spec import Prediction, Spec
from pytest_roofline.format.tolerance import Tolerance, parse_tolerance
from pytest_roofline.units import format_value
from pytest_roofline.errors import PointError

__all__ = ["Verdict", "PointError", "setup_for", "score", "DEFAULT_MEASURED_TOLERANCE", "MEASURE_HOW"]

DEFAULT_MEASURED_TOLERANCE = "±10%"
MEASURE_HOW = ("needs a measurement: run with --gpu <family> (a GPU box), --gpu cpu (the CPU build of vLLM), "
               "--endpoint URL or --replay RESULTS.json")


@dataclass
class Verdict:
    id: str
    quantity: str
    dimension: str
    mode: str  # math | measured
    status: str  # pass | fail | skip | error
    reason: str
    file: str = ""
    line: int = 0
    at: dict[str, str] = field(default_factory=dict)
    unit: str = ""
    unit_given: bool = False  # the ink value was a number (its unit, even a bare one, is how values are shown)
    predicted_text: str = ""
    predicted_value: Any = None
    model_value: Any = None
    model_text: str = ""
    model_inputs: dict[str, str] = field(default_factory=dict)
    model_explanation: str = ""
    measured_value: Any = None
    measured_text: str = ""
    measured_points: list[str] = field(default_factory=list)
    measured_notes: list[str] = field(default_factory=list)
    contaminated: bool = False
    reference_value: Any = None
    checked_value: Any = None
    error_rel: float | None = None
    error_abs: float | None = None
    error_text: str = ""
    tolerance_text: str = ""
    lo: float | None = None
    hi: float | None = None
    notes: str = ""
    xfail_reason: str = ""
    diagnosis: list[str] = field(default_factory=list)
    log_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("lo", "hi"):
            if d[k] is not None and not math.isfinite(d[k]):
                d[k] = None
        return d

    def fmt(self, si: Any) -> str:
        return format_value(si, self.dimension, self.display_unit, digits=5) if not isinstance(si, str) else si

    @property
    def display_unit(self) -> str | None:
        return self.unit if self.unit_given else None

    def explain(self) -> str:
        """Multi-line text for a failure: predicted, model, measured, error, and the model's inputs."""
        lines = [f"{self.id}: {self.quantity}" + (f" at {_at_text(self.at)}" if self.at else "") + f" [{self.mode}]",
                 f"  predicted : {self.predicted_text or '—'}"]
        if self.model_text:
            lines.append(f"  model     : {self.model_text}")
        if self.mode == "measured":
            lines.append(f"  measured  : {self.measured_text or '—'}"
                         + (f"  (points: {', '.join(self.measured_points)})" if self.measured_points else ""))
        if self.error_text:
            lines.append(f"  error     : {self.error_text}")
        if self.tolerance_text:
            lines.append(f"  tolerance : {self.tolerance_text}  → allowed [{self.fmt(self.lo) if self.lo is not None and math.isfinite(self.lo) else '−∞'}, "
                         f"{self.fmt(self.hi) if self.hi is not None and math.isfinite(self.hi) else '+∞'}]")
        lines.append(f"  verdict   : {self.status.upper()} — {self.reason}")
        if self.model_explanation:
            lines.append(f"  model says: {self.model_explanation}")
        for d in self.diagnosis:
            lines.append(f"  diagnosis : {d}")
        for n in self.measured_notes:
            lines.append(f"  note      : {n}")
        if self.model_inputs:
            lines.append("  model inputs:")
            lines.extend(f"    {k:<22} {v}" for k, v in self.model_inputs.items())
        if self.notes:
            lines.append(f"  notes     : {self.notes.strip()}")
        return "\n".join(lines)


def _at_text(at: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in at.items())


def setup_for(spec: Spec, pred: Prediction, *, hardware_override: str | None = None) -> Setup:
    """The setup a prediction is computed against (file setup + the prediction's ``setup:`` overrides)."""
    s = pred.setup
    hw = s.get("hardware", hardware_override or spec.hardware)
    return build_setup(
        hardware_ref=hw,
        hardware_overrides=s.get("hardware_overrides", spec.hardware_overrides if "hardware" not in s else {}),
        model_ref=s.get("model", spec.model),
        model_overrides=s.get("model_overrides", spec.model_overrides if "model" not in s else {}),
        engine=s.get("engine", spec.engine), workload=s.get("workload", spec.workload),
    )


def _value_text(v: Any, dimension: str, unit: str | None) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    return format_value(float(v), dimension, unit, digits=5)


def score(spec: Spec, pred: Prediction, mode: str, measurement: Any = None, *,
          default_tolerance: str = DEFAULT_MEASURED_TOLERANCE, hardware_override: str | None = None) -> Verdict:
    """Score one prediction. ``mode`` is "math" or "measured" (``measurement`` then gives the values)."""
    q = pred.q
    unit = pred.predicted.unit
    v = Verdict(id=pred.id, quantity=q.name, dimension=q.dimension, mode=mode, status="skip", reason="",
                file=pred.file, line=pred.line, at=dict(pred.at_text), unit=unit,
                unit_given=pred.predicted.kind == "number",
                predicted_text=pred.predicted.text, predicted_value=pred.predicted.value, notes=pred.notes,
                xfail_reason=pred.xfail.reason if pred.xfail else "")
    effective = mode if (mode == "math" or q.measure is not None) else "math"
    v.mode = effective

    setup: Setup | None = None
    try:
        setup = setup_for(spec, pred, hardware_override=hardware_override)
    except (SetupError, ValueError, KeyError) as exc:
        v.status, v.reason = "error", f"setup does not resolve: {exc}"
        return v
    if q.model is not None:
        try:
            mv = q.model(setup, pred.at)
            v.model_value = _plain(mv.value)
            v.model_text = _value_text(v.model_value, q.dimension, v.display_unit)
            v.model_inputs = dict(mv.inputs)
            v.model_explanation = mv.explanation
        except (SetupError, ValueError, ZeroDivisionError) as exc:
            if effective == "math" and q.measure is not None:
                v.status, v.reason = "skip", f"the model cannot compute {q.name} here ({exc}); {MEASURE_HOW}"
                return v
            if effective == "math":
                v.status, v.reason = "error", f"the model cannot compute {q.name}: {exc}"
                return v
            v.model_text = f"(model: {exc})"

    if effective == "math":
        if q.model is None:
            v.status, v.reason = "skip", MEASURE_HOW
            return v
        return _compare(v, pred, pred.predicted.value if pred.predicted.kind != "model" else v.model_value,
                        v.model_value, _math_tolerance(pred, spec.default_math_tolerance), "model")

    # measured
    try:
        meas = q.measure(measurement, pred.at, setup, spec.thresholds)
    except qreg.NotMeasured as exc:
        v.status, v.reason = "skip", str(exc)
        return v
    except PointError as exc:
        v.status, v.reason, v.log_tail = "error", str(exc), exc.log_tail
        return v
    v.measured_value = _plain(meas.value)
    v.measured_text = _value_text(v.measured_value, q.dimension, v.display_unit)
    v.measured_points = list(meas.points)
    v.measured_notes = list(meas.notes)
    v.contaminated = meas.contaminated
    if pred.predicted.kind == "model":
        if v.model_value is None and q.kind != "optional_number":
            v.status, v.reason = "error", f"predicted: model, but the model has no value ({v.model_text})"
            return v
        reference = v.model_value
    else:
        reference = pred.predicted.value
    tol = pred.tolerance or parse_tolerance(default_tolerance, q.dimension, unit)
    out = _compare(v, pred, reference, v.measured_value, tol, "measured")
    if out.contaminated and out.status == "pass":
        out.reason += " (but the measurement is contaminated by prefix-cache hits; see notes)"
    return out


def _plain(x: Any) -> Any:
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def _math_tolerance(pred: Prediction, file_default: Tolerance | None = None) -> Tolerance:
    """The prediction's own math_tolerance, else the precision written, widened by the file's default."""
    if pred.math_tolerance is not None:
        return pred.math_tolerance
    h = pred.predicted.half_ulp_si
    precision = Tolerance(f"±{_half_text(pred)} (precision written)", abs_lo=h, abs_hi=h)
    if file_default is None or not isinstance(pred.predicted.value, float):
        return precision
    ref = pred.predicted.value
    lo1, hi1 = precision.bounds(ref)
    lo2, hi2 = file_default.bounds(ref)
    if lo2 >= lo1 and hi2 <= hi1:
        return precision
    return Tolerance(f"{file_default.text} (file default; precision written ±{_half_text(pred)})",
                     lower=min(lo1, lo2), upper=max(hi1, hi2))


def _half_text(pred: Prediction) -> str:
    h = pred.predicted.half_ulp_si
    unit = pred.predicted.unit
    from pytest_roofline.units import unit_scale

    try:
        scale = unit_scale(pred.q.dimension, unit)
    except Exception:
        scale = 1.0
    return f"{h / scale:g} {unit}".strip()


def _compare(v: Verdict, pred: Prediction, reference: Any, checked: Any, tol: Tolerance, against: str) -> Verdict:
    v.reference_value = reference
    v.checked_value = checked
    v.tolerance_text = tol.text
    kind = pred.predicted.kind if pred.predicted.kind != "model" else (
        "number" if isinstance(reference, (int, float)) and not isinstance(reference, bool) else "word")
    if kind in ("bool", "word") or isinstance(reference, (bool, str)):
        ok = reference == checked
        v.status = "pass" if ok else "fail"
        v.reason = f"{against} {_value_text(checked, v.dimension, v.display_unit)} " + (
            "matches" if ok else f"differs from {_value_text(reference, v.dimension, v.display_unit)}")
        v.tolerance_text = "exact"
        return v
    if reference is None or checked is None:
        ok = reference is None and checked is None
        if reference is None and checked is None:
            v.reason = f"{against} agrees: none"
        elif reference is None:
            v.reason = f"predicted none, {against} gives {_value_text(checked, v.dimension, v.display_unit)}"
        else:
            v.reason = f"predicted {pred.predicted.text}, {against} gives none"
            if against == "model" and v.model_explanation:
                v.reason += f" ({v.model_explanation})"
        v.status = "pass" if ok else "fail"
        v.tolerance_text = "exact" if ok or reference is None else tol.text
        return v
    if tol.needs_reference or reference is not None:
        lo, hi = tol.bounds(float(reference))
    else:
        lo, hi = tol.bounds(None)
    v.lo, v.hi = lo, hi
    ok = tol.contains(float(checked), float(reference))
    # prediction error, relative to what actually happened (the model in math mode, the measurement otherwise):
    # the notebook's "22,959 predicted vs 25,640 logged" is a −10.5% miss. The tolerance band sits on the ink value.
    v.error_abs = float(reference) - float(checked)
    v.error_rel = v.error_abs / abs(float(checked)) if checked else None
    v.error_text = (f"{v.error_rel:+.2%}" if v.error_rel is not None else "") + (
        f" ({'+' if v.error_abs >= 0 else '−'}{v.fmt(abs(v.error_abs))})")
    v.status = "pass" if ok else "fail"
    ref_name = "model" if (against == "measured" and pred.predicted.kind == "model") else "predicted"
    v.reason = (f"{against} {v.fmt(float(checked))} is {'within' if ok else 'outside'} {tol.text} of "
                f"{ref_name} {v.fmt(float(reference))}")
    if not ok:
        v.diagnosis = diagnose(v, pred)
    return v


def diagnose(v: Verdict, pred: Prediction) -> list[str]:
    """Where the model can tell, name the term that explains a miss (e.g. GiB vs GB in a KV budget)."""
    out: list[str] = []
    if pred.quantity in ("num_gpu_blocks", "kv_cache_tokens", "available_kv_bytes") and v.predicted_value:
        inputs = v.model_inputs
        out.append("KV pool = utilisation × total memory − weights − activation − non-torch − CUDA graphs; "
                   f"model used {inputs.get('budget', '?')}, reserves activation {inputs.get('activation_reserve', '?')}, "
                   f"non-torch {inputs.get('non_torch_reserve', '?')}, graphs {inputs.get('cuda_graph_reserve', '?')}")
        mem = inputs.get("memory", "")
        if "GiB" in mem:
            short = 1 - 1e9 / 2**30  # a budget read as N GB instead of N GiB: 6.87% short
            out.append("check GiB vs GB: the card's memory is " + mem + " — a budget taken from the decimal figure "
                       f"is {short:.1%} smaller (the notebook's slip)")
    return out
