"""vLLM defaults by version and device, against the values read from vLLM's source at each release tag
(github.com/vllm-project/vllm: vllm/engine/arg_utils.py get_batch_defaults, vllm/config/cache.py,
vllm/platforms/cpu.py)."""

from __future__ import annotations

import re
import warnings

import pytest

from pytest_roofline.errors import UnknownEngineVersionWarning
from pytest_roofline.model import vllm_defaults as vd

GIB = 2**30


@pytest.mark.parametrize("text,expected", [
    ("0.26.0", (0, 26, 0)),
    ("v0.26.0", (0, 26, 0)),
    ("0.9", (0, 9, 0)),
    ("0.10.2.post1", (0, 10, 2)),
    ("0.11.0rc1", (0, 11, 0)),
    ("0.32.0+cpu", (0, 32, 0)),
    ("0.6.3.dev12+g1234", (0, 6, 3)),
    ("1.0.0", (1, 0, 0)),
])
def test_parse_version(text, expected):
    v = vd.parse_version(text)
    assert v == expected
    assert (v.major, v.minor, v.patch) == expected


def test_parse_version_ordering_and_errors():
    assert vd.parse_version("0.9.2") < vd.parse_version("0.10.0") < vd.parse_version("0.26.0")
    assert vd.parse_version((0, 26)) == (0, 26, 0)
    assert str(vd.parse_version("0.26.0")) == "0.26.0"
    with pytest.raises(ValueError):
        vd.parse_version("latest")
    with pytest.raises(ValueError):
        vd.parse_version((0,))
    with pytest.raises(TypeError):
        vd.parse_version(0.26)  # type: ignore[arg-type]


@pytest.mark.parametrize("version,util", [
    ("0.6.3", 0.9), ("0.10.0", 0.9), ("0.19.1", 0.9), ("0.20.0", 0.92), ("0.26.0", 0.92), ("0.33.0", 0.92),
])
def test_default_gpu_memory_utilization(version, util):
    assert vd.default_gpu_memory_utilization(version) == util


def test_default_block_size():
    assert vd.default_block_size("cuda") == 16
    assert vd.default_block_size("GPU") == 16
    assert vd.default_block_size("cpu") == 128
    with pytest.raises(ValueError):
        vd.default_block_size("tpu")


A100_80 = dict(device="cuda", device_name="NVIDIA A100-SXM4-80GB", total_memory_bytes=80 * GIB)
H100_80 = dict(device="cuda", device_name="NVIDIA H100 80GB HBM3", total_memory_bytes=int(79.19 * GIB))
H200 = dict(device="cuda", device_name="NVIDIA H200", total_memory_bytes=int(139.8 * GIB))
B200 = dict(device="cuda", device_name="NVIDIA B200", total_memory_bytes=int(178.4 * GIB))
L4 = dict(device="cuda", device_name="NVIDIA L4", total_memory_bytes=int(22.0 * GIB))
GB10 = dict(device="cuda", device_name="NVIDIA GB10", total_memory_bytes=int(119.7 * GIB))


@pytest.mark.parametrize("version,gpu,usage,expected", [
    # A100-80GB is excluded from the >=70 GiB tier on purpose
    ("0.26.0", A100_80, "serve", (256, 2048)),
    ("0.26.0", A100_80, "llm", (256, 8192)),
    ("0.10.0", A100_80, "serve", (256, 2048)),
    # >=70 GiB without "a100"
    ("0.26.0", H100_80, "serve", (1024, 8192)),
    ("0.26.0", H100_80, "llm", (1024, 16384)),
    ("0.26.0", H200, "serve", (1024, 8192)),
    # >=160 GiB only from 0.28
    ("0.27.1", B200, "serve", (1024, 8192)),
    ("0.28.0", B200, "serve", (1024, 16384)),
    ("0.33.0", B200, "llm", (1024, 16384)),
    # small cards and GB10 fall back
    ("0.26.0", L4, "serve", (256, 2048)),
    ("0.26.0", GB10, "serve", (256, 2048)),
])
def test_default_scheduler_limits_gpu(version, gpu, usage, expected):
    assert vd.default_scheduler_limits(version, usage=usage, **gpu) == expected


def test_default_scheduler_limits_cpu_scales_with_world_size():
    assert vd.default_scheduler_limits("0.32.0", device="cpu") == (128, 2048)
    assert vd.default_scheduler_limits("0.32.0", device="cpu", world_size=2) == (256, 4096)
    assert vd.default_scheduler_limits("0.32.0", device="cpu", usage="llm", world_size=2) == (512, 8192)


def test_default_scheduler_limits_modes_and_caps():
    assert vd.default_scheduler_limits("0.26.0", performance_mode="throughput", **H100_80) == (2048, 16384)
    with pytest.raises(ValueError):
        vd.default_scheduler_limits("0.16.0", performance_mode="throughput", **H100_80)
    # defaults cap max_num_batched_tokens at max_num_seqs x max_model_len
    assert vd.default_scheduler_limits("0.26.0", max_model_len=4, **A100_80) == (256, 1024)
    with pytest.raises(ValueError):
        vd.default_scheduler_limits("0.26.0", device="cuda", device_name="NVIDIA A100")  # no memory given
    with pytest.raises(ValueError):
        vd.default_scheduler_limits("0.26.0", usage="batch", **A100_80)


