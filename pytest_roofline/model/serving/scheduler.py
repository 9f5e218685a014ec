"""The scheduler contract: a policy picks, each engine step, which requests run and how many new tokens each
computes (``Scheduler.schedule(state) -> Batch``), over the simulator's queues and KV block pool
(``SchedulerState``). One policy per module: ``scheduler_v1.V1Scheduler`` (vLLM V1, chunked prefill on or off) and
``scheduler_v0.V0Scheduler`` (whole prefills or decodes, the 0.5-era V0 default); the simulator takes the engine's
own (``EngineConfig.scheduler_kind``: a V1 engine with chunked prefill off still runs ``V1Scheduler``).

Blocks are ``ceil(tokens / block_size)`` per request, allocated as tokens are computed (``SchedulerState.alloc``),
freed on completion; one block of the pool is vLLM's reserved ``null_block`` (``vllm/v1/core/block_pool.py``).
Preemption (``SchedulerState.preempt_last``) takes the *last* running request: its blocks are freed and
``num_computed_tokens`` reset, so it is recomputed later as a prefill of prompt + output so far.

Prefix caching (``Workload.prefix_hit_rate`` h, needs ``enable_prefix_caching``): a new request starts with
``floor(h x prompt / block_size)`` whole blocks already computed (at most prompt - 1 tokens, as vLLM always computes
the last one); the prefill computes the rest, attending over the cached part.  A recomputed (preempted) request
gets no hits.  A shared prefix (``prefix_share`` / ``shared_prefix_len``, the prompts the load generator sends)
gives request i the whole blocks of its prefix that an earlier request or the warm-up already computed
(``workload.prefix_cache_hits``); ``PointPrediction.prefix_cache_hit_rate`` is hits / prompt tokens, vLLM's
``vllm:prefix_cache_hits`` / ``vllm:prefix_cache_queries``.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from pytest_roofline.model.serving.engine import EngineConfig

__all__ = ["Request", "Batch", "SchedulerState", "Scheduler"]


class Request:
    """One request's state in the simulated engine (prompt and output lengths, tokens computed and produced, KV
    blocks held, its timestamps); plain slots, for the step loop's speed."""

    __slots__ = ("idx", "prompt", "out", "arrival", "ready", "computed", "produced", "blocks", "first_token",
                 "last_token", "finish", "scheduled_at", "client", "preempted", "seen_first", "seen_last",
                 "block_ids", "hits", "n_cached", "prev_ids", "finishing")

    def __init__(self, idx: int, prompt: int, out: int, arrival: float, client: int, ready: float | None = None
                 ) -> None:
        self.idx = idx
        self.prompt = prompt
        self.out = out
        #: when the client sent it (its latency clock starts); ``ready``: when the engine core can schedule it
        #: (after the API server's ``frontend_in_s``)
        self.arrival = arrival
        self.ready = arrival if ready is None else ready
        self.computed = 0
        self.produced = 0
        self.blocks = 0
        self.first_token = -1.0
        self.last_token = -1.0
        self.finish = -1.0
        self.scheduled_at = -1.0
        self.client = client
        self.preempted = False
        #: when the client has its first and its last token: the step's end, then the API server's streaming of
        #: that step's tokens (model/serving/simulator.py, "Frontend")
        self.seen_first = -1.0
        self.seen_last = -1.0
        #: with a prefix-cache pool (model/serving/kv_pool.py): the blocks it holds, in order; the cached blocks its
        #: last look-up found (taken when it is admitted); how many of its leading blocks are cached; the blocks it
        #: held before it was preempted (where what is left of its own content is found)
        self.block_ids: list[int] = []
        self.hits: list[int] = []
        self.n_cached = 0
        self.prev_ids: list[int] = []
        #: async scheduling: its last token is computed, but the engine core has not processed that step's output
        #: yet: it holds its slot and blocks through the next step's scheduling, with nothing to schedule
        self.finishing = False


#: one step's work: each scheduled request with the number of new tokens it computes in the step
Batch = list[tuple[Request, int]]


class SchedulerState(Protocol):
    """What a scheduling policy reads and changes: the engine's limits, the running and waiting queues, and the
    KV block pool through the simulator's allocation, preemption and admission (``simulator._Sim``)."""

    engine: EngineConfig
    running: list[Request]
    waiting: deque[Request]
    #: the KV block size in tokens
    bs: int
    #: free KV blocks
    free: int

    def alloc(self, req: Request, n_new: int) -> bool:
        """Give ``req`` the blocks for ``n_new`` more tokens (False, and nothing changes, when the pool cannot)."""
        ...

    def preempt_last(self) -> Request:
        """Preempt the last running request (blocks freed, recomputed later); returns it."""
        ...

    def initial_computed(self, req: Request) -> int:
        """The tokens of a newly admitted request already in the prefix cache."""
        ...

    def admission_blocks(self, req: Request, tokens: int) -> int:
        """The free blocks a waiting request holding nothing needs for its first ``tokens`` tokens, its prefix-cache
        hits (:meth:`initial_computed`'s) counted as vLLM counts them (``get_num_blocks_to_allocate``)."""
        ...

    def admit(self, req: Request, n_new: int, sched: Batch) -> bool:
        """Move the head of the waiting queue into the running batch with ``n_new`` tokens this step."""
        ...


class Scheduler(Protocol):
    """A scheduling policy (vidur's pattern: one signature, one policy per module)."""

    def schedule(self, state: SchedulerState) -> Batch:
        """The batch of the next step (empty: nothing can be scheduled)."""
        ...
