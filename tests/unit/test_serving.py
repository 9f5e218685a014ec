"""The step-level serving model (pytest_roofline.model.serving) against mechanisms with known answers.

Every expected value is worked out here from the model's config numbers and the chip's datasheet figures
(Qwen3-8B: 36 layers, hidden 4096, 32 query / 8 KV heads of 128, vocab 151,936, untied embeddings; A100-SXM4:
2,039 GB/s, 312 TFLOP/s bf16), not read back from the simulator's own coefficients.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from pytest_roofline.errors import SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup

A100_BW = 2039e9
A100_PEAK = 312e12
# Qwen3-8B (config.json): total 8,190,735,360 parameters; the input embedding (151,936 x 4,096) is a lookup,
# and the untied lm_head (the same shape) is computed only at each sequence's last position
QWEN3_PARAMS = 8_190_735_360
QWEN3_EMBED = 151_936 * 4096
QWEN3_LAYERS = 36
QWEN3_KV_PER_TOKEN = 2 * 36 * 8 * 128 * 2  # 147,456 B
QWEN3_STREAMED_BYTES = (QWEN3_PARAMS - QWEN3_EMBED) * 2  # 15.14 GB read once per step
QWEN3_FLOP_PER_TOKEN_BODY = 2 * (QWEN3_PARAMS - 2 * QWEN3_EMBED)  # linear FLOPs per token without the lm_head
QWEN3_FLOP_HEAD = 2 * QWEN3_EMBED  # lm_head FLOPs per sampled sequence
QWEN3_ATTN_FLOP_PER_PAIR = 4 * 36 * 32 * 128  # QK^T and PV, per (query, key) pair, all layers

ZERO = sv.ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.75, mem_latency_s=0.0, step_overhead_s=0.0,
                           per_seq_overhead_s=0.0)


def a100_setup(**workload):
    return build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                       engine={"name": "vllm", "version": "0.26.0"},
                       workload={"input_len": 1024, "output_len": 1024, **workload})


def tiny_cpu_setup(max_num_seqs=8):
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                       engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                               "args": {"max_num_seqs": max_num_seqs, "enforce_eager": True}},
                       workload={"input_len": 128, "output_len": 64})


@pytest.fixture(scope="module")
def a100():
    return a100_setup()


@pytest.fixture(scope="module")
def a100_engine(a100):
    return sv.EngineConfig.from_setup(a100)


def closed(setup, c, n=None, **kw):
    return sv.workload_for_point(setup, concurrency=c, num_requests=n, **kw)


# ---------------------------------------------------------------------------------------------------------
# the engine configuration comes from the Setup's defaults and the project's KV accounting
# ---------------------------------------------------------------------------------------------------------


def test_engine_config_from_setup_uses_the_kv_accounting_and_v1_defaults(a100, a100_engine):
    from pytest_roofline.quantities.registry import QUANTITIES

    assert a100_engine.num_gpu_blocks == QUANTITIES["num_gpu_blocks"].model(a100, {}).value  # the one KV formula
    assert (a100_engine.max_num_seqs, a100_engine.max_num_batched_tokens, a100_engine.block_size) == (256, 2048, 16)
    assert a100_engine.chunked_prefill and a100_engine.enable_prefix_caching  # V1 (0.26) defaults
    tiny = sv.EngineConfig.from_setup(tiny_cpu_setup())
    # explicit 1 GiB pool / (128 tokens x 512 B per token) = 16,384 blocks (the CPU engine logs 2,097,152 tokens)
    assert tiny.num_gpu_blocks == 2**30 // (128 * 512)
    assert (tiny.block_size, tiny.max_num_seqs) == (128, 8)


def test_v0_versions_do_not_chunk():
    # V0 (0.5.3+) chunks by default only when max_model_len > 32768 (v0.5.4 vllm/engine/arg_utils.py
    # create_engine_config); Llama-3.1-8B's 131072-token context would be chunked, so cap it at 32768 (Qwen3 needs
    # vLLM 0.8.4)
    s = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b",
                    engine={"name": "vllm", "version": "0.5.4", "args": {"max_model_len": 32768}})
    assert sv.EngineConfig.from_setup(s).chunked_prefill is False
    s1 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                     engine={"name": "vllm", "version": "0.26.0", "args": {"enable_chunked_prefill": False}})
    assert sv.EngineConfig.from_setup(s1).chunked_prefill is False


# ---------------------------------------------------------------------------------------------------------
# the step cost
# ---------------------------------------------------------------------------------------------------------


def test_one_request_decodes_at_the_roofline_step_time(a100, a100_engine):
    prompt, out = 1000, 101
    w = sv.Workload(input_len=sv.LengthDist(prompt), output_len=sv.LengthDist(out), num_requests=1, concurrency=1)
    p = sv.simulate(a100, w, engine=a100_engine, constants=ZERO)
    # decode step j attends over prompt + j tokens; the mean over j = 1..out-1 is prompt + out/2 (linear in j)
    ref = an.decode_step(1, weight_bytes=QWEN3_STREAMED_BYTES, flop_per_token=QWEN3_FLOP_PER_TOKEN_BODY,
                         kv_bytes_per_seq=(prompt + out / 2) * QWEN3_KV_PER_TOKEN,
                         hbm_bytes_per_s=0.8 * A100_BW, peak_flop_per_s=0.75 * A100_PEAK)
    assert ref.bound == "memory"
    assert p.tpot_mean_ms == pytest.approx(ref.t_step_s * 1e3, rel=1e-9)
    # with the defaults the KV read runs at kv_bw_efficiency (0.68), not the weights' 0.8, and every step adds the
    # per-step, GEMM-latency (4 per layer + lm_head) and attention-kernel (one per layer) terms; the one sequence's
    # per-sequence CPU work (10 us) runs during the GPU's step on this async-scheduling engine (vLLM 0.26) and adds
    # only on a synchronous one
    # the linear layers take the 1.75-norm of their weight read and their GEMM compute (one token + the lm_head)
    c = sv.default_constants(a100)
    assert (c.hbm_efficiency, c.kv_bw_efficiency, c.linear_overlap_p) == (0.8, 0.68, 1.75)
    assert a100_engine.async_scheduling
    extra = (c.step_overhead_s + (4 * QWEN3_LAYERS + 1) * c.mem_latency_s
             + QWEN3_LAYERS * c.attn_layer_latency_s)
    w_s = QWEN3_STREAMED_BYTES / (0.8 * A100_BW)
    c_s = (QWEN3_FLOP_PER_TOKEN_BODY + QWEN3_FLOP_HEAD) / (0.75 * A100_PEAK)
    split = (w_s ** 1.75 + c_s ** 1.75) ** (1 / 1.75) + (prompt + out / 2) * QWEN3_KV_PER_TOKEN / (0.68 * A100_BW)
    p2 = sv.simulate(a100, w, engine=a100_engine, constants=c)
    assert p2.tpot_mean_ms == pytest.approx((split + extra) * 1e3, rel=1e-9)
    p_sync = sv.simulate(a100, w, engine=dataclasses.replace(a100_engine, async_scheduling=False), constants=c)
    assert p_sync.tpot_mean_ms == pytest.approx((split + extra + c.per_seq_overhead_s) * 1e3, rel=1e-9)
    # TTFT of a lone request: one prefill step of 1,000 tokens, compute-bound (linear + causal attention)
    flops = QWEN3_FLOP_PER_TOKEN_BODY * prompt + QWEN3_FLOP_HEAD + QWEN3_ATTN_FLOP_PER_PAIR * prompt * (prompt + 1) / 2
    assert p.ttft_p50_ms == pytest.approx(flops / (0.75 * A100_PEAK) * 1e3, rel=1e-9)


def test_a_gemm_at_its_ridge_point_takes_the_p_norm_of_its_two_bounds(a100):
    """At the batch where the weight read and the GEMM compute take equal time (the ridge), the roofline's max
    charges one of them; the serving model charges 2^(1/1.75) = 1.486 times it. Far from the ridge the two agree."""
    w_s = QWEN3_STREAMED_BYTES / (0.8 * A100_BW)
    flop_per_token = QWEN3_FLOP_PER_TOKEN_BODY + QWEN3_FLOP_HEAD  # every decoding sequence samples a token
    ridge = w_s * 0.75 * A100_PEAK / flop_per_token  # tokens at which compute = weights: 143 on an A100
    assert 140 < ridge < 146
    normed = ZERO.replace(linear_overlap_p=1.75)

    def linear(batch: int, constants) -> float:
        # attention off: a context of 0 reads no KV (the terms are separate, so the linear part is the rest)
        return sv.step_cost(a100, constants, decode_ctx_tokens=[0] * batch).time_s

    b = round(ridge)
    at_ridge = max(w_s, b * flop_per_token / (0.75 * A100_PEAK))
    assert linear(b, ZERO) == pytest.approx(at_ridge, rel=1e-9)
    c_b = b * flop_per_token / (0.75 * A100_PEAK)
    assert linear(b, normed) == pytest.approx((w_s ** 1.75 + c_b ** 1.75) ** (1 / 1.75), rel=1e-9)
    assert linear(b, normed) / linear(b, ZERO) == pytest.approx(2 ** (1 / 1.75), rel=0.01)
    assert linear(1, normed) / linear(1, ZERO) == pytest.approx(1.0, abs=1e-3)  # weight-bound: unchanged
    assert linear(8192, normed) / linear(8192, ZERO) == pytest.approx(1.0, abs=2e-3)  # compute-bound: unchanged
    with pytest.raises(SimulationError, match="linear_overlap_p must be >= 1"):
        ZERO.replace(linear_overlap_p=0.5)


def test_the_p_norm_reproduces_the_h200_decode_gemms_where_the_max_is_a_fifth_short():
    """The project's H200 sweep (benchmarks/data/h200-step-sweep.md): a Llama-3.1-8B-shaped decode step's weight
    GEMMs, replayed as CUDA graphs, took 5.18 / 6.68 / 11.70 ms at B = 128 / 256 / 512; the same run streamed the
    15.01 GB of weights at B = 1 in 4.29 ms (3.50 TB/s) and ran an 8192^3 bf16 matmul at 746 TFLOP/s. At those
    measured levels the roofline's max gives 4.29 / 5.15 / 10.30 ms; the 1.75-norm comes within 6%."""
    h200 = build_setup(hardware_ref="h200", model_ref="llama-3.1-8b", engine={"name": "vllm", "version": "0.26.0"})
    weight_bytes, bw, peak = 15.009e9, 4.8e12, 989e12
    levels = dict(hbm_efficiency=weight_bytes / 4.29e-3 / bw, flop_efficiency=746e12 / peak, mem_latency_s=0.0,
                  step_overhead_s=0.0, per_seq_overhead_s=0.0)
    rl = sv.ServingConstants(**levels)
    normed = sv.ServingConstants(**levels, linear_overlap_p=1.75)
    measured = {128: 5.18e-3, 256: 6.68e-3, 512: 11.70e-3}
    for batch, m in measured.items():
        # the model streams the weights without the input embedding (a lookup) and computes the lm_head per
        # sequence: the same bytes and FLOPs as the sweep's step to within 1%
        t_max = sv.step_cost(h200, rl, decode_ctx_tokens=[0] * batch).time_s
        t_p = sv.step_cost(h200, normed, decode_ctx_tokens=[0] * batch).time_s
        assert t_p == pytest.approx(m, rel=0.06), batch
        assert t_max < 0.9 * m, batch


