"""``roofline predict``: the analytical decode table of a setup (:func:`predict_rows`), the KV pool vLLM allocates
for it (:func:`kv_pool`), and with ``--simulate`` the serving model's predicted sweep (``--results``: the measured
values beside it). The setup comes from the setup flags (:mod:`pytest_roofline.cli.setup_flags`); the figures from
the model layer (``Setup.decode_step``, ``Setup.roofline_landmarks``, ``kv_accounting``, the serving model).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_roofline import redact
from pytest_roofline.cli import jsonout
from pytest_roofline.cli.setup_flags import build, flag_fields, setup_tree
from pytest_roofline.errors import NotMeasured, RooflineError
from pytest_roofline.format.spec import (
    Prediction,
    Spec,
    load_spec,
    locate_settings,
    prediction_sections,
    replaced_by_flags,
)
from pytest_roofline.measure.results import RecordedMeasurement, match
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.model import analytical as an
from pytest_roofline.model import bands as bands_mod
from pytest_roofline.model import hardware as hw_catalog
from pytest_roofline.model import serving as sv
from pytest_roofline.model import vllm_defaults
from pytest_roofline.model.band_reasons import (  # re-exported: their home is the model layer
    ENGINE_FIGURES,
    NO_BAND_OTHER,
    NO_BAND_REASON,
    TP_POOL_CAVEAT_TEXT,
    not_reported,
)
from pytest_roofline.model.engine_args import EngineArgsError
from pytest_roofline.model.setup import (
    RooflineLandmarks,
    Setup,
    SetupError,
    build_setup,
    kv_accounting,
    max_model_len_problem,
    reported_kv,
    request_length_problem,
)
from pytest_roofline.quantities.analysis import Thresholds, cache_hit_reason
from pytest_roofline.quantities.measurement import client_value
from pytest_roofline.scoring import relative_error, serving_sweep_for
from pytest_roofline.units import GIB, MIB, format_value, signed_percent, to_si

__all__ = ["DecodeRow", "EngineSetting", "KVPool", "NO_BAND_REASON", "PredictTable", "batch_list", "cannot_run",
           "cmd_predict", "concurrency_list", "kv_pool", "length_error", "max_model_len_warning", "memory_fit_error",
           "positive_number", "predict_rows", "rate_list"]


@dataclass(frozen=True)
class DecodeRow:
    """One batch of the decode table (``Setup.decode_step``; times in ms, the KV read in GiB)."""

    batch: int
    intensity_flop_per_byte: float
    weight_only_intensity_flop_per_byte: float
    t_mem_ms: float
    t_comp_ms: float
    t_step_ms: float
    bound: str
    throughput_tok_per_s: float
    per_request_tok_per_s: float
    kv_total_gib: float
    t_allreduce_ms: float
    #: why vLLM cannot run this batch at this context (more sequences than max_num_seqs, a context past
    #: max_model_len, more KV than the pool holds), None when it can: the row is the roofline's arithmetic only
    cannot_run: str | None = None


@dataclass(frozen=True)
class EngineSetting:
    """An engine setting the KV pool and the scheduler depend on, and where its value came from."""

    value: Any
    source: str


@dataclass(frozen=True)
class KVPool:
    """The KV pool vLLM allocates for a setup, with units in the names, and the engine settings behind it. When
    the pool cannot be computed (a chip without a memory figure) its numbers are None and ``kv_pool_error`` says
    why."""

    engine: str
    engine_version: str | None
    #: the release whose defaults the setup takes: ``engine_version``, else the newest release the project knows
    engine_defaults_version: str
    entrypoint: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    weight_dtype: str
    kv_cache_dtype: str
    quantization: str | None
    num_gpus: int
    weight_bytes_per_gpu: float
    block_size_tokens: int
    max_model_len_tokens: int | None
    max_model_len_source: str
    engine_settings: dict[str, EngineSetting]
    num_gpu_blocks: int | None = None
    kv_cache_tokens: int | None = None
    kv_bytes_per_block: float | None = None
    kv_budget_bytes: float | None = None
    activation_bytes: float | None = None
    non_torch_bytes: float | None = None
    cuda_graph_bytes: float | None = None
    available_kv_bytes: float | None = None
    available_kv_gib: float | None = None
    max_concurrency_at_max_model_len: float | None = None
    kv_pool_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, in the field order ``--json`` prints."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PredictTable:
    """The analytical table of a setup: one row per batch, the roofline's landmarks and knee, and the KV pool."""

    hardware: str
    model: str
    context_tokens: float
    weight_bytes: float
    kv_bytes_per_token: float
    kv_bytes_per_token_per_gpu: float
    ridge_flop_per_byte: float
    intensity_asymptote_flop_per_byte: float
    half_saturation_batch: float
    throughput_asymptote_tok_per_s: float
    batch1_ceiling_tok_per_s: float
    knee_batch: float | None
    knee_reason: str
    decode_error: str | None
    kv: KVPool
    rows: list[DecodeRow]
    #: sequences of the table's KV context the pool holds at once (its usable blocks ÷ the blocks one sequence
    #: fills, :func:`_pool_sequences`), None when the pool is not computed
    kv_pool_max_sequences: int | None = None
    #: why vLLM cannot run the half-saturation batch (:func:`_beyond`), None when it can
    half_saturation_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as ``--json`` prints it: the table's fields, the KV pool's beside them (hardware, model and
        the pool: the fields :func:`setup_description` gives ``--simulate`` too), then the rows."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("kv", "rows")}
        return {**own, **self.kv.to_dict(), "rows": [dataclasses.asdict(r) for r in self.rows]}


def predict_rows(*, hardware_id: str | None = None, model: str | None = None, context_tokens: float | None = None,
                 batches: Sequence[int], engine_version: str | None = None, dtype: str = "bf16",
                 setup: Setup | None = None) -> PredictTable:
    """The analytical table: one row per batch plus ridge, asymptote and knee, and the KV pool (:func:`kv_pool`);
    ``.to_dict()`` is the plain data ``--json`` prints.  ``setup``: an already resolved :class:`Setup` (what the
    CLI's flags built); without it one is built from ``hardware_id``, ``model``, ``context_tokens``,
    ``engine_version`` and ``dtype``."""
    if setup is None:
        if not (hardware_id and model):
            raise ValueError("predict_rows needs a setup, or hardware_id and model")
        setup = build_setup(hardware_ref=hardware_id, model_ref=model, model_overrides={"dtype": dtype},
                            engine={"name": "vllm", "version": engine_version} if engine_version else {},
                            workload={"kv_context": 1024 if context_tokens is None else context_tokens})
    # one GPU's share under tensor parallelism (its weights, FLOPs and KV heads at its own bandwidth and peak; on
    # one GPU the whole model): the decode steps come from Setup.decode_step, as the quantities take them
    lm = RooflineLandmarks(setup)  # shown under PP too, beside the decode table's refusal
    rows: list[DecodeRow] = []
    decode_error = None
    try:
        setup.require_single_stage("the decode table")
    except SetupError as exc:
        decode_error, batches = str(exc), []
    pool = kv_pool(setup)
    for b in batches:
        s = setup.decode_step(b)
        rows.append(DecodeRow(
            batch=b, intensity_flop_per_byte=s.intensity_flop_per_byte,
            weight_only_intensity_flop_per_byte=s.weight_only_intensity_flop_per_byte,
            t_mem_ms=s.t_mem_s * 1e3, t_comp_ms=s.t_comp_s * 1e3, t_step_ms=s.t_step_s * 1e3,
            bound=s.bound, throughput_tok_per_s=s.throughput_tok_per_s,
            per_request_tok_per_s=s.per_request_tok_per_s, kv_total_gib=s.kv_total_bytes / GIB,
            t_allreduce_ms=s.t_allreduce_s * 1e3, cannot_run=cannot_run(setup, pool, b),
        ))
    knee = lm.knee
    reason = knee.reason
    beyond = _beyond(setup, pool, knee.batch) if knee.batch is not None else None
    if beyond:  # a knee the engine cannot reach at this context is the roofline's arithmetic only, as a marked row
        reason += f"; {beyond}: the roofline's arithmetic only, a batch vLLM cannot run"
    half = lm.half_saturation_batch
    return PredictTable(
        hardware=setup.hardware.id, model=setup.model.name, context_tokens=setup.kv_context_tokens,
        weight_bytes=setup.weight_bytes, kv_bytes_per_token=setup.kv_bytes_per_token,
        kv_bytes_per_token_per_gpu=setup.kv_bytes_per_token_per_gpu,
        ridge_flop_per_byte=an.ridge_flop_per_byte(setup.peak_flop_per_s, setup.hbm_bytes_per_s),
        intensity_asymptote_flop_per_byte=lm.intensity_asymptote_flop_per_byte,
        half_saturation_batch=half,
        throughput_asymptote_tok_per_s=lm.throughput_asymptote_tok_per_s,
        batch1_ceiling_tok_per_s=lm.batch1_ceiling_tok_per_s,
        knee_batch=knee.batch, knee_reason=reason, decode_error=decode_error,
        kv=pool, rows=rows, kv_pool_max_sequences=_pool_sequences(setup, pool),
        half_saturation_note=_beyond(setup, pool, half) if math.isfinite(half) else None,
    )


