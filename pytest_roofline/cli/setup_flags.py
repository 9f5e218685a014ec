"""The setup flags of ``roofline predict``: ``--tp``, ``--kv-cache-dtype``, ``--set SECTION.FIELD=VALUE`` and the
rest become the same setup sections a prediction file writes (plain data in the YAML's shape), and
:func:`build` resolves them through :func:`~pytest_roofline.model.setup.build_setup`, the one resolution of a
setup. Values are typed by the readers a prediction file goes through: ``engine.args`` by
:func:`pytest_roofline.format.spec.plain_scalar`, units by :mod:`pytest_roofline.units`, hardware and model fields
by the catalogs themselves.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import warnings
from collections.abc import Mapping
from typing import Any, Literal, cast, get_args

from pytest_roofline.errors import (
    HardwareOverrideError,
    ModelConfigError,
    ModelOverrideError,
    RooflineError,
    UnitError,
)
from pytest_roofline.format.spec import WORKLOAD_FIELDS, AmbiguousScalar, plain_scalar
from pytest_roofline.model import dtypes, engine_args, quantization, vllm_defaults
from pytest_roofline.model.setup import RESERVE_NAMES, Setup, build_setup
from pytest_roofline.units import parse_printed_number, to_int, to_si

__all__ = ["SETUP_FLAGS", "add_setup_flags", "build", "flag_fields", "flag_type", "set_item", "setup_tree",
           "whole_at_least_1"]

#: the sections ``--set`` writes into, as a prediction file names them
_SET_SECTIONS = ("hardware", "model", "engine", "workload")
#: engine.<key> that ``--set`` takes besides ``engine.args.<arg>`` and ``engine.reserves.<term>`` (text values)
_ENGINE_TEXT_KEYS = ("version", "model", "entrypoint")
_RESERVES = tuple(RESERVE_NAMES)  # model/setup.py is their one home
#: ``--entrypoint``: serve (``vllm serve``, the OpenAI server) or llm (the offline ``LLM`` class)
Entrypoint = Literal["serve", "llm"]


def flag_type(parse: Any, what: str) -> Any:
    """An argparse ``type=``: ``parse(text)``, a ValueError becoming argparse's one-line usage error."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (ValueError, RooflineError) as exc:
            raise argparse.ArgumentTypeError(f"{str(text)[:60]!r}: {exc}") from None
    convert.__name__ = what  # argparse names the type in "invalid <name> value" messages
    return convert


def whole_at_least_1(text: str) -> int:
    n = parse_printed_number(text)
    if not isinstance(n, int) or n < 1:
        raise ValueError("must be a whole number >= 1")
    return n


def human_whole(key: str) -> Any:
    """The parser of the flag of ``engine.args.<key>``: a whole number >= 1, and where vLLM's flag takes its
    human-readable form (``engine_args.HUMAN_READABLE_INT_ARGS``: ``8K`` = 8,192, ``2k`` = 2,000) that too, read by
    ``engine_args.whole_arg_value``, the one reader the setup and the launch use, so ``--max-model-len 8K`` is the
    ``max_model_len: 8K`` of a file."""
    def parse(text: str) -> int:
        value = engine_args.whole_arg_value(key, text)
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise ValueError("must be a whole number >= 1")
            return value
        try:
            return whole_at_least_1(text)
        except ValueError:
            if key in engine_args.HUMAN_READABLE_INT_ARGS:
                raise ValueError("must be a whole number >= 1, or vLLM's human-readable form: 8K = 8,192, "
                                 "2k = 2,000 (lowercase decimal, uppercase binary, no fraction with K/M/G/T)") from None
            raise
    return parse


def _share_of_memory(text: str) -> float:
    x = float(to_si(text, "ratio"))  # 0.9 or 90%
    if not (math.isfinite(x) and 0 < x <= 1):  # vLLM refuses it outside (0, 1] too (setup.py cites where)
        raise ValueError("must be a share of the device memory, 0 < x <= 1 (e.g. 0.9 or 90%)")
    return x


def _release(text: str) -> str:
    vllm_defaults.parse_version(text)  # a release such as 0.8.5 or v0.33.0; a date or a word is refused
    return text.strip()


def _kv_cache_dtype(text: str) -> str:
    known = dtypes.names("kv")  # the one dtype table; read at call time (what the KV model accepts)
    if dtypes.dtype_key(text) not in known:
        raise ValueError(f"unknown KV-cache dtype; use one of {', '.join(known)}")
    return text.strip()


