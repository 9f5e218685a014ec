"""Which ``engine.args`` the models honour, and the refusal of every other one at its YAML field (the one home).

A prediction file's ``engine.args`` are vLLM's engine arguments (``vllm serve --max-num-seqs 64`` is
``max_num_seqs: 64``).  An arg is in exactly one of these groups:

* **modelled** (:data:`MODELLED_ARGS`): the setup, the KV accounting or the serving model reads it;
* **no timing effect** (:data:`NO_TIMING_EFFECT_ARGS`): server plumbing, logging, where the weights come from;
* **refused at a value the models do not simulate** (:data:`_REFUSED_ARGS`): accepted at the value that leaves
  the engine as modelled (``num_scheduler_steps: 1``, ``cpu_offload_gb: 0``), refused at any other.  Some change
  only the serving model's step timing (multi-step scheduling, async scheduling, eager mode on a GPU): the
  roofline, the KV pool and the closed forms still hold, so they are refused only where the serving model runs
  (``scope="serving"``).  The others change what every model computes (weights off the GPU, draft tokens above the
  decode roofline, more than one engine): refused everywhere (``scope="setup"``, checked as the setup is built);
* anything else is not an arg the models know, so no one can say whether it changes a figure: refused, with the
  nearest known name when it looks like a typo (``tensor_paralel_size``).

Nothing is ignored silently: a figure computed as if an arg were absent would be confidently wrong.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pytest_roofline.errors import SetupValueError

__all__ = ["MODELLED_ARGS", "NO_TIMING_EFFECT_ARGS", "KNOWN_ARGS", "Scope", "check_engine_args"]

Scope = Literal["setup", "serving"]

#: engine.args the models read (the setup and KV accounting: model/setup.py; the serving model: serving/engine.py)
MODELLED_ARGS: frozenset[str] = frozenset({
    "max_num_seqs", "max_num_batched_tokens", "block_size", "num_gpu_blocks_override", "enable_chunked_prefill",
    "enable_prefix_caching", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
    "gpu_memory_utilization", "kv_cache_dtype", "dtype", "quantization", "kv_cache_memory_bytes",
    "scheduler_reserve_full_isl",
})
#: engine.args that change no step's time nor the KV pool (server plumbing, logging, where the weights come from)
NO_TIMING_EFFECT_ARGS: frozenset[str] = frozenset({
    "host", "port", "api_key", "served_model_name", "model", "tokenizer", "tokenizer_mode", "revision",
    "tokenizer_revision", "code_revision", "download_dir", "load_format", "trust_remote_code", "seed",
    "disable_log_requests", "enable_log_requests", "disable_log_stats", "max_log_len", "uvicorn_log_level",
    "disable_uvicorn_access_log", "chat_template", "response_role", "generation_config", "swap_space",
    "max_seq_len_to_capture", "distributed_executor_backend", "disable_custom_all_reduce", "allowed_origins",
    "root_path", "ssl_keyfile", "ssl_certfile", "disable_frontend_multiprocessing", "hf_token",
    # the OpenAI server's request/response handling, outside the engine's steps
    "enable_auto_tool_choice", "tool_call_parser", "tool_parser_plugin", "chat_template_content_format",
    "return_tokens_as_token_ids", "disable_fastapi_docs", "enable_prompt_tokens_details", "max_logprobs",
    "ssl_ca_certs", "ssl_cert_reqs", "allowed_methods", "allowed_headers", "middleware", "uds",
    # parsers and backends a plain completion request never invokes (a reasoning parser splits the text the engine
    # already produced; guided decoding runs only for a request that asks for it), tracing, weight loading
    "reasoning_parser", "enable_reasoning", "guided_decoding_backend", "structured_outputs_config",
    "otlp_traces_endpoint", "collect_detailed_traces", "max_parallel_loading_workers",
    # response headers and fields, logging configuration, metric names
    "enable_request_id_headers", "enable_force_include_usage", "log_config_file", "show_hidden_metrics_for_version",
})


def _off(value: Any) -> bool:
    """True when an on/off engine arg is off (``false``, ``0``, ``"no"``, absent)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("1", "true", "yes", "on")
    return not value


