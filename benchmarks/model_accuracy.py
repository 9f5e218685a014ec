"""How right is each model, measured on recorded runs?

    .venv/bin/python benchmarks/model_accuracy.py [--runs day3,cpu-tiny,...] [--no-write] [--detail]

For every recorded run (the Day 3 notebook's A100 table and every CPU-engine recording under
``predictions/recorded/``) and every metric — aggregate output throughput, TPOT p50, TTFT p50, TTFT p99,
ITL p99 — this prints the mean absolute percentage error (MAPE, |predicted − measured| ÷ measured, averaged over
the run's points) of three predictions:

(a) ``roofline``  the decode roofline, the "model" column the project shows today for a measured throughput:
    B ÷ t_step with t_step = max(t_mem, t_comp) at B = concurrency (quantities/registry.py ``output_throughput``);
    TPOT and ITL = t_step; TTFT = the prefill's compute floor (``prefill_floor``). Closed-loop points only (the
    roofline has no arrival rate), and only where the chip has roofline figures (not the ``cpu`` pseudo-device).
(b) ``default``   the serving model (model/serving.py) with its documented default constants, every point.
(c) ``calib``     the serving model calibrated (model/calibration.py) on two points — the lowest load and the
    second-highest, so the highest is an extrapolation — and scored on the held-out points only. The fit
    first tries every field of ``ServingConstants.FIELDS_FITTABLE``; when the two points cannot identify them
    all it is refused, and the benchmark then fits the identifiable subset the refusal names (what a user gets
    from ``roofline calibrate --fit <that subset>``). The fitted fields are printed.

Every point is simulated on the workload the load generator sent: its lengths and request count, and for an
open-loop point the same arrival times (the prediction file's ``workload.seed`` and the point's id seed
``model.workload.arrival_offsets_s``, the load generator's schedule). Where a recording has the server's
per-point prefix-cache hit rate (the notebook's post-hoc audit: 50-66% for C = 2..32), (b) and (c) are also
scored with that hit rate as a workload input (``Workload.prefix_hit_rate``: a measured property of the
workload, like the notebook's own audit), in the columns "(b) + hits" and "(c) + hits". The calibration itself
always simulates the training points with their recorded hit rate and leaves a contaminated point's TTFT out
(model/calibration.py, "Prefix-cache hits").

Targets (issue 9): (b) within 25% MAPE on throughput over the notebook's C = 1..128; (c) within 10% on
throughput and TPOT p50 and within 30% on TTFT p50 at the held-out points of every run. The CPU engine's costs
are mostly per-step overhead, not bandwidth (the tiny model's weights fit in cache), so (b) means little there:
its CPU defaults are order-of-magnitude guesses; (c) is what the CPU runs test. The printed output is also
written to ``benchmarks/RESULTS-model-accuracy.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import math
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_roofline.errors import CalibrationError, SetupError  # noqa: E402
from pytest_roofline.format.spec import load_spec  # noqa: E402
from pytest_roofline.measure.results import load_results  # noqa: E402
from pytest_roofline.measure.results.calibration_points import measured_points  # noqa: E402
from pytest_roofline.model import analytical as an  # noqa: E402
from pytest_roofline.model import calibration as cal  # noqa: E402
from pytest_roofline.model import serving  # noqa: E402
from pytest_roofline.model.setup import build_setup  # noqa: E402
from pytest_roofline.quantities.analysis import Thresholds  # noqa: E402

REC = ROOT / "predictions" / "recorded"
#: (name, prediction file, results file, what it exercises)
RUNS = [
    ("day3", "predictions/day3.yaml", "day3-2026-07-31.results.json",
     "A100-SXM4-80GB, Qwen3-8B, vLLM 0.26, 1k in / 1k out, C = 1..128 (the notebook's table, transcribed)"),
    ("cpu-tiny", "predictions/cpu-tiny.yaml", "cpu-tiny-2026-12-01.results.json",
     "CPU vLLM 0.32, tiny model, 128 in / 64 out, max_num_seqs 8, C = 1..32"),
    ("cpu-prefill-heavy", "predictions/cpu-prefill-heavy.yaml", "cpu-prefill-heavy-2026-12-01.results.json",
     "896 in / 8 out, token budget 1,024, C = 1..16"),
    ("cpu-kv-pressure", "predictions/cpu-kv-pressure.yaml", "cpu-kv-pressure-2026-12-01.results.json",
     "24-block KV pool, 128 in / 512 out, C = 1..16 (vLLM preempts from C = 8)"),
    ("cpu-open-loop", "predictions/cpu-open-loop.yaml", "cpu-open-loop-2026-12-01.results.json",
     "Poisson arrivals 2..24 req/s, 128 in / 64 out, max_num_seqs 8"),
]
METRICS = [("output_throughput_tok_per_s", "throughput"), ("tpot_p50_ms", "TPOT p50"), ("ttft_p50_ms", "TTFT p50"),
           ("ttft_p99_ms", "TTFT p99"), ("itl_p99_ms", "ITL p99")]
TARGETS = {"b": {"output_throughput_tok_per_s": 0.25},
           "c": {"output_throughput_tok_per_s": 0.10, "tpot_p50_ms": 0.10, "ttft_p50_ms": 0.30}}


def setup_of(path: str):
    """The setup of a prediction file and the load generator's seed (its ``workload.seed``, default 0)."""
    spec = load_spec(ROOT / path)
    setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides, model_ref=spec.model,
                        model_overrides=spec.model_overrides, engine=spec.engine, workload=spec.workload)
    return setup, int((spec.workload or {}).get("seed", 0))


