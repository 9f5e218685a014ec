"""An adaptive point that stopped before its cap (trial s16 live L7): the results file's ``num_requests`` is what
ran, its cap is ``num_requests_cap``, and a point that small carries the small-sample flag (L8). Against the
OpenAI stub, through ``measure.sweep.run_point``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.plan import DecisionTarget, PointPlan
from pytest_roofline.measure.plan import stopping as adaptive
from pytest_roofline.measure.sweep import run_point

YAML = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}
workload: {input_len: 16, output_len: 4}
sweep: {mode: closed, concurrency: [2], requests_per_point: 300, warmup: 2, adaptive: true}
predictions:
  - {id: ll, quantity: littles_law_ratio, at: {concurrency: 2}, predicted: 1.00, tolerance: ±50%}
"""


def test_an_adaptive_point_records_what_ran_and_its_cap(tmp_path: Path, stub_server) -> None:
    srv = stub_server(model="roofline-tiny", max_model_len=1024, token_delay_s=0.002)
    spec = loads_spec(YAML, file="p.yaml")
    # a throughput band far above what 2 clients of 4-token streams reach: decided OUTSIDE at an early look
    plan = PointPlan(id="closed-c2", mode="closed", concurrency=2, rate_req_s=None, num_requests=300,
                     duration_s=None, warmup_requests=2, input_len=16, output_len=4,
                     targets=(DecisionTarget("output_throughput", "output_throughput", 1e7, None, "huge"),))
    stop = adaptive.AdaptiveStop(plan)
    target = SimpleNamespace(served_model_name="roofline-tiny", base_url=srv.url)
    point = run_point(target, plan, spec, out_dir=tmp_path, token_id_range=(5, 300),  # type: ignore[arg-type]
                      contamination=0.1, stop_check=stop)
    records = [json.loads(x) for x in (tmp_path / point["requests_file"]).read_text().splitlines()]
    # counted from the per-request file: neither a warm-up nor a request the stop discarded
    ran = sum(1 for r in records if not r["warmup"] and r["status"] != "discarded")
    assert stop.stopped is not None and ran < 300
    assert point["num_requests"] == ran and point["num_requests_cap"] == 300  # type: ignore[typeddict-item]
    completed = sum(1 for r in records if not r["warmup"] and r["status"] == "ok")
    assert any(f.startswith(f"small sample: {completed} completed request") for f in point["flags"]), point["flags"]
