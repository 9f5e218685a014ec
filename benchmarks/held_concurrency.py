"""Does a closed loop hold its concurrency against the CPU engine? Prints the figures; asserts nothing.

A closed loop of C keeps C requests in flight only if the load generator gets the CPU when a response ends. On a
small machine the engine shares the CPUs with it, and vLLM's EngineCore and worker poll their shared-memory queue
with ``sched_yield`` for a second after every read (``busy_loop_s = 1`` in
vllm/distributed/device_communicators/shm_broadcast.py at v0.32.0), so one of the engine's processes is always
runnable while it has work. How the kernel shares the CPUs then depends on the sessions: Linux's autogroup
(sched(7)) schedules each session as one group.

Each run starts a fresh engine (the tiny model, ``max_num_seqs`` 8, as ``predictions/cpu-tiny.yaml``), runs one
closed loop of C=8 (input 128, output 64 tokens, 384 measured requests after 8 warm-up) and prints:

- ``held``: the mean number of requests in flight from the moment C were first in flight to the last measured
  send (``measure.stats.held_in_flight``, the figure behind the "concurrency not held" flag, which is raised
  below 90 % of C);
- ``runqueue_s``: how long the load generator's thread waited on the run queue (``/proc/self/schedstat``), and
  ``wall_s``: the loop's wall time.

Two launches, each idle and beside a busy process (a ``while True`` loop in this process's session, as a second
pytest worker would be):

- ``shared`` (what ships): the engine in its own process group, in this process's session;
- ``own``: the engine in a session of its own (``setsid``, what the plugin did before; set here by the benchmark
  alone).

Run: ``flock /tmp/roofline-engine.lock python benchmarks/held_concurrency.py [--runs 3]`` (about 8 minutes for
3 runs each).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from pytest_roofline.measure.engine import Engine, EngineConfig
from pytest_roofline.measure.engine.tiny_model import (
    PROMPT_TOKEN_ID_MAX,
    PROMPT_TOKEN_ID_MIN,
    default_model_dir,
    make_tiny_model,
)
from pytest_roofline.measure.loadgen import LoadSpec, run_load
from pytest_roofline.measure.stats import held_in_flight
from pytest_roofline.quantities.measurement import PointMode

CONCURRENCY = 8


def _busy() -> None:
    while True:
        pass


@contextlib.contextmanager
def _launch(session: str) -> Iterator[None]:
    if session == "shared":
        yield
        return
    real = subprocess.Popen

    def own_session(*args: Any, **kw: Any) -> subprocess.Popen[Any]:
        if kw.get("process_group") == 0:
            kw.pop("process_group")
            kw["start_new_session"] = True
        return real(*args, **kw)

    with mock.patch.object(subprocess, "Popen", own_session):
        yield


def _schedstat() -> tuple[float, float]:
    with open("/proc/thread-self/schedstat") as f:
        on_ns, wait_ns, _ = f.read().split()
    return int(on_ns) * 1e-9, int(wait_ns) * 1e-9


def one_run(session: str, busy: bool) -> dict[str, float]:
    config = EngineConfig(model=str(make_tiny_model(default_model_dir())), served_model_name="roofline-tiny",
                          device="cpu", dtype="bfloat16", max_model_len=1024, enforce_eager=True,
                          kv_cache_space_gib=1, max_num_seqs=8)
    log = tempfile.NamedTemporaryFile(prefix="held-engine-", suffix=".log", delete=False)
    log.close()
    with _launch(session):
        engine = Engine(config, Path(log.name))
        engine.start(timeout_s=600)
    hog = multiprocessing.Process(target=_busy, daemon=True) if busy else None
    try:
        if hog is not None:
            hog.start()
        spec = LoadSpec(mode=PointMode.CLOSED, concurrency=CONCURRENCY, num_requests=384, warmup_requests=8,
                        input_len=128, output_len=64, model="roofline-tiny", point_id="closed-c8",
                        token_id_range=(PROMPT_TOKEN_ID_MIN, PROMPT_TOKEN_ID_MAX + 1))
        on0, wait0 = _schedstat()
        t0 = time.perf_counter()
        result = run_load(engine.base_url, spec)
        wall_s = time.perf_counter() - t0
        on1, wait1 = _schedstat()
    finally:
        if hog is not None:
            hog.kill()
        engine.stop()
    held = held_in_flight(result.records, CONCURRENCY)
    return {"held": float("nan") if held is None else held, "runqueue_s": wait1 - wait0,
            "on_cpu_s": on1 - on0, "wall_s": wall_s}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--runs", type=int, default=3, help="fresh engines per case (default 3)")
    args = p.parse_args(argv)
    print(f"closed loop of {CONCURRENCY} against the CPU engine, {args.runs} fresh engines per case")
    print(f"{'engine session':<16}{'beside':<13}{'held of 8 (each run)':<34}{'runqueue s':<20}wall s")
    for session in ("shared", "own"):
        for busy in (False, True):
            runs = [one_run(session, busy) for _ in range(args.runs)]
            held = " ".join(f"{r['held']:.2f}" for r in runs)
            wait = " ".join(f"{r['runqueue_s']:.1f}" for r in runs)
            wall = " ".join(f"{r['wall_s']:.1f}" for r in runs)
            print(f"{session:<16}{'a busy loop' if busy else 'nothing':<13}{held:<34}{wait:<20}{wall}", flush=True)
            print(f"{'':<29}min {min(r['held'] for r in runs):.2f}, median "
                  f"{statistics.median(r['held'] for r in runs):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