@pytest.mark.parametrize("version,budgeted", [
    ("0.17.0", False), ("0.18.0", False), ("0.19.0", False), ("0.20.0", False), ("0.21.0", True), ("0.26.0", True),
])
def test_cuda_graph_memory_budgeted(version, budgeted):
    assert vd.cuda_graph_memory_budgeted(version) is budgeted


def test_prefix_caching_and_chunked_prefill():
    assert vd.default_enable_prefix_caching("0.26.0") is True
    assert vd.default_enable_prefix_caching("0.26.0", generative=False) is False
    assert vd.default_enable_prefix_caching("0.26.0", riscv=True) is False
    # 0.8.5 on CUDA runs V1 by default: "V1 enables prefix caching by default" (v0.8.5 _set_default_args_v1)
    assert vd.default_enable_prefix_caching("0.8.5") is True
    # V0: EngineArgs.enable_prefix_caching = False (v0.4.1 ... v0.6.4), bool(VLLM_USE_V1) = False (v0.6.5-v0.7.3)
    assert vd.default_enable_prefix_caching("0.7.3") is False
    assert vd.default_enable_prefix_caching("0.9.2", engine="v0") is False
    assert vd.default_enable_chunked_prefill("0.26.0") is True
    assert vd.default_enable_chunked_prefill("0.33.0", encoder_decoder=True) is False
    # 0.9.2 on CUDA is V1: always chunked (v0.9.2 _set_default_args_v1 "V1 always uses chunked prefills")
    assert vd.default_enable_chunked_prefill("0.9.2") is True
    # V0 without a long context: off
    assert vd.default_enable_chunked_prefill("0.7.3", max_model_len=4096) is False


def test_defaults_for_the_notebook_setup():
    d = vd.defaults_for("0.26.0", **A100_80)
    assert d.version == (0, 26, 0)
    assert d.device == "cuda"
    assert d.gpu_memory_utilization == 0.92
    assert d.block_size == 16
    assert (d.max_num_seqs, d.max_num_batched_tokens) == (256, 2048)
    assert d.cuda_graph_memory_budgeted is True
    assert d.enable_prefix_caching is True and d.enable_chunked_prefill is True
    for name in ("gpu_memory_utilization", "block_size", "max_num_seqs", "max_num_batched_tokens",
                 "cuda_graph_memory_budgeted", "enable_prefix_caching", "enable_chunked_prefill"):
        # each default names the vLLM release and source file it was read from
        assert re.search(r"vLLM v0\.\d+(\.\d+)?: vllm/[\w/]+\.py", d.source(name)), name
    assert "PR #17885" in d.source("max_num_seqs")
    with pytest.raises(KeyError):
        d.source("nope")
    with pytest.raises(AttributeError):
        d.block_size = 32  # type: ignore[misc]


def test_defaults_for_cpu_engine():
    d = vd.defaults_for("0.32.0", device="cpu")
    assert d.block_size == 128
    assert (d.max_num_seqs, d.max_num_batched_tokens) == (128, 2048)
    assert d.cuda_graph_memory_budgeted is False
    assert d.gpu_memory_utilization == 0.92


# ------------------------------------------------------------------------------- versions outside the known range
# Each expected version below is the end of the range read (the 0.4.1 ... 0.33.0 sdists on PyPI, 0.4.0 taken as
# 0.4.1): a version outside it must warn and name the nearest known one.


@pytest.mark.parametrize("version,nearest", [
    ("0.34.0", "0.33.0"),  # newer than the newest release read (0.33.0, uploaded 2026-11-02)
    ("1.0.0", "0.33.0"),
    ("0.33.1", "0.33.0"),
    ("0.3.3", "0.4.0"),  # older than 0.4.0, the first release covered
    ("0.2.7", "0.4.0"),
])
def test_unknown_version_warns_and_names_the_nearest_known(version, nearest):
    with pytest.warns(UnknownEngineVersionWarning, match=re.escape(f"nearest known version, {nearest}")) as rec:
        d = vd.defaults_for(version, max_model_len=4096, **H100_80)
    assert str(d.version) == nearest
    assert str(d.requested_version) == str(vd.parse_version(version))
    assert f"vLLM {vd.parse_version(version)} is" in str(rec[0].message)
    # every source says the defaults are those of another release
    assert f"the defaults of {nearest}" in d.source("max_num_seqs")
    assert issubclass(UnknownEngineVersionWarning, UserWarning)


@pytest.mark.parametrize("version", ["0.4.0", "0.4.1", "0.5.4", "0.15.0", "0.26.0", "0.33.0", "0.33.0.post1"])
def test_known_version_does_not_warn(version):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = vd.defaults_for(version, max_model_len=4096, **H100_80)
    assert d.version == vd.parse_version(version)


