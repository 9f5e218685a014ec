"""The ``roofline`` command.

``roofline predict``      the analytical decode table for a chip, a model, a context and batch sizes;
                          ``--simulate [FILE.yaml]``: the serving model's predicted sweep (``--results`` beside it)
``roofline quantities``   every quantity a prediction can name, with its dimension and at-parameters
``roofline hardware``     the hardware catalog
``roofline schema``       the JSON Schema of the prediction format (for a YAML language server)
``roofline check FILE``   validate prediction files without running pytest
``roofline report``       render a standalone HTML scorecard from a predictions file and a results file
``roofline tiny-model``   make the project's tiny CPU test model (offline, deterministic)
``roofline calibrate``    fit the serving model's constants to measured points, write a calibration file
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_roofline.errors import NotMeasured, RooflineError
from pytest_roofline.format.limits import DEFAULT_LIMITS, Limits, parse_limit
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.model import analytical as an
from pytest_roofline.model import hardware
from pytest_roofline.model.setup import SetupError, build_setup
from pytest_roofline.quantities import registry as quantities
from pytest_roofline.quantities.measurement import client_value
from pytest_roofline.units import GB, GIB

__all__ = ["main", "predict_rows"]


def predict_rows(*, hardware_id: str, model: str, context_tokens: float, batches: Sequence[int],
                 engine_version: str | None = None, dtype: str = "bf16") -> dict:
    """The analytical table as plain data: one row per batch plus ridge, asymptote and knee."""
    setup = build_setup(hardware_ref=hardware_id, model_ref=model, model_overrides={"dtype": dtype},
                        engine={"name": "vllm", "version": engine_version} if engine_version else {},
                        workload={"kv_context": context_tokens})
    kw = dict(weight_bytes=setup.weight_bytes, flop_per_token=setup.flop_per_token,
              kv_bytes_per_seq=setup.kv_bytes_per_seq, hbm_bytes_per_s=setup.hbm_bytes_per_s,
              peak_flop_per_s=setup.peak_flop_per_s)
    rows = []
    for b in batches:
        s = an.decode_step(b, **kw)
        rows.append({
            "batch": b, "intensity_flop_per_byte": s.intensity_flop_per_byte,
            "weight_only_intensity_flop_per_byte": s.weight_only_intensity_flop_per_byte,
            "t_mem_ms": s.t_mem_s * 1e3, "t_comp_ms": s.t_comp_s * 1e3, "t_step_ms": s.t_step_s * 1e3,
            "bound": s.bound, "throughput_tok_per_s": s.throughput_tok_per_s,
            "per_request_tok_per_s": s.per_request_tok_per_s, "kv_total_gib": s.kv_total_bytes / GIB,
        })
    knee = an.roofline_knee(**kw)
    return {
        "hardware": setup.hardware.id, "model": setup.model.name, "context_tokens": context_tokens,
        "weight_bytes": setup.weight_bytes, "kv_bytes_per_token": setup.kv_bytes_per_token,
        "ridge_flop_per_byte": an.ridge_flop_per_byte(setup.peak_flop_per_s, setup.hbm_bytes_per_s),
        "intensity_asymptote_flop_per_byte": an.intensity_asymptote_flop_per_byte(setup.flop_per_token,
                                                                                  setup.kv_bytes_per_seq),
        "half_saturation_batch": an.half_saturation_batch(setup.weight_bytes, setup.kv_bytes_per_seq),
        "throughput_asymptote_tok_per_s": an.throughput_asymptote_tok_per_s(setup.hbm_bytes_per_s,
                                                                            setup.kv_bytes_per_seq),
        "batch1_ceiling_tok_per_s": an.batch1_ceiling_tok_per_s(setup.hbm_bytes_per_s, setup.weight_bytes),
        "knee_batch": knee.batch, "knee_reason": knee.reason,
        "rows": rows,
    }


#: predicted field -> (client section key, statistic) of a recorded point (results-schema.md)
_MEASURED_FIELDS = {
    "output_throughput_tok_per_s": ("output_throughput_tok_s", None),
    "per_request_output_tok_per_s": ("per_request_output_tok_s", "mean"),
    "ttft_p50_ms": ("ttft_ms", "p50"), "ttft_p99_ms": ("ttft_ms", "p99"),
    "tpot_p50_ms": ("tpot_ms", "p50"), "tpot_p99_ms": ("tpot_ms", "p99"),
    "itl_p99_ms": ("itl_ms", "p99"),
}


def _measured_point(doc: Mapping[str, Any] | None, concurrency: int | None, rate: float | None) -> dict[str, float]:
    """The recorded values of the closed-loop point at ``concurrency`` (or the open-loop one at ``rate``)."""
    if not doc:
        return {}
    try:
        pt = RecordedMeasurement(doc).point(concurrency=concurrency, rate=rate)
    except NotMeasured:
        return {}
    out = {}
    for name, (key, stat) in _MEASURED_FIELDS.items():
        v = client_value(pt, key, *([stat] if stat else []))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = float(v)
    return out


def _simulate_rows(args: argparse.Namespace) -> tuple[str, list[dict]]:
    """The serving model's predicted sweep: from a prediction file (its setup, constants and sweep, as the
    scorer simulates it) or from the flags."""
    from pytest_roofline.model import serving as sv

    if isinstance(args.simulate, str):
        from pytest_roofline.format.spec import load_spec
        from pytest_roofline.scoring import serving_sweep_for

        spec = load_spec(args.simulate)
        setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                            model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                            workload=spec.workload)
        sweep = serving_sweep_for(spec, None, setup)
        keys = [p.key for p in sweep.points if p.key[0] != "batch1"]
        if args.concurrency:
            keys = [("closed", float(c)) for c in _int_list(args.concurrency)]
        preds = [sweep.predict(k)[1] for k in keys]
        title = f"{spec.title} · {sweep.source}"
    else:
        if not (args.hardware and args.model):
            raise ValueError("--simulate needs a prediction file, or --hardware and --model")
        engine = {"name": "vllm", "version": args.engine_version} if args.engine_version else {}
        setup = build_setup(hardware_ref=args.hardware, model_ref=args.model, model_overrides={"dtype": args.dtype},
                            engine=engine, workload={"input_len": args.input_len, "output_len": args.output_len})
        eng = sv.EngineConfig.from_setup(setup)
        constants = sv.default_constants(setup)
        if args.rate:
            workloads = [sv.workload_for_point(setup, rate_req_per_s=float(r)) for r in args.rate.split(",")]
        else:
            workloads = [sv.workload_for_point(setup, concurrency=c)
                         for c in _int_list(args.concurrency or "1,2,4,8,16,32,64,128")]
        preds = sv.simulate_sweep(setup, workloads, engine=eng, constants=constants)
        title = "default constants"
    eng = sv.EngineConfig.from_setup(setup)
    head = (f"{setup.hardware.id} · {setup.model.name} · {setup.engine_name} {setup.engine_version or ''} · "
            f"in {setup.input_len} / out {setup.output_len} tokens · max_num_seqs {eng.max_num_seqs}, "
            f"max_num_batched_tokens {eng.max_num_batched_tokens}, chunked prefill "
            f"{'on' if eng.chunked_prefill else 'off'}, {eng.num_gpu_blocks:,} KV blocks · {title}")
    doc = None
    if args.results:
        from pytest_roofline.measure.results import load_results

        doc = load_results(args.results)
    rows = []
    for p in preds:
        row = {("concurrency" if p.concurrency is not None and p.rate_req_per_s is None else "rate"):
               (p.concurrency if p.rate_req_per_s is None else p.rate_req_per_s), **p.to_dict()}
        if p.rate_req_per_s is not None:
            row["rate"] = p.rate_req_per_s
        meas = _measured_point(doc, p.concurrency if p.rate_req_per_s is None else None, p.rate_req_per_s)
        if doc is not None:
            row["measured"] = meas
            row["error"] = {k: (row[k] / v - 1.0) if v else None for k, v in meas.items()}
        rows.append(row)
    return head, rows


def _int_list(text: str, what: str = "--concurrency") -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``; a ValueError naming the flag and the bad item otherwise."""
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise ValueError(f"{what}: {item[:40]!r} is not a whole number >= 1 (write e.g. 1,2,4)")
        out.append(int(item))
    if not out:
        raise ValueError(f"{what}: no values given (write e.g. 1,2,4)")
    return out


