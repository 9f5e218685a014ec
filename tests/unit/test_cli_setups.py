"""``roofline predict`` expresses every setup (TP, KV dtype, engine version, ``--set`` overrides) and shows the KV pool.

Every expected number is worked out by hand in the comments from the datasheet and config figures below and the
documented accounting (``analytical.KVAccounting``: budget = ceil(total x gpu_memory_utilization); available =
budget - weights per GPU - activation - non-torch - CUDA graphs; blocks = available // bytes per block):

* H100 SXM 80GB: nvidia-smi memory.total 81,559 MiB = 85,520,809,984 B; NVLink 4 at 900 GB/s both ways.
* A100-SXM4-80GB: 81,920 MiB = 85,899,345,920 B; NVLink 3 at 600 GB/s.
* Llama-3.1-8B: 8,030,261,248 parameters (its model card's "8B"; 16,060,522,496 B at bf16), 32 layers x 8 KV
  heads x 128 dims: 32 x 8 x 128 x 2 (K and V) x 2 B = 131,072 B of KV per token, 2,097,152 B (2 MiB) per
  16-token block; hidden 4,096, intermediate 14,336, vocabulary 128,256, max_position_embeddings 131,072.
* Llama-3.1-70B: 70,553,706,496 parameters (141,107,412,992 B at bf16), 80 layers x 8 KV heads x 128:
  327,680 B of KV per token; hidden 8,192, intermediate 28,672, vocabulary 128,256.
* Qwen3-8B: 8,190,735,360 parameters (16,381,470,720 B), 36 x 8 x 128 x 2 x 2 = 147,456 B per token.
* vLLM defaults (model/vllm_defaults.py, each cited there): gpu_memory_utilization 0.92 from 0.20 (0.9 before);
  the CUDA-graph estimate budgeted from 0.21; on a >= 70 GiB GPU whose name lacks "a100", ``vllm serve``
  takes max_num_seqs 1,024 and max_num_batched_tokens 8,192; an A100 takes 256 / 2,048.
* The reserves (model/analytical.py): activation = tokens x 2 B x (2 h + 3 I) + seqs x vocab x 22 B;
  non-torch int(0.16 GiB) = 171,798,691 B; CUDA graphs 0.5 GiB = 536,870,912 B.

Llama-3.1-8B on H100 SXM, vLLM 0.33.0 (``BASE`` below):
  budget     = ceil(85,520,809,984 x 0.92)                   = 78,679,145,186
  activation = 8,192 x 2 x (8,192 + 43,008) = 838,860,800
             + 1,024 x 128,256 x 22        = 2,889,351,168  ->  3,728,211,968
  available  = 78,679,145,186 - 16,060,522,496 - 3,728,211,968 - 171,798,691 - 536,870,912 = 58,181,741,119
  blocks     = 58,181,741,119 // 2,097,152 = 27,743 (27,743 x 2,097,152 = 58,181,287,936; 453,183 B left over)
  KV tokens  = 27,743 x 16 = 443,888; at max_model_len 131,072 a request takes 8,192 blocks: 27,743 / 8,192
             = 3.3866x concurrency.
"""

from __future__ import annotations

import json
import math

import pytest

from pytest_roofline import cli

GIB = 2**30
H100_MEM = 81_559 * 2**20  # 85,520,809,984
A100_MEM = 81_920 * 2**20  # 85,899,345,920
LLAMA8_WEIGHTS = 2 * 8_030_261_248
LLAMA8_KV_TOKEN = 32 * 8 * 128 * 2 * 2  # 131,072
LLAMA70_WEIGHTS = 2 * 70_553_706_496
NON_TORCH = int(0.16 * GIB)  # 171,798,691
GRAPHS = GIB // 2
ACT_LLAMA8_H100 = 8192 * 2 * (2 * 4096 + 3 * 14336) + 1024 * 128_256 * 22  # 3,728,211,968
BUDGET_H100_092 = math.ceil(H100_MEM * 0.92)  # 78,679,145,186

BASE = ("predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine-version", "0.33.0")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


def first_json(capsys, *argv: str) -> dict:
    rc, out, err = run(capsys, *argv, "--json", "--batch", "1")
    assert rc == 0, err
    return json.loads(out.splitlines()[0])


def usage_error(capsys, *argv: str) -> str:
    """An argparse error: exit status 2 and its one-line message."""
    with pytest.raises(SystemExit) as exc:
        cli.main(list(argv))
    assert exc.value.code == 2
    return capsys.readouterr().err