def roofline_prediction(setup, pt) -> dict[str, float] | None:
    """(a): what the decode roofline says at this point, or None where it says nothing."""
    if pt.concurrency is None or pt.rate_req_per_s is not None:
        return None
    try:
        s = setup.with_changes(input_len=pt.input_len or setup.input_len, output_len=pt.output_len or setup.output_len)
        step = an.decode_step(pt.concurrency, weight_bytes=s.weight_bytes, flop_per_token=s.flop_per_token,
                              kv_bytes_per_seq=s.kv_bytes_per_seq, hbm_bytes_per_s=s.hbm_bytes_per_s,
                              peak_flop_per_s=s.peak_flop_per_s)
        floor_ms = 1e3 * an.prefill_floor_s(s.input_len, s.flop_per_token, s.peak_flop_per_s)
    except SetupError:
        return None
    t_ms = step.t_step_s * 1e3
    return {"output_throughput_tok_per_s": step.throughput_tok_per_s, "tpot_p50_ms": t_ms, "itl_p99_ms": t_ms,
            "ttft_p50_ms": floor_ms, "ttft_p99_ms": floor_ms}


def has_hits(pt) -> bool:
    return bool(pt.prefix_cache_hit_rate and pt.prefix_cache_hit_rate > 0)


def serving_prediction(setup, pt, constants, *, seed: int = 0, hits: bool = False) -> dict[str, float] | None:
    """(b)/(c): the serving model on the point's own workload (with its recorded hit rate when ``hits``)."""
    s = setup.with_changes(input_len=pt.input_len or setup.input_len, output_len=pt.output_len or setup.output_len)
    if hits and not has_hits(pt):
        return None
    hit = min(float(pt.prefix_cache_hit_rate), 0.999) if hits else 0.0
    if pt.rate_req_per_s is not None:
        wl = serving.workload_for_point(s, rate_req_per_s=pt.rate_req_per_s, burstiness=pt.burstiness,
                                        num_requests=pt.num_requests, seed=seed, point_id=pt.id,
                                        prefix_hit_rate=hit)
    else:
        wl = serving.workload_for_point(s, concurrency=pt.concurrency, num_requests=pt.num_requests, seed=seed,
                                        point_id=pt.id, prefix_hit_rate=hit)
    p = serving.simulate(s, wl, constants=constants)
    return {m: float(getattr(p, m)) for m, _ in METRICS}