def test_the_newer_version_uses_the_newest_defaults():
    # 0.34.0 on a B200 gets 0.33.0's >=160 GiB tier (v0.33 get_batch_defaults: 1024 / 16384), not silence
    with pytest.warns(UnknownEngineVersionWarning):
        d = vd.defaults_for("0.34.0", **B200)
    assert (d.max_num_seqs, d.max_num_batched_tokens) == (1024, 16384)
    assert d.gpu_memory_utilization == 0.92


# ------------------------------------------------------------------------------------------- which engine


@pytest.mark.parametrize("version,kw,engine", [
    ("0.4.1", {}, "v0"),
    ("0.7.3", {}, "v0"),  # V1 opt-in only (VLLM_USE_V1 defaults to "0" before 0.8.0)
    ("0.8.0", {}, "v1"),  # v0.8.0 vllm/envs.py VLLM_USE_V1 default "1"; the oracle accepts a plain CUDA setup
    ("0.8.0", {"compute_capability": 7.0}, "v0"),  # V100: "Compute Capability < 8.0" (_is_v1_supported_oracle)
    ("0.10.1", {"compute_capability": 7.5}, "v0"),  # T4 still falls back in 0.10.1 (not from 0.10.2: below)
    ("0.11.0", {"compute_capability": 7.5}, "v1"),  # 0.11.0: no V0 fallback left
    ("0.8.2", {"kv_cache_dtype": "fp8"}, "v0"),  # v0.8.0-0.8.2: any --kv-cache-dtype -> V0
    ("0.8.3", {"kv_cache_dtype": "fp8", "compute_capability": 9.0}, "v1"),  # FA3 takes FP8 KV on Hopper
    ("0.8.3", {"kv_cache_dtype": "fp8", "compute_capability": 8.0}, "v0"),
    ("0.9.1", {"device": "cpu"}, "v0"),  # v0.9.1: not CUDA/TPU -> v0_hardware fallback
    ("0.9.2", {"device": "cpu"}, "v1"),  # v0.9.2 vllm/platforms/cpu.py default_v1 (x86)
    ("0.9.0", {"device": "rocm"}, "v0"),
    ("0.9.2", {"device": "rocm"}, "v1"),
    ("0.9.2", {"use_v1": False}, "v0"),
    ("0.7.0", {"use_v1": True}, "v1"),
])
def test_default_engine(version, kw, engine):
    assert vd.default_engine(version, **kw) == engine


@pytest.mark.parametrize("version, engine", [
    ("0.8.0", "v0"), ("0.9.2", "v0"), ("0.10.0", "v0"), ("0.10.1", "v0"), ("0.10.1.1", "v0"),
    ("0.10.2", "v1"), ("0.11.0", "v1"),
])
def test_a_gpu_below_compute_capability_8_falls_back_to_v0_until_0_10_2(version, engine):
    """vLLM's ``_is_v1_supported_oracle`` has its "Compute Capability < 8.0" fallback (``major < 8``) in every
    release 0.8.0 ... 0.10.1.1 and none in 0.10.2 (vllm/engine/arg_utils.py at v0.10.1 and v0.10.2), whose CUDA
    platform keeps V1 with FlexAttention on older GPUs (vllm/platforms/cuda.py at v0.10.2)."""
    assert vd.default_engine(version, compute_capability=7.5) == engine  # T4
    assert vd.default_engine(version, compute_capability=7.0) == engine  # V100
    assert vd.default_engine(version, compute_capability=8.0) == "v1"  # A100: never this fallback
    # an FP8 KV cache on a T4 still falls back in 0.10.2: FlashAttention takes FP8 only on 9.x (and 10.x)
    assert vd.default_engine(version, compute_capability=7.5, kv_cache_dtype="fp8") == (
        "v1" if version == "0.11.0" else "v0")


def test_forcing_an_engine_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="no V1"):
        vd.default_engine("0.6.4", use_v1=True)  # V1 defaults start in 0.6.5 (_override_v1_engine_args)
    with pytest.raises(ValueError, match="no V0"):
        vd.default_engine("0.11.0", use_v1=False)
    with pytest.raises(ValueError, match="no V0"):
        vd.defaults_for("0.12.0", engine="v0", **H100_80)


# ------------------------------------------------------------------------------------------- V0 scheduler


