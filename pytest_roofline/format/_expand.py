"""Predictions, from one ``predictions:`` item to the tests it expands into: a single prediction, an ``at:`` with
lists or ``every`` (one test per sweep point), and a ``table:`` (one test per cell). A problem in one item makes
only that item an error prediction (its own failing test), so one typo never hides the others.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from pytest_roofline.errors import SpecError
from pytest_roofline.format._fields import BOOL_TRAPS, PREDICTION_FIELDS, SETUP_FIELDS, TABLE_FIELDS, XFAIL_FIELDS
from pytest_roofline.format._lengths import check_own_lengths, uses_workload
from pytest_roofline.format._reader import NodeReader, did_you_mean, example_of
from pytest_roofline.format._sections import (
    MAX_AT_CONCURRENCY,
    prediction_setup,
    read_drift,
    read_engine,
    read_hardware,
    read_model,
    read_tolerance,
    read_workload,
    setup_error_node,
    written_at,
)
from pytest_roofline.format._types import XFAIL_CHECKS, Expectation, Predicted, PredictedKind, Prediction, Spec
from pytest_roofline.format.limits import how_to_raise
from pytest_roofline.quantities import registry as qreg
from pytest_roofline.quantities.window import WINDOWS
from pytest_roofline.units import DEFAULT_UNIT, UnitError, parse_value

__all__ = ["read_predictions"]


def read_predictions(ctx: NodeReader, spec: Spec, node: yaml.Node) -> Iterator[Prediction]:
    line = node.start_mark.line + 1
    pid = f"line{line}"
    if isinstance(node, yaml.MappingNode):  # name the error test by its id even when another key is wrong
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == "id" and isinstance(v, yaml.ScalarNode) and re.fullmatch(
                    r"[\w.\-]+", v.value):
                pid = v.value
    try:
        m = ctx.mapping(node, "prediction", PREDICTION_FIELDS)
        pid = ctx.scalar(m["id"][1], "id") if "id" in m else pid
        if not re.fullmatch(r"[\w.\-]+", pid):
            raise ctx.err(m["id"][1], f"id {pid!r} may only contain letters, digits, '_', '-' and '.'",
                          "write e.g. throughput-c64")
        if "table" in m:
            yield from _table(ctx, spec, m, pid, line)
            return
        for key in ("quantity", "predicted"):
            if key not in m:
                raise ctx.err(node, f"prediction {pid!r}: missing {key!r}", PREDICTION_FIELDS[key].doc)
        yield from _one(ctx, spec, m, pid, line, m["quantity"][1], m["predicted"][1], m.get("at", (None, None))[1])
    except SpecError as exc:
        yield _error_prediction(spec, pid, line, exc)


def _error_prediction(spec: Spec, pid: str, line: int, exc: SpecError) -> Prediction:
    return Prediction(id=pid, quantity="", at={}, predicted=Predicted(PredictedKind.NONE, None, ""), tolerance=None,
                      math_tolerance=None, xfail=None, notes="", setup={}, marks=[], line=exc.line or line,
                      file=spec.path, error=exc)


def _quantity(ctx: NodeReader, node: yaml.Node) -> qreg.Quantity:
    name = ctx.scalar(node, "quantity")
    if name not in qreg.QUANTITIES:
        raise ctx.err(node, f"unknown quantity {name!r}", did_you_mean(name, qreg.QUANTITIES)
                      + " (`roofline quantities` lists them all)")
    return qreg.QUANTITIES[name]


def _at(ctx: NodeReader, spec: Spec, q: qreg.Quantity, node: yaml.Node | None
        ) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Parse at:, expanding 'every' and lists into one (values, texts) pair per test."""
    if node is None:
        combos: list[tuple[dict[str, Any], dict[str, str]]] = [({}, {})]
    else:
        m = ctx.mapping(node, "at", None)
        combos = [({}, {})]
        expanded: list[tuple[str, list[tuple[Any, str]]]] = []
        for key, (kn, v) in m.items():
            if key not in q.at:
                allowed = ", ".join(q.at) or "nothing (remove at:)"
                close = difflib.get_close_matches(key, q.at, n=3, cutoff=0.5)
                raise ctx.err(kn, f"quantity {q.name!r} takes no at-parameter {key!r}",
                              (did_you_mean(key, close) + " " if close else "") + f"it takes: {allowed}")
            param = qreg.AT_PARAMS[key]
            expanded.append((key, _at_values(ctx, spec, param, v)))
        tests = math.prod(len(options) for _key, options in expanded)
        if tests > ctx.limits.max_tests_per_prediction:
            sizes = " × ".join(f"{len(options)} {key}" for key, options in expanded)
            raise ctx.err(node, f"at: expands into {tests:,} tests ({sizes}), more than max_tests_per_prediction "
                                f"({ctx.limits.max_tests_per_prediction:,})",
                          "split it into several predictions, or " + how_to_raise("max_tests_per_prediction"))
        for key, options in expanded:
            combos = [({**vals, key: val}, {**texts, key: text}) for vals, texts in combos for val, text in options]
    out = []
    for vals, texts in combos:
        _defaults_for_at(spec, q, vals, texts)
        missing = [r for r in q.required_at if r not in vals]
        if missing:
            raise ctx.err(node, f"quantity {q.name!r} needs at: {{{', '.join(f'{r}: ...' for r in missing)}}}",
                          "; ".join(f"{r}: {qreg.AT_PARAMS[r].description}" for r in missing))
        out.append((vals, texts))
    return out


