"""How to launch one vLLM server: :class:`EngineConfig`, its command line and its environment."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pytest_roofline import redact
from pytest_roofline.format.engine_command import check_command, expand_command
from pytest_roofline.model.engine_args import (  # the one home of the fact
    EXECUTOR_BACKENDS,
    ExecutorBackend,
    executor_backend,
)

__all__ = ["EngineConfig", "VLLM_ENTRYPOINT", "redact_env", "EXECUTOR_BACKENDS", "cpu_threads_bind"]


def cpu_threads_bind(world_size: int, cpus: list[int]) -> str | None:
    """``VLLM_CPU_OMP_THREADS_BIND`` for ``world_size`` CPU workers on ``cpus``: contiguous equal shares joined by
    ``|`` (``"0|1"`` for 2 workers on 2 cores); None when there are fewer CPUs than workers.

    vLLM's CPU backend binds each local worker's OpenMP threads to the list in this variable; its default
    ``auto`` gives each worker a NUMA node of its own and refuses a start with more local workers than allowed
    NUMA nodes ("Not enough allowed NUMA nodes to bind threads of 2 local CPUWorkers",
    vllm/utils/ompmultiprocessing.py at v0.32.0), which is every TP=2 run on a one-node machine."""
    if world_size < 2 or len(cpus) < world_size:
        return None
    cpus = sorted(cpus)
    share = len(cpus) // world_size
    parts = []
    for r in range(world_size):
        mine = cpus[r * share:(r + 1) * share]
        parts.append(f"{mine[0]}-{mine[-1]}" if len(mine) > 1 and mine[-1] - mine[0] == len(mine) - 1
                     else ",".join(str(c) for c in mine))
    return "|".join(parts)

# The OpenAI-compatible server module.  It is run with ``python -m``, not through the ``vllm`` console
# script: that script starts with importlib.metadata.version("vllm") (vllm/entrypoints/cli/main.py at
# v0.32.0), which fails for the CPU build, whose distribution is named vllm-cpu (docs/sources.md).
VLLM_ENTRYPOINT = "vllm.entrypoints.openai.api_server"


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the values of secret-looking names (``HF_TOKEN``, ``*_API_KEY``, ...) replaced by ``***``
    (:func:`pytest_roofline.redact.redact_mapping`)."""
    return redact.redact_mapping(env)


#: where the engine runs (``EngineConfig.device``): a GPU, or vLLM's CPU backend
Device = Literal["cuda", "cpu"]


