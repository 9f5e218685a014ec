"""Do a point's 95 % intervals hold the next run's value? Repeats of one point on the CPU engine.

Starts vLLM's CPU build serving the project's tiny model (predictions/cpu-tiny.yaml's engine), runs one closed-loop
point K times back to back, and for every repeat computes each client figure's 95 % interval over its steady
window (measure/stats.py: order-statistic intervals for percentiles, batch means for means and throughputs).
Then, for each statistic, it prints:

* ``CI→next``: the fraction of repeats i whose interval contains repeat i+1's estimate. This is NOT the
  interval's nominal 95 %: a confidence interval covers the *true* value 95 % of the time; the next run's
  estimate carries its own sampling error too, so even for a perfect interval of a mean the rate is
  P(|Z1 − Z2| < 1.96 σ) = P(|N(0, 2σ²)| < 1.96 σ) ≈ 83 %, and lower where the engine's state drifts between runs
  (the shared 2-core machine) — which is the run-to-run spread a within-run interval cannot see.
* ``PI→next``: the same with the interval widened by √2 around its estimate, the normal-theory prediction
  interval for a fresh estimate from a run of the same size (nominally ~95 % when runs are exchangeable).
* ``CV det`` / ``CV off``: the run-to-run coefficient of variation of the estimate with steady-state detection
  (sweep.steady_state: detect) and without it (the whole measurement window, the rule before).

Then the same repeats as ``sweep.repeats: 3`` reports them (``stats.combine_repeats``): every 3 consecutive repeats
give a Student-t interval of the mean and a next-run interval (``next_lo``/``next_hi``: where the next 3 repeats'
mean should land); each is checked against the following 3 repeats' mean. Nominal for exchangeable runs: 91 % for
the interval of the mean (P(|T2| < t(0.975, 2)/√2)) and 95 % for the next-run interval.

Last, the throughput interval methods side by side over the same repeats (whole measurement window): the token
chunks as events (the rule before 2026-12-06), completions in 20 time sub-windows (ad61acc, reverted), the shipped
completion interval (``intervals.completion_rate_interval``: batches of whole rounds of C completions, else the
count interval), the count interval alone and the two's wider (the count floor of 8f42715, replaced); for each,
next-run coverage and the median relative half-width.
``--requests 16`` is the small point (C = 4, 16 requests) that failed the live proxy test under ad61acc.

Usage: python benchmarks/interval_coverage.py [--repeats 16] [--concurrency 4] [--requests 64] [--group 3]
Keep it to a few minutes; the figures go into benchmarks/RESULTS-intervals.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_roofline.measure import loadgen, stats  # noqa: E402
from pytest_roofline.measure.engine import Engine, EngineConfig  # noqa: E402
from pytest_roofline.measure.engine import tiny_model as tinymodel  # noqa: E402
from pytest_roofline.measure.stats import intervals as ivs  # noqa: E402

FIGURES = ("ttft_ms.p50", "ttft_ms.p90", "ttft_ms.p99", "ttft_ms.mean", "tpot_ms.p50", "tpot_ms.mean",
           "itl_ms.p50", "e2e_ms.p50", "e2e_ms.mean", "output_throughput_tok_s", "request_throughput_req_s")


def _value(client: dict, key: str, steady: bool) -> float | None:
    v: object = client.get("steady") if steady else client
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return float(v) if isinstance(v, (int, float)) else None


def _cv(x: np.ndarray) -> float:
    """Coefficient of variation over the repeats (sample sd / |mean|)."""
    return float(x.std(ddof=1) / abs(x.mean())) if x.size > 1 and x.mean() else math.nan


def _repeats_coverage(clients: list[dict], group: int) -> None:
    """``sweep.repeats: group`` as the product reports it (``stats.combine_repeats``): for every run of ``group``
    consecutive repeats, does its interval hold the value of the next ``group`` repeats (the next sweep's)?"""
    if group < 2 or len(clients) < 2 * group:
        return
    windows = [stats.combine_repeats(clients[i:i + group]) for i in range(len(clients) - group + 1)]
    # a t-interval of the mean over k exchangeable repeats holds the next k repeats' mean with probability
    # P(|T(k-1)| < t(0.975, k-1) / sqrt(2)): 0.907 for k = 3 (tests/test_intervals.py), the next-run interval 0.95
    print(f"\nsweep.repeats: {group}, as reported (stats.combine_repeats), against the next {group} repeats' value "
          f"({len(windows) - group} overlapping pairs per figure)")
    print(f"{'statistic':<26} {'CI→next':>8} {'next-run→next':>14}")
    tot_ci = tot_pi = tot = 0
    for key in FIGURES:
        ci = pi = n = 0
        for a, b in zip(windows, windows[group:]):
            iv = a["intervals"].get(key)
            nxt = _value(b, key, steady=True) if key not in b["intervals"] else b["intervals"][key]["estimate"]
            if iv is None or nxt is None or iv.get("lo") is None or iv.get("next_lo") is None:
                continue
            n += 1
            ci += iv["lo"] <= nxt <= iv["hi"]
            pi += iv["next_lo"] <= nxt <= iv["next_hi"]
        tot_ci, tot_pi, tot = tot_ci + ci, tot_pi + pi, tot + n
        print(f"{key:<26} {ci / max(n, 1):>8.0%} {pi / max(n, 1):>14.0%}")
    print(f"{'all figures':<26} {tot_ci / max(tot, 1):>8.0%} {tot_pi / max(tot, 1):>14.0%}   "
          f"(nominal for exchangeable runs: {'91%' if group == 3 else 'see the docstring'} and 95%)")


def _throughput_methods(results: list, concurrency: int) -> None:
    """Next-run coverage and width of each throughput interval method over the repeats' whole windows."""
    def parts(res):
        recs = [r for r in res.records if r.in_sample and r.ok and r.end_s is not None]
        span = (res.measure_start_s, max(r.end_s for r in recs))
        chunk_t, chunk_w = [], []
        for r in recs:
            n_out = float(r.completion_tokens or r.output_len)
            for t in r.chunk_times_s:
                chunk_t.append(t)
                chunk_w.append(n_out / len(r.chunk_times_s))
        ends = [r.end_s for r in recs]
        outs = [float(r.completion_tokens or r.output_len) for r in recs]
        return span, chunk_t, chunk_w, ends, outs

    def clip(iv):
        return iv.lo if iv.lo > 0 else 0.0, iv.hi

    methods = {
        "chunks (before)": lambda span, ct, cw, e, o, req: ivs.rate_interval(ct, span, weights=None if req else cw)
        if not req else ivs.rate_interval(e, span),
        "time sub-windows (ad61acc)": lambda span, ct, cw, e, o, req: ivs.rate_interval(
            e, span, weights=None if req else o),
        "completion batches (shipped)": lambda span, ct, cw, e, o, req: ivs.completion_rate_interval(
            e, span, concurrency=concurrency, weights=None if req else o),
        "count interval only": lambda span, ct, cw, e, o, req: ivs.completion_rate_interval(
            e, span, concurrency=None, weights=None if req else o),
    }
    # the wider of the two (the count interval as a floor under the batches' width), a candidate rule
    methods["batches, count floor"] = lambda *a: max(
        (methods["completion batches (shipped)"](*a), methods["count interval only"](*a)), key=lambda iv: iv.hi)
    print(f"\nthroughput interval methods, whole window, {len(results)} repeats at C={concurrency} "
          f"({len(results) - 1} pairs)")
    print(f"{'method':<30} {'figure':<10} {'CI→next':>8} {'median ±':>9} {'lo ≤ 0':>7} {'unbounded':>9}")
    ps = [parts(r) for r in results]
    for name, fn in methods.items():
        for fig, req in (("output", False), ("request", True)):
            cis = [fn(*p, req) for p in ps]
            hits = sum(clip(a)[0] <= b.estimate <= clip(a)[1] for a, b in zip(cis, cis[1:]))
            rel = [(iv.hi - iv.estimate) / iv.estimate for iv in cis if math.isfinite(iv.hi)]
            print(f"{name:<30} {fig:<10} {hits / max(len(cis) - 1, 1):>8.0%} "
                  f"{(float(np.median(rel)) if rel else math.inf):>9.1%} {sum(iv.lo <= 0 for iv in cis):>7d} "
                  f"{sum(not iv.bounded for iv in cis):>9d}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--group", type=int, default=3, help="sweep.repeats to evaluate (0: skip that table)")
    args = ap.parse_args()

    model_dir = tinymodel.make_tiny_model(tinymodel.default_model_dir())
    cfg = EngineConfig(model=str(model_dir), served_model_name="roofline-tiny", device="cpu", dtype="bfloat16",
                       max_model_len=1024, enforce_eager=True, kv_cache_space_gib=1, max_num_seqs=8)
    clients_det: list[dict] = []
    clients_off: list[dict] = []
    results: list = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, Engine(cfg, Path(tmp) / "engine.log").start(timeout_s=600) as eng:
        print(f"engine up in {time.monotonic() - t0:.0f} s; {args.repeats} repeats of closed c={args.concurrency}, "
              f"{args.requests} requests (+{args.warmup} warm-up), 128 in / 64 out")
        for k in range(args.repeats):
            spec = loadgen.LoadSpec(model="roofline-tiny", mode="closed", concurrency=args.concurrency,
                                    num_requests=args.requests, warmup_requests=args.warmup, input_len=128,
                                    output_len=64, seed=k, point_id=f"rep{k}",
                                    token_id_range=(tinymodel.PROMPT_TOKEN_ID_MIN, tinymodel.PROMPT_TOKEN_ID_MAX + 1))
            res = loadgen.run_load(eng.base_url, spec)
            results.append(res)
            clients_det.append(stats.summarize(res, steady_state="detect"))
            clients_off.append(stats.summarize(res, steady_state="off"))
            w = clients_det[-1]["steady_window"]
            print(f"  repeat {k + 1:2d}: {clients_det[-1]['output_throughput_tok_s']:7.1f} tok/s, steady window "
                  f"{w['requests']} requests (dropped {w['dropped_warmup']} warm-up, {w['dropped_drain']} drain)")
    print(f"\n{args.repeats} repeats in {time.monotonic() - t0:.0f} s (engine start included)\n")
    print(f"{'statistic':<26} {'n/run':>6} {'CI→next':>8} {'PI→next':>8} {'CV det':>7} {'CV off':>7} "
          f"{'mean ± sd (det)':>22}")
    for key in FIGURES:
        hits_ci = hits_pi = pairs = 0
        unbounded = 0
        for a, b in zip(clients_det, clients_det[1:]):
            iv = a["intervals"].get(key)
            nxt = _value(b, key, steady=True)
            if iv is None or nxt is None:
                continue
            lo = -math.inf if iv["lo"] is None else iv["lo"]
            hi = math.inf if iv["hi"] is None else iv["hi"]
            if not (math.isfinite(lo) and math.isfinite(hi)):
                unbounded += 1
            est = iv["estimate"]
            pairs += 1
            hits_ci += lo <= nxt <= hi
            s2 = math.sqrt(2.0)
            hits_pi += (est - (est - lo) * s2) <= nxt <= (est + (hi - est) * s2)
        det = np.array([v for v in (_value(c, key, True) for c in clients_det) if v is not None])
        off = np.array([v for v in (_value(c, key, False) for c in clients_off) if v is not None])
        n_run = clients_det[0]["intervals"].get(key, {}).get("n", 0)
        note = f"  ({unbounded} unbounded)" if unbounded else ""
        print(f"{key:<26} {n_run:>6} {hits_ci / max(pairs, 1):>8.0%} {hits_pi / max(pairs, 1):>8.0%} "
              f"{_cv(det):>7.1%} {_cv(off):>7.1%} {det.mean():>12.4g} ± {det.std(ddof=1):<8.3g}{note}")
    _repeats_coverage(clients_det, args.group)
    _throughput_methods(results, args.concurrency)
    print("\nCI→next: the 95% interval of repeat i holds repeat i+1's estimate (a perfect CI of a mean: ~83%, "
          "see the docstring);\nPI→next: the same interval widened by √2 (a prediction interval for the next run's "
          "estimate: ~95% if runs were exchangeable);\nCV det/off: run-to-run coefficient of variation with "
          "steady-state detection / over the whole measurement window.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
