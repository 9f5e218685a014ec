"""Decode step time against batch and context, and prefill time against length, on a real GPU, for a
Llama-3.1-8B-shaped model with random bf16 weights (no vLLM, no checkpoint: PyTorch alone).

Why: the serving model prices a decode step as weight streaming plus KV reads, each at a fraction of the HBM
bandwidth, and a prefill as matrix work at a fraction of the peak. This script measures those fractions on silicon,
separately, so the model's defaults come from a measurement rather than from one table of end-to-end runs:

- ``copy``      device-to-device copy of 4 GiB: the bandwidth a kernel can reach at all (the ceiling);
- ``weights``   one decode step's weight GEMMs (32 layers: qkv, o, gate_up, down; plus the LM head) at batch B,
                replayed as a CUDA graph (vLLM captures decode steps as graphs), no attention;
- ``kv_dense``  decode attention (one query per sequence) over a contiguous KV cache with
                ``scaled_dot_product_attention``, all 32 layers, at batch B and context L;
- ``kv_paged``  the same KV bytes read through a block table of 16-token blocks scattered over a pool
                (gather, then attention), the access pattern of vLLM's paged KV cache; the gather's own bytes are
                counted once (read) — the write of the gathered copy is reported separately;
- ``step``      a whole decode step (weights and dense attention per layer, then the LM head) at batch B and
                context L, to check that the two terms add up;
- ``prefill``   one full forward (32 layers, causal attention, MLP) of N prompt tokens at batch 1.

Every figure is the median of timed replays after warm-up (CUDA events). Output: one JSON document (``--out``)
holding the shapes, the bytes and FLOPs counted per case, the times, and the derived fractions of the copy
bandwidth and of the dense bf16 peak measured here. ``--tiny`` runs the same code on small shapes on the CPU, so
the script is checked before a GPU is rented.

    python benchmarks/h200_step_sweep.py --out benchmarks/data/h200-step-sweep.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Shape:
    """The transformer's sizes (Llama-3.1-8B's config.json values by default)."""

    layers: int = 32
    hidden: int = 4096
    intermediate: int = 14336
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    vocab: int = 128256

    @property
    def weight_bytes_per_layer(self) -> int:
        qkv = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.intermediate
        return 2 * (qkv + o + mlp)

    @property
    def kv_bytes_per_token_per_layer(self) -> int:
        return 2 * 2 * self.kv_heads * self.head_dim


TINY = Shape(layers=2, hidden=256, intermediate=512, heads=4, kv_heads=2, head_dim=64, vocab=1024)


def timed(fn, *, warmup: int, reps: int, device: torch.device) -> float:
    """Median seconds of ``reps`` calls of ``fn`` after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    samples = []
    if device.type == "cuda":
        torch.cuda.synchronize()
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def graphed(fn, device: torch.device):
    """``fn`` captured as a CUDA graph (as vLLM captures decode steps); ``fn`` itself on the CPU."""
    if device.type != "cuda":
        return fn
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def measure_copy(device: torch.device, gib: float, dtype: torch.dtype) -> dict:
    n = int(gib * 2**30) // 2
    src = torch.empty(n, dtype=dtype, device=device).normal_()
    dst = torch.empty_like(src)
    s = timed(lambda: dst.copy_(src), warmup=3, reps=10, device=device)
    moved = 2 * n * 2  # read + write
    src = dst = None  # free before the next case
    return {"bytes_moved": moved, "seconds": s, "bytes_per_s": moved / s}


def measure_matmul_peak(device: torch.device, n: int, dtype: torch.dtype) -> dict:
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    s = timed(lambda: a @ b, warmup=3, reps=10, device=device)
    return {"n": n, "seconds": s, "flop_per_s": 2 * n**3 / s}


class Weights:
    def __init__(self, shape: Shape, device: torch.device, dtype: torch.dtype) -> None:
        def w(rows: int, cols: int) -> torch.Tensor:
            return (torch.randn(rows, cols, dtype=dtype, device=device) * 0.02).contiguous()

        qkv_out = (shape.heads + 2 * shape.kv_heads) * shape.head_dim
        self.layers = [
            (
                w(qkv_out, shape.hidden),
                w(shape.hidden, shape.heads * shape.head_dim),
                w(2 * shape.intermediate, shape.hidden),
                w(shape.hidden, shape.intermediate),
            )
            for _ in range(shape.layers)
        ]
        self.lm_head = w(shape.vocab, shape.hidden)


