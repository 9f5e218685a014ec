"""Hardware catalog: figures, ridge points, family resolution, overrides."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_roofline.model import hardware as hw
from pytest_roofline.model.hardware import (
    CATALOG,
    AmbiguousHardwareError,
    HardwareError,
    HardwareMismatchError,
    HardwareOverrideError,
    HardwareSpec,
    UnknownHardwareError,
    families,
    get_hardware,
    resolve,
    with_overrides,
)
from pytest_roofline.units import GIB, MIB

REQUIRED_IDS = {
    "a100-pcie-40gb",
    "a100-sxm4-40gb",
    "a100-pcie-80gb",
    "a100-sxm4-80gb",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200",
    "h200-nvl",
    "b200",
    "l4",
    "l40s",
    "rtx-4090",
    "mi300x",
    "cpu",
}


# --------------------------------------------------------------------------- catalog content


def test_catalog_has_every_required_variant():
    assert REQUIRED_IDS <= set(CATALOG)


def test_catalog_is_read_only():
    with pytest.raises(TypeError):
        CATALOG["x"] = CATALOG["h200"]  # type: ignore[index]
    with pytest.raises(TypeError):
        CATALOG["h200"].peak_flop_per_s["bf16"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize(
    "hw_id, mib",
    [
        ("a100-pcie-40gb", 40960),
        ("a100-sxm4-40gb", 40960),
        ("a100-pcie-80gb", 81920),
        ("a100-sxm4-80gb", 81920),
        ("h100-sxm", 81559),
        ("h100-pcie", 81559),
        ("h100-nvl", 95830),
        ("h200", 143771),
        ("h200-nvl", 143771),
        ("b200", 183359),
        ("l4", 23034),
        ("l40s", 46068),
        ("rtx-4090", 24564),
    ],
)
def test_memory_bytes_is_what_nvidia_smi_reports(hw_id, mib):
    assert CATALOG[hw_id].memory_bytes == mib * MIB


def test_a100_80gb_is_80_gib_not_80_gb():
    spec = CATALOG["a100-sxm4-80gb"]
    assert spec.memory_bytes == 80 * GIB
    assert spec.memory_bytes != 80 * 10**9
    assert spec.memory_gib == 80.0


def test_mi300x_memory_is_192_gib_from_rocm_smi():
    assert CATALOG["mi300x"].memory_bytes == 206_158_430_208 == 192 * GIB


@pytest.mark.parametrize(
    "hw_id, bw_gb_s, bf16_tf, fp8_tf",
    [
        ("a100-pcie-40gb", 1555, 312, None),
        ("a100-sxm4-40gb", 1555, 312, None),
        ("a100-pcie-80gb", 1935, 312, None),
        ("a100-sxm4-80gb", 2039, 312, None),
        ("h100-sxm", 3350, 989, 1979),
        ("h100-pcie", 2000, 756, 1513),
        ("h100-nvl", 3900, 835, 1671),
        ("h200", 4800, 989, 1979),
        ("b200", 7700, 2250, 4500),
        ("l4", 300, 121, 242.5),
        ("l40s", 864, 362.05, 733),
        ("rtx-4090", 1008, 165.2, 330.3),
        ("mi300x", 5300, 1307.4, 2614.9),
    ],
)
def test_figures_match_the_published_tables(hw_id, bw_gb_s, bf16_tf, fp8_tf):
    """Bandwidth and dense peaks as the vendor datasheets and the public performance-model catalogs list them
    (aiconfigurator's system yaml files, llm-analysis gpu_configs, GenZ Systems/system_configs.py)."""
    spec = CATALOG[hw_id]
    assert spec.hbm_bytes_per_s == pytest.approx(bw_gb_s * 1e9)
    assert spec.peak_for("bf16") == pytest.approx(bf16_tf * 1e12)
    if fp8_tf is None:
        assert "fp8" not in spec.peak_flop_per_s
    else:
        assert spec.peak_for("fp8") == pytest.approx(fp8_tf * 1e12)


@pytest.mark.parametrize(
    "hw_id, ridge",
    [
        ("a100-sxm4-80gb", 312 / 2.039),  # ~153.0
        ("a100-pcie-80gb", 312 / 1.935),  # ~161.2
        ("a100-pcie-40gb", 312 / 1.555),  # ~200.6
        ("h100-sxm", 989 / 3.35),  # ~295.2
        ("h100-pcie", 756 / 2.0),  # 378
        ("h200", 989 / 4.8),  # ~206
        ("b200", 2250 / 7.7),  # ~292
        ("l4", 121 / 0.3),  # ~403
        ("l40s", 362.05 / 0.864),  # ~419
        ("rtx-4090", 165.2 / 1.008),  # ~164
        ("mi300x", 1307.4 / 5.3),  # ~247
    ],
)
def test_ridge_points(hw_id, ridge):
    assert CATALOG[hw_id].ridge_flop_per_byte("bf16") == pytest.approx(ridge, rel=1e-9)


def test_ridge_points_rounded_as_in_the_brief():
    assert round(CATALOG["a100-sxm4-80gb"].ridge_flop_per_byte(), 1) == 153.0
    assert round(CATALOG["a100-pcie-80gb"].ridge_flop_per_byte(), 1) == 161.2
    assert round(CATALOG["h100-sxm"].ridge_flop_per_byte(), 1) == 295.2


def test_fp8_ridge_is_twice_bf16_on_hopper():
    spec = CATALOG["h100-sxm"]
    assert spec.ridge_flop_per_byte("fp8") == pytest.approx(2 * spec.ridge_flop_per_byte("bf16"), rel=1e-3)


def test_dtype_aliases():
    spec = CATALOG["h100-sxm"]
    assert spec.peak_for("bfloat16") == spec.peak_for("bf16")
    assert spec.peak_for("fp8_e4m3") == spec.peak_for("fp8") == spec.peak_for("FP8")
    assert spec.peak_for("float16") == spec.peak_for("fp16")


def test_peak_for_missing_dtype_names_the_dtypes_the_chip_has():
    with pytest.raises(HardwareError) as err:
        CATALOG["a100-sxm4-80gb"].peak_for("fp8")
    msg = str(err.value)
    assert "fp8" in msg and "bf16" in msg and "tf32" in msg and "a100-sxm4-80gb" in msg


def test_a_missing_16_bit_peak_names_the_dtype_vllm_can_run_instead(capsys: pytest.CaptureFixture[str]):
    # Gaudi 2 has bf16 and fp8 peaks, no fp16: an fp16 checkpoint (OPT-125M) runs there in bfloat16 with vLLM's
    # --dtype, which the error names; the fix it names then works (s14 init sweep: "refused with no fix")
    from pytest_roofline import cli

    with pytest.raises(HardwareError) as err:
        CATALOG["gaudi2"].peak_for("fp16")
    assert str(err.value).endswith("; it has: bf16, fp8: run the model in bfloat16 (engine.args.dtype: bfloat16, "
                                   "vLLM's --dtype) or give the chip's fp16 peak (hardware_overrides: "
                                   "{peak_flop_per_s: {fp16: <FLOP/s>}})")
    assert cli.main(["predict", "--hardware", "gaudi2", "--model", "opt-125m"]) == 2
    assert "engine.args.dtype: bfloat16" in capsys.readouterr().err
    assert cli.main(["predict", "--hardware", "gaudi2", "--model", "opt-125m",
                     "--set", "engine.args.dtype=bfloat16"]) == 0


def test_every_figure_has_a_source():
    for spec in CATALOG.values():
        for name in ("memory_bytes", "hbm_bytes_per_s", "interconnect_bytes_per_s"):
            assert spec.sources.get(name), (spec.id, name)
        if spec.is_pseudo_device:
            continue
        for dtype in spec.peak_flop_per_s:
            assert spec.sources.get(f"peak_flop_per_s.{dtype}"), (spec.id, dtype)
        assert spec.memory_bytes and spec.hbm_bytes_per_s and spec.interconnect_bytes_per_s
        assert spec.interconnect and spec.memory_marketing and spec.name and spec.vendor


#: NVIDIA's compute-capability table (developer.nvidia.com/cuda-gpus), by the catalog's families
COMPUTE_CAPABILITY = {"a100": 8.0, "a10": 8.6, "a10g": 8.6, "rtx-a6000": 8.6, "rtx-3090": 8.6, "l4": 8.9,
                      "l40": 8.9, "l40s": 8.9, "rtx-4090": 8.9, "rtx-6000-ada": 8.9, "h100": 9.0, "h200": 9.0,
                      "gh200": 9.0, "h20": 9.0, "h800": 9.0, "b200": 10.0, "gb200": 10.0, "b300": 10.3}


def test_every_nvidia_gpu_has_its_compute_capability_and_no_other_part_has_one():
    for spec in CATALOG.values():
        if spec.vendor != "NVIDIA":
            assert spec.compute_capability is None and "compute_capability" not in spec.sources, spec.id
            continue
        want = COMPUTE_CAPABILITY.get(spec.family, COMPUTE_CAPABILITY.get(spec.id))
        assert spec.compute_capability == want, spec.id
        assert "cuda-gpus" in spec.sources["compute_capability"], spec.id
    with pytest.raises(HardwareError, match="compute capability such as 8.9"):
        dataclasses.replace(CATALOG["l4"], compute_capability=0)


def test_unverified_figures_are_marked():
    assert "hbm_bytes_per_s" in CATALOG["h200-nvl"].unverified_fields()
    assert CATALOG["h100-sxm"].unverified_fields() == ()
    for spec in CATALOG.values():
        for key in spec.unverified_fields():
            assert spec.sources[key].startswith(hw.UNVERIFIED)


def test_dense_peaks_are_not_sparse_figures():
    # NVIDIA prints Hopper peaks with sparsity (1,979 bf16); the catalog stores dense ones.
    assert CATALOG["h100-sxm"].peak_for("bf16") < 1000e12
    for spec in CATALOG.values():
        # Intel Gaudi 3's matrix engines run FP8 at the BF16 rate (1,835 / 1,835 TFLOPS, Intel Hot Chips 2024)
        if "fp8" in spec.peak_flop_per_s and "bf16" in spec.peak_flop_per_s and spec.id != "gaudi3":
            # L40S: vendor prints BF16 362.05 but FP8 733 dense, a 2.02 ratio
            assert spec.peak_for("fp8") == pytest.approx(2 * spec.peak_for("bf16"), rel=0.02)


def test_cpu_pseudo_device():
    cpu = get_hardware("cpu")
    assert cpu.is_pseudo_device
    assert cpu.memory_bytes is None and cpu.hbm_bytes_per_s is None
    assert dict(cpu.peak_flop_per_s) == {}
    with pytest.raises(HardwareError, match="pseudo-device"):
        cpu.ridge_flop_per_byte()
    with pytest.raises(HardwareError, match="pseudo-device"):
        cpu.peak_for("bf16")
    modelled = with_overrides(cpu, {"hbm_bytes_per_s": 1e11, "peak_flop_per_s": {"bf16": 2e12}})
    assert modelled.ridge_flop_per_byte() == pytest.approx(20.0)


def test_specs_are_hashable_and_comparable():
    assert len({*CATALOG.values()}) == len(CATALOG)
    assert get_hardware("h200") == CATALOG["h200"]


def test_as_dict_is_plain_data():
    d = CATALOG["h100-sxm"].as_dict()
    assert d["peak_flop_per_s"]["bf16"] == 989e12
    assert isinstance(d["sources"], dict)


# --------------------------------------------------------------------------- lookup


@pytest.mark.parametrize(
    "name, expected",
    [
        ("a100-sxm4-80gb", "a100-sxm4-80gb"),
        ("A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("h200-sxm", "h200"),
        ("H200", "h200"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("rtx4090", "rtx-4090"),
        ("rtx_4090", "rtx-4090"),
        ("AMD Instinct MI300X", "mi300x"),
        ("  l40s ", "l40s"),
    ],
)
def test_get_hardware_ids_and_aliases(name, expected):
    assert get_hardware(name).id == expected


def test_unknown_hardware_suggests_and_lists_ids():
    with pytest.raises(UnknownHardwareError) as err:
        get_hardware("a100-sxm-80g")
    msg = str(err.value)
    assert "Did you mean" in msg and "a100-sxm4-80gb" in msg
    for hw_id in REQUIRED_IDS:
        assert hw_id in msg
    assert isinstance(err.value, LookupError) and isinstance(err.value, ValueError)


def test_unknown_hardware_without_close_match_still_lists_ids():
    with pytest.raises(UnknownHardwareError, match="Known ids: .*h100-sxm"):
        get_hardware("tpu-v5p")


def test_families():
    fam = families()
    assert fam["a100"] == ["a100-pcie-40gb", "a100-sxm4-40gb", "a100-pcie-80gb", "a100-sxm4-80gb"]
    assert set(fam["h100"]) == {"h100-sxm", "h100-pcie", "h100-nvl"}
    assert set(fam["h200"]) == {"h200", "h200-nvl"}
    assert fam["cpu"] == ["cpu"]
    fam["a100"].append("oops")
    assert "oops" not in families()["a100"]
    every = [i for ids in families().values() for i in ids]
    assert sorted(every) == sorted(CATALOG)
    for spec in CATALOG.values():
        assert spec.id in families()[spec.family]


def test_aliases_do_not_collide():
    seen: dict[str, str] = {}
    for spec in CATALOG.values():
        for key in (spec.id, *spec.aliases):
            norm = key.lower().replace(" ", "-").replace("_", "-")
            assert seen.setdefault(norm, spec.id) == spec.id


# --------------------------------------------------------------------------- resolve


def test_family_is_ambiguous_without_declared_or_detected():
    with pytest.raises(AmbiguousHardwareError) as err:
        resolve("a100")
    msg = str(err.value)
    for variant in families()["a100"]:
        assert variant in msg


def test_h200_family_is_ambiguous_too():
    with pytest.raises(AmbiguousHardwareError, match="h200-nvl"):
        resolve("h200")
    assert resolve("h200-sxm").id == "h200"


def test_declared_variant_resolves_the_family():
    assert resolve("a100", declared="a100-sxm4-80gb").id == "a100-sxm4-80gb"
    assert resolve("A100", declared="NVIDIA A100 80GB PCIe").id == "a100-pcie-80gb"


def test_declared_variant_outside_the_family_errors():
    with pytest.raises(HardwareMismatchError) as err:
        resolve("a100", declared="h100-sxm")
    msg = str(err.value)
    assert "h100-sxm" in msg and "a100" in msg and "a100-sxm4-80gb" in msg


def test_declared_must_match_an_exact_id_given_to_gpu():
    assert resolve("h100-sxm", declared="h100-sxm5").id == "h100-sxm"
    with pytest.raises(HardwareMismatchError):
        resolve("h100-sxm", declared="h100-pcie")


def test_detected_resolves_the_family():
    assert resolve("a100", detected="a100-pcie-40gb").id == "a100-pcie-40gb"
    assert resolve("h100", detected="NVIDIA H100 80GB HBM3").id == "h100-sxm"


def test_detected_consistent_with_declared_wins():
    assert resolve("a100", declared="a100-sxm4-80gb", detected="a100-sxm4-80gb").id == "a100-sxm4-80gb"


def test_detected_outside_the_family_errors():
    with pytest.raises(HardwareMismatchError, match="detected"):
        resolve("a100", detected="h100-sxm")


def test_detected_differing_from_declared_errors_unless_preferred():
    with pytest.raises(HardwareMismatchError, match="declares"):
        resolve("a100", declared="a100-sxm4-80gb", detected="a100-pcie-80gb")
    spec = resolve("a100", declared="a100-sxm4-80gb", detected="a100-pcie-80gb", prefer_detected=True)
    assert spec.id == "a100-pcie-80gb"


def test_single_variant_family_resolves_alone():
    assert resolve("l4").id == "l4"
    assert resolve("rtx4090").id == "rtx-4090"
    assert resolve("cpu").id == "cpu"
    assert resolve("b200").id == "b200"


def test_unknown_family_suggests():
    with pytest.raises(UnknownHardwareError, match="Did you mean: .*a100"):
        resolve("a10O")


# --------------------------------------------------------------------------- overrides


def test_override_bandwidth_and_one_peak():
    base = CATALOG["a100-sxm4-80gb"]
    spec = with_overrides(base, {"hbm_bytes_per_s": 1.8e12, "peak_flop_per_s": {"bf16": 280e12}})
    assert spec.hbm_bytes_per_s == 1.8e12
    assert spec.peak_for("bf16") == 280e12
    assert spec.peak_for("tf32") == base.peak_for("tf32")  # merged, not replaced
    assert spec.sources["hbm_bytes_per_s"] == "user override"
    assert spec.sources["peak_flop_per_s.bf16"] == "user override"
    assert spec.sources["peak_flop_per_s.tf32"] == base.sources["peak_flop_per_s.tf32"]
    assert spec.ridge_flop_per_byte() == pytest.approx(280 / 1.8)
    assert base.hbm_bytes_per_s == 2039e9  # catalog untouched


def test_override_values_as_yaml_gives_them():
    # PyYAML reads 1.8e12 (no dot-sign exponent) as a string; numbers with units read too.
    spec = with_overrides(
        "h100-sxm",
        {
            "hbm_bytes_per_s": "1.8e12",
            "peak_flop_per_s": {"bfloat16": "800 TFLOP/s", "fp8": "1,600e12"},
            "memory_bytes": "80 GiB",
            "interconnect_bytes_per_s": "450 GB/s",
        },
    )
    assert spec.hbm_bytes_per_s == 1.8e12
    assert spec.peak_for("bf16") == 800e12
    assert spec.peak_for("fp8") == 1600e12
    assert spec.memory_bytes == 80 * GIB
    assert spec.interconnect_bytes_per_s == 450e9


def test_override_unknown_field_suggests():
    with pytest.raises(HardwareOverrideError) as err:
        with_overrides("h100-sxm", {"hbm_byte_per_s": 1e12})
    assert "Did you mean" in str(err.value) and "hbm_bytes_per_s" in str(err.value)


def test_override_rejects_bad_values():
    with pytest.raises(HardwareOverrideError, match="unit"):
        with_overrides("h100-sxm", {"hbm_bytes_per_s": "3 TFLOP/s"})
    with pytest.raises(HardwareOverrideError, match="positive"):
        with_overrides("h100-sxm", {"hbm_bytes_per_s": -1})
    with pytest.raises(HardwareOverrideError, match="dtype"):
        with_overrides("h100-sxm", {"peak_flop_per_s": {"bf61": 1e12}})
    with pytest.raises(HardwareOverrideError):
        with_overrides("h100-sxm", {"peak_flop_per_s": 1e12})
    with pytest.raises(HardwareOverrideError):
        with_overrides("h100-sxm", {"sources": {}})


def test_override_nothing_returns_the_same_spec():
    assert with_overrides("h200", None) is CATALOG["h200"]
    assert with_overrides(CATALOG["h200"], {}) is CATALOG["h200"]


def test_override_text_fields():
    spec = with_overrides("b200", {"name": "B200 @ 8 TB/s", "hbm_bytes_per_s": 8e12})
    assert spec.name == "B200 @ 8 TB/s" and spec.sources["name"] == "user override"
    assert spec.ridge_flop_per_byte() == pytest.approx(2250 / 8)


# --------------------------------------------------------------------------- properties


@given(
    bw=st.floats(min_value=1e9, max_value=1e14, allow_nan=False, allow_infinity=False),
    peak=st.floats(min_value=1e11, max_value=1e17, allow_nan=False, allow_infinity=False),
)
def test_ridge_is_peak_over_bandwidth(bw, peak):
    spec = with_overrides("h100-sxm", {"hbm_bytes_per_s": bw, "peak_flop_per_s": {"bf16": peak}})
    assert math.isclose(spec.ridge_flop_per_byte(), peak / bw, rel_tol=1e-12)


@given(st.sampled_from(sorted(CATALOG)), st.sampled_from(["bf16", "fp16", "fp8", "tf32", "int8", "fp4"]))
def test_peak_for_either_answers_or_names_the_alternatives(hw_id, dtype):
    spec = CATALOG[hw_id]
    try:
        value = spec.peak_for(dtype)
    except HardwareError as exc:
        assert dtype not in spec.peak_flop_per_s
        for have in spec.peak_flop_per_s:
            assert have in str(exc)
    else:
        assert value > 0


@given(st.sampled_from(sorted(CATALOG)))
def test_every_variant_resolves_as_itself(hw_id):
    spec = CATALOG[hw_id]
    assert resolve(spec.family, declared=spec.id) is spec
    assert resolve(spec.family, detected=spec.id) is spec
    assert resolve(spec.family, declared=spec.id, detected=spec.id) is spec


def test_hardware_spec_validates():
    with pytest.raises(HardwareError):
        HardwareSpec(
            id="x", family="x", name="x", vendor="x", memory_bytes=-1, memory_marketing="",
            hbm_bytes_per_s=1.0, peak_flop_per_s={}, interconnect=None, interconnect_bytes_per_s=None,
            sources={},
        )
    with pytest.raises(HardwareError):
        HardwareSpec(
            id="x", family="x", name="x", vendor="x", memory_bytes=1, memory_marketing="",
            hbm_bytes_per_s=1.0, peak_flop_per_s={"bf16": 0}, interconnect=None,
            interconnect_bytes_per_s=None, sources={},
        )


def test_module_has_no_pytest_import():
    import pathlib

    text = pathlib.Path(hw.__file__).read_text()
    assert "import pytest" not in text


def test_specs_pickle_and_deepcopy():
    import copy
    import pickle

    for spec in CATALOG.values():
        assert pickle.loads(pickle.dumps(spec)) == spec
        assert copy.deepcopy(spec) == spec
    assert dict(pickle.loads(pickle.dumps(CATALOG["h200"])).sources) == dict(CATALOG["h200"].sources)


# --------------------------------------------------------------------------- the catalog is data


def _data_devices():
    import json
    from importlib import resources

    text = resources.files("pytest_roofline.model").joinpath("data", hw.CATALOG_FILE).read_text(encoding="utf-8")
    return json.loads(text)["devices"]


def test_catalog_is_the_data_file_entry_for_entry():
    devices = _data_devices()
    assert [d["id"] for d in devices] == list(CATALOG)
    for entry in devices:
        spec = CATALOG[entry["id"]].as_dict()
        assert {k: (list(v) if k == "aliases" else v) for k, v in spec.items()} == entry


def test_every_data_figure_is_a_plain_si_number():
    for entry in _data_devices():
        for name in ("memory_bytes", "hbm_bytes_per_s", "interconnect_bytes_per_s"):
            assert entry[name] is None or isinstance(entry[name], (int, float)) and entry[name] > 0
        if entry["memory_bytes"] is not None:
            assert isinstance(entry["memory_bytes"], int) and entry["memory_bytes"] % MIB == 0  # nvidia-smi MiB
        assert all(isinstance(v, float) for v in entry["peak_flop_per_s"].values())


def test_a_bad_data_entry_is_named_with_its_field():
    good = dict(_data_devices()[0])
    with pytest.raises(HardwareError, match=r"devices\[0\] \(a100-pcie-40gb\).*missing sources"):
        hw._spec_from_data({k: v for k, v in good.items() if k != "sources"}, "hardware.json devices[0]")
    with pytest.raises(HardwareError, match="unknown bandwidth"):
        hw._spec_from_data({**good, "bandwidth": 1}, "hardware.json devices[0]")
    with pytest.raises(HardwareError, match="hbm_bytes_per_s must be a positive"):
        hw._spec_from_data({**good, "hbm_bytes_per_s": -1.0}, "hardware.json devices[0]")
    with pytest.raises(HardwareError, match="sources must map"):
        hw._spec_from_data({**good, "sources": {"memory_bytes": ""}}, "hardware.json devices[0]")


def test_override_units_come_from_the_units_parser():
    spec = with_overrides("h100-sxm", {"memory_bytes": "80 GiB", "hbm_bytes_per_s": "3,350 GB/s",
                                       "peak_flop_per_s": {"int8": "1,979 TOPS", "bf16": "1e15"}})
    assert spec.memory_bytes == 80 * GIB and spec.hbm_bytes_per_s == 3350e9
    assert spec.peak_flop_per_s["int8"] == 1979e12 and spec.peak_flop_per_s["bf16"] == 1e15
    assert spec.sources["peak_flop_per_s.int8"] == hw.USER_OVERRIDE and spec.sources["memory_bytes"] == hw.USER_OVERRIDE
    with pytest.raises(HardwareOverrideError, match="whole number of bytes"):
        with_overrides("h100-sxm", {"memory_bytes": "1.5 B"})
