"""The ``roofline`` command.

``roofline predict``      the analytical decode table for a chip, a model, a context and batch sizes
``roofline quantities``   every quantity a prediction can name, with its dimension and at-parameters
``roofline hardware``     the hardware catalog
``roofline schema``       the JSON Schema of the prediction format (for a YAML language server)
``roofline check FILE``   validate prediction files without running pytest
``roofline report``       render a standalone HTML scorecard from a predictions file and a results file
``roofline tiny-model``   make the project's tiny CPU test model (offline, deterministic)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from pytest_roofline.model import analytical as an
from pytest_roofline.model import hardware
from pytest_roofline.quantities import registry as quantities
from pytest_roofline.model.setup import SetupError, build_setup

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
            "per_request_tok_per_s": s.per_request_tok_per_s, "kv_total_gib": s.kv_total_bytes / 2**30,
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


def _cmd_predict(args: argparse.Namespace) -> int:
    batches = [int(b) for b in args.batch.split(",")] if args.batch else [1, 2, 4, 8, 16, 32, 64, 128, 256]
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
            print(f"{hid:<16} {h.memory_bytes / 2**30:>8.2f} GiB {h.hbm_bytes_per_s / 1e9:>7,.0f} "
                  f"{h.peak_flop_per_s['bf16'] / 1e12:>8,.1f} {fp8_text:>8} "
                  f"{h.ridge_flop_per_byte():>7.1f}  {h.name}")
        else:
            print(f"{hid:<16} {'—':>12} {'—':>7} {'—':>8} {'—':>8} {'—':>7}  {h.name}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from pytest_roofline.format.spec import json_schema

    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from pytest_roofline.format.spec import SpecError, load_spec

    bad = 0
    for f in args.files:
        try:
            spec = load_spec(f)
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

    html = render_from_files(Path(args.predictions), Path(args.results) if args.results else None)
    Path(args.output).write_text(html, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


def _cmd_tiny_model(args: argparse.Namespace) -> int:
    from pytest_roofline.measure import tinymodel

    dest = Path(args.dest) if args.dest else tinymodel.default_model_dir()
    print(tinymodel.make_tiny_model(dest))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="roofline", description="pytest-roofline: performance predictions as tests")
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("predict", help="print the analytical decode table")
    pr.add_argument("--hardware", "--gpu", required=True, help="catalog id, e.g. a100-sxm4-80gb (see `roofline hardware`)")
    pr.add_argument("--model", required=True, help="preset (qwen3-8b) or path to a HF config.json")
    pr.add_argument("--context", type=float, default=1024, help="KV context per sequence in tokens (default 1024)")
    pr.add_argument("--batch", help="comma-separated batch sizes (default 1,2,4,...,256)")
    pr.add_argument("--dtype", default="bf16", help="weight dtype: bf16, fp8, int4 (default bf16)")
    pr.add_argument("--engine-version", help="vLLM version (for defaults)")
    pr.add_argument("--json", action="store_true",
                    help="JSON lines: one object per batch, each carrying the ridge, asymptote and knee")
    pr.set_defaults(fn=_cmd_predict)
    sub.add_parser("quantities", help="list every quantity").set_defaults(fn=_cmd_quantities)
    sub.add_parser("hardware", help="list the hardware catalog").set_defaults(fn=_cmd_hardware)
    sc = sub.add_parser("schema", help="print the JSON Schema of the prediction format")
    sc.add_argument("-o", "--output")
    sc.set_defaults(fn=_cmd_schema)
    ck = sub.add_parser("check", help="validate prediction files")
    ck.add_argument("files", nargs="+")
    ck.set_defaults(fn=_cmd_check)
    rp = sub.add_parser("report", help="render a standalone HTML scorecard from files")
    rp.add_argument("predictions")
    rp.add_argument("results", nargs="?")
    rp.add_argument("-o", "--output", default="scorecard.html")
    rp.set_defaults(fn=_cmd_report)
    tm = sub.add_parser("tiny-model", help="make the tiny CPU test model")
    tm.add_argument("--dest")
    tm.set_defaults(fn=_cmd_tiny_model)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:  # `roofline quantities | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (SetupError, ValueError, KeyError) as exc:
        print(f"roofline: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