def _usable_blocks(pool: KVPool) -> int | None:
    """The pool's blocks a request can use: all but the one vLLM V1 keeps as its ``null_block`` (block id 0, a
    placeholder never handed to a request: ``BlockPool.__init__`` pops it off the free queue,
    vllm/v1/core/block_pool.py; the serving model's ``EngineConfig.usable_blocks`` likewise); None when the pool is
    not computed."""
    return None if pool.num_gpu_blocks is None else max(pool.num_gpu_blocks - 1, 0)


def _pool_sequences(setup: Setup, pool: KVPool) -> int | None:
    """Sequences of the table's KV context the pool holds at once: its usable blocks ÷ the whole blocks one
    sequence fills (the count :func:`cannot_run` marks rows by); None when the pool is not computed."""
    usable = _usable_blocks(pool)
    if usable is None:
        return None
    return usable // max(1, math.ceil(float(setup.kv_context_tokens) / pool.block_size_tokens))


def _beyond(setup: Setup, pool: KVPool, batch: float) -> str | None:
    """Why vLLM cannot run a landmark's batch (the knee, the half-saturation batch; fractional) at the table's KV
    context, in the words of the line it goes on; None when it can. The same three limits as :func:`cannot_run`
    marks the rows by: ``max_num_seqs``, ``max_model_len`` and the sequences the KV pool holds."""
    why = []
    ctx = float(setup.kv_context_tokens)
    held = _pool_sequences(setup, pool)
    if held is not None and batch > held:
        usable = _usable_blocks(pool)
        why.append(f"beyond the {held:,} sequences the KV pool holds at {ctx:,.0f} tokens, {usable:,} usable blocks "
                   f"÷ {math.ceil(ctx / pool.block_size_tokens):,} each")
    if batch > setup.max_num_seqs:
        why.append(f"beyond max_num_seqs {setup.max_num_seqs:,}")
    if pool.max_model_len_tokens and ctx > pool.max_model_len_tokens:
        why.append(f"at a context past max_model_len {pool.max_model_len_tokens:,}")
    return "; ".join(why) or None


def cannot_run(setup: Setup, pool: KVPool, batch: int) -> str | None:
    """Why vLLM cannot hold ``batch`` sequences of the table's KV context at once, None when it can: the scheduler
    runs at most ``max_num_seqs`` (vLLM's ``SchedulerConfig``), no sequence is longer than ``max_model_len``, and
    the sequences' KV must fit the pool's blocks (each sequence whole blocks of ``block_size`` tokens)."""
    why = []
    if batch > setup.max_num_seqs:
        why.append(f"B > max_num_seqs {setup.max_num_seqs:,}")
    ctx = float(setup.kv_context_tokens)
    if pool.max_model_len_tokens and ctx > pool.max_model_len_tokens:
        why.append(f"context {ctx:,.0f} > max_model_len {pool.max_model_len_tokens:,}")
    usable = _usable_blocks(pool)
    if usable is not None:
        need = batch * math.ceil(ctx / pool.block_size_tokens)
        if need > usable:
            why.append(f"{need:,} KV blocks > the pool's {usable:,} usable, {pool.num_gpu_blocks:,} less vLLM's null "
                       "block")
    return "; ".join(why) or None


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


def kv_pool(setup: Setup) -> KVPool:
    """The KV pool vLLM allocates for ``setup`` (``model.setup.kv_accounting``, the accounting every quantity
    uses), and the engine settings behind it with their sources."""
    mml, mml_source = _max_model_len(setup)
    settings: dict[str, EngineSetting] = {}
    for name, (attr, key) in _ENGINE_SETTINGS.items():
        value = getattr(setup, attr, None)
        if value is None and key not in setup.sources:
            continue  # not resolved for this setup
        given = name in (setup.engine_args or {})
        source = "given (engine.args." + name + ")" if given else setup.sources.get(key, "the project's default")
        settings[name] = EngineSetting(value, source)
    out = KVPool(
        engine=setup.engine_name, engine_version=setup.engine_version,
        engine_defaults_version=str(setup.engine_version or vllm_defaults.NEWEST_KNOWN_VERSION),
        entrypoint=getattr(setup, "engine_entrypoint", None) or "serve",
        tensor_parallel_size=int(setup.tensor_parallel_size),
        pipeline_parallel_size=int(getattr(setup, "pipeline_parallel_size", 1) or 1),
        weight_dtype=setup.weight_dtype, kv_cache_dtype=setup.kv_dtype,
        quantization=setup.quantization_label,
        num_gpus=int(setup.num_gpus), weight_bytes_per_gpu=float(setup.weight_bytes_per_gpu),
        block_size_tokens=int(setup.block_size),
        max_model_len_tokens=mml, max_model_len_source=mml_source,
        engine_settings=settings,
    )
    try:
        acc = kv_accounting(setup)
    except (SetupError, ValueError) as exc:
        return dataclasses.replace(out, kv_pool_error=str(exc))
    reported = reported_kv(setup, acc, mml)
    return dataclasses.replace(
        out, num_gpu_blocks=acc.num_blocks, kv_cache_tokens=reported.kv_cache_tokens,
        kv_bytes_per_block=acc.bytes_per_block,
        kv_budget_bytes=acc.budget_bytes,
        activation_bytes=acc.activation_bytes, non_torch_bytes=acc.non_torch_bytes,
        cuda_graph_bytes=acc.cuda_graph_bytes, available_kv_bytes=acc.available_kv_bytes,
        available_kv_gib=acc.available_kv_gib,
        max_concurrency_at_max_model_len=reported.max_concurrency if mml else None,
    )


def setup_description(setup: Setup, pool: KVPool | None = None) -> dict[str, Any]:
    """The setup a ``--json`` object belongs to, in the same fields for the analytical table and ``--simulate``:
    the chip and the model, then the KV pool and the engine settings behind it (:class:`KVPool`: engine, versions,
    TP/PP, dtypes, ``max_num_seqs`` / ``max_num_batched_tokens`` / ... in ``engine_settings`` with their sources,
    ``num_gpu_blocks``, ``kv_cache_tokens``, ...)."""
    return {"hardware": setup.hardware.id, "model": setup.model.name, **(pool or kv_pool(setup)).to_dict()}


def _version_text(version: str | None) -> str:
    """The engine version the defaults come from: the given one, else the newest release the project knows."""
    return version or f"{vllm_defaults.NEWEST_KNOWN_VERSION} (newest known release; --engine-version to choose)"


def _mib(n: float) -> str:
    """Bytes in MiB with two decimals where they are exact (2.00, 1.25), else four significant figures: a block
    of 655,360 B is 0.625 MiB, which two decimals printed 0.62."""
    x = n / MIB
    two = f"{x:,.2f}"
    if x >= 100 or math.isclose(round(x, 2), x, rel_tol=1e-12):
        return f"{two} MiB"
    return f"{x:.4g} MiB"


