"""The CPU-only math check never passes ink past a physical bound, and passes realistic ink below a roofline ceiling
(issue 22; the 2026-12-06 trial of the serving model, findings 1-3).

Every bound here is worked out from the datasheet and the model's config, written beside it:

* L4: 300 GB/s, 23,034 MiB as nvidia-smi reports it; Qwen3-8B: 8,190,735,360 parameters in bf16 = 16.38 GB of
  weights, KV 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 147,456 B a token, 2,359,296 B a 16-token block.
* TPOT floor: every decode step reads the weights: 16.38e9 / 300e9 = 54.60 ms.
* Throughput ceiling at C = 1 with 512/256 tokens: one sequence's KV at the mean decode context 512 + 128 = 640
  tokens, (16.38e9 + 640 x 147,456) / 300e9 = 54.92 ms a step: 18.21 tok/s.
* KV pool ceiling: (23,034 MiB - 16.38e9 B) // 2,359,296 B = 3,293 blocks, even at gpu_memory_utilization 1.
"""

from __future__ import annotations

import re

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import bands
from pytest_roofline.scoring import score

QWEN3_8B_WEIGHTS = 2 * 8_190_735_360
KV_TOKEN = 36 * 8 * 128 * 2 * 2
L4_BW, L4_MEM = 300e9, 23_034 * 2**20

L4 = """\
hardware: l4
model: qwen3-8b
engine: {{name: vllm, version: "0.11.0", args: {{max_model_len: 4096}}}}
workload: {{input_len: 512, output_len: 256}}
sweep: {{mode: closed, concurrency: [1, 8], requests_per_point: 10x}}
{column}defaults: {{tolerance: ±15%}}
predictions:
  - {{id: p, quantity: {quantity}, {at}predicted: {ink}{tol}}}
"""


def _l4(quantity: str, ink: str, *, at: str = "", tol: str = "", serving: bool = True):
    spec = loads_spec(L4.format(column="model_column: serving\n" if serving else "", quantity=quantity,
                                at=f"at: {{{at}}}, " if at else "", ink=ink, tol=f", tolerance: {tol}" if tol else ""))
    return score(spec, spec.predictions[0], "math", None)


@pytest.mark.parametrize("ink, c", [("48 ms", 1), ("50 ms", 8)])
def test_tpot_ink_below_the_weight_read_fails_whether_or_not_the_band_reached_it(ink, c):
    floor_s = QWEN3_8B_WEIGHTS / L4_BW  # 54.60 ms
    v = _l4("tpot_p50", ink, at=f"concurrency: {c}")
    assert v.status == "fail"
    assert "below the floor" in v.reason and "physical bound" in v.reason and "300 GB/s" in v.reason
    assert v.lo == pytest.approx(floor_s, rel=1e-3)
    # the serving model's band never reaches below the floor: at C = 1 it would (it is cut there); at C = 8 its
    # low end is above it
    assert v.serving_band_lo >= floor_s * (1 - 1e-3) and v.serving_band_hi > floor_s
    if c == 1:
        assert v.serving_band_lo == pytest.approx(floor_s, rel=1e-3)


def test_tpot_ink_just_above_the_floor_inside_the_band_passes():
    v = _l4("tpot_p50", "58 ms", at="concurrency: 1")
    assert v.status == "pass", v.reason


def test_throughput_above_the_roofline_fails_whatever_the_tolerance():
    ceiling = 1 / ((QWEN3_8B_WEIGHTS + 640 * KV_TOKEN) / L4_BW)  # 18.21 tok/s
    v = _l4("output_throughput", "21 tok/s", at="concurrency: 1", tol="±30%")
    assert v.status == "fail" and "above the ceiling" in v.reason and "no tolerance" in v.reason
    assert v.hi == pytest.approx(ceiling, rel=1e-3)


def test_kv_blocks_beyond_the_memory_fail_whatever_the_tolerance():
    blocks = (L4_MEM - QWEN3_8B_WEIGHTS) // (16 * KV_TOKEN)  # 3,293
    assert blocks == 3293
    v = _l4("num_gpu_blocks", "3500", tol="±50%", serving=False)
    assert v.status == "fail" and "3,293 blocks" in v.reason and "gpu_memory_utilization 1" in v.reason
    # the model's own pool (a smaller budget) is still checked as before below the bound
    assert _l4("num_gpu_blocks", "1756", serving=False).status == "pass"


