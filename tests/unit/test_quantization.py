"""Weight quantization as a scheme (pytest_roofline/model/quantization.py), separate from the KV-cache dtype.

Every expected value is worked out by hand in the comments, from the Llama-3.1-8B config.json shape (hidden 4096,
32 layers, 32/8 heads of 128, intermediate 14336, vocab 128256, untied), and checked against published sizes:

* nm-testing/Meta-Llama-3.1-8B-Instruct-FP8-hf (static per-tensor FP8, ``ignore: [lm_head]``): transformers
  reports 8.4575 GB (``sum(numel * element_size) / 2**30``) for its loaded parameters
  (huggingface.co/docs/transformers/quantization/compressed_tensors, "measure memory usage").
* neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic (per-channel FP8 weights): vLLM logs "Loading model weights
  took 8.4939 GB" (V0 model_runner.py, which divides by 2**30), quoted in a public vLLM + guidellm walk-through.
* vLLM 0.5.4 runs of Llama-3.1-8B-Instruct AWQ, GPTQ and bitsandbytes 4-bit checkpoints on one H100, weights and
  "# GPU blocks" as logged, published by The Kaitchup (kaitchup.substack.com/p/the-best-quantization-methods-to;
  the logs are reproduced in github.com/xinyuwei-david/david-share, Deep-Learning/
  Quantization-Methods-Comparison-and-Practice): see the last test.
"""

from __future__ import annotations

import pytest

from pytest_roofline.errors import ModelConfigError, SetupError
from pytest_roofline.model import architecture
from pytest_roofline.model import quantization as q
from pytest_roofline.model.setup import build_setup, kv_accounting

GIB = 2**30

# Llama-3.1-8B by hand:
#   attention per layer  q 4096·4096 + k 1024·4096 + v 1024·4096 + o 4096·4096       = 41,943,040
#   MLP per layer        gate 14336·4096 + up 14336·4096 + down 4096·14336            = 176,160,768
#   decoder Linears      32 × 218,103,808                                              = 6,979,321,856
#   embed + lm_head      2 × 128,256 × 4,096                                           = 1,050,673,152
#   norms                32 × 2 × 4,096 + 4,096                                        = 266,240
#   total                                                                              = 8,030,261,248
LINEAR = 6_979_321_856
FULL = 1_050_673_152 + 266_240
TOTAL = 8_030_261_248

# the config.json quantization_config blocks, as on the Hub
CT_FP8_STATIC = {  # nm-testing/Meta-Llama-3.1-8B-Instruct-FP8-hf, as quoted in the transformers docs
    "config_groups": {"group_0": {
        "input_activations": {"num_bits": 8, "strategy": "tensor", "type": "float"},
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "strategy": "tensor", "type": "float"}}},
    "format": "naive-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors",
    "quantization_status": "frozen"}
CT_FP8_DYNAMIC = {  # neuralmagic/...-FP8-dynamic: per-channel weight scales, dynamic per-token activations
    "config_groups": {"group_0": {
        "input_activations": {"dynamic": True, "num_bits": 8, "strategy": "token", "type": "float"},
        "targets": ["Linear"],
        "weights": {"dynamic": False, "num_bits": 8, "strategy": "channel", "type": "float", "symmetric": True}}},
    "format": "float-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors"}
AWQ = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
       "zero_point": True}  # hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4
GPTQ = {"bits": 4, "group_size": 128, "desc_act": False, "sym": True, "quant_method": "gptq"}
CT_W4A16 = {  # RedHatAI/...-quantized.w4a16 style: pack-quantized int4 groups of 128, weight-only
    "config_groups": {"group_0": {
        "input_activations": None, "targets": ["Linear"],
        "weights": {"num_bits": 4, "strategy": "group", "group_size": 128, "type": "int", "symmetric": True}}},
    "format": "pack-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors"}


@pytest.fixture(scope="module")
def llama8b() -> architecture.ModelArch:
    m = architecture.get_model("llama-3.1-8b")
    assert m.param_count() == TOTAL
    return m