def _batch_list(text: str) -> list[int]:
    """argparse type of ``--batch``: an error message argparse prints on one line, with exit status 2."""
    try:
        return _int_list(text, "--batch")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--batch: ")) from None


def _cmd_predict_simulate(args: argparse.Namespace) -> int:
    head, rows = _simulate_rows(args)
    if args.json:
        for row in rows:  # JSON lines: one object per sweep point
            print(json.dumps(row))
        return 0
    print(head)
    cols = [("output_throughput_tok_per_s", "agg tok/s", ".1f"), ("per_request_output_tok_per_s", "tok/s/req", ".1f"),
            ("ttft_p50_ms", "TTFT p50", ".0f"), ("ttft_p99_ms", "TTFT p99", ".0f"), ("tpot_p50_ms", "TPOT p50", ".2f"),
            ("tpot_p99_ms", "TPOT p99", ".2f"), ("itl_p99_ms", "ITL p99", ".1f")]
    key = "rate" if rows and "rate" in rows[0] else "concurrency"
    print(f"{'C' if key == 'concurrency' else 'req/s':>6} " + " ".join(f"{c[1]:>18}" for c in cols)
          + f" {'run':>6} {'KV %':>5} {'preempt':>7} {'queue ms':>8}  dominant term")
    errs: dict[str, list[float]] = {}
    for r in rows:
        cells = []
        for name, _, fmt in cols:
            pred = format(r[name], fmt) if math.isfinite(r[name]) else "—"
            meas = r.get("measured", {}).get(name)
            if meas is not None:
                err = r["error"][name]
                errs.setdefault(name, []).append(abs(err))
                cells.append(f"{pred}|{format(meas, fmt)} {err:+.0%}".rjust(18))
            else:
                cells.append(f"{pred:>18}")
        top = max(r["time_shares"], key=r["time_shares"].get) if r["time_shares"] else "—"
        point = f"{r['rate']:g}/s" if "rate" in r else f"{r['concurrency']:g}"  # a file may sweep both
        print(f"{point:>6} " + " ".join(cells) + f" {r['mean_running_batch']:>6.1f} {100 * r['max_kv_usage']:>5.1f} "
              f"{r['preemptions']:>7} {r['mean_queue_ms']:>8.1f}  {top} {r['time_shares'].get(top, 0):.0%}")
    if errs:
        print("cells: predicted|measured error · mean |error|: " + ", ".join(
            f"{n} {sum(v) / len(v):.1%} (n={len(v)})" for n, v in errs.items()))
    return 0


