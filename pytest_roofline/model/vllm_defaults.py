"""vLLM defaults by version, device and entrypoint, each with where it comes from.

Every value here was read from vLLM's own source at its release tags: the PyPI sdists of 0.4.1 ... 0.33.0 (the
same tree as github.com/vllm-project/vllm at ``vX.Y.Z``; 0.4.0 has no sdist on PyPI and is taken to be 0.4.1).
The file and function are cited next to each rule as ``vX.Y.Z: path (function)``.

Two engines share the version range:

* **V0** (``vllm/engine/llm_engine.py`` + ``vllm/worker/worker.py``): the only engine up to 0.7.x, the fallback
  for unsupported setups from 0.8.0 to 0.10.x, removed in 0.11.0 (v0.11.0: vllm/engine/llm_engine.py aliases the
  V1 ``LLMEngine``).  ``max_num_seqs`` 256, ``max_num_batched_tokens``
  ``max(max_model_len, 2048)`` without chunked prefill, chunked prefill off except for > 32K-context models on a
  GPU (0.5.3+), prefix caching off, 4 GiB CPU swap per GPU, CUDA graphs captured after the KV cache is sized.
* **V1** (``vllm/v1/``): the default from 0.8.0 for supported setups (``VLLM_USE_V1`` unset), the only engine
  from 0.11.0.  Chunked prefill and prefix caching always on for generative models, batch limits by device and
  by usage context: ``vllm serve`` (``UsageContext.OPENAI_API_SERVER``) and the offline ``LLM`` class
  (``UsageContext.LLM_CLASS``) differ since V1's ``_set_default_args_v1`` (0.8.0; opt-in V1 had it from 0.7.0).

A version outside the releases read (older than 0.4.0, newer than 0.33.0) is resolved to the nearest one read,
with an :class:`~pytest_roofline.errors.UnknownEngineVersionWarning` naming it -- never silently.

Pure data and arithmetic: no vLLM import, no pytest import.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, NamedTuple

from pytest_roofline.errors import UnknownEngineVersionWarning
from pytest_roofline.units import GIB

__all__ = [
    "VllmVersion",
    "parse_version",
    "FIRST_RELEASE_BY_MODEL_TYPE",
    "LLAMA3_ROPE_RELEASE",
    "model_support_problem",
    "OLDEST_KNOWN_VERSION",
    "NEWEST_KNOWN_VERSION",
    "FIRST_COVERED_VERSION",
    "known_version",
    "resolve_version",
    "default_engine",
    "default_gpu_memory_utilization",
    "default_block_size",
    "default_scheduler_limits",
    "cuda_graph_memory_budgeted",
    "default_enable_prefix_caching",
    "default_enable_chunked_prefill",
    "default_swap_space_bytes",
    "memory_profiling_method",
    "MEMORY_PROFILING_METHODS",
    "V1_OPT_IN_VERSION",
    "v1_oracle_fallbacks",
    "VllmDefaults",
    "defaults_for",
]


class VllmVersion(NamedTuple):
    """A release number reduced to (major, minor, patch); compares like a tuple."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


#: The oldest release whose defaults are known (0.4.0; its rules were read from the 0.4.1 sdist, the oldest 0.4
#: on PyPI).
OLDEST_KNOWN_VERSION = VllmVersion(0, 4, 0)
#: The newest release read (0.33.0, PyPI, uploaded 2026-11-02).
NEWEST_KNOWN_VERSION = VllmVersion(0, 33, 0)
#: Kept for callers of the earlier API: the oldest version covered (now the oldest known, 0.4.0).
FIRST_COVERED_VERSION = OLDEST_KNOWN_VERSION

_VERSION_RE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


#: the first vLLM release whose model registry loads each ``model_type`` that arrived after 0.4.0 (every other
#: family the project reads, llama, mistral, qwen2, opt, phi, gemma, gpt_neox and falcon, is in 0.4.0's
#: vllm/model_executor/models/__init__.py), with the evidence: the PyPI wheels read and maintainers' statements
FIRST_RELEASE_BY_MODEL_TYPE: dict[str, tuple[VllmVersion, str, str]] = {
    "phi3": (VllmVersion(0, 4, 2), "Phi3ForCausalLM",
             "absent from the 0.4.0 and 0.4.1 wheels' vllm/model_executor/models/__init__.py; 'the release version "
             "0.4.1 does not yet support Phi3' (github.com/vllm-project/vllm/issues/4375)"),
    "gemma2": (VllmVersion(0, 5, 1), "Gemma2ForCausalLM",
               "in the 0.5.1 wheel's registry; the v0.5.0.post1 image lists no Gemma2 "
               "(github.com/vllm-project/vllm/issues/6986)"),
    "deepseek_v2": (VllmVersion(0, 5, 1), "DeepseekV2ForCausalLM",
                    "in the 0.5.1 wheel's registry; v0.5.0.post1 refuses it as not supported "
                    "(github.com/vllm-project/vllm/issues/6986)"),
    "deepseek_v3": (VllmVersion(0, 6, 6), "DeepseekV3ForCausalLM",
                    "'supported since v0.6.6' (github.com/vllm-project/vllm/issues/11559); 0.6.5 refuses it "
                    "(github.com/vllm-project/vllm/issues/11520)"),
    "gemma3": (VllmVersion(0, 8, 0), "Gemma3ForConditionalGeneration",
               "released after 0.7.3 (Gemma 3: 2025-03-12); vLLM PR 14971 adjusts it 'given the 0.8.0 release'; in "
               "the 0.8.3 wheel's registry"),
    "gemma3_text": (VllmVersion(0, 8, 0), "Gemma3ForCausalLM",
                    "released after 0.7.3 (Gemma 3: 2025-03-12); in the 0.8.3 wheel's registry"),
    "qwen3": (VllmVersion(0, 8, 4), "Qwen3ForCausalLM",
              "absent from the 0.8.3 wheel's vllm/model_executor/models/registry.py; 'vLLM v0.8.4 and higher "
              "natively supports all Qwen3 and Qwen3MoE models' (github.com/vllm-project/vllm/issues/17327)"),
    "qwen3_moe": (VllmVersion(0, 8, 4), "Qwen3MoeForCausalLM",
                  "absent from the 0.8.3 wheel's registry; 'vLLM v0.8.4 and higher natively supports all Qwen3 and "
                  "Qwen3MoE models' (github.com/vllm-project/vllm/issues/17327)"),
}


#: Llama 3.1's ``rope_scaling: {rope_type: llama3}``: vLLM reads it from 0.5.3.post1 (the 0.5.3 wheel's
#: vllm/config.py and rotary_embedding.py read only ``rope_scaling["type"]``, so the config fails with KeyError
#: 'type'; the 0.5.3.post1 wheel reads ``type`` or ``rope_type`` and builds the llama3 rotary embedding)
LLAMA3_ROPE_RELEASE = "0.5.3.post1"