def _entrypoint(text: str) -> Entrypoint:
    e = text.strip().lower()
    if e not in get_args(Entrypoint):
        raise ValueError("use serve (vllm serve, the OpenAI server) or llm (the offline LLM class)")
    return cast(Entrypoint, e)


def set_item(text: str) -> tuple[tuple[str, ...], str]:
    """``hardware.memory_bytes=80GiB`` -> ``(("hardware", "memory_bytes"), "80GiB")``; the section checked."""
    path_text, eq, value = str(text).partition("=")
    path = tuple(p.strip() for p in path_text.split("."))
    if not eq or not all(path) or len(path) < 2:
        raise ValueError("write SECTION.FIELD=VALUE, e.g. hardware.hbm_bytes_per_s=3.0e12, model.num_layers=40 "
                         "or engine.args.max_num_seqs=128")
    section = path[0]
    if section not in _SET_SECTIONS:
        raise ValueError(f"unknown section {section!r}; --set takes {', '.join(s + '.<field>' for s in _SET_SECTIONS)}")
    if section == "engine":
        _engine_path(path)
    elif section == "workload":
        _workload_path(path)
    elif section == "hardware" and len(path) > 2 and path[1] != "peak_flop_per_s":
        raise ValueError(f"hardware.{path[1]} has no parts; only hardware.peak_flop_per_s.<dtype> does")
    elif section == "model" and len(path) > 2 and (path[1] != "quantization" or len(path) > 3):
        raise ValueError(f"model.{'.'.join(path[1:])}: a model field has no parts; only model.quantization.<key> "
                         "does (method, bits, group_size, zero_point, ...)")
    return path, value.strip()


def _engine_path(path: tuple[str, ...]) -> None:
    key = path[1]
    if key in ("args", "env") and len(path) == 3:  # env: the engine's environment (VLLM_USE_V1=0: the V0 engine)
        return
    if key == "reserves" and len(path) == 3 and path[2] in _RESERVES:
        return
    if key in (*_ENGINE_TEXT_KEYS, "cpu_kvcache_space") and len(path) == 2:
        return
    raise ValueError(f"unknown engine field {'.'.join(path[1:])!r}; known: engine.args.<vLLM argument>, "
                     "engine.env.<VARIABLE>, "
                     f"{', '.join('engine.reserves.' + r for r in _RESERVES)}, "
                     f"{', '.join('engine.' + k for k in (*_ENGINE_TEXT_KEYS, 'cpu_kvcache_space'))}")


def _workload_path(path: tuple[str, ...]) -> None:
    known = [k for k, f in WORKLOAD_FIELDS.items() if f.kind in ("int", "number", "length")]
    if len(path) != 2 or path[1] not in known:
        raise ValueError(f"unknown workload field {'.'.join(path[1:])!r}; known: "
                         + ", ".join(f"workload.{k}" for k in known))


def _arg_value(text: str) -> Any:
    """An ``engine.args`` (or ``model.quantization``) value typed by the YAML reader's own rule
    (:func:`pytest_roofline.format.spec.plain_scalar`): ``--set engine.args.swap_space=4GiB`` passes the string
    ``4GiB`` to vLLM exactly as ``swap_space: 4GiB`` in the file does."""
    try:
        return plain_scalar(text.strip())
    except AmbiguousScalar as exc:
        raise UnitError(f"{exc}: write true or false") from None


