"""A deployment of several replicas behind one endpoint (``engine.replicas``, ``--roofline-replica-metrics``).

Unit tests (no engine): how a point's server figures are combined over replicas (counters summed, gauge peaks
maxed, histograms summed bucket-wise), a replica whose /metrics fails, the YAML and option checks, and the model's
scaling by replica count, with hand-worked numbers. Two real CPU engines behind a small round-robin proxy
(tests/support/lb_proxy.py), with pytest run against the proxy: tests/engine/test_parallel_and_replicas.py.
"""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_roofline.errors import PointError, SpecError
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.engine import metrics as scrape
from pytest_roofline.measure.sweep import replica_metrics_for, run_point
from pytest_roofline.quantities.registry import replica_scaling
from pytest_roofline.scoring import score


def _metrics(*, running: float, waiting: float, kv: float, success: float, prompt: float, gen: float,
             preempt: float, ttft_buckets: tuple[float, float, float]) -> str:
    """A minimal vLLM /metrics exposition (names of vllm/v1/metrics/loggers.py, v0.32): gauges, counters and a
    TTFT histogram with cumulative buckets le=0.1, le=1, le=+Inf."""
    b1, b2, b3 = ttft_buckets
    m = 'model_name="tiny",engine="0"'
    return textwrap.dedent(f"""\
        # TYPE vllm:num_requests_running gauge
        vllm:num_requests_running{{{m}}} {running}
        # TYPE vllm:num_requests_waiting gauge
        vllm:num_requests_waiting{{{m}}} {waiting}
        # TYPE vllm:kv_cache_usage_perc gauge
        vllm:kv_cache_usage_perc{{{m}}} {kv}
        # TYPE vllm:request_success counter
        vllm:request_success_total{{finished_reason="length",{m}}} {success}
        vllm:request_success_total{{finished_reason="stop",{m}}} 0
        # TYPE vllm:prompt_tokens counter
        vllm:prompt_tokens_total{{{m}}} {prompt}
        # TYPE vllm:generation_tokens counter
        vllm:generation_tokens_total{{{m}}} {gen}
        # TYPE vllm:num_preemptions counter
        vllm:num_preemptions_total{{{m}}} {preempt}
        # TYPE vllm:time_to_first_token_seconds histogram
        vllm:time_to_first_token_seconds_bucket{{le="0.1",{m}}} {b1}
        vllm:time_to_first_token_seconds_bucket{{le="1.0",{m}}} {b2}
        vllm:time_to_first_token_seconds_bucket{{le="+Inf",{m}}} {b3}
        vllm:time_to_first_token_seconds_count{{{m}}} {b3}
        vllm:time_to_first_token_seconds_sum{{{m}}} {b3 * 0.2}
        """)


def _idle(**kw: float) -> dict:
    base = dict(running=0, waiting=0, kv=0.0, success=0, prompt=0, gen=0, preempt=0, ttft_buckets=(0, 0, 0))
    return scrape.parse_metrics(_metrics(**{**base, **kw}))


# ------------------------------------------------------------------------------------------ combining replicas