def model_support_problem(model_type: str | None, version: str | tuple[int, ...] | VllmVersion, *,
                          rope_type: str | None = None) -> str | None:
    """Why vLLM ``version`` cannot load a model of ``model_type`` (its registry gains the architecture in a later
    release: :data:`FIRST_RELEASE_BY_MODEL_TYPE`) or with ``rope_type`` (``llama3``: :data:`LLAMA3_ROPE_RELEASE`),
    None when it can or neither is one listed."""
    v = parse_version(version)
    entry = FIRST_RELEASE_BY_MODEL_TYPE.get(str(model_type or ""))
    if entry is not None and v < entry[0]:
        first, arch, evidence = entry
        return (f"vLLM {v} cannot load {arch} (model_type {model_type}): its model registry has it from "
                f"{first} ({evidence}); name {first} or a later release")
    post = isinstance(version, str) and ".post" in version.lower()
    if rope_type == "llama3" and (v < (0, 5, 3) or (v == (0, 5, 3) and not post)):
        return (f"vLLM {version if isinstance(version, str) else v} cannot read rope_scaling.rope_type 'llama3' "
                f"(Llama 3.1 and later): it reads it from {LLAMA3_ROPE_RELEASE} (the 0.5.3 wheel's vllm/config.py "
                "reads only rope_scaling['type'] and fails with KeyError 'type'); name 0.5.4 or a later release")
    return None


def parse_version(version: str | tuple[int, ...] | VllmVersion) -> VllmVersion:
    """``"0.26.0"`` -> ``VllmVersion(0, 26, 0)``.

    Accepts a leading ``v``, a missing patch (``"0.9"``), and ignores suffixes such as ``.post1``, ``rc1``,
    ``.dev12`` or a local ``+cu128`` / ``+cpu`` (so ``"0.11.0rc1"`` maps to 0.11.0 -- close enough for
    defaults, which change only at releases).
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


def known_version(version: str | tuple[int, ...] | VllmVersion) -> tuple[VllmVersion, str | None]:
    """The version whose defaults apply, and why it differs from ``version`` (``None`` when it does not).

    Inside 0.4.0 ... 0.33.0 a version is its own answer (a patch or minor between two releases read falls under
    the rules of the releases around it: every rule here is a version boundary).  Outside, the nearest end.
    """
    v = parse_version(version)
    if v < OLDEST_KNOWN_VERSION:
        return OLDEST_KNOWN_VERSION, (
            f"vLLM {v} is older than the oldest release pytest-roofline knows the defaults of "
            f"({OLDEST_KNOWN_VERSION}); using the defaults of the nearest known version, {OLDEST_KNOWN_VERSION}")
    if v > NEWEST_KNOWN_VERSION:
        return NEWEST_KNOWN_VERSION, (
            f"vLLM {v} is newer than the newest release pytest-roofline knows the defaults of "
            f"({NEWEST_KNOWN_VERSION}); using the defaults of the nearest known version, {NEWEST_KNOWN_VERSION}; "
            "set engine.args explicitly where they changed")
    return v, None


def resolve_version(version: str | tuple[int, ...] | VllmVersion, *, warn: bool = True,
                    stacklevel: int = 2) -> VllmVersion:
    """:func:`known_version`, warning (:class:`UnknownEngineVersionWarning`) when the version is not known."""
    v, why = known_version(version)
    if why is not None and warn:
        warnings.warn(UnknownEngineVersionWarning(why), stacklevel=stacklevel + 1)
    return v


# --- which engine -----------------------------------------------------------------------------------------

#: vLLM's engine generation: the V0 engine or the V1 engine (``VLLM_USE_V1``)
EngineKind = Literal["v0", "v1"]
#: how vLLM is driven, which sets the scheduler limits' usage context: ``vllm serve`` or the offline ``LLM`` class
Entrypoint = Literal["serve", "llm"]

_GPU_DEVICES = {"cuda", "gpu", "rocm"}


def _normalise_device(device: str) -> str:
    d = device.strip().lower()
    if d == "cpu":
        return "cpu"
    if d in _GPU_DEVICES:
        return "cuda"
    raise ValueError(f"unknown device {device!r}: use 'cuda' (or 'gpu'/'rocm') or 'cpu'")


def _platform(device: str) -> str:
    """'cuda', 'rocm' or 'cpu' (the engine oracle tells ROCm from CUDA; the defaults tables do not)."""
    d = device.strip().lower()
    _normalise_device(d)
    return "rocm" if d == "rocm" else ("cpu" if d == "cpu" else "cuda")


#: The first release whose opt-in V1 engine (``VLLM_USE_V1=1``) has its own defaults (v0.6.5:
#: vllm/engine/arg_utils.py ``_override_v1_engine_args``: chunked prefill, LLM class 8192 / serve 2048 tokens;
#: ``__post_init__``: max_num_seqs 1024, prefix caching on).
V1_OPT_IN_VERSION = VllmVersion(0, 6, 5)


#: The first release whose default engine is V1 on CUDA below compute capability 8.0 (V100, T4): 0.10.2.  In 0.8.0 ...
#: 0.10.1.1 ``EngineArgs._is_v1_supported_oracle`` sends such a GPU to V0: "Need at least Ampere for now (FA support
#: required)", ``get_device_capability().major < 8`` -> ``_raise_or_fallback(feature_name="Compute Capability < 8.0")``
#: (github.com/vllm-project/vllm/blob/v0.10.1/vllm/engine/arg_utils.py lines 1396-1404; v0.10.0 lines 1343-1351,
#: v0.9.2 lines 1353-1361).  The oracle of github.com/vllm-project/vllm/blob/v0.10.2/vllm/engine/arg_utils.py
#: (``_is_v1_supported_oracle``, line 1431) has no capability check left, and CUDA keeps V1 there
#: (github.com/vllm-project/vllm/blob/v0.10.2/vllm/platforms/cuda.py: ``supports_v1`` returns True, line 472;
#: "FlexAttention is the default for older GPUs", line 366).  The check was read in every wheel 0.8.0 ... 0.10.2
#: and in the sdists of 0.8.2, 0.8.3, 0.9.2, 0.10.0, 0.10.1, 0.10.1.1 and 0.10.2.
CC_BELOW_8_V0_UNTIL = VllmVersion(0, 10, 2)


def default_engine(version: str | tuple[int, ...], *, device: str = "cuda", compute_capability: float | None = None,
                   kv_cache_dtype: str = "auto", use_v1: bool | None = None) -> EngineKind:
    """``"v0"`` or ``"v1"``: the engine a launch gets with ``VLLM_USE_V1`` unset (or set: ``use_v1``).

    * before 0.8.0: V0 (V1 was opt-in with ``VLLM_USE_V1=1``, modelled from 0.6.5, the first release with V1
      defaults: v0.6.5 vllm/engine/arg_utils.py ``_override_v1_engine_args``; vllm/envs.py default "0").
    * 0.8.0 ... 0.10.x: V1 when ``_is_v1_supported_oracle`` accepts the setup (v0.8.0 ... v0.10.1:
      vllm/engine/arg_utils.py ``EngineArgs._is_v1_supported_oracle``), else V0:

      - CUDA with compute capability < 8.0 (V100, T4): V0 ("Compute Capability < 8.0") in 0.8.0 ... 0.10.1.1; from
        0.10.2 V1 (the oracle no longer checks the capability: :data:`CC_BELOW_8_V0_UNTIL`).
      - a KV-cache dtype other than ``auto``: V0 in 0.8.0-0.8.2; from 0.8.3 V1 where FlashAttention 3 takes
        FP8 (``flash_attn_supports_fp8``: compute capability 9.x), from 0.10.0 also 10.x
        (vllm/platforms/cuda.py ``is_kv_cache_dtype_supported``).  Unknown capability: taken as supported.
      - ROCm: V0 up to 0.9.1 (v0.8.x "not_cuda"; v0.9.0 ``v0_hardware``), V1 from 0.9.2
        (``Platform.default_v1``).
      - CPU: V0 up to 0.9.1, V1 from 0.9.2 on x86 (v0.9.2: vllm/platforms/cpu.py ``default_v1``).
    * 0.11.0 on: V1 only (v0.11.0: vllm/engine/llm_engine.py is ``LLMEngine = V1LLMEngine``, vllm/worker/worker.py
      is gone, and ``_is_v1_supported_oracle`` has no compute-capability fallback left).
    """
    v = parse_version(version)
    plat = _platform(device)
    if use_v1 is True:
        if v < V1_OPT_IN_VERSION:
            raise ValueError(f"vLLM {v} has no V1 engine to model (VLLM_USE_V1=1 is modelled from "
                             f"{V1_OPT_IN_VERSION})")
        return "v1"
    if use_v1 is False:
        if v >= (0, 11, 0):
            raise ValueError(f"vLLM {v} has no V0 engine (removed in 0.11.0)")
        return "v0"
    if v < (0, 8, 0):
        return "v0"
    if v >= (0, 11, 0):
        return "v1"
    if plat in ("cpu", "rocm"):
        return "v1" if v >= (0, 9, 2) else "v0"
    if compute_capability is not None and compute_capability < 8.0 and v < CC_BELOW_8_V0_UNTIL:
        return "v0"
    if kv_cache_dtype.strip().lower() not in ("auto", ""):
        if v < (0, 8, 3):
            return "v0"
        if compute_capability is not None:
            major = int(compute_capability)
            if not (major == 9 or (v >= (0, 10, 0) and major == 10)):
                return "v0"
    return "v1"


def _v0_default_reason(v: VllmVersion, device: str, compute_capability: float | None, kv_cache_dtype: str) -> str:
    """Why :func:`default_engine` gave V0 on 0.8-0.10 (the branch it took), in the words of vLLM's oracle."""
    if _platform(device) in ("cpu", "rocm"):
        return f"no V1 engine on {_platform(device)} before 0.9.2 (Platform.default_v1)"
    if compute_capability is not None and compute_capability < 8.0 and v < CC_BELOW_8_V0_UNTIL:
        return f"Compute Capability < 8.0 (this GPU: {compute_capability:g})"
    if v < (0, 8, 3):
        return f"--kv-cache-dtype {kv_cache_dtype} (V1 takes no quantized KV cache before 0.8.3)"
    majors = "9.x" if v < (0, 10, 0) else "9.x and 10.x"
    return (f"--kv-cache-dtype {kv_cache_dtype} on compute capability {compute_capability:g} (the default attention "
            f"backend takes an FP8 KV cache on {majors} only: vllm/platforms/cuda.py is_kv_cache_dtype_supported)")


