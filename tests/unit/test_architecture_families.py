"""More architectures from config.json; sliding-window, hybrid and MLA KV; nominal models in the KV accounting.

Every expected parameter count is a public statement about the checkpoint, cited at the test: the total the
safetensors files hold (the Hub's "safetensors metadata" count, or ``metadata.total_size`` / bytes per
parameter), a model card's table, or ``sum(p.numel() for p in model.parameters())`` as published. The KV and
block figures are worked out by hand in the comments from vLLM's formulas, cited in model/kv_cache.py.
"""

from __future__ import annotations

import pytest

from pytest_roofline.model import architecture as arch_mod
from pytest_roofline.model import kv_cache
from pytest_roofline.model.architecture import (
    ModelArchError,
    ModelConfigError,
    from_hf_config,
    get_model,
    nominal,
    with_overrides,
)
from pytest_roofline.model.setup import build_setup, kv_accounting
from pytest_roofline.quantities.registry import QUANTITIES

GIB = 2**30
H100_BYTES = 85_520_809_984  # the catalog's h100-sxm (81,559 MiB)


def _q(name: str, setup, **at):
    return QUANTITIES[name].model(setup, at).value


# ---------------------------------------------------------------------------------------------------------------
# parameter counts against public statements
# ---------------------------------------------------------------------------------------------------------------

