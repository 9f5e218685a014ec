"""Tensor and pipeline parallelism: the per-GPU figures of the Setup, the KV pool per rank, the all-reduce time,
the decode roofline at TP > 1 and the serving model using the same numbers.

Every expected value is worked out by hand in the comment above it, from the published shapes of Llama-3.1-70B
(meta-llama/Llama-3.1-70B config.json: 80 layers, hidden 8192, 64 query / 8 KV heads of 128, intermediate 28672,
vocab 128256, untied) and the catalog's datasheet figures (H100 SXM: 3.35 TB/s, 989 TFLOP/s bf16, NVLink 900 GB/s
bidirectional; A100-SXM4-80GB: 2,039 GB/s, 312 TFLOP/s, NVLink 600 GB/s).
"""

from __future__ import annotations

import pytest

from pytest_roofline.errors import SetupError, SetupValueError, SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup, kv_accounting
from pytest_roofline.quantities.registry import QUANTITIES

# Llama-3.1-70B by hand: embedding = lm_head = 128,256 x 8,192 = 1,050,673,152; one layer = q 8192^2 (67,108,864)
# + k, v 2 x 8192 x 1024 (16,777,216) + o 67,108,864 + MLP 3 x 8192 x 28672 (704,643,072) + 2 norms 16,384
# = 855,654,400; x 80 = 68,452,352,000; + final norm 8,192 + 2 x 1,050,673,152 = 70,553,706,496 -- the
# safetensors index's total_size 141,107,412,992 bytes at bf16 / 2 (meta-llama/Llama-3.1-70B
# model.safetensors.index.json; the model card says 70B, "70.6B" on the Hub page).
L70_PARAMS = 70_553_706_496
L70_BYTES = 2 * L70_PARAMS  # 141,107,412,992


def setup(hw: str = "h100-sxm", tp: int = 1, pp: int = 1, model: str = "llama-3.1-70b", version: str = "0.33.0",
          **args):
    return build_setup(hardware_ref=hw, model_ref=model,
                       engine={"name": "vllm", "version": version,
                               "args": {"tensor_parallel_size": tp, "pipeline_parallel_size": pp, **args}},
                       workload={"input_len": 1024, "output_len": 1024})


def q(name: str, s, **at):
    return QUANTITIES[name].model(s, at).value


# ------------------------------------------------------------------------------------------------ per-GPU figures


def test_llama70b_tp4_per_gpu_weights_and_kv():
    s = setup("h100-sxm", tp=4)
    assert s.model.param_count() == L70_PARAMS
    assert s.num_gpus == 4
    # 141,107,412,992 B / 4 ranks = 35,276,853,248 B (8 KV heads split 2 per rank: no K/V replicas)
    assert s.weight_bytes_per_gpu == 35_276_853_248
    # 2 (K, V) x 80 layers x 2 KV heads per rank x 128 x 2 B = 81,920 B (a quarter of 327,680)
    assert s.kv_bytes_per_token == 327_680
    assert s.kv_bytes_per_token_per_gpu == 81_920
    # one block of 16 tokens on one rank: 81,920 x 16 = 1,310,720 B (1.25 MiB)
    assert s.bytes_per_block == 1_310_720


def test_llama70b_tp8_one_kv_head_per_rank():
    s = setup("a100-sxm4-80gb", tp=8)
    # 141,107,412,992 / 8 = 17,638,426,624 B
    assert s.weight_bytes_per_gpu == 17_638_426_624
    # 8 KV heads over 8 ranks: 1 each -> 2 x 80 x 1 x 128 x 2 = 40,960 B; a block: x 16 = 655,360 B
    assert s.kv_bytes_per_token_per_gpu == 40_960
    assert s.bytes_per_block == 655_360