@pytest.mark.parametrize("version,max_model_len,chunked,expected_tokens", [
    # v0.4.1 vllm/config.py SchedulerConfig.__init__: "If max_model_len is too short, use 2048 as the default
    # value for higher throughput": max(max_model_len, 2048)
    ("0.4.1", 4096, False, 4096),
    ("0.4.1", 1024, False, 2048),
    ("0.5.4", 4096, False, 4096),
    ("0.7.3", 8192, False, 8192),
    ("0.10.1", 32768, False, 32768),  # V0 fallback in 0.10.x, same SchedulerConfig rule
    # with chunked prefill and no user value: v0.4.1 "the well-tuned batch size" 768
    ("0.4.1", 4096, True, 768),
    # v0.4.2 ... v0.6.4: 512 ("the best balance between ITL and TTFT on A100")
    ("0.4.2", 4096, True, 512),
    ("0.6.4", 131072, True, 512),
    # v0.6.5 SchedulerConfig.__post_init__: 2048 ("a balance between ITL and TTFT")
    ("0.6.5", 131072, True, 2048),
    ("0.7.3", 131072, True, 2048),
])
def test_v0_max_num_batched_tokens(version, max_model_len, chunked, expected_tokens):
    seqs, tokens = vd.default_scheduler_limits(version, engine="v0", max_model_len=max_model_len,
                                               chunked_prefill=chunked)
    assert seqs == 256  # EngineArgs.max_num_seqs = 256 (v0.4.1 arg_utils.py; v0.8+ _set_default_args_v0)
    assert tokens == expected_tokens


def test_v0_pooling_models_get_the_embedding_budget():
    # v0.4.3 vllm/config.py: _EMBEDDING_MODEL_MAX_NUM_BATCHED_TOKENS = 32768, max(max_model_len, 32768)
    assert vd.default_scheduler_limits("0.4.3", engine="v0", max_model_len=512, generative=False) == (256, 32768)
    # 0.4.2 had no embedding branch: max(512, 2048)
    assert vd.default_scheduler_limits("0.4.2", engine="v0", max_model_len=512, generative=False) == (256, 2048)


def test_v0_without_max_model_len_is_refused():
    with pytest.raises(ValueError, match="max_model_len"):
        vd.default_scheduler_limits("0.5.4", engine="v0")
    with pytest.raises(ValueError, match="max_model_len"):
        vd.defaults_for("0.5.4", **A100_80)


@pytest.mark.parametrize("version,kw,chunked", [
    # v0.5.2: enable_chunked_prefill: bool = False, no long-context rule yet
    ("0.5.2", {"max_model_len": 131072}, False),
    # v0.5.3 create_engine_config: use_long_context = max_model_len > 32768 -> on for a GPU
    ("0.5.3", {"max_model_len": 131072}, True),
    ("0.5.3", {"max_model_len": 32768}, False),  # not > 32768
    ("0.5.3", {"max_model_len": 32769}, True),
    ("0.6.3", {"max_model_len": 131072, "sliding_window": True}, False),  # "not use_sliding_window"
    ("0.6.3", {"max_model_len": 131072, "device": "cpu"}, False),  # is_gpu = device_type == "cuda"
    ("0.6.2", {"max_model_len": 131072, "multimodal": True}, True),  # multimodal exclusion from 0.6.3
    ("0.6.3", {"max_model_len": 131072, "multimodal": True}, False),
    ("0.6.6", {"max_model_len": 131072, "device": "rocm"}, True),
    ("0.7.0", {"max_model_len": 131072, "device": "rocm"}, False),  # "not current_platform.is_rocm()" from 0.7.0
    ("0.7.0", {"max_model_len": 131072, "generative": False}, False),  # runner_type != "pooling"
    ("0.8.5", {"max_model_len": 131072, "engine": "v0", "mla": True}, False),  # V0: no chunking for MLA
    ("0.8.5", {"max_model_len": 131072, "engine": "v0"}, True),
])
def test_v0_chunked_prefill_default_for_long_contexts(version, kw, chunked):
    kw = {"engine": "v0", **kw}
    assert vd.default_enable_chunked_prefill(version, **kw) is chunked


def test_v0_long_context_default_reaches_the_token_budget():
    # Llama-3.1-8B (max_position_embeddings 131072, model card config.json) on 0.6.3: chunked by default,
    # so the token budget is the chunked one (512), not max(131072, 2048)
    d = vd.defaults_for("0.6.3", max_model_len=131072, **A100_80)
    assert d.engine == "v0" and d.enable_chunked_prefill is True
    assert (d.max_num_seqs, d.max_num_batched_tokens) == (256, 512)
    # 0.6.6: the chunked budget is 2048
    assert vd.defaults_for("0.6.6", max_model_len=131072, **A100_80).max_num_batched_tokens == 2048
    # the user turns chunking off: max(131072, 2048)
    d = vd.defaults_for("0.6.3", max_model_len=131072, enable_chunked_prefill=False, **A100_80)
    assert d.enable_chunked_prefill is False and d.max_num_batched_tokens == 131072


# ------------------------------------------------------------------------------------------- V1 history


