"""The analytical model: pure functions over plain numbers.

Everything here takes and returns SI base units -- bytes, FLOP, seconds, bytes/s, FLOP/s, tokens/s -- and
every argument and field name carries its unit.  Nothing here knows about chips, models or vLLM versions:
callers look those up (``hardware``, ``architecture``, ``vllm_defaults``) and pass numbers in.  Results are
small frozen dataclasses.

The decode model is the nominal once-per-step traffic model used by both seeds (Pope et al. 2022 style):

* one decode step at batch ``B`` reads every streamed weight byte once (shared by the batch) and each
  sequence's own KV cache once;
* it does ``flop_per_token`` (= 2 x streamed parameters) of linear-layer FLOPs per sequence;
* step time is ``max(t_mem, t_comp)`` with ``t_mem = (W + B*kv_seq)/BW`` and ``t_comp = B*F_tok/peak``.

Attention FLOPs, activation traffic, KV writes, launch overhead and scheduler time are deliberately left out;
the measured-vs-model gap is what the tests of a live sweep are for.

Symbols used in docstrings: ``W`` weight bytes streamed per step, ``F_tok`` FLOP per token (2P),
``kv_seq`` KV bytes read per sequence per step (context x KV bytes per token), ``BW`` HBM bytes/s,
``peak`` dense FLOP/s.

Why one module (issue 19 asked: split by concept, or say why not).  Its ~950 lines are one concept, the closed-form
arithmetic of a decode deployment on plain numbers, in sections that read top to bottom: roofline basics, the
closed forms of the decode curve, the TP all-reduces, the knee, projection traffic, vLLM's memory accounting (the
numbers ``Worker.determine_available_memory`` works with), KV-pool sizing, static and dynamic batching, goodput.
Each section is pure functions over the units the previous ones define, with no state and no imports from the rest
of the project; the step-level serving model, the one part with its own state and policies, is already its own
package (``model/serving/``), and the memory section is the candidate to move next if it grows (its callers reach
it through ``Setup``).

"The lesson" ("Batching and Throughput") and "the notebook" ("Day 3 -- Benchmark the Endpoint") are the project's
two seed documents; they have no public page, and ``docs/sources.md`` says what each is and what it measured.
The vLLM facts are cited by release and path in vLLM's source (github.com/vllm-project/vllm at tag ``vX.Y.Z``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_roofline.units import GIB

__all__ = [
    # roofline and decode
    "DecodeStep",
    "Knee",
    "ridge_flop_per_byte",
    "attainable_flop_per_s",
    "decode_step",
    "decode_table",
    "intensity_asymptote_flop_per_byte",
    "half_saturation_batch",
    "throughput_asymptote_tok_per_s",
    "compute_roof_tok_per_s",
    "t_comp_per_seq_s",
    "t_mem_per_seq_s",
    "t_mem_intercept_s",
    "roofline_knee",
    "weight_only_knee_batch",
    "max_context_for_knee_tokens",
    "batch1_ceiling_tok_per_s",
    "prefill_floor_s",
    # tensor parallelism
    "AllReduceCost",
    "ring_allreduce_time_s",
    "tensor_parallel_allreduce",
    "DEFAULT_ALLREDUCE_LATENCY_S",
    "ACTIVATION_BYTES",
    "ALLREDUCES_PER_LAYER",
    # projection traffic
    "ProjectionTraffic",
    "projection_traffic",
    # vLLM KV accounting
    "KVAccounting",
    "vllm_kv_accounting",
    "estimate_activation_bytes",
    "SAMPLER_BYTES_PER_LOGIT",
    "DEFAULT_NON_TORCH_BYTES",
    "TP_NVLINK_NON_TORCH_BYTES",
    "NVLS_BYTES_PER_RANK_PER_COMM",
    "tp_non_torch_bytes",
    "DEFAULT_CUDA_GRAPH_BYTES",
    # pool sizing, batching, queues, goodput
    "PoolSizing",
    "kv_pool_sizing",
    "Padding",
    "static_batch_padding",
    "AggregationWait",
    "deterministic_aggregation_wait",
    "poisson_first_wait_s",
    "erlang_cdf",
    "erlang_wait_quantile_s",
    "littles_law_l",
    "SweepRow",
    "Goodput",
    "goodput",
]



def _positive(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def _non_negative(name: str, value: float) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------------------
# Roofline basics
# --------------------------------------------------------------------------------------------------------


def ridge_flop_per_byte(peak_flop_per_s: float, hbm_bytes_per_s: float) -> float:
    """The roofline ridge point: the intensity (FLOP/byte) above which a kernel is compute-bound.

    A100 SXM: 312e12 / 2.039e12 = 153.0; A100 PCIe: 312e12 / 1.935e12 = 161.2; H100 SXM: 295.2.
    """
    return _positive("peak_flop_per_s", peak_flop_per_s) / _positive("hbm_bytes_per_s", hbm_bytes_per_s)


def attainable_flop_per_s(intensity_flop_per_byte: float, *, hbm_bytes_per_s: float,
                          peak_flop_per_s: float) -> float:
    """Roofline attainable FLOP/s: ``min(peak, intensity x BW)``.

    The lesson's batch-1 example: 1.00 FLOP/byte x 3.35e12 B/s = 3.35e12 FLOP/s, 0.34 % of 989e12.
    """
    _non_negative("intensity_flop_per_byte", intensity_flop_per_byte)
    return min(_positive("peak_flop_per_s", peak_flop_per_s),
               intensity_flop_per_byte * _positive("hbm_bytes_per_s", hbm_bytes_per_s))


@dataclass(frozen=True)
class DecodeStep:
    """One decode step at a given batch under the nominal traffic model.

    ``intensity_flop_per_byte`` includes KV traffic; ``weight_only_intensity_flop_per_byte`` divides by the
    weight bytes alone (the "intensity ~ B" of both seeds).  ``throughput_tok_per_s`` is the aggregate
    (batch / t_step); ``per_request_tok_per_s`` is 1 / t_step, what each sequence sees.
    """

    batch: float
    weight_bytes: float
    kv_total_bytes: float
    bytes_moved: float
    flops: float
    intensity_flop_per_byte: float
    weight_only_intensity_flop_per_byte: float
    t_mem_s: float
    t_comp_s: float
    t_step_s: float
    bound: str
    throughput_tok_per_s: float
    per_request_tok_per_s: float
    achieved_flop_per_s: float
    t_allreduce_s: float = 0.0


def decode_step(batch: float, *, weight_bytes: float, flop_per_token: float, kv_bytes_per_seq: float,
                hbm_bytes_per_s: float, peak_flop_per_s: float, allreduce_s: float = 0.0) -> DecodeStep:
    """Model one decode step of ``batch`` sequences.

    ``weight_bytes`` are the bytes streamed per step (read once, shared across the batch);
    ``flop_per_token`` is 2 x streamed parameters; ``kv_bytes_per_seq`` is context tokens x KV bytes per
    token (each sequence reads its own cache every step).  ``batch`` may be fractional for analysis.
    Under tensor parallelism every argument is one GPU's share (its weights, its FLOPs, its KV heads, its
    bandwidth and peak) and ``allreduce_s`` is the step's all-reduce time (:func:`tensor_parallel_allreduce`),
    added after the roofline: ``t_step = max(t_mem, t_comp) + allreduce_s`` (0 at TP = 1).

    ``bound`` is ``"compute"`` only when t_comp strictly exceeds t_mem (a tie counts as memory-bound).
    """
    _positive("batch", batch)
    _non_negative("weight_bytes", weight_bytes)
    _positive("flop_per_token", flop_per_token)
    _non_negative("kv_bytes_per_seq", kv_bytes_per_seq)
    _positive("hbm_bytes_per_s", hbm_bytes_per_s)
    _positive("peak_flop_per_s", peak_flop_per_s)
    kv_total = batch * kv_bytes_per_seq
    moved = weight_bytes + kv_total
    if moved <= 0:
        raise ValueError("a decode step must move some bytes (weight_bytes + batch * kv_bytes_per_seq > 0)")
    _non_negative("allreduce_s", allreduce_s)
    flops = batch * flop_per_token
    t_mem = moved / hbm_bytes_per_s
    t_comp = flops / peak_flop_per_s
    t_step = max(t_mem, t_comp)
    if allreduce_s:
        t_step += allreduce_s
    return DecodeStep(
        batch=batch,
        weight_bytes=weight_bytes,
        kv_total_bytes=kv_total,
        bytes_moved=moved,
        flops=flops,
        intensity_flop_per_byte=flops / moved,
        weight_only_intensity_flop_per_byte=(flops / weight_bytes) if weight_bytes > 0 else math.inf,
        t_mem_s=t_mem,
        t_comp_s=t_comp,
        t_step_s=t_step,
        bound="compute" if t_comp > t_mem else "memory",
        throughput_tok_per_s=batch / t_step,
        per_request_tok_per_s=1.0 / t_step,
        achieved_flop_per_s=flops / t_step,
        t_allreduce_s=float(allreduce_s),
    )


def decode_table(batches: Iterable[float], *, weight_bytes: float, flop_per_token: float,
                 kv_bytes_per_seq: float, hbm_bytes_per_s: float, peak_flop_per_s: float) -> list[DecodeStep]:
    """:func:`decode_step` for each batch, in the order given (the lesson's sweep table)."""
    return [decode_step(b, weight_bytes=weight_bytes, flop_per_token=flop_per_token,
                        kv_bytes_per_seq=kv_bytes_per_seq, hbm_bytes_per_s=hbm_bytes_per_s,
                        peak_flop_per_s=peak_flop_per_s) for b in batches]


# --------------------------------------------------------------------------------------------------------
# Closed forms of the decode curve
# --------------------------------------------------------------------------------------------------------


def intensity_asymptote_flop_per_byte(flop_per_token: float, kv_bytes_per_seq: float) -> float:
    """KV-inclusive intensity as B -> infinity: ``F_tok / kv_seq`` (infinite when there is no KV traffic).

    Lesson: 16.0e9 / 134,217,728 = 119.209; notebook: 16.38 GB / 0.147 GB = 111.4.
    """
    _positive("flop_per_token", flop_per_token)
    if _non_negative("kv_bytes_per_seq", kv_bytes_per_seq) == 0:
        return math.inf
    return flop_per_token / kv_bytes_per_seq


def half_saturation_batch(weight_bytes: float, kv_bytes_per_seq: float) -> float:
    """Batch at which memory-bound throughput reaches half its asymptote: ``W / kv_seq``.

    There the KV traffic equals the weight traffic.  Notebook: 16.38 / 0.147 = 111.
    """
    _non_negative("weight_bytes", weight_bytes)
    return weight_bytes / _positive("kv_bytes_per_seq", kv_bytes_per_seq)


def throughput_asymptote_tok_per_s(hbm_bytes_per_s: float, kv_bytes_per_seq: float) -> float:
    """Memory-bound aggregate throughput as B -> infinity: ``BW / kv_seq`` (each token then costs only its KV).

    Notebook: 2,039 GB/s / 0.147 GB = 13,870 tok/s.
    """
    return _positive("hbm_bytes_per_s", hbm_bytes_per_s) / _positive("kv_bytes_per_seq", kv_bytes_per_seq)


def compute_roof_tok_per_s(peak_flop_per_s: float, flop_per_token: float) -> float:
    """Compute-bound throughput ceiling: ``peak / F_tok``.  Notebook: 312e12 / 16.38e9 = 19,000 tok/s."""
    return _positive("peak_flop_per_s", peak_flop_per_s) / _positive("flop_per_token", flop_per_token)


def t_comp_per_seq_s(flop_per_token: float, peak_flop_per_s: float) -> float:
    """Compute-time slope per added sequence: ``F_tok / peak`` (lesson: 0.016178 ms)."""
    return _positive("flop_per_token", flop_per_token) / _positive("peak_flop_per_s", peak_flop_per_s)


def t_mem_per_seq_s(kv_bytes_per_seq: float, hbm_bytes_per_s: float) -> float:
    """Memory-time slope per added sequence: ``kv_seq / BW`` (lesson: 0.040065 ms)."""
    return _non_negative("kv_bytes_per_seq", kv_bytes_per_seq) / _positive("hbm_bytes_per_s", hbm_bytes_per_s)


def t_mem_intercept_s(weight_bytes: float, hbm_bytes_per_s: float) -> float:
    """Memory time at zero batch, the weight read: ``W / BW`` (lesson: 4.7761 ms)."""
    return _non_negative("weight_bytes", weight_bytes) / _positive("hbm_bytes_per_s", hbm_bytes_per_s)


def moe_experts_read(num_experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected distinct routed experts one MoE layer reads in a step of ``tokens`` tokens, each routed to
    ``experts_per_token`` of ``num_experts`` independently and uniformly: ``E (1 - (1 - k/E)^T)``.

    One token reads its k experts (Qwen3-30B-A3B: 8 of 128); the read grows with the batch until every expert is
    read (128 x (1 - (120/128)^64) = 126.1 at 64 tokens).  Routing that is not uniform reads fewer; the uniform
    case is the most a step of T tokens can be expected to read, the bound a roofline wants."""
    e, k = int(num_experts), int(experts_per_token)
    if e <= 0 or k <= 0:
        raise ValueError(f"an MoE layer needs experts (got num_experts={e}, experts_per_token={k})")
    _non_negative("tokens", tokens)
    return float(e * (1.0 - (1.0 - min(k, e) / e) ** float(tokens)))


def batch1_ceiling_tok_per_s(hbm_bytes_per_s: float, weight_bytes: float) -> float:
    """Weights-only batch-1 decode ceiling: ``BW / W``.

    Notebook: 2,039e9 / 16.38e9 = 124.5 tok/s on the SXM card, 118.1 on the 1,935 GB/s PCIe card.  The
    KV-inclusive batch-1 value is ``decode_step(1, ...).throughput_tok_per_s`` (123.4 at 1k context).
    """
    return _positive("hbm_bytes_per_s", hbm_bytes_per_s) / _positive("weight_bytes", weight_bytes)


def prefill_floor_s(prompt_tokens: float, flop_per_token: float, peak_flop_per_s: float) -> float:
    """Compute floor of a prefill, the lower bound on TTFT: ``tokens x F_tok / peak``.

    Linear-layer FLOPs only (attention's quadratic term is ignored, so this stays a floor).  Notebook:
    1,000 x 16.38e9 / 312e12 = 52.5 ms ("53 ms").
    """
    _non_negative("prompt_tokens", prompt_tokens)
    return prompt_tokens * _positive("flop_per_token", flop_per_token) / _positive("peak_flop_per_s",
                                                                                   peak_flop_per_s)


# --------------------------------------------------------------------------------------------------------
# Tensor parallelism: the all-reduces of a Megatron-style layer
# --------------------------------------------------------------------------------------------------------

#: Bytes per activation element an all-reduce moves (bf16/fp16 hidden states; vLLM all-reduces in the model's
#: activation dtype).
ACTIVATION_BYTES = 2

#: All-reduces per decoder layer in a Megatron-style tensor-parallel transformer: one after the attention
#: output projection and one after the MLP down projection (both row-parallel), Shoeybi et al., "Megatron-LM"
#: (arXiv:1909.08053), section 3 and figure 3 (the ``g`` operators); in vLLM the all-reduce is inside
#: ``RowParallelLinear.forward`` (vllm/model_executor/layers/linear.py, ``reduce_results``).
ALLREDUCES_PER_LAYER = 2

#: Fixed latency of one all-reduce call when the catalog entry gives none: llm-analysis's minimum message
#: latency per TP communication, 8 us (cli99/llm-analysis, ``get_latency_fwd_per_tp_comm``; GenZ uses a few us
#: per collective as well).  The serving model's ``ServingConstants.allreduce_latency_s`` defaults to it.
DEFAULT_ALLREDUCE_LATENCY_S = 8e-6


def ring_allreduce_time_s(message_bytes: float, *, num_ranks: int, link_bytes_per_s: float,
                          latency_s: float) -> float:
    """One ring all-reduce of ``message_bytes`` over ``num_ranks`` GPUs: ``2 (N-1)/N x bytes / link + latency``.

    A ring all-reduce is a reduce-scatter plus an all-gather, each sending ``(N-1)/N`` of the message over every
    GPU's link (Patarasuk & Yuan 2009; the same form as llm-analysis ``get_latency_fwd_per_tp_comm`` and GenZ's
    collective model).  ``link_bytes_per_s`` is one direction of one GPU's link.  0 for a single rank.
    Example: 8 tokens x 4,096 x 2 B = 65,536 B over 2 ranks at 300 GB/s: 1 x 65,536 / 300e9 + 8 us = 8.218 us.
    """
    if isinstance(num_ranks, bool) or not isinstance(num_ranks, int) or num_ranks < 1:
        raise ValueError(f"num_ranks must be a positive integer, got {num_ranks!r}")
    _non_negative("message_bytes", message_bytes)
    _non_negative("latency_s", latency_s)
    if num_ranks == 1:
        return 0.0
    return 2.0 * (num_ranks - 1) / num_ranks * message_bytes / _positive("link_bytes_per_s", link_bytes_per_s) \
        + latency_s


@dataclass(frozen=True)
class AllReduceCost:
    """The all-reduce time of one forward pass over a tensor-parallel group, linear in the tokens it carries:
    ``time_s(tokens) = fixed_s + per_token_s x tokens`` (``calls`` ring all-reduces of ``tokens x
    bytes_per_token_per_call`` each, :func:`ring_allreduce_time_s`)."""

    num_ranks: int
    calls: int
    bytes_per_token_per_call: float
    link_bytes_per_s: float | None
    latency_s: float

    @property
    def fixed_s(self) -> float:
        """The latency part: ``calls x latency`` (0 at one rank)."""
        return 0.0 if self.num_ranks == 1 else self.calls * self.latency_s

    @property
    def per_token_s(self) -> float:
        """The bandwidth part per token: ``calls x 2 (N-1)/N x bytes_per_token / link`` (0 at one rank)."""
        if self.num_ranks == 1:
            return 0.0
        assert self.link_bytes_per_s
        return self.calls * 2.0 * (self.num_ranks - 1) / self.num_ranks * self.bytes_per_token_per_call \
            / self.link_bytes_per_s

    def time_s(self, tokens: float) -> float:
        """All-reduce time of a forward pass over ``tokens`` tokens (a decode step at batch B carries B)."""
        _non_negative("tokens", tokens)
        return 0.0 if self.num_ranks == 1 else self.fixed_s + self.per_token_s * tokens


def tensor_parallel_allreduce(*, num_ranks: int, num_layers: int, hidden_size: int,
                              link_bytes_per_s: float | None, latency_s: float = DEFAULT_ALLREDUCE_LATENCY_S,
                              activation_bytes: float = ACTIVATION_BYTES,
                              allreduces_per_layer: int = ALLREDUCES_PER_LAYER) -> AllReduceCost:
    """The all-reduces of a TP group of ``num_ranks`` GPUs: ``allreduces_per_layer`` per layer (2, Megatron-LM
    arXiv:1909.08053), each of ``hidden_size x activation_bytes`` bytes per token over one direction of the link.

    Llama-3.1-70B at TP = 4 on H100 SXM (NVLink 4, 900 GB/s bidirectional -> 450e9 one way), batch 1:
    160 calls x (2 x 3/4 x 16,384 B / 450e9 + 8 us) = 160 x 8.0546 us = 1.2887 ms.
    """
    if isinstance(num_ranks, bool) or not isinstance(num_ranks, int) or num_ranks < 1:
        raise ValueError(f"num_ranks must be a positive integer, got {num_ranks!r}")
    _non_negative("latency_s", latency_s)
    if num_ranks > 1:
        _positive("link_bytes_per_s", link_bytes_per_s if link_bytes_per_s is not None else 0.0)
        _positive("hidden_size", hidden_size)
        _positive("num_layers", num_layers)
    return AllReduceCost(num_ranks=num_ranks, calls=allreduces_per_layer * int(num_layers),
                         bytes_per_token_per_call=float(hidden_size) * float(activation_bytes),
                         link_bytes_per_s=float(link_bytes_per_s) if link_bytes_per_s else None,
                         latency_s=float(latency_s))


# --------------------------------------------------------------------------------------------------------
# The knee
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knee:
    """Where decode turns compute-bound (t_comp = t_mem), if it ever does.

    ``batch`` is ``None`` when the KV-inclusive intensity asymptote does not exceed the ridge; ``reason`` then
    says why in words.  ``weight_only_batch`` is the knee with KV ignored (the "naive" knee), which equals the
    ridge for 2-byte weights and scales with bytes per parameter.
    """

    batch: float | None
    reason: str
    weight_only_batch: float
    ridge_flop_per_byte: float
    intensity_asymptote_flop_per_byte: float
    kv_bytes_per_seq: float


def weight_only_knee_batch(*, weight_bytes: float, flop_per_token: float, hbm_bytes_per_s: float,
                           peak_flop_per_s: float) -> float:
    """Knee with KV traffic ignored: ``(W/BW) / (F_tok/peak) = ridge x W / F_tok``."""
    _positive("weight_bytes", weight_bytes)
    return (weight_bytes / _positive("hbm_bytes_per_s", hbm_bytes_per_s)) / (
        _positive("flop_per_token", flop_per_token) / _positive("peak_flop_per_s", peak_flop_per_s))


def roofline_knee(*, weight_bytes: float, flop_per_token: float, kv_bytes_per_seq: float,
                  hbm_bytes_per_s: float, peak_flop_per_s: float) -> Knee:
    """Solve t_comp(B) = t_mem(B): ``B* = (W/BW) / (F_tok/peak - kv_seq/BW)``.

    A positive solution exists only when the compute slope per sequence exceeds the memory slope, i.e. when
    the KV-inclusive intensity asymptote ``F_tok/kv_seq`` is above the ridge ``peak/BW``.  Otherwise
    ``batch`` is ``None`` and throughput only flattens toward ``BW/kv_seq``.
    """
    ridge = ridge_flop_per_byte(peak_flop_per_s, hbm_bytes_per_s)
    asymptote = intensity_asymptote_flop_per_byte(flop_per_token, kv_bytes_per_seq)
    weight_only = weight_only_knee_batch(weight_bytes=weight_bytes, flop_per_token=flop_per_token,
                                         hbm_bytes_per_s=hbm_bytes_per_s, peak_flop_per_s=peak_flop_per_s)
    if asymptote <= ridge:
        reason = (f"no knee: KV-inclusive intensity asymptote {asymptote:.1f} FLOP/byte "
                  f"{'=' if asymptote == ridge else '<'} ridge {ridge:.1f} FLOP/byte — throughput only flattens")
        return Knee(None, reason, weight_only, ridge, asymptote, kv_bytes_per_seq)
    # F_tok/peak - kv_seq/BW, written so that it is positive whenever asymptote > ridge, rounding included.
    denominator_s = (flop_per_token / peak_flop_per_s) * (1.0 - ridge / asymptote)
    batch = (weight_bytes / hbm_bytes_per_s) / denominator_s
    if math.isinf(asymptote):
        reason = f"knee at B = {batch:.1f}: no KV traffic, so the weight-only knee (ridge {ridge:.1f} FLOP/byte)"
    else:
        reason = (f"knee at B = {batch:.1f}: KV-inclusive intensity asymptote {asymptote:.1f} FLOP/byte > "
                  f"ridge {ridge:.1f} FLOP/byte")
    return Knee(batch, reason, weight_only, ridge, asymptote, kv_bytes_per_seq)


def max_context_for_knee_tokens(*, flop_per_token: float, kv_bytes_per_token: float, hbm_bytes_per_s: float,
                                peak_flop_per_s: float) -> float:
    """Longest context at which a KV-inclusive knee still exists: ``(F_tok/peak) x BW / kv_bytes_per_token``.

    A knee exists only for contexts strictly below this.  Qwen3-8B on A100-80 SXM: 726 tokens counting all
    8.19e9 parameters as streamed FLOP-doing weights, 671 when the input embedding (a lookup) is excluded.
    """
    return (_positive("flop_per_token", flop_per_token) / _positive("peak_flop_per_s", peak_flop_per_s)
            * _positive("hbm_bytes_per_s", hbm_bytes_per_s) / _positive("kv_bytes_per_token", kv_bytes_per_token))


# --------------------------------------------------------------------------------------------------------
# Projection traffic (lesson section 2)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectionTraffic:
    """DRAM traffic and FLOPs of one ``[B,K] x [K,M]`` projection, weights and activations counted once."""

    batch: int
    k: int
    m: int
    dtype_bytes: float
    weight_bytes: float
    input_bytes: float
    output_bytes: float
    total_bytes: float
    flops: float
    intensity_flop_per_byte: float
    weight_only_intensity_flop_per_byte: float
    activation_share_of_traffic: float


def projection_traffic(batch: int, k: int, m: int, dtype_bytes: float = 2) -> ProjectionTraffic:
    """Traffic of ``Y[B,M] = X[B,K] @ W[K,M]``: weight ``dt*K*M``, input ``dt*B*K``, output ``dt*B*M``;
    ``2*B*K*M`` FLOPs.  ``activation_share_of_traffic`` = (input + output) / total.

    Lesson example B = 32, K = M = 4096: 33,554,432 + 262,144 + 262,144 = 34,078,720 bytes,
    1,073,741,824 FLOPs, 31.51 FLOP/byte (32.00 weight-only), activations ~1.5 % of traffic.
    """
    for name, v in (("batch", batch), ("k", k), ("m", m), ("dtype_bytes", dtype_bytes)):
        _positive(name, v)
    w = dtype_bytes * k * m
    x = dtype_bytes * batch * k
    y = dtype_bytes * batch * m
    total = w + x + y
    flops = 2 * batch * k * m
    return ProjectionTraffic(batch, k, m, dtype_bytes, w, x, y, total, flops, flops / total, flops / w,
                             (x + y) / total)


# --------------------------------------------------------------------------------------------------------
# vLLM KV accounting (v0.10-0.26: vllm/utils/mem_utils.py memory_profiling; v0.33: vllm/v1/worker/gpu_worker.py
# Worker.determine_available_memory, vllm/v1/worker/utils.py request_memory)
# --------------------------------------------------------------------------------------------------------

#: Bytes live per logit in vLLM's dummy sampler pass during the profile run: the lm_head output in the model
#: dtype (2), its float32 upcast (4), softmax probabilities in float32 (4), and a top-p/top-k sort's float32
#: values (4) plus int64 indices (8).  An estimate of the sampler's peak, not a measurement.
SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4 + 4 + 8

#: Default non-torch reserve at TP=1: memory allocated outside PyTorch's allocator after the instance starts
#: (cuBLAS/cuBLASLt workspaces, NCCL communicators -- none at TP=1 -- and driver-side buffers).  vLLM's own
#: profiling printouts at TP=1 on 80 GB cards show ~0.16 GiB ("non_torch_memory takes 0.16GiB", vLLM PR
#: #12126 sanity run); TP>1 adds NCCL buffers and grows it to GiBs.  Pass a measured value when you have one.
DEFAULT_NON_TORCH_BYTES = int(0.16 * GIB)

#: The per-rank non-torch memory tensor parallelism adds on NVLink-connected GPUs (NCCL communicator buffers and
#: vLLM's custom all-reduce IPC buffers, which PyTorch's allocator does not see): vLLM's own sanity runs of
#: Llama-3-8B on an 80 GB GPU printed "non_torch_memory 1.79GiB" at TP 1 and "3.58GiB" per worker at TP 2
#: (github.com/vllm-project/vllm/pull/10511, 2024-12-14): +1.79 GiB per rank, at the same version.
TP_NVLINK_NON_TORCH_BYTES = int(1.79 * GIB)

#: NCCL's NVLink SHARP (NVLS) buffers, per rank of the communicator, per communicator: NCCL enables NVLS on
#: NVSwitch systems of H100 and later for more than 2 GPUs, and its log prints "nvlsPerRankSize 301989888
#: nvlsTotalSize 2415919104" for 8 ranks (github.com/vllm-project/vllm/issues/9699): each GPU backs
#: nvlsTotalSize = ranks x 288 MiB.  vLLM's TP group holds two NCCL communicators (torch.distributed's device
#: group and its own PyNcclCommunicator: vllm/distributed/parallel_state.py GroupCoordinator), so each rank pays it
#: twice; the same issue reports Llama-3.1-405B at TP 8 on H200 losing ~5,100 KV blocks (~4.9 GiB per rank)
#: with NVLS on, against 2 x 2.25 GiB here.
NVLS_BYTES_PER_RANK_PER_COMM = 301_989_888
NVLS_COMMUNICATORS = 2


def tp_non_torch_bytes(tensor_parallel_size: int, interconnect: str | None) -> int:
    """The non-torch memory each rank of a tensor-parallel group holds beyond the TP 1 reserve
    (:data:`DEFAULT_NON_TORCH_BYTES`): 0 at TP 1 and where the GPUs are not NVLink-connected (PCIe parts, whose
    TP 2 logs show ~0.25 GiB in all); :data:`TP_NVLINK_NON_TORCH_BYTES` on NVLink; plus the NVLS buffers
    (:data:`NVLS_BYTES_PER_RANK_PER_COMM` x ranks x :data:`NVLS_COMMUNICATORS`) on NVSwitch parts with NVLink 4 or
    later at more than 2 ranks.  ``interconnect`` is the catalog's description ("NVLink 4 (900 GB/s)", "PCIe ...")."""
    t = int(tensor_parallel_size)
    text = (interconnect or "").strip()
    if t <= 1 or not text.startswith("NVLink"):
        return 0
    extra = TP_NVLINK_NON_TORCH_BYTES
    gen = re.match(r"NVLink (\d+)", text)
    switched = "bridge" not in text.lower()
    if t > 2 and switched and gen is not None and int(gen.group(1)) >= 4:
        extra += NVLS_COMMUNICATORS * t * NVLS_BYTES_PER_RANK_PER_COMM
    return extra


#: Default CUDA-graph reserve: capturing the default set of decode batch sizes (up to 2 x max_num_seqs,
#: capped at 512) for a 7-8B dense model at TP=1 typically reports "Graph capturing finished ..., took
#: 0.3-0.9 GiB"; 0.5 GiB is a middle value, not derived from the shape.  Charged against the KV budget only
#: where vLLM budgets graph memory (from 0.21 by default: vllm/envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS);
#: before that, pass 0 --
#: graphs were captured after KV allocation, inside the 1 - utilisation headroom.
DEFAULT_CUDA_GRAPH_BYTES = GIB // 2


def estimate_activation_bytes(*, hidden_size: int, intermediate_size: int, vocab_size: int,
                              max_num_batched_tokens: int, max_num_seqs: int, dtype_bytes: float = 2,
                              num_attention_heads: int | None = None, num_kv_heads: int | None = None,
                              head_dim: int | None = None,
                              sampler_bytes_per_logit: float = SAMPLER_BYTES_PER_LOGIT,
                              moe_intermediate_size: int = 0, experts_per_token: int = 0,
                              moe_quantized_input_bytes: float = 0.0) -> int:
    """Estimate the torch peak increase of vLLM's profile run (the ``activation`` term of the KV budget).

    Basis (vLLM 0.10-0.26 vllm/utils/mem_utils.py ``memory_profiling``:
    ``non_kv = weights + torch_peak_increase(profile_run) + non_torch``):
    vLLM profiles by running one dummy forward pass over ``max_num_batched_tokens`` tokens, then a dummy
    sampler pass over ``max_num_seqs`` requests.  The estimate is the sum of the two peaks:

    * forward peak = ``max_num_batched_tokens x dtype_bytes x per-token live elements`` where the live
      elements are the larger of the MLP peak -- residual (h) + layer input (h) + gate/up output (2I) +
      activated product (I) -- and, when attention shapes are given, the attention peak -- residual (h) +
      input (h) + fused QKV output ((n_q + 2 n_kv) d) + attention output (n_q d).  Activations of one layer
      are freed before the next, so this is per layer, not times the layer count.
    * sampler peak = ``max_num_seqs x vocab_size x sampler_bytes_per_logit`` (see
      :data:`SAMPLER_BYTES_PER_LOGIT`).  With a 150k vocabulary this term dominates.

    * MoE layers (``moe_intermediate_size`` = one rank's slice ``I``, ``experts_per_token`` = top-k ``k``): vLLM's
      Triton ``fused_experts_impl`` (vllm/model_executor/layers/fused_moe/fused_moe.py, vLLM main at commit
      000d1458, the 0.9 series) holds, per token of the chunk (``VLLM_FUSED_MOE_CHUNK_SIZE``, 32K or more, so the
      whole profile batch), one buffer shared by the gate/up output and the down output, ``k x max(2I, h)``
      elements ("cache13"), the activated product ``k x I`` ("intermediate_cache2"), and under W8A8 the quantized
      copies of the layer input and of that product, ``(h + k x I) x moe_quantized_input_bytes``.  With the
      residual and the layer input this is one more candidate for the per-layer peak.

    Qwen3-8B with vLLM 0.26's A100 defaults (2,048 tokens, 256 seqs): 0.18 GB + 0.86 GB = 1.04 GB.
    Allocator rounding, torch.compile buffers and attention workspaces are not modelled.
    """
    for name, v in (("hidden_size", hidden_size), ("intermediate_size", intermediate_size),
                    ("vocab_size", vocab_size), ("max_num_batched_tokens", max_num_batched_tokens),
                    ("max_num_seqs", max_num_seqs), ("dtype_bytes", dtype_bytes)):
        _positive(name, v)
    per_token_elems = 2 * hidden_size + 3 * intermediate_size
    if num_attention_heads is not None and head_dim is not None:
        n_kv = num_kv_heads if num_kv_heads is not None else num_attention_heads
        attn_elems = 2 * hidden_size + (num_attention_heads + 2 * n_kv) * head_dim + num_attention_heads * head_dim
        per_token_elems = max(per_token_elems, attn_elems)
    forward_peak = max_num_batched_tokens * dtype_bytes * per_token_elems
    if moe_intermediate_size > 0 and experts_per_token > 0:
        k, i = experts_per_token, moe_intermediate_size
        moe_bytes = (dtype_bytes * (2 * hidden_size + k * (max(2 * i, hidden_size) + i))
                     + moe_quantized_input_bytes * (hidden_size + k * i))
        forward_peak = max(forward_peak, max_num_batched_tokens * moe_bytes)
    sampler_peak = max_num_seqs * vocab_size * sampler_bytes_per_logit
    return int(math.ceil(forward_peak + sampler_peak))


@dataclass(frozen=True)
class KVAccounting:
    """vLLM V1's KV-cache sizing, term by term (v0.33: vllm/v1/worker/gpu_worker.py ``determine_available_memory``,
    vllm/v1/core/kv_cache_utils.py; the budget in vllm/v1/worker/utils.py ``request_memory``).

    * ``budget_bytes`` = ``ceil(total_memory_bytes x gpu_memory_utilization)`` -- a fraction of *total*
      device memory, per instance (``None`` with an explicit pool).
    * ``weight_bytes`` -- the model weights as loaded ("Model loading took ... GiB").
    * ``activation_bytes`` -- torch peak increase during the profile run (:func:`estimate_activation_bytes`).
    * ``non_torch_bytes`` -- non-torch allocations since instance creation (cuBLAS, NCCL, ...).
    * ``cuda_graph_bytes`` -- the CUDA-graph estimate, budgeted from vLLM 0.21 by default (0 before).
    * ``available_kv_bytes`` = budget - all four reserves ("Available KV cache memory"), or the explicit pool
      (``--kv-cache-memory-bytes``, or ``VLLM_CPU_KVCACHE_SPACE`` on the CPU backend) which bypasses the budget.
    * ``num_blocks`` = ``available_kv_bytes // bytes_per_block`` (0 when nothing is left; vLLM then refuses to
      start); ``kv_tokens`` = ``num_blocks x block_size``.

    From 0.27 vLLM measures ``non_kv`` as total consumed memory plus transient peak headroom rather than the
    sum above; the four terms remain a fair decomposition of the same memory.
    """

    total_memory_bytes: float | None
    gpu_memory_utilization: float | None
    budget_bytes: int | None
    weight_bytes: float
    activation_bytes: float
    non_torch_bytes: float
    cuda_graph_bytes: float
    non_kv_bytes: float
    available_kv_bytes: float
    bytes_per_block: int
    block_size: int
    num_blocks: int
    kv_tokens: int
    explicit_pool: bool

    @property
    def available_kv_gib(self) -> float:
        """``available_kv_bytes`` in GiB, as vLLM's "Available KV cache memory" line prints it."""
        return self.available_kv_bytes / GIB

    @property
    def kv_pool_bytes(self) -> int:
        """Bytes actually allocated to blocks: ``num_blocks x bytes_per_block``."""
        return self.num_blocks * self.bytes_per_block

    def blocks_per_request(self, request_tokens: int) -> int:
        """Blocks a full-attention request of ``request_tokens`` tokens occupies: ``ceil(tokens / block_size)``."""
        _positive("request_tokens", request_tokens)
        return -(-int(request_tokens) // self.block_size)

    def max_concurrency(self, request_tokens: int) -> float:
        """Requests of ``request_tokens`` tokens that fit at once, as vLLM prints it ("Maximum concurrency
        for N tokens per request: X.XXx"): ``num_blocks / ceil(request_tokens / block_size)``."""
        return self.num_blocks / self.blocks_per_request(request_tokens)

    def logged_kv_tokens(self, max_model_len: int) -> int:
        """The "KV cache size: N tokens" figure of vLLM 0.21+: ``int(max_concurrency(max_model_len) x
        max_model_len)``; equals ``kv_tokens`` when max_model_len is a multiple of the block size."""
        return int(self.max_concurrency(max_model_len) * max_model_len)


def vllm_kv_accounting(*, bytes_per_block: int, block_size: int, total_memory_bytes: float | None = None,
                       gpu_memory_utilization: float | None = None, weight_bytes: float | None = None,
                       activation_bytes: float | None = None, non_torch_bytes: float | None = None,
                       cuda_graph_bytes: float | None = None,
                       kv_cache_memory_bytes: float | None = None) -> KVAccounting:
    """Predict vLLM's KV pool and ``num_gpu_blocks`` (see :class:`KVAccounting` for each term).

    ``bytes_per_block`` is the all-layer page size, ``2 x layers x kv_heads x head_dim x kv_dtype_bytes x
    block_size`` for standard attention (Qwen3-8B, block 16: 2,359,296).  Without ``kv_cache_memory_bytes``
    the total, utilisation and all four reserves must be given (use 0 explicitly to drop one; the module's
    ``DEFAULT_*`` constants and :func:`estimate_activation_bytes` supply documented estimates).
    """
    bytes_per_block = int(_positive("bytes_per_block", bytes_per_block))
    block_size = int(_positive("block_size", block_size))
    reserves = {"weight_bytes": weight_bytes, "activation_bytes": activation_bytes,
                "non_torch_bytes": non_torch_bytes, "cuda_graph_bytes": cuda_graph_bytes}
    if kv_cache_memory_bytes is not None:
        available = _non_negative("kv_cache_memory_bytes", kv_cache_memory_bytes)
        budget = None
        if total_memory_bytes is not None and gpu_memory_utilization is not None:
            budget = math.ceil(total_memory_bytes * gpu_memory_utilization)
        vals = {k: (_non_negative(k, v) if v is not None else 0.0) for k, v in reserves.items()}
        explicit = True
    else:
        if total_memory_bytes is None or gpu_memory_utilization is None:
            raise ValueError("give total_memory_bytes and gpu_memory_utilization, or kv_cache_memory_bytes")
        _positive("total_memory_bytes", total_memory_bytes)
        if not 0 < gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}")
        missing = [k for k, v in reserves.items() if v is None]
        if missing:
            raise ValueError(f"without kv_cache_memory_bytes these reserves are required: {', '.join(missing)}")
        vals = {k: _non_negative(k, v) for k, v in reserves.items() if v is not None}  # none is None here
        budget = math.ceil(total_memory_bytes * gpu_memory_utilization)
        available = budget - sum(vals.values())
        explicit = False
    non_kv = sum(vals.values())
    num_blocks = max(0, int(available // bytes_per_block))
    return KVAccounting(
        total_memory_bytes=total_memory_bytes,
        gpu_memory_utilization=gpu_memory_utilization,
        budget_bytes=budget,
        weight_bytes=vals["weight_bytes"],
        activation_bytes=vals["activation_bytes"],
        non_torch_bytes=vals["non_torch_bytes"],
        cuda_graph_bytes=vals["cuda_graph_bytes"],
        non_kv_bytes=non_kv,
        available_kv_bytes=available,
        bytes_per_block=bytes_per_block,
        block_size=block_size,
        num_blocks=num_blocks,
        kv_tokens=num_blocks * block_size,
        explicit_pool=explicit,
    )


# --------------------------------------------------------------------------------------------------------
# KV pool sizing (lesson section 11)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolSizing:
    """Does a batch of full-context sequences fit a KV pool?  ``shortfall_bytes`` is 0 when it fits."""

    pool_bytes: float
    kv_bytes_per_seq: float
    batch: int
    max_sequences: int
    required_bytes: float
    fits: bool
    shortfall_bytes: float
    headroom_bytes: float


def kv_pool_sizing(pool_bytes: float, kv_bytes_per_seq: float, batch: int) -> PoolSizing:
    """Lesson section 11: a 30 GiB pool holds floor(30 GiB / 128 MiB) = 240 sequences; B = 256 needs 32 GiB
    (short by 2 GiB); B = 128 needs 16 GiB (fits).  Block metadata and allocator headroom are ignored."""
    _non_negative("pool_bytes", pool_bytes)
    _positive("kv_bytes_per_seq", kv_bytes_per_seq)
    _non_negative("batch", batch)
    required = batch * kv_bytes_per_seq
    return PoolSizing(
        pool_bytes=pool_bytes,
        kv_bytes_per_seq=kv_bytes_per_seq,
        batch=batch,
        max_sequences=int(pool_bytes // kv_bytes_per_seq),
        required_bytes=required,
        fits=required <= pool_bytes,
        shortfall_bytes=max(0.0, required - pool_bytes),
        headroom_bytes=max(0.0, pool_bytes - required),
    )


# --------------------------------------------------------------------------------------------------------
# Static batching (lesson section 8)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Padding:
    """Token slots of a static batch that runs ``max(lengths)`` steps for every row."""

    n: int
    max_length_tokens: int
    allocated_slots: int
    useful_tokens: int
    padded_slots: int
    padded_ratio: float


def static_batch_padding(lengths: Sequence[int]) -> Padding:
    """Lesson: [20, 50, 80, 200] -> 800 slots, 350 useful, 450 padded (56.25 %)."""
    lengths = [int(x) for x in lengths]
    if not lengths:
        raise ValueError("lengths must not be empty")
    if min(lengths) < 0:
        raise ValueError("lengths must be non-negative")
    longest = max(lengths)
    if longest == 0:
        raise ValueError("at least one length must be positive")
    allocated = len(lengths) * longest
    useful = sum(lengths)
    padded = allocated - useful
    return Padding(len(lengths), longest, allocated, useful, padded, padded / allocated)


# --------------------------------------------------------------------------------------------------------
# Dynamic batching and queues (lesson sections 6-7)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AggregationWait:
    """Per-request aggregation waits of one batch (arrival order), their mean and maximum."""

    waits_s: tuple[float, ...]
    mean_s: float
    max_s: float


def deterministic_aggregation_wait(spacing_s: float, target_batch: int) -> AggregationWait:
    """Arrivals every ``spacing_s``; request ``i`` waits for the ``B-1-i`` that follow it.

    Lesson: 20 ms spacing, B = 8 -> waits 140, 120, ..., 0 ms; mean 70.0 ms, max 140.0 ms.
    """
    _non_negative("spacing_s", spacing_s)
    target_batch = int(_positive("target_batch", target_batch))
    waits = tuple((target_batch - 1 - i) * spacing_s for i in range(target_batch))
    return AggregationWait(waits, sum(waits) / target_batch, waits[0])


def poisson_first_wait_s(rate_per_s: float, target_batch: int) -> float:
    """Expected wait of the first request of a batch under Poisson arrivals: the Erlang(B-1, λ) mean
    ``(B-1)/λ``.  Lesson: λ = 50/s, B = 8 -> 140 ms; exercise λ = 25/s, B = 4 -> 120 ms."""
    _positive("rate_per_s", rate_per_s)
    return (int(_positive("target_batch", target_batch)) - 1) / rate_per_s


def erlang_cdf(t_s: float, rate_per_s: float, shape: int) -> float:
    """P(sum of ``shape`` Exp(λ) gaps <= t) = ``1 - Σ_{n<k} e^{-λt} (λt)^n / n!`` (1 for shape 0, t >= 0)."""
    _positive("rate_per_s", rate_per_s)
    if shape < 0:
        raise ValueError("shape must be >= 0")
    if t_s < 0:
        return 0.0
    if shape == 0:
        return 1.0
    x = rate_per_s * t_s
    if x == 0:
        return 0.0
    log_x = math.log(x)
    survival = math.fsum(math.exp(-x + n * log_x - math.lgamma(n + 1)) for n in range(shape))
    return min(1.0, max(0.0, 1.0 - survival))


def erlang_wait_quantile_s(rate_per_s: float, target_batch: int, q: float) -> float:
    """Quantile ``q`` of the first request's aggregation wait under Poisson arrivals, Erlang(B-1, λ).

    The mean (:func:`poisson_first_wait_s`) is not a hard maximum: the tail is unbounded, so e.g. the 0.99
    quantile lies well above it.  Solved by bisection on the CDF.
    """
    _positive("rate_per_s", rate_per_s)
    shape = int(_positive("target_batch", target_batch)) - 1
    if not 0 <= q < 1:
        raise ValueError(f"q must be in [0, 1), got {q!r}")
    if shape == 0 or q == 0:
        return 0.0
    lo, hi = 0.0, max(1.0, float(shape))
    while erlang_cdf(hi, 1.0, shape) < q:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if erlang_cdf(mid, 1.0, shape) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
    return 0.5 * (lo + hi) / rate_per_s


def littles_law_l(throughput_req_per_s: float, mean_latency_s: float) -> float:
    """Little's law ``L = λ W``: mean requests in the system from throughput (req/s) and mean latency (s).

    In a closed-loop sweep at concurrency C this should come back as ~C at every point.
    """
    return _non_negative("throughput_req_per_s", throughput_req_per_s) * _non_negative("mean_latency_s",
                                                                                       mean_latency_s)


#: prefix-cache hit rate above which a sweep point's numbers count as flattered by the cache ("contaminated"):
#: the one default, read by the quantities' Thresholds, the /metrics scraper and calibration (README: 10 %)
DEFAULT_CONTAMINATION_HIT_RATE = 0.10


# --------------------------------------------------------------------------------------------------------
# Goodput under SLOs
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRow:
    """One sweep point: concurrency, output tok/s, and TTFT/TPOT percentiles in ms keyed ``"p50"``, ``"p99"``."""

    concurrency: int
    output_tok_per_s: float
    ttft_ms: Mapping[str, float]
    tpot_ms: Mapping[str, float]


@dataclass(frozen=True)
class Goodput:
    """Best throughput among rows meeting every SLO at one percentile, against the raw maximum.

    ``best_*`` are ``None`` when no row meets the SLOs.  ``raw_to_goodput_ratio`` is raw max / goodput (the
    notebook's "gap", 1.75-4.8x); ``goodput_fraction`` is its inverse.
    """

    percentile: str
    ttft_ms_max: float | None
    tpot_ms_max: float | None
    best_tok_per_s: float | None
    best_row: Any
    best_concurrency: int | None
    raw_max_tok_per_s: float
    raw_max_concurrency: int
    raw_to_goodput_ratio: float | None
    goodput_fraction: float | None
    passing_concurrencies: tuple[int, ...]


def _percentile_key(percentile: str | float) -> str:
    if isinstance(percentile, str):
        key = percentile.strip().lower()
        if key in ("median", "p50"):
            return "p50"
        if not key.startswith("p"):
            key = "p" + key
        return key
    value = float(percentile)
    return f"p{int(value)}" if value == int(value) else f"p{value:g}"


def _field(row: Any, *names: str) -> Any:
    for name in names:
        if isinstance(row, Mapping):
            if name in row:
                return row[name]
        elif hasattr(row, name):
            return getattr(row, name)
    raise KeyError(f"sweep row has none of {names}")


def _pct(values: Mapping[str, float], key: str) -> float:
    if key in values and values[key] is not None:
        return _finite(values[key], key)
    if key == "p50" and values.get("median") is not None:
        return _finite(values["median"], "median")
    raise KeyError(f"percentile {key!r} missing from {sorted(values)}")


def _finite(value: Any, what: str) -> float:
    """``value`` as a finite float; ValueError for NaN, ±inf, a string, a bool (a figure that is not a number must
    never meet an SLO)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} is {value!r}, not a finite number")
    return float(value)


def goodput(rows: Iterable[Any], *, ttft_ms_max: float | None, tpot_ms_max: float | None,
            percentile: str | float = "p99", inclusive: bool = True) -> Goodput:
    """Goodput of a sweep table under TTFT/TPOT SLOs evaluated at one percentile (DistServe's framing).

    ``rows`` are :class:`SweepRow` objects or mappings with ``concurrency``, ``output_tok_per_s`` and
    ``ttft_ms``/``tpot_ms`` percentile dicts.  An SLO of ``None`` is not checked.  ``inclusive`` compares with
    ``<=`` (``False`` for a strict ``<``).  Notebook sweep, TTFT 500 ms / TPOT 50 ms: p99 -> C=8 at 639.5
    tok/s; p50 -> C=32 at 1,763.3; raw max 3,088.2 at C=128.
    """
    key = _percentile_key(percentile)
    rows = list(rows)
    if not rows:
        raise ValueError("goodput needs at least one row")

    def ok(value: float, limit: float | None) -> bool:
        if limit is None:
            return True
        return value <= limit if inclusive else value < limit

    best = None
    best_tput = -math.inf
    raw_row = None
    raw_tput = -math.inf
    passing: list[int] = []
    for row in rows:
        tput = _finite(_field(row, "output_tok_per_s", "throughput_tok_per_s"), "output_tok_per_s")
        conc = int(_field(row, "concurrency"))
        if tput > raw_tput:
            raw_tput, raw_row = tput, row
        if ok(_pct(_field(row, "ttft_ms"), key), ttft_ms_max) and ok(_pct(_field(row, "tpot_ms"), key),
                                                                     tpot_ms_max):
            passing.append(conc)
            if tput > best_tput:
                best_tput, best = tput, row
    raw_conc = int(_field(raw_row, "concurrency"))
    if best is None:
        return Goodput(key, ttft_ms_max, tpot_ms_max, None, None, None, raw_tput, raw_conc, None, None, ())
    return Goodput(
        percentile=key,
        ttft_ms_max=ttft_ms_max,
        tpot_ms_max=tpot_ms_max,
        best_tok_per_s=best_tput,
        best_row=best,
        best_concurrency=int(_field(best, "concurrency")),
        raw_max_tok_per_s=raw_tput,
        raw_max_concurrency=raw_conc,
        raw_to_goodput_ratio=(raw_tput / best_tput) if best_tput > 0 else None,
        goodput_fraction=best_tput / raw_tput if raw_tput > 0 else None,
        passing_concurrencies=tuple(passing),
    )