def test_the_linear_count_is_what_the_scheme_quantizes(llama8b):
    s = q.from_hf_quantization_config(AWQ)
    assert q.quantized_linear_param_count(s, llama8b) == LINEAR


def test_fp8_static_checkpoint_matches_the_published_size(llama8b):
    s = q.from_hf_quantization_config(CT_FP8_STATIC)
    assert (s.method, s.weight_dtype, s.activations_quantized) == (q.QuantMethod.COMPRESSED_TENSORS, "fp8", True)
    # 6,979,321,856 × 1 B + 224 Linears × 2 scales (weight, input) × 2 B + 1,050,939,392 × 2 B (bf16)
    # = 6,979,321,856 + 896 + 2,101,878,784 = 9,081,201,536 B = 8.45753 GiB
    b = q.weight_bytes(s, llama8b, "bf16")
    assert b == 6_979_321_856 + 896 + 2_101_878_784 == 9_081_201_536
    assert b / GIB == pytest.approx(8.4575, abs=5e-5)  # the transformers docs' 8.4575 GB (÷ 2**30)


def test_fp8_dynamic_checkpoint_is_within_half_a_percent_of_vllms_log(llama8b):
    s = q.from_hf_quantization_config(CT_FP8_DYNAMIC)
    assert s.granularity is q.ScaleGranularity.CHANNEL and not s.static_activation_scale
    # per-channel scales: out rows per layer 4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096 = 43,008; × 32 × 2 B
    # = 2,752,512 B.  Total 6,979,321,856 + 2,752,512 + 2,101,878,784 = 9,083,953,152 B = 8.4601 GiB
    b = q.weight_bytes(s, llama8b, "bf16")
    assert b == 9_083_953_152
    # vLLM's 8.4939 GiB also holds the rotary cos/sin cache (131,072 positions × 128 × 2 B = 0.031 GiB)
    assert b / GIB == pytest.approx(8.4939, rel=0.005)


def test_awq_int4_checkpoint_matches_vllms_log(llama8b):
    s = q.from_hf_quantization_config(AWQ)
    assert (s.weight_bits, s.group_size, s.zero_point, s.activations_quantized) == (4, 128, True, False)
    # 6,979,321,856 × 0.5 B = 3,489,660,928; groups 6,979,321,856 / 128 = 54,525,952 × (2 B scale + 0.5 B zero)
    # = 136,314,880; full width 1,050,939,392 × 2 B (fp16) = 2,101,878,784.  Sum 5,727,854,592 B = 5.3345 GiB
    b = q.weight_bytes(s, llama8b, "fp16")
    assert b == 3_489_660_928 + 136_314_880 + 2_101_878_784 == 5_727_854_592
    # vLLM 0.5.4 on kaitchup/Meta-Llama-3.1-8B-Instruct-awq-4bit: "Loading model weights took 5.3748 GB", which
    # includes the 0.031 GiB rotary cache: 5.3345 + 0.0313 = 5.3657 (-0.2%)
    assert b / GIB + 0.03125 == pytest.approx(5.3748, rel=0.005)


def test_gptq_int4_zero_points_only_when_asymmetric(llama8b):
    # vLLM serves a symmetric GPTQ checkpoint with gptq_marlin, which keeps no zero points:
    # 3,489,660,928 + 54,525,952 × 2 B + 2,101,878,784 = 5,700,591,616 B = 5.3091 GiB, 5.3404 with the rotary cache;
    # vLLM 0.5.4 (kaitchup/Meta-Llama-3.1-8B-Instruct-gptq-4bit): "Loading model weights took 5.3494 GB"
    sym = q.from_hf_quantization_config(GPTQ)
    assert not sym.zero_point
    assert q.weight_bytes(sym, llama8b, "fp16") == 5_700_591_616
    assert q.weight_bytes(sym, llama8b, "fp16") / GIB + 0.03125 == pytest.approx(5.3494, rel=0.005)
    # asymmetric (autoround-gptq-4bit-asym): + 54,525,952 × 0.5 B of packed zeros = 5,727,854,592; logged 5.3767
    asym = q.from_hf_quantization_config({**GPTQ, "sym": False})
    assert q.weight_bytes(asym, llama8b, "fp16") == 5_727_854_592
    assert q.weight_bytes(asym, llama8b, "fp16") / GIB + 0.03125 == pytest.approx(5.3767, rel=0.005)


