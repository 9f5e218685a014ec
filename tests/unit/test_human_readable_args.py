"""vLLM's human-readable integer args (``--max-num-batched-tokens 2k``, ``--kv-cache-memory-bytes 10G``:
vllm/utils/argparse_utils.py ``human_readable_int`` at v0.32.0, lowercase suffixes decimal, uppercase binary) and
``kv_cache_memory_bytes`` in the project's byte units (``10 GiB``) are read as the integer they mean, by the setup
and by the launch alike (trial s16/t22 L3: ``kv_cache_memory_bytes: 10GiB`` was refused as "expected a number")."""

from __future__ import annotations

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import engine_args
from pytest_roofline.scoring import score

GIB = 2**30


@pytest.mark.parametrize(("key", "written", "read"), [
    ("kv_cache_memory_bytes", "10GiB", 10 * GIB), ("kv_cache_memory_bytes", "10 GiB", 10 * GIB),
    ("kv_cache_memory_bytes", "10 GB", 10 * 10**9), ("kv_cache_memory_bytes", "10G", 10 * GIB),
    ("kv_cache_memory_bytes", "10g", 10 * 10**9), ("kv_cache_memory_bytes", "1.5 GiB", 3 * GIB // 2),
    ("max_num_batched_tokens", "2k", 2000), ("max_num_batched_tokens", "2K", 2048),
    ("max_model_len", "25.6k", 25600), ("max_model_len", "32K", 32768),
    ("max_num_batched_tokens", "2 KiB", "2 KiB"),  # byte units only where the arg is bytes: refused by its check
    ("max_model_len", "1.5K", "1.5K"),  # no fraction with a binary suffix (vLLM refuses it too)
    ("max_num_seqs", "2k", "2k"),  # not a human-readable arg in vLLM: left for its check to refuse
    ("kv_cache_memory_bytes", 123, 123)])
def test_a_human_readable_value_is_the_integer_vllm_reads(key, written, read):
    assert engine_args.whole_arg_value(key, written) == read


SPEC = """\
hardware: h100-sxm
model: llama-3.1-8b
engine: {{name: vllm, args: {{kv_cache_memory_bytes: {kv}, max_model_len: 8192}}}}
predictions:
  - {{id: blocks, quantity: num_gpu_blocks, predicted: 1}}
"""


@pytest.mark.parametrize(("kv", "blocks"), [
    # a block of 16 tokens x 131,072 B (2 x 32 layers x 8 KV heads x 128 x 2 B) = 2 MiB
    ("10GiB", 10 * GIB // (16 * 131072)), ("10G", 5120), ("10g", 10 * 10**9 // (16 * 131072)),
    (10 * GIB, 5120)])
def test_the_pool_the_setup_models_is_the_one_written(kv, blocks):
    spec = loads_spec(SPEC.format(kv=kv))
    assert spec.predictions[0].error is None
    v = score(spec, spec.predictions[0], "math", None)
    assert v.model_value == blocks


def test_the_launch_passes_the_integer_the_setup_read():
    from pytest_roofline.measure.sweep import engine_config_for

    spec = loads_spec(SPEC.format(kv="10GiB").replace("max_model_len: 8192", "max_model_len: 8K"),
                      file="kv.yaml")
    cfg = engine_config_for(spec, device="cuda", gpus_visible=1)
    flags = cfg.vllm_flags()
    assert flags[flags.index("--kv-cache-memory-bytes") + 1] == str(10 * GIB)
    assert flags[flags.index("--max-model-len") + 1] == "8192"


def test_the_applied_pool_check_reads_the_pool_as_the_setup_did():
    # measure/engine/applied.py compares the declared pool with the one the engine reports after it starts: it
    # read the text as written, so `1GiB` (launched as 1,073,741,824) ended the run in int('1GiB') (review s16 H1)
    from pytest_roofline.measure.engine.applied import applied_differences

    log_1gib = {"sources": {"log": {"cpu_kv_cache_gib": "1.0"}}}
    assert applied_differences({"args": {"kv_cache_memory_bytes": "1GiB"}}, log_1gib) == []
    assert applied_differences({"args": {"kv_cache_memory_bytes": "1G"}}, log_1gib) == []  # vLLM's G is GiB
    (d,) = applied_differences({"args": {"kv_cache_memory_bytes": "1 GB"}}, log_1gib)
    assert d.declared.endswith("(1,000,000,000 B)") and d.applied.endswith("(1,073,741,824 B)")