@pytest.mark.parametrize("version,gpu,usage,expected", [
    # v0.8.0 _set_default_args_v1: "h100"/"h200" in the name -> LLM 16384 / serve 8192, else 8192 / 2048;
    # default_max_num_seqs = 1024 for every GPU
    ("0.8.0", H100_80, "serve", (1024, 8192)),
    ("0.8.0", H100_80, "llm", (1024, 16384)),
    ("0.8.0", A100_80, "serve", (1024, 2048)),
    ("0.8.0", A100_80, "llm", (1024, 8192)),
    ("0.8.3", L4, "serve", (1024, 2048)),
    # v0.8.4: default_max_num_seqs = 256 outside H100/H200
    ("0.8.4", A100_80, "serve", (256, 2048)),
    ("0.8.4", H200, "serve", (1024, 8192)),
    # v0.8.5: device_memory >= 70 GiB, no A100 exclusion yet: the A100-80GB gets the big tier
    ("0.8.5", A100_80, "serve", (1024, 8192)),
    ("0.8.5", L4, "llm", (256, 8192)),
    # v0.9.0: ... and "a100" not in device_name (PR #17885)
    ("0.9.0", A100_80, "serve", (256, 2048)),
    ("0.9.0", H100_80, "llm", (1024, 16384)),
])
def test_v1_batch_defaults_by_version(version, gpu, usage, expected):
    assert vd.default_scheduler_limits(version, usage=usage, **gpu) == expected
    d = vd.defaults_for(version, usage=usage, **gpu)
    assert d.engine == "v1" and (d.max_num_seqs, d.max_num_batched_tokens) == expected
    assert d.enable_chunked_prefill is True and d.enable_prefix_caching is True


@pytest.mark.parametrize("version,gpu,usage,expected", [
    # opt-in V1 (VLLM_USE_V1=1): v0.6.5 __post_init__ max_num_seqs = 1024 under V1; _override_v1_engine_args
    # LLM_CLASS 8192 / OPENAI_API_SERVER 2048 on any GPU -- the first serve vs LLM-class difference
    ("0.6.5", H100_80, "serve", (1024, 2048)),
    ("0.6.6", H100_80, "llm", (1024, 8192)),
    # v0.7.0 _override_v1_engine_args: "h100"/"h200" in the name -> LLM 16384 / serve 8192
    ("0.7.0", H100_80, "serve", (1024, 8192)),
    ("0.7.3", H100_80, "llm", (1024, 16384)),
    ("0.7.3", A100_80, "serve", (1024, 2048)),
])
def test_opt_in_v1_batch_defaults(version, gpu, usage, expected):
    d = vd.defaults_for(version, usage=usage, engine="v1", **gpu)
    assert (d.max_num_seqs, d.max_num_batched_tokens) == expected
    assert d.enable_chunked_prefill is True and d.enable_prefix_caching is True and d.swap_space_bytes == 0.0
    # without VLLM_USE_V1 the same versions run V0: 256 seqs, serve and LLM class alike
    v0 = vd.defaults_for(version, usage=usage, max_model_len=8192, **gpu)
    assert (v0.engine, v0.max_num_seqs, v0.max_num_batched_tokens) == ("v0", 256, 8192)


def test_v1_cpu_defaults_by_version():
    # v0.9.2 _set_default_args_v1, current_platform.is_cpu(): LLM 128 seqs / 4096 tokens, serve 32 / 2048
    assert vd.default_scheduler_limits("0.9.2", device="cpu") == (32, 2048)
    assert vd.default_scheduler_limits("0.9.2", device="cpu", usage="llm") == (128, 4096)
    # v0.10.0: x world_size (pipeline x tensor parallel), serve 128 / 2048, LLM 256 / 4096
    assert vd.default_scheduler_limits("0.10.0", device="cpu", world_size=2) == (256, 4096)
    # v0.9.1 on CPU is V0: 256 seqs, max(max_model_len, 2048)
    d = vd.defaults_for("0.9.1", device="cpu", max_model_len=4096)
    assert d.engine == "v0" and (d.max_num_seqs, d.max_num_batched_tokens) == (256, 4096)


def test_serve_and_llm_class_are_the_same_under_v0():
    # V0's SchedulerConfig ignores the usage context (UsageContext is passed only to usage stats before 0.7)
    serve = vd.defaults_for("0.6.3", usage="serve", max_model_len=8192, **H100_80)
    llm = vd.defaults_for("0.6.3", usage="llm", max_model_len=8192, **H100_80)
    assert (serve.max_num_seqs, serve.max_num_batched_tokens) == (llm.max_num_seqs, llm.max_num_batched_tokens)
    assert (serve.usage, llm.usage) == ("serve", "llm")
    assert "LLM_CLASS" in llm.source("usage") and "OPENAI_API_SERVER" in serve.source("usage")


# ------------------------------------------------------------------------------------ swap, memory, blocks