def test_compressed_tensors_w4a16_symmetric_has_no_zeros(llama8b):
    s = q.from_hf_quantization_config(CT_W4A16)
    assert not s.zero_point and not s.activations_quantized
    # 3,489,660,928 + 54,525,952 × 2 B + 2,101,878,784 = 5,700,591,616
    assert q.weight_bytes(s, llama8b, "bf16") == 5_700_591_616


def test_fp8_block_scales(llama8b):
    # DeepSeek/Qwen-style FP8 (quant_method fp8, weight_block_size [128, 128]): one fp32 scale per 128 x 128 tile.
    # Tiles per layer: q 32·32 = 1,024, k 8·32 = 256, v 256, o 1,024, gate 112·32 = 3,584, up 3,584, down 32·112
    # = 3,584 -> 13,312; × 32 layers × 4 B = 1,703,936 B.  Total 6,979,321,856 + 1,703,936 + 2,101,878,784
    s = q.from_hf_quantization_config({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                       "weight_block_size": [128, 128]})
    assert s.granularity is q.ScaleGranularity.BLOCK and s.compute_dtype("bf16") == "fp8"
    assert q.weight_bytes(s, llama8b, "bf16") == 6_979_321_856 + 1_703_936 + 2_101_878_784


def test_gptq_per_channel_and_a_quantized_lm_head(llama8b):
    s = q.from_hf_quantization_config({**GPTQ, "group_size": -1, "lm_head": True, "sym": False})
    assert s.granularity is q.ScaleGranularity.CHANNEL and s.lm_head_quantized
    # Linears + lm_head 6,979,321,856 + 525,336,576 = 7,504,658,432 × 0.5 = 3,752,329,216; per-row scales and
    # zeros: (32 × 43,008 + 128,256) rows × 2.5 B = 1,504,512 × 2.5 = 3,761,280; the rest (embedding and norms)
    # 525,602,816 × 2 = 1,051,205,632.  Sum 4,807,296,128
    assert q.weight_bytes(s, llama8b, "fp16") == 4_807_296_128


def test_ignore_lists_keep_modules_at_full_width(llama8b):
    # every down_proj kept at bf16 (a compressed-tensors regex) and layer 0's MLP by name (AWQ style)
    ct = q.from_hf_quantization_config({**CT_FP8_STATIC, "ignore": ["lm_head", "re:.*down_proj"]})
    # down_proj: 32 × 4096 × 14336 = 1,879,048,192 params move from 1 B to 2 B (and lose 2 scales × 2 B each)
    assert q.weight_bytes(ct, llama8b, "bf16") == 9_081_201_536 + 1_879_048_192 - 32 * 4
    awq = q.from_hf_quantization_config({**AWQ, "modules_to_not_convert": ["model.layers.0.mlp"]})
    # layer 0's MLP 176,160,768 params: from 0.5 B + 2.5 B / 128 to 2 B each
    per_param_q = 0.5 + 2.5 / 128
    assert q.weight_bytes(awq, llama8b, "fp16") == pytest.approx(
        5_727_854_592 + 176_160_768 * (2 - per_param_q), rel=1e-12)


def test_moe_routers_stay_full_width_and_active_is_unchanged():
    m = architecture.get_model("qwen3-30b-a3b")
    s = q.from_hf_quantization_config(AWQ)
    # router 2048 × 128 per layer is not a quantized linear; attention + 128 experts are
    h, e, mi, layers = 2048, 128, 768, 48
    attn = 2 * h * 32 * 128 + 2 * h * 4 * 128
    experts = e * 3 * h * mi
    assert q.quantized_linear_param_count(s, m) == layers * (attn + experts)
    assert m.active_param_count() < m.param_count()  # the scheme changes bytes, not which parameters are active