def test_kv_heads_replicated_when_tp_exceeds_kv_heads():
    # TP = 16 on Llama-3.1-70B (64 query heads / 16 = 4 per rank; 8 KV heads < 16 ranks): vLLM's QKVParallelLinear
    # keeps one KV head per rank, each replicated 16 / 8 = 2 times, so a rank holds 1 KV head, not 0.5 (on a GB200
    # NVL72 fabric: an HGX board's 8-GPU NVLink domain refuses TP 16)
    s = setup("gb200", tp=16)
    assert s.model.kv_heads_per_rank(16) == 1
    # KV per token per GPU: 2 x 80 x 1 x 128 x 2 = 40,960 B -- the same as at TP = 8, not half of it
    assert s.kv_bytes_per_token_per_gpu == 40_960
    assert s.bytes_per_block == 655_360
    # the replicated K/V projections: a rank holds 1 head where an even split would give 8/16 = 0.5, so
    # 0.5 head x 2 (k, v) x 128 x 8,192 = 1,048,576 extra parameters per layer, x 80 layers = 83,886,080,
    # at 2 B each = 167,772,160 B beyond 141,107,412,992 / 16 = 8,819,213,312 B
    assert s.kv_replica_weight_bytes == 167_772_160
    assert s.weight_bytes_per_gpu == 8_819_213_312 + 167_772_160


def test_tp1_per_gpu_figures_are_the_whole_model():
    s = setup("h100-sxm", tp=1, model="qwen3-8b")
    assert s.num_gpus == 1
    assert s.weight_bytes_per_gpu == s.weight_bytes
    assert s.kv_bytes_per_token_per_gpu == s.kv_bytes_per_token
    assert s.flop_per_token_per_gpu == s.flop_per_token
    assert s.allreduce().time_s(64) == 0.0
    assert "parallel" not in s.describe()


def test_describe_shows_tp_pp_and_weights_per_gpu():
    d = setup("h100-sxm", tp=4).describe()
    assert d["parallel"] == "tensor_parallel_size 4 x pipeline_parallel_size 1 = 4 GPUs"
    assert d["weights_per_gpu"].startswith("35.277 GB")  # 35,276,853,248 B
    assert d["kv_bytes_per_token_per_gpu"] == "81,920 B"


# ------------------------------------------------------------------------------------------------ validation


def test_tp_not_dividing_the_attention_heads_is_refused_at_its_yaml_field():
    # 64 query heads over 3 GPUs: vLLM refuses ("must be divisible by tensor parallel size")
    with pytest.raises(SetupValueError) as exc:
        setup("h100-sxm", tp=3)
    assert exc.value.field == "engine.args.tensor_parallel_size"
    assert "64 attention heads" in str(exc.value)


def test_tp_not_splitting_the_kv_heads_is_refused_at_its_yaml_field():
    # 48 query heads / 12 KV heads at TP = 8: 48 / 8 = 6 query heads per rank is fine, but 12 KV heads do not
    # split into whole heads over 8 ranks (12 % 8 = 4) and 8 ranks are not a multiple of 12 either
    with pytest.raises(SetupValueError) as exc:
        build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b",
                    model_overrides={"num_attention_heads": 48, "num_kv_heads": 12},
                    engine={"version": "0.33.0", "args": {"tensor_parallel_size": 8}})
    assert exc.value.field == "engine.args.tensor_parallel_size"
    assert "12 KV heads" in str(exc.value)
    # 8 KV heads at TP = 16 (a multiple): allowed, each head replicated twice (test above)


@pytest.mark.parametrize("value", [0, -2, 1.5, "two"])
def test_impossible_pipeline_parallel_size_is_refused(value):
    with pytest.raises(SetupValueError) as exc:
        setup("h100-sxm", pp=value)
    assert exc.value.field == "engine.args.pipeline_parallel_size"


def test_more_stages_than_layers_is_refused():
    with pytest.raises(SetupValueError) as exc:
        setup("h100-sxm", pp=81)  # 80 layers
    assert exc.value.field == "engine.args.pipeline_parallel_size"


def test_yaml_error_points_at_the_tensor_parallel_size_line(tmp_path):
    from pytest_roofline.format.spec import load_spec

    f = tmp_path / "tp.yaml"
    f.write_text("hardware: h100-sxm\nmodel: llama-3.1-70b\nengine:\n  version: '0.33.0'\n  args:\n"
                 "    tensor_parallel_size: 3\npredictions:\n  - id: w\n    quantity: weight_bytes_per_gpu\n"
                 "    predicted: 47 GB\n")
    with pytest.raises(Exception) as exc:
        load_spec(f)
    text = str(exc.value)
    assert "tensor_parallel_size" in text and "tp.yaml:6" in text  # the line of `tensor_parallel_size: 3`


# ------------------------------------------------------------------------------------------------ KV pool per rank


