"""The workload's lengths against max_model_len, where something serves them (one concept: which requests vLLM
would reject for their length, judged at the line that fixes it).

vLLM rejects a request longer than max_model_len (HTTP 400), and one failed request makes a measured point an error
(``model.setup.request_length_problem`` is the rule and its words).  A file is held to it only where a prediction
serves its workload's requests (:func:`uses_workload`): a live run measures it at a sweep point, or the math
check's serving model simulates it.  The file's workload is judged once (:func:`check_lengths`, after the
predictions are read), the dedicated batch-1 run by its own lengths, and a prediction's own ``setup:`` where its
own setup makes it so (:func:`check_own_lengths`, as the prediction is read).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import yaml

from pytest_roofline.errors import SpecError, SpecErrors
from pytest_roofline.format._reader import NodeReader
from pytest_roofline.format._sections import prediction_setup, written_at
from pytest_roofline.format._types import PredictedKind, Prediction, Spec
from pytest_roofline.model.setup import (
    RequestLengthWarning,
    Setup,
    request_length_problem,
    request_length_warning,
)

__all__ = ["check_lengths", "check_own_lengths", "key_of", "uses_workload"]


def key_of(node: yaml.Node | None, name: str) -> yaml.Node | None:
    """The key node ``name:`` of the mapping ``node`` (its line), None where it does not write it."""
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((k for k, _v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)


def uses_workload(spec: Spec, q: Any, predicted_kind: PredictedKind | None = None) -> bool:
    """Whether a check of quantity ``q`` rests on the workload's requests being served: a live run sends them at
    its sweep points (a measured quantity with points; the dedicated batch-1 run sends ``sweep.batch1``'s lengths
    instead where the sweep gives one), or the math check's serving model simulates them (the file asks for that
    column, or the ink is ``predicted: model``: :func:`takes_serving_value`'s rule; ``predicted_kind`` None, a
    table's cells, counts only the file's column).  A quantity read from the engine's startup report (the KV pool)
    or computed from the setup alone sends no request, so the lengths are not its concern."""
    if q.measure is not None and q.points is not None:
        return not (q.points == "batch1" and spec.sweep.batch1)
    if q.serving is None:
        return False
    if spec.model_column == "serving":
        return True
    return predicted_kind is PredictedKind.MODEL and (spec.model_column != "roofline" or q.model is None)


def check_lengths(ctx: NodeReader, spec: Spec, setup: Setup, model_node: yaml.Node | None,
                  root: yaml.Node | None) -> None:
    """Once the predictions are read: the file's workload where a prediction serves it (:func:`uses_workload`,
    a prediction with its own ``setup:`` counted where its setup leaves the file's refusal to the file), and the
    dedicated batch-1 run's lengths where a prediction measures that run (``sweep.batch1``)."""
    plain = [p for p in spec.predictions if p.error is None]
    problem = request_length_problem(setup)

    def served(p: Prediction) -> bool:
        if not uses_workload(spec, p.q, p.predicted.kind):
            return False
        if not p.setup:
            return True
        try:  # an own setup whose lengths say what the file's say is left to the file's refusal
            return request_length_problem(prediction_setup(spec, p.setup)) == problem
        except Exception:  # noqa: BLE001 - a setup that does not resolve is its prediction's error already
            return False

    errors: list[SpecError] = []
    if any(served(p) for p in plain):
        try:
            _check_lengths(ctx, spec, setup, model_node, root, problem)
        except SpecError as exc:
            errors.append(exc)
    b1 = spec.sweep.batch1
    if b1 and any(p.q.measure is not None and p.q.points == "batch1" and not p.setup for p in plain):
        lens = {k: b1.get(k, spec.workload.get(k) or 1024) for k in ("input_len", "output_len")}
        try:
            b1_setup = prediction_setup(spec, {"workload": {k: int(v) for k, v in lens.items()}})
        except Exception:  # noqa: BLE001 - lengths the sweep reader refused already
            b1_setup = None
        b1_problem = None if b1_setup is None else request_length_problem(
            b1_setup, lengths="sweep.batch1.input_len / output_len")
        if b1_problem:
            node = written_at(root, "sweep.batch1") or key_of(root, "sweep") or model_node
            errors.append(SpecError(f"the batch-1 run does not fit max_model_len: {b1_problem}", file=ctx.file,
                                    line=node.start_mark.line + 1 if node is not None else None,
                                    hint="shorten sweep.batch1's lengths or raise engine.args.max_model_len as the "
                                         "line says: the batch-1 run's requests would be rejected "
                                         "(docs/reference/refusals.md)"))
    if errors:
        raise errors[0] if len(errors) == 1 else SpecErrors(errors)


