"""The step-level serving model of vLLM: predict a whole sweep from the spec sheet.

A pure-Python, discrete-event simulation of a vLLM V1-style engine (model layer: imports only ``errors``,
``units`` and ``pytest_roofline.model.*``; no pytest, no I/O; numpy only through ``model.workload``, whose
open-loop arrival schedule is the load generator's own, drawn with numpy).

Public API (the interface the other layers code against)
---------------------------------------------------------
``ArrivalKind``            CLOSED (C clients, each sends its next request when its previous one finished),
                           POISSON, GAMMA (open loop, ``burstiness`` = gamma shape, as ``vllm bench serve``).
``LengthDist``             token lengths (``model.workload.LengthDist``, the load generator's own): ``fixed``,
                           ``uniform``, ``normal``, ``file``; per-request draws by ``workload.request_lengths``.
``Workload``               lengths, request count, arrival process, seed and ``point_id`` (with the seed, they
                           seed the arrival schedule exactly as the load generator's ``LoadSpec.seed`` and
                           ``point_id`` do: ``model.workload.arrival_offsets_s``), ``ignore_eos``,
                           ``prefix_hit_rate``, and the shared workload description: ``dataset``
                           (``workload.DatasetLengths``), ``prefix_share`` / ``shared_prefix_len``, ``ramp_up``,
                           ``warmup_requests`` (not simulated; their prefixes are cached before the point).
``EngineConfig``           scheduler limits, block size, KV pool (``num_gpu_blocks``), chunked prefill (V1) or
                           not (0.5-era V0), prefix caching, TP; ``EngineConfig.from_setup(setup)``.
``ServingConstants``       the efficiency fractions and overheads; ``default_constants(setup)`` documents each
                           default's public source; ``replace``/``to_dict``/``from_dict``; ``FIELDS_FITTABLE``.
``StepCost`` / ``step_cost``  one engine step's time and its terms.
``PointPrediction``        one sweep point's predicted metrics (``to_dict``).
``simulate(setup, workload, engine=, constants=, trace=)`` / ``simulate_sweep`` / ``workload_for_point`` /
``kv_accounting(setup)`` (the KV pool ``EngineConfig.from_setup`` uses) / ``StepRecord`` (``trace``) /
``CONSTANT_SOURCES``.

Refinements of the agreed interface: ``ServingConstants`` also carries ``allreduce_latency_s`` (the catalog has
link bandwidths but no latencies) and ``host_mem_bytes_per_s`` / ``host_peak_flop_per_s`` (stand-ins for the
``cpu`` pseudo-device, which has no roofline figures); ``LengthDist.sample`` takes a ``random.Random``; an
open-loop ``Workload.concurrency`` is the load generator's in-flight cap (arrivals wait at the client, and their
latency clock starts when sent); ``ignore_eos=False`` is refused (EOS timing is not modelled).

Scheduler (vLLM V1, ``vllm/v1/core/sched/scheduler.py``, FCFS policy)
--------------------------------------------------------------------
Each step has a token budget ``max_num_batched_tokens``.  RUNNING requests are served first, in order: each
gets ``min(tokens it still needs, budget)`` new tokens (1 for a decoding request, the rest of its prompt for a
prefilling one: chunked prefill).  When the KV pool cannot give the blocks, the *last* running request is
preempted (its blocks freed, ``num_computed_tokens`` reset: it is recomputed later as a prefill of prompt +
output so far) until the allocation fits or the request itself was preempted.  Then, only if nothing was
preempted in this step, WAITING requests are admitted in FCFS order while budget, ``max_num_seqs`` and blocks
allow.  Blocks are ``ceil(tokens / block_size)`` per request, allocated as tokens are computed, freed on
completion; one block of the pool is vLLM's reserved ``null_block`` (``vllm/v1/core/block_pool.py``).
With ``chunked_prefill=False`` (the 0.5-era V0 default scheduler) a step either runs whole prefills only
(waiting requests first, as many whole prompts as fit the budget; a prompt longer than the budget runs alone)
or decodes only; a prompt is never split and decodes wait while prefills run.
Prefix caching (``Workload.prefix_hit_rate`` h, needs ``enable_prefix_caching``): a new request starts with
``floor(h x prompt / block_size)`` whole blocks already computed (at most prompt - 1 tokens, as vLLM always computes
the last one); the prefill computes the rest, attending over the cached part.  A recomputed (preempted) request
gets no hits.  A shared prefix (``prefix_share`` / ``shared_prefix_len``, the prompts the load generator sends)
gives request i the whole blocks of its prefix that an earlier request or the warm-up already computed
(``workload.prefix_cache_hits``); ``PointPrediction.prefix_cache_hit_rate`` is hits / prompt tokens, vLLM's
``vllm:prefix_cache_hits`` / ``vllm:prefix_cache_queries``.

Step cost (per GPU; ``step_cost``)
-----------------------------------
Linear layers and attention are separate kernels, so each is bounded on its own and the two add::

    linear    = max(W_step / (e_m BW),  F_lin / (e_f peak))
    attention = max(KV_step / (e_m BW), F_attn / (e_f peak))
    time      = linear + attention + kernels x mem_latency + allreduce + step_overhead + per_seq x sequences

* ``W_step``: every streamed weight byte once (the input embedding table is a lookup, not read whole); an MoE
  layer reads only the experts its tokens touch, ``E (1 - (1 - k/E)^T)`` for T tokens with top-k routing.
* ``F_lin``: 2 x (streamed parameters without the lm_head) per scheduled token + 2 x lm_head parameters per
  scheduled sequence (vLLM computes logits only at each sequence's last position).
* ``KV_step``: each decoding sequence reads its whole KV (context including the new token); a prefill chunk of
  n tokens after a computed tokens reads a + n tokens of KV.
* ``F_attn``: 4 x layers x q_heads x head_dim per (query, key) pair; causal for prefill chunks
  (``n a + n (n + 1) / 2`` pairs), ``context`` pairs per decoding sequence.
* TP = t: weights, FLOPs and KV divided over t GPUs (the per-GPU figures of the Setup: KV by
  ``kv_heads_per_rank``, replicated K/V heads when t > KV heads), plus 2 ring all-reduces per layer of
  ``tokens x hidden x 2`` bytes: ``2 (t-1)/t x bytes / (link x interconnect_efficiency) + latency``, with the
  link = half the catalog's bidirectional ``interconnect_bytes_per_s`` and the latency the catalog's
  ``interconnect_latency_s`` (8 us without one) -- ``analytical.tensor_parallel_allreduce`` via
  ``Setup.allreduce``, the one home the roofline uses too.  Pipeline parallelism is refused (SimulationError).
* dtypes change bytes (``Setup.weight_dtype``, ``Setup.kv_dtype``), not code.

When both terms of each ``max`` are memory-bound this is ``analytical.decode_step`` at ``e_m BW``: the decode
roofline of the rest of the project, plus overheads.

Speed
-----
Runs of pure-decode steps with an unchanged running set are advanced in one tight loop (no per-sequence Python
work): until the next completion, the next arrival that could be admitted, or the next block allocation that
would exhaust the pool.  Block allocations in such a run are periodic per request (every ``block_size``
steps), counted from a histogram of phases.  The bulk path computes each step's time with the same function
and the same arguments as the step-by-step path, so both give the same results (``simulate(...,
_bulk=False)`` is the slow reference; tests compare them).

Defaults: :func:`default_constants` (sources in :data:`CONSTANT_SOURCES` and docs/sources.md).  For
``device == "cpu"`` (the vLLM CPU engine serving the project's tiny model) they are uncalibrated order-of-magnitude
values: that engine's costs are mostly overhead, so calibrate before trusting a CPU prediction.

Metrics follow ``vllm bench serve``: TTFT from arrival to the first token; TPOT = (E2E - TTFT)/(n - 1); ITL =
every gap between a request's consecutive tokens; duration from the first arrival to the last completion;
percentiles by linear interpolation (numpy's default).  Network and HTTP time are not modelled.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import numbers
from bisect import bisect_left
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pytest_roofline.errors import SetupError, SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import vllm_defaults
from pytest_roofline.model import workload as _schedule
from pytest_roofline.model.setup import kv_accounting as setup_kv_accounting
from pytest_roofline.model.workload import DatasetLengths, LengthDist, RampUp

__all__ = [
    "ArrivalKind", "LengthDist", "Workload", "EngineConfig", "ServingConstants", "StepCost", "step_cost",
    "PointPrediction", "simulate", "simulate_sweep", "default_constants", "workload_for_point",
    "kv_accounting", "SimulationError", "StepRecord", "CONSTANT_SOURCES", "KERNELS_PER_LAYER", "ACTIVATION_BYTES",
]

#: kernels per decoder layer charged the fixed memory latency: the QKV, output, gate/up and down GEMMs and the
#: attention kernel (norms and activations are fused into these by vLLM's compiled graphs); plus one lm_head.
KERNELS_PER_LAYER = 5
#: bytes per activation element in an all-reduce (bf16 hidden states); its home is model/analytical.py
ACTIVATION_BYTES = an.ACTIVATION_BYTES


# ---------------------------------------------------------------------------------------------------------
# workload
# ---------------------------------------------------------------------------------------------------------


class ArrivalKind(enum.Enum):
    CLOSED = "closed"
    POISSON = "poisson"
    GAMMA = "gamma"


# LengthDist: the one length distribution, model.workload.LengthDist (imported above, re-exported here)


@dataclass(frozen=True)
class Workload:
    input_len: LengthDist
    output_len: LengthDist
    num_requests: int
    arrival: ArrivalKind = ArrivalKind.CLOSED
    concurrency: int | None = None
    rate_req_per_s: float | None = None
    burstiness: float = 1.0
    seed: int = 0
    ignore_eos: bool = True
    prefix_hit_rate: float = 0.0
    point_id: str = "point"  # the load generator's LoadSpec.point_id (and default): seeds the arrival schedule
    dataset: DatasetLengths | None = None  # per-request lengths from a dataset's entries (workload.request_lengths)
    prefix_share: float = 0.0  # the shared prefix the load generator's prompts carry (workload.prefix_lens)
    shared_prefix_len: int = 0
    ramp_up: RampUp | None = None  # open loop: the rate rises over the requests (workload.arrival_offsets_s)
    warmup_requests: int = 0  # the load generator's warm-up: not simulated, but its prefixes are cached

    def __post_init__(self) -> None:
        if self.num_requests < 1:
            raise SimulationError("a workload needs num_requests >= 1")
        if self.arrival is ArrivalKind.CLOSED:
            if not self.concurrency or self.concurrency < 1:
                raise SimulationError("a closed-loop workload needs concurrency >= 1")
        else:
            r = self.rate_req_per_s
            if r is None or not (r > 0) or math.isinf(r):
                raise SimulationError("an open-loop workload needs a finite rate_req_per_s > 0")
            if not self.burstiness > 0:
                raise SimulationError("burstiness must be > 0")
        if not 0.0 <= self.prefix_hit_rate < 1.0:
            raise SimulationError("prefix_hit_rate must be in [0, 1)")
        if not 0.0 <= self.prefix_share < 1.0:
            raise SimulationError("prefix_share must be in [0, 1)")
        if not self.ignore_eos:
            raise SimulationError("the serving model generates exactly output_len tokens: ignore_eos must be "
                                  "true (EOS timing is not modelled)")


# ---------------------------------------------------------------------------------------------------------
# engine
# ---------------------------------------------------------------------------------------------------------


def kv_accounting(setup: Any) -> an.KVAccounting:
    """vLLM's KV pool for ``setup`` (``model.setup.kv_accounting``), a SimulationError when it cannot be worked out."""
    try:
        return setup_kv_accounting(setup)
    except SetupError as exc:
        raise SimulationError(str(exc)) from None