def test_kv_pool_per_rank_tp4_h100_at_033():
    s = setup("h100-sxm", tp=4)
    acc = kv_accounting(s)
    # vLLM 0.33 on H100 SXM (model/vllm_defaults.py): gpu_memory_utilization 0.92, block 16; H100's 80 GB class
    # gets max_num_batched_tokens 8192 and max_num_seqs 1024.
    assert (s.gpu_memory_utilization, s.block_size, s.max_num_batched_tokens, s.max_num_seqs) == (0.92, 16, 8192, 1024)
    # budget = ceil(0.92 x 85,520,809,984 B [81,559 MiB]) = ceil(78,679,145,185.28) = 78,679,145,186
    assert acc.budget_bytes == 78_679_145_186
    # weights: one rank's 35,276,853,248 B
    assert acc.weight_bytes == 35_276_853_248
    # activation: 8192 tokens x 2 B x (2 x 8192 + 3 x 28672/4 = 37,888) = 620,756,992
    #           + sampler 1024 seqs x 128,256 x 22 B = 2,889,351,168   -> 3,510,108,160
    assert acc.activation_bytes == 3_510_108_160
    # non-torch: 171,798,691 (0.16 GiB) + 1,921,997,864 (1.79 GiB of TP buffers on NVLink) + 2 x 4 x 301,989,888
    #            (NCCL's NVLS buffers, H100 at 4 ranks) = 4,509,715,659 (analytical.tp_non_torch_bytes)
    assert acc.non_torch_bytes == 4_509_715_659
    # available = 78,679,145,186 - 35,276,853,248 - 3,510,108,160 - 4,509,715,659
    #           - 536,870,912 (0.5 GiB CUDA graphs, budgeted from 0.21) = 34,845,597,207
    assert acc.available_kv_bytes == 34_845_597_207
    # blocks = 34,845,597,207 // 1,310,720 = 26,585 (26,585.1)
    assert acc.num_blocks == 26_585


def test_kv_pool_per_rank_tp8_a100_at_033():
    s = setup("a100-sxm4-80gb", tp=8)
    acc = kv_accounting(s)
    assert (s.gpu_memory_utilization, s.max_num_batched_tokens, s.max_num_seqs) == (0.92, 2048, 256)
    # budget = ceil(0.92 x 85,899,345,920 [80 GiB]) = ceil(79,027,398,246.4) = 79,027,398,247
    # activation = 2048 x 2 x (16,384 + 3 x 3,584) = 111,149,056 + 256 x 128,256 x 22 = 722,337,792 -> 833,486,848
    # non-torch = 171,798,691 + 1,921,997,864 (TP buffers on NVLink 3; no NVLS on A100) = 2,093,796,555
    # available = 79,027,398,247 - 17,638,426,624 - 833,486,848 - 2,093,796,555 - 536,870,912 = 57,924,817,308
    # blocks = 57,924,817,308 // 655,360 = 88,386 (88,386.3)
    assert acc.activation_bytes == 833_486_848
    assert acc.available_kv_bytes == 57_924_817_308
    assert acc.num_blocks == 88_386


def test_70b_on_one_gpu_has_no_blocks_and_tp4_has_them():
    # TP = 1: the 141.1 GB of weights exceed the 78.7 GB budget of one H100: no block (vLLM refuses to start)
    one = kv_accounting(setup("h100-sxm", tp=1))
    assert one.num_blocks == 0
    assert one.available_kv_bytes < 0
    # at TP = 4 each rank holds a quarter: 26,585 blocks (test above)
    assert kv_accounting(setup("h100-sxm", tp=4)).num_blocks == 26_585