def _cmd_predict(args: argparse.Namespace) -> int:
    if args.simulate is not None:
        return _cmd_predict_simulate(args)
    if not (args.hardware and args.model):
        raise ValueError("predict needs --hardware and --model (or --simulate FILE.yaml)")
    batches = args.batch or [1, 2, 4, 8, 16, 32, 64, 128, 256]
    data = predict_rows(hardware_id=args.hardware, model=args.model, context_tokens=args.context, batches=batches,
                        engine_version=args.engine_version, dtype=args.dtype)
    if args.json:
        meta = {k: v for k, v in data.items() if k != "rows"}
        for row in data["rows"]:  # JSON lines: one object per batch, each carrying the ridge, asymptote and knee
            print(json.dumps({**row, **meta}))
        return 0
    print(f"{data['hardware']} · {data['model']} · KV context {data['context_tokens']:,.0f} tokens · "
          f"weights {data['weight_bytes'] / 1e9:,.2f} GB · KV {data['kv_bytes_per_token']:,.0f} B/token")
    print(f"{'B':>5} {'t_mem ms':>9} {'t_comp ms':>9} {'t_step ms':>9} {'FLOP/byte':>9} {'tok/s':>11} "
          f"{'tok/s/req':>9} {'KV GiB':>8}  bound")
    for r in data["rows"]:
        print(f"{r['batch']:>5} {r['t_mem_ms']:>9.2f} {r['t_comp_ms']:>9.2f} {r['t_step_ms']:>9.2f} "
              f"{r['intensity_flop_per_byte']:>9.2f} {r['throughput_tok_per_s']:>11,.1f} "
              f"{r['per_request_tok_per_s']:>9.1f} {r['kv_total_gib']:>8.2f}  {r['bound']}")
    print(f"ridge {data['ridge_flop_per_byte']:.1f} FLOP/byte · intensity asymptote "
          f"{data['intensity_asymptote_flop_per_byte']:.1f} FLOP/byte · half-saturation B "
          f"{data['half_saturation_batch']:.1f} · throughput asymptote {data['throughput_asymptote_tok_per_s']:,.0f} "
          f"tok/s · batch-1 ceiling {data['batch1_ceiling_tok_per_s']:.1f} tok/s")
    print(f"knee: {data['knee_batch']:.1f}" if data["knee_batch"] is not None else f"knee: {data['knee_reason']}")
    return 0


