"""``roofline init``: a prediction file to fill in, written on the Day 3 notebook's pattern.

The setup comes from the flags (``--gpu`` in the one GPU vocabulary, ``--model`` a preset, a Hub id or a
config.json, ``--tp``, ``--workload IN/OUT``); then one prediction per number the notebook predicts — the model's
inputs, the knee from the roofline, the KV pool, the throughput curve, Little's law — each with its derivation as
a comment and the analytical model's value beside it, and ``predicted:`` left blank: the ink is the user's to
write before the sweep runs. ``roofline check`` names each blank left (its line and an example); once every blank
is filled the file checks, and ``pytest FILE`` scores the ink against the model.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_roofline.cli.predict import (
    TP_POOL_CAVEAT,
    cannot_run,
    kv_pool,
    length_error,
    max_model_len_warning,
    memory_fit_error,
)
from pytest_roofline.errors import RooflineError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import bands, dtypes, hardware, quantization
from pytest_roofline.model.setup import (
    Setup,
    build_setup,
    effective_max_model_len,
    fixed_point_max_model_len,
    held_at,
    kv_accounting,
    longest_max_model_len,
    max_model_len_problem,
    reported_kv,
)
from pytest_roofline.quantities.bounds import batch1_step_rate
from pytest_roofline.quantities.registry import QUANTITIES
from pytest_roofline.units import GB, GIB, KB, MB, MIB, format_value

__all__ = ["cmd_init", "render", "model_as_written", "parse_workload", "CONCURRENCY"]

#: the sweep the file starts with: the notebook's doublings, fewer of them
CONCURRENCY = (1, 4, 16, 64)
#: the unit a value is shown in where the dimension's default is not the one the notebook writes
_UNITS = {"weight_bytes": "GB", "weight_bytes_per_gpu": "GB", "kv_bytes_per_token": "B"}


def parse_workload(text: str) -> tuple[int, int]:
    """``"1024/256"`` -> (1024, 256): prompt and output tokens."""
    inp, sep, out = str(text).partition("/")
    try:
        lengths = int(inp.replace(",", "")), int(out.replace(",", ""))
    except ValueError:
        lengths = (0, 0)
    if not sep or min(lengths) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: write INPUT/OUTPUT tokens, e.g. 1024/256")
    return lengths


@dataclass(frozen=True)
class Item:
    """One prediction of the file: its id, quantity, at:, the derivation comment and a note on the ink."""

    id: str
    quantity: str
    derivation: str
    at: str = ""
    ink_hint: str = ""


def _sig(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant figures, with thousands separators (334.0, 590.7, 31,071, 1.769)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"


def _bytes(x: float, digits: int = 4) -> str:
    """Decimal bytes as the datasheets and the file's weights write them: GB from 1 GB on, else MB, kB or B."""
    for unit, size in (("GB", GB), ("MB", MB), ("kB", KB)):
        if abs(x) >= size:
            return f"{_sig(x / size, digits)} {unit}"
    return f"{x:,.0f} B"


def _gflop(x: float) -> str:
    return f"{_sig(x / 1e9)} GFLOP"


def _tflops(x: float) -> str:
    """A tensor peak in TFLOP/s to the catalog's 0.1 (165.2 on an RTX 4090, 312 on an A100): whole TFLOP/s moved
    a ridge up to 0.27% off the model line it derives (MI250X: 192 for 191.5)."""
    return f"{x / 1e12:,.1f}".removesuffix(".0") + " TFLOP/s"


def _per(n: float) -> str:
    """Bytes per element: "1 byte", "2 bytes", "0.5 bytes"."""
    return f"{n:g} byte" + ("" if n == 1 else "s")


