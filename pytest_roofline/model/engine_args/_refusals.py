"""Which ``engine.args`` the models honour, and the refusal of every other one at its YAML field.

The tables: :data:`MODELLED_ARGS` (read by the setup, the KV accounting or the serving model),
:data:`NO_TIMING_EFFECT_ARGS` (server plumbing, logging, where the weights come from), ``_REFUSED_ARGS`` (refused at
a value the models do not simulate, with why and where: ``scope="setup"`` everywhere, ``scope="serving"`` only where
the serving model runs) and :data:`KNOWN_ARGS` (all of them).  :func:`engine_arg_problems` gives the line saying why
each bad arg cannot be predicted (an unknown one with the nearest known name); :func:`check_engine_args` normalises
the spellings (``_spellings.py``) and raises :class:`EngineArgsError` with every bad arg at once.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_roofline.errors import SetupValueError
from pytest_roofline.model.engine_args._flags import FLAG_ARGS, _flag_word, is_off, read_flag
from pytest_roofline.model.engine_args._problems import EngineArgsError, Problem
from pytest_roofline.model.engine_args._releases import (
    _V2_BLOCK_MANAGER_NOOP_POST,
    ASYNC_SCHEDULING_DEFAULT_VERSION,
    DATA_PARALLEL_SIZE_VERSION,
    MAX_SEQ_LEN_TO_CAPTURE_REMOVED_VERSION,
    NUM_SCHEDULER_STEPS_REMOVED_VERSION,
    V2_BLOCK_MANAGER_NOOP_VERSION,
    _version,
    async_scheduling_default,
)
from pytest_roofline.model.engine_args._spellings import (
    EXECUTOR_BACKENDS,
    executor_backend,
    normalise_engine_args,
)

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
    "distributed_executor_backend", "allowed_origins",
    "root_path", "ssl_keyfile", "ssl_certfile", "disable_frontend_multiprocessing", "hf_token",
    # the OpenAI server's request/response handling, outside the engine's steps
    "enable_auto_tool_choice", "tool_call_parser", "tool_parser_plugin", "chat_template_content_format",
    "return_tokens_as_token_ids", "disable_fastapi_docs", "enable_prompt_tokens_details", "max_logprobs",
    "ssl_ca_certs", "ssl_cert_reqs", "allowed_methods", "allowed_headers", "middleware", "uds",
    # parsers and backends a plain completion request never invokes (a reasoning parser splits the text the engine
    # already produced; guided decoding runs only for a request that asks for it), tracing, weight loading.  On
    # vLLM 0.8-0.10 some of these values send the launch to the V0 engine (EngineArgs._is_v1_supported_oracle):
    # the setup then models V0 (vllm_defaults.v1_oracle_fallbacks)
    "reasoning_parser", "enable_reasoning", "guided_decoding_backend", "structured_outputs_config",
    "otlp_traces_endpoint", "collect_detailed_traces", "max_parallel_loading_workers",
    # response headers and fields, logging configuration, metric names
    "enable_request_id_headers", "enable_force_include_usage", "log_config_file", "show_hidden_metrics_for_version",
    # which parser reads the model's config file (hf config.json or Mistral's params.json: the same architecture;
    # vllm/engine/arg_utils.py --config-format "The format of the model config to load"); a security setting for
    # requests that name local images or videos (--allowed-local-media-path), which a text request never does
    "config_format", "allowed_local_media_path",
    # vLLM 0.4-0.5's spelling of distributed_executor_backend: ray (the executor, not the kernels)
    "worker_use_ray",
})

#: ``override_generation_config`` keys vLLM turns into default sampling parameters
#: (vllm/config.py ``ModelConfig.get_diff_sampling_param``, 0.10.0: ``available_params``) other than
#: ``max_new_tokens``, which caps every request's output
_SAMPLING_KEYS = frozenset({"repetition_penalty", "temperature", "top_k", "top_p", "min_p"})


def _default_only(default: Any) -> Callable[[Any], bool]:
    def honoured(value: Any) -> bool:
        if isinstance(default, str):
            return isinstance(value, str) and value.strip().lower() == default
        if isinstance(default, bool):
            return _flag_word(value) is default
        return not isinstance(value, bool) and isinstance(value, (int, float)) and value == default
    return honoured


def _word_in(*words: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v.strip().lower() in words


_SPEC = "speculative decoding (draft tokens and their acceptance)"
#: engine.args the models do not simulate at a value that changes a figure: (is this value honoured?, why, scope)
_REFUSED_ARGS: dict[str, tuple[Callable[[Any], bool], str, Scope]] = {
    "speculative_config": (is_off, f"{_SPEC}: accepted draft tokens put batch-1 decode above the roofline's "
                                   "one-token-per-step ceiling", "setup"),
    "speculative_model": (is_off, f"{_SPEC}: a draft model adds its weights and KV and accepted draft tokens put "
                                  "batch-1 decode above the roofline's one-token-per-step ceiling", "setup"),
    "num_speculative_tokens": (is_off, _SPEC, "setup"),
    "num_lookahead_slots": (is_off, "lookahead slots (speculative decoding) are not modelled", "setup"),
    "enable_lora": (lambda v: _flag_word(v) is False, "LoRA adapters' weights and extra GEMMs are not modelled",
                    "setup"),
    "data_parallel_size": (lambda v: not isinstance(v, bool) and int(v) <= 1,
                           "data parallelism: use engine.replicas, which the models scale", "setup"),
    "cpu_offload_gb": (lambda v: not isinstance(v, bool) and float(v) == 0,
                       "weights offloaded to CPU memory leave the GPU (a larger KV pool) and stream over PCIe each "
                       "step (a slower one): neither is modelled", "setup"),
    "enable_expert_parallel": (lambda v: _flag_word(v) is False,
                               "expert parallelism (experts spread over the ranks, all-to-all instead of "
                               "all-reduce) is not modelled: MoE weights split as tensor parallel", "setup"),
    # refused except at vLLM's default (vllm/config.py 0.10.0: ModelConfig.task/runner "auto", SchedulerConfig
    # policy "fcfs", delay_factor 0.0, max_num_partial_prefills 1, max_long_partial_prefills 1,
    # long_prefill_token_threshold 0, ParallelConfig.enable_eplb False; EngineArgs.disable_async_output_proc False)
    "task": (_word_in("auto", "generate"), "a pooling task (embed, classify, score, reward) runs no decode: the "
                                           "models predict text generation", "setup"),
    "runner": (_word_in("auto", "generate"), "a pooling or draft runner runs no decode: the models predict text "
                                             "generation", "setup"),
    "scheduling_policy": (_default_only("fcfs"), "priority scheduling reorders the waiting queue by each "
                                                 "request's priority: the serving model schedules first come, "
                                                 "first served", "serving"),
    "scheduler_delay_factor": (_default_only(0), "a scheduler delay holds prompts back to batch them: the serving "
                                                 "model schedules each waiting prompt at once", "serving"),
    "max_num_partial_prefills": (_default_only(1), "concurrent partial prefills are not modelled: the serving model "
                                                   "chunks one prompt at a time", "serving"),
    "max_long_partial_prefills": (_default_only(1), "concurrent partial prefills are not modelled", "serving"),
    "long_prefill_token_threshold": (_default_only(0), "concurrent partial prefills are not modelled", "serving"),
    "disable_async_output_proc": (_default_only(False), "V0's output processing then blocks each step: the serving "
                                                        "model overlaps it with the next step, as vLLM does by "
                                                        "default from 0.6.0", "serving"),
    "enable_eplb": (_default_only(False), "expert-parallel load balancing (expert parallelism) is not modelled",
                    "setup"),
    # timing only: the roofline and the KV pool hold, the serving model's per-step costs are the default's
    "compilation_config": (is_off, "a compilation config (vLLM's -O) changes which graphs torch.compile builds and "
                                   "which batch sizes replay CUDA graphs: the serving model's per-step costs are "
                                   "those of the release's default compilation", "serving"),
    "attention_backend": (is_off, "a named attention backend (FLASHINFER, FLASH_ATTN, ...) replaces the one vLLM "
                                  "picks for the GPU: the serving model's attention costs are those of the default "
                                  "choice", "serving"),
}

#: every engine arg the models know (modelled, without effect, or refused at some value)
KNOWN_ARGS: frozenset[str] = (MODELLED_ARGS | NO_TIMING_EFFECT_ARGS | frozenset(_REFUSED_ARGS)
                              | {"enforce_eager", "async_scheduling", "use_v2_block_manager", "device",
                                 "override_generation_config", "num_scheduler_steps", "disable_custom_all_reduce",
                                 "max_seq_len_to_capture"})


@dataclass(frozen=True)
class SetupFacts:
    """What a refusal that depends on the resolved setup reads (``model.setup.serving_arg_problems`` fills it from
    the Setup): the tensor-parallel degree, the catalog's interconnect text, the engine (V0/V1) and the longest
    sequence a decode step of the workload holds (prompt + output - 1 tokens, ``model.setup.
    longest_decode_sequence``), with ``longest_decode_basis`` saying what that figure is where it is not the longest
    request's ("" where it is)."""

    tensor_parallel_size: int = 1
    interconnect: str | None = None
    engine_kind: str | None = None
    longest_decode_sequence: int | None = None
    longest_decode_basis: str = ""