# --------------------------------------------------------------------------------------------------------------
# the KV pool, worked out by hand
# --------------------------------------------------------------------------------------------------------------
def test_kv_pool_llama8b_h100_at_vllm_0_33(capsys):
    d = first_json(capsys, *BASE)
    assert BUDGET_H100_092 == 78_679_145_186 and ACT_LLAMA8_H100 == 3_728_211_968  # the hand figures above
    assert d["kv_budget_bytes"] == 78_679_145_186
    assert d["weight_bytes_per_gpu"] == LLAMA8_WEIGHTS == 16_060_522_496  # TP = 1: the whole model
    assert d["activation_bytes"] == 3_728_211_968
    assert d["non_torch_bytes"] == 171_798_691 and d["cuda_graph_bytes"] == 536_870_912
    assert d["available_kv_bytes"] == 58_181_741_119
    assert d["available_kv_gib"] == pytest.approx(58_181_741_119 / GIB)  # 54.19 GiB
    assert d["kv_bytes_per_token"] == 131_072 and d["kv_bytes_per_block"] == 2 * 2**20 and d["block_size_tokens"] == 16
    assert d["num_gpu_blocks"] == 27_743 and d["kv_cache_tokens"] == 443_888
    assert d["max_model_len_tokens"] == 131_072
    assert d["max_concurrency_at_max_model_len"] == pytest.approx(27_743 / 8_192)  # 3.3866x
    assert d["tensor_parallel_size"] == 1 and d["pipeline_parallel_size"] == 1 and d["kv_pool_error"] is None


def test_engine_settings_come_with_their_sources(capsys):
    d = first_json(capsys, *BASE)
    s = d["engine_settings"]
    assert {k: v["value"] for k, v in s.items()} == {
        "engine": "v1", "entrypoint": "serve", "gpu_memory_utilization": 0.92, "block_size": 16,
        "max_num_seqs": 1024, "max_num_batched_tokens": 8192, "enable_chunked_prefill": True,
        "enable_prefix_caching": True}
    assert "vllm/config/cache.py" in s["gpu_memory_utilization"]["source"]
    assert "get_batch_defaults" in s["max_num_seqs"]["source"] and ">=70 GiB" in s["max_num_seqs"]["source"]
    # a value given on the command line says so instead
    d = first_json(capsys, *BASE, "--max-num-seqs", "64")
    assert d["engine_settings"]["max_num_seqs"] == {"value": 64, "source": "given (engine.args.max_num_seqs)"}


def test_text_output_shows_the_kv_pool_and_the_settings(capsys):
    rc, out, err = run(capsys, *BASE, "--batch", "1")
    assert rc == 0, err
    pool = next(ln for ln in out.splitlines() if ln.startswith("KV pool"))
    assert "vllm 0.33.0 serve · TP 1 · PP 1" in pool
    assert "27,743 GPU blocks × 16 tokens = 443,888 KV tokens" in pool
    assert "2.00 MiB per block" in pool
    assert "available KV 54.19 GiB of the 73.28 GiB budget" in pool  # 78,679,145,186 B = 73.276 GiB
    assert "weights per GPU 14.96 GiB" in pool  # 16,060,522,496 / 2**30 = 14.957
    assert "max concurrency at max_model_len 131,072 tokens: 3.39x" in out
    assert "max_position_embeddings" in out
    assert any(ln.split()[:2] == ["max_num_seqs", "1024"] and "get_batch_defaults" in ln for ln in out.splitlines())
    assert out.splitlines()[-1].startswith("knee:")


def test_engine_version_changes_the_defaults_shown(capsys):
    # vLLM 0.19.0: gpu_memory_utilization 0.9 and no CUDA-graph budget (both changed at 0.20 / 0.21):
    #   budget    = ceil(85,520,809,984 x 0.9) = 76,968,728,986
    #   available = 76,968,728,986 - 16,060,522,496 - 3,728,211,968 - 171,798,691 - 0 = 57,008,195,831
    #   blocks    = 57,008,195,831 // 2,097,152 = 27,183
    old = first_json(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b",
                     "--engine-version", "0.19.0")
    assert old["engine_version"] == "0.19.0"
    assert old["engine_settings"]["gpu_memory_utilization"]["value"] == 0.9
    assert old["kv_budget_bytes"] == math.ceil(H100_MEM * 0.9) == 76_968_728_986
    assert old["cuda_graph_bytes"] == 0
    assert old["num_gpu_blocks"] == 27_183
    assert first_json(capsys, *BASE)["num_gpu_blocks"] == 27_743


