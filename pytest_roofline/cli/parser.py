"""The ``roofline`` parser apart from the work (as pytest-benchmark's ``make_parser`` and ``main``):
:func:`make_parser` declares every command and its flags, each bound to the function that runs it
(:mod:`~pytest_roofline.cli.predict`, :mod:`~pytest_roofline.cli.commands`; the setup flags are
:mod:`~pytest_roofline.cli.setup_flags`); :func:`main` parses, runs, and turns an error into one line and exit
status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pytest_roofline import redact
from pytest_roofline.cli.commands import (
    cmd_calibrate,
    cmd_check,
    cmd_compare,
    cmd_hardware,
    cmd_history,
    cmd_quantities,
    cmd_report,
    cmd_schema,
    cmd_tiny_model,
    drift_baseline,
    drift_threshold,
)
from pytest_roofline.cli.init import cmd_init, parse_workload
from pytest_roofline.cli.predict import batch_list, cmd_predict, concurrency_list, positive_number, rate_list
from pytest_roofline.cli.setup_flags import add_setup_flags, flag_type, whole_at_least_1
from pytest_roofline.errors import RooflineError
from pytest_roofline.model.setup import SetupError

__all__ = ["main", "make_parser"]



def _machine_share(text: str) -> float:
    """``--machine 20%``: a share above 0 (argparse's one-line usage error otherwise)."""
    from pytest_roofline.history import parse_share

    try:
        share = parse_share(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if share <= 0:
        raise argparse.ArgumentTypeError(f"{text}: a host probe always moves a little; give a share above 0, e.g. 20%")
    return share

def make_parser() -> argparse.ArgumentParser:
    """The ``roofline`` parser: every command, its flags, and the function that runs it (``fn``)."""
    p = argparse.ArgumentParser(prog="roofline", description="pytest-roofline: performance predictions as tests")
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("predict", help="print the analytical decode table")
    pr.add_argument("--hardware", "--gpu", help="catalog id, e.g. a100-sxm4-80gb (see `roofline hardware`)")
    pr.add_argument("--model", help="preset (qwen3-8b) or path to a HF config.json")
    pr.add_argument("--context", type=flag_type(positive_number, "tokens"),
                    help="KV context per sequence in tokens (default: the workload's input + output ÷ 2, as a "
                         "prediction file's checks take it: 1,536 for 1,024/1,024)")
    pr.add_argument("--batch", type=batch_list, help="comma-separated batch sizes (default 1,2,4,...,256)")
    pr.add_argument("--dtype", help="weight dtype: bf16, fp8, int4 (default: the model's, bf16)")
    add_setup_flags(pr)
    pr.add_argument("--json", action="store_true",
                    help="JSON lines: one object per batch, each carrying the ridge, asymptote, knee and the KV "
                         "pool (num_gpu_blocks, kv_cache_tokens, available_kv_bytes, weight_bytes_per_gpu, ...)")
    pr.add_argument("--simulate", nargs="?", const=True, metavar="FILE.yaml",
                    help="the serving model's predicted sweep: over a prediction file's sweep, one table for each "
                         "setup its predictions use (the file's, and each own setup:), or (without a file) for "
                         "--hardware/--model/--input-len/--output-len/--concurrency or --rate")
    pr.add_argument("--results", help="with --simulate: a results file; prints the measured value and the error "
                                      "beside each predicted one")
    pr.add_argument("--input-len", type=flag_type(whole_at_least_1, "tokens"),
                    help="prompt tokens (default 1024, or the --simulate file's); the table's KV context is "
                         "input + output ÷ 2 unless --context says")
    pr.add_argument("--output-len", type=flag_type(whole_at_least_1, "tokens"),
                    help="output tokens (default 1024, or the --simulate file's)")
    pr.add_argument("--concurrency", type=concurrency_list, metavar="C[,C...]",
                    help="with --simulate: comma-separated closed-loop concurrencies (default 1,2,4,...,128); with "
                         "--rate, one number: the most requests in flight at each rate (an open loop with a "
                         "concurrency cap, as vllm bench serve --max-concurrency)")
    pr.add_argument("--rate", type=rate_list, metavar="R[,R...]",
                    help="with --simulate: comma-separated open-loop request rates in req/s (Poisson arrivals); "
                         "with --concurrency N at most N requests in flight (with a prediction file: its open-loop "
                         "points at these rates, and --concurrency is refused beside it)")
    pr.set_defaults(fn=cmd_predict, usage_error=pr.error)  # main(): a predict without a setup is a usage error
    it = sub.add_parser("init", help="write a prediction file to fill in: each prediction with its derivation and "
                                     "the model's value, the ink left blank")
    it.add_argument("--gpu", "--hardware", dest="gpu", required=True,
                    help="a family (h100: its common variant), a catalog id (h100-sxm) or the name nvidia-smi prints")
    it.add_argument("--model", required=True,
                    help="a Hub id (Qwen/Qwen2.5-14B-Instruct: config.json from the local HF cache, else the Hub), "
                         "a preset (qwen3-8b) or a path to a config.json")
    it.add_argument("--tp", type=flag_type(whole_at_least_1, "GPUs"), default=1,
                    help="tensor-parallel GPUs (engine.args.tensor_parallel_size; default 1)")
    it.add_argument("--workload", type=parse_workload, default=(1024, 1024), metavar="INPUT/OUTPUT",
                    help="prompt and output tokens per request (default 1024/1024)")
    it.add_argument("-o", "--output", help="the file to write (default: stdout)")
    it.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    it.set_defaults(fn=cmd_init)
    sub.add_parser("quantities", help="list every quantity").set_defaults(fn=cmd_quantities)
    sub.add_parser("hardware", help="list the hardware catalog").set_defaults(fn=cmd_hardware)
    sc = sub.add_parser("schema", help="print the JSON Schema of the prediction format")
    sc.add_argument("-o", "--output")
    sc.set_defaults(fn=cmd_schema)
    ck = sub.add_parser("check", help="validate prediction files")
    ck.add_argument("files", nargs="+")
    ck.add_argument("--limit", action="append", metavar="NAME=N",
                    help="raise a loader limit (max_yaml_nodes, max_tests_per_prediction, max_tests_per_file, "
                         "max_value_length); repeatable")
    ck.set_defaults(fn=cmd_check)
    rp = sub.add_parser("report", help="render a standalone HTML scorecard from files")
    rp.add_argument("predictions")
    rp.add_argument("results", nargs="?", help="a results.json, vllm bench serve --save-result files (a file or a "
                    "folder), GuideLLM benchmarks JSON or an AIPerf profile export")
    rp.add_argument("--allow-mismatch", "--roofline-allow-mismatch", dest="allow_mismatch", action="store_true",
                    help="render results that do not belong to the predictions (other GPU, model, engine version, "
                         "lengths, sweep points) instead of refusing them; the scorecard says so")
    rp.add_argument("-o", "--output", default="scorecard.html")
    rp.set_defaults(fn=cmd_report)
    hi = sub.add_parser("history", help="render the trend page of a history store (--roofline-history)")
    hi.add_argument("uri", help="the store: a directory, file://..., sqlite:///x.db or postgresql+psycopg://...")
    hi.add_argument("-o", "--output", help="the page (default: roofline-history.html here)")
    hi.add_argument("--setup", "--setup-filter", dest="setup", action="append", metavar="TEXT",
                    help="only setups whose 'hardware · model · vllm version' contains TEXT (case-insensitive); "
                         "repeatable")
    hi.add_argument("--last", type=flag_type(whole_at_least_1, "N"), metavar="N",
                    help="only the latest N runs of each prediction file on each hardware × model (N nights of "
                         "each file)")
    hi.add_argument("--drift", type=flag_type(drift_threshold, "threshold"), metavar="THRESHOLD",
                    help="the drift columns' threshold, as --roofline-drift takes it (a prediction's own drift: "
                         "wins); default: each night's own, the one its log judged it by, else 10%%")
    hi.add_argument("--baseline", type=flag_type(drift_baseline, "baseline"), metavar="previous|median:N|run:ID",
                    help="what drift compares with, as --roofline-drift-baseline takes it: the previous run on the "
                         "same setup, the median of the last N, or a pinned run (run:ID, a stored run's id or its "
                         "unique beginning); default: each night's own, the one its log judged it by, else "
                         "previous")
    hi.set_defaults(fn=cmd_history)
    co = sub.add_parser("compare", help="print two runs side by side (ids in a history store, stored run "
                                        "directories or results.json files); with --store and no runs: list the "
                                        "store's runs",
                        description="Print two runs side by side; exit status 1 when they share no measured "
                                    "prediction (NOTHING WAS COMPARED). With --store URI and no runs named: list the "
                                    "store's runs, newest last, to pick two ids from.")
    co.add_argument("a", nargs="?", help="the earlier run: a run id (or a unique prefix), a run directory or a "
                                         "results.json; leave both out to list the runs of --store")
    co.add_argument("b", nargs="?", help="the later run, the same kinds")
    co.add_argument("--store", metavar="URI", help="the history store run ids are looked up in, or listed from "
                                                   "(default: $ROOFLINE_HISTORY)")
    co.add_argument("--predictions", metavar="FILE.yaml",
                    help="for a results.json side: its prediction file (default: the one the results name)")
    co.add_argument("--json", action="store_true",
                    help="the rows as JSON, every number the stored SI base value and each row's unit its SI "
                         "unit (s, tok/s, B; a ratio a fraction; change_rel a fraction); written_unit is the "
                         "table's unit; with no runs named: the store's runs")
    co.add_argument("--machine", metavar="SHARE", type=_machine_share,
                    help="leave unjudged a pair whose host probes (the machine, timed around each point) are "
                         "further apart than SHARE, e.g. 20%%: one machine ran slower and every figure moved with it "
                         "(as --roofline-drift-machine; default: every pair judged)")
    co.set_defaults(fn=cmd_compare, usage_error=co.error)  # cmd_compare: one run alone is a usage error
    tm = sub.add_parser("tiny-model", help="make the tiny CPU test model")
    tm.add_argument("--dest")
    tm.set_defaults(fn=cmd_tiny_model)
    cb = sub.add_parser("calibrate", help="fit the serving model's constants to measured points")
    cb.add_argument("results", nargs="+",
                    help="results files of the same setup: this tool's results.json, or a peer's as --replay reads "
                         "them (vllm bench serve --save-result files or their folder, GuideLLM's benchmarks JSON, "
                         "AIPerf's profile export), which need --predictions for the setup")
    cb.add_argument("--points", help="which points to fit on, e.g. C=1,C=64 or R=4,R=32 (default: all)")
    cb.add_argument("--fit", help="comma-separated constants to fit (default: the decode-step terms and "
                    "frontend_in_s / flop_efficiency, each where the points identify it; with --joint: "
                    "ServingConstants.FIELDS_FITTABLE)")
    cb.add_argument("--predictions", metavar="FILE.yaml",
                    help="the prediction file of the run (default: the one the results name, looked for from here, "
                         "in predictions/, and from the results file's folder and each folder above it)")
    cb.add_argument("--by-metric", action="store_true",
                    help="the default: fit each constant on the metric that measures it: the decode-step terms on "
                         "TPOT (throughput where no TPOT was measured), frontend_in_s / flop_efficiency on TTFT "
                         "(never one metric's error into another's term)")
    cb.add_argument("--joint", action="store_true",
                    help="one fit of every constant on all metrics at once (weighted log-errors; a TTFT residual "
                         "can then move a bandwidth term)")
    cb.add_argument("--notes", help="a note stored in the calibration file")
    cb.add_argument("-o", "--output", help="write the calibration file (YAML) here")
    cb.set_defaults(fn=cmd_calibrate)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``roofline ARGV``: the exit status, 2 with one line on stderr for a usage or input error."""
    p = make_parser()
    args = p.parse_args(argv)
    if args.cmd == "predict" and args.simulate is None and not (args.hardware and args.model):
        args.usage_error("the following arguments are required: --hardware, --model (or --simulate [FILE.yaml])")
    try:
        return args.fn(args)
    except BrokenPipeError:  # `roofline quantities | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RooflineError, SetupError, ValueError, KeyError) as exc:
        print(f"roofline: {redact.printable(redact.redact_text(str(exc)))}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing input, an unwritable or missing output folder: the path and the reason
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"roofline: {redact.printable(redact.redact_text(f'{where}{exc.strerror or exc}'))}", file=sys.stderr)
        return 2