def _bool_arg(args: Mapping[str, Any], key: str, default: bool) -> bool:
    v = args.get(key)
    if v is None:
        return default
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    num_gpu_blocks: int
    chunked_prefill: bool = True
    enable_prefix_caching: bool = False
    tensor_parallel_size: int = 1

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "max_num_batched_tokens", "block_size", "tensor_parallel_size"):
            if int(getattr(self, name)) < 1:
                raise SimulationError(f"EngineConfig.{name} must be >= 1")
        if self.num_gpu_blocks < 2:
            raise SimulationError(f"num_gpu_blocks = {self.num_gpu_blocks}: vLLM needs at least one usable block "
                                  "besides its null block (the KV pool is too small)")

    @classmethod
    def from_setup(cls, setup: Any) -> EngineConfig:
        """The scheduler limits resolved in the Setup (vllm_defaults + engine.args), the KV pool from
        :func:`kv_accounting` (or ``num_gpu_blocks_override``), chunked prefill / prefix caching as the Setup
        resolved them from vllm_defaults (V0: chunking only for > 32K contexts from 0.5.3, no prefix caching;
        V1: both on) unless engine.args set them."""
        args = dict(setup.engine_args or {})
        version = setup.engine_version or str(vllm_defaults.NEWEST_KNOWN_VERSION)
        chunk_default = getattr(setup, "enable_chunked_prefill", None)
        if chunk_default is None:
            chunk_default = vllm_defaults.default_enable_chunked_prefill(
                version, max_model_len=getattr(setup, "max_model_len", None))
        prefix_default = getattr(setup, "enable_prefix_caching", None)
        if prefix_default is None:
            prefix_default = vllm_defaults.default_enable_prefix_caching(version)
        blocks = args.get("num_gpu_blocks_override")
        num_blocks = int(blocks) if blocks is not None else kv_accounting(setup).num_blocks
        return cls(
            max_num_seqs=int(setup.max_num_seqs), max_num_batched_tokens=int(setup.max_num_batched_tokens),
            block_size=int(setup.block_size), num_gpu_blocks=num_blocks,
            chunked_prefill=_bool_arg(args, "enable_chunked_prefill", bool(chunk_default)),
            enable_prefix_caching=_bool_arg(args, "enable_prefix_caching", bool(prefix_default)),
            tensor_parallel_size=int(setup.tensor_parallel_size),
        )