def test_unknown_method_and_bad_fields_are_clear_errors():
    with pytest.raises(ModelConfigError, match="not modelled.*awq, gptq, fp8"):
        q.from_hf_quantization_config({"quant_method": "hqq"})
    with pytest.raises(ModelConfigError, match="group_size"):
        q.from_spec({"method": "awq", "bits": 4, "group_size": 12.5})
    with pytest.raises(ModelConfigError, match="unknown key"):
        q.from_spec({"method": "awq", "bitz": 4})
    with pytest.raises(ModelConfigError, match="needs the checkpoint's quantization_config"):
        q.from_vllm_name("awq", None)
    with pytest.raises(ModelConfigError, match="does not match"):
        q.from_vllm_name("gptq", AWQ)


# --------------------------------------------------------------------------- the setup


def test_fp8_checkpoint_keeps_a_bf16_kv_cache():
    # vLLM's kv_cache_dtype auto = model_config.dtype (bf16 for this checkpoint), not the fp8 weight width
    s = build_setup(hardware_ref="h100-sxm", model_ref="RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8")
    assert (s.activation_dtype, s.kv_dtype, s.weight_dtype, s.compute_dtype) == ("bf16", "bf16", "fp8", "fp8")
    assert s.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131_072
    assert s.weight_bytes == 9_081_201_536
    fp8kv = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b-instruct-fp8",
                        engine={"args": {"kv_cache_dtype": "fp8"}})
    assert fp8kv.kv_bytes_per_token == 65_536


def test_fp8_on_a_chip_without_fp8_computes_at_bf16():
    # A100 has no FP8 tensor cores: vLLM runs FP8 weights through the weight-only Marlin kernel
    s = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b-instruct-fp8")
    assert s.compute_dtype == "bf16"


def test_awq_checkpoint_on_l40s_hand_worked():
    s = build_setup(hardware_ref="l40s", model_ref="hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4",
                    engine={"version": "0.10.0", "args": {"quantization": "awq_marlin"},
                            "reserves": {"activation": 1.25 * GIB, "non_torch": 0.25 * GIB, "cuda_graphs": 0}})
    assert (s.activation_dtype, s.kv_dtype, s.compute_dtype) == ("fp16", "fp16", "fp16")  # torch_dtype float16
    assert s.weight_bytes == 5_727_854_592
    # budget ceil(0.9 × 48,305,799,168) = 43,475,219,252; − 5,727,854,592 − 1,342,177,280 − 268,435,456
    # = 36,136,751,924 B; ÷ 2,097,152 B per block (2 × 32 × 8 × 128 × 2 × 16) = 17,231.2
    assert kv_accounting(s).num_blocks == 17_231
    # batch-1 ceiling 864e9 / 5,727,854,592 = 150.84 tok/s
    assert s.hbm_bytes_per_s / s.weight_bytes == pytest.approx(150.84, abs=0.005)


def test_the_yaml_scheme_and_vllms_online_fp8():
    yaml = build_setup(hardware_ref="l40s", model_ref="llama-3.1-8b",
                       model_overrides={"quantization": {"method": "awq", "bits": 4, "group_size": 128}})
    # a bf16 checkpoint described as AWQ: the full-width rest at bf16 (same bytes as fp16)
    assert yaml.weight_bytes == 5_727_854_592 and yaml.kv_dtype == "bf16"
    online = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"quantization": "fp8"}})
    # --quantization fp8 on a bf16 checkpoint: per-tensor fp32 weight scales, 224 × 4 B = 896 B
    assert online.weight_bytes == LINEAR + 896 + 2 * FULL
    assert online.kv_dtype == "bf16" and online.compute_dtype == "fp8"
    none = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b-instruct-fp8",
                       model_overrides={"quantization": "none"})
    assert none.quantization is None and none.weight_bytes == TOTAL * 2