def _defaults_for_at(spec: Spec, q: qreg.Quantity, vals: dict[str, Any], texts: dict[str, str]) -> None:
    for key in ("ttft", "tpot", "e2el", "percentile"):
        if key in q.at and key not in vals:
            if key in spec.slo:
                vals[key] = spec.slo[key]
            elif key == "percentile":
                vals[key] = "p99"
    if q.name in ("goodput", "goodput_concurrency") and not {"ttft", "tpot"} <= vals.keys():
        vals.setdefault("ttft", float("inf"))
        vals.setdefault("tpot", float("inf"))


#: the largest other ``at:`` count (a batch, a context, a projection width): past it a count is a typo
MAX_AT_COUNT = 10**15


def _at_values(ctx: NodeReader, spec: Spec, param: qreg.AtParam, node: yaml.Node) -> list[tuple[Any, str]]:
    what = f"at.{param.name}"
    if param.dimension == "lengths":
        if not isinstance(node, yaml.SequenceNode):
            raise ctx.err(node, f"{what} must be a list of token counts", "write e.g. [20, 50, 80, 200]")
        vals = [ctx.integer(n, what) for n in node.value]
        return [(vals, "[" + ", ".join(map(str, vals)) + "]")]
    if isinstance(node, yaml.ScalarNode) and node.value in ("every", "each", "all"):
        if not param.expandable:
            raise ctx.err(node, f"{what}: 'every' only applies to concurrency and rate")
        pool = spec.sweep.concurrency if param.name == "concurrency" else spec.sweep.rates
        if not pool:
            raise ctx.err(node, f"{what}: every — but the sweep section lists no {param.name} values",
                          "add sweep: {"
                          f"{'concurrency: [1, 2, 4]' if param.name == 'concurrency' else 'rates: [1, 2]'}}}")
        return [(float(x) if param.name == "rate" else x, f"{x:g}") for x in pool]
    nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
    out: list[tuple[Any, str]] = []
    for n in nodes:
        text = ctx.scalar(n, what)
        if param.dimension == "choice":
            out.append((ctx.string(n, what, param.choices), text))
        elif param.dimension == "count":
            v = ctx.number(n, what)
            bound = MAX_AT_CONCURRENCY if param.expandable else MAX_AT_COUNT
            if not 0 <= v <= bound:  # 1e40 would reach the serving model as a request count (OverflowError)
                raise ctx.err(n, f"{what}: {text} is outside [0, {bound:,}]",
                              "no sweep point or setup is that large; check the number")
            out.append((int(v) if float(v).is_integer() else v, text))
        else:
            out.append((ctx.value(n, what, param.dimension), text))
    return out