def test_day3_setup_matches_the_notebooks_vllm_log_within_1_percent(capsys):
    # A100-SXM4-80GB, Qwen3-8B, vLLM 0.26.0 (the Day 3 notebook): 256 / 2,048 defaults on an A100
    #   budget     = ceil(85,899,345,920 x 0.92) = 79,027,398,247
    #   activation = 2,048 x 2 x (8,192 + 36,864) + 256 x 151,936 x 22 = 184,549,376 + 855,703,552 = 1,040,252,928
    #   available  = 79,027,398,247 - 16,381,470,720 - 1,040,252,928 - 171,798,691 - 536,870,912 = 60,897,004,996
    #   blocks     = 60,897,004,996 // (147,456 x 16 = 2,359,296) = 25,811
    # The notebook's vLLM 0.26 startup log (predictions/recorded/day3-2026-07-31.results.json) printed 25,640.
    d = first_json(capsys, "predict", "--hardware", "a100-sxm4-80gb", "--model", "qwen3-8b",
                   "--engine-version", "0.26.0")
    assert d["available_kv_bytes"] == 60_897_004_996
    assert d["num_gpu_blocks"] == 25_811
    assert abs(d["num_gpu_blocks"] / 25_640 - 1) < 0.01


# --------------------------------------------------------------------------------------------------------------
# flags: each one a prediction-file field
# --------------------------------------------------------------------------------------------------------------
def test_kv_cache_dtype_fp8_halves_the_kv_per_token(capsys):
    # fp8 KV: 32 x 8 x 128 x 2 x 1 B = 65,536 B per token, 1 MiB per block:
    # 58,181,741,119 // 1,048,576 = 55,486 (twice 27,743)
    d = first_json(capsys, *BASE, "--kv-cache-dtype", "fp8")
    assert d["kv_cache_dtype"] == "fp8" and d["weight_dtype"] == "bf16"  # the weights stay bf16
    assert d["kv_bytes_per_token"] == 65_536 and d["kv_bytes_per_block"] == 2**20
    assert d["num_gpu_blocks"] == 58_181_741_119 // 2**20 == 55_486


def test_scheduler_and_memory_flags(capsys):
    # utilisation 0.5: budget ceil(85,520,809,984 x 0.5) = 42,760,404,992; max_num_seqs 256 and
    # max_num_batched_tokens 2,048: activation 2,048 x 2 x 51,200 + 256 x 128,256 x 22 = 209,715,200 + 722,337,792
    # = 932,052,992; available = 42,760,404,992 - 16,060,522,496 - 932,052,992 - 171,798,691 - 536,870,912
    # = 25,059,159,901; block 32 tokens: 4 MiB -> 25,059,159,901 // 4,194,304 = 5,974 blocks = 191,168 tokens;
    # max_model_len 8,192 = 256 blocks of 32 -> 5,974 / 256 = 23.34x
    d = first_json(capsys, *BASE, "--gpu-memory-utilization", "0.5", "--max-num-seqs", "256",
                   "--max-num-batched-tokens", "2048", "--block-size", "32", "--max-model-len", "8192")
    assert d["kv_budget_bytes"] == 42_760_404_992
    assert d["activation_bytes"] == 932_052_992
    assert d["available_kv_bytes"] == 25_059_159_901
    assert d["kv_bytes_per_block"] == 4 * 2**20 and d["num_gpu_blocks"] == 5_974 and d["kv_cache_tokens"] == 191_168
    assert d["max_model_len_tokens"] == 8192 and d["max_model_len_source"].startswith("given")
    assert d["max_concurrency_at_max_model_len"] == pytest.approx(5_974 / 256)
    # 90% is the same share written as a percentage
    assert first_json(capsys, *BASE, "--gpu-memory-utilization", "90%")["kv_budget_bytes"] == math.ceil(H100_MEM * 0.9)