#: ``guided_decoding_backend`` values ``_is_v1_supported_oracle`` keeps on V1, by release (read in the PyPI wheels'
#: vllm/engine/arg_utils.py and vllm/config.py ``GuidedDecodingBackendV1``): (first release, values, compare the part
#: before ':' only); from 0.10.1 the oracle no longer checks the backend
_V1_GUIDED_BACKENDS: tuple[tuple[VllmVersion, frozenset[str], bool], ...] = (
    (VllmVersion(0, 8, 0), frozenset({"xgrammar", "xgrammar:nofallback"}), False),
    (VllmVersion(0, 8, 2), frozenset({"xgrammar", "xgrammar:disable-any-whitespace", "guidance", "auto"}), False),
    (VllmVersion(0, 8, 3), frozenset({"xgrammar", "xgrammar:disable-any-whitespace", "guidance",
                                      "guidance:disable-any-whitespace", "auto"}), False),
    (VllmVersion(0, 8, 5), frozenset({"auto", "xgrammar", "guidance"}), True),
    (VllmVersion(0, 9, 0), frozenset({"auto", "xgrammar", "guidance"}), False),
    (VllmVersion(0, 10, 0), frozenset({"auto", "xgrammar", "guidance", "outlines"}), False),
    (VllmVersion(0, 10, 1), frozenset(), False),
)


