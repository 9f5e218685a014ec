"""vLLM defaults by version and device, each with where it comes from.

Every value here was read from vLLM's own source at its release tags (the PyPI sdists of 0.6.3 ... 0.33.0,
the same tree as github.com/vllm-project/vllm at ``vX.Y.Z``); the file and function are cited next to each
rule as ``vX.Y: path (function)``.  The rules cover the V1 engine from 0.10 on; answers for older versions are
marked as such in their ``source`` strings (or are ``None`` where nothing was read).

Pure data and arithmetic: no vLLM import, no pytest import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from pytest_roofline.units import GIB

__all__ = [
    "VllmVersion",
    "parse_version",
    "default_gpu_memory_utilization",
    "default_block_size",
    "default_scheduler_limits",
    "cuda_graph_memory_budgeted",
    "default_enable_prefix_caching",
    "default_enable_chunked_prefill",
    "VllmDefaults",
    "defaults_for",
    "FIRST_COVERED_VERSION",
]


#: The oldest release whose V1 defaults were read (v0.10.0: the first V1-only default tables).
FIRST_COVERED_VERSION = (0, 10, 0)


class VllmVersion(NamedTuple):
    """A release number reduced to (major, minor, patch); compares like a tuple."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


_VERSION_RE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(version: str | tuple[int, ...] | VllmVersion) -> VllmVersion:
    """``"0.26.0"`` -> ``VllmVersion(0, 26, 0)``.

    Accepts a leading ``v``, a missing patch (``"0.9"``), and ignores suffixes such as ``.post1``, ``rc1``,
    ``.dev12`` or a local ``+cu128`` / ``+cpu`` (so ``"0.11.0rc1"`` maps to 0.11.0 -- close enough for
    defaults, which change only at minor releases).
    """
    if isinstance(version, VllmVersion):
        return version
    if isinstance(version, tuple):
        if not 2 <= len(version) <= 3 or not all(isinstance(x, int) and x >= 0 for x in version):
            raise ValueError(f"not a version tuple: {version!r}")
        return VllmVersion(*version)
    if not isinstance(version, str):
        raise TypeError(f"version must be a string or tuple, got {type(version).__name__}")
    m = _VERSION_RE.match(version)
    if not m:
        raise ValueError(f"not a vLLM version: {version!r}")
    return VllmVersion(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def _covered_note(v: VllmVersion) -> str:
    return "" if v >= FIRST_COVERED_VERSION else " [pre-0.10: older than the releases read, assumed]"


# --- gpu_memory_utilization ---------------------------------------------------------------------------


def default_gpu_memory_utilization(version: str | tuple[int, ...]) -> float:
    """0.9 up to 0.19, 0.92 from 0.20 (v0.20: vllm/config/cache.py ``CacheConfig.gpu_memory_utilization``;
    changed in the release that turned CUDA-graph memory profiling on)."""
    return 0.92 if parse_version(version) >= (0, 20, 0) else 0.9


# --- block size -------------------------------------------------------------------------------------------

_GPU_DEVICES = {"cuda", "gpu", "rocm"}


def _normalise_device(device: str) -> str:
    d = device.strip().lower()
    if d == "cpu":
        return "cpu"
    if d in _GPU_DEVICES:
        return "cuda"
    raise ValueError(f"unknown device {device!r}: use 'cuda' (or 'gpu'/'rocm') or 'cpu'")


def default_block_size(device: str = "cuda") -> int:
    """16 tokens on GPU (v0.33: vllm/config/cache.py ``CacheConfig.DEFAULT_BLOCK_SIZE``), 128 on CPU (v0.33:
    vllm/platforms/cpu.py ``update_block_size_for_backend``).  Attention backends may override it (ROCm AITER 64,
    MLA paths, CPU MLA 16; vllm/platforms/interface.py); not modelled here."""
    return 128 if _normalise_device(device) == "cpu" else 16


# --- scheduler limits (arg_utils.py get_batch_defaults) ------------------------------------------------------


def _scheduler_tier(v: VllmVersion, device: str, device_name: str, total_memory_bytes: float | None) -> str:
    if device == "cpu":
        return "cpu"
    if total_memory_bytes is None:
        raise ValueError("total_memory_bytes is required for a GPU (the default limits are tiered by memory)")
    name = device_name.lower()
    # v0.28: the >=160 GiB tier (B200/B300) first appears in get_batch_defaults.
    if v >= (0, 28, 0) and total_memory_bytes >= 160 * GIB:
        return "160gib"
    # >=70 GiB excluding any name containing "a100" (github.com/vllm-project/vllm/pull/17885) and GB10.
    if total_memory_bytes >= 70 * GIB and "a100" not in name and "gb10" not in name:
        return "70gib"
    return "other"


#: (max_num_seqs, max_num_batched_tokens) per tier and usage context (v0.33: vllm/engine/arg_utils.py
#: ``EngineArgs.get_batch_defaults``; the same table without the 160 GiB tier in v0.10).
_SCHEDULER_TABLE: dict[tuple[str, str], tuple[int, int]] = {
    ("160gib", "serve"): (1024, 16384),
    ("160gib", "llm"): (1024, 16384),
    ("70gib", "serve"): (1024, 8192),
    ("70gib", "llm"): (1024, 16384),
    ("other", "serve"): (256, 2048),
    ("other", "llm"): (256, 8192),
    ("cpu", "serve"): (128, 2048),  # times world_size
    ("cpu", "llm"): (256, 4096),  # times world_size
}


def _usage(usage: str) -> str:
    u = usage.strip().lower()
    if u in ("serve", "openai_api_server", "openai", "api_server"):
        return "serve"
    if u in ("llm", "llm_class", "offline"):
        return "llm"
    raise ValueError(f"unknown usage {usage!r}: 'serve' (vllm serve) or 'llm' (the LLM class)")


def default_scheduler_limits(version: str | tuple[int, ...], *, device: str = "cuda", device_name: str = "",
                             total_memory_bytes: float | None = None, usage: str = "serve",
                             world_size: int = 1, performance_mode: str = "balanced",
                             max_model_len: int | None = None) -> tuple[int, int]:
    """Default ``(max_num_seqs, max_num_batched_tokens)`` (v0.33: vllm/engine/arg_utils.py ``get_batch_defaults``).

    * GPU >= 160 GiB (0.28+ only): 1024 / 16384.
    * GPU >= 70 GiB whose name lacks "a100" (and is not GB10): 1024 / 8192 for ``vllm serve`` (LLM class
      16384).  A100-80GB is excluded on purpose.
    * every other GPU, A100-80GB included: 256 / 2048 (LLM class 8192).
    * CPU: 128 x world_size / 2048 x world_size (LLM class 256 / 4096, x world_size).

    ``performance_mode="throughput"`` (0.17+) doubles both.  With ``max_model_len`` the token budget is capped
    at ``max_num_seqs x max_model_len`` as vLLM does when defaults are used.
    """
    v = parse_version(version)
    dev = _normalise_device(device)
    tier = _scheduler_tier(v, dev, device_name, total_memory_bytes)
    seqs, tokens = _SCHEDULER_TABLE[(tier, _usage(usage))]
    if dev == "cpu":
        if world_size < 1:
            raise ValueError("world_size must be >= 1")
        seqs *= world_size
        tokens *= world_size
    mode = performance_mode.strip().lower()
    if mode not in ("balanced", "interactivity", "throughput"):
        raise ValueError(f"unknown performance_mode {performance_mode!r}")
    if mode == "throughput":
        if v < (0, 17, 0):
            raise ValueError("--performance-mode exists from vLLM 0.17")
        seqs *= 2
        tokens *= 2
    if max_model_len is not None:
        tokens = min(tokens, seqs * int(max_model_len))
    return seqs, tokens


# --- CUDA graphs ------------------------------------------------------------------------------------------


def cuda_graph_memory_budgeted(version: str | tuple[int, ...]) -> bool:
    """Whether the CUDA-graph memory estimate is subtracted from the KV budget by default (v0.33:
    vllm/v1/worker/gpu_worker.py ``determine_available_memory``; the switch is vllm/envs.py
    ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``).

    Up to 0.17 graphs were captured after KV allocation and had to fit in the 1 - utilisation headroom; 0.18-0.19
    had it opt-in (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0`` by default); the default is on "as of v0.21.0"
    (the flag's comment and vLLM's own log line).  The 0.20.0 sdist already defaults the variable to "1"; we
    follow the documented 0.21 boundary.
    """
    return parse_version(version) >= (0, 21, 0)


# --- chunked prefill / prefix caching ---------------------------------------------------------------


def default_enable_prefix_caching(version: str | tuple[int, ...], *, generative: bool = True,
                                  riscv: bool = False) -> bool | None:
    """On by default for generative models in V1 (v0.10 "V1 always uses chunked prefills and prefix caching
    for non-pooling tasks", v0.10: vllm/engine/arg_utils.py ``_set_default_args_v1``; vllm/config/cache.py
    ``CacheConfig.enable_prefix_caching = True`` since 0.12).
    Off for pooling models and on RISC-V CPUs.  ``None`` before 0.10 (not covered)."""
    v = parse_version(version)
    if v < FIRST_COVERED_VERSION:
        return None
    return bool(generative and not riscv)


def default_enable_chunked_prefill(version: str | tuple[int, ...], *, generative: bool = True,
                                   encoder_decoder: bool = False, riscv: bool = False) -> bool | None:
    """Always on in V1 for generative decoder models; off for encoder-decoder models (0.33:
    ``is_chunked_prefill_supported``, vllm/config/model.py) and on RISC-V CPUs (v0.10: vllm/engine/arg_utils.py
    ``_set_default_args_v1``).  ``None`` before 0.10."""
    v = parse_version(version)
    if v < FIRST_COVERED_VERSION:
        return None
    return bool(generative and not encoder_decoder and not riscv)


# --- bundle -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VllmDefaults:
    """The defaults one ``vllm serve`` (or LLM-class) launch gets on one device, with a source per field.

    ``sources[field]`` (or :meth:`source`) says where each value comes from.
    """

    version: VllmVersion
    device: str
    gpu_memory_utilization: float
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    cuda_graph_memory_budgeted: bool
    enable_prefix_caching: bool | None
    enable_chunked_prefill: bool | None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def source(self, name: str) -> str:
        """Where the value of field ``name`` comes from."""
        try:
            return self.sources[name]
        except KeyError:
            raise KeyError(f"no field {name!r} with a source; have {sorted(self.sources)}") from None


def defaults_for(version: str | tuple[int, ...], *, device: str = "cuda", device_name: str = "",
                 total_memory_bytes: float | None = None, usage: str = "serve", world_size: int = 1,
                 performance_mode: str = "balanced") -> VllmDefaults:
    """Resolve every default for a (version, device) pair.

    ``device_name`` is what the driver reports (``"NVIDIA A100-SXM4-80GB"``); ``total_memory_bytes`` the
    device's total memory (required on GPU: the scheduler defaults are tiered by it).
    """
    v = parse_version(version)
    dev = _normalise_device(device)
    note = _covered_note(v)
    seqs, tokens = default_scheduler_limits(v, device=dev, device_name=device_name,
                                            total_memory_bytes=total_memory_bytes, usage=usage,
                                            world_size=world_size, performance_mode=performance_mode)
    tier = _scheduler_tier(v, dev, device_name, total_memory_bytes)
    tier_text = {
        "160gib": ">=160 GiB tier (0.28+)",
        "70gib": ">=70 GiB tier (name without 'a100', not GB10)",
        "other": "default GPU tier (<70 GiB, or an A100 -- excluded on purpose, PR #17885)",
        "cpu": f"CPU tier x world_size={world_size}",
    }[tier]
    util = default_gpu_memory_utilization(v)
    sources = {
        "gpu_memory_utilization": (
            f"vLLM v0.20: vllm/config/cache.py default {util} ({'0.20+' if util == 0.92 else '<=0.19'})"
            + ("; on CPU (0.20+) it scales the NUMA node's memory" if dev == "cpu" else "") + note),
        "block_size": ("vLLM v0.33: vllm/platforms/cpu.py update_block_size_for_backend (CPU 128)"
                       if dev == "cpu" else
                       "vLLM v0.33: vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 16 (backends may "
                       "override)") + note,
        "max_num_seqs": f"vLLM v0.33: vllm/engine/arg_utils.py get_batch_defaults, {tier_text}, "
                        f"usage={_usage(usage)}"
                        + (f", performance_mode={performance_mode}" if performance_mode != "balanced" else "")
                        + note,
        "max_num_batched_tokens": f"vLLM v0.33: vllm/engine/arg_utils.py get_batch_defaults, {tier_text}, "
                                  f"usage={_usage(usage)}"
                                  + (f", performance_mode={performance_mode}" if performance_mode != "balanced"
                                     else "") + note,
        "cuda_graph_memory_budgeted": ("vLLM v0.21: vllm/envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default "
                                       "on as of v0.21.0 (opt-in 0.18-0.19, absent before)") if dev == "cuda" else
                                      "CPU backend: no CUDA graphs to budget",
        "enable_prefix_caching": ("vLLM v0.12: vllm/config/cache.py V1 prefix caching on for generative models "
                                  "(CacheConfig.enable_prefix_caching = True since 0.12)")
                                 if v >= FIRST_COVERED_VERSION else "not covered: older than the releases read "
                                                                   "(pre-0.10)",
        "enable_chunked_prefill": ("vLLM v0.10: vllm/engine/arg_utils.py _set_default_args_v1, V1 always "
                                   "chunks prefills for generative decoder models")
                                  if v >= FIRST_COVERED_VERSION else "not covered: older than the releases read "
                                                                    "(pre-0.10)",
    }
    return VllmDefaults(
        version=v,
        device=dev,
        gpu_memory_utilization=util,
        block_size=default_block_size(dev),
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        cuda_graph_memory_budgeted=cuda_graph_memory_budgeted(v) if dev == "cuda" else False,
        enable_prefix_caching=default_enable_prefix_caching(v),
        enable_chunked_prefill=default_enable_chunked_prefill(v),
        sources=MappingProxyType(sources),
    )