def _predicted(ctx: NodeReader, q: qreg.Quantity, node: yaml.Node, what: str) -> Predicted:
    text = ctx.text(node, what).strip()
    low = text.lower()
    if not text:  # `predicted:` left blank (as `roofline init` writes it): say so, in this quantity's own terms
        if q.kind is qreg.QuantityKind.BOOL:
            raise ctx.err(node, f"{what}: blank: write your prediction for {q.name}, true or false",
                          "write e.g. true")
        if q.kind is qreg.QuantityKind.ENUM:
            raise ctx.err(node, f"{what}: blank: write your prediction for {q.name}, one of {', '.join(q.choices)}",
                          f"write e.g. {q.choices[0]}")
        # the unit each dimension is written in, and an example of the size this quantity has (a KV token is
        # KiB, not GiB; a parameter count is billions, not thousands); never the model's value: the ink is the user's
        unit = {"throughput": "in tok/s", "request_rate": "in req/s", "time": "in ms (or s, µs)",
                "bytes": "in bytes (B, KiB, MiB, GiB, or GB)", "bandwidth": "in GB/s (or TB/s)",
                "flops": "in FLOP (GFLOP, TFLOP)", "flop_rate": "in TFLOP/s", "intensity": "in FLOP/byte",
                "ratio": "as a ratio (0.75) or a percentage (75%)", "count": "as a plain number (a count, no unit)"
                }.get(q.dimension, f"in {DEFAULT_UNIT.get(q.dimension) or 'a plain number'}")
        example = {"param_count": "7.5e9", "active_param_count": "7.5e9", "flop_per_token": "15 GFLOP",
                   "kv_bytes_per_token": "131,072 B", "kv_bytes_per_token_per_gpu": "65,536 B",
                   "kv_bytes_per_block": "2 MiB", "weight_bytes": "15.0 GB", "weight_bytes_per_gpu": "7.5 GB",
                   "num_gpus": "2", "weight_only_knee": "153", "half_saturation_batch": "96",
                   "knee_concurrency": "64", "ttft_knee_concurrency": "64", "goodput_concurrency": "64",
                   "max_num_seqs": "256", "littles_law_ratio": "1.00", "max_concurrency": "12.5",
                   }.get(q.name) or example_of(q.dimension)
        if q.kind is qreg.QuantityKind.OPTIONAL_NUMBER:
            unit += ", or none where there is none"
            example += ", or none"
        raise ctx.err(node, f"{what}: blank: write your predicted value {unit}", f"write e.g. {example}")
    if low == "model":
        if q.model is None and q.serving is None:
            raise ctx.err(node, f"{what}: quantity {q.name!r} has no model value", "write the value you predict")
        return Predicted(PredictedKind.MODEL, None, text)
    if q.kind is qreg.QuantityKind.BOOL:
        if low in ("true", "pass", "fits", "feasible"):
            return Predicted(PredictedKind.BOOL, True, text)
        if low in ("false", "fail", "fails", "infeasible"):
            return Predicted(PredictedKind.BOOL, False, text)
        raise ctx.err(node, f"{what}: quantity {q.name!r} is true/false, got {text!r}", "write true or false")
    if q.kind is qreg.QuantityKind.ENUM:
        if low not in q.choices:
            raise ctx.err(node, f"{what}: {text!r} is not one of {', '.join(q.choices)}", did_you_mean(low, q.choices))
        return Predicted(PredictedKind.WORD, low, text)
    if low in ("none", "null", "~"):
        if q.kind is not qreg.QuantityKind.OPTIONAL_NUMBER:
            raise ctx.err(node, f"{what}: quantity {q.name!r} always has a value; 'none' does not fit",
                          f"write e.g. {example_of(q.dimension)}")
        return Predicted(PredictedKind.NONE, None, text)
    if low in BOOL_TRAPS or low in ("true", "false"):
        raise ctx.err(node, f"{what}: {text!r} is not a number (YAML 1.1 would read it as a boolean)",
                      f"write e.g. {example_of(q.dimension)}")
    try:
        v = parse_value(text, q.dimension)
    except UnitError as exc:
        raise ctx.err(node, f"{what}: {exc}", f"write e.g. {example_of(q.dimension)}") from None
    return Predicted(PredictedKind.NUMBER, v.si, text, v.unit, v.half_ulp_si)


