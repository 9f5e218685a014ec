"""Trial s25c #6: batch1_throughput is output_throughput at the batch-1 (else C = 1) point, the same figure, so it
carries the same interval and gets the same verdict: 414.93 tok/s against 300 ±40% was PASS as batch1_throughput and
INCONCLUSIVE as output_throughput at C = 1, its interval [378.84, 451.02] straddling the 420 boundary."""

from __future__ import annotations

import json

import pytest
from support.paths import RECORDED

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.scoring import score

RESULTS = RECORDED / "cpu-tiny-2026-12-05.results.json"


@pytest.mark.parametrize("ink, status", [("500", "inconclusive"), ("530", "pass"), ("400", "fail")])
def test_batch1_throughput_and_output_throughput_at_c1_agree(ink: str, status: str) -> None:
    doc = json.loads(RESULTS.read_text(encoding="utf-8"))
    c1 = next(p for p in doc["points"] if p["id"] == "closed-c1")
    iv = c1["client"]["intervals"]["output_throughput_tok_s"]  # [505.2, 556.2] around 530.7 tok/s
    spec = loads_spec(
        "hardware: cpu\nmodel: roofline-tiny\nworkload: {input_len: 128, output_len: 64}\n"
        "sweep: {mode: closed, concurrency: [1]}\npredictions:\n"
        f"  - {{id: b1, quantity: batch1_throughput, predicted: {ink} tok/s, tolerance: ±10%}}\n"
        f"  - {{id: c1, quantity: output_throughput, at: {{concurrency: 1}}, predicted: {ink} tok/s, "
        "tolerance: ±10%}\n")
    meas = RecordedMeasurement(doc)
    b1, at_c1 = (score(spec, p, "measured", meas) for p in spec.predictions)
    assert b1.measured_value == at_c1.measured_value == c1["client"]["output_throughput_tok_s"]
    assert b1.interval is not None and (b1.interval["lo"], b1.interval["hi"]) == (iv["lo"], iv["hi"])
    assert b1.status.value == at_c1.status.value == status
