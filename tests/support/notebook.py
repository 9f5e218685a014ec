"""A results file built from the Day-3 notebook's measured table, for the report tests.

The client numbers are the notebook's (aggregate and per-request tok/s, TTFT and TPOT p50/p99, Little's law);
the prefix-cache hit rates follow its post-hoc log audit (C=2–32 at 50–66 %, C=64 draining, C=128 clean). The
server timelines are *synthetic* (the notebook did not capture /metrics) and only exist when asked for, so the
scorecard's timeline chart has something to draw in tests.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

# concurrency: (agg tok/s, per-req tok/s, ttft p50, ttft p99, tpot p50, tpot p99, λW, prefix-cache hit rate)
NOTEBOOK_TABLE = {
    1: (88.8, 88.8, 23, 26, 11.25, 11.27, 1.00, 0.95),
    2: (175.2, 87.6, 59, 138, 11.34, 11.41, 2.00, 0.50),
    4: (339.7, 84.9, 69, 201, 11.67, 11.81, 3.99, 0.60),
    8: (639.5, 79.9, 75, 263, 12.40, 12.66, 7.97, 0.66),
    16: (1139.6, 71.2, 93, 546, 13.78, 14.40, 16.0, 0.62),
    32: (1763.3, 55.1, 140, 1018, 17.68, 18.91, 32.0, 0.55),
    64: (2504.6, 39.1, 519, 3730, 25.09, 25.44, 64.0, 0.30),
    128: (3088.2, 24.1, 678, 8302, 41.00, 41.30, 127.9, 0.003),
}
OUT_LEN = 1024


def _timeline(c: int, duration: float) -> list[dict[str, Any]]:
    pts = []
    steps = 24
    for i in range(steps + 1):
        t = duration * i / steps
        ramp = min(1.0, i / 3)
        running = round(min(c, 256) * ramp)
        waiting = max(0, round((c - 96) * ramp * (0.6 + 0.4 * math.sin(i)))) if c > 96 else 0
        kv = min(0.98, running * 2048 / 410240 * (0.5 + 0.5 * i / steps))
        pts.append({"t_s": round(t, 2), "running": running, "waiting": waiting, "kv_cache_usage": round(kv, 4),
                    "preemptions": 0 if c < 128 else (i // 8)})
    return pts


def notebook_results(*, timeline: bool = False) -> dict[str, Any]:
    points = []
    for c, (agg, per, t50, t99, p50, p99, lw, hit) in NOTEBOOK_TABLE.items():
        lam = agg / OUT_LEN
        w = lw / lam
        n = 10 * c
        duration = n / lam
        server = {"prefix_cache_hit_rate": hit, "preemptions": 0 if c < 128 else 2,
                  "max_num_requests_running": c, "max_num_requests_waiting": 0,
                  "max_kv_cache_usage": round(min(1.0, c * 2048 / 410240), 4),
                  "prompt_tokens": n * 1024, "generation_tokens": n * 1024,
                  "timeline": _timeline(c, duration) if timeline else []}
        points.append({
            "id": f"closed-c{c}", "mode": "closed", "concurrency": c, "rate_req_s": None, "burstiness": 1.0,
            "input_len": 1024, "output_len": OUT_LEN, "num_requests": n, "warmup_requests": 1,
            "started_at": None, "finished_at": None, "duration_s": round(duration, 1),
            "client": {
                "completed": n, "failed": 0, "output_throughput_tok_s": agg, "total_throughput_tok_s": 2 * agg,
                "request_throughput_req_s": lam,
                "per_request_output_tok_s": {"mean": per, "p50": per},
                "ttft_ms": {"p50": t50, "p99": t99}, "tpot_ms": {"p50": p50, "p99": p99},
                "itl_ms": None, "e2e_ms": None, "mean_in_flight": float(c),
                "littles_law": {"L": float(c), "lambda_req_s": lam, "W_s": w, "lambda_W": lw, "ratio": lw / c},
                "token_count_mismatches": 0,
            },
            "server": server,
            "contaminated": hit > 0.10,
            "flags": ["ttft_p50_below_prefill_floor"] if c == 1 else [],
            "requests_file": None,
        })
    points.append({"id": "batch1", "mode": "closed", "concurrency": 1, "input_len": 1024, "output_len": 1000,
                   "num_requests": 4, "client": {"output_throughput_tok_s": 88.4, "completed": 4, "failed": 0},
                   "server": None, "contaminated": False, "flags": []})
    return {
        "schema": "pytest-roofline/results", "schema_version": 1, "source": "transcribed",
        "created_at": "2026-07-31T18:00:00Z", "updated_at": "2026-07-31T21:00:00Z", "status": "complete",
        "setup": {
            "predictions_file": "predictions/day3.yaml",
            "hardware": {"declared": "a100-sxm4-80gb", "detected": None},
            "model": {"name": "qwen3-8b", "path": None},
            "engine": {"name": "vllm", "version": "0.26.0", "argv": [], "env": {}, "log_file": None},
            "workload": {"input_len": 1024, "output_len": 1024},
            "commit": None, "host": None, "mode": "transcribed",
        },
        "engine_report": {"version": "0.26.0", "kv_device": "GPU", "num_gpu_blocks": 25640, "block_size": 16,
                          "kv_cache_tokens": 410240, "available_kv_cache_gib": 56.34, "max_concurrency": None,
                          "max_concurrency_tokens_per_request": None, "weights_gib": None, "sources": {},
                          "cross_check": {"ok": True, "detail": "56.34 GiB ÷ 410,240 tokens = 147,456 B/token"}},
        "points": points,
        "errors": [],
    }


def write_notebook_results(path: Path, *, timeline: bool = False) -> Path:
    path.write_text(json.dumps(notebook_results(timeline=timeline), indent=1), encoding="utf-8")
    return path