def _gib_gb(n: float) -> str:
    """Bytes as GiB with GB beside them: vLLM logs GiB, model cards and datasheets write GB."""
    return f"{n / GIB:,.2f} GiB ({n / 1e9:,.2f} GB)"


def _where(setup: Setup) -> str:
    tp, pp = int(setup.tensor_parallel_size), int(setup.pipeline_parallel_size)
    if tp * pp == 1:
        return f"one {setup.hardware.id}"
    return f"{tp * pp} × {setup.hardware.id} (TP {tp}" + (f", PP {pp})" if pp > 1 else ")")


def _pool_fit(setup: Setup) -> tuple[int, int, bool]:
    """``setup``'s KV pool (:func:`kv_accounting`) as vLLM reports it: its blocks, its tokens, and whether it
    holds one request of max_model_len (vLLM V1 ``check_enough_kv_cache_memory``, V0 ``_verify_args``: it does
    not start otherwise). vLLM needs at least one usable block besides its null block (``serving.EngineConfig``)."""
    acc = kv_accounting(setup)
    mml, _ = _max_model_len(setup)
    reported = reported_kv(setup, acc, mml)
    holds = reported.max_concurrency is None or reported.max_concurrency >= 1
    return acc.num_blocks, reported.kv_cache_tokens, holds


def _fitting_tp(setup: Setup, rebuild: Callable[[int], Setup] | None, mml_flag: str | None,
                request_tokens: int | None = None, pp_flag: str | None = "--pp N") -> str:
    """The "more GPUs" fix: the smallest tensor-parallel degree up to 8 (doubling) at which vLLM starts,
    built by ``rebuild(tp)`` with everything else as given (a degree the model's heads refuse is skipped), and
    a smaller one whose pool starts with a shorter ``mml_flag`` (max_model_len), if any. ``request_tokens``: the
    caller writes max_model_len itself (``roofline init``: the largest multiple of 1,024 the pool holds), so a
    degree is accepted where its pool holds one request of that many tokens; ``pp_flag``: the caller's flag for
    pipeline stages, None where it has none."""
    if rebuild is None:
        return "more GPUs (--tp N)"
    shorter = ""
    n = int(setup.tensor_parallel_size) * 2
    while n <= 8:
        try:
            blocks, tokens, holds = _pool_fit(rebuild(n))
        except (SetupError, ValueError):
            blocks, tokens, holds = 0, 0, False
        if request_tokens is not None:
            holds = tokens >= request_tokens
        if blocks >= 2 and holds:
            return f"more GPUs (--tp {n}: {blocks:,} KV blocks per GPU{shorter})"
        if blocks >= 2 and mml_flag and not shorter:
            shorter = f"; or --tp {n} with {mml_flag} {tokens:,} or less"
        n *= 2
    if pp_flag is None:
        return ("more GPUs than this command writes (--tp 8 is not enough here: it needs pipeline stages too, "
                "engine.args.pipeline_parallel_size, which `roofline predict --tp 8 --pp N` shows" + shorter + ")")
    return f"more GPUs (--tp 8 is not enough here: add pipeline stages, {pp_flag}" + shorter + ")"


def memory_fit_error(setup: Setup, *, rebuild: Callable[[int], Setup] | None = None,
                     quantized: str = "a quantized checkpoint (--quantization fp8, awq, ...)",
                     mml_flag: str | None = "--max-model-len",
                     util_flag: str | None = "--gpu-memory-utilization", request_tokens: int | None = None,
                     pp_flag: str | None = "--pp N") -> str | None:
    """None when vLLM can allocate a KV pool for ``setup``; else one line naming the figures and the fixes: the
    weights one GPU holds against vLLM's memory budget (``ceil(memory × gpu_memory_utilization)``,
    ``analytical.KVAccounting``), or, where they fit, what the other reserves leave. vLLM refuses to start such a
    setup (V1: "No available memory for the cache blocks"), so no figure of it can be measured. ``rebuild(tp)``:
    the same setup at another TP degree, to name the smallest that fits; ``quantized``: the quantization fix in
    the caller's flags; ``mml_flag`` / ``util_flag`` / ``pp_flag``: its max_model_len / gpu_memory_utilization /
    pipeline-stage flags, if it has them; ``request_tokens``: where the caller writes max_model_len itself, the
    request a TP degree's pool must hold (:func:`_fitting_tp`). A setup whose pool cannot be computed (no memory
    figure) is not judged here."""
    try:
        acc = kv_accounting(setup)
    except (SetupError, ValueError):
        return None  # the KV pool line says why it is not computed
    if acc.num_blocks >= 2:
        return None
    name, where = setup.model.name, _where(setup)
    block = _mib(acc.bytes_per_block)
    if acc.explicit_pool or acc.budget_bytes is None:
        return (f"{name} on {where}: the explicit KV pool of {acc.available_kv_bytes / GIB:,.2f} GiB "
                f"(engine.args.kv_cache_memory_bytes) holds {acc.num_blocks} blocks of {block}; vLLM needs at least "
                "2 (one besides its null block): give a larger kv_cache_memory_bytes")
    total, util = acc.total_memory_bytes or 0.0, acc.gpu_memory_utilization or 0.0
    budget = (f"vLLM's memory budget of {acc.budget_bytes / GIB:,.2f} GiB per GPU (gpu_memory_utilization "
              f"{util:g} × {total / GIB:,.2f} GiB)")
    fixes = [_fitting_tp(setup, rebuild, mml_flag, request_tokens, pp_flag)]
    if setup.quantization is None and setup.weight_dtype in ("bf16", "fp16", "fp32"):
        fixes.append(quantized)  # already quantized: a quantization is no fix
    fixes.append("a GPU with more memory")
    # the share of memory that would leave two blocks (vLLM's minimum), where one exists
    need = (acc.non_kv_bytes + 2 * acc.bytes_per_block) / total if total else math.inf
    if util_flag and need <= 1:
        fixes.append(f"{util_flag} {math.ceil(need * 100) / 100:g} or more")
    fix_text = "use " + ", ".join(fixes[:-1]) + " or " + fixes[-1]
    if acc.weight_bytes >= acc.budget_bytes:
        return (f"{name} does not fit on {where}: its weights per GPU, {_gib_gb(acc.weight_bytes)}, exceed "
                f"{budget}; {fix_text}")
    reserves = acc.activation_bytes + acc.non_torch_bytes + acc.cuda_graph_bytes
    left = acc.available_kv_bytes
    return (f"{name} leaves no KV cache on {where}: of {budget}, its weights per GPU take "
            f"{_gib_gb(acc.weight_bytes)} and the other reserves (activations, non-torch, CUDA graphs) "
            f"{reserves / GIB:,.2f} GiB, leaving {left / GIB:,.2f} GiB: {acc.num_blocks} KV blocks of {block}, "
            f"where vLLM needs at least 2; {fix_text}")


def length_error(setup: Setup, *, lengths_flag: str = "--input-len / --output-len") -> str | None:
    """None when a request of the setup's lengths fits max_model_len (given, else the model's
    max_position_embeddings); else one line naming both numbers (the rule's home, which the prediction file's
    reader calls too: ``model.setup.request_length_problem``). ``lengths_flag``: the caller's flag for the lengths."""
    return request_length_problem(setup, lengths=lengths_flag, max_model_len="--max-model-len")


#: weight dtypes narrower than 16 bits: given with --dtype (model.dtype) and no scheme, they are a what-if
_SUB_16_BIT = frozenset({"fp8", "int8", "int4", "fp4", "nf4"})


TP_POOL_CAVEAT = f"  ({TP_POOL_CAVEAT_TEXT})"