def test_pipeline_parallel_stages_and_min_over_ranks():
    # vLLM's get_pp_indices: 80 layers over 3 stages -> 26 each, the remainder 2 to the stages before the last,
    # from the second-to-last backwards (partitions[-2], partitions[-3]): [27, 27, 26]
    s = setup("a100-sxm4-80gb", tp=4, pp=3)
    assert s.pp_stage_layers == (27, 27, 26)
    assert s.num_gpus == 12
    # 80 layers over 4 stages: 20 each; 81 layers: the one left over to the second-to-last: [20, 20, 21, 20]
    assert setup("a100-sxm4-80gb", pp=4).pp_stage_layers == (20, 20, 20, 20)
    s81 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-70b", model_overrides={"num_layers": 81},
                      engine={"version": "0.33.0", "args": {"pipeline_parallel_size": 4}})
    assert s81.pp_stage_layers == (20, 20, 21, 20)
    # TP = 4, PP = 2 on A100-80GB: stage 0 = embedding + 40 layers, stage 1 = 40 layers + final norm + lm_head
    # (untied): both 40 x 855,654,400 + 1,050,673,152 (+ 8,192 on the last) parameters; per GPU / 4, x 2 B:
    # stage 0: (34,226,176,000 + 1,050,673,152) x 2 / 4 = 17,638,424,576 B; stage 1: + 8,192 x 2 / 4 = 17,638,428,672
    s2 = setup("a100-sxm4-80gb", tp=4, pp=2)
    assert s2.pp_stage_layers == (40, 40)
    assert s2.stage_weight_bytes_per_gpu(0) == pytest.approx(17_638_424_576, rel=1e-12)
    assert s2.stage_weight_bytes_per_gpu(1) == pytest.approx(17_638_428_672, rel=1e-12)
    assert s2.weight_bytes_per_gpu == pytest.approx(17_638_428_672, rel=1e-12)
    # one rank's block: 2 KV heads x 128 x 2 B x 2 x 16 tokens x 40 layers = 655,360 B; KV per token 40,960 B
    assert s2.bytes_per_block == 655_360
    assert s2.kv_bytes_per_token_per_gpu == 40_960
    # every rank reports the smallest pool (vLLM v1 kv_cache_utils.get_kv_cache_configs): the last stage, which
    # holds 4,096 more bytes of weights, has the fewer blocks (or the same count)
    per_stage = []
    for stage in range(2):
        acc = an.vllm_kv_accounting(
            total_memory_bytes=s2.total_memory_bytes, gpu_memory_utilization=s2.gpu_memory_utilization,
            weight_bytes=s2.stage_weight_bytes_per_gpu(stage), activation_bytes=kv_accounting(s2).activation_bytes,
            non_torch_bytes=kv_accounting(s2).non_torch_bytes, cuda_graph_bytes=kv_accounting(s2).cuda_graph_bytes,
            bytes_per_block=s2.stage_bytes_per_block(stage), block_size=16)
        per_stage.append(acc.num_blocks)
    assert kv_accounting(s2).num_blocks == min(per_stage)


def test_pp_is_refused_by_the_decode_roofline_and_the_serving_model():
    s = setup("a100-sxm4-80gb", tp=4, pp=2)
    with pytest.raises(SetupError, match="pipeline_parallel_size=2"):
        q("t_step", s, batch=1)
    with pytest.raises(SimulationError, match="pipeline_parallel_size=2"):
        sv.step_cost(s, decode_ctx_tokens=[1000])
    # memory and the KV pool are modelled
    assert q("weight_bytes_per_gpu", s) == pytest.approx(17_638_428_672, rel=1e-12)
    assert q("num_gpu_blocks", s) > 0


# ------------------------------------------------------------------------------------------------ all-reduce


