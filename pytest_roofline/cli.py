"""The ``roofline`` command.

``roofline predict``      the analytical decode table for a chip, a model, a context and batch sizes;
                          ``--simulate [FILE.yaml]``: the serving model's predicted sweep (``--results`` beside it)
``roofline quantities``   every quantity a prediction can name, with its dimension and at-parameters
``roofline hardware``     the hardware catalog
``roofline schema``       the JSON Schema of the prediction format (for a YAML language server)
``roofline check FILE``   validate prediction files without running pytest
``roofline report``       render a standalone HTML scorecard from a predictions file and a results file
``roofline history URI``  render the trend page of a history store (each prediction night by night)
``roofline compare A B``  two runs side by side (run ids in a store, run directories, results.json files)
``roofline tiny-model``   make the project's tiny CPU test model (offline, deterministic)
``roofline calibrate``    fit the serving model's constants to measured points, write a calibration file
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_roofline.errors import HardwareOverrideError, ModelOverrideError, NotMeasured, RooflineError, UnitError
from pytest_roofline.format.limits import DEFAULT_LIMITS, Limits, parse_limit
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.model import analytical as an
from pytest_roofline.model import dtypes, hardware, vllm_defaults
from pytest_roofline.model.setup import (
    RooflineLandmarks,
    Setup,
    SetupError,
    build_setup,
    kv_accounting,
    reported_kv,
)
from pytest_roofline.quantities import registry as quantities
from pytest_roofline.quantities.measurement import client_value
from pytest_roofline.units import GB, GIB, MIB, parse_printed_number, to_int, to_si

__all__ = ["main", "predict_rows", "kv_pool"]


# --------------------------------------------------------------------------------------------------------------
# setup flags: --tp, --kv-cache-dtype, --set hardware.X=... -> the same build_setup inputs a YAML file gives
# --------------------------------------------------------------------------------------------------------------
#: the sections ``--set`` writes into, as a prediction file names them
_SET_SECTIONS = ("hardware", "model", "engine", "workload")
#: engine.<key> that ``--set`` takes besides ``engine.args.<arg>`` and ``engine.reserves.<term>`` (text values);
#: ``entrypoint`` is serve (``vllm serve``) or llm (the offline ``LLM`` class)
_ENGINE_TEXT_KEYS = ("version", "model", "entrypoint")
_RESERVES = ("activation", "non_torch", "cuda_graphs")


def _flag_type(parse: Any, what: str) -> Any:
    """An argparse ``type=``: ``parse(text)``, a ValueError becoming argparse's one-line usage error."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (ValueError, RooflineError) as exc:
            raise argparse.ArgumentTypeError(f"{str(text)[:60]!r}: {exc}") from None
    convert.__name__ = what  # argparse names the type in "invalid <name> value" messages
    return convert


def _whole_at_least_1(text: str) -> int:
    n = parse_printed_number(text)
    if not isinstance(n, int) or n < 1:
        raise ValueError("must be a whole number >= 1")
    return n


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


def _entrypoint(text: str) -> str:
    e = text.strip().lower()
    if e not in ("serve", "llm"):
        raise ValueError("use serve (vllm serve, the OpenAI server) or llm (the offline LLM class)")
    return e


def _set_item(text: str) -> tuple[tuple[str, ...], str]:
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
    from pytest_roofline.format.spec import WORKLOAD_FIELDS

    known = [k for k, f in WORKLOAD_FIELDS.items() if f.kind in ("int", "number", "length")]
    if len(path) != 2 or path[1] not in known:
        raise ValueError(f"unknown workload field {'.'.join(path[1:])!r}; known: "
                         + ", ".join(f"workload.{k}" for k in known))


def _arg_value(text: str) -> Any:
    """An ``engine.args`` (or ``model.quantization``) value typed by the YAML reader's own rule
    (:func:`pytest_roofline.format.spec.plain_scalar`): ``--set engine.args.swap_space=4GiB`` passes the string
    ``4GiB`` to vLLM exactly as ``swap_space: 4GiB`` in the file does."""
    from pytest_roofline.format.spec import AmbiguousScalar, plain_scalar

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
        from pytest_roofline.format.spec import WORKLOAD_FIELDS

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
_SETUP_FLAGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
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


