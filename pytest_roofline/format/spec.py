"""The prediction-file format: loading, validation with file:line errors, and its JSON Schema.

The YAML is read as PyYAML *nodes* (``yaml.compose``), never with ``safe_load``: every value keeps its line, and
every scalar keeps the text the user wrote, so ``1e3`` is a number, ``4.80`` keeps its precision and ``on`` is
never silently ``True``. The same field tables drive the validator and :func:`json_schema`.

A problem in the setup sections makes the whole file an error; a problem in one prediction makes only that
prediction an error (reported as its own test), so one typo never hides the others.

This module is the front door: :func:`load_spec` / :func:`loads_spec` are here, and every other name is
re-exported from the private modules that hold one concept each:

- ``_fields.py``: the field tables (each section's keys, kinds, docs and allowed words);
- ``_types.py``: what a loaded file is (:class:`Spec`, :class:`Sweep`, :class:`Prediction`, :class:`Predicted`,
  :class:`Expectation`);
- ``_reader.py``: the bounded YAML node reader (decoding, the limited composer, :class:`NodeReader`,
  :func:`plain_scalar`);
- ``_sections.py``: the setup sections' readers (hardware, model, engine, workload, sweep, slo, thresholds,
  serving, calibration, tolerances, drift);
- ``_serving_settings.py``: the engine settings the serving model does not simulate, at their lines (an error of
  the predictions that take its value, a warning for those that lose it);
- ``_expand.py``: predictions and their expansion (``at:`` lists and ``every``, tables);
- ``_schema.py``: :func:`json_schema`, from the same field tables.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from pytest_roofline.errors import ArrivalSpanWarning, RequestCountWarning, SpecError, SpecErrors
from pytest_roofline.format._expand import read_predictions
from pytest_roofline.format._fields import (
    DEFAULTS_FIELDS,
    ENGINE_FIELDS,
    PREDICTION_FIELDS,
    RESERVES_FIELDS,
    SETUP_FIELDS,
    SLO_FIELDS,
    SWEEP_FIELDS,
    TABLE_FIELDS,
    THRESHOLD_FIELDS,
    TOP_FIELDS,
    WORKLOAD_FIELDS,
    XFAIL_FIELDS,
    F,
    FieldKind,
    serving_fields,
)
from pytest_roofline.format._lengths import check_lengths, key_of
from pytest_roofline.format._reader import AmbiguousScalar, NodeReader, compose, decode, plain_scalar
from pytest_roofline.format._schema import json_schema
from pytest_roofline.format._sections import (
    DRIFT_HELP,
    OwnSetup,
    check_engine_arg_names,
    check_engine_model,
    check_setup,
    own_setup_of,
    parse_drift_threshold,
    prediction_sections,
    prediction_setup,
    read_calibration,
    read_drift,
    read_engine,
    read_hardware,
    read_model,
    read_serving,
    read_slo,
    read_sweep,
    read_thresholds,
    read_tolerance,
    read_workload,
)
from pytest_roofline.format._serving_settings import locate_settings, refuse_serving_settings, replaced_by_flags
from pytest_roofline.format._types import (
    MODEL_COLUMNS,
    XFAIL_CHECKS,
    EngineSection,
    Expectation,
    ModelColumn,
    ModelColumnSetting,
    Predicted,
    PredictedKind,
    Prediction,
    Processes,
    Spec,
    SteadyState,
    Sweep,
    WorkloadSection,
    XfailCheck,
)
from pytest_roofline.format.limits import DEFAULT_LIMITS, Limits, how_to_raise
from pytest_roofline.quantities import registry as qreg

__all__ = [
    "SpecError", "Spec", "Prediction", "Predicted", "PredictedKind", "Expectation", "Sweep", "load_spec", "loads_spec",
    "json_schema",
    "TOP_FIELDS", "PREDICTION_FIELDS", "Limits",
    # the field tables and the reader's rules, used by the CLI and the tests
    "F", "ENGINE_FIELDS", "WORKLOAD_FIELDS", "SWEEP_FIELDS", "SLO_FIELDS", "DEFAULTS_FIELDS", "THRESHOLD_FIELDS",
    "XFAIL_FIELDS", "TABLE_FIELDS", "RESERVES_FIELDS", "SETUP_FIELDS", "serving_fields",
    "NodeReader", "AmbiguousScalar", "plain_scalar",
    "DRIFT_HELP", "parse_drift_threshold",
    # the setup one prediction is computed against (the file's sections, its own setup: replacing them)
    "prediction_setup", "prediction_sections",
    # the file's engine settings the serving model does not simulate, each at its line (roofline predict --simulate)
    "locate_settings", "replaced_by_flags",
    # the kinds: each a Literal whose words the field tables and the readers take from it
    "FieldKind", "XfailCheck", "XFAIL_CHECKS", "SteadyState", "Processes", "ModelColumn", "MODEL_COLUMNS",
    "ModelColumnSetting",
    # the typed setup sections (Spec.engine, Spec.workload)
    "EngineSection", "WorkloadSection",
]


_T = TypeVar("_T")


def load_spec(path: str | Path, *, limits: Limits | None = None) -> Spec:
    """Read a prediction file (UTF-8; an OSError when it cannot be read, a SpecError for anything in it)."""
    data = Path(path).read_bytes()
    return loads_spec(decode(data, str(path)), file=str(path), limits=limits)



def loads_spec(text: str, *, file: str = "<string>", limits: Limits | None = None) -> Spec:
    """Load a prediction file's text; every problem in it is a :class:`SpecError` naming the file and line."""
    limits = limits or DEFAULT_LIMITS
    ctx = NodeReader(file, limits)
    root = compose(text, file, limits)
    if root is None:
        raise SpecError("the file is empty", file=file, hint="start with hardware:, model: and predictions:")
    top = ctx.mapping(root, "the file", TOP_FIELDS)
    # every setup section is read even when one before it is wrong, so one reading reports every error of the file
    # (a wrong section takes its default for the rest of the reading, which then ends in SpecErrors)
    errors: list[SpecError] = []

    def read(fn: Callable[[], _T], default: _T) -> _T:
        try:
            return fn()
        except SpecError as exc:  # several at once (every bad engine arg): each with its own line
            errors.extend(exc.errors if isinstance(exc, SpecErrors) else [exc])
            return default

    hw_node = top["hardware"][1]
    no_overrides: dict[str, Any] = {}
    hardware, hw_over = read(lambda: read_hardware(ctx, hw_node), ("", no_overrides))
    model, model_over = read(lambda: read_model(ctx, top["model"][1]), ("", no_overrides))
    engine = read(lambda: read_engine(ctx, top["engine"][1]), {"name": "vllm"}) if "engine" in top else {"name": "vllm"}
    if "engine" in top and not errors:
        read(lambda: check_engine_model(ctx, top["engine"][1], engine, model), None)
    empty: dict[str, Any] = {}
    workload = read(lambda: read_workload(ctx, top["workload"][1]), empty) if "workload" in top else {}
    sweep = read(lambda: read_sweep(ctx, top["sweep"][1]), Sweep()) if "sweep" in top else Sweep()
    slo = read(lambda: read_slo(ctx, top["slo"][1]), dict(empty)) if "slo" in top else {}
    thresholds = (read(lambda: read_thresholds(ctx, top["thresholds"][1]), qreg.Thresholds()) if "thresholds" in top
                  else qreg.Thresholds())
    dtol = dmtol = None
    xfail_strict = True
    default_drift = ""
    if "defaults" in top:
        no_keys: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        d = read(lambda: ctx.mapping(top["defaults"][1], "defaults", DEFAULTS_FIELDS), no_keys)
        if "tolerance" in d:
            dtol = read(lambda: read_tolerance(ctx, d["tolerance"][1], "ratio", "", "defaults.tolerance",
                                               relative_only=True), None)
        if "math_tolerance" in d:
            dmtol = read(lambda: read_tolerance(ctx, d["math_tolerance"][1], "ratio", "", "defaults.math_tolerance",
                                                relative_only=True), None)
        if "xfail_strict" in d:
            xfail_strict = read(lambda: ctx.boolean(d["xfail_strict"][1], "defaults.xfail_strict"), True)
        default_drift = read(lambda: read_drift(ctx, d["drift"][1], "defaults.drift"), "") if "drift" in d else ""

    spec = Spec(
        path=file, title=read(lambda: ctx.scalar(top["title"][1], "title"), "") if "title" in top else Path(file).stem,
        hardware=hardware, hardware_overrides=hw_over, model=model, model_overrides=model_over,
        engine=EngineSection.from_mapping(engine), workload=WorkloadSection.from_mapping(workload), sweep=sweep,
        slo=slo, thresholds=thresholds, default_tolerance=dtol,
        default_math_tolerance=dmtol, xfail_strict=xfail_strict, predictions=[],
        notes=read(lambda: ctx.scalar(top["notes"][1], "notes"), "") if "notes" in top else "",
    )
    spec.default_drift = default_drift
    setup = None
    if not errors:  # the setup resolves only from sections that read
        setup = read(lambda: check_setup(ctx, spec, hw_node, top["model"][1], root), None)
    elif "engine" in top:  # its args' names are checked all the same: one round of errors, not one per section
        read(lambda: check_engine_arg_names(ctx, spec, root), None)
    if "serving" in top:
        spec.serving_overrides = read(lambda: read_serving(ctx, top["serving"][1]), spec.serving_overrides)
    if "model_column" in top:
        spec.model_column = read(lambda: ctx.word(top["model_column"][1], "model_column", MODEL_COLUMNS),
                                 spec.model_column)
    if "calibration" in top:
        read(lambda: read_calibration(ctx, spec, top["calibration"][1]), None)
    preds_node = top["predictions"][1]
    if not isinstance(preds_node, yaml.SequenceNode):
        raise SpecErrors([*errors, ctx.err(preds_node, "predictions must be a list (each item starts with "
                                                       "'- id: ...')")])
    if not preds_node.value:
        raise SpecErrors([*errors, ctx.err(preds_node, "predictions is empty", "add at least one prediction")])
    seen: dict[str, int] = {}
    own_setups: list[OwnSetup] = []  # the items with a setup: of their own, checked as the file's is (below)
    for node in preds_node.value:
        try:
            preds = read_predictions(ctx, spec, node)
        except SpecError:
            raise
        except Exception:  # a prediction read against a setup that did not resolve: the setup errors say why
            if errors:
                break
            raise
        first = len(spec.predictions)
        for pred in preds:
            if len(spec.predictions) >= limits.max_tests_per_file:
                raise SpecError(f"the file expands into more than max_tests_per_file "
                                f"({limits.max_tests_per_file:,}) tests (reached at this prediction)", file=file,
                                line=pred.line, hint=how_to_raise("max_tests_per_file"))
            if pred.id in seen:
                twice = SpecError(f"prediction id {pred.id!r} is used twice (first on line {seen[pred.id]})",
                                  file=file, line=pred.line, hint="give each prediction a unique id")
                # beside the item's own errors, not instead of being found after they are fixed (trial s25a #7)
                pred.error = twice if pred.error is None else SpecErrors(
                    [*getattr(pred.error, "errors", [pred.error]), twice])
            seen.setdefault(pred.id, pred.line)
            spec.predictions.append(pred)
        if (item_setup := own_setup_of(node, spec.predictions[first:])) is not None:
            own_setups.append(item_setup)
    if setup is not None:
        # requests longer than max_model_len, where a prediction serves them (a live run sends them, or the math
        # check's serving model simulates them): the file's error, at its line
        read(lambda: check_lengths(ctx, spec, setup, top["model"][1], root), None)
    if setup is not None and not errors:
        # engine settings the serving model does not simulate: an error of each prediction that takes its value
        refuse_serving_settings(ctx, spec, setup, root, own_setups)
    if not errors and "sweep" in top:
        _warn_nx_beside_rates(ctx, spec, top["sweep"][1])
        _warn_span_without_effect(ctx, spec, top["sweep"][1])
    if errors:
        # a prediction error that only echoes a setup section read as its default (a sweep with a typo has no
        # concurrency for `every`) is left out: the section's own error above is the one to fix
        failed = {e.message.split(":", 1)[0].split(".", 1)[0] for e in errors}
        own = [p.error for p in spec.predictions if p.error is not None
               and not any(f"{section} section" in p.error.message for section in failed)]
        if len(errors) == 1 and not own:
            raise errors[0]  # one error: as it always read
        raise SpecErrors([*errors, *own])
    return spec


