"""Physical bounds no run can cross: what the CPU-only math check fails ink beyond, whatever its tolerance or band.

A tolerance says how far a measurement may land from the ink; a band says how far runs land from the serving
model. Neither can carry ink past what the chip's datasheet allows, so the math check tests these first (issue 22:
"ink above a physical ceiling (the roofline, the KV pool) always fails"):

* **the decode roofline's throughput is a ceiling** (``output_throughput`` at its point; ``per_request_throughput``
  and ``batch1_throughput`` at batch 1, where a request runs fastest; ``batch1_ceiling`` itself): a decode step
  cannot take less than its bytes ÷ the datasheet bandwidth, nor its FLOPs ÷ the peak; prefill chunks, overheads
  and a fuller batch only lengthen it. The all-reduces under TP are left out of the bound: their per-call latency
  is a modelled figure a fast kernel may beat. With ``engine.replicas`` R the deployment's ceiling at C clients is
  R × one engine's at C/R (the rate B ÷ t(B) is concave in B, so an even split is the most R engines reach);
* **what a run counts per request follows from that ceiling** (each at a closed-loop point, from the output
  ceiling there): ``request_throughput`` ≤ the ceiling ÷ ``output_len`` and ``request_goodput`` ≤ the same (good
  requests are some of the completed ones), where every request makes exactly ``output_len`` tokens (the load
  generator sends ``ignore_eos``); ``total_throughput`` ≤ the ceiling × (``input_len`` + ``output_len``) ÷
  ``output_len``, where every prompt is exactly ``input_len`` tokens as the server counts them (the completions
  API's token-id prompts). Where lengths vary (a distribution, a dataset) these are left unbounded: a run's
  requests are a finite draw whose lengths average more or less than the workload's mean (a dataset's are known
  only once tokenized), so the mean lengths would give no bound a run cannot cross; under the chat API the
  server's prompt count includes the chat template's tokens, so ``total_throughput`` is left unbounded there
  too. ``goodput`` (the best output tok/s among the file's closed-loop sweep points that meet the SLOs) ≤ the
  largest output ceiling over those points, whatever the lengths;
* **the weight read is a TPOT floor** (``tpot_*``): every decode step reads the weights one GPU holds (the routed
  experts' share for an MoE model at batch 1), so a request's mean time per output token is at least that read ÷
  the bandwidth (1 ÷ the batch-1 ceiling). ITL is left out: a client can see tokens arrive together;
* **the same read is an E2E floor** (``e2e_*``, at any point, where ``output_len`` is fixed): a request's
  ``output_len`` tokens take its prefill, whose last step makes the first token (at least one weight read; at
  least its prompt's FLOPs ÷ the peak, the ``prefill_floor``, where the prompt length is fixed and prefix
  caching is off, since a cached prompt computes only its last token), then ``output_len`` − 1 decode steps of
  at least one weight read each;
* **the device's memory less the weights is a ceiling on the KV pool** (``num_gpu_blocks``, ``kv_cache_tokens``,
  ``available_kv_bytes``): even at ``gpu_memory_utilization: 1`` and no activation, runtime or CUDA-graph memory.

None on the CPU backend: its catalog figures (host memory bandwidth, a KV space set by an environment variable) are
orders of magnitude, not datasheet limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_roofline.model.setup import Setup, kv_accounting
from pytest_roofline.quantities.declare import decode_step
from pytest_roofline.units import format_value

__all__ = ["PhysicalBound", "physical_bound", "batch1_step_rate", "ROOFLINE_CEILING_QUANTITIES",
           "TPOT_FLOOR_QUANTITIES", "KV_POOL_QUANTITIES", "PER_REQUEST_CEILING_QUANTITIES", "E2E_FLOOR_QUANTITIES"]

Side = Literal["upper", "lower"]

#: quantities whose decode-roofline value at their point is a ceiling on what a run measures (``batch1_ceiling`` is
#: bounded by its own value too, :func:`physical_bound`, but it is arithmetic, not a figure a run measures)
ROOFLINE_CEILING_QUANTITIES: frozenset[str] = frozenset({"output_throughput", "per_request_throughput",
                                                         "batch1_throughput"})
#: quantities a run counts with its output tokens at a point, each bounded by that point's output ceiling: requests
#: (÷ output_len), requests meeting SLOs (a subset of them), prompt + output tokens (× (in + out) ÷ out)
PER_REQUEST_CEILING_QUANTITIES: frozenset[str] = frozenset({"request_throughput", "request_goodput",
                                                            "total_throughput"})
#: time per output token, whose mean over a request cannot beat one weight read per step
TPOT_FLOOR_QUANTITIES: frozenset[str] = frozenset({"tpot_mean", "tpot_p50", "tpot_p90", "tpot_p95", "tpot_p99"})
#: a request's end-to-end latency: its prefill and output_len - 1 decode steps, each at least one weight read
E2E_FLOOR_QUANTITIES: frozenset[str] = frozenset({"e2e_mean", "e2e_p50", "e2e_p90", "e2e_p95", "e2e_p99"})
#: the KV pool's figures, each bounded by the device's memory less the weights
KV_POOL_QUANTITIES: frozenset[str] = frozenset({"num_gpu_blocks", "kv_cache_tokens", "available_kv_bytes"})


@dataclass(frozen=True)
class PhysicalBound:
    """A value no run can go beyond: ``upper`` (a ceiling) or ``lower`` (a floor), in SI units, with why."""

    side: Side
    value: float
    why: str

    def beyond(self, x: float) -> bool:
        """True when ``x`` lies past the bound (strictly)."""
        return x > self.value if self.side == "upper" else x < self.value

    def clip(self, lo: float, hi: float) -> tuple[float, float]:
        """A band ``lo``..``hi`` with the part past the bound cut off."""
        if self.side == "upper":
            return min(lo, self.value), min(hi, self.value)
        return max(lo, self.value), max(hi, self.value)


def batch1_step_rate(setup: Setup, at: Mapping[str, Any], ceiling: float) -> float:
    """The decode roofline's batch-1 step rate at ``at`` (1 ÷ the step at B = 1: the weights, one sequence's KV and
    the all-reduces): the rate the batch-1 band's share is of (``model.bands.roofline_fraction_band``), never above
    ``ceiling``; ``ceiling`` itself where the roofline cannot take the point."""
    try:
        rate = float(decode_step(setup, {**at, "batch": 1}).throughput_tok_per_s)
    except (ValueError, ZeroDivisionError, ArithmeticError, KeyError):
        return ceiling
    return min(rate, ceiling) if math.isfinite(rate) and rate > 0 else ceiling


def _roofline_rate(setup: Setup, at: Mapping[str, Any], *, batch1: bool) -> float | None:
    """Tokens/s of the decode roofline's step at ``at`` (at B = 1 with ``batch1``) without its all-reduces:
    max(bytes ÷ bandwidth, FLOPs ÷ peak) alone, the part no engine can beat (the all-reduces' per-call latency is a
    modelled figure, and a fast custom kernel may beat it)."""
    step = decode_step(setup, {**at, "batch": 1} if batch1 else at)
    t = max(step.t_mem_s, step.t_comp_s)
    if not (t > 0 and math.isfinite(t)):
        return None
    return (1.0 if batch1 else float(step.batch)) / t


def _output_ceiling(setup: Setup, at: Mapping[str, Any]) -> tuple[float, str] | None:
    """The output-throughput ceiling at a closed-loop point (``at``: its concurrency, or a decode batch) and the words
    saying how it is taken; None at an open-loop rate (no batch to step). With ``engine.replicas`` R, R × one
    engine's at C/R: the rate B ÷ max(a + bB, cB) is concave in B, so no split of C clients over R engines beats
    the even one (an uneven split, or all at one replica, is below it)."""
    key = "batch" if "batch" in at else "concurrency" if "concurrency" in at else None
    if key is None:
        return None
    replicas = max(1, int(getattr(setup, "replicas", 1) or 1))
    load = float(at[key])
    share = {**at, key: load / replicas}
    rate = _roofline_rate(setup, share, batch1=False)
    if rate is None or not (math.isfinite(rate) and rate > 0):
        return None
    tp = int(getattr(setup, "tensor_parallel_size", 1) or 1)
    how = ("the decode roofline's step at this point: its bytes ÷ the datasheet bandwidth or its FLOPs ÷ the peak, "
           "whichever is longer" + (f", without the {tp} ranks' all-reduces" if tp > 1 else "")
           + "; prefill, overheads and a fuller batch only lengthen a step")
    if replicas > 1:
        how += (f"; {replicas} replicas × one engine's {format_value(rate, 'throughput', 'tok/s')} at "
                f"{key} {load / replicas:g} (an even split of {load:g}, the most {replicas} engines reach)")
        rate *= replicas
    return rate, how


def _fixed(longest: float | None) -> bool:
    """A workload length every request has (:attr:`Setup.max_input_len` None), not a distribution's or a dataset's."""
    return longest is None


def _weight_read_s(setup: Setup) -> tuple[float, float] | None:
    """One read of the weights one GPU holds at its datasheet bandwidth (seconds), and the batch-1 ceiling it is
    1 ÷ of; None where the setup cannot say."""
    try:
        ceiling = setup.roofline_landmarks().batch1_ceiling_tok_per_s
    except (ValueError, ZeroDivisionError, ArithmeticError):
        return None
    if not (ceiling and math.isfinite(ceiling) and ceiling > 0):
        return None
    return 1.0 / float(ceiling), float(ceiling)


def _ms(seconds: float) -> str:
    return format_value(seconds, "time", "ms")


def _tok_s(rate: float) -> str:
    return format_value(rate, "throughput", "tok/s")


def _per_request_bound(name: str, setup: Setup, at: Mapping[str, Any], chat_prompts: bool) -> PhysicalBound | None:
    """``request_throughput`` / ``request_goodput`` ≤ the output ceiling ÷ output_len; ``total_throughput`` ≤ it ×
    (input_len + output_len) ÷ output_len; only with the lengths every request has (and, for the total, prompts the
    server counts as input_len tokens: not the chat API's)."""
    if not _fixed(setup.max_output_len) or setup.lengths_from_dataset:
        return None
    if name == "total_throughput" and (chat_prompts or not _fixed(setup.max_input_len)):
        return None
    got = _output_ceiling(setup, at)
    if got is None:
        return None
    ceiling, how = got
    n_in, n_out = int(setup.input_len), int(setup.output_len)
    if name == "total_throughput":
        value = ceiling * (n_in + n_out) / n_out
        return PhysicalBound("upper", value,
                             f"the output ceiling {_tok_s(ceiling)} here × ({n_in:,} + {n_out:,}) ÷ {n_out:,}: every "
                             f"completed request carries its {n_in:,}-token prompt with its {n_out:,} output tokens "
                             f"(output ceiling: {how})")
    value = ceiling / n_out
    subset = ("; good requests are some of the completed ones, so request goodput is at most request throughput"
              if name == "request_goodput" else "")
    return PhysicalBound("upper", value,
                         f"the output ceiling {_tok_s(ceiling)} here ÷ the {n_out:,} output tokens every request makes "
                         f"(ignore_eos){subset} (output ceiling: {how})")


def _goodput_bound(setup: Setup, concurrencies: Sequence[float]) -> PhysicalBound | None:
    """``goodput`` ≤ the largest output ceiling among the file's closed-loop sweep points: it is one of them."""
    best: tuple[float, float] | None = None
    for c in concurrencies:
        got = _output_ceiling(setup, {"concurrency": float(c)})
        if got is not None and (best is None or got[0] > best[0]):
            best = (got[0], float(c))
    if best is None:
        return None
    points = ", ".join(f"{float(c):g}" for c in concurrencies)
    return PhysicalBound("upper", best[0],
                         f"goodput is the output throughput of one of the sweep's closed-loop points (concurrency "
                         f"{points}), and the largest of their decode-roofline output ceilings is {_tok_s(best[0])} "
                         f"at concurrency {best[1]:g}")


def _e2e_floor(setup: Setup) -> PhysicalBound | None:
    """``e2e_*`` ≥ its prefill (at least one weight read, or its prompt's FLOPs ÷ the peak where the prompt length is
    fixed and prefix caching off) + (output_len − 1) weight reads; only with a fixed output length."""
    if not _fixed(setup.max_output_len) or setup.lengths_from_dataset:
        return None
    got = _weight_read_s(setup)
    if got is None:
        return None
    read, ceiling = got
    n_out = int(setup.output_len)
    decode = (n_out - 1) * read
    prefill, prefill_why = read, f"at least one weight read, {_ms(read)}"
    if _fixed(setup.max_input_len) and setup.enable_prefix_caching is False:
        try:
            compute = int(setup.input_len) * float(setup.flop_per_token_per_gpu) / float(setup.peak_flop_per_s)
        except (ValueError, ZeroDivisionError, ArithmeticError):
            compute = 0.0
        if compute > read:
            prefill = compute
            prefill_why = (f"its {int(setup.input_len):,} prompt tokens' FLOPs ÷ the peak, {_ms(compute)} (the "
                           "prefill_floor; prefix caching is off)")
    bw = format_value(float(setup.hbm_bytes_per_s), "bandwidth")
    return PhysicalBound("lower", prefill + decode,
                         f"a request's prefill makes its first token ({prefill_why}), then {n_out - 1:,} decode steps "
                         f"make the rest, each reading the weights one GPU holds at no more than {bw}: "
                         f"{n_out - 1:,} × {_ms(read)} (1 ÷ the batch-1 ceiling {ceiling:,.1f} tok/s) = {_ms(decode)}")


def physical_bound(name: str, setup: Setup, at: Mapping[str, Any], *, concurrencies: Sequence[float] = (),
                   chat_prompts: bool = False) -> PhysicalBound | None:
    """The physical bound of quantity ``name`` at ``at`` for ``setup``, or None where it has none (or the setup
    cannot say: a CPU device, a memory size the catalog lacks). ``concurrencies``: the file's closed-loop sweep
    points (``goodput`` is one of theirs); ``chat_prompts``: the load goes through the chat API, whose prompts the
    server counts with the chat template's tokens (``total_throughput`` is then unbounded)."""
    if setup.device == "cpu" or getattr(setup.hardware, "family", "") == "cpu":
        return None
    if name == "batch1_ceiling":
        ceiling = setup.roofline_landmarks().batch1_ceiling_tok_per_s
        return PhysicalBound("upper", float(ceiling), "one GPU's datasheet bandwidth ÷ the weights it reads a token")
    if name == "output_throughput":
        out_ceiling = _output_ceiling(setup, at)
        return None if out_ceiling is None else PhysicalBound("upper", out_ceiling[0], out_ceiling[1])
    if name in ROOFLINE_CEILING_QUANTITIES:
        # a request's own rate (per-request, batch 1) is highest alone: a smaller batch only shortens a step
        rate = _roofline_rate(setup, at, batch1=True)
        if rate is None:
            return None
        tp = int(getattr(setup, "tensor_parallel_size", 1) or 1)
        return PhysicalBound("upper", rate,
                             "the decode roofline's step at batch 1 (a request's own rate is highest alone): its "
                             "bytes ÷ the datasheet bandwidth or its FLOPs ÷ the peak, whichever is longer"
                             + (f", without the {tp} ranks' all-reduces" if tp > 1 else "")
                             + "; prefill, overheads and a fuller batch only lengthen a step")
    if name in PER_REQUEST_CEILING_QUANTITIES:
        return _per_request_bound(name, setup, at, chat_prompts)
    if name == "goodput":
        return _goodput_bound(setup, concurrencies)
    if name in TPOT_FLOOR_QUANTITIES:
        weight_read = _weight_read_s(setup)
        if weight_read is None:
            return None
        read, b1 = weight_read
        bw = format_value(float(setup.hbm_bytes_per_s), "bandwidth")
        return PhysicalBound("lower", read,
                             f"every decode step reads the weights one GPU holds at no more than {bw}: one read "
                             f"takes {_ms(read)} (1 ÷ the batch-1 ceiling {b1:,.1f} tok/s)")
    if name in E2E_FLOOR_QUANTITIES:
        return _e2e_floor(setup)
    if name in KV_POOL_QUANTITIES:
        try:
            kv = kv_accounting(setup)
        except (ValueError, ZeroDivisionError, ArithmeticError):
            return None
        total = kv.total_memory_bytes
        if not total or kv.bytes_per_block <= 0:
            return None
        free = float(total) - float(kv.weight_bytes)
        if free <= 0:
            return None
        blocks = math.floor(free / kv.bytes_per_block)
        value = {"num_gpu_blocks": float(blocks), "kv_cache_tokens": float(blocks * kv.block_size),
                 "available_kv_bytes": free}[name]
        why = (f"the device's {format_value(float(total), 'bytes', 'GiB')} less the weights "
               f"({format_value(float(kv.weight_bytes), 'bytes', 'GiB')} a GPU) leaves "
               f"{format_value(free, 'bytes', 'GiB')}: {blocks:,} blocks of "
               f"{format_value(float(kv.bytes_per_block), 'bytes', 'MiB')} even at gpu_memory_utilization 1 with "
               "no activation, runtime or CUDA-graph memory")
        return PhysicalBound("upper", value, why)
    return None
