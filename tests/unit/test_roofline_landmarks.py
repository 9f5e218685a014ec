"""The decode roofline's landmarks have one home (``Setup.roofline_landmarks``): the quantities, ``roofline
predict``, the scorecard's headlines and the charts all read it, so at TP=2 they agree on one GPU's share.

Worked by hand for h100-sxm (3.35 TB/s) serving llama-3.1-8b (16,060,522,496 bf16 weight bytes): at TP=2 each GPU
reads 8,030,261,248 bytes a step, so the batch-1 ceiling is 3.35e12 / 8.03026e9 = 417.17 tok/s — not the 208.6 of
the whole model's weights, which the per-request chart drew before this home existed.
"""

from __future__ import annotations

import pytest

from pytest_roofline import cli
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model.setup import build_setup
from pytest_roofline.quantities.registry import QUANTITIES
from pytest_roofline.report import charts
from pytest_roofline.report.scorecard import _headlines

TP2 = """\
hardware: h100-sxm
model: llama-3.1-8b
engine: {args: {tensor_parallel_size: 2}}
workload: {input_len: 1024, output_len: 1024}
predictions:
  - {id: ceiling, quantity: batch1_ceiling, predicted: 417 tok/s, tolerance: 5%}
"""
CEILING_TP2 = 3.35e12 / (16_060_522_496 / 2)


@pytest.fixture(scope="module")
def setup():
    return build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                       engine={"args": {"tensor_parallel_size": 2}}, workload={"input_len": 1024})


def test_the_worked_ceiling(setup) -> None:
    assert setup.tensor_parallel_size == 2
    assert CEILING_TP2 == pytest.approx(417.17, abs=0.01)
    assert setup.roofline_landmarks().batch1_ceiling_tok_per_s == pytest.approx(CEILING_TP2)


def test_quantities_cli_scorecard_and_chart_agree_at_tp2(setup) -> None:
    lm = setup.roofline_landmarks()
    assert QUANTITIES["batch1_ceiling"].model(setup, {}).value == pytest.approx(CEILING_TP2)
    assert QUANTITIES["half_saturation_batch"].model(setup, {}).value == pytest.approx(lm.half_saturation_batch)
    assert QUANTITIES["throughput_asymptote"].model(setup, {}).value == pytest.approx(
        lm.throughput_asymptote_tok_per_s)
    assert QUANTITIES["compute_roof"].model(setup, {}).value == pytest.approx(lm.compute_roof_tok_per_s)
    table = cli.predict_rows(setup=setup, batches=[1, 8])
    assert table.batch1_ceiling_tok_per_s == pytest.approx(CEILING_TP2)
    assert table.half_saturation_batch == pytest.approx(lm.half_saturation_batch)
    assert table.knee_batch == lm.knee.batch
    spec = loads_spec(TP2)
    heads = dict(_headlines(spec, setup, None))
    assert heads["batch-1 ceiling"].startswith("417.2 tok/s")
    fig = charts.per_request_chart(spec, setup, None, [])
    assert fig is not None and "batch-1 ceiling BW ÷ W = 417.2 tok/s" in fig.svg
    assert "208.6" not in fig.svg


def test_landmarks_are_one_gpus_share(setup) -> None:
    one = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", workload={"input_len": 1024})
    assert one.roofline_landmarks().batch1_ceiling_tok_per_s == pytest.approx(CEILING_TP2 / 2)
    lm2, lm1 = setup.roofline_landmarks(), one.roofline_landmarks()
    assert lm2.weight_bytes == lm1.weight_bytes / 2
    assert lm2.compute_roof_tok_per_s == pytest.approx(2 * lm1.compute_roof_tok_per_s)


