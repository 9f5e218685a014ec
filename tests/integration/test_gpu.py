"""nvidia-smi parsing and name -> catalog variant matching.

The CSV lines are in the shape ``nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id,
uuid,compute_cap --format=csv,noheader,nounits`` prints (one line per GPU, ", " separated, MiB)."""

from __future__ import annotations

import pytest
from support.gpu import fake_tools

from pytest_roofline.measure import gpu
from pytest_roofline.measure.gpu import (
    CATALOG_IDS,
    DetectedGPU,
    GPUDetectionError,
    detect,
    match_variant,
    parse_nvidia_smi_csv,
)

SMI_LINES = """\
0, NVIDIA H200, 143771, 570.124.06, 00000000:18:00.0, GPU-6c3a1f52-8d0b-4e36-9a57-1b2c3d4e5f60, 9.0
1, NVIDIA H200, 143771, 570.124.06, 00000000:2A:00.0, GPU-7d4b2063-9e1c-4f47-ab68-2c3d4e5f6071, 9.0
"""

NAMES = [
    ("NVIDIA A100-SXM4-40GB", 40960, "a100-sxm4-40gb"),
    ("NVIDIA A100-SXM4-80GB", 81920, "a100-sxm4-80gb"),
    ("A100-SXM4-40GB", 40537, "a100-sxm4-40gb"),          # older drivers: no "NVIDIA " prefix
    ("NVIDIA A100-SXM-80GB", 81920, "a100-sxm4-80gb"),    # DGX A100 80GB spelling
    ("NVIDIA A100-PCIE-40GB", 40960, "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", 81920, "a100-pcie-80gb"),
    ("NVIDIA A100-SXM4", 81920, "a100-sxm4-80gb"),        # size from memory.total when the name lacks it
    ("NVIDIA A100-PCIE", 40536, "a100-pcie-40gb"),
    ("NVIDIA H100 80GB HBM3", 81559, "h100-sxm"),
    ("NVIDIA H100 SXM5 80GB", 81559, "h100-sxm"),
    ("NVIDIA H100 PCIe", 81559, "h100-pcie"),
    ("NVIDIA H100 NVL", 95830, "h100-nvl"),
    ("NVIDIA H200", 143771, "h200"),
    ("NVIDIA H200 NVL", 143771, "h200-nvl"),
    ("NVIDIA B200", 183359, "b200"),
    ("NVIDIA L4", 23034, "l4"),
    ("NVIDIA L40S", 46068, "l40s"),
    ("NVIDIA GeForce RTX 4090", 24564, "rtx-4090"),
    ("AMD Instinct MI300X", 196592, "mi300x"),
    ("AMD Instinct MI300X VF", 196592, "mi300x"),
    # added to the catalog later (more in tests/test_gpu_amd.py)
    ("NVIDIA L40", 46068, "l40"),
    ("NVIDIA GB200", 189471, "gb200"),
    ("NVIDIA H800", 81559, "h800"),
    ("NVIDIA A10G", 23028, "a10g"),
    ("NVIDIA A10", 23028, "a10"),
    ("NVIDIA RTX A6000", 49140, "rtx-a6000"),
    ("NVIDIA GeForce RTX 3090", 24576, "rtx-3090"),
    ("NVIDIA RTX 6000 Ada Generation", 49140, "rtx-6000-ada"),
    ("NVIDIA H20", 97871, "h20"),
    ("NVIDIA B300 SXM6 AC", 275040, "b300"),
    ("AMD Instinct MI250X", 65520, "mi250x"),
    ("AMD Instinct MI325X", 262144, "mi325x"),
    ("HL-225", 98304, "gaudi2"),
    ("HL-325L", 131072, "gaudi3"),
    # added as data alone (hardware.json: its nvidia-smi name is an alias; issue 24)
    ("NVIDIA GH200 480GB", 97871, "gh200"),
    # not in the catalog
    ("NVIDIA GH200 144G HBM3e", 146831, None),  # the HBM3e GH200 (NVIDIA/mig-parted#139 names it): another part
    ("NVIDIA A800-SXM4-80GB", 81920, None),
    ("NVIDIA GeForce RTX 4090 D", 24564, None),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", 16376, None),
    ("Tesla T4", 15360, None),
    ("NVIDIA A100", None, None),  # form factor unknown
]