def _params(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else _sig(x)


class _Derivation:
    """Each derivation's text, worked with the numbers the model uses (``Setup``'s weights, FLOPs, KV bytes, one
    GPU's share under TP, the KV accounting), so the value it ends with is the one ``pytest FILE`` checks the ink
    against: what holds for a bf16 dense model only (weight bytes = 2P, FLOPs = 2P) is never assumed. A figure the
    model cannot give for this setup leaves the derivation in words (``_WORDS``)."""

    def __init__(self, setup: Setup, tp: int) -> None:
        self.s, self.tp, self.m = setup, tp, setup.model
        self.moe = self.m.is_moe and not self.m.is_nominal

    # -- the shared pieces -------------------------------------------------------------------------------------
    def _flops(self) -> str:
        """FLOPs per token (one GPU's under TP), with where they come from: 2 × the active parameters."""
        s = self.s
        active = float(self.m.active_param_count())
        which = (f"2 × {_params(active)} active params (the shared weights and each layer's top-"
                 f"{self.m.num_experts_per_tok} of {self.m.num_experts} experts)" if self.moe else
                 f"2 × {_params(active)} params")
        text = f"FLOPs per token {_gflop(s.flop_per_token)} ({which})"
        if self.tp > 1:
            text += f" ÷ TP {self.tp} = {_gflop(s.flop_per_token_per_gpu)} per GPU"
        return text

    def _kv_seq(self) -> str:
        s = self.s
        ctx = float(s.kv_context_tokens)
        per_gpu = " per GPU" if self.tp > 1 else ""
        return (f"KV bytes per sequence{per_gpu} at {ctx:,.0f} tokens ({ctx:,.0f} × "
                f"{s.kv_bytes_per_token_per_gpu:,.0f} B = {_bytes(s.kv_bytes_per_seq_per_gpu_at(None))})")

    def _weights_per_gpu(self) -> str:
        return ("weights per GPU " if self.tp > 1 else "weight bytes ") + _bytes(self.s.weight_bytes_per_gpu)

    # -- one per prediction ------------------------------------------------------------------------------------
    def params(self) -> str:
        m = self.m
        if m.is_nominal:
            return f"P as given (a nominal model: no shape to count from) = {_params(float(m.param_count()))}"
        layers = m.non_embedding_param_count() - m.projection_param_count()
        mlp = f"router + {m.num_experts} experts" if self.moe else "MLP"
        text = (f"P from config.json: embeddings {m.embedding_param_count():,} + {m.num_layers} layers × "
                f"(attention + {mlp}) and the final norm {layers:,}")
        if m.projection_param_count():
            text += f" + the embedding projections {m.projection_param_count():,}"
        if m.lm_head_param_count():
            text += f" + the untied lm_head {m.lm_head_param_count():,}"
        if m.encoder_params:
            text += f" + the encoder {m.encoder_params:,}"
        return text + f" = {_params(float(m.param_count()))}"

    def weights(self) -> str:
        s, p = self.s, float(self.m.param_count())
        scheme = s.quantization
        if scheme is None:
            per = s.weight_bytes / p
            return f"P {_params(p)} × {_per(per)} per parameter ({s.weight_dtype}) = {_bytes(s.weight_bytes)}"
        q = float(quantization.quantized_linear_param_count(scheme, self.m)) if not self.m.is_nominal else p
        if q > p:  # the scheme's linears are counted on a shape the parameter count does not have (MLA attention)
            return (f"{scheme.label()}: the quantized linears at {_per(scheme.weight_bits / 8)} "
                    f"({scheme.weight_dtype}), their scales and the rest at the activation dtype "
                    f"(model/quantization.py) = {_bytes(s.weight_bytes)}")
        full = dtypes.DTYPES[dtypes.canonical(s.activation_dtype)].weight_bytes or 2.0
        scales = s.weight_bytes - q * scheme.weight_bits / 8.0 - (p - q) * full
        text = (f"{scheme.label()}: the quantized linears' {_params(q)} params × {_per(scheme.weight_bits / 8)} "
                f"({scheme.weight_dtype}) + their scales{' and zero points' if scheme.zero_point else ''} "
                f"{_bytes(scales)}")
        if p > q:
            text += (f" + the other {_params(p - q)} params (embeddings, lm_head, norms) × {_per(full)} "
                     f"({dtypes.canonical(s.activation_dtype)})")
        return text + f" = {_bytes(s.weight_bytes)}, not P × {_per(scheme.weight_bits / 8)}"

    def kv_bytes_per_token(self) -> str:
        s, m = self.s, self.m
        if getattr(m, "is_mla", False):
            per = s.kv_bytes_per_token / (m.num_layers * (m.kv_lora_rank + m.qk_rope_head_dim))
            return (f"{m.num_layers} layers × (kv_lora_rank {m.kv_lora_rank} + qk_rope_head_dim "
                    f"{m.qk_rope_head_dim}) × {_per(per)} ({s.kv_dtype}): MLA caches one latent per layer, no K "
                    f"and V heads = {s.kv_bytes_per_token:,.0f} B")
        per = s.kv_bytes_per_token / (2 * m.num_layers * m.num_kv_heads * m.head_dim)
        return (f"{m.num_layers} layers × {m.num_kv_heads} KV heads × {m.head_dim} head dim × 2 (K and V) × "
                f"{_per(per)} ({s.kv_dtype}) = {s.kv_bytes_per_token:,.0f} B")

    def weights_per_gpu(self) -> str:
        s = self.s
        text = f"weights {_bytes(s.weight_bytes)} ÷ TP {self.tp}"
        if s.kv_replica_weight_bytes:
            text += (f" + the K/V projections copied on each GPU (TP {self.tp} > {self.m.num_kv_heads} KV heads) "
                     f"{_bytes(s.kv_replica_weight_bytes)}")
        return text + f" = {_bytes(s.weight_bytes_per_gpu)}"

    def ridge(self) -> str:
        s = self.s
        why = ""
        if s.quantization is not None and not s.quantization.activations_quantized:
            why = f": W{s.quantization.weight_bits:g}A16 multiplies at the activation dtype"
        elif s.quantization is not None and s.compute_dtype != s.quantization.weight_dtype:
            why = f": no {s.quantization.weight_dtype} peak on {s.hardware.id}, run weight-only"
        return (f"peak {_tflops(s.peak_flop_per_s)} ({s.compute_dtype}{why}) ÷ bandwidth "
                f"{s.hbm_bytes_per_s / 1e9:,.0f} GB/s (the spec sheet) = {_sig(self._ridge())} FLOP/byte")

    def _ridge(self) -> float:
        return self.s.peak_flop_per_s / self.s.hbm_bytes_per_s

    def weight_only_knee(self) -> str:
        s = self.s
        w, f = s.weight_bytes_per_gpu, s.flop_per_token_per_gpu
        read = " (every expert: a batch this large routes tokens to all of them)" if self.moe else ""
        return (f"weight-only intensity = FLOPs per token × B ÷ weight bytes read per step, with {self._flops()} and "
                f"{self._weights_per_gpu()}{read}: {_sig(f / w)} × B FLOP/byte; it reaches the ridge at B* = ridge × "
                f"weight bytes ÷ FLOPs per token = {_sig(self._ridge())} × {_bytes(w)} ÷ {_gflop(f)} = "
                f"{_sig(self._ridge() * w / f)}")

    def intensity_asymptote(self) -> str:
        s = self.s
        value = s.flop_per_token_per_gpu / s.kv_bytes_per_seq_per_gpu_at(None)
        return (f"{self._flops()} ÷ {self._kv_seq()} = {_sig(value)} FLOP/byte: the intensity decode tends to as B "
                "grows")

    def knee(self) -> str:
        s = self.s
        f, kv, w = s.flop_per_token_per_gpu, s.kv_bytes_per_seq_per_gpu_at(None), s.weight_bytes_per_gpu
        asymptote, ridge = f / kv, self._ridge()
        if asymptote <= ridge:
            return (f"the batch where the KV-inclusive intensity reaches the ridge; here the asymptote "
                    f"{_sig(asymptote)} FLOP/byte {'=' if asymptote == ridge else '<'} ridge {_sig(ridge)} "
                    "FLOP/byte, so it never does (throughput only flattens): none")
        per_seq = f / ridge  # the bytes one sequence's FLOPs cover at the ridge
        return (f"the batch where the KV-inclusive intensity reaches the ridge (asymptote {_sig(asymptote)} > "
                f"ridge {_sig(ridge)} FLOP/byte): B* = {self._weights_per_gpu()} ÷ (FLOPs per token "
                f"{_gflop(f)} ÷ ridge − {self._kv_seq()}) = {_bytes(w)} ÷ ({_bytes(per_seq, 5)} − "
                f"{_bytes(kv, 5)}) = {_sig(w / (per_seq - kv))}")

    def batch1_ceiling(self) -> str:
        s = self.s
        read = s.weight_bytes_read_per_token_pass(1)
        what = (f"the weight bytes one token reads{' per GPU' if self.tp > 1 else ''} {_bytes(read)} (the shared "
                f"weights and each layer's top-{self.m.num_experts_per_tok} of {self.m.num_experts} experts)"
                if self.moe else f"{self._weights_per_gpu()}: one weight read per token")
        bw = "one GPU's bandwidth" if self.tp > 1 else "bandwidth"
        return (f"{bw} {s.hbm_bytes_per_s / 1e9:,.0f} GB/s ÷ {what} = "
                f"{_sig(s.hbm_bytes_per_s / read)} tok/s")

    def kv_blocks(self) -> str:
        s = self.s
        acc = kv_accounting(s)
        if acc.explicit_pool or acc.budget_bytes is None:
            return (f"the explicit KV pool {acc.available_kv_bytes / GIB:,.2f} GiB ÷ "
                    f"{acc.bytes_per_block / MIB:.4g} MiB per block, rounded down = {acc.num_blocks:,}")
        util, total = acc.gpu_memory_utilization or 0.0, acc.total_memory_bytes or 0.0
        per_gpu = " per GPU" if self.tp > 1 else ""
        block = acc.bytes_per_block
        if block == s.kv_bytes_per_token_per_gpu * s.block_size:
            per_block = f"KV bytes per token{per_gpu} {s.kv_bytes_per_token_per_gpu:,.0f} B × block size {s.block_size}"
        else:  # a KV-cache group of the hybrid allocator: a page of the layers sharing one block
            page = self.m.kv_page_bytes_per_layer(s.block_size, s.kv_dtype, self.tp)
            per_block = (f"block size {s.block_size} × {page / s.block_size:,.0f} B per token per layer × "
                         f"{block / page:g} layers sharing a block: vLLM's hybrid allocator for sliding-window "
                         "layers")
        return (f"(utilization {util:g} × memory {total / GIB:,.2f} GiB = budget {acc.budget_bytes / GIB:,.2f} GiB "
                f"− weights{per_gpu} {acc.weight_bytes / GIB:,.3f} GiB − reserves: activations "
                f"{acc.activation_bytes / GIB:,.3f} GiB, non-torch {acc.non_torch_bytes / GIB:,.3f} GiB, CUDA graphs "
                f"{acc.cuda_graph_bytes / GIB:,.3f} GiB = {acc.available_kv_bytes / GIB:,.3f} GiB) ÷ "
                f"({per_block} = {block / MIB:.4g} MiB per block), rounded down = {acc.num_blocks:,}")

    def throughput(self, b: int) -> str:
        s, m = self.s, self.m
        step = s.decode_step(b)
        if self.moe:
            read = an.moe_experts_read(m.num_experts, m.num_experts_per_tok, b)
            weights = (f"the weights {b} tokens read{' per GPU' if self.tp > 1 else ''} {_bytes(step.weight_bytes)} "
                       f"(the shared weights and "
                       f"{m.num_experts} × (1 − (1 − {m.num_experts_per_tok}/{m.num_experts})^{b}) = {_sig(read, 3)} "
                       "experts a layer)")
        else:
            weights = self._weights_per_gpu()
        step_time = (f"(max(t_mem, t_comp) + the all-reduces at TP {self.tp})" if step.t_allreduce_s
                     else "max(t_mem, t_comp)")
        text = (f"B ÷ {step_time} at B = {b}: t_mem = ({weights} + {b} × {self._kv_seq()}) "
                f"÷ {s.hbm_bytes_per_s / 1e9:,.0f} GB/s = {_sig(step.t_mem_s * 1e3)} ms, t_comp = {b} × "
                f"{_gflop(s.flop_per_token_per_gpu)} ÷ {_tflops(s.peak_flop_per_s)} = "
                f"{_sig(step.t_comp_s * 1e3)} ms")
        if step.t_allreduce_s:
            text += f", all-reduces {_sig(step.t_allreduce_s * 1e3)} ms"
        return (text + f"; {b} ÷ {_sig(step.t_step_s * 1e3)} ms = {_sig(step.throughput_tok_per_s)} tok/s: "
                "a ceiling")


#: each derivation in words, where the setup's numbers cannot be had (a nominal model without the shape, a chip
#: without a figure): what it was before numbers were written in
_WORDS = {
    "params": "P from config.json: embeddings + layers × (attention + MLP) (+ the untied lm_head)",
    "weights": "P × bytes per parameter, or under a quantization scheme the quantized linears at its width, their "
               "scales and the rest at the activation dtype",
    "kv_bytes_per_token": "layers × KV heads × head dim × 2 (K and V) × bytes",
    "weights_per_gpu": "weights ÷ TP (+ K/V heads replicated when TP > KV heads)",
    "ridge": "peak FLOP/s at the dtype the matmuls run at ÷ bandwidth (the spec sheet)",
    "weight_only_knee": "weight-only intensity = FLOPs per token × B ÷ weight bytes read per step, so B* = ridge × "
                        "weight bytes ÷ FLOPs per token",
    "intensity_asymptote": "FLOPs per token (2 × active params) ÷ KV bytes per sequence: the intensity decode tends "
                           "to as B grows",
    "knee": "the batch where the KV-inclusive intensity reaches the ridge: B* = weights ÷ (FLOPs per token ÷ ridge − "
            "KV bytes per sequence); asymptote < ridge: none",
    "batch1_ceiling": "bandwidth ÷ the weight bytes one token reads (per GPU under TP)",
    "kv_blocks": "(utilization × memory − weights − reserves) ÷ (KV bytes per token × block size)",
    "throughput": "B ÷ max((weights + B × KV per sequence) ÷ bandwidth, B × FLOPs per token ÷ peak) (+ the "
                  "all-reduces under TP): a ceiling",
}


def _derive(d: _Derivation, name: str, *args: Any) -> str:
    try:
        text: str = getattr(d, name)(*args)
    except (RooflineError, ValueError, ArithmeticError, AttributeError, TypeError):
        return _WORDS[name]
    return text


def _items(setup: Setup, input_len: int, tp: int) -> list[Item]:
    d = _Derivation(setup, tp)
    items = [
        Item("params", "param_count", _derive(d, "params")),
        Item("weights", "weight_bytes", _derive(d, "weights")),
        Item("kv-bytes-per-token", "kv_bytes_per_token", _derive(d, "kv_bytes_per_token")),
    ]
    if tp > 1:
        items.append(Item("weights-per-gpu", "weight_bytes_per_gpu", _derive(d, "weights_per_gpu")))
    items += [
        Item("ridge", "ridge_point", _derive(d, "ridge")),
        Item("naive-knee", "weight_only_knee", _derive(d, "weight_only_knee")),
        Item("kv-intensity-asymptote", "intensity_asymptote", _derive(d, "intensity_asymptote")),
        Item("knee", "knee_concurrency", _derive(d, "knee"), ink_hint="a number, or none"),
        Item("batch1-ceiling", "batch1_ceiling", _derive(d, "batch1_ceiling")),
        Item("kv-blocks", "num_gpu_blocks", _derive(d, "kv_blocks")),
    ]
    for c in CONCURRENCY[1:]:
        items.append(Item(f"throughput-c{c}", "output_throughput", _derive(d, "throughput", c),
                          at=f"{{concurrency: {c}}}"))
    items.append(Item("littles-law", "littles_law_ratio", "closed loop: L = C, so req/s × mean latency gives back C",
                      at="{concurrency: every}",
                      ink_hint="1.00 with tolerance ±2%, as the notebook wrote it"))
    return items


def _at_mapping(at: str) -> dict[str, Any]:
    if not at:
        return {}
    key, _, value = at.strip("{} ").partition(":")
    value = value.strip()
    return {key.strip(): int(value) if value.isdigit() else value}


def _model_text(setup: Setup, item: Item) -> str:
    """The analytical model's value, as the file would write it (``—`` for a measured-only quantity)."""
    q = QUANTITIES[item.quantity]
    if q.model is None or "every" in item.at:
        return "— (measured only)"
    mv = q.model(setup, _at_mapping(item.at))
    if mv.value is None:
        return "none"
    if q.dimension == "count" and float(mv.value).is_integer():
        return f"{int(mv.value):,}"
    return format_value(float(mv.value), q.dimension, _UNITS.get(item.quantity))


def _band_text(setup: Setup, item: Item) -> str:
    """For a roofline ceiling (batch-1 tokens/s), the band measured runs land in (model/bands.py); for a
    throughput ceiling at a concurrency vLLM cannot run at once (the pool, max_num_seqs: ``predict.cannot_run``,
    the rows ``roofline predict`` marks ``*``), that caveat; else ''."""
    q = QUANTITIES[item.quantity]
    if item.quantity == "output_throughput":
        c = _at_mapping(item.at).get("concurrency")
        why = cannot_run(setup, kv_pool(setup), c) if isinstance(c, int) else None
        return (f"; vLLM cannot run {c} at once here ({why}): the ceiling is arithmetic only, a measured run "
                "queues or preempts below it") if why else ""
    if item.quantity == "num_gpu_blocks" and int(setup.tensor_parallel_size or 1) > 1:
        return f"; {TP_POOL_CAVEAT.strip().strip('()')}"
    if item.quantity == "batch1_ceiling":  # the ceiling itself: checked as arithmetic (trial s26b #2), its landing
        # range is batch1_throughput's to say (trial s26d #3: a range here quoted the ceiling as its top, above the
        # batch-1 bound the check applies, and a floor the check did not use)
        return ("; checked as arithmetic, to the precision written: a run's batch-1 figure, below it, is "
                "batch1_throughput")
    if item.quantity not in bands.ROOFLINE_CEILINGS or q.model is None:
        return ""
    moe = setup.model.is_moe and not setup.model.is_nominal
    tp = max(1, int(setup.tensor_parallel_size or 1))
    band = bands.roofline_fraction_band(moe=moe, tp=tp)
    if band is None:
        reason = bands.ceiling_no_band_reason(moe=moe, tp=tp)
        return f"; {reason}" if reason else ""
    at = _at_mapping(item.at)
    ceiling = float(q.model(setup, at).value)
    # the band is a share of the roofline's batch-1 step rate (weights, KV, all-reduces), as scoring checks it
    rate = batch1_step_rate(setup, at, ceiling)
    lo = rate * band.lo
    of = "it" if rate >= ceiling else f"the roofline's batch-1 step rate {format_value(rate, q.dimension)}"
    return (f"; band: measured runs reach {band.lo:.0%} of {of} up to the ceiling ({format_value(lo, q.dimension)} "
            f"to {format_value(ceiling, q.dimension)}, model/bands.py)")


#: the probe prediction init's setup is loaded with to ask the serving model for its values (the file's own
#: predictions are blank, which the reader refuses)
_PROBE = "  - {id: probe, quantity: output_throughput, at: {concurrency: 1}, predicted: model}\n"


def _one_line(exc: BaseException) -> str:
    """An error as one comment line's text (a SpecError carries its fix on a line of its own)."""
    return " ".join(str(exc).split())


def _serving_texts(head: str, setup: Setup, concurrencies: Sequence[int]) -> dict[int, str]:
    """For each concurrency, the line init writes under a throughput ceiling: the serving model's value and its band,
    as the CPU-only check reads them (``scoring.serving_sweep_for`` on the file's own setup and sweep, the band's
    ratios applied to the value as ``scoring._serving_column`` does), else why there is no band."""
    from pytest_roofline.format.spec import SpecError, loads_spec
    from pytest_roofline.scoring import serving_sweep_for

    q = QUANTITIES["output_throughput"]
    metric = "output_throughput_tok_per_s"
    try:
        spec = loads_spec(head + _PROBE, file="<roofline init>")
        sweep = serving_sweep_for(spec, None, setup)
    except (SpecError, RooflineError, ValueError, ArithmeticError) as exc:
        return {c: f"serving model: not computed here ({_one_line(exc)})" for c in concurrencies}
    out = {}
    for c in concurrencies:
        try:
            value = q.serving(sweep, {"concurrency": c}, spec.thresholds).value if q.serving else None
            _p, pp = sweep.at({"concurrency": c})
        except (RooflineError, ValueError, ArithmeticError, KeyError) as exc:
            out[c] = f"serving model: not computed here ({_one_line(exc)})"
            continue
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            out[c] = "serving model: no value at this point"
            continue
        text = f"serving model: {format_value(float(value), q.dimension)}"
        band, at_point = pp.bands.get(metric), float(getattr(pp, metric))
        if band and at_point:
            lo, hi = (float(value) * b / at_point for b in band)
            unit = format_value(hi, q.dimension).rpartition(" ")[2]
            out[c] = (f"{text}, band {format_value(lo, q.dimension).removesuffix(' ' + unit)}–"
                      f"{format_value(hi, q.dimension)} (the CPU-only check passes ink inside it)")
        else:
            why = pp.band_notes.get(metric) or "no band: the accuracy corpus has no measured runs of this regime"
            out[c] = f"{text}; {why.split(bands.NOTE_RANGE_SEP)[0]}"
    return out


def _refuse_impossible(setup: Setup, model: str, workload: dict[str, Any]) -> None:
    """A ValueError (``roofline: ...``, exit status 2, no file written) for a setup vLLM would not start (the
    weights or the reserves leave no KV pool: ``predict.memory_fit_error``) or a request it would reject (longer
    than max_model_len: ``predict.length_error``). A file of such a setup could not be measured, and its model
    values (a pool of 0 blocks, a batch-1 ceiling) would invite ink for a run that cannot happen."""
    def rebuild(tp: int) -> Setup:
        return build_setup(hardware_ref=setup.hardware.id, model_ref=model, workload=workload,
                           engine={"name": "vllm", "args": {"tensor_parallel_size": tp}})

    # init writes max_model_len where the model's default does not fit (_max_model_len_that_starts), so a TP
    # degree whose pool holds one request of the workload is one init accepts; init writes no pipeline stages
    err = memory_fit_error(setup, rebuild=rebuild, mml_flag=None, util_flag=None, pp_flag=None,
                           request_tokens=int(setup.input_len) + int(setup.output_len),
                           quantized="a quantized checkpoint (--model of an FP8, AWQ or GPTQ checkpoint)")
    if err is None:
        err = length_error(setup, lengths_flag="--workload INPUT/OUTPUT")
    if err:
        raise ValueError(f"{err}; no file written")


def _max_model_len_that_starts(setup: Setup, request_tokens: int, rebuild: Any) -> tuple[int | None, str]:
    """Where vLLM would refuse to start ``setup`` for a KV pool short of one request of the model's default
    max_model_len (``model.setup.max_model_len_problem``): the max_model_len to write instead and the comment
    saying why; (None, "") where the default starts.  The value is a fixed point: the largest multiple of 1,024
    whose pool, at that max_model_len, holds one request of it (``model.setup.fixed_point_max_model_len``, the
    search ``max_model_len_problem``'s advice uses too; a sliding-window model's pool
    holds fewer tokens at a shorter max_model_len, so the pool at the default is not the bound), or, below the
    workload's ``request_tokens``, the largest whole number that holds.  ``rebuild(n)``: the setup at max_model_len
    ``n``, as the file writes it."""
    if max_model_len_problem(setup) is None:
        return None, ""
    acc = kv_accounting(setup)
    default = effective_max_model_len(setup.max_model_len, setup.model) or 0
    held_default = reported_kv(setup, acc, default).kv_cache_tokens
    cache: dict[int, int] = {}

    def held(n: int) -> int:
        if n not in cache:
            cache[n] = held_at(setup, n, rebuild)
        return cache[n]

    largest = longest_max_model_len(setup, rebuild, held=held)  # the longest max_model_len that starts at all
    mml = fixed_point_max_model_len(largest, held, 1024)
    if mml < request_tokens:
        mml = largest
    at = held(mml) if mml else 0
    moved = (f"; at max_model_len {mml:,} it holds {at:,} (sliding-window layers hold more tokens of a longer "
             "max_model_len)" if at != held_default else "")
    return mml, (f"max_model_len {mml:,}: the KV pool holds {held_default:,} tokens, less than one request of the "
                 f"model's default {default:,}, and vLLM will not start so{moved} (write your own, up to "
                 f"{largest:,})")


def model_as_written(model: str, output: Path | None) -> str:
    """``--model`` as the file at ``output`` must write it: a relative path to a config.json (or a model folder)
    that exists from here is rewritten relative to ``output``'s folder, which is where a prediction file's relative
    ``model:`` path is read from (format/_sections.py); an absolute path (``~/...`` too), a preset, a Hub id, and
    anything written to stdout (``output`` None) are kept as the user gave them."""
    path = Path(model).expanduser()
    if output is None or path.is_absolute():
        return model
    try:
        if not path.exists():
            return model
        rel = os.path.relpath(path.resolve(), output.resolve().parent)
    except (OSError, ValueError):  # unreadable, or another drive (Windows): the absolute path always reads
        return str(path.resolve())
    return Path(rel).as_posix()


def render(*, gpu: str, model: str, tp: int = 1, input_len: int = 1024, output_len: int = 1024,
           command: str = "", written_model: str | None = None) -> str:
    """The prediction file's text: the setup, then every prediction with its derivation, the model's value and
    a blank ``predicted:``. ``model`` is read from here (the working directory); ``written_model`` is what the
    file's ``model:`` line says (default ``model``): a path relative to the file's own folder
    (:func:`model_as_written`)."""
    spec = hardware.get_hardware(gpu)
    engine: dict[str, Any] = {"name": "vllm", "args": {"tensor_parallel_size": tp} if tp > 1 else {}}
    workload = {"input_len": input_len, "output_len": output_len}
    setup = build_setup(hardware_ref=spec.id, model_ref=model, engine=engine, workload=workload)
    _refuse_impossible(setup, model, workload)
    def at_length(n: int) -> Setup:  # the file's setup with max_model_len n, as the file would write it
        return build_setup(hardware_ref=spec.id, model_ref=model, workload=workload,
                           engine={**engine, "args": {**engine["args"], "max_model_len": n}})

    mml, mml_why = _max_model_len_that_starts(setup, input_len + output_len, at_length)
    if mml is not None:  # the model's default length does not fit the pool: write one that does
        engine["args"]["max_model_len"] = mml
        setup = build_setup(hardware_ref=spec.id, model_ref=model, engine=engine, workload=workload)
    warn = max_model_len_warning(setup, mml_flag="engine.args.max_model_len")
    note = hardware.family_note(gpu)
    lines = [
        f"# Written by `{command or 'roofline init'}`,",
        "# on the Day 3 notebook's pattern: every number below is yours to predict in ink, from the spec sheet",
        "# and the model's config, BEFORE the sweep runs. Each prediction carries its derivation and the",
        "# analytical model's value; write your own value, with its unit, on its `predicted:` line, then:",
        "#   roofline check THIS_FILE       # names every blank left, with its line",
        "#   pytest THIS_FILE               # the math: your ink against the model, no GPU needed",
        f"#   pytest --gpu {spec.family} THIS_FILE  # measured, on that GPU with vLLM installed",
    ]
    if note:
        lines.append(f"# --gpu {note}")
    if warn:  # the file is still worth writing: one engine.args.max_model_len line makes it runnable
        lines.append(f"# warning: {warn}")
    lines += [
        f'title: "{model} on {spec.id}' + (f" (TP {tp})" if tp > 1 else "") + '"',
        f"hardware: {spec.id}",
        f"model: {written_model or model}",
        "engine:",
        "  name: vllm",
    ]
    args = dict(engine["args"])
    if args:
        if mml is not None:
            lines.append(f"  # {mml_why}")
        lines.append("  args: {" + ", ".join(f"{k}: {v}" for k, v in args.items()) + "}")
    lines += [
        f"workload: {{input_len: {input_len}, output_len: {output_len}}}",
        f"sweep: {{mode: closed, concurrency: [{', '.join(str(c) for c in CONCURRENCY)}], requests_per_point: 10x}}",
        "defaults:",
        "  tolerance: ±15%        # how close a measurement must come to your ink",
        "  math_tolerance: ±1%    # how close your ink must come to the model's arithmetic (rounding)",
        "",
        "predictions:",
    ]
    items = _items(setup, input_len, tp)
    # the setup as read from here (the file's model: line leads from its own folder; the probe has none)
    head = "\n".join(lines).replace(f"\nmodel: {written_model or model}\n", f"\nmodel: {model}\n") + "\n"
    serving = _serving_texts(head, setup,
                             [c for c in (_at_mapping(i.at).get("concurrency") for i in items
                                          if i.quantity == "output_throughput") if isinstance(c, int)])
    for item in items:
        lines.append(f"  - id: {item.id}")
        lines.append(f"    quantity: {item.quantity}")
        if item.at:
            lines.append(f"    at: {item.at}")
        lines.append(f"    # derivation: {item.derivation}")
        lines.append(f"    # model: {_model_text(setup, item)}" + _band_text(setup, item)
                     + (f"; ink: {item.ink_hint}" if item.ink_hint else ""))
        c = _at_mapping(item.at).get("concurrency")
        if item.quantity == "output_throughput" and c in serving:
            lines.append(f"    # {serving[c]}")
        if item.quantity == "littles_law_ratio":
            lines.append("    tolerance: ±2%")
        lines.append("    predicted:              # <- your value, in ink")
    return "\n".join(lines) + "\n"


def cmd_init(args: argparse.Namespace) -> int:
    command = f"roofline init --gpu {args.gpu} --model {args.model}" + (f" --tp {args.tp}" if args.tp > 1 else "")
    command += f" --workload {args.workload[0]}/{args.workload[1]}"
    out = None if args.output in (None, "-") else Path(args.output)
    written = model_as_written(args.model, out)
    text = render(gpu=args.gpu, model=args.model, tp=args.tp, input_len=args.workload[0],
                  output_len=args.workload[1], command=command, written_model=written)
    if out is None:
        sys.stdout.write(text)
        return 0
    if out.exists() and not args.force:
        raise FileExistsError(f"{out} exists: choose another -o, or --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    if written != args.model:
        print(f"roofline: model: {written} (--model {args.model}, written relative to {out.parent}, the folder "
              "a prediction file's model path is read from)", file=sys.stderr)
    for line in text.splitlines():
        if line.startswith("# warning: "):
            print(f"roofline: {line[2:]}", file=sys.stderr)
    print(f"wrote {out}: fill in each `predicted:`, then `roofline check {out}`", file=sys.stderr)
    return 0