# Qwen3-30B-A3B (config.json: hidden 2048, moe_intermediate_size 768, 48 layers all MoE, 128 experts, top-8), bf16:
# 61,064,245,248 weight bytes; one routed expert is 3 x 2048 x 768 = 4,718,592 parameters = 9,437,184 bytes. One
# token reads 8 experts a layer, so a batch-1 step leaves 48 x 120 experts unread: 61,064,245,248 - 48 x 120 x
# 9,437,184 = 6,706,065,408 bytes read, and the ceiling on an H100 SXM is 3.35e12 / 6,706,065,408 = 499.5 tok/s
# (it read 54.9 tok/s, every expert every step, while vLLM runs this model at ~104 tok/s on the slower A100).
MOE_READ_B1 = 61_064_245_248 - 48 * 120 * 9_437_184


def test_an_moe_step_reads_only_the_experts_its_tokens_are_routed_to():
    s = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-30b-a3b")
    assert s.weight_bytes == 61_064_245_248
    assert s.weight_bytes_read_per_gpu(1) == pytest.approx(MOE_READ_B1, rel=1e-12)
    assert s.roofline_landmarks().batch1_ceiling_tok_per_s == pytest.approx(3.35e12 / MOE_READ_B1, rel=1e-12)
    assert 3.35e12 / MOE_READ_B1 == pytest.approx(499.55, abs=0.01)
    # 64 tokens: 128 x (1 - (120/128)^64) = 126.06 experts a layer; the table's step reads that many
    read_64 = 61_064_245_248 - 48 * (128 - 128 * (1 - (120 / 128) ** 64)) * 9_437_184
    assert s.decode_step(64).weight_bytes == pytest.approx(read_64, rel=1e-12)
    assert s.decode_step(1).throughput_tok_per_s < s.roofline_landmarks().batch1_ceiling_tok_per_s  # KV read too
    # TP 2 halves every expert on each rank; a dense model reads all its weights at any batch
    tp2 = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-30b-a3b", engine={"args": {"tensor_parallel_size": 2}})
    assert tp2.weight_bytes_read_per_gpu(1) == pytest.approx(MOE_READ_B1 / 2, rel=1e-12)
    dense = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b")
    assert dense.weight_bytes_read_per_gpu(1) == dense.weight_bytes_read_per_gpu(512) == dense.weight_bytes


def test_the_experts_read_grow_with_the_tokens_to_all_of_them():
    from pytest_roofline.model import analytical as an
    assert an.moe_experts_read(128, 8, 1) == pytest.approx(8.0)
    assert an.moe_experts_read(128, 8, 0) == 0.0
    assert an.moe_experts_read(8, 2, 1) == pytest.approx(2.0)  # Mixtral: 2 of 8
    assert an.moe_experts_read(8, 2, 2) == pytest.approx(8 * (1 - 0.75 ** 2))  # 3.5: the two tokens may share one
    assert an.moe_experts_read(128, 8, 72) > 0.99 * 128
    with pytest.raises(ValueError):
        an.moe_experts_read(0, 8, 1)


def test_pipeline_stages_do_not_raise_the_batch1_ceiling():
    """At PP = 2 one token passes both stages in turn, so their weight reads add up: the batch-1 ceiling is the
    whole model's, 3.35e12 / 16,060,522,496 B = 208.6 tok/s (it read 417.2, one stage's, before); an MoE model's
    stages subtract their own unread experts (it went negative: a crash)."""
    pp = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                     engine={"args": {"pipeline_parallel_size": 2}})
    assert pp.weight_bytes_read_per_token_pass(1) == pytest.approx(16_060_522_496, rel=1e-12)
    assert cli.main(["predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--pp", "2", "--batch", "1",
                     "--json"]) == 0
    from pytest_roofline.model.setup import RooflineLandmarks
    assert RooflineLandmarks(pp).batch1_ceiling_tok_per_s == pytest.approx(3.35e12 / 16_060_522_496, rel=1e-12)
    moe = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-30b-a3b",
                      engine={"args": {"pipeline_parallel_size": 2}})
    assert moe.weight_bytes_read_per_token_pass(1) == pytest.approx(MOE_READ_B1, rel=1e-12)
    assert 0 < moe.weight_bytes_read_per_gpu(1) < MOE_READ_B1  # one stage's share, never below zero
