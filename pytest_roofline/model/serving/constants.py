"""The serving model's efficiency fractions and overheads (``ServingConstants``), their documented defaults
(``default_constants``) and the public source of each (``CONSTANT_SOURCES``; docs/sources.md has the full notes).

Defaults: :func:`default_constants` (sources in :data:`CONSTANT_SOURCES` and docs/sources.md).  For
``device == "cpu"`` (the vLLM CPU engine serving the project's tiny model) they are uncalibrated order-of-magnitude
values: that engine's costs are mostly overhead, so calibrate before trusting a CPU prediction.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_roofline.errors import SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup

__all__ = ["ServingConstants", "CONSTANT_SOURCES", "default_constants", "KERNELS_PER_LAYER", "ACTIVATION_BYTES"]

#: kernels per decoder layer charged the fixed memory latency: the QKV, output, gate/up and down GEMMs and the
#: attention kernel (norms and activations are fused into these by vLLM's compiled graphs); plus one lm_head.
KERNELS_PER_LAYER = 5
#: bytes per activation element in an all-reduce (bf16 hidden states); its home is model/analytical.py
ACTIVATION_BYTES = an.ACTIVATION_BYTES


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


def default_constants(setup: Setup) -> ServingConstants:
    """The documented defaults (see :data:`CONSTANT_SOURCES`); ``cpu`` devices get uncalibrated ones."""
    if setup.device == "cpu" or setup.hardware.family == "cpu":
        return ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.1, mem_latency_s=0.0,
                                step_overhead_s=2e-3, per_seq_overhead_s=50e-6,
                                host_mem_bytes_per_s=20e9, host_peak_flop_per_s=100e9)
    return ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.75, mem_latency_s=3e-6,
                            step_overhead_s=1.0e-3, per_seq_overhead_s=10e-6)
