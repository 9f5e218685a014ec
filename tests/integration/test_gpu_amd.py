"""AMD detection: ``amd-smi`` and ``rocm-smi`` outputs -> catalog ids, fake tools on PATH, failures.

The recorded outputs below are in the shapes the real tools print:

* ``amd-smi static --asic --vram --bus --json``: a list of ``{"gpu", "asic": {"market_name", "device_id",
  "num_compute_units", ...}, "bus": {"bdf"}, "vram": {"size": {"value", "unit": "MB"}}}`` (older releases), wrapped
  as ``{"gpu_data": [...]}`` by newer ones; the field names are those ``amd-smi static`` prints
  (MARKET_NAME, DEVICE_ID, NUM_COMPUTE_UNITS, BDF in github.com/ROCm/rocm-systems/pull/2987). VRAM "MB" is MiB:
  ``amdsmi_vram_info_t.vram_size`` is "vram size in MB" computed in binary units, and an MI300X's
  196,592 x 2**20 = 206,141,652,992 B.
* ``rocm-smi --showproductname --showmeminfo vram --json``: ``{"card0": {"Card Series", "Card Model",
  "Card Vendor", "Card SKU", "VRAM Total Memory (B)", ...}}`` (github.com/marimo-team/marimo/issues/9237 shows
  the shape; github.com/ROCm/rocm_smi_lib/issues/159 an MI250X GCD printing the family string
  "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2" with "Card Model": "0x7408"; older releases write "Card series").
  MI300X: 192 GiB = 206,158,430,208 B; one MI250X GCD: 64 GiB less 16 MiB = 68,702,699,520 B (65,520 MiB).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.gpu import cat, fake_tools
from support.patience import bound_s
from support.pytest_run import run_pytest
from support.specs import qwen3_plan

from pytest_roofline.measure import gpu
from pytest_roofline.measure.gpu import (
    CATALOG_IDS,
    GPUDetectionError,
    detect,
    detect_all,
    match_variant,
    parse_amd_smi_json,
    parse_rocm_smi_json,
)
from pytest_roofline.model.hardware import CATALOG
from pytest_roofline.units import MIB


def _amd_smi_gpu(index: int, name: str, size: object, *, device_id: str = "0x74a1", cus: int = 304,
                 bdf: str = "0000:05:00.0") -> dict:
    return {"gpu": index,
            "asic": {"market_name": name, "vendor_id": "0x1002",
                     "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "subvendor_id": "0x1002",
                     "device_id": device_id, "rev_id": "0x00", "asic_serial": "0xREDACTED",
                     "oam_id": index, "num_compute_units": cus, "target_graphics_version": "gfx942"},
            "bus": {"bdf": bdf, "max_pcie_width": 16, "max_pcie_speed": "32 GT/s",
                    "pcie_interface_version": "Gen 5", "slot_type": "OAM"},
            "vram": {"type": "HBM3", "vendor": "N/A", "size": size, "bit_width": 8192}}


# 2 x MI300X, as amd-smi 24.x (ROCm 6.1-6.3) prints it: a bare list
AMD_SMI_MI300X = json.dumps([
    _amd_smi_gpu(0, "AMD Instinct MI300X", {"value": 196592, "unit": "MB"}, bdf="0000:05:00.0"),
    _amd_smi_gpu(1, "AMD Instinct MI300X", {"value": 196592, "unit": "MB"}, bdf="0000:26:00.0"),
], indent=4)
# MI325X, newer amd-smi (the {"gpu_data": [...]} envelope); 256 GiB = 262,144 MiB
AMD_SMI_MI325X = json.dumps({"gpu_data": [
    _amd_smi_gpu(0, "AMD Instinct MI325X", {"value": 262144, "unit": "MB"}, device_id="0x74a5"),
]}, indent=4)
# one MI250X GCD: the shared "MI250X/MI250" name, 110 CUs per GCD (220 per module), size as text (early amd-smi)
AMD_SMI_MI250X = json.dumps([
    _amd_smi_gpu(0, "AMD Instinct MI250X/MI250", "65520 MB", device_id="0x740c", cus=110),
    _amd_smi_gpu(1, "AMD Instinct MI250X/MI250", "65520 MB", device_id="0x740c", cus=110),
])

ROCM_SMI_MI300X = json.dumps({
    "card0": {"Card Series": "AMD Instinct MI300X", "Card Model": "0x74a1",
              "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "Card SKU": "M3000100",
              "Subsystem ID": "0x74a1", "Device Rev": "0x00", "Node ID": "2", "GUID": "11111",
              "GFX Version": "gfx942", "VRAM Total Memory (B)": "206158430208",
              "VRAM Total Used Memory (B)": "299458560"},
    "card1": {"Card Series": "AMD Instinct MI300X", "Card Model": "0x74a1",
              "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "Card SKU": "M3000100",
              "Subsystem ID": "0x74a1", "Device Rev": "0x00", "Node ID": "3", "GUID": "22222",
              "GFX Version": "gfx942", "VRAM Total Memory (B)": "206158430208",
              "VRAM Total Used Memory (B)": "299458560"},
})
# an MI250X GCD on an HPE Cray node: the family string, the MI250X device id, older "Card series" spelling
ROCM_SMI_MI250X_FAMILY = json.dumps({
    "card0": {"Card series": "AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2", "Card model": "0x7408",
              "Card vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "Card SKU": "D65201",
              "VRAM Total Memory (B)": "68702699520", "VRAM Total Used Memory (B)": "11911168"},
    "system": {"Driver version": "6.3.6"},
})


# --------------------------------------------------------------------------- parsing


def test_amd_smi_list_of_two_mi300x():
    gpus = parse_amd_smi_json(AMD_SMI_MI300X)
    assert [g.index for g in gpus] == [0, 1]
    g = gpus[0]
    assert (g.name, g.variant, g.tool, g.device_id, g.compute_units, g.pci_bus_id) == (
        "AMD Instinct MI300X", "mi300x", "amd-smi", "0x74a1", 304, "0000:05:00.0")
    assert g.memory_total_mib == 196592 and g.memory_total_bytes == 206_141_652_992  # MB read as MiB


def test_amd_smi_gpu_data_envelope_mi325x():
    (g,) = parse_amd_smi_json(AMD_SMI_MI325X)
    assert g.variant == "mi325x" and g.memory_total_mib == 256 * 1024


def test_amd_smi_shared_mi250x_name_resolved_by_compute_units():
    gpus = parse_amd_smi_json(AMD_SMI_MI250X)
    assert [g.variant for g in gpus] == ["mi250x", "mi250x"]
    assert gpus[0].memory_total_mib == 65520  # "65520 MB" as text: one GCD, 64 GiB less 16 MiB
    # the same name with the MI250's 104 CUs per GCD (208 per module) is not an MI250X
    mi250 = json.loads(AMD_SMI_MI250X)[:1]
    mi250[0]["asic"]["num_compute_units"] = 104
    assert parse_amd_smi_json(json.dumps(mi250))[0].variant is None


@pytest.mark.parametrize("size, mib", [
    ({"value": 196592, "unit": "MB"}, 196592),
    ({"value": 196592, "unit": "MiB"}, 196592),
    ("196592 MB", 196592),
    (196592, 196592),                                  # a bare number is in amd-smi's MB
    ({"value": 192, "unit": "GB"}, 192 * 1024),
    ({"value": 206158430208, "unit": "B"}, 196608),
    ("N/A", None),
    ({"value": "N/A", "unit": "MB"}, None),
])
def test_amd_smi_vram_size_forms(size, mib):
    (g,) = parse_amd_smi_json(json.dumps([_amd_smi_gpu(0, "AMD Instinct MI300X", size)]))
    assert g.memory_total_mib == mib


@pytest.mark.parametrize("text, match", [
    ("not json at all", "not JSON"),
    ('"a string"', "not a list of GPUs"),
    ("[1, 2]", "not an object"),
    ('[{"gpu": 0, "vram": {}}]', "no 'asic' section"),
    ('[{"gpu": 0, "asic": {"market_name": "N/A"}}]', "no asic.market_name"),
    ('[{"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X"}, "vram": {"size": "lots"}}]', "VRAM size"),
    ('[{"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X"}, "vram": {"size": {"value": 1, "unit": "parsec"}}}]',
     "unit"),
])
def test_amd_smi_garbage_is_a_clear_value_error(text, match):
    with pytest.raises(ValueError, match=match):
        parse_amd_smi_json(text)


def test_rocm_smi_two_mi300x():
    gpus = parse_rocm_smi_json(ROCM_SMI_MI300X)
    assert [(g.index, g.variant, g.tool) for g in gpus] == [(0, "mi300x", "rocm-smi"), (1, "mi300x", "rocm-smi")]
    assert gpus[0].memory_total_bytes == 206_158_430_208 == 192 * 2**30  # bytes -> MiB -> bytes, exact
    assert gpus[0].device_id == "0x74a1"


def test_rocm_smi_family_string_resolved_by_device_id():
    (g,) = parse_rocm_smi_json(ROCM_SMI_MI250X_FAMILY)
    assert g.name == "AMD Instinct MI250X" and g.variant == "mi250x"
    assert g.memory_total_mib == 65520 and g.driver_version == "6.3.6"
    assert g.memory_total_bytes == CATALOG["mi250x"].memory_bytes  # the catalog counts one GCD as ROCm shows it


def test_rocm_smi_name_only_in_card_model():
    data = {"card0": {"Card Series": "N/A", "Card Model": "0x74a1", "VRAM Total Memory (B)": "206158430208"}}
    (g,) = parse_rocm_smi_json(json.dumps(data))
    assert g.variant == "mi300x"


def test_rocm_smi_a_radeon_card_is_not_in_the_catalog():
    # the Radeon RX 7900 XT line from github.com/marimo-team/marimo/issues/9237
    data = {"card0": {"GPU use (%)": "0", "VRAM Total Memory (B)": "21458059264",
                      "Card Series": "Radeon RX 7900 XT", "Card Model": "0x744c",
                      "Card Vendor": "Advanced Micro Devices, Inc. [AMD/ATI]", "Card SKU": "D70401XT"}}
    (g,) = parse_rocm_smi_json(json.dumps(data))
    assert g.variant is None and g.memory_total_mib == 21458059264 // MIB


@pytest.mark.parametrize("text, match", [
    ("ERROR: GPU[0] : Unable to get product name", "not JSON"),
    ("[]", "not an object of cards"),
    ('{"card0": "x"}', "not an object"),
    ('{"gpu0": {"Card Series": "AMD Instinct MI300X"}}', "no card entries"),
    ('{"card0": {"VRAM Total Memory (B)": "1"}}', "no product name"),
    ('{"card0": {"Card Series": "AMD Instinct MI300X", "VRAM Total Memory (B)": "192 GB"}}', "not a byte count"),
])
def test_rocm_smi_garbage_is_a_clear_value_error(text, match):
    with pytest.raises(ValueError, match=match):
        parse_rocm_smi_json(text)


@pytest.mark.parametrize("name, kwargs, variant", [
    ("AMD Instinct MI300X", {}, "mi300x"),
    ("AMD Instinct MI300X-O", {}, "mi300x"),
    ("AMD Instinct MI300X VF", {}, "mi300x"),
    ("AMD Instinct MI325X", {}, "mi325x"),
    ("AMD Instinct MI250X", {}, "mi250x"),
    ("AMD Instinct MI250X/MI250", {"compute_units": 110}, "mi250x"),
    ("AMD Instinct MI250X/MI250", {"device_id": "0x7408"}, "mi250x"),
    ("AMD Instinct MI250X/MI250", {}, None),                 # MI250 or MI250X: no silent pick
    ("AMD Instinct MI250", {"compute_units": 104}, None),
    ("AMD Instinct MI308X", {}, None),
    ("AMD Instinct MI300A", {}, None),
    ("AMD Instinct MI210", {}, None),
])
def test_match_amd_names(name, kwargs, variant):
    assert match_variant(name, **kwargs) == variant


def test_every_catalog_device_has_a_detection_mapping():
    # a new catalog entry must come with a name mapping (tests/test_gpu.py NAMES reaches each id)
    assert set(CATALOG_IDS) == {i for i in CATALOG if i != "cpu"}


# --------------------------------------------------------------------------- fake tools on PATH


@pytest.fixture(autouse=True)
def _no_visible_devices(monkeypatch):
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)


def test_neither_tool_present(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", fake_tools(tmp_path))
    if any(Path(d, t).exists() for d in ("/usr/bin", "/bin") for t in ("nvidia-smi", "amd-smi", "rocm-smi")):
        pytest.skip("this machine has a real GPU tool in /usr/bin")
    assert detect() is None and detect_all() is None


def test_detect_with_fake_amd_smi(monkeypatch, tmp_path):
    # the fake checks it was asked for the sections the parser reads
    body = ('case "$*" in "static --asic --vram --bus --json") ;; *) echo "unexpected args: $*" >&2; exit 2;; esac\n'
            + cat(AMD_SMI_MI300X))
    monkeypatch.setenv("PATH", fake_tools(tmp_path, amd_smi=body))
    g = detect()
    assert g is not None and (g.variant, g.tool, g.count, g.others) == ("mi300x", "amd-smi", 2, [])
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    g = detect()
    assert g is not None and g.index == 1 and g.count == 1 and g.pci_bus_id == "0000:26:00.0"


def test_detect_with_fake_rocm_smi_only(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", fake_tools(tmp_path, rocm_smi=cat(ROCM_SMI_MI250X_FAMILY)))
    g = detect()
    assert g is not None and (g.variant, g.tool, g.count) == ("mi250x", "rocm-smi", 1)


def test_failing_amd_smi_falls_back_to_rocm_smi(monkeypatch, tmp_path):
    path = fake_tools(tmp_path, amd_smi="echo 'ERROR:root:Unable to detect any GPU devices' >&2\nexit 1\n",
                  rocm_smi=cat(ROCM_SMI_MI300X))
    monkeypatch.setenv("PATH", path)
    g = detect()
    assert g is not None and g.tool == "rocm-smi" and g.variant == "mi300x" and g.count == 2


def test_both_failing_names_both(monkeypatch, tmp_path):
    path = fake_tools(tmp_path, amd_smi="echo 'amdgpu driver not loaded' >&2\nexit 1\n",
                  rocm_smi="echo 'ERROR: GPU[0] : Unable to get product name'\nexit 0\n")  # rocm-smi exits 0
    monkeypatch.setenv("PATH", path)
    with pytest.raises(GPUDetectionError) as err:
        detect()
    msg = str(err.value)
    assert "amd-smi failed with exit code 1: amdgpu driver not loaded" in msg
    assert "unexpected rocm-smi output" in msg and "Unable to get product name" in msg


def test_garbage_from_amd_smi_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", fake_tools(tmp_path, amd_smi="echo '<html>Service Unavailable</html>'\n"))
    with pytest.raises(GPUDetectionError, match=r"unexpected amd-smi output: amd-smi output is not JSON.*<html>"):
        detect()


def test_a_hanging_tool_is_bounded(monkeypatch, tmp_path):
    # the child `sleep` keeps the pipes open: only killing the process group ends the wait
    monkeypatch.setenv("PATH", fake_tools(tmp_path, amd_smi="sleep 600\n"))
    start = time.monotonic()
    with pytest.raises(GPUDetectionError, match="amd-smi did not answer within 1 s"):
        detect(timeout_s=1.0)
    took = time.monotonic() - start  # not the 600 s the tool would take; the bound allows a very busy machine
    assert took < bound_s(1), f"detect() took {took:.0f} s to give up on a hanging amd-smi (about 1 s normally)"


def test_a_hanging_nvidia_smi_is_bounded_too(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", fake_tools(tmp_path, nvidia_smi="sleep 600\n"))
    start = time.monotonic()
    with pytest.raises(GPUDetectionError, match="nvidia-smi did not answer"):
        detect(timeout_s=1.0)
    took = time.monotonic() - start
    assert took < bound_s(1), f"detect() took {took:.0f} s to give up on a hanging nvidia-smi (about 1 s normally)"


def test_nvidia_smi_is_asked_first(monkeypatch, tmp_path):
    path = fake_tools(tmp_path, nvidia_smi="echo '0, NVIDIA L40, 46068, 580.126.09, 00000000:01:00.0, GPU-1, 8.9'\n",
                  amd_smi="exit 7\n")
    monkeypatch.setenv("PATH", path)
    g = detect()
    assert g is not None and g.variant == "l40" and g.tool == "nvidia-smi"


def test_the_args_asked_are_the_documented_ones():
    assert gpu.AMD_SMI_ARGS == ("static", "--asic", "--vram", "--bus", "--json")
    assert gpu.ROCM_SMI_ARGS == ("--showproductname", "--showmeminfo", "vram", "--json")


# --------------------------------------------------------------------------- --gpu mi300x on an AMD box

SPEC = qwen3_plan("mi300x", ridge="247 FLOP/byte", throughput_c1="300 tok/s")


def test_gpu_mi300x_on_an_mi325x_box_stops_with_the_detected_chip(pytester, monkeypatch):
    # ridge 1,307.4 / 5.3 = 246.7 FLOP/byte (math, passes); the measured prediction must not run on another chip
    pytester.makefile(".roofline.yaml", plan=SPEC)
    monkeypatch.setenv("PATH", fake_tools(pytester.path, amd_smi=cat(AMD_SMI_MI325X)))
    result = run_pytest(pytester, "--gpu", "mi300x")
    result.assert_outcomes(passed=1, errors=1)
    text = result.stdout.str()
    assert "mi325x" in text and "AMD Instinct MI325X" in text and "--gpu mi300x" in text