def ape(pred: float | None, meas: float | None) -> float | None:
    if pred is None or meas is None or not meas > 0 or not math.isfinite(pred):
        return None
    return abs(pred - meas) / meas


def mape(rows: list[tuple[dict | None, object]], metric: str) -> tuple[float | None, int]:
    errs = [e for pred, pt in rows if pred is not None for e in [ape(pred.get(metric), getattr(pt, metric))]
            if e is not None]
    return (sum(errs) / len(errs) if errs else None), len(errs)


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def calibrate(setup, pts, seed: int = 0):
    """Fit on the lowest load and the second-highest; the rest are held out."""
    order = sorted(pts, key=lambda p: (p.rate_req_per_s if p.rate_req_per_s is not None else p.concurrency or 0))
    train = [order[0], order[-2]] if len(order) >= 3 else order[:1]
    held = [p for p in order if p not in train]
    screened, notes = cal.screen_points(train, setup, contamination=Thresholds().contamination)
    base = serving.default_constants(setup)
    predict = cal.serving_predictor(setup, seed=seed)
    try:
        res = cal.fit(screened, base, predict=predict)
        how = "all of FIELDS_FITTABLE"
    except CalibrationError as exc:
        subset = getattr(exc, "identifiable", ())
        if not subset:
            raise
        notes.append(f"refused with all fields ({str(exc).split(': ', 1)[0]}); fitted the identifiable subset")
        notes.extend(getattr(exc, "held_back", ()))
        res = cal.fit(screened, base, predict=predict, fields=subset)
        how = "the identifiable subset"
    return res, train, held, notes, how


