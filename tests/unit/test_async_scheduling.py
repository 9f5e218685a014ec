"""vLLM's async scheduling in the serving model (issue 22's TTFT mechanisms): from vLLM 0.14.0 the CUDA engine core
schedules step k + 1 as soon as it launches step k (``max_concurrent_batches`` 2, vllm/config/vllm.py;
``EngineCore.step_with_batch_queue``, vllm/v1/engine/core.py), so a request that reaches a busy engine during step k
is first scheduled into step k + 2, one step later than a synchronous scheduler would take it; an idle engine
schedules it at once. The known answer is that rule, checked step by step on the simulator's own trace."""

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
    assert sv.simulate(setup, alone, engine=eng).ttft_p50_ms == pytest.approx(
        sv.simulate(setup, alone, engine=sync).ttft_p50_ms, rel=1e-9)  # one client: the engine is idle at each send
    loaded = sv.workload_for_point(setup, rate_req_per_s=20.0, num_requests=400, seed=1, point_id="r20")
    a, s = sv.simulate(setup, loaded, engine=eng), sv.simulate(setup, loaded, engine=sync)
    # the extra wait is one step already scheduled: a decode step of the running batch, about the TPOT
    assert 0.6 * a.tpot_p50_ms < a.ttft_p50_ms - s.ttft_p50_ms < 1.4 * a.tpot_p50_ms
