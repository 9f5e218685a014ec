"""vLLM defaults by version and device, against the values read from vLLM's source at each release tag
(github.com/vllm-project/vllm: vllm/engine/arg_utils.py get_batch_defaults, vllm/config/cache.py,
vllm/platforms/cpu.py)."""

from __future__ import annotations

import re

import pytest

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
    assert vd.default_enable_prefix_caching("0.8.5") is None
    assert vd.default_enable_chunked_prefill("0.26.0") is True
    assert vd.default_enable_chunked_prefill("0.33.0", encoder_decoder=True) is False
    assert vd.default_enable_chunked_prefill("0.9.2") is None


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
        assert re.search(r"vLLM v0\.\d+: vllm/[\w/]+\.py", d.source(name)), name
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


def test_defaults_for_old_version_is_marked():
    d = vd.defaults_for("0.8.5", **A100_80)
    assert d.gpu_memory_utilization == 0.9
    assert d.cuda_graph_memory_budgeted is False
    assert d.enable_prefix_caching is None
    assert "pre-0.10" in d.source("max_num_seqs")