def test_swap_space_and_memory_profiling_by_engine():
    # V0: swap_space = 4 (GiB), CacheConfig.swap_space_bytes = swap_space * (1 << 30) -> 4 x 2**30 bytes
    assert vd.default_swap_space_bytes("0.5.4") == 4 * GIB
    assert vd.default_swap_space_bytes("0.26.0") == 0.0  # V1 allocates no CPU swap blocks
    assert vd.memory_profiling_method("0.4.1") == "v0_free_memory_delta"  # init free - free after profile
    assert vd.memory_profiling_method("0.6.3") == "v0_free_memory_delta"
    assert vd.memory_profiling_method("0.6.4") == "v0_torch_peak_plus_non_torch"
    assert vd.memory_profiling_method("0.6.5") == "v0_memory_profiling"
    assert vd.memory_profiling_method("0.9.2", engine="v0") == "v0_memory_profiling"
    assert vd.memory_profiling_method("0.8.0") == "v1_determine_available_memory"
    assert set(vd.MEMORY_PROFILING_METHODS) == {"v0_free_memory_delta", "v0_torch_peak_plus_non_torch",
                                                "v0_memory_profiling", "v1_determine_available_memory"}
    d = vd.defaults_for("0.5.4", max_model_len=4096, **A100_80)
    assert d.swap_space_bytes == 4 * GIB
    assert "total x util - peak" in d.source("memory_profiling")
    assert d.cuda_graph_memory_budgeted is False  # V0 captured graphs after sizing the KV cache


def test_cpu_block_size_by_version():
    assert vd.default_block_size("cpu", "0.8.2") == 16  # v0.8.2 platforms/cpu.py: block_size = 16
    assert vd.default_block_size("cpu", "0.8.3") == 128  # v0.8.3: 128 if ipex_available else 16
    assert vd.default_block_size("cpu", "0.10.0", ipex_available=False) == 16
    assert vd.default_block_size("cpu", "0.11.0", ipex_available=False) == 16
    assert vd.default_block_size("cpu", "0.12.0", ipex_available=False) == 128  # v0.12.0: block_size = 128
    assert vd.default_block_size("cpu", "0.33.0", ipex_available=False) == 128
    assert vd.default_block_size("cuda", "0.4.1") == 16


def test_old_gpu_memory_utilization_is_090():
    # v0.4.1 ... v0.10.0 vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization: float = 0.90
    for v in ("0.4.1", "0.5.4", "0.7.3", "0.9.2"):
        assert vd.defaults_for(v, max_model_len=4096, **A100_80).gpu_memory_utilization == 0.9


# ------------------------------------------------------------------------------------------- into the setup


LLAMA2_7B = {
    # Llama-2-7b-hf config.json (huggingface.co/meta-llama/Llama-2-7b-hf): hidden 4096, 32 layers, 32 heads and
    # 32 KV heads (no GQA), intermediate 11008, vocab 32000, max_position_embeddings 4096; the Llama-3.1-8B preset
    # shares hidden size, layers and head_dim, the rest is overridden.
    "name": "llama-3.1-8b", "num_kv_heads": 32, "vocab_size": 32000, "intermediate_size": 11008,
    "max_position_embeddings": 4096,
}


def _setup(version, entrypoint=None, hw="a100-sxm4-40gb", model=None, args=None, env=None):
    from pytest_roofline.model.setup import build_setup

    engine = {"version": version, "args": {"max_model_len": 4096, **(args or {})}}
    if entrypoint:
        engine["entrypoint"] = entrypoint
    if env:
        engine["env"] = env
    return build_setup(hardware_ref=hw, model_ref=dict(model or LLAMA2_7B), engine=engine)


def test_v0_setup_takes_its_token_budget_into_the_kv_accounting():
    from pytest_roofline.model.setup import kv_accounting

    s = _setup("0.5.4")
    # 6,738,415,616 parameters: the "7B" Llama-2 count (safetensors index total_size 13,476,831,232 B / 2 B)
    assert s.model.param_count() == 6_738_415_616
    # V0 0.5.4: max(max_model_len 4096, 2048) = 4096 tokens, 256 seqs, no chunking, no prefix caching
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (256, 4096)
    assert s.enable_chunked_prefill is False and s.enable_prefix_caching is False
    assert s.engine_kind == "v0"
    # the KV accounting profiles that budget: the same pool as writing max_num_batched_tokens: 4096 by hand,
    # and a smaller one than V1's 2048-token default on this 40 GB card (a bigger profile-run activation peak)
    explicit = _setup("0.5.4", args={"max_num_batched_tokens": 4096})
    assert kv_accounting(s) == kv_accounting(explicit)
    # (a 2048-token budget under max_model_len 4096 needs chunked prefill: without it vLLM refuses to start)
    v1_like = _setup("0.5.4", args={"max_num_batched_tokens": 2048, "enable_chunked_prefill": True})
    assert kv_accounting(s).activation_bytes > kv_accounting(v1_like).activation_bytes
    assert kv_accounting(s).num_blocks < kv_accounting(v1_like).num_blocks


def test_entrypoint_selects_the_llm_class_defaults():
    # v0.26 (get_batch_defaults, >=70 GiB tier, H100): serve 8192 tokens, LLM class 16384
    serve = _setup("0.26.0", hw="h100-sxm")
    llm = _setup("0.26.0", entrypoint="llm", hw="h100-sxm")
    assert (serve.max_num_seqs, serve.max_num_batched_tokens) == (1024, 8192)
    assert (llm.max_num_seqs, llm.max_num_batched_tokens) == (1024, 16384)
    assert (serve.engine_entrypoint, llm.engine_entrypoint) == ("serve", "llm")


