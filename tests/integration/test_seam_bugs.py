"""Two bugs that hid in the untyped seams between measurement, plugin and reports (the third, the xdist
scorecard, is covered by tests/test_xdist.py). Each test failed before its fix:

* a live point recorded ``"duration_s": null`` (the sweep read ``LoadResult.duration_s``, which does not exist),
  though docs/results-schema.md documents the measurement window there;
* the pytest-html environment read ``provider.detected_gpu``, which the live provider never had (it kept the
  detection as ``detected``), so a run stopped by a device mismatch showed "GPU (detected): not known yet".
"""

from __future__ import annotations

import datetime as dt
import html
import json
import textwrap
from pathlib import Path

import pytest
from test_gpu_mode import _fake_smi  # noqa: E402  (the fake nvidia-smi the GPU-mode tests use)

REPO = Path(__file__).resolve().parents[2]
CPU_TINY = REPO / "predictions" / "cpu-tiny.yaml"


@pytest.mark.engine
@pytest.mark.slow
def test_live_point_records_its_measurement_window(tmp_path: Path) -> None:
    """Against the real CPU vLLM: the point's duration_s is the window its throughputs are rates over."""
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.measure import sweep, tinymodel
    from pytest_roofline.measure.engine import Engine
    from pytest_roofline.measure.plan import PointPlan

    spec = load_spec(CPU_TINY)
    completions, output_len = 6, 16
    plan = PointPlan(id="closed-c2", mode="closed", concurrency=2, rate_req_s=None, num_requests=completions,
                     duration_s=None, warmup_requests=2, input_len=32, output_len=output_len)
    cfg = sweep.engine_config_for(spec, device="cpu")
    with Engine(cfg, tmp_path / "engine.log").start(timeout_s=600) as eng:
        point = sweep.run_point(eng, plan, spec, out_dir=tmp_path,
                                token_id_range=(tinymodel.PROMPT_TOKEN_ID_MIN, tinymodel.PROMPT_TOKEN_ID_MAX + 1),
                                contamination=spec.thresholds.contamination)
    client = point["client"]
    assert client["completed"] == completions and client["token_count_mismatches"] == 0
    duration = point["duration_s"]
    assert isinstance(duration, float) and duration > 0
    # every completed request returned output_len tokens: the output throughput is their sum over this window
    assert client["output_throughput_tok_s"] * duration == pytest.approx(completions * output_len, rel=1e-9)
    assert client["request_throughput_req_s"] * duration == pytest.approx(completions, rel=1e-9)
    # the window (measured requests only) lies inside the wall-clock span of the run (warm-up included)
    t0, t1 = (dt.datetime.strptime(point[k], "%Y-%m-%dT%H:%M:%S.%fZ") for k in ("started_at", "finished_at"))
    assert duration <= (t1 - t0).total_seconds() + 1e-3
    # and the file on disk says the same
    assert json.loads(json.dumps(point))["duration_s"] == duration


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
      - id: throughput-c1
        quantity: output_throughput
        at: {concurrency: 1}
        predicted: 117 tok/s
""")

#: what `nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id,uuid,compute_cap
#: --format=csv,noheader,nounits` prints on an A100 SXM4 80GB (the parser is tested on such lines in test_gpu.py)
SMI_LINE = "0, NVIDIA A100-SXM4-80GB, 81920, 550.54.15, 00000000:07:00.0, GPU-1234, 8.0"


def test_html_environment_shows_the_gpu_detected_before_the_sweep_stopped(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The YAML plans on an A100 PCIe, the machine has an SXM4: the sweep stops before any point (so no results
    file records the detection), and the report's environment must still name the GPU that was found."""
    pytest.importorskip("pytest_html")
    pytester.makefile(".roofline.yaml", plan=SPEC)
    monkeypatch.setenv("PATH", _fake_smi(pytester.path, SMI_LINE))
    result = pytester.runpytest("--gpu", "a100", "--html", "report.html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    assert "plans on a100-pcie-80gb but this machine has a100-sxm4-80gb" in result.stdout.str()
    page = html.unescape((pytester.path / "report.html").read_text(encoding="utf-8"))
    env = json.loads(page.split('data-jsonblob="', 1)[1].split('"></div>', 1)[0])["environment"]
    # name [catalog variant], memory in MiB as nvidia-smi reports it, and the driver
    assert env["GPU (detected)"] == "NVIDIA A100-SXM4-80GB [a100-sxm4-80gb], 81,920 MiB"
    assert env["GPU driver"] == "550.54.15"