def _warn_span_without_effect(ctx: NodeReader, spec: Spec, sweep_node: yaml.Node) -> None:
    """``sweep.arrival_span: fixed`` written where no point is sent on it (trial s23 L5): a sweep without open-loop
    points, a duration-bound one, a ramp-up (model.workload.fixed_span_applies; measure.plan.points.open_span sends
    those drawn). Said once, at its line, as a warning: the file is valid, the line only changes nothing."""
    node = key_of(sweep_node, "arrival_span")
    if node is None or spec.sweep.arrival_span != "fixed":
        return
    at_rate = any(isinstance(p.at, Mapping) and isinstance(p.at.get("rate"), (int, float)) for p in spec.predictions)
    if not (spec.sweep.rates or at_rate):
        why = "the sweep has no open-loop point (a closed loop sends each request as one ends)"
    elif spec.sweep.duration_s:
        why = "its points are duration-bound (sweep.duration): no N to spread over N ÷ rate, so they are sent drawn"
    elif spec.workload.get("ramp_up"):
        why = ("a ramp-up (workload.ramp_up) keeps its drawn gaps, as vllm bench serve does, so its points are sent "
               "drawn")
    else:
        return
    msg = f"{ctx.file}:{node.start_mark.line + 1}: sweep.arrival_span: fixed changes nothing here: {why}"
    spec.warnings.append(msg)
    warnings.warn(ArrivalSpanWarning(msg), stacklevel=3)


