"""Speed and default-constants accuracy of the step-level serving model (pytest_roofline.model.serving).

    .venv/bin/python benchmarks/serving_speed.py            # timings + the Day 3 comparison
    .venv/bin/python benchmarks/serving_speed.py --repeat 5 # best of 5 timings

Prints:
1. the time to simulate the Day 3 notebook's 8-point sweep (predictions/day3.yaml: A100-SXM4-80GB, Qwen3-8B,
   vLLM 0.26.0, 1k in / 1k out, 10 x C requests per point, C = 1..128) -- target < 2 s on one core;
2. the time of a 64-point open-loop request-rate sweep of the same setup (0.1 .. 12 req/s, log-spaced, Poisson,
   max(10, 30 x rate) requests per point as measure/plan.py) -- target < 10 s;
3. the same 8-point sweep simulated step by step (the slow reference path), for the bulk-advance speed-up;
4. the default-constants prediction beside the notebook's recorded measurements
   (predictions/recorded/day3-2026-07-31.results.json) per concurrency, and the mean absolute error over
   C = 1..128 per metric (issue 9's target: < 25% on aggregate throughput with default constants).  A second
   table feeds the recorded prefix-cache hit rate of each point into the workload (the notebook's own audit says
   C = 2..32 ran with ~58% of prompt tokens served from the cache): a workload input, not a fitted constant.

Timings are process CPU seconds (one process, one thread), best of --repeat; wall time on a loaded, shared
machine is longer by the load factor.
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

from pytest_roofline.format.spec import load_spec  # noqa: E402
from pytest_roofline.model import serving as sv  # noqa: E402
from pytest_roofline.model.setup import build_setup  # noqa: E402

DAY3 = ROOT / "predictions" / "day3.yaml"
DAY3_RESULTS = ROOT / "predictions" / "recorded" / "day3-2026-07-31.results.json"


def _setup(path: Path):
    spec = load_spec(str(path))
    return spec, build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                             model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                             workload=spec.workload)


def _best(fn, repeat: int) -> tuple[float, object]:
    """Best of ``repeat`` runs, in process CPU seconds (a shared machine's load inflates wall time, not this)."""
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats (best of N)")
    args = ap.parse_args(argv)

    spec, setup = _setup(DAY3)
    engine = sv.EngineConfig.from_setup(setup)
    constants = sv.default_constants(setup)
    concs = list(spec.sweep.concurrency)
    closed = [sv.workload_for_point(setup, concurrency=c, num_requests=spec.sweep.num_requests(c)) for c in concs]

    t_sweep, preds = _best(lambda: sv.simulate_sweep(setup, closed, engine=engine, constants=constants), args.repeat)
    steps = sum(p.steps for p in preds)  # type: ignore[union-attr]
    print(f"day3 closed sweep, {len(concs)} points (C={concs[0]}..{concs[-1]}, 10 x C requests, "
          f"{steps:,} engine steps): {t_sweep:.3f} s CPU  (target < 2 s)")

    rates = [0.1 * (120.0 ** (i / 63)) for i in range(64)]
    opened = [sv.workload_for_point(setup, rate_req_per_s=r) for r in rates]
    t_rate, rpreds = _best(lambda: sv.simulate_sweep(setup, opened, engine=engine, constants=constants), 1)
    rsteps = sum(p.steps for p in rpreds)  # type: ignore[union-attr]
    nreq = sum(w.num_requests for w in opened)
    print(f"day3 open-loop rate sweep, 64 points ({rates[0]:.2f}..{rates[-1]:.1f} req/s, {nreq:,} requests, "
          f"{rsteps:,} engine steps): {t_rate:.3f} s CPU  (target < 10 s)")

    t0 = time.process_time()
    slow = [sv.simulate(setup, w, engine=engine, constants=constants, _bulk=False) for w in closed]
    t_slow = time.process_time() - t0
    same = all(a.to_dict() | {"time_shares": None} == b.to_dict() | {"time_shares": None}
               for a, b in zip(preds, slow, strict=True))  # type: ignore[arg-type]
    print(f"same sweep step by step (reference path): {t_slow:.3f} s -> bulk speed-up {t_slow / t_sweep:.1f}x; "
          f"identical metrics: {same}")

    doc = json.loads(DAY3_RESULTS.read_text())
    meas = {pt["concurrency"]: pt for pt in doc["points"] if pt.get("id", "").startswith("closed-c")}
    metrics = [("output_throughput_tok_per_s", "output_throughput_tok_s", None, "agg tok/s"),
               ("tpot_p50_ms", "tpot_ms", "p50", "TPOT p50"),
               ("ttft_p50_ms", "ttft_ms", "p50", "TTFT p50"),
               ("ttft_p99_ms", "ttft_ms", "p99", "TTFT p99")]

    def table(label: str, predictions: list) -> None:
        print(f"\n{label}")
        print(f"{'C':>4} " + " ".join(f"{m[3]:>24}" for m in metrics) + "   dominant term")
        errs: dict[str, list[float]] = {m[0]: [] for m in metrics}
        for c, p in zip(concs, predictions, strict=True):
            client = meas[c]["client"]
            cells = []
            for name, key, stat, _ in metrics:
                v = client.get(key)
                m = v.get(stat) if isinstance(v, dict) else v
                pv = getattr(p, name)
                if m:
                    e = pv / m - 1.0
                    errs[name].append(abs(e))
                    cells.append(f"{pv:,.1f} vs {m:,.1f} ({e:+.0%})".rjust(24))
                else:
                    cells.append(f"{pv:,.1f} vs —".rjust(24))
            top = max(p.time_shares, key=p.time_shares.get)
            print(f"{c:>4} " + " ".join(cells) + f"   {top} {p.time_shares[top]:.0%}")
        print("mean |error| over C=1..128: " + ", ".join(
            f"{m[3]} {sum(errs[m[0]]) / len(errs[m[0]]):.1%}" for m in metrics if errs[m[0]]))

    table("Day 3, default constants, clean prompts (predicted vs measured, error):", preds)
    hits = []
    for c in concs:
        h = ((meas[c].get("server") or {}).get("prefix_cache_hit_rate")) or 0.0
        hits.append(min(float(h), 0.95))
    with_hits = [sv.simulate(setup, sv.workload_for_point(setup, concurrency=c, num_requests=spec.sweep.num_requests(c),
                                                          prefix_hit_rate=h), engine=engine, constants=constants)
                 for c, h in zip(concs, hits, strict=True)]
    table("Day 3, default constants, with each point's recorded prefix-cache hit rate as a workload input "
          f"({', '.join(f'C={c}: {h:.0%}' for c, h in zip(concs, hits, strict=True))}):", with_hits)
    print("\nThe C=1 TTFT (23 ms measured) is below the prefill's compute floor: the notebook attributes it to "
          "prefix-cache hits its audit did not cover; C=128 is the notebook's cache-clean anchor.")
    print("default constants: " + ", ".join(f"{k}={v:g}" for k, v in constants.to_dict().items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