def _kv_pool_lines(kv: KVPool) -> list[str]:
    """The KV pool and the engine settings as text, under the decode table."""
    tp, pp = kv.tensor_parallel_size, kv.pipeline_parallel_size
    where = (f"{kv.engine} {_version_text(kv.engine_version)} {kv.entrypoint} · "
             f"TP {tp} · PP {pp} · weights {kv.weight_dtype}"
             + (f" ({kv.quantization})" if kv.quantization else
                (" (every weight, embeddings and lm_head too, with no scales: a what-if, not a checkpoint; "
                 "--quantization gives one's scheme)" if kv.weight_dtype in _SUB_16_BIT else ""))
             + f" · KV {kv.kv_cache_dtype}")
    if kv.kv_pool_error:
        lines = [f"KV pool ({where}): not computed: {kv.kv_pool_error}"]
    else:
        budget = (f"of the {kv.kv_budget_bytes / GIB:,.2f} GiB budget" if kv.kv_budget_bytes is not None
                  else "(an explicit pool)")
        blocks, bs, tokens = kv.num_gpu_blocks, kv.block_size_tokens, kv.kv_cache_tokens
        assert blocks is not None and tokens is not None and kv.kv_bytes_per_block is not None  # the pool computed
        size = (f"{blocks:,} GPU blocks × {bs} tokens = {tokens:,} KV tokens" if blocks * bs == tokens else
                f"{blocks:,} GPU blocks of {bs} tokens; vLLM reports {tokens:,} KV tokens (sliding-window layers)")
        lines = [f"KV pool ({where}): {size} · {_mib(kv.kv_bytes_per_block)} per block · "
                 f"available KV {kv.available_kv_gib:,.2f} GiB {budget} · weights per GPU "
                 f"{_gib_gb(kv.weight_bytes_per_gpu)}"]
        if tp * pp > 1:
            lines.append(TP_POOL_CAVEAT)
        mml = kv.max_model_len_tokens
        conc = kv.max_concurrency_at_max_model_len
        lines.append(f"max concurrency at max_model_len {mml:,} tokens: {conc:.2f}x ({kv.max_model_len_source})"
                     if mml else f"max concurrency: {kv.max_model_len_source}")
    lines.append("engine settings:")
    for name, s in kv.engine_settings.items():
        lines.append(f"  {name:<24} {s.value!s:>8}  {s.source}")
    return lines


#: predicted field -> (client section key, statistic) of a recorded point (results-schema.md)
_MEASURED_FIELDS = {
    "output_throughput_tok_per_s": ("output_throughput_tok_s", None),
    "per_request_output_tok_per_s": ("per_request_output_tok_s", "mean"),
    "ttft_p50_ms": ("ttft_ms", "p50"), "ttft_p99_ms": ("ttft_ms", "p99"),
    "tpot_p50_ms": ("tpot_ms", "p50"), "tpot_p99_ms": ("tpot_ms", "p99"),
    "itl_p99_ms": ("itl_ms", "p99"),
}


def _measured_point(doc: Mapping[str, Any] | None, concurrency: int | None, rate: float | None,
                    setup: Setup | None = None, thresholds: Thresholds | None = None
                    ) -> tuple[dict[str, float], str | None]:
    """The recorded values of the closed-loop point at ``concurrency`` (or the open-loop one at ``rate``), and why
    prefix-cache hits flatter them (``quantities.analysis.cache_hit_reason``, the rule the verdicts flag by and
    calibrate screens with: a hit rate above the threshold, the file's ``contaminated: true``, or a TTFT below its
    prefill's compute floor), None when they do not."""
    if not doc:
        return {}, None
    try:
        pt = RecordedMeasurement(doc).point(concurrency=concurrency, rate=rate)
    except NotMeasured:
        return {}, None
    reason = cache_hit_reason(pt, thresholds or Thresholds(), setup)
    out = {}
    for name, (key, stat) in _MEASURED_FIELDS.items():
        v = client_value(pt, key, *([stat] if stat else []))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = float(v)
    return out, reason


def _rebuilder(hardware_ref: Any, model_ref: Any, tree: Mapping[str, Any],
               **overrides: Any) -> Callable[[int], Setup]:
    """``rebuild(tp)``: the flags' setup at tensor-parallel degree ``tp`` (its warnings already printed once)."""
    def rebuild(tp: int) -> Setup:
        t = copy.deepcopy(dict(tree))
        engine = t.setdefault("engine", {})
        engine["args"] = {**(engine.get("args") or {}), "tensor_parallel_size": tp}
        with contextlib.redirect_stderr(io.StringIO()):
            return build(hardware_ref, model_ref, t, **overrides)
    return rebuild


def max_model_len_warning(setup: Setup, *, mml_flag: str = "--max-model-len") -> str | None:
    """None when the KV pool holds one request of max_model_len; else why vLLM will not start, naming both figures
    and ``mml_flag``, the fix (the rule's home: ``model.setup.max_model_len_problem``)."""
    return max_model_len_problem(setup, fix=mml_flag)


def _refuse_unstartable(setup: Setup, rebuild: Callable[[int], Setup] | None) -> None:
    """A ValueError (one line, exit status 2) where vLLM could not start ``setup`` for want of memory
    (:func:`memory_fit_error`); a warning on stderr where the pool cannot hold one request of max_model_len
    (:func:`max_model_len_warning`)."""
    err = memory_fit_error(setup, rebuild=rebuild)
    if err:
        raise ValueError(err)
    warn = max_model_len_warning(setup)
    if warn:
        print(f"roofline: warning: {warn}", file=sys.stderr)


#: the words a setup vLLM will not start is refused with, by ``--simulate`` on either path and by the prediction
#: file's reader at the line that fixes it (format/_sections.py ``_check_startable``)
NOT_STARTED = "vLLM will not start this setup: "


def _refuse_unsimulable(setup: Setup, rebuild: Callable[[int], Setup] | None) -> None:
    """``--simulate``, from the flags or a file (with flags over it): a ValueError (exit status 2, nothing
    simulated) where vLLM could not start ``setup`` for want of memory (:func:`memory_fit_error`) or for a KV pool
    short of one request of max_model_len (``model.setup.max_model_len_problem``, refused in the words the
    prediction file's reader uses: :data:`NOT_STARTED`), and for a request longer than max_model_len
    (:func:`length_error`).  The analytical table only warns of the second: it shows the pool's arithmetic; a
    simulation of an engine that does not start would be banded numbers of a run that cannot happen."""
    err = memory_fit_error(setup, rebuild=rebuild)
    if err:
        raise ValueError(err)
    problem = max_model_len_warning(setup)
    if problem:
        raise ValueError(NOT_STARTED + problem)
    err = length_error(setup)
    if err:
        raise ValueError(err)


def _as_list(value: Any, parse: Callable[[str], list[Any]], flag: str) -> list[Any]:
    """A list flag's values: already parsed by argparse, or text (a Namespace built in code)."""
    if value is None or isinstance(value, list):
        return value or []
    try:
        return parse(str(value))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"{flag}: {exc}") from None


@dataclass
class SimTable:
    """One table of ``--simulate``: the serving model's sweep under one setup (``rows``: a ``PointPrediction``'s
    fields, its band notes, and with ``--results`` the measured values), its head line, the setup's device and its
    description (:func:`_simulate_setup`, what ``--json`` puts on each row). From a prediction file there is one a
    distinct setup its predictions use: ``predictions`` ([{id, line}]) are the ones computed against it, ``differs``
    what it changes of the file's setup ({dotted field: {value, file_value}}, {} for the file's own); ``refused``
    says why it was not simulated (its rows empty): a setup vLLM will not start, or an engine setting the serving
    model does not simulate, at its file:line."""

    head: str = ""
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    device: str = ""
    described: dict[str, Any] = dataclasses.field(default_factory=dict)
    predictions: list[dict[str, Any]] | None = None
    differs: dict[str, dict[str, Any]] | None = None
    refused: str | None = None


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A section as dotted fields (``engine.args.max_num_seqs``); a list or a scalar is one value."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _differs(file: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What ``own``'s sections change of ``file``'s: {dotted field: {value, file_value}}, None where unset."""
    a, b = _flat(file), _flat(own)
    return {k: {"value": b.get(k), "file_value": a.get(k)} for k in sorted(set(a) | set(b))
            if b.get(k) != a.get(k) and not (b.get(k) in (None, {}) and a.get(k) in (None, {}))}