def _common(ctx: NodeReader, spec: Spec, m: Mapping[str, tuple[yaml.Node, yaml.Node]], q: qreg.Quantity | None,
            unit: str) -> dict[str, Any]:
    out: dict[str, Any] = {"notes": "", "setup": {}, "marks": [], "xfail": None, "tolerance": None,
                           "math_tolerance": None,
                           "drift": read_drift(ctx, m["drift"][1], "drift") if "drift" in m else spec.default_drift}
    dim = q.dimension if q else "ratio"
    if "tolerance" in m:
        out["tolerance"] = read_tolerance(ctx, m["tolerance"][1], dim, unit, "tolerance")
    if "math_tolerance" in m:
        out["math_tolerance"] = read_tolerance(ctx, m["math_tolerance"][1], dim, unit, "math_tolerance")
    if "notes" in m:
        out["notes"] = ctx.scalar(m["notes"][1], "notes")
    out["window"] = ctx.string(m["window"][1], "window", WINDOWS) if "window" in m else "run"
    if "setup" in m:
        s = ctx.mapping(m["setup"][1], "setup", SETUP_FIELDS)
        setup: dict[str, Any] = {}
        for key, (_kn, v) in s.items():
            if key == "hardware":
                setup["hardware"], setup["hardware_overrides"] = read_hardware(ctx, v)
            elif key == "model":
                setup["model"], setup["model_overrides"] = read_model(ctx, v)
            elif key == "engine":
                own_engine = read_engine(ctx, v)
                setup["engine"] = {**spec.engine, **own_engine}
                for sub in ("args", "env", "reserves"):  # one arg written here changes that arg, not the file's others
                    if isinstance(own_engine.get(sub), dict) and isinstance(spec.engine.get(sub), dict):
                        setup["engine"][sub] = {**spec.engine[sub], **own_engine[sub]}
            elif key == "workload":
                own = read_workload(ctx, v)  # a length written here replaces the file's distribution too
                prefix = {"prefix_share", "shared_prefix_len"}  # and either prefix form replaces the other
                base = {k: x for k, x in spec.workload.items()
                        if not (k in ("input_dist", "output_dist") and k.replace("_dist", "_len") in own)
                        and not (k in prefix and prefix & set(own))}
                if "input_len" in own and "dataset" in base and "dataset" not in own:
                    raise ctx.err(next((vn for kn2, vn in v.value if kn2.value == "input_len"), v),
                                  "setup.workload.input_len: the file's workload.dataset sets every prompt's length, "
                                  "so this input_len would be neither sent nor simulated",
                                  "give this prediction a dataset: of its own here, or move it to a file without one")
                setup["workload"] = {**base, **own}
        out["setup"] = setup
    if "marks" in m:
        v = m["marks"][1]
        items = v.value if isinstance(v, yaml.SequenceNode) else [v]
        out["marks"] = [ctx.string(i, "marks") for i in items]
        for name in out["marks"]:
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise ctx.err(v, f"marks: {name!r} is not a valid marker name", "use letters, digits and '_'")
    if "xfail" in m:
        v = m["xfail"][1]
        if isinstance(v, yaml.ScalarNode):
            out["xfail"] = Expectation(v.value, spec.xfail_strict, "both")
        else:
            x = ctx.mapping(v, "xfail", XFAIL_FIELDS)
            out["xfail"] = Expectation(
                ctx.scalar(x["reason"][1], "xfail.reason"),
                ctx.boolean(x["strict"][1], "xfail.strict") if "strict" in x else spec.xfail_strict,
                ctx.word(x["mode"][1], "xfail.mode", XFAIL_CHECKS) if "mode" in x else "both",
            )
    return out


