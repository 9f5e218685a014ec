"""Model architecture: shapes from HF ``config.json``, parameter counts, KV-cache bytes.

Parameter counts are computed from the architecture, never typed in. The count follows the HF
modules one by one:

* attention: q_proj ``hidden x heads*head_dim``, k_proj/v_proj ``hidden x kv_heads*head_dim``,
  o_proj ``heads*head_dim x hidden`` (explicit ``head_dim`` wins over ``hidden/heads``), optional
  q/k/v biases (Qwen2: always; Llama/Qwen3: ``attention_bias``), optional o_proj bias
  (Llama/Qwen3 ``attention_bias``), optional per-head-dim q/k RMSNorm weights (Qwen3);
* MLP: gate/up/down ``3 x hidden x intermediate`` (+ biases when ``mlp_bias``);
* MoE layers: router ``hidden x num_experts`` (no bias), ``num_experts`` experts of
  ``3 x hidden x moe_intermediate_size``, optional shared expert (+ its 1-wide gate, Qwen2-MoE);
  which layers are MoE follows HF: ``i not in mlp_only_layers and (i+1) % decoder_sparse_step == 0``;
* two RMSNorm weight vectors per layer and one final norm (``hidden`` each);
* the input embedding ``vocab x hidden``, plus an lm_head of the same size when untied.

``active_param_count`` is what one token touches: attention, router, the top-k experts, the shared
expert, norms, the input embedding and the lm_head. ``streamed_param_count`` is what a decode step
reads from memory: the active count without the input embedding table (one row is gathered), the
figure a weight-read floor uses (Qwen3-8B: 7.57e9 of its 8.19e9 parameters).

Other families map onto the same pieces: fc1/fc2 MLPs (``gated_mlp`` false: OPT, Phi-2, GPT-NeoX, Falcon),
LayerNorms with a bias (``norm_bias``), one or four norms per layer (Phi-2/Falcon-7B, Gemma-2/3), OPT's
learned positions and project_in/out, Phi-2's lm_head bias, DeepSeek's multi-head latent attention
(``kv_lora_rank``, ``q_lora_rank``, ...) with shared experts and dense first layers, and Gemma-3's vision
tower (``encoder_params``: weights, never active).

KV bytes follow vLLM: ``2 (K and V) x layers x kv_heads x head_dim x dtype_bytes`` per token (MLA: one
latent of ``kv_lora_rank + qk_rope_head_dim`` per layer, the same on every rank); a vLLM page holds
``block_size`` tokens of one layer, and under tensor parallelism ``kv_heads`` is per rank
(``max(1, kv_heads // tp)``, replicated when tp exceeds the KV heads). ``layer_types`` marks
sliding-window layers; how vLLM groups them into blocks at each version is model/kv_cache.py.

Preset configs are shipped as data, ``pytest_roofline/model/data/model_presets.json``: the HF
``config.json`` facts (keys and values as on the Hub), not counts; presets go through
:func:`from_hf_config` like any local file. Adding a model is adding an entry there.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_roofline.errors import (
    ModelArchError,
    ModelConfigError,
    ModelOverrideError,
    UnitError,
    UnknownModelError,
    UnsupportedModelError,
)
from pytest_roofline.model import catalog, dtypes, kv_cache
from pytest_roofline.units import to_int, to_si

__all__ = [
    "ModelArch",
    "ModelArchError",
    "ModelConfigError",
    "UnsupportedModelError",
    "UnknownModelError",
    "ModelOverrideError",
    "SUPPORTED_MODEL_TYPES",
    "PRESETS",
    "kv_dtype_bytes",
    "weight_dtype_bytes",
    "from_hf_config",
    "nominal",
    "get_model",
    "presets",
    "with_overrides",
]


# --------------------------------------------------------------------------- dtypes (the table is model/dtypes.py)


def kv_dtype_bytes(kv_dtype: str) -> int:
    """Bytes per KV element: bf16/fp16/auto 2, fp8 (e4m3/e5m2) 1, fp32 4."""
    row = dtypes.lookup(kv_dtype)
    if row is None or row.kv_bytes is None:
        raise ModelArchError(f"unknown KV-cache dtype {kv_dtype!r}; known: {', '.join(dtypes.names('kv'))}")
    return row.kv_bytes


def weight_dtype_bytes(dtype: str) -> float:
    """Bytes per weight: bf16/fp16 2, fp8/int8 1, int4/fp4 0.5, fp32 4."""
    row = dtypes.lookup(dtype)
    if row is None or row.weight_bytes is None:
        raise ModelArchError(f"unknown weight dtype {dtype!r}; known: {', '.join(dtypes.names('weight'))}")
    return row.weight_bytes


# --------------------------------------------------------------------------- the architecture

_INT_FIELDS = (
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "decoder_sparse_step",
    "norms_per_layer",
    "learned_position_embeddings",
    "word_embed_proj_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "encoder_params",
)
_BOOL_FIELDS = (
    "tie_word_embeddings",
    "qk_norm",
    "attention_bias",
    "o_proj_bias",
    "mlp_bias",
    "shared_expert_gate",
    "gated_mlp",
    "norm_bias",
    "final_norm",
    "lm_head_bias",
    "router_bias",
)

#: the attention kinds a layer can have (HF ``layer_types`` spelling)
FULL_ATTENTION = "full_attention"
SLIDING_ATTENTION = "sliding_attention"
LAYER_TYPES = (FULL_ATTENTION, SLIDING_ATTENTION)


@dataclass(frozen=True)
class ModelArch:
    """A decoder-only transformer's shape. All counts are derived; nothing is typed in."""

    name: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    qk_norm: bool = False
    attention_bias: bool = False  # biases on q/k/v projections
    o_proj_bias: bool = False  # bias on o_proj (Llama/Qwen3 attention_bias; never Qwen2)
    mlp_bias: bool = False  # biases on gate/up/down (Llama mlp_bias)
    # MoE (num_experts == 0 means dense)
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    shared_expert_gate: bool = False
    decoder_sparse_step: int = 1
    mlp_only_layers: tuple[int, ...] = ()
    router_bias: bool = False  # DeepSeek-V3's e_score_correction_bias (num_experts wide)
    # module shapes of the non-Llama families
    gated_mlp: bool = True  # gate/up/down (SwiGLU, GeGLU); False: fc1/fc2 (OPT, Phi-2, GPT-NeoX, Falcon)
    norm_bias: bool = False  # LayerNorm with a bias (OPT, Phi-2, GPT-NeoX, Falcon); RMSNorm has none
    norms_per_layer: int = 2  # Gemma-2/3: 4; Phi-2 and Falcon-7B (parallel attention): 1
    final_norm: bool = True  # OPT-350m (do_layer_norm_before false) has none
    lm_head_bias: bool = False  # Phi-2
    learned_position_embeddings: int = 0  # rows of a learned position table (OPT: max_position + 2)
    word_embed_proj_dim: int = 0  # OPT: embedding width when it differs from hidden (project_in/out)
    # multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank > 0 means MLA
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # parameters the checkpoint loads outside the decoder (Gemma-3's SigLIP vision tower + projector):
    # in param_count (weight memory), never in the active / streamed counts
    encoder_params: int = 0
    # attention kind per layer (empty: every layer full attention) and the sliding window in tokens
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    # a model given by numbers alone (param_count returns this figure)
    nominal_params: float | None = None
    # facts carried along for other modules (not used in the counts)
    model_type: str | None = None
    max_position_embeddings: int | None = None
    torch_dtype: str | None = None
    # config.json's ``quantization_config``, raw and unparsed (model/quantization.py reads it)
    quantization_config: Mapping[str, Any] | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    object.__setattr__(self, name, int(value))
                else:
                    raise ModelArchError(f"{self.name}: {name} must be an integer, got {value!r}")
            if getattr(self, name) < 0:
                raise ModelArchError(f"{self.name}: {name} must not be negative, got {value!r}")
        for name in _BOOL_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ModelArchError(f"{self.name}: {name} must be true or false, got {value!r}")
        try:
            layers = tuple(sorted({int(i) for i in self.mlp_only_layers}))
        except (TypeError, ValueError):
            raise ModelArchError(
                f"{self.name}: mlp_only_layers must be a list of layer indices, got {self.mlp_only_layers!r}"
            ) from None
        object.__setattr__(self, "mlp_only_layers", layers)
        self._check_layer_types()

        for name in ("num_layers", "num_kv_heads", "head_dim"):
            if getattr(self, name) <= 0:
                raise ModelArchError(f"{self.name}: {name} must be positive, got {getattr(self, name)!r}")

        if self.nominal_params is not None:
            if isinstance(self.nominal_params, bool) or not isinstance(self.nominal_params, (int, float)):
                raise ModelArchError(f"{self.name}: nominal_params must be a number, got {self.nominal_params!r}")
            if not (math.isfinite(self.nominal_params) and self.nominal_params > 0):
                raise ModelArchError(f"{self.name}: nominal_params must be positive, got {self.nominal_params!r}")
            return

        for name in ("hidden_size", "num_attention_heads", "vocab_size"):
            if getattr(self, name) <= 0:
                raise ModelArchError(f"{self.name}: {name} must be positive, got {getattr(self, name)!r}")
        if self.num_attention_heads % self.num_kv_heads:
            raise ModelArchError(
                f"{self.name}: num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_kv_heads ({self.num_kv_heads})"
            )
        if self.num_experts:
            if not 0 < self.num_experts_per_tok <= self.num_experts:
                raise ModelArchError(
                    f"{self.name}: num_experts_per_tok must be in 1..num_experts ({self.num_experts}), "
                    f"got {self.num_experts_per_tok}"
                )
            if self.moe_intermediate_size <= 0:
                raise ModelArchError(f"{self.name}: an MoE model needs moe_intermediate_size > 0")
            if self.decoder_sparse_step <= 0:
                raise ModelArchError(f"{self.name}: decoder_sparse_step must be positive")
        elif self.num_experts_per_tok or self.shared_expert_intermediate_size:
            raise ModelArchError(
                f"{self.name}: num_experts_per_tok/shared_expert_intermediate_size set on a dense model "
                f"(num_experts = 0)"
            )
        bad = [i for i in self.mlp_only_layers if not 0 <= i < self.num_layers]
        if bad:
            raise ModelArchError(f"{self.name}: mlp_only_layers {bad} outside 0..{self.num_layers - 1}")
        if self.num_dense_layers and self.intermediate_size <= 0:
            raise ModelArchError(f"{self.name}: dense MLP layers need intermediate_size > 0")

    def _check_layer_types(self) -> None:
        if isinstance(self.layer_types, (str, bytes)) or not isinstance(self.layer_types, (list, tuple)):
            raise ModelArchError(f"{self.name}: layer_types must be a list, got {self.layer_types!r}")
        kinds = tuple(str(k) for k in self.layer_types)
        bad = sorted(set(kinds) - set(LAYER_TYPES))
        if bad:
            raise ModelArchError(f"{self.name}: layer_types {bad} unknown; known: {', '.join(LAYER_TYPES)}")
        if kinds and len(kinds) != self.num_layers:
            raise ModelArchError(
                f"{self.name}: layer_types has {len(kinds)} entries for {self.num_layers} layers"
            )
        object.__setattr__(self, "layer_types", kinds)
        window = self.sliding_window
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
            raise ModelArchError(f"{self.name}: sliding_window must be a positive integer, got {window!r}")
        if SLIDING_ATTENTION in kinds and window is None:
            raise ModelArchError(f"{self.name}: sliding_attention layers need a sliding_window")
        if self.norms_per_layer < 1 and self.nominal_params is None:
            raise ModelArchError(f"{self.name}: norms_per_layer must be at least 1")
        if self.kv_lora_rank and not (self.qk_rope_head_dim and self.qk_nope_head_dim and self.v_head_dim):
            raise ModelArchError(
                f"{self.name}: MLA (kv_lora_rank > 0) needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim"
            )

    # -- structure ------------------------------------------------------------------

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3): one compressed latent per token per layer."""
        return self.kv_lora_rank > 0

    def layer_kind(self, layer: int) -> str:
        """``full_attention`` or ``sliding_attention`` for decoder layer ``layer``."""
        if not 0 <= layer < self.num_layers:
            raise IndexError(f"{self.name} has layers 0..{self.num_layers - 1}, not {layer}")
        return self.layer_types[layer] if self.layer_types else FULL_ATTENTION

    @property
    def num_sliding_layers(self) -> int:
        return sum(1 for kind in self.layer_types if kind == SLIDING_ATTENTION)

    @property
    def num_full_attention_layers(self) -> int:
        return self.num_layers - self.num_sliding_layers

    @property
    def is_nominal(self) -> bool:
        return self.nominal_params is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def is_moe_layer(self, layer: int) -> bool:
        """HF Qwen-MoE rule (Mixtral: every layer): not in mlp_only_layers and (i+1) % step == 0."""
        return (
            self.num_experts > 0
            and layer not in self.mlp_only_layers
            and (layer + 1) % self.decoder_sparse_step == 0
        )

    @property
    def num_moe_layers(self) -> int:
        return sum(1 for i in range(self.num_layers) if self.is_moe_layer(i))

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def gqa_group_size(self) -> int:
        return self.num_attention_heads // self.num_kv_heads if self.num_attention_heads else 0

    # -- parameter counts (per piece) -----------------------------------------------

    def _require_shape(self, what: str) -> None:
        if self.is_nominal:
            raise ModelArchError(
                f"{self.name} is a nominal model (P = {self.nominal_params:.4g}); it has no {what} breakdown"
            )

    def norm_param_count(self) -> int:
        """One norm: RMSNorm ``hidden`` weights; LayerNorm with a bias ``2 x hidden``."""
        self._require_shape("norm")
        return self.hidden_size * (2 if self.norm_bias else 1)

    def attention_param_count(self) -> int:
        """One layer's attention: q/k/v/o weights, biases, q/k norm weights (MLA: the latent projections)."""
        self._require_shape("attention")
        if self.is_mla:
            return self._mla_param_count()
        h, q_dim, kv_dim = self.hidden_size, self.num_attention_heads * self.head_dim, self.num_kv_heads * self.head_dim
        n = h * q_dim + 2 * h * kv_dim + q_dim * h
        if self.attention_bias:
            n += q_dim + 2 * kv_dim
        if self.o_proj_bias:
            n += h
        if self.qk_norm:
            n += 2 * self.head_dim
        return n

    def _mla_param_count(self) -> int:
        """DeepSeek-V2/V3 attention (HF ``DeepseekV3Attention``): q_a_proj + q_a_layernorm + q_b_proj (or one
        q_proj when ``q_lora_rank`` is null), kv_a_proj_with_mqa ``hidden x (kv_lora + rope)``, kv_a_layernorm,
        kv_b_proj ``kv_lora x heads*(nope + v)``, o_proj ``heads*v x hidden``."""
        h, heads = self.hidden_size, self.num_attention_heads
        qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.q_lora_rank:
            n = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * heads * qk_head
        else:
            n = h * heads * qk_head
        n += h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
        n += self.kv_lora_rank * heads * (self.qk_nope_head_dim + self.v_head_dim)
        n += heads * self.v_head_dim * h
        if self.attention_bias:  # q_a / q and kv_a projections
            n += (self.q_lora_rank or heads * qk_head) + self.kv_lora_rank + self.qk_rope_head_dim
        return n

    def dense_mlp_param_count(self) -> int:
        """One dense layer's MLP: gate/up/down (gated) or fc1/fc2 (plain), + biases."""
        self._require_shape("MLP")
        h, i = self.hidden_size, self.intermediate_size
        if self.gated_mlp:
            return 3 * h * i + ((2 * i + h) if self.mlp_bias else 0)
        return 2 * h * i + ((i + h) if self.mlp_bias else 0)

    def expert_param_count(self) -> int:
        """One routed expert (gate/up/down, no biases)."""
        self._require_shape("expert")
        return 3 * self.hidden_size * self.moe_intermediate_size

    def router_param_count(self) -> int:
        self._require_shape("router")
        return self.hidden_size * self.num_experts + (self.num_experts if self.router_bias else 0)

    def shared_expert_param_count(self) -> int:
        self._require_shape("shared expert")
        n = 3 * self.hidden_size * self.shared_expert_intermediate_size
        return n + (self.hidden_size if self.shared_expert_gate else 0)

    def layer_param_count(self, layer: int, *, active: bool = False) -> int:
        """Parameters of decoder layer ``layer``; ``active`` counts only the top-k experts."""
        self._require_shape("layer")
        if not 0 <= layer < self.num_layers:
            raise IndexError(f"{self.name} has layers 0..{self.num_layers - 1}, not {layer}")
        n = self.attention_param_count() + self.norms_per_layer * self.norm_param_count()
        if self.is_moe_layer(layer):
            experts = self.num_experts_per_tok if active else self.num_experts
            n += self.router_param_count() + experts * self.expert_param_count() + self.shared_expert_param_count()
        else:
            n += self.dense_mlp_param_count()
        return n

    @property
    def embed_dim(self) -> int:
        """Width of the token embedding (OPT's ``word_embed_proj_dim``; else ``hidden_size``)."""
        return self.word_embed_proj_dim or self.hidden_size

    def embedding_param_count(self) -> int:
        """The input embedding ``vocab x embed_dim`` plus a learned position table (an untied lm_head is
        counted separately)."""
        if self.is_nominal:
            return 0
        return self.vocab_size * self.embed_dim + self.learned_position_embeddings * self.hidden_size

    def lm_head_param_count(self) -> int:
        """The untied lm_head (+ its bias); 0 when tied to the input embedding."""
        if self.is_nominal:
            return 0
        bias = self.vocab_size if self.lm_head_bias else 0
        return bias if self.tie_word_embeddings else self.vocab_size * self.embed_dim + bias

    def projection_param_count(self) -> int:
        """OPT's project_in/project_out (``embed_dim x hidden`` each, no bias) when embed_dim != hidden."""
        if self.is_nominal or self.embed_dim == self.hidden_size:
            return 0
        return 2 * self.embed_dim * self.hidden_size

    def non_embedding_param_count(self) -> int:
        """Decoder layers, the final norm and any embedding projections, without the embedding and lm_head."""
        self._require_shape("non-embedding")
        final = self.norm_param_count() if self.final_norm else 0
        return sum(self.layer_param_count(i) for i in range(self.num_layers)) + final + self.projection_param_count()

    # -- parameter counts (spec'd) ----------------------------------------------------

    def param_count(self) -> int | float:
        """Total parameters (``nominal_params`` for a nominal model)."""
        if self.nominal_params is not None:  # a nominal model (is_nominal)
            return self.nominal_params
        return (self.non_embedding_param_count() + self.embedding_param_count() + self.lm_head_param_count()
                + self.encoder_params)

    def active_param_count(self) -> int | float:
        """Parameters one token touches: MoE counts the top-k experts (+ shared, router)."""
        if self.nominal_params is not None:  # a nominal model (is_nominal)
            return self.nominal_params
        layers = sum(self.layer_param_count(i, active=True) for i in range(self.num_layers))
        rest = self.non_embedding_param_count() - sum(self.layer_param_count(i) for i in range(self.num_layers))
        return layers + rest + self.embedding_param_count() + self.lm_head_param_count()

    def streamed_param_count(self) -> int | float:
        """Parameters a decode step reads: active params without the input embedding table.

        Tied models keep the shared matrix (the lm_head reads it). A nominal model streams P.
        """
        if self.nominal_params is not None:  # a nominal model (is_nominal)
            return self.nominal_params
        positions = self.learned_position_embeddings * self.hidden_size
        embedding = positions if self.tie_word_embeddings else self.embedding_param_count()
        return self.active_param_count() - embedding

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Total weight bytes at ``dtype`` (bf16/fp16 2, fp8/int8 1, int4 0.5 bytes/param)."""
        return self.param_count() * weight_dtype_bytes(dtype)

    # -- KV cache ---------------------------------------------------------------------

    def kv_heads_per_rank(self, tensor_parallel_size: int = 1) -> int:
        """KV heads one TP rank holds: ``max(1, kv_heads // tp)`` as vLLM does (replicated when tp > kv).

        MLA caches one latent "head" per layer that every rank holds whole: 1 at any TP (vLLM v0.10.2:
        vllm/config/__init__.py ``ModelConfig.get_num_kv_heads`` returns 1 when ``use_mla``).
        """
        tp = tensor_parallel_size
        if isinstance(tp, bool) or not isinstance(tp, int) or tp <= 0:
            raise ModelArchError(f"tensor_parallel_size must be a positive integer, got {tp!r}")
        if self.is_mla:
            return 1
        kv = self.num_kv_heads
        if tp <= kv and kv % tp:
            raise ModelArchError(
                f"{self.name}: {kv} KV heads cannot be split evenly over tensor_parallel_size={tp}"
            )
        if tp > kv and tp % kv:
            raise ModelArchError(
                f"{self.name}: tensor_parallel_size={tp} is not a multiple of the {kv} KV heads "
                f"(vLLM replicates KV heads only when tp is a multiple)"
            )
        return max(1, kv // tp)

    def kv_elements_per_token_per_layer(self, tensor_parallel_size: int = 1) -> int:
        """KV elements one layer caches per token on one rank.

        Standard attention: ``2 (K and V) x kv_heads_per_rank x head_dim``. MLA: the compressed latent
        ``kv_lora_rank + qk_rope_head_dim``, no factor 2, not split by TP (vLLM v0.10.2:
        vllm/v1/kv_cache_interface.py ``AttentionSpec.page_size_bytes``, "For MLA we only store a single
        latent vector", coef 1; ``ModelConfig.get_head_size`` = kv_lora_rank + qk_rope_head_dim; v0.32:
        ``MLAAttentionSpec`` with ``head_size_v = 0``).
        """
        if self.is_mla:
            self.kv_heads_per_rank(tensor_parallel_size)  # validates tp
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_heads_per_rank(tensor_parallel_size) * self.head_dim

    def kv_bytes_per_token(self, kv_dtype: str = "bf16") -> int:
        """Whole-model KV bytes per token in every layer: 2 x layers x kv_heads x head_dim x bytes (MLA:
        layers x (kv_lora_rank + qk_rope_head_dim) x bytes). A sliding-window layer holds only its window,
        see :meth:`kv_bytes_for_context`."""
        if self.is_mla:
            return self.num_layers * self.kv_elements_per_token_per_layer() * kv_dtype_bytes(kv_dtype)
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * kv_dtype_bytes(kv_dtype)

    def kv_bytes_for_context(self, context_tokens: int, kv_dtype: str = "bf16", tensor_parallel_size: int = 1) -> int:
        """KV bytes one sequence of ``context_tokens`` needs on one rank, token by token (no block rounding):
        full-attention layers hold every token, sliding-window layers at most ``sliding_window`` of them."""
        per_layer = self.kv_elements_per_token_per_layer(tensor_parallel_size) * kv_dtype_bytes(kv_dtype)
        ctx = max(0, int(context_tokens))
        window = min(ctx, self.sliding_window) if self.sliding_window else ctx
        return per_layer * (self.num_full_attention_layers * ctx + self.num_sliding_layers * window)

    def kv_bytes_per_block(
        self,
        block_size: int,
        kv_dtype: str = "bf16",
        tensor_parallel_size: int = 1,
        engine_version: str | None = None,
        device: str = "cuda",
    ) -> int:
        """The bytes vLLM divides the KV pool by to count blocks, on one rank.

        Every layer in one pool (uniform models, V0, V1 before the hybrid KV manager): page x layers.
        Under V1's hybrid KV manager (interleaved sliding-window models): page x group_size, see
        :func:`pytest_roofline.model.kv_cache.kv_cache_layout`.
        """
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
            raise ModelArchError(f"block_size must be a positive integer, got {block_size!r}")
        return kv_cache.kv_cache_layout(
            self, block_size=block_size, kv_dtype=kv_dtype, tensor_parallel_size=tensor_parallel_size,
            engine_version=engine_version, device=device,
        ).bytes_per_block

    def kv_page_bytes_per_layer(
        self, block_size: int, kv_dtype: str = "bf16", tensor_parallel_size: int = 1
    ) -> int:
        """vLLM ``page_size_bytes`` of one layer: 2 x kv_heads_per_rank x head_dim x bytes x block
        (MLA: (kv_lora_rank + qk_rope_head_dim) x bytes x block)."""
        return self.kv_elements_per_token_per_layer(tensor_parallel_size) * kv_dtype_bytes(kv_dtype) * block_size

    # -- misc -------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Counts and shape as plain data (for reports and results files)."""
        out: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "source"
        }
        out["mlp_only_layers"] = list(self.mlp_only_layers)
        out["layer_types"] = list(self.layer_types)
        out["quantization_config"] = None if self.quantization_config is None else dict(self.quantization_config)
        out["source"] = self.source
        out["param_count"] = self.param_count()
        out["active_param_count"] = self.active_param_count()
        out["embedding_param_count"] = self.embedding_param_count()
        out["lm_head_param_count"] = self.lm_head_param_count()
        out["kv_bytes_per_token_bf16"] = self.kv_bytes_per_token("bf16")
        return out


