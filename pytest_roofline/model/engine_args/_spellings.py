"""The spellings of engine args, read as vLLM's own command line reads them.

``max-num-seqs`` is ``max_num_seqs`` (argparse's dest), the short aliases ``tp``/``pp``/``dp``/``q``/``O`` are their
long arguments (:data:`ALIASES`), and ``no_enable_prefix_caching: true`` is ``enable_prefix_caching: false``
(argparse's ``BooleanOptionalAction``, ``--no-enable-prefix-caching``): :func:`canonical_key` names the argument a
written key means, :func:`normalise_engine_args` gives a mapping with one spelling per argument.  Whether an
argument exists at a given release (``dp`` only from 0.8.3) is the refusals' concern (``_refusals.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from pytest_roofline.model.engine_args._flags import FLAG_ARGS, _flag_word
from pytest_roofline.model.engine_args._problems import Problem
from pytest_roofline.units import GB, GIB, KB, KIB, MB, MIB, TB, TIB, UnitError, parse_value

#: vLLM's short command-line aliases (vllm/engine/arg_utils.py ``add_cli_args``, read in the 0.8.0 ... 0.10.2
#: wheels: ``-tp``, ``-pp``, ``-q``, ``-O`` in all; ``-dp`` from 0.8.3, refused before it: ``_releases.py``)
ALIASES: Mapping[str, str] = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size",
                              "dp": "data_parallel_size", "q": "quantization", "O": "compilation_config"}


def canonical_key(raw: Any) -> tuple[str, bool]:
    """The argument a written key names, and whether it is the ``no_`` form of an on/off flag:
    ``max-num-seqs`` -> (max_num_seqs, False), ``tp`` -> (tensor_parallel_size, False),
    ``no-enable-prefix-caching`` -> (enable_prefix_caching, True)."""
    key = str(raw).strip().replace("-", "_")
    key = ALIASES.get(key, key)
    if key.startswith("no_") and key[3:] in FLAG_ARGS:
        return key[3:], True
    return key, False


#: ``engine.args.distributed_executor_backend`` values the plugin launches. vLLM's
#: ``--distributed-executor-backend`` takes ``ray``, ``mp``, ``uni`` and ``external_launcher``
#: (vllm/config/parallel.py ``DistributedExecutorBackend`` at v0.11.0 and v0.32.0); ``uni`` is one worker in the
#: engine process and ``external_launcher`` is torchrun's, neither a server's multi-worker mode, so only these two.
#: Refused at the field by the check (``_refusals.py``: ``engine_arg_problems``) and again by the engine's config.
ExecutorBackend = Literal["mp", "ray"]
EXECUTOR_BACKENDS: tuple[ExecutorBackend, ...] = get_args(ExecutorBackend)


def executor_backend(value: Any) -> Any:
    """``distributed_executor_backend`` as vLLM is to receive it: a backend the plugin launches without the spaces
    around it (YAML keeps them in ``" mp "``), anything else exactly as written, so that its refusal quotes what
    the user wrote (``' MP '``, not ``'MP'``).  The one normalisation the check (``_executor_problem``), the setup
    (:func:`normalise_engine_args`) and the launch (measure/engine/_config.py ``EngineConfig``) read it by, so a
    value the check accepts is the value launched."""
    if isinstance(value, str) and value.strip() in EXECUTOR_BACKENDS:
        return value.strip()
    return value


#: the integer args vLLM's command line reads with ``human_readable_int`` (vllm/engine/arg_utils.py and
#: vllm/utils/argparse_utils.py at v0.32.0: ``1k`` = 1,000, ``1K`` = 1,024, ``25.6k`` = 25,600; ``max_model_len``
#: by its ``_or_auto`` form) that the models read; ``kv_cache_memory_bytes`` also takes the project's byte units
#: (``10 GiB``, ``10 GB``)
HUMAN_READABLE_INT_ARGS: frozenset[str] = frozenset({"max_num_batched_tokens", "max_model_len",
                                                     "kv_cache_memory_bytes"})

_SUFFIX = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": KB, "m": MB, "g": GB, "t": TB}
_BINARY = {"K": KIB, "M": MIB, "G": GIB, "T": TIB}


def whole_arg_value(key: str, value: Any) -> Any:
    """An integer arg's value as vLLM is to receive it: text in vLLM's human-readable form (``2k`` = 2,000,
    ``2K`` = 2,048: lowercase suffixes decimal, uppercase binary, no fraction with a binary one) or, for
    ``kv_cache_memory_bytes``, a byte quantity in the project's units (``10 GiB`` = 10,737,418,240) as the integer
    it means; anything else unchanged (its check refuses it, quoting it as written).  Read by the setup
    (:func:`normalise_engine_args`) and the launch (measure/sweep.py) alike, so the number modelled is the number
    launched."""
    if key not in HUMAN_READABLE_INT_ARGS or not isinstance(value, str):
        return value
    text = value.strip()
    m = _SUFFIX.fullmatch(text)
    if m is not None:
        number, suffix = m.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix] if number.isdigit() else value
    if key == "kv_cache_memory_bytes":
        try:
            si = parse_value(text, "bytes").si
        except UnitError:
            return value
        return int(si) if float(si).is_integer() else value
    return value


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
        out[key] = (executor_backend(value) if key == "distributed_executor_backend"
                    else whole_arg_value(key, value))
    return out, problems