@pytest.mark.parametrize("column", ["", "model_column: serving\n"])
def test_the_ceilings_own_arithmetic_rounded_is_not_past_it_in_either_column(column):
    # the ceiling 18.208 tok/s to three significant figures is 18.2 (±0.05): 18.25 is that rounding; 18.3 is 0.5%
    # past it, inside the file's math_tolerance ±1% (a hand calculation's rounding); 18.5 is 1.6% past it, beyond
    # ±1%; in either column (review 1.3, 1.4)
    def verdict(ink: str, quantity: str = "output_throughput", at: str = "at: {concurrency: 1}, "):
        spec = loads_spec(L4.format(column=column, quantity=quantity, at=at, ink=ink, tol="").replace(
            "defaults: {tolerance: ±15%}", "defaults: {tolerance: ±15%, math_tolerance: ±1%}"))
        return score(spec, spec.predictions[0], "math", None)

    # not past the bound (the serving column may still find it outside the serving band, a different verdict)
    assert "physical bound" not in verdict("18.25 tok/s").reason
    assert "physical bound" not in verdict("18.3 tok/s").reason
    assert verdict("18.5 tok/s").status == "fail" and "physical bound" in verdict("18.5 tok/s").reason
    b1 = verdict("18.25 tok/s", "batch1_throughput", "")
    assert b1.status == "pass", b1.reason
    # the day3 notebook's 5,060 tok/s at C = 64 against the roofline's 5,054.3 with its math_tolerance ±0.5%: passes
    # (tests/unit/test_behaviour_unchanged.py holds the whole file)


def test_a_wide_math_tolerance_does_not_carry_ink_past_a_bound():
    # math_tolerance ±50%: 25 tok/s against the 18.21 tok/s ceiling is 37% past it; a math tolerance grants at most
    # 1.5% past a bound (three 3-significant-figure inputs' rounding) (review 1.3)
    spec = loads_spec(L4.format(column="", quantity="output_throughput", at="at: {concurrency: 1}, ",
                                ink="25 tok/s", tol="").replace("predicted: 25 tok/s", "predicted: 25 tok/s, "
                                                                 "math_tolerance: ±50%"))
    v = score(spec, spec.predictions[0], "math", None)
    assert v.status == "fail" and "physical bound" in v.reason


@pytest.mark.parametrize("column", ["", "model_column: roofline\n", "model_column: serving\n"])
def test_the_tpot_floor_holds_in_every_column(column):
    # 20 ms against the 54.6 ms weight read: SKIP ("needs a measurement") under the default column before (review 1.2)
    spec = loads_spec(L4.format(column=column, quantity="tpot_p50", at="at: {concurrency: 1}, ", ink="20 ms",
                                tol=""))
    v = score(spec, spec.predictions[0], "math", None)
    assert v.status == "fail" and "below the floor" in v.reason


def test_per_request_throughput_is_bounded_by_a_request_alone():
    # a request runs fastest alone: 1 / ((16.38e9 + 640 x 147,456) / 300e9) = 18.21 tok/s at any concurrency
    # (review 1.7: the step at C = 8 is longer, and a run whose batch falls below C is not bound by it)
    spec = loads_spec(L4.format(column="", quantity="per_request_throughput", at="at: {concurrency: 8}, ",
                                ink="30 tok/s", tol=""))
    v = score(spec, spec.predictions[0], "math", None)
    assert v.status == "fail" and v.hi == pytest.approx(1 / ((QWEN3_8B_WEIGHTS + 640 * KV_TOKEN) / L4_BW), rel=1e-3)


H100 = """\
hardware: h100-sxm
model: {model}
engine: {{name: vllm, version: "0.11.0"{args}}}
workload: {{input_len: 1024, output_len: 1024}}
sweep: {{mode: closed, concurrency: [1, 4, 16, 64], requests_per_point: 10x}}
defaults: {{tolerance: ±15%, math_tolerance: ±1%}}
predictions:
  - {{id: p, quantity: {quantity}, {at}predicted: {ink}}}
"""


def _h100(quantity: str, ink: str, *, model: str = "qwen3-14b", at: str = "", tp: int = 1):
    args = f", args: {{tensor_parallel_size: {tp}}}" if tp > 1 else ""
    spec = loads_spec(H100.format(model=model, args=args, quantity=quantity, at=f"at: {{{at}}}, " if at else "",
                                  ink=ink))
    return score(spec, spec.predictions[0], "math", None)


