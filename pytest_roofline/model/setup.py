"""The resolved setup a prediction is computed against: chip, model, engine defaults and workload.

A :class:`Setup` is built from a prediction file's ``hardware``/``model``/``engine``/``workload`` sections (after
any per-prediction ``setup:`` override). Every number the analytical model needs is derived here once, with
units in its name, and :meth:`Setup.describe` lists those inputs for failure messages and the scorecard.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_roofline.errors import SetupError, SetupValueError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import architecture, dtypes, hardware, vllm_defaults
from pytest_roofline.model.tiny import TINY_MODEL, tiny_arch
from pytest_roofline.units import format_value

__all__ = ["Setup", "SetupError", "SetupValueError", "build_setup", "TINY_MODEL"]


@dataclass(frozen=True)
class Setup:
    """Everything the model side knows about one configuration (SI units)."""

    hardware: Any  # hardware.HardwareSpec
    model: Any  # architecture.ModelArch
    engine_name: str = "vllm"
    engine_version: str | None = None
    device: str = "cuda"
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    input_len: int = 1024
    output_len: int = 1024
    kv_context_tokens: float = 1536.0
    gpu_memory_utilization: float = 0.9
    block_size: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    enforce_eager: bool = False
    kv_cache_memory_bytes: float | None = None
    activation_bytes: float | None = None
    non_torch_bytes: float | None = None
    cuda_graph_bytes: float | None = None
    engine_args: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    # --- derived numbers -------------------------------------------------------------------------------
    @property
    def weight_bytes(self) -> float:
        return float(self.model.weight_bytes(self.weight_dtype))

    @property
    def flop_per_token(self) -> float:
        """Linear FLOPs per generated token: 2 × active parameters (attention score FLOPs ignored)."""
        return 2.0 * float(self.model.active_param_count())

    @property
    def kv_bytes_per_token(self) -> float:
        return float(self.model.kv_bytes_per_token(self.kv_dtype))

    @property
    def kv_bytes_per_seq(self) -> float:
        return self.kv_context_tokens * self.kv_bytes_per_token

    def kv_bytes_per_seq_at(self, context_tokens: float | None) -> float:
        return (self.kv_context_tokens if context_tokens is None else context_tokens) * self.kv_bytes_per_token

    @property
    def bytes_per_block(self) -> float:
        return float(self.model.kv_bytes_per_block(self.block_size, self.kv_dtype, self.tensor_parallel_size))

    @property
    def hbm_bytes_per_s(self) -> float:
        bw = self.hardware.hbm_bytes_per_s
        if not bw:
            raise SetupError(f"hardware {self.hardware.id!r} has no memory-bandwidth figure; "
                             "set it in the YAML: hardware: {id: ..., hbm_bytes_per_s: 1.0e12}")
        return float(bw)

    @property
    def compute_dtype(self) -> str:
        return dtypes.compute_dtype(self.weight_dtype)

    @property
    def peak_flop_per_s(self) -> float:
        try:
            return float(self.hardware.peak_for(self.compute_dtype))
        except (KeyError, ValueError) as exc:
            raise SetupError(str(exc)) from None

    @property
    def total_memory_bytes(self) -> float:
        mem = self.hardware.memory_bytes
        if not mem:
            raise SetupError(f"hardware {self.hardware.id!r} has no memory size; set hardware.memory_bytes")
        return float(mem)

    def with_changes(self, **changes: Any) -> Setup:
        return replace(self, **changes)

    def describe(self) -> dict[str, str]:
        """The inputs behind a model value, as text a person checks against the datasheet."""
        out: dict[str, str] = {"hardware": f"{self.hardware.id} ({self.hardware.name})"}
        try:
            out["hbm_bandwidth"] = format_value(self.hbm_bytes_per_s, "bandwidth", "GB/s", digits=5)
        except SetupError:
            pass
        try:
            out[f"peak_{self.compute_dtype}"] = format_value(self.peak_flop_per_s, "flop_rate", "TFLOP/s", digits=4)
        except SetupError:
            pass
        if self.hardware.memory_bytes:
            mem = float(self.hardware.memory_bytes)
            gib, gb = format_value(mem, "bytes", "GiB", digits=5), format_value(mem, "bytes", "GB", digits=5)
            out["memory"] = f"{gib} = {gb}"
        out["model"] = self.model.name
        out["params"] = f"{float(self.model.param_count()):,.0f}"
        out["weights"] = f"{format_value(self.weight_bytes, 'bytes', 'GB', digits=5)} ({self.weight_dtype})"
        out["kv_bytes_per_token"] = f"{self.kv_bytes_per_token:,.0f} B ({self.kv_dtype})"
        out["kv_context"] = f"{self.kv_context_tokens:,.0f} tokens"
        out["engine"] = f"{self.engine_name} {self.engine_version or '(version not given)'}"
        return out


def _dtype(name: str | None, what: str) -> str:
    """The canonical weight dtype (``auto`` is the presets' bf16); the dtype table is model/dtypes.py."""
    d = dtypes.weight_dtype(name or "bf16")
    if d is None:
        raise SetupError(f"unknown {what} {name!r}; use one of {', '.join(sorted(dtypes.names('weight')))}")
    return d


def build_setup(
    *,
    hardware_ref: str,
    hardware_overrides: Mapping[str, Any] | None = None,
    model_ref: Any,
    model_overrides: Mapping[str, Any] | None = None,
    engine: Mapping[str, Any] | None = None,
    workload: Mapping[str, Any] | None = None,
) -> Setup:
    """Resolve names into a :class:`Setup`; raises :class:`SetupError` (or the catalog's own errors)."""
    engine = dict(engine or {})
    workload = dict(workload or {})
    hw = hardware.get_hardware(hardware_ref)
    if hardware_overrides:
        hw = hardware.with_overrides(hw, hardware_overrides)

    model_overrides = dict(model_overrides or {})
    weight_dtype = _dtype(model_overrides.pop("dtype", None) or engine.get("args", {}).get("dtype"), "weight dtype")
    kv_dtype_raw = model_overrides.pop("kv_cache_dtype", None) or engine.get("args", {}).get("kv_cache_dtype")
    if isinstance(model_ref, Mapping):
        m = dict(model_ref)
        if "params" in m:
            arch = architecture.nominal(
                float(m.pop("params")), num_layers=int(m.pop("num_layers")), num_kv_heads=int(m.pop("num_kv_heads")),
                head_dim=int(m.pop("head_dim")), name=str(m.pop("name", "nominal")),
            )
        else:
            arch = architecture.get_model(str(m.pop("name")))
        model_overrides = {**m, **model_overrides}
    elif str(model_ref) == TINY_MODEL:
        arch = tiny_arch()
    else:
        arch = architecture.get_model(str(model_ref))
    if model_overrides:
        arch = architecture.with_overrides(arch, model_overrides)
    kv_dtype = weight_dtype if kv_dtype_raw in (None, "auto") else _dtype(kv_dtype_raw, "kv_cache_dtype")

    device = "cpu" if hw.family == "cpu" else "cuda"
    version = engine.get("version")
    args = dict(engine.get("args", {}))
    _check_values(engine, args, workload)
    # without a version, the newest release's defaults (the releases read run up to 0.33; model/vllm_defaults.py)
    try:
        defaults = vllm_defaults.defaults_for(str(version) if version else "0.33.0", device=device,
                                              device_name=hw.name, total_memory_bytes=hw.memory_bytes)
    except (ValueError, TypeError) as exc:
        if version is None:
            raise
        raise SetupValueError(f"engine.version: {exc}; write a release such as '0.26.0' (quoted)",
                              field="engine.version") from None
    reserves = dict(engine.get("reserves", {}))
    input_len = int(workload.get("input_len", 1024))
    output_len = int(workload.get("output_len", 1024))
    kv_context = workload.get("kv_context")
    kv_context_tokens = float(kv_context) if kv_context is not None else input_len + output_len / 2.0
    kv_mem = args.get("kv_cache_memory_bytes")
    if kv_mem is None and engine.get("cpu_kvcache_space") is not None:
        kv_mem = engine["cpu_kvcache_space"]
    return Setup(
        hardware=hw,
        model=arch,
        engine_name=str(engine.get("name", "vllm")),
        engine_version=str(version) if version is not None else None,
        device=device,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        input_len=input_len,
        output_len=output_len,
        kv_context_tokens=kv_context_tokens,
        gpu_memory_utilization=float(args.get("gpu_memory_utilization", defaults.gpu_memory_utilization)),
        block_size=int(args.get("block_size", defaults.block_size)),
        max_num_seqs=int(args.get("max_num_seqs", defaults.max_num_seqs)),
        max_num_batched_tokens=int(args.get("max_num_batched_tokens", defaults.max_num_batched_tokens)),
        max_model_len=int(args["max_model_len"]) if args.get("max_model_len") is not None else None,
        tensor_parallel_size=int(args.get("tensor_parallel_size", 1)),
        enforce_eager=bool(args.get("enforce_eager", False)),
        kv_cache_memory_bytes=float(kv_mem) if kv_mem is not None else None,
        activation_bytes=_opt(reserves.get("activation")),
        non_torch_bytes=_opt(reserves.get("non_torch")),
        cuda_graph_bytes=_opt(reserves.get("cuda_graphs")),
        engine_args=args,
        sources=dict(defaults.sources),
    )


def _opt(x: Any) -> float | None:
    return None if x is None else float(x)


# --------------------------------------------------------------------------- impossible values
# name -> (whole number?, lowest allowed, lowest is allowed itself?, highest allowed or None, what it is)
_WORKLOAD_LIMITS: dict[str, tuple[bool, float, bool, float | None, str]] = {
    "input_len": (True, 1, True, None, "prompt tokens per request"),
    "output_len": (True, 1, True, None, "output tokens per request"),
    "kv_context": (False, 0, False, None, "KV tokens per sequence"),
    "shared_prefix_len": (True, 0, True, None, "shared prefix tokens"),
    "seed": (True, 0, True, None, "a seed"),
}
_ARG_LIMITS: dict[str, tuple[bool, float, bool, float | None, str]] = {
    # vLLM refuses gpu_memory_utilization outside (0, 1]: CacheConfig declares it Field(gt=0, le=1)
    # (vllm/config/cache.py, vLLM v0.32.0, github.com/vllm-project/vllm)
    "gpu_memory_utilization": (False, 0, False, 1.0, "a share of the device memory, 0 < x <= 1"),
    "block_size": (True, 1, True, None, "tokens per KV block"),
    "max_num_seqs": (True, 1, True, None, "sequences per step"),
    "max_num_batched_tokens": (True, 1, True, None, "tokens per step"),
    "max_model_len": (True, 1, True, None, "tokens per sequence"),
    "tensor_parallel_size": (True, 1, True, None, "devices"),
    "kv_cache_memory_bytes": (False, 0, False, None, "bytes"),
}


def _check_value(value: Any, field: str, limits: tuple[bool, float, bool, float | None, str]) -> None:
    whole, low, low_ok, high, what = limits
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SetupValueError(f"{field}: expected a number ({what}), got {value!r}", field=field)
    if not math.isfinite(value):
        raise SetupValueError(f"{field}: {value!r} is not a finite number ({what})", field=field)
    if whole and not float(value).is_integer():
        raise SetupValueError(f"{field}: expected a whole number ({what}), got {value!r}", field=field)
    if value < low or (value == low and not low_ok) or (high is not None and value > high):
        bound = (f"{'>=' if low_ok else '>'} {low:g}" + (f" and <= {high:g}" if high is not None else ""))
        raise SetupValueError(f"{field}: {value!r} is impossible: it must be {bound} ({what})", field=field)


def _check_values(engine: Mapping[str, Any], args: Mapping[str, Any], workload: Mapping[str, Any]) -> None:
    """Refuse values no engine can run, before they become a negative KV size or a silent skip."""
    for key, limits in _WORKLOAD_LIMITS.items():
        _check_value(workload.get(key), f"workload.{key}", limits)
    shared, prompt = workload.get("shared_prefix_len"), workload.get("input_len", 1024)
    if isinstance(shared, (int, float)) and isinstance(prompt, (int, float)) and shared > prompt:
        raise SetupValueError(f"workload.shared_prefix_len: {shared} is longer than the prompt (input_len "
                              f"{prompt})", field="workload.shared_prefix_len")
    for key, limits in _ARG_LIMITS.items():
        _check_value(args.get(key), f"engine.args.{key}", limits)
    _check_value(engine.get("cpu_kvcache_space"), "engine.cpu_kvcache_space", (False, 0, False, None, "bytes"))
    for key, value in dict(engine.get("reserves") or {}).items():
        _check_value(value, f"engine.reserves.{key}", (False, 0, True, None, "bytes"))


def kv_accounting(setup: Setup) -> an.KVAccounting:
    """vLLM's KV pool for ``setup``, the one place the serving model and the quantities take it from:
    ``analytical.vllm_kv_accounting`` with the weights one tensor-parallel rank holds, the profile run's
    activation estimate and the non-torch / CUDA-graph reserves of the engine version (each overridable)."""
    tp = max(1, int(setup.tensor_parallel_size))
    act = setup.activation_bytes
    if act is None:
        act = an.estimate_activation_bytes(
            hidden_size=setup.model.hidden_size, intermediate_size=setup.model.intermediate_size or 1,
            vocab_size=setup.model.vocab_size, max_num_batched_tokens=setup.max_num_batched_tokens,
            max_num_seqs=setup.max_num_seqs)
    non_torch = setup.non_torch_bytes
    if non_torch is None:
        non_torch = an.DEFAULT_NON_TORCH_BYTES if setup.device == "cuda" else 0.0
    graphs = setup.cuda_graph_bytes
    if graphs is None:
        budgeted = (setup.device == "cuda" and not setup.enforce_eager and setup.engine_version is not None
                    and vllm_defaults.cuda_graph_memory_budgeted(setup.engine_version))
        graphs = an.DEFAULT_CUDA_GRAPH_BYTES if budgeted else 0.0
    mem = setup.hardware.memory_bytes
    total = setup.total_memory_bytes if setup.kv_cache_memory_bytes is None else (float(mem) if mem else None)
    try:
        return an.vllm_kv_accounting(
            total_memory_bytes=total, gpu_memory_utilization=setup.gpu_memory_utilization,
            weight_bytes=setup.weight_bytes / tp, activation_bytes=float(act), non_torch_bytes=float(non_torch),
            cuda_graph_bytes=float(graphs), bytes_per_block=int(setup.bytes_per_block), block_size=setup.block_size,
            kv_cache_memory_bytes=setup.kv_cache_memory_bytes)
    except ValueError as exc:
        raise SetupError(f"KV accounting: {exc}") from None