#: the TP group sizes vLLM's custom all-reduce kernel runs at (vllm/distributed/device_communicators/
#: custom_all_reduce.py ``_SUPPORTED_WORLD_SIZES``: [2, 4, 6, 8] in 0.6.3 and 0.11.0, 16 added by 0.32.0, beyond
#: one NVLink domain, which the setup refuses); at other sizes NCCL runs every all-reduce whatever the arg says
CUSTOM_ALL_REDUCE_WORLD_SIZES = frozenset({2, 4, 6, 8, 16})
#: vLLM's default ``max_seq_len_to_capture`` (0.6.3 vllm/engine/arg_utils.py, 0.10.2 vllm/config ModelConfig)
MAX_SEQ_LEN_TO_CAPTURE_DEFAULT = 8192


def _async_problem(value: Any, field: str, args: Mapping[str, Any], *, scope: Scope,
                   version: Any) -> str | None:
    """Why ``async_scheduling: value`` cannot be predicted (None: it can).  vLLM's default is the engine the
    serving model predicts; the other value is refused where the serving model runs."""
    on = _flag_word(value)
    default = async_scheduling_default(version, args)
    v = _version(version)
    newer = v is None or v >= ASYNC_SCHEDULING_DEFAULT_VERSION
    release = f"vLLM {version}" if version is not None else "the newest vLLM release read"
    if on and newer and not default:
        # an explicit true where 0.14+ refuses it (vllm/config/vllm.py: "Async scheduling is not yet compatible
        # with pipeline_parallel_size > 1"; an executor other than mp/uni/external_launcher)
        return (f"{field}: true: {release} refuses async scheduling with pipeline_parallel_size > 1 or a "
                f"distributed_executor_backend other than mp, uni or external_launcher (vllm/config/vllm.py, 0.14.0); "
                "remove it: vLLM then schedules synchronously")
    if on == default or scope == "setup":
        return None
    if on:
        return (f"{field}: true is not modelled on {release}: async scheduling (on by default only from vLLM "
                "0.14.0) overlaps the CPU's step overhead with the GPU step (vllm/v1/engine/core.py) and the "
                "serving model adds them; remove it to predict this release's default (synchronous) engine, or "
                "compare with the roofline only")
    return (f"{field}: false is not modelled on {release}: from vLLM 0.14.0 async scheduling is the default "
            "(vllm/config/vllm.py) and the serving model predicts the default engine, not the synchronous "
            "scheduler false selects; remove it to predict the default engine, or compare with the roofline only")