def test_zero_overheads_and_no_prefill_reduce_to_the_closed_form(a100, a100_engine):
    # B sequences with 16-token prompts prefill in one step and then decode in lockstep: the aggregate decode
    # throughput is the notebook's closed form f(B) = BW B / (W + B ctx kv) at the mean context
    B, prompt, out = 64, 16, 800
    p = sv.simulate(a100, closed(a100, B, B, input_len=prompt, output_len=out), engine=a100_engine, constants=ZERO)
    ctx = prompt + out / 2
    f = 0.8 * A100_BW * B / (QWEN3_STREAMED_BYTES + B * ctx * QWEN3_KV_PER_TOKEN)
    assert B / (p.tpot_mean_ms / 1e3) == pytest.approx(f, rel=1e-9)
    assert p.max_running_batch == B and p.preemptions == 0


def test_a_long_prefill_raises_its_step_by_the_prefill_cost_and_chunking_spreads_it(a100):
    # request A decodes alone; request B (2,000-token prompt) arrives while A runs
    ctx_a = 1024 + 10
    alone = sv.step_cost(a100, ZERO, decode_ctx_tokens=[ctx_a])
    mixed = sv.step_cost(a100, ZERO, decode_ctx_tokens=[ctx_a], prefill_tokens=[(2000, 0)])
    # worked out by hand: 2,001 tokens make the linear layers compute-bound; attention stays memory-bound
    lin = (QWEN3_FLOP_PER_TOKEN_BODY * 2001 + QWEN3_FLOP_HEAD * 2) / (0.75 * A100_PEAK)
    kv = (ctx_a + 2000) * QWEN3_KV_PER_TOKEN / (0.8 * A100_BW)
    attn = QWEN3_ATTN_FLOP_PER_PAIR * (ctx_a + 2000 * 2001 / 2) / (0.75 * A100_PEAK)
    assert mixed.time_s == pytest.approx(lin + max(kv, attn), rel=1e-9)
    # alone, the step reads the weights and A's KV (memory-bound); admitting B replaces the weight read by the
    # compute of 2,001 tokens and adds B's KV/attention: that difference is the prefill's cost in this step
    w_read = QWEN3_STREAMED_BYTES / (0.8 * A100_BW)
    kv_alone = ctx_a * QWEN3_KV_PER_TOKEN / (0.8 * A100_BW)
    assert alone.time_s == pytest.approx(w_read + kv_alone, rel=1e-9)
    assert mixed.time_s - alone.time_s == pytest.approx((lin - w_read) + (max(kv, attn) - kv_alone), rel=1e-9)
    assert mixed.prefill_compute_s > 0 and mixed.weights_s == 0

    def run(budget):
        eng = dataclasses.replace(sv.EngineConfig.from_setup(a100), max_num_batched_tokens=budget)
        trace: list[sv.StepRecord] = []
        w = sv.Workload(input_len=sv.LengthDist(2000), output_len=sv.LengthDist(60), num_requests=2,
                        arrival=sv.ArrivalKind.POISSON, rate_req_per_s=1e-9, seed=0)
        # two requests: the second arrives ~forever later with a Poisson rate ~0: replace by a fixed schedule
        sim = sv._Sim(a100, w, eng, ZERO, False, trace)
        sim.sends[1].arrival = 0.2  # B is sent while A decodes (the API server takes it then: ZERO has no frontend)
        sim.run()
        return trace

    whole = run(2048)
    pf_whole = [r for r in whole if r.start_s >= 0.2 - 1e-12 and r.prefill_tokens]
    assert len(pf_whole) == 1 and pf_whole[0].prefill_tokens == 2000 and pf_whole[0].decode_seqs == 1
    chunked = run(512)
    pf = [r for r in chunked if r.start_s >= 0.2 - 1e-12 and r.prefill_tokens]
    # 511 prompt tokens per step next to A's decode token: 511 + 511 + 511 + 467
    assert [r.prefill_tokens for r in pf] == [511, 511, 511, 467]
    assert all(r.prefill_tokens + r.decode_seqs <= 512 for r in chunked)
    assert max(r.time_s for r in pf) < 0.4 * pf_whole[0].time_s