def test_legacy_model_dtype_means_all_weights_but_no_longer_the_kv_cache():
    # model: {dtype: fp8}: every parameter at 1 B (as before); the KV cache now stays at the model dtype (a fix:
    # it used to follow the weight dtype and halve)
    s = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", model_overrides={"dtype": "fp8"})
    assert s.weight_bytes == TOTAL * 1 and s.kv_dtype == "bf16" and s.kv_bytes_per_token == 131_072
    with pytest.raises(SetupError, match="both set the weight width"):
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b-instruct-fp8", model_overrides={"dtype": "int4"})


@pytest.mark.parametrize("kv", ["int4", "int8", "nf4"])
def test_int_kv_dtypes_are_refused_naming_the_valid_ones(kv):
    with pytest.raises(SetupError, match=r"not a KV-cache dtype vLLM offers.*auto.*fp8.*fp8_e5m2"):
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"kv_cache_dtype": kv}})


def test_engine_dtype_is_the_activation_dtype():
    s = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"dtype": "half"}})
    assert (s.activation_dtype, s.weight_dtype, s.kv_dtype, s.compute_dtype) == ("fp16",) * 4
    with pytest.raises(SetupError, match="not a vLLM --dtype"):
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"dtype": "int4"}})


def test_a_nominal_model_takes_a_scheme():
    s = build_setup(hardware_ref="h100-sxm", model_ref={"name": "n8", "params": 8.0e9, "num_layers": 32,
                                                        "num_kv_heads": 8, "head_dim": 128},
                    model_overrides={"quantization": {"method": "awq", "bits": 4, "group_size": 128}})
    # 8e9 × 0.5 B + 8e9 / 128 groups × 2.5 B = 4.0e9 + 0.15625e9
    assert s.weight_bytes == pytest.approx(4.15625e9, rel=1e-12)


# --------------------------------------------------------------------------- the YAML


def test_the_yaml_takes_a_scheme_and_reports_a_bad_kv_dtype_at_its_line():
    from pytest_roofline.format.spec import SpecError, loads_spec

    spec = loads_spec("hardware: l40s\n"
                      "model: {name: llama-3.1-8b, quantization: {method: awq, bits: 4, group_size: 128}}\n"
                      "predictions:\n"
                      "  - {id: w, quantity: weight_bytes, predicted: '5,727,854,592 B'}\n")
    setup = build_setup(hardware_ref=spec.hardware, model_ref=spec.model, model_overrides=spec.model_overrides,
                        engine=spec.engine, workload=spec.workload)
    assert setup.weight_bytes == 5_727_854_592 and setup.quantization.label() == "awq W4A16 g128 +zero"
    with pytest.raises(SpecError, match="not a KV-cache dtype vLLM offers") as exc:
        loads_spec("hardware: l40s\nmodel: llama-3.1-8b\nengine:\n  args: {kv_cache_dtype: int8}\n"
                   "predictions:\n  - {id: w, quantity: weight_bytes, predicted: 16 GB}\n")
    assert exc.value.line == 4  # the args line