def _multi_step_problem(value: Any, field: str, *, scope: Scope, version: Any) -> str | None:
    """Why ``num_scheduler_steps: value`` cannot be predicted on vLLM ``version`` (None: it can).  From 0.10.1
    (:data:`NUM_SCHEDULER_STEPS_REMOVED_VERSION`) the arg is gone and vLLM's command line refuses it at any value:
    refused everywhere.  Before, 1 is the default engine and N > 1 is V0's multi-step scheduling (vLLM 0.6.0 ...
    0.10.0), which the serving model does not simulate: refused where it runs."""
    v = _version(version)
    release = f"vLLM {version}" if version is not None else "the newest vLLM release read"
    if v is None or v >= NUM_SCHEDULER_STEPS_REMOVED_VERSION:
        return (f"{field}: {value!r} is not an engine arg of {release}: --num-scheduler-steps was removed with V0's "
                "multi-step scheduling in vLLM 0.10.1 (vllm PR #22138 and #22779; 0.10.0's vllm/engine/arg_utils.py "
                "has it, 0.10.1's not), so this release's engine refuses to start with it; remove it (it schedules "
                "every step)")
    try:
        steps = None if isinstance(value, bool) else int(str(value).strip())
    except ValueError:
        steps = None
    if steps is None or steps < 1:
        return (f"{field}: {value!r} is not a number of steps; write a whole number (1, the default, schedules "
                "every step) or remove it")
    if steps == 1 or scope == "setup":
        return None
    fallback = (" (on vLLM 0.8.0 ... 0.10.0 the arg also sends the launch to the V0 engine, which the setup then "
                "models)" if v >= (0, 8, 0) else "")
    return (f"{field}: {value!r} is not modelled on {release}: its V0 multi-step scheduling runs {steps} decode steps "
            f"per schedule() and streams tokens {steps} at a time (vllm/worker/multi_step_model_runner.py){fallback}; "
            "the serving model schedules every step, so its TTFT, ITL and throughput would be those of single-step "
            "scheduling; remove it to predict the default engine, or compare with the roofline only")


