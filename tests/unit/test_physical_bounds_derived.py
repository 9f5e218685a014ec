"""The CPU-only math check fails ink past the physical bounds of the quantities derived from the decode roofline:
total and request throughput, request goodput and goodput (ceilings), E2E latency (a floor) (trial s18, H1: they
skipped as "needs a measurement" before). Ink inside a bound keeps its verdict from before (a skip here: no band).

Every bound is worked out by hand from the datasheet and the model's config:

* H100 SXM: 3,350 GB/s, 989 TFLOP/s bf16. Llama-3.1-8B: 8,030,261,248 parameters in bf16 = 16,060,522,496 B of
  weights; KV 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token.
* One weight read: 16,060,522,496 / 3.35e12 = 4.79419 ms (the TPOT floor; 1 / 208.58 tok/s).
* Output ceiling at C with 1,024/1,024 tokens: each sequence's KV at the mean decode context 1,024 + 512 = 1,536
  tokens = 201,326,592 B; the step reads 16.0605e9 + C x 201.3e6 B (the FLOPs, 2 x 8.03e9 x C / 989e12, are
  shorter): C = 16: 19.2817e9 B / 3.35e12 = 5.7557 ms -> 2,779.8 tok/s; C = 64: 28.9455e9 B -> 8.6405 ms ->
  7,407.0 tok/s; C = 32 (one of 2 replicas at C = 64): 22.5030e9 B -> 6.7173 ms -> 4,763.8 tok/s.
* total_throughput at C = 16: 2,779.8 x (1,024 + 1,024) / 1,024 = 5,559.7 tok/s.
* request_throughput (and request_goodput) at C = 64: 7,407.0 / 1,024 = 7.2334 req/s.
* goodput over the sweep 1, 16, 64: the largest ceiling, 7,407.0 tok/s at C = 64.
* e2e: the prefill (one weight read, 4.794 ms) + 1,023 decode steps x 4.79419 ms = 1,024 x 4.79419 ms = 4.9093 s;
  with prefix caching off the prefill is at least 1,024 x 2 x 8.03e9 / 989e12 = 16.629 ms: 4,904.46 + 16.63 =
  4.9211 s.
"""

from __future__ import annotations

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.scoring import score

WEIGHTS = 2 * 8_030_261_248  # Llama-3.1-8B, bf16
BW, PEAK = 3.35e12, 989e12
KV_SEQ = 1536 * 32 * 8 * 128 * 2 * 2  # the mean decode context's KV, 201,326,592 B
READ_S = WEIGHTS / BW  # 4.79419 ms


def _ceiling(c: float) -> float:
    return c / ((WEIGHTS + c * KV_SEQ) / BW)  # memory-bound at these batches (the FLOPs take < 1.1 ms)


FILE = """\
hardware: {hardware}
model: llama-3.1-8b
engine: {{name: vllm, version: "0.33.0"{engine}}}
workload: {workload}
sweep: {{mode: closed, concurrency: [1, 16, 64]}}
slo: {{ttft: 500 ms, tpot: 50 ms, percentile: p99}}
predictions:
  - {{id: p, quantity: {quantity}, at: {{{at}}}, predicted: "{ink}"}}
"""


def _verdict(quantity: str, ink: str, at: str, *, workload: str = "{input_len: 1024, output_len: 1024}",
             engine: str = "", hardware: str = "h100-sxm"):
    spec = loads_spec(FILE.format(hardware=hardware, engine=engine, workload=workload, quantity=quantity, at=at,
                                  ink=ink))
    return score(spec, spec.predictions[0], "math", None)


def _past(v) -> bool:
    return v.status == "fail" and "a physical bound no run can cross" in v.reason


def test_the_hand_worked_ceilings():
    assert READ_S == pytest.approx(4.79419e-3, rel=1e-5)
    assert _ceiling(16) == pytest.approx(2779.8, rel=1e-4) and _ceiling(64) == pytest.approx(7407.0, rel=1e-4)


def test_total_throughput_is_the_output_ceiling_times_the_tokens_a_request_carries():
    bound = _ceiling(16) * (1024 + 1024) / 1024  # 5,559.7 tok/s
    v = _verdict("total_throughput", "5600 tok/s", "concurrency: 16")
    assert _past(v) and v.hi == pytest.approx(bound, rel=1e-4), v.reason
    assert "(1,024 + 1,024) ÷ 1,024" in v.reason and "2,780 tok/s" in v.reason
    assert v.tolerance_text == f"physical ceiling {v.fmt(bound)}"  # what the check applied: the bound, no tolerance
    inside = _verdict("total_throughput", "5500 tok/s", "concurrency: 16")
    assert inside.status == "skip" and "needs a measurement" in inside.reason  # as before: no band, no roofline
    # the trial's ink, 50,000 tok/s
    assert _past(_verdict("total_throughput", "50000 tok/s", "concurrency: 16"))


@pytest.mark.parametrize("quantity", ["request_throughput", "request_goodput"])
def test_request_rates_are_the_output_ceiling_over_the_output_length(quantity):
    bound = _ceiling(64) / 1024  # 7.2334 req/s
    v = _verdict(quantity, "7.4 req/s", "concurrency: 64")
    assert _past(v) and v.hi == pytest.approx(bound, rel=1e-4), v.reason
    assert "÷ the 1,024 output tokens" in v.reason
    assert ("good requests are some of the completed ones" in v.reason) == (quantity == "request_goodput")
    assert not _past(_verdict(quantity, "7.2 req/s", "concurrency: 64"))
    assert _past(_verdict(quantity, "20 req/s", "concurrency: 64"))  # the trial's ink