def test_tensor_parallel_halves_weight_bytes_and_adds_two_allreduces_per_layer():
    s1 = a100_setup()
    s2 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                     engine={"name": "vllm", "version": "0.26.0", "args": {"tensor_parallel_size": 2}})
    c1 = sv.step_cost(s1, ZERO, decode_ctx_tokens=[1000] * 8)
    c2 = sv.step_cost(s2, ZERO, decode_ctx_tokens=[1000] * 8)
    assert c1.weights_s == pytest.approx(QWEN3_STREAMED_BYTES / (0.8 * A100_BW), rel=1e-12)
    assert c2.weights_s == pytest.approx(c1.weights_s / 2, rel=1e-12)
    assert c2.kv_s == pytest.approx(c1.kv_s / 2, rel=1e-12)  # 8 KV heads split 4 + 4
    # ring all-reduce of 8 tokens x 4,096 x 2 B, twice per layer: 2 (t-1)/t x bytes over one direction of
    # NVLink 3 (600 GB/s bidirectional -> 300 GB/s) at 0.8, plus NCCL's 2-GPU ring latency: 5.6 + 2.0 x 2 = 9.6 us
    # (the line through nccl-tests' 10 / 16.88 / 33.7 us at 2 / 4 / 8 GPUs; above the catalog's 8 us)
    msg = 8 * 4096 * 2
    one = 2 * (2 - 1) / 2 * msg / (300e9 * 0.8) + 9.6e-6
    assert c2.allreduce_s == pytest.approx(2 * QWEN3_LAYERS * one, rel=1e-9)
    assert c1.allreduce_s == 0
    assert c2.time_s == pytest.approx(c2.weights_s + c2.kv_s + c2.allreduce_s, rel=1e-12)