def test_vllm_use_v1_in_engine_env_selects_the_engine():
    # 0.9.2 defaults to V1 on an A100 (256 / 2048, chunked, prefix caching); VLLM_USE_V1=0 gives V0's defaults
    v1 = _setup("0.9.2")
    v0 = _setup("0.9.2", env={"VLLM_USE_V1": "0"})
    assert (v1.engine_kind, v1.max_num_batched_tokens, v1.enable_chunked_prefill) == ("v1", 2048, True)
    assert (v0.engine_kind, v0.max_num_batched_tokens, v0.enable_chunked_prefill) == ("v0", 4096, False)


def test_serving_model_takes_chunked_prefill_from_the_defaults():
    from pytest_roofline.model.serving import EngineConfig

    # Llama-3.1-8B at its full 131072 context on 0.6.3 (V0): chunked by default (> 32768), 512-token budget
    s = _setup("0.6.3", hw="a100-sxm4-80gb", model={"name": "llama-3.1-8b"}, args={"max_model_len": 131072})
    assert s.enable_chunked_prefill is True and s.max_num_batched_tokens == 512
    assert EngineConfig.from_setup(s.with_changes(engine_args={**s.engine_args,
                                                               "num_gpu_blocks_override": 100})).chunked_prefill
    # the 4096-context Llama-2 on 0.5.4: not chunked
    s = _setup("0.5.4")
    cfg = EngineConfig.from_setup(s.with_changes(engine_args={**s.engine_args, "num_gpu_blocks_override": 100}))
    assert cfg.chunked_prefill is False and cfg.enable_prefix_caching is False


def test_setup_warns_for_an_unknown_version():
    with pytest.warns(UnknownEngineVersionWarning, match="0.33.0"):
        s = _setup("0.34.0", hw="h100-sxm")
    assert (s.max_num_seqs, s.max_num_batched_tokens) == (1024, 8192)


def test_v0_setup_without_a_max_model_len_names_the_field():
    from pytest_roofline.errors import SetupValueError
    from pytest_roofline.model.setup import build_setup

    nominal = {"params": 7e9, "num_layers": 32, "num_kv_heads": 32, "head_dim": 128, "name": "nominal-7b"}
    with pytest.raises(SetupValueError, match="max_model_len") as exc:
        build_setup(hardware_ref="a100-sxm4-40gb", model_ref=nominal, engine={"version": "0.5.4"})
    assert exc.value.field == "engine.args.max_model_len"


# ------------------------------------------------------------------------------------------- the YAML switch

_YAML = """\
hardware: h100-sxm
model: llama-3.1-8b
engine:
  version: "0.26.0"
  entrypoint: {entrypoint}
predictions:
  - id: budget
    quantity: max_num_batched_tokens
    predicted: "{tokens}"
"""


@pytest.mark.parametrize("entrypoint,tokens", [
    # v0.26 get_batch_defaults, >=70 GiB tier (H100 SXM, 79.65 GiB, no "a100" in the name):
    # OPENAI_API_SERVER 8192, LLM_CLASS 16384
    ("serve", 8192),
    ("llm", 16384),
])
def test_engine_entrypoint_in_the_yaml(entrypoint, tokens):
    from pytest_roofline.format.spec import loads_spec
    from pytest_roofline.scoring import setup_for

    spec = loads_spec(_YAML.format(entrypoint=entrypoint, tokens=tokens), file="preds.yaml")
    assert spec.engine["entrypoint"] == entrypoint
    [pred] = spec.predictions
    assert pred.error is None
    setup = setup_for(spec, pred)
    assert setup.engine_entrypoint == entrypoint and setup.max_num_batched_tokens == tokens


def test_a_wrong_entrypoint_is_refused_at_its_line():
    from pytest_roofline.errors import SpecError
    from pytest_roofline.format.spec import loads_spec

    with pytest.raises(SpecError) as exc:
        loads_spec(_YAML.format(entrypoint="offline", tokens=8192), file="preds.yaml")
    assert exc.value.line == 5 and "serve, llm" in str(exc.value)


def test_a_default_cites_the_release_its_value_was_read_from():
    """At 0.4.1 the 0.90 utilisation was read from v0.4.1's arg_utils.py; the v0.20 source (0.92) heads only the
    versions that use it (it headed both before)."""
    gpu = {"device_name": "NVIDIA H100 80GB HBM3", "total_memory_bytes": 80 * GIB}
    old = vd.defaults_for("0.4.1", max_model_len=8192, **gpu).sources["gpu_memory_utilization"]
    new = vd.defaults_for("0.33.0", **gpu).sources["gpu_memory_utilization"]
    assert old.startswith("vLLM v0.4.1: vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization = 0.90")
    assert new.startswith("vLLM v0.20: vllm/config/cache.py default 0.92")


