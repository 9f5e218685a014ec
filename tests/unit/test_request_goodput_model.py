"""The serving model's request_goodput (issue 22: a model value for every per-point quantity): the simulated
requests meeting every SLO given, by vLLM's ``--goodput`` rule (vllm/benchmarks/serve.py ``calculate_metrics``: each
SLO ≥ the request's value; TPOT = (E2E − TTFT) ÷ (output tokens − 1), 0 for one output token), ÷ the simulated
duration. The rule has one home, ``model.serving.prediction.meets_slos``, which the measured value counts by too.

The simulated points below run every engine step in a fixed 1/64 s (15.625 ms, exact in binary, so a value on its
SLO is exactly on it), with no API-server time, so each request's TTFT and E2E latency follow from which step
gives it which token: the schedules are vLLM V1's with chunked prefill off (tests/unit/test_serving_unchunked.py
works the same ones out step by step).
"""

from __future__ import annotations

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.stats import goodput as measured_goodput
from pytest_roofline.model import serving as sv
from pytest_roofline.model.serving.cost import StepCost
from pytest_roofline.model.serving.prediction import meets_slos
from pytest_roofline.model.setup import build_setup
from pytest_roofline.model.workload import LengthDist
from pytest_roofline.scoring import score

STEP_S = 1 / 64


class _FixedStep:
    """A step cost of exactly :data:`STEP_S`, whatever the step holds."""

    def terms(self, *_args: object) -> StepCost:
        return StepCost(STEP_S, 0.0, 0.0, 0.0, 0.0, STEP_S, 0.0)

    def time(self, *_args: object) -> float:
        return STEP_S


@pytest.fixture(scope="module")
def tiny():
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny", engine={"name": "vllm", "version": "0.32.0"})


def _point(setup, prompts: tuple[int, ...], outs: tuple[int, ...]):
    """A closed loop of len(prompts) clients, one request each, all sent at t = 0; vLLM V1 without chunked prefill
    and a 100-token budget; every step 1/64 s; no API-server time. Returns (the steps, the point's prediction)."""
    engine = sv.EngineConfig(max_num_seqs=8, max_num_batched_tokens=100, block_size=16, num_gpu_blocks=1000,
                             chunked_prefill=False, enable_prefix_caching=False, reserve_full_prompt=False,
                             engine_kind="v1", skip_long_prompts=False)
    constants = sv.default_constants(setup).replace(frontend_in_s=0.0, frontend_out_s=0.0, api_out_per_token_s=0.0)
    w = sv.Workload(input_len=LengthDist(1, "file", values=prompts, order="sequential"),
                    output_len=LengthDist(1, "file", values=outs, order="sequential"),
                    num_requests=len(prompts), concurrency=len(prompts))
    trace: list[sv.StepRecord] = []
    sim = sv._Sim(setup, w, engine, constants, False, trace)
    sim.cost = _FixedStep()  # type: ignore[assignment]
    sim.run()
    return [(s.decode_seqs, s.prefill_tokens) for s in trace], sim.result()


def test_each_simulated_request_is_kept_with_its_ttft_and_e2e_worked_out_by_hand(tiny):
    # step 1 (ends 1/64 s): r0's 60-token prompt (40 of the budget left; r1's 60 do not fit: V1 stops there)
    # step 2 (2/64): r0 decodes its 2nd token; r1's 60 and r2's 30 are prefilled: their 1st tokens
    # step 3 (3/64): r0 its 3rd (last), r1 and r2 their 2nd; step 4 (4/64): r1 and r2 their 3rd (last)
    steps, pp = _point(tiny, (60, 60, 30), (3, 3, 3))
    assert steps == [(0, 60), (1, 90), (3, 0), (2, 0)]
    assert [(r.ttft_s, r.e2e_s, r.output_tokens) for r in pp.requests] == [
        (1 / 64, 3 / 64, 3), (2 / 64, 4 / 64, 3), (2 / 64, 4 / 64, 3)]
    assert pp.duration_s == 4 / 64  # first send (0) to the last completion
    assert pp.request_throughput_req_per_s == 3 / (4 / 64)  # 48 req/s
    # the E2E percentiles over 46.875, 62.5, 62.5 ms (linear interpolation, as vllm bench serve): p50 the middle
    # one, p99 at position 0.99 x 2 = 1.98, between two 62.5s; the mean 171.875 / 3
    assert pp.e2e_p50_ms == pytest.approx(62.5) and pp.e2e_p99_ms == pytest.approx(62.5)
    assert pp.e2e_mean_ms == pytest.approx(171.875 / 3)