def test_a_steps_terms_are_its_time_split_and_time_alone_gives_the_same_float():
    # the simulator takes a step's time from terms() and a bulk decode run's from time(): both must give the
    # same float, and the six terms must add up to it, memory- or compute-bound, with and without TP
    s2 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                     engine={"name": "vllm", "version": "0.26.0", "args": {"tensor_parallel_size": 2}})
    for setup in (a100_setup(), s2):
        engine = sv.EngineConfig.from_setup(setup)
        cost = sv.cost.CostModel(setup, sv.default_constants(setup), engine)
        for n_dec, ctx, pf, n_seqs in ((1, 1000, 0, 1), (256, 256 * 3000, 0, 256), (8, 8000, 2000, 9), (0, 0, 4096, 1)):
            pf_kv, pairs = (pf, pf * (pf + 1) / 2.0) if pf else (0, 0.0)
            sc = cost.terms(n_dec, ctx, pf, pf_kv, pairs, n_seqs)
            assert sc.time_s == cost.time(n_dec, ctx, pf, pf_kv, pairs, n_seqs)
            parts = (sc.weights_s, sc.kv_s, sc.prefill_compute_s, sc.decode_compute_s, sc.overhead_s, sc.allreduce_s)
            assert sum(parts) == pytest.approx(sc.time_s, rel=1e-12)
            assert min(parts) >= 0
            assert (sc.allreduce_s > 0) == (setup is s2)
        compute_bound = cost.terms(0, 0, 4096, 4096, 4096 * 4097 / 2.0, 1)
        assert compute_bound.weights_s == 0 and compute_bound.prefill_compute_s > compute_bound.decode_compute_s


def test_moe_reads_only_the_experts_the_batch_touches():
    s = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-30b-a3b", engine={"name": "vllm", "version": "0.26.0"})
    m = s.model
    E, k, L = m.num_experts, m.num_experts_per_tok, m.num_moe_layers
    expert_bytes = 3 * m.hidden_size * m.moe_intermediate_size * 2
    bw = 0.8 * s.hardware.hbm_bytes_per_s

    def weights_s(tokens):
        return sv.step_cost(s, ZERO, decode_ctx_tokens=[1] * tokens).weights_s

    w1, w64 = weights_s(1), weights_s(64)
    # one token touches k experts per layer, 64 tokens E (1 - (1 - k/E)^64) of them in expectation
    assert (w64 - w1) * bw == pytest.approx(L * expert_bytes * (E * (1 - (1 - k / E) ** 64) - k), rel=1e-9)
    # and never more than all of them
    assert weights_s(4096) * bw <= (m.param_count() - m.embedding_param_count()) * 2 * (1 + 1e-9)


def test_weight_and_kv_dtypes_change_bytes_only():
    bf16 = a100_setup()
    fp8 = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b", model_overrides={"dtype": "fp8"},
                      engine={"name": "vllm", "version": "0.26.0", "args": {"kv_cache_dtype": "fp8"}})
    h100_bf16 = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b", engine={"name": "vllm", "version": "0.26.0"})
    a = sv.step_cost(h100_bf16, ZERO, decode_ctx_tokens=[2000] * 4)
    b = sv.step_cost(fp8, ZERO, decode_ctx_tokens=[2000] * 4)
    assert b.weights_s == pytest.approx(a.weights_s / 2, rel=1e-12)
    assert b.kv_s == pytest.approx(a.kv_s / 2, rel=1e-12)
    assert bf16.kv_bytes_per_token == QWEN3_KV_PER_TOKEN


# ---------------------------------------------------------------------------------------------------------
# queueing and scheduling
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c", [4, 32])
def test_closed_loop_runs_satisfy_littles_law(a100, a100_engine, c):
    p = sv.simulate(a100, closed(a100, c, 20 * c, input_len=512, output_len=256), engine=a100_engine)
    # L = lambda W: the request rate times the mean time in the system gives back the concurrency
    assert p.request_throughput_req_per_s * p.e2e_mean_ms / 1e3 == pytest.approx(c, rel=0.005)
    w = sv.Workload(input_len=sv.LengthDist(512, "uniform"), output_len=sv.LengthDist(256, "uniform"),
                    num_requests=40 * c, concurrency=c, seed=3)
    p = sv.simulate(a100, w, engine=a100_engine)
    assert p.request_throughput_req_per_s * p.e2e_mean_ms / 1e3 == pytest.approx(c, rel=0.03)


def test_max_num_seqs_makes_the_excess_queue():
    s = tiny_cpu_setup(max_num_seqs=8)
    # the engine's own queue: without the API server's frontend time, which every request spends outside it
    # (and without the clients' turnaround spread, a send mid-step that waits for the step boundary in the queue)
    c0 = sv.default_constants(s).replace(frontend_in_s=0.0, frontend_out_s=0.0, client_jitter_s=0.0)
    at8 = sv.simulate(s, closed(s, 8, 128), constants=c0)
    at16 = sv.simulate(s, closed(s, 16, 256), constants=c0)
    assert at8.max_running_batch == 8 and at16.max_running_batch == 8
    # at 8 clients nothing waits; at 16 half the clients wait: by Little's law on the queue, the mean queue time
    # is the mean service time, half the E2E latency
    assert at8.mean_queue_ms < 0.01 * at8.e2e_mean_ms
    assert at16.mean_queue_ms / at16.e2e_mean_ms == pytest.approx(0.5, abs=0.03)
    assert at16.output_throughput_tok_per_s == pytest.approx(at8.output_throughput_tok_per_s, rel=0.02)
    assert at16.mean_running_batch == pytest.approx(8, rel=0.02)


def test_running_out_of_kv_blocks_preempts_exactly_past_the_block_budget():
    s = tiny_cpu_setup(max_num_seqs=8)
    base = sv.EngineConfig.from_setup(s)
    # each request ends holding ceil((128 + 64 - 1) / 128) = 2 blocks; 8 of them need 16, plus vLLM's null block
    fits = dataclasses.replace(base, num_gpu_blocks=8 * 2 + 1)
    short = dataclasses.replace(base, num_gpu_blocks=8 * 2)
    assert sv.simulate(s, closed(s, 8, 64), engine=fits).preemptions == 0
    p = sv.simulate(s, closed(s, 8, 64), engine=short)
    assert p.preemptions > 0
    assert p.max_kv_usage == 1.0
    assert p.num_requests == 64  # preempted requests are recomputed and finish


