"""The refusal of a pool short of one request of max_model_len advises a max_model_len that starts (review s16 M3):
for a sliding-window model the pool holds fewer tokens at a shorter max_model_len, so the pool at the refused length
is not the bound.  gemma-3-27b on an H100 (the review's reproduction): the pool holds 108,410 tokens at the default
131,072 and 99,206 at 108,410 (each refused in turn when it was the advice); 90,336 is the longest length whose pool
holds one request of it (90,336 tokens held at 90,336; 90,329 at 90,337).  Each advice is checked by following it:
the suggested value is accepted by the same rule, one more token is not."""

from __future__ import annotations

import pytest

from pytest_roofline import cli
from pytest_roofline.format.spec import SpecError, loads_spec
from pytest_roofline.model.setup import build_setup, max_model_len_problem

LONGEST = 90_336
HEAD = "hardware: h100-sxm\nmodel: gemma-3-27b\nengine:\n  name: vllm\n"
TAIL = ("workload:\n  input_len: 1024\n  output_len: 256\npredictions:\n  - id: blocks\n    quantity: num_gpu_blocks\n"
        "    predicted: 5000\n")


def _setup(mml: int | None):
    return build_setup(hardware_ref="h100-sxm", model_ref="gemma-3-27b",
                       workload={"input_len": 1024, "output_len": 256},
                       engine={"name": "vllm", "args": {"max_model_len": mml} if mml else {}})


def test_the_longest_length_is_the_one_the_rule_accepts() -> None:
    assert max_model_len_problem(_setup(LONGEST)) is None
    assert "the KV pool holds 90,329 tokens" in str(max_model_len_problem(_setup(LONGEST + 1)))


@pytest.mark.parametrize(("mml", "held"), [(None, "108,410"), (108_410, "99,206"), (LONGEST + 1, "90,329")])
def test_the_file_checks_advice_is_a_length_that_starts(mml, held) -> None:
    args = f"  args:\n    max_model_len: {mml}\n" if mml else ""
    with pytest.raises(SpecError) as exc:
        loads_spec(HEAD + args + TAIL, file="g.yaml")
    assert f"the KV pool holds {held} tokens" in exc.value.message
    assert f"lower engine.args.max_model_len to {LONGEST:,} or less" in exc.value.message
    spec = loads_spec(HEAD + f"  args:\n    max_model_len: {LONGEST}\n" + TAIL, file="g.yaml")  # following it: accepted
    assert all(p.error is None for p in spec.predictions)


def test_predict_simulates_advice_round_trips(capsys) -> None:
    flags = ["predict", "--simulate", "--hardware", "h100-sxm", "--model", "gemma-3-27b", "--concurrency", "1"]
    for given in ([], ["--max-model-len", "108410"]):
        assert cli.main(flags + given) == 2
        err = capsys.readouterr().err
        assert "vLLM will not start this setup" in err and f"lower --max-model-len to {LONGEST:,} or less" in err
    assert cli.main(flags + ["--max-model-len", str(LONGEST)]) == 0
    assert "vLLM will not start" not in capsys.readouterr().err
