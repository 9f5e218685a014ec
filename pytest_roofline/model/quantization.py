"""Weight quantization as a scheme: how many bits a quantized linear weight takes, its scales and zero points,
which tensors stay at full width, and whether the activations are quantized too.

A :class:`QuantScheme` is separate from the KV-cache dtype: vLLM's ``--kv-cache-dtype auto`` stores KV at the
model's activation dtype (``model_config.dtype``), never at the weight-quantization width (vLLM
``vllm/utils/__init__.py`` ``get_kv_cache_torch_dtype`` and the V1 ``gpu_model_runner.py``: ``if cache_dtype ==
"auto": cache_dtype = model_config.dtype``; github.com/vllm-project/vllm, v0.10.0).  So an FP8 checkpoint keeps a
bf16 KV cache unless ``kv_cache_dtype: fp8`` is given.

Weight bytes of a checkpoint under a scheme (:func:`weight_bytes`)::

    quantized linear weights x bits / 8
  + scales  (one per group of ``group_size`` input elements of each output row, per output row, per tensor or
             per block, at ``scale_bytes`` each)
  + zero points (asymmetric schemes: one per scale, packed at ``bits`` bits, as AWQ/GPTQ ``qzeros``)
  + every other tensor (embedding, lm_head unless quantized, norms, biases, MoE routers) at the activation dtype

Which modules are quantized follows what vLLM does with a checkpoint: the decoder layers' linear projections
(q/k/v/o, gate/up/down, routed and shared experts); the input embedding never (vLLM's VocabParallelEmbedding has
no quantized method for AWQ/GPTQ/FP8/compressed-tensors); the lm_head only where the config says so (GPTQ/AWQ
``lm_head: true``); MoE routers never (Mixtral/Qwen-MoE build their ``gate`` as ``ReplicatedLinear(...,
quant_config=None)``, vllm/model_executor/models/mixtral.py, qwen3_moe.py).  ``modules_to_not_convert`` (AWQ),
``ignored_layers`` (FP8) and ``ignore`` (compressed-tensors, with ``re:`` patterns) keep further modules at full
width.

Checked against published sizes (tests/test_quantization.py): nm-testing/Meta-Llama-3.1-8B-Instruct-FP8-hf
(static per-tensor FP8, ``ignore: [lm_head]``) holds 8.4575 GiB of parameters as loaded by transformers
(huggingface.co/docs/transformers/quantization/compressed_tensors); this module gives 8.4575 GiB.  vLLM 0.5.4
loads Llama-3.1-8B-Instruct AWQ / GPTQ 4-bit g128 checkpoints as "Loading model weights took 5.3748 / 5.3494 GB"
(its V0 line divides by 2**30; The Kaitchup, kaitchup.substack.com/p/the-best-quantization-methods-to); this module
gives 5.3345 GiB, 5.3657 with the 0.031 GiB rotary cos/sin cache vLLM also holds (-0.2%, +0.3%), and the KV block
counts of those runs within 0.6%.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_roofline.errors import ModelConfigError
from pytest_roofline.model import dtypes
from pytest_roofline.model.model_arch import ModelArch

__all__ = ["QuantMethod", "QuantScheme", "from_hf_quantization_config", "from_spec", "from_vllm_name",
           "weight_bytes", "quantized_linear_param_count", "VLLM_QUANTIZATION_NAMES"]


class QuantMethod(enum.StrEnum):
    """How a checkpoint is quantized (config.json ``quant_method``)."""

    NONE = "none"
    FP8 = "fp8"  # vLLM's fp8 method: a bf16/fp16 checkpoint quantized on load, or an FP8 checkpoint
    AWQ = "awq"
    GPTQ = "gptq"
    COMPRESSED_TENSORS = "compressed-tensors"  # llm-compressor checkpoints (FP8, W8A8 int8, W4A16 ...)
    BITSANDBYTES = "bitsandbytes"
    INT8 = "int8"  # a generic W8A8 int8 scheme written by hand


class ScaleGranularity(enum.StrEnum):
    TENSOR = "tensor"
    CHANNEL = "channel"  # one scale per output row
    GROUP = "group"  # one scale per group_size input elements of each output row
    BLOCK = "block"  # one scale per (block_n x block_k) tile (DeepSeek-style FP8)


#: how a quantized weight element is stored: an integer code (AWQ, GPTQ, int8) or a float (FP8 e4m3, FP4)
WeightType = Literal["int", "float"]


#: vLLM ``--quantization`` names this module understands -> the method they read a checkpoint as
#: (vllm/model_executor/layers/quantization/__init__.py ``QuantizationMethods``, v0.10.0: the *_marlin kernels
#: read the same checkpoints as awq/gptq; fbgemm_fp8 and ptpc_fp8 are FP8 weights with FP8 activations)
VLLM_QUANTIZATION_NAMES: Mapping[str, QuantMethod] = {
    "fp8": QuantMethod.FP8, "fbgemm_fp8": QuantMethod.FP8, "ptpc_fp8": QuantMethod.FP8,
    "awq": QuantMethod.AWQ, "awq_marlin": QuantMethod.AWQ,
    "gptq": QuantMethod.GPTQ, "gptq_marlin": QuantMethod.GPTQ,
    "compressed-tensors": QuantMethod.COMPRESSED_TENSORS, "compressed_tensors": QuantMethod.COMPRESSED_TENSORS,
    "bitsandbytes": QuantMethod.BITSANDBYTES,
}


@dataclass(frozen=True)
class QuantScheme:
    """One weight-quantization scheme (SI units: bytes)."""

    method: QuantMethod
    weight_bits: float  # bits per quantized weight element
    weight_type: WeightType = "int"
    granularity: ScaleGranularity = ScaleGranularity.GROUP
    group_size: int | None = 128  # input elements per scale (GROUP); None otherwise
    block_shape: tuple[int, int] | None = None  # (n, k) of a scale tile (BLOCK)
    zero_point: bool = False  # asymmetric: a zero point per scale, packed at weight_bits
    scale_bytes: float = 2.0  # fp16/bf16 scales (AWQ/GPTQ/compressed-tensors); FP8 per-tensor scales are fp32
    activations_quantized: bool = False  # W8A8: the matmul runs at the weight dtype's peak
    static_activation_scale: bool = False  # an input_scale per linear is stored
    lm_head_quantized: bool = False
    not_converted: tuple[str, ...] = ()  # module names / ``re:`` patterns kept at full width
    source: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.weight_bits, (int, float)) and 0 < self.weight_bits <= 16):
            raise ModelConfigError(f"quantization: bits must be in (0, 16], got {self.weight_bits!r}")
        if self.granularity is ScaleGranularity.GROUP:
            if not (isinstance(self.group_size, int) and self.group_size > 0):
                raise ModelConfigError(f"quantization: group_size must be a positive integer, got "
                                       f"{self.group_size!r} (-1 or none: one scale per output row)")
        if self.granularity is ScaleGranularity.BLOCK and not self.block_shape:
            raise ModelConfigError("quantization: a block-wise scheme needs weight_block_size [n, k]")

    # -- names --------------------------------------------------------------------------------------------
    @property
    def weight_dtype(self) -> str:
        """The canonical dtype of a quantized weight element (a key of model/dtypes.py)."""
        if self.weight_type == "float" and self.weight_bits == 8:
            return "fp8"
        if self.weight_type == "float" and self.weight_bits == 4:
            return "fp4"
        if self.weight_bits == 8:
            return "int8"
        if self.weight_bits == 4:
            return "int4"
        return f"int{self.weight_bits:g}"

    def compute_dtype(self, activation_dtype: str) -> str:
        """The tensor-core peak the matmuls run at: the weight dtype when activations are quantized too (W8A8),
        else the activation dtype (W4A16/W8A16 dequantise the weight tile and multiply at bf16/fp16)."""
        return self.weight_dtype if self.activations_quantized else dtypes.canonical(activation_dtype)

    def label(self) -> str:
        g = (f" g{self.group_size}" if self.granularity is ScaleGranularity.GROUP else
             f" {self.granularity.value}-scaled")
        a = "A8" if self.activations_quantized else "A16"
        return f"{self.method.value} W{self.weight_bits:g}{a}{g}{' +zero' if self.zero_point else ''}"

    # -- bytes ---------------------------------------------------------------------------------------------
    def scale_count(self, out_features: int, in_features: int) -> int:
        """Scales one quantized ``out x in`` linear stores."""
        if self.granularity is ScaleGranularity.TENSOR:
            return 1
        if self.granularity is ScaleGranularity.CHANNEL:
            return out_features
        if self.granularity is ScaleGranularity.BLOCK:
            assert self.block_shape is not None
            bn, bk = self.block_shape
            return math.ceil(out_features / bn) * math.ceil(in_features / bk)
        assert self.group_size is not None
        return out_features * math.ceil(in_features / self.group_size)

    def linear_bytes(self, out_features: int, in_features: int) -> float:
        """Bytes of one quantized linear: packed weights + scales (+ zero points, + a static input scale)."""
        n = out_features * in_features
        scales = self.scale_count(out_features, in_features)
        b = n * self.weight_bits / 8.0 + scales * self.scale_bytes
        if self.zero_point:
            b += scales * self.weight_bits / 8.0
        if self.static_activation_scale:
            b += self.scale_bytes
        return b

    def is_converted(self, module: str) -> bool:
        """Whether the module named ``module`` (HF name, e.g. ``model.layers.0.self_attn.q_proj``) is quantized
        as far as the ignore lists go."""
        for pat in self.not_converted:
            if pat.startswith("re:"):
                if re.fullmatch(pat[3:], module):
                    return False
            elif module == pat or module.endswith("." + pat) or ("." + pat + ".") in ("." + module + "."):
                return False
        return True


# --------------------------------------------------------------------------- the linears of a model


def _linears(arch: ModelArch) -> Iterator[tuple[str, int, int, int]]:
    """(HF module name, out_features, in_features, how many) of every decoder linear a scheme may quantize."""
    h, q = arch.hidden_size, arch.num_attention_heads * arch.head_dim
    kv = arch.num_kv_heads * arch.head_dim
    for i in range(arch.num_layers):
        p = f"model.layers.{i}"
        if arch.is_mla:
            yield from _mla_linears(arch, p)
        else:
            yield f"{p}.self_attn.q_proj", q, h, 1
            yield f"{p}.self_attn.k_proj", kv, h, 1
            yield f"{p}.self_attn.v_proj", kv, h, 1
            yield f"{p}.self_attn.o_proj", h, q, 1
        if arch.is_moe_layer(i):
            e, mi = arch.num_experts, arch.moe_intermediate_size
            for proj, o, k in (("gate_proj", mi, h), ("up_proj", mi, h), ("down_proj", h, mi)):
                yield f"{p}.mlp.experts.0.{proj}", o, k, e
            si = arch.shared_expert_intermediate_size
            if si:
                for proj, o, k in (("gate_proj", si, h), ("up_proj", si, h), ("down_proj", h, si)):
                    yield f"{p}.mlp.shared_expert.{proj}", o, k, 1
        else:
            it = arch.intermediate_size
            for proj, o, k in (("gate_proj", it, h), ("up_proj", it, h), ("down_proj", h, it)):
                yield f"{p}.mlp.{proj}", o, k, 1


def _mla_linears(arch: ModelArch, p: str) -> Iterator[tuple[str, int, int, int]]:
    """DeepSeek-V2/V3's attention linears with HF ``DeepseekV3Attention``'s names and shapes, as
    :meth:`ModelArch.attention_param_count` counts them (q_a_proj + q_b_proj, or one q_proj when ``q_lora_rank`` is
    null; kv_a_proj_with_mqa; kv_b_proj; o_proj): counting MLA as q/k/v/o of ``heads x head_dim`` put DeepSeek-V3's
    quantized linears at 700.6 G of its 671 G parameters."""
    h, heads = arch.hidden_size, arch.num_attention_heads
    qk_head = arch.qk_nope_head_dim + arch.qk_rope_head_dim
    if arch.q_lora_rank:
        yield f"{p}.self_attn.q_a_proj", arch.q_lora_rank, h, 1
        yield f"{p}.self_attn.q_b_proj", heads * qk_head, arch.q_lora_rank, 1
    else:
        yield f"{p}.self_attn.q_proj", heads * qk_head, h, 1
    yield f"{p}.self_attn.kv_a_proj_with_mqa", arch.kv_lora_rank + arch.qk_rope_head_dim, h, 1
    yield f"{p}.self_attn.kv_b_proj", heads * (arch.qk_nope_head_dim + arch.v_head_dim), arch.kv_lora_rank, 1
    yield f"{p}.self_attn.o_proj", h, heads * arch.v_head_dim, 1


def _quantized_linears(scheme: QuantScheme, arch: ModelArch) -> Iterator[tuple[int, int, int]]:
    for name, o, k, count in _linears(arch):
        if scheme.is_converted(name):
            yield o, k, count
    if scheme.lm_head_quantized and not arch.tie_word_embeddings and scheme.is_converted("lm_head"):
        yield arch.vocab_size, arch.hidden_size, 1


def quantized_linear_param_count(scheme: QuantScheme, arch: ModelArch) -> int:
    """Parameters a scheme stores quantized (the rest stay at the activation dtype)."""
    return sum(o * k * n for o, k, n in _quantized_linears(scheme, arch))


def weight_bytes(scheme: QuantScheme, arch: ModelArch, activation_dtype: str = "bf16") -> float:
    """Bytes of ``arch``'s weights under ``scheme``; full-width tensors at ``activation_dtype``.

    A nominal model (parameters only) has no breakdown: every parameter counts as a quantized weight in groups
    along an unknown input width (scales are then ``P / group_size``)."""
    full_bytes = dtypes.DTYPES[dtypes.canonical(activation_dtype)].weight_bytes or 2.0
    total = float(arch.param_count())
    if arch.is_nominal:
        b = total * scheme.weight_bits / 8.0
        if scheme.granularity is ScaleGranularity.GROUP and scheme.group_size:
            groups = total / scheme.group_size
            b += groups * scheme.scale_bytes + (groups * scheme.weight_bits / 8.0 if scheme.zero_point else 0.0)
        return b
    quant_params = 0
    quant_bytes = 0.0
    for o, k, n in _quantized_linears(scheme, arch):
        quant_params += o * k * n
        quant_bytes += scheme.linear_bytes(o, k) * n
    return quant_bytes + (total - quant_params) * full_bytes


# --------------------------------------------------------------------------- reading config.json


def _int_or_none(v: Any, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
        raise ModelConfigError(f"quantization_config.{what}: expected a whole number, got {v!r}")
    return int(v)


def _names(v: Any, what: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        raise ModelConfigError(f"quantization_config.{what}: expected a list of module names, got {v!r}")
    return tuple(str(x) for x in v)


def _group(group_size: int | None) -> tuple[ScaleGranularity, int | None]:
    """GPTQ/AWQ ``group_size``: -1 (or none) is one scale per output row."""
    if group_size is None or group_size <= 0:
        return ScaleGranularity.CHANNEL, None
    return ScaleGranularity.GROUP, group_size


def from_hf_quantization_config(cfg: Mapping[str, Any], source: str = "config.json") -> QuantScheme:
    """A :class:`QuantScheme` from a HF config.json ``quantization_config`` block.

    Formats read (keys as on the Hub):

    * AWQ (AutoAWQ; hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4): ``{quant_method: awq, bits: 4,
      group_size: 128, zero_point: true, version: gemm, modules_to_not_convert: null}``; fp16 scales and packed
      4-bit ``qzeros`` per group (AutoAWQ's WQLinear_GEMM).
    * GPTQ (AutoGPTQ/GPTQModel): ``{quant_method: gptq, bits, group_size (-1: per channel), desc_act, sym,
      lm_head}``; fp16 scales per group, packed zero points only when asymmetric (as vLLM holds them).
    * FP8 (vLLM's fp8 method): ``{quant_method: fp8, activation_scheme: dynamic|static, ignored_layers,
      weight_block_size}``; one fp32 scale per tensor, or per ``weight_block_size`` tile.
    * FBGEMM FP8 (Meta's Llama-3.1 FP8 releases): ``{quant_method: fbgemm_fp8, activation_scale_ub,
      modules_to_not_convert}``; one fp32 scale per output row, the listed linears unquantized.
    * compressed-tensors (llm-compressor; RedHatAI/neuralmagic checkpoints): ``config_groups`` whose
      ``weights: {num_bits, type: int|float, strategy: tensor|channel|group|block, group_size, symmetric}`` and
      ``input_activations`` (None for weight-only), and ``ignore: [lm_head]``; bf16/fp16 scales as stored.
    * bitsandbytes: ``{quant_method: bitsandbytes, load_in_4bit|load_in_8bit, bnb_4bit_use_double_quant,
      llm_int8_skip_modules}``; 4-bit blocks of 64 with an fp32 absmax each (double quant: an 8-bit absmax plus
      an fp32 scale per 256 blocks); 8-bit: an fp32 scale per output row.
    """
    if not isinstance(cfg, Mapping):
        raise ModelConfigError(f"quantization_config must be a mapping, got {cfg!r}")
    method = str(cfg.get("quant_method", "")).strip().lower().replace("_", "-")
    src = f"{source} quantization_config (quant_method {cfg.get('quant_method')!r})"
    if method == "awq":
        bits = _int_or_none(cfg.get("bits", cfg.get("w_bit", 4)), "bits") or 4
        gran, gs = _group(_int_or_none(cfg.get("group_size", cfg.get("q_group_size", 128)), "group_size"))
        return QuantScheme(QuantMethod.AWQ, bits, "int", gran, gs, zero_point=bool(cfg.get("zero_point", True)),
                           lm_head_quantized=bool(cfg.get("lm_head", False)),
                           not_converted=_names(cfg.get("modules_to_not_convert"), "modules_to_not_convert"),
                           source=src)
    if method == "gptq":
        bits = _int_or_none(cfg.get("bits", 4), "bits") or 4
        gran, gs = _group(_int_or_none(cfg.get("group_size", 128), "group_size"))
        # a GPTQ checkpoint stores qzeros even when symmetric (then a constant), but vLLM serves sym 4/8-bit
        # checkpoints with gptq_marlin, which drops them (``marlin_make_empty_g_idx`` in place of qzeros;
        # vllm/model_executor/layers/quantization/gptq_marlin.py): the weights on the GPU carry zeros only when
        # asymmetric.  vLLM 0.5.4 on one H100 logs 5.3494 GiB (sym) and 5.3767 GiB (asym) for Llama-3.1-8B g128.
        return QuantScheme(QuantMethod.GPTQ, bits, "int", gran, gs, zero_point=not bool(cfg.get("sym", True)),
                           lm_head_quantized=bool(cfg.get("lm_head", False)),
                           not_converted=_names(cfg.get("modules_to_not_convert"), "modules_to_not_convert"),
                           source=src)
    if method == "fp8":
        block = cfg.get("weight_block_size")
        static = str(cfg.get("activation_scheme", "dynamic")).lower() == "static"
        if block:
            if not (isinstance(block, (list, tuple)) and len(block) == 2):
                raise ModelConfigError(f"quantization_config.weight_block_size: expected [n, k], got {block!r}")
            bn, bk = (_int_or_none(x, "weight_block_size") or 1 for x in block)
            return QuantScheme(QuantMethod.FP8, 8, "float", ScaleGranularity.BLOCK, None, (bn, bk),
                               scale_bytes=4.0, activations_quantized=True, static_activation_scale=static,
                               not_converted=_names(cfg.get("ignored_layers"), "ignored_layers"), source=src)
        return QuantScheme(QuantMethod.FP8, 8, "float", ScaleGranularity.TENSOR, None, scale_bytes=4.0,
                           activations_quantized=True, static_activation_scale=static,
                           not_converted=_names(cfg.get("ignored_layers"), "ignored_layers"), source=src)
    if method == "fbgemm-fp8":
        # vLLM's FBGEMMFp8Config (vllm/model_executor/layers/quantization/fbgemm_fp8.py): every LinearBase not in
        # modules_to_not_convert holds an fp8 weight and one fp32 scale per output row (ChannelQuantScaleParameter);
        # activations are quantized per token on the fly (activation_scale_ub is a bound, not a stored scale); the
        # skipped linears stay unquantized at the model dtype; embeddings and lm_head are not LinearBase
        return QuantScheme(QuantMethod.FP8, 8, "float", ScaleGranularity.CHANNEL, None, scale_bytes=4.0,
                           activations_quantized=True,
                           not_converted=_names(cfg.get("modules_to_not_convert"), "modules_to_not_convert"),
                           source=src)
    if method == "compressed-tensors":
        return _compressed_tensors(cfg, src)
    if method == "bitsandbytes":
        skip = _names(cfg.get("llm_int8_skip_modules"), "llm_int8_skip_modules")
        if cfg.get("load_in_4bit"):
            # 0.5 B per weight + absmax per 64: fp32 (4 B), or with double quant 1 B + 4 B per 256 blocks
            absmax = (1.0 + 4.0 / 256) if cfg.get("bnb_4bit_use_double_quant") else 4.0
            return QuantScheme(QuantMethod.BITSANDBYTES, 4, "int", ScaleGranularity.GROUP, 64, scale_bytes=absmax,
                               not_converted=skip, source=src)
        if cfg.get("load_in_8bit"):
            return QuantScheme(QuantMethod.BITSANDBYTES, 8, "int", ScaleGranularity.CHANNEL, None, scale_bytes=4.0,
                               not_converted=skip, source=src)
        raise ModelConfigError(f"{src}: neither load_in_4bit nor load_in_8bit is set")
    known = "awq, gptq, fp8, compressed-tensors, bitsandbytes"
    raise ModelConfigError(
        f"{src}: this quantization method is not modelled (known: {known}); describe it in the YAML instead: "
        "model: {name: ..., quantization: {method: awq, bits: 4, group_size: 128}}")


def _compressed_tensors(cfg: Mapping[str, Any], src: str) -> QuantScheme:
    groups = cfg.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        raise ModelConfigError(f"{src}: config_groups is missing or empty")
    linear = [g for g in groups.values() if isinstance(g, Mapping) and "Linear" in (g.get("targets") or [])]
    group = linear[0] if linear else next(iter(groups.values()))
    if not isinstance(group, Mapping) or not isinstance(group.get("weights"), Mapping):
        raise ModelConfigError(f"{src}: the config group has no weights entry")
    w = group["weights"]
    bits = _int_or_none(w.get("num_bits", 8), "weights.num_bits") or 8
    wtype = str(w.get("type", "int")).lower()
    strategy = str(w.get("strategy", "tensor")).lower()
    gs: int | None = None
    block: tuple[int, int] | None = None
    if strategy == "group":
        gran = ScaleGranularity.GROUP
        gs = _int_or_none(w.get("group_size"), "weights.group_size")
    elif strategy == "channel":
        gran = ScaleGranularity.CHANNEL
    elif strategy == "block":
        gran = ScaleGranularity.BLOCK
        bs = w.get("block_structure") or [128, 128]
        block = (int(bs[0]), int(bs[1]))
    elif strategy == "tensor":
        gran = ScaleGranularity.TENSOR
    else:
        raise ModelConfigError(f"{src}: weights.strategy {strategy!r} is not one of tensor, channel, group, block")
    acts = group.get("input_activations")
    quant_acts = isinstance(acts, Mapping)
    static = quant_acts and not bool(acts.get("dynamic", False)) if isinstance(acts, Mapping) else False
    return QuantScheme(QuantMethod.COMPRESSED_TENSORS, bits, "float" if wtype == "float" else "int", gran, gs,
                       block, zero_point=not bool(w.get("symmetric", True)), scale_bytes=2.0,
                       activations_quantized=quant_acts, static_activation_scale=static,
                       not_converted=_names(cfg.get("ignore"), "ignore"), source=src)


# --------------------------------------------------------------------------- the YAML and vLLM's flag

_SPEC_KEYS = ("method", "bits", "group_size", "zero_point", "scale_bytes", "activations", "not_converted",
              "lm_head", "weight_type")


def from_spec(spec: Mapping[str, Any]) -> QuantScheme:
    """A scheme from the YAML ``model: {quantization: {...}}``: either a raw config.json block (it has
    ``quant_method``) or ``{method: awq|gptq|fp8|int8|compressed-tensors, bits: 4, group_size: 128, zero_point:
    true, activations: quantized|none, not_converted: [lm_head], scale_bytes: 2}``.  Missing keys take the
    method's usual values (AWQ 4-bit g128 with zero points, GPTQ 4-bit g128 symmetric; FP8/int8 W8A8
    per-channel)."""
    if not isinstance(spec, Mapping):
        raise ModelConfigError(f"model.quantization: expected a mapping such as {{method: awq, bits: 4, "
                               f"group_size: 128}}, got {spec!r}")
    if "quant_method" in spec:
        return from_hf_quantization_config(spec, "model.quantization")
    unknown = sorted(set(spec) - set(_SPEC_KEYS))
    if unknown:
        raise ModelConfigError(f"model.quantization: unknown key(s) {', '.join(unknown)}; use "
                               f"{', '.join(_SPEC_KEYS)}")
    name = str(spec.get("method", "")).strip().lower()
    method = VLLM_QUANTIZATION_NAMES.get(name) or {"int8": QuantMethod.INT8, "w8a8": QuantMethod.INT8}.get(name)
    if method is None:
        raise ModelConfigError(f"model.quantization.method: {name!r} is not one of awq, gptq, fp8, int8, "
                               "compressed-tensors, bitsandbytes")
    w8a8 = method in (QuantMethod.FP8, QuantMethod.INT8)
    bits = spec.get("bits", 8 if w8a8 else 4)
    gs_raw = spec.get("group_size", None if w8a8 else 128)
    gran, gs = _group(_int_or_none(gs_raw, "group_size"))
    acts = str(spec.get("activations", "quantized" if w8a8 else "none")).lower()
    if acts not in ("quantized", "none"):
        raise ModelConfigError(f"model.quantization.activations: {acts!r} is not quantized or none")
    wtype: WeightType = (
        "float" if str(spec.get("weight_type", "float" if method is QuantMethod.FP8 else "int")) == "float" else "int")
    return QuantScheme(method, bits, wtype, gran, gs,
                       zero_point=bool(spec.get("zero_point", method is QuantMethod.AWQ)),
                       scale_bytes=float(spec.get("scale_bytes", 2.0)), activations_quantized=acts == "quantized",
                       lm_head_quantized=bool(spec.get("lm_head", False)),
                       not_converted=_names(spec.get("not_converted"), "not_converted"),
                       source="model.quantization (YAML)")


def from_vllm_name(name: str, hf_config: Mapping[str, Any] | None) -> QuantScheme:
    """The scheme vLLM runs for ``--quantization name``: the checkpoint's own ``quantization_config`` when it has
    one (vLLM reads it and checks the two agree), else — for ``fp8`` only — vLLM's on-the-fly FP8 of a bf16/fp16
    checkpoint (per-tensor scales, W8A8; vllm/model_executor/layers/quantization/fp8.py)."""
    key = str(name).strip().lower()
    method = VLLM_QUANTIZATION_NAMES.get(key)
    if method is None:
        raise ModelConfigError(f"engine.args.quantization: {name!r} is not modelled; known: "
                               f"{', '.join(VLLM_QUANTIZATION_NAMES)}")
    if hf_config is not None:
        scheme = from_hf_quantization_config(hf_config)
        if scheme.method is not method:
            raise ModelConfigError(f"engine.args.quantization {name!r} does not match the checkpoint's "
                                   f"quantization_config (quant_method {hf_config.get('quant_method')!r})")
        return scheme
    if method is QuantMethod.FP8:
        return QuantScheme(QuantMethod.FP8, 8, "float", ScaleGranularity.TENSOR, None, scale_bytes=4.0,
                           activations_quantized=True, source="vLLM --quantization fp8 (quantized on load)")
    if method is QuantMethod.BITSANDBYTES:
        # vLLM quantizes in flight as NF4 with double quant: ``quantize_4bit(w, compress_statistics=True,
        # quant_type="nf4")`` (vllm/model_executor/model_loader/bitsandbytes_loader.py; loader.py in 0.5.x)
        return from_hf_quantization_config({"quant_method": "bitsandbytes", "load_in_4bit": True,
                                            "bnb_4bit_use_double_quant": True},
                                           "vLLM --quantization bitsandbytes (quantized on load)")
    raise ModelConfigError(f"engine.args.quantization {name!r} needs the checkpoint's quantization_config (bits, "
                           "group size); give it: model: {name: ..., quantization: {method: "
                           f"{method.value}, bits: 4, group_size: 128}}}}")