def test_v0_without_chunking_stalls_decodes_for_a_whole_prefill_step(a100, a100_engine):
    # 2,000-token prompts arriving at 2 req/s among ~6 running decodes (each stalled gap is >1% of all gaps)
    w = sv.workload_for_point(a100, rate_req_per_s=2.0, num_requests=200, input_len=2000, output_len=200, seed=3)
    c = sv.default_constants(a100)
    v0 = sv.simulate(a100, w, engine=dataclasses.replace(a100_engine, chunked_prefill=False, engine_kind="v0"))
    v1 = sv.simulate(a100, w, engine=a100_engine)
    v1_512 = sv.simulate(a100, w, engine=dataclasses.replace(a100_engine, max_num_batched_tokens=512))
    prefill_step = sv.step_cost(a100, c, prefill_tokens=[(2000, 0)]).time_s
    decode_step = v0.itl_p50_ms / 1e3
    # V0: the decodes wait out a prefill-only step, then take their own decode step
    assert v0.itl_p99_ms / 1e3 == pytest.approx(prefill_step + decode_step, rel=0.03)
    # V1 (2,048-token budget): the prompt fits one step, the decode tokens ride in it: one decode step less
    assert v1.itl_p99_ms / 1e3 == pytest.approx(prefill_step, rel=0.03)
    assert v0.itl_p99_ms - v1.itl_p99_ms == pytest.approx(decode_step * 1e3, rel=0.3)
    # the chunked-prefill dial: a 512-token budget spreads the prompt over 4 steps and cuts the stall ~4x,
    # and pays for it in TTFT
    assert v1_512.itl_p99_ms < 0.35 * v0.itl_p99_ms
    assert v1_512.ttft_p50_ms > v1.ttft_p50_ms


def test_open_loop_at_low_rate_has_almost_no_queueing(a100, a100_engine):
    w = sv.workload_for_point(a100, rate_req_per_s=0.02, num_requests=40, input_len=256, output_len=64, seed=1)
    p = sv.simulate(a100, w, engine=a100_engine)
    # service time ~0.75 s at 0.02 req/s: utilisation ~1.5%; the chance to find the engine busy is that small
    assert p.mean_queue_ms < 0.01 * p.e2e_mean_ms
    lone = sv.simulate(a100, sv.Workload(input_len=sv.LengthDist(256), output_len=sv.LengthDist(64),
                                         num_requests=1, concurrency=1), engine=a100_engine)
    assert p.ttft_p50_ms == pytest.approx(lone.ttft_p50_ms, rel=1e-6)


def test_gamma_burstiness_below_one_raises_ttft_p99(a100, a100_engine):
    kw = dict(rate_req_per_s=4.0, num_requests=300, input_len=1024, output_len=128, seed=7)
    poisson = sv.simulate(a100, sv.workload_for_point(a100, **kw), engine=a100_engine)
    bursty = sv.simulate(a100, sv.workload_for_point(a100, burstiness=0.2, **kw), engine=a100_engine)
    assert bursty.ttft_p99_ms > 1.5 * poisson.ttft_p99_ms
    again = sv.simulate(a100, sv.workload_for_point(a100, burstiness=0.2, **kw), engine=a100_engine)
    assert again == bursty  # seeded


def test_open_loop_in_flight_cap_holds_arrivals_at_the_client(a100, a100_engine):
    w = sv.Workload(input_len=sv.LengthDist(256), output_len=sv.LengthDist(128), num_requests=60,
                    arrival=sv.ArrivalKind.POISSON, rate_req_per_s=200.0, concurrency=4, seed=2)
    p = sv.simulate(a100, w, engine=a100_engine)
    assert p.max_running_batch == 4
    # the wait at the client is not the engine's queue: 4 in flight against max_num_seqs 256 never queue there
    # (a trial's `predict --simulate --rate 10 --concurrency 4` printed queue 62,547 ms, the client's backlog), and
    # TTFT runs from the send, as vllm bench serve's does, not from the Poisson arrival. With async scheduling (the
    # fixture's vLLM 0.26) a request sent while the engine decodes waits for the step already scheduled: under one
    # decode step (~8 ms here), never the backlog's seconds
    assert p.mean_queue_ms < p.tpot_p50_ms
    assert p.ttft_p50_ms < 200.0
    sync = sv.simulate(a100, w, engine=dataclasses.replace(a100_engine, async_scheduling=False))
    assert sync.mean_queue_ms < 1.0


def test_prefix_cache_hits_skip_prefill_compute(a100, a100_engine):
    cold = sv.simulate(a100, closed(a100, 1, 4), engine=a100_engine)
    warm = sv.simulate(a100, closed(a100, 1, 4, prefix_hit_rate=0.5), engine=a100_engine)
    # half of the 1,024-token prompt (32 whole blocks of 16) comes from the cache: the prefill computes 512 tokens
    # attending over 1,024 keys at most
    c = sv.default_constants(a100)
    # a lone request: the API server's frontend_in_s, one prefill step, then frontend_out_s to the client
    expect = (c.frontend_in_s + sv.step_cost(a100, c, prefill_tokens=[(512, 512)]).time_s + c.frontend_out_s)
    assert warm.ttft_p50_ms == pytest.approx(expect * 1e3, rel=1e-9)
    front_ms = (c.frontend_in_s + c.frontend_out_s) * 1e3
    assert warm.ttft_p50_ms - front_ms < 0.6 * (cold.ttft_p50_ms - front_ms)
    with pytest.raises(SimulationError):
        sv.simulate(a100, closed(a100, 1, 4, prefix_hit_rate=0.5),
                    engine=dataclasses.replace(a100_engine, enable_prefix_caching=False))


# ---------------------------------------------------------------------------------------------------------
# bulk advancing = step by step
# ---------------------------------------------------------------------------------------------------------

