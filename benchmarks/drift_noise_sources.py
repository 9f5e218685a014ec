"""Where the CPU engine's run-to-run noise comes from (issue 21, third session). Prints the figures; asserts nothing.

Short experiments with ``benchmarks/drift_cpu.yaml`` (``max_num_seqs: 4``) on the shared 2-core machine, 2-6 fresh
engine starts per setting, one engine at a time, kept compactly in ``benchmarks/data/drift-noise-sources.json``:

* ``12x``: the file as the first two sessions ran it (``requests_per_point: 12x``);
* ``48x``: four times the requests per point;
* ``pinned``: 12x, every thread of pytest, the API server and the engine-core process moved to core 1 once vLLM's
  worker had bound its OpenMP thread to core 0 (``os.sched_setaffinity`` from a side process);
* ``nice``: 12x, the engine started under ``nice -n 10`` (``engine.python`` a wrapper script);
* ``uni-12x`` / ``uni-48x``: vLLM's one-process executor (``--distributed-executor-backend uni`` with
  ``VLLM_ENABLE_V1_MULTIPROCESSING=0``: the worker runs inside the engine-core process, which then no longer waits
  for it in a busy loop);
* ``recorded-seqs4`` / ``recorded-seqs2``: the 12 runs at 48x that ``benchmarks/drift_false_alarms.py`` replays
  (``benchmarks/data/drift-cpu-runs-48x.json``; the seqs2 runs with ``max_num_seqs: 2``).

Per run and point it keeps what tells a starved client from a slow engine: the closed loop's held concurrency
(``client.steady_mean_in_flight`` ÷ C), the client's socket read lag p99, the client's TTFT/TPOT/E2E p50 and
vLLM's own means from ``/metrics`` (``server``), the slowest request, and the 8 stored prediction values (as the
history stores them). Printed: per setting, the run-to-run standard deviation of each prediction's log value, the
held share and read lag per run, how often a request took over 2 s; and for 48x, how much consecutive 12x-sized
pieces of one point differ (the noise within one engine start).

Record (run folders are ``--roofline-out`` folders named ``<setting>-<n>``)::

    python benchmarks/drift_noise_sources.py --record runs/12x-1 runs/12x-2 ... runs/uni-48x-2
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "drift-noise-sources.json"


def _p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def _pieces(requests_file: Path, size: int) -> list[dict[str, float]]:
    """Consecutive pieces of ``size`` measured requests (in send order): their TTFT, E2E p50 (ms) and output
    throughput (tok/s over the piece's span)."""
    rs = []
    for line in requests_file.read_text().splitlines():
        r = json.loads(line) if line.strip() else None
        if r and not r.get("warmup") and r.get("status") == "ok" and r.get("first_token_s") is not None:
            rs.append(r)
    rs.sort(key=lambda r: r["sent_s"])
    out = []
    for i in range(0, len(rs) - size + 1, size):
        part = rs[i:i + size]
        span = max(r["end_s"] for r in part) - min(r["sent_s"] for r in part)
        out.append({"ttft_p50_ms": round(1e3 * _p50([r["first_token_s"] - r["sent_s"] for r in part]), 3),
                    "e2e_p50_ms": round(1e3 * _p50([r["end_s"] - r["sent_s"] for r in part]), 3),
                    "tput_tok_s": round(sum(int(r.get("completion_tokens") or 0) for r in part) / span, 1)})
    return out


def record(dirs: list[Path], out: Path) -> None:
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.history import stored_value
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.report.scorecard import score_spec

    spec = load_spec(HERE / "drift_cpu.yaml")
    runs = []
    for d in sorted(dirs):
        (results,) = d.glob("*/results.json")
        data = load_results(results)
        values = {}
        for v in score_spec(spec, data, source=results.name):
            sv = stored_value(v.to_dict(), file="drift_cpu.yaml")
            if sv.measured is not None:
                values[sv.prediction_id] = sv.measured
        points = []
        for p in data["points"]:
            c, s, lg = p["client"], p.get("server") or {}, p.get("loadgen") or {}
            rf = results.parent / p["requests_file"]
            e2e = [json.loads(x)["end_s"] - json.loads(x)["sent_s"] for x in rf.read_text().splitlines()
                   if x.strip() and json.loads(x).get("end_s") is not None]
            pt = {"id": p["id"], "concurrency": p["concurrency"], "requests": p["num_requests"],
                  "held_share": round((c.get("steady_mean_in_flight") or c["mean_in_flight"]) / p["concurrency"], 3),
                  "read_lag_p99_ms": round(lg["read_lag_ms"]["p99"], 1) if lg.get("read_lag_ms") else None,
                  "client_ttft_p50_ms": round(c["ttft_ms"]["p50"], 2),
                  "client_tpot_p50_ms": round(c["tpot_ms"]["p50"], 3),
                  "client_e2e_p50_ms": round(c["e2e_ms"]["p50"], 2),
                  "server_ttft_mean_ms": round(s["ttft_ms"]["mean"], 2) if s.get("ttft_ms") else None,
                  "server_tpot_mean_ms": round(s["tpot_ms"]["mean"], 3) if s.get("tpot_ms") else None,
                  "server_e2e_mean_ms": round(s["e2e_ms"]["mean"], 2) if s.get("e2e_ms") else None,
                  "slowest_request_s": round(max(e2e), 3), "over_2s": sum(x > 2.0 for x in e2e)}
            if p["num_requests"] >= 48 * p["concurrency"]:
                pt["pieces_12x"] = _pieces(rf, 12 * p["concurrency"])
            points.append(pt)
        runs.append({"name": d.name, "setting": d.name.rsplit("-", 1)[0], "values": values, "points": points})
    out.write_text(json.dumps({"about": __doc__.split("\n", 1)[0], "runs": runs}, indent=1) + "\n")
    print(f"wrote {out} ({len(runs)} runs)")


def _sd_log(xs: list[float]) -> float:
    logs = [math.log(x) for x in xs if x > 0]
    return statistics.stdev(logs) if len(logs) > 1 else math.nan


def show(path: Path) -> None:
    runs = json.loads(path.read_text())["runs"]
    settings = list(dict.fromkeys(r["setting"] for r in runs))
    print(f"== {path.name}: {len(runs)} CPU-engine runs of benchmarks/drift_cpu.yaml (max_num_seqs 4 unless "
          "the setting says seqs2)")
    for s in settings:
        group = [r for r in runs if r["setting"] == s]
        keys = sorted({k for r in group for k in r["values"]})
        sds = {k: _sd_log([r["values"][k] for r in group if k in r["values"]]) for k in keys}
        finite = [x for x in sds.values() if math.isfinite(x)]
        print(f"  {s}: {len(group)} runs; run-to-run sd of each prediction's log value: "
              + ", ".join(f"{k.replace('[concurrency=', '@').rstrip(']')} {x:.2f}" for k, x in sds.items())
              + (f"; mean {statistics.fmean(finite):.2f}" if finite else ""))
        for r in group:
            print(f"    {r['name']:10s} " + " | ".join(
                f"{p['id']}: held {p['held_share']:.2f} of C, read lag p99 {p['read_lag_p99_ms']} ms, "
                f"TTFT {p['client_ttft_p50_ms']:.0f} (server {p['server_ttft_mean_ms']}) ms, "
                f"TPOT {p['client_tpot_p50_ms']:.1f} (server {p['server_tpot_mean_ms']}) ms, "
                f"slowest {p['slowest_request_s']:.1f} s" for p in r["points"]))
        pts = sorted({p["id"] for r in group for p in r["points"]})
        both = []
        for pid in pts:
            ps = [p for r in group for p in r["points"] if p["id"] == pid and p.get("server_e2e_mean_ms")]
            both.append(f"{pid} client E2E p50 {_sd_log([p['client_e2e_p50_ms'] for p in ps]):.2f}, vLLM's mean "
                        f"{_sd_log([p['server_e2e_mean_ms'] for p in ps]):.2f}")
        print("    run-to-run sd of the log, the client's figure and vLLM's own (/metrics): " + "; ".join(both))
        held = [p["held_share"] for r in group for p in r["points"]]
        stalls = sum(any(p["over_2s"] for p in r["points"]) for r in group)
        print(f"    held share of C: {min(held):.2f}-{max(held):.2f}; runs with a request over 2 s: {stalls} of "
              f"{len(group)}")
        within = {}
        for r in group:
            for p in r["points"]:
                for m in ("ttft_p50_ms", "e2e_p50_ms", "tput_tok_s"):
                    if p.get("pieces_12x"):
                        within.setdefault(f"{m}@{p['concurrency']}", []).append(
                            _sd_log([q[m] for q in p["pieces_12x"]]))
        if within:
            print("    within one engine start, sd of the log over consecutive 12x-sized pieces of a point (mean over "
                  "runs): " + ", ".join(f"{k} {statistics.fmean(v):.2f}" for k, v in within.items()))
    mp = [r for r in runs if not r["setting"].startswith("uni")]
    starved = [min(p["held_share"] for p in r["points"]) for r in mp]
    low = [x for x in starved if x < 0.9]
    print(f"  runs with vLLM's default executor (mp) that had a point below 0.9 of C in flight: {len(low)} of "
          f"{len(mp)} (their lowest point held {min(low):.2f}-{max(low):.2f} of C)" if low else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--record", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("--data", type=Path, default=DATA)
    args = p.parse_args(argv)
    if args.record:
        record(args.record, args.data)
    show(args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
