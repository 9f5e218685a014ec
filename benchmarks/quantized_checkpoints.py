"""Quantized checkpoints: the model's weight bytes and KV block counts against published figures.

Each row builds the setup through the public path (``build_setup``) and prints the model's weights (GiB, plus the
rotary cos/sin cache vLLM counts with them where the published figure is vLLM's) and, for the vLLM 0.5.4 runs, the
``# GPU blocks`` predicted from the bf16 run of the same benchmark (which pins the GPU's budget and the profile's
activations, both unprinted), next to the published values.

Sources:
* transformers docs, compressed-tensors page: nm-testing/Meta-Llama-3.1-8B-Instruct-FP8-hf loads as 8.4575 GB
  (÷ 2**30) of parameters (huggingface.co/docs/transformers/quantization/compressed_tensors);
* The Kaitchup, vLLM 0.5.4 benchmark_throughput runs of Llama-3.1-8B-Instruct and 4-bit checkpoints on one H100
  (kaitchup.substack.com/p/the-best-quantization-methods-to; logs reproduced in github.com/xinyuwei-david/
  david-share, Deep-Learning/Quantization-Methods-Comparison-and-Practice).

    .venv/bin/python benchmarks/quantized_checkpoints.py

No engine, no GPU, no network.
"""

from __future__ import annotations

from pytest_roofline.model.setup import Setup, build_setup, kv_accounting
from pytest_roofline.units import GIB

#: vLLM's rotary cos/sin cache of Llama-3.1 (131,072 positions x 128 x 2 B), inside its "model weights" figure
ROTARY_GIB = 131_072 * 128 * 2 / GIB

FP8_STATIC = {
    "config_groups": {"group_0": {
        "input_activations": {"num_bits": 8, "strategy": "tensor", "type": "float"},
        "targets": ["Linear"], "weights": {"num_bits": 8, "strategy": "tensor", "type": "float"}}},
    "format": "naive-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors"}

#: (label, model override quantization or vLLM --quantization name, published weights GiB, published blocks)
KAITCHUP = (
    ("bf16 (the anchor run)", None, 14.9888, 9_930),
    ("kaitchup awq-4bit (AWQ g128)", {"method": "awq", "bits": 4, "group_size": 128}, 5.3748, 14_846),
    ("kaitchup gptq-4bit (sym, gptq_marlin)", {"method": "gptq", "bits": 4, "group_size": 128}, 5.3494, 14_858),
    ("kaitchup autoround-gptq-4bit-asym", {"method": "gptq", "bits": 4, "group_size": 128, "zero_point": True},
     5.3767, 14_774),
    ("bf16 + -q bitsandbytes (NF4, DQ)", "bitsandbytes", 5.3421, 14_821),
)


def _setup(quant: object, budget: float | None = None) -> Setup:
    overrides = {"quantization": quant} if isinstance(quant, dict) else {}
    args: dict[str, object] = {"max_model_len": 512, "dtype": "float16" if isinstance(quant, dict) else "bfloat16"}
    if isinstance(quant, str):
        args["quantization"] = quant
    engine: dict[str, object] = {"version": "0.5.4", "args": args}
    hw_over = None
    if budget is not None:
        args["gpu_memory_utilization"] = 1.0
        engine["reserves"] = {"activation": 0, "non_torch": 0, "cuda_graphs": 0}
        hw_over = {"memory_bytes": int(budget)}
    return build_setup(hardware_ref="h100-sxm", hardware_overrides=hw_over, model_ref="llama-3.1-8b",
                       model_overrides=overrides, engine=engine)


def main() -> None:
    rows: list[tuple[str, float, float, int | None, int | None]] = []
    fp8 = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", model_overrides={"quantization": FP8_STATIC})
    rows.append(("FP8 static (transformers)", fp8.weight_bytes / GIB, 8.4575, None, None))
    bf16 = _setup(None)
    block = bf16.bytes_per_block
    budget = bf16.weight_bytes + 9_930 * block + block // 2  # the bf16 run's weights + KV, mid-block
    for label, quant, pub_gib, pub_blocks in KAITCHUP:
        s = _setup(quant, budget)
        rows.append((label, s.weight_bytes / GIB + ROTARY_GIB, pub_gib, kv_accounting(s).num_blocks, pub_blocks))
    print(f"{'checkpoint':40} {'weights GiB':>11} {'published':>9} {'err':>7}   {'blocks':>7} {'published':>9} "
          f"{'err':>7}")
    for label, w, pw, b, pb in rows:
        line = f"{label:40} {w:11.4f} {pw:9.4f} {100 * (w / pw - 1):+6.2f}%"
        if b is not None and pb is not None:
            anchor = "  (anchor)" if pb == 9_930 else ""
            line += f"   {b:7,} {pb:9,} {100 * (b / pb - 1):+6.2f}%{anchor}"
        print(line)


if __name__ == "__main__":
    main()