def _setup_groups(spec: Spec) -> list[tuple[Prediction | None, list[Prediction], dict[str, dict[str, Any]]]]:
    """The distinct setups ``spec``'s predictions are computed against, the file's first (simulated whether or not
    a prediction uses it): (a prediction of the group whose ``setup:`` it is, None for the file's; the group's
    predictions; what it changes of the file's setup). A ``setup:`` that changes nothing is the file's."""
    base = prediction_sections(spec)
    groups: dict[str, tuple[Prediction | None, list[Prediction], dict[str, dict[str, Any]]]] = {
        "": (None, [], {})}
    for p in spec.predictions:
        differs = _differs(base, prediction_sections(spec, p.setup)) if any(p.setup.values()) else {}
        key = jsonout.dumps(differs) if differs else ""
        groups.setdefault(key, (p, [], differs))[1].append(p)
    return list(groups.values())


def _load_said_once(path: str, flags: Mapping[str, str]) -> tuple[Spec, list[str]]:
    """``load_spec(path)``, holding back its warnings: :func:`_simulate` prints each as one ``roofline: warning:``
    line, as ``roofline check`` does, except an UnsimulatedSettingWarning a refusal already says at its line
    with the fix; one about a setting a flag replaces (``flags``, ``--set engine.args.X=...``) is dropped: the value
    simulated is the flag's."""
    with warnings.catch_warnings(record=True) as caught:
        spec = load_spec(path)
    held = []
    for w in caught:
        if replaced_by_flags(w.message, flags):
            continue
        # every warning of the file as one `roofline: warning: FILE:LINE: ...` line, as roofline check prints them,
        # never Python's with the plugin's own source line (trial s23b L4)
        held.append(str(w.message))
    return spec, held


def _simulate_rows(args: argparse.Namespace) -> tuple[list[SimTable], list[str]]:
    """The serving model's predicted sweeps: from a prediction file, one a distinct setup its predictions use
    (:func:`_setup_groups`: its setup, constants and sweep, as the scorer simulates each), or from the flags; and the
    file's :class:`UnsimulatedSettingWarning`\\ s, held back (:func:`_load_said_once`)."""
    concurrency = _as_list(args.concurrency, concurrency_list, "--concurrency")
    rates = _as_list(args.rate, rate_list, "--rate")
    doc = load_any(args.results) if args.results else None  # our own results.json or a peer's file or folder
    if not isinstance(args.simulate, str):
        return [_simulate_flags(args, concurrency, rates, doc)], []
    if args.hardware or args.model:  # the file names its chip and model; a field of either is a --set
        raise ValueError("--simulate FILE.yaml takes the file's hardware and model; change a field of them with "
                         "--set hardware.FIELD=VALUE / --set model.FIELD=VALUE, or drop the file")
    if concurrency and rates:
        raise ValueError("--simulate FILE.yaml: give --concurrency (closed-loop points) or --rate (open-loop "
                         "points), not both; an open-loop in-flight cap is the file's sweep")
    spec, held = _load_said_once(args.simulate, flag_fields(args))
    if doc is not None:  # a results file of other points is compared all the same, and said so (trial s23 L1)
        cmp = match.compare(doc, spec)
        if cmp.differences:
            held.append(f"--results {args.results} does not belong to {args.simulate} (the simulated sweep is the "
                        f"file's, the measured column is the results'): {'; '.join(cmp.differences)}")
    tables = []
    groups = _setup_groups(spec)
    for rep, preds, differs in groups:
        named = [{"id": p.id, "line": p.line} for p in preds]
        try:  # a measured run measures the file's setup alone (measure.plan.points): --results is its
            table = _simulate_file_setup(args, spec, rep, concurrency, rates, doc if rep is None else None)
        except (RooflineError, SetupError, ValueError, KeyError) as exc:
            table = SimTable(refused=str(exc))
        tables.append(dataclasses.replace(table, predictions=named, differs=differs))
    if len(tables) > 1:  # several setups: each refusal names whose it is, and that the others print
        tables = [dataclasses.replace(t, refused=_refusal_text(spec, rep, preds, t.refused))
                  if t.refused else t for t, (rep, preds, _d) in zip(tables, groups, strict=True)]
    return tables, held


def _refusal_text(spec: Spec, rep: Prediction | None, preds: Sequence[Prediction], text: str) -> str:
    """Why one of several setups' tables was not simulated (``text``: at the settings' own file:line where the
    reader located them, ``format.spec.locate_settings``; else put at the first prediction's line), naming whose
    setup it is."""
    if rep is None:
        whose = "the file's setup"
    else:
        whose = f"the setup of {_whose([{'id': p.id, 'line': p.line} for p in preds])}"
        if not text.startswith(f"{spec.path}:"):
            text = f"{spec.path}:{rep.line}: {text}"
    return f"{text} (not simulated: {whose}; the other setups' tables are printed)"


