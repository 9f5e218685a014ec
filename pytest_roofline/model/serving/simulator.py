"""The simulator loop: a pure-Python, discrete-event simulation of one sweep point on a vLLM engine
(``simulate``; ``simulate_sweep`` for several). Each step asks the scheduler policy for a batch
(model/serving/scheduler.py), charges its time from the cost model (model/serving/cost.py), advances the
requests, and records the metrics that make a ``PointPrediction`` (model/serving/prediction.py).

Frontend
--------
A request reaches the engine core ``frontend_in_s`` after the client sent it (the API server's HTTP parsing,
tokenisation and ZMQ hand-over), and joins the first step that starts after that (the engine core drains its
input queue between steps: vllm/v1/engine/core.py ``run_busy_loop``); each token reaches the client
``frontend_out_s`` after its step ends (detokenisation, SSE; later when the API server is behind, below).  TTFT and
the end-to-end latency include both; in a closed loop the client sends its next request when it has the last token,
``frontend_out_s`` after the step, so
the engine, which never waits for it, is mid-step when the request arrives: the wait for the next step is
simulated, not added.  TPOT is a difference of the client's token times, which the frontend shifts alike while the
server keeps up; ITL stays the engine's step gaps.

The API server takes requests one at a time: its share of a request (HTTP parsing, chat template, tokenisation,
the hand-over to the engine core) is CPU work in one Python process, so a request sent while it is busy with
another waits for it (``_api_take``: each request leaves ``frontend_in_s`` after the later of its send and the end
of what the server was doing).  The same process streams every token (``api_out_per_token_s`` each: incremental
detokenisation and the server-sent event; ``_stream``), and it streams a step's tokens before it takes a request
sent after that step began, so a request waits for that streaming too, and a step's tokens reach the client when
the server has streamed them (``frontend_out_s`` after the step, or later when it is behind).  An engine that makes
tokens faster than one server streams them is held to 1 / ``api_out_per_token_s`` tokens a second: its clients get
their tokens late, closed-loop clients send late, and a burst reaches the engine a few requests at a time
(tests/unit/test_api_server_streaming.py).  A burst of N with nothing to stream reaches the engine core over
N x ``frontend_in_s``, and the first steps take it in a staircase: on the CPU engine a burst of 8 got its first
tokens in three waves of 1, 4 and 3 requests, one step apart (docs/sources.md), and vLLM's own stamps put the
API-server leg at 2.0 ms at C = 1 and 4.2 ms at C = 8 (the model: 2.0 and 4.4 ms; benchmarks/frontend_split.py).  vLLM's
``--api-server-count`` (several such processes) is not modelled; the engine arg is refused like every unknown one.

Jitter: in a closed loop each client sends its next request a seeded draw in [0, ``client_jitter_s``) after it
has the last token (``client_send_delays_s``; the latency clock starts at the send); the first requests are all
sent at t = 0 (a burst of N requests is N clients' first requests).  The source is measured: real clients turn
around in times that differ by milliseconds from one request to the next (constants.CONSTANT_SOURCES has the CPU
engine's figure).  Without it a closed loop's clients, which all start at t = 0 and each wait for their own
request, stay in lockstep waves: requests that arrive together are prefilled in one step, cycle after cycle.
With it the waves break only partly where the outputs are equal and long: requests prefilled together still
finish together.  Open-loop send times are the load generator's schedule, unchanged.

Speed
-----
Runs of pure-decode steps with an unchanged running set are advanced in one tight loop (no per-sequence Python
work): until the next completion, the next arrival that could be admitted, or the next block allocation that
would exhaust the pool.  Block allocations in such a run are periodic per request (every ``block_size``
steps), counted from a histogram of phases.  The bulk path computes each step's time with the same function
and the same arguments as the step-by-step path, so both give the same results (``simulate(...,
_bulk=False)`` is the slow reference; tests compare them).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import random
from collections import deque
from collections.abc import Sequence
from typing import Any

from pytest_roofline.errors import SimulationError
from pytest_roofline.model import bands as bands
from pytest_roofline.model import workload as _schedule
from pytest_roofline.model.serving.constants import ServingConstants, default_constants
from pytest_roofline.model.serving.cost import CostModel, StepCost
from pytest_roofline.model.serving.engine import EngineConfig
from pytest_roofline.model.serving.kv_pool import PrefixCachePool
from pytest_roofline.model.serving.point import ArrivalKind, Workload, arrival_times
from pytest_roofline.model.serving.prediction import (
    PointPrediction,
    SimulatedRequest,
    StepRecord,
    mean,
    percentile,
    weighted_percentiles,
)
from pytest_roofline.model.serving.scheduler import Request, Scheduler
from pytest_roofline.model.serving.scheduler_v0 import V0Scheduler
from pytest_roofline.model.serving.scheduler_v1 import V1Scheduler
from pytest_roofline.model.setup import Setup

__all__ = ["simulate", "simulate_sweep", "client_send_delays_s", "V1_UNCHUNKED_NO_BAND", "stability",
           "UNSTABLE_UTILISATION"]

#: the arrivals ÷ completions ratio rho (``stability``) from which an open-loop point is unstable: rho >= 1 has no
#: steady state (a queue fed faster than it is served grows without bound), with a margin for a finite run's noise:
#: 10%, or two Poisson standard errors of the window's arrival count n (2 / sqrt(n)) where that is more (a stable
#: point of 150 requests read up to 1.21 in the checks of benchmarks' kind: H100, Llama-3.1-8B, 1024/256, 5-25 req/s)
UNSTABLE_UTILISATION = 1.1


def unstable_from(arrivals: int) -> float:
    """The arrivals ÷ completions ratio from which a point whose window saw ``arrivals`` requests is unstable."""
    return max(UNSTABLE_UTILISATION, 1.0 + 2.0 / math.sqrt(max(arrivals, 1)))

#: why a V1 engine with chunked prefill off has no band (``with_bands``)
V1_UNCHUNKED_NO_BAND = ("no band: no measured run of the accuracy corpus is of the V1 engine with chunked prefill off "
                        "(its V1 runs chunk prefills; its V0 runs stall decodes for prefill-only steps)")


def client_send_delays_s(workload: Workload, constants: ServingConstants) -> list[float]:
    """Each closed-loop request's send delay after its client is free: uniform in [0, ``client_jitter_s``),
    seeded by the workload's seed and point id (the module's docstring says why); all 0 without jitter."""
    n = workload.num_requests
    width = constants.client_jitter_s
    if width <= 0:
        return [0.0] * n
    rng = random.Random(f"roofline-client/{workload.seed}/{workload.point_id}")
    return [rng.random() * width for _ in range(n)]


class _Sim:
    """One sweep point's simulation: the arrivals, the KV block pool, the scheduler policy, the step accounting
    and the bulk decode path (the ``SchedulerState`` its policy schedules over)."""

    def __init__(self, setup: Setup, workload: Workload, engine: EngineConfig, constants: ServingConstants,
                 bulk: bool, trace: list[StepRecord] | None = None) -> None:
        self.trace = trace
        if trace is not None:
            bulk = False
        self.cost = CostModel(setup, constants, engine)
        self.engine = engine
        # the engine's own scheduler: V1's (chunked prefill on or off) or the 0.5-era V0 one (engine.scheduler_kind)
        self.scheduler: Scheduler = V1Scheduler() if engine.scheduler_kind == "v1" else V0Scheduler()
        self.w = workload
        self.bulk = bulk
        self.bs = engine.block_size
        self.free = engine.usable_blocks  # all but vLLM's null block
        self.pool = engine.usable_blocks
        n = workload.num_requests
        # the load generator's own per-request draws (same seed, point id and phase): model/workload.py
        lengths = _schedule.request_lengths(n, input_len=workload.input_len, output_len=workload.output_len,
                                            dataset=workload.dataset, seed=workload.seed,
                                            stream_id=workload.point_id)
        self.prompts, self.outs = lengths.input_lens, lengths.output_lens
        self.hit = workload.prefix_hit_rate
        if self.hit > 0 and not engine.enable_prefix_caching:
            raise SimulationError("prefix_hit_rate > 0 needs an engine with enable_prefix_caching")
        self.prefix_hits = [0] * n
        #: V1 with prefix caching (its default) and no measured hit rate: the block pool itself, its prefix cache
        #: block by block (model/serving/kv_pool.py): shared prefixes are shared blocks, hits are what is cached
        #: when a request is admitted, and a preempted request finds what is left of its own blocks
        self.kv: PrefixCachePool | None = None
        self.prefix_len = [0] * n
        if engine.enable_prefix_caching and engine.scheduler_kind == "v1" and self.hit <= 0:
            self.kv = PrefixCachePool(engine.usable_blocks, self.bs)
        if (workload.prefix_share or workload.shared_prefix_len) and engine.enable_prefix_caching:
            pkw: dict[str, Any] = {"prefix_share": workload.prefix_share,
                                   "shared_prefix_len": workload.shared_prefix_len}
            warm_prefix = 0
            if workload.warmup_requests:
                warm = _schedule.request_lengths(workload.warmup_requests, input_len=workload.input_len,
                                                 output_len=workload.output_len, dataset=workload.dataset,
                                                 seed=workload.seed, stream_id=workload.point_id, warmup=True)
                warm_prefix = max(_schedule.prefix_lens(warm.input_lens, **pkw))
            self.prefix_len = _schedule.prefix_lens(self.prompts, **pkw)
            if self.kv is not None:
                # the warm-up's requests computed the prefix and let it go: cached, at the free queue's end
                warm_blocks = min(warm_prefix // self.bs, self.kv.num_blocks)
                if warm_blocks:
                    held = self.kv.allocate(warm_blocks)
                    for j, b in enumerate(held):
                        self.kv.cache_prefix(b, j)
                    self.kv.free(held)
            else:
                self.prefix_hits = _schedule.prefix_cache_hits(self.prompts, self.prefix_len, block_size=self.bs,
                                                               warm_prefix=warm_prefix)
        for p, o in zip(self.prompts, self.outs, strict=True):
            if engine.requests_held(p + o) < 1:
                raise SimulationError(f"a request of {p} + {o} tokens needs more KV blocks than the pool holds "
                                      f"({self.pool} usable blocks of {self.bs} tokens)")
        self.arrivals: deque[Request] = deque()  # future arrivals, sorted by when the engine core sees them
        # requests sent but not yet taken by the API server, by send time: it takes each in turn with the streaming
        # of the steps that ended before it was sent (_api_take), so when one reaches the engine core is decided
        # only once those steps are simulated
        self.sends: deque[Request] = deque()
        self.f_in = constants.frontend_in_s
        self.api_free = 0.0  # when the one API-server process is free to take the next request (the docstring)
        self.f_out = constants.frontend_out_s
        self.c_out = constants.api_out_per_token_s
        # when the API server has streamed every token of the steps so far: it streams before it takes a new
        # request (its output handler runs as each step's outputs arrive), so requests wait for the streaming
        # (api_free) and the streaming waits only for itself (stream_free)
        self.stream_free = 0.0
        self.api_busy = 0.0  # the API server's work so far, seconds (PointPrediction.api_server_busy_share)
        # async scheduling (EngineConfig.async_scheduling): the start of the step before the next one and the end of
        # the last step; while the engine is busy, a step takes only what arrived before the previous step started
        self.async_sched = engine.async_scheduling
        self.finishing: list[Request] = []  # async: done last step, released once the next step is scheduled
        self.prev_start = -math.inf
        self.last_end = -math.inf
        self.closed = workload.arrival is ArrivalKind.CLOSED
        self.send_delay = client_send_delays_s(workload, constants)  # closed loop (the module's docstring: jitter)
        if not self.closed:
            times = arrival_times(workload)
            for i, t in enumerate(times):
                self.sends.append(Request(i, self.prompts[i], self.outs[i], t, -1))
        self.next_idx = 0
        # open loop with an in-flight cap (the load generator's optional concurrency cap): arrivals that find
        # the cap full wait at the client and are sent (their latency clock starts) when a request finishes
        self.cap = workload.concurrency if not self.closed else None
        self.held: deque[Request] = deque()
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.done: list[Request] = []
        self.now = 0.0
        self.steps = 0
        self.preemptions = 0
        self.itl: list[tuple[float, int]] = []
        self.busy = 0.0
        self.run_area = 0.0
        self.kv_area = 0.0
        self.max_run = 0
        self.max_blocks = 0
        self.shares = {"weights": 0.0, "kv": 0.0, "prefill_compute": 0.0, "decode_compute": 0.0,
                       "overhead": 0.0, "allreduce": 0.0}

    # -- arrivals ---------------------------------------------------------------------------------------
    def _api_take(self, until: float) -> None:
        """The API server takes, in send order and one at a time (the module's docstring), every request it can
        start on by ``until``: at the later of its send and the end of what the server was doing (another request,
        ``frontend_in_s`` each, or streaming the tokens of the steps that ended before: ``_stream``). Each reaches
        the engine core's input (``arrivals``) ``frontend_in_s`` after that start."""
        sends = self.sends
        while sends:
            req = sends[0]
            start = req.arrival if req.arrival > self.api_free else self.api_free
            if start > until:
                break
            sends.popleft()
            req.ready = start + self.f_in
            self.api_free = req.ready
            self.api_busy += self.f_in
            # sorted by when the engine core sees them; _admit_arrivals moves them to the queue at the step that
            # can take them (with async scheduling, not the one already scheduled: _cutoff)
            bisect.insort(self.arrivals, req, key=lambda r: r.ready)

    def _stream(self, end: float, tokens: int) -> float:
        """The API server streams the ``tokens`` a step that ended at ``end`` produced (``api_out_per_token_s``
        each), after the tokens of the steps before it; a request not yet taken waits for that work too. Returns
        when the client has them: ``frontend_out_s`` after the step, or when the streaming is done if later."""
        if self.c_out > 0 and tokens:
            work = tokens * self.c_out
            self.api_busy += work
            self.api_free = (end if end > self.api_free else self.api_free) + work
            self.stream_free = (end if end > self.stream_free else self.stream_free) + work
            seen = end + self.f_out
            return seen if seen > self.stream_free else self.stream_free
        return end + self.f_out

    def _new_closed(self, sends: list[tuple[float, int, bool]]) -> None:
        """Each client in ``sends`` (time, client, turnaround) sends its next request at that time, plus its
        turnaround draw when it follows a response (the first requests, all sent at t = 0, have none); the API
        server takes them in the order they were sent."""
        reqs = []
        for t, client, turnaround in sends:
            i = self.next_idx
            if i >= self.w.num_requests:
                break
            self.next_idx += 1
            reqs.append(Request(i, self.prompts[i], self.outs[i], t + (self.send_delay[i] if turnaround else 0.0),
                                client))
        for req in reqs:  # the API server takes them in the order they were sent
            bisect.insort(self.sends, req, key=lambda r: (r.arrival, r.idx))
        self._api_take(self.now)

    def _in_flight(self) -> int:
        return len(self.running) - len(self.finishing) + len(self.waiting)

    def _cap_full(self) -> bool:
        return self.cap is not None and self._in_flight() >= self.cap

    def _cutoff(self, start: float, prev_start: float) -> float:
        """The latest arrival (``ready``) a step starting at ``start`` can take: its start, or with async scheduling
        and the engine busy up to it (the previous step ended there) the previous step's start, when this step was
        scheduled (vllm/v1/engine/core.py ``step_with_batch_queue``). An idle engine schedules at once."""
        if self.async_sched and self.last_end >= start and (self.running or self.waiting):
            return prev_start
        return start

    def _admit_arrivals(self, until: float | None = None) -> None:
        t = self.now if until is None else until
        while self.arrivals and self.arrivals[0].ready <= t:
            req = self.arrivals.popleft()
            if self._cap_full():
                self.held.append(req)
            else:
                self.waiting.append(req)

    # -- one step, request by request ---------------------------------------------------------------------
    def alloc(self, req: Request, n_new: int) -> bool:
        if self.kv is not None:
            return self._alloc_pool(req, n_new)
        need = -(-(req.computed + n_new) // self.bs) - req.blocks
        if need <= self.free:
            if need > 0:
                self.free -= need
                req.blocks += need
            return True
        return False

    def _cache_full(self, req: Request, tokens: int) -> None:
        """``req``'s blocks full once it has ``tokens`` tokens scheduled are cached (kv_pool): the shared prefix's
        blocks as such, the rest as its own."""
        kv = self.kv
        assert kv is not None
        full = tokens // self.bs
        if full <= req.n_cached:
            return
        shared = min(self.prefix_len[req.idx] // self.bs, full)
        ids = req.block_ids
        for j in range(req.n_cached, shared):
            kv.cache_prefix(ids[j], j)
        kv.cache_own(ids, req.idx, max(req.n_cached, shared), full)
        req.n_cached = full

    def _cacheable(self, req: Request, n_new: int) -> int:
        """The tokens of ``req`` whose full blocks are cached when ``n_new`` more are scheduled: those scheduled, but
        with async scheduling not a token whose output the engine core has not processed yet (the one sampled in the
        step that just ended: vLLM's ``AsyncScheduler`` caches up to ``num_computed_tokens -
        num_output_placeholders``, and ``allocate_slots`` no further than ``request.num_tokens``)."""
        tokens = req.computed + n_new
        if self.async_sched and req.produced and req.last_token == self.now:
            return min(tokens, req.prompt + req.produced - 1)
        return tokens

    def _alloc_pool(self, req: Request, n_new: int) -> bool:
        """``alloc`` on the prefix-cache pool: a request admitted now takes its hits (a hit in the free queue costs a
        free block), then new blocks; the full blocks of what it computes this step are cached at once."""
        kv = self.kv
        assert kv is not None
        hits = req.hits if not req.block_ids else []
        held = len(req.block_ids) + len(hits)
        need = max(-(-(req.computed + n_new) // self.bs) - held, 0)
        if need + kv.evictable(hits) > kv.num_free:
            return False
        if hits:
            kv.touch(hits)
            req.block_ids.extend(hits)
            req.n_cached = len(hits)
            req.hits = []
        if need:
            req.block_ids.extend(kv.allocate(need))
        self._cache_full(req, self._cacheable(req, n_new))
        req.blocks = len(req.block_ids)
        self.free = kv.num_free
        return True

    def _release(self, req: Request) -> None:
        if self.kv is not None:
            self.kv.free(req.block_ids)
            req.prev_ids, req.block_ids = req.block_ids, []
            req.n_cached = 0
            self.free = self.kv.num_free
        else:
            self.free += req.blocks
        req.blocks = 0

    def preempt_last(self) -> Request:
        victim = self.running.pop()
        self._release(victim)
        victim.computed = 0
        victim.preempted = True
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim

    def initial_computed(self, req: Request) -> int:
        if self.kv is not None:
            # vLLM's get_computed_blocks: the longest run of its leading blocks cached now, never its last token
            # (a preempted request finds what is left of its own blocks, outputs included)
            known = req.prompt + req.produced
            req.hits = self.kv.lookup(req.idx, self.prefix_len[req.idx] // self.bs, (known - 1) // self.bs,
                                      req.prev_ids)
            hit = len(req.hits) * self.bs
            if not req.preempted:
                self.prefix_hits[req.idx] = hit
            return hit
        if req.preempted:
            return 0
        shared = self.prefix_hits[req.idx]
        if self.hit <= 0:
            return shared
        cached = int(self.hit * req.prompt) // self.bs * self.bs
        return max(min(cached, req.prompt - 1), shared)

    def admission_blocks(self, req: Request, tokens: int) -> int:
        blocks = -(-tokens // self.bs)
        if self.kv is None:
            return blocks - req.blocks
        return max(blocks - len(req.hits), 0) + self.kv.evictable(req.hits)


    def admit(self, req: Request, n_new: int, sched: list[tuple[Request, int]]) -> bool:
        """Move the head of the waiting queue into the running batch with ``n_new`` tokens this step, if its KV
        blocks can be allocated (False, and nothing changes, when they cannot)."""
        if not self.alloc(req, n_new):
            return False
        self.waiting.popleft()
        self.running.append(req)
        if req.scheduled_at < 0:
            req.scheduled_at = self.now
        sched.append((req, n_new))
        return True


    def _record_step(self, d: float, n_dec: int, dec_ctx: int, pf_tok: int, pf_kv: int, pf_pairs: float,
                     n_seqs: int) -> None:
        self.steps += 1
        self.busy += d
        self.run_area += len(self.running) * d
        used = self.pool - self.free
        self.kv_area += used * d
        if used > self.max_blocks:
            self.max_blocks = used
        if len(self.running) > self.max_run:
            self.max_run = len(self.running)

    def _shares_add(self, sc: StepCost, mult: int = 1) -> None:
        sh = self.shares
        sh["weights"] += sc.weights_s * mult
        sh["kv"] += sc.kv_s * mult
        sh["prefill_compute"] += sc.prefill_compute_s * mult
        sh["decode_compute"] += sc.decode_compute_s * mult
        sh["overhead"] += sc.overhead_s * mult
        sh["allreduce"] += sc.allreduce_s * mult

    def _step(self) -> None:
        sched = self.scheduler.schedule(self)
        if self.finishing:  # async: the previous step's outputs are processed once this step is scheduled
            done, self.finishing = self.finishing, []
            self._release_finished(done)
            if not sched:  # nothing was schedulable while they held their slots: schedule again, no time passes
                return
        if not sched:
            raise SimulationError("the scheduler could not schedule anything (a request larger than the pool?)")
        if self.kv is not None:  # vLLM caches a block as soon as it is full and scheduled, allocation or not
            bs = self.bs
            for req, n in sched:
                if (req.computed + n) // bs > req.n_cached:
                    self._cache_full(req, self._cacheable(req, n))
        n_dec = dec_ctx = pf_tok = pf_kv = 0
        pf_pairs = 0.0
        for req, n in sched:
            if req.computed + n == req.prompt + req.produced and n == 1 and req.produced > 0:
                n_dec += 1
                dec_ctx += req.computed + 1
            else:
                a = req.computed
                pf_tok += n
                pf_kv += a + n
                pf_pairs += n * a + n * (n + 1) / 2.0
        n_seqs = len(sched)
        sc = self.cost.terms(n_dec, dec_ctx, pf_tok, pf_kv, pf_pairs, n_seqs)
        d = sc.time_s
        self._shares_add(sc)
        start = self.now
        self.now = start + d
        self.prev_start, self.last_end = start, self.now
        self._record_step(d, n_dec, dec_ctx, pf_tok, pf_kv, pf_pairs, n_seqs)
        if self.trace is not None:
            self.trace.append(StepRecord(start_s=start, time_s=d, decode_seqs=n_dec, prefill_tokens=pf_tok,
                                         prefill_seqs=n_seqs - n_dec, running=len(self.running),
                                         waiting=len(self.waiting), used_blocks=self.pool - self.free,
                                         preemptions=self.preemptions))
        now = self.now
        finished = []
        firsts = []
        itl_d = 0
        tokens = 0
        for req, n in sched:
            req.computed += n
            if req.computed == req.prompt + req.produced:
                req.produced += 1
                tokens += 1
                if req.produced == 1:
                    req.first_token = now
                    firsts.append(req)
                else:
                    if req.last_token == start:
                        itl_d += 1
                    else:
                        self.itl.append((now - req.last_token, 1))
                req.last_token = now
                if req.produced == req.out:
                    finished.append(req)
        if itl_d:
            self.itl.append((d, itl_d))
        # the API server takes what was sent during the step, then streams the step's tokens (the docstring)
        self._api_take(now)
        seen = self._stream(now, tokens)
        for req in firsts:
            req.seen_first = seen
        for req in finished:
            req.seen_last = seen
        if finished:
            self._finish(finished)

    def _finish(self, finished: list[Request]) -> None:
        """``finished`` computed their last token in the step that just ended: done for their clients. With async
        scheduling the engine core schedules the next step before it processes this one's outputs
        (vllm/v1/engine/core.py ``step_with_batch_queue``), so they keep their slots and blocks through that
        scheduling (``finishing``; released by the next ``_step``); synchronously, at once. Found by the step-by-step
        comparison with vLLM's own ``AsyncScheduler`` (tests/integration/test_scheduler_equivalence.py)."""
        for req in finished:
            req.finish = self.now
            self.done.append(req)
        if self.async_sched:
            for req in finished:
                req.finishing = True
            self.finishing.extend(finished)
        else:
            self._release_finished(finished)
        if self.closed:  # each client sends its next request when it has this one's last token
            self._new_closed([(req.seen_last, req.client, True) for req in finished])
        while self.held and not self._cap_full():
            req = self.held.popleft()
            # a held arrival is sent now and queued at once: its frontend_in_s is not simulated (the client's
            # in-flight cap counts it from here; a request in the API server would not be counted by the engine)
            req.arrival = req.ready = self.now  # the engine's queue starts here, not at the original arrival
            self.waiting.append(req)

    def _release_finished(self, finished: list[Request]) -> None:
        ids = {id(r) for r in finished}
        self.running = [r for r in self.running if id(r) not in ids]
        for req in finished:
            req.finishing = False
            self._release(req)

    # -- a run of pure-decode steps ---------------------------------------------------------------------
    def _bulk_len(self) -> int:
        """How many pure-decode steps can run with the running set unchanged (0: take a normal step)."""
        run = self.running
        if not run:
            return 0
        if len(run) > self.engine.max_num_batched_tokens:
            return 0
        k = math.inf
        for r in run:
            if r.computed != r.prompt + r.produced - 1 or r.produced == 0:
                return 0  # still prefilling (or recomputing)
            k = min(k, r.out - r.produced)
        if self.waiting:
            if len(run) < self.engine.max_num_seqs:
                head = self.waiting[0]
                left = self.engine.max_num_batched_tokens - len(run)  # the budget the decodes leave, each step
                if self.engine.chunked_prefill:
                    # could it be admitted now?  Budget is left (len(run) < max_num_batched_tokens); the
                    # blocks it asks for stay the same and the free blocks only shrink while decodes run.
                    comp = self.initial_computed(head) if head.blocks == 0 else head.computed
                    n_new = min(head.prompt + head.produced - comp, left)
                    if self._head_fits(head, comp, n_new):
                        return 0
                elif self.engine.scheduler_kind == "v1" and not self.engine.skip_long_prompts:
                    # V1 without chunking, stopping at a prompt that does not fit: one longer than the budget the
                    # decodes leave stays out for the whole run (and so does everything behind it)
                    comp = self.initial_computed(head) if head.blocks == 0 else head.computed
                    n_new = head.prompt + head.produced - comp
                    if n_new <= left and self._head_fits(head, comp, n_new):
                        return 0
                else:
                    # V0: a waiting prefill takes the next step if it fits; V1 skipping long prompts may admit a
                    # later one: let the normal path decide
                    return 0
        return int(k) if k >= 2 else 0

    def _head_fits(self, head: Request, comp: int, n_new: int) -> bool:
        """Whether the waiting ``head`` (``comp`` tokens cached, ``n_new`` to schedule) could be admitted while the
        running requests decode (the blocks they take this step set aside); a run of decode steps only shrinks
        the free blocks (and evicts hits), so one that cannot now cannot during the run either."""
        spare = self.free - self._decode_need()
        if self.kv is None:
            return -(-(comp + n_new) // self.bs) - head.blocks <= spare
        need = max(-(-(comp + n_new) // self.bs) - len(head.hits), 0) + self.kv.evictable(head.hits)
        if self.engine.reserve_full_prompt and self.admission_blocks(head, head.prompt + head.produced) > spare:
            return False
        return need <= spare

    def _decode_need(self) -> int:
        bs = self.bs
        return sum(1 for r in self.running if r.computed % bs == 0 and not r.finishing)

    def _bulk(self, k: int) -> None:
        run = self.running
        bs = self.bs
        B = len(run)
        phase = [0] * bs  # phase[j % bs]: requests that need a new block at decode step j (j = 1..)
        S = 0
        for r in run:
            # at step j the request holds computed + j tokens; it needs a block when computed + j - 1 == bs*m
            phase[(bs - r.computed % bs + 1) % bs] += 1
            S += r.computed
        next_arrival = self.arrivals[0].ready if self.arrivals else math.inf
        # a request the API server can start on by a step's end is taken before that step's tokens are streamed:
        # the run stops before such a step, and _step takes it
        next_send = self.sends[0].arrival if self.sends else math.inf
        c_out, f_out = self.c_out, self.f_out
        api_free, stream_free, api_busy = self.api_free, self.stream_free, self.api_busy
        seen = t_seen = -1.0
        # waiting exists but cannot be admitted, or the client cap is full: arrivals change nothing
        blocked_wait = bool(self.waiting) or self._cap_full()
        cost = self.cost.time
        free = self.free
        used = self.pool - free
        t = self.now
        j = 0
        first_gaps: list[tuple[float, int]] = []
        last_start = t
        itl_d: dict[float, int] = {}
        max_used = self.max_blocks
        last_start_prev = self.prev_start
        while j < k:
            # the step starting at t takes an arrival that came before it (synchronous scheduling) or before the
            # previous step's start (async scheduling): stop there and let _step admit it
            if j > 0 and not blocked_wait and (last_start if self.async_sched else t) >= next_arrival:
                break
            need = phase[(j + 1) % bs]
            if need > free:
                break
            d = cost(B, S + B * (j + 1), 0, 0, 0.0, B)
            # _step would have the API server take the next request at this step's end (_api_take): stop here
            if next_send < math.inf and t + d >= (next_send if next_send > api_free else api_free):
                break
            j += 1
            free -= need
            used += need
            start = t
            last_start_prev, last_start = last_start, start
            t = start + d
            # the API server streams the step's B tokens (_stream, inline: the same arithmetic)
            if c_out > 0:
                work = B * c_out
                api_busy += work
                api_free = (t if t > api_free else api_free) + work
                stream_free = (t if t > stream_free else stream_free) + work
                t_seen = t + f_out
                seen = t_seen if t_seen > stream_free else stream_free
            else:
                seen = t + f_out
            # accumulated in the same order as _record_step, so both paths give the same floats
            self.busy += d
            self.run_area += B * d
            self.kv_area += used * d
            if used > max_used:
                max_used = used
            if j == 1:
                for r in run:
                    if r.last_token == start:
                        itl_d[d] = itl_d.get(d, 0) + 1
                    else:
                        first_gaps.append((t - r.last_token, 1))
            else:
                itl_d[d] = itl_d.get(d, 0) + B
        if j == 0:
            self._step()
            return
        # every term is linear in the summed context at a fixed batch (and each max keeps its winner), so the
        # run's terms are j times the terms at the mean context
        self._shares_add(self.cost.terms(B, S + B * (j + 1) / 2.0, 0, 0, 0.0, B), mult=j)
        self.steps += j
        self.max_blocks = max_used
        if B > self.max_run:
            self.max_run = B
        self.itl.extend(first_gaps)
        self.itl.extend(itl_d.items())
        self.free = free
        # arrivals during the run join the queue (or the client's hold) as the step-by-step path would have put
        # them there at the start of each step: nothing else changed meanwhile, so all at once is the same
        self._admit_arrivals(until=last_start_prev if self.async_sched else last_start)
        self.prev_start, self.last_end = last_start, t
        self.now = t
        self.api_free, self.stream_free, self.api_busy = api_free, stream_free, api_busy
        if self.kv is not None:
            self._bulk_blocks(run, j)
        finished = []
        for r in run:
            r.computed += j
            r.produced += j
            r.blocks = -(-r.computed // bs)
            r.last_token = t
            if r.produced == r.out:
                r.seen_last = seen
                finished.append(r)
        if finished:
            self._finish(finished)

    def _bulk_blocks(self, run: list[Request], j: int) -> None:
        """The pool's side of ``j`` decode steps of ``run`` (before their ``computed`` advances): the blocks each step
        took, in step order and running order (the step-by-step path's), and the blocks that filled, cached."""
        kv = self.kv
        assert kv is not None
        bs = self.bs
        # step i takes a block for each request whose token computed + i - 1 starts one: the requests of phase
        # (i - 1) % bs, in running order
        by_phase: list[list[Request]] = [[] for _ in range(bs)]
        for r in run:
            by_phase[((1 - r.computed) % bs or bs) - 1].append(r)
        takes: list[Request] = []
        for i in range(j):
            group = by_phase[i % bs]
            if group:
                takes.extend(group)
        if takes:
            for r, b in zip(takes, kv.allocate(len(takes)), strict=True):
                r.block_ids.append(b)
        for r in run:  # async: the last step's token not yet processed (_cacheable)
            self._cache_full(r, r.computed + j - (1 if self.async_sched else 0))
        self.free = kv.num_free

    # -- main loop --------------------------------------------------------------------------------------
    def run(self) -> None:
        n = self.w.num_requests
        if self.closed:
            self._new_closed([(0.0, c, False) for c in range(min(self.w.concurrency or 1, n))])
        guard = 0
        while len(self.done) < n:
            self._api_take(self.now)
            self._admit_arrivals(until=self._cutoff(self.now, self.prev_start))
            if not self.running and not self.waiting:
                if not self.arrivals:
                    if not self.sends:
                        raise SimulationError("simulation stalled: nothing running, waiting or arriving")
                    # idle: the API server takes the next request sent, once it has streamed what it had
                    head = self.sends[0].arrival
                    self._api_take(head if head > self.api_free else self.api_free)
                    continue
                self.now = max(self.now, self.arrivals[0].ready)
                continue
            k = self._bulk_len() if self.bulk else 0
            if k >= 2:
                self._bulk(k)
            else:
                self._step()
            guard += 1
            if guard > 50_000_000:
                raise SimulationError("simulation did not finish (step limit)")

    def result(self) -> PointPrediction:
        done = sorted(self.done, key=lambda r: r.idx)
        start = min(r.arrival for r in done)
        # every token reaches the client when the API server has streamed it (seen_first / seen_last: frontend_out_s
        # after its step, or later when the server is busy): TTFT, TPOT and e2e as the client measures them
        end = max(r.seen_last for r in done)
        duration = end - start
        ttft = sorted((r.seen_first - r.arrival) * 1e3 for r in done)
        tpot = sorted((r.seen_last - r.seen_first) / (r.out - 1) * 1e3 for r in done if r.out > 1)
        e2e = [(r.seen_last - r.arrival) for r in done]
        e2e_ms = sorted(e * 1e3 for e in e2e)
        queue = [(r.scheduled_at - r.ready) * 1e3 for r in done]  # in the engine's queue, after the frontend
        per_req = [r.out / e for r, e in zip(done, e2e, strict=True) if e > 0]
        itl_p50, itl_p99 = weighted_percentiles([(v * 1e3, c) for v, c in self.itl], (50, 99))
        out_tok = sum(r.out for r in done)
        busy = self.busy or 1.0
        total_share = sum(self.shares.values()) or 1.0
        return PointPrediction(
            concurrency=self.w.concurrency, rate_req_per_s=self.w.rate_req_per_s, num_requests=len(done),
            duration_s=duration,
            output_throughput_tok_per_s=out_tok / duration if duration > 0 else math.nan,
            request_throughput_req_per_s=len(done) / duration if duration > 0 else math.nan,
            per_request_output_tok_per_s=mean(per_req),
            ttft_p50_ms=percentile(ttft, 50), ttft_p99_ms=percentile(ttft, 99), ttft_mean_ms=mean(ttft),
            tpot_p50_ms=percentile(tpot, 50) if tpot else math.nan,
            tpot_p99_ms=percentile(tpot, 99) if tpot else math.nan,
            tpot_mean_ms=mean(tpot) if tpot else math.nan,
            itl_p50_ms=itl_p50, itl_p99_ms=itl_p99,
            e2e_mean_ms=mean(e2e) * 1e3,
            e2e_p50_ms=percentile(e2e_ms, 50), e2e_p99_ms=percentile(e2e_ms, 99),
            mean_running_batch=self.run_area / busy, max_running_batch=self.max_run,
            max_kv_usage=self.max_blocks / self.pool, mean_kv_usage=self.kv_area / busy / self.pool,
            preemptions=self.preemptions, mean_queue_ms=mean(queue), steps=self.steps,
            api_server_busy_share=min(1.0, self.api_busy / duration) if duration > 0 else math.nan,
            time_shares={k: v / total_share for k, v in self.shares.items()},
            prefix_cache_hit_rate=sum(self.prefix_hits) / max(sum(self.prompts), 1),
            **(stability(done, self.w.rate_req_per_s) if not self.closed and self.cap is None else {}),
            # each request as the client sees it, for request goodput under a prediction's SLOs
            requests=tuple(SimulatedRequest(r.seen_first - r.arrival, e, r.out)
                           for r, e in zip(done, e2e, strict=True)),
        )


def stability(done: Sequence[Request], offered_req_per_s: float | None) -> dict[str, Any]:
    """An uncapped open-loop point's arrivals ÷ completions ratio rho (``arrival_to_completion_ratio``; a queue's
    utilisation where it is unstable, about 1 at every stable load) and, where rho >= :func:`unstable_from`, why it
    has no steady state.  Queueing theory: a queue whose arrival rate is at least its service rate (rho = lambda /
    mu >= 1) grows without bound, so its waits, and the TTFT, TPOT and preemptions that follow from them, depend on
    how long the run is.

    Both estimates are over the second half of the arrivals (the first is the warm-up), from its first arrival t1 to
    its last, t2; lambda is the requests that reached the engine in it ÷ its length.  (a) Until the end: the served
    rate is the requests that finished after t1 ÷ the time from t1 to the last finish; stable, that counts the same
    requests plus the L(t1) already in the system over a time longer by about their time in it, so it is lambda
    again (Little's law, L = lambda x W); overloaded, the engine finishes mu per second to the end, however short the
    run.  It reads a little low near capacity (the last requests finish faster, in a draining batch).  (b) In the
    window: the requests that finished in (t1, t2] ÷ its length, whose difference from lambda is the growth of the
    number in the system over the window; used where the window is at least twice the median time a request is
    served (scheduled to finished), so that the finishes it counts are of requests that arrived in it.  rho is the
    larger of the two."""
    if len(done) < 4:
        return {}
    ready = sorted(r.ready for r in done)
    t1, t2 = ready[len(ready) // 2], ready[-1]
    end = max(r.finish for r in done)
    arrived = sum(1 for t in ready if t > t1)
    finished = sum(1 for r in done if r.finish > t1)
    if t2 <= t1 or end <= t1 or not arrived or not finished:
        return {}
    offered_est = arrived / (t2 - t1)
    served = finished / (end - t1)
    rho = offered_est / served
    service = sorted(r.finish - r.scheduled_at for r in done)[len(done) // 2]
    in_window = sum(1 for r in done if t1 < r.finish <= t2)
    if t2 - t1 >= 2 * service and in_window and arrived / in_window > rho:
        served, rho = in_window / (t2 - t1), arrived / in_window
    out: dict[str, Any] = {"arrival_to_completion_ratio": rho, "served_rate_req_per_s": served}
    if rho >= unstable_from(arrived):
        offered = offered_req_per_s if offered_req_per_s else offered_est
        out["unstable"] = (f"unstable: {offered:g} req/s offered, ~{served:.3g} served (arrivals ÷ completions "
                           f"{rho:.2f} >= 1: the queue grows until the last arrival): latencies grow with the run's "
                           "length")
    return out


def simulate(setup: Setup, workload: Workload, *, engine: EngineConfig | None = None,
             constants: ServingConstants | None = None, trace: list[StepRecord] | None = None,
             _bulk: bool = True) -> PointPrediction:
    """Simulate one sweep point.  ``trace``: a list to append a :class:`StepRecord` per step to (runs step by
    step); ``_bulk=False`` runs every step request by request (the slow reference the tests compare with)."""
    engine = engine or EngineConfig.from_setup(setup)
    constants = constants or default_constants(setup)
    sim = _Sim(setup, workload, engine, constants, _bulk, trace)
    sim.run()
    return with_bands(sim.result(), setup, engine, ceilings=_sent_ceilings(sim))


def _sent_ceilings(sim: _Sim) -> dict[str, float]:
    """What an open loop's sends allow: its output tokens over the span of its sends (first to last). A client's
    window runs from the first send (or before it) to the last response, which ends after the last send, so no
    measured output throughput of these sends reaches it: N x the output length x the rate on a fixed span."""
    if sim.closed or len(sim.done) < 2:
        return {}
    sends = [r.arrival for r in sim.done]
    span = max(sends) - min(sends)
    if not span > 0:
        return {}
    return {"output_throughput_tok_per_s": sum(r.out for r in sim.done) / span}


#: vLLM issue #9535 ("bitsandbytes quantization slow", vLLM 0.6.3.post1 on an A100): a 4-bit bitsandbytes
#: Llama took 71 s where its bf16 checkpoint took 45 s; its kernels dequantise the weights at every step
BNB_SLOWER = ("bitsandbytes dequantises the weights at every step: vLLM issue #9535 measured a 4-bit model 1.6x "
              "slower than its bf16 checkpoint, where this model reads 4-bit weights as faster")


def _precision_no_band(setup: Setup) -> str:
    """Why a GPU setup's values get no band for its numeric formats: every GPU run behind the bands served 16-bit
    weights and a 16-bit KV cache (``benchmarks/data/corpus``), so a quantized checkpoint (its dequantisation and
    per-step costs) or an fp8 KV cache is a regime no run bands (trial s26b #4: an AWQ, FP8 or bitsandbytes model
    got the bf16 band, "80% nominal"); "" where the bands apply."""
    if setup.device == "cpu":
        return ""
    scheme = getattr(setup, "quantization", None)
    if scheme is not None:
        bnb = getattr(getattr(scheme, "method", None), "value", "") == "bitsandbytes"
        return (f"no band: every GPU run behind the bands served 16-bit weights, not {setup.quantization_label}"
                + (f" ({BNB_SLOWER})" if bnb else "") + "; a measurement or `roofline calibrate` decides")
    if str(getattr(setup, "kv_dtype", "bf16")).startswith("fp8"):
        return ("no band: every GPU run behind the bands kept a 16-bit KV cache, not fp8; a measurement or "
                "`roofline calibrate` decides")
    return ""


def _physical_floors(setup: Setup) -> dict[str, float]:
    """The values no run of ``setup`` measures below, by band metric: on a GPU, TPOT at one read of the weights one
    GPU holds at its datasheet bandwidth (1 ÷ the roofline's batch-1 ceiling, as ``quantities.bounds`` bounds
    ``tpot_*``). A band stops there, in every printout alike (trial s26b #6: ``--simulate`` printed an L4 TPOT band
    from 52.057 ms, under the 53.535 ms read, where the CPU-only check clipped it)."""
    if setup.device == "cpu":
        return {}
    try:
        ceiling = float(setup.roofline_landmarks().batch1_ceiling_tok_per_s)
    except (ValueError, ZeroDivisionError, ArithmeticError, AttributeError):
        return {}
    return {"tpot_p50_ms": 1e3 / ceiling} if math.isfinite(ceiling) and ceiling > 0 else {}


def with_bands(pred: PointPrediction, setup: Setup, engine: EngineConfig, *,
               ceilings: dict[str, float] | None = None) -> PointPrediction:
    """``pred`` with the band around each of its values (``model.bands``), for its regime: its mean running
    batch, the TP degree, V0/V1 (chunked prefill), the device and its share of step time on prefill compute; an MoE
    model on a GPU has none, with the reason (``bands.MOE_SERVING_NO_BAND``), nor has a V1 engine with chunked
    prefill off (:data:`V1_UNCHUNKED_NO_BAND`). A band stops at the value's ``ceilings`` (an open loop's throughput
    at what its sends offer, :func:`_sent_ceilings`: trial s23 found 435-560 tok/s at a point that could send
    512) and at its physical floor (:func:`_physical_floors`)."""
    out: dict[str, tuple[float, float]] = {}
    notes: dict[str, str] = {}
    observed: dict[str, tuple[float, float]] = {}
    # the corpus's GPU runs are all of dense models: an MoE model's values on a GPU are a regime no run bands
    moe = setup.device != "cpu" and setup.model.is_moe and not setup.model.is_nominal
    # V1 with chunked prefill off: the corpus's V1 runs (and the CPU recordings) chunk, its V0 runs schedule
    # prefill-only steps: no measured run has this engine's scheduling
    unchunked_v1 = engine.scheduler_kind == "v1" and not engine.chunked_prefill
    floors = _physical_floors(setup)
    unbanded = _precision_no_band(setup)
    for metric in bands.BAND_METRICS:
        value = float(getattr(pred, metric))
        if not math.isfinite(value):
            continue
        if pred.unstable:  # no steady state: a band of the value at this run length says nothing
            notes[metric] = f"no band: {pred.unstable}"
            continue
        if moe:
            notes[metric] = bands.MOE_SERVING_NO_BAND
            continue
        if unchunked_v1:
            notes[metric] = V1_UNCHUNKED_NO_BAND
            continue
        if unbanded:
            notes[metric] = unbanded
            continue
        reg = bands.regime_of(metric, mean_running_batch=pred.mean_running_batch,
                              tp=engine.tensor_parallel_size, chunked_prefill=engine.chunked_prefill,
                              device=setup.device, prefill_share=pred.time_shares.get("prefill_compute", 0.0))
        b = bands.band_for(reg)
        if b is not None:
            lo, hi = b.around(value)
            top = (ceilings or {}).get(metric)
            lo, hi = (lo, hi) if top is None or hi <= top else (min(lo, top), top)
            floor = floors.get(metric)
            out[metric] = (lo, hi) if floor is None else (max(lo, floor), max(hi, floor))
        elif (note := bands.band_note(reg)) is not None:
            notes[metric] = note
            seen = bands.load_observed_ranges().get(reg.pooled_key)  # the numbers the note quotes
            if seen is not None:
                observed[metric] = (seen.lo, seen.hi)
    if not (out or notes):
        return pred
    return dataclasses.replace(pred, bands=out, band_notes=notes, observed_ranges=observed)


def simulate_sweep(setup: Setup, workloads: Sequence[Workload], **kw: Any) -> list[PointPrediction]:
    """:func:`simulate` for each workload (the engine config and constants are resolved once)."""
    engine = kw.pop("engine", None) or EngineConfig.from_setup(setup)
    constants = kw.pop("constants", None) or default_constants(setup)
    return [simulate(setup, w, engine=engine, constants=constants, **kw) for w in workloads]
