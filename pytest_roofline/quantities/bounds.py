"""Physical bounds no run can cross: what the CPU-only math check fails ink beyond, whatever its tolerance or band.

A tolerance says how far a measurement may land from the ink; a band says how far runs land from the serving
model. Neither can carry ink past what the chip's datasheet allows, so the math check tests these first (issue 22:
"ink above a physical ceiling (the roofline, the KV pool) always fails"):

* **the decode roofline's throughput is a ceiling** (``output_throughput`` at its point; ``per_request_throughput``
  and ``batch1_throughput`` at batch 1, where a request runs fastest; ``batch1_ceiling`` itself): a decode step
  cannot take less than its bytes ÷ the datasheet bandwidth, nor its FLOPs ÷ the peak; prefill chunks, overheads
  and a fuller batch only lengthen it. The all-reduces under TP are left out of the bound: their per-call latency
  is a modelled figure a fast kernel may beat;
* **the weight read is a TPOT floor** (``tpot_*``): every decode step reads the weights one GPU holds (the routed
  experts' share for an MoE model at batch 1), so a request's mean time per output token is at least that read ÷
  the bandwidth (1 ÷ the batch-1 ceiling). ITL is left out: a client can see tokens arrive together;
* **the device's memory less the weights is a ceiling on the KV pool** (``num_gpu_blocks``, ``kv_cache_tokens``,
  ``available_kv_bytes``): even at ``gpu_memory_utilization: 1`` and no activation, runtime or CUDA-graph memory.

None on the CPU backend: its catalog figures (host memory bandwidth, a KV space set by an environment variable) are
orders of magnitude, not datasheet limits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_roofline.model.setup import Setup, kv_accounting
from pytest_roofline.quantities.declare import decode_step
from pytest_roofline.units import format_value

__all__ = ["PhysicalBound", "physical_bound", "batch1_step_rate", "ROOFLINE_CEILING_QUANTITIES",
           "TPOT_FLOOR_QUANTITIES", "KV_POOL_QUANTITIES"]

Side = Literal["upper", "lower"]

#: quantities whose decode-roofline value at their point is a ceiling on what a run measures
ROOFLINE_CEILING_QUANTITIES: frozenset[str] = frozenset({"output_throughput", "per_request_throughput",
                                                         "batch1_throughput", "batch1_ceiling"})
#: time per output token, whose mean over a request cannot beat one weight read per step
TPOT_FLOOR_QUANTITIES: frozenset[str] = frozenset({"tpot_mean", "tpot_p50", "tpot_p90", "tpot_p95", "tpot_p99"})
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


def physical_bound(name: str, setup: Setup, at: Mapping[str, Any]) -> PhysicalBound | None:
    """The physical bound of quantity ``name`` at ``at`` for ``setup``, or None where it has none (or the setup
    cannot say: a CPU device, a memory size the catalog lacks)."""
    if setup.device == "cpu" or getattr(setup.hardware, "family", "") == "cpu":
        return None
    if name == "batch1_ceiling":
        ceiling = setup.roofline_landmarks().batch1_ceiling_tok_per_s
        return PhysicalBound("upper", float(ceiling), "one GPU's datasheet bandwidth ÷ the weights it reads a token")
    if name in ROOFLINE_CEILING_QUANTITIES:
        # a request's own rate (per-request, batch 1) is highest alone: a smaller batch only shortens a step
        rate = _roofline_rate(setup, at, batch1=name != "output_throughput")
        if rate is None:
            return None
        tp = int(getattr(setup, "tensor_parallel_size", 1) or 1)
        return PhysicalBound("upper", rate,
                             ("the decode roofline's step " + ("at this point" if name == "output_throughput" else
                                                                "at batch 1 (a request's own rate is highest alone)")
                              + ": its bytes ÷ the datasheet bandwidth or its FLOPs ÷ the peak, whichever is longer"
                              + (f", without the {tp} ranks' all-reduces" if tp > 1 else "")
                              + "; prefill, overheads and a fuller batch only lengthen a step"))
    if name in TPOT_FLOOR_QUANTITIES:
        try:
            ceiling = setup.roofline_landmarks().batch1_ceiling_tok_per_s
        except (ValueError, ZeroDivisionError, ArithmeticError):
            return None
        if not (ceiling and math.isfinite(ceiling) and ceiling > 0):
            return None
        bw = format_value(float(setup.hbm_bytes_per_s), "bandwidth")
        return PhysicalBound("lower", 1.0 / ceiling,
                             f"every decode step reads the weights one GPU holds at no more than {bw}: one read "
                             f"takes {format_value(1.0 / ceiling, 'time', 'ms')} (1 ÷ the batch-1 ceiling "
                             f"{ceiling:,.1f} tok/s)")
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
