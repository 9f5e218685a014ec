"""What two-point calibration identifies, source by source, and how it does on the points it was not fitted on.

    .venv/bin/python benchmarks/calibration_holdout.py [--sources lambda,gpustack-h100-qwen3,...] [--fit NAMES]

For each source with enough points of one setup, two points are fitted and the others held out:

* ``lambda`` (LambdaLabsML/vllm-benchmark, vLLM 0.5.4 V0, Llama-3-8B, A100 and H100 SXM): per GPU, the TP1 runs
  (all N requests at t = 0, N = 10 and 160) fitted; the TP2 and TP4 runs held out (benchmarks/data/corpus/).
* ``gpustack-h100-qwen3`` (vLLM 0.11, Qwen3-8B on one H100, C = 1-8) and ``rtx4090-mistral`` (Mistral-7B on one
  RTX 4090, C = 4-48, throughput and TTFT only): the lowest and second-highest concurrency fitted, the rest held
  out (benchmarks/data/corpus/v1-public-runs.json).
* ``gpustack-qwen3-bursts`` (vLLM 0.11, Qwen3-14B/32B on one H100 SXM or A100 SXM 80GB, 100-1,000 prompts of
  32,000 / 4,000 / 2,000 / 128 tokens sent at once), per GPU and model: the 2,000- and 32,000-token bursts fitted
  (4,000 where the model cannot hold a 32K prompt), the others held out.
* the project's recordings (``day3``, the CPU-engine runs): the lowest and second-highest load fitted, as
  ``benchmarks/model_accuracy.py`` does.

Three predictions are scored on the held-out points (mean |predicted - measured| / measured, count): (b) the
defaults; ``joint``, one fit of every constant of ``ServingConstants.FIELDS_FITTABLE`` on every metric (weighted
log-errors), falling back to the identifiable subset the refusal names (``roofline calibrate --joint``); and
``by-metric``, ``roofline calibrate``'s default (``calibration.fit_by_metric``): the decode-step terms on TPOT
(throughput where no TPOT was measured), the frontend/prefill terms on TTFT, only what the points identify.
For each fit it prints the fitted values with 1 sigma, the constants the points did not identify, the notes naming
the point that would, and the by-metric fit's residual at every held-out point.

The a100pcie-tp and azure-a100-tp8 sources are not calibrated here: each a100pcie-tp run has its own workload and
prefix-cache repetitions, and azure-a100-tp8 runs at request rates with the files' per-request lengths; neither
has two points of one workload to fit on.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import model_accuracy as ma  # noqa: E402

from pytest_roofline.errors import CalibrationError  # noqa: E402
from pytest_roofline.measure.results import load_results  # noqa: E402
from pytest_roofline.measure.results.calibration_points import measured_points  # noqa: E402
from pytest_roofline.model import calibration as cal  # noqa: E402
from pytest_roofline.model import serving  # noqa: E402
from pytest_roofline.quantities.analysis import Thresholds  # noqa: E402

SHORT = {"output_throughput_tok_per_s": "throughput", "tpot_p50_ms": "TPOT p50", "ttft_p50_ms": "TTFT p50"}


def joint_fit(train, base, predict):
    """``roofline calibrate --joint``: every fittable constant on every metric; the identifiable subset if refused."""
    try:
        return cal.fit(train, base, predict=predict), ""
    except CalibrationError as exc:
        subset = tuple(getattr(exc, "identifiable", ()) or ())
        if not subset:
            return None, f"refused: {exc}"
        return cal.fit(train, base, predict=predict, fields=subset), f"identifiable subset {', '.join(subset)}"


def mape(fits, metric):
    errs = [abs(math.expm1(p.residuals[metric])) for p in fits if metric in p.residuals]
    return (f"{100 * sum(errs) / len(errs):.1f}% ({len(errs)})" if errs else "n/a"), errs


#: ``--fit``: the constants the by-metric fit may fit (default: every one it can identify), as ``roofline calibrate
#: --fit`` takes them
FIT: tuple[str, ...] | None = None


def report(name: str, what: str, train, held, base, predict, *, screen=None) -> dict:
    t0 = time.perf_counter()
    notes_screen: list[str] = []
    if screen is not None:
        train, notes_screen = cal.screen_points(train, screen, contamination=Thresholds().contamination)
    joint, how = joint_fit(train, base, predict)
    mf = cal.fit_by_metric(train, base, predict=predict, fields=FIT)
    bym = mf.as_fit_result()
    rb = cal.residuals_at(base, held, predict=predict)
    rj = cal.residuals_at(joint.constants, held, predict=predict) if joint else ()
    rm = cal.residuals_at(bym.constants, held, predict=predict)
    print(f"\n### {name}: {what}\n")
    print(f"fitted on {', '.join(p.label for p in train)}; held out {', '.join(p.label for p in held)} "
          f"({time.perf_counter() - t0:.1f} s)\n")
    for n in notes_screen:
        print(f"- screened: {n}")

    def values(res):
        return ", ".join(f"{n} {cal._fmt(n, res.values[n])} ± {100 * res.log_sd[n]:.0f}%" for n in res.fitted)

    print(f"- joint: {values(joint) if joint else 'nothing'}" + (f" ({how})" if how else ""))
    left = [n for n in cal.STEP_FIELDS + cal.TTFT_FIELDS if n not in mf.values]
    print(f"- by-metric (step terms on {', '.join(SHORT[m] for m in mf.metrics.get('step', ())) or 'nothing'}, "
          f"{mf.rounds} round(s)): {values(bym)}; not identified, kept at the defaults: {', '.join(left) or 'none'}")
    for n in dict.fromkeys(mf.notes):
        print(f"  - {n}")
    print("\n| metric | (b) defaults | joint | by-metric |")
    print("|---|---|---|---|")
    out: dict[str, dict[str, list[float]]] = {"b": {}, "joint": {}, "by-metric": {}}
    for m in cal.METRICS:
        b, out["b"][m] = mape(rb, m)
        j, out["joint"][m] = mape(rj, m)
        c, out["by-metric"][m] = mape(rm, m)
        print(f"| {SHORT[m]} | {b} | {j} | {c} |")
    print("\nby-metric, held-out residuals (predicted / measured - 1):\n")
    for p in rm:
        print(f"- {p.label}: " + "; ".join(f"{SHORT[m]} {100 * math.expm1(p.residuals[m]):+.1f}%"
                                          for m in cal.METRICS if m in p.residuals))
    return out


def lambda_sources(want):
    meta = json.loads((ma.CORPUS / "lambda-vllm-0.5.4-llama3-8b.json").read_text())
    by_id = {ma._lambda_point(r).id: r for r in meta["runs"]}

    def predict(c, pt):
        r = by_id[pt.id]
        p = serving.simulate(ma._lambda_setup(r, meta), ma._lambda_workload(r["num_prompts"], meta), constants=c)
        return {m: float(getattr(p, m)) for m in cal.METRICS}

    for gpu in sorted({r["gpu"] for r in meta["runs"]}):
        name = f"lambda {gpu}"
        if want and "lambda" not in want and name not in want:
            continue
        runs = [r for r in meta["runs"] if r["gpu"] == gpu]
        train = [ma._lambda_point(r) for r in runs if r["tp"] == 1]
        # a held-out point is labelled by its id (GPU, TP, N): its load alone does not tell TP2 from TP4
        held = [cal.MeasuredPoint(**{**ma._lambda_point(r).to_dict(), "concurrency": None})
                for r in runs if r["tp"] != 1]
        base = serving.default_constants(ma._lambda_setup(runs[0], meta))
        yield name, "vLLM 0.5.4 V0, Llama-3-8B, TP1 N = 10/160 fitted, TP2/TP4 held out", \
            train, held, base, predict, None


def v1_sources(want):
    doc = json.loads((ma.CORPUS / ma.V1_CORPUS).read_text())
    for src in doc["sources"]:
        if src["source"] not in ("gpustack-h100-qwen3", "rtx4090-mistral") or (want and src["source"] not in want):
            continue
        runs = sorted(src["runs"], key=lambda r: r["concurrency"])
        setup = ma._v1_setup(src, runs[0]).with_changes(input_len=runs[0]["input_len"],
                                                        output_len=runs[0]["output_len"])
        pts = [cal.MeasuredPoint(id=f"c{r['concurrency']}", concurrency=r["concurrency"],
                                 num_requests=int(r["num_prompts"]), input_len=r["input_len"],
                                 output_len=r["output_len"], **{m: r["measured"].get(m) for m in cal.METRICS})
               for r in runs]
        train = [pts[0], pts[-2]]
        held = [p for p in pts if p not in train]
        yield (src["source"], f"{src['gpu']}, {src['model']}, vLLM {src['vllm']}", train, held,
               serving.default_constants(setup), cal.serving_predictor(setup, seed=0), setup)


def burst_sources(want):
    """GPUStack's prefill-heavy bursts (``gpustack-qwen3-bursts``), per GPU and model: the 2,000- and 32,000-token
    prompts fitted (two prompt lengths, so TTFT identifies ``flop_efficiency``; the 4,000-token run where the model
    cannot hold a 32K prompt), the other prompt lengths held out. Outputs at their published mean length."""
    doc = json.loads((ma.CORPUS / ma.V1_CORPUS).read_text())
    src = next((x for x in doc["sources"] if x["source"] == "gpustack-qwen3-bursts"), None)
    if src is None or (want and "gpustack-qwen3-bursts" not in want):
        return
    for gpu, model in sorted({(r["gpu"], r["model"]) for r in src["runs"]}):
        runs = [r for r in src["runs"] if (r["gpu"], r["model"]) == (gpu, model)]
        setup = ma._v1_setup(src, runs[0])
        pts = []
        for r in runs:
            out = round(r.get("output_stop", {}).get("mean", r["output_len"]))
            setup_r = setup.with_changes(input_len=r["input_len"], output_len=out)
            if serving.EngineConfig.from_setup(setup_r).requests_held(r["input_len"] + out) < 1:
                continue  # the model's pool cannot hold one request (model_accuracy.py prints it)
            pts.append(cal.MeasuredPoint(id=f"in{r['input_len']}", concurrency=r["concurrency"],
                                         num_requests=int(r["num_prompts"]), input_len=r["input_len"],
                                         output_len=out, **{m: r["measured"].get(m) for m in cal.METRICS}))
        by_len = {p.input_len: p for p in pts}
        fit_lens = (1996, 32000) if 32000 in by_len else (1996, 3996)
        train = [by_len[n] for n in fit_lens]
        held = [p for p in pts if p not in train]
        base_setup = setup.with_changes(input_len=train[0].input_len, output_len=train[0].output_len)
        yield (f"gpustack-qwen3-bursts {gpu} {model}", f"vLLM {src['vllm']}, bursts of 100-1,000, prompts "
               f"{' and '.join(str(n) for n in fit_lens)} fitted", train, held,
               serving.default_constants(base_setup), cal.serving_predictor(base_setup, seed=0), base_setup)


def recorded_sources(want):
    for name, pfile, rfile, what in ma.RUNS:
        if want and name not in want:
            continue
        if not (ma.REC / rfile).exists():
            continue
        setup, seed = ma.setup_of(pfile)
        pts = measured_points(load_results(ma.REC / rfile))
        order = sorted(pts, key=lambda p: (p.rate_req_per_s if p.rate_req_per_s is not None else p.concurrency or 0))
        train = [order[0], order[-2]]
        held = [p for p in order if p not in train]
        yield (name, what, train, held, serving.default_constants(setup), cal.serving_predictor(setup, seed=seed),
               setup)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sources", help="comma-separated source names (default: all)")
    ap.add_argument("--fit", help="comma-separated constants the by-metric fit may fit, as roofline calibrate "
                                   "--fit (default: every one the points identify)")
    args = ap.parse_args(argv)
    global FIT
    FIT = tuple(args.fit.split(",")) if args.fit else None
    want = set(args.sources.split(",")) if args.sources else None
    print("# Two-point calibration, held out (`benchmarks/calibration_holdout.py`)"
          + (f"; by-metric limited to --fit {args.fit}" if args.fit else ""))
    summary = {}
    for gen in (lambda_sources, v1_sources, burst_sources, recorded_sources):
        for name, what, train, held, base, predict, setup in gen(want):
            summary[name] = report(name, what, train, held, base, predict, screen=setup)
    lam = [v for k, v in summary.items() if k.startswith("lambda")]
    if lam:
        print("\n## lambda, both GPUs together (TP2/TP4 held out)\n")
        print("| metric | (b) defaults | joint | by-metric |")
        print("|---|---|---|---|")
        for m in cal.METRICS:
            cells = []
            for key in ("b", "joint", "by-metric"):
                errs = [e for v in lam for e in v[key][m]]
                cells.append(f"{100 * sum(errs) / len(errs):.1f}% ({len(errs)})" if errs else "n/a")
            print(f"| {SHORT[m]} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