# --------------------------------------------------------------------------- HF config.json

SUPPORTED_MODEL_TYPES = (
    "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "qwen2_moe",
    "opt", "phi", "phi3", "gemma", "gemma2", "gemma3_text", "gemma3", "gpt_neox", "falcon",
    "deepseek_v2", "deepseek_v3",
)

_ARCHITECTURE_TO_TYPE = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "OPTForCausalLM": "opt",
    "PhiForCausalLM": "phi",
    "Phi3ForCausalLM": "phi3",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text",
    "Gemma3ForConditionalGeneration": "gemma3",
    "GPTNeoXForCausalLM": "gpt_neox",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
}

#: HF config keys some families spell differently (Falcon's original RW config; transformers'
#: FalconConfig attribute_map / __init__ kwargs)
_KEY_ALIASES = {
    "falcon": {"num_hidden_layers": ("n_layer",), "num_attention_heads": ("n_head",),
               "num_kv_heads": ("n_head_kv",), "hidden_size": ("n_embed",)},
}

_MISSING = object()


def _load_config(path: Path) -> tuple[dict[str, Any], Path]:
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ModelConfigError(f"no config.json at {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelConfigError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data, path


def _raw_quantization_config(data: Mapping[str, Any], where: str) -> Mapping[str, Any] | None:
    """config.json's ``quantization_config`` as a read-only mapping (None when absent)."""
    raw = data.get("quantization_config")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ModelConfigError(f"{where}: quantization_config must be an object, got {raw!r}")
    return MappingProxyType(dict(raw))


def from_hf_config(config: Mapping[str, Any] | str | Path, name: str | None = None) -> ModelArch:
    """Build a :class:`ModelArch` from an HF ``config.json`` (a mapping, a file, or a model directory).

    Supports Llama, Mistral, Qwen2, Qwen3, Qwen3-MoE, Mixtral, Qwen2-MoE, OPT, Phi (phi-2), Phi-3, Gemma,
    Gemma-2, Gemma-3 (``gemma3_text``, or ``gemma3`` with a ``text_config``: the vision tower is not
    counted), GPT-NeoX (Pythia), Falcon and DeepSeek-V2/V3 configs. ``head_dim`` is taken when present
    (not null), else ``hidden_size / num_attention_heads`` (DeepSeek: ``qk_nope + qk_rope``);
    ``num_key_value_heads`` defaults to ``num_attention_heads``; ``tie_word_embeddings`` defaults as the
    family's transformers config class does (true for Gemma, Falcon and OPT, false otherwise).
    """
    origin: str
    if isinstance(config, (str, Path)):
        data, path = _load_config(Path(config))
        origin = str(path)
        default_name = data.get("_name_or_path") or path.parent.name
    elif isinstance(config, Mapping):
        data = dict(config)
        origin = "config mapping"
        default_name = data.get("_name_or_path") or "model"
    else:
        raise ModelConfigError(f"expected a config mapping or a path, got {type(config).__name__}")

    model_type = data.get("model_type")
    if model_type is None:
        archs = data.get("architectures") or []
        inferred = [_ARCHITECTURE_TO_TYPE[a] for a in archs if a in _ARCHITECTURE_TO_TYPE]
        if not inferred:
            raise ModelConfigError(
                f"{origin}: missing required key 'model_type' (and no known 'architectures' entry); "
                f"supported model types: {', '.join(SUPPORTED_MODEL_TYPES)}"
            )
        model_type = inferred[0]
    model_type = str(model_type)
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModelError(
            f"{origin}: model_type {model_type!r} is not supported; supported: "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    where = f"{origin} (model_type {model_type})"
    return _arch_from_config(data, model_type, where, name=str(name or default_name), origin=origin)


def _arch_from_config(data: Mapping[str, Any], model_type: str, where: str, *, name: str, origin: str) -> ModelArch:
    """The family-by-family reading of a config.json (keys and HF defaults per transformers' config classes)."""
    if model_type == "gemma3":  # the multimodal wrapper: the language model is text_config (vision not counted)
        text = data.get("text_config")
        if not isinstance(text, Mapping):
            raise ModelConfigError(f"{where}: a gemma3 config needs a text_config object")
        merged = {**dict(text), "model_type": "gemma3_text"}
        for key in ("torch_dtype", "quantization_config"):
            if merged.get(key) is None and data.get(key) is not None:
                merged[key] = data[key]
        arch = _arch_from_config(merged, "gemma3_text", where, name=name, origin=origin)
        vision = data.get("vision_config")
        if vision is None:
            return arch
        if not isinstance(vision, Mapping):
            raise ModelConfigError(f"{where}: vision_config must be an object")
        return dataclasses.replace(arch, model_type="gemma3",
                                   encoder_params=_siglip_param_count(vision, arch.hidden_size, where))

    aliases = _KEY_ALIASES.get(model_type, {})

    def get(key: str, default: Any = _MISSING) -> Any:
        value = data.get(key, None)
        for alt in aliases.get(key, ()):
            if value is None:
                value = data.get(alt, None)
        if value is None:
            if default is _MISSING:
                raise ModelConfigError(f"{where}: missing required key {key!r}")
            return default
        return value

    def get_int(key: str, default: Any = _MISSING) -> int:
        value = get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise ModelConfigError(f"{where}: key {key!r} must be an integer, got {value!r}")
        return int(value)

    def get_bool(key: str, default: bool) -> bool:
        value = get(key, default)
        if not isinstance(value, bool):
            raise ModelConfigError(f"{where}: key {key!r} must be true or false, got {value!r}")
        return value

    hidden = get_int("hidden_size")
    layers = get_int("num_hidden_layers")
    heads = get_int("num_attention_heads")
    vocab = get_int("vocab_size")
    if heads <= 0:
        raise ModelConfigError(f"{where}: num_attention_heads must be positive, got {heads}")
    if model_type == "falcon":
        # FalconAttention: new_decoder_architecture -> num_kv_heads; multi_query -> 1; else one per head
        if get_bool("new_decoder_architecture", False):
            kv_heads = get_int("num_kv_heads", heads)
        elif get_bool("multi_query", True):
            kv_heads = 1
        else:
            kv_heads = heads
    elif model_type == "opt":
        kv_heads = heads
    else:
        kv_heads = get_int("num_key_value_heads", heads)
    if data.get("head_dim") is not None:
        head_dim = get_int("head_dim")
    elif model_type in ("deepseek_v2", "deepseek_v3"):
        head_dim = get_int("qk_nope_head_dim") + get_int("qk_rope_head_dim")
    else:
        if hidden % heads:
            raise ModelConfigError(
                f"{where}: no 'head_dim' and hidden_size {hidden} is not divisible by "
                f"num_attention_heads {heads}"
            )
        head_dim = hidden // heads

    # tie_word_embeddings defaults: False for Llama/Qwen/Mistral/Phi/NeoX/DeepSeek config classes; True for
    # Gemma (1/2/3) and Falcon (transformers GemmaConfig/Gemma2Config/Gemma3TextConfig/FalconConfig) and OPT
    # (PretrainedConfig's default, OPTConfig passes it through)
    tied_default = model_type in ("gemma", "gemma2", "gemma3_text", "falcon", "opt")
    kw: dict[str, Any] = dict(
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        tie_word_embeddings=get_bool("tie_word_embeddings", tied_default),
        model_type=model_type,
        max_position_embeddings=get_int("max_position_embeddings", 0) or None,
        torch_dtype=str(data["torch_dtype"]) if data.get("torch_dtype") is not None else None,
        quantization_config=_raw_quantization_config(data, where),
    )

    if model_type in ("llama", "qwen3", "qwen3_moe"):
        bias = get_bool("attention_bias", False)
        kw.update(attention_bias=bias, o_proj_bias=bias)
    elif model_type in ("qwen2", "qwen2_moe"):
        kw.update(attention_bias=True, o_proj_bias=False)  # Qwen2Attention: qkv bias, no o_proj bias
    if model_type == "llama":
        kw["mlp_bias"] = get_bool("mlp_bias", False)
    if model_type in ("qwen3", "qwen3_moe", "gemma3_text"):
        kw["qk_norm"] = True  # q_norm / k_norm over head_dim (Qwen3Attention, Gemma3Attention)

    if model_type in ("qwen3_moe", "qwen2_moe"):
        kw.update(
            num_experts=get_int("num_experts"),
            num_experts_per_tok=get_int("num_experts_per_tok"),
            moe_intermediate_size=get_int("moe_intermediate_size"),
            decoder_sparse_step=get_int("decoder_sparse_step", 1),
            mlp_only_layers=tuple(get("mlp_only_layers", ())),
        )
        if model_type == "qwen2_moe":
            shared = get_int("shared_expert_intermediate_size", 0)
            kw.update(shared_expert_intermediate_size=shared, shared_expert_gate=shared > 0)
        # intermediate_size sizes the dense layers; it is required only if some layer is dense
        step, only = kw["decoder_sparse_step"], set(kw["mlp_only_layers"])
        has_dense = kw["num_experts"] == 0 or any(
            i in only or (i + 1) % max(step, 1) for i in range(layers)
        )
        kw["intermediate_size"] = get_int("intermediate_size") if has_dense else get_int("intermediate_size", 0)
    elif model_type == "mixtral":
        per_expert = get_int("intermediate_size")
        kw.update(
            num_experts=get_int("num_local_experts"),
            num_experts_per_tok=get_int("num_experts_per_tok"),
            moe_intermediate_size=per_expert,
            intermediate_size=per_expert,
        )
    elif model_type in ("deepseek_v2", "deepseek_v3"):
        _deepseek(kw, get, get_int, layers, model_type)
    elif model_type == "opt":
        # OPTDecoderLayer: q/k/v/out_proj and fc1/fc2 with bias (enable_bias), two LayerNorms with bias;
        # OPTDecoder: learned positions (max_position_embeddings + 2 offset rows), project_in/out when
        # word_embed_proj_dim != hidden, final_layer_norm only when do_layer_norm_before
        bias = get_bool("enable_bias", True)
        kw.update(
            intermediate_size=get_int("ffn_dim"), gated_mlp=False, mlp_bias=bias, attention_bias=bias,
            o_proj_bias=bias, norm_bias=get_bool("layer_norm_elementwise_affine", True),
            learned_position_embeddings=get_int("max_position_embeddings") + 2,
            word_embed_proj_dim=get_int("word_embed_proj_dim", hidden),
            final_norm=get_bool("do_layer_norm_before", True) and not get_bool("_remove_final_layer_norm", False),
        )
    elif model_type == "phi":
        # PhiDecoderLayer (phi-2): q/k/v/dense with bias, fc1/fc2 with bias, ONE input LayerNorm (parallel
        # attention and MLP), final LayerNorm, lm_head with bias; optional q/k LayerNorms (qk_layernorm)
        kw.update(
            intermediate_size=get_int("intermediate_size"), gated_mlp=False, mlp_bias=True,
            attention_bias=True, o_proj_bias=True, norm_bias=True, norms_per_layer=1, lm_head_bias=True,
        )
        if get_bool("qk_layernorm", False):
            raise UnsupportedModelError(f"{where}: phi with qk_layernorm is not supported")
    elif model_type == "phi3":
        # Phi3: fused qkv_proj and gate_up_proj (same parameter count as separate projections), no biases
        kw["intermediate_size"] = get_int("intermediate_size")
    elif model_type in ("gemma", "gemma2", "gemma3_text"):
        # GemmaMLP gate/up/down (GeGLU); Gemma2/3 layers carry 4 RMSNorms (input, post_attention,
        # pre_feedforward, post_feedforward), Gemma 2
        kw.update(intermediate_size=get_int("intermediate_size"),
                  norms_per_layer=2 if model_type == "gemma" else 4,
                  attention_bias=get_bool("attention_bias", False))
        kw["o_proj_bias"] = kw["attention_bias"]
    elif model_type == "gpt_neox":
        # GPTNeoXLayer: input/post_attention LayerNorms (bias), fused query_key_value and dense with bias
        # (attention_bias, default true), dense_h_to_4h / dense_4h_to_h with bias; final_layer_norm;
        # embed_in and an untied embed_out
        bias = get_bool("attention_bias", True)
        kw.update(intermediate_size=get_int("intermediate_size"), gated_mlp=False, mlp_bias=True,
                  attention_bias=bias, o_proj_bias=bias, norm_bias=True)
    elif model_type == "falcon":
        # FalconDecoderLayer: query_key_value / dense / dense_h_to_4h / dense_4h_to_h with bias = config.bias;
        # parallel_attn: one input_layernorm, or ln_attn + ln_mlp (new_decoder_architecture with
        # num_ln_in_parallel_attn 2, its default there); sequential: input + post_attention LayerNorms
        bias = get_bool("bias", False)
        parallel = get_bool("parallel_attn", True)
        new_arch = get_bool("new_decoder_architecture", False)
        n_ln = get_int("num_ln_in_parallel_attn", 2 if new_arch else 1)
        kw.update(intermediate_size=get_int("ffn_hidden_size", 4 * hidden), gated_mlp=False, mlp_bias=bias,
                  attention_bias=bias, o_proj_bias=bias, norm_bias=True,
                  norms_per_layer=(n_ln if new_arch else 1) if parallel else 2)
    else:
        kw["intermediate_size"] = get_int("intermediate_size")

    _layer_types(kw, data, get, get_int, get_bool, layers, model_type, where)
    try:
        return ModelArch(name=name, source=origin, **kw)
    except ModelArchError as exc:
        raise ModelConfigError(f"{where}: {exc}") from exc


def _siglip_param_count(vision: Mapping[str, Any], text_hidden: int, where: str) -> int:
    """Gemma-3's vision tower and projector, module by module (transformers siglip/modeling_siglip.py
    ``SiglipVisionTransformer`` without the pooling head, gemma3/modeling_gemma3.py
    ``Gemma3MultiModalProjector``): patch conv ``3 x patch^2 x h + h``, a position table of
    ``(image/patch)^2 x h``, per layer two LayerNorms (bias) ``4h``, q/k/v/out with bias ``4(h^2 + h)``,
    fc1/fc2 with bias ``2 x h x i + i + h``; the post LayerNorm ``2h``; the projection ``h x text_hidden``
    and its RMSNorm ``h``."""
    def num(key: str, default: int | None = None) -> int:
        value = vision.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise ModelConfigError(f"{where}: vision_config.{key} must be an integer, got {value!r}")
        return int(value)

    if vision.get("vision_use_head"):
        raise UnsupportedModelError(f"{where}: a SigLIP vision tower with its pooling head is not counted")
    h, i, layers = num("hidden_size"), num("intermediate_size"), num("num_hidden_layers")
    patch, image, channels = num("patch_size"), num("image_size"), num("num_channels", 3)
    embeddings = channels * patch * patch * h + h + (image // patch) ** 2 * h
    per_layer = 4 * h + 4 * (h * h + h) + 2 * h * i + i + h
    projector = h * text_hidden + h
    return embeddings + layers * per_layer + 2 * h + projector


def _deepseek(kw: dict[str, Any], get: Any, get_int: Any, layers: int, model_type: str) -> None:
    """DeepSeek-V2/V3 (HF DeepseekV3DecoderLayer): MLA attention; MoE layers where
    ``i >= first_k_dense_replace and i % moe_layer_freq == 0``; routed experts of moe_intermediate_size,
    ``n_shared_experts`` shared experts as one MLP of ``moe_intermediate_size x n_shared``; V3's router
    carries an ``e_score_correction_bias`` (topk_method ``noaux_tc``)."""
    q_lora = get("q_lora_rank", 0) or 0
    kw.update(
        q_lora_rank=int(q_lora), kv_lora_rank=get_int("kv_lora_rank"),
        qk_nope_head_dim=get_int("qk_nope_head_dim"), qk_rope_head_dim=get_int("qk_rope_head_dim"),
        v_head_dim=get_int("v_head_dim"), attention_bias=bool(get("attention_bias", False)),
        intermediate_size=get_int("intermediate_size"),
    )
    experts = get_int("n_routed_experts", 0)
    if experts:
        first_dense = get_int("first_k_dense_replace", 0)
        freq = max(1, get_int("moe_layer_freq", 1))
        shared = get_int("n_shared_experts", 0)
        moe_inter = get_int("moe_intermediate_size")
        kw.update(
            num_experts=experts, num_experts_per_tok=get_int("num_experts_per_tok"),
            moe_intermediate_size=moe_inter, shared_expert_intermediate_size=moe_inter * shared,
            mlp_only_layers=tuple(i for i in range(layers) if i < first_dense or i % freq),
            router_bias=get("topk_method", "greedy" if model_type == "deepseek_v2" else "noaux_tc") == "noaux_tc",
        )


def _layer_types(kw: dict[str, Any], data: Mapping[str, Any], get: Any, get_int: Any, get_bool: Any,
                 layers: int, model_type: str, where: str) -> None:
    """Per-layer attention kinds, as transformers' config classes derive ``layer_types``:

    * an explicit ``layer_types`` list wins (newer transformers write it into config.json);
    * Gemma-2: even layers slide (``Gemma2Config``: sliding when ``(i + 1) % 2``);
    * Gemma-3: ``(i + 1) % sliding_window_pattern`` layers slide, every 6th is global (pattern 6: 5 local : 1);
    * Mistral, Mixtral and Phi-3 with a ``sliding_window`` (Mistral-7B-v0.1: 4096, Phi-3-mini-4k: 2047):
      every layer slides -- vLLM gives a model that is not interleaved the config's window as the
      model-level ``CacheConfig.sliding_window`` that every Attention layer takes (vLLM v0.10.2:
      vllm/engine/arg_utils.py ``create_engine_config``, "Only set CacheConfig.sliding_window if the model
      is all sliding window"; vllm/attention/layer.py ``Attention.__init__``);
    * Qwen2/Qwen2-MoE with ``use_sliding_window``: layers ``>= max_window_layers`` slide (transformers'
      Qwen2Config drops the window otherwise).

    Llama and Qwen3 configs are read as full attention.
    """
    window = data.get("sliding_window")
    raw = data.get("layer_types")
    kinds: tuple[str, ...] = ()
    if raw is not None:
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
            raise ModelConfigError(f"{where}: layer_types must be a list, got {raw!r}")
        kinds = tuple(str(k) for k in raw)
        unknown = sorted(set(kinds) - set(LAYER_TYPES))
        if unknown:
            raise ModelConfigError(f"{where}: layer_types {unknown} unknown; known: {', '.join(LAYER_TYPES)}")
        if len(kinds) != layers:
            raise ModelConfigError(f"{where}: layer_types has {len(kinds)} entries for {layers} layers")
        if SLIDING_ATTENTION not in kinds:
            kinds, window = (), None
    elif model_type == "gemma2":
        kinds = tuple(SLIDING_ATTENTION if (i + 1) % 2 else FULL_ATTENTION for i in range(layers))
    elif model_type == "gemma3_text":
        pattern = get_int("sliding_window_pattern", 6)
        kinds = tuple(SLIDING_ATTENTION if (i + 1) % pattern else FULL_ATTENTION for i in range(layers))
    elif model_type in ("mistral", "mixtral", "phi3") and window is not None:
        kinds = (SLIDING_ATTENTION,) * layers
    elif model_type in ("qwen2", "qwen2_moe") and get_bool("use_sliding_window", False) and window is not None:
        start = get_int("max_window_layers", layers)
        kinds = tuple(SLIDING_ATTENTION if i >= start else FULL_ATTENTION for i in range(layers))
        if SLIDING_ATTENTION not in kinds:
            kinds = ()
    if not kinds:
        return
    if window is None:
        raise ModelConfigError(f"{where}: sliding-window layers but no 'sliding_window' size")
    if isinstance(window, bool) or not isinstance(window, (int, float)) or not float(window).is_integer():
        raise ModelConfigError(f"{where}: key 'sliding_window' must be an integer, got {window!r}")
    kw.update(layer_types=kinds, sliding_window=int(window))


def nominal(
    params: float,
    *,
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    name: str = "nominal",
    num_attention_heads: int | None = None,
    max_position_embeddings: int | None = None,
    hidden_size: int | None = None,
    intermediate_size: int | None = None,
    vocab_size: int | None = None,
) -> ModelArch:
    """A model given by numbers alone: ``param_count() == params``; KV bytes from the shape.

    E.g. the "Batching and Throughput" seed's model (docs/sources.md),
    ``nominal(8.0e9, num_layers=32, num_kv_heads=8, head_dim=128)``:
    131,072 KV bytes per token in bf16 and 16.0e9 weight bytes.

    ``hidden_size`` / ``intermediate_size`` / ``vocab_size`` are optional and only feed the profile-run
    activation estimate of the KV accounting; without hidden and vocab sizes that estimate is unavailable
    and the accounting takes 0 (say ``engine.reserves.activation`` to give it).
    """
    return ModelArch(
        name=name,
        num_layers=num_layers,
        hidden_size=hidden_size or 0,
        num_attention_heads=num_attention_heads or 0,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate_size or 0,
        vocab_size=vocab_size or 0,
        tie_word_embeddings=False,
        nominal_params=params,
        max_position_embeddings=max_position_embeddings,
        source=f"nominal: P = {params:.6g}",
    )


# --------------------------------------------------------------------------- presets

#: the package data file the presets are read from (pytest_roofline/model/data/)
PRESETS_FILE = "model_presets.json"


def _load_presets() -> dict[str, dict[str, Any]]:
    """HF config.json facts per preset (the keys the counts need, plus facts other modules read:
    max_position_embeddings for vLLM's default max_model_len, torch_dtype); ``like`` entries resolved."""
    raw = catalog.load_data(PRESETS_FILE).get("presets")
    if not isinstance(raw, dict) or not raw:
        raise ModelArchError(f"{PRESETS_FILE}: expected a non-empty object under 'presets'")
    out: dict[str, dict[str, Any]] = {}
    for pid, entry in raw.items():
        where = f"{PRESETS_FILE} preset {pid!r}"
        if not isinstance(entry, dict) or set(entry) - {"source", "aliases", "like", "config"}:
            raise ModelArchError(f"{where}: expected source, aliases, config (and optionally like)")
        if not (isinstance(entry.get("source"), str) and entry["source"]):
            raise ModelArchError(f"{where}: every preset needs the source of its config facts")
        config = entry.get("config")
        if not isinstance(config, dict) or not isinstance(entry.get("aliases", []), list):
            raise ModelArchError(f"{where}: config must be an object and aliases a list")
        if "like" in entry:
            if entry["like"] not in out:
                raise ModelArchError(f"{where}: like {entry['like']!r} must name a preset given before it")
            config = {**out[entry["like"]]["config"], **config}
        out[pid] = {"source": entry["source"], "aliases": tuple(entry.get("aliases", ())), "config": config}
    return out


PRESETS: Mapping[str, dict[str, Any]] = MappingProxyType(_load_presets())


def _norm(name: str) -> str:
    return str(name).strip().lower()


_PRESET_INDEX = catalog.NameIndex(((pid, entry["aliases"]) for pid, entry in PRESETS.items()), _norm)


def presets() -> list[str]:
    """Preset model ids."""
    return list(PRESETS)


@cache
def _preset(preset_id: str) -> ModelArch:
    entry = PRESETS[preset_id]
    arch = from_hf_config(entry["config"], name=preset_id)
    return dataclasses.replace(arch, source=f"preset {preset_id}: {entry['source']}")


def get_model(name_or_path: str | Path | ModelArch) -> ModelArch:
    """A preset (case-insensitive; HF ids like ``Qwen/Qwen3-8B`` work) or a path.

    A path may be a ``config.json`` file or a model directory containing one; an existing path wins
    over a preset of the same spelling. Anything else raises :class:`UnknownModelError`.
    """
    if isinstance(name_or_path, ModelArch):
        return name_or_path
    text = str(name_or_path)
    path = Path(text).expanduser()
    try:
        exists = path.exists()
    except OSError:
        exists = False
    if exists:
        return from_hf_config(path)
    preset_id = _PRESET_INDEX.get(text)
    if preset_id is not None:
        return _preset(preset_id)
    if text.endswith(".json") or text.startswith((".", "/", "~")):
        raise UnknownModelError(f"no config.json at {text!r} (and it is not a preset: {', '.join(PRESETS)})")
    hits = _PRESET_INDEX.suggest(text)
    msg = f"unknown model {text!r}."
    if hits:
        msg += f" Did you mean: {', '.join(hits)}?"
    msg += f" Presets: {', '.join(PRESETS)}; or give a path to a config.json or a model directory."
    raise UnknownModelError(msg)


# --------------------------------------------------------------------------- overrides

_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(ModelArch) if f.name != "source")
_HF_FIELD_ALIASES = {
    "num_hidden_layers": "num_layers",
    "num_key_value_heads": "num_kv_heads",
    "num_local_experts": "num_experts",
}


def _int(value: Any, where: str) -> int:
    try:
        return to_int(value)
    except UnitError as exc:
        raise ModelOverrideError(f"{where}: {exc}") from None


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise ModelOverrideError(f"{where}: expected true or false, got {value!r}")


def _convert(key: str, value: Any, where: str) -> Any:
    if key in _INT_FIELDS:
        return _int(value, where)
    if key in _BOOL_FIELDS:
        return _bool(value, where)
    if key == "mlp_only_layers":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ModelOverrideError(f"{where}: expected a list of layer indices")
        return tuple(_int(v, where) for v in value)
    if key == "nominal_params":
        if not isinstance(value, str):
            return value  # None or a number; ModelArch checks it
        try:
            return to_si(value, "count")
        except UnitError:
            raise ModelOverrideError(f"{where}: cannot read {value!r} as a number") from None
    if key == "max_position_embeddings":
        return None if value is None else _int(value, where)
    if key == "layer_types":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ModelOverrideError(f"{where}: expected a list of {' / '.join(LAYER_TYPES)} per layer")
        return tuple(str(v) for v in value)
    if key == "sliding_window":
        return None if value is None else _int(value, where)
    if key == "quantization_config":
        if value is not None and not isinstance(value, Mapping):
            raise ModelOverrideError(f"{where}: expected a mapping (config.json's quantization_config)")
        return None if value is None else MappingProxyType(dict(value))
    # name, model_type, torch_dtype
    if value is not None and not isinstance(value, str):
        raise ModelOverrideError(f"{where}: expected text, got {value!r}")
    return value


def with_overrides(arch: ModelArch | str, overrides: Mapping[str, Any] | None) -> ModelArch:
    """A copy of ``arch`` with fields replaced (HF key names like ``num_hidden_layers`` accepted).

    Counts are recomputed from the new shape. Note ``head_dim`` is a field of its own: overriding
    ``hidden_size`` or ``num_attention_heads`` does not change it. The overridden fields are
    recorded in ``source``. Unknown fields raise :class:`ModelOverrideError` with a did-you-mean.
    """
    arch = get_model(arch) if isinstance(arch, str) else arch
    if not overrides:
        return arch
    changes = catalog.field_changes(overrides, kind="model", owner=arch.name, field_names=_FIELD_NAMES,
                                    convert=_convert, error=ModelOverrideError, key_aliases=_HF_FIELD_ALIASES)
    note = f"user override: {', '.join(str(k) for k in overrides)}"
    changes["source"] = f"{arch.source}; {note}" if arch.source else note
    return catalog.replace_checked(arch, changes, catch=ModelArchError, error=ModelOverrideError,
                                   prefix=f"overrides for {arch.name}: ")