def _custom_all_reduce_problem(value: Any, field: str, *, device: str, scope: Scope,
                               facts: SetupFacts | None) -> str | None:
    """``disable_custom_all_reduce: true`` where vLLM would otherwise run its custom all-reduce kernel: a GPU
    tensor-parallel group of a size the kernel takes (:data:`CUSTOM_ALL_REDUCE_WORLD_SIZES`), two GPUs or
    NVLink-connected ones (custom_all_reduce.py disables it itself on more than two PCIe-only GPUs, 0.6.3 ...
    0.32.0).  There every all-reduce the kernel would have taken (messages under its max size: a decode step's)
    runs on NCCL instead (vllm/distributed/device_communicators/cuda_communicator.py ``all_reduce``: the custom
    kernel first, then NCCL).  The serving model charges NCCL's ring latency per call, but its constants and TP
    bands were measured on engines that ran the custom kernel, so its figure for an engine without it is not one
    the project has measured: refused where the serving model runs.  The setup keeps it: the KV pool changes only
    by the kernel's own buffers (about 24 MiB a rank at 0.11.0's sizes: 8 MiB of metadata and scratch, an 8 MiB IPC
    buffer, 8 MiB of rank data), inside analytical.TP_NVLINK_NON_TORCH_BYTES, which the model does not separate
    out.  None: accepted (off, TP 1, the CPU engine, a size or link where vLLM never runs the kernel, and without
    ``facts``: no tensor-parallel degree known, as ``max_seq_len_to_capture`` is without a workload)."""
    on = _flag_word(value)
    if scope == "setup" or not on or device == "cpu" or facts is None:
        return None
    tp = int(facts.tensor_parallel_size)
    nvlink = (facts.interconnect or "").strip().startswith("NVLink")
    if tp not in CUSTOM_ALL_REDUCE_WORLD_SIZES or (tp > 2 and not nvlink):
        return None
    return (f"{field}: true is not modelled at tensor_parallel_size {tp}: it turns off vLLM's custom all-reduce "
            "kernel, so every TP all-reduce of a decode step runs on NCCL "
            "(vllm/distributed/device_communicators/cuda_communicator.py), and the serving model's all-reduce "
            "charge and TP bands come from engines that ran the custom kernel; remove it to predict the default "
            "engine, or compare with the roofline only")


