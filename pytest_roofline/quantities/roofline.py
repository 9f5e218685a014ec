"""The decode roofline's quantities: the setup's facts (ridge, parameters, weight and KV bytes, GPUs), the
decode step at batch B (times, intensities, bytes, FLOPs, which roof binds, throughput), and the roofline's
landmarks (asymptotes, the compute roof, per-sequence costs), read from ``Setup.roofline_landmarks``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.analysis import Thresholds
from pytest_roofline.quantities.declare import (
    client_measured,
    decode_step,
    fact,
    flop_gpu,
    kv_seq,
    kv_seq_gpu,
    roofline_inputs,
    serve_point,
    step_quantity,
    weights_gpu,
)
from pytest_roofline.quantities.measurement import Measurement
from pytest_roofline.quantities.quantity import MeasuredValue, ModelValue, Quantity, QuantityKind, QuantityPoints


def _ridge(setup: Setup, at: Mapping[str, Any]) -> float:
    dtype = at.get("dtype") or setup.compute_dtype
    return an.ridge_flop_per_byte(setup.hardware.peak_for(dtype), setup.hbm_bytes_per_s)


def _attainable(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    s = decode_step(setup, at)
    return ModelValue(s.flops / s.t_step_s, roofline_inputs(setup, at), "decode FLOPs ÷ modelled step time")


def _utilisation(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    s = decode_step(setup, at)
    return ModelValue(s.flops / s.t_step_s / setup.peak_flop_per_s, roofline_inputs(setup, at),
                      "attainable FLOP/s ÷ peak FLOP/s")


def _measured_output_tput(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    return client_measured(meas, at, th, ("output_throughput_tok_s",), "output throughput", setup)


def _measured_per_request(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    return client_measured(meas, at, th, ("per_request_output_tok_s", "mean"), "per-request throughput", setup)


#: the family, in the registry's order
QUANTITIES: tuple[Quantity, ...] = (
    fact("ridge_point", "intensity", "peak FLOP/s ÷ peak HBM bytes/s: the intensity where a kernel turns compute-bound",
         _ridge, at=("dtype",)),
    fact("param_count", "count", "total parameters, computed from the architecture",
         lambda s, a: s.model.param_count()),
    fact("active_param_count", "count", "parameters touched per token (MoE: routed experts only)",
         lambda s, a: s.model.active_param_count()),
    fact("weight_bytes", "bytes", "bytes of weights read per decode step (all parameters × bytes/param)",
         lambda s, a: s.weight_bytes),
    fact("flop_per_token", "flops", "linear FLOPs per generated token, 2 × active parameters",
         lambda s, a: s.flop_per_token),
    fact("kv_bytes_per_token", "bytes", "KV-cache bytes per token: 2 × layers × kv_heads × head_dim × bytes",
         lambda s, a: s.kv_bytes_per_token),
    fact("kv_bytes_per_seq", "bytes", "KV-cache bytes of one sequence at the KV context", kv_seq, at=("context",)),
    fact("kv_bytes_per_block", "bytes", "bytes of one vLLM KV block over all layers (page size × layers; one GPU's: "
         "its KV heads under TP, its stage's layers under PP)", lambda s, a: s.bytes_per_block),
    fact("weight_bytes_per_gpu", "bytes", "weight bytes one GPU holds: weight_bytes ÷ TP (+ K/V heads replicated when "
         "TP > KV heads; the largest pipeline stage's under PP); = weight_bytes on one GPU",
         lambda s, a: s.weight_bytes_per_gpu),
    fact("kv_bytes_per_token_per_gpu", "bytes", "KV bytes per token one GPU holds: its KV heads (replicated when TP > "
         "KV heads) × its stage's layers; = kv_bytes_per_token on one GPU", lambda s, a: s.kv_bytes_per_token_per_gpu),
    fact("num_gpus", "count", "GPUs one engine uses: tensor_parallel_size × pipeline_parallel_size",
         lambda s, a: s.num_gpus),
    step_quantity("decode_intensity", "intensity", "KV-inclusive arithmetic intensity of a decode step at batch B",
                  "intensity_flop_per_byte"),
    step_quantity("weight_only_intensity", "intensity",
                  "weight-only arithmetic intensity of a decode step (KV ignored)",
                  "weight_only_intensity_flop_per_byte"),
    step_quantity("t_mem", "time", "memory time of a decode step: (weights + B × KV per seq) ÷ bandwidth", "t_mem_s"),
    step_quantity("t_comp", "time", "compute time of a decode step: B × 2P ÷ peak FLOP/s", "t_comp_s"),
    step_quantity("t_step", "time", "modelled decode step time, max(t_mem, t_comp) (+ t_allreduce under TP)",
                  "t_step_s"),
    step_quantity("t_allreduce", "time", "all-reduce time of a decode step at batch B under TP: 2 per layer of B × "
                  "hidden × 2 bytes, ring: 2 (N-1)/N × bytes ÷ one link direction + latency per call (0 on one GPU)",
                  "t_allreduce_s"),
    step_quantity("decode_bytes", "bytes", "bytes moved by one decode step (weights + KV; one GPU's under TP)",
                  "bytes_moved"),
    step_quantity("decode_flops", "flops", "linear FLOPs of one decode step (one GPU's under TP)", "flops"),
    step_quantity("kv_total_bytes", "bytes", "KV bytes read by one decode step at batch B (one GPU's under TP)",
                  "kv_total_bytes"),
    step_quantity("decode_bound", "ratio", "which roof binds a decode step: memory or compute", "bound",
                  kind=QuantityKind.ENUM,
                  choices=("memory", "compute")),
    Quantity("attainable_flop_rate", "flop_rate", "FLOP/s a decode step attains under the roofline",
             at=("batch", "concurrency", "context"), model=_attainable),
    Quantity("compute_utilization", "ratio", "attainable ÷ peak FLOP/s of a decode step",
             at=("batch", "concurrency", "context"), model=_utilisation),
    step_quantity("output_throughput", "throughput", "aggregate output tokens/s at batch/concurrency B or an "
                  "open-loop rate (model: B ÷ t_step, none at a rate; measured: the sweep point's output throughput)",
                  "throughput_tok_per_s",
                  measure=_measured_output_tput, points=QuantityPoints.AT,
                  serving=serve_point("output_throughput_tok_per_s"), replicas="total"),
    step_quantity("per_request_throughput", "throughput", "output tokens/s each request sees at B or an open-loop "
                  "rate (model: 1 ÷ t_step, none at a rate; measured: mean per-request output tok/s)",
                  "per_request_tok_per_s",
                  measure=_measured_per_request, points=QuantityPoints.AT,
                  serving=serve_point("per_request_output_tok_per_s")),
    fact("intensity_asymptote", "intensity", "limit of the KV-inclusive intensity as B → ∞: 2P ÷ KV bytes per seq "
         "(per GPU under TP)",
         lambda s, a: s.roofline_landmarks(a.get("context")).intensity_asymptote_flop_per_byte, at=("context",)),
    fact("half_saturation_batch", "count", "batch where throughput reaches half its asymptote: weights ÷ KV per seq "
         "(per GPU under TP)",
         lambda s, a: s.roofline_landmarks(a.get("context")).half_saturation_batch, at=("context",)),
    fact("throughput_asymptote", "throughput", "memory-bound throughput limit: bandwidth ÷ KV bytes per seq (one GPU's "
         "bandwidth ÷ its share of the KV under TP: the group's throughput)",
         lambda s, a: s.roofline_landmarks(a.get("context")).throughput_asymptote_tok_per_s, at=("context",)),
    fact("compute_roof", "throughput",
         "compute-bound throughput limit: peak FLOP/s ÷ 2P (TP × peak ÷ 2P for the group)",
         lambda s, a: s.roofline_landmarks().compute_roof_tok_per_s),
    fact("t_comp_per_seq", "time", "compute time each added sequence costs a decode step",
         lambda s, a: flop_gpu(s) / s.peak_flop_per_s),
    fact("t_mem_per_seq", "time", "memory time each added sequence costs a decode step (its KV read)",
         lambda s, a: kv_seq_gpu(s, a) / s.hbm_bytes_per_s, at=("context",)),
    fact("t_mem_intercept", "time", "memory time of the weight read alone (B → 0; one GPU's share under TP)",
         lambda s, a: weights_gpu(s) / s.hbm_bytes_per_s),
)