def test_goodput_is_at_most_the_largest_ceiling_of_the_sweep():
    v = _verdict("goodput", "7500 tok/s", "percentile: p99")
    assert _past(v) and v.hi == pytest.approx(_ceiling(64), rel=1e-4), v.reason
    assert "concurrency 1, 16, 64" in v.reason and "at concurrency 64" in v.reason
    assert not _past(_verdict("goodput", "7300 tok/s", "percentile: p99"))
    assert _past(_verdict("goodput", "20000 tok/s", "percentile: p99"))  # the trial's ink


@pytest.mark.parametrize("at", ["concurrency: 1", "concurrency: 64", "rate: 2 req/s"])
def test_e2e_is_at_least_one_weight_read_per_output_token(at):
    floor = READ_S + 1023 * READ_S  # the prefill's weight read + 1,023 decode steps: 4.9093 s
    v = _verdict("e2e_p50", "4.85 s", at)
    assert _past(v) and v.lo == pytest.approx(floor, rel=1e-5), v.reason
    assert "1,023 decode steps" in v.reason and "3,350 GB/s" in v.reason
    assert v.tolerance_text == f"physical floor {v.fmt(floor)}"
    assert not _past(_verdict("e2e_p50", "4.912 s", at))  # 4.912 s is above 4.9093 s
    assert _past(_verdict("e2e_p50", "1 s", at))  # the trial's ink


def test_with_prefix_caching_off_the_prefill_floor_adds_its_compute():
    compute = 1024 * 2 * 8_030_261_248 / PEAK  # 16.629 ms: more than one weight read
    floor = compute + 1023 * READ_S  # 4.9211 s
    v = _verdict("e2e_mean", "4.912 s", "concurrency: 1", engine=", args: {enable_prefix_caching: false}")
    assert _past(v) and v.lo == pytest.approx(floor, rel=1e-5), v.reason
    assert "prefix caching is off" in v.reason


def test_varying_lengths_leave_the_per_request_bounds_out():
    # a run's requests are a finite draw of the distribution: its mean lengths bound nothing a run cannot cross
    varying = "{input_len: 1024, output_len: {dist: uniform, min: 512, max: 1536}}"
    for quantity, ink, at in (("total_throughput", "50000 tok/s", "concurrency: 16"),
                              ("request_throughput", "20 req/s", "concurrency: 64"),
                              ("e2e_p50", "1 s", "concurrency: 1")):
        assert not _past(_verdict(quantity, ink, at, workload=varying)), quantity
    # the output ceiling itself and goodput do not depend on the lengths being fixed
    assert _past(_verdict("goodput", "20000 tok/s", "percentile: p99", workload=varying))
    # a varying prompt leaves request throughput and E2E bounded (each request still makes 1,024 tokens)
    prompts = "{input_len: {dist: uniform, min: 512, max: 1536}, output_len: 1024}"
    assert _past(_verdict("request_throughput", "20 req/s", "concurrency: 64", workload=prompts))
    assert _past(_verdict("e2e_p50", "1 s", "concurrency: 1", workload=prompts))
    assert not _past(_verdict("total_throughput", "50000 tok/s", "concurrency: 16", workload=prompts))


def test_under_the_chat_api_total_throughput_is_unbounded():
    # the server counts the chat template's tokens in each prompt: the total's tokens a request are not 1,024 + 1,024
    chat = "{input_len: 1024, output_len: 1024, api: chat}"
    assert not _past(_verdict("total_throughput", "50000 tok/s", "concurrency: 16", workload=chat))
    assert _past(_verdict("request_throughput", "20 req/s", "concurrency: 64", workload=chat))


def test_replicas_raise_the_ceiling_to_r_engines_at_their_share():
    # 2 replicas at C = 64: 2 x one engine's ceiling at C = 32 = 2 x 4,763.8 = 9,527.6 tok/s (above one engine's
    # 7,407.0 at C = 64, which the bound was before: 9,000 tok/s failed as past it)
    two = ", replicas: 2"
    bound = 2 * _ceiling(32)
    assert bound == pytest.approx(9527.6, rel=1e-4)
    assert not _past(_verdict("output_throughput", "9000 tok/s", "concurrency: 64", engine=two))
    v = _verdict("output_throughput", "9700 tok/s", "concurrency: 64", engine=two)
    assert _past(v) and v.hi == pytest.approx(bound, rel=1e-4) and "2 replicas" in v.reason
    total = _verdict("total_throughput", "20000 tok/s", "concurrency: 64", engine=two)
    assert _past(total) and total.hi == pytest.approx(2 * bound, rel=1e-4)


def test_itl_stays_unbounded_and_the_cpu_backend_has_no_bounds():
    # ITL: a client can see tokens arrive together (bounds.py's docstring); the trial's 1 ms ink still skips
    assert _verdict("itl_p50", "1 ms", "concurrency: 1").status == "skip"
    assert _verdict("e2e_p50", "1 ms", "concurrency: 1", hardware="cpu").status == "skip"