# ---------------------------------------------------------------------------------------------------------
# constants
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingConstants:
    """Efficiency fractions and overheads of the step cost; see :func:`default_constants` for the sources.

    ``host_mem_bytes_per_s`` / ``host_peak_flop_per_s`` stand in for a device that has no roofline figures (the
    ``cpu`` pseudo-device); ``allreduce_latency_s`` is the fixed cost of one all-reduce (the catalog has link
    bandwidths but no latencies)."""

    hbm_efficiency: float
    flop_efficiency: float
    mem_latency_s: float
    step_overhead_s: float
    per_seq_overhead_s: float
    interconnect_efficiency: float = 0.8
    #: None: the catalog entry's ``interconnect_latency_s``, else ``analytical.DEFAULT_ALLREDUCE_LATENCY_S``
    allreduce_latency_s: float | None = None
    host_mem_bytes_per_s: float | None = None
    host_peak_flop_per_s: float | None = None

    FIELDS_FITTABLE: ClassVar[tuple[str, ...]] = (
        "hbm_efficiency", "flop_efficiency", "step_overhead_s", "per_seq_overhead_s")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise SimulationError(f"ServingConstants.{f.name} must be a finite number, got {v!r}")
            object.__setattr__(self, f.name, float(v))
        for name in ("hbm_efficiency", "flop_efficiency", "interconnect_efficiency"):
            if not 0 < getattr(self, name) <= 1:
                raise SimulationError(f"ServingConstants.{name} must be in (0, 1], got {getattr(self, name)!r}")
        for name in ("mem_latency_s", "step_overhead_s", "per_seq_overhead_s", "allreduce_latency_s"):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise SimulationError(f"ServingConstants.{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("host_mem_bytes_per_s", "host_peak_flop_per_s"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise SimulationError(f"ServingConstants.{name} must be > 0, got {v!r}")

    def replace(self, **kw: Any) -> ServingConstants:
        unknown = set(kw) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise SimulationError(f"unknown serving constant(s): {', '.join(sorted(unknown))}; "
                                  f"known: {', '.join(f.name for f in dataclasses.fields(self))}")
        return dataclasses.replace(self, **kw)

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: ServingConstants | None = None) -> ServingConstants:
        """Constants from a mapping; with ``base`` the mapping overrides only the fields it names."""
        if base is not None:
            return base.replace(**dict(data))
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise SimulationError(f"unknown serving constant(s): {', '.join(sorted(unknown))}")
        return cls(**dict(data))


#: where each default comes from (docs/sources.md has the full notes)
CONSTANT_SOURCES: Mapping[str, str] = {
    "hbm_efficiency": "0.80: aiconfigurator's mem_bw_empirical_scaling_factor 0.8 (ai-dynamo/aiconfigurator, "
                      "aic-core/src/aiconfigurator_core/systems/*.yaml); inside the 66-84% of peak that Vidur's "
                      "profiled A100 decode GEMVs reach (microsoft/vidur data/profiling/compute/a100/"
                      "meta-llama/Meta-Llama-3-8B/mlp.csv)",
    "flop_efficiency": "0.75: large GEMMs at 72-86% of peak FLOP/s in Vidur's profiles (A100 Llama-3-8B "
                       "gate+up/down at 32,768 tokens: 75%/74%); kipply's profiled MLP efficiency 0.72",
    "mem_latency_s": "3 us per kernel: aiconfigurator's mem_empirical_constant_latency 0.000003 (same yaml files); "
                     f"charged to {KERNELS_PER_LAYER} kernels per layer + the lm_head",
    "step_overhead_s": "1.0 ms (cuda): engine time per step not explained by bandwidth: the Day 3 notebook measured "
                       "a 3.3 ms gap at batch 1 over the full-bandwidth weight read, of which the 0.8 bandwidth "
                       "factor and the kernel latencies explain ~2.5 ms (docs/sources.md)",
    "per_seq_overhead_s": "10 us (cuda): per running sequence per step (scheduler bookkeeping, sampler, output "
                          "processing); an order-of-magnitude estimate, no public measurement (sources.d)",
    "interconnect_efficiency": "0.8: the same empirical factor aiconfigurator applies to bandwidth",
    "allreduce_latency_s": "the catalog entry's interconnect_latency_s; without one 8 us "
                           "(analytical.DEFAULT_ALLREDUCE_LATENCY_S): llm-analysis's minimum message latency per TP "
                           "communication (cli99/llm-analysis gpu_configs/*.json, get_latency_fwd_per_tp_comm)",
    "cpu": "device cpu (vLLM CPU engine, tiny model): UNCALIBRATED order-of-magnitude defaults: 2 ms per step "
           "(eager PyTorch dispatch of a few hundred ops + the Python engine loop), 50 us per sequence, "
           "20 GB/s and 100 GFLOP/s of host memory and compute, 10% FLOP efficiency (the tiny model's GEMMs have "
           "K = 128: far from the shapes a CPU BLAS reaches its peak on); calibrate before trusting them",
}


