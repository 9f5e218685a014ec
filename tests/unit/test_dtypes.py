"""The one dtype table (pytest_roofline/model/dtypes.py) and the three places that read it: the hardware
catalog's peaks, the architecture's weight and KV bytes, and the setup's compute dtype.

Expected bytes are the storage sizes of the formats (bf16/fp16 16 bits, fp8/int8 8, int4/fp4 4, fp32 32)."""

from __future__ import annotations

import pytest

from pytest_roofline.errors import ModelArchError, SetupError
from pytest_roofline.model import architecture, dtypes, hardware
from pytest_roofline.model.setup import build_setup


@pytest.mark.parametrize("name, key", [
    ("bf16", "bf16"), ("bfloat16", "bf16"), ("BFloat16", "bf16"), ("float16", "fp16"), ("half", "fp16"),
    ("fp8_e4m3", "fp8"), ("FP8-E5M2", "fp8"), ("float8_e4m3fn", "fp8"), ("nvfp4", "fp4"), ("float32", "fp32"),
    ("int4", "int4"), ("auto", "auto"), ("int3", "int3"),
])
def test_names_resolve_to_one_canonical_key(name, key):
    assert dtypes.canonical(name) == key
    assert hardware.normalize_dtype(name) == key


@pytest.mark.parametrize("name, weight, kv", [
    ("bf16", 2, 2), ("fp16", 2, 2), ("fp8", 1, 1), ("fp8_e5m2", 1, 1), ("int8", 1, None), ("int4", 0.5, None),
    ("fp4", 0.5, None), ("nvfp4", 0.5, None), ("fp32", 4, 4), ("auto", 2, 2),
])
def test_bytes_per_weight_and_per_kv_element(name, weight, kv):
    assert architecture.weight_dtype_bytes(name) == weight
    if kv is None:
        with pytest.raises(ModelArchError, match="unknown KV-cache dtype"):
            architecture.kv_dtype_bytes(name)
    else:
        assert architecture.kv_dtype_bytes(name) == kv


def test_tf32_is_a_compute_mode_not_a_storage_dtype():
    with pytest.raises(ModelArchError, match="unknown weight dtype"):
        architecture.weight_dtype_bytes("tf32")
    assert "tf32" in dtypes.peak_dtypes()


def test_the_peak_keys_are_the_catalog_keys():
    used = {d for spec in hardware.CATALOG.values() for d in spec.peak_flop_per_s}
    assert used <= set(dtypes.peak_dtypes())
    assert set(dtypes.peak_dtypes()) == {"bf16", "fp16", "fp8", "tf32", "int8", "fp4", "fp32"}


@pytest.mark.parametrize("weight_dtype, compute, canonical", [
    ("bf16", "bf16", "bf16"), ("bfloat16", "bf16", "bf16"), ("auto", "bf16", "bf16"), ("half", "fp16", "fp16"),
    ("fp8", "fp8", "fp8"), ("fp8_e4m3", "fp8", "fp8"), ("int8", "int8", "int8"), ("int4", "bf16", "int4"),
    ("nvfp4", "fp4", "fp4"), ("float32", "tf32", "fp32"),
])
def test_setup_weight_dtype_and_the_peak_it_computes_at(weight_dtype, compute, canonical):
    setup = build_setup(hardware_ref="b200", model_ref="qwen3-8b", model_overrides={"dtype": weight_dtype})
    assert setup.weight_dtype == canonical
    assert setup.compute_dtype == compute
    assert setup.weight_bytes == 8_190_735_360 * architecture.weight_dtype_bytes(canonical)
    assert setup.peak_flop_per_s == hardware.CATALOG["b200"].peak_flop_per_s[compute]  # B200 has every peak


def test_setup_rejects_an_unknown_dtype_with_the_known_names():
    with pytest.raises(SetupError) as err:
        build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b", model_overrides={"dtype": "int3"})
    assert "int3" in str(err.value) and "bfloat16" in str(err.value) and "int4" in str(err.value)