def test_realistic_throughput_below_the_ceiling_passes_inside_the_serving_band():
    # the default column checks the roofline; ink below that ceiling is a realistic value, judged by the band
    v = _h100("output_throughput", "1 tok/s", at="concurrency: 64")
    lo, hi, roof = v.serving_band_lo, v.serving_band_hi, float(v.model_value)
    assert lo is not None and hi is not None and hi < roof
    # just inside the band's floor: away from the serving value itself, which the math tolerance would decide
    inside = _h100("output_throughput", f"{1.01 * lo:.0f} tok/s", at="concurrency: 64")
    assert inside.status == "pass" and "within the serving model's band" in inside.reason
    below = _h100("output_throughput", f"{0.8 * lo:.0f} tok/s", at="concurrency: 64")
    assert below.status == "fail" and "below the serving model's band" in below.reason
    above = _h100("output_throughput", f"{1.1 * roof:.0f} tok/s", at="concurrency: 64")
    assert above.status == "fail" and "above the ceiling" in above.reason
    exact = _h100("output_throughput", f"{roof:.0f} tok/s", at="concurrency: 64")
    assert exact.status == "pass"  # the roofline's own arithmetic, as the notebook wrote it


def test_realistic_moe_throughput_with_no_band_is_inconclusive_not_failed():
    v = _h100("output_throughput", "1 tok/s", model="qwen3-30b-a3b", at="concurrency: 16")
    roof = float(v.model_value)
    w = _h100("output_throughput", f"{0.7 * roof:.0f} tok/s", model="qwen3-30b-a3b", at="concurrency: 16")
    assert w.status == "inconclusive" and "no band" in w.reason


def test_the_batch1_band_is_a_share_of_the_step_rate_with_its_all_reduces():
    band = bands.roofline_fraction_band()
    assert band is not None and band.tp_max == 4  # lambda's TP 1/2/4 runs are the largest TP behind it
    # Llama-3.1-70B at TP 4 on H100: the ceiling 3.35e12 / (141.1e9 / 4) = 95.0 tok/s, but the roofline's step
    # also pays 2 x 80 all-reduces and the KV read, so its rate is lower; the band's floor is a share of that rate
    ceiling = float(_h100("batch1_ceiling", "1 tok/s", model="llama-3.1-70b", tp=4).model_value)
    assert ceiling == pytest.approx(3.35e12 / (2 * 70_553_706_496 / 4), rel=1e-3)
    v = _h100("batch1_throughput", "40 tok/s", model="llama-3.1-70b", tp=4)
    rate = float(v.model_value)  # batch1_throughput's roofline value is that step rate: 84.34 tok/s
    assert rate < 0.9 * ceiling
    assert v.status == "fail" and f"the {100 * band.lo:.0f}% of it that measured low-load runs reach" in v.reason
    assert v.hi == pytest.approx(rate) and v.lo <= band.lo * rate < band.lo * ceiling
    assert _h100("batch1_throughput", "52 tok/s", model="llama-3.1-70b", tp=4).status == "pass"
    # the ceiling itself is arithmetic (trial s26b #2): realistic ink there fails, naming batch1_throughput
    ceil = _h100("batch1_ceiling", "52 tok/s", model="llama-3.1-70b", tp=4)
    assert ceil.status == "fail" and ceil.reason.endswith("write quantity: batch1_throughput")


def test_beyond_the_shares_largest_tp_the_serving_band_alone_is_the_floor():
    # Llama-3.1-8B at TP 8: no run behind the share of the ceiling ran above TP 4, and the serving model's own C = 1
    # value (about 210 tok/s) lies far below 58% of the ceiling, so that share is no floor here; the serving
    # model's band at batch 1 is (the corpus holds a TP-8 source)
    for ink, status in (("220 tok/s", "pass"), ("150 tok/s", "fail")):
        b1 = _h100("batch1_throughput", ink, model="llama-3.1-8b", tp=8)
        assert b1.status == status, ink
        assert "serving model's band at batch 1" in b1.reason and "low-load runs reach" not in b1.reason
    assert _h100("batch1_ceiling", "2000 tok/s", model="llama-3.1-8b", tp=8).status == "fail"  # above: physics


def test_a_pool_over_several_gpus_is_printed_as_an_upper_bound():
    # benchmarks/RESULTS-kv-capacity.md: every public TP log measured fewer blocks than the model (+6% to +63%),
    # none more; predict and init say so beside the figure at TP > 1 and not on one GPU
    from pytest_roofline.cli.init import render
    from pytest_roofline.cli.predict import TP_POOL_CAVEAT

    four = render(gpu="h100", model="llama-3.1-70b", tp=4)
    kv_block = four.split("\n  - id: kv-blocks")[1].split("\n  - id:")[0]
    assert "upper bound" in kv_block and "never larger" in kv_block
    one = render(gpu="h100", model="qwen3-14b")
    assert "upper bound" not in one.split("\n  - id: kv-blocks")[1].split("\n  - id:")[0]
    assert "upper bound" in TP_POOL_CAVEAT and "RESULTS-kv-capacity.md" in TP_POOL_CAVEAT


