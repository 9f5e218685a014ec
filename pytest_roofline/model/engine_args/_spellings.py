"""The spellings of engine args, read as vLLM's own command line reads them.

``max-num-seqs`` is ``max_num_seqs`` (argparse's dest), the short aliases ``tp``/``pp``/``dp``/``q``/``O`` are their
long arguments (:data:`ALIASES`), and ``no_enable_prefix_caching: true`` is ``enable_prefix_caching: false``
(argparse's ``BooleanOptionalAction``, ``--no-enable-prefix-caching``): :func:`canonical_key` names the argument a
written key means, :func:`normalise_engine_args` gives a mapping with one spelling per argument.  Whether an
argument exists at a given release (``dp`` only from 0.8.3) is the refusals' concern (``_refusals.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_roofline.model.engine_args._flags import FLAG_ARGS, _flag_word
from pytest_roofline.model.engine_args._problems import Problem

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


def executor_backend(value: Any) -> Any:
    """``distributed_executor_backend`` as vLLM is to receive it: a name without the spaces around it (YAML keeps
    them in ``" mp "``), anything else as written.  The one normalisation the check (``_executor_problem``), the
    setup (:func:`normalise_engine_args`) and the launch (measure/engine/_config.py ``EngineConfig``) read it by,
    so a value the check accepts is the value launched."""
    return value.strip() if isinstance(value, str) else value


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
        out[key] = executor_backend(value) if key == "distributed_executor_backend" else value
    return out, problems