def test_counters_sum_gauges_max_and_histograms_add_over_replicas() -> None:
    # replica A served 10 requests (128 prompt + 64 output tokens each), B served 6; A had already served 4 before
    # the point (counters are cumulative): the point's deltas are 10 and 6, 16 in all
    a0 = _idle(success=4, prompt=512, gen=256, ttft_buckets=(4, 4, 4))
    a1 = _idle(success=14, prompt=512 + 1280, gen=256 + 640, preempt=1, ttft_buckets=(4 + 7, 4 + 10, 4 + 10))
    b0 = _idle()
    b1 = _idle(success=6, prompt=768, gen=384, ttft_buckets=(2, 5, 6))
    # timelines: A peaked at 5 running (and 2 waiting, 40% KV), B at 3 running (0 waiting, 25% KV)
    ta = [{"running": 5, "waiting": 2, "kv_cache_usage": 0.40}, {"running": 1, "waiting": 0, "kv_cache_usage": 0.1}]
    tb = [{"running": 3, "waiting": 0, "kv_cache_usage": 0.25}]
    server = scrape.aggregate_replicas(["http://user:pw@10.0.0.5:8000", "http://10.0.0.6:8000"],
                                       [a0, b0], [a1, b1], [ta, tb])
    assert server["replica_count"] == 2
    a, b = server["replicas"]
    assert "pw" not in a["url"] and a["url"].endswith("10.0.0.5:8000")  # user:password@ never stored
    assert (a["requests_succeeded"], b["requests_succeeded"]) == (10, 6)
    assert server["requests_succeeded"] == 16  # 10 + 6
    assert server["prompt_tokens"] == 1280 + 768 == 2048  # 16 requests × 128
    assert server["generation_tokens"] == 640 + 384 == 1024  # 16 × 64
    assert server["preemptions"] == 1  # 1 + 0
    # gauges: the busiest replica's peak, never 5 + 3 = 8 "running on one engine"
    assert server["max_num_requests_running"] == 5
    assert server["max_num_requests_waiting"] == 2
    assert server["max_kv_cache_usage"] == pytest.approx(0.40)
    # TTFT: A's delta buckets (7, 10, 10) + B's (2, 5, 6) = (9, 15, 16): 16 requests, mean 0.2 s = 200 ms;
    # the median (rank 8) lies in the first bucket: 8/9 of the way from 0 to 100 ms = 88.9 ms
    ttft = server["ttft_ms"]
    assert ttft["count"] == 16
    assert ttft["mean"] == pytest.approx(200.0)
    assert ttft["p50"] == pytest.approx(100.0 * 8 / 9)


def test_a_replica_without_a_timeline_leaves_the_deployment_peak_unknown() -> None:
    server = scrape.aggregate_replicas(["http://a:1", "http://b:2"], [_idle(), _idle()],
                                       [_idle(success=1), _idle(success=1)])
    assert server["max_num_requests_running"] is None  # no timeline: nobody saw a peak
    assert "max_num_requests_running" in server["not_measured"]
    assert server["requests_succeeded"] == 2


