"""Reading a Hugging Face ``config.json`` into a :class:`~pytest_roofline.model.model_arch.ModelArch`.

``from_hf_config`` takes a mapping, a file or a model directory. The families differ in a few rules only, so
each ``model_type`` is one row of :data:`FAMILIES` (a :class:`Family`): how it counts its KV heads, its
``head_dim`` when the config has none, its ``tie_word_embeddings`` default, the keys it spells differently, the
family's own fields (``steps``, run in order), and which layers slide when the config has no ``layer_types``.
Keys and HF defaults follow transformers' config classes, family by family.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_roofline import bounded
from pytest_roofline.errors import ModelArchError, ModelConfigError, UnsupportedModelError
from pytest_roofline.model.model_arch import FULL_ATTENTION, LAYER_TYPES, SLIDING_ATTENTION, ModelArch

__all__ = ["from_hf_config", "SUPPORTED_MODEL_TYPES", "FAMILIES", "Family"]

_MISSING = object()


@dataclass
class ConfigReader:
    """One config.json being read: its keys (under the family's aliases), where it came from for the errors,
    the shape read so far, and the ``ModelArch`` fields gathered (``kw``)."""

    data: Mapping[str, Any]
    model_type: str
    where: str
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    kw: dict[str, Any] = field(default_factory=dict)
    layers: int = 0
    hidden: int = 0

    def get(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key, None)
        for alt in self.aliases.get(key, ()):
            if value is None:
                value = self.data.get(alt, None)
        if value is None:
            if default is _MISSING:
                raise ModelConfigError(f"{self.where}: missing required key {key!r}")
            return default
        return value

    def get_int(self, key: str, default: Any = _MISSING) -> int:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise ModelConfigError(f"{self.where}: key {key!r} must be an integer, got {value!r}")
        return int(value)

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise ModelConfigError(f"{self.where}: key {key!r} must be true or false, got {value!r}")
        return value


# --------------------------------------------------------------------------- the rules a family picks from

def _kv_heads_key(r: ConfigReader, heads: int) -> int:
    """``num_key_value_heads``, defaulting to one per attention head."""
    return r.get_int("num_key_value_heads", heads)


def _kv_heads_one_per_head(r: ConfigReader, heads: int) -> int:
    """OPT: multi-head attention, one KV head per attention head."""
    return heads


def _kv_heads_falcon(r: ConfigReader, heads: int) -> int:
    """FalconAttention: new_decoder_architecture -> num_kv_heads; multi_query -> 1; else one per head."""
    if r.get_bool("new_decoder_architecture", False):
        return r.get_int("num_kv_heads", heads)
    if r.get_bool("multi_query", True):
        return 1
    return heads


def _head_dim_from_hidden(r: ConfigReader, hidden: int, heads: int) -> int:
    if hidden % heads:
        raise ModelConfigError(
            f"{r.where}: no 'head_dim' and hidden_size {hidden} is not divisible by "
            f"num_attention_heads {heads}"
        )
    return hidden // heads


def _head_dim_mla(r: ConfigReader, hidden: int, heads: int) -> int:
    """DeepSeek: ``qk_nope_head_dim + qk_rope_head_dim``."""
    return r.get_int("qk_nope_head_dim") + r.get_int("qk_rope_head_dim")


def _attention_bias(r: ConfigReader) -> None:
    """Llama/Qwen3: ``attention_bias`` on q/k/v and o_proj."""
    bias = r.get_bool("attention_bias", False)
    r.kw.update(attention_bias=bias, o_proj_bias=bias)


def _qwen2_bias(r: ConfigReader) -> None:
    r.kw.update(attention_bias=True, o_proj_bias=False)  # Qwen2Attention: qkv bias, no o_proj bias


def _llama_mlp_bias(r: ConfigReader) -> None:
    r.kw["mlp_bias"] = r.get_bool("mlp_bias", False)


def _qk_norm(r: ConfigReader) -> None:
    r.kw["qk_norm"] = True  # q_norm / k_norm over head_dim (Qwen3Attention, Gemma3Attention)


def _mlp(r: ConfigReader) -> None:
    """A gated MLP of ``intermediate_size``: the default."""
    r.kw["intermediate_size"] = r.get_int("intermediate_size")


def _qwen_moe_experts(r: ConfigReader) -> None:
    r.kw.update(
        num_experts=r.get_int("num_experts"),
        num_experts_per_tok=r.get_int("num_experts_per_tok"),
        moe_intermediate_size=r.get_int("moe_intermediate_size"),
        decoder_sparse_step=r.get_int("decoder_sparse_step", 1),
        mlp_only_layers=tuple(r.get("mlp_only_layers", ())),
    )


def _qwen2_shared_expert(r: ConfigReader) -> None:
    shared = r.get_int("shared_expert_intermediate_size", 0)
    r.kw.update(shared_expert_intermediate_size=shared, shared_expert_gate=shared > 0)


def _qwen_moe_dense_mlp(r: ConfigReader) -> None:
    """intermediate_size sizes the dense layers; it is required only if some layer is dense."""
    kw = r.kw
    step, only = kw["decoder_sparse_step"], set(kw["mlp_only_layers"])
    has_dense = kw["num_experts"] == 0 or any(
        i in only or (i + 1) % max(step, 1) for i in range(r.layers)
    )
    kw["intermediate_size"] = r.get_int("intermediate_size") if has_dense else r.get_int("intermediate_size", 0)


def _mixtral_experts(r: ConfigReader) -> None:
    per_expert = r.get_int("intermediate_size")
    r.kw.update(
        num_experts=r.get_int("num_local_experts"),
        num_experts_per_tok=r.get_int("num_experts_per_tok"),
        moe_intermediate_size=per_expert,
        intermediate_size=per_expert,
    )


def _deepseek(r: ConfigReader) -> None:
    """DeepSeek-V2/V3 (HF DeepseekV3DecoderLayer): MLA attention; MoE layers where
    ``i >= first_k_dense_replace and i % moe_layer_freq == 0``; routed experts of moe_intermediate_size,
    ``n_shared_experts`` shared experts as one MLP of ``moe_intermediate_size x n_shared``; V3's router
    carries an ``e_score_correction_bias`` (topk_method ``noaux_tc``)."""
    q_lora = r.get("q_lora_rank", 0) or 0
    r.kw.update(
        q_lora_rank=int(q_lora), kv_lora_rank=r.get_int("kv_lora_rank"),
        qk_nope_head_dim=r.get_int("qk_nope_head_dim"), qk_rope_head_dim=r.get_int("qk_rope_head_dim"),
        v_head_dim=r.get_int("v_head_dim"), attention_bias=bool(r.get("attention_bias", False)),
        intermediate_size=r.get_int("intermediate_size"),
    )
    experts = r.get_int("n_routed_experts", 0)
    if experts:
        first_dense = r.get_int("first_k_dense_replace", 0)
        freq = max(1, r.get_int("moe_layer_freq", 1))
        shared = r.get_int("n_shared_experts", 0)
        moe_inter = r.get_int("moe_intermediate_size")
        r.kw.update(
            num_experts=experts, num_experts_per_tok=r.get_int("num_experts_per_tok"),
            moe_intermediate_size=moe_inter, shared_expert_intermediate_size=moe_inter * shared,
            mlp_only_layers=tuple(i for i in range(r.layers) if i < first_dense or i % freq),
            router_bias=r.get("topk_method", "greedy" if r.model_type == "deepseek_v2" else "noaux_tc")
            == "noaux_tc",
        )


def _opt(r: ConfigReader) -> None:
    """OPTDecoderLayer: q/k/v/out_proj and fc1/fc2 with bias (enable_bias), two LayerNorms with bias;
    OPTDecoder: learned positions (max_position_embeddings + 2 offset rows), project_in/out when
    word_embed_proj_dim != hidden, final_layer_norm only when do_layer_norm_before."""
    bias = r.get_bool("enable_bias", True)
    r.kw.update(
        intermediate_size=r.get_int("ffn_dim"), gated_mlp=False, mlp_bias=bias, attention_bias=bias,
        o_proj_bias=bias, norm_bias=r.get_bool("layer_norm_elementwise_affine", True),
        learned_position_embeddings=r.get_int("max_position_embeddings") + 2,
        word_embed_proj_dim=r.get_int("word_embed_proj_dim", r.hidden),
        final_norm=r.get_bool("do_layer_norm_before", True) and not r.get_bool("_remove_final_layer_norm", False),
    )


def _phi(r: ConfigReader) -> None:
    """PhiDecoderLayer (phi-2): q/k/v/dense with bias, fc1/fc2 with bias, ONE input LayerNorm (parallel
    attention and MLP), final LayerNorm, lm_head with bias; optional q/k LayerNorms (qk_layernorm)."""
    r.kw.update(
        intermediate_size=r.get_int("intermediate_size"), gated_mlp=False, mlp_bias=True,
        attention_bias=True, o_proj_bias=True, norm_bias=True, norms_per_layer=1, lm_head_bias=True,
    )
    if r.get_bool("qk_layernorm", False):
        raise UnsupportedModelError(f"{r.where}: phi with qk_layernorm is not supported")


def _gemma(r: ConfigReader) -> None:
    """GemmaMLP gate/up/down (GeGLU); Gemma2/3 layers carry 4 RMSNorms (input, post_attention,
    pre_feedforward, post_feedforward), Gemma 2."""
    r.kw.update(intermediate_size=r.get_int("intermediate_size"),
                norms_per_layer=2 if r.model_type == "gemma" else 4,
                attention_bias=r.get_bool("attention_bias", False))
    r.kw["o_proj_bias"] = r.kw["attention_bias"]


def _gpt_neox(r: ConfigReader) -> None:
    """GPTNeoXLayer: input/post_attention LayerNorms (bias), fused query_key_value and dense with bias
    (attention_bias, default true), dense_h_to_4h / dense_4h_to_h with bias; final_layer_norm;
    embed_in and an untied embed_out."""
    bias = r.get_bool("attention_bias", True)
    r.kw.update(intermediate_size=r.get_int("intermediate_size"), gated_mlp=False, mlp_bias=True,
                attention_bias=bias, o_proj_bias=bias, norm_bias=True)


def _falcon(r: ConfigReader) -> None:
    """FalconDecoderLayer: query_key_value / dense / dense_h_to_4h / dense_4h_to_h with bias = config.bias;
    parallel_attn: one input_layernorm, or ln_attn + ln_mlp (new_decoder_architecture with
    num_ln_in_parallel_attn 2, its default there); sequential: input + post_attention LayerNorms."""
    bias = r.get_bool("bias", False)
    parallel = r.get_bool("parallel_attn", True)
    new_arch = r.get_bool("new_decoder_architecture", False)
    n_ln = r.get_int("num_ln_in_parallel_attn", 2 if new_arch else 1)
    r.kw.update(intermediate_size=r.get_int("ffn_hidden_size", 4 * r.hidden), gated_mlp=False, mlp_bias=bias,
                attention_bias=bias, o_proj_bias=bias, norm_bias=True,
                norms_per_layer=(n_ln if new_arch else 1) if parallel else 2)


# which layers slide when config.json has no ``layer_types`` (``window``: its ``sliding_window``, or None)

def _no_sliding(r: ConfigReader, window: Any) -> tuple[str, ...]:
    """Llama, Qwen3 and the rest: full attention."""
    return ()


def _gemma2_sliding(r: ConfigReader, window: Any) -> tuple[str, ...]:
    """Gemma-2: even layers slide (``Gemma2Config``: sliding when ``(i + 1) % 2``)."""
    return tuple(SLIDING_ATTENTION if (i + 1) % 2 else FULL_ATTENTION for i in range(r.layers))


def _gemma3_sliding(r: ConfigReader, window: Any) -> tuple[str, ...]:
    """Gemma-3: ``(i + 1) % sliding_window_pattern`` layers slide, every 6th is global (pattern 6: 5 local : 1)."""
    pattern = r.get_int("sliding_window_pattern", 6)
    return tuple(SLIDING_ATTENTION if (i + 1) % pattern else FULL_ATTENTION for i in range(r.layers))


def _all_sliding(r: ConfigReader, window: Any) -> tuple[str, ...]:
    """Mistral, Mixtral and Phi-3 with a ``sliding_window`` (Mistral-7B-v0.1: 4096, Phi-3-mini-4k: 2047): every
    layer slides -- vLLM gives a model that is not interleaved the config's window as the model-level
    ``CacheConfig.sliding_window`` that every Attention layer takes (vLLM v0.10.2: vllm/engine/arg_utils.py
    ``create_engine_config``, "Only set CacheConfig.sliding_window if the model is all sliding window";
    vllm/attention/layer.py ``Attention.__init__``)."""
    return (SLIDING_ATTENTION,) * r.layers if window is not None else ()


def _qwen2_sliding(r: ConfigReader, window: Any) -> tuple[str, ...]:
    """Qwen2/Qwen2-MoE with ``use_sliding_window``: layers ``>= max_window_layers`` slide (transformers'
    Qwen2Config drops the window otherwise)."""
    if not (r.get_bool("use_sliding_window", False) and window is not None):
        return ()
    start = r.get_int("max_window_layers", r.layers)
    kinds = tuple(SLIDING_ATTENTION if i >= start else FULL_ATTENTION for i in range(r.layers))
    return kinds if SLIDING_ATTENTION in kinds else ()


# --------------------------------------------------------------------------- the table

Step = Callable[[ConfigReader], None]


@dataclass(frozen=True)
class Family:
    """How one ``model_type`` reads: the rules above, picked per family."""

    #: the family's own fields, read in this order after the shared ones
    steps: tuple[Step, ...] = (_mlp,)
    kv_heads: Callable[[ConfigReader, int], int] = _kv_heads_key
    #: ``head_dim`` when config.json has none (or null)
    head_dim: Callable[[ConfigReader, int, int], int] = _head_dim_from_hidden
    #: ``tie_word_embeddings`` when config.json does not say: False for Llama/Qwen/Mistral/Phi/NeoX/DeepSeek
    #: config classes; True for Gemma (1/2/3) and Falcon (transformers GemmaConfig/Gemma2Config/
    #: Gemma3TextConfig/FalconConfig) and OPT (PretrainedConfig's default, OPTConfig passes it through)
    tied: bool = False
    sliding: Callable[[ConfigReader, Any], tuple[str, ...]] = _no_sliding
    #: HF config keys the family spells differently
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: a multimodal wrapper: the language model is ``text_config`` (Gemma-3)
    text_config: bool = False


_QWEN_MOE = (_qwen_moe_experts, _qwen_moe_dense_mlp)
_DEEPSEEK = Family(steps=(_deepseek,), head_dim=_head_dim_mla)

#: one row per supported ``model_type`` (the order of the error messages' list)
FAMILIES: Mapping[str, Family] = MappingProxyType({
    "llama": Family(steps=(_attention_bias, _llama_mlp_bias, _mlp)),
    "mistral": Family(sliding=_all_sliding),
    "qwen2": Family(steps=(_qwen2_bias, _mlp), sliding=_qwen2_sliding),
    "qwen3": Family(steps=(_attention_bias, _qk_norm, _mlp)),
    "qwen3_moe": Family(steps=(_attention_bias, _qk_norm, *_QWEN_MOE)),
    "mixtral": Family(steps=(_mixtral_experts,), sliding=_all_sliding),
    "qwen2_moe": Family(steps=(_qwen2_bias, _qwen_moe_experts, _qwen2_shared_expert, _qwen_moe_dense_mlp),
                        sliding=_qwen2_sliding),
    "opt": Family(steps=(_opt,), kv_heads=_kv_heads_one_per_head, tied=True),
    "phi": Family(steps=(_phi,)),
    "phi3": Family(sliding=_all_sliding),  # fused qkv_proj and gate_up_proj: the same count, no biases
    "gemma": Family(steps=(_gemma,), tied=True),
    "gemma2": Family(steps=(_gemma,), tied=True, sliding=_gemma2_sliding),
    "gemma3_text": Family(steps=(_qk_norm, _gemma), tied=True, sliding=_gemma3_sliding),
    "gemma3": Family(text_config=True),
    "gpt_neox": Family(steps=(_gpt_neox,)),
    # Falcon's original RW config keys (transformers' FalconConfig attribute_map / __init__ kwargs)
    "falcon": Family(steps=(_falcon,), kv_heads=_kv_heads_falcon, tied=True,
                     aliases={"num_hidden_layers": ("n_layer",), "num_attention_heads": ("n_head",),
                              "num_kv_heads": ("n_head_kv",), "hidden_size": ("n_embed",)}),
    "deepseek_v2": _DEEPSEEK,
    "deepseek_v3": _DEEPSEEK,
})

SUPPORTED_MODEL_TYPES = tuple(FAMILIES)

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



def _load_config(path: Path) -> tuple[dict[str, Any], Path]:
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise ModelConfigError(f"no config.json at {path}")
    try:  # a config.json is a few KB: 16 MiB, 64 levels and a regular file bound a hostile one
        data = bounded.load_json_file(path, what="the model's config.json", max_bytes=16 * bounded.MIB)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and bounded.BoundedInputError are ValueErrors
        raise ModelConfigError(f"cannot read {path}: {exc}") from None
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



def from_hf_config(config: Mapping[str, Any] | str | Path, name: str | None = None, *,
                   origin: str | None = None) -> ModelArch:
    """Build a :class:`ModelArch` from an HF ``config.json`` (a mapping, a file, or a model directory).

    Supports Llama, Mistral, Qwen2, Qwen3, Qwen3-MoE, Mixtral, Qwen2-MoE, OPT, Phi (phi-2), Phi-3, Gemma,
    Gemma-2, Gemma-3 (``gemma3_text``, or ``gemma3`` with a ``text_config``: the vision tower is not
    counted), GPT-NeoX (Pythia), Falcon and DeepSeek-V2/V3 configs. ``head_dim`` is taken when present
    (not null), else ``hidden_size / num_attention_heads`` (DeepSeek: ``qk_nope + qk_rope``);
    ``num_key_value_heads`` defaults to ``num_attention_heads``; ``tie_word_embeddings`` defaults as the
    family's transformers config class does (true for Gemma, Falcon and OPT, false otherwise). ``origin`` names a
    mapping's source in errors (a Hub id and its cached file).
    """
    given_origin = origin
    origin_text: str
    if isinstance(config, (str, Path)):
        data, path = _load_config(Path(config))
        origin_text = str(path)
        default_name = data.get("_name_or_path") or path.parent.name
    elif isinstance(config, Mapping):
        data = dict(config)
        origin_text = given_origin or "config mapping"
        default_name = data.get("_name_or_path") or "model"
    else:
        raise ModelConfigError(f"expected a config mapping or a path, got {type(config).__name__}")
    origin = origin_text

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
            f"{origin}: model_type {model_type!r} is not one the model can count (it counts "
            f"{', '.join(SUPPORTED_MODEL_TYPES)}); describe the model by its numbers instead: model: {{name: "
            f"{name or default_name}, params: P, num_layers: L, num_kv_heads: K, head_dim: D}} (its parameter "
            f"count, layers, KV heads and head size, from its model card or config.json)"
        )
    where = f"{origin} (model_type {model_type})"
    return _arch_from_config(data, model_type, where, name=str(name or default_name), origin=origin)


def _arch_from_config(data: Mapping[str, Any], model_type: str, where: str, *, name: str, origin: str) -> ModelArch:
    """The shared keys, then the family's row of :data:`FAMILIES`."""
    family = FAMILIES[model_type]
    if family.text_config:
        return _multimodal(data, where, name=name, origin=origin)
    r = ConfigReader(data, model_type, where, family.aliases)
    hidden = r.get_int("hidden_size")
    layers = r.get_int("num_hidden_layers")
    heads = r.get_int("num_attention_heads")
    vocab = r.get_int("vocab_size")
    if heads <= 0:
        raise ModelConfigError(f"{where}: num_attention_heads must be positive, got {heads}")
    kv_heads = family.kv_heads(r, heads)
    head_dim = r.get_int("head_dim") if data.get("head_dim") is not None else family.head_dim(r, hidden, heads)
    r.layers, r.hidden = layers, hidden
    r.kw.update(
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        tie_word_embeddings=r.get_bool("tie_word_embeddings", family.tied),
        model_type=model_type,
        rope_type=_rope_type(data),
        max_position_embeddings=r.get_int("max_position_embeddings", 0) or None,
        torch_dtype=str(data["torch_dtype"]) if data.get("torch_dtype") is not None else None,
        quantization_config=_raw_quantization_config(data, where),
    )
    for step in family.steps:
        step(r)
    _layer_types(r, family)
    try:
        return ModelArch(name=name, source=origin, **r.kw)
    except ModelArchError as exc:
        raise ModelConfigError(f"{where}: {exc}") from exc


def _rope_type(data: Mapping[str, Any]) -> str | None:
    """``rope_scaling``'s kind: ``rope_type`` (transformers 4.43+), else the older ``type``; None without one."""
    rope = data.get("rope_scaling")
    if not isinstance(rope, Mapping):
        return None
    kind = rope.get("rope_type", rope.get("type"))
    return str(kind) if kind is not None else None


def _multimodal(data: Mapping[str, Any], where: str, *, name: str, origin: str) -> ModelArch:
    """Gemma-3's multimodal wrapper: the language model is text_config; the vision tower is counted as
    ``encoder_params`` (weights, never active)."""
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


def _layer_types(r: ConfigReader, family: Family) -> None:
    """Per-layer attention kinds, as transformers' config classes derive ``layer_types``: an explicit
    ``layer_types`` list wins (newer transformers write it into config.json); else the family's rule."""
    window = r.data.get("sliding_window")
    raw = r.data.get("layer_types")
    where, layers = r.where, r.layers
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
    else:
        kinds = family.sliding(r, window)
    if not kinds:
        return
    if window is None:
        raise ModelConfigError(f"{where}: sliding-window layers but no 'sliding_window' size")
    if isinstance(window, bool) or not isinstance(window, (int, float)) or not float(window).is_integer():
        raise ModelConfigError(f"{where}: key 'sliding_window' must be an integer, got {window!r}")
    r.kw.update(layer_types=kinds, sliding_window=int(window))


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