SMALL_CASES = [
    dict(c=1, n=5, inp=300, out=200),
    dict(c=3, n=12, inp=300, out=150),
    dict(c=16, n=48, inp=512, out=128),
    dict(c=12, n=40, inp=("uniform", 300), out=("normal", 150)),
    dict(rate=6.0, n=50, inp=256, out=128),
    dict(rate=6.0, n=50, inp=256, out=128, burst=0.3),
    dict(c=16, n=40, inp=512, out=256, blocks=200),
    dict(c=16, n=40, inp=512, out=256, blocks=200, v0=True),
    dict(c=16, n=40, inp=512, out=128, v0=True),
    # V1 with chunked prefill off (a 2,048-token budget): prompts over the budget the decodes leave wait
    dict(c=16, n=40, inp=("uniform", 900), out=("normal", 128), v1_unchunked="break"),
    dict(c=16, n=40, inp=("uniform", 900), out=("normal", 128), v1_unchunked="skip"),
    dict(rate=8.0, n=50, inp=("uniform", 900), out=128, v1_unchunked="break"),
    dict(c=16, n=40, inp=512, out=256, blocks=200, v1_unchunked="break"),
    dict(c=8, n=24, inp=512, out=128, hit=0.5),
    dict(rate=50.0, n=40, inp=256, out=64, cap=5),
    # the a100 fixture's vLLM 0.26 schedules asynchronously (EngineConfig.async_scheduling): the synchronous
    # scheduler's admissions too
    dict(rate=6.0, n=50, inp=256, out=128, sync=True),
    dict(c=12, n=40, inp=("uniform", 300), out=("normal", 150), sync=True),
    dict(c=16, n=40, inp=512, out=256, blocks=200, sync=True),
    # the prefix-cache pool block by block (model/serving/kv_pool.py): a shared prefix, with preemptions whose
    # requests find what is left of their own blocks when they resume
    dict(c=16, n=40, inp=512, out=256, blocks=200, prefix=300),
    dict(c=16, n=40, inp=("uniform", 600), out=("normal", 200), blocks=160, prefix=200, sync=True),
    dict(rate=20.0, n=60, inp=("uniform", 400), out=128, blocks=120, prefix=96),
]


def _length(x):
    if isinstance(x, tuple):
        kind, mean = x
        return sv.LengthDist(mean, kind, std=mean / 4 if kind == "normal" else None)
    return sv.LengthDist(x)


@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_bulk_decode_runs_equal_the_step_by_step_reference(a100, a100_engine, case):
    eng = a100_engine
    if "blocks" in case:
        eng = dataclasses.replace(eng, num_gpu_blocks=case["blocks"])
    if case.get("v0"):
        eng = dataclasses.replace(eng, chunked_prefill=False, engine_kind="v0")
    if case.get("v1_unchunked"):
        eng = dataclasses.replace(eng, chunked_prefill=False, skip_long_prompts=case["v1_unchunked"] == "skip")
    if case.get("sync"):
        eng = dataclasses.replace(eng, async_scheduling=False)
    if "rate" in case:
        kind = sv.ArrivalKind.GAMMA if "burst" in case else sv.ArrivalKind.POISSON
        w = sv.Workload(input_len=_length(case["inp"]), output_len=_length(case["out"]), num_requests=case["n"],
                        arrival=kind, rate_req_per_s=case["rate"], burstiness=case.get("burst", 1.0), seed=5,
                        concurrency=case.get("cap"), shared_prefix_len=case.get("prefix", 0))
    else:
        w = sv.Workload(input_len=_length(case["inp"]), output_len=_length(case["out"]), num_requests=case["n"],
                        concurrency=case["c"], seed=5, prefix_hit_rate=case.get("hit", 0.0),
                        shared_prefix_len=case.get("prefix", 0))
    fast = sv.simulate(a100, w, engine=eng).to_dict()
    slow = sv.simulate(a100, w, engine=eng, _bulk=False).to_dict()
    fs, ss = fast.pop("time_shares"), slow.pop("time_shares")
    assert fast == slow  # every metric identical, to the last bit
    assert fs == pytest.approx(ss, rel=1e-9, abs=1e-15)
    if "blocks" in case:
        assert fast["preemptions"] > 0


# ---------------------------------------------------------------------------------------------------------
# the API around it
# ---------------------------------------------------------------------------------------------------------


def test_constants_round_trip_and_validate(a100):
    c = sv.default_constants(a100)
    assert sv.ServingConstants.from_dict(c.to_dict()) == c
    assert c.replace(step_overhead_s=2e-3).step_overhead_s == 2e-3
    assert set(sv.ServingConstants.FIELDS_FITTABLE) <= set(c.to_dict())
    for bad in ({"hbm_efficiency": 1.5}, {"step_overhead_s": -1.0}, {"no_such_constant": 1.0}):
        with pytest.raises(SimulationError):
            c.replace(**bad)
    cpu = sv.default_constants(tiny_cpu_setup())
    assert cpu.host_mem_bytes_per_s and cpu.host_peak_flop_per_s  # the cpu pseudo-device has no figures


def test_workload_validation_and_sampling():
    with pytest.raises(SimulationError):
        sv.Workload(input_len=sv.LengthDist(10), output_len=sv.LengthDist(10), num_requests=3)  # no concurrency
    with pytest.raises(SimulationError):
        sv.Workload(input_len=sv.LengthDist(10), output_len=sv.LengthDist(10), num_requests=3,
                    arrival=sv.ArrivalKind.POISSON)
    import random

    d = sv.LengthDist(100, "uniform")
    xs = d.sample(random.Random(1), 2000)
    assert min(xs) >= 50 and max(xs) <= 150 and abs(sum(xs) / len(xs) - 100) < 3
    n = sv.LengthDist(100, "normal", std=10.0).sample(random.Random(1), 2000)
    assert abs(sum(n) / len(n) - 100) < 1.5


