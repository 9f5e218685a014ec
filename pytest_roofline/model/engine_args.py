"""Which ``engine.args`` the models honour, and the refusal of every other one at its YAML field (the one home).

A prediction file's ``engine.args`` are vLLM's engine arguments (``vllm serve --max-num-seqs 64`` is
``max_num_seqs: 64``).  An arg is in exactly one of these groups:

* **modelled** (:data:`MODELLED_ARGS`): the setup, the KV accounting or the serving model reads it;
* **no timing effect** (:data:`NO_TIMING_EFFECT_ARGS`): server plumbing, logging, where the weights come from;
* **refused at a value the models do not simulate** (:data:`_REFUSED_ARGS`): accepted at the value that leaves
  the engine as modelled (``num_scheduler_steps: 1``, ``cpu_offload_gb: 0``, ``scheduling_policy: fcfs``), refused
  at any other.  Some change only the serving model's step timing (multi-step scheduling, async scheduling, eager
  mode on a GPU): the roofline, the KV pool and the closed forms still hold, so they are refused only where the
  serving model runs (``scope="serving"``).  The others change what every model computes (weights off the GPU,
  draft tokens above the decode roofline, more than one engine): refused everywhere (``scope="setup"``, checked as
  the setup is built);
* anything else is not an arg the models know, so no one can say whether it changes a figure: refused, with the
  nearest known name when it looks like a typo (``tensor_paralel_size``).

Nothing is ignored silently: a figure computed as if an arg were absent would be confidently wrong.  Every bad arg
of a setup is reported at once (:class:`EngineArgsError`, one line per arg, each naming its field).

Spellings are read as vLLM's own command line reads them (:func:`normalise_engine_args`): ``max-num-seqs`` is
``max_num_seqs`` (argparse's dest), the short aliases ``tp``/``pp``/``dp``/``q``/``O`` are their long arguments
(vllm/engine/arg_utils.py ``add_cli_args``: ``-tp``, ``-pp``, ``-q``, ``-O`` in 0.8.0 ... 0.10.2, ``-dp`` from
0.8.3), and ``no_enable_prefix_caching: true`` is ``enable_prefix_caching: false`` (argparse's
``BooleanOptionalAction``, ``--no-enable-prefix-caching``).  On/off args are read by one reader, :func:`read_flag`
(the check, the setup and the serving model alike), and a value-carrying arg is on unless :func:`is_off`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from pytest_roofline.errors import SetupValueError

__all__ = ["MODELLED_ARGS", "NO_TIMING_EFFECT_ARGS", "KNOWN_ARGS", "FLAG_ARGS", "ALIASES", "Scope", "Problem",
           "EngineArgsError", "is_off", "read_flag", "flag_arg", "canonical_key", "normalise_engine_args",
           "engine_arg_problems", "check_engine_args", "ASYNC_SCHEDULING_DEFAULT_VERSION",
           "async_scheduling_default"]

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

#: on/off engine args the models read or refuse: :func:`read_flag` reads them (a value that is neither on nor off,
#: or none at all -- a bare ``enforce_eager:`` in YAML -- is refused: write true or false)
FLAG_ARGS: frozenset[str] = frozenset({
    "enforce_eager", "enable_prefix_caching", "enable_chunked_prefill", "scheduler_reserve_full_isl",
    "async_scheduling", "enable_lora", "enable_expert_parallel", "disable_async_output_proc", "enable_eplb",
    "use_v2_block_manager",
})
#: vLLM's boolean flags without a timing effect that ``no_<flag>: true`` may also turn off
_NO_EFFECT_FLAGS: frozenset[str] = frozenset({
    "trust_remote_code", "disable_log_requests", "enable_log_requests", "disable_log_stats",
    "disable_custom_all_reduce", "enable_auto_tool_choice", "disable_fastapi_docs", "enable_prompt_tokens_details",
    "disable_uvicorn_access_log", "disable_frontend_multiprocessing", "return_tokens_as_token_ids",
    "enable_request_id_headers", "enable_force_include_usage", "enable_reasoning",
})
#: vLLM's short command-line aliases (vllm/engine/arg_utils.py ``add_cli_args``, read in the 0.8.0 ... 0.10.2
#: wheels: ``-tp``, ``-pp``, ``-q``, ``-O`` in all; ``-dp`` from 0.8.3)
ALIASES: Mapping[str, str] = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size",
                              "dp": "data_parallel_size", "q": "quantization", "O": "compilation_config"}

_OFF_WORDS = frozenset({"false", "0", "no", "off", "none"})
_ON_WORDS = frozenset({"true", "1", "yes", "on"})

#: the first vLLM release whose ``async_scheduling`` defaults to on: 0.14.0's vllm/engine/arg_utils.py takes
#: ``SchedulerConfig.async_scheduling = Field(default=None)`` and vllm/config/vllm.py turns None into True unless
#: pipeline_parallel_size > 1, a non-EAGLE/MTP speculative method or an executor other than mp/uni/
#: external_launcher; 0.13.0's default is ``async_scheduling: bool = False`` (both read in the PyPI wheels)
ASYNC_SCHEDULING_DEFAULT_VERSION: tuple[int, int, int] = (0, 14, 0)
_ASYNC_EXECUTORS = (None, "mp", "uni", "external_launcher")
#: the first release whose ``--use-v2-block-manager`` is a documented no-op ("[DEPRECATED] block manager v1 has
#: been removed ... Setting this flag to True or False has no effect on vLLM behavior": vllm PR #8704), 0.6.3.post1
#: (read in its wheel's vllm/engine/arg_utils.py; 0.6.3's still chooses "BlockSpaceMangerV2 ... Set to False to use
#: BlockSpaceManagerV1").  The project reads 0.6.3.post1 as 0.6.3, so the post release is matched by its text
V2_BLOCK_MANAGER_NOOP_VERSION: tuple[int, int, int] = (0, 6, 4)
_V2_BLOCK_MANAGER_NOOP_POST = "0.6.3.post1"
#: ``override_generation_config`` keys vLLM turns into default sampling parameters
#: (vllm/config.py ``ModelConfig.get_diff_sampling_param``, 0.10.0: ``available_params``) other than
#: ``max_new_tokens``, which caps every request's output
_SAMPLING_KEYS = frozenset({"repetition_penalty", "temperature", "top_k", "top_p", "min_p"})


class Problem(NamedTuple):
    """One bad engine arg: its field (``engine.args.<key>``) and the full line saying why and what to write."""

    field: str
    text: str


class EngineArgsError(SetupValueError):
    """Every bad engine arg of a setup at once.  ``field`` is the first's (where a YAML error points);
    ``problems`` are all of them, each with its own field (``roofline check`` names each one's line)."""

    def __init__(self, problems: list[Problem]):
        first: dict[str, Problem] = {}
        for p in problems:
            first.setdefault(p.field, p)  # one line per field: the first reason found
        problems = list(first.values())
        if not problems:
            raise ValueError("EngineArgsError needs at least one problem")
        self.problems = tuple(problems)
        if len(problems) == 1:
            message = problems[0].text
        else:
            message = (f"{len(problems)} engine args cannot be predicted as written (fix each, then run again):\n"
                       + "\n".join(f"  - {p.text}" for p in problems))
        super().__init__(message, field=problems[0].field)


def _version(version: Any) -> tuple[int, ...] | None:
    """``"0.9.1"`` -> (0, 9, 1); None (the newest release read) or an unreadable text -> None."""
    if version is None:
        return None
    from pytest_roofline.model import vllm_defaults  # vllm_defaults imports nothing from here

    try:
        return tuple(vllm_defaults.parse_version(str(version)))
    except ValueError:
        return None


def is_off(value: Any) -> bool:
    """Whether a value-carrying engine arg (``speculative_model``, ``speculative_config``,
    ``num_speculative_tokens``...) is off: only None, ``""``, 0, False, the words false/0/no/off/none (any case) and
    an empty mapping (or a JSON text of one, ``'{}'``).  Anything else is on: a model name, a number written as
    text (``"5"``), a JSON mapping written as text (``'{"num_speculative_tokens": 5}'``, the form ``--set`` and
    the command line give) -- so the check cannot take a value for "off" because it is a string."""
    if value is None or value is False:
        return True
    if value is True:
        return False
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, Mapping):
        return len(value) == 0
    if isinstance(value, str):
        text = value.strip()
        if not text or text.lower() in _OFF_WORDS:
            return True
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except ValueError:
                return False
            return isinstance(parsed, Mapping) and len(parsed) == 0
        return False
    return False


