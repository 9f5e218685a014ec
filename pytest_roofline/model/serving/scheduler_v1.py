"""vLLM V1's scheduler (``vllm/v1/core/sched/scheduler.py``, FCFS policy), with chunked prefill on or off.

Each step has a token budget ``max_num_batched_tokens``.  RUNNING requests are served first, in order: each
gets ``min(tokens it still needs, budget)`` new tokens (1 for a decoding request, the rest of its prompt for a
prefilling one: chunked prefill).  When the KV pool cannot give the blocks, the *last* running request is
preempted until the allocation fits or the request itself was preempted.  Then, only if nothing was
preempted in this step, WAITING requests are admitted in FCFS order while budget, ``max_num_seqs`` and blocks
allow.  With ``EngineConfig.reserve_full_prompt`` (vLLM 0.32's ``scheduler_reserve_full_isl``, on by default:
``vllm/config/scheduler.py``; ``KVCacheManager.allocate_slots(full_sequence_must_fit=...)``), a waiting request is
admitted only when the free blocks could hold its whole prompt (and any output it recomputes), though only the
first chunk's blocks are taken; found by the step-by-step comparison with vLLM's own Scheduler
(tests/integration/test_scheduler_equivalence.py).

With chunked prefill off (``EngineConfig.chunked_prefill`` False on a V1 engine) the same scheduler runs, decodes
first, but a waiting prompt is never split: one whose remaining tokens exceed the step's remaining budget is not
admitted that step (``if not enable_chunked_prefill and num_new_tokens > token_budget``).  Up to 0.11 vLLM skips it
and tries the next waiting request, putting it back at the head of the queue afterwards (``continue``,
``EngineConfig.skip_long_prompts``); from 0.12 it stops admitting for the step (``break``: PR #28911).  vLLM refuses
to start with chunked prefill off and ``max_num_batched_tokens < max_model_len`` (``SchedulerConfig``), so every
prompt fits an empty step's budget.
"""

from __future__ import annotations

from pytest_roofline.model.serving.scheduler import Batch, Request, SchedulerState

__all__ = ["V1Scheduler"]


class V1Scheduler:
    """Running requests first (chunked), then waiting ones if nothing was preempted."""

    def schedule(self, state: SchedulerState) -> Batch:
        budget = state.engine.max_num_batched_tokens
        sched: Batch = []
        preempted = False
        running = state.running
        bs = state.bs
        i = 0
        while i < len(running) and budget > 0:
            req = running[i]
            if req.finishing:  # async: done, its output not processed yet; it keeps its slot (vLLM's AsyncScheduler)
                i += 1
                continue
            n_new = req.prompt + req.produced - req.computed
            if n_new > budget:
                n_new = budget
            # fast path: the tokens fit the blocks the request holds (most decode steps)
            if req.computed + n_new <= req.blocks * bs:
                sched.append((req, n_new))
                budget -= n_new
                i += 1
                continue
            ok = True
            while not state.alloc(req, n_new):
                victim = state.preempt_last()
                preempted = True
                if victim is req:
                    ok = False
                    break
            if not ok:
                break
            sched.append((req, n_new))
            budget -= n_new
            i += 1
        if not preempted:
            chunked = state.engine.chunked_prefill
            skip = not chunked and state.engine.skip_long_prompts
            skipped: list[Request] = []  # vLLM's skipped_waiting_requests: back at the queue's head after the step
            while state.waiting and budget > 0 and len(state.running) < state.engine.max_num_seqs:
                req = state.waiting[0]
                if req.blocks == 0:  # holds nothing: its hits as the prefix cache holds them now
                    req.computed = state.initial_computed(req)
                n_new = req.prompt + req.produced - req.computed
                if not chunked and n_new > budget:
                    if not skip:
                        break
                    skipped.append(state.waiting.popleft())
                    continue
                n_new = min(n_new, budget)
                if state.engine.reserve_full_prompt:
                    if state.admission_blocks(req, req.prompt + req.produced) > state.free:
                        break
                if not state.admit(req, n_new, sched):
                    break
                budget -= n_new
            state.waiting.extendleft(reversed(skipped))
        return sched