def test_percentiles_match_numpy_linear_interpolation():
    np = pytest.importorskip("numpy")
    vals = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    for q in (0, 50, 90, 99, 100):
        assert sv._percentile(sorted(vals), q) == pytest.approx(float(np.percentile(vals, q)))
        pairs = [(1.0, 2), (2.0, 1), (3.0, 1), (4.0, 1), (5.0, 1), (6.0, 1), (9.0, 1)]
        assert sv._weighted_percentile(pairs, q) == pytest.approx(float(np.percentile(vals, q)))


def test_time_shares_name_the_dominant_term(a100, a100_engine):
    p1 = sv.simulate(a100, closed(a100, 1, 2), engine=a100_engine)
    assert max(p1.time_shares, key=p1.time_shares.get) == "weights"
    assert sum(p1.time_shares.values()) == pytest.approx(1.0)
    long_ctx = sv.simulate(a100, closed(a100, 128, 128, input_len=8000, output_len=64), engine=a100_engine)
    assert long_ctx.time_shares["prefill_compute"] > long_ctx.time_shares["weights"]


def test_cli_predict_simulate_prints_the_sweep_and_the_measured_values(capsys):
    from pytest_roofline import cli

    rc = cli.main(["predict", "--simulate", "predictions/day3.yaml", "--json",
                   "--results", "predictions/recorded/day3-2026-07-31.results.json"])
    assert rc == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    rows = [r for r in rows if r["setup_differs_from_file"] == {}]  # the file's setup (day3.yaml has an A100 PCIe one)
    assert [r["concurrency"] for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128]
    for r in rows:
        for key in ("output_throughput_tok_per_s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "itl_p99_ms"):
            assert math.isfinite(r[key])
    # the notebook's measured table rides along, with the per-point error
    assert rows[-1]["measured"]["output_throughput_tok_per_s"] == 3088.2
    # relative to the simulated value, the prediction: (measured − predicted) ÷ predicted
    assert rows[-1]["relative_error"]["output_throughput_tok_per_s"] == pytest.approx(
        3088.2 / rows[-1]["output_throughput_tok_per_s"] - 1)
    # every simulated value carries the model's band (model/bands.py)
    lo, hi = rows[-1]["bands"]["tpot_p50_ms"]
    assert lo < hi and lo > 0
    rc = cli.main(["predict", "--simulate", "--hardware", "a100-sxm4-80gb", "--model", "qwen3-8b",
                   "--input-len", "512", "--output-len", "64", "--concurrency", "1,4"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "tok/s" in out and len([ln for ln in out.splitlines() if ln.strip().startswith(("1 ", "4 "))]) == 2
    assert len([ln for ln in out.splitlines() if ln.strip().startswith("band: ")]) == 2


def test_cli_predict_simulate_shows_a_prefill_bound_point_with_its_sources_range_not_a_band(capsys, prefill_one_source):
    from pytest_roofline import cli
    from pytest_roofline.model import bands
    # 4,000-token prompts at C = 64 on an H100: the model spends ~60% of its step time on prefill (prefill-bound);
    # at C = 1 the weights dominate and the band shows
    rc = cli.main(["predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-14b",
                   "--input-len", "4000", "--output-len", "200", "--concurrency", "1,64"])
    assert rc == 0
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines()]
    assert len([ln for ln in lines if ln.startswith("band: ")]) == 1
    notes = [ln for ln in lines if ln.startswith("no band: prefill-bound work on GPUs")]
    assert len(notes) == 1  # one line for the three metrics that share the reason
    r = bands.load_observed_ranges()["output_throughput_tok_per_s|*|gpu-prefill"]
    assert f"agg tok/s {r.lo:.2f}-{r.hi:.2f}" in notes[0] and "(gpustack-qwen3-bursts)" in notes[0]


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_trace_records_every_step_and_the_kv_pool_is_per_rank(a100, a100_engine, async_scheduling):
    trace: list[sv.StepRecord] = []
    eng = dataclasses.replace(a100_engine, async_scheduling=async_scheduling)
    p = sv.simulate(a100, closed(a100, 2, 2, input_len=64, output_len=8), engine=eng, trace=trace)
    # the API server hands the two prompts over 2 ms apart (one at a time): the first prefills alone, the second
    # in the next step beside the first's decode (async scheduling: the step after, the next one was scheduled when
    # the first's prefill was launched, before the second arrived); then both decode until the first has its 8
    # tokens, then the second alone: 8 tokens each
    lag = int(async_scheduling)
    assert len(trace) == p.steps == 9 + lag
    assert [(r.prefill_tokens, r.decode_seqs) for r in trace[:2 + lag]] == [(64, 0)] + [(0, 1)] * lag + [(64, 1)]
    assert all(r.decode_seqs == 2 and r.prefill_tokens == 0 for r in trace[2 + lag:8])
    assert all((r.prefill_tokens, r.decode_seqs) == (0, 1) for r in trace[8:])
    # at step 8 the first computes its 8th token (71 in the cache, a token behind) and the second its 6th (async)
    # or 7th: 5 blocks each either way
    assert trace[7].used_blocks == 2 * math.ceil((64 + 8 - 1) / 16)
    assert trace[8].used_blocks == math.ceil((64 + 8 - 1) / 16)  # the first finished and freed its blocks
    # the steps fill the point's duration but for the first request's frontend_in_s and the last token's
    # frontend_out_s, when the engine has nothing to do
    c = sv.default_constants(a100)
    assert sum(r.time_s for r in trace) == pytest.approx(p.duration_s - c.frontend_in_s - c.frontend_out_s,
                                                         rel=1e-12)
    # TP=2: each rank holds half the weights and half the KV heads, so its pool holds more blocks
    s2 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                     engine={"name": "vllm", "version": "0.26.0", "args": {"tensor_parallel_size": 2}})
    acc1, acc2 = sv.kv_accounting(a100), sv.kv_accounting(s2)
    assert acc2.weight_bytes == pytest.approx(acc1.weight_bytes / 2)
    assert acc2.bytes_per_block == acc1.bytes_per_block // 2
    override = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                           engine={"name": "vllm", "version": "0.26.0", "args": {"num_gpu_blocks_override": 512}})
    assert sv.EngineConfig.from_setup(override).num_gpu_blocks == 512