def test_ring_allreduce_formula():
    # 2 (N-1)/N x bytes / link + latency: 4 ranks, 1 MiB over 450 GB/s, 8 us: 1.5 x 1,048,576 / 450e9 + 8e-6
    # = 3.4953e-6 + 8e-6 = 11.4953 us
    assert an.ring_allreduce_time_s(1_048_576, num_ranks=4, link_bytes_per_s=450e9, latency_s=8e-6) == \
        pytest.approx(1.5 * 1_048_576 / 450e9 + 8e-6, rel=1e-15)
    # one rank: nothing to reduce
    assert an.ring_allreduce_time_s(1_048_576, num_ranks=1, link_bytes_per_s=450e9, latency_s=8e-6) == 0.0
    # 2 ranks move the message once: 2 x 1/2 = 1
    assert an.ring_allreduce_time_s(1e9, num_ranks=2, link_bytes_per_s=1e9, latency_s=0.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        an.ring_allreduce_time_s(1, num_ranks=0, link_bytes_per_s=1e9, latency_s=0)


def test_tensor_parallel_allreduce_two_per_layer():
    ar = an.tensor_parallel_allreduce(num_ranks=4, num_layers=80, hidden_size=8192, link_bytes_per_s=450e9,
                                      latency_s=8e-6)
    # 2 all-reduces x 80 layers = 160 calls of 8,192 x 2 B = 16,384 B per token each
    assert (ar.calls, ar.bytes_per_token_per_call) == (160, 16_384)
    # each ring_allreduce_time_s of the step's message: the cost is the sum of 160 of them
    for tokens in (1, 64):
        one = an.ring_allreduce_time_s(tokens * 16_384, num_ranks=4, link_bytes_per_s=450e9, latency_s=8e-6)
        assert ar.time_s(tokens) == pytest.approx(160 * one, rel=1e-12)
    # batch 1: 160 x (2 x 3/4 x 16,384 / 450e9 + 8e-6) = 160 x (0.054613 + 8) us = 1.28874 ms
    assert ar.time_s(1) == pytest.approx(1.288738e-3, rel=1e-6)


def test_setup_allreduce_uses_one_link_direction_and_the_catalog_latency():
    s = setup("h100-sxm", tp=4)
    # NVLink 4: 900 GB/s bidirectional -> 450 GB/s one way
    assert s.link_bytes_per_s == 450e9
    ar = s.allreduce()
    assert ar.link_bytes_per_s == 450e9
    assert ar.latency_s == s.allreduce_latency_s
    # the catalog entry's interconnect_latency_s (8 us for NVLink parts), else the 8 us default
    catalog = getattr(s.hardware, "interconnect_latency_s", None)
    assert s.allreduce_latency_s == (catalog if catalog is not None else an.DEFAULT_ALLREDUCE_LATENCY_S)
    # a hardware override of the latency reaches the all-reduce (20 us: 160 calls -> 3.2 ms of latency)
    slow = build_setup(hardware_ref="h100-sxm", hardware_overrides={"interconnect_latency_s": 20e-6},
                       model_ref="llama-3.1-70b", engine={"version": "0.33.0", "args": {"tensor_parallel_size": 4}})
    assert slow.allreduce().fixed_s == pytest.approx(160 * 20e-6, rel=1e-12)


def test_tp_without_an_interconnect_figure_is_a_clear_error():
    s = build_setup(hardware_ref="h100-sxm", hardware_overrides={"interconnect_bytes_per_s": None},
                    model_ref="llama-3.1-70b", engine={"version": "0.33.0", "args": {"tensor_parallel_size": 4}})
    with pytest.raises(SetupError, match="interconnect"):
        q("t_step", s, batch=1)


# ------------------------------------------------------------------------------------------------ the roofline at TP


def test_decode_roofline_tp4_batch1():
    s = setup("h100-sxm", tp=4)
    lat = s.allreduce_latency_s  # 8 us for NVLink (catalog; 8 us without one)
    # t_allreduce(B=1) = 160 x (2 x 3/4 x 16,384 / 450e9 + lat); at 8 us: 1.28874 ms
    t_ar = 160 * (1.5 * 16_384 / 450e9 + lat)
    assert q("t_allreduce", s, batch=1) == pytest.approx(t_ar, rel=1e-12)
    # t_mem = (35,276,853,248 + 1,536 tokens x 81,920 B = 125,829,120) / 3.35e12 = 35,402,682,368 / 3.35e12
    #       = 10.5680 ms (one GPU's weights and its KV heads over its own bandwidth)
    t_mem = 35_402_682_368 / 3.35e12
    assert q("t_mem", s, batch=1) == pytest.approx(t_mem, rel=1e-12)
    # t_comp = 2 x 70,553,706,496 / 4 / 989e12 = 35.67 us
    assert q("t_comp", s, batch=1) == pytest.approx(2 * L70_PARAMS / 4 / 989e12, rel=1e-12)
    # t_step = max(t_mem, t_comp) + t_allreduce = 10.5680 + 1.2887 = 11.857 ms (at 8 us)
    assert q("t_step", s, batch=1) == pytest.approx(t_mem + t_ar, rel=1e-12)
    assert q("batch1_throughput", s) == pytest.approx(1 / (t_mem + t_ar), rel=1e-12)
    # the weight-read ceiling: 3.35e12 / 35,276,853,248 = 94.963 tok/s
    assert q("batch1_ceiling", s) == pytest.approx(3.35e12 / 35_276_853_248, rel=1e-12)


def test_decode_roofline_tp4_batch64_is_the_groups_throughput():
    s = setup("h100-sxm", tp=4)
    lat = s.allreduce_latency_s
    # t_mem = (35,276,853,248 + 64 x 125,829,120 = 8,053,063,680) / 3.35e12 = 12.9343 ms
    # t_comp = 64 x 35,276,853,248 / 989e12 = 2.2828 ms   -> memory-bound
    # t_allreduce = 160 x (1.5 x 64 x 16,384 / 450e9 + lat) = 160 x (3.4953 + 8) us = 1.8393 ms (at 8 us)
    t = (35_276_853_248 + 64 * 125_829_120) / 3.35e12 + 160 * (1.5 * 64 * 16_384 / 450e9 + lat)
    assert q("t_step", s, batch=64) == pytest.approx(t, rel=1e-12)
    # 64 sequences per step of the whole group: 64 / 14.774 ms = 4,332 tok/s
    assert q("output_throughput", s, batch=64) == pytest.approx(64 / t, rel=1e-12)
    assert q("decode_bound", s, batch=64) == "memory"


def test_closed_forms_use_per_gpu_numbers():
    s = setup("a100-sxm4-80gb", tp=8)
    kv_seq = 1536 * 40_960  # 62,914,560 B of KV per sequence per GPU
    # BW / KV per seq per GPU = 2.039e12 / 62,914,560 = 32,409 tok/s for the group
    assert q("throughput_asymptote", s) == pytest.approx(2.039e12 / kv_seq, rel=1e-12)
    # TP x peak / 2P = 312e12 / (2 x 70,553,706,496 / 8)
    assert q("compute_roof", s) == pytest.approx(312e12 / (2 * L70_PARAMS / 8), rel=1e-12)
    # weights per GPU / KV per seq per GPU = 17,638,426,624 / 62,914,560 = 280.35
    assert q("half_saturation_batch", s) == pytest.approx(17_638_426_624 / kv_seq, rel=1e-12)
    assert q("t_mem_intercept", s) == pytest.approx(17_638_426_624 / 2.039e12, rel=1e-12)


@pytest.mark.parametrize("name,at", [
    ("t_mem", {"batch": 8}), ("t_comp", {"batch": 8}), ("t_step", {"batch": 8}), ("output_throughput", {"batch": 8}),
    ("batch1_ceiling", {}), ("batch1_throughput", {}), ("knee_concurrency", {}), ("throughput_asymptote", {}),
    ("compute_roof", {}), ("half_saturation_batch", {}), ("max_context_for_knee", {}), ("prefill_floor", {}),
    ("weight_only_knee", {}), ("intensity_asymptote", {}), ("num_gpu_blocks", {}), ("kv_bytes_per_block", {}),
])
def test_tp1_values_unchanged(name, at):
    # at TP = 1 the per-GPU figures are the whole model's and the all-reduce is 0, so each quantity equals the
    # old whole-model arithmetic (written here from the whole-model Setup fields)
    s = setup("a100-sxm4-80gb", tp=1, model="qwen3-8b")
    w, f, kv = s.weight_bytes, s.flop_per_token, s.kv_bytes_per_seq
    bw, pk = s.hbm_bytes_per_s, s.peak_flop_per_s
    old = {
        "t_mem": (w + 8 * kv) / bw, "t_comp": 8 * f / pk, "t_step": max((w + 8 * kv) / bw, 8 * f / pk),
        "output_throughput": 8 / max((w + 8 * kv) / bw, 8 * f / pk), "batch1_ceiling": bw / w,
        "batch1_throughput": 1 / max((w + kv) / bw, f / pk),
        "knee_concurrency": an.roofline_knee(weight_bytes=w, flop_per_token=f, kv_bytes_per_seq=kv,
                                             hbm_bytes_per_s=bw, peak_flop_per_s=pk).batch,
        "throughput_asymptote": bw / kv, "compute_roof": pk / f, "half_saturation_batch": w / kv,
        "max_context_for_knee": f / pk * bw / s.kv_bytes_per_token, "prefill_floor": 1024 * f / pk,
        "weight_only_knee": (w / bw) / (f / pk), "intensity_asymptote": f / kv,
        "num_gpu_blocks": None, "kv_bytes_per_block": s.model.kv_bytes_per_block(16, "bf16", 1),
    }[name]
    got = q(name, s, **at)
    if name == "num_gpu_blocks":
        acc = an.vllm_kv_accounting(
            total_memory_bytes=s.total_memory_bytes, gpu_memory_utilization=s.gpu_memory_utilization,
            weight_bytes=w, activation_bytes=kv_accounting(s).activation_bytes,
            non_torch_bytes=kv_accounting(s).non_torch_bytes, cuda_graph_bytes=kv_accounting(s).cuda_graph_bytes,
            bytes_per_block=int(s.bytes_per_block), block_size=s.block_size)
        old = acc.num_blocks
    if old is None:
        assert got is None
    else:
        assert got == old  # exactly, not approximately


# ------------------------------------------------------------------------------------------------ serving model


def test_serving_model_at_tp4_uses_the_setups_per_gpu_numbers():
    s = setup("h100-sxm", tp=4)
    zero = sv.ServingConstants(hbm_efficiency=1.0, flop_efficiency=1.0, mem_latency_s=0.0, step_overhead_s=0.0,
                               per_seq_overhead_s=0.0, interconnect_efficiency=1.0)
    c = sv.step_cost(s, zero, decode_ctx_tokens=[1536])
    arch = s.model
    # weights: the streamed parameters (all but the input embedding, a lookup) / 4 ranks x 2 B:
    # (70,553,706,496 - 1,050,673,152) x 2 / 4 = 34,751,516,672 B over 3.35e12
    assert c.weights_s == pytest.approx((L70_PARAMS - 1_050_673_152) * 2 / 4 / 3.35e12, rel=1e-12)
    # KV: the Setup's per-GPU 81,920 B per token x 1,536 tokens, over 3.35e12
    assert c.kv_s == pytest.approx(s.kv_bytes_per_token_per_gpu * 1536 / 3.35e12, rel=1e-12)
    # the all-reduce: the same Setup.allreduce the roofline's t_allreduce uses, at batch 1, but with NCCL's 4-GPU
    # ring latency per call (5.6 + 2.0 x 6 = 17.6 us) where the roofline, a ceiling, keeps the catalog's 8 us
    from pytest_roofline.model.serving.constants import ring_allreduce_latency_s
    assert ring_allreduce_latency_s(4) == pytest.approx(17.6e-6)
    assert c.allreduce_s == pytest.approx(s.allreduce(latency_s=17.6e-6).time_s(1), rel=1e-12)
    assert q("t_allreduce", s, batch=1) == pytest.approx(s.allreduce().time_s(1), rel=1e-12)
    assert arch.num_layers == 80
    # and the engine's pool is the per-rank one
    assert sv.EngineConfig.from_setup(s).num_gpu_blocks == kv_accounting(s).num_blocks == 26_585


def test_serving_model_efficiency_and_latency_constants_reach_the_allreduce():
    s = setup("a100-sxm4-80gb", tp=8)
    k = sv.ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.75, mem_latency_s=0.0, step_overhead_s=0.0,
                            per_seq_overhead_s=0.0, interconnect_efficiency=0.5, allreduce_latency_s=20e-6)
    c = sv.step_cost(s, k, decode_ctx_tokens=[100] * 4)
    # 160 calls x (2 x 7/8 x 4 tokens x 16,384 B / (300e9 x 0.5) + 20 us)
    assert c.allreduce_s == pytest.approx(160 * (1.75 * 4 * 16_384 / 150e9 + 20e-6), rel=1e-12)


