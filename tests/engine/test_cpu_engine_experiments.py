"""Two of the Day 3 notebook's "if time remains" experiments, live against the real CPU build of vLLM.

Scaled-down twins of predictions/day3-experiments.yaml's preemption hunt and open-vs-closed arm, run exactly as
a user runs them (``pytest --gpu cpu FILE``, through pytester in a subprocess): the engine is started, the points
are measured, and every prediction is scored against the measurement, with the serving model's value beside it.
Each run takes about two minutes on an idle two-core machine (engine start ~30-60 s, then a few short points);
the subprocess timeout scales with that (support.patience), for a machine shared with other work. The preemption
hunt's engine is a configuration of its own (a 1.5 MiB KV pool), so `--gpu cpu` starts it; the open-vs-closed
arm runs on cpu-tiny's engine, so it measures the session's shared one (`--endpoint`, tests/engine/conftest.py).
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.engine import assert_settled, held, needs_vllm
from support.paths import PREDICTIONS
from support.patience import bound_s

pytestmark = [pytest.mark.slow, needs_vllm]

#: one of these files through `pytest --gpu cpu` on an idle two-core machine (the engine's start included)
EXPERIMENT_RUN_S = 120.0


def _run(pytester: pytest.Pytester, tmp_path: Path, name: str,
         *target: str) -> tuple[pytest.RunResult, dict, dict[str, dict]]:
    """`pytest FILE` with ``target`` (``--gpu cpu`` or ``--endpoint URL``): the run, its results file and each
    prediction's JUnit properties."""
    shutil.copy(PREDICTIONS / f"{name}.yaml", pytester.path / f"{name}.roofline.yaml")
    out = tmp_path / "run"
    junit = tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess(*target, "--roofline-out", str(out), "-p", "no:html",
                                           "--junitxml", str(junit), timeout=bound_s(EXPERIMENT_RUN_S))
    results = json.loads((out / f"{name}.roofline" / "results.json").read_text())
    props: dict[str, dict] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props[case.get("name", "")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return result, results, props


def _points(results: dict) -> dict[str, dict]:
    return {p["id"]: p for p in results["points"]}


def test_preemption_hunt_live(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Past the 24-block budget vLLM preempts (and recomputes); below it, it does not — measured, and the
    serving model said the same before the engine started. Its own engine (`--gpu cpu`): a 24-block pool."""
    result, results, props = _run(pytester, tmp_path, "cpu-preemption", "--gpu", "cpu")
    outcomes = result.parseoutcomes()
    # kv-blocks, kv-tokens, two preemption points, the last clean point, Little's law at both points
    assert_settled(outcomes, 7, text=result.stdout.str())
    assert results["status"] == "complete"
    assert results["engine_report"]["num_gpu_blocks"] == 24  # 1,572,864 B ÷ 64 KiB, from the startup log
    pts = _points(results)
    assert pts["closed-c2"]["server"]["preemptions"] == 0
    assert pts["closed-c8"]["server"]["preemptions"] >= 1  # the counter ticked
    # every request still completed with its full output: preempted requests were recomputed, not dropped
    for p in pts.values():
        assert p["client"]["failed"] == 0 and p["client"]["token_count_mismatches"] == 0
    # the model column of a measured prediction is the serving model's value (model_column: serving): it, too,
    # preempts at 8 and not at 2
    assert float(props["preempts-c8"]["roofline_model_count"]) >= 1
    assert float(props["no-preemption-c2"]["roofline_model_count"]) == 0


def test_open_vs_closed_loop_live(pytester: pytest.Pytester, tmp_path: Path, tiny_engine) -> None:
    """The closed loop queues past max_num_seqs (its TTFT includes the wait); the open loop at a low rate
    delivers its arrival rate without queueing. On the shared engine: the file's engine is cpu-tiny's."""
    result, results, props = _run(pytester, tmp_path, "cpu-open-vs-closed", "--endpoint", tiny_engine.base_url,
                                  "--endpoint-key-env", "")
    outcomes = result.parseoutcomes()
    # the server-side knee, TTFT on each side, the delivered rate, Little's law at the 3 points
    # an interval that straddles a bound is INCONCLUSIVE (noise decides nothing), never a failure
    assert_settled(outcomes, 7, text=result.stdout.str())
    pts = _points(results)
    assert set(pts) == {"closed-c4", "closed-c16", "open-r4"}
    closed16, open4 = pts["closed-c16"], pts["open-r4"]
    if held(closed16):  # a starved client (flagged) never queued past the cap: its verdicts are inconclusive
        assert closed16["server"]["queue_ms"]["mean"] > 0.1 * closed16["client"]["e2e_ms"]["mean"]  # it queued
        assert open4["client"]["ttft_ms"]["p50"] < closed16["client"]["ttft_ms"]["p50"]
    else:
        assert props["closed-ttft-includes-the-wait"]["roofline_verdict"] == "inconclusive", props
    assert float(props["closed-queues-past-the-cap"]["roofline_model_count"]) == 4