# --------------------------------------------------------------------------- published KV capacity
# One benchmark run of vLLM 0.5.4 (benchmark_throughput.py, max_model_len 512, gpu_memory_utilization 0.9, one
# H100) over Llama-3.1-8B-Instruct and its 4-bit checkpoints, logs published by The Kaitchup
# (kaitchup.substack.com/p/the-best-quantization-methods-to) and reproduced in github.com/xinyuwei-david/david-share
# (Deep-Learning/Quantization-Methods-Comparison-and-Practice):
#   bf16                          "Loading model weights took 14.9888 GB"  "# GPU blocks: 9930"
#   kaitchup ...-awq-4bit         5.3748 GB  14846 blocks
#   kaitchup ...-gptq-4bit        5.3494 GB  14858 blocks
#   kaitchup ...-autoround-gptq-4bit-asym  5.3767 GB  14774 blocks
#   bf16 checkpoint, -q bitsandbytes       5.3421 GB  14821 blocks
# vLLM's "GB" there divides by 2**30; every run holds the same rotary cos/sin cache (131,072 × 128 × 2 B =
# 0.031 GiB), which this model leaves out of the weights: 14.9575 + 0.0313 = 14.9888 for bf16.
# The GPU's memory and the profile run's activations are the same in every run and not printed; the bf16 run pins
# them: 0.9 × memory − reserves = weights + KV = 16,060,522,496 + 9,930.5 × 2,097,152 (the middle of its last
# block) = 36,886,290,432 B. Each quantized run then has that budget minus its own weights for KV.
KAITCHUP_BUDGET = 16_060_522_496 + 9_930 * 2_097_152 + 1_048_576


@pytest.mark.parametrize("quant, published_gib, published_blocks", [
    ({"method": "awq", "bits": 4, "group_size": 128}, 5.3748, 14_846),
    ({"method": "gptq", "bits": 4, "group_size": 128}, 5.3494, 14_858),
    ({"method": "gptq", "bits": 4, "group_size": 128, "zero_point": True}, 5.3767, 14_774),
    ("bitsandbytes", 5.3421, 14_821),
])
def test_quantized_kv_capacity_matches_the_published_vllm_runs(quant, published_gib, published_blocks):
    model_overrides = {} if isinstance(quant, str) else {"quantization": quant}
    # the pinned budget as the device's memory at utilisation 1 (the same sum as 0.9 × memory − reserves)
    args = {"max_model_len": 512, "gpu_memory_utilization": 1.0, "dtype": "float16"}
    if isinstance(quant, str):
        args = {**args, "quantization": quant, "dtype": "bfloat16"}
    s = build_setup(hardware_ref="h100-sxm", hardware_overrides={"memory_bytes": KAITCHUP_BUDGET},
                    model_ref="llama-3.1-8b", model_overrides=model_overrides,
                    engine={"version": "0.5.4", "args": args,
                            "reserves": {"activation": 0, "non_torch": 0, "cuda_graphs": 0}})
    # AWQ and asymmetric GPTQ: 5,727,854,592 B -> (36,886,290,432 − 5,727,854,592) // 2,097,152 = 14,857
    # symmetric GPTQ (no zero points under gptq_marlin): 5,700,591,616 B -> 14,870
    # bitsandbytes (NF4, double quant: 0.5 B + (1 + 4/256) B per 64): 3,489,660,928 + 110,755,840
    # + 2,101,878,784 = 5,702,295,552 B -> 14,869
    if isinstance(quant, str):
        expected_w = 5_702_295_552
    else:
        expected_w = 5_727_854_592 if quant.get("zero_point", quant["method"] == "awq") else 5_700_591_616
    assert s.weight_bytes == expected_w
    assert s.weight_bytes / GIB + 0.03125 == pytest.approx(published_gib, rel=0.005)
    blocks = kv_accounting(s).num_blocks
    assert blocks == (KAITCHUP_BUDGET - expected_w) // 2_097_152
    assert blocks == pytest.approx(published_blocks, rel=0.01)  # within 0.6% of every published count


#: Meta's FP8 release of Llama-3.1 (fbgemm_fp8): FP8 on the feed-forward linears only, none in self-attention and
#: none in the first and last layers (arXiv 2407.21783 section 6.2), written here as patterns over 32 layers
FBGEMM_FP8 = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
              "modules_to_not_convert": [r"re:model\.layers\.\d+\.self_attn\..*", r"re:model\.layers\.(0|31)\.mlp\..*"]}