def _own_problems(spec: Spec, exc: Exception) -> Exception | None:
    """What of a prediction's setup error is its own: None where the file's setup, without the override, fails the
    same way (its bad engine args are reported once, at the file's lines: trial s24 L9 blamed the prediction's
    ``setup:`` for them), the override's extra engine-arg problems alone where it adds some, else ``exc``."""
    from pytest_roofline.model.engine_args import EngineArgsError

    try:
        prediction_setup(spec, {})
    except Exception as base:
        if str(base) == str(exc):
            return None
        if isinstance(base, EngineArgsError) and isinstance(exc, EngineArgsError):
            known = {(p.field, p.text) for p in base.problems}  # the same arg at another value is its own problem
            extra = [p for p in exc.problems if (p.field, p.text) not in known]
            return EngineArgsError(extra) if extra else None
        return exc
    return exc


def _resolve_setup_check(ctx: NodeReader, spec: Spec, setup: Mapping[str, Any], node: yaml.Node,
                         key: yaml.Node | None = None, *, lengths: bool = True) -> None:
    """Resolve a prediction's own ``setup:`` (``node``, written after ``key``) so a bad value is refused at its
    line; and refuse a setup vLLM would not start, a KV pool short of one request of max_model_len, as the file's
    own setup is (``model.setup.max_model_len_problem``, format._sections.check_setup): at the prediction's
    ``engine.args.max_model_len`` where its setup writes one, else at its ``setup:`` line.  (The settings the
    serving model refuses are checked once the file is read, with the file's:
    ``_serving_settings.refuse_serving_settings``.)"""
    if not setup:
        return
    from pytest_roofline.model.setup import max_model_len_problem

    try:
        resolved = prediction_setup(spec, setup)
    except Exception as failed:
        exc = _own_problems(spec, failed)
        if exc is None:  # the file's own setup fails the same way: reported at the file's lines, not blamed here
            return
        raise ctx.err(setup_error_node(exc, node) or node, f"setup override does not resolve: {exc}",
                      "fix this value of the prediction's setup: (it overrides the file's sections)") from None
    if lengths:  # only where the prediction serves its workload's requests (_lengths.uses_workload)
        check_own_lengths(ctx, spec, setup, resolved, node, key)
    problem = max_model_len_problem(resolved, fix="setup.engine.args.max_model_len")
    if problem is None:
        return
    arg = written_at(node, "engine.args.max_model_len")
    raise ctx.err(arg or key or node, f"vLLM will not start this prediction's setup: {problem}",
                  "lower this setup's engine.args.max_model_len, or give the pool more memory, as the line says "
                  "(docs/reference/refusals.md)"
                  if arg is not None else "write max_model_len: N under this setup's engine.args (N: what the pool "
                                          "holds or less), or give it more memory as the line says "
                                          "(docs/reference/refusals.md)")


def _one(ctx: NodeReader, spec: Spec, m: Mapping[str, tuple[yaml.Node, yaml.Node]], pid: str, line: int,
         qnode: yaml.Node, pnode: yaml.Node, atnode: yaml.Node | None) -> Iterator[Prediction]:
    q = _quantity(ctx, qnode)
    predicted = _predicted(ctx, q, pnode, "predicted")
    unit = predicted.unit or DEFAULT_UNIT.get(q.dimension, "")
    common = _common(ctx, spec, m, q, unit)
    if "setup" in m:
        _resolve_setup_check(ctx, spec, common["setup"], m["setup"][1], m["setup"][0],
                             lengths=uses_workload(spec, q, predicted.kind))
    if (common["tolerance"] is not None
            and predicted.kind in (PredictedKind.BOOL, PredictedKind.WORD, PredictedKind.NONE)
            and not (common["tolerance"].lower is not None or common["tolerance"].upper is not None)):
        raise ctx.err(m["tolerance"][1], f"a tolerance does not apply to a {predicted.kind} prediction",
                      "remove tolerance: (the check is exact)")
    combos = _at(ctx, spec, q, atnode)
    for vals, texts in combos:
        suffix = "" if len(combos) == 1 else "[" + ",".join(f"{k}={t}" for k, t in texts.items()) + "]"
        yield Prediction(id=pid + suffix, quantity=q.name, at=vals, predicted=predicted,
                         tolerance=common["tolerance"] or spec.default_tolerance,
                         tolerance_written=common["tolerance"] is not None,
                         math_tolerance=common["math_tolerance"], drift=common["drift"], window=common["window"],
                         xfail=common["xfail"], notes=common["notes"], setup=common["setup"], marks=common["marks"],
                         line=line, file=spec.path, at_text=texts)