def v1_oracle_fallbacks(version: str | tuple[int, ...], args: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """The engine args among ``args`` (snake_case names) for which vLLM ``version``'s
    ``EngineArgs._is_v1_supported_oracle`` returns False, so that a launch with ``VLLM_USE_V1`` unset runs the V0
    engine ("<feature> is not supported by the V1 Engine. Falling back to V0.") and one with ``VLLM_USE_V1=1``
    fails ("VLLM_USE_V1=1 is not supported with <feature>", ``_raise_or_fallback``): ``(arg, feature)`` pairs,
    the feature as vLLM's warning names it.  Empty outside 0.8.0 ... 0.10.x (V0 only before, V1 only after).

    Only args the models otherwise accept are listed (the others are refused by model/engine_args/ at any
    release): read in the PyPI wheels' vllm/engine/arg_utils.py of 0.8.0, 0.8.1, 0.8.2, 0.8.3, 0.8.4, 0.8.5, 0.9.0,
    0.9.1, 0.9.2, 0.10.0, 0.10.1, 0.10.1.1 and 0.10.2:

    * ``load_format`` ``tensorizer`` (0.8.0 ... 0.8.5) or ``sharded_state`` (0.8.0 ... 0.10.2);
    * ``otlp_traces_endpoint`` or ``collect_detailed_traces`` set (0.8.0 ... 0.10.1.1: "--otlp-traces-endpoint");
    * ``num_scheduler_steps`` other than 1 (0.8.0 ... 0.10.0);
    * ``guided_decoding_backend`` outside the V1 backends of the release (0.8.0 ... 0.10.0,
      :data:`_V1_GUIDED_BACKENDS`; outlines and lm-format-enforcer, the V0 defaults of 0.6, fall back up to 0.9.2).

    The oracle's other V0 triggers are args the models refuse anyway (speculative decoding, cpu_offload_gb, a
    non-default scheduling_policy / preemption_mode / scheduler_delay_factor, pooling tasks, kv_transfer_config,
    ``--dtype float32`` up to 0.9.1) or not engine args (``VLLM_ATTENTION_BACKEND``, compute capability < 8.0 and
    the KV-cache dtype, the latter two in :func:`default_engine`)."""
    v = parse_version(version)
    if not (0, 8, 0) <= v < (0, 11, 0):
        return ()
    out: list[tuple[str, str]] = []
    load = args.get("load_format")
    if load is not None:
        fmt = str(load).strip().lower()
        if fmt == "sharded_state" or (fmt == "tensorizer" and v < (0, 9, 0)):
            out.append(("load_format", f"--load_format {fmt}"))
    if v < (0, 10, 2):
        for key in ("otlp_traces_endpoint", "collect_detailed_traces"):
            if args.get(key) not in (None, "", False, [], ()):
                out.append((key, "--otlp-traces-endpoint"))
    steps = args.get("num_scheduler_steps")
    if v < (0, 10, 1) and steps is not None and not isinstance(steps, bool):
        try:
            if int(str(steps)) != 1:
                out.append(("num_scheduler_steps", "--num-scheduler-steps"))
        except ValueError:
            pass
    backend = args.get("guided_decoding_backend")
    if backend is not None:
        rows = [row for row in _V1_GUIDED_BACKENDS if row[0] <= v]
        first, allowed, base_only = rows[-1]
        name = str(backend)
        if first < (0, 10, 1) and (name.split(":")[0] if base_only else name) not in allowed:
            out.append(("guided_decoding_backend", f"--guided-decoding-backend={name}"))
    return tuple(out)


def _engine_arg(engine: str | None, version: VllmVersion, device: str) -> EngineKind:
    if engine is None:
        return default_engine(version, device=device)
    e = engine.strip().lower()
    if e == "v0":
        return "v0"
    if e == "v1":
        return "v1"
    raise ValueError(f"unknown engine {engine!r}: 'v0' or 'v1'")


# --- gpu_memory_utilization ---------------------------------------------------------------------------


def default_gpu_memory_utilization(version: str | tuple[int, ...]) -> float:
    """0.9 from 0.4 up to 0.19 (v0.4.1 ... v0.10.0: vllm/engine/arg_utils.py ``EngineArgs.gpu_memory_utilization
    = 0.90``; v0.11 ... v0.19: vllm/config/cache.py), 0.92 from 0.20 (v0.20: vllm/config/cache.py
    ``CacheConfig.gpu_memory_utilization``; changed in the release that turned CUDA-graph memory profiling on)."""
    return 0.92 if parse_version(version) >= (0, 20, 0) else 0.9


# --- block size -------------------------------------------------------------------------------------------


def default_block_size(device: str = "cuda", version: str | tuple[int, ...] | None = None, *,
                       ipex_available: bool = True) -> int:
    """16 tokens on GPU at every version (v0.4.1: vllm/engine/arg_utils.py ``block_size: int = 16``; v0.6.6 on:
    vllm/platforms/cuda.py ``check_and_update_config``; v0.33: vllm/config/cache.py
    ``CacheConfig.DEFAULT_BLOCK_SIZE``).

    CPU: 16 up to 0.8.2 (v0.8.2: vllm/platforms/cpu.py ``check_and_update_config``), then 128 when
    intel-extension-for-pytorch is installed, else 16 (v0.8.3 ... v0.11.0: same function, ``128 if
    ipex_available else 16``), 128 from 0.12.0 (v0.12.0: vllm/platforms/cpu.py ``check_and_update_config``;
    v0.33: ``update_block_size_for_backend``).  ``version=None`` means the newest.  Attention backends may override it
    (ROCm AITER 64, MLA paths); not modelled here.
    """
    if _normalise_device(device) != "cpu":
        return 16
    v = NEWEST_KNOWN_VERSION if version is None else parse_version(version)
    if v < (0, 8, 3):
        return 16
    if v < (0, 12, 0):
        return 128 if ipex_available else 16
    return 128


# --- scheduler limits ------------------------------------------------------------------------------------------


def _usage(usage: str) -> Entrypoint:
    u = usage.strip().lower()
    if u in ("serve", "openai_api_server", "openai", "api_server"):
        return "serve"
    if u in ("llm", "llm_class", "offline"):
        return "llm"
    raise ValueError(f"unknown usage {usage!r}: 'serve' (vllm serve) or 'llm' (the LLM class)")


def _scheduler_tier(v: VllmVersion, device: str, device_name: str, total_memory_bytes: float | None) -> str:
    """The V1 tier of ``get_batch_defaults`` / ``_set_default_args_v1``."""
    if device == "cpu":
        return "cpu" if v >= (0, 10, 0) else "cpu-0.9"
    name = device_name.lower()
    if v < (0, 7, 0):
        # opt-in V1, v0.6.5-v0.6.6 _override_v1_engine_args: LLM_CLASS 8192 / OPENAI_API_SERVER 2048 on any GPU
        return "other-0.8"
    if v < (0, 8, 5):
        # v0.7.0 _override_v1_engine_args and
        # v0.8.0 ... v0.8.4 _set_default_args_v1: by name only, "h100" or "h200" in get_device_name()
        return "h100name" if ("h100" in name or "h200" in name) else "other-0.8"
    if total_memory_bytes is None:
        raise ValueError("total_memory_bytes is required for a GPU (the default limits are tiered by memory)")
    # v0.28: the >=160 GiB tier (B200/B300) first appears in get_batch_defaults.
    if v >= (0, 28, 0) and total_memory_bytes >= 160 * GIB:
        return "160gib"
    if v < (0, 9, 0):
        # v0.8.5: device_memory >= 70 GiB, no name exclusion yet
        return "70gib" if total_memory_bytes >= 70 * GIB else "other"
    # >=70 GiB excluding any name containing "a100" (github.com/vllm-project/vllm/pull/17885, in v0.9.0) and GB10.
    if total_memory_bytes >= 70 * GIB and "a100" not in name and "gb10" not in name:
        return "70gib"
    return "other"


#: V1 (max_num_seqs, max_num_batched_tokens) per tier and usage context.  v0.33: vllm/engine/arg_utils.py
#: ``EngineArgs.get_batch_defaults``; the same table without the 160 GiB tier in v0.10 (``_set_default_args_v1``)
#: and, without the A100 exclusion, in v0.8.5.  The 0.8.0-0.8.4 rows are by device name; CPU rows times
#: world_size from 0.10.0.
_SCHEDULER_TABLE: dict[tuple[str, str], tuple[int, int]] = {
    ("160gib", "serve"): (1024, 16384),
    ("160gib", "llm"): (1024, 16384),
    ("70gib", "serve"): (1024, 8192),
    ("70gib", "llm"): (1024, 16384),
    ("other", "serve"): (256, 2048),
    ("other", "llm"): (256, 8192),
    # v0.8.0-v0.8.4 _set_default_args_v1: tokens by name; max_num_seqs 1024 for every GPU up to 0.8.3,
    # 256 for the non-H100/H200 names in 0.8.4 (patched per version in _v1_limits)
    ("h100name", "serve"): (1024, 8192),
    ("h100name", "llm"): (1024, 16384),
    ("other-0.8", "serve"): (1024, 2048),
    ("other-0.8", "llm"): (1024, 8192),
    # v0.9.2 / v0.9.x: the first CPU rows, no world_size factor
    ("cpu-0.9", "serve"): (32, 2048),
    ("cpu-0.9", "llm"): (128, 4096),
    # v0.10.0 on: times world_size (pipeline x tensor parallel)
    ("cpu", "serve"): (128, 2048),
    ("cpu", "llm"): (256, 4096),
}

_TIER_TEXT = {
    "160gib": ">=160 GiB tier (0.28+)",
    "70gib": ">=70 GiB tier (name without 'a100' from 0.9.0, not GB10)",
    "other": "default GPU tier (<70 GiB, or an A100 from 0.9.0 -- excluded on purpose, PR #17885)",
    "h100name": "0.7.0-0.8.4 tier by name: 'h100'/'h200' in the device name",
    "other-0.8": "0.6.5-0.8.4 tier by name: neither 'h100' nor 'h200' in the device name (0.6.5-0.6.6: any GPU)",
    "cpu-0.9": "0.9.x CPU tier (no world_size factor yet)",
    "cpu": "CPU tier x world_size",
}


def _v1_limits(v: VllmVersion, tier: str, usage: str) -> tuple[int, int]:
    seqs, tokens = _SCHEDULER_TABLE[(tier, usage)]
    if tier == "other-0.8" and v >= (0, 8, 4):
        seqs = 256  # v0.8.4: default_max_num_seqs = 256 outside H100/H200
    return seqs, tokens


#: V0 defaults without a user value: v0.4.1 ... v0.10.1 vllm/engine/arg_utils.py ``EngineArgs.max_num_seqs``
#: (256; from v0.6.5 ``None`` resolved to 256 in ``__post_init__``, from v0.8.0 in ``_set_default_args_v0``).
V0_MAX_NUM_SEQS = 256
#: V0 ``max_num_batched_tokens`` floor without chunked prefill: "If max_model_len is too short, use 2048 as the
#: default value for higher throughput" (v0.4.1 ... v0.10.1: vllm/config.py ``SchedulerConfig``).
V0_MIN_BATCHED_TOKENS = 2048
#: Pooling/embedding models: at least 32768 (v0.4.3: vllm/config.py ``_EMBEDDING_MODEL_MAX_NUM_BATCHED_TOKENS``,
#: renamed ``_POOLING_MODEL_MAX_NUM_BATCHED_TOKENS`` by v0.7.3).
V0_POOLING_BATCHED_TOKENS = 32768


def _v0_chunked_budget(v: VllmVersion) -> int:
    """V0 ``max_num_batched_tokens`` with chunked prefill and no user value (vllm/config.py ``SchedulerConfig``):
    768 in 0.4.0/0.4.1 ("the well-tuned batch size"), 512 from 0.4.2 to 0.6.4 ("the best balance between ITL and
    TTFT on A100"), 2048 from 0.6.5 (``SchedulerConfig.__post_init__``)."""
    if v < (0, 4, 2):
        return 768
    if v < (0, 6, 5):
        return 512
    return 2048


def _v0_batched_tokens(v: VllmVersion, max_model_len: int, chunked: bool, generative: bool,
                       multimodal: bool) -> int:
    tokens = _v0_chunked_budget(v) if chunked else max(int(max_model_len), V0_MIN_BATCHED_TOKENS)
    if not generative and v >= (0, 4, 3):
        tokens = max(tokens, V0_POOLING_BATCHED_TOKENS)
    if multimodal and v >= (0, 6, 0):
        # v0.6.0: _MULTIMODAL_MODEL_MAX_NUM_BATCHED_TOKENS = 4096; 5120 by v0.7.3
        tokens = max(tokens, 4096 if v < (0, 7, 0) else 5120)
    return tokens


def default_scheduler_limits(version: str | tuple[int, ...], *, device: str = "cuda", device_name: str = "",
                             total_memory_bytes: float | None = None, usage: str = "serve",
                             world_size: int = 1, performance_mode: str = "balanced",
                             max_model_len: int | None = None, engine: str | None = None,
                             chunked_prefill: bool | None = None, generative: bool = True,
                             multimodal: bool = False) -> tuple[int, int]:
    """Default ``(max_num_seqs, max_num_batched_tokens)``.

    **V0** (``engine="v0"``, the default engine before 0.8.0): 256 sequences; ``max(max_model_len, 2048)``
    tokens without chunked prefill (``max_model_len`` is required then), the chunked budget (768 / 512 / 2048 by
    version, :func:`_v0_chunked_budget`) with it.  ``chunked_prefill=None`` takes
    :func:`default_enable_chunked_prefill`.  The same for ``vllm serve`` and the LLM class.

    **V1** (v0.33: vllm/engine/arg_utils.py ``get_batch_defaults``; v0.8.0-v0.10: ``_set_default_args_v1``):

    * GPU >= 160 GiB (0.28+ only): 1024 / 16384.
    * GPU >= 70 GiB whose name lacks "a100" (0.9.0+; 0.8.5 without the name test) and is not GB10: 1024 / 8192
      for ``vllm serve`` (LLM class 16384).  A100-80GB is excluded on purpose from 0.9.0.
    * every other GPU: 256 / 2048 (LLM class 8192).
    * 0.8.0-0.8.4: by name: "h100"/"h200" 1024 / 8192 (LLM 16384), others 1024 (256 in 0.8.4) / 2048 (LLM 8192);
      the same for opt-in V1 (``VLLM_USE_V1=1``) in 0.7.x, and 1024 / 2048 (LLM 8192) on any GPU in 0.6.5-0.6.6.
    * CPU: 0.9.x 32 / 2048 (LLM 128 / 4096); 0.10+ 128 x world_size / 2048 x world_size (LLM 256 / 4096).

    ``performance_mode="throughput"`` (0.17+) doubles both.  On V1 a given ``max_model_len`` caps the token
    budget at ``max_num_seqs x max_model_len`` as vLLM does when defaults are used.
    """
    v = parse_version(version)
    dev = _normalise_device(device)
    eng = _engine_arg(engine, v, device)
    u = _usage(usage)
    mode = performance_mode.strip().lower()
    if mode not in ("balanced", "interactivity", "throughput"):
        raise ValueError(f"unknown performance_mode {performance_mode!r}")
    if mode == "throughput" and v < (0, 17, 0):
        raise ValueError("--performance-mode exists from vLLM 0.17")
    if eng == "v0":
        if chunked_prefill is None:
            chunked_prefill = bool(default_enable_chunked_prefill(
                v, engine="v0", device=device, max_model_len=max_model_len, generative=generative,
                multimodal=multimodal))
        if max_model_len is None and not chunked_prefill:
            raise ValueError("V0's default max_num_batched_tokens is max(max_model_len, 2048): max_model_len is "
                             "required")
        return V0_MAX_NUM_SEQS, _v0_batched_tokens(v, max_model_len or 0, chunked_prefill, generative, multimodal)
    if world_size < 1:
        raise ValueError("world_size must be >= 1")
    tier = _scheduler_tier(v, dev, device_name, total_memory_bytes)
    seqs, tokens = _v1_limits(v, tier, u)
    if tier == "cpu":
        seqs *= world_size
        tokens *= world_size
    if mode == "throughput":
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

    V0 (0.4-0.10) captured graphs in ``Worker._warm_up_model`` after ``initialize_cache`` had sized the KV cache
    (v0.6.3: vllm/worker/worker.py), so they had to fit in the 1 - utilisation headroom; so did V1 up to 0.17;
    0.18-0.19 had it opt-in (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0`` by default); the default is on "as of
    v0.21.0" (the flag's comment and vLLM's own log line).  The 0.20.0 sdist already defaults the variable to
    "1"; we follow the documented 0.21 boundary.
    """
    return parse_version(version) >= (0, 21, 0)


# --- chunked prefill / prefix caching ---------------------------------------------------------------


def default_enable_prefix_caching(version: str | tuple[int, ...], *, generative: bool = True,
                                  riscv: bool = False, engine: str | None = None,
                                  device: str = "cuda") -> bool:
    """V0: off (v0.4.1 ... v0.6.4: vllm/engine/arg_utils.py ``enable_prefix_caching: bool = False``; v0.6.5 ...
    v0.7.3: ``bool(envs.VLLM_USE_V1)``, false by default).  V1: on for generative models ("V1 enables prefix
    caching by default", v0.8.0: vllm/engine/arg_utils.py ``_set_default_args_v1``; vllm/config/cache.py
    ``CacheConfig.enable_prefix_caching = True`` since 0.12); off for pooling models and on RISC-V CPUs."""
    v = parse_version(version)
    if _engine_arg(engine, v, device) == "v0":
        return False
    return bool(generative and not riscv)


#: V0's long-context threshold: ``use_long_context = max_model_len > 32768`` (v0.5.3 ... v0.10.1:
#: vllm/engine/arg_utils.py ``EngineArgs.create_engine_config`` / ``_set_default_args_v0``).
V0_LONG_CONTEXT_TOKENS = 32768


def default_enable_chunked_prefill(version: str | tuple[int, ...], *, generative: bool = True,
                                   encoder_decoder: bool = False, riscv: bool = False, engine: str | None = None,
                                   device: str = "cuda", max_model_len: int | None = None,
                                   sliding_window: bool = False, multimodal: bool = False,
                                   mla: bool = False) -> bool:
    """Whether prefills are chunked by default.

    **V1**: always for generative decoder models; off for encoder-decoder models (0.33:
    ``is_chunked_prefill_supported``, vllm/config/model.py) and on RISC-V CPUs (v0.10: vllm/engine/arg_utils.py
    ``_set_default_args_v1``).

    **V0**: off up to 0.5.2 (``enable_chunked_prefill: bool = False``).  From 0.5.3 (v0.5.3:
    vllm/engine/arg_utils.py ``create_engine_config``; from v0.8.0 ``_set_default_args_v0``) on "to avoid OOM
    errors in the initial memory profiling phase" when ``max_model_len > 32768`` on a GPU, unless the model has
    sliding-window attention (or speculative decoding, LoRA, prompt adapters are on -- not modelled); multimodal
    models excluded from 0.6.3, ROCm and pooling models from 0.7.0, MLA models from 0.8.0.  Without
    ``max_model_len`` the V0 answer is off.
    """
    v = parse_version(version)
    if _engine_arg(engine, v, device) == "v1":
        return bool(generative and not encoder_decoder and not riscv)
    if v < (0, 5, 3) or max_model_len is None or int(max_model_len) <= V0_LONG_CONTEXT_TOKENS:
        return False
    plat = _platform(device)
    if plat == "cpu" or sliding_window:
        return False
    if multimodal and v >= (0, 6, 3):
        return False
    if v >= (0, 7, 0) and (plat == "rocm" or not generative):
        return False
    if mla and v >= (0, 8, 0):
        return False
    return True


# --- swap space and memory profiling ---------------------------------------------------------------------


def default_swap_space_bytes(version: str | tuple[int, ...], *, engine: str | None = None,
                             device: str = "cuda") -> float:
    """CPU swap space per GPU: V0 allocates ``swap_space`` = 4 GiB of CPU blocks per GPU (v0.4.1:
    vllm/engine/arg_utils.py ``swap_space: int = 4  # GiB``, vllm/config.py ``CacheConfig.swap_space_bytes =
    swap_space * _GB`` with ``_GB = 1 << 30``; v0.4.1: vllm/worker/worker.py ``determine_num_available_blocks``
    ``num_cpu_blocks = swap_space_bytes // cache_block_size``).  V1 keeps the argument (v0.11.0:
    vllm/config/cache.py ``swap_space: float = 4``) but allocates no CPU blocks (it preempts by recompute;
    nothing under vllm/v1 reads ``swap_space`` in v0.10.0): 0."""
    v = parse_version(version)
    return 4.0 * GIB if _engine_arg(engine, v, device) == "v0" else 0.0


#: How the KV budget is derived after the profile run, per method (all: ``budget = total x
#: gpu_memory_utilization``; the KV cache gets ``budget - <what is subtracted>``).
MEMORY_PROFILING_METHODS: Mapping[str, str] = MappingProxyType({
    "v0_free_memory_delta": (
        "V0 0.4-0.6.3: peak = free memory at worker init - free memory after profile_run (weights, activation "
        "peak, non-torch and any other process's change alike); num_gpu_blocks = (total x util - peak) // "
        "block bytes (v0.4.1 / v0.6.3: vllm/worker/worker.py Worker.determine_num_available_blocks)"),
    "v0_torch_peak_plus_non_torch": (
        "V0 0.6.4: peak = torch allocated_bytes.all.peak during profile_run + non-torch allocations; "
        "available = total x util - peak (v0.6.4: vllm/worker/worker.py determine_num_available_blocks, logged "
        "as 'Memory profiling results: ... kv_cache_size=...GiB')"),
    "v0_memory_profiling": (
        "V0 0.6.5-0.10: available = total x util - non_kv_cache_memory (weights + non-torch increase + torch "
        "activation peak) from vllm.utils.memory_profiling (v0.6.5: vllm/worker/worker.py "
        "determine_num_available_blocks, logged as '... the rest of the memory reserved for KV Cache is ...')"),
    "v1_determine_available_memory": (
        "V1 0.8+: available = total x util - non-KV memory of the profile run (weights, activation peak, "
        "non-torch; CUDA-graph estimate from 0.21) (v0.33: vllm/v1/worker/gpu_worker.py "
        "Worker.determine_available_memory)"),
})


def memory_profiling_method(version: str | tuple[int, ...], *, engine: str | None = None,
                            device: str = "cuda") -> str:
    """A key of :data:`MEMORY_PROFILING_METHODS`: how this version sizes the KV cache after the profile run."""
    v = parse_version(version)
    if _engine_arg(engine, v, device) == "v1":
        return "v1_determine_available_memory"
    if v < (0, 6, 4):
        return "v0_free_memory_delta"
    if v < (0, 6, 5):
        return "v0_torch_peak_plus_non_torch"
    return "v0_memory_profiling"


# --- bundle -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VllmDefaults:
    """The defaults one ``vllm serve`` (or LLM-class) launch gets on one device, with a source per field.

    ``version`` is the release whose defaults these are (the nearest known one when ``requested_version`` was
    outside the releases read); ``sources[field]`` (or :meth:`source`) says where each value comes from.
    """

    version: VllmVersion
    device: str
    gpu_memory_utilization: float
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    cuda_graph_memory_budgeted: bool
    enable_prefix_caching: bool
    enable_chunked_prefill: bool
    engine: EngineKind = "v1"
    usage: Entrypoint = "serve"
    swap_space_bytes: float = 0.0
    memory_profiling: str = "v1_determine_available_memory"
    requested_version: VllmVersion | None = None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def source(self, name: str) -> str:
        """Where the value of field ``name`` comes from."""
        try:
            return self.sources[name]
        except KeyError:
            raise KeyError(f"no field {name!r} with a source; have {sorted(self.sources)}") from None


def defaults_for(version: str | tuple[int, ...], *, device: str = "cuda", device_name: str = "",
                 total_memory_bytes: float | None = None, usage: str = "serve", world_size: int = 1,
                 performance_mode: str = "balanced", max_model_len: int | None = None,
                 engine: str | None = None, compute_capability: float | None = None,
                 kv_cache_dtype: str = "auto", generative: bool = True, sliding_window: bool = False,
                 multimodal: bool = False, mla: bool = False, enable_chunked_prefill: bool | None = None,
                 ipex_available: bool = True, v0_fallback: tuple[str, ...] = (),
                 stacklevel: int = 2) -> VllmDefaults:
    """Resolve every default for a (version, device, entrypoint) triple.

    ``device_name`` is what the driver reports (``"NVIDIA A100-SXM4-80GB"``); ``total_memory_bytes`` the
    device's total memory (required on GPU for V1 from 0.8.5: the scheduler defaults are tiered by it);
    ``usage`` ``"serve"`` (``vllm serve``) or ``"llm"`` (the offline ``LLM`` class); ``max_model_len`` the
    context the engine will run with (V0's token budget and chunked-prefill default depend on it);
    ``engine`` forces ``"v0"``/``"v1"`` (``VLLM_USE_V1``), else :func:`default_engine` decides;
    ``enable_chunked_prefill`` a user's explicit choice (it changes V0's default token budget); ``v0_fallback`` the
    features (as vLLM's warning names them, :func:`v1_oracle_fallbacks`) for which ``_is_v1_supported_oracle``
    sends this launch to V0 on 0.8-0.10: with ``engine`` None the engine is then V0, and its source names them.

    A version outside 0.4.0 ... 0.33.0 warns (:class:`UnknownEngineVersionWarning`, attributed ``stacklevel``
    frames up) and uses the nearest.
    """
    requested = parse_version(version)
    v = resolve_version(requested, stacklevel=stacklevel)
    dev = _normalise_device(device)
    fallback = tuple(v0_fallback) if (0, 8, 0) <= v < (0, 11, 0) else ()
    if engine is None and fallback:
        eng: EngineKind = "v0"
    elif engine is None:
        eng = default_engine(v, device=device, compute_capability=compute_capability, kv_cache_dtype=kv_cache_dtype)
    else:
        eng = _engine_arg(engine, v, device)
        if eng == "v1" and v < V1_OPT_IN_VERSION:
            raise ValueError(f"vLLM {v} has no V1 engine to model (VLLM_USE_V1=1 is modelled from "
                             f"{V1_OPT_IN_VERSION})")
        if eng == "v0" and v >= (0, 11, 0):
            raise ValueError(f"vLLM {v} has no V0 engine (removed in 0.11.0)")
    u = _usage(usage)
    note = ""
    if v != requested:
        note = f" [vLLM {requested} is not a known release: the defaults of {v}, the nearest known, are used]"
    if v < (0, 4, 1):
        note += " [0.4.0: read from the 0.4.1 sdist, the oldest 0.4 release on PyPI]"
    chunked_default = default_enable_chunked_prefill(
        v, engine=eng, device=device, max_model_len=max_model_len, generative=generative,
        sliding_window=sliding_window, multimodal=multimodal, mla=mla)
    chunked = chunked_default if enable_chunked_prefill is None else bool(enable_chunked_prefill)
    if eng == "v0" and max_model_len is None and not chunked:
        raise ValueError(f"vLLM {v} runs the V0 engine here, whose default max_num_batched_tokens is "
                         "max(max_model_len, 2048): give max_model_len")
    seqs, tokens = default_scheduler_limits(
        v, device=dev, device_name=device_name, total_memory_bytes=total_memory_bytes, usage=u,
        world_size=world_size, performance_mode=performance_mode, engine=eng, chunked_prefill=chunked,
        max_model_len=max_model_len if eng == "v0" else None, generative=generative, multimodal=multimodal)
    mml_tokens = int(max_model_len) if max_model_len is not None else None
    v1_unchunked_floor = eng == "v1" and not chunked and mml_tokens is not None and tokens < mml_tokens
    if v1_unchunked_floor and mml_tokens is not None:
        # V1 with chunked prefill off and no budget given: "If max_model_len is too short, use the default for higher
        # throughput": max(max_model_len, the tier's budget), capped at max_num_seqs x max_model_len (v0.30.0 /
        # v0.32.0 vllm/engine/arg_utils.py; a prompt of max_model_len must fit one step: SchedulerConfig refuses less)
        tokens = min(mml_tokens, seqs * mml_tokens)
    util = default_gpu_memory_utilization(v)
    engine_text = {
        "v0": ("V0 engine" + (" (the only engine before 0.8.0)" if v < (0, 8, 0) else
                              " (0.8-0.10 fallback: EngineArgs._is_v1_supported_oracle refused V1)")),
        "v1": "V1 engine" + (" (0.11+: the only engine)" if v >= (0, 11, 0) else
                             " (0.8-0.10: the default for setups _is_v1_supported_oracle accepts)" if v >= (0, 8, 0)
                             else " (opt-in: VLLM_USE_V1=1)"),
    }[eng]
    if eng == "v0" and fallback and engine is None:
        engine_text += (f": {', '.join(dict.fromkeys(fallback))} (vLLM's 'is not supported by the V1 Engine. "
                        "Falling back to V0')")
    elif eng == "v0" and engine is None and (0, 8, 0) <= v:
        engine_text += ": " + _v0_default_reason(v, device, compute_capability, kv_cache_dtype)
    if eng == "v0":
        if chunked:
            tok_src = (f"vLLM v{v}: vllm/config.py SchedulerConfig, V0 with chunked prefill: "
                       f"{_v0_chunked_budget(v)} (768 in 0.4.0-0.4.1, 512 in 0.4.2-0.6.4, 2048 from 0.6.5)")
        else:
            tok_src = (f"vLLM v{v}: vllm/config.py SchedulerConfig, V0 without chunked prefill: "
                       f"max(max_model_len={max_model_len}, 2048)")
        seqs_src = ("vLLM v0.4.1-v0.10.1: vllm/engine/arg_utils.py EngineArgs.max_num_seqs = 256 "
                    "(V0; _set_default_args_v0 from 0.8.0), the same for vllm serve and the LLM class")
        chunk_src = ("vLLM v0.5.3-v0.10.1: vllm/engine/arg_utils.py create_engine_config/_set_default_args_v0: V0 "
                     "chunks by default only when max_model_len > 32768 on a GPU without sliding window "
                     f"(max_model_len={max_model_len})")
        if enable_chunked_prefill is not None:
            chunk_src = f"engine.args.enable_chunked_prefill={bool(enable_chunked_prefill)} (given)"
        prefix_src = ("vLLM v0.4.1: vllm/engine/arg_utils.py EngineArgs.enable_prefix_caching = False "
                      "(V0: off by default)")
    else:
        tier = _scheduler_tier(v, dev, device_name, total_memory_bytes)
        tier_text = _TIER_TEXT[tier] + (f", world_size={world_size}" if tier == "cpu" else "")
        where = ("v0.33: vllm/engine/arg_utils.py get_batch_defaults" if v >= (0, 11, 0) else
                 f"v{v}: vllm/engine/arg_utils.py _set_default_args_v1" if v >= (0, 8, 0) else
                 f"v{v}: vllm/engine/arg_utils.py _override_v1_engine_args and __post_init__ (VLLM_USE_V1=1)")
        tok_src = seqs_src = (f"vLLM {where}, {tier_text}, usage={u}"
                              + (f", performance_mode={performance_mode}" if performance_mode != "balanced"
                                 else ""))
        if v1_unchunked_floor:
            tok_src += (f"; chunked prefill off: raised to max_model_len={max_model_len} (vLLM v0.32: "
                        "vllm/engine/arg_utils.py 'If max_model_len is too short, use the default for higher "
                        "throughput')")
        chunk_src = ("vLLM v0.10: vllm/engine/arg_utils.py _set_default_args_v1, V1 always chunks prefills for "
                     "generative decoder models")
        prefix_src = ("vLLM v0.8: vllm/engine/arg_utils.py _set_default_args_v1 'V1 enables prefix caching by "
                      "default' (vllm/config/cache.py CacheConfig.enable_prefix_caching = True since 0.12)")
    sources = {
        "engine": f"vLLM v{v}: vllm/engine/arg_utils.py EngineArgs._is_v1_supported_oracle: {engine_text}"
                  if v >= (0, 8, 0) else f"vLLM v{v}: V0 engine (vllm/engine/llm_engine.py; V1 is opt-in from 0.7)",
        "usage": (f"vLLM vllm/usage/usage_lib.py UsageContext.{'OPENAI_API_SERVER' if u == 'serve' else 'LLM_CLASS'}"
                  + (" (V0: the same defaults for both)" if eng == "v0" else "")),
        # the release whose source this version's value was read from first: 0.92 from 0.20, 0.90 up to 0.19
        "gpu_memory_utilization": (
            (f"vLLM v0.20: vllm/config/cache.py default {util} (0.20+; 0.90 up to 0.19)" if util == 0.92 else
             f"vLLM v0.4.1: vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization = {util:.2f} (up to 0.19; "
             "0.92 from 0.20, vllm/config/cache.py)")
            + ("; on CPU (0.20+) it scales the NUMA node's memory" if dev == "cpu" else "")),
        "block_size": ("vLLM v0.33: vllm/platforms/cpu.py update_block_size_for_backend (CPU 128; 16 before 0.8.3, "
                       "128 only with IPEX in 0.8.3-0.11)" if dev == "cpu" else
                       "vLLM v0.33: vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 16 (v0.4.1: "
                       "vllm/engine/arg_utils.py block_size = 16; backends may override)"),
        "max_num_seqs": seqs_src,
        "max_num_batched_tokens": tok_src,
        "cuda_graph_memory_budgeted": ("vLLM v0.21: vllm/envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default "
                                       "on as of v0.21.0 (opt-in 0.18-0.19, absent before; V0 captured graphs "
                                       "after sizing the KV cache, v0.6.3: vllm/worker/worker.py _warm_up_model)")
                                      if dev == "cuda" else "CPU backend: no CUDA graphs to budget",
        "enable_prefix_caching": prefix_src,
        "enable_chunked_prefill": chunk_src,
        "swap_space_bytes": ("vLLM v0.4.1: vllm/engine/arg_utils.py swap_space = 4 (GiB) and vllm/worker/worker.py "
                             "determine_num_available_blocks: V0 allocates 4 GiB of CPU swap blocks per GPU"
                             if eng == "v0" else
                             "vLLM v0.11.0: vllm/config/cache.py swap_space = 4 GiB, unused by V1 (no CPU blocks)"),
        "memory_profiling": MEMORY_PROFILING_METHODS[memory_profiling_method(v, engine=eng)],
    }
    sources = {k: s + note for k, s in sources.items()}
    return VllmDefaults(
        version=v,
        device=dev,
        gpu_memory_utilization=util,
        block_size=default_block_size(dev, v, ipex_available=ipex_available),
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        cuda_graph_memory_budgeted=cuda_graph_memory_budgeted(v) if dev == "cuda" else False,
        enable_prefix_caching=default_enable_prefix_caching(v, generative=generative, engine=eng),
        enable_chunked_prefill=chunked,
        engine=eng,
        usage=u,
        swap_space_bytes=default_swap_space_bytes(v, engine=eng),
        memory_profiling=memory_profiling_method(v, engine=eng),
        requested_version=requested,
        sources=MappingProxyType(sources),
    )