#: engine.args the models do not simulate at a value that changes a figure: (is this value honoured?, why, scope)
_REFUSED_ARGS: dict[str, tuple[Callable[[Any], bool], str, Scope]] = {
    "num_scheduler_steps": (lambda v: int(v) <= 1,
                            "vLLM 0.6's multi-step scheduling runs N decode steps per schedule() and streams tokens "
                            "N at a time (vllm/worker/multi_step_model_runner.py): the serving model schedules every "
                            "step, so its TTFT, ITL and throughput would be those of single-step scheduling",
                            "serving"),
    "async_scheduling": (_off, "async scheduling overlaps the CPU's step overhead with the GPU step "
                               "(vllm/v1/engine/core.py): the serving model adds them", "serving"),
    "speculative_config": (_off, "speculative decoding (draft tokens, acceptance) is not modelled: accepted "
                                 "draft tokens put batch-1 decode above the roofline's one-token-per-step ceiling",
                           "setup"),
    "speculative_model": (_off, "speculative decoding (draft tokens, acceptance) is not modelled", "setup"),
    "num_speculative_tokens": (_off, "speculative decoding (draft tokens, acceptance) is not modelled", "setup"),
    "num_lookahead_slots": (_off, "lookahead slots (speculative decoding) are not modelled", "setup"),
    "enable_lora": (_off, "LoRA adapters' weights and extra GEMMs are not modelled", "setup"),
    "data_parallel_size": (lambda v: int(v) <= 1, "data parallelism: use engine.replicas, which the models scale",
                           "setup"),
    "cpu_offload_gb": (lambda v: float(v) == 0,
                       "weights offloaded to CPU memory leave the GPU (a larger KV pool) and stream over PCIe each "
                       "step (a slower one): neither is modelled", "setup"),
    "enable_expert_parallel": (_off, "expert parallelism (experts spread over the ranks, all-to-all instead of "
                                     "all-reduce) is not modelled: MoE weights split as tensor parallel", "setup"),
}

#: every engine arg the models know (modelled, without effect, or refused at some value)
KNOWN_ARGS: frozenset[str] = MODELLED_ARGS | NO_TIMING_EFFECT_ARGS | frozenset(_REFUSED_ARGS) | {"enforce_eager"}


def check_engine_args(args: Mapping[str, Any], *, device: str = "cuda", scope: Scope = "serving") -> None:
    """Refuse, at its YAML field ``engine.args.<key>``, every engine arg a model would otherwise ignore silently:
    one it does not know (with the nearest known name), or one it does not simulate at a value that changes a
    figure.  ``scope="setup"`` (the setup, as it is built: every path) refuses those that change the roofline, the
    KV pool or the closed forms; ``scope="serving"`` (the serving model) also those that change only its step
    timing: ``num_scheduler_steps`` > 1, ``async_scheduling``, and ``enforce_eager: true`` on a GPU (its
    per-step costs are those of CUDA-graph replay; the ``cpu`` pseudo-device's defaults are eager-mode figures,
    so it is accepted there)."""
    for key, value in args.items():
        field = f"engine.args.{key}"
        if key in MODELLED_ARGS or key in NO_TIMING_EFFECT_ARGS:
            continue
        if key == "enforce_eager":
            if scope == "serving" and not _off(value) and device != "cpu":
                raise SetupValueError(f"{field}: true is not modelled on a GPU: without CUDA graphs every kernel "
                                      "is launched from Python, and the serving model's per-step costs are those "
                                      "of graph replay; remove it, or compare with the roofline only",
                                      field=field)
            continue
        rule = _REFUSED_ARGS.get(key)
        if rule is None:
            near = difflib.get_close_matches(key, sorted(KNOWN_ARGS), n=1, cutoff=0.8)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise SetupValueError(f"{field}: not an engine arg pytest-roofline knows, so it cannot say whether it "
                                  f"changes a figure; {hint}remove it from engine.args to predict the default "
                                  "engine (the args the models read: "
                                  f"{', '.join(sorted(MODELLED_ARGS))})", field=field)
        honoured, why, rule_scope = rule
        if rule_scope == "serving" and scope == "setup":
            continue
        try:
            ok = bool(honoured(value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise SetupValueError(f"{field}: {value!r} is not modelled: {why}; remove it to predict the "
                                  "default engine", field=field)