def _capture_len_problem(value: Any, field: str, *, device: str, scope: Scope, version: Any,
                         facts: SetupFacts | None) -> str | None:
    """``max_seq_len_to_capture``: gone from vLLM 0.11.0 (:data:`MAX_SEQ_LEN_TO_CAPTURE_REMOVED_VERSION`), so refused
    everywhere there.  Before, only V0 reads it: its model runner replays a CUDA graph for a decode step only when
    the batch's longest sequence is at most the value (vllm/worker/model_runner.py ``_use_captured_graph``, 0.6.3
    ... 0.10.2) and runs the step eagerly otherwise, the effect refused as ``enforce_eager``.  Refused where the
    serving model runs when the workload's longest decode sequence exceeds it on a GPU's V0 engine; V1 (0.8 ...
    0.10.x) never reads it (no use under vllm/v1 in 0.10.1 or 0.10.2), nor does the CPU engine's runner."""
    v = _version(version)
    release = f"vLLM {version}" if version is not None else "the newest vLLM release read"
    if v is None or v >= MAX_SEQ_LEN_TO_CAPTURE_REMOVED_VERSION:
        return (f"{field}: {value!r} is not an engine arg of {release}: --max-seq-len-to-capture went with V0's "
                "model runner in vLLM 0.11.0 (0.10.2's vllm/engine/arg_utils.py has it, 0.11.0's not), so this "
                "release's engine refuses to start with it; remove it")
    try:
        cap = None if isinstance(value, bool) else int(str(value).strip())
    except ValueError:
        cap = None
    if cap is None or cap < 1:
        return (f"{field}: {value!r} is not a number of tokens; write a whole number (vLLM's default is "
                f"{MAX_SEQ_LEN_TO_CAPTURE_DEFAULT}) or remove it")
    if scope == "setup" or device == "cpu" or facts is None or facts.engine_kind != "v0":
        return None
    longest = facts.longest_decode_sequence
    if longest is None or longest <= cap:
        return None
    basis = f" ({facts.longest_decode_basis})" if facts.longest_decode_basis else ""
    return (f"{field}: {cap:,} is not modelled on {release}'s V0 engine for this workload: its decode steps reach "
            f"sequences of {longest:,} tokens{basis}, and V0 replays a CUDA graph only for a batch whose longest "
            f"sequence is at most {cap:,} (vllm/worker/model_runner.py _use_captured_graph), so the longer ones "
            "decode eagerly, which the serving model does not simulate (as enforce_eager); raise it to the "
            f"workload's longest sequence ({longest:,}) or more, or remove it (the default, "
            f"{MAX_SEQ_LEN_TO_CAPTURE_DEFAULT:,}, capped at max_model_len)")


def _pipeline_problem(value: Any, field: str) -> str | None:
    """Where the serving model runs: ``pipeline_parallel_size`` > 1 is not simulated (its step loop is one
    tensor-parallel group's; the simulator refuses it too, model/serving/cost.py).  The roofline's memory and KV
    figures of a PP setup are modelled, so the setup accepts it."""
    try:
        pp = int(value)
    except (TypeError, ValueError):
        return None  # the setup's own check says what is wrong with it
    if pp <= 1:
        return None
    return (f"{field}: {pp} is not simulated by the serving model: it runs one tensor-parallel group's steps, while "
            "vLLM's pipeline keeps several batches in flight through the stages (vllm/v1/engine/core.py batch "
            "queue); the KV pool and per-stage memory of a PP setup are modelled (roofline quantities): remove it to "
            "predict one stage group, or compare with the roofline's quantities only")


#: engine.args the plugin sets on the launch itself (measure/engine/_config.py ``EngineConfig.argv``: ``--model``,
#: ``--host``, ``--port``): written again in engine.args they would reach vLLM as a second flag, which vLLM takes
#: over the plugin's ("Found duplicate keys --port"), so the engine listens where the plugin does not look (trial
#: s16 M5: a busy port 8011 failed after 77 s with a traceback).  Refused at their line, with where the file says
#: it instead.
PLUGIN_OWNED_ARGS: dict[str, str] = {
    "port": ("the plugin picks the engine's port itself (a free one, passed as --port) and checks /health and sends "
             "the load there; a second --port makes vLLM listen elsewhere while the plugin waits on its own until "
             "engine.startup_timeout: remove it (engine.command's {port} places the plugin's port in a command of "
             "your own; --endpoint measures a server you started on a port of yours)"),
    "host": ("the plugin sets the address the engine listens on itself (--host 127.0.0.1, the address it measures "
             "from) and checks /health and sends the load there: remove it (engine.command's {host} places it in a "
             "command of your own; --endpoint measures a server you started at an address of yours)"),
    "model": ("the plugin passes the model the engine serves as --model itself; a second --model would serve "
              "another model than the one predicted and measured: write it as engine.model (a HF id or a local "
              "path) and remove engine.args.model"),
}