@pytest.mark.parametrize("name,mem,variant", NAMES)
def test_match_variant(name, mem, variant):
    assert match_variant(name, mem) == variant
    assert variant is None or variant in CATALOG_IDS


def test_every_catalog_id_is_reachable():
    assert {v for _, _, v in NAMES if v} == set(CATALOG_IDS)


def test_parse_csv_lines():
    gpus = parse_nvidia_smi_csv(SMI_LINES)
    assert len(gpus) == 2
    g = gpus[0]
    assert (g.index, g.name, g.memory_total_mib, g.driver_version, g.pci_bus_id, g.compute_cap, g.variant) == (
        0, "NVIDIA H200", 143771, "570.124.06", "00000000:18:00.0", "9.0", "h200")
    assert g.uuid.startswith("GPU-6c3a") and g.memory_total_bytes == 143771 * 2**20
    d = g.to_dict()
    assert d["variant"] == "h200" and d["memory_total_mib"] == 143771 and d["count"] == 1


def test_parse_csv_variants():
    # header line (format=csv without noheader), units kept, [N/A] fields, fewer fields asked
    text = ("index, name, memory.total [MiB], driver_version, pci.bus_id, uuid, compute_cap\n"
            "0, NVIDIA A100-SXM4-80GB, 81920 MiB, 535.129.03, 00000000:07:00.0, GPU-1, [N/A]\n")
    (g,) = parse_nvidia_smi_csv(text)
    assert g.memory_total_mib == 81920 and g.compute_cap is None and g.variant == "a100-sxm4-80gb"
    (g,) = parse_nvidia_smi_csv("NVIDIA L4, 23034\n", fields=("name", "memory.total"))
    assert g.variant == "l4" and g.driver_version is None and g.index is None
    assert parse_nvidia_smi_csv("\n\n") == []
    with pytest.raises(ValueError):
        parse_nvidia_smi_csv("0, , 1000\n")


def test_detect_absent(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert detect() is None


def test_detect_with_fake_smi(monkeypatch, tmp_path):
    echo = "".join(f"echo '{line}'\n" for line in SMI_LINES.splitlines())  # PATH holds only the fake
    monkeypatch.setenv("PATH", fake_tools(tmp_path, system_path=False, nvidia_smi=echo))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    g = detect()
    assert isinstance(g, DetectedGPU) and g.variant == "h200" and g.count == 2 and g.others == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    g = detect()
    assert g.index == 1 and g.count == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-7d4b")
    assert detect().index == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert detect() is None


def test_detect_failure_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", fake_tools(tmp_path, system_path=False, nvidia_smi=(
        "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n")))
    with pytest.raises(GPUDetectionError, match="exit code 9.*couldn't communicate"):
        detect()


def test_detect_retries_without_compute_cap(monkeypatch, tmp_path):
    script = ('case "$1" in *compute_cap*) echo \'Field "compute_cap" is not a valid field to query.\'; exit 2;; esac\n'
              "echo '0, NVIDIA A100-PCIE-40GB, 40536, 470.82.01, 00000000:3B:00.0, GPU-abc'\n")
    monkeypatch.setenv("PATH", fake_tools(tmp_path, system_path=False, nvidia_smi=script))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    g = detect()
    assert g.variant == "a100-pcie-40gb" and g.compute_cap is None and g.uuid == "GPU-abc"


def test_detect_on_this_machine():
    # Whatever this machine has: None without nvidia-smi, else a parsed GPU.
    try:
        g = detect()
    except GPUDetectionError:
        pytest.skip("nvidia-smi present but not working here")
    assert g is None or (g.name and g.memory_total_mib)
    assert gpu.QUERY_FIELDS[1] == "name"