def decode_weights_step(shape: Shape, weights: Weights, x: torch.Tensor):
    """The weight GEMMs of one decode step (no attention): x is [B, hidden]."""

    def step() -> None:
        h = x
        for qkv, o, gate_up, down in weights.layers:
            q = h @ qkv.T
            h = q[:, : shape.heads * shape.head_dim] @ o.T
            gu = h @ gate_up.T
            act = F.silu(gu[:, : shape.intermediate]) * gu[:, shape.intermediate :]
            h = act @ down.T
        h @ weights.lm_head.T

    return step


def decode_attention_dense(shape: Shape, batch: int, context: int, device, dtype):
    """One-query decode attention over contiguous K/V, one K/V pair per layer (so nothing is served from L2):
    returns (step, kv_bytes, tensors). The query heads of a GQA group share their K/V head, so the queries are
    laid out as [B, kv_heads, group, d]: exact for decode (no mask), and any SDPA backend takes it."""
    group = shape.heads // shape.kv_heads
    q = torch.randn(batch, shape.kv_heads, group, shape.head_dim, dtype=dtype, device=device)
    kv = [
        (
            torch.randn(batch, shape.kv_heads, context, shape.head_dim, dtype=dtype, device=device),
            torch.randn(batch, shape.kv_heads, context, shape.head_dim, dtype=dtype, device=device),
        )
        for _ in range(shape.layers)
    ]

    def step() -> None:
        for k, v in kv:
            F.scaled_dot_product_attention(q, k, v)

    kv_bytes = shape.layers * batch * context * shape.kv_bytes_per_token_per_layer
    return step, kv_bytes, (q, kv)


def decode_attention_paged(shape: Shape, batch: int, context: int, device, dtype, block: int = 16):
    """The same attention with K/V gathered through a block table from a scattered pool of 16-token blocks
    (one pool per layer), the access pattern of vLLM's paged KV cache."""
    group = shape.heads // shape.kv_heads
    blocks_per_seq = math.ceil(context / block)
    pool_blocks = batch * blocks_per_seq + 64
    pools = [
        (
            torch.randn(pool_blocks, shape.kv_heads, block, shape.head_dim, dtype=dtype, device=device),
            torch.randn(pool_blocks, shape.kv_heads, block, shape.head_dim, dtype=dtype, device=device),
        )
        for _ in range(shape.layers)
    ]
    gen = torch.Generator(device="cpu").manual_seed(0)
    table = torch.randperm(pool_blocks, generator=gen)[: batch * blocks_per_seq].to(device)
    table = table.view(batch, blocks_per_seq)
    q = torch.randn(batch, shape.kv_heads, group, shape.head_dim, dtype=dtype, device=device)

    def gather(pool: torch.Tensor) -> torch.Tensor:
        g = pool[table]  # [B, blocks, kv_heads, block, d]
        return g.permute(0, 2, 1, 3, 4).reshape(batch, shape.kv_heads, blocks_per_seq * block, shape.head_dim)

    def gather_only() -> None:
        for pk, pv in pools:
            gather(pk)
            gather(pv)

    def step() -> None:
        for pk, pv in pools:
            F.scaled_dot_product_attention(q, gather(pk), gather(pv))

    kv_bytes = shape.layers * batch * blocks_per_seq * block * shape.kv_bytes_per_token_per_layer
    return step, gather_only, kv_bytes, (pools, q, table)