def _typed(path: tuple[str, ...], value: str) -> Any:
    """The value of one ``--set`` as the section reads it (the unit parser, ``pytest_roofline/units.py``)."""
    section = path[0]
    if section == "model" and len(path) == 3:  # model.quantization.bits=4: typed as the YAML reader would
        return _arg_value(value)
    if section in ("hardware", "model"):
        return value  # the catalog converts it with the field's own unit (hardware.py, architecture.py)
    if section == "workload":
            return to_int(value) if WORKLOAD_FIELDS[path[1]].kind in ("int", "length") else to_si(value, "count")
    if path[1] in ("reserves", "cpu_kvcache_space"):
        return to_si(value, "bytes")
    if path[1] == "args":
        return _arg_value(value)
    return value


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any, given: dict[tuple[str, ...], str],
         flag: str) -> None:
    """Write ``value`` at ``path``; the same field given twice with different values is a usage error."""
    if path in given and _get(tree, path) != value:
        raise ValueError(f"{'.'.join(path)} is given twice ({given[path]} and {flag}); give it once")
    given[path] = flag
    node = tree
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def _get(tree: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = tree
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


#: flag -> (its dest in the namespace, where it goes in a prediction file's setup)
SETUP_FLAGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("--dtype", "dtype", ("model", "dtype")),
    ("--tp", "tensor_parallel_size", ("engine", "args", "tensor_parallel_size")),
    ("--pp", "pipeline_parallel_size", ("engine", "args", "pipeline_parallel_size")),
    ("--kv-cache-dtype", "kv_cache_dtype", ("engine", "args", "kv_cache_dtype")),
    ("--quantization", "quantization", ("engine", "args", "quantization")),
    ("--engine-version", "engine_version", ("engine", "version")),
    ("--entrypoint", "entrypoint", ("engine", "entrypoint")),
    ("--gpu-memory-utilization", "gpu_memory_utilization", ("engine", "args", "gpu_memory_utilization")),
    ("--max-model-len", "max_model_len", ("engine", "args", "max_model_len")),
    ("--max-num-seqs", "max_num_seqs", ("engine", "args", "max_num_seqs")),
    ("--max-num-batched-tokens", "max_num_batched_tokens", ("engine", "args", "max_num_batched_tokens")),
    ("--block-size", "block_size", ("engine", "args", "block_size")),
)


class SetupTree(dict[str, Any]):
    """The setup sections (a plain mapping in the YAML's shape) and, in :attr:`flags`, the flag that gave each
    field the command line set (``("engine", "args", "quantization") -> "--quantization"``): an error names the
    flag the user typed, not the file field it became."""

    flags: dict[tuple[str, ...], str]


def setup_tree(args: argparse.Namespace, base: Mapping[str, Any] | None = None,
                workload: Mapping[str, Any] | None = None) -> SetupTree:
    """The setup sections the flags describe, over ``base`` (a prediction file's own sections): plain data in
    the shape a YAML file has, for :func:`build_setup`."""
    # the file's typed sections (EngineSection, WorkloadSection) as the plain mappings the flags are merged into
    tree = SetupTree({k: copy.deepcopy(dict(v) if isinstance(v, Mapping) else v) for k, v in (base or {}).items()})
    tree.setdefault("engine", {}).setdefault("name", "vllm")
    given: dict[tuple[str, ...], str] = {}
    for flag, dest, path in SETUP_FLAGS:
        value = getattr(args, dest, None)
        if value is not None:
            _put(tree, path, value, given, flag)
    for key, value in (workload or {}).items():
        if value is not None:
            _put(tree, ("workload", key), value, given, f"--{key.replace('_', '-')}")
    for path, text in getattr(args, "set", None) or []:
        try:
            value = _typed(path, text)
        except RooflineError as exc:
            raise UnitError(f"--set {'.'.join(path)}={text[:60]}: {exc}") from None
        written = path
        path, value = _arg_spelling(path, value)
        _put(tree, path, value, given, f"--set {'.'.join(written)}")
    tree.flags = given
    return tree


def flag_fields(args: argparse.Namespace) -> dict[str, str]:
    """Each field of a setup the flags set, as a prediction file names it (``engine.args.scheduling_policy``), with
    the flag that set it (``--set engine.args.scheduling_policy``, ``--pp``), as :func:`setup_tree` names them: the
    fields whose value is the flag's over a prediction file's own (its warning at the file's line no longer applies,
    ``format.spec.replaced_by_flags``; a refusal names the flag, ``format.spec.locate_settings``). The values are
    not read: a bad one is :func:`setup_tree`'s error."""
    out = {".".join(path): flag for flag, dest, path in SETUP_FLAGS if getattr(args, dest, None) is not None}
    for path, _text in getattr(args, "set", None) or []:
        spelt = (*path[:2], engine_args.canonical_key(path[2])[0]) if path[:2] == ("engine", "args") and len(
            path) == 3 else path
        out[".".join(spelt)] = f"--set {'.'.join(path)}"
    return out


