"""Where a request's TTFT goes on the CPU engine, by vLLM's own timestamps: the source of the serving model's
``frontend_in_s``, ``frontend_out_s`` and ``client_jitter_s`` defaults (model/serving/constants.py).

    .venv/bin/python benchmarks/frontend_split.py [results.json ...]

Per point of the committed CPU-engine recordings (default: predictions/recorded/cpu-*-2026-12-05.results.json),
from means (the server's histograms keep exact sums and counts, so their means are exact; their quantiles are not):

* client TTFT: the load generator's, send to first content chunk;
* server TTFT: ``vllm:time_to_first_token_seconds``, from the API server's arrival stamp to the first token in its
  output processor;
* queue and prefill: ``vllm:request_queue_time_seconds`` and ``vllm:request_prefill_time_seconds``, the engine
  core's own stamps (queued → scheduled → first token);
* API server ↔ engine core: server TTFT − queue − prefill (ZMQ both ways, the engine core's pick-up, the output
  processor); HTTP: client TTFT − server TTFT (the request's parsing before the arrival stamp, the SSE chunk back).

The server's means include the warm-up requests, the client's do not: a split is good to a fraction of a ms.
Then, from each committed closed-loop request file, the client's turnaround: how long after the latest response
ended the next request was sent (the closed loop's ``client_jitter_s``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pytest_roofline.measure import stats

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "predictions" / "recorded"
DEFAULT_RESULTS = sorted(RECORDED.glob("cpu-*-2026-12-05.results.json"))
DEFAULT_REQUESTS = sorted(RECORDED.glob("cpu-*-2026-12-05.closed-c*.requests.jsonl"))


def split_rows(path: Path) -> list[str]:
    doc = json.loads(path.read_text())
    rows = []
    for point in doc["points"]:
        legs = stats.frontend_legs(point)
        load = f"C={point['concurrency']}" if point.get("concurrency") else f"R={point.get('rate_req_s')}"
        rows.append(f"| {path.name.split('-2026')[0]} | {load} | {legs.client_ttft_ms:.2f} | "
                    f"{legs.server_ttft_ms:.2f} | {legs.queue_ms:.2f} | {legs.prefill_ms:.2f} | "
                    f"{legs.api_server_ms:.2f} | {legs.http_ms:.2f} |")
    return rows


def turnaround_ms(path: Path) -> list[float]:
    """Each closed-loop send's delay after the latest response that had ended before it (ms, sorted)."""
    return stats.closed_loop_turnarounds_ms(json.loads(line) for line in path.read_text().splitlines() if line.strip())


def main(argv: list[str]) -> int:
    results = [Path(a) for a in argv if a.endswith(".json")] or DEFAULT_RESULTS
    print("| recording | load | client TTFT | server TTFT | queue | prefill | API server <-> engine core | HTTP |")
    print("|---|---|---|---|---|---|---|---|")
    for path in results:
        for row in split_rows(path):
            print(row)
    print("\n(ms, means)\n")
    requests = [Path(a) for a in argv if a.endswith(".jsonl")] or DEFAULT_REQUESTS
    for path in requests:
        d = turnaround_ms(path)
        if not d:
            continue
        p50, p90 = (d[min(len(d) - 1, int(f * len(d)))] for f in (0.5, 0.9))
        print(f"client turnaround, {path.name}: {len(d)} sends, p50 {p50:.2f} ms, p90 {p90:.2f} ms, "
              f"max {d[-1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