def _cmd_quantities(args: argparse.Namespace) -> int:
    for q in sorted(quantities.QUANTITIES.values(), key=lambda q: q.name):
        modes = "+".join(q.modes)
        at = ", ".join(q.at) or "—"
        print(f"{q.name:<36} {q.dimension:<12} {modes:<14} at: {at}\n    {q.description}")
    return 0


def _cmd_hardware(args: argparse.Namespace) -> int:
    print(f"{'id':<16} {'memory':>12} {'GB/s':>7} {'bf16 TF':>8} {'fp8 TF':>8} {'ridge':>7}  name")
    for hid, h in hardware.CATALOG.items():
        if h.hbm_bytes_per_s:
            fp8 = h.peak_flop_per_s.get("fp8")
            fp8_text = f"{fp8 / 1e12:,.1f}" if fp8 else "—"  # no FP8 tensor cores (A100)
            mem_text = f"{h.memory_bytes / GIB:>8.2f} GiB" if h.memory_bytes else "—"
            print(f"{hid:<16} {mem_text:>12} {h.hbm_bytes_per_s / GB:>7,.0f} "
                  f"{h.peak_flop_per_s['bf16'] / 1e12:>8,.1f} {fp8_text:>8} "
                  f"{h.ridge_flop_per_byte():>7.1f}  {h.name}")
        else:
            print(f"{hid:<16} {'—':>12} {'—':>7} {'—':>8} {'—':>8} {'—':>7}  {h.name}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from pytest_roofline.format.spec import json_schema

    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _write(path: str | Path, text: str) -> None:
    """Write an output file; a missing folder or no permission is one line (``OSError`` caught by main)."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(21, "is a directory; give a file name", str(p))
    if not p.parent.is_dir():
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(p))
    p.write_text(text, encoding="utf-8")


def _limits(args: argparse.Namespace) -> Limits:
    changes = dict(parse_limit(text) for text in (getattr(args, "limit", None) or []))
    return DEFAULT_LIMITS.with_changes(**changes)


def _cmd_check(args: argparse.Namespace) -> int:
    from pytest_roofline.format.spec import SpecError, load_spec

    bad = 0
    limits = _limits(args)
    for f in args.files:
        try:
            spec = load_spec(f, limits=limits)
        except SpecError as exc:
            print(exc)
            bad += 1
            continue
        except OSError as exc:
            print(f"{f}: cannot read: {exc.strerror or exc}")
            bad += 1
            continue
        errors = [p.error for p in spec.predictions if p.error is not None]
        for e in errors:
            print(e)
        bad += bool(errors)
        print(f"{f}: {len(spec.predictions) - len(errors)} predictions ok, {len(errors)} with errors")
    return 1 if bad else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pytest_roofline.report.scorecard import render_from_files

    out = Path(args.output)
    if not out.parent.is_dir():  # before the work: a typo in -o must not cost a render
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(out))
    for given in (args.predictions, args.results):
        if given and Path(given).is_dir():
            raise IsADirectoryError(21, "is a directory; give the file (e.g. DIR/results.json)", given)
    html = render_from_files(Path(args.predictions), Path(args.results) if args.results else None)
    _write(out, html)
    print(f"wrote {args.output}")
    return 0


def _cmd_tiny_model(args: argparse.Namespace) -> int:
    from pytest_roofline.measure import tinymodel

    dest = Path(args.dest).expanduser() if args.dest else tinymodel.default_model_dir()
    if not tinymodel.is_tiny_model(dest):  # a real write probe first: a bad destination is one line, not a child's
        try:  # traceback minutes later
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rmdir(tempfile.mkdtemp(prefix=f".{dest.name}.probe.", dir=dest.parent))
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write the model there ({exc.strerror or exc})", str(dest)) from None
    try:
        print(tinymodel.make_tiny_model(dest))
    except RuntimeError as exc:
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        print(f"roofline: making the tiny model in {dest} failed: {lines[-1] if lines else exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit the serving model's constants to measured points; print values ± 1σ and residuals; write the file."""
    from pytest_roofline.errors import CalibrationError
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.measure.calibpoints import measured_points, parse_point_selector, select_points
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.model import calibration, serving

    docs = [(f, load_results(f)) for f in args.results]

    def run_of(d: Mapping[str, Any]) -> tuple[Any, ...]:
        st = d.get("setup") or {}
        return ((st.get("hardware") or {}).get("declared"), (st.get("model") or {}).get("name"),
                (st.get("engine") or {}).get("version"), json.dumps(st.get("workload") or {}, sort_keys=True))

    differ = {str(f): run_of(d) for f, d in docs if run_of(d) != run_of(docs[0][1])}
    if differ:
        raise CalibrationError(f"the results files are not of one setup (hardware, model, engine version, "
                               f"workload): {docs[0][0]} has {run_of(docs[0][1])}, "
                               + "; ".join(f"{f} has {r}" for f, r in differ.items()))
    pred_file = args.predictions or (docs[0][1].get("setup") or {}).get("predictions_file")
    if not pred_file:
        raise CalibrationError("the results file does not name its predictions file: pass --predictions FILE.yaml")
    spec = load_spec(pred_file)
    setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                        model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                        workload=spec.workload)
    points = [p for _, d in docs for p in measured_points(d)]
    if args.points:
        points = select_points(points, parse_point_selector(args.points))
    points, screened = calibration.screen_points(points, setup, contamination=spec.thresholds.contamination)
    for note in screened:
        print(f"note: {note}")
    base = serving.default_constants(setup)
    fields = [f.strip() for f in args.fit.split(",") if f.strip()] if args.fit else None
    print(f"calibrating {setup.hardware.id} / {setup.model.name} / {setup.engine_name} "
          f"{setup.engine_version or ''} on {', '.join(p.label for p in points)} "
          f"({', '.join(fields or type(base).FIELDS_FITTABLE)})", flush=True)
    seed = int((spec.workload or {}).get("seed", 0))  # with each point's id: the load generator's arrivals
    result = calibration.fit(points, base, predict=calibration.serving_predictor(setup, seed=seed), fields=fields)
    print(result.describe())
    cal = calibration.calibration_from_fit(result, setup, sources=[str(f) for f, _ in docs],
                                           notes=args.notes or "")
    if args.output:
        calibration.dump_calibration(cal, args.output)
        print(f"wrote {args.output}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="roofline", description="pytest-roofline: performance predictions as tests")
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("predict", help="print the analytical decode table")
    pr.add_argument("--hardware", "--gpu", help="catalog id, e.g. a100-sxm4-80gb (see `roofline hardware`)")
    pr.add_argument("--model", help="preset (qwen3-8b) or path to a HF config.json")
    pr.add_argument("--context", type=float, default=1024, help="KV context per sequence in tokens (default 1024)")
    pr.add_argument("--batch", type=_batch_list, help="comma-separated batch sizes (default 1,2,4,...,256)")
    pr.add_argument("--dtype", default="bf16", help="weight dtype: bf16, fp8, int4 (default bf16)")
    pr.add_argument("--engine-version", help="vLLM version (for defaults)")
    pr.add_argument("--json", action="store_true",
                    help="JSON lines: one object per batch, each carrying the ridge, asymptote and knee")
    pr.add_argument("--simulate", nargs="?", const=True, metavar="FILE.yaml",
                    help="the serving model's predicted sweep: for a prediction file's setup and sweep, or (without "
                         "a file) for --hardware/--model/--input-len/--output-len/--concurrency or --rate")
    pr.add_argument("--results", help="with --simulate: a results file; prints the measured value and the error "
                                      "beside each predicted one")
    pr.add_argument("--input-len", type=int, default=1024, help="with --simulate: prompt tokens (default 1024)")
    pr.add_argument("--output-len", type=int, default=1024, help="with --simulate: output tokens (default 1024)")
    pr.add_argument("--concurrency", help="with --simulate: comma-separated closed-loop concurrencies")
    pr.add_argument("--rate", help="with --simulate: comma-separated open-loop request rates (req/s)")
    pr.set_defaults(fn=_cmd_predict)
    sub.add_parser("quantities", help="list every quantity").set_defaults(fn=_cmd_quantities)
    sub.add_parser("hardware", help="list the hardware catalog").set_defaults(fn=_cmd_hardware)
    sc = sub.add_parser("schema", help="print the JSON Schema of the prediction format")
    sc.add_argument("-o", "--output")
    sc.set_defaults(fn=_cmd_schema)
    ck = sub.add_parser("check", help="validate prediction files")
    ck.add_argument("files", nargs="+")
    ck.add_argument("--limit", action="append", metavar="NAME=N",
                    help="raise a loader limit (max_yaml_nodes, max_tests_per_prediction, max_tests_per_file, "
                         "max_value_length); repeatable")
    ck.set_defaults(fn=_cmd_check)
    rp = sub.add_parser("report", help="render a standalone HTML scorecard from files")
    rp.add_argument("predictions")
    rp.add_argument("results", nargs="?")
    rp.add_argument("-o", "--output", default="scorecard.html")
    rp.set_defaults(fn=_cmd_report)
    tm = sub.add_parser("tiny-model", help="make the tiny CPU test model")
    tm.add_argument("--dest")
    tm.set_defaults(fn=_cmd_tiny_model)
    cb = sub.add_parser("calibrate", help="fit the serving model's constants to measured points")
    cb.add_argument("results", nargs="+", help="results files (results.json) of the same setup")
    cb.add_argument("--points", help="which points to fit on, e.g. C=1,C=64 or R=4,R=32 (default: all)")
    cb.add_argument("--fit", help="comma-separated constants to fit (default: ServingConstants.FIELDS_FITTABLE)")
    cb.add_argument("--predictions", help="the prediction file of the run (default: the one the results name)")
    cb.add_argument("--notes", help="a note stored in the calibration file")
    cb.add_argument("-o", "--output", help="write the calibration file (YAML) here")
    cb.set_defaults(fn=_cmd_calibrate)
    args = p.parse_args(argv)
    if args.cmd == "predict" and args.simulate is None and not (args.hardware and args.model):
        pr.error("the following arguments are required: --hardware, --model (or --simulate [FILE.yaml])")
    try:
        return args.fn(args)
    except BrokenPipeError:  # `roofline quantities | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RooflineError, SetupError, ValueError, KeyError) as exc:
        print(f"roofline: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing input, an unwritable or missing output folder: the path and the reason
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"roofline: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