# ---------------------------------------------------------------------------------------------------------
# the open-loop schedule is the load generator's (model/workload.py, one function for both)
# ---------------------------------------------------------------------------------------------------------


def _loadgen_offsets(rate, burstiness, seed, point_id, n):
    from pytest_roofline.measure.loadgen import arrival_offsets
    from pytest_roofline.measure.loadgen._records import LoadSpec

    spec = LoadSpec(model="m", token_id_range=(10, 1000), mode="open", rate_req_s=rate, burstiness=burstiness,
                    num_requests=n, seed=seed, point_id=point_id)
    spec.validate()
    return [float(x) for x in arrival_offsets(spec)]


@pytest.mark.parametrize("rate,burstiness,seed,point_id", [(2.0, 1.0, 0, "open-r2"), (8.0, 0.3, 5, "open-r8")])
def test_simulator_arrivals_are_the_load_generators_send_times(a100, rate, burstiness, seed, point_id):
    sent = _loadgen_offsets(rate, burstiness, seed, point_id, 120)
    w = sv.workload_for_point(a100, rate_req_per_s=rate, burstiness=burstiness, num_requests=120, seed=seed,
                              point_id=point_id)
    assert sv._arrival_times(w) == sent  # the same floats, not the same distribution
    # another point id (or seed) is another sample: the schedule is keyed by both, as the load generator's
    other = sv.workload_for_point(a100, rate_req_per_s=rate, burstiness=burstiness, num_requests=120, seed=seed,
                                  point_id=point_id + "x")
    assert sv._arrival_times(other) != sent


def test_simulated_open_loop_point_runs_on_the_sent_schedule(a100, a100_engine):
    # at 0.05 req/s a 256-in / 8-out request (~0.1 s) almost never meets another, so the simulated run ends one
    # lone request's E2E after the load generator's last send time
    n, seed, pid = 12, 3, "open-r0.05"
    sent = _loadgen_offsets(0.05, 1.0, seed, pid, n)
    assert all(b - a > 1.0 for a, b in zip(sent, sent[1:]))  # no overlaps in this sample
    w = sv.workload_for_point(a100, rate_req_per_s=0.05, num_requests=n, input_len=256, output_len=8, seed=seed,
                              point_id=pid)
    p = sv.simulate(a100, w, engine=a100_engine)
    lone = sv.simulate(a100, sv.Workload(input_len=sv.LengthDist(256), output_len=sv.LengthDist(8), num_requests=1,
                                         concurrency=1), engine=a100_engine)
    assert p.duration_s == pytest.approx(sent[-1] + lone.e2e_mean_ms / 1e3, rel=1e-9)


def test_past_the_ridge_a_decode_step_is_compute_bound_so_weights_leave_the_time_shares(a100, a100_engine):
    # The day3 preemption hunt's C = 256 point shows weights ~1% and decode compute ~20% of the time. That is the
    # roofline, not a bookkeeping slip: a decode step's linear layers read the weights once (15.14 GB at 80% of
    # 2,039 GB/s) and do 2 x P_body FLOPs per token (+ the lm_head per sequence) at 75% of 312 TFLOP/s, so past
    # B* decodes the FLOPs take longer than the read, and the step's linear part is charged to compute.
    t_weights = QWEN3_STREAMED_BYTES / (0.8 * A100_BW)
    flop_per_decode = QWEN3_FLOP_PER_TOKEN_BODY + QWEN3_FLOP_HEAD
    b_star = t_weights * 0.75 * A100_PEAK / flop_per_decode  # ~136 sequences
    assert 120 < b_star < 150
    below, above = 128, 224  # C = 128's running batch; C = 256's mean running batch of decodes
    ctx = 1500
    lo = sv.step_cost(a100, ZERO, decode_ctx_tokens=[ctx] * below, engine=a100_engine)
    hi = sv.step_cost(a100, ZERO, decode_ctx_tokens=[ctx] * above, engine=a100_engine)
    assert lo.weights_s == pytest.approx(t_weights, rel=1e-9) and lo.decode_compute_s == 0.0
    assert hi.weights_s == 0.0
    assert hi.decode_compute_s == pytest.approx(above * flop_per_decode / (0.75 * A100_PEAK), rel=1e-9)
    # the KV read (147,456 B per token of context) is bandwidth-bound in both, and is the largest term
    assert hi.kv_s == pytest.approx(above * ctx * QWEN3_KV_PER_TOKEN / (0.8 * A100_BW), rel=1e-9)
    assert hi.kv_s > hi.decode_compute_s
    # in the simulated sweep point the same happens: most of C = 256's steps run > B* decodes
    trace: list = []
    p = sv.simulate(a100, closed(a100, 256, 1024), engine=a100_engine, trace=trace)
    past = sum(r.time_s for r in trace if r.decode_seqs > b_star and r.prefill_tokens == 0)
    assert past > 0.4 * sum(r.time_s for r in trace)
    assert p.time_shares["weights"] < 0.05 < p.time_shares["decode_compute"]
    assert p.time_shares["kv"] == max(p.time_shares.values())


def test_requests_held_counts_whole_requests_in_the_usable_blocks():
    # 11 blocks of 16 tokens, one of them vLLM's null block: 10 usable; a 16-token request takes 1 block, a
    # 17-token one 2, a 161-token one 11 (more than the pool)
    eng = sv.EngineConfig(max_num_seqs=8, max_num_batched_tokens=512, block_size=16, num_gpu_blocks=11)
    assert eng.usable_blocks == 10
    assert (eng.requests_held(16), eng.requests_held(17), eng.requests_held(160), eng.requests_held(161)) == (
        10, 5, 1, 0)
