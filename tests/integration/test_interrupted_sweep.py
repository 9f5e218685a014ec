"""A sweep stopped from outside leaves no child behind and a results file that says so (issue 23, cases 9.80-9.82):
after SIGKILL of pytest mid-sweep neither the /metrics scraper (``sweep.timeline``) nor a load-generator worker
(``sweep.processes: 2``) outlives it, and results.json says ``interrupted`` (written by the results file's guard
process), as it does after Ctrl-C (written by the run), never ``running``. Each wait is a support.patience bound.
The sweep is long (16 points, ~20 s after the first at 20 ms a token) so that, however late a busy machine sees
point 1 in the file, the signal still lands mid-sweep. (A fresh-clone CI run read ``complete`` after the Ctrl-C;
the cause was an inherited ignored SIGINT, fixed by ``support.engine.sigint_as_ctrl_c``, not the sweep's length.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.engine import sigint_as_ctrl_c
from support.openai_stub import StubServer
from support.patience import wait_process, wait_until
from support.specs import LITTLES_LAW_EVERY

YAML = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}
workload: {input_len: 16, output_len: 8}
sweep:
  mode: closed
  concurrency: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
  requests_per_point: 40
  warmup: 1
  processes: 2
  timeline: 0.25 s
predictions:
""" + LITTLES_LAW_EVERY


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = set(), {pid}
    while frontier:
        kids = {p for p, pp in parents.items() if pp in frontier and p not in out}
        out |= kids
        frontier = kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path: Path, server: StubServer) -> subprocess.Popen[bytes]:
    (tmp_path / "p.roofline.yaml").write_text(YAML)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "p.roofline.yaml",
            "--endpoint",
            server.url + "/v1",
            "--roofline-out",
            "out",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=sigint_as_ctrl_c,  # the Ctrl-C test's SIGINT must reach it (support.engine says why)
    )


def _results(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "out" / "p.roofline" / "results.json").read_text())


def _mid_sweep(tmp_path: Path, proc: subprocess.Popen[bytes]) -> set[int]:
    """Wait until point 1 is in the file and the scraper and both workers of a later point run; their pids."""

    def ready() -> set[int] | None:
        try:
            points = _results(tmp_path)["points"]
        except (OSError, ValueError, KeyError):
            return None
        kids = _children(proc.pid)
        return kids if len(points) >= 1 and len(kids) >= 4 else None  # scraper, 2 workers, the results guard..

    return wait_until(ready, what="point 1 measured and point 2 running (scraper and workers)", typical_s=8)


@pytest.mark.slow
def test_sigkill_mid_sweep_leaves_no_child_and_the_file_says_interrupted(tmp_path):
    metrics = "vllm:num_requests_running 1\n"
    with StubServer(model="roofline-tiny", max_model_len=1024, token_delay_s=0.02, metrics=metrics) as server:
        proc = _start(tmp_path, server)
        try:
            kids = _mid_sweep(tmp_path, proc)
            os.kill(proc.pid, signal.SIGKILL)
            wait_process(proc, what="the SIGKILLed pytest", typical_s=1)
            # before: the scraper (and a worker) kept polling and loading the server for as long as it ran
            wait_until(
                lambda: not any(_alive(p) for p in kids) or None,
                what="every child of the killed pytest to end",
                typical_s=2,
            )
            wait_until(
                lambda: _results(tmp_path)["status"] == "interrupted" or None,
                what="the results guard to mark the file interrupted",
                typical_s=1,
            )
        finally:
            if proc.poll() is None:
                proc.kill()
    doc = _results(tmp_path)
    assert len(doc["points"]) >= 1  # what was measured before the kill is kept
    assert "killed" in doc["errors"][-1]["message"]


@pytest.mark.slow
def test_ctrl_c_mid_sweep_writes_interrupted(tmp_path):
    with StubServer(model="roofline-tiny", max_model_len=1024, token_delay_s=0.02) as server:
        proc = _start(tmp_path, server)
        try:
            _mid_sweep(tmp_path, proc)
            os.kill(proc.pid, signal.SIGINT)
            wait_process(proc, what="pytest after Ctrl-C", typical_s=5)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert _results(tmp_path)["status"] == "interrupted"  # before: "running"


def test_the_guard_marks_a_running_file_and_leaves_a_finished_one(tmp_path):
    from pytest_roofline.measure.results.file import ResultsWriter

    running = ResultsWriter(
        tmp_path / "a" / "results.json", {"status": "running", "points": [], "errors": []}, guard=True
    )
    assert running._guard is not None
    os.close(running._guard._w)  # what the kernel does when the writer is SIGKILLed
    wait_process(running._guard.proc, what="the results guard", typical_s=1)
    assert json.loads(running.path.read_text())["status"] == "interrupted"
    done = ResultsWriter(tmp_path / "b" / "results.json", {"status": "running", "points": [], "errors": []}, guard=True)
    done.finish("complete")
    assert json.loads(done.path.read_text())["status"] == "complete"
