"""Two bugs that hid in the untyped seams between measurement, plugin and reports (the third, the xdist
scorecard, is covered by tests/test_xdist.py). Each test failed before its fix:

* a live point recorded ``"duration_s": null`` (the sweep read ``LoadResult.duration_s``, which does not exist),
  though docs/results-schema.md documents the measurement window there (against the real CPU engine:
  tests/engine/test_sweeps.py::test_live_point_records_its_measurement_window);
* the pytest-html environment read ``provider.detected_gpu``, which the live provider never had (it kept the
  detection as ``detected``), so a run stopped by a device mismatch showed "GPU (detected): not known yet".
"""

from __future__ import annotations

import html
import json

import pytest
from support.gpu import A100_SXM4_SMI_LINE, fake_smi
from support.specs import A100_PCIE_PLAN


def test_html_environment_shows_the_gpu_detected_before_the_sweep_stopped(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The YAML plans on an A100 PCIe, the machine has an SXM4: the sweep stops before any point (so no results
    file records the detection), and the report's environment must still name the GPU that was found."""
    pytest.importorskip("pytest_html")
    pytester.makefile(".roofline.yaml", plan=A100_PCIE_PLAN)
    monkeypatch.setenv("PATH", fake_smi(pytester.path, A100_SXM4_SMI_LINE))
    result = pytester.runpytest("--gpu", "a100", "--html", "report.html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    assert "plans on a100-pcie-80gb but this machine has a100-sxm4-80gb" in result.stdout.str()
    page = html.unescape((pytester.path / "report.html").read_text(encoding="utf-8"))
    env = json.loads(page.split('data-jsonblob="', 1)[1].split('"></div>', 1)[0])["environment"]
    # name [catalog variant], memory in MiB as nvidia-smi reports it, and the driver
    assert env["GPU (detected)"] == "NVIDIA A100-SXM4-80GB [a100-sxm4-80gb], 81,920 MiB"
    assert env["GPU driver"] == "550.54.15"