def test_tp4_llama70b_on_h100(capsys):
    # TP = 4 over 8 KV heads: 2 heads per GPU. Per GPU: weights 141,107,412,992 / 4 = 35,276,853,248 B; KV
    # 80 x 2 x 128 x 2 x 2 = 81,920 B per token, 1,310,720 B per block.
    # The profile run on one rank holds 1/4 of the MLP intermediate (28,672 / 4 = 7,168, column-parallel) and the
    # full hidden state and logits:
    #   activation = 8,192 x 2 x (16,384 + 21,504) + 1,024 x 128,256 x 22 = 620,756,992 + 2,889,351,168
    #              = 3,510,108,160
    #   non-torch  = 171,798,691 + 1,921,997,864 (TP on NVLink) + 2 x 4 x 301,989,888 (NVLS) = 4,509,715,659
    #   available  = 78,679,145,186 - 35,276,853,248 - 3,510,108,160 - 4,509,715,659 - 536,870,912 = 34,845,597,207
    #   blocks     = 34,845,597,207 // 1,310,720 = 26,585 (26,585 x 1,310,720 = 34,845,491,200)
    # On one GPU the 141 GB of weights exceed the 78.7 GB budget: no blocks at all.
    d = first_json(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "4",
                   "--engine-version", "0.33.0")
    assert d["tensor_parallel_size"] == 4 and d["num_gpus"] == 4
    assert d["weight_bytes"] == LLAMA70_WEIGHTS
    assert d["weight_bytes_per_gpu"] == LLAMA70_WEIGHTS / 4 == 35_276_853_248
    assert d["kv_bytes_per_token"] == 327_680 and d["kv_bytes_per_token_per_gpu"] == 81_920
    assert d["kv_bytes_per_block"] == 1_310_720
    assert d["activation_bytes"] == 3_510_108_160
    assert d["available_kv_bytes"] == 34_845_597_207
    assert d["num_gpu_blocks"] == 26_585
    # the decode step of one GPU at the default KV context, 1,024 in + 1,024 out ÷ 2 = 1,536 tokens:
    # (35,276,853,248 + 1,536 x 81,920) B / 3.35e12 B/s = 10.5680 ms, plus
    # 2 x 80 all-reduces of 8,192 x 2 B: 160 x (2 x 3/4 x 16,384 / 450e9 + 8 us) = 1.28874 ms
    t_mem = (LLAMA70_WEIGHTS / 4 + 1536 * 81_920) / 3.35e12
    assert d["t_mem_ms"] == pytest.approx(t_mem * 1e3, rel=1e-9)
    assert d["t_allreduce_ms"] == pytest.approx(160 * (1.5 * 16_384 / 450e9 + 8e-6) * 1e3, rel=1e-9)
    assert d["t_step_ms"] == pytest.approx(t_mem * 1e3 + d["t_allreduce_ms"], rel=1e-9)
    # one GPU: refused, exit status 2 and nothing on stdout (tests/unit/test_predict_refusals.py has the figures)
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-70b",
                       "--engine-version", "0.33.0", "--json")
    assert rc == 2 and out == "" and "does not fit on one h100-sxm" in err


def test_tp8_llama70b_on_a100(capsys):
    # TP = 8: one KV head per GPU. Per GPU: weights 141,107,412,992 / 8 = 17,638,426,624 B; KV 80 x 1 x 128 x 2 x 2
    # = 40,960 B per token, 655,360 B per block. A100: 256 / 2,048 defaults; intermediate 28,672 / 8 = 3,584:
    #   activation = 2,048 x 2 x (16,384 + 10,752) + 256 x 128,256 x 22 = 111,149,056 + 722,337,792 = 833,486,848
    #   non-torch  = 171,798,691 + 1,921,997,864 (TP buffers on NVLink 3; no NVLS on A100) = 2,093,796,555
    #   available  = 79,027,398,247 - 17,638,426,624 - 833,486,848 - 2,093,796,555 - 536,870,912 = 57,924,817,308
    #   blocks     = 57,924,817,308 // 655,360 = 88,386 (88,386 x 655,360 = 57,924,648,960)
    d = first_json(capsys, "predict", "--hardware", "a100-sxm4-80gb", "--model", "llama-3.1-70b",
                   "--tensor-parallel-size", "8", "--engine-version", "0.33.0")
    assert d["weight_bytes_per_gpu"] == LLAMA70_WEIGHTS / 8
    assert d["kv_bytes_per_token_per_gpu"] == 40_960 and d["kv_bytes_per_block"] == 655_360
    assert d["activation_bytes"] == 833_486_848
    assert d["available_kv_bytes"] == 57_924_817_308
    assert d["num_gpu_blocks"] == 88_386
    # all-reduce over 8 A100s (NVLink 3, 600 GB/s both ways -> 300e9): 160 x (2 x 7/8 x 16,384 / 300e9 + 8 us)
    assert d["t_allreduce_ms"] == pytest.approx(160 * (1.75 * 16_384 / 300e9 + 8e-6) * 1e3, rel=1e-9)