@pytest.mark.parametrize("model, too_old, first", [
    ("qwen3-8b", "0.8.3", "0.8.4"), ("qwen3-30b-a3b", "0.6.3", "0.8.4"), ("phi-3-mini-4k", "0.4.1", "0.4.2"),
    ("gemma-2-9b", "0.5.0", "0.5.1"), ("deepseek-v3", "0.6.5", "0.6.6"), ("gemma-3-27b", "0.7.3", "0.8.0"),
    ("gemma-3-1b", "0.7.3", "0.8.0"), ("deepseek-v2-lite", "0.4.3", "0.5.1")])
def test_a_release_that_cannot_load_the_model_is_refused_at_engine_version(model, too_old, first):
    """The release each architecture entered vLLM's model registry (read from the PyPI wheels and maintainers'
    statements; docs/sources.md): a setup naming an older release would start no engine, so no figure is given."""
    from pytest_roofline.errors import SetupValueError
    from pytest_roofline.model.setup import build_setup
    with pytest.raises(SetupValueError, match=f"cannot load .*has it from {first}") as exc:
        build_setup(hardware_ref="h100-sxm", model_ref=model, engine={"version": too_old})
    assert exc.value.field == "engine.version"
    build_setup(hardware_ref="h100-sxm", model_ref=model, engine={"version": first})  # the first that loads it


def test_families_in_the_oldest_release_and_unnamed_versions_are_not_refused():
    from pytest_roofline.model.setup import build_setup
    for model in ("mistral-7b", "qwen2.5-7b", "opt-125m", "phi-2", "gemma-2b", "pythia-1.4b", "falcon-7b"):
        assert vd.model_support_problem(build_setup(hardware_ref="h100-sxm", model_ref=model).model.model_type,
                                        "0.4.0") is None
    build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b")  # no engine.version: the newest release


def test_llama_3_1s_rope_scaling_needs_0_5_3_post1():
    """Llama 3.1's config.json has rope_scaling {rope_type: llama3}; the 0.5.3 wheel reads only rope_scaling['type']
    (KeyError 'type'), the 0.5.3.post1 wheel reads both: 0.5.3 is refused, 0.5.3.post1 and 0.5.4 load it."""
    from pytest_roofline.errors import SetupValueError
    from pytest_roofline.model.setup import build_setup
    with pytest.raises(SetupValueError, match="rope_type 'llama3'") as exc:
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"version": "0.5.3"})
    assert exc.value.field == "engine.version"
    with pytest.raises(SetupValueError, match="rope_type 'llama3'"):
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b", engine={"version": "0.4.1"})
    for ok in ("0.5.3.post1", "0.5.4", "0.26.0"):
        build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"version": ok})
    assert vd.model_support_problem("llama", "0.4.0") is None  # Llama 3 (8K, no rope_scaling) loads on 0.4.0


def test_the_catalog_gpus_compute_capability_decides_an_fp8_kv_cache_engine_and_the_source_says_why():
    # 0.8.3-0.10.x keep an FP8 KV cache on V1 where the default attention backend takes it: compute capability 9.x,
    # from 0.10.0 also 10.x (is_kv_cache_dtype_supported); the setup reads the capability from the hardware catalog
    from pytest_roofline.model.setup import build_setup

    def setup(gpu, version, **overrides):
        return build_setup(hardware_ref=gpu, model_ref="llama-3.1-8b", hardware_overrides=overrides or None,
                           engine={"name": "vllm", "version": version, "args": {"kv_cache_dtype": "fp8"}})

    assert setup("h100-sxm", "0.9.2").engine_kind == "v1"
    assert setup("b200", "0.10.1").engine_kind == "v1" and setup("b200", "0.9.2").engine_kind == "v0"
    l40s = setup("l40s", "0.9.2")
    assert l40s.engine_kind == "v0" and setup("l40s", "0.11.0").engine_kind == "v1"
    source = vd.defaults_for("0.9.2", compute_capability=8.9, kv_cache_dtype="fp8", max_model_len=8192,
                             **H100_80).source("engine")
    assert "--kv-cache-dtype fp8 on compute capability 8.9" in source and "9.x only" in source
    # a GPU the catalog lacks, written as an override of its nearest entry: a V100's 7.0 falls back whatever the KV
    v100 = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b",
                       hardware_overrides={"compute_capability": "7.0"}, engine={"name": "vllm", "version": "0.9.2"})
    assert v100.engine_kind == "v0"
    assert "Compute Capability < 8.0 (this GPU: 7)" in vd.defaults_for(
        "0.9.2", compute_capability=7.0, max_model_len=8192, **H100_80).source("engine")
    with pytest.raises(Exception, match="compute capability such as 8.9"):
        build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b",
                    hardware_overrides={"compute_capability": "sm90"}, engine={"name": "vllm", "version": "0.9.2"})