def _arg_spelling(path: tuple[str, ...], value: Any) -> tuple[tuple[str, ...], Any]:
    """``engine.args.<key>`` under the one spelling a prediction file's reader gives it
    (:func:`pytest_roofline.model.engine_args.canonical_key`): ``max-num-seqs`` is ``max_num_seqs``, ``tp``
    ``tensor_parallel_size``, ``no-enable-prefix-caching=true`` ``enable_prefix_caching`` false (a ``no-`` value that
    is neither true nor false stays as written, for the setup's check to refuse)."""
    if path[:2] != ("engine", "args") or len(path) != 3:
        return path, value
    key, negated = engine_args.canonical_key(path[2])
    if negated:
        try:
            value = not engine_args.read_flag(value, f"engine.args.{path[2]}")
        except RooflineError:
            key = path[2].replace("-", "_")
    return (*path[:2], key), value


def _merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mapping by mapping (``peak_flop_per_s.bf16`` keeps the file's fp8 override)."""
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        out[key] = _merged(below, value) if isinstance(below, Mapping) and isinstance(value, Mapping) else value
    return out


def build(hardware_ref: Any, model_ref: Any, tree: Mapping[str, Any], *, hardware_overrides: Mapping[str, Any]
           | None = None, model_overrides: Mapping[str, Any] | None = None) -> Setup:
    """:func:`build_setup` over the sections (the one resolution of a setup, as for a YAML file); an error in a
    ``--set`` field says so, and a warning (an engine version the project does not know) goes to stderr."""
    hw_over = _merged(hardware_overrides or {}, tree.get("hardware", {}))
    model_over = _quantization_method(tree, _merged(model_overrides or {}, tree.get("model", {})))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            setup = build_setup(hardware_ref=hardware_ref, hardware_overrides=hw_over, model_ref=model_ref,
                                model_overrides=model_over, engine=tree.get("engine"), workload=tree.get("workload"))
        except (HardwareOverrideError, ModelOverrideError) as exc:
            raise type(exc)(f"--set: {exc}") from None
        except ModelConfigError as exc:
            raise ModelConfigError(_quantization_fix(str(exc), tree, model_ref)) from None
    for w in caught:
        print(f"roofline: warning: {w.message}", file=sys.stderr)
    return setup



_QUANT = ("engine", "args", "quantization")


def _vllm_quantization(tree: Mapping[str, Any]) -> str | None:
    """``engine.args.quantization`` of the sections (``--quantization``, ``--set engine.args.quantization``, or a
    prediction file's), None where unset or ``none``."""
    name = _get(tree, _QUANT)
    return None if name in (None, "", "none") else str(name)


def _quantization_method(tree: Mapping[str, Any], model_over: Mapping[str, Any]) -> dict[str, Any]:
    """``model_over`` with the scheme's method taken from ``--quantization`` where the command line sets
    ``model.quantization.<key>`` (bits, group_size, ...) without one: ``--quantization awq --set
    model.quantization.bits=4`` is ``model: {quantization: {method: awq, bits: 4}}``. vLLM's ``--quantization`` name
    (``awq_marlin`` too) is a method ``model.quantization`` reads (quantization.VLLM_QUANTIZATION_NAMES); a method
    set as well must name the same scheme."""
    out = dict(model_over)
    given, q, name = _get(tree, ("model", "quantization")), out.get("quantization"), _vllm_quantization(tree)
    if not (isinstance(given, Mapping) and isinstance(q, Mapping) and name) or "quant_method" in q:
        return out
    method = q.get("method")
    if method in (None, ""):
        out["quantization"] = {**q, "method": name}
        return out
    known = quantization.VLLM_QUANTIZATION_NAMES
    mine, theirs = known.get(str(method).strip().lower()), known.get(name.strip().lower())
    if mine is not None and theirs is not None and mine is not theirs:
        flag = getattr(tree, "flags", {}).get(_QUANT, "engine.args.quantization")
        raise ModelConfigError(f"{flag} {name} and model.quantization.method {method} name different schemes; give "
                               "one (vLLM refuses a --quantization the checkpoint's quantization_config does not "
                               "match)")
    return out


def _quantization_fix(message: str, tree: Mapping[str, Any], model_ref: Any) -> str:
    """A quantization refusal of :func:`build_setup` (``model/quantization.py``), its fix in the flags the user
    typed: ``--quantization awq`` on a checkpoint without a quantization_config needs the scheme's bits and group
    size, which ``--set model.quantization.<key>`` gives (``--quantization`` then supplies the method); a
    ``--set model.quantization.<key>`` without a method needs ``--quantization``. Any other message is kept."""
    name = _vllm_quantization(tree)
    flags = getattr(tree, "flags", {})
    fix = "--set model.quantization.bits=4 --set model.quantization.group_size=128"
    unconfigured = "needs the checkpoint's quantization_config" in message
    if name and message.startswith("engine.args.quantization") and unconfigured:
        flag = flags.get(_QUANT)
        if flag is None:  # a prediction file's engine.args.quantization: its fix is the file's, or these flags
            return f"{message}; or on the command line: {fix}"
        given = f"{flag}={name}" if flag.startswith("--set ") else f"{flag} {name}"
        return (f"{given}: {model_ref} has no quantization_config, and the {name} scheme needs its bits and group "
                f"size: give them with {fix} ({given} supplies the method), or --model the config.json of a checkpoint "
                f"quantized with {name}")
    if message.startswith("model.quantization.method: ''") and any(p[:2] == ("model", "quantization") for p in flags):
        return ("--set model.quantization.<key> describes a scheme without its method: add --quantization awq (or "
                "gptq, fp8, ...), or --set model.quantization.method=awq")
    return message


def add_setup_flags(pr: argparse.ArgumentParser) -> None:
    """The flags that describe a setup; each is the prediction-file field ``SETUP_FLAGS`` names."""
    g = pr.add_argument_group("setup (each flag is the prediction-file field named; they apply to --simulate too)")
    whole = flag_type(whole_at_least_1, "N")
    g.add_argument("--tp", "--tensor-parallel-size", dest="tensor_parallel_size", type=whole, metavar="N",
                   help="tensor-parallel GPUs (engine.args.tensor_parallel_size)")
    g.add_argument("--pp", "--pipeline-parallel-size", dest="pipeline_parallel_size", type=whole, metavar="N",
                   help="pipeline-parallel stages (engine.args.pipeline_parallel_size)")
    g.add_argument("--kv-cache-dtype", type=flag_type(_kv_cache_dtype, "dtype"), metavar="DTYPE",
                   help="KV-cache dtype as vLLM names it: auto (the model's dtype), fp8, fp8_e4m3, fp8_e5m2, ... "
                        "(engine.args.kv_cache_dtype)")
    g.add_argument("--quantization", metavar="METHOD",
                   help="the checkpoint's quantization as vLLM names it: fp8, awq, gptq, ... "
                        "(engine.args.quantization)")
    g.add_argument("--engine-version", type=flag_type(_release, "version"), metavar="X.Y.Z",
                   help="the vLLM release whose defaults apply (engine.version; default: the newest known)")
    g.add_argument("--entrypoint", type=flag_type(_entrypoint, "entrypoint"), metavar="serve|llm",
                   help="vllm serve or the offline LLM class: their defaults differ (engine.entrypoint)")
    g.add_argument("--gpu-memory-utilization", type=flag_type(_share_of_memory, "share"), metavar="X",
                   help="share of each GPU's memory vLLM budgets, 0 < X <= 1 (engine.args.gpu_memory_utilization)")
    g.add_argument("--max-model-len", type=flag_type(human_whole("max_model_len"), "N"), metavar="N",
                   help="engine.args.max_model_len (tokens; 8K = 8,192 as vLLM reads it)")
    g.add_argument("--max-num-seqs", type=whole, metavar="N", help="engine.args.max_num_seqs")
    g.add_argument("--max-num-batched-tokens", type=flag_type(human_whole("max_num_batched_tokens"), "N"), metavar="N",
                   help="engine.args.max_num_batched_tokens (2k = 2,000, 2K = 2,048 as vLLM reads it)")
    g.add_argument("--block-size", type=whole, metavar="N", help="tokens per KV block (engine.args.block_size)")
    g.add_argument("--set", action="append", type=flag_type(set_item, "SECTION.FIELD=VALUE"),
                   metavar="SECTION.FIELD=VALUE",
                   help="any other field, as a prediction file writes it, values with units: "
                        "hardware.hbm_bytes_per_s=3.0e12, hardware.memory_bytes=80GiB, "
                        "hardware.peak_flop_per_s.bf16=989TFLOP/s, model.num_layers=40, engine.args.X=Y, "
                        "engine.reserves.activation=1GiB, workload.kv_context=4096; repeatable")