@pytest.mark.parametrize(("slo_ms", "good"), [
    ({"ttft_ms": 20.0}, 1),                          # r0's 15.625 ms meets it, r1's and r2's 31.25 ms do not
    ({"ttft_ms": 31.25}, 3),                         # on the SLO meets it (vLLM: SLO >= value)
    ({"e2el_ms": 46.875}, 1),                        # r0's E2E, on its SLO; r1 and r2 take 62.5 ms
    ({"e2el_ms": 62.5}, 3),
    ({"tpot_ms": 15.625}, 3),                        # every TPOT is (E2E − TTFT) ÷ 2 = 2 steps ÷ 2 = 15.625 ms
    ({"tpot_ms": 15.0}, 0),
    ({"ttft_ms": 40.0, "e2el_ms": 50.0}, 1),         # every SLO given must hold: r1 and r2 miss the E2E one
    ({}, 3),                                         # no SLO given: every completed request counts
])
def test_the_goodput_under_slos_that_split_the_requests(tiny, slo_ms, good):
    _steps, pp = _point(tiny, (60, 60, 30), (3, 3, 3))
    assert pp.good_requests(slo_ms) == good
    assert pp.goodput_req_per_s(slo_ms) == pytest.approx(good / (4 / 64))  # good ÷ 0.0625 s: 16 req/s each


def test_a_one_token_request_has_tpot_zero_and_meets_any_tpot_slo(tiny):
    # step 1 (1/64 s): r0's 60-token prompt gives its only token: it finishes (TTFT = E2E = 1/64 s, TPOT 0)
    # step 2 (2/64): r1's 60 and r2's 30 prefilled; steps 3 and 4: their 2nd and 3rd tokens (E2E 4/64 s)
    steps, pp = _point(tiny, (60, 60, 30), (1, 3, 3))
    assert steps == [(0, 60), (0, 90), (2, 0), (2, 0)]
    assert [(r.ttft_s, r.e2e_s) for r in pp.requests] == [(1 / 64, 1 / 64), (2 / 64, 4 / 64), (2 / 64, 4 / 64)]
    # TPOT ≤ 10 ms: r0 (0) meets it, r1 and r2 ((4 − 2)/64 s ÷ 2 = 15.625 ms) do not: 1 good in 0.0625 s
    assert pp.good_requests({"tpot_ms": 10.0}) == 1
    assert pp.goodput_req_per_s({"tpot_ms": 10.0}) == pytest.approx(16.0)


def test_the_measured_and_the_modelled_value_count_by_one_rule():
    # measure.stats.goodput's is_good is the model's meets_slos: the same answers on vLLM's edge cases
    cases = [(0.050, 0.050 + 63 * 0.002, 64, {"ttft_ms": 50.0, "tpot_ms": 2.0}),
             (0.0501, 0.0501 + 63 * 0.002, 64, {"ttft_ms": 50.0}), (0.010, 5.0, 1, {"tpot_ms": 0.001}),
             (None, 1.0, 64, {"ttft_ms": 1e9}), (0.010, 0.5, 64, {"e2el_ms": 400.0})]
    assert [meets_slos(*c) for c in cases] == [True, False, True, False, False]
    assert [measured_goodput.is_good(*c) for c in cases] == [meets_slos(*c) for c in cases]


def test_the_prediction_dict_leaves_the_per_request_records_out(tiny):
    _steps, pp = _point(tiny, (60, 60, 30), (3, 3, 3))
    assert "requests" not in pp.to_dict() and pp.to_dict()["num_requests"] == 3


# -------------------------------------------------------------------------- the Quantity, through the scoring path

SPEC = """\
hardware: h100-sxm
model: llama-3.1-8b
model_column: serving
engine: {{name: vllm, version: "0.26.0"}}
workload: {{input_len: 1024, output_len: 256}}
sweep: {{mode: closed, concurrency: [1, 8]}}
slo: {{{slo}}}
predictions:
  - {{id: rt, quantity: request_throughput, at: {{concurrency: 8}}, predicted: 1 req/s, tolerance: ±15%}}
  - {{id: gp, quantity: request_goodput, at: {{concurrency: 8{at}}}, predicted: {ink}, tolerance: ±15%}}
"""


