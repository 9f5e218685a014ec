"""The engine's death said in one line (trial s16 live, L5): ``Engine.death`` names the server process's exit
(code or signal) or a lost process it had started, with the log's path. Starts small Python processes, no
engine."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from pytest_roofline.measure.engine import EngineConfig
from pytest_roofline.measure.engine._engine import Engine


def test_death_names_the_server_process_its_signal_and_the_log(tmp_path: Path) -> None:
    eng = Engine(EngineConfig(model="m", device="cpu"), tmp_path / "engine.log", use_watchdog=False)
    assert eng.death() is None  # never started
    proc = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    proc.wait(timeout=30)
    eng._proc = proc
    line = eng.death(wait_s=0.0)
    assert line == (f"the engine died: the vLLM server process (pid {proc.pid}) exited: killed by "
                    f"{signal.Signals.SIGKILL.name}; log: {tmp_path / 'engine.log'}")


def test_death_names_a_lost_child_while_the_server_runs(tmp_path: Path) -> None:
    eng = Engine(EngineConfig(model="m", device="cpu"), tmp_path / "engine.log", use_watchdog=False)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    try:
        eng._proc = server
        eng._known_pids = {child.pid}
        eng._pid_names = {child.pid: "VLLM::EngineCor"}
        t0 = time.monotonic()
        line = eng.death(wait_s=0.3)
        assert time.monotonic() - t0 >= 0.3  # it waited for the server to follow its EngineCore
        assert line == (f"the engine died: pid {child.pid} (VLLM::EngineCor) of the vLLM server (pid {server.pid}) "
                        f"died; the server process still runs; log: {tmp_path / 'engine.log'}")
        eng._pid_names = {child.pid: "lscpu"}  # a helper of the start that ended is no death
        assert eng.death(wait_s=0.0) is None
        eng._known_pids = set()
        assert eng.death(wait_s=0.0) is None  # everything it started still runs: a point failed for another reason
    finally:
        server.kill()
        server.wait()