def _setup_tree(args: argparse.Namespace, base: Mapping[str, Any] | None = None,
                workload: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The setup sections the flags describe, over ``base`` (a prediction file's own sections): plain data in
    the shape a YAML file has, for :func:`build_setup`."""
    tree: dict[str, Any] = copy.deepcopy(dict(base or {}))
    tree.setdefault("engine", {}).setdefault("name", "vllm")
    given: dict[tuple[str, ...], str] = {}
    for flag, dest, path in _SETUP_FLAGS:
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
        _put(tree, path, value, given, f"--set {'.'.join(path)}")
    return tree


def _merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mapping by mapping (``peak_flop_per_s.bf16`` keeps the file's fp8 override)."""
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        out[key] = _merged(below, value) if isinstance(below, Mapping) and isinstance(value, Mapping) else value
    return out


def _build(hardware_ref: Any, model_ref: Any, tree: Mapping[str, Any], *, hardware_overrides: Mapping[str, Any]
           | None = None, model_overrides: Mapping[str, Any] | None = None) -> Setup:
    """:func:`build_setup` over the sections (the one resolution of a setup, as for a YAML file); an error in a
    ``--set`` field says so, and a warning (an engine version the project does not know) goes to stderr."""
    hw_over = _merged(hardware_overrides or {}, tree.get("hardware", {}))
    model_over = _merged(model_overrides or {}, tree.get("model", {}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            setup = build_setup(hardware_ref=hardware_ref, hardware_overrides=hw_over, model_ref=model_ref,
                                model_overrides=model_over, engine=tree.get("engine"), workload=tree.get("workload"))
        except (HardwareOverrideError, ModelOverrideError) as exc:
            raise type(exc)(f"--set: {exc}") from None
    for w in caught:
        print(f"roofline: warning: {w.message}", file=sys.stderr)
    return setup


def predict_rows(*, hardware_id: str | None = None, model: str | None = None, context_tokens: float | None = None,
                 batches: Sequence[int], engine_version: str | None = None, dtype: str = "bf16",
                 setup: Setup | None = None) -> dict:
    """The analytical table as plain data: one row per batch plus ridge, asymptote and knee, and the KV pool
    (:func:`kv_pool`).  ``setup``: an already resolved :class:`Setup` (what the CLI's flags built); without it
    one is built from ``hardware_id``, ``model``, ``context_tokens``, ``engine_version`` and ``dtype``."""
    if setup is None:
        if not (hardware_id and model):
            raise ValueError("predict_rows needs a setup, or hardware_id and model")
        setup = build_setup(hardware_ref=hardware_id, model_ref=model, model_overrides={"dtype": dtype},
                            engine={"name": "vllm", "version": engine_version} if engine_version else {},
                            workload={"kv_context": 1024 if context_tokens is None else context_tokens})
    # one GPU's share under tensor parallelism (its weights, FLOPs and KV heads at its own bandwidth and peak; on
    # one GPU the whole model): the decode steps come from Setup.decode_step, as the quantities take them
    lm = RooflineLandmarks(setup)  # shown under PP too, beside the decode table's refusal
    rows = []
    decode_error = None
    try:
        setup.require_single_stage("the decode table")
    except SetupError as exc:
        decode_error, batches = str(exc), []
    for b in batches:
        s = setup.decode_step(b)
        rows.append({
            "batch": b, "intensity_flop_per_byte": s.intensity_flop_per_byte,
            "weight_only_intensity_flop_per_byte": s.weight_only_intensity_flop_per_byte,
            "t_mem_ms": s.t_mem_s * 1e3, "t_comp_ms": s.t_comp_s * 1e3, "t_step_ms": s.t_step_s * 1e3,
            "bound": s.bound, "throughput_tok_per_s": s.throughput_tok_per_s,
            "per_request_tok_per_s": s.per_request_tok_per_s, "kv_total_gib": s.kv_total_bytes / GIB,
            "t_allreduce_ms": s.t_allreduce_s * 1e3,
        })
    knee = lm.knee
    return {
        "hardware": setup.hardware.id, "model": setup.model.name, "context_tokens": setup.kv_context_tokens,
        "weight_bytes": setup.weight_bytes, "kv_bytes_per_token": setup.kv_bytes_per_token,
        "kv_bytes_per_token_per_gpu": setup.kv_bytes_per_token_per_gpu,
        "ridge_flop_per_byte": an.ridge_flop_per_byte(setup.peak_flop_per_s, setup.hbm_bytes_per_s),
        "intensity_asymptote_flop_per_byte": lm.intensity_asymptote_flop_per_byte,
        "half_saturation_batch": lm.half_saturation_batch,
        "throughput_asymptote_tok_per_s": lm.throughput_asymptote_tok_per_s,
        "batch1_ceiling_tok_per_s": lm.batch1_ceiling_tok_per_s,
        "knee_batch": knee.batch, "knee_reason": knee.reason, "decode_error": decode_error,
        **kv_pool(setup),
        "rows": rows,
    }


#: the engine settings the KV pool and the scheduler depend on, shown with where each value came from:
#: shown name -> (Setup attribute, key of Setup.sources)
_ENGINE_SETTINGS = {
    "engine": ("engine_kind", "engine"), "entrypoint": ("engine_entrypoint", "usage"),
    **{name: (name, name) for name in ("gpu_memory_utilization", "block_size", "max_num_seqs",
                                       "max_num_batched_tokens", "enable_chunked_prefill", "enable_prefix_caching")},
}

#: vLLM's max_model_len when none is given: the model config's position limit (max_position_embeddings first
#: among the keys it reads; vllm/config.py ``_get_and_verify_max_len``, vLLM v0.6.3, github.com/vllm-project/vllm)
_MAX_MODEL_LEN_DEFAULT = ("the model's max_position_embeddings, vLLM's default max_model_len (vllm/config.py "
                          "_get_and_verify_max_len)")


def _max_model_len(setup: Setup) -> tuple[int | None, str]:
    if setup.max_model_len:
        return int(setup.max_model_len), "given (engine.args.max_model_len)"
    mpe = getattr(setup.model, "max_position_embeddings", None)
    if mpe:
        return int(mpe), _MAX_MODEL_LEN_DEFAULT
    return None, "not known: the model has no max_position_embeddings; give --max-model-len"


def kv_pool(setup: Setup) -> dict[str, Any]:
    """The KV pool vLLM allocates for ``setup`` (``model.setup.kv_accounting``, the accounting every quantity
    uses) as plain data with units in the names, and the engine settings behind it with their sources.

    When the pool cannot be computed (a chip without a memory figure), the numbers are None and
    ``kv_pool_error`` says why."""
    mml, mml_source = _max_model_len(setup)
    scheme = getattr(setup, "quantization", None)  # model.quantization.QuantScheme, or None: unquantized
    settings = {}
    for name, (attr, key) in _ENGINE_SETTINGS.items():
        value = getattr(setup, attr, None)
        if value is None and key not in setup.sources:
            continue  # not resolved for this setup
        given = name in (setup.engine_args or {})
        source = "given (engine.args." + name + ")" if given else setup.sources.get(key, "the project's default")
        settings[name] = {"value": value, "source": source}
    out: dict[str, Any] = {
        "engine": setup.engine_name, "engine_version": setup.engine_version,
        "entrypoint": getattr(setup, "engine_entrypoint", None) or "serve",
        "tensor_parallel_size": int(setup.tensor_parallel_size),
        "pipeline_parallel_size": int(getattr(setup, "pipeline_parallel_size", 1) or 1),
        "weight_dtype": setup.weight_dtype, "kv_cache_dtype": setup.kv_dtype,
        "quantization": scheme.label() if scheme is not None else None,
        "num_gpus": int(setup.num_gpus), "weight_bytes_per_gpu": float(setup.weight_bytes_per_gpu),
        "block_size_tokens": int(setup.block_size),
        "max_model_len_tokens": mml, "max_model_len_source": mml_source,
        "engine_settings": settings,
    }
    pool: dict[str, Any] = dict.fromkeys(
        ("num_gpu_blocks", "kv_cache_tokens", "kv_bytes_per_block", "kv_budget_bytes",
         "activation_bytes", "non_torch_bytes", "cuda_graph_bytes", "available_kv_bytes", "available_kv_gib",
         "max_concurrency_at_max_model_len"))
    try:
        acc = kv_accounting(setup)
    except (SetupError, ValueError) as exc:
        return {**out, **pool, "kv_pool_error": str(exc)}
    reported = reported_kv(setup, acc, mml)
    pool.update(
        num_gpu_blocks=acc.num_blocks, kv_cache_tokens=reported.kv_cache_tokens,
        kv_bytes_per_block=acc.bytes_per_block,
        kv_budget_bytes=acc.budget_bytes,
        activation_bytes=acc.activation_bytes, non_torch_bytes=acc.non_torch_bytes,
        cuda_graph_bytes=acc.cuda_graph_bytes, available_kv_bytes=acc.available_kv_bytes,
        available_kv_gib=acc.available_kv_gib,
        max_concurrency_at_max_model_len=reported.max_concurrency if mml else None,
    )
    return {**out, **pool, "kv_pool_error": None}


def _kv_pool_lines(data: Mapping[str, Any]) -> list[str]:
    """The KV pool and the engine settings as text, under the decode table."""
    tp, pp = data["tensor_parallel_size"], data["pipeline_parallel_size"]
    where = (f"{data['engine']} {data['engine_version'] or '(newest known release)'} {data['entrypoint']} · "
             f"TP {tp} · PP {pp} · weights {data['weight_dtype']}"
             + (f" ({data['quantization']})" if data["quantization"] else "") + f" · KV {data['kv_cache_dtype']}")
    if data["kv_pool_error"]:
        lines = [f"KV pool ({where}): not computed: {data['kv_pool_error']}"]
    else:
        budget = (f"of the {data['kv_budget_bytes'] / GIB:,.2f} GiB budget" if data["kv_budget_bytes"] is not None
                  else "(an explicit pool)")
        blocks, bs, tokens = data["num_gpu_blocks"], data["block_size_tokens"], data["kv_cache_tokens"]
        size = (f"{blocks:,} GPU blocks × {bs} tokens = {tokens:,} KV tokens" if blocks * bs == tokens else
                f"{blocks:,} GPU blocks of {bs} tokens; vLLM reports {tokens:,} KV tokens (sliding-window layers)")
        lines = [f"KV pool ({where}): {size} · {data['kv_bytes_per_block'] / MIB:,.2f} MiB per block · "
                 f"available KV {data['available_kv_gib']:,.2f} GiB {budget} · weights per GPU "
                 f"{data['weight_bytes_per_gpu'] / GIB:,.2f} GiB"]
        mml = data["max_model_len_tokens"]
        conc = data["max_concurrency_at_max_model_len"]
        lines.append(f"max concurrency at max_model_len {mml:,} tokens: {conc:.2f}x ({data['max_model_len_source']})"
                     if mml else f"max concurrency: {data['max_model_len_source']}")
    lines.append("engine settings:")
    for name, s in data["engine_settings"].items():
        lines.append(f"  {name:<24} {s['value']!s:>8}  {s['source']}")
    return lines


#: predicted field -> (client section key, statistic) of a recorded point (results-schema.md)
_MEASURED_FIELDS = {
    "output_throughput_tok_per_s": ("output_throughput_tok_s", None),
    "per_request_output_tok_per_s": ("per_request_output_tok_s", "mean"),
    "ttft_p50_ms": ("ttft_ms", "p50"), "ttft_p99_ms": ("ttft_ms", "p99"),
    "tpot_p50_ms": ("tpot_ms", "p50"), "tpot_p99_ms": ("tpot_ms", "p99"),
    "itl_p99_ms": ("itl_ms", "p99"),
}


def _measured_point(doc: Mapping[str, Any] | None, concurrency: int | None, rate: float | None) -> dict[str, float]:
    """The recorded values of the closed-loop point at ``concurrency`` (or the open-loop one at ``rate``)."""
    if not doc:
        return {}
    try:
        pt = RecordedMeasurement(doc).point(concurrency=concurrency, rate=rate)
    except NotMeasured:
        return {}
    out = {}
    for name, (key, stat) in _MEASURED_FIELDS.items():
        v = client_value(pt, key, *([stat] if stat else []))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = float(v)
    return out


def _simulate_rows(args: argparse.Namespace) -> tuple[str, list[dict]]:
    """The serving model's predicted sweep: from a prediction file (its setup, constants and sweep, as the
    scorer simulates it) or from the flags."""
    from pytest_roofline.model import serving as sv

    if isinstance(args.simulate, str):
        from pytest_roofline.format.spec import load_spec
        from pytest_roofline.scoring import serving_sweep_for

        if args.hardware or args.model:  # the file names its chip and model; a field of either is a --set
            raise ValueError("--simulate FILE.yaml takes the file's hardware and model; change a field of them with "
                             "--set hardware.FIELD=VALUE / --set model.FIELD=VALUE, or drop the file")
        spec = load_spec(args.simulate)
        tree = _setup_tree(args, base={"engine": spec.engine, "workload": spec.workload},
                           workload={"input_len": args.input_len, "output_len": args.output_len})
        setup = _build(spec.hardware, spec.model, tree, hardware_overrides=spec.hardware_overrides,
                       model_overrides=spec.model_overrides)
        sweep = serving_sweep_for(spec, None, setup)
        keys = [p.key for p in sweep.points if p.key[0] != "batch1"]
        if args.concurrency:
            keys = [("closed", float(c)) for c in _int_list(args.concurrency)]
        preds = [sweep.predict(k)[1] for k in keys]
        title = f"{spec.title} · {sweep.source}"
    else:
        if not (args.hardware and args.model):
            raise ValueError("--simulate needs a prediction file, or --hardware and --model")
        tree = _setup_tree(args, workload={"input_len": args.input_len, "output_len": args.output_len})
        setup = _build(args.hardware, args.model, tree)
        eng = sv.EngineConfig.from_setup(setup)
        constants = sv.default_constants(setup)
        if args.rate:
            workloads = [sv.workload_for_point(setup, rate_req_per_s=float(r)) for r in args.rate.split(",")]
        else:
            workloads = [sv.workload_for_point(setup, concurrency=c)
                         for c in _int_list(args.concurrency or "1,2,4,8,16,32,64,128")]
        preds = sv.simulate_sweep(setup, workloads, engine=eng, constants=constants)
        title = "default constants"
    eng = sv.EngineConfig.from_setup(setup)
    head = (f"{setup.hardware.id} · {setup.model.name} · {setup.engine_name} {setup.engine_version or ''} · "
            f"in {setup.input_len} / out {setup.output_len} tokens · max_num_seqs {eng.max_num_seqs}, "
            f"max_num_batched_tokens {eng.max_num_batched_tokens}, chunked prefill "
            f"{'on' if eng.chunked_prefill else 'off'}, {eng.num_gpu_blocks:,} KV blocks · {title}")
    doc = None
    if args.results:
        from pytest_roofline.measure.results import load_results

        doc = load_results(args.results)
    rows = []
    for p in preds:
        row = {("concurrency" if p.concurrency is not None and p.rate_req_per_s is None else "rate"):
               (p.concurrency if p.rate_req_per_s is None else p.rate_req_per_s), **p.to_dict()}
        if p.rate_req_per_s is not None:
            row["rate"] = p.rate_req_per_s
        meas = _measured_point(doc, p.concurrency if p.rate_req_per_s is None else None, p.rate_req_per_s)
        if doc is not None:
            row["measured"] = meas
            row["error"] = {k: (row[k] / v - 1.0) if v else None for k, v in meas.items()}
        rows.append(row)
    return head, rows


def _int_list(text: str, what: str = "--concurrency") -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``; a ValueError naming the flag and the bad item otherwise."""
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise ValueError(f"{what}: {item[:40]!r} is not a whole number >= 1 (write e.g. 1,2,4)")
        out.append(int(item))
    if not out:
        raise ValueError(f"{what}: no values given (write e.g. 1,2,4)")
    return out


def _batch_list(text: str) -> list[int]:
    """argparse type of ``--batch``: an error message argparse prints on one line, with exit status 2."""
    try:
        return _int_list(text, "--batch")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--batch: ")) from None


def _cmd_predict_simulate(args: argparse.Namespace) -> int:
    head, rows = _simulate_rows(args)
    if args.json:
        for row in rows:  # JSON lines: one object per sweep point
            print(json.dumps(row))
        return 0
    print(head)
    cols = [("output_throughput_tok_per_s", "agg tok/s", ".1f"), ("per_request_output_tok_per_s", "tok/s/req", ".1f"),
            ("ttft_p50_ms", "TTFT p50", ".0f"), ("ttft_p99_ms", "TTFT p99", ".0f"), ("tpot_p50_ms", "TPOT p50", ".2f"),
            ("tpot_p99_ms", "TPOT p99", ".2f"), ("itl_p99_ms", "ITL p99", ".1f")]
    key = "rate" if rows and "rate" in rows[0] else "concurrency"
    print(f"{'C' if key == 'concurrency' else 'req/s':>6} " + " ".join(f"{c[1]:>18}" for c in cols)
          + f" {'run':>6} {'KV %':>5} {'preempt':>7} {'queue ms':>8}  dominant term")
    errs: dict[str, list[float]] = {}
    for r in rows:
        cells = []
        for name, _, fmt in cols:
            pred = format(r[name], fmt) if math.isfinite(r[name]) else "—"
            meas = r.get("measured", {}).get(name)
            if meas is not None:
                err = r["error"][name]
                errs.setdefault(name, []).append(abs(err))
                cells.append(f"{pred}|{format(meas, fmt)} {err:+.0%}".rjust(18))
            else:
                cells.append(f"{pred:>18}")
        top = max(r["time_shares"], key=r["time_shares"].get) if r["time_shares"] else "—"
        point = f"{r['rate']:g}/s" if "rate" in r else f"{r['concurrency']:g}"  # a file may sweep both
        print(f"{point:>6} " + " ".join(cells) + f" {r['mean_running_batch']:>6.1f} {100 * r['max_kv_usage']:>5.1f} "
              f"{r['preemptions']:>7} {r['mean_queue_ms']:>8.1f}  {top} {r['time_shares'].get(top, 0):.0%}")
    if errs:
        print("cells: predicted|measured error · mean |error|: " + ", ".join(
            f"{n} {sum(v) / len(v):.1%} (n={len(v)})" for n, v in errs.items()))
    return 0


def _cmd_predict(args: argparse.Namespace) -> int:
    if args.simulate is not None:
        return _cmd_predict_simulate(args)
    if not (args.hardware and args.model):
        raise ValueError("predict needs --hardware and --model (or --simulate FILE.yaml)")
    batches = args.batch or [1, 2, 4, 8, 16, 32, 64, 128, 256]
    tree = _setup_tree(args, workload={"kv_context": args.context})
    tree.setdefault("workload", {}).setdefault("kv_context", 1024)  # the table's default KV context
    data = predict_rows(setup=_build(args.hardware, args.model, tree), batches=batches)
    if args.json:
        meta = {k: v for k, v in data.items() if k != "rows"}
        for row in data["rows"]:  # JSON lines: one object per batch, each carrying the ridge, asymptote and knee
            print(json.dumps({**row, **meta}))
        if not data["rows"]:  # no decode table (PP > 1): the KV pool and the rest still, in one object
            print(json.dumps(meta))
        return 0
    per_gpu = ""
    if data["tensor_parallel_size"] * data["pipeline_parallel_size"] > 1:
        per_gpu = (f" · per GPU: weights {data['weight_bytes_per_gpu'] / 1e9:,.2f} GB, KV "
                   f"{data['kv_bytes_per_token_per_gpu']:,.0f} B/token")
    print(f"{data['hardware']} · {data['model']} · KV context {data['context_tokens']:,.0f} tokens · "
          f"weights {data['weight_bytes'] / 1e9:,.2f} GB · KV {data['kv_bytes_per_token']:,.0f} B/token{per_gpu}")
    if data["decode_error"]:
        print(f"decode table: {data['decode_error']}")
    tp = data["tensor_parallel_size"] > 1  # the all-reduce column: t_step = max(t_mem, t_comp) + all-reduce
    if data["rows"]:
        print(f"{'B':>5} {'t_mem ms':>9} {'t_comp ms':>9} {'t_step ms':>9} {'FLOP/byte':>9} {'tok/s':>11} "
              f"{'tok/s/req':>9} {'KV GiB':>8} " + (f"{'AR ms':>7} " if tp else "") + " bound")
    for r in data["rows"]:
        print(f"{r['batch']:>5} {r['t_mem_ms']:>9.2f} {r['t_comp_ms']:>9.2f} {r['t_step_ms']:>9.2f} "
              f"{r['intensity_flop_per_byte']:>9.2f} {r['throughput_tok_per_s']:>11,.1f} "
              f"{r['per_request_tok_per_s']:>9.1f} {r['kv_total_gib']:>8.2f} "
              + (f"{r['t_allreduce_ms']:>7.3f} " if tp else "") + f" {r['bound']}")
    for line in _kv_pool_lines(data):
        print(line)
    print(f"ridge {data['ridge_flop_per_byte']:.1f} FLOP/byte · intensity asymptote "
          f"{data['intensity_asymptote_flop_per_byte']:.1f} FLOP/byte · half-saturation B "
          f"{data['half_saturation_batch']:.1f} · throughput asymptote {data['throughput_asymptote_tok_per_s']:,.0f} "
          f"tok/s · batch-1 ceiling {data['batch1_ceiling_tok_per_s']:.1f} tok/s")
    print(f"knee: {data['knee_batch']:.1f}" if data["knee_batch"] is not None else f"knee: {data['knee_reason']}")
    return 0


def _cmd_quantities(args: argparse.Namespace) -> int:
    for q in sorted(quantities.QUANTITIES.values(), key=lambda q: q.name):
        modes = "+".join(q.modes)
        at = ", ".join(q.at) or "—"
        print(f"{q.name:<36} {q.dimension:<12} {modes:<14} at: {at}\n    {q.description}")
    return 0


def _cmd_hardware(args: argparse.Namespace) -> int:
    print(f"{'id':<16} {'memory':>12} {'GB/s':>7} {'bf16 TF':>8} {'fp8 TF':>8} {'ridge':>7}  name")
    for hid, h in hardware.CATALOG.items():
        if h.hbm_bytes_per_s:
            fp8 = h.peak_flop_per_s.get("fp8")
            fp8_text = f"{fp8 / 1e12:,.1f}" if fp8 else "—"  # no FP8 tensor cores (A100)
            mem_text = f"{h.memory_bytes / GIB:>8.2f} GiB" if h.memory_bytes else "—"
            print(f"{hid:<16} {mem_text:>12} {h.hbm_bytes_per_s / GB:>7,.0f} "
                  f"{h.peak_flop_per_s['bf16'] / 1e12:>8,.1f} {fp8_text:>8} "
                  f"{h.ridge_flop_per_byte():>7.1f}  {h.name}")
        else:
            print(f"{hid:<16} {'—':>12} {'—':>7} {'—':>8} {'—':>8} {'—':>7}  {h.name}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from pytest_roofline.format.spec import json_schema

    text = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _write(path: str | Path, text: str) -> None:
    """Write an output file; a missing folder or no permission is one line (``OSError`` caught by main)."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(21, "is a directory; give a file name", str(p))
    if not p.parent.is_dir():
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(p))
    p.write_text(text, encoding="utf-8")


def _limits(args: argparse.Namespace) -> Limits:
    changes = dict(parse_limit(text) for text in (getattr(args, "limit", None) or []))
    return DEFAULT_LIMITS.with_changes(**changes)


def _cmd_check(args: argparse.Namespace) -> int:
    from pytest_roofline.format.spec import SpecError, load_spec

    bad = 0
    limits = _limits(args)
    for f in args.files:
        try:
            spec = load_spec(f, limits=limits)
        except SpecError as exc:
            print(exc)
            bad += 1
            continue
        except OSError as exc:
            print(f"{f}: cannot read: {exc.strerror or exc}")
            bad += 1
            continue
        errors = [p.error for p in spec.predictions if p.error is not None]
        for e in errors:
            print(e)
        bad += bool(errors)
        print(f"{f}: {len(spec.predictions) - len(errors)} predictions ok, {len(errors)} with errors")
    return 1 if bad else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pytest_roofline.report.scorecard import render_from_files

    out = Path(args.output)
    if not out.parent.is_dir():  # before the work: a typo in -o must not cost a render
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(out))
    if args.predictions and Path(args.predictions).is_dir():  # results may be a folder (vllm bench serve files)
        raise IsADirectoryError(21, "is a directory; give the prediction file (e.g. DIR/x.yaml)", args.predictions)
    html = render_from_files(Path(args.predictions), Path(args.results) if args.results else None,
                             allow_mismatch=args.allow_mismatch)
    _write(out, html)
    print(f"wrote {args.output}")
    return 0


def _drift_threshold(text: str) -> str:
    from pytest_roofline.history import DriftPolicy

    return DriftPolicy(text).threshold_text  # a bad threshold: argparse's one-line usage error


def _drift_baseline(text: str) -> str:
    from pytest_roofline.history import parse_baseline

    parse_baseline(text)
    return text.strip()


def _cmd_history(args: argparse.Namespace) -> int:
    """``roofline history URI``: the trend page of a history store (its index only), written to ``-o``."""
    from pytest_roofline.history import DEFAULT_BASELINE, DEFAULT_DRIFT, open_store
    from pytest_roofline.report.trend import DEFAULT_OUTPUT, write_trend

    out = Path(args.output or DEFAULT_OUTPUT)
    if not out.parent.is_dir():  # before opening the store: a typo in -o must not cost a render
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(out))
    store = open_store(args.uri, create=False)
    try:
        path, n = write_trend(store, out, setup=args.setup or (), last=args.last,
                              drift=args.drift or DEFAULT_DRIFT, baseline=args.baseline or DEFAULT_BASELINE)
    finally:
        store.close()
    print(f"wrote {path} ({n} run{'s' if n != 1 else ''})")
    return 0


def _compare_side(ref: str, store_uri: str | None, predictions: str | None) -> Any:
    """One side of ``roofline compare``: a stored run's directory, a results.json (scored against its prediction
    file, the way --replay would), or a run id (or its unique prefix) in the store."""
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.history import build_records, open_store, read_run_dir, spec_setup_key
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.report.scorecard import score_spec

    path = Path(ref)
    if path.is_dir():
        return read_run_dir(path).summary
    if path.is_file():
        data = load_results(path)
        named = predictions or str((data.get("setup") or {}).get("predictions_file") or "")
        candidates = [Path(named), Path("predictions") / Path(named).name] if named else []
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            raise FileNotFoundError(2, "its prediction file is not here; name it with --predictions FILE.yaml",
                                    named or str(path))
        spec = load_spec(found)
        verdicts = score_spec(spec, data, source=f"results file {path}")
        setup = data.get("setup") or {}
        rec = build_records(verdicts, setups={spec.path: spec_setup_key(spec, data)}, results=[data],
                            started_at=str(data.get("created_at") or ""), mode="replay",
                            commit=setup.get("commit"), rootdir=Path.cwd())[0]
        return dataclasses.replace(rec.summary, run_id=str(path))
    uri = store_uri or os.environ.get("ROOFLINE_HISTORY")
    if not uri:
        raise FileNotFoundError(2, "not a run directory nor a results file; for a run id give --store URI "
                                   "(or set ROOFLINE_HISTORY)", ref)
    store = open_store(uri, create=False)
    try:
        hits = [r for r in store.runs() if r.run_id == ref] or [r for r in store.runs() if r.run_id.startswith(ref)]
    finally:
        store.close()
    if len(hits) != 1:
        raise ValueError(f"{ref!r}: {'no run' if not hits else f'{len(hits)} runs'} with that id in the store"
                         + ("" if not hits else " (give more of the id)"))
    return hits[0]


def _cmd_compare(args: argparse.Namespace) -> int:
    """``roofline compare A B``: two runs side by side (run ids in --store, run directories or results.json)."""
    from pytest_roofline.history import comparison_json, render_comparison

    a = _compare_side(args.a, args.store, args.predictions)
    b = _compare_side(args.b, args.store, args.predictions)
    if args.json:
        print(json.dumps(comparison_json(a, b), indent=2, ensure_ascii=False))
    else:
        width = min(shutil.get_terminal_size((120, 24)).columns, 120)
        print("\n".join(render_comparison(a, b, width=width)))
    return 0


def _cmd_tiny_model(args: argparse.Namespace) -> int:
    from pytest_roofline.measure import tinymodel

    dest = Path(args.dest).expanduser() if args.dest else tinymodel.default_model_dir()
    if not tinymodel.is_tiny_model(dest):  # a real write probe first: a bad destination is one line, not a child's
        try:  # traceback minutes later
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rmdir(tempfile.mkdtemp(prefix=f".{dest.name}.probe.", dir=dest.parent))
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write the model there ({exc.strerror or exc})", str(dest)) from None
    try:
        print(tinymodel.make_tiny_model(dest))
    except RuntimeError as exc:
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        print(f"roofline: making the tiny model in {dest} failed: {lines[-1] if lines else exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit the serving model's constants to measured points; print values ± 1σ and residuals; write the file."""
    from pytest_roofline.errors import CalibrationError
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.measure.calibpoints import measured_points, parse_point_selector, select_points
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.model import calibration, serving

    docs = [(f, load_results(f)) for f in args.results]

    def run_of(d: Mapping[str, Any]) -> tuple[Any, ...]:
        st = d.get("setup") or {}
        return ((st.get("hardware") or {}).get("declared"), (st.get("model") or {}).get("name"),
                (st.get("engine") or {}).get("version"), json.dumps(st.get("workload") or {}, sort_keys=True))

    differ = {str(f): run_of(d) for f, d in docs if run_of(d) != run_of(docs[0][1])}
    if differ:
        raise CalibrationError(f"the results files are not of one setup (hardware, model, engine version, "
                               f"workload): {docs[0][0]} has {run_of(docs[0][1])}, "
                               + "; ".join(f"{f} has {r}" for f, r in differ.items()))
    pred_file = args.predictions or (docs[0][1].get("setup") or {}).get("predictions_file")
    if not pred_file:
        raise CalibrationError("the results file does not name its predictions file: pass --predictions FILE.yaml")
    spec = load_spec(pred_file)
    setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                        model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                        workload=spec.workload)
    points = [p for _, d in docs for p in measured_points(d)]
    if args.points:
        points = select_points(points, parse_point_selector(args.points))
    points, screened = calibration.screen_points(points, setup, contamination=spec.thresholds.contamination)
    for note in screened:
        print(f"note: {note}")
    base = serving.default_constants(setup)
    fields = [f.strip() for f in args.fit.split(",") if f.strip()] if args.fit else None
    print(f"calibrating {setup.hardware.id} / {setup.model.name} / {setup.engine_name} "
          f"{setup.engine_version or ''} on {', '.join(p.label for p in points)} "
          f"({', '.join(fields or type(base).FIELDS_FITTABLE)})", flush=True)
    seed = int((spec.workload or {}).get("seed", 0))  # with each point's id: the load generator's arrivals
    result = calibration.fit(points, base, predict=calibration.serving_predictor(setup, seed=seed), fields=fields)
    print(result.describe())
    cal = calibration.calibration_from_fit(result, setup, sources=[str(f) for f, _ in docs],
                                           notes=args.notes or "")
    if args.output:
        calibration.dump_calibration(cal, args.output)
        print(f"wrote {args.output}")
    return 0


def _positive_number(text: str) -> float:
    x = float(to_si(text, "count"))
    if not (math.isfinite(x) and x > 0):
        raise ValueError("must be a positive number")
    return x


def _add_setup_flags(pr: argparse.ArgumentParser) -> None:
    """The flags that describe a setup; each is the prediction-file field ``_SETUP_FLAGS`` names."""
    g = pr.add_argument_group("setup (each flag is the prediction-file field named; they apply to --simulate too)")
    whole = _flag_type(_whole_at_least_1, "N")
    g.add_argument("--tp", "--tensor-parallel-size", dest="tensor_parallel_size", type=whole, metavar="N",
                   help="tensor-parallel GPUs (engine.args.tensor_parallel_size)")
    g.add_argument("--pp", "--pipeline-parallel-size", dest="pipeline_parallel_size", type=whole, metavar="N",
                   help="pipeline-parallel stages (engine.args.pipeline_parallel_size)")
    g.add_argument("--kv-cache-dtype", type=_flag_type(_kv_cache_dtype, "dtype"), metavar="DTYPE",
                   help="KV-cache dtype as vLLM names it: auto (the model's dtype), fp8, fp8_e4m3, fp8_e5m2, ... "
                        "(engine.args.kv_cache_dtype)")
    g.add_argument("--quantization", metavar="METHOD",
                   help="the checkpoint's quantization as vLLM names it: fp8, awq, gptq, ... "
                        "(engine.args.quantization)")
    g.add_argument("--engine-version", type=_flag_type(_release, "version"), metavar="X.Y.Z",
                   help="the vLLM release whose defaults apply (engine.version; default: the newest known)")
    g.add_argument("--entrypoint", type=_flag_type(_entrypoint, "entrypoint"), metavar="serve|llm",
                   help="vllm serve or the offline LLM class: their defaults differ (engine.entrypoint)")
    g.add_argument("--gpu-memory-utilization", type=_flag_type(_share_of_memory, "share"), metavar="X",
                   help="share of each GPU's memory vLLM budgets, 0 < X <= 1 (engine.args.gpu_memory_utilization)")
    g.add_argument("--max-model-len", type=whole, metavar="N", help="engine.args.max_model_len (tokens)")
    g.add_argument("--max-num-seqs", type=whole, metavar="N", help="engine.args.max_num_seqs")
    g.add_argument("--max-num-batched-tokens", type=whole, metavar="N", help="engine.args.max_num_batched_tokens")
    g.add_argument("--block-size", type=whole, metavar="N", help="tokens per KV block (engine.args.block_size)")
    g.add_argument("--set", action="append", type=_flag_type(_set_item, "SECTION.FIELD=VALUE"),
                   metavar="SECTION.FIELD=VALUE",
                   help="any other field, as a prediction file writes it, values with units: "
                        "hardware.hbm_bytes_per_s=3.0e12, hardware.memory_bytes=80GiB, "
                        "hardware.peak_flop_per_s.bf16=989TFLOP/s, model.num_layers=40, engine.args.X=Y, "
                        "engine.reserves.activation=1GiB, workload.kv_context=4096; repeatable")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="roofline", description="pytest-roofline: performance predictions as tests")
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("predict", help="print the analytical decode table")
    pr.add_argument("--hardware", "--gpu", help="catalog id, e.g. a100-sxm4-80gb (see `roofline hardware`)")
    pr.add_argument("--model", help="preset (qwen3-8b) or path to a HF config.json")
    pr.add_argument("--context", type=_flag_type(_positive_number, "tokens"),
                    help="KV context per sequence in tokens (default 1024)")
    pr.add_argument("--batch", type=_batch_list, help="comma-separated batch sizes (default 1,2,4,...,256)")
    pr.add_argument("--dtype", help="weight dtype: bf16, fp8, int4 (default: the model's, bf16)")
    _add_setup_flags(pr)
    pr.add_argument("--json", action="store_true",
                    help="JSON lines: one object per batch, each carrying the ridge, asymptote, knee and the KV "
                         "pool (num_gpu_blocks, kv_cache_tokens, available_kv_bytes, weight_bytes_per_gpu, ...)")
    pr.add_argument("--simulate", nargs="?", const=True, metavar="FILE.yaml",
                    help="the serving model's predicted sweep: for a prediction file's setup and sweep, or (without "
                         "a file) for --hardware/--model/--input-len/--output-len/--concurrency or --rate")
    pr.add_argument("--results", help="with --simulate: a results file; prints the measured value and the error "
                                      "beside each predicted one")
    pr.add_argument("--input-len", type=_flag_type(_whole_at_least_1, "tokens"),
                    help="with --simulate: prompt tokens (default 1024, or the file's)")
    pr.add_argument("--output-len", type=_flag_type(_whole_at_least_1, "tokens"),
                    help="with --simulate: output tokens (default 1024, or the file's)")
    pr.add_argument("--concurrency", help="with --simulate: comma-separated closed-loop concurrencies")
    pr.add_argument("--rate", help="with --simulate: comma-separated open-loop request rates (req/s)")
    pr.set_defaults(fn=_cmd_predict)
    sub.add_parser("quantities", help="list every quantity").set_defaults(fn=_cmd_quantities)
    sub.add_parser("hardware", help="list the hardware catalog").set_defaults(fn=_cmd_hardware)
    sc = sub.add_parser("schema", help="print the JSON Schema of the prediction format")
    sc.add_argument("-o", "--output")
    sc.set_defaults(fn=_cmd_schema)
    ck = sub.add_parser("check", help="validate prediction files")
    ck.add_argument("files", nargs="+")
    ck.add_argument("--limit", action="append", metavar="NAME=N",
                    help="raise a loader limit (max_yaml_nodes, max_tests_per_prediction, max_tests_per_file, "
                         "max_value_length); repeatable")
    ck.set_defaults(fn=_cmd_check)
    rp = sub.add_parser("report", help="render a standalone HTML scorecard from files")
    rp.add_argument("predictions")
    rp.add_argument("results", nargs="?", help="a results.json, vllm bench serve --save-result files (a file or a "
                    "folder), GuideLLM benchmarks JSON or an AIPerf profile export")
    rp.add_argument("--allow-mismatch", "--roofline-allow-mismatch", dest="allow_mismatch", action="store_true",
                    help="render results that do not belong to the predictions (other GPU, model, engine version, "
                         "lengths, sweep points) instead of refusing them; the scorecard says so")
    rp.add_argument("-o", "--output", default="scorecard.html")
    rp.set_defaults(fn=_cmd_report)
    hi = sub.add_parser("history", help="render the trend page of a history store (--roofline-history)")
    hi.add_argument("uri", help="the store: a directory, file://..., sqlite:///x.db or postgresql+psycopg://...")
    hi.add_argument("-o", "--output", help="the page (default: roofline-history.html here)")
    hi.add_argument("--setup", "--setup-filter", dest="setup", action="append", metavar="TEXT",
                    help="only setups whose 'hardware · model · vllm version' contains TEXT (case-insensitive); "
                         "repeatable")
    hi.add_argument("--last", type=_flag_type(_whole_at_least_1, "N"), metavar="N",
                    help="only the latest N runs of each hardware × model")
    hi.add_argument("--drift", type=_flag_type(_drift_threshold, "threshold"), metavar="THRESHOLD",
                    help="the drift columns' threshold, as --roofline-drift takes it and with its default (a "
                         "prediction's own drift: wins)")
    hi.add_argument("--baseline", type=_flag_type(_drift_baseline, "baseline"), metavar="previous|median:N",
                    help="what drift compares with, as --roofline-drift-baseline (and its default)")
    hi.set_defaults(fn=_cmd_history)
    co = sub.add_parser("compare", help="print two runs side by side (ids in a history store, stored run "
                                        "directories or results.json files)")
    co.add_argument("a", help="the earlier run: a run id (or a unique prefix), a run directory or a results.json")
    co.add_argument("b", help="the later run, the same kinds")
    co.add_argument("--store", metavar="URI", help="the history store run ids are looked up in (default: "
                                                    "$ROOFLINE_HISTORY)")
    co.add_argument("--predictions", metavar="FILE.yaml",
                    help="for a results.json side: its prediction file (default: the one the results name)")
    co.add_argument("--json", action="store_true", help="the rows as JSON")
    co.set_defaults(fn=_cmd_compare)
    tm = sub.add_parser("tiny-model", help="make the tiny CPU test model")
    tm.add_argument("--dest")
    tm.set_defaults(fn=_cmd_tiny_model)
    cb = sub.add_parser("calibrate", help="fit the serving model's constants to measured points")
    cb.add_argument("results", nargs="+", help="results files (results.json) of the same setup")
    cb.add_argument("--points", help="which points to fit on, e.g. C=1,C=64 or R=4,R=32 (default: all)")
    cb.add_argument("--fit", help="comma-separated constants to fit (default: ServingConstants.FIELDS_FITTABLE)")
    cb.add_argument("--predictions", help="the prediction file of the run (default: the one the results name)")
    cb.add_argument("--notes", help="a note stored in the calibration file")
    cb.add_argument("-o", "--output", help="write the calibration file (YAML) here")
    cb.set_defaults(fn=_cmd_calibrate)
    args = p.parse_args(argv)
    if args.cmd == "predict" and args.simulate is None and not (args.hardware and args.model):
        pr.error("the following arguments are required: --hardware, --model (or --simulate [FILE.yaml])")
    try:
        return args.fn(args)
    except BrokenPipeError:  # `roofline quantities | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (RooflineError, SetupError, ValueError, KeyError) as exc:
        print(f"roofline: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing input, an unwritable or missing output folder: the path and the reason
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"roofline: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
