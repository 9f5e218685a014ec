"""The engine the simulator stands for: its scheduler limits, block size, KV pool, chunked prefill (the V1
scheduler) or not (the 0.5-era V0 one), prefix caching and TP degree (``EngineConfig``), resolved from a Setup as
vLLM resolves them (``EngineConfig.from_setup``; the KV pool from ``kv_accounting``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_roofline.errors import SetupError, SetupValueError, SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import vllm_defaults
from pytest_roofline.model.setup import Setup
from pytest_roofline.model.setup import kv_accounting as setup_kv_accounting

__all__ = ["EngineConfig", "kv_accounting", "MODELLED_ARGS", "NO_TIMING_EFFECT_ARGS", "check_engine_args"]

#: engine.args the serving model simulates (each one's effect is in the EngineConfig or the Setup it reads)
MODELLED_ARGS: frozenset[str] = frozenset({
    "max_num_seqs", "max_num_batched_tokens", "block_size", "num_gpu_blocks_override", "enable_chunked_prefill",
    "enable_prefix_caching", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
    "gpu_memory_utilization", "kv_cache_dtype", "dtype", "quantization", "kv_cache_memory_bytes",
    "scheduler_reserve_full_isl",
})
#: engine.args that change no step's time (server plumbing, logging, where the weights come from)
NO_TIMING_EFFECT_ARGS: frozenset[str] = frozenset({
    "host", "port", "api_key", "served_model_name", "model", "tokenizer", "tokenizer_mode", "revision",
    "tokenizer_revision", "code_revision", "download_dir", "load_format", "trust_remote_code", "seed",
    "disable_log_requests", "enable_log_requests", "disable_log_stats", "max_log_len", "uvicorn_log_level",
    "disable_uvicorn_access_log", "chat_template", "response_role", "generation_config", "swap_space",
    "max_seq_len_to_capture", "distributed_executor_backend", "disable_custom_all_reduce", "allowed_origins",
    "root_path", "ssl_keyfile", "ssl_certfile", "disable_frontend_multiprocessing", "hf_token",
})
#: engine.args the serving model does not simulate at a value that changes timing: (is this value honoured?, why)
_REFUSED_ARGS: dict[str, tuple[Any, str]] = {
    "num_scheduler_steps": (lambda v: int(v) <= 1,
                            "vLLM 0.6's multi-step scheduling runs N decode steps per schedule() and streams tokens "
                            "N at a time (vllm/worker/multi_step_model_runner.py): the serving model schedules every "
                            "step, so its TTFT, ITL and throughput would be those of single-step scheduling"),
    "speculative_config": (lambda v: not v, "speculative decoding (draft tokens, acceptance) is not modelled"),
    "speculative_model": (lambda v: not v, "speculative decoding (draft tokens, acceptance) is not modelled"),
    "num_speculative_tokens": (lambda v: not v, "speculative decoding (draft tokens, acceptance) is not modelled"),
    "num_lookahead_slots": (lambda v: not v, "lookahead slots (speculative decoding) are not modelled"),
    "enable_lora": (lambda v: not v, "LoRA adapters' extra GEMMs are not modelled"),
    "async_scheduling": (lambda v: not v, "async scheduling overlaps the CPU's step overhead with the GPU step "
                                          "(vllm/v1/engine/core.py): the model adds them"),
    "data_parallel_size": (lambda v: int(v) <= 1, "data parallelism: use engine.replicas, which the model scales"),
    "cpu_offload_gb": (lambda v: not v, "weights offloaded to CPU memory stream over PCIe each step: not modelled"),
}


def check_engine_args(args: Mapping[str, Any], *, device: str = "cuda") -> None:
    """Refuse, at its YAML field ``engine.args.<key>``, every engine arg the serving model would otherwise ignore
    silently: one it does not simulate at a value that changes timing (``num_scheduler_steps: 10``), or one it
    does not know.  ``enforce_eager: true`` is refused on a GPU (its defaults assume CUDA graphs) and accepted
    on the ``cpu`` pseudo-device, whose defaults are eager-mode figures."""
    for key, value in args.items():
        field = f"engine.args.{key}"
        if key in MODELLED_ARGS or key in NO_TIMING_EFFECT_ARGS:
            continue
        if key == "enforce_eager":
            if _bool_arg(args, key, False) and device != "cpu":
                raise SetupValueError(f"{field}: true is not modelled on a GPU: without CUDA graphs every kernel "
                                      "is launched from Python, and the serving model's per-step costs are those "
                                      "of graph replay; remove it, or compare with the roofline only",
                                      field=field)
            continue
        rule = _REFUSED_ARGS.get(key)
        if rule is None:
            raise SetupValueError(f"{field}: the serving model does not know this engine arg, so it cannot say "
                                  "whether it changes timing; remove it from engine.args to predict the default "
                                  "engine (modelled: "
                                  f"{', '.join(sorted(MODELLED_ARGS))})", field=field)
        honoured, why = rule
        try:
            ok = bool(honoured(value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise SetupValueError(f"{field}: {value!r} is not modelled: {why}; remove it to predict the "
                                  "default engine", field=field)


def kv_accounting(setup: Setup) -> an.KVAccounting:
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
    #: admit a waiting request only when its whole prompt's blocks are free (vLLM 0.32 scheduler_reserve_full_isl,
    #: default True; V1 only)
    reserve_full_prompt: bool = True

    def __post_init__(self) -> None:
        for name in ("max_num_seqs", "max_num_batched_tokens", "block_size", "tensor_parallel_size"):
            if int(getattr(self, name)) < 1:
                raise SimulationError(f"EngineConfig.{name} must be >= 1")
        if self.num_gpu_blocks < 2:
            raise SimulationError(f"num_gpu_blocks = {self.num_gpu_blocks}: vLLM needs at least one usable block "
                                  "besides its null block (the KV pool is too small)")

    @property
    def usable_blocks(self) -> int:
        """The KV blocks requests can use: all but vLLM's null block."""
        return self.num_gpu_blocks - 1

    def requests_held(self, tokens_per_request: int) -> int:
        """How many requests of ``tokens_per_request`` tokens (prompt + output) the pool holds whole at once; 0 when
        not even one fits (the simulator refuses such a request)."""
        return self.usable_blocks // -(-int(tokens_per_request) // self.block_size)

    @classmethod
    def from_setup(cls, setup: Setup) -> EngineConfig:
        """The scheduler limits resolved in the Setup (vllm_defaults + engine.args), the KV pool from
        :func:`kv_accounting` (or ``num_gpu_blocks_override``), chunked prefill / prefix caching as the Setup
        resolved them from vllm_defaults (V0: chunking only for > 32K contexts from 0.5.3, no prefix caching;
        V1: both on) unless engine.args set them."""
        args = dict(setup.engine_args or {})
        check_engine_args(args, device=setup.device)
        version = setup.engine_version or str(vllm_defaults.NEWEST_KNOWN_VERSION)
        chunk_default = setup.enable_chunked_prefill
        if chunk_default is None:
            chunk_default = vllm_defaults.default_enable_chunked_prefill(
                version, max_model_len=setup.max_model_len)
        prefix_default = setup.enable_prefix_caching
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
            reserve_full_prompt=_bool_arg(args, "scheduler_reserve_full_isl", True),
        )
