"""One vocabulary for GPUs (issue 24, review finding M3): a catalog id, an alias (the name nvidia-smi prints is
one) or a family, the same in a prediction file's ``hardware:``, ``pytest --gpu`` and ``roofline predict --gpu``;
a family stands for its common variant (hardware.json's ``common_variants``), and the GH200 was added as data.

Figures by hand: H100 SXM 3.35 TB/s; Llama-3.1-8B 8,030,261,248 parameters × 2 B = 16,060,522,496 B of weights;
GH200 (96 GB HBM3) 4 TB/s and 989 TFLOP/s bf16, so its ridge is 989e12 / 4e12 = 247.25 FLOP/B.
"""

from __future__ import annotations

import json

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import AmbiguousHardwareError
from pytest_roofline.model import hardware
from pytest_roofline.units import MIB


def test_roofline_predict_takes_a_family(capsys: pytest.CaptureFixture[str]) -> None:
    # before: "roofline: unknown hardware 'h100'. Did you mean: h800, h200, h100-sxm?" (rc 2)
    rc = cli.main(["predict", "--gpu", "h100", "--model", "llama-3.1-8b", "--batch", "1", "--context", "1",
                   "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    row = json.loads(out.out.splitlines()[0])
    assert out.err == "roofline: --gpu h100 -> h100-sxm (NVIDIA H100 SXM5 80GB); other variants: h100-pcie, h100-nvl\n"
    t_mem = (2 * 8_030_261_248 + 1 * 32 * 8 * 128 * 2 * 2) / 3.35e12  # h100-sxm: 3.35 TB/s
    assert row["t_mem_ms"] == pytest.approx(t_mem * 1e3, rel=1e-9)


def test_every_family_names_one_variant_in_the_cli_and_the_file() -> None:
    for family, variants in hardware.families().items():
        spec = hardware.get_hardware(family)
        assert spec.id in variants
        if len(variants) > 1:  # never a silent pick: the catalog says which one
            assert hardware.COMMON_VARIANTS[family] == spec.id
    assert hardware.get_hardware("h100").id == "h100-sxm"
    assert hardware.get_hardware("a100").id == "a100-sxm4-80gb"


def test_a_family_in_the_file_agrees_with_pytest_gpu() -> None:
    # pytest --gpu h100 on a file that says hardware: h100 (before: 'unknown hardware' in the file)
    assert hardware.resolve("h100", declared="h100").id == "h100-sxm"
    with pytest.raises(AmbiguousHardwareError):  # with nothing to choose, pytest --gpu still lists the variants
        hardware.resolve("h100")


def test_nvidia_smi_names_are_catalog_names() -> None:
    assert hardware.get_hardware("NVIDIA H100 80GB HBM3").id == "h100-sxm"
    assert hardware.get_hardware("NVIDIA GH200 480GB").id == "gh200"
    for spec in hardware.CATALOG.values():
        for alias in spec.aliases:
            assert hardware.get_hardware(alias).id == spec.id


def test_gh200_is_in_the_catalog_as_data() -> None:
    gh = hardware.get_hardware("gh200")
    assert gh.memory_bytes == 97_871 * MIB
    assert gh.hbm_bytes_per_s == 4.0e12
    assert gh.ridge_flop_per_byte() == pytest.approx(247.25)


def test_a_typo_suggests_its_own_family_first() -> None:
    with pytest.raises(hardware.HardwareError) as exc:
        hardware.get_hardware("h100-sxmm")
    assert "Did you mean: h100-sxm" in str(exc.value)


def test_a_family_note_says_what_the_family_was_read_as() -> None:
    assert hardware.family_note("h100") == ("h100 -> h100-sxm (NVIDIA H100 SXM5 80GB); other variants: h100-pcie, "
                                            "h100-nvl")
    assert hardware.family_note("h100-sxm") is None
