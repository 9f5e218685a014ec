"""`--gpu FAMILY` before any engine starts: device detection against the YAML's hardware.

nvidia-smi is replaced by a script on PATH that prints what a real driver prints (the parser itself is tested
on recorded lines in test_gpu.py); the plugin must stop with an error showing both ceilings when the detected
variant differs from the declared one (the notebook planned on an A100 PCIe and got an SXM4), and say clearly
when there is no GPU at all. Every affected prediction is an ERROR, never a skip or an xfail.
"""

from __future__ import annotations

import pytest
from support.gpu import A100_SXM4_SMI_LINE, fake_smi
from support.pytest_run import run_pytest
from support.specs import A100_PCIE_PLAN

# the A100 PCIe plan (support.specs), its measured throughput xfailed, and a second measured prediction
SPEC = A100_PCIE_PLAN + """\
    xfail: {mode: measured, reason: "an xfail must not hide a device mismatch"}
  - id: kv-blocks
    quantity: num_gpu_blocks
    predicted: 25,600
    tolerance: ±10%
"""


@pytest.fixture
def spec_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".roofline.yaml", plan=SPEC)
    return pytester


def test_detected_variant_differs_from_declared(spec_dir: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_smi(spec_dir.path, A100_SXM4_SMI_LINE))
    result = run_pytest(spec_dir, "--gpu", "a100")
    # the math-only prediction still runs; the two measured ones stop with the mismatch (xfail or not)
    result.assert_outcomes(passed=1, errors=2)
    text = result.stdout.str()
    assert "plans on a100-pcie-80gb but this machine has a100-sxm4-80gb" in text
    assert "declared: 1,935 GB/s" in text and "detected: 2,039 GB/s" in text  # both ceilings
    assert "ridge 161.2" in text and "ridge 153.0" in text
    assert "--reanchor" in text


def test_no_gpu_on_this_machine(spec_dir: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_smi(spec_dir.path, None))
    result = run_pytest(spec_dir, "--gpu", "a100")
    # one usage error at start-up naming the option and the fix, not an ERROR (and a traceback) per prediction
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--gpu a100: no NVIDIA/AMD GPU found (nvidia-smi, amd-smi and rocm-smi: not found)" in err
    assert "run without --gpu for the math alone, or --gpu cpu" in err
    assert "collected" not in result.stdout.str()


def test_cpu_engine_refuses_a_gpu_prediction_file(spec_dir: pytest.Pytester) -> None:
    result = run_pytest(spec_dir, "--gpu", "cpu")
    result.assert_outcomes(passed=1, errors=2)
    assert "--gpu cpu runs the CPU build of vLLM, but" in result.stdout.str()