def _warn_nx_beside_rates(ctx: NodeReader, spec: Spec, sweep_node: yaml.Node) -> None:
    """``requests_per_point: Nx`` is N × concurrency; an open-loop point (``sweep.rates``, or a prediction ``at:
    {rate: …}``) has none and sends max(10, rate × 30) requests: said once, at the line, as a warning (the closed
    points take Nx; the file's math and replays are unaffected, so it is not an error: the notebook's files wrote
    ``10x`` beside rates)."""
    nx = spec.sweep.requests_per_concurrency
    if nx is None:
        return
    rates = {float(r) for r in spec.sweep.rates}
    at_rate = [p for p in spec.predictions if isinstance(p.at, Mapping) and isinstance(p.at.get("rate"), (int, float))]
    rates |= {float(p.at["rate"]) for p in at_rate}
    if not rates:
        return
    node = key_of(sweep_node, "requests_per_point") or sweep_node
    listed = ", ".join(f"{r:g}" for r in sorted(rates))
    lines = sorted({p.line for p in at_rate if p.line})
    made_by = (f"; the predictions at a rate on line{'s' if len(lines) > 1 else ''} "
               f"{', '.join(str(n) for n in lines)} make them" if lines and not spec.sweep.rates else "")
    msg = (f"{ctx.file}:{node.start_mark.line + 1}: sweep.requests_per_point: {nx:g}x is N × concurrency, and the "
           f"open-loop points (rates {listed} req/s{made_by}) have none: they send max(10, rate × 30) requests (30 s "
           "of arrivals) — write a plain number of requests, or sweep.duration, to set theirs")
    spec.warnings.append(msg)
    warnings.warn(RequestCountWarning(msg), stacklevel=3)