PUBLIC_COUNTS = [
    # facebook/opt-125m: 125,239,296 parameters (sum(p.numel()) of the HF model, e.g. the PiPPy OPT example,
    # github.com/pytorch/PiPPy examples: "size: 125,239,296 ~ 125M params"); embeddings tied
    ("opt-125m", 125_239_296),
    # facebook/opt-350m: 331,196,416 (HF num_parameters; project_in/out 512 <-> 1024, no final layer norm)
    ("opt-350m", 331_196_416),
    # microsoft/phi-2: model.safetensors.index.json metadata.total_size 5,559,367,680 B / 2 B (fp16)
    ("phi-2", 5_559_367_680 // 2),
    # microsoft/Phi-3-mini-4k-instruct: 3,821,079,552 (Hub safetensors count; "all params: 3,821,079,552" in
    # PEFT's print_trainable_parameters)
    ("phi-3-mini-4k", 3_821_079_552),
    # google/gemma-2b (and 1.1-2b-it): 2,506,172,416 (Hub safetensors metadata; model.num_parameters())
    ("gemma-2b", 2_506_172_416),
    # google/gemma-2-9b: 9,241,705,984 (Hub safetensors metadata, F32 checkpoint of 36,966,823,936 B / 4)
    ("gemma-2-9b", 9_241_705_984),
    # google/gemma-3-1b-it: 999,885,952 (Hub safetensors metadata; the Keras Gemma3Backbone summary)
    ("gemma-3-1b", 999_885_952),
    # google/gemma-3-27b-it: 27,432,406,640 (Hub safetensors metadata, BF16) -- text model + SigLIP tower
    ("gemma-3-27b", 27_432_406_640),
    # EleutherAI/pythia-1.4b: 1,414,647,808 total (the Pythia model card's table; 1,208,602,624 non-embedding)
    ("pythia-1.4b", 1_414_647_808),
    # mistralai/Mistral-7B-v0.1: v0.3's 7,248,023,552 (Hub) less the 768 added vocabulary rows in the
    # embedding and the lm_head: 7,248,023,552 - 2 x 768 x 4096 = 7,241,732,096
    ("mistral-7b-v0.1", 7_248_023_552 - 2 * 768 * 4096),
    # deepseek-ai/DeepSeek-V2-Lite: 15,706,484,224 BF16 parameters (Hub safetensors count; 31,413,626,576 B of
    # shards); the model card's "15.7B total"
    ("deepseek-v2-lite", 15_706_484_224),
    # deepseek-ai/DeepSeek-V3: the card's 671B main model (the Hub's 685B adds the 14B multi-token-prediction
    # module, not counted); the exact recount 671,026,419,200 (with e_score_correction_bias) is published by
    # several independent counters
    ("deepseek-v3", 671_026_419_200),
]


@pytest.mark.parametrize(("preset", "expected"), PUBLIC_COUNTS)
def test_param_count_matches_the_published_count(preset, expected):
    assert get_model(preset).param_count() == expected


def test_model_card_round_figures():
    # model cards' round statements: DeepSeek-V3 "671B total, 37B activated"; Qwen3-30B-A3B "30.5B, 3.3B
    # activated"; Falcon-7B "7B"; Gemma-3-27B "27B"
    v3 = get_model("deepseek-v3")
    assert v3.param_count() == pytest.approx(671e9, rel=0.005)
    assert v3.active_param_count() == pytest.approx(37e9, rel=0.02)  # 37.55e9: the card rounds down
    q = get_model("qwen3-30b-a3b")
    assert q.param_count() == pytest.approx(30.5e9, rel=0.005)
    assert q.active_param_count() == pytest.approx(3.3e9, rel=0.02)


def test_falcon_7b_counts_its_tied_lm_head_once():
    # tiiuae/falcon-7b: the safetensors files hold 7,217,189,760 parameters (Hub safetensors metadata; lit-gpt's
    # "Full finetuning: 7,217,189,760"), which store the lm_head as its own 65,024 x 4,544 tensor. transformers
    # and vLLM tie it to word_embeddings (FalconConfig tie_word_embeddings default true), so the model holds
    # 7,217,189,760 - 295,469,056 = 6,921,720,704.
    f = get_model("falcon-7b")
    assert f.tie_word_embeddings and f.num_kv_heads == 1 and f.norms_per_layer == 1
    assert f.param_count() == 7_217_189_760 - 65_024 * 4_544
    # by module (github.com/kimborgen/falcon-llm README prints them): qkv 4544 x 4672, dense 4544^2,
    # h_to_4h and 4h_to_h 4544 x 18176, one LayerNorm 2 x 4544 -> 207,070,080 per layer
    assert f.layer_param_count(0) == 4544 * 4672 + 4544 * 4544 + 2 * 4544 * 18176 + 2 * 4544


def test_pythia_non_embedding_count_matches_the_model_card():
    # Pythia model card: 1.4B has 1,208,602,624 non-embedding parameters (the final layer norm included)
    assert get_model("pythia-1.4b").non_embedding_param_count() == 1_208_602_624


def test_gemma_3_27b_text_and_vision_parts():
    # text: 62 x (5376*4096 + 2*5376*2048 + 4096*5376 + 2*128 + 4*5376 + 3*5376*21504) + 5376 + 262208*5376
    text = 62 * (5376 * 4096 + 2 * 5376 * 2048 + 4096 * 5376 + 256 + 4 * 5376 + 3 * 5376 * 21504) + 5376 + 262208 * 5376
    m = get_model("gemma-3-27b")
    assert m.active_param_count() == text == 27_009_346_304
    # SigLIP so400m (27 layers, h 1152, i 4304, 896 px / 14 px patches) + projector 1152 x 5376 + its norm
    vision = (3 * 14 * 14 * 1152 + 1152 + 64 * 64 * 1152 + 27 * (4 * 1152 + 4 * (1152 * 1152 + 1152)
              + 2 * 1152 * 4304 + 4304 + 1152) + 2 * 1152 + 1152 * 5376 + 1152)
    assert m.encoder_params == vision
    # a gemma3 config without its vision tower is the text model alone
    text_only = from_hf_config({"model_type": "gemma3", "text_config": dict(
        arch_mod.PRESETS["gemma-3-27b"]["config"]["text_config"])})
    assert text_only.param_count() == text


def test_deepseek_v3_by_module():
    # DeepseekV3Attention: q_a 7168x1536 + norm 1536 + q_b 1536x(128x192); kv_a 7168x576 + norm 512;
    # kv_b 512x(128x256); o 128x128x7168
    attn = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    m = get_model("deepseek-v3")
    assert m.is_mla and m.attention_param_count() == attn == 187_107_328
    assert m.num_moe_layers == 58 and m.num_dense_layers == 3  # first_k_dense_replace 3
    # MoE layer: attention + 2 norms + router 256 x 7168 (+256 correction bias) + 256 experts and 1 shared
    # expert of 3 x 7168 x 2048
    expert = 3 * 7168 * 2048
    assert m.layer_param_count(3) == attn + 2 * 7168 + 256 * 7168 + 256 + 257 * expert
    assert m.layer_param_count(2) == attn + 2 * 7168 + 3 * 7168 * 18432
    assert m.layer_param_count(3, active=True) == attn + 2 * 7168 + 256 * 7168 + 256 + 9 * expert


def test_deepseek_v2_lite_has_no_q_lora_and_one_dense_layer():
    m = get_model("deepseek-v2-lite")
    # q_proj 2048 x 16*192; kv_a 2048 x 576 + 512; kv_b 512 x 16*256; o 16*128 x 2048
    assert m.attention_param_count() == 2048 * 3072 + 2048 * 576 + 512 + 512 * 4096 + 2048 * 2048
    assert m.num_dense_layers == 1 and not m.router_bias
    # card: "2.4B activated"; the count with the input embedding table left out (what a token reads) is 2.45B
    assert m.streamed_param_count() == pytest.approx(2.4e9, rel=0.025)


def test_opt_learned_positions_and_projections():
    m = get_model("opt-350m")
    assert m.learned_position_embeddings == 2050 and m.embed_dim == 512
    assert m.projection_param_count() == 2 * 512 * 1024 and not m.final_norm
    # OPT-125m layer: 4 x (768^2 + 768) + 2 LayerNorms 4 x 768 + fc1 768x3072+3072 + fc2 3072x768+768
    assert get_model("opt-125m").layer_param_count(0) == 4 * (768**2 + 768) + 4 * 768 + 2 * 768 * 3072 + 3072 + 768


def test_phi2_single_norm_and_lm_head_bias():
    m = get_model("phi-2")
    assert m.norms_per_layer == 1 and m.lm_head_bias
    assert m.lm_head_param_count() == 51200 * 2560 + 51200


@pytest.mark.parametrize("model_type", ["opt", "phi", "phi3", "gemma", "gemma2", "gemma3_text", "gpt_neox",
                                        "falcon", "deepseek_v2", "deepseek_v3"])
def test_every_new_family_is_listed_and_inferred_from_architectures(model_type):
    assert model_type in arch_mod.SUPPORTED_MODEL_TYPES
    assert model_type in arch_mod._ARCHITECTURE_TO_TYPE.values()


def test_falcon_original_rw_keys_are_read():
    # the first tiiuae/falcon-7b config.json spelled n_layer / n_head (RWConfig attribute_map)
    cfg = dict(arch_mod.PRESETS["falcon-7b"]["config"])
    cfg["n_layer"], cfg["n_head"] = cfg.pop("num_hidden_layers"), cfg.pop("num_attention_heads")
    assert from_hf_config(cfg).param_count() == get_model("falcon-7b").param_count()


def test_falcon_40b_new_decoder_architecture():
    # tiiuae/falcon-40b: 60 layers, hidden 8192, 128 heads, 8 KV heads, two LayerNorms (ln_attn, ln_mlp).
    # qkv 8192 x (128 + 2*8)*64, dense 8192^2, MLP 2 x 8192 x 32768, 2 LayerNorms 4 x 8192
    m = from_hf_config({"model_type": "falcon", "hidden_size": 8192, "num_hidden_layers": 60,
                        "num_attention_heads": 128, "num_kv_heads": 8, "new_decoder_architecture": True,
                        "parallel_attn": True, "bias": False, "vocab_size": 65024})
    per_layer = 8192 * 144 * 64 + 8192 * 8192 + 2 * 8192 * 32768 + 4 * 8192
    assert m.layer_param_count(0) == per_layer
    assert m.param_count() == 60 * per_layer + 65024 * 8192 + 2 * 8192
    # the Hub page's 41.8B params counts the checkpoint's separate lm_head copy, as for Falcon-7B
    assert m.param_count() + 65024 * 8192 == pytest.approx(41.8e9, rel=0.001)


def test_quantization_config_passes_through_raw():
    m = get_model("deepseek-v3")
    assert m.quantization_config["quant_method"] == "fp8"
    assert dict(with_overrides(m, {"num_layers": 4}).quantization_config) == dict(m.quantization_config)
    assert get_model("qwen3-8b").quantization_config is None


# ---------------------------------------------------------------------------------------------------------------
# KV: MLA, sliding window, hybrid groups
# ---------------------------------------------------------------------------------------------------------------


def test_mla_kv_is_the_latent_and_not_split_by_tp():
    m = get_model("deepseek-v3")
    # one latent of kv_lora_rank + qk_rope_head_dim = 512 + 64 per layer, no factor 2: 61 x 576 x 2 B
    assert m.kv_bytes_per_token("bf16") == 61 * 576 * 2 == 70_272
    # a page of 16 tokens: 16 x 576 x 2 B = 18,432, the same on every rank at TP 8
    assert m.kv_page_bytes_per_layer(16, "bf16", 1) == m.kv_page_bytes_per_layer(16, "bf16", 8) == 18_432
    assert m.kv_bytes_per_block(16, "bf16", 8) == 61 * 18_432
    # a plain GQA model's KV of the same width would be 2 x 128 heads x 192 x 2 B per layer: 98,304 B
    assert m.kv_heads_per_rank(8) == 1


def test_layer_types_follow_each_family():
    g2 = get_model("gemma-2-9b")
    assert g2.layer_kind(0) == "sliding_attention" and g2.layer_kind(1) == "full_attention"
    assert g2.num_sliding_layers == 21 and g2.sliding_window == 4096
    g3 = get_model("gemma-3-27b")  # (i + 1) % 6: layers 5, 11, ..., 59 global -> 10 full, 52 sliding
    assert [i for i in range(62) if g3.layer_kind(i) == "full_attention"] == list(range(5, 62, 6))
    assert get_model("mistral-7b-v0.1").num_sliding_layers == 32
    assert get_model("mistral-7b").num_sliding_layers == 0  # v0.3: sliding_window null
    phi3 = get_model("phi-3-mini-4k")  # sliding_window 2047, not interleaved: vLLM applies it to every layer
    assert phi3.num_sliding_layers == 32 and phi3.sliding_window == 2047
    # an explicit layer_types list wins
    cfg = dict(arch_mod.PRESETS["gemma-3-1b"]["config"])
    cfg["layer_types"] = ["full_attention"] * 13 + ["sliding_attention"] * 13
    assert from_hf_config(cfg).num_sliding_layers == 13


def test_bad_layer_types_are_config_errors():
    cfg = dict(arch_mod.PRESETS["gemma-3-1b"]["config"])
    with pytest.raises(ModelConfigError, match="26 layers"):
        from_hf_config({**cfg, "layer_types": ["sliding_attention"] * 3})
    with pytest.raises(ModelConfigError, match="unknown"):
        from_hf_config({**cfg, "layer_types": ["local"] * 26})
    with pytest.raises(ModelArchError, match="sliding_window"):
        with_overrides(get_model("gemma-3-1b"), {"sliding_window": None})


def test_kv_bytes_for_context_caps_the_sliding_layers():
    g2 = get_model("gemma-2-9b")
    per_layer = 2 * 8 * 256 * 2  # 8,192 B per token per layer
    assert g2.kv_bytes_for_context(8192) == per_layer * (21 * 8192 + 21 * 4096)
    assert g2.kv_bytes_for_context(1000) == per_layer * 42 * 1000
    assert g2.kv_bytes_per_token() == per_layer * 42


def test_gemma3_hybrid_groups_at_each_version():
    g3 = get_model("gemma-3-27b")
    page = 2 * 16 * 128 * 2 * 16  # 131,072 B
    new = kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.10.0")
    # group_size = min(10 full, 52 sliding) = 10; 1 full group + cdiv(52, 10) = 6 sliding groups
    assert new.engine == "V1 hybrid" and new.group_size == 10 and len(new.groups) == 7
    assert new.bytes_per_block == 10 * page
    assert [g.num_layers for g in new.groups if g.kind == "sliding_attention"] == [10, 10, 10, 10, 10, 2]
    old = kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.8.5")
    assert old.engine == "V1" and old.bytes_per_block == 62 * page and old.sliding_window is None
    v0 = kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.6.4")
    assert v0.engine == "V0" and v0.bytes_per_block == 62 * page
    off = kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.10.0", hybrid_kv_cache_manager=False)
    assert off.bytes_per_block == 62 * page
    # the CPU backend had no hybrid manager at 0.10 (platform default), has it at 0.20
    assert kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.10.0", device="cpu").group_size == 62
    assert kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.20.0", device="cpu").group_size == 10


def test_group_size_heuristic_from_020():
    # 12 sliding + 13 full (gpt-oss-20b + eagle, the 0.20 comment's example): 0.10 groups by the smaller count
    # (12: full splits into 2 groups, 11 padding slots), 0.20+ by the larger one since 13 < 1.5 x 12
    m = with_overrides(get_model("gemma-3-1b"), {"num_layers": 25, "layer_types": ["sliding_attention"] * 12
                                                 + ["full_attention"] * 13})
    old = kv_cache.kv_cache_layout(m, block_size=16, engine_version="0.10.2")
    assert old.group_size == 12 and len(old.groups) == 3
    new = kv_cache.kv_cache_layout(m, block_size=16, engine_version="0.20.0")
    assert new.group_size == 13 and len(new.groups) == 2


def test_reported_tokens_and_concurrency_by_version():
    g3 = get_model("gemma-3-27b")
    # 15,020 blocks, max_model_len 131,072, max_num_batched_tokens 8,192
    lay = kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.10.0")
    cap = kv_cache.kv_capacity(lay, 15_020, max_model_len=131_072, max_num_batched_tokens=8192)
    # full: 131,072 / 16 = 8,192 blocks; sliding: cdiv(1,023 + 8,192, 16) + 1 = 577, six groups -> 11,654
    assert cap.blocks_per_request == 8192 + 6 * 577
    assert cap.max_concurrency == pytest.approx(15_020 / 11_654)
    assert cap.kv_cache_tokens == 15_020 // 7 * 16  # 0.9.1-0.20: blocks // groups x block_size
    lay32 = kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.32.0")
    cap32 = kv_cache.kv_capacity(lay32, 15_020, max_model_len=131_072, max_num_batched_tokens=8192)
    # two batches in flight: cdiv(1,023 + 16,384, 16) + 1 = 1,089 per sliding group
    assert cap32.blocks_per_request == 8192 + 6 * 1089
    assert cap32.kv_cache_tokens == int(15_020 / 14_726 * 131_072)  # 0.21+: int(concurrency x max_model_len)
    v0 = kv_cache.kv_capacity(kv_cache.kv_cache_layout(g3, block_size=16, engine_version="0.6.4"), 2422,
                              max_model_len=131_072, max_num_batched_tokens=8192)
    assert v0.kv_cache_tokens == 2422 * 16 and v0.max_concurrency is None  # V0 before 0.7 printed no concurrency


def test_all_sliding_mistral_keeps_its_window_in_v1():
    m = get_model("mistral-7b-v0.1")
    lay = kv_cache.kv_cache_layout(m, block_size=16, engine_version="0.10.0")
    assert lay.group_size == 32 and lay.sliding_window == 4096
    cap = kv_cache.kv_capacity(lay, 1000, max_model_len=32_768, max_num_batched_tokens=8192)
    # cdiv(4,095 + 8,192, 16) + 1 = 769 blocks per request; tokens stay blocks x 16
    assert cap.blocks_per_request == 769 and cap.kv_cache_tokens == 16_000


def test_uniform_models_keep_page_times_layers():
    # Llama-3.1-8B: 2 x 8 x 128 x 2 B x 16 = 65,536 B per layer, x 32 layers = 2 MiB per block, every version
    m = get_model("llama-3.1-8b")
    for version in (None, "0.6.4", "0.8.5", "0.10.0", "0.32.0"):
        assert m.kv_bytes_per_block(16, "bf16", 1, version) == 2 * 2**20
    assert kv_cache.kv_cache_layout(m, block_size=16).version == kv_cache.NEWEST_READ_VERSION


# ---------------------------------------------------------------------------------------------------------------
# the setup, the quantities and the shipped prediction files
# ---------------------------------------------------------------------------------------------------------------

GEMMA_ENGINE = {"version": "0.10.0", "args": {"gpu_memory_utilization": 0.9},
                "reserves": {"activation": 2 * GIB, "non_torch": GIB // 4, "cuda_graphs": 0}}


def test_gemma3_27b_h100_pool_as_in_the_prediction_file():
    s = build_setup(hardware_ref="h100-sxm", model_ref="gemma-3-27b", engine=GEMMA_ENGINE)
    acc = kv_accounting(s)
    # ceil(0.9 x 85,520,809,984) - 54,864,813,280 (27,432,406,640 x 2 B) - 2 GiB - 0.25 GiB
    available = 76_968_728_986 - 54_864_813_280 - 2 * GIB - GIB // 4
    assert acc.available_kv_bytes == available == 19_687_996_602
    assert acc.num_blocks == available // (10 * 131_072) == 15_020
    assert _q("kv_cache_tokens", s) == 34_320
    assert _q("max_concurrency", s, request_tokens=131_072) == pytest.approx(15_020 / 11_654)
    old = build_setup(hardware_ref="h100-sxm", model_ref="gemma-3-27b", engine={**GEMMA_ENGINE, "version": "0.8.5"})
    assert kv_accounting(old).num_blocks == available // (62 * 131_072) == 2_422
    assert _q("kv_cache_tokens", old) == 2_422 * 16


def test_qwen3_30b_a3b_h100_pool_as_in_the_prediction_file():
    s = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-30b-a3b",
                    engine={"version": "0.10.0", "args": {"gpu_memory_utilization": 0.9, "max_model_len": 32768},
                            "reserves": {"activation": GIB, "non_torch": GIB // 4, "cuda_graphs": 0}})
    # every expert resident: 30,532,122,624 x 2 B; 48 layers x 2 x 4 x 128 x 2 B x 16 per block
    assert s.weight_bytes == 61_064_245_248
    assert s.bytes_per_block == 48 * 32_768
    acc = kv_accounting(s)
    assert acc.num_blocks == (76_968_728_986 - 61_064_245_248 - GIB - GIB // 4) // 1_572_864 == 9_258
    assert _q("kv_cache_tokens", s) == 9_258 * 16


def test_nominal_model_kv_accounting_works_without_shapes():
    # used to raise "hidden_size must be a positive finite number, got 0" from the activation estimate
    s = build_setup(hardware_ref="h100-sxm",
                    model_ref={"params": 7e9, "num_layers": 32, "num_kv_heads": 8, "head_dim": 128},
                    engine={"version": "0.10.0", "reserves": {"non_torch": 0, "cuda_graphs": 0}})
    acc = kv_accounting(s)
    assert acc.activation_bytes == 0
    # ceil(0.9 x 85,520,809,984) - 14e9 (7e9 x 2 B) = 62,968,728,986 B / 2 MiB = 30,025.7
    assert acc.num_blocks == (76_968_728_986 - 14_000_000_000) // (2 * 2**20) == 30_025
    inputs = QUANTITIES["num_gpu_blocks"].model(s, {}).inputs
    assert "no estimate" in inputs["activation_reserve"]


def test_nominal_model_with_shapes_gets_an_activation_estimate():
    s = build_setup(hardware_ref="h100-sxm",
                    model_ref={"params": 7e9, "num_layers": 32, "num_kv_heads": 8, "head_dim": 128,
                               "hidden_size": 4096, "intermediate_size": 11008, "vocab_size": 32000},
                    engine={"version": "0.10.0"})
    acc = kv_accounting(s)
    assert acc.activation_bytes > 0
    assert s.model.param_count() == 7e9
    assert nominal(7e9, num_layers=32, num_kv_heads=8, head_dim=128, hidden_size=4096).hidden_size == 4096


def test_reported_tokens_jump_at_021_for_hybrid_models():
    # github.com/vllm-project/vllm/issues/43308: Gemma-4-31B (sliding 1024 + global layers) on an A100-80GB at
    # the same --gpu-memory-utilization 0.9 printed "~55k tokens" at 0.20.0 and "~525k tokens" at 0.21.0 with
    # the available KV memory unchanged (~50 GB): the same pool, reported as blocks // groups x block_size
    # before 0.21 and as concurrency x max_model_len after. Gemma-3-27B's pool of 15,020 blocks shows the
    # same kind of jump (block counts equal, tokens ~4.9x).
    g3 = get_model("gemma-3-27b")
    caps = {v: kv_cache.kv_capacity(kv_cache.kv_cache_layout(g3, block_size=16, engine_version=v), 15_020,
                                    max_model_len=131_072, max_num_batched_tokens=8192)
            for v in ("0.20.0", "0.21.0")}
    assert caps["0.20.0"].num_blocks == caps["0.21.0"].num_blocks
    assert caps["0.20.0"].kv_cache_tokens == 15_020 // 7 * 16 == 34_320
    assert caps["0.21.0"].kv_cache_tokens == int(15_020 / 11_654 * 131_072) == 168_929
    assert caps["0.21.0"].kv_cache_tokens / caps["0.20.0"].kv_cache_tokens > 4
