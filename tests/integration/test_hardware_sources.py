"""The GPUs people rent, added to the catalog: figures against their public sources, interconnect latency.

Every expected value is written from the source named beside it (datasheet tables, the public performance-model
catalogs aiconfigurator systems/*.yaml, llm-analysis gpu_configs/*.json, GenZ Systems/system_configs.py, and
public nvidia-smi / hl-smi / rocm-smi outputs), not from the code.
"""

from __future__ import annotations

import textwrap

import pytest
from support.pytest_run import run_pytest

from pytest_roofline.model import hardware as hw
from pytest_roofline.model.hardware import (
    CATALOG,
    HardwareError,
    HardwareOverrideError,
    HardwareSpec,
    families,
    get_hardware,
    resolve,
    with_overrides,
)
from pytest_roofline.units import GIB, MIB

NEW_IDS = ["a10", "a10g", "l40", "rtx-a6000", "rtx-3090", "rtx-6000-ada", "h20", "h800", "b300", "gb200",
           "mi250x", "mi325x", "gaudi2", "gaudi3"]


def test_every_new_entry_is_in_the_catalog_with_its_own_family():
    fam = families()
    for hw_id in NEW_IDS:
        spec = CATALOG[hw_id]
        assert fam[spec.family] == [hw_id], hw_id  # one variant each: --gpu <family> resolves alone
        assert resolve(spec.family).id == hw_id


@pytest.mark.parametrize("hw_id, driver_mib, tool", [
    ("a10", 23028, "nvidia-smi 'NVIDIA A10, 23028 MiB'"),
    ("a10g", 23028, "nvidia-smi 'NVIDIA A10G, 23028 MiB' (AWS g5)"),
    ("l40", 46068, "nvidia-smi 'NVIDIA L40, 46068 MiB'"),
    ("rtx-a6000", 49140, "nvidia-smi 'NVIDIA RTX A6000, 49140'"),
    ("rtx-3090", 24576, "nvidia-smi 'NVIDIA GeForce RTX 3090, 24576 MiB'"),
    ("rtx-6000-ada", 49140, "nvidia-smi 'NVIDIA RTX 6000 Ada Generation, 49140 MiB'"),
    ("h20", 97871, "nvidia-smi 'NVIDIA H20, 97871'"),
    ("h800", 81559, "nvidia-smi 'NVIDIA H800, 81559 MiB' (the H100 SXM's figure)"),
    ("b300", 275040, "nvidia-smi 'NVIDIA B300 SXM6 AC, 275040 MiB'; aiconfigurator b300_sxm.yaml"),
    ("gb200", 189471, "nvidia-smi 'NVIDIA GB200, 189471 MiB'; aiconfigurator gb200.yaml"),
    ("gaudi2", 98304, "hl-smi 'HL-225, ..., 98304 MiB'"),
    ("gaudi3", 131072, "hl-smi 'HL-325L, ..., 131072 MiB'"),
])
def test_memory_is_what_the_driver_reports(hw_id, driver_mib, tool):
    assert CATALOG[hw_id].memory_bytes == driver_mib * MIB, tool


def test_mi250x_is_one_gcd_as_rocm_shows_it():
    # AMD's module table: 128 GB HBM2e, 3.2768 TB/s, 383 TFLOPS FP16/BF16, 2 GCDs; ROCm lists each GCD as a
    # device: a gfx90a device reports 68,702,699,520 B = 65,520 MiB (64 GiB less 16 MiB)
    spec = CATALOG["mi250x"]
    assert spec.memory_bytes == 68_702_699_520 == 65520 * MIB == 64 * GIB - 16 * MIB
    assert spec.hbm_bytes_per_s == pytest.approx(3.2768e12 / 2)
    assert spec.peak_for("bf16") == pytest.approx(383e12 / 2)
    assert "fp8" not in spec.peak_flop_per_s  # CDNA 2 has no FP8
    assert "GCD" in spec.name and "GCD" in spec.memory_marketing


def test_gb200_is_per_gpu():
    # aiconfigurator gb200.yaml: per GPU 8 TB/s, 2,500 TFLOPS bf16, 189,471 MiB; a superchip holds two GPUs
    spec = CATALOG["gb200"]
    assert spec.hbm_bytes_per_s == 8e12 and spec.peak_for("bf16") == 2500e12
    assert spec.memory_bytes < 200e9  # one GPU's memory, not the superchip's 2 x 192 GB