def _flag_word(value: Any) -> bool | None:
    """True/False for a value that reads as on/off, None for one that does not (None included)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _ON_WORDS:
            return True
        if word in _OFF_WORDS:
            return False
    return None


def read_flag(value: Any, field: str) -> bool:
    """An on/off engine arg's value, read one way everywhere (the check, the setup, the serving model): true/false,
    1/0, and the words true/yes/on/1 and false/no/off/0/none in any case.  ``"false"`` is off (``bool("false")``
    would be on).  No value (YAML null: ``enforce_eager:`` written for a bare ``--enforce-eager``) and any other
    value raise :class:`SetupValueError` at ``field``: vLLM's bare flag means true, YAML's bare key means null,
    so only an explicit true or false says which was meant."""
    word = _flag_word(value)
    if word is not None:
        return word
    key = field.rsplit(".", 1)[-1]
    if value is None:
        raise SetupValueError(f"{field}: has no value (a bare '{key}:' is YAML null, while vLLM's bare "
                              f"--{key.replace('_', '-')} means true); write {key}: true or {key}: false",
                              field=field)
    raise SetupValueError(f"{field}: {value!r} is neither on nor off; write {key}: true or {key}: false",
                          field=field)


def flag_arg(args: Mapping[str, Any], key: str, default: bool) -> bool:
    """``args[key]`` read by :func:`read_flag`, ``default`` when the key is absent."""
    if key not in args:
        return bool(default)
    return read_flag(args[key], f"engine.args.{key}")


def canonical_key(raw: Any) -> tuple[str, bool]:
    """The argument a written key names, and whether it is the ``no_`` form of an on/off flag:
    ``max-num-seqs`` -> (max_num_seqs, False), ``tp`` -> (tensor_parallel_size, False),
    ``no-enable-prefix-caching`` -> (enable_prefix_caching, True)."""
    key = str(raw).strip().replace("-", "_")
    key = ALIASES.get(key, key)
    if key.startswith("no_") and (key[3:] in FLAG_ARGS or key[3:] in _NO_EFFECT_FLAGS):
        return key[3:], True
    return key, False


def normalise_engine_args(args: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """``args`` with one spelling per argument (:func:`canonical_key`; a ``no_`` flag's value negated), and the
    problems found on the way: the same argument under two spellings, a ``no_`` flag that is neither true nor
    false."""
    out: dict[str, Any] = {}
    first: dict[str, str] = {}
    problems: list[Problem] = []
    for raw, value in args.items():
        key, negated = canonical_key(raw)
        if negated:
            word = _flag_word(value)
            if word is None:
                field = f"engine.args.{raw}"
                problems.append(Problem(f"engine.args.{key}", f"{field}: {value!r} is neither true nor false "
                                        f"(--{str(raw).replace('_', '-')} is vLLM's way to turn {key} off); "
                                        f"write {key}: false"))
                continue
            value = not word
        if key in first:
            problems.append(Problem(f"engine.args.{key}", f"engine.args.{raw} is engine.args.{first[key]} again "
                                    "(vLLM reads both as one argument); keep one of the two"))
            continue
        first[key] = str(raw)
        out[key] = value
    return out, problems


def async_scheduling_default(version: Any, args: Mapping[str, Any]) -> bool:
    """Whether vLLM ``version`` (None: the newest release read) schedules asynchronously when ``async_scheduling``
    is not given: from 0.14.0, unless pipeline_parallel_size > 1 or the executor is not mp/uni/external_launcher
    (vllm/config/vllm.py, 0.14.0)."""
    v = _version(version)
    if v is not None and v < ASYNC_SCHEDULING_DEFAULT_VERSION:
        return False
    try:
        pp = int(args.get("pipeline_parallel_size", 1) or 1)
    except (TypeError, ValueError):
        pp = 1
    return pp == 1 and args.get("distributed_executor_backend") in _ASYNC_EXECUTORS


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
    "num_scheduler_steps": (lambda v: not isinstance(v, bool) and int(v) <= 1,
                            "vLLM 0.6's multi-step scheduling runs N decode steps per schedule() and streams tokens "
                            "N at a time (vllm/worker/multi_step_model_runner.py): the serving model schedules every "
                            "step, so its TTFT, ITL and throughput would be those of single-step scheduling",
                            "serving"),
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
                                 "override_generation_config"})


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


def _problem(key: str, value: Any, args: Mapping[str, Any], *, device: str, scope: Scope,
             version: Any) -> str | None:
    """The line saying why ``key: value`` cannot be predicted, or None when it can."""
    field = f"engine.args.{key}"
    if key in FLAG_ARGS and _flag_word(value) is None:
        try:
            read_flag(value, field)
        except SetupValueError as exc:
            return str(exc)
    if key in MODELLED_ARGS or key in NO_TIMING_EFFECT_ARGS:
        return None
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
                        version: Any = None) -> list[Problem]:
    """Every engine arg of ``args`` (already normalised: :func:`normalise_engine_args`) a model would otherwise
    ignore silently, each as a :class:`Problem`: one it does not know (with the nearest known name), one it does not
    simulate at a value that changes a figure, an on/off arg that is neither.  ``scope="setup"`` (the setup, as it is
    built: every path) those that change the roofline, the KV pool or the closed forms; ``scope="serving"`` (the
    serving model) also those that change only its step timing: ``num_scheduler_steps`` > 1, ``async_scheduling``
    at the value that is not ``version``'s default, and ``enforce_eager: true`` on a GPU (its per-step costs are
    those of CUDA-graph replay; the ``cpu`` pseudo-device's defaults are eager-mode figures, so it is accepted
    there).  ``version``: the vLLM release (None: the newest read)."""
    out: list[Problem] = []
    for key, value in args.items():
        text = _problem(str(key), value, args, device=device, scope=scope, version=version)
        if text is not None:
            out.append(Problem(f"engine.args.{key}", text))
    return out


def check_engine_args(args: Mapping[str, Any], *, device: str = "cuda", scope: Scope = "serving",
                      version: Any = None) -> dict[str, Any]:
    """``args`` normalised (:func:`normalise_engine_args`), after refusing every bad one at once
    (:class:`EngineArgsError`, at the first one's field ``engine.args.<key>``; see :func:`engine_arg_problems`)."""
    normal, problems = normalise_engine_args(args)
    problems += engine_arg_problems(normal, device=device, scope=scope, version=version)
    if problems:
        raise EngineArgsError(problems)
    return normal
