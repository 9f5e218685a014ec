"""Drift at test time judges tonight's value as the store keeps it: with its point's per-request samples (the rank
test that drift documents and benchmarks/drift_false_alarms.py measures) and its host probe. Until 2026-12-07 the
value drift judged during the session was built from the verdict alone: tonight had no samples, so the rank test
never ran in a real session, only in the benchmark.

Two replays of the 2026-12-05 CPU recording of predictions/cpu-tiny.yaml (with a TTFT prediction at C = 2 added,
the point whose requests the recording kept), the second a copy made "another night" (its
own created_at and point start, so another measurement) whose closed-c2 TTFT p50 is doubled in the results file while
its requests file is the same: the move is +100 %, beyond 10 %, and its line must carry the rank test's p, which
needs samples on both sides (the same samples: p = 1, so not apart)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from support.paths import CPU_TINY, RECORDED
from support.pytest_run import NO_CACHE
from support.recordings import recording_path

REQUESTS = RECORDED / "cpu-tiny-2026-12-05.closed-c2.requests.jsonl"


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["COLUMNS"] = "400"  # a drift line on one terminal line
    return subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "-p", "no:html",
                           "--no-roofline-progress", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


def _night(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / "night.results.json").write_text(json.dumps(data))
    point = next(p for p in data["points"] if p["id"] == "closed-c2")
    shutil.copy(REQUESTS, folder / point["requests_file"])  # beside its results file, as the sweep writes it
    return folder / "night.results.json"


def test_tonights_value_carries_its_samples_into_drift(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "predictions").mkdir(parents=True)
    # the shipped file's one TTFT prediction is at C = 32; the recording kept closed-c2's requests: one at C = 2 too
    (work / "predictions" / "cpu-tiny.yaml").write_text(
        CPU_TINY.read_text() + "  - id: ttft-c2\n    quantity: ttft_p50\n    at: {concurrency: 2}\n"
                               "    predicted: 10 ms\n    tolerance: ±95%\n")
    data = json.loads(recording_path("cpu-tiny").read_text())
    first = _night(work / "n1", data)
    later = json.loads(json.dumps(data))
    later["created_at"] = "2026-12-06T08:54:28Z"
    c2 = next(p for p in later["points"] if p["id"] == "closed-c2")
    c2["started_at"] = "2026-12-06T08:54:31.368760Z"
    c2["client"]["ttft_ms"]["p50"] *= 2  # the figure doubles; its per-request samples stay the same
    second = _night(work / "n2", later)
    store = f"--roofline-history={tmp_path / 'hist'}"
    r1 = _pytest(work, "--replay", str(first), "predictions/cpu-tiny.yaml", store)
    assert "stored run" in r1.stdout, r1.stdout[-2000:]
    r2 = _pytest(work, "--replay", str(second), "predictions/cpu-tiny.yaml", store)
    line = next((x for x in r2.stdout.splitlines() if re.search(r"\+100\.0% vs previous run", x)), None)
    assert line is not None, r2.stdout[-3000:]
    # both nights kept closed-c2's requests: the rank test ran, on the same samples (p = 1)
    assert "rank test p=1" in line, line
    assert "DRIFTED" not in line  # one earlier night: never drifted, and the samples do not differ anyway