def test_a_replica_whose_metrics_fail_is_an_error_naming_it(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on (bound, never listening, then closed)
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    spec = loads_spec(_yaml(replicas=2), file="dep.yaml")
    plan = SimpleNamespace(id="closed-c2", mode="closed", concurrency=2, rate_req_s=None, burstiness=1.0,
                           arrival_span="fixed",
                           num_requests=4, duration_s=None, warmup_requests=0, input_len=16, output_len=4)
    target = SimpleNamespace(served_model_name="tiny", base_url="http://127.0.0.1:9")
    with pytest.raises(PointError) as err:
        run_point(target, plan, spec, out_dir=tmp_path, token_id_range=(1000, 2000), contamination=0.1,  # type: ignore[arg-type]
                  replica_metrics=[f"http://u:secret@127.0.0.1:{dead}", "http://127.0.0.1:9"])
    msg = str(err.value)
    assert f"127.0.0.1:{dead}" in msg and "replica /metrics" in msg
    assert "secret" not in msg


def test_without_replica_urls_the_balancers_metrics_is_not_taken_for_the_deployment(tmp_path: Path,
                                                                                    stub_server) -> None:
    # the balancer: an OpenAI-compatible completions server with a /metrics, whose reads are in its request log
    server = stub_server(model="tiny", metrics=_metrics(running=0, waiting=0, kv=0.0, success=0, prompt=0, gen=0,
                                                        preempt=0, ttft_buckets=(0, 0, 0)))
    spec = loads_spec(_yaml(replicas=2), file="dep.yaml")
    plan = SimpleNamespace(id="closed-c2", mode="closed", concurrency=2, rate_req_s=None, burstiness=1.0,
                           arrival_span="fixed",
                           num_requests=4, duration_s=None, warmup_requests=0, input_len=16, output_len=4,
                           to_dict=lambda: {"id": "closed-c2"})
    target = SimpleNamespace(served_model_name="tiny", base_url=server.url)
    point = run_point(target, plan, spec, out_dir=tmp_path, token_id_range=(1000, 2000),  # type: ignore[arg-type]
                      contamination=0.1)
    assert point["client"]["completed"] == 4
    assert server.requests_to("/metrics") == []  # one replica's numbers (at best) are never read as the deployment's
    assert point["server"]["replica_count"] == 2 and point["server"]["replicas"] == []
    assert "no per-replica /metrics" in point["server"]["note"]


# ------------------------------------------------------------------------------------------ the YAML and options


def _yaml(*, replicas: int | None = None, metrics: str | None = None, extra: str = "") -> str:
    eng = '{name: vllm, version: "0.26.0"' + (f", replicas: {replicas}" if replicas is not None else "") \
        + (f", replica_metrics: {metrics}" if metrics else "") + "}"
    return textwrap.dedent(f"""\
        hardware: a100-sxm4-80gb
        model: {{params: 8.0e9, num_layers: 32, num_kv_heads: 8, head_dim: 128}}
        engine: {eng}
        workload: {{input_len: 1000, output_len: 100, kv_context: 1000}}
        sweep: {{mode: closed, concurrency: [2, 64]}}
        predictions:
          - {{id: tput, quantity: output_throughput, at: {{concurrency: 64}}, predicted: model}}
          - {{id: per-req, quantity: per_request_throughput, at: {{concurrency: 64}}, predicted: model}}
          - {{id: step, quantity: t_step, at: {{batch: 32}}, predicted: model}}
          - {{id: b1, quantity: batch1_throughput, predicted: model}}
          - {{id: knee, quantity: knee_concurrency, predicted: model}}
        {extra}""")


@pytest.mark.parametrize("text, message", [
    (_yaml(replicas=0), "engine.replicas: 0 is not a number of replicas"),
    (_yaml(replicas=2, metrics="[http://a:1]"), "engine.replica_metrics names 1 URL(s) for replicas: 2"),
    (_yaml(replicas=2, metrics="[http://a:1, 'ftp://b']"), "is not an http(s) URL"),
    (_yaml(replicas=1, metrics="http://a:1"), "must be a list of URLs"),
])
def test_the_deployment_shape_is_checked_at_its_yaml_line(text: str, message: str) -> None:
    with pytest.raises(SpecError) as err:
        loads_spec(text, file="dep.yaml")
    assert message in str(err.value)
    assert err.value.line == 3  # the engine: line


def test_the_command_line_replica_urls_win_and_must_match_the_count() -> None:
    spec = loads_spec(_yaml(replicas=2, metrics="[http://a:1, http://b:2]"), file="dep.yaml")
    assert replica_metrics_for(spec, None) == ["http://a:1", "http://b:2"]
    assert replica_metrics_for(spec, ["http://c:3/", "http://d:4"]) == ["http://c:3", "http://d:4"]
    with pytest.raises(PointError, match="names 1 /metrics URL"):
        replica_metrics_for(spec, ["http://c:3"])


def test_replica_metrics_without_endpoint_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".roofline.yaml", dep=_yaml(replicas=2))
    result = pytester.runpytest("--roofline-replica-metrics", "http://a:1", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-replica-metrics*give --endpoint too*"])


# ------------------------------------------------------------------------------------------ the model's scaling


def _scores(text: str) -> dict[str, object]:
    spec = loads_spec(text, file="dep.yaml")
    return {p.id: score(spec, p, "math") for p in spec.predictions}


def test_throughput_scales_by_replicas_at_each_replicas_share_of_the_load() -> None:
    # A100-SXM4-80GB: 2.039e12 B/s, 312e12 FLOP/s bf16 (catalog). Nominal 8e9-parameter model in bf16: 16e9 B of
    # weights; KV per token 2 × 32 layers × 8 heads × 128 × 2 B = 131,072 B; kv_context 1000 -> 131.072e6 B/seq.
    # Two replicas at 64 clients: 32 on each. One replica's decode step at B = 32:
    #   t_mem = (16e9 + 32 × 131.072e6) / 2.039e12 = 20.194304e9 / 2.039e12 = 9.904024 ms
    #   t_comp = 32 × 2 × 8e9 / 312e12 = 1.641 ms -> memory-bound, t_step = 9.904024 ms
    # the deployment: 2 × 32 / 9.904024 ms = 6,462.02 tok/s; each request: 1 / 9.904024 ms = 100.969 tok/s
    two = _scores(_yaml(replicas=2))
    assert two["tput"].roofline_value == pytest.approx(6462.02, rel=1e-5)
    assert two["per-req"].roofline_value == pytest.approx(100.969, rel=1e-5)
    assert "2 replicas" in two["tput"].model_explanation or "2 replicas" in str(two["tput"].model_inputs)
    # one engine at 64: (16e9 + 64 × 131.072e6) / 2.039e12 = 11.961063 ms -> 64 / that = 5,350.74 tok/s
    one = _scores(_yaml())
    assert one["tput"].roofline_value == pytest.approx(5350.74, rel=1e-5)
    # at: batch is one engine's decode step, and the batch-1 run is each replica's own: not scaled
    assert two["step"].model_value == pytest.approx(9.904024e-3, rel=1e-6)
    # batch 1: 2.039e12 / (16e9 + 131.072e6) = 126.40 tok/s, the same with one replica or two
    assert two["b1"].roofline_value == pytest.approx(126.40, rel=1e-4)
    assert one["b1"].roofline_value == pytest.approx(two["b1"].roofline_value)


def test_replicas_1_leaves_every_value_as_without_it() -> None:
    without, with_one = _scores(_yaml()), _scores(_yaml(replicas=1))
    for pid, v in without.items():
        assert (with_one[pid].model_value, with_one[pid].serving_value) == (v.model_value, v.serving_value), pid


def test_the_serving_model_simulates_one_replica_at_its_share() -> None:
    # an even split: the deployment at 64 clients over 2 replicas is 2 × one engine at 32 clients (throughput)
    # and one engine at 32 for what each request sees; the serving model's own sweep point names it
    two, one32 = _scores(_yaml(replicas=2)), _scores(_yaml().replace("concurrency: 64}", "concurrency: 32}"))
    assert two["tput"].serving_value == pytest.approx(2 * one32["tput"].serving_value)
    assert two["per-req"].serving_value == pytest.approx(one32["per-req"].serving_value)
    assert "closed-c32" in two["tput"].serving_explanation


def test_whole_sweep_analyses_are_not_scaled_by_the_model() -> None:
    v = _scores(_yaml(replicas=2))["knee"]
    assert v.model_value is None
    assert "whole-sweep analysis" in v.serving_explanation
    assert replica_scaling("knee_concurrency") == "sweep"
    assert [replica_scaling(n) for n in ("output_throughput", "ttft_p99", "num_gpu_blocks", "batch1_throughput")] \
        == ["total", "share", "replica", "replica"]


def test_a_concurrency_that_does_not_split_evenly_is_refused_by_the_serving_model() -> None:
    v = _scores(_yaml(replicas=2).replace("concurrency: 64}", "concurrency: 3}"))["tput"]
    assert v.serving_value is None and "not a whole number of clients per replica" in v.serving_explanation
    # the roofline's closed form takes 1.5 sequences per replica: 2 × 1.5 / t_step(1.5)
    # t_mem = (16e9 + 1.5 × 131.072e6) / 2.039e12 = 7.943506 ms -> 3 / 7.943506 ms = 377.67 tok/s
    assert v.roofline_value == pytest.approx(377.67, rel=1e-4)