def default_constants(setup: Any) -> ServingConstants:
    """The documented defaults (see :data:`CONSTANT_SOURCES`); ``cpu`` devices get uncalibrated ones."""
    if getattr(setup, "device", "cuda") == "cpu" or getattr(setup.hardware, "family", "") == "cpu":
        return ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.1, mem_latency_s=0.0,
                                step_overhead_s=2e-3, per_seq_overhead_s=50e-6,
                                host_mem_bytes_per_s=20e9, host_peak_flop_per_s=100e9)
    return ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.75, mem_latency_s=3e-6,
                            step_overhead_s=1.0e-3, per_seq_overhead_s=10e-6)


# ---------------------------------------------------------------------------------------------------------
# step cost
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepCost:
    """One step's time and the terms it adds up from (``time_s`` = the sum of the six terms).

    A ``max`` goes to its winner: a memory-bound linear part is ``weights_s``, a compute-bound one is split
    into ``prefill_compute_s``/``decode_compute_s`` by token share; attention likewise (``kv_s`` or compute).
    ``overhead_s`` holds the kernel latencies, the per-step and the per-sequence overheads."""

    time_s: float
    weights_s: float
    kv_s: float
    prefill_compute_s: float
    decode_compute_s: float
    overhead_s: float
    allreduce_s: float


@dataclass(frozen=True)
class StepRecord:
    """One simulated engine step (``simulate(..., trace=[...])`` appends these; tracing runs step by step)."""

    start_s: float
    time_s: float
    decode_seqs: int
    prefill_tokens: int
    prefill_seqs: int
    running: int
    waiting: int
    used_blocks: int
    preemptions: int


class _CostModel:
    """Per-setup coefficients of the step cost, computed once."""

    def __init__(self, setup: Any, constants: ServingConstants, engine: EngineConfig) -> None:
        tp = int(engine.tensor_parallel_size)
        if int(getattr(setup, "tensor_parallel_size", 1)) != tp:  # an EngineConfig of another TP degree
            setup = setup.with_changes(tensor_parallel_size=tp)
        pp = int(getattr(setup, "pipeline_parallel_size", 1))
        if pp > 1:
            raise SimulationError(f"pipeline_parallel_size={pp}: the serving model simulates one tensor-parallel "
                                  "group; vLLM's pipeline keeps several batches in flight through the stages "
                                  "(vllm/v1/engine/core.py batch queue), which it does not model. The KV pool and "
                                  "per-stage memory of a PP setup are modelled (roofline quantities)")
        arch = setup.model
        self.tp = tp
        bw = setup.hardware.hbm_bytes_per_s or constants.host_mem_bytes_per_s
        peak: float | None
        try:
            peak = float(setup.peak_flop_per_s)
        except Exception:  # the cpu pseudo-device has no peaks
            peak = constants.host_peak_flop_per_s
        if not bw or not peak:
            raise SimulationError(f"hardware {setup.hardware.id!r} has no bandwidth/peak figures: give them in the "
                                  "YAML or set serving: host_mem_bytes_per_s / host_peak_flop_per_s")
        self.bw = float(bw) * constants.hbm_efficiency
        self.peak = float(peak) * constants.flop_efficiency
        wbytes = float(setup.weight_bytes) / float(arch.param_count())  # bytes per parameter at the weight dtype
        streamed = float(arch.streamed_param_count())
        head = float(arch.lm_head_param_count()) if not arch.is_nominal else 0.0
        if arch.tie_word_embeddings and not arch.is_nominal:
            head = float(arch.embedding_param_count())
        self.moe_layers = 0
        self.expert_params = 0.0
        self.num_experts = 0
        self.top_k = 0
        if not arch.is_nominal and arch.is_moe:
            self.moe_layers = arch.num_moe_layers
            self.expert_params = float(arch.expert_param_count())
            self.num_experts = int(arch.num_experts)
            self.top_k = int(arch.num_experts_per_tok)
        # bytes read every step regardless of routing (dense part), per GPU: the 1/TP share of the streamed weights
        # plus the K/V heads a rank replicates when TP > num_kv_heads (Setup.kv_replica_weight_bytes, 0 otherwise)
        routed_active = self.moe_layers * self.top_k * self.expert_params
        self.dense_weight_bytes = (streamed - routed_active) * wbytes / tp
        if tp > 1:
            self.dense_weight_bytes += float(setup.kv_replica_weight_bytes)
        self.expert_bytes_per_layer = self.expert_params * wbytes / tp
        self.lin_flop_per_token = 2.0 * (streamed - head) / tp
        self.head_flop_per_seq = 2.0 * head / tp
        # one GPU's KV bytes per token (its KV heads: Setup.kv_bytes_per_token_per_gpu, the roofline's figure)
        self.kv_bytes_per_token: float = float(setup.kv_bytes_per_token_per_gpu)
        if arch.is_nominal:
            qd = arch.num_kv_heads * arch.head_dim  # unknown query heads: assume MHA-sized queries = KV width
        else:
            qd = arch.num_attention_heads * arch.head_dim
        self.attn_flop_per_pair: float = 4.0 * arch.num_layers * qd / tp
        self.fixed_latency_s: float = (KERNELS_PER_LAYER * arch.num_layers + 1) * constants.mem_latency_s
        self.step_overhead_s = constants.step_overhead_s
        self.per_seq_overhead_s = constants.per_seq_overhead_s
        self.allreduce_per_token_s = 0.0
        self.allreduce_fixed_s = 0.0
        if tp > 1:
            # the two ring all-reduces per layer: analytical.tensor_parallel_allreduce through Setup.allreduce, over
            # one link direction at interconnect_efficiency, the latency from the catalog unless set here
            try:
                ar = setup.allreduce(link_efficiency=constants.interconnect_efficiency,
                                     latency_s=constants.allreduce_latency_s)
            except SetupError as exc:
                raise SimulationError(str(exc)) from None
            self.allreduce_per_token_s = ar.per_token_s
            self.allreduce_fixed_s = ar.fixed_s

    def weight_bytes(self, n_tokens: int) -> float:
        if not self.moe_layers:
            return self.dense_weight_bytes
        distinct = self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** n_tokens)
        return self.dense_weight_bytes + self.moe_layers * distinct * self.expert_bytes_per_layer

    def time(self, n_dec: int, dec_ctx: float, pf_tokens: int, pf_kv_tokens: int, pf_pairs: float,
             n_seqs: int) -> float:
        """Step time; the same arithmetic for the bulk and the step-by-step paths."""
        n_tok = n_dec + pf_tokens
        w = self.weight_bytes(n_tok) / self.bw
        c = (self.lin_flop_per_token * n_tok + self.head_flop_per_seq * n_seqs) / self.peak
        kv = self.kv_bytes_per_token * (dec_ctx + pf_kv_tokens) / self.bw
        a = self.attn_flop_per_pair * (dec_ctx + pf_pairs) / self.peak
        t = (w if w >= c else c) + (kv if kv >= a else a) + self.fixed_latency_s + self.step_overhead_s \
            + self.per_seq_overhead_s * n_seqs
        if self.tp > 1:
            t += self.allreduce_fixed_s + self.allreduce_per_token_s * n_tok
        return t

    def terms(self, n_dec: int, dec_ctx: float, pf_tokens: int, pf_kv_tokens: int, pf_pairs: float,
              n_seqs: int) -> StepCost:
        n_tok = n_dec + pf_tokens
        w = self.weight_bytes(n_tok) / self.bw
        c_pf = self.lin_flop_per_token * pf_tokens / self.peak
        c_dec = (self.lin_flop_per_token * n_dec + self.head_flop_per_seq * n_seqs) / self.peak
        kv = self.kv_bytes_per_token * (dec_ctx + pf_kv_tokens) / self.bw
        a_pf = self.attn_flop_per_pair * pf_pairs / self.peak
        a_dec = self.attn_flop_per_pair * dec_ctx / self.peak
        weights_s = kv_s = pf_s = dec_s = 0.0
        if w >= c_pf + c_dec:
            weights_s = w
        else:
            pf_s += c_pf
            dec_s += c_dec
        if kv >= a_pf + a_dec:
            kv_s = kv
        else:
            pf_s += a_pf
            dec_s += a_dec
        over = self.fixed_latency_s + self.step_overhead_s + self.per_seq_overhead_s * n_seqs
        ar = (self.allreduce_fixed_s + self.allreduce_per_token_s * n_tok) if self.tp > 1 else 0.0
        return StepCost(time_s=self.time(n_dec, dec_ctx, pf_tokens, pf_kv_tokens, pf_pairs, n_seqs),
                        weights_s=weights_s, kv_s=kv_s, prefill_compute_s=pf_s, decode_compute_s=dec_s,
                        overhead_s=over, allreduce_s=ar)


