"""Per-rank memory that tensor parallelism adds to vLLM's non-torch reserve (issue 22, item 1d):
analytical.tp_non_torch_bytes and its use in setup.kv_accounting."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import build_setup, kv_accounting

GIB = 1024**3


def test_the_tp_reserve_reproduces_the_published_figures():
    # vLLM PR #10511: non_torch 1.79 GiB at TP 1, 3.58 GiB per worker at TP 2 on an 80 GB NVLink GPU
    assert an.tp_non_torch_bytes(2, "NVLink 3 (600 GB/s)") == pytest.approx(3.58 * GIB - 1.79 * GIB, rel=1e-3)
    # NVLS at 8 ranks: nvlsTotalSize 2415919104 per communicator (vllm issue #9699's NCCL log), two communicators
    nvls8 = an.tp_non_torch_bytes(8, "NVLink 4 (900 GB/s)") - an.TP_NVLINK_NON_TORCH_BYTES
    assert nvls8 == 2 * 2_415_919_104
    # ... which is within 10% of the ~4.9 GiB per rank the same issue's H200 run lost with NVLS on (5,100+ blocks
    # of Llama-3.1-405B's 126 layers x 1 KV head x 128 x 2 (K, V) x 2 bytes x 16 tokens at TP 8)
    block = 126 * 1 * 128 * 2 * 2 * 16
    assert nvls8 == pytest.approx(5_105 * block, rel=0.10)


@pytest.mark.parametrize("tp, interconnect, expected_gib", [
    (1, "NVLink 4 (900 GB/s)", 0.0),                       # no group at TP 1
    (4, "PCIe Gen4 x16 (64 GB/s)", 0.0),                   # PCIe parts: no NVLink buffers
    (2, "NVLink 4 (900 GB/s)", 1.79),                      # NCCL enables NVLS only above 2 GPUs
    (4, "NVLink 3 (600 GB/s)", 1.79),                      # A100: no NVLS (H100 and later)
    (4, "NVLink 4 bridge (600 GB/s); PCIe Gen5 x16 (128 GB/s)", 1.79),  # a bridge: no NVSwitch
    (4, "NVLink 4 (900 GB/s)", 1.79 + 2 * 4 * 301_989_888 / GIB),      # H100 SXM at TP 4: + 2.25 GiB
    (4, "NVLink 4, export-limited (400 GB/s)", 1.79 + 2 * 4 * 301_989_888 / GIB),
])
def test_the_tp_reserve_by_interconnect(tp, interconnect, expected_gib):
    assert an.tp_non_torch_bytes(tp, interconnect) / GIB == pytest.approx(expected_gib, abs=0.005)


def test_kv_accounting_charges_each_rank_its_tp_reserve():
    def acc(tp):
        return kv_accounting(build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b",
                                         engine={"name": "vllm", "version": "0.9.2",
                                                 "args": {"tensor_parallel_size": tp, "max_model_len": 8192}}))
    a2, a4 = acc(2), acc(4)
    assert a2.non_torch_bytes == an.DEFAULT_NON_TORCH_BYTES + int(1.79 * GIB)
    assert a4.non_torch_bytes == an.DEFAULT_NON_TORCH_BYTES + int(1.79 * GIB) + 8 * 301_989_888
    # an explicit non_torch reserve (a measured one) replaces the default, TP share included
    s = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-70b",
                    engine={"name": "vllm", "version": "0.9.2",
                            "args": {"tensor_parallel_size": 4, "max_model_len": 8192}})
    assert kv_accounting(dataclasses.replace(s, non_torch_bytes=float(GIB))).non_torch_bytes == GIB