def run_one(name: str, pfile: str, rfile: str, what: str, detail: bool) -> dict:
    t0 = time.perf_counter()
    setup, seed = setup_of(pfile)
    doc = load_results(REC / rfile)
    pts = measured_points(doc)
    defaults = serving.default_constants(setup)
    hits = any(has_hits(p) for p in pts) and serving.EngineConfig.from_setup(setup).enable_prefix_caching
    rows_a = [(roofline_prediction(setup, p), p) for p in pts]
    rows_b = [(serving_prediction(setup, p, defaults, seed=seed), p) for p in pts]
    res, train, held, notes, how = calibrate(setup, pts, seed)
    rows_c = [(serving_prediction(setup, p, res.constants, seed=seed), p) for p in held]
    rows_bh = [(serving_prediction(setup, p, defaults, seed=seed, hits=True), p) for p in pts] if hits else []
    rows_ch = ([(serving_prediction(setup, p, res.constants, seed=seed, hits=True), p) for p in held]
               if hits else [])
    elapsed = time.perf_counter() - t0
    print(f"\n### {name}: {what}\n")
    print(f"results `predictions/recorded/{rfile}`; points {', '.join(p.label for p in pts)}; "
          f"calibrated on {', '.join(p.label for p in train)} ({how}: {', '.join(res.fitted)}), "
          f"held out {', '.join(p.label for p in held)}; {elapsed:.1f} s")
    notes_run = ((doc.get("setup") or {}).get("engine") or {}).get("notes")
    if notes_run:
        print(f"\nrecording notes: {notes_run}")
    print("\nfitted: " + ", ".join(f"{n} = {cal._fmt(n, res.values[n])} ± {cal._fmt(n, res.uncertainty[n])}"
                                    for n in res.fitted))
    for n in notes + list(res.warnings):
        print(f"- {n}")
    if hits:
        rates = ", ".join(f"{p.label} {100 * p.prefix_cache_hit_rate:.1f}%" for p in pts if has_hits(p))
        print(f"\nThis recording has per-point prefix-cache hit rates ({rates}): the \"+ hits\" columns score (b) "
              "and (c) with them as a workload input (`Workload.prefix_hit_rate`), over the points that have one.")
        print("\n| metric | (a) roofline | (b) default | (b) + hits | (c) calibrated, held out | (c) + hits |")
        print("|---|---|---|---|---|---|")
    else:
        print("\n| metric | (a) roofline | (b) default | (c) calibrated, held out |")
        print("|---|---|---|---|")
    out = {"name": name, "mape": {}}
    for m, label in METRICS:
        a, na = mape(rows_a, m)
        b, nb = mape(rows_b, m)
        c, nc = mape(rows_c, m)
        out["mape"][m] = {"a": a, "b": b, "c": c}
        if hits:
            bh, nbh = mape(rows_bh, m)
            ch, nch = mape(rows_ch, m)
            out["mape"][m].update({"b+hits": bh, "c+hits": ch})
            print(f"| {label} | {pct(a)} ({na}) | {pct(b)} ({nb}) | {pct(bh)} ({nbh}) | {pct(c)} ({nc}) | "
                  f"{pct(ch)} ({nch}) |")
        else:
            print(f"| {label} | {pct(a)} ({na}) | {pct(b)} ({nb}) | {pct(c)} ({nc}) |")
    if detail:
        extra = " / (b) + hits / (c) + hits" if hits else ""
        print(f"\nper point (measured / (a) / (b) / (c){extra}):\n")
        print("| point | metric | measured | (a) | (b) | (c) |" + (" (b) + hits | (c) + hits |" if hits else ""))
        print("|---|---|---|---|---|---|" + ("---|---|" if hits else ""))
        cmap = {p.id: pred for pred, p in rows_c}
        bhmap = {p.id: pred for pred, p in rows_bh}
        chmap = {p.id: pred for pred, p in rows_ch}

        def cell(d, m, meas):
            if d is None or d.get(m) is None:
                return "—"
            return f"{d[m]:,.4g} ({100 * (d[m] / meas - 1):+.0f}%)"

        for (pa, p), (pb, _) in zip(rows_a, rows_b, strict=True):
            pc = cmap.get(p.id)
            for m, label in METRICS:
                meas = getattr(p, m)
                if meas is None:
                    continue
                more = f" {cell(bhmap.get(p.id), m, meas)} | {cell(chmap.get(p.id), m, meas)} |" if hits else ""
                print(f"| {p.label}{' (fit)' if p in train else ''} | {label} | {meas:,.4g} | "
                      f"{cell(pa, m, meas)} | {cell(pb, m, meas)} | {cell(pc, m, meas)} |" + more)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", help="comma-separated run names (default: all recorded)")
    ap.add_argument("--detail", action="store_true", help="also print every point's values")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/RESULTS-model-accuracy.md")
    args = ap.parse_args(argv)
    want = set(args.runs.split(",")) if args.runs else None
    buf = io.StringIO()

    class Tee(io.TextIOBase):
        def write(self, s):
            sys.__stdout__.write(s)
            buf.write(s)
            return len(s)

    results = []
    with redirect_stdout(Tee()):
        print("# Model accuracy on recorded runs (`benchmarks/model_accuracy.py`)\n")
        print(f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC. MAPE = mean |predicted − measured| ÷ "
              "measured over the points (count in brackets). (a) decode roofline, (b) serving model with default "
              "constants, (c) serving model calibrated on two points (lowest load and second-highest), scored on "
              "the held-out points. n/a: that model says nothing there (the roofline has no arrival rate and no "
              "figures for the cpu pseudo-device; the notebook's table has no ITL).")
        for name, pfile, rfile, what in RUNS:
            if want and name not in want:
                continue
            if not (REC / rfile).exists():
                print(f"\n### {name}: recording {rfile} missing, skipped")
                continue
            results.append(run_one(name, pfile, rfile, what, args.detail))
        print("\n## Targets\n")
        print("| run | target | value | verdict |")
        print("|---|---|---|---|")
        for r in results:
            for model, tgt in TARGETS.items():
                if model == "b" and r["name"] != "day3":
                    continue
                for m, limit in tgt.items():
                    v = r["mape"][m][model]
                    verdict = "n/a" if v is None else ("met" if v <= limit else "MISSED")
                    label = dict(METRICS)[m]
                    print(f"| {r['name']} | ({model}) {label} ≤ {100 * limit:.0f}% | {pct(v)} | {verdict} |")
        print("\n## Reading these figures\n")
        print("- The CPU recordings were made on the project's 2-core machine while other engineers' tests, "
              "engines and benchmarks ran on the same cores (each file's `setup.engine.notes` gives the load "
              "average): the engine's capacity moved during a run. A calibration assumes a stationary engine, so "
              "the p99 figures (TTFT p99, ITL p99: 100+ ms stalls when the engine loses its core) and the "
              "open-loop run, whose queue grows whenever capacity dips below the offered rate, measure the "
              "machine as much as the engine.")
        print("- The notebook's C=1 TTFT p50 (23 ms) is below the 1,024-token prefill's compute floor at 100% of "
              "the A100's peak (53.8 ms), and its C=64 point ran at ~30% prefix-cache hits (45% draining to 16%): "
              "the fit leaves both TTFTs out (`calibration.screen_points`), so no training point measures a "
              "prefill's own cost and `calibration.fit` holds flop_efficiency at its published default. Before "
              "that rule the fit read flop_efficiency off C=64 (0.40 from its TTFT, 0.43 from its throughput), "
              "charging per-sequence costs to the prefill and stretching every prompt at low load: (c) TTFT p50 "
              "was 114.7%. It now fits hbm_efficiency and per_seq_overhead_s (~40 us per running sequence, a "
              "cost that covers, unseparated, sampling with top-k/top-p over a 151,936-token vocabulary, "
              "scheduling and output processing).")
        print("- What is left of the day3 TTFT miss is the closed loop at C=64-128: measured TTFT p50 519 and "
              "678 ms against ~250-460 ms simulated. The simulator's clients resubmit the instant a request "
              "ends and every prefill of 1,024 tokens fits one 2,048-token step, so its steady state queues at "
              "most a step or two; the real run's p50 is twice that, which no constant of one prefill explains "
              "(C=2..32's measured TTFTs lie between 0.47x and 1.16x what the default flop efficiency predicts "
              "without hits; an efficiency of 0.4 would have doubled them). Not modelled: the API server's own "
              "per-request work (tokenising a 1k prompt, detokenising 64-128 streams) when it shares a busy host "
              "with the engine, and the hit rate's drift during the run.")
        print("- Open-loop points are simulated on the load generator's own arrival times (model/workload.py, "
              "seeded by the file's workload.seed and the point id). Before, the simulator drew its own Poisson "
              "sample: at R=2 the run's 120 arrivals were sent at 2.52 req/s (119 gaps in 47.3 s), the simulated "
              "ones at 1.74, and (b) "
              "missed that point's throughput by 31%; it is now within 1%.")
        print("- Client-side TPOT and ITL on the CPU engine include the API server's own delays: when its process "
              "falls behind the engine (they share the 2 cores), vLLM V1 merges the streamed deltas of a request "
              "(`RequestOutputCollector`, vllm/v1/engine/output_processor.py), so the rest of a short answer "
              "arrives in one burst (0 ms chunk gaps). In cpu-prefill-heavy at C=2 the two clients phase-lock: "
              "each pair's first request waits ~120 ms for the other's prefill after its first token and then "
              "gets its last 6 tokens at once, the second gets all 8 at once — TPOT p50 mixes ~17 ms and ~0 ms "
              "requests, which no step-time model reproduces (per-request chunk times: predictions/recorded/"
              "cpu-prefill-heavy-2026-12-01.closed-c2.requests.jsonl).")
        print("- (a) is n/a on the CPU runs because the `cpu` pseudo-device has no roofline figures: the "
              "project's 'model' column is empty there today.")
    if not args.no_write:
        (ROOT / "benchmarks" / "RESULTS-model-accuracy.md").write_text(buf.getvalue(), encoding="utf-8")
        print("\nwrote benchmarks/RESULTS-model-accuracy.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
