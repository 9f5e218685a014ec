"""Beyond one engine process, live: the CPU engine at tensor parallel 2 (every worker seen in its log and torn
down), and two replicas behind a round-robin proxy measured as one deployment (``engine.replicas``,
``--roofline-replica-metrics``).

The recorded-log, argv and YAML checks (no engine) are in tests/integration/test_engine_parallel.py and
test_replicas.py; the proxy is tests/support/lb_proxy.py.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.engine import (
    ENGINE_START_S,
    ENGINE_STOP_S,
    SHORT_RUN_S,
    needs_vllm,
    processes_left,
    tiny_engine_config,
)
from support.lb_proxy import RoundRobinProxy
from support.patience import bound_s

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.engine import Engine
from pytest_roofline.scoring import score

pytestmark = [needs_vllm, pytest.mark.slow]


def test_cpu_engine_tp2_workers_seen_and_torn_down(tmp_path):
    """Its own engine: tensor parallel 2 is a configuration of its own."""
    # the tiny model has 2 attention heads and 1 KV head: 2 heads split over 2 ranks, the KV head is replicated
    e = Engine(tiny_engine_config(tensor_parallel_size=2), tmp_path / "tp2.log")
    try:
        e.start(timeout_s=bound_s(ENGINE_START_S))
        rep = e.report()["workers"]
        assert rep["expected"] == 2 and rep["missing_ranks"] == [], rep
        pids = {w["pid"] for w in rep["seen"]}
        assert len(pids) == 2 and pids <= e.pids()
        everything = e.pids()
    finally:
        e.stop()
    left = processes_left(everything, ENGINE_STOP_S)
    assert not left, f"engine processes left after stop: {left}"
    assert e.survivors == []


def test_two_cpu_engines_behind_a_round_robin_proxy(pytester: pytest.Pytester, tmp_path: Path, tiny_engine) -> None:
    """Two replicas of the tiny engine: the session's shared one and a second of the same configuration, started
    here (a replica's own /metrics counts only what it served, so the first one's earlier requests do not count)."""
    second = Engine(tiny_engine.config, tmp_path / "engine-1.log")
    try:
        second.start(timeout_s=bound_s(ENGINE_START_S))
        engines = [tiny_engine, second]
        backends = []
        for e in engines:
            host_port = e.base_url.split("//", 1)[1]
            backends.append((host_port.rsplit(":", 1)[0], int(host_port.rsplit(":", 1)[1])))
        with RoundRobinProxy(backends) as lb:
            run_deployment(pytester, tmp_path, lb, engines)
    finally:
        second.stop()


DEPLOYMENT_YAML = """\
title: two CPU replicas behind a round-robin proxy
hardware: cpu
model: roofline-tiny
engine:
  name: vllm
  version: "0.32.0"
  replicas: 2
  cpu_kvcache_space: 1 GiB
  args: {dtype: bfloat16, max_model_len: 1024, enforce_eager: true, max_num_seqs: 8}
workload: {input_len: 32, output_len: 8}
sweep: {mode: closed, concurrency: [4], requests_per_point: 4x, warmup: 2}
predictions:
  - id: tput-c4
    quantity: output_throughput
    at: {concurrency: 4}
    predicted: 50 tok/s
    tolerance: ">= 1 tok/s"
    notes: "two engines share two busy cores: the figure is noise; the test checks the model value's scaling"
  - id: kv-blocks
    quantity: num_gpu_blocks
    predicted: 16,384
    tolerance: exact
    notes: "one replica's pool: 1 GiB ÷ (128 tokens × 512 B)"
  - id: littles-law
    quantity: littles_law_ratio
    at: {concurrency: 4}
    predicted: 1.0
    tolerance: ±25%
"""


def run_deployment(pytester: pytest.Pytester, tmp_path: Path, lb: RoundRobinProxy, engines: list[Engine]) -> None:
    pytester.makefile(".roofline.yaml", deployment=DEPLOYMENT_YAML)
    out = tmp_path / "run"
    junit = tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--endpoint", lb.url, "--roofline-replica-metrics", engines[0].base_url,
        "--roofline-replica-metrics", engines[1].base_url, "--roofline-out", str(out), "-p", "no:html",
        "-p", "no:cacheprovider", "--junitxml", str(junit), timeout=bound_s(SHORT_RUN_S))
    text = result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 3 and not {"failed", "errors", "skipped"} & outcomes.keys(), text
    results_file = next(out.rglob("results.json"))
    results = json.loads(results_file.read_text())
    assert results["setup"]["deployment"]["replicas"] == 2
    (point,) = results["points"]
    server = point["server"]
    assert server["replica_count"] == 2 and len(server["replicas"]) == 2
    assert [r["url"] for r in server["replicas"]] == [e.base_url for e in engines]
    # every request the load generator sent (warm-up included) went through the proxy, one replica after the
    # other: each replica's own vllm:request_success_total counted about half, and the two add up to all of them
    sent = len((results_file.parent / point["requests_file"]).read_text().splitlines())
    per = [r["requests_succeeded"] for r in server["replicas"]]
    assert sum(per) == server["requests_succeeded"] == sent, (per, sent)
    assert all(abs(n - sent / 2) <= 1 for n in per), (per, sent)
    assert server["generation_tokens"] == sent * 8  # output_len 8, ignore_eos: every replica's tokens, summed
    # the proxy saw the same split (its own count of what it forwarded)
    assert lb.requests_to(0) + lb.requests_to(1) == sent
    # the throughput prediction was scored with the scaled model value: 2 × one replica's at 4 / 2 = 2 clients
    props = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(junit).getroot().iter("testcase")}
    tput = next(v for k, v in props.items() if k and "tput-c4" in k)
    one = loads_spec(DEPLOYMENT_YAML.replace("  replicas: 2\n", "").replace("concurrency: [4]", "concurrency: [2]")
                     .replace("concurrency: 4}", "concurrency: 2}"), file="one.yaml")
    one_replica = score(one, next(p for p in one.predictions if p.id == "tput-c4"), "math").serving_value
    assert float(tput["roofline_model_tok_per_s"]) == pytest.approx(2 * one_replica, rel=1e-6)
