"""The CPU-only math check of a roofline ceiling uses the model's band (issue 22): realistic ink between the share
of the ceiling measured runs reach and the ceiling passes; ink above the ceiling always fails."""

from __future__ import annotations

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import bands
from pytest_roofline.scoring import score

SPEC = """\
hardware: a100-sxm4-80gb
model: qwen3-8b
predictions:
  - {{id: b1, quantity: batch1_throughput, predicted: {ink}, tolerance: ±10%}}
"""


def _verdict(ink: str):
    spec = loads_spec(SPEC.format(ink=ink))
    return score(spec, spec.predictions[0], "math", None)


def _ceiling() -> float:
    return float(_verdict("1 tok/s").model_value)


def test_realistic_ink_below_the_ceiling_passes_inside_the_band():
    band = bands.roofline_fraction_band()
    assert band is not None and band.hi == 1.0 and 0.3 < band.lo < 0.9
    c = _ceiling()
    # 85% of the ceiling: what the 95 tok/s against a 112 tok/s ceiling is; ±10% does not reach the model
    v = _verdict(f"{0.85 * c:.1f} tok/s")
    assert v.status == "pass", v.reason
    assert "within the model's band" in v.reason
    assert (v.lo, v.hi) == (pytest.approx(band.lo * c), pytest.approx(c))


def test_ink_above_the_ceiling_always_fails():
    c = _ceiling()
    v = _verdict(f"{1.2 * c:.1f} tok/s")
    assert v.status == "fail" and "physical bound" in v.reason


def test_ink_below_the_band_fails_and_ink_at_the_ceiling_passes_as_before():
    band = bands.roofline_fraction_band()
    c = _ceiling()
    assert _verdict(f"{0.5 * band.lo * c:.1f} tok/s").status == "fail"
    v = _verdict(f"{c:.3f} tok/s")
    assert v.status == "pass" and "within" in v.reason


def test_a_serving_model_value_shows_its_band_in_the_verdicts_explanation():
    from support.paths import REPO

    from pytest_roofline.format.spec import load_spec

    spec = load_spec(REPO / "predictions" / "day3-experiments.yaml")
    pred = next(p for p in spec.predictions if p.id == "throughput-1k-c32")
    v = score(spec, pred, "math", None)
    assert v.serving_value is not None and v.serving_band_text
    rows = dict(v.explanation_rows())
    assert "serving band" in rows and "docs/explanation/models.md" in rows["serving band"]
    assert v.to_dict()["serving_band_text"] == v.serving_band_text