def test_fbgemm_fp8_quantizes_only_the_listed_linears_with_per_row_scales(llama8b):
    s = q.from_hf_quantization_config(FBGEMM_FP8)
    assert (s.method, s.weight_dtype, s.granularity, s.activations_quantized) == (
        q.QuantMethod.FP8, "fp8", q.ScaleGranularity.CHANNEL, True)
    # quantized: 30 MLPs × 3 × 14,336 × 4,096 = 5,284,823,040 weights × 1 B, plus one fp32 scale per output row:
    # (14,336 + 14,336 + 4,096) × 30 × 4 B = 3,932,160 B.  The rest, 8,030,261,248 - 5,284,823,040 = 2,745,438,208
    # parameters (attention, two MLPs, embeddings, lm_head, norms), at bf16: 5,490,876,416 B
    assert q.quantized_linear_param_count(s, llama8b) == 5_284_823_040
    assert q.weight_bytes(s, llama8b, "bf16") == 5_284_823_040 + 3_932_160 + 5_490_876_416
    # vLLM's --quantization fbgemm_fp8 (or fp8, the same method family) reads the same block
    assert q.from_vllm_name("fbgemm_fp8", FBGEMM_FP8) == s


def test_fp8_on_a_chip_without_an_fp8_peak_is_labelled_weight_only():
    """vLLM runs an FP8 checkpoint weight-only (Marlin, W8A16) on an A100, which has no FP8 tensor cores: the
    matmuls run at bf16 (the setup's compute dtype), and the label says so; an H100 runs it W8A8."""
    from pytest_roofline.model.setup import build_setup
    a100 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b",
                       engine={"args": {"quantization": "fp8"}})
    assert a100.compute_dtype == "bf16"
    assert a100.quantization_label == ("fp8 W8A8 tensor-scaled, run weight-only (W8A16) on a100-sxm4-80gb: no fp8 "
                                       "tensor peak, vLLM's Marlin fallback")
    h100 = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"quantization": "fp8"}})
    assert h100.compute_dtype == "fp8" and h100.quantization_label == "fp8 W8A8 tensor-scaled"
    assert build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b").quantization_label is None


def test_deepseek_v3_fp8_quantizes_its_mla_projections_not_q_k_v_o_of_heads_times_head_dim():
    """DeepSeek-V3's config.json (huggingface.co/deepseek-ai/DeepSeek-V3): hidden 7,168, 61 layers (3 dense, MLP
    18,432; 58 MoE, 256 routed experts + 1 shared of 2,048), 128 heads, q_lora_rank 1,536, kv_lora_rank 512,
    qk_nope 128, qk_rope 64, v_head 128. Its FP8 linears, by hand, per layer of attention: q_a 1,536 x 7,168 +
    q_b 128·192 x 1,536 + kv_a_proj_with_mqa 576 x 7,168 + kv_b 128·256 x 512 + o 7,168 x 128·128 = 187,105,280;
    x 61 = 11,413,422,080; dense MLPs 3 x (3 x 7,168 x 18,432) = 1,189,085,184; MoE 58 x 257 x 3 x 7,168 x 2,048 =
    656,463,101,952: 669,065,609,216 in all. Counting MLA as q/k/v/o of heads x head_dim gave 700.6 G, more than
    the model's 671.0 G parameters, and weights below one byte a parameter (found by a trial of roofline init)."""
    setup = build_setup(hardware_ref="h200", model_ref="deepseek-v3",
                        engine={"name": "vllm", "version": "0.26.0", "args": {"tensor_parallel_size": 8}})
    arch, scheme = setup.model, setup.quantization
    assert scheme is not None and arch.is_mla
    attention = 1_536 * 7_168 + 128 * 192 * 1_536 + 576 * 7_168 + 128 * 256 * 512 + 7_168 * 128 * 128
    assert attention == 187_105_280
    by_hand = 61 * attention + 3 * 3 * 7_168 * 18_432 + 58 * 257 * 3 * 7_168 * 2_048
    assert q.quantized_linear_param_count(scheme, arch) == by_hand == 669_065_609_216
    assert setup.weight_bytes > arch.param_count()  # one byte a quantized parameter, two for the rest, + scales
