"""``engine.args.num_gpu_blocks_override`` (trial s26b #3): vLLM sizes the pool, then takes the override as its block
count ("Overriding num_gpu_blocks=N with num_gpu_blocks_override=M"). The serving model took it and the KV
quantities did not: `num_gpu_blocks` ink of 10000 failed against the sized 28,118. One count now, in
``model.setup.kv_accounting``; and an override no GPU can hold is refused at its line."""

from __future__ import annotations

import pytest

from pytest_roofline.errors import SpecError
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model.serving import EngineConfig
from pytest_roofline.model.setup import build_setup, kv_accounting
from pytest_roofline.scoring import score

SPEC = """\
hardware: h100-sxm
model: llama-3.1-8b
engine: {{name: vllm, version: "0.33.0", args: {{num_gpu_blocks_override: {n}}}}}
workload: {{input_len: 1024, output_len: 256}}
sweep: {{mode: closed, concurrency: [1, 64]}}
predictions:
  - {{id: blocks, quantity: num_gpu_blocks, predicted: "{n}"}}
"""


def test_the_override_is_the_block_count_everywhere() -> None:
    setup = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                        engine={"name": "vllm", "version": "0.33.0", "args": {"num_gpu_blocks_override": 10000}})
    acc = kv_accounting(setup)
    assert (acc.num_blocks, acc.kv_tokens) == (10000, 160000)  # 16-token blocks
    assert EngineConfig.from_setup(setup).num_gpu_blocks == 10000  # the serving model's pool, the same count
    spec = loads_spec(SPEC.format(n=10000))
    v = score(spec, spec.predictions[0], "math", None)
    assert v.status == "pass" and float(v.model_value) == 10000


def test_an_override_past_the_gpus_memory_is_refused_at_its_line() -> None:
    # 100,000 blocks of 16 tokens x 131,072 B = 2 MiB: 209.7 GB, where an H100's 85.52 GB less Llama-3.1-8B's
    # 16.06 GB of weights hold (85,520,809,984 - 16,060,522,496) // 2,097,152 = 33,121 blocks
    with pytest.raises(SpecError) as exc:
        loads_spec(SPEC.format(n=100000), file="o.yaml")
    err = exc.value
    assert err.line == 3
    assert ("num_gpu_blocks_override 100,000 blocks of 2 MiB need 209.7 GB a GPU, more than the 69.46 GB its 85.52 "
            "GB leave beside the 16.06 GB of weights it loads (33,121 blocks at most)") in err.message
    loads_spec(SPEC.format(n=33121), file="o.yaml")  # the most it holds: accepted
    # one block more: the need and the room differ in the fifth figure, and are printed to it (trial s26d #14)
    with pytest.raises(SpecError) as exc:
        loads_spec(SPEC.format(n=33122), file="o.yaml")
    # 33,122 x 2,097,152 = 69,461,868,544 B; 85,520,809,984 - 16,060,522,496 = 69,460,287,488 B
    assert "need 69.462 GB a GPU, more than the 69.46 GB" in exc.value.message