def test_mi325x_memory_is_256_gib():
    assert CATALOG["mi325x"].memory_bytes == 274_877_906_944 == 256 * GIB
    assert "memory_bytes" in CATALOG["mi325x"].unverified_fields()  # no rocm-smi output was retrieved


@pytest.mark.parametrize("hw_id, bw_gb_s, bf16_tf, fp8_tf", [
    ("a10", 600, 125, None),            # NVIDIA A10 datasheet; llm-analysis a10: 600 GB/s, fp16 125
    ("a10g", 600, 70, None),            # llm-analysis a10g-pcie-24gb.json: 600 GB/s, fp16 70
    ("l40", 864, 181.05, 362),          # NVIDIA L40 datasheet table: BF16 181.05 (362.1 sparse), FP8 362 (724)
    ("rtx-a6000", 768, 154.8, None),    # llm-analysis a6000-48gb.json: 768 GB/s, fp16 154.8
    ("rtx-3090", 936, 71, None),        # GA102 whitepaper: BF16 with FP32 accumulate 71 dense
    ("rtx-6000-ada", 960, 364.25, 728.5),  # datasheet FP8 1,457 sparse: /2 dense fp8, /4 bf16
    ("h20", 4000, 148, 296),            # NVIDIA H20: 4.0 TB/s, FP16 148 dense
    ("h800", 3350, 989, 1979),          # H100 SXM silicon and memory
    ("b300", 7750, 2250, 4500),         # aiconfigurator b300_sxm.yaml: 7.75 TB/s, 4.5 PFLOPS sparse / 2
    ("gb200", 8000, 2500, 5000),        # aiconfigurator gb200.yaml
    ("mi325x", 6000, 1307.4, 2614.9),   # AMD MI325X: 6 TB/s, same CDNA 3 compute as MI300X
    ("gaudi2", 2460, 432, 865),         # Intel Hot Chips 2024 table: Gaudi 2 2.46 TB/s, 432 TFLOPS BF16
    ("gaudi3", 3670, 1835, 1835),       # Intel Hot Chips 2024: 3.67 TB/s, BF16 and FP8 matrix 1,835 each
])
def test_figures_match_the_published_tables(hw_id, bw_gb_s, bf16_tf, fp8_tf):
    spec = CATALOG[hw_id]
    assert spec.hbm_bytes_per_s == pytest.approx(bw_gb_s * 1e9)
    assert spec.peak_for("bf16") == pytest.approx(bf16_tf * 1e12)
    if fp8_tf is None:
        assert "fp8" not in spec.peak_flop_per_s  # Ampere has no FP8 tensor cores
    else:
        assert spec.peak_for("fp8") == pytest.approx(fp8_tf * 1e12)


@pytest.mark.parametrize("hw_id, ridge", [
    ("a10g", 70 / 0.6),         # ~116.7: AWS's A10G is memory-rich for its compute
    ("h20", 148 / 4.0),         # 37: the export-limited H20 is compute-bound almost at once
    ("mi250x", 191.5 / 1.6384),  # ~116.9 per GCD (the module's 383 / 3.2768 is the same ratio)
    ("gaudi3", 1835 / 3.67),    # 500
    ("rtx-3090", 71 / 0.936),   # ~75.9
])
def test_ridge_points(hw_id, ridge):
    assert CATALOG[hw_id].ridge_flop_per_byte("bf16") == pytest.approx(ridge, rel=1e-9)


def test_h20_and_h100_share_memory_bandwidth_class_but_not_compute():
    # the point of the H20 (export-limited Hopper): more bandwidth than an H100 SXM, 15% of its compute
    h20, h100 = CATALOG["h20"], CATALOG["h100-sxm"]
    assert h20.hbm_bytes_per_s > h100.hbm_bytes_per_s
    assert h20.peak_for("bf16") / h100.peak_for("bf16") == pytest.approx(148 / 989)


# --------------------------------------------------------------------------- interconnect


@pytest.mark.parametrize("hw_id, link_gb_s", [
    ("h20", 900), ("b300", 1800), ("gb200", 1800),   # NVLink 4 / 5, bidirectional per GPU
    ("h800", 400),                                   # export-limited NVLink
    ("a10g", 64), ("l40", 64), ("rtx-3090", 64),     # PCIe Gen4 x16: 2 x ~32 GB/s
    ("mi325x", 896),                                 # 7 Infinity Fabric links x 128 GB/s
    ("gaudi3", 1200), ("gaudi2", 600),               # 24 x 200 / 100 GbE: 9.6 / 4.8 Tb/s bidirectional
])
def test_interconnect_bandwidth_is_bidirectional_per_gpu(hw_id, link_gb_s):
    assert CATALOG[hw_id].interconnect_bytes_per_s == pytest.approx(link_gb_s * 1e9)