def test_tensor_parallelism_beyond_one_nvlink_domain_is_refused_at_its_field():
    """An HGX H100 board joins 8 GPUs; TP 16 would all-reduce across nodes over the network, which the model prices at
    NVLink speed: refused, naming the domain and vLLM's multi-node layout (TP in a node, PP across). TP 8 x PP 2
    builds; an override of the catalog's domain (a GB200 NVL72-like fabric) lifts the limit."""
    from pytest_roofline.errors import SetupValueError
    from pytest_roofline.model.setup import build_setup
    with pytest.raises(SetupValueError, match="span more than one NVLink domain of h100-sxm .8 GPUs") as exc:
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b",
                    engine={"args": {"tensor_parallel_size": 16}})
    assert exc.value.field == "engine.args.tensor_parallel_size"
    ok = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b",
                     engine={"args": {"tensor_parallel_size": 8, "pipeline_parallel_size": 2}})
    assert ok.num_gpus == 16
    wide = build_setup(hardware_ref="h100-sxm", hardware_overrides={"nvlink_domain_gpus": 16},
                       model_ref="llama-3.1-70b", engine={"args": {"tensor_parallel_size": 16}})
    assert wide.tensor_parallel_size == 16
    build_setup(hardware_ref="l40s", model_ref="llama-3.1-70b", engine={"args": {"tensor_parallel_size": 8}})