def _whose(preds: Sequence[Mapping[str, Any]]) -> str:
    """``prediction a (line 8)``, ``predictions a (line 8), b (line 12)`` ({id, line} each; a table's cells, ``a[1]``,
    as the table, at its first cell's line): the first five, then how many more."""
    first: dict[str, int] = {}
    for p in preds:
        first.setdefault(str(p["id"]).split("[", 1)[0], int(p["line"]))
    ids = list(first.items())
    shown = ", ".join(f"{i} (line {ln})" for i, ln in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return ("predictions " if len(ids) > 1 else "prediction ") + shown


def _simulate_file_setup(args: argparse.Namespace, spec: Spec, rep: Prediction | None, concurrency: list[int],
                         rates: list[float], doc: Any) -> SimTable:
    """The table of one setup of a prediction file: the file's (``rep`` None) or ``rep``'s own ``setup:`` over it,
    with the flags over either."""
    secs = prediction_sections(spec, rep.setup if rep else None)
    tree = setup_tree(args, base={"engine": secs["engine"], "workload": secs["workload"]},
                      workload={"input_len": args.input_len, "output_len": args.output_len})
    setup = build(secs["hardware"], secs["model"], tree, hardware_overrides=secs["hardware_overrides"],
                  model_overrides=secs["model_overrides"])
    _refuse_unsimulable(setup, _rebuilder(secs["hardware"], secs["model"], tree,
                                          hardware_overrides=secs["hardware_overrides"],
                                          model_overrides=secs["model_overrides"]))
    try:
        sweep = serving_sweep_for(spec, rep, setup)
    except EngineArgsError as exc:  # a setting the serving model does not simulate: at the file's line
        raise ValueError(locate_settings(spec, exc, rep.setup if rep else None, flag_fields(args))) from exc
    keys = [p.key for p in sweep.points if p.key[0] != "batch1"]
    if concurrency:
        keys = [("closed", float(c)) for c in concurrency]
    elif rates:
        keys = [("open", float(r)) for r in rates]
    preds = [sweep.predict(k)[1] for k in keys]
    return _table(setup, sweep.engine, sweep.constants, sweep.source, None, preds,
                  f"{spec.title} · {sweep.source}", doc, spec.thresholds)


def _simulate_flags(args: argparse.Namespace, concurrency: list[int], rates: list[float], doc: Any) -> SimTable:
    """The table of the flags' setup (no prediction file)."""
    if not (args.hardware and args.model):
        raise ValueError("--simulate needs a prediction file, or --hardware and --model")
    if rates and concurrency and len(concurrency) > 1:
        raise ValueError(f"--concurrency with --rate is the most requests in flight at each rate: give one "
                         f"number, not {len(concurrency)}")
    tree = setup_tree(args, workload={"input_len": args.input_len, "output_len": args.output_len})
    setup = build(args.hardware, args.model, tree)
    _refuse_unsimulable(setup, _rebuilder(args.hardware, args.model, tree))
    eng = sv.EngineConfig.from_setup(setup)
    constants = sv.default_constants(setup)
    # the workload the flags describe beyond its lengths (--set workload.shared_prefix_len=256, prefix_share, a
    # distribution, a ramp), read as a prediction file's is (trial s24c H3: they were accepted and not simulated)
    from pytest_roofline.measure.loadgen import datasets

    shape = datasets.resolve(dict(tree.get("workload") or {})).serving_kwargs()
    cap = None
    if rates:
        cap = concurrency[0] if concurrency else None  # the load generator's in-flight cap (open loop)
        workloads = [sv.workload_for_point(setup, rate_req_per_s=r, concurrency=cap, **shape) for r in rates]
    else:
        workloads = [sv.workload_for_point(setup, concurrency=c, **shape)
                     for c in concurrency or [1, 2, 4, 8, 16, 32, 64, 128]]
    preds = sv.simulate_sweep(setup, workloads, engine=eng, constants=constants)
    return _table(setup, eng, constants, "default constants", cap, preds, "default constants", doc, Thresholds())


def _table(setup: Setup, eng: sv.EngineConfig, constants: sv.ServingConstants, source: str, cap: int | None,
           preds: Sequence[Any], title: str, doc: Any, thresholds: Thresholds) -> SimTable:
    """A :class:`SimTable` of simulated points ``preds``, beside ``doc``'s measured values where given."""
    head = (f"{setup.hardware.id} · {setup.model.name} · {setup.engine_name} {_version_text(setup.engine_version)} · "
            f"in {setup.input_len} / out {setup.output_len} tokens"
            + (f" · open loop, at most {cap} requests in flight" if cap else "") + " · max_num_seqs "
            f"{eng.max_num_seqs}, "
            f"max_num_batched_tokens {eng.max_num_batched_tokens}, chunked prefill "
            f"{'on' if eng.chunked_prefill else 'off'}"
            # vLLM >= 0.14 on a GPU: a request reaching a busy engine joins one step later (EngineConfig)
            + (", async scheduling" if eng.async_scheduling else "")
            + f", {eng.num_gpu_blocks:,} KV blocks · {title}")
    rows = []
    for p in preds:
        row = p.to_dict()
        row["band_notes"] = _band_notes(row)  # every value: a band, or why it has none
        meas, flattered = _measured_point(doc, p.concurrency if p.rate_req_per_s is None else None,
                                          p.rate_req_per_s, setup, thresholds)
        if doc is not None:
            row["measured"] = meas
            # a point prefix-cache hits flatter: marked, and left out of the mean |error| (calibrate screens it too)
            row["contaminated"] = flattered if meas else None
            # relative to the ink (the simulated value is the prediction): (measured − predicted) ÷ predicted,
            # None where it does not exist (a predicted 0 or a non-finite prediction); the ratio measured ÷ predicted
            errors = {k: relative_error(v, row[k]) for k, v in meas.items()}
            row["error"] = {k: e[1] for k, e in errors.items()}
            row["ratio"] = {k: e[2] for k, e in errors.items()}
        rows.append(row)
    return SimTable(head=head, rows=rows, device=setup.device,
                    described=_simulate_setup(setup, eng, constants, source, cap))


def _simulate_setup(setup: Setup, eng: sv.EngineConfig, constants: sv.ServingConstants, source: str,
                    cap: int | None) -> dict[str, Any]:
    """What ``--simulate --json`` puts on each row to say which setup it belongs to: the analytical table's setup
    fields (:func:`setup_description`), then the workload's lengths, the scheduler the serving model ran
    (``serving_engine``: ``EngineConfig``, whose ``num_gpu_blocks`` is ``num_gpu_blocks_override`` where given)
    and the constants it ran with (``constants_source``: default constants, a calibration file, the file's
    ``serving:`` overrides; ``constants``: their values)."""
    return {
        **setup_description(setup),
        "input_len_tokens": int(setup.input_len), "output_len_tokens": int(setup.output_len),
        "open_loop_max_in_flight": cap,
        "serving_engine": {
            "scheduler": eng.scheduler_kind, "max_num_seqs": eng.max_num_seqs,
            "max_num_batched_tokens": eng.max_num_batched_tokens, "block_size_tokens": eng.block_size,
            "num_gpu_blocks": eng.num_gpu_blocks, "enable_chunked_prefill": eng.chunked_prefill,
            "enable_prefix_caching": eng.enable_prefix_caching,
        },
        "constants_source": source, "constants": dict(constants.to_dict()),
        # what every ``bands`` interval is: its nominal coverage and how it was built (model/bands.py)
        "band_level": bands_mod.NOMINAL_COVERAGE, "band_basis": bands_mod.BAND_BASIS,
        "band_meaning": bands_mod.BAND_MEANING,
    }


#: ``--simulate --json``'s names for the serving model's unitless fields (``PointPrediction``'s own names are kept
#: in the model): a fraction of 1 says so in its name (docs/reference/commands.md, "--simulate --json")
JSON_NAMES: dict[str, str] = {
    "max_kv_usage": "max_kv_usage_fraction", "mean_kv_usage": "mean_kv_usage_fraction",
    "time_shares": "step_time_fractions", "prefix_cache_hit_rate": "prefix_cache_hit_fraction",
    "error": "relative_error", "ratio": "measured_over_predicted",
}


def _json_row(row: Mapping[str, Any], setup: Mapping[str, Any]) -> dict[str, Any]:
    """One ``--simulate --json`` line: the point's fields under :data:`JSON_NAMES` (in ``band_notes`` too), each
    observed range of a value with no band in numbers (``observed_ranges``: measured ÷ model, and the measured
    values that spans around the model's value, in the metric's unit), then the setup's description."""
    out = {JSON_NAMES.get(k, k): v for k, v in row.items()}
    out["band_notes"] = {JSON_NAMES.get(k, k): v for k, v in (row.get("band_notes") or {}).items()}
    ranges = {}
    for name, (lo, hi) in (row.get("observed_ranges") or {}).items():
        value = row.get(name)
        span = [lo * value, hi * value] if isinstance(value, (int, float)) and math.isfinite(value) else None
        ranges[name] = {"measured_over_model": [lo, hi], "measured_range": span}
    out["observed_ranges"] = ranges
    return {**out, **setup}


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


def _argparse_type(parse: Callable[[str], Any], flag: str) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None
    return convert


def concurrency_list(text: str) -> list[int]:
    """argparse type of ``--concurrency``: whole numbers >= 1, comma-separated."""
    return _argparse_type(lambda t: _int_list(t, "--concurrency"), "--concurrency")(text)


def rate_list(text: str) -> list[float]:
    """argparse type of ``--rate``: positive request rates in req/s, comma-separated; an error argparse prints
    naming the flag (exit status 2)."""
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        try:
            x = float(item)
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and x > 0):
            raise argparse.ArgumentTypeError(f"{item[:40]!r} is not a positive number of requests per second "
                                             "(write e.g. 1,2.5,10)")
        out.append(x)
    if not out:
        raise argparse.ArgumentTypeError("no values given (write e.g. 1,2.5,10)")
    return out


def batch_list(text: str) -> list[int]:
    """argparse type of ``--batch``: an error message argparse prints on one line, with exit status 2."""
    try:
        return _int_list(text, "--batch")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--batch: ")) from None


#: the columns of ``--simulate``'s table: the PointPrediction field, its header (with its unit) and its number of
#: significant figures (:func:`sim_number`)
_SIM_COLS = [("output_throughput_tok_per_s", "agg tok/s", 5), ("per_request_output_tok_per_s", "tok/s/req", 4),
             ("ttft_p50_ms", "TTFT p50 ms", 4), ("ttft_p99_ms", "TTFT p99 ms", 4),
             ("tpot_p50_ms", "TPOT p50 ms", 4), ("tpot_p99_ms", "TPOT p99 ms", 4),
             ("itl_p99_ms", "ITL p99 ms", 4)]
#: the significant figures of a band's ends, as the plugin prints a serving band (scoring: digits=5)
_BAND_DIGITS = 5


