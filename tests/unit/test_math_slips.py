"""Trial s25a #5, #6: a byte figure written with a binary and a decimal prefix swapped is named as that slip, with
the ink that would pass, instead of advice to widen the tolerance; the KV pool's GiB-vs-GB hint is given only for a
miss the size that slip makes."""

from __future__ import annotations

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.scoring import score

HEAD = "hardware: h100-sxm\nmodel: qwen3-14b\npredictions:\n"


def _verdict(line: str):  # type: ignore[no-untyped-def]
    spec = loads_spec(HEAD + line)
    return score(spec, spec.predictions[0], "math", None)


@pytest.mark.parametrize("ink, pair, said, meant", [
    # Qwen3-14B's bf16 weights: 29.537 GB = 27.508 GiB; its KV: 2 x 40 layers x 8 heads x 128 x 2 B = 163,840 B
    ("{id: w, quantity: weight_bytes, predicted: 29.54 GiB}", "GiB and GB", "GB", "GiB"),
    ("{id: w, quantity: weight_bytes, predicted: 27.51 GB}", "GiB and GB", "GiB", "GB"),
    ("{id: k, quantity: kv_bytes_per_token, predicted: 160 KB}", "KiB and KB", "KiB", "KB"),
])
def test_a_swapped_byte_prefix_is_named(ink: str, pair: str, said: str, meant: str) -> None:
    v = _verdict(f"  - {ink}\n")
    assert v.status.value == "fail"
    assert f"the factor between {pair}: the ink's number is the model's in {said}, written as {meant}" in v.reason
    assert "to allow more" not in v.reason


def test_another_byte_miss_gets_the_tolerance_advice() -> None:
    v = _verdict("  - {id: w, quantity: weight_bytes, predicted: 28.0 GB}\n")  # 5.2% under 29.537 GB: no prefix
    assert v.status.value == "fail" and "factor between" not in v.reason and "to allow more" in v.reason


def test_the_kv_pools_gib_hint_needs_a_miss_of_the_slips_size() -> None:
    model = float(_verdict("  - {id: b, quantity: num_gpu_blocks, predicted: 1}\n").model_value)
    near = _verdict(f"  - {{id: b, quantity: num_gpu_blocks, predicted: {int(model * 0.98)}}}\n")
    far = _verdict(f"  - {{id: b, quantity: num_gpu_blocks, predicted: {int(model * 0.90)}}}\n")
    assert near.status.value == far.status.value == "fail"
    assert not any("check GiB vs GB" in d for d in near.diagnosis)
    assert any("check GiB vs GB" in d for d in far.diagnosis)


def test_a_miss_near_another_pairs_factor_is_not_a_slip() -> None:
    """The integration suite's case: 16.0 GB against Qwen3-8B's 16.381 GB is ×1.0238, within 0.1% of KiB ÷ KB, but the
    ink is in GB and no prefix of its pair (GiB/GB) was swapped: the tolerance advice, no slip."""
    spec = loads_spec("hardware: h100-sxm\nmodel: qwen3-8b\npredictions:\n"
                      "  - {id: w, quantity: weight_bytes, predicted: 16.0 GB}\n")
    v = score(spec, spec.predictions[0], "math", None)
    assert v.status.value == "fail" and "factor between" not in v.reason
