"""The engine's environment (``engine.env``): which variables the serving model simulates, which change nothing it
times, and which change the engine's timing without being simulated (the serving model then refuses, each at its
``engine.env.NAME`` line, as it refuses an engine arg it does not simulate). Trial s26b #7: ``VLLM_FLASH_ATTN_VERSION``,
``VLLM_ENABLE_V1_MULTIPROCESSING=0`` and ``NCCL_P2P_DISABLE`` at TP 4 passed silently where
``VLLM_ATTENTION_BACKEND`` was refused for the same reason."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_roofline.model.engine_args._flags import is_off
from pytest_roofline.model.engine_args._problems import Problem

__all__ = ["ENV_READ", "ENV_NO_TIMING_EFFECT", "ENV_NOT_SIMULATED", "ENGINE_ENV_PREFIXES", "env_problems"]

#: the variables the setup reads itself (model/setup.py: the engine V0/V1, a long max_model_len, the CPU pool, the
#: attention backend, which it refuses on its own)
ENV_READ: frozenset[str] = frozenset({"VLLM_USE_V1", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_CPU_KVCACHE_SPACE",
                                      "VLLM_ATTENTION_BACKEND"})
#: variables of the engine's process that change nothing a step costs: where files and logs go, credentials,
#: telemetry, which devices are visible (the setup names the GPU), the host and port, CPU-thread binding
ENV_NO_TIMING_EFFECT: frozenset[str] = frozenset({
    "HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_HUB_ENABLE_HF_TRANSFER",
    "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE", "TOKENIZERS_PARALLELISM", "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER", "VLLM_LOGGING_LEVEL", "VLLM_CONFIGURE_LOGGING", "VLLM_LOGGING_CONFIG_PATH",
    "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT", "VLLM_ASSETS_CACHE", "VLLM_NO_USAGE_STATS", "VLLM_DO_NOT_TRACK",
    "DO_NOT_TRACK", "VLLM_HOST_IP", "VLLM_PORT", "VLLM_API_KEY", "VLLM_WORKER_MULTIPROC_METHOD",
    "VLLM_CPU_OMP_THREADS_BIND", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "VLLM_RPC_TIMEOUT",
    "VLLM_ENGINE_ITERATION_TIMEOUT_S", "VLLM_SERVER_DEV_MODE", "VLLM_USE_MODELSCOPE", "VLLM_DISABLE_COMPILE_CACHE",
    "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"})
#: variables that change what an engine step costs, which the serving model does not simulate, and why; a value
#: among a variable's ``off`` forms is the default engine (``VLLM_ENABLE_V1_MULTIPROCESSING=1``, its default)
ENV_NOT_SIMULATED: dict[str, str] = {
    "VLLM_FLASH_ATTN_VERSION": "picks FlashAttention's version (2 or 3), other attention kernels than the ones vLLM "
                               "picks for the GPU, whose costs the serving model's are",
    "VLLM_USE_TRITON_FLASH_ATTN": "picks the Triton attention kernels (ROCm) over vLLM's choice",
    "VLLM_USE_FLASHINFER_SAMPLER": "picks FlashInfer's sampling kernels over vLLM's choice",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "off, the engine core runs in the API server's process: the overlap of the "
                                      "frontend with the engine's steps that the serving model simulates is gone",
    "CUDA_LAUNCH_BLOCKING": "makes every kernel launch synchronous",
    "NCCL_P2P_DISABLE": "takes NCCL's all-reduces off peer-to-peer (NVLink) links at tensor parallelism, whose "
                        "costs the serving model's TP term reproduces",
    "NCCL_ALGO": "forces NCCL's all-reduce algorithm over its own choice",
    "NCCL_PROTO": "forces NCCL's protocol over its own choice",
    "NCCL_SHM_DISABLE": "takes NCCL's all-reduces off shared memory",
    "NCCL_NVLS_ENABLE": "switches NVLink SHARP all-reduces on or off against NCCL's own choice",
}
#: the variables a value is only a change at: on (``VLLM_ENABLE_V1_MULTIPROCESSING``'s default is on, so only off
#: changes the engine) or where tensor parallelism runs all-reduces
_ONLY_WHEN_OFF = frozenset({"VLLM_ENABLE_V1_MULTIPROCESSING"})
_ONLY_AT_TP = frozenset({"NCCL_P2P_DISABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE"})
#: the prefixes of variables the engine reads: one of these this project does not know is said, never ignored
ENGINE_ENV_PREFIXES: tuple[str, ...] = ("VLLM_", "NCCL_", "CUDA_", "TORCH_", "PYTORCH_")


def env_problems(env: Mapping[str, Any], *, tensor_parallel_size: int = 1) -> list[Problem]:
    """Every variable of ``env`` (``engine.env``) that changes the engine's timing and the serving model does not
    simulate (:data:`ENV_NOT_SIMULATED`), and every engine variable (:data:`ENGINE_ENV_PREFIXES`) this project does
    not know, each a :class:`Problem` at ``engine.env.NAME``."""
    out: list[Problem] = []
    for name, value in env.items():
        key = str(name)
        if key in ENV_READ or key in ENV_NO_TIMING_EFFECT or value is None or str(value).strip() == "":
            continue
        if key in ENV_NOT_SIMULATED:
            if key in _ONLY_WHEN_OFF and not is_off(value):
                continue
            if key in _ONLY_AT_TP and tensor_parallel_size <= 1:
                continue
            out.append(Problem(f"engine.env.{key}", f"engine.env.{key}: {value!r} is not modelled: it "
                               f"{ENV_NOT_SIMULATED[key]}; remove it to predict the default engine, or let a "
                               "measurement decide"))
        elif key.startswith(ENGINE_ENV_PREFIXES):
            out.append(Problem(f"engine.env.{key}", f"engine.env.{key}: {value!r} is an engine variable this project "
                               "does not know, so the serving model cannot say it changes nothing it times; remove "
                               "it, or let a measurement decide (docs/reference/refusals.md lists the variables "
                               "read and those known to change no timing)"))
    return out