# --------------------------------------------------------------------------------------------------------------
# --set: any field, values through the unit parser
# --------------------------------------------------------------------------------------------------------------
def test_set_hardware_fields_with_units(capsys):
    # memory 80 GiB = 85,899,345,920 B: budget ceil(x 0.92) = 79,027,398,247
    d = first_json(capsys, *BASE, "--set", "hardware.memory_bytes=80GiB")
    assert d["kv_budget_bytes"] == math.ceil(80 * GIB * 0.92) == 79_027_398_247
    # bandwidth 3.0e12 B/s: t_mem(B=1) = (16,060,522,496 + 1,536 x 131,072) / 3.0e12 = 5.4206 ms
    d = first_json(capsys, *BASE, "--set", "hardware.hbm_bytes_per_s=3.0e12", "--set",
                   "hardware.peak_flop_per_s.bf16=500 TFLOP/s")
    assert d["t_mem_ms"] == pytest.approx((LLAMA8_WEIGHTS + 1536 * LLAMA8_KV_TOKEN) / 3.0e12 * 1e3, rel=1e-12)
    assert d["t_comp_ms"] == pytest.approx(LLAMA8_WEIGHTS / 500e12 * 1e3, rel=1e-12)  # 2P FLOP = bf16 bytes
    assert d["ridge_flop_per_byte"] == pytest.approx(500 / 3.0)


def test_set_model_engine_and_workload_fields(capsys):
    # 40 layers: 40 x 8 x 128 x 2 x 2 = 163,840 B of KV per token
    assert first_json(capsys, *BASE, "--set", "model.num_layers=40")["kv_bytes_per_token"] == 163_840
    # an explicit activation reserve of 1 GiB replaces the estimate:
    #   58,181,741,119 + 3,728,211,968 - 1,073,741,824 = 60,836,211,263 -> // 2,097,152 = 29,008 blocks
    d = first_json(capsys, *BASE, "--set", "engine.reserves.activation=1 GiB")
    assert d["activation_bytes"] == GIB and d["num_gpu_blocks"] == 29_008
    d = first_json(capsys, *BASE, "--set", "engine.args.max_num_seqs=128", "--set", "workload.kv_context=4,096")
    assert d["engine_settings"]["max_num_seqs"]["value"] == 128
    assert d["context_tokens"] == 4096 and d["kv_total_gib"] == pytest.approx(4096 * LLAMA8_KV_TOKEN / GIB)  # 0.5
    # engine.args.tensor_parallel_size is the same switch as --tp
    assert first_json(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--set",
                      "engine.args.tensor_parallel_size=4")["kv_bytes_per_token_per_gpu"] == 81_920


def test_set_an_unknown_field_names_it_and_the_known_ones(capsys):
    rc, out, err = run(capsys, *BASE, "--set", "hardware.hbm_bw=3e12")
    assert rc == 2 and out == ""
    assert "'hbm_bw'" in err and "hbm_bytes_per_s" in err and "memory_bytes" in err
    rc, _, err = run(capsys, *BASE, "--set", "model.num_layerz=40")
    assert rc == 2 and "'num_layerz'" in err and "num_layers" in err
    err = usage_error(capsys, *BASE, "--set", "gpu.memory=80GiB")
    assert "unknown section 'gpu'" in err and "hardware.<field>" in err and "engine.<field>" in err
    err = usage_error(capsys, *BASE, "--set", "engine.bogus=1")
    assert "'bogus'" in err and "engine.args.<vLLM argument>" in err and "engine.version" in err
    err = usage_error(capsys, *BASE, "--set", "workload.prompt=1")
    assert "'prompt'" in err and "workload.input_len" in err
    err = usage_error(capsys, *BASE, "--set", "hardware.memory_bytes")
    assert "SECTION.FIELD=VALUE" in err


def test_set_a_value_the_unit_parser_refuses(capsys):
    rc, _, err = run(capsys, *BASE, "--set", "hardware.memory_bytes=80 GB/s")
    assert rc == 2 and "memory_bytes" in err and "does not fit" in err
    rc, _, err = run(capsys, *BASE, "--set", "engine.reserves.activation=lots")
    assert rc == 2 and "--set engine.reserves.activation=lots" in err