def decode_full_step(shape: Shape, weights: Weights, batch: int, context: int, device, dtype):
    """A whole decode step: per layer the weight GEMMs and one-query attention over that layer's contiguous K/V
    (dense reads: the best case for the KV term), then the LM head."""
    group = shape.heads // shape.kv_heads
    x = torch.randn(batch, shape.hidden, dtype=dtype, device=device)
    kv = [
        (
            torch.randn(batch, shape.kv_heads, context, shape.head_dim, dtype=dtype, device=device),
            torch.randn(batch, shape.kv_heads, context, shape.head_dim, dtype=dtype, device=device),
        )
        for _ in range(shape.layers)
    ]

    def step() -> None:
        h = x
        for (qkv, o, gate_up, down), (k, v) in zip(weights.layers, kv):
            qkv_out = h @ qkv.T
            q = qkv_out[:, : shape.heads * shape.head_dim].reshape(batch, shape.kv_heads, group, shape.head_dim)
            a = F.scaled_dot_product_attention(q, k, v)
            h = a.reshape(batch, shape.heads * shape.head_dim) @ o.T
            gu = h @ gate_up.T
            h = (F.silu(gu[:, : shape.intermediate]) * gu[:, shape.intermediate :]) @ down.T
        h @ weights.lm_head.T

    kv_bytes = shape.layers * batch * context * shape.kv_bytes_per_token_per_layer
    return step, kv_bytes, (x, kv)


