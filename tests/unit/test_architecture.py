"""Model architecture: parameter counts, KV bytes, HF config loading, presets, overrides.

Expected values are worked out here by hand from the config facts (the Hub's config.json of each model),
independently of the module's per-piece helpers.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_roofline.model import architecture as arch_mod
from pytest_roofline.model.architecture import (
    ModelArch,
    ModelArchError,
    ModelConfigError,
    ModelOverrideError,
    UnknownModelError,
    UnsupportedModelError,
    from_hf_config,
    get_model,
    nominal,
    presets,
    with_overrides,
)
from pytest_roofline.units import MIB

TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
    "vocab_size": 312,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


# --------------------------------------------------------------------------- anchor counts


def test_qwen3_8b_anchor_count():
    m = get_model("qwen3-8b")
    # per layer: q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 + q/k norm 2*128
    #            + MLP 3*4096*12288 + 2 RMSNorm 2*4096
    per_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 2 * 128 + 3 * 4096 * 12288 + 2 * 4096
    assert per_layer == 192_946_432
    assert m.layer_param_count(0) == per_layer
    assert m.non_embedding_param_count() == 36 * per_layer + 4096 == 6_946_075_648
    assert m.embedding_param_count() == 151936 * 4096 == 622_329_856
    assert m.lm_head_param_count() == 622_329_856
    assert m.param_count() == 8_190_735_360


def test_llama_31_8b_anchor_count():
    m = get_model("llama-3.1-8b")
    per_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    assert per_layer == 218_112_000
    assert m.layer_param_count(31) == per_layer
    assert m.non_embedding_param_count() == 6_979_588_096
    assert m.embedding_param_count() == 128256 * 4096 == 525_336_576
    assert m.param_count() == 8_030_261_248


def test_llama_31_70b_count():
    m = get_model("llama-3.1-70b")
    per_layer = 8192 * 8192 + 2 * 8192 * 1024 + 8192 * 8192 + 3 * 8192 * 28672 + 2 * 8192
    total = 80 * per_layer + 8192 + 2 * 128256 * 8192
    assert total == 70_553_706_496
    assert m.param_count() == total


def test_mistral_7b_v03_count():
    m = get_model("mistral-7b")
    per_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    total = 32 * per_layer + 4096 + 2 * 32768 * 4096
    assert total == 7_248_023_552
    assert m.param_count() == total
    assert m.vocab_size == 32768  # v0.3's extended vocabulary


def test_qwen25_7b_count_has_qkv_bias_but_no_o_bias():
    m = get_model("Qwen/Qwen2.5-7B")
    q, kv = 28 * 128, 4 * 128
    attn = 3584 * q + 2 * 3584 * kv + q * 3584 + (q + 2 * kv)  # qkv biases, no o_proj bias
    per_layer = attn + 3 * 3584 * 18944 + 2 * 3584
    total = 28 * per_layer + 3584 + 2 * 152064 * 3584
    assert total == 7_615_616_512  # published: 7.61B
    assert m.param_count() == total
    assert m.non_embedding_param_count() == 6_525_621_760  # published: 6.53B non-embedding
    assert m.attention_bias and not m.o_proj_bias


@pytest.mark.parametrize(("name", "inter", "layers", "heads", "total", "published"), [
    ("Qwen/Qwen3-14B", 17408, 40, 40, 14_768_307_200, (14.8e9, 13.2e9)),
    ("Qwen/Qwen3-32B", 25600, 64, 64, 32_762_123_264, (32.8e9, 31.2e9)),
])
def test_qwen3_dense_counts_from_their_configs(name, inter, layers, heads, total, published):
    # hidden 5120, 8 KV heads of 128, per-head q/k RMSNorm (2 x 128), untied embeddings of 151,936 (config.json)
    m = get_model(name)
    q, kv = heads * 128, 8 * 128
    per_layer = (5120 * q + 2 * 5120 * kv + q * 5120 + 2 * 128) + 3 * 5120 * inter + 2 * 5120
    non_embedding = layers * per_layer + 5120
    assert non_embedding + 2 * 151936 * 5120 == total
    assert m.param_count() == total
    assert m.non_embedding_param_count() == non_embedding
    # the model cards' rounded figures (total, non-embedding)
    assert round(total / 1e8) / 10 == published[0] / 1e9
    assert round(non_embedding / 1e8) / 10 == published[1] / 1e9
    assert m.kv_bytes_per_token() == 2 * layers * kv * 2  # K and V, bf16


def test_qwen3_30b_a3b_total_and_active():
    m = get_model("qwen3-30b-a3b")
    attn = 2048 * 4096 + 2 * 2048 * 512 + 4096 * 2048 + 2 * 128
    expert = 3 * 2048 * 768
    router = 2048 * 128
    per_layer_total = attn + 2 * 2048 + router + 128 * expert
    per_layer_active = attn + 2 * 2048 + router + 8 * expert
    embeddings = 2 * 151936 * 2048
    total = 48 * per_layer_total + 2048 + embeddings
    active = 48 * per_layer_active + 2048 + embeddings
    assert total == 30_532_122_624
    assert active == 3_353_032_704
    assert m.param_count() == total
    assert m.active_param_count() == active
    assert 30.4e9 < m.param_count() < 30.6e9  # published: 30.5B total
    assert 3.3e9 <= m.active_param_count() < 3.4e9  # published: "3.3B activated" (3.353 truncated)
    assert 29.85e9 < m.non_embedding_param_count() < 29.95e9  # published: 29.9B non-embedding
    assert m.num_moe_layers == 48 and m.num_dense_layers == 0


def test_dense_active_equals_total():
    for name in ("qwen3-8b", "llama-3.1-8b", "mistral-7b", "qwen2.5-7b"):
        m = get_model(name)
        assert m.active_param_count() == m.param_count()


def test_streamed_params_exclude_the_input_embedding():
    # a bf16 weight-read floor streams 7.57 B (Qwen3-8B) / 7.50 B (Llama-3.1-8B): all but the input embedding
    assert get_model("qwen3-8b").streamed_param_count() == 8_190_735_360 - 622_329_856
    assert round(get_model("qwen3-8b").streamed_param_count() / 1e9, 2) == 7.57
    assert round(get_model("llama-3.1-8b").streamed_param_count() / 1e9, 2) == 7.50


# --------------------------------------------------------------------------- KV bytes


def test_kv_bytes_per_token_anchors():
    assert get_model("qwen3-8b").kv_bytes_per_token() == 2 * 36 * 8 * 128 * 2 == 147_456
    assert get_model("llama-3.1-8b").kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2 == 131_072


def test_vllm_bytes_per_block_anchors():
    q, llama = get_model("qwen3-8b"), get_model("llama-3.1-8b")
    assert q.kv_page_bytes_per_layer(16) == 65_536 == llama.kv_page_bytes_per_layer(16)
    assert q.kv_bytes_per_block(16) == int(2.25 * MIB)
    assert llama.kv_bytes_per_block(16) == 2 * MIB


def test_kv_dtypes():
    m = get_model("llama-3.1-8b")
    assert m.kv_bytes_per_token("auto") == m.kv_bytes_per_token("fp16") == 131_072
    assert m.kv_bytes_per_token("fp8") == m.kv_bytes_per_token("fp8_e4m3") == m.kv_bytes_per_token("fp8_e5m2") == 65_536
    with pytest.raises(ModelArchError, match="known"):
        m.kv_bytes_per_token("int3")


def test_kv_block_under_tensor_parallelism():
    m = get_model("llama-3.1-70b")  # 8 KV heads
    assert m.kv_bytes_per_block(16, tensor_parallel_size=2) == m.kv_bytes_per_block(16) // 2
    assert m.kv_bytes_per_block(16, tensor_parallel_size=8) == m.kv_bytes_per_block(16) // 8
    # tp > kv heads: heads replicate, one per rank
    assert m.kv_heads_per_rank(16) == 1
    assert m.kv_bytes_per_block(16, tensor_parallel_size=16) == m.kv_bytes_per_block(16, tensor_parallel_size=8)
    with pytest.raises(ModelArchError):
        m.kv_heads_per_rank(3)
    with pytest.raises(ModelArchError):
        m.kv_bytes_per_block(0)


def test_nominal_lesson_model():
    m = nominal(8.0e9, num_layers=32, num_kv_heads=8, head_dim=128, name="lesson-8b")
    assert m.param_count() == 8.0e9
    assert m.active_param_count() == 8.0e9
    assert m.kv_bytes_per_token() == 131_072
    assert m.weight_bytes("bf16") == 16.0e9
    assert m.weight_bytes("fp8") == 8.0e9
    assert m.kv_bytes_per_block(16) == 2 * MIB
    assert m.is_nominal and m.embedding_param_count() == 0
    with pytest.raises(ModelArchError, match="nominal"):
        m.non_embedding_param_count()


# --------------------------------------------------------------------------- weight bytes


@pytest.mark.parametrize(
    "dtype, bytes_per_param",
    [("bf16", 2), ("fp16", 2), ("bfloat16", 2), ("fp8", 1), ("int8", 1), ("int4", 0.5), ("fp32", 4)],
)
def test_weight_bytes_by_dtype(dtype, bytes_per_param):
    m = get_model("qwen3-8b")
    assert m.weight_bytes(dtype) == 8_190_735_360 * bytes_per_param


def test_weight_bytes_unknown_dtype():
    with pytest.raises(ModelArchError, match="unknown weight dtype"):
        get_model("qwen3-8b").weight_bytes("int3")


# --------------------------------------------------------------------------- the CPU test model


def test_tiny_cpu_model_from_config_dict():
    m = from_hf_config(TINY_CONFIG, name="tiny")
    assert (m.num_layers, m.num_kv_heads, m.head_dim) == (2, 1, 64)
    embed = 312 * 128
    per_layer = 128 * 128 + 2 * 128 * 64 + 128 * 128 + 3 * 128 * 256 + 2 * 128
    body = 2 * per_layer + 128
    assert body + embed == 335_488  # the count with the 312 x 128 matrix counted once (no separate lm_head)
    # untied: the lm_head is a second 312 x 128 matrix
    assert m.param_count() == body + 2 * embed == 375_424
    assert m.param_count() - m.lm_head_param_count() == 335_488
    assert m.kv_bytes_per_token() == 512
    # 1 GiB of KV / 512 B = 2,097,152 tokens, as vLLM's log printed (docs/sources.md, the CPU engine)
    assert (2**30) // m.kv_bytes_per_token() == 2_097_152


def test_tiny_cpu_model_tied_counts_the_matrix_once():
    m = from_hf_config({**TINY_CONFIG, "tie_word_embeddings": True})
    assert m.param_count() == 335_488
    assert m.lm_head_param_count() == 0
    assert m.streamed_param_count() == m.param_count()


def test_tiny_model_from_file_and_directory(tmp_path):
    model_dir = tmp_path / "tiny-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(TINY_CONFIG))
    by_dir = get_model(str(model_dir))
    by_file = from_hf_config(model_dir / "config.json")
    assert by_dir == by_file
    assert by_dir.name == "tiny-model"
    assert by_dir.param_count() == 375_424
    assert str(model_dir) in (by_dir.source or "")


# --------------------------------------------------------------------------- HF config loading


def test_head_dim_derived_when_absent():
    cfg = {k: v for k, v in TINY_CONFIG.items() if k != "head_dim"}
    assert from_hf_config(cfg).head_dim == 64
    assert from_hf_config({**cfg, "head_dim": None}).head_dim == 64


def test_explicit_head_dim_wins():
    # Qwen3-8B's head_dim 128 happens to equal 4096/32; a config where it does not:
    cfg = {**TINY_CONFIG, "head_dim": 32, "num_attention_heads": 2}
    m = from_hf_config(cfg)
    assert m.head_dim == 32
    assert m.kv_bytes_per_token() == 2 * 2 * 1 * 32 * 2


def test_kv_heads_default_to_attention_heads():
    cfg = {k: v for k, v in TINY_CONFIG.items() if k != "num_key_value_heads"}
    assert from_hf_config(cfg).num_kv_heads == 2


def test_tie_default_is_false():
    cfg = {k: v for k, v in TINY_CONFIG.items() if k != "tie_word_embeddings"}
    assert from_hf_config(cfg).tie_word_embeddings is False


def test_model_type_inferred_from_architectures():
    cfg = {k: v for k, v in TINY_CONFIG.items() if k != "model_type"}
    assert from_hf_config(cfg).model_type == "llama"


def test_missing_key_is_named():
    cfg = {k: v for k, v in TINY_CONFIG.items() if k != "vocab_size"}
    with pytest.raises(ModelConfigError, match="'vocab_size'"):
        from_hf_config(cfg)
    with pytest.raises(ModelConfigError, match="'model_type'"):
        from_hf_config({"hidden_size": 4})


def test_unsupported_model_type_is_named():
    with pytest.raises(UnsupportedModelError, match="'mamba'.*llama"):
        from_hf_config({**TINY_CONFIG, "model_type": "mamba"})


def test_bad_values_are_config_errors():
    with pytest.raises(ModelConfigError, match="multiple"):
        from_hf_config({**TINY_CONFIG, "num_key_value_heads": 3, "num_attention_heads": 2})
    with pytest.raises(ModelConfigError, match="integer"):
        from_hf_config({**TINY_CONFIG, "hidden_size": "big"})
    with pytest.raises(ModelConfigError, match="divisible"):
        from_hf_config({**{k: v for k, v in TINY_CONFIG.items() if k != "head_dim"}, "num_attention_heads": 3,
                        "num_key_value_heads": 1})


def test_missing_file(tmp_path):
    with pytest.raises(ModelConfigError, match="no config.json"):
        from_hf_config(tmp_path)


def test_llama_attention_and_mlp_bias():
    base = from_hf_config(TINY_CONFIG)
    biased = from_hf_config({**TINY_CONFIG, "attention_bias": True, "mlp_bias": True})
    q, kv, h, i = 128, 64, 128, 256
    assert biased.param_count() - base.param_count() == 2 * ((q + 2 * kv + h) + (2 * i + h))


def test_qwen3_config_has_qk_norm():
    cfg = {**TINY_CONFIG, "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}
    m = from_hf_config(cfg)
    assert m.qk_norm
    assert m.param_count() - from_hf_config(TINY_CONFIG).param_count() == 2 * (2 * 64)


def test_mixtral_style_config():
    cfg = {
        "model_type": "mixtral",
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 100,
    }
    m = from_hf_config(cfg)
    attn = 64 * 64 + 2 * 64 * 32 + 64 * 64
    layer_total = attn + 2 * 64 + 64 * 8 + 8 * 3 * 64 * 96
    layer_active = attn + 2 * 64 + 64 * 8 + 2 * 3 * 64 * 96
    assert m.param_count() == 2 * layer_total + 64 + 2 * 100 * 64
    assert m.active_param_count() == 2 * layer_active + 64 + 2 * 100 * 64


def test_qwen2_moe_style_config_with_shared_expert_and_dense_layers():
    cfg = {
        "model_type": "qwen2_moe",
        "hidden_size": 64,
        "intermediate_size": 160,
        "moe_intermediate_size": 32,
        "shared_expert_intermediate_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "num_experts": 6,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 2,  # layers 1 and 3 are MoE
        "mlp_only_layers": [3],  # ... but 3 is forced dense
        "vocab_size": 50,
        "tie_word_embeddings": True,
    }
    m = from_hf_config(cfg)
    assert [m.is_moe_layer(i) for i in range(4)] == [False, True, False, False]
    attn = 3 * 64 * 64 + 64 * 64 + 3 * 64  # qkv bias, no o bias
    dense = attn + 2 * 64 + 3 * 64 * 160
    shared = 3 * 64 * 128 + 64  # shared expert + its 1-wide gate
    moe_total = attn + 2 * 64 + 64 * 6 + 6 * 3 * 64 * 32 + shared
    moe_active = attn + 2 * 64 + 64 * 6 + 2 * 3 * 64 * 32 + shared
    assert m.param_count() == 3 * dense + moe_total + 64 + 50 * 64
    assert m.active_param_count() == 3 * dense + moe_active + 64 + 50 * 64


def test_qwen3_moe_missing_expert_key_is_named():
    cfg = dict(arch_mod.PRESETS["qwen3-30b-a3b"]["config"])
    del cfg["moe_intermediate_size"]
    with pytest.raises(ModelConfigError, match="'moe_intermediate_size'"):
        from_hf_config(cfg)


def test_preset_round_trips_through_a_config_file(tmp_path):
    for preset in presets():
        path = tmp_path / f"{preset}.json"
        path.write_text(json.dumps(arch_mod.PRESETS[preset]["config"]))
        assert from_hf_config(path, name=preset) == get_model(preset)


# --------------------------------------------------------------------------- presets / lookup


@pytest.mark.parametrize(
    "name, preset",
    [
        ("qwen3-8b", "qwen3-8b"),
        ("Qwen/Qwen3-8B", "qwen3-8b"),
        ("QWEN3-8B", "qwen3-8b"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("mistralai/Mistral-7B-v0.3", "mistral-7b"),
        ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),
        ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
    ],
)
def test_get_model_presets_and_aliases(name, preset):
    assert get_model(name) is get_model(preset)
    assert get_model(name).name == preset


def test_required_presets_exist():
    assert {"qwen3-8b", "llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "qwen2.5-7b", "qwen3-30b-a3b"} <= set(presets())


def test_unknown_model_suggests():
    with pytest.raises(UnknownModelError) as err:
        get_model("qwen3-8")
    msg = str(err.value)
    assert "Did you mean" in msg and "qwen3-8b" in msg and "llama-3.1-8b" in msg
    with pytest.raises(UnknownModelError, match="no config.json"):
        get_model("./nowhere/config.json")


def test_presets_carry_facts_for_other_modules():
    assert get_model("qwen3-8b").max_position_embeddings == 40960
    assert get_model("llama-3.1-8b").max_position_embeddings == 131072
    assert get_model("qwen3-8b").torch_dtype == "bfloat16"
    assert "preset qwen3-8b" in get_model("qwen3-8b").source


# --------------------------------------------------------------------------- overrides


def test_overrides_recompute_counts():
    m = with_overrides("llama-3.1-8b", {"num_hidden_layers": 16, "tie_word_embeddings": True})
    assert m.num_layers == 16
    assert m.kv_bytes_per_token() == 131_072 // 2
    assert m.param_count() == 16 * 218_112_000 + 4096 + 525_336_576
    assert "user override" in m.source
    assert get_model("llama-3.1-8b").num_layers == 32  # preset untouched


def test_overrides_accept_yaml_strings_and_nominal():
    m = with_overrides(nominal(8e9, num_layers=32, num_kv_heads=8, head_dim=128), {"nominal_params": "7.0e9"})
    assert m.param_count() == 7.0e9
    assert with_overrides("qwen3-8b", {"num_kv_heads": "4"}).kv_bytes_per_token() == 147_456 // 2


def test_overrides_unknown_field_suggests():
    with pytest.raises(ModelOverrideError) as err:
        with_overrides("qwen3-8b", {"num_kv_head": 4})
    assert "Did you mean" in str(err.value) and "num_kv_heads" in str(err.value)


def test_overrides_invalid_shape_is_an_override_error():
    with pytest.raises(ModelOverrideError, match="multiple"):
        with_overrides("qwen3-8b", {"num_kv_heads": 5})
    with pytest.raises(ModelOverrideError):
        with_overrides("qwen3-8b", {"qk_norm": "maybe"})


# --------------------------------------------------------------------------- properties

@st.composite
def dense_models(draw):
    kv = draw(st.integers(1, 8))
    group = draw(st.integers(1, 8))
    head_dim = draw(st.sampled_from([16, 32, 64, 128, 256]))
    heads = kv * group
    return ModelArch(
        name="h",
        num_layers=draw(st.integers(1, 96)),
        hidden_size=draw(st.integers(1, 64)) * 64,
        num_attention_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=draw(st.integers(1, 512)) * 32,
        vocab_size=draw(st.integers(1, 200_000)),
        tie_word_embeddings=draw(st.booleans()),
        qk_norm=draw(st.booleans()),
        attention_bias=draw(st.booleans()),
    )


@given(dense_models(), st.integers(1, 4))
def test_kv_bytes_scale_linearly_with_layers(m, k):
    bigger = with_overrides(m, {"num_layers": m.num_layers * k})
    assert bigger.kv_bytes_per_token() == k * m.kv_bytes_per_token()
    assert bigger.kv_bytes_per_block(16) == k * m.kv_bytes_per_block(16)


@given(dense_models(), st.integers(1, 4))
def test_kv_bytes_scale_linearly_with_kv_heads(m, k):
    bigger = with_overrides(
        m, {"num_kv_heads": m.num_kv_heads * k, "num_attention_heads": m.num_attention_heads * k}
    )
    assert bigger.kv_bytes_per_token() == k * m.kv_bytes_per_token()


@given(dense_models(), st.sampled_from([1, 16, 32, 128]))
def test_block_is_block_size_tokens(m, block):
    assert m.kv_bytes_per_block(block) == block * m.kv_bytes_per_token()
    assert m.kv_bytes_per_block(block, "fp8") * 2 == m.kv_bytes_per_block(block, "bf16")


@given(dense_models(), st.sampled_from([1, 2, 4, 8]))
def test_tp_ranks_partition_the_kv_heads(m, tp):
    assume(m.num_kv_heads % tp == 0)
    assert tp * m.kv_bytes_per_block(16, tensor_parallel_size=tp) == m.kv_bytes_per_block(16)


@given(dense_models())
def test_dense_counts_are_consistent(m):
    assert m.active_param_count() == m.param_count()
    assert m.param_count() == m.non_embedding_param_count() + m.embedding_param_count() + m.lm_head_param_count()
    assert m.lm_head_param_count() == (0 if m.tie_word_embeddings else m.embedding_param_count())
    assert m.weight_bytes("bf16") == 2 * m.param_count() == 2 * m.weight_bytes("int8") == 4 * m.weight_bytes("int4")


@st.composite
def moe_models(draw):
    base = draw(dense_models())
    experts = draw(st.integers(1, 64))
    return with_overrides(
        base,
        {
            "num_experts": experts,
            "num_experts_per_tok": draw(st.integers(1, experts)),
            "moe_intermediate_size": draw(st.integers(1, 64)) * 16,
            "decoder_sparse_step": draw(st.integers(1, 3)),
        },
    )


@given(moe_models())
def test_moe_active_is_at_most_total(m):
    assert m.active_param_count() <= m.param_count()
    inactive = (m.num_experts - m.num_experts_per_tok) * m.expert_param_count() * m.num_moe_layers
    assert m.param_count() - m.active_param_count() == inactive


@given(moe_models())
def test_moe_does_not_change_kv_bytes(m):
    dense = with_overrides(m, {"num_experts": 0, "num_experts_per_tok": 0, "moe_intermediate_size": 0})
    assert dense.kv_bytes_per_token() == m.kv_bytes_per_token()


def test_module_has_no_pytest_import():
    import pathlib

    text = pathlib.Path(arch_mod.__file__).read_text()
    assert "import pytest" not in text


# --------------------------------------------------------------------------- presets are data; the tiny model


def test_presets_come_from_the_data_file():
    import json
    from importlib import resources

    raw = json.loads(resources.files("pytest_roofline.model").joinpath("data", arch_mod.PRESETS_FILE)
                     .read_text(encoding="utf-8"))["presets"]
    assert list(raw) == list(arch_mod.PRESETS)
    for pid, entry in raw.items():
        assert arch_mod.PRESETS[pid]["source"] == entry["source"]
        assert get_model(pid).source.startswith(f"preset {pid}: ")
    # a "like" entry repeats its base's config except for the keys it gives
    instruct = arch_mod.PRESETS["qwen2.5-7b-instruct"]["config"]
    base = arch_mod.PRESETS["qwen2.5-7b"]["config"]
    assert raw["qwen2.5-7b-instruct"]["like"] == "qwen2.5-7b"
    assert {k: v for k, v in instruct.items() if base[k] != v} == {"max_position_embeddings": 32768}
    assert get_model("qwen2.5-7b-instruct").param_count() == get_model("qwen2.5-7b").param_count()


def test_a_bad_preset_file_is_named(monkeypatch):
    cases = [
        ({"presets": {}}, "non-empty"),
        ({"presets": {"m": {"aliases": [], "config": {}}}}, "needs the source"),
        ({"presets": {"m": {"source": "s", "config": {}, "like": "nope"}}}, "must name a preset given before"),
        ({"presets": {"m": {"source": "s", "config": {}, "extra": 1}}}, "expected source, aliases, config"),
    ]
    for data, message in cases:
        monkeypatch.setattr(arch_mod.catalog, "load_data", lambda _name, data=data: data)
        with pytest.raises(ModelArchError, match=message):
            arch_mod._load_presets()


def test_the_tiny_model_is_a_model_layer_fact():
    from pytest_roofline.model import tiny

    m = tiny.tiny_arch()
    assert m.name == tiny.TINY_MODEL == "roofline-tiny"
    # by hand: per layer q 128x128, k/v 2 x 128x64, o 128x128, MLP 3 x 128x256, two norms of 128
    per_layer = 128 * 128 + 2 * 128 * 64 + 128 * 128 + 3 * 128 * 256 + 2 * 128
    assert m.param_count() == 2 * per_layer + 128 + 2 * 300 * 128 == 372_352 == tiny.TINY_ARCH.num_parameters
    assert tiny.TINY_ARCH.kv_bytes_per_token == m.kv_bytes_per_token("bf16") == 2 * 2 * 1 * 64 * 2
    assert tiny.TINY_ARCH.weights_bytes == 2 * 372_352
    assert tiny.config_dict()["head_dim"] == 64 and tiny.config_dict()["dtype"] == "bfloat16"


