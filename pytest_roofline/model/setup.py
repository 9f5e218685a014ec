"""The resolved setup a prediction is computed against: chip, model, engine defaults and workload.

A :class:`Setup` is built from a prediction file's ``hardware``/``model``/``engine``/``workload`` sections (after
any per-prediction ``setup:`` override). Every number the analytical model needs is derived here once, with
units in its name, and :meth:`Setup.describe` lists those inputs for failure messages and the scorecard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_roofline.errors import SetupError
from pytest_roofline.model import architecture, dtypes, hardware, vllm_defaults
from pytest_roofline.model.tiny import TINY_MODEL, tiny_arch
from pytest_roofline.units import format_value

__all__ = ["Setup", "SetupError", "build_setup", "TINY_MODEL"]


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
    # without a version, the newest release's defaults (the releases read run up to 0.33; model/vllm_defaults.py)
    defaults = vllm_defaults.defaults_for(str(version) if version else "0.33.0", device=device,
                                          device_name=hw.name, total_memory_bytes=hw.memory_bytes)
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