def _table(ctx: NodeReader, spec: Spec, m: Mapping[str, tuple[yaml.Node, yaml.Node]], pid: str, line: int
           ) -> Iterator[Prediction]:
    for key in ("quantity", "predicted"):
        if key in m:
            raise ctx.err(m[key][0], f"a table prediction takes no {key!r}; the table holds them")
    fixed = m["at"][1] if "at" in m else None  # at-parameters shared by every cell (e.g. {k: 4096, m: 4096})
    t = ctx.mapping(m["table"][1], "table", TABLE_FIELDS)
    at_name = ctx.scalar(t["at"][1], "table.at")
    if at_name not in qreg.AT_PARAMS:
        raise ctx.err(t["at"][1], f"table.at: unknown at-parameter {at_name!r}", did_you_mean(at_name, qreg.AT_PARAMS))
    qnodes = t["quantities"][1]
    if not isinstance(qnodes, yaml.SequenceNode):
        raise ctx.err(qnodes, "table.quantities must be a list of quantity names")
    qs = []
    for qn in qnodes.value:
        try:
            qs.append(_quantity(ctx, qn))
        except SpecError as exc:
            yield _error_prediction(spec, pid, line, exc)
            return
    if "setup" in m:  # the table's own setup, as a prediction's: one error of the table
        _resolve_setup_check(ctx, spec, _common(ctx, spec, {"setup": m["setup"]}, None, "")["setup"], m["setup"][1],
                             m["setup"][0], lengths=any(uses_workload(spec, q) for q in qs))
    rows = t["rows"][1]
    if not isinstance(rows, yaml.SequenceNode):
        raise ctx.err(rows, "table.rows must be a list of rows")
    for row in rows.value:
        rline = row.start_mark.line + 1
        try:
            if not isinstance(row, yaml.SequenceNode) or len(row.value) != len(qs) + 1:
                raise ctx.err(row, f"each row needs {len(qs) + 1} cells ({at_name}, then one per quantity)")
            shared = list(fixed.value) if isinstance(fixed, yaml.MappingNode) else []
            at_node = yaml.MappingNode("tag:yaml.org,2002:map", [(yaml.ScalarNode("tag:yaml.org,2002:str", at_name,
                                                                                  row.start_mark, row.end_mark),
                                                                  row.value[0]), *shared], row.start_mark,
                                       row.end_mark)
            for q, cell in zip(qs, row.value[1:]):
                predicted = _predicted(ctx, q, cell, f"row {at_name}={row.value[0].value} {q.name}")
                unit = predicted.unit or DEFAULT_UNIT.get(q.dimension, "")
                common = _common(ctx, spec, m, q, unit)
                for vals, texts in _at(ctx, spec, q, at_node):
                    cid = f"{pid}[{at_name}={texts.get(at_name, row.value[0].value)}:{q.name}]"
                    yield Prediction(id=cid, quantity=q.name, at=vals, predicted=predicted,
                                     tolerance=common["tolerance"] or spec.default_tolerance,
                                     tolerance_written=common["tolerance"] is not None,
                                     math_tolerance=common["math_tolerance"], drift=common["drift"],
                                     window=common["window"],
                                     xfail=common["xfail"], notes=common["notes"], setup=common["setup"],
                                     marks=common["marks"], line=rline, file=spec.path, at_text=texts)
        except SpecError as exc:
            yield _error_prediction(spec, f"{pid}[line{rline}]", rline, exc)