def _check_lengths(ctx: NodeReader, spec: Spec, setup: Setup, model_node: yaml.Node | None,
                   root: yaml.Node | None, problem: str | None) -> None:
    """Refuse a workload whose requests vLLM rejects for being longer than max_model_len
    (``model.setup.request_length_problem``: ``problem``), once for the file: at ``engine.args.max_model_len``
    where the file writes it, else at the ``workload:`` line, else (both the defaults) at the ``model:`` line.
    Where only an unbounded normal length's tail is longer (``request_length_warning``), a warning with its share."""
    if problem is None:
        warn = request_length_warning(setup, spec.workload)
        if warn:
            workload = key_of(root, "workload")
            msg = f"{ctx.file}:{workload.start_mark.line + 1 if workload is not None else '?'}: {warn}"
            spec.warnings.append(msg)
            warnings.warn(RequestLengthWarning(msg), stacklevel=2)
        return
    node = written_at(root, "engine.args.max_model_len") or key_of(root, "workload") or model_node
    raise SpecError(f"the workload does not fit max_model_len: {problem}", file=ctx.file,
                    line=node.start_mark.line + 1 if node is not None else None,
                    hint="shorten the workload's lengths or raise engine.args.max_model_len as the line says: a "
                         "point with a rejected request is an error, so no run measures this file "
                         "(docs/reference/refusals.md)")


def check_own_lengths(ctx: NodeReader, spec: Spec, setup: Mapping[str, Any], resolved: Any, node: yaml.Node,
                       key: yaml.Node | None) -> None:
    """A prediction's own ``setup:`` whose requests are longer than max_model_len (``model.setup.
    request_length_problem``), refused as the file's setup is (format._sections.check_setup) where its own setup
    makes it so: at its ``engine.args.max_model_len`` where it writes one, else at its ``workload:`` line, else at
    its ``setup:`` line.  The same words as the file's own refusal are left to the file (once per file); a tail of
    an unbounded normal length past max_model_len is a warning (``request_length_warning``)."""
    own_engine, own_workload = "engine" in setup, "workload" in setup
    problem = request_length_problem(
        resolved, lengths=f"{'setup.' if own_workload else ''}workload.input_len / output_len",
        max_model_len=f"{'setup.' if own_engine else ''}engine.args.max_model_len")
    workload = setup.get("workload", spec.workload)
    warn = None if problem else request_length_warning(resolved, workload)
    if problem is None and warn is None:
        return
    try:
        file_setup = prediction_setup(spec, {})
    except Exception:  # noqa: BLE001 - the file's setup errors at its own lines
        file_setup = None
    if file_setup is not None and (
            request_length_problem(file_setup) == request_length_problem(resolved) if problem else
            request_length_warning(file_setup, spec.workload) == warn):
        return  # the file's refusal (or warning) says the same, at the file's line
    at = written_at(node, "engine.args.max_model_len") or key_of(node, "workload") or key or node
    if problem is not None:
        raise ctx.err(at, f"this prediction's workload does not fit max_model_len: {problem}",
                      "shorten this setup's workload lengths or raise its engine.args.max_model_len as the line says "
                      "(docs/reference/refusals.md)")
    assert warn is not None
    msg = f"{ctx.file}:{at.start_mark.line + 1}: this prediction's setup: {warn}"
    spec.warnings.append(msg)
    warnings.warn(RequestLengthWarning(msg), stacklevel=2)