def sim_number(value: float, digits: int = 5) -> str:
    """A number of ``--simulate``'s text as the plugin prints its values (``units.format_value``: ``digits``
    significant figures, thousands separators: 1,415.1), its unit in the column's header."""
    return format_value(value, "count", digits=digits)


#: ``--simulate``'s legend line for the bands it prints (model/bands.py: NOMINAL_COVERAGE, BAND_MEANING)
SIM_BAND_LEGEND = f"the band lines: the serving model's interval around its value, {bands_mod.BAND_MEANING}"

#: the column of the prompt tokens the prefix cache holds (``prefix_cache_hit_rate``), printed where a point has any
HIT_COLUMN = "hit %"
#: the table's last columns: header -> the field whose reason the legend gives
_OTHER_COLS = (("run", "mean_running_batch"), ("KV %", "max_kv_usage"), ("preempt", "preemptions"),
               ("queue ms", "mean_queue_ms"))


def _other_cols_legend(hits: bool = False) -> str:
    """The one line under the table for its last columns and the dominant term, from :data:`NO_BAND_OTHER`'s
    reasons (their figures named once: :data:`ENGINE_FIGURES`); ``hits``: the hit % column was printed."""
    shown = _OTHER_COLS + (((HIT_COLUMN, "prefix_cache_hit_rate"),) if hits else ())
    whats = list(dict.fromkeys(ENGINE_FIGURES[field] for _h, field in shown))
    listed = ", ".join(whats[:-1]) + f" or {whats[-1]}" if len(whats) > 1 else whats[0]
    dominant = NO_BAND_OTHER["time_shares"].removeprefix("no band: ")
    return (f"no band for {', '.join(h for h, _ in shown)}: {not_reported(listed, figures='figures')}; "
            f"nor for {dominant}")
_NO_BAND_LEGEND = ("the accuracy corpus (benchmarks/data/corpus) has no public source that reports tok/s/req, "
                   "TPOT p99 or ITL p99 and one that reports TTFT p99, too few to bound a new source's error; "
                   "bands cover agg tok/s, TTFT p50 and TPOT p50 (model/bands.py)")
#: a banded metric whose regime has neither a band nor measured runs (band_note None), or a value that is not finite
_NO_RUNS_REASON = "no band: the accuracy corpus has no measured runs of this regime's class (model/bands.py)"
#: from this share of the run busy, the table says the API server holds the point (PointPrediction field)
API_SERVER_BOUND_SHARE = 0.9
_NO_VALUE_REASON = "no band: no finite value to band"


def _band_notes(row: Mapping[str, Any]) -> dict[str, str]:
    """``row``'s band notes with a reason for every printed value that has no band: the model's own notes
    (``bands.band_note``) first, then :data:`NO_BAND_REASON`, then why a banded metric has none here."""
    notes = dict(row.get("band_notes") or {})
    banded = row.get("bands") or {}
    for name in [c[0] for c in _SIM_COLS] + list(NO_BAND_OTHER):
        if name in banded or name in notes or name not in row:
            continue
        value = row.get(name)
        if isinstance(value, Mapping):
            notes[name] = NO_BAND_OTHER[name]
        elif not (isinstance(value, (int, float)) and math.isfinite(value)):
            notes[name] = _NO_VALUE_REASON
        else:
            notes[name] = NO_BAND_REASON.get(name) or NO_BAND_OTHER.get(name) or _NO_RUNS_REASON
    return notes


def _setup_heading(t: SimTable) -> str:
    """The line over a table of a prediction's own ``setup:``: whose it is and what it changes of the file's."""
    def shown(v: Any) -> str:
        return "not set" if v is None else v if isinstance(v, str) else jsonout.dumps(v)
    changes = "; ".join(f"{k} {shown(d['value'])} (the file's: {shown(d['file_value'])})"
                        for k, d in (t.differs or {}).items())
    return f"the setup of {_whose(t.predictions or [])}: {changes}"


def _simulate(args: argparse.Namespace) -> int:
    """``--simulate``: each setup's table (a file: one a distinct setup its predictions use, the file's first), the
    legends once under them; each refused setup once on stderr, at its line with the fix. Exit status 2 where a
    setup was refused (the others still printed), else 0."""
    tables, held = _simulate_rows(args)
    refusals = [t.refused for t in tables if t.refused]
    for text in refusals:
        print(f"roofline: {redact.printable(redact.redact_text(text))}", file=sys.stderr)
    for msg in held:  # a setting the refusals above do not already say (a flag replaced it)
        if not any(msg.split(". A warning, not an error", 1)[0] in r for r in refusals):
            print(f"roofline: warning: {msg}", file=sys.stderr)
    shown = [t for t in tables if not t.refused]
    status = 2 if refusals else 0
    if args.json:
        for t in shown:
            caveat = bands_mod.band_caveat(t.device)  # what a CPU band does not say, on each banded row
            described = {**t.described, "setup_predictions": t.predictions, "setup_differs_from_file": t.differs}
            for row in t.rows:  # JSON lines: one object per sweep point, each with its setup (as the table's rows)
                line = _json_row(row, described)
                print(jsonout.dumps({**line, "band_caveat": caveat} if caveat and row.get("bands") else line))
        return status
    for i, t in enumerate(shown):
        if i:
            print()
        if t.differs:
            print(_setup_heading(t))
        _print_table(t)
    rows = [r for t in shown for r in t.rows]
    if any(r.get("bands") for r in rows):  # what a band is, once (its coverage: bands.NOMINAL_COVERAGE)
        print(SIM_BAND_LEGEND)
    unbanded = [label for name, label, _ in _SIM_COLS if name in NO_BAND_REASON]
    if rows and unbanded:
        print(f"no band for {', '.join(unbanded)}: {_NO_BAND_LEGEND}")
    if rows:  # the last columns: engine figures the corpus does not report (once; per value in --json's band_notes)
        print(_other_cols_legend(any((r.get("prefix_cache_hit_rate") or 0.0) > 0.0 for r in rows)))
    # CPU bands: one host's recordings (model/bands.py CPU_BAND_CAVEAT)
    for caveat in dict.fromkeys(bands_mod.band_caveat(t.device) for t in shown if any(r.get("bands") for r in t.rows)):
        if caveat:
            print(caveat)
    for t in shown:
        _print_errors(t)
    return status