def _prefill_sums(prefill_tokens: Sequence[tuple[int, int]]) -> tuple[int, int, float]:
    tokens = kv_tokens = 0
    pairs = 0.0
    for n, a in prefill_tokens:
        tokens += n
        kv_tokens += a + n
        pairs += n * a + n * (n + 1) / 2.0
    return tokens, kv_tokens, pairs


def step_cost(setup: Any, constants: ServingConstants | None = None, *,
              decode_ctx_tokens: Sequence[int] | int = (), prefill_tokens: Sequence[tuple[int, int]] = (),
              engine: EngineConfig | None = None) -> StepCost:
    """One step's cost.  ``decode_ctx_tokens``: the context (KV tokens including the new one) of each decoding
    sequence, or one int for a single sequence; ``prefill_tokens``: (chunk_len, already_computed_len) per
    prefilling sequence.  ``engine`` only supplies the TP degree (default: the setup's)."""
    constants = constants or default_constants(setup)
    if engine is None:
        engine = EngineConfig(max_num_seqs=max(1, int(setup.max_num_seqs)),
                              max_num_batched_tokens=max(1, int(setup.max_num_batched_tokens)),
                              block_size=int(setup.block_size), num_gpu_blocks=2,
                              tensor_parallel_size=int(setup.tensor_parallel_size))
    ctx = [int(decode_ctx_tokens)] if isinstance(decode_ctx_tokens, int) else [int(c) for c in decode_ctx_tokens]
    pf = [(int(n), int(a)) for n, a in prefill_tokens]
    model = _CostModel(setup, constants, engine)
    tok, kvt, pairs = _prefill_sums(pf)
    return model.terms(len(ctx), sum(ctx), tok, kvt, pairs, len(ctx) + len(pf))