def _problem(key: str, value: Any, args: Mapping[str, Any], *, device: str, scope: Scope,
             version: Any, facts: SetupFacts | None = None) -> str | None:
    """The line saying why ``key: value`` cannot be predicted, or None when it can."""
    field = f"engine.args.{key}"
    if key in PLUGIN_OWNED_ARGS:
        return f"{field}: {PLUGIN_OWNED_ARGS[key]}"
    if key in FLAG_ARGS and _flag_word(value) is None:
        try:
            read_flag(value, field)
        except SetupValueError as exc:
            return str(exc)
    if key == "distributed_executor_backend":
        return _executor_problem(value, field)
    if key == "pipeline_parallel_size" and scope == "serving":
        return _pipeline_problem(value, field)
    if key in MODELLED_ARGS or key in NO_TIMING_EFFECT_ARGS:
        return None
    if key == "num_scheduler_steps":
        return _multi_step_problem(value, field, scope=scope, version=version)
    if key == "disable_custom_all_reduce":
        return _custom_all_reduce_problem(value, field, device=device, scope=scope, facts=facts)
    if key == "max_seq_len_to_capture":
        return _capture_len_problem(value, field, device=device, scope=scope, version=version, facts=facts)
    if key == "enforce_eager":
        if scope == "serving" and _flag_word(value) and device != "cpu":
            return (f"{field}: true is not modelled on a GPU: without CUDA graphs every kernel is launched from "
                    "Python, and the serving model's per-step costs are those of graph replay; remove it, or "
                    "compare with the roofline only")
        return None
    if key == "async_scheduling":
        return _async_problem(value, field, args, scope=scope, version=version)
    if key == "use_v2_block_manager":
        v = _version(version)
        if (v is None or v >= V2_BLOCK_MANAGER_NOOP_VERSION
                or str(version).strip().lstrip("v") == _V2_BLOCK_MANAGER_NOOP_POST):
            return None
        return (f"{field}: {value!r} is not modelled on vLLM {version}: before 0.6.3.post1 it chose between block "
                "manager v1 and v2 (a no-op from 0.6.3.post1, vllm PR #8704); remove it to predict this release's "
                "default engine")
    if key == "device":
        allowed = ("auto", "cpu") if device == "cpu" else ("auto", "cuda")
        if isinstance(value, str) and value.strip().lower() in allowed:
            return None
        return (f"{field}: {value!r} is not this setup's device: the hardware is a "
                f"{'CPU' if device == 'cpu' else 'GPU'} ({' or '.join(allowed)} leaves vLLM as modelled); remove it "
                "or pick the hardware that runs it")
    if key == "override_generation_config":
        return _generation_override_problem(value, field)
    if key == "data_parallel_size":
        v = _version(version)
        if v is not None and v < DATA_PARALLEL_SIZE_VERSION:
            return (f"{field}: {value!r} is not an engine arg of vLLM {version}: --data-parallel-size (-dp) was added "
                    "in vLLM 0.8.3 (vllm/engine/arg_utils.py), so this release's engine refuses it; remove it "
                    "(engine.replicas runs more than one engine, which the models scale)")
    rule = _REFUSED_ARGS.get(key)
    if rule is None:
        near = difflib.get_close_matches(key, sorted(KNOWN_ARGS), n=1, cutoff=0.8)
        hint = f"did you mean {near[0]!r}? " if near else ""
        return (f"{field}: not an engine arg pytest-roofline knows, so it cannot say whether it changes a figure; "
                f"{hint}remove it from engine.args to predict the default engine (the args the models read: "
                f"{', '.join(sorted(MODELLED_ARGS))})")
    honoured, why, rule_scope = rule
    if rule_scope == "serving" and scope == "setup":
        return None
    try:
        ok = bool(honoured(value))
    except (TypeError, ValueError):
        ok = False
    if ok:
        return None
    return f"{field}: {value!r} is not modelled: {why}; remove it to predict the default engine"