def _print_table(t: SimTable) -> None:
    """One setup's head line and table, each row's band and notes under it."""
    print(t.head)
    cols = _SIM_COLS
    rows = t.rows
    open_loop = bool(rows) and rows[0].get("rate_req_per_s") is not None
    # the prefix cache's share of prompt tokens (kv_pool.py, block by block), where any point finds one
    hits = any((r.get("prefix_cache_hit_rate") or 0.0) > 0.0 for r in rows)
    print(f"{'req/s' if open_loop else 'C':>6} " + " ".join(f"{c[1]:>18}" for c in cols)
          + f" {'run':>6} {'KV %':>5} {'preempt':>7} {'queue ms':>8}" + (f" {HIT_COLUMN:>5}" if hits else "")
          + "  dominant term")
    for r in rows:
        cells = []
        for name, _, fmt in cols:
            pred = sim_number(r[name], fmt) if math.isfinite(r[name]) else "—"
            meas = r.get("measured", {}).get(name)
            if meas is not None:
                err = r["error"][name]
                shown_err = "—" if err is None else signed_percent(err, 0)
                cells.append(f"{pred}|{sim_number(meas, fmt)} {shown_err}".rjust(18))
            else:
                cells.append(f"{pred:>18}")
        top = max(r["time_shares"], key=r["time_shares"].get) if r["time_shares"] else "—"
        point = _point_text(r)
        print(f"{point:>6} " + " ".join(cells) + f" {r['mean_running_batch']:>6.1f} {100 * r['max_kv_usage']:>5.1f} "
              f"{r['preemptions']:>7} {r['mean_queue_ms']:>8.1f}"
              + (f" {100 * (r.get('prefix_cache_hit_rate') or 0.0):>5.1f}" if hits else "")
              + f"  {top} {r['time_shares'].get(top, 0):.0%}")
        bands = r.get("bands") or {}
        if bands:  # the model's interval around its values (model/bands.py; docs/explanation/models.md)
            print(f"{'':>6} band: " + ", ".join(f"{label} {sim_number(bands[name][0], _BAND_DIGITS)}–"
                                                 f"{sim_number(bands[name][1], _BAND_DIGITS)}"
                                                 for name, label, fmt in cols if name in bands))
        # a regime with measured runs but too few sources for a band: what they showed, one line per reason
        # (a value with neither: why, one line per reason; the reasons of whole metrics are said once, below)
        by_reason: dict[str, list[str]] = {}
        ranged: set[str] = set()
        for name, label, fmt in cols:
            note = (r.get("band_notes") or {}).get(name)
            if note and note != NO_BAND_REASON.get(name):
                reason, sep, shown = note.partition(bands_mod.NOTE_RANGE_SEP)
                seen = (r.get("observed_ranges") or {}).get(name)
                if shown and seen and math.isfinite(r[name]):  # the ratios, and the values they span around the model's
                    shown += f" ({sim_number(seen[0] * r[name], fmt)}–{sim_number(seen[1] * r[name], fmt)})"
                by_reason.setdefault(reason, []).append(f"{label} {shown}" if shown else label)
                if sep:
                    ranged.add(reason)
        for reason, shown in by_reason.items():
            print(f"{'':>6} {reason}" + ("; measured / model there: " if reason in ranged else ": ")
                  + ", ".join(shown))
        busy = r.get("api_server_busy_share")
        if busy is not None and math.isfinite(busy) and busy >= API_SERVER_BOUND_SHARE:
            print(f"{'':>6} API server busy {busy:.0%} of the run (taking requests, streaming every token): the point "
                  "is held by vLLM's one API-server process, not by the GPU (docs/explanation/models.md)")
        if r.get("contaminated"):
            print(f"{'':>6} measured point contaminated ({r['contaminated']}): prefix-cache hits flatter it, so its "
                  "errors are left out of the mean |error|")


def _point_text(r: Mapping[str, Any]) -> str:
    """A row's point as the table's first column prints it: ``16`` clients, or ``2.5/s`` (a file may sweep both)."""
    rate = r.get("rate_req_per_s")
    return f"{rate:g}/s" if rate is not None else f"{r['concurrency']:g}"


def _print_errors(t: SimTable) -> None:
    """With ``--results``: the cells' legend and each metric's mean |error| over the table's measured points, a
    contaminated point left out (a flattered point is no test of the model)."""
    errs: dict[str, list[float]] = {}
    contaminated = [_point_text(r) for r in t.rows if r.get("contaminated")]
    for r in t.rows:
        for name, _, _fmt in _SIM_COLS:
            if r.get("measured", {}).get(name) is not None and not r.get("contaminated"):
                err = r["error"][name]
                if err is not None:
                    errs.setdefault(name, []).append(abs(err))
    if errs:
        print("cells: predicted|measured error, (measured − predicted) ÷ predicted ('—': none, a predicted 0); "
              "· mean |error|" + (f" (without the contaminated point(s) {', '.join(contaminated)})"
                                  if contaminated else "") + ": " + ", ".join(
            f"{n} {sum(v) / len(v):.1%} (n={len(v)})" for n, v in errs.items()))


def cmd_predict(args: argparse.Namespace) -> int:
    if args.simulate is not None:
        return _simulate(args)
    if not (args.hardware and args.model):
        raise ValueError("predict needs --hardware and --model (or --simulate FILE.yaml)")
    note = hw_catalog.family_note(args.hardware)  # --gpu h100: say which variant the family stood for
    if note:
        print(f"roofline: --gpu {note}", file=sys.stderr)
    batches = args.batch or [1, 2, 4, 8, 16, 32, 64, 128, 256]
    # without --context the KV context is the workload's, input + output ÷ 2, as a prediction file's checks take it
    # (trial s25a #13: the table's 1,024 gave 5,323.5 tok/s at B = 64 where the file's check used 1,536: 4,697)
    tree = setup_tree(args, workload={"kv_context": args.context, "input_len": args.input_len,
                                      "output_len": args.output_len})
    setup = build(args.hardware, args.model, tree)
    _refuse_unstartable(setup, _rebuilder(args.hardware, args.model, tree))
    table = predict_rows(setup=setup, batches=batches)
    if args.json:
        data = table.to_dict()
        meta = {k: v for k, v in data.items() if k != "rows"}
        for row in data["rows"]:  # JSON lines: one object per batch, each carrying the ridge, asymptote and knee
            print(jsonout.dumps({**row, **meta}))
        if not data["rows"]:  # no decode table (PP > 1): the KV pool and the rest still, in one object
            print(jsonout.dumps(meta))
        return 0
    kv = table.kv
    per_gpu = ""
    if kv.tensor_parallel_size * kv.pipeline_parallel_size > 1:
        per_gpu = (f" · per GPU: weights {_gib_gb(kv.weight_bytes_per_gpu)}, KV "
                   f"{table.kv_bytes_per_token_per_gpu:,.0f} B/token")
    print(f"{table.hardware} · {table.model} · KV context {table.context_tokens:,.0f} tokens · "
          f"weights {_gib_gb(table.weight_bytes)} · KV {table.kv_bytes_per_token:,.0f} B/token{per_gpu}")
    if table.decode_error:
        print(f"decode table: {table.decode_error}")
    tp = kv.tensor_parallel_size > 1  # the all-reduce column: t_step = max(t_mem, t_comp) + all-reduce
    if table.rows:
        print(f"{'B':>5} {'t_mem ms':>9} {'t_comp ms':>9} {'t_step ms':>9} {'FLOP/byte':>9} {'tok/s':>11} "
              f"{'tok/s/req':>9} {'KV GiB':>8} " + (f"{'AR ms':>7} " if tp else "") + " bound")
    for r in table.rows:
        print(f"{r.batch:>5} {r.t_mem_ms:>9.2f} {r.t_comp_ms:>9.2f} {r.t_step_ms:>9.2f} "
              f"{r.intensity_flop_per_byte:>9.2f} {r.throughput_tok_per_s:>11,.1f} "
              f"{r.per_request_tok_per_s:>9.1f} {r.kv_total_gib:>8.2f} "
              + (f"{r.t_allreduce_ms:>7.3f} " if tp else "") + f" {r.bound}" + (" *" if r.cannot_run else ""))
    blocked = [r for r in table.rows if r.cannot_run]
    if blocked:  # one line per reason, the batches it holds for
        reasons: dict[str, list[str]] = {}
        for r in blocked:
            reasons.setdefault(str(r.cannot_run), []).append(f"{r.batch:,}")
        for why, bs in reasons.items():
            print(f"* vLLM cannot run B = {', '.join(bs)} at {table.context_tokens:,.0f} tokens of context: {why} "
                  "(the row is the roofline's arithmetic only)")
    for line in _kv_pool_lines(kv):
        print(line)
    half_note = f" ({table.half_saturation_note})" if table.half_saturation_note else ""
    print(f"ridge {table.ridge_flop_per_byte:.1f} FLOP/byte · intensity asymptote "
          f"{table.intensity_asymptote_flop_per_byte:.1f} FLOP/byte · half-saturation B "
          f"{table.half_saturation_batch:.1f}{half_note} · throughput asymptote "
          f"{table.throughput_asymptote_tok_per_s:,.0f} tok/s · batch-1 ceiling "
          f"{table.batch1_ceiling_tok_per_s:.1f} tok/s")
    if table.knee_batch is None:
        print(f"knee: {table.knee_reason}")
    else:
        beyond = _beyond(setup, kv, table.knee_batch)
        print(f"knee: {table.knee_batch:.1f}" + (f" ({beyond}: the roofline's arithmetic only)" if beyond else ""))
    return 0


def positive_number(text: str) -> float:
    x = float(to_si(text, "count"))
    if not (math.isfinite(x) and x > 0):
        raise ValueError("must be a positive number")
    return x
