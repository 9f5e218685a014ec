"""The 0.5-era vLLM V0 default scheduler (``chunked_prefill=False``): whole prefills or decodes.

A step either runs whole prefills only (waiting requests first, as many whole prompts as fit the budget
``max_num_batched_tokens``; a prompt longer than the budget runs alone) or decodes only; a prompt is never split
and decodes wait while prefills run. A decode that cannot get its block preempts the last running request.
"""

from __future__ import annotations

from pytest_roofline.model.serving.scheduler import Batch, SchedulerState

__all__ = ["V0Scheduler"]


class V0Scheduler:
    """Whole prefills first; a step with prefills runs no decodes."""

    def schedule(self, state: SchedulerState) -> Batch:
        budget = state.engine.max_num_batched_tokens
        sched: Batch = []
        # prefills first, whole prompts only; a step with prefills runs no decodes
        while state.waiting and len(state.running) < state.engine.max_num_seqs:
            req = state.waiting[0]
            if req.computed == 0:
                req.computed = state.initial_computed(req)
            n_new = req.prompt + req.produced - req.computed
            if n_new > budget and sched:
                break
            if not state.admit(req, n_new, sched):
                break
            budget -= n_new
            if budget <= 0:
                break
        if sched:
            return sched
        i = 0
        while i < len(state.running):
            req = state.running[i]
            ok = True
            while not state.alloc(req, 1):
                victim = state.preempt_last()
                if victim is req:
                    ok = False
                    break
            if not ok:
                break
            sched.append((req, 1))
            i += 1
        return sched
