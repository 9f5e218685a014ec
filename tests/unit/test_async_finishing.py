"""With async scheduling (vLLM >= 0.14 on a GPU) the engine core schedules the next step before it processes a
step's outputs (vllm/v1/engine/core.py ``step_with_batch_queue``), so a request whose last token a step computed
still holds its slot and blocks when the next step is scheduled (vLLM's ``AsyncScheduler``; checked step by step in
tests/integration/test_scheduler_equivalence.py). Known answer, max_num_seqs 2 and three 16-token prompts of 2, 10
and 2 output tokens: r0 and r1 prefill in step 1 and decode in step 2, where r0 ends; synchronously r2 joins step 3;
asynchronously step 3 is scheduled while r0 still holds its slot, so r2 joins step 4."""

from __future__ import annotations

import pytest

from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup
from pytest_roofline.model.workload import LengthDist


def _steps(asynchronous: bool) -> list[list[tuple[int, int]]]:
    setup = build_setup(hardware_ref="cpu", model_ref="roofline-tiny", engine={"name": "vllm", "version": "0.32.0"})
    eng = sv.EngineConfig(max_num_seqs=2, max_num_batched_tokens=512, block_size=16, num_gpu_blocks=64,
                          chunked_prefill=True, enable_prefix_caching=False, engine_kind="v1",
                          skip_long_prompts=False, async_scheduling=asynchronous)
    w = sv.Workload(input_len=LengthDist(1, "file", values=(16, 16, 16), order="sequential"),
                    output_len=LengthDist(1, "file", values=(2, 10, 2), order="sequential"),
                    num_requests=3, concurrency=3)
    sim = sv._Sim(setup, w, eng, sv.default_constants(setup).replace(frontend_in_s=0.0, frontend_out_s=0.0),
                  False, [])
    steps: list[list[tuple[int, int]]] = []
    policy = sim.scheduler.schedule

    def recorded(state):
        batch = policy(state)
        if batch:
            steps.append(sorted((r.idx, n) for r, n in batch))
        return batch

    sim.scheduler.schedule = recorded  # type: ignore[method-assign]
    sim.run()
    return steps


@pytest.mark.parametrize(("asynchronous", "third", "fourth"), [
    (False, [(1, 1), (2, 16)], [(1, 1), (2, 1)]),
    (True, [(1, 1)], [(1, 1), (2, 16)]),
])
def test_a_finished_request_holds_its_slot_through_the_next_schedule_when_async(asynchronous, third, fourth):
    steps = _steps(asynchronous)
    assert steps[:2] == [[(0, 16), (1, 16)], [(0, 1), (1, 1)]]
    assert steps[2] == third and steps[3] == fourth
