"""A model's shape and what follows from it: ``ModelArch`` (parameter counts, KV-cache bytes) and ``nominal``.

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

A ``ModelArch`` is read from an HF ``config.json`` by model/hf_config.py and named by model/presets.py;
model/architecture.py is the front door for all three.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_roofline.errors import ModelArchError
from pytest_roofline.model import dtypes, kv_cache

__all__ = ["ModelArch", "kv_dtype_bytes", "weight_dtype_bytes", "nominal", "FULL_ATTENTION", "SLIDING_ATTENTION",
           "LAYER_TYPES"]


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
    #: config.json's ``rope_scaling`` kind (``rope_type``, older files ``type``): ``llama3`` needs vLLM 0.5.3.post1+
    rope_type: str | None = None
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
        cached = self.__dict__.get("_active_param_count")
        if cached is not None:  # a frozen shape's count never changes; the scorecard asks once a point
            return cached  # type: ignore[no-any-return]
        layers = sum(self.layer_param_count(i, active=True) for i in range(self.num_layers))
        rest = self.non_embedding_param_count() - sum(self.layer_param_count(i) for i in range(self.num_layers))
        count = layers + rest + self.embedding_param_count() + self.lm_head_param_count()
        object.__setattr__(self, "_active_param_count", count)
        return count

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