def test_the_same_field_twice_is_refused(capsys):
    rc, _, err = run(capsys, *BASE, "--tp", "2", "--set", "engine.args.tensor_parallel_size=4")
    assert rc == 2 and "engine.args.tensor_parallel_size is given twice" in err


# --------------------------------------------------------------------------------------------------------------
# flags are validated where they are declared
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flag, value, words", [
    ("--tp", "0", ["--tp/--tensor-parallel-size", "'0'", "whole number >= 1"]),
    ("--tp", "two", ["--tp/--tensor-parallel-size", "'two'"]),
    ("--pp", "1.5", ["--pp/--pipeline-parallel-size", "whole number >= 1"]),
    ("--max-num-seqs", "-4", ["--max-num-seqs"]),
    ("--gpu-memory-utilization", "1.5", ["--gpu-memory-utilization", "0 < x <= 1"]),
    ("--gpu-memory-utilization", "0", ["--gpu-memory-utilization", "0 < x <= 1"]),
    ("--engine-version", "yesterday", ["--engine-version", "not a vLLM version"]),
    ("--kv-cache-dtype", "fp7", ["--kv-cache-dtype", "unknown KV-cache dtype", "fp8"]),
    ("--entrypoint", "grpc", ["--entrypoint", "serve", "llm"]),
    ("--context", "0", ["--context", "positive"]),
])
def test_bad_flag_values_are_argparse_errors(capsys, flag, value, words):
    err = usage_error(capsys, *BASE, flag, value)
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


def test_a_setup_value_the_model_refuses_is_one_line(capsys):
    # Llama-3.1-8B has 32 attention heads: 3 GPUs cannot split them (vLLM refuses it too)
    rc, out, err = run(capsys, *BASE, "--tp", "3")
    assert rc == 2 and out == "" and "tensor_parallel_size" in err and "Traceback" not in err


# --------------------------------------------------------------------------------------------------------------
# --simulate takes the same flags
# --------------------------------------------------------------------------------------------------------------
def test_simulate_with_flags_uses_the_same_setup(capsys):
    rc, out, err = run(capsys, "predict", "--simulate", "--hardware", "h100-sxm", "--model", "llama-3.1-70b",
                       "--tp", "4", "--engine-version", "0.33.0", "--input-len", "128", "--output-len", "4",
                       "--concurrency", "1")
    assert rc == 0, err
    assert "26,585 KV blocks" in out.splitlines()[0]  # the TP = 4 pool worked out above


def test_simulate_a_file_with_an_override(capsys):
    # predictions/day3.yaml (A100, Qwen3-8B, vLLM 0.26.0) at gpu_memory_utilization 0.5:
    #   budget 42,949,672,960; available 42,949,672,960 - 16,381,470,720 - 1,040,252,928 - 171,798,691
    #   - 536,870,912 = 24,819,279,709; // 2,359,296 = 10,519 blocks (the file as written: 25,811)
    rc, out, err = run(capsys, "predict", "--simulate", "predictions/day3.yaml", "--concurrency", "1",
                       "--output-len", "4")
    assert rc == 0, err
    assert "25,811 KV blocks" in out.splitlines()[0] and "out 4 tokens" in out.splitlines()[0]
    rc, out, err = run(capsys, "predict", "--simulate", "predictions/day3.yaml", "--concurrency", "1",
                       "--output-len", "4", "--gpu-memory-utilization", "0.5")
    assert rc == 0, err
    assert "10,519 KV blocks" in out.splitlines()[0]


