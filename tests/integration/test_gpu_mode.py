"""`--gpu FAMILY` before any engine starts: device detection against the YAML's hardware.

nvidia-smi is replaced by a script on PATH that prints what a real driver prints (the parser itself is tested
on recorded lines in test_gpu.py); the plugin must stop with an error showing both ceilings when the detected
variant differs from the declared one (the notebook planned on an A100 PCIe and got an SXM4), and say clearly
when there is no GPU at all. Every affected prediction is an ERROR, never a skip or an xfail.
"""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

SPEC = textwrap.dedent("""
    hardware: a100-pcie-80gb
    model: qwen3-8b
    engine: {name: vllm, version: "0.26.0"}
    workload: {input_len: 1024, output_len: 1024, kv_context: 1000}
    sweep: {concurrency: [1]}
    predictions:
      - id: ridge
        quantity: ridge_point
        predicted: 161 FLOP/byte
      - id: kv-blocks
        quantity: num_gpu_blocks
        predicted: 25,600
        tolerance: ±10%
      - id: throughput-c1
        quantity: output_throughput
        at: {concurrency: 1}
        predicted: 117 tok/s
        xfail: {mode: measured, reason: "an xfail must not hide a device mismatch"}
""")


def _fake_smi(dir_: Path, line: str | None) -> str:
    bin_dir = dir_ / "bin"
    bin_dir.mkdir()
    if line is not None:
        smi = bin_dir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\necho '{line}'\n")
        smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"


@pytest.fixture
def spec_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".roofline.yaml", plan=SPEC)
    return pytester


def test_detected_variant_differs_from_declared(spec_dir: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    line = "0, NVIDIA A100-SXM4-80GB, 81920, 550.54.15, 00000000:07:00.0, GPU-1234, 8.0"
    monkeypatch.setenv("PATH", _fake_smi(spec_dir.path, line))
    result = spec_dir.runpytest("--gpu", "a100", "-p", "no:html", "-p", "no:cacheprovider")
    # the math-only prediction still runs; the two measured ones stop with the mismatch (xfail or not)
    result.assert_outcomes(passed=1, errors=2)
    text = result.stdout.str()
    assert "plans on a100-pcie-80gb but this machine has a100-sxm4-80gb" in text
    assert "declared: 1,935 GB/s" in text and "detected: 2,039 GB/s" in text  # both ceilings
    assert "ridge 161.2" in text and "ridge 153.0" in text
    assert "--reanchor" in text


def test_no_gpu_on_this_machine(spec_dir: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _fake_smi(spec_dir.path, None))
    result = spec_dir.runpytest("--gpu", "a100", "-p", "no:html", "-p", "no:cacheprovider")
    # one usage error at start-up naming the option and the fix, not an ERROR (and a traceback) per prediction
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--gpu a100: no NVIDIA/AMD GPU found (nvidia-smi, amd-smi and rocm-smi: not found)" in err
    assert "run without --gpu for the math alone, or --gpu cpu" in err
    assert "collected" not in result.stdout.str()


def test_cpu_engine_refuses_a_gpu_prediction_file(spec_dir: pytest.Pytester) -> None:
    result = spec_dir.runpytest("--gpu", "cpu", "-p", "no:html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=2)
    assert "--gpu cpu runs the CPU build of vLLM, but" in result.stdout.str()
