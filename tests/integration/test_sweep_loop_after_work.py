"""The sweep loop's after-work, end to end through pytest (``--endpoint`` against a small streaming server, in a
child process so its Ctrl-C is its own): the host probe's machine-slower flag reaches the stored point, and a Ctrl-C
during a point's after-work (trial s25c #7) stores that complete point before the run stops.

The host probe is replaced in the child by one that reads a known figure per call (``measure.sweep.run_point``
probes once before a point's load and once after it): 10 GFLOP/s around C = 1, 4 around C = 2 (0.4x the run's
fastest point, past the 1 ÷ 1.2 that ``MACHINE_SHIFT`` allows), and the probe after C = 2's load, which runs inside
the deferral, sends this process a SIGINT before it returns.
"""

from __future__ import annotations

import json

import pytest
from support.openai_stub import StubServer

SPEC = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}
workload: {input_len: 16, output_len: 4}
sweep: {mode: closed, concurrency: [1, 2, 4], requests_per_point: 4, warmup: 0}
predictions:
  - id: littles-law
    quantity: littles_law_ratio
    at: {concurrency: every}
    predicted: 1.00
    tolerance: ±50%
"""

CONFTEST = """\
import os
import signal

from pytest_roofline.measure import probe

FIGURES = [10.0, 10.0, 4.0, 4.0]  # C = 1 before and after its load, C = 2 before and after
CALLS = []


def _probe():
    CALLS.append(1)
    if len(CALLS) == 4:  # the probe after C = 2's load: inside the point's after-work
        os.kill(os.getpid(), signal.SIGINT)
    gflop = FIGURES[len(CALLS) - 1] if len(CALLS) <= len(FIGURES) else 10.0
    return probe.HostProbe(gflop_per_s=gflop, threads=1, wall_s=0.25)


probe.probe_host = _probe
"""


@pytest.fixture
def stream_server(stub_server) -> StubServer:
    return stub_server(model="roofline-tiny", max_model_len=1024, token_delay_s=0.005)


def test_the_slower_machine_flag_is_stored_and_a_ctrl_c_in_the_after_work_keeps_the_point(
        pytester: pytest.Pytester, stream_server: StubServer) -> None:
    (pytester.path / "p.roofline.yaml").write_text(SPEC)
    (pytester.path / "conftest.py").write_text(CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "p.roofline.yaml",
                                           "--endpoint", stream_server.url + "/v1", "--roofline-out", "out")
    assert result.ret == pytest.ExitCode.INTERRUPTED, "\n".join(result.outlines[-40:])
    data = json.loads(next((pytester.path / "out").rglob("results.json")).read_text())
    assert data["status"] == "interrupted"
    points = {p["id"]: p for p in data["points"]}
    # C = 2 finished its load before the Ctrl-C: stored whole; C = 4 never ran
    assert sorted(points) == ["closed-c1", "closed-c2"]
    assert points["closed-c2"]["client"]["completed"] == 4
    # a closed loop warms up max(warmup, C) requests (measure/plan/points.py): (1 + 4) at C = 1, (2 + 4) at C = 2,
    # none at C = 4
    assert len(stream_server.posts) == 11
    # the probe around C = 2 read (4 + 4) / 2 = 4 GFLOP/s, 0.40x C = 1's 10: flagged; C = 1 (the first) is not
    assert not any(f.startswith("machine slower") for f in points["closed-c1"].get("flags") or [])
    [flag] = [f for f in points["closed-c2"]["flags"] if f.startswith("machine slower")]
    assert "4 GFLOP/s, 0.40x the run's fastest point before it (10)" in flag
    assert points["closed-c2"]["host_probe"]["before_gflop_per_s"] == 4.0
    # the interruption says where it came and that the two points were kept
    assert "interrupted" in json.dumps(data.get("errors"))