def test_quantization_fp8_keeps_the_kv_cache_at_the_model_dtype(capsys):
    # vLLM's --quantization fp8 on a bf16 checkpoint: the linears at 1 B with one float32 scale each, the embedding,
    # lm_head and norms stay bf16. Llama-3.1-8B: embedding = lm_head = 128,256 x 4,096 = 525,336,576 parameters,
    # norms (2 x 32 + 1) x 4,096 = 266,240, linears 8,030,261,248 - 1,050,673,152 - 266,240 = 6,979,321,856:
    #   weights = 6,979,321,856 + 2 x (1,050,673,152 + 266,240) + 7 x 32 x 4 = 9,081,201,536 B
    #   available = 78,679,145,186 - 9,081,201,536 - 3,728,211,968 - 171,798,691 - 536,870,912 = 65,161,062,079
    #   blocks = 65,161,062,079 // 2,097,152 = 31,071 -- KV stays bf16 (kv_cache_dtype auto: the model dtype)
    d = first_json(capsys, *BASE, "--quantization", "fp8")
    assert d["weight_bytes"] == 6_979_321_856 + 2 * (1_050_673_152 + 266_240) + 7 * 32 * 4 == 9_081_201_536
    assert d["kv_cache_dtype"] == "bf16" and d["kv_bytes_per_token"] == 131_072
    assert d["quantization"].startswith("fp8")
    assert d["available_kv_bytes"] == 65_161_062_079 and d["num_gpu_blocks"] == 31_071
    # both: fp8 weights and an fp8 KV cache (65,536 B per token, 1 MiB blocks): 65,161,062,079 // 1,048,576 = 62,142
    d = first_json(capsys, *BASE, "--quantization", "fp8", "--kv-cache-dtype", "fp8")
    assert d["kv_bytes_per_token"] == 65_536 and d["num_gpu_blocks"] == 62_142
    assert first_json(capsys, *BASE, "--kv-cache-dtype", "auto")["num_gpu_blocks"] == 27_743


def test_set_a_quantization_scheme_for_the_checkpoint(capsys):
    # model.quantization.<key> is the YAML's model: {quantization: {...}}; the values are typed (bits 4 a number)
    d = first_json(capsys, *BASE, "--set", "model.quantization.method=awq", "--set", "model.quantization.bits=4",
                   "--set", "model.quantization.group_size=128")
    assert d["quantization"].startswith("awq") and "W4" in d["quantization"]
    assert d["weight_bytes"] < LLAMA8_WEIGHTS / 2  # 4-bit linears (plus scales) and bf16 embeddings
    rc, _, err = run(capsys, *BASE, "--quantization", "bogus")
    assert rc == 2 and "'bogus'" in err and "awq" in err


def test_entrypoint_llm_takes_the_offline_defaults(capsys):
    # vLLM 0.33 get_batch_defaults, >= 70 GiB tier: the LLM class gets 16,384 batched tokens (vllm serve 8,192), so
    # the profile run is larger: 16,384 x 2 x 51,200 + 1,024 x 128,256 x 22 = 1,677,721,600 + 2,889,351,168
    # = 4,567,072,768; available = 62,618,622,690 - 4,567,072,768 - 171,798,691 - 536,870,912 = 57,342,880,319
    # (62,618,622,690 = budget - weights); blocks = 57,342,880,319 // 2,097,152 = 27,343
    d = first_json(capsys, *BASE, "--entrypoint", "llm")
    assert d["entrypoint"] == "llm"
    assert d["engine_settings"]["max_num_batched_tokens"]["value"] == 16_384
    assert "usage=llm" in d["engine_settings"]["max_num_batched_tokens"]["source"]
    assert d["activation_bytes"] == 4_567_072_768 and d["num_gpu_blocks"] == 27_343
    assert first_json(capsys, *BASE, "--entrypoint", "serve")["num_gpu_blocks"] == 27_743


def test_an_engine_version_outside_the_known_ones_is_a_warning_naming_the_nearest(capsys):
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "mistral-7b",
                       "--engine-version", "0.2.0", "--batch", "1", "--json")
    assert rc == 0 and json.loads(out.splitlines()[0])["num_gpu_blocks"] > 0
    assert err.startswith("roofline: warning:") and "0.2.0" in err and "0.4.0" in err
    rc, _, err = run(capsys, *BASE, "--batch", "1")
    assert rc == 0 and "warning" not in err  # a known release: no warning


def test_pp2_shows_the_kv_pool_of_the_fuller_stage_and_no_decode_table(capsys):
    # Llama-3.1-8B over 2 pipeline stages of 16 layers: a layer is (6,979,588,096 - 4,096 final norm) / 32
    # = 218,112,000 parameters; stage 0 adds the embedding (525,336,576), stage 1 the final norm and the lm_head:
    # 16 x 218,112,000 + 525,336,576 + 4,096 = 4,015,132,672 parameters = 8,030,265,344 B. A block of one stage:
    # 16 layers x 8 x 128 x 2 x 2 B x 16 tokens = 1,048,576 B.
    #   available = 78,679,145,186 - 8,030,265,344 - 3,728,211,968 - 171,798,691 - 536,870,912 = 66,211,998,271
    #   blocks = 66,211,998,271 // 1,048,576 = 63,144 (every rank takes the smallest count: the fuller stage's)
    # Stage 0 (8,192 B fewer: no final norm) has 66,212,006,463 B and the same 63,144 blocks; either may be shown.
    rc, out, err = run(capsys, *BASE, "--pp", "2", "--json")
    assert rc == 0, err
    [d] = [json.loads(line) for line in out.splitlines()]  # no decode rows: one object with the pool
    assert d["pipeline_parallel_size"] == 2 and d["num_gpus"] == 2
    assert d["weight_bytes_per_gpu"] == 8_030_265_344
    assert d["kv_bytes_per_block"] == 1_048_576
    assert d["available_kv_bytes"] in (66_211_998_271, 66_212_006_463) and d["num_gpu_blocks"] == 63_144
    assert "pipeline_parallel_size=2" in d["decode_error"]
    rc, out, _ = run(capsys, *BASE, "--pp", "2")
    assert rc == 0 and "decode table: " in out and "63,144 GPU blocks" in out