def _scored(slo: str, ink: str = "1 req/s", at: str = ""):
    spec = loads_spec(SPEC.format(slo=slo, ink=ink, at=at))
    return [score(spec, p, "math", None) for p in spec.predictions]


def test_the_quantity_has_a_serving_value_under_the_files_slo():
    # SLOs no request misses (100 s each): every simulated request is good, so the goodput is the model's request
    # throughput at the point (its own quantity's serving value, computed without any SLO)
    rt, gp = _scored("ttft: 100 s, tpot: 100 s, e2el: 100 s")
    assert gp.model_source == "serving" and float(rt.serving_value) > 0
    assert float(gp.serving_value) == pytest.approx(float(rt.serving_value), rel=1e-12)
    assert "met TTFT ≤ 100000 ms and TPOT ≤ 100000 ms and E2E latency ≤ 100000 ms" in gp.serving_explanation
    # an SLO no request meets (a TTFT of 1 µs is under the API server's own 2 ms): none is good
    _rt, none = _scored("ttft: 0.001 ms")
    assert float(none.serving_value) == 0.0 and " 0 of " in none.serving_explanation


def test_an_at_slo_is_merged_over_the_files():
    # the file's 100 s TTFT holds for every request; the prediction's at: adds a TPOT of 1 µs no request meets
    _rt, gp = _scored("ttft: 100 s", at=", tpot: 0.001 ms")
    assert float(gp.serving_value) == 0.0
    assert "TTFT ≤ 100000 ms and TPOT ≤ 0.001 ms" in gp.serving_explanation


def test_no_band_so_the_math_check_is_the_tolerance_alone_as_for_request_throughput():
    # no public run of the accuracy corpus reports request goodput: no band, so ink outside ±15% of the model's
    # value fails, as it does for request_throughput (also unbanded); within it passes
    rt, gp = _scored("ttft: 100 s, tpot: 100 s, e2el: 100 s")
    model = float(gp.serving_value)
    assert gp.serving_band_lo is None and gp.serving_band_hi is None and not gp.serving_band_text
    assert rt.serving_band_lo is None and not rt.serving_band_text
    assert "no band" in gp.serving_explanation
    slo = "ttft: 100 s, tpot: 100 s, e2el: 100 s"
    assert _scored(slo, ink=f"{1.1 * model:.4f} req/s")[1].status == "pass"
    off = _scored(slo, ink=f"{1.3 * model:.4f} req/s")[1]
    assert off.status == "fail" and "outside ±15%" in off.reason


def test_without_an_slo_the_model_says_why():
    spec = loads_spec(SPEC.format(slo="percentile: p99", ink="1 req/s", at="").replace("slo: {percentile: p99}\n",
                                                                                        ""))
    v = score(spec, spec.predictions[1], "math", None)
    assert v.serving_value is None and "needs SLOs" in v.serving_explanation


def test_with_replicas_it_is_the_replicas_sum_at_their_share_of_the_load():
    # engine.replicas: 2 at C = 16: each replica serves C = 8 (an even split), so the deployment's goodput is twice
    # one replica's at C = 8 (docs/how-to/scaling-out.md), as request_throughput scales
    one = _scored("ttft: 100 s")[1]
    spec = loads_spec(SPEC.format(slo="ttft: 100 s", ink="1 req/s", at="").replace(
        'engine: {name: vllm, version: "0.26.0"}', 'engine: {name: vllm, version: "0.26.0", replicas: 2}').replace(
        "at: {concurrency: 8}", "at: {concurrency: 16}"))
    two = score(spec, spec.predictions[1], "math", None)
    assert float(two.serving_value) == pytest.approx(2 * float(one.serving_value), rel=1e-12)


def test_without_model_column_serving_the_math_check_skips_naming_the_value_as_for_request_throughput():
    spec = loads_spec(SPEC.format(slo="ttft: 100 s", ink="1 req/s", at="").replace("model_column: serving\n", ""))
    rt, gp = (score(spec, p, "math", None) for p in spec.predictions)
    assert rt.status == gp.status == "skip"
    # loose SLOs: every request is good, so both name the same value (request_throughput's serving value)
    assert f"the serving model predicts {rt.serving_text}" in gp.reason
    assert f"the serving model predicts {rt.serving_text}" in rt.reason
