"""vLLM's async scheduling in the serving model (issue 22's TTFT mechanisms): from vLLM 0.14.0 the CUDA engine core
schedules step k + 1 as soon as it launches step k (``max_concurrent_batches`` 2, vllm/config/vllm.py;
``EngineCore.step_with_batch_queue``, vllm/v1/engine/core.py), so a request that reaches a busy engine during step k
is first scheduled into step k + 2, one step later than a synchronous scheduler would take it; an idle engine
schedules it at once. The known answer is that rule, checked step by step on the simulator's own trace.

The same batch queue overlaps the engine core's CPU work with the GPU: it schedules step k + 1 while step k runs and
processes step k's outputs while step k + 1 runs, so a step takes the longer of the GPU's work and the per-sequence
CPU work (``per_seq_overhead_s`` x sequences), not their sum (model/serving/cost.py)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_roofline.model import serving as sv
from pytest_roofline.model.serving.point import arrival_times
from pytest_roofline.model.setup import build_setup


def _setup(version: str, hardware: str = "h100-sxm"):
    return build_setup(hardware_ref=hardware, model_ref="llama-3.1-8b",
                       engine={"name": "vllm", "version": version},
                       workload={"input_len": 512, "output_len": 64})


@pytest.mark.parametrize(("version", "on"), [("0.11.0", False), ("0.13.0", False), ("0.14.0", True),
                                             ("0.15.1", True), ("0.32.0", True)])
def test_async_scheduling_is_the_default_from_vllm_0_14_on_cuda(version: str, on: bool):
    assert sv.EngineConfig.from_setup(_setup(version)).async_scheduling is on


def test_the_cpu_engine_and_v0_schedule_synchronously():
    cpu = build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                      engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30},
                      workload={"input_len": 128, "output_len": 32})
    assert sv.EngineConfig.from_setup(cpu).async_scheduling is False  # vLLM's CPU platform forces it off
    assert sv.EngineConfig.from_setup(_setup("0.5.4")).async_scheduling is False  # V0: no batch queue


def _prefill_steps(setup, engine, workload):
    """(each request's ready time, the index of the step that prefilled it, the trace) for a low-rate open loop
    whose prompts each fit one step: the prefill steps, in order, are the requests', in arrival order."""
    trace: list = []
    sv.simulate(setup, workload, engine=engine, trace=trace)
    c = sv.default_constants(setup)
    ready = [t + c.frontend_in_s for t in arrival_times(workload)]  # at 4 req/s the API server never queues
    steps = [i for i, s in enumerate(trace) if s.prefill_tokens > 0]
    assert len(steps) == len(ready)
    return ready, steps, trace


def test_a_request_reaching_a_busy_engine_joins_one_step_later():
    setup = _setup("0.15.1")
    eng = sv.EngineConfig.from_setup(setup)
    w = sv.workload_for_point(setup, rate_req_per_s=4.0, num_requests=40, seed=3, point_id="r4")
    ready, steps, trace = _prefill_steps(setup, eng, w)
    r_sync, steps_sync, trace_sync = _prefill_steps(setup, dataclasses.replace(eng, async_scheduling=False), w)
    busy = delayed = 0
    for t, k in zip(ready, steps, strict=True):
        prev_end = trace[k - 1].start_s + trace[k - 1].time_s if k > 0 else -1.0
        if k == 0 or prev_end < t:  # the engine was idle when it arrived: scheduled at once
            assert trace[k].start_s == pytest.approx(t)
            continue
        busy += 1
        # async: the first step whose predecessor started at or after the arrival (it was scheduled then)
        assert trace[k - 1].start_s >= t and (k < 2 or trace[k - 2].start_s < t)
        delayed += 1
    for t, k in zip(r_sync, steps_sync, strict=True):
        # synchronous: the first step that starts at or after the arrival
        assert trace_sync[k].start_s >= t and (k == 0 or trace_sync[k - 1].start_s < t)
    assert busy == delayed and busy >= 10  # most of the 40 arrive while others decode (64 tokens, ~0.4 s each)


def test_async_adds_about_one_step_to_ttft_under_load_and_nothing_alone():
    setup = _setup("0.15.1")
    eng = sv.EngineConfig.from_setup(setup)
    sync = dataclasses.replace(eng, async_scheduling=False)
    alone = sv.workload_for_point(setup, concurrency=1, num_requests=8)
    # one client: the engine is idle at each send, so the request is scheduled at once either way; its prefill step
    # differs only by the one sequence's CPU work, which the async engine does during the GPU's step (10 us)
    per_seq_ms = sv.default_constants(setup).per_seq_overhead_s * 1e3
    assert sv.simulate(setup, alone, engine=eng).ttft_p50_ms == pytest.approx(
        sv.simulate(setup, alone, engine=sync).ttft_p50_ms - per_seq_ms, rel=1e-9)
    loaded = sv.workload_for_point(setup, rate_req_per_s=20.0, num_requests=400, seed=1, point_id="r20")
    a, s = sv.simulate(setup, loaded, engine=eng), sv.simulate(setup, loaded, engine=sync)
    # the extra wait is one step already scheduled: a decode step of the running batch, about the TPOT
    assert 0.6 * a.tpot_p50_ms < a.ttft_p50_ms - s.ttft_p50_ms < 1.4 * a.tpot_p50_ms


def test_async_scheduling_hides_the_per_sequence_cpu_work_behind_the_gpu_step():
    """The known answer of the overlap: a step of 64 decoding sequences costs the GPU's part (weights, KV, kernels,
    the per-step overhead) plus 64 x per_seq_overhead_s on a synchronous engine; on an async one, the longer of the
    two: the GPU's part while the CPU work is shorter (64 x 10 us = 0.64 ms against a ~6 ms step), the CPU work
    alone once it is longer (64 x 1 ms = 64 ms)."""
    setup = _setup("0.15.1")
    eng = sv.EngineConfig.from_setup(setup)
    sync = dataclasses.replace(eng, async_scheduling=False)
    c = sv.default_constants(setup)
    assert c.per_seq_overhead_s == pytest.approx(10e-6)
    ctx = [1000] * 64
    s_sync = sv.step_cost(setup, c, decode_ctx_tokens=ctx, engine=sync)
    gpu_s = s_sync.time_s - 64 * c.per_seq_overhead_s
    assert 64 * c.per_seq_overhead_s < gpu_s
    s_async = sv.step_cost(setup, c, decode_ctx_tokens=ctx, engine=eng)
    assert s_async.time_s == pytest.approx(gpu_s, rel=1e-12)
    assert sv.step_cost(setup, c, decode_ctx_tokens=ctx).time_s == s_async.time_s  # the setup's own engine: async
    # the terms still add up to the step time, the hidden work in none of them
    terms = (s_async.weights_s + s_async.kv_s + s_async.prefill_compute_s + s_async.decode_compute_s
             + s_async.overhead_s + s_async.allreduce_s)
    assert terms == pytest.approx(s_async.time_s, rel=1e-12)
    slow = c.replace(per_seq_overhead_s=1e-3)  # CPU work 64 ms, longer than the GPU's part: the step is CPU-bound
    assert sv.step_cost(setup, slow, decode_ctx_tokens=ctx, engine=eng).time_s == pytest.approx(64e-3, rel=1e-12)
    assert sv.step_cost(setup, slow, decode_ctx_tokens=ctx, engine=sync).time_s == pytest.approx(gpu_s + 64e-3,
                                                                                                 rel=1e-12)


def test_the_overlap_shortens_a_static_batchs_tpot_by_the_hidden_cpu_work():
    """64 requests sent at once (no frontend, no jitter: they reach the engine together and each client sends one)
    are prefilled and then decode as one batch of 64, so an async engine's decode steps are 64 x per_seq_overhead_s
    shorter than a synchronous one's: 0.64 ms of each, the TPOT p50 difference within 5 %. (In a closed loop that
    keeps sending, the one-step scheduling lag also moves where the prefills fall, and the difference is larger.)"""
    setup = _setup("0.15.1")
    eng = sv.EngineConfig.from_setup(setup)
    sync = dataclasses.replace(eng, async_scheduling=False)
    c = sv.default_constants(setup).replace(frontend_in_s=0.0, client_jitter_s=0.0)
    w = sv.workload_for_point(setup, concurrency=64, num_requests=64)
    a, s = sv.simulate(setup, w, engine=eng, constants=c), sv.simulate(setup, w, engine=sync, constants=c)
    assert s.tpot_p50_ms - a.tpot_p50_ms == pytest.approx(64 * c.per_seq_overhead_s * 1e3, rel=0.05)
    none = c.replace(per_seq_overhead_s=0.0)  # without CPU work to hide, the two engines decode alike
    assert (sv.simulate(setup, w, engine=sync, constants=none).tpot_p50_ms
            == pytest.approx(sv.simulate(setup, w, engine=eng, constants=none).tpot_p50_ms, rel=1e-9))
