"""The step cost: one engine step's time on one GPU from the work it schedules (``CostModel``, the per-setup
coefficients computed once; ``step_cost``, one step's cost and its terms as ``StepCost``).

Step cost (per GPU; ``step_cost``)
-----------------------------------
Linear layers and attention are separate kernels, so each is bounded on its own and the two add::

    linear    = (w^p + c^p)^(1/p),  w = W_step / (e_m BW),  c = F_lin / (e_f peak)
    attention = max(KV_step / (e_kv BW), F_attn / (e_f peak)) + layers x attn_layer_latency
    gpu       = linear + attention + kernels x mem_latency + allreduce + step_overhead
    time      = gpu + per_seq x sequences             (synchronous scheduling)
    time      = max(gpu, per_seq x sequences)         (async scheduling: ``EngineConfig.async_scheduling``)

* ``p`` (``linear_overlap_p``, 1.75 on cuda): a GEMM near its ridge point reaches neither bound, so the two
  times combine as a p-norm, not the roofline's ``max`` (p = infinity, the constant unset: the CPU engine's
  default); measured on public per-operator profiles and the project's H200 sweep (``constants.CONSTANT_SOURCES``).
* ``e_m`` (``hbm_efficiency``) is dense weight streaming, ``e_kv`` (``kv_bw_efficiency``) the paged-KV attention
  reads, which reach a lower fraction of the bandwidth, plus a fixed cost per attention kernel
  (``attn_layer_latency_s``); both from kernel measurements (``constants.CONSTANT_SOURCES``).

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
  link = half the catalog's bidirectional ``interconnect_bytes_per_s`` and the latency NCCL's small-message ring
  latency for t ranks (``constants.ring_allreduce_latency_s``: 9.6 us at TP 2, 17.6 us at TP 4), at least the
  catalog's ``interconnect_latency_s`` -- ``analytical.tensor_parallel_allreduce`` via ``Setup.allreduce``, the
  one home the roofline uses too (the roofline keeps the catalog's latency: a ceiling).  Pipeline parallelism
  is refused (SimulationError).
* dtypes change bytes (``Setup.weight_dtype``, ``Setup.kv_dtype``), not code.
* ``per_seq`` (``per_seq_overhead_s``) is the engine core's CPU work per running sequence (scheduling, input
  preparation, output processing).  A synchronous engine does it between two GPU steps, so it adds; with async
  scheduling (vLLM's default on CUDA from 0.14.0) the engine core schedules step k + 1 while step k runs and
  processes step k's outputs while step k + 1 runs (vllm/v1/engine/core.py ``step_with_batch_queue``; vLLM's
  ``SchedulerConfig.async_scheduling``: "helps to avoid gaps in GPU utilization"), so a step takes the longer of
  the GPU's work and that CPU work, not their sum.  ``step_overhead`` stays in the GPU's part: its 1 ms was
  measured at batch 1 on an async-scheduling engine (the Day 3 notebook, vLLM 0.26; ``constants.CONSTANT_SOURCES``).

When each attention ``max`` is memory-bound and the linear part far below its ridge point this is
``analytical.decode_step`` at ``e_m BW``: the decode roofline of the rest of the project, plus overheads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_roofline.errors import SetupError, SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model.serving.constants import (
    KERNELS_PER_LAYER,
    ServingConstants,
    default_constants,
    ring_allreduce_latency_s,
)
from pytest_roofline.model.serving.engine import EngineConfig, async_scheduling_of
from pytest_roofline.model.setup import Setup

__all__ = ["StepCost", "CostModel", "step_cost"]


@dataclass(frozen=True)
class StepCost:
    """One step's time and the terms it adds up from (``time_s`` = the sum of the six terms).

    A ``max`` goes to its winner (the linear part's p-norm likewise, whole): a memory-bound linear part is
    ``weights_s``, a compute-bound one is split
    into ``prefill_compute_s``/``decode_compute_s`` by token share; attention likewise (``kv_s`` or compute).
    ``overhead_s`` holds the kernel latencies, the per-step overhead and what the per-sequence overhead adds (all of it,
    or with async scheduling only what outlasts the GPU's part of the step)."""

    time_s: float
    weights_s: float
    kv_s: float
    prefill_compute_s: float
    decode_compute_s: float
    overhead_s: float
    allreduce_s: float




class CostModel:
    """Per-setup coefficients of the step cost, computed once."""

    def __init__(self, setup: Setup, constants: ServingConstants, engine: EngineConfig) -> None:
        tp = int(engine.tensor_parallel_size)
        if int(setup.tensor_parallel_size) != tp:  # an EngineConfig of another TP degree
            setup = setup.with_changes(tensor_parallel_size=tp)
        pp = int(setup.pipeline_parallel_size)
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
        self.kv_bw = float(bw) * constants.kv_efficiency
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
        self.fixed_latency_s: float = ((KERNELS_PER_LAYER * arch.num_layers + 1) * constants.mem_latency_s
                                       + arch.num_layers * constants.attn_layer_latency_s)
        self.step_overhead_s = constants.step_overhead_s
        self.per_seq_overhead_s = constants.per_seq_overhead_s
        #: async scheduling: the per-sequence CPU work overlaps the GPU's step (the module's docstring)
        self.cpu_overlaps_gpu = bool(engine.async_scheduling)
        self.overlap_p: float | None = constants.linear_overlap_p
        self.allreduce_per_token_s = 0.0
        self.allreduce_fixed_s = 0.0
        if tp > 1:
            # the two ring all-reduces per layer: analytical.tensor_parallel_allreduce through Setup.allreduce, over
            # one link direction at interconnect_efficiency, the latency from the catalog unless set here
            latency = constants.allreduce_latency_s
            if latency is None:
                latency = max(ring_allreduce_latency_s(tp), setup.allreduce_latency_s)
            try:
                ar = setup.allreduce(link_efficiency=constants.interconnect_efficiency, latency_s=latency)
            except SetupError as exc:
                raise SimulationError(str(exc)) from None
            self.allreduce_per_token_s = ar.per_token_s
            self.allreduce_fixed_s = ar.fixed_s

    def weight_bytes(self, n_tokens: int) -> float:
        if not self.moe_layers:
            return self.dense_weight_bytes
        distinct = an.moe_experts_read(self.num_experts, self.top_k, n_tokens)
        return self.dense_weight_bytes + self.moe_layers * distinct * self.expert_bytes_per_layer

    def linear_s(self, w: float, c: float) -> float:
        """The linear layers' time from their weight-streaming time ``w`` and GEMM-compute time ``c``: the
        roofline's ``max`` when ``linear_overlap_p`` is unset, else their p-norm."""
        p = self.overlap_p
        if p is None:
            return w if w >= c else c
        return float((w ** p + c ** p) ** (1.0 / p))

    def _bounds(self, n_tok: int, dec_ctx: float, pf_kv_tokens: int, pf_pairs: float,
                n_seqs: int) -> tuple[float, float, float, float]:
        """The step's four roofline bounds: weight streaming, linear-layer FLOPs, KV reads, attention FLOPs."""
        w = self.weight_bytes(n_tok) / self.bw
        c = (self.lin_flop_per_token * n_tok + self.head_flop_per_seq * n_seqs) / self.peak
        kv = self.kv_bytes_per_token * (dec_ctx + pf_kv_tokens) / self.kv_bw
        a = self.attn_flop_per_pair * (dec_ctx + pf_pairs) / self.peak
        return w, c, kv, a

    def _gpu(self, linear_s: float, attention_s: float, n_tok: int) -> float:
        """The GPU's part of the step: every term but the per-sequence CPU work."""
        t = linear_s + attention_s + self.fixed_latency_s + self.step_overhead_s
        if self.tp > 1:
            t += self.allreduce_fixed_s + self.allreduce_per_token_s * n_tok
        return t

    def _cpu_visible(self, gpu_s: float, n_seqs: int) -> float:
        """What the per-sequence CPU work adds to a step whose GPU part takes ``gpu_s``: all of it when the engine
        schedules synchronously, only what outlasts the GPU's step with async scheduling."""
        cpu_s = self.per_seq_overhead_s * n_seqs
        if self.cpu_overlaps_gpu:
            return cpu_s - gpu_s if cpu_s > gpu_s else 0.0
        return cpu_s

    def _total(self, linear_s: float, attention_s: float, n_tok: int, n_seqs: int) -> float:
        """The step time from its linear and attention parts: the one sum ``time`` and ``terms`` both give."""
        gpu = self._gpu(linear_s, attention_s, n_tok)
        return gpu + self._cpu_visible(gpu, n_seqs)

    def time(self, n_dec: int, dec_ctx: float, pf_tokens: int, pf_kv_tokens: int, pf_pairs: float,
             n_seqs: int) -> float:
        """Step time alone (the bulk decode path's inner loop); ``terms`` gives the same ``time_s`` with its
        parts."""
        n_tok = n_dec + pf_tokens
        w, c, kv, a = self._bounds(n_tok, dec_ctx, pf_kv_tokens, pf_pairs, n_seqs)
        return self._total(self.linear_s(w, c), kv if kv >= a else a, n_tok, n_seqs)

    def terms(self, n_dec: int, dec_ctx: float, pf_tokens: int, pf_kv_tokens: int, pf_pairs: float,
              n_seqs: int) -> StepCost:
        """Step time and the terms it adds up from, computed once (``StepCost``)."""
        n_tok = n_dec + pf_tokens
        w, c, kv, a = self._bounds(n_tok, dec_ctx, pf_kv_tokens, pf_pairs, n_seqs)
        lin = self.linear_s(w, c)
        weights_s = kv_s = pf_s = dec_s = 0.0
        if w >= c:
            weights_s = lin
        else:  # compute-bound: the p-norm's time goes to prefill and decode by their FLOP shares
            c_pf = self.lin_flop_per_token * pf_tokens / self.peak
            scale = lin / c
            pf_s += c_pf * scale
            dec_s += (c - c_pf) * scale
        if kv >= a:
            kv_s = kv
        else:
            a_pf = self.attn_flop_per_pair * pf_pairs / self.peak
            pf_s += a_pf
            dec_s += a - a_pf
        gpu = self._gpu(lin, kv if kv >= a else a, n_tok)
        cpu = self._cpu_visible(gpu, n_seqs)  # _total's sum, worked out once for both fields
        over = self.fixed_latency_s + self.step_overhead_s + cpu
        ar = (self.allreduce_fixed_s + self.allreduce_per_token_s * n_tok) if self.tp > 1 else 0.0
        return StepCost(time_s=gpu + cpu,
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


def step_cost(setup: Setup, constants: ServingConstants | None = None, *,
              decode_ctx_tokens: Sequence[int] | int = (), prefill_tokens: Sequence[tuple[int, int]] = (),
              engine: EngineConfig | None = None) -> StepCost:
    """One step's cost.  ``decode_ctx_tokens``: the context (KV tokens including the new one) of each decoding
    sequence, or one int for a single sequence; ``prefill_tokens``: (chunk_len, already_computed_len) per
    prefilling sequence.  ``engine`` only supplies the TP degree and whether it schedules asynchronously (default:
    the setup's own, :func:`~pytest_roofline.model.serving.engine.async_scheduling_of`)."""
    constants = constants or default_constants(setup)
    if engine is None:
        engine = EngineConfig(max_num_seqs=max(1, int(setup.max_num_seqs)),
                              max_num_batched_tokens=max(1, int(setup.max_num_batched_tokens)),
                              block_size=int(setup.block_size), num_gpu_blocks=2,
                              tensor_parallel_size=int(setup.tensor_parallel_size),
                              async_scheduling=async_scheduling_of(setup))
    ctx = [int(decode_ctx_tokens)] if isinstance(decode_ctx_tokens, int) else [int(c) for c in decode_ctx_tokens]
    pf = [(int(n), int(a)) for n, a in prefill_tokens]
    model = CostModel(setup, constants, engine)
    tok, kvt, pairs = _prefill_sums(pf)
    return model.terms(len(ctx), sum(ctx), tok, kvt, pairs, len(ctx) + len(pf))