@dataclass
class EngineConfig:
    """How to launch one vLLM server. ``None`` means "vLLM's default" (the flag is not passed)."""

    model: str
    served_model_name: str | None = None
    device: Device = "cuda"
    dtype: str | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    # --pipeline-parallel-size, --data-parallel-size, --distributed-executor-backend: flags of the server in
    # vllm/engine/arg_utils.py at v0.11.0 and at v0.32.0 (both read); the engine runs tensor x pipeline x data
    # parallel workers (world_size())
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    distributed_executor_backend: ExecutorBackend | None = None  # None = vLLM's choice (mp on one node)
    gpu_memory_utilization: float | None = None
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    enable_prefix_caching: bool | None = None  # None = engine default (on for generative models)
    kv_cache_space_gib: int | None = None  # CPU only: VLLM_CPU_KVCACHE_SPACE (an integer, GiB)
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    # How to run the server (engine.python / engine.command): None = this interpreter, ``python -m`` the
    # OpenAI server. ``python``: another interpreter (a venv that holds vLLM). ``command``: an argv template
    # (COMMAND_PLACEHOLDERS), e.g. a container; the plugin still owns the port, health check, log and teardown.
    python: str | None = None
    command: list[str] | None = None

    def __post_init__(self) -> None:
        self.model = str(self.model)
        if self.device not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu', got {self.device!r}")
        for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
        if self.distributed_executor_backend is not None:
            # the check's normalisation (engine_args.executor_backend), so the value it accepted is the one launched;
            # a refused one is named as written
            backend = executor_backend(self.distributed_executor_backend)
            if backend not in EXECUTOR_BACKENDS:
                raise ValueError(f"distributed_executor_backend must be one of {', '.join(EXECUTOR_BACKENDS)}, "
                                 f"got {self.distributed_executor_backend!r}")
            self.distributed_executor_backend = cast(ExecutorBackend, backend)
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError("gpu_memory_utilization must be in (0, 1]")
        if self.kv_cache_space_gib is not None:
            if self.device != "cpu":
                raise ValueError("kv_cache_space_gib is a CPU-backend setting (VLLM_CPU_KVCACHE_SPACE)")
            v = float(self.kv_cache_space_gib)
            # vLLM reads VLLM_CPU_KVCACHE_SPACE with int() (vllm/envs.py at v0.32.0); for fractions pass
            # --kv-cache-memory-bytes in extra_args instead.
            if v <= 0 or not v.is_integer():
                raise ValueError(
                    f"kv_cache_space_gib must be a positive whole number of GiB, got {self.kv_cache_space_gib!r}"
                    " (use extra_args ['--kv-cache-memory-bytes', N] for other sizes)")
            self.kv_cache_space_gib = int(v)
        self.extra_args = [str(a) for a in self.extra_args]
        if self.python is not None and self.command is not None:
            raise ValueError("give engine.python or engine.command, not both (a command names its own interpreter)")
        if self.python is not None:
            self.python = str(self.python)
            if not self.python:
                raise ValueError("engine.python must be a path to a Python interpreter")
        if self.command is not None:
            self.command = [str(a) for a in self.command]
            check_command(self.command)
        self.env = {str(k): str(v) for k, v in self.env.items()}
        # every secret this engine is given is known to the redaction step before anything is written
        redact.remember(*(v for k, v in self.env.items() if redact.is_secret_name(k)))
        redact.remember(*_secret_flag_values(self.extra_args))

    def world_size(self) -> int:
        """Model workers the engine starts: tensor x pipeline parallel, times the data-parallel engines."""
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    def expected_workers(self) -> list[dict[str, int]]:
        """Every worker's grid position, ``{"rank", "dp_rank", "pp_rank", "tp_rank"}``, rank =
        ``(dp x PP + pp) x TP + tp`` (the numbering :func:`~.startup_log.workers_seen` uses)."""
        tp, pp = self.tensor_parallel_size, self.pipeline_parallel_size
        return [{"rank": (d * pp + p) * tp + t, "dp_rank": d, "pp_rank": p, "tp_rank": t}
                for d in range(self.data_parallel_size) for p in range(pp) for t in range(tp)]

    def api_key(self) -> str | None:
        """The key the server will require on ``/v1`` paths, or None: ``--api-key`` in the arguments, else
        ``VLLM_API_KEY`` in the engine's environment (``env``, else the one it inherits)
        (vllm/entrypoints/serve/middleware/register.py and authenticate.py, and
        vllm/entrypoints/launchers/cli_args.py, at v0.32.0)."""
        values = [v for f, v in _flag_values(self.extra_args) if f == "--api-key"]
        key = values[-1] if values else (self.launch_env().get("VLLM_API_KEY") or None)
        redact.remember(key)
        return key

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def key(self) -> str:
        """A stable id of this configuration: equal configs share one engine."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def argv(self, python_executable: str, port: int) -> list[str]:
        """The command line (a list, never a shell string): ``engine.command`` filled in, else
        ``<python> -m vllm.entrypoints.openai.api_server`` with ``engine.python`` or ``python_executable``."""
        if self.command is not None:
            values = {"model": self.model, "port": str(int(port)), "host": self.host,
                      "served_model_name": self.served_model_name or self.model}
            return expand_command(self.command, values, self.vllm_flags())
        return [self.python or python_executable, "-m", VLLM_ENTRYPOINT, "--model", self.model,
                "--host", self.host, "--port", str(int(port))] + self.vllm_flags()

    def vllm_flags(self) -> list[str]:
        """The server flags this configuration sets (everything but the model, host and port)."""
        a: list[str] = []
        if self.served_model_name:
            a += ["--served-model-name", self.served_model_name]
        if self.dtype:
            a += ["--dtype", self.dtype]
        if self.max_model_len is not None:
            a += ["--max-model-len", str(self.max_model_len)]
        if self.tensor_parallel_size != 1:
            a += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.pipeline_parallel_size != 1:
            a += ["--pipeline-parallel-size", str(self.pipeline_parallel_size)]
        if self.data_parallel_size != 1:
            a += ["--data-parallel-size", str(self.data_parallel_size)]
        if self.distributed_executor_backend is not None:
            a += ["--distributed-executor-backend", self.distributed_executor_backend]
        if self.gpu_memory_utilization is not None:
            a += ["--gpu-memory-utilization", repr(float(self.gpu_memory_utilization))]
        if self.block_size is not None:
            a += ["--block-size", str(self.block_size)]
        if self.max_num_seqs is not None:
            a += ["--max-num-seqs", str(self.max_num_seqs)]
        if self.max_num_batched_tokens is not None:
            a += ["--max-num-batched-tokens", str(self.max_num_batched_tokens)]
        if self.enforce_eager:
            a.append("--enforce-eager")
        if self.enable_prefix_caching is True:
            a.append("--enable-prefix-caching")
        elif self.enable_prefix_caching is False:
            # argparse.BooleanOptionalAction gives the --no- form (vllm/engine/arg_utils.py at v0.32.0)
            a.append("--no-enable-prefix-caching")
        return a + list(self.extra_args)

    def env_overrides(self) -> dict[str, str]:
        """Environment variables set on top of the parent's environment."""
        o = {
            "PYTHONUNBUFFERED": "1",  # the log file is read while the engine runs
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        if Path(self.model).expanduser().is_dir():
            o["HF_HUB_OFFLINE"] = "1"  # a local model never needs the hub
        if self.device == "cpu" and self.kv_cache_space_gib is not None:
            o["VLLM_CPU_KVCACHE_SPACE"] = str(self.kv_cache_space_gib)
        if self.distributed_executor_backend == "ray":
            # Ray folds lines that several workers print into one "[repeated Nx across cluster]" line
            # (ray/_private/ray_logging.py LogDeduplicator; RAY_DEDUP_LOGS=0 turns it off): without this the log
            # would not show every worker's start
            o["RAY_DEDUP_LOGS"] = "0"
        local = self.world_size() if self.distributed_executor_backend != "ray" else 1
        if self.device == "cpu" and local > 1 and "VLLM_CPU_OMP_THREADS_BIND" not in self.env \
                and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ and hasattr(os, "sched_getaffinity"):
            bind = cpu_threads_bind(local, sorted(os.sched_getaffinity(0)))
            if bind:
                o["VLLM_CPU_OMP_THREADS_BIND"] = bind
        o.update(self.env)
        return o

    def launch_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.update(self.env_overrides())
        return env


def _flag_values(argv: list[str]) -> list[tuple[str, str]]:
    """``(flag, value)`` for every ``--flag value`` and ``--flag=value`` in ``argv``."""
    out = []
    for i, a in enumerate(argv):
        if a.startswith("--"):
            flag, eq, value = a.partition("=")
            if eq:
                out.append((flag, value))
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out.append((flag, argv[i + 1]))
    return out


def _secret_flag_values(argv: list[str]) -> list[str]:
    return [v for f, v in _flag_values(argv) if redact.is_secret_name(f)]
