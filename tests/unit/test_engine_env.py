"""``engine.env`` is checked as ``engine.args`` is (trial s26b #7): a variable that changes the engine's timing and
that the serving model does not simulate is said at its line, and the serving model's values are withheld, as for
``VLLM_ATTENTION_BACKEND`` and ``enforce_eager``; variables that change nothing it times pass quietly."""

from __future__ import annotations

import pytest

from pytest_roofline.errors import UnsimulatedSettingWarning
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import engine_args
from pytest_roofline.model.setup import build_setup, serving_arg_problems
from pytest_roofline.scoring import score


def _fields(env: dict[str, str], tp: int = 1) -> list[str]:
    return [p.field for p in engine_args.env_problems(env, tensor_parallel_size=tp)]


def test_which_variables_are_said() -> None:
    assert _fields({"VLLM_FLASH_ATTN_VERSION": "2"}) == ["engine.env.VLLM_FLASH_ATTN_VERSION"]
    # the multiprocessing default is on: only off changes the engine
    assert _fields({"VLLM_ENABLE_V1_MULTIPROCESSING": "1"}) == []
    assert _fields({"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}) == ["engine.env.VLLM_ENABLE_V1_MULTIPROCESSING"]
    # NCCL's all-reduce settings matter only where TP runs all-reduces
    assert _fields({"NCCL_P2P_DISABLE": "1"}, tp=1) == []
    assert _fields({"NCCL_P2P_DISABLE": "1"}, tp=4) == ["engine.env.NCCL_P2P_DISABLE"]
    # read by the setup itself, or known to change no timing: quiet
    assert _fields({"VLLM_USE_V1": "1", "VLLM_LOGGING_LEVEL": "DEBUG", "HF_TOKEN": "x", "NCCL_DEBUG": "INFO",
                    "MY_OWN_FLAG": "on"}) == []
    # an engine variable nobody listed is said, never assumed harmless
    [p] = engine_args.env_problems({"VLLM_SOMETHING_NEW": "x"})
    assert p.field == "engine.env.VLLM_SOMETHING_NEW" and "does not know" in p.text


def test_the_setup_withholds_the_serving_model_and_the_check_says_it_at_its_line() -> None:
    setup = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b",
                        engine={"name": "vllm", "version": "0.33.0", "args": {"tensor_parallel_size": 4},
                                "env": {"NCCL_P2P_DISABLE": "1"}})
    assert [p.field for p in serving_arg_problems(setup)] == ["engine.env.NCCL_P2P_DISABLE"]
    text = ("hardware: h100-sxm\nmodel: llama-3.1-70b\nengine:\n  name: vllm\n  version: \"0.33.0\"\n"
            "  args: {tensor_parallel_size: 4}\n  env:\n    VLLM_FLASH_ATTN_VERSION: \"2\"\n"
            "workload: {input_len: 1024, output_len: 256}\nsweep: {mode: closed, concurrency: [16]}\n"
            "predictions:\n  - {id: t, quantity: tpot_p50, at: {concurrency: 16}, predicted: 20 ms}\n")
    with pytest.warns(UnsimulatedSettingWarning, match=r"engine\.env\.VLLM_FLASH_ATTN_VERSION") as rec:
        spec = loads_spec(text, file="env.yaml")
    assert [str(w.message).split(" ")[0] for w in rec if "VLLM_FLASH" in str(w.message)] == ["env.yaml:8:"]
    v = score(spec, spec.predictions[0], "math", None)
    assert v.status == "skip" and v.serving_value is None  # no serving value, so no band to decide by