def test_a_quantized_checkpoint_preset_with_tp(capsys):
    # an AWQ int4 checkpoint is read from its own config (a preset); TP = 2 halves what each GPU holds
    awq = ("predict", "--hardware", "l40s", "--model", "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
           "--engine-version", "0.33.0")
    one = first_json(capsys, *awq)
    two = first_json(capsys, *awq, "--tp", "2")
    assert one["quantization"].startswith("awq") and two["quantization"] == one["quantization"]
    assert one["weight_bytes_per_gpu"] == one["weight_bytes"] < 6 * GIB  # 4-bit linears: about a third of bf16
    assert two["weight_bytes_per_gpu"] == pytest.approx(one["weight_bytes"] / 2)  # 8 KV heads split, none copied
    assert two["kv_bytes_per_block"] == one["kv_bytes_per_block"] / 2  # 4 of the 8 KV heads per GPU


def test_simulate_a_file_refuses_a_second_chip(capsys):
    rc, out, err = run(capsys, "predict", "--simulate", "predictions/day3.yaml", "--hardware", "h100-sxm")
    assert rc == 2 and out == "" and "--set hardware.FIELD=VALUE" in err


def test_engine_env_chooses_the_v0_engine_and_its_defaults(capsys):
    # vLLM 0.8.5 runs V1 by default (H100, vllm serve: 8,192 batched tokens) and V0 with VLLM_USE_V1=0, whose
    # chunked-prefill budget is 2,048 tokens (chunking on because max_model_len 131,072 > 32,768)
    v085 = ("predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine-version", "0.8.5")
    v1 = first_json(capsys, *v085)["engine_settings"]
    v0 = first_json(capsys, *v085, "--set", "engine.env.VLLM_USE_V1=0")["engine_settings"]
    assert (v1["engine"]["value"], v1["max_num_batched_tokens"]["value"]) == ("v1", 8192)
    assert (v0["engine"]["value"], v0["max_num_batched_tokens"]["value"]) == ("v0", 2048)
    assert "V0" in v0["max_num_batched_tokens"]["source"]


def test_set_types_engine_args_by_the_yaml_readers_own_rule(capsys):
    # the same values through --set and through a prediction file reach vLLM alike: "4GiB" and "none" stay the
    # strings vLLM reads (not 4294967296.0 and None), numbers and booleans are typed, ambiguous words refused
    import argparse

    from pytest_roofline.cli import _set_item, _setup_tree
    from pytest_roofline.format.spec import loads_spec

    values = {"swap_space": "4GiB", "tool_call_parser": "none", "max_num_seqs": "8,192",
              "gpu_memory_utilization": "0.9", "enforce_eager": "true", "tokenizer_mode": "~"}
    args = argparse.Namespace(set=[_set_item(f"engine.args.{k}={v}") for k, v in values.items()])
    from_cli = _setup_tree(args)["engine"]["args"]
    yaml_args = "\n".join(f"    {k}: {v}" for k, v in values.items())
    spec = loads_spec(f"hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  args:\n{yaml_args}\n"
                      "predictions:\n  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte, tolerance: 5%}\n")
    assert from_cli == spec.engine["args"] == {"swap_space": "4GiB", "tool_call_parser": "none",
                                                "max_num_seqs": 8192, "gpu_memory_utilization": 0.9,
                                                "enforce_eager": True,
                                                "tokenizer_mode": None}
    rc, _out, err = run(capsys, *BASE, "--set", "engine.args.enable_prefix_caching=yes")
    assert rc == 2 and "'yes' is ambiguous" in err and "write true or false" in err