def test_ink_against_an_unstable_open_loop_point_is_inconclusive():
    # Llama-3.1-8B on an H100 with 1,024/256 tokens serves about 20-25 req/s (the trial's measure); at 60 req/s
    # offered the queue grows all run long, so the model's TTFT depends on the request count (review 1.9)
    spec = loads_spec("""\
hardware: h100-sxm
model: llama-3.1-8b
engine: {name: vllm, version: "0.11.0"}
workload: {input_len: 1024, output_len: 256}
sweep: {mode: open, rates: [60 req/s], requests_per_point: 300}
model_column: serving
predictions:
  - {id: t, quantity: ttft_p50, at: {rate: 60 req/s}, predicted: 100 ms}
""")
    v = score(spec, spec.predictions[0], "math", None)
    assert v.serving_unstable.startswith("unstable") and v.status == "inconclusive", v.reason
    assert "a measurement decides" in v.reason


def test_ttft_ink_below_the_prefill_floor_says_only_cache_hits_reach_it():
    # Llama-3.1-8B on an H100, 1,024-token prompts: 2 x 8.03e9 x 1,024 / 989.4e12 = 16.6 ms of compute at the
    # GPU's peak (trial s24 L11: 5 ms ink read only "below the serving model's band")
    spec = loads_spec("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine: {name: vllm, version: \"0.26.0\"}\n"
                      "workload: {input_len: 1024, output_len: 1024}\nsweep: {mode: closed, concurrency: [1]}\n"
                      "predictions:\n  - {id: t, quantity: ttft_p50, at: {concurrency: 1}, predicted: 5 ms}\n"
                      "  - {id: u, quantity: ttft_p50, at: {concurrency: 1}, predicted: 18 ms}\n")
    low, above_floor = (score(spec, p, "math", None) for p in spec.predictions)
    assert low.status == "fail"
    m = re.search(r"below the 1,024-token prefill's compute floor \(([\d.]+) ms at 100% of the GPU's peak FLOP/s\): "
                  r"only prefix-cache hits reach a TTFT there", low.reason)
    assert m and float(m.group(1)) == pytest.approx(2 * 8.03e9 * 1024 / 989.4e12 * 1e3, rel=0.01)
    assert "prefill's compute floor" not in above_floor.reason


def test_no_floor_note_where_the_workload_shares_a_prefix():
    # 896 of 1,024 prompt tokens shared: the serving model's own TTFT is below the full prefill's floor, so the floor
    # is no bound here (trial s24c M4)
    spec = loads_spec("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine: {name: vllm, version: \"0.26.0\"}\n"
                      "workload: {input_len: 1024, output_len: 1024, shared_prefix_len: 896}\n"
                      "sweep: {mode: closed, concurrency: [1], warmup: 2}\n"
                      "predictions:\n  - {id: t, quantity: ttft_p50, at: {concurrency: 1}, predicted: 2 ms}\n")
    v = score(spec, spec.predictions[0], "math", None)
    assert float(v.serving_value) < 0.0166 and "prefill's compute floor" not in v.reason


def test_calibrations_prefill_floor_is_one_gpus_share_under_tensor_parallelism():
    # calibration's screen left out a TTFT "below the prompt's compute floor" reckoned with the whole model's FLOPs on
    # one GPU's peak: at TP 4 four times the floor, so a TTFT twice the real floor was dropped as impossible. The
    # floor is one GPU's share of the prompt's FLOPs at that GPU's peak, as the math check's floor note reads it
    from pytest_roofline.model import analytical as an
    from pytest_roofline.model import calibration as cal
    from pytest_roofline.model.setup import build_setup

    setup = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b",
                        engine={"name": "vllm", "args": {"tensor_parallel_size": 4}},
                        workload={"input_len": 1024, "output_len": 256})
    floor_ms = 1e3 * an.prefill_floor_s(1024, setup.flop_per_token_per_gpu, setup.peak_flop_per_s)
    whole_ms = 1e3 * an.prefill_floor_s(1024, setup.flop_per_token, setup.peak_flop_per_s)
    assert whole_ms == pytest.approx(4 * floor_ms, rel=0.05)
    pt = cal.MeasuredPoint(id="closed-c1", concurrency=1, input_len=1024, output_len=256, ttft_p50_ms=2 * floor_ms)
    kept, _notes, why = cal.screen_points_why([pt], setup)
    assert not why and kept[0].ttft_p50_ms == pytest.approx(2 * floor_ms)
    low = cal.MeasuredPoint(id="closed-c1", concurrency=1, input_len=1024, output_len=256, ttft_p50_ms=0.5 * floor_ms)
    assert cal.screen_points_why([low], setup)[2]  # below the real floor: still left out