# ---------------------------------------------------------------------------------------------------------
# prediction
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PointPrediction:
    concurrency: int | None
    rate_req_per_s: float | None
    num_requests: int
    duration_s: float
    output_throughput_tok_per_s: float
    request_throughput_req_per_s: float
    per_request_output_tok_per_s: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    ttft_mean_ms: float
    tpot_p50_ms: float
    tpot_p99_ms: float
    tpot_mean_ms: float
    itl_p50_ms: float
    itl_p99_ms: float
    e2e_mean_ms: float
    mean_running_batch: float
    max_running_batch: int
    max_kv_usage: float
    mean_kv_usage: float
    preemptions: int
    mean_queue_ms: float
    steps: int
    time_shares: Mapping[str, float] = field(default_factory=dict)
    #: prompt tokens served by the prefix cache from the workload's shared prefix / prompt tokens (first
    #: computations; ``prefix_hit_rate``'s synthetic hits are not counted)
    prefix_cache_hit_rate: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["time_shares"] = dict(self.time_shares)
        return d


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _percentile(sorted_vals: Sequence[float], q: float) -> float:
    n = len(sorted_vals)
    if n == 0:
        return math.nan
    pos = q / 100.0 * (n - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * frac


def _weighted_percentile(pairs: list[tuple[float, int]], q: float) -> float:
    """numpy-style linear percentile of the multiset where value v appears count times."""
    return _weighted_percentiles(pairs, (q,))[0]


def _weighted_percentiles(pairs: list[tuple[float, int]], qs: Sequence[float]) -> list[float]:
    pairs = sorted(p for p in pairs if p[1] > 0)
    n = sum(c for _, c in pairs)
    if n == 0:
        return [math.nan for _ in qs]
    cum = []
    s = 0
    for _, c in pairs:
        s += c
        cum.append(s)
    return [_wp(pairs, cum, n, q) for q in qs]


def _wp(pairs: list[tuple[float, int]], cum: list[int], n: int, q: float) -> float:
    pos = q / 100.0 * (n - 1)
    lo = int(math.floor(pos))
    frac = pos - lo
    i_lo = bisect_left(cum, lo + 1)
    i_hi = bisect_left(cum, min(lo + 1, n - 1) + 1)
    v_lo, v_hi = pairs[i_lo][0], pairs[i_hi][0]
    return v_lo + (v_hi - v_lo) * frac


class _Req:
    __slots__ = ("idx", "prompt", "out", "arrival", "computed", "produced", "blocks", "first_token",
                 "last_token", "finish", "scheduled_at", "client", "preempted")

    def __init__(self, idx: int, prompt: int, out: int, arrival: float, client: int) -> None:
        self.idx = idx
        self.prompt = prompt
        self.out = out
        self.arrival = arrival
        self.computed = 0
        self.produced = 0
        self.blocks = 0
        self.first_token = -1.0
        self.last_token = -1.0
        self.finish = -1.0
        self.scheduled_at = -1.0
        self.client = client
        self.preempted = False


def _arrival_times(workload: Workload) -> list[float]:
    """The open-loop send times: the load generator's schedule for the same (rate, burstiness, seed, point_id)."""
    shape = float(workload.burstiness) if workload.arrival is ArrivalKind.GAMMA else 1.0
    rate = workload.rate_req_per_s
    if rate is None:  # Workload refuses an open-loop point without one; a closed loop has no send times
        raise SimulationError("open-loop arrival times need rate_req_per_s")
    offsets: list[float] = _schedule.arrival_offsets_s(rate_req_per_s=float(rate), burstiness=shape,
                                                       seed=workload.seed, stream_id=workload.point_id,
                                                       count=workload.num_requests,
                                                       ramp_up=workload.ramp_up).tolist()
    return offsets


class _Sim:
    def __init__(self, setup: Any, workload: Workload, engine: EngineConfig, constants: ServingConstants,
                 bulk: bool, trace: list[StepRecord] | None = None) -> None:
        self.trace = trace
        if trace is not None:
            bulk = False
        self.cost = _CostModel(setup, constants, engine)
        self.engine = engine
        self.w = workload
        self.bulk = bulk
        self.bs = engine.block_size
        self.free = engine.num_gpu_blocks - 1  # vLLM's null block
        self.pool = engine.num_gpu_blocks - 1
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
        if (workload.prefix_share or workload.shared_prefix_len) and engine.enable_prefix_caching:
            pkw: dict[str, Any] = {"prefix_share": workload.prefix_share,
                                   "shared_prefix_len": workload.shared_prefix_len}
            warm_prefix = 0
            if workload.warmup_requests:
                warm = _schedule.request_lengths(workload.warmup_requests, input_len=workload.input_len,
                                                 output_len=workload.output_len, dataset=workload.dataset,
                                                 seed=workload.seed, stream_id=workload.point_id, warmup=True)
                warm_prefix = max(_schedule.prefix_lens(warm.input_lens, **pkw))
            self.prefix_hits = _schedule.prefix_cache_hits(self.prompts, _schedule.prefix_lens(self.prompts, **pkw),
                                                           block_size=self.bs, warm_prefix=warm_prefix)
        for p, o in zip(self.prompts, self.outs, strict=True):
            if -(-(p + o) // self.bs) > self.pool:
                raise SimulationError(f"a request of {p} + {o} tokens needs more KV blocks than the pool holds "
                                      f"({self.pool} usable blocks of {self.bs} tokens)")
        self.arrivals: deque[_Req] = deque()  # future arrivals (open loop), sorted
        self.closed = workload.arrival is ArrivalKind.CLOSED
        if not self.closed:
            times = _arrival_times(workload)
            for i, t in enumerate(times):
                self.arrivals.append(_Req(i, self.prompts[i], self.outs[i], t, -1))
        self.next_idx = 0
        # open loop with an in-flight cap (the load generator's optional concurrency cap): arrivals that find
        # the cap full wait at the client and are sent (their latency clock starts) when a request finishes
        self.cap = workload.concurrency if not self.closed else None
        self.held: deque[_Req] = deque()
        self.waiting: deque[_Req] = deque()
        self.running: list[_Req] = []
        self.done: list[_Req] = []
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
    def _new_closed(self, t: float, client: int) -> None:
        i = self.next_idx
        if i >= self.w.num_requests:
            return
        self.next_idx += 1
        self.waiting.append(_Req(i, self.prompts[i], self.outs[i], t, client))

    def _in_flight(self) -> int:
        return len(self.running) + len(self.waiting)

    def _cap_full(self) -> bool:
        return self.cap is not None and self._in_flight() >= self.cap

    def _admit_arrivals(self, until: float | None = None) -> None:
        t = self.now if until is None else until
        while self.arrivals and self.arrivals[0].arrival <= t:
            req = self.arrivals.popleft()
            if self._cap_full():
                self.held.append(req)
            else:
                self.waiting.append(req)

    # -- one step, request by request ---------------------------------------------------------------------
    def _alloc(self, req: _Req, n_new: int) -> bool:
        need = -(-(req.computed + n_new) // self.bs) - req.blocks
        if need <= self.free:
            if need > 0:
                self.free -= need
                req.blocks += need
            return True
        return False

    def _release(self, req: _Req) -> None:
        self.free += req.blocks
        req.blocks = 0

    def _preempt_last(self) -> _Req:
        victim = self.running.pop()
        self._release(victim)
        victim.computed = 0
        victim.preempted = True
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim

    def _initial_computed(self, req: _Req) -> int:
        if req.preempted:
            return 0
        shared = self.prefix_hits[req.idx]
        if self.hit <= 0:
            return shared
        cached = int(self.hit * req.prompt) // self.bs * self.bs
        return max(min(cached, req.prompt - 1), shared)

    def _schedule_v1(self) -> list[tuple[_Req, int]]:
        budget = self.engine.max_num_batched_tokens
        sched: list[tuple[_Req, int]] = []
        preempted = False
        running = self.running
        bs = self.bs
        i = 0
        while i < len(running) and budget > 0:
            req = running[i]
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
            while not self._alloc(req, n_new):
                victim = self._preempt_last()
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
            while self.waiting and budget > 0 and len(self.running) < self.engine.max_num_seqs:
                req = self.waiting[0]
                if req.computed == 0:
                    req.computed = self._initial_computed(req)
                n_new = req.prompt + req.produced - req.computed
                if not self.engine.chunked_prefill and n_new > budget:
                    break
                n_new = min(n_new, budget)
                if not self._admit(req, n_new, sched):
                    break
                budget -= n_new
        return sched

    def _admit(self, req: _Req, n_new: int, sched: list[tuple[_Req, int]]) -> bool:
        """Move the head of the waiting queue into the running batch with ``n_new`` tokens this step, if its KV
        blocks can be allocated (False, and nothing changes, when they cannot)."""
        if not self._alloc(req, n_new):
            return False
        self.waiting.popleft()
        self.running.append(req)
        if req.scheduled_at < 0:
            req.scheduled_at = self.now
        sched.append((req, n_new))
        return True

    def _schedule_v0(self) -> list[tuple[_Req, int]]:
        budget = self.engine.max_num_batched_tokens
        sched: list[tuple[_Req, int]] = []
        # prefills first, whole prompts only; a step with prefills runs no decodes
        while self.waiting and len(self.running) < self.engine.max_num_seqs:
            req = self.waiting[0]
            if req.computed == 0:
                req.computed = self._initial_computed(req)
            n_new = req.prompt + req.produced - req.computed
            if n_new > budget and sched:
                break
            if not self._admit(req, n_new, sched):
                break
            budget -= n_new
            if budget <= 0:
                break
        if sched:
            return sched
        i = 0
        while i < len(self.running):
            req = self.running[i]
            ok = True
            while not self._alloc(req, 1):
                victim = self._preempt_last()
                if victim is req:
                    ok = False
                    break
            if not ok:
                break
            sched.append((req, 1))
            i += 1
        return sched

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

    def _shares_add(self, n_dec: int, dec_ctx: float, pf_tok: int, pf_kv: int, pf_pairs: float, n_seqs: int,
                    mult: int = 1) -> None:
        sc = self.cost.terms(n_dec, dec_ctx, pf_tok, pf_kv, pf_pairs, n_seqs)
        sh = self.shares
        sh["weights"] += sc.weights_s * mult
        sh["kv"] += sc.kv_s * mult
        sh["prefill_compute"] += sc.prefill_compute_s * mult
        sh["decode_compute"] += sc.decode_compute_s * mult
        sh["overhead"] += sc.overhead_s * mult
        sh["allreduce"] += sc.allreduce_s * mult

    def _step(self) -> None:
        sched = self._schedule_v1() if self.engine.chunked_prefill else self._schedule_v0()
        if not sched:
            raise SimulationError("the scheduler could not schedule anything (a request larger than the pool?)")
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
        d = self.cost.time(n_dec, dec_ctx, pf_tok, pf_kv, pf_pairs, n_seqs)
        self._shares_add(n_dec, dec_ctx, pf_tok, pf_kv, pf_pairs, n_seqs)
        start = self.now
        self.now = start + d
        self._record_step(d, n_dec, dec_ctx, pf_tok, pf_kv, pf_pairs, n_seqs)
        if self.trace is not None:
            self.trace.append(StepRecord(start_s=start, time_s=d, decode_seqs=n_dec, prefill_tokens=pf_tok,
                                         prefill_seqs=n_seqs - n_dec, running=len(self.running),
                                         waiting=len(self.waiting), used_blocks=self.pool - self.free,
                                         preemptions=self.preemptions))
        now = self.now
        finished = []
        itl_d = 0
        for req, n in sched:
            req.computed += n
            if req.computed == req.prompt + req.produced:
                req.produced += 1
                if req.produced == 1:
                    req.first_token = now
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
        if finished:
            self._finish(finished)

    def _finish(self, finished: list[_Req]) -> None:
        ids = {id(r) for r in finished}
        self.running = [r for r in self.running if id(r) not in ids]
        for req in finished:
            req.finish = self.now
            self._release(req)
            self.done.append(req)
            if self.closed:
                self._new_closed(self.now, req.client)
        while self.held and not self._cap_full():
            req = self.held.popleft()
            req.arrival = self.now
            self.waiting.append(req)

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
                if self.engine.chunked_prefill:
                    # could it be admitted now?  Budget is left (len(run) < max_num_batched_tokens); the
                    # blocks it asks for stay the same and the free blocks only shrink while decodes run.
                    comp = head.computed or self._initial_computed(head)
                    n_new = min(head.prompt + head.produced - comp,
                                self.engine.max_num_batched_tokens - len(run))
                    need = -(-(comp + n_new) // self.bs) - head.blocks
                    if need <= self.free - self._decode_need():
                        return 0
                else:
                    return 0  # V0: a waiting prefill takes the next step if it fits; let the normal path decide
        return int(k) if k >= 2 else 0

    def _decode_need(self) -> int:
        bs = self.bs
        return sum(1 for r in self.running if r.computed % bs == 0)

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
        next_arrival = self.arrivals[0].arrival if self.arrivals else math.inf
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
        while j < k:
            if j > 0 and not blocked_wait and t >= next_arrival:
                break
            need = phase[(j + 1) % bs]
            if need > free:
                break
            j += 1
            free -= need
            used += need
            d = cost(B, S + B * j, 0, 0, 0.0, B)
            start = t
            last_start = start
            t = start + d
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
        self._shares_add(B, S + B * (j + 1) / 2.0, 0, 0, 0.0, B, mult=j)
        self.steps += j
        self.max_blocks = max_used
        if B > self.max_run:
            self.max_run = B
        self.itl.extend(first_gaps)
        self.itl.extend(itl_d.items())
        self.free = free
        # arrivals during the run join the queue (or the client's hold) as the step-by-step path would have put
        # them there at the start of each step: nothing else changed meanwhile, so all at once is the same
        self._admit_arrivals(until=last_start)
        self.now = t
        finished = []
        for r in run:
            r.computed += j
            r.produced += j
            r.blocks = -(-r.computed // bs)
            r.last_token = t
            if r.produced == r.out:
                finished.append(r)
        if finished:
            self._finish(finished)

    # -- main loop --------------------------------------------------------------------------------------
    def run(self) -> None:
        n = self.w.num_requests
        if self.closed:
            for c in range(min(self.w.concurrency or 1, n)):
                self._new_closed(0.0, c)
        guard = 0
        while len(self.done) < n:
            self._admit_arrivals()
            if not self.running and not self.waiting:
                if not self.arrivals:
                    raise SimulationError("simulation stalled: nothing running, waiting or arriving")
                self.now = max(self.now, self.arrivals[0].arrival)
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
        end = max(r.finish for r in done)
        duration = end - start
        ttft = sorted((r.first_token - r.arrival) * 1e3 for r in done)
        tpot = sorted((r.finish - r.first_token) / (r.out - 1) * 1e3 for r in done if r.out > 1)
        e2e = [(r.finish - r.arrival) for r in done]
        queue = [(r.scheduled_at - r.arrival) * 1e3 for r in done]
        per_req = [r.out / e for r, e in zip(done, e2e, strict=True) if e > 0]
        itl_p50, itl_p99 = _weighted_percentiles([(v * 1e3, c) for v, c in self.itl], (50, 99))
        out_tok = sum(r.out for r in done)
        busy = self.busy or 1.0
        total_share = sum(self.shares.values()) or 1.0
        return PointPrediction(
            concurrency=self.w.concurrency, rate_req_per_s=self.w.rate_req_per_s, num_requests=len(done),
            duration_s=duration,
            output_throughput_tok_per_s=out_tok / duration if duration > 0 else math.nan,
            request_throughput_req_per_s=len(done) / duration if duration > 0 else math.nan,
            per_request_output_tok_per_s=_mean(per_req),
            ttft_p50_ms=_percentile(ttft, 50), ttft_p99_ms=_percentile(ttft, 99), ttft_mean_ms=_mean(ttft),
            tpot_p50_ms=_percentile(tpot, 50) if tpot else math.nan,
            tpot_p99_ms=_percentile(tpot, 99) if tpot else math.nan,
            tpot_mean_ms=_mean(tpot) if tpot else math.nan,
            itl_p50_ms=itl_p50, itl_p99_ms=itl_p99,
            e2e_mean_ms=_mean(e2e) * 1e3,
            mean_running_batch=self.run_area / busy, max_running_batch=self.max_run,
            max_kv_usage=self.max_blocks / self.pool, mean_kv_usage=self.kv_area / busy / self.pool,
            preemptions=self.preemptions, mean_queue_ms=_mean(queue), steps=self.steps,
            time_shares={k: v / total_share for k, v in self.shares.items()},
            prefix_cache_hit_rate=sum(self.prefix_hits) / max(sum(self.prompts), 1),
        )


def simulate(setup: Any, workload: Workload, *, engine: EngineConfig | None = None,
             constants: ServingConstants | None = None, trace: list[StepRecord] | None = None,
             _bulk: bool = True) -> PointPrediction:
    """Simulate one sweep point.  ``trace``: a list to append a :class:`StepRecord` per step to (runs step by
    step); ``_bulk=False`` runs every step request by request (the slow reference the tests compare with)."""
    engine = engine or EngineConfig.from_setup(setup)
    constants = constants or default_constants(setup)
    sim = _Sim(setup, workload, engine, constants, _bulk, trace)
    sim.run()
    return sim.result()


def simulate_sweep(setup: Any, workloads: Sequence[Workload], **kw: Any) -> list[PointPrediction]:
    """:func:`simulate` for each workload (the engine config and constants are resolved once)."""
    engine = kw.pop("engine", None) or EngineConfig.from_setup(setup)
    constants = kw.pop("constants", None) or default_constants(setup)
    return [simulate(setup, w, engine=engine, constants=constants, **kw) for w in workloads]


def workload_for_point(setup: Any, *, concurrency: int | None = None, rate_req_per_s: float | None = None,
                       num_requests: int | None = None, requests_per_concurrency: float = 10.0,
                       burstiness: float = 1.0, seed: int = 0, input_len: int | LengthDist | None = None,
                       output_len: int | LengthDist | None = None, prefix_hit_rate: float = 0.0,
                       point_id: str = "point", dataset: DatasetLengths | None = None, prefix_share: float = 0.0,
                       shared_prefix_len: int = 0, ramp_up: RampUp | None = None,
                       warmup_requests: int = 0) -> Workload:
    """The workload a sweep point sends (lengths from the Setup unless given), as the load generator does:
    closed loop at ``concurrency`` with ``num_requests`` (default ``requests_per_concurrency x C``), or open loop
    at ``rate_req_per_s`` (Poisson when ``burstiness`` is 1, gamma otherwise; default ``max(10, 30 x rate)``
    requests, as measure/plan.py). ``seed`` and ``point_id`` are the load generator's (the prediction file's
    ``workload.seed`` and the sweep point's id): together they give the same arrival times it sends on, and
    the same per-request lengths (``dataset``, ``prefix_share``, ``shared_prefix_len``, ``ramp_up`` and
    ``warmup_requests`` are the rest of the load generator's description: model/workload.py)."""
    def dist(x: int | LengthDist | None, default: int) -> LengthDist:
        if isinstance(x, LengthDist):
            return x
        return LengthDist(int(x if x is not None else default))

    shape: dict[str, Any] = {"dataset": dataset, "prefix_share": float(prefix_share),
                             "shared_prefix_len": int(shared_prefix_len), "warmup_requests": int(warmup_requests)}
    if ramp_up is not None:
        shape["ramp_up"] = ramp_up
    inp = dist(input_len, int(setup.input_len))
    out = dist(output_len, int(setup.output_len))
    if rate_req_per_s is not None:
        n = num_requests if num_requests is not None else max(10, int(rate_req_per_s * 30))
        kind = ArrivalKind.POISSON if burstiness == 1.0 else ArrivalKind.GAMMA
        return Workload(input_len=inp, output_len=out, num_requests=int(n), arrival=kind,
                        concurrency=concurrency, rate_req_per_s=float(rate_req_per_s), burstiness=float(burstiness),
                        seed=seed, prefix_hit_rate=prefix_hit_rate, point_id=point_id, **shape)
    if concurrency is None:
        raise SimulationError("give concurrency (closed loop) or rate_req_per_s (open loop)")
    n = num_requests if num_requests is not None else max(1, int(round(requests_per_concurrency * concurrency)))
    return Workload(input_len=inp, output_len=out, num_requests=int(n), arrival=ArrivalKind.CLOSED,
                    concurrency=int(concurrency), seed=seed, prefix_hit_rate=prefix_hit_rate, point_id=point_id,
                    **shape)