def test_every_real_device_has_an_interconnect_latency_with_a_source():
    for spec in CATALOG.values():
        assert spec.sources.get("interconnect_latency_s"), spec.id
        if spec.is_pseudo_device:
            assert spec.interconnect_latency_s is None
            continue
        lat = spec.interconnect_latency_s
        assert lat is not None and 1e-6 <= lat <= 1e-4, (spec.id, lat)


def test_nvlink_latency_is_llm_analysis_8_us_and_pcie_is_higher():
    # llm-analysis gpu_configs/*.json: intra_node_min_message_latency 8e-06 (the serving model's default too)
    for hw_id in ("a100-sxm4-80gb", "h100-sxm", "h200", "b200", "h20", "h800", "b300", "gb200"):
        assert CATALOG[hw_id].interconnect_latency_s == 8e-6, hw_id
    # over PCIe an 8-byte NCCL all-reduce takes 42.56 us on 8 x RTX 4090 (NVIDIA/nccl#1530): more than NVLink
    for hw_id in ("a100-pcie-80gb", "h100-pcie", "l4", "l40s", "l40", "rtx-4090", "rtx-3090", "a10g", "rtx-a6000"):
        lat = CATALOG[hw_id].interconnect_latency_s
        assert lat is not None and 8e-6 < lat < 42.56e-6, hw_id
        assert "interconnect_latency_s" in CATALOG[hw_id].unverified_fields()  # an estimate, and marked so


def test_nvlink_bridged_pcie_parts_take_the_link_their_bandwidth_describes():
    # h100-nvl / h200-nvl model the NVLink bridge (600 / 900 GB/s), so the NVLink latency
    for hw_id in ("h100-nvl", "h200-nvl"):
        assert CATALOG[hw_id].interconnect_latency_s == 8e-6


def test_all_reduce_arithmetic_with_the_catalog_figures():
    # A ring all-reduce of M bytes over N GPUs: 2 (N-1)/N x M / link_one_way + latency (llm-analysis, GenZ form).
    # Llama-3.1-70B decode, batch 1, TP=4 on H100 SXM: M = 8192 hidden x 2 bytes = 16,384 B;
    # link one way = 900 / 2 = 450 GB/s -> 2 x 3/4 x 16,384 / 450e9 = 54.6 ns, so the 8 us floor is ~99.3% of it.
    spec = CATALOG["h100-sxm"]
    one_way = spec.interconnect_bytes_per_s / 2
    transfer_s = 2 * 3 / 4 * 16384 / one_way
    assert transfer_s == pytest.approx(54.61e-9, rel=1e-3)
    total_s = transfer_s + spec.interconnect_latency_s
    assert spec.interconnect_latency_s / total_s == pytest.approx(0.9932, abs=1e-3)
    # 80 layers x 2 all-reduces per layer (Megatron-LM, arXiv 1909.08053) = 160 calls -> ~1.29 ms per step
    assert 160 * total_s == pytest.approx(1.289e-3, rel=1e-3)


def test_latency_override_reads_units_and_records_the_source():
    spec = with_overrides("h100-sxm", {"interconnect_latency_s": "12 us"})
    assert spec.interconnect_latency_s == pytest.approx(12e-6)
    assert spec.sources["interconnect_latency_s"] == hw.USER_OVERRIDE
    assert with_overrides("h100-sxm", {"interconnect_latency_s": 5e-6}).interconnect_latency_s == 5e-6
    assert with_overrides("h100-sxm", {"interconnect_latency_s": "5e-6"}).interconnect_latency_s == 5e-6
    assert with_overrides("h100-sxm", {"interconnect_latency_s": None}).interconnect_latency_s is None
    with pytest.raises(HardwareOverrideError, match="time"):
        with_overrides("h100-sxm", {"interconnect_latency_s": "5 GB/s"})
    with pytest.raises(HardwareOverrideError, match="positive"):
        with_overrides("h100-sxm", {"interconnect_latency_s": 0})
    with pytest.raises(HardwareOverrideError, match="Did you mean"):
        with_overrides("h100-sxm", {"interconnect_latency": 5e-6})


