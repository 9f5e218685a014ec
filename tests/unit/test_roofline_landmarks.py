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