def prefill_forward(shape: Shape, weights: Weights, tokens: int, device, dtype):
    x = torch.randn(1, tokens, shape.hidden, dtype=dtype, device=device)

    def step() -> None:
        h = x
        for qkv, o, gate_up, down in weights.layers:
            qkv_out = h @ qkv.T
            q = qkv_out[..., : shape.heads * shape.head_dim].view(1, tokens, shape.heads, shape.head_dim)
            kv = qkv_out[..., shape.heads * shape.head_dim :]
            k = kv[..., : shape.kv_heads * shape.head_dim].view(1, tokens, shape.kv_heads, shape.head_dim)
            v = kv[..., shape.kv_heads * shape.head_dim :].view(1, tokens, shape.kv_heads, shape.head_dim)
            group = shape.heads // shape.kv_heads
            a = F.scaled_dot_product_attention(
                q.transpose(1, 2),
                k.transpose(1, 2).repeat_interleave(group, dim=1),
                v.transpose(1, 2).repeat_interleave(group, dim=1),
                is_causal=True,
            )
            h = a.transpose(1, 2).reshape(1, tokens, shape.heads * shape.head_dim) @ o.T
            gu = h @ gate_up.T
            h = (F.silu(gu[..., : shape.intermediate]) * gu[..., shape.intermediate :]) @ down.T
        h[:, -1:] @ weights.lm_head.T

    linear_flops = 2 * tokens * shape.weight_bytes_per_layer // 2 * shape.layers
    attn_flops = shape.layers * 2 * 2 * shape.heads * shape.head_dim * tokens * (tokens + 1) // 2

    return step, linear_flops + attn_flops + 2 * shape.hidden * shape.vocab


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--tiny", action="store_true", help="small shapes on the CPU: checks the script, not the GPU")
    p.add_argument("--budget-s", type=float, default=420.0, help="stop starting new cases after this long")
    args = p.parse_args(argv)

    t_start = time.monotonic()
    device = torch.device("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    shape = TINY if args.tiny else Shape()
    torch.manual_seed(0)
    doc: dict = {
        "made_by": "benchmarks/h200_step_sweep.py",
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu (--tiny check)",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "dtype": str(dtype),
        "shape": asdict(shape),
        "weight_bytes_per_layer": shape.weight_bytes_per_layer,
        "kv_bytes_per_token_per_layer": shape.kv_bytes_per_token_per_layer,
        "timing": "median of CUDA-event-timed replays after warm-up; decode weight steps replayed as CUDA graphs",
    }

    def out_of_time() -> bool:
        return time.monotonic() - t_start > args.budget_s

    def save() -> None:
        doc["elapsed_s"] = round(time.monotonic() - t_start, 1)
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)

    doc["copy"] = measure_copy(device, 0.0625 if args.tiny else 4.0, dtype)
    doc["matmul_peak"] = measure_matmul_peak(device, 256 if args.tiny else 8192, dtype)
    print("copy", doc["copy"], "\nmatmul", doc["matmul_peak"], flush=True)
    save()

    weights = Weights(shape, device, dtype)
    weight_bytes = shape.layers * shape.weight_bytes_per_layer + 2 * shape.vocab * shape.hidden
    doc["weight_bytes"] = weight_bytes
    doc["weights"] = []
    for batch in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]:
        if out_of_time():
            break
        x = torch.randn(batch, shape.hidden, dtype=dtype, device=device)
        fn = graphed(decode_weights_step(shape, weights, x), device)
        s = timed(fn, warmup=3, reps=20, device=device)
        row = {"batch": batch, "seconds": s, "bytes_per_s": weight_bytes / s}
        doc["weights"].append(row)
        print("weights", row, flush=True)
    save()

    doc["kv_dense"], doc["kv_paged"] = [], []
    cases = [
        (1, 1024),
        (1, 8192),
        (8, 1024),
        (8, 4096),
        (32, 1024),
        (32, 4096),
        (64, 2048),
        (128, 1024),
        (128, 2048),
        (256, 1024),
        (512, 512),
        (512, 1024),
    ]
    if args.tiny:
        cases = [(1, 64), (4, 128)]
    for batch, context in cases:
        if out_of_time():
            break
        step, kv_bytes, held = decode_attention_dense(shape, batch, context, device, dtype)
        s = timed(graphed(step, device), warmup=2, reps=10, device=device)
        row = {"batch": batch, "context": context, "kv_bytes": kv_bytes, "seconds": s, "bytes_per_s": kv_bytes / s}
        doc["kv_dense"].append(row)
        print("kv_dense", row, flush=True)
        del held, step
        pstep, gonly, kv_bytes_p, held = decode_attention_paged(shape, batch, context, device, dtype)
        sp = timed(graphed(pstep, device), warmup=2, reps=10, device=device)
        sg = timed(graphed(gonly, device), warmup=2, reps=10, device=device)
        row = {
            "batch": batch,
            "context": context,
            "kv_bytes": kv_bytes_p,
            "seconds": sp,
            "bytes_per_s": kv_bytes_p / sp,
            "gather_seconds": sg,
            "gather_read_bytes_per_s": kv_bytes_p / sg,
        }
        doc["kv_paged"].append(row)
        print("kv_paged", row, flush=True)
        del held, pstep, gonly
        if device.type == "cuda":
            torch.cuda.empty_cache()
        save()

    doc["step"] = []
    step_cases = [
        (1, 512),
        (1, 4096),
        (8, 512),
        (8, 4096),
        (32, 512),
        (32, 2048),
        (64, 512),
        (64, 2048),
        (128, 512),
        (128, 2048),
        (256, 512),
        (256, 2048),
        (512, 512),
        (512, 1024),
    ]
    if args.tiny:
        step_cases = [(1, 64), (4, 128)]
    for batch, context in step_cases:
        if out_of_time():
            break
        step, kv_bytes, held = decode_full_step(shape, weights, batch, context, device, dtype)
        s = timed(graphed(step, device), warmup=2, reps=10, device=device)
        row = {
            "batch": batch,
            "context": context,
            "kv_bytes": kv_bytes,
            "weight_bytes": weight_bytes,
            "seconds": s,
            "bytes_per_s": (kv_bytes + weight_bytes) / s,
        }
        doc["step"].append(row)
        print("step", row, flush=True)
        del held, step
        save()

    doc["prefill"] = []
    for tokens in [16, 64] if args.tiny else [128, 256, 512, 1024, 2048, 4096, 8192]:
        if out_of_time():
            break
        step, flops = prefill_forward(shape, weights, tokens, device, dtype)
        s = timed(step, warmup=2, reps=5, device=device)
        row = {
            "tokens": tokens,
            "flops": flops,
            "seconds": s,
            "flop_per_s": flops / s,
            "fraction_of_matmul_peak": flops / s / doc["matmul_peak"]["flop_per_s"],
        }
        doc["prefill"].append(row)
        print("prefill", row, flush=True)
        save()

    copy_bw = doc["copy"]["bytes_per_s"]
    doc["summary"] = {
        "weights_fraction_of_copy": {r["batch"]: round(r["bytes_per_s"] / copy_bw, 3) for r in doc["weights"]},
        "kv_dense_fraction_of_copy": {
            f"{r['batch']}x{r['context']}": round(r["bytes_per_s"] / copy_bw, 3) for r in doc["kv_dense"]
        },
        "kv_paged_fraction_of_copy": {
            f"{r['batch']}x{r['context']}": round(r["bytes_per_s"] / copy_bw, 3) for r in doc["kv_paged"]
        },
    }
    save()
    print(json.dumps(doc["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