def test_latency_is_validated_at_construction():
    base = dict(id="x", family="x", name="x", vendor="x", memory_bytes=1, memory_marketing="", hbm_bytes_per_s=1.0,
                peak_flop_per_s={}, interconnect=None, interconnect_bytes_per_s=None, sources={})
    assert HardwareSpec(**base).interconnect_latency_s is None  # the field is optional in code
    assert HardwareSpec(**base, interconnect_latency_s=8e-6).interconnect_latency_s == 8e-6
    for bad in (-1e-6, 0.0, float("nan"), float("inf")):
        with pytest.raises(HardwareError, match="interconnect_latency_s"):
            HardwareSpec(**base, interconnect_latency_s=bad)


def test_a_data_entry_without_the_latency_field_is_refused():
    import json
    from importlib import resources

    text = resources.files("pytest_roofline.model").joinpath("data", hw.CATALOG_FILE).read_text(encoding="utf-8")
    entry = json.loads(text)["devices"][0]
    del entry["interconnect_latency_s"]
    with pytest.raises(HardwareError, match="missing interconnect_latency_s"):
        hw._spec_from_data(entry, "hardware.json devices[0]")


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA A10G", "a10g"), ("g5", "a10g"), ("a6000", "rtx-a6000"), ("NVIDIA RTX A6000", "rtx-a6000"),
    ("rtx3090", "rtx-3090"), ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"), ("NVIDIA H20", "h20"),
    ("NVIDIA B300 SXM6 AC", "b300"), ("NVIDIA GB200", "gb200"), ("AMD Instinct MI250X", "mi250x"),
    ("AMD Instinct MI325X", "mi325x"), ("HL-225", "gaudi2"), ("HL-325L", "gaudi3"), ("gaudi-3", "gaudi3"),
])
def test_names_people_type(name, expected):
    assert get_hardware(name).id == expected


def test_unverified_figures_are_marked_and_listed():
    # figures taken from memory, not from a retrieved source, say so
    assert "peak_flop_per_s.bf16" in CATALOG["rtx-3090"].unverified_fields()
    assert "hbm_bytes_per_s" in CATALOG["rtx-6000-ada"].unverified_fields()
    assert "peak_flop_per_s.fp8" in CATALOG["gaudi2"].unverified_fields()
    # and figures read from a retrieved source are not marked
    assert "hbm_bytes_per_s" not in CATALOG["b300"].unverified_fields()
    assert "interconnect_bytes_per_s" not in CATALOG["h800"].unverified_fields()  # 400 GB/s, philisun.com
    assert "peak_flop_per_s.bf16" not in CATALOG["gaudi3"].unverified_fields()


def test_roofline_hardware_lists_the_new_entries(capsys):
    from pytest_roofline import cli

    rc = cli.main(["hardware"])
    out = capsys.readouterr().out
    assert rc in (0, None)
    for hw_id in NEW_IDS:
        assert hw_id in out, hw_id


def test_a_prediction_file_overrides_the_new_figures(pytester):
    # hardware as a mapping: A10G with a measured 550 GB/s and a 30 us all-reduce floor;
    # ridge = 70 TFLOP/s / 550 GB/s = 127.27 FLOP/byte
    pytester.makefile(".roofline.yaml", a10g=textwrap.dedent("""
        hardware: {id: a10g, hbm_bytes_per_s: 550 GB/s, interconnect_latency_s: 30 us}
        model: qwen3-8b
        engine: {name: vllm, version: "0.26.0", args: {max_model_len: 8192}}
        workload: {input_len: 1024, output_len: 1024}
        predictions:
          - id: ridge
            quantity: ridge_point
            predicted: 127.3 FLOP/byte
            tolerance: ±0.1%
    """))
    result = run_pytest(pytester)
    result.assert_outcomes(passed=1)


def test_an_nvswitch_domain_is_8_gpus_on_an_hgx_board_and_72_on_gb200_nvl72():
    """HGX A100/H100/H200/H20/H800/B200/B300 baseboards join 8 GPUs with NVSwitch; GB200 NVL72 joins 72. PCIe parts
    and NVLink bridges form no domain the catalog can size (None). Every sized domain has its source."""
    eight = ("a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h200", "h20", "h800", "b200", "b300")
    for spec in CATALOG.values():
        want = 8 if spec.id in eight else 72 if spec.id == "gb200" else None
        assert spec.nvlink_domain_gpus == want, spec.id
        if want:
            assert spec.sources.get("nvlink_domain_gpus"), spec.id
