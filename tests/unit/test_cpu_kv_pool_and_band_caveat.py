"""The CPU pseudo-device: its KV pool comes from ``engine.cpu_kvcache_space`` (never from GPU budget arithmetic on a
``hardware.memory_bytes``), and its serving bands say once that they come from the project's own 2-core machine.

opt-125m keeps 12 layers x 12 KV heads x 64 x 2 (K and V) x 2 B (fp16) = 36,864 B of KV per token; a CPU block is
128 tokens = 4,718,592 B, so a 1 GiB pool (cpu_kvcache_space: 1 GiB) holds 1,073,741,824 // 4,718,592 = 227 blocks.
"""

from __future__ import annotations

import json

import pytest
from support.paths import PREDICTIONS

from pytest_roofline import cli
from pytest_roofline.errors import SetupError
from pytest_roofline.model import bands
from pytest_roofline.model.setup import build_setup, kv_accounting

GIB = 2**30
CPU_OPT = ("predict", "--simulate", "--gpu", "cpu", "--model", "opt-125m", "--output-len", "16", "--concurrency", "1")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


@pytest.mark.parametrize("extra", [(), ("--set", "hardware.memory_bytes=16GiB")])
def test_cpu_without_a_pool_names_cpu_kvcache_space(capsys, extra):
    rc, out, err = run(capsys, *CPU_OPT, *extra)
    assert rc != 0 and not out
    assert "engine.cpu_kvcache_space" in err and "--set engine.cpu_kvcache_space=1GiB" in err
    assert "VLLM_CPU_KVCACHE_SPACE" in err and "set hardware.memory_bytes" not in err
    # a memory size given for the CPU device does not produce GPU-style blocks (it gave 3,257 before)
    assert ("hardware.memory_bytes does not size it" in err) == bool(extra)
    assert "3,257" not in out


def test_cpu_pool_from_cpu_kvcache_space(capsys):
    rc, out, err = run(capsys, *CPU_OPT, "--set", "engine.cpu_kvcache_space=1GiB")
    assert rc == 0, err
    assert "227 KV blocks" in out.splitlines()[0]


def test_kv_accounting_refuses_memory_bytes_on_cpu():
    s = build_setup(hardware_ref="cpu", hardware_overrides={"memory_bytes": 16 * GIB}, model_ref="opt-125m")
    with pytest.raises(SetupError, match="cpu_kvcache_space"):
        kv_accounting(s)
    pooled = build_setup(hardware_ref="cpu", model_ref="opt-125m", engine={"cpu_kvcache_space": 1 * GIB})
    assert kv_accounting(pooled).num_blocks == GIB // (36_864 * 128) == 227


def test_cpu_bands_carry_the_one_host_caveat_once(capsys):
    rc, out, err = run(capsys, "predict", "--simulate", str(PREDICTIONS / "cpu-tiny.yaml"), "--concurrency", "1,2")
    assert rc == 0, err
    assert sum(line.startswith("       band: ") for line in out.splitlines()) == 2
    caveat = [line for line in out.splitlines() if line == bands.CPU_BAND_CAVEAT]
    assert len(caveat) == 1  # once under the table, not per row
    assert "2-core" in caveat[0] and "roofline calibrate" in caveat[0]
    assert out.count("CPU bands") == 1


def test_cpu_bands_carry_the_caveat_in_json_too(capsys):
    rc, out, err = run(capsys, "predict", "--simulate", str(PREDICTIONS / "cpu-tiny.yaml"), "--concurrency", "1,2",
                       "--json")
    assert rc == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2 and all(row["bands"] for row in rows)
    assert [row["band_caveat"] for row in rows] == [bands.CPU_BAND_CAVEAT] * 2
    rc, out, err = run(capsys, "predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b",
                       "--output-len", "16", "--concurrency", "1", "--json")
    assert rc == 0, err
    assert "band_caveat" not in json.loads(out.splitlines()[0])


def test_gpu_bands_carry_no_cpu_caveat(capsys):
    rc, out, err = run(capsys, "predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b",
                       "--output-len", "16", "--concurrency", "1")
    assert rc == 0, err
    assert "band: " in out and "CPU bands" not in out and "2-core" not in out
    assert bands.band_caveat("cuda") is None and bands.band_caveat("cpu") == bands.CPU_BAND_CAVEAT


def test_a_cpu_kvcache_space_set_on_the_command_line_is_held_to_whole_gib(capsys) -> None:
    """vllm-cpu reads VLLM_CPU_KVCACHE_SPACE with int() in GiB: 1.5 GiB set with --set is refused as the YAML
    field is (it was accepted and priced 1.5 GiB of blocks that a run would not have), naming the exact-pool form:
    1.5 × 2^30 = 1,610,612,736 bytes."""
    rc = cli.main(["predict", "--simulate", "--gpu", "cpu", "--model", "roofline-tiny", "--set",
                   "engine.cpu_kvcache_space=1.5GiB"])
    err = capsys.readouterr().err
    assert rc == 2 and "is not a whole number of GiB (1.5 GiB)" in err and "kv_cache_memory_bytes: 1610612736" in err
    assert cli.main(["predict", "--simulate", "--gpu", "cpu", "--model", "roofline-tiny", "--set",
                     "engine.cpu_kvcache_space=1GiB", "--concurrency", "1"]) == 0


def test_the_yaml_field_is_refused_at_its_line_by_the_same_rule() -> None:
    from pytest_roofline.format.spec import SpecError, loads_spec

    text = ("hardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n  version: '0.32.0'\n"
            "  cpu_kvcache_space: 1.5 GiB\npredictions:\n  - {id: r, quantity: ridge_point, predicted: model}\n")
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="k.yaml")
    assert exc.value.line == 6 and "is not a whole number of GiB (1.5 GiB)" in str(exc.value)
    assert "kv_cache_memory_bytes: 1610612736" in str(exc.value)