def _executor_problem(value: Any, field: str) -> str | None:
    """``distributed_executor_backend`` changes no figure, but the plugin launches only :data:`EXECUTOR_BACKENDS`:
    any other value is refused at its field, before anything starts (None, vLLM's own choice, is fine)."""
    if value is None or executor_backend(value) in EXECUTOR_BACKENDS:
        return None
    return (f"{field}: {value!r} is not a backend the plugin launches: write one of {', '.join(EXECUTOR_BACKENDS)} "
            "(mp: worker processes on one node, vLLM's default; ray: a Ray cluster, for more than one node), or remove "
            "it to let vLLM choose; uni and external_launcher are not a server's multi-worker modes")


def _generation_override_problem(value: Any, field: str) -> str | None:
    """``override_generation_config`` changes only the default sampling parameters vLLM reads from it
    (temperature, top_p, top_k, min_p, repetition_penalty): accepted; ``max_new_tokens`` caps every request's
    output, and any other key is one the project has not checked: refused."""
    parsed = value
    if isinstance(value, str):
        if is_off(value):
            return None
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
    if parsed is None:
        return None
    if not isinstance(parsed, Mapping):
        return (f"{field}: {value!r} is not a mapping of sampling defaults; write e.g. "
                "{\"temperature\": 0.5}")
    other = sorted(str(k) for k in parsed if k not in _SAMPLING_KEYS)
    if not other:
        return None
    why = ("max_new_tokens caps every request's output length" if other == ["max_new_tokens"] else
           f"{', '.join(other)} {'is' if len(other) == 1 else 'are'} not a sampling default the project has checked")
    return (f"{field}: {why}; only sampling defaults ({', '.join(sorted(_SAMPLING_KEYS))}) leave the engine as "
            "modelled: remove the others")


def engine_arg_problems(args: Mapping[str, Any], *, device: str = "cuda", scope: Scope = "serving",
                        version: Any = None, facts: SetupFacts | None = None) -> list[Problem]:
    """Every engine arg of ``args`` (already normalised: :func:`normalise_engine_args`) a model would otherwise
    ignore silently, each as a :class:`Problem`: one it does not know (with the nearest known name), one it does not
    simulate at a value that changes a figure, an on/off arg that is neither.  ``scope="setup"`` (the setup, as it is
    built: every path) those that change the roofline, the KV pool or the closed forms; ``scope="serving"`` (the
    serving model) also those that change only its step timing: ``num_scheduler_steps`` > 1 (before 0.10.1; from
    it the arg is refused everywhere), ``async_scheduling`` at the value that is not ``version``'s default,
    ``enforce_eager: true`` on a GPU (its per-step costs are those of CUDA-graph replay; the ``cpu`` pseudo-device's
    defaults are eager-mode figures, so it is accepted there) and ``pipeline_parallel_size`` > 1 (one
    tensor-parallel group is simulated), ``disable_custom_all_reduce: true`` where vLLM would run its custom
    all-reduce and ``max_seq_len_to_capture`` below the workload's longest decode sequence on V0 (both read from
    ``facts``, the resolved setup's figures; without them both are accepted).  ``version``: the vLLM release
    (None: the newest read)."""
    out: list[Problem] = []
    for key, value in args.items():
        text = _problem(str(key), value, args, device=device, scope=scope, version=version, facts=facts)
        if text is not None:
            out.append(Problem(f"engine.args.{key}", text))
    return out


def check_engine_args(args: Mapping[str, Any], *, device: str = "cuda", scope: Scope = "serving",
                      version: Any = None, facts: SetupFacts | None = None) -> dict[str, Any]:
    """``args`` normalised (:func:`normalise_engine_args`), after refusing every bad one at once
    (:class:`EngineArgsError`, at the first one's field ``engine.args.<key>``; see :func:`engine_arg_problems`,
    which reads ``facts``, the resolved setup's figures, for the refusals that depend on them)."""
    normal, problems = normalise_engine_args(args)
    problems += engine_arg_problems(normal, device=device, scope=scope, version=version, facts=facts)
    if problems:
        raise EngineArgsError(problems)
    return normal
