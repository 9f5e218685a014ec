"""A newcomer's first prediction file (issue 24): the ink for ``roofline init``'s file for Qwen/Qwen2.5-14B-Instruct
on an H100 SXM, worked out by hand, and the filler that writes it on the blank ``predicted:`` lines (used by
tests/unit/test_init.py and tests/integration/test_first_file.py).

Qwen/Qwen2.5-14B-Instruct (support/hf_cache.py: P = 14,770,033,664, 196,608 B of KV per token) on an H100 SXM
(3.35 TB/s, 989 TFLOP/s bf16), 1024 in / 1024 out, so 1,536 tokens of KV per sequence (input + output ÷ 2): weights
2P = 29.540 GB; ridge 989e12 ÷ 3.35e12 = 295.2; batch-1 ceiling 3.35e12 ÷ 29.540e9 = 113.4 tok/s; KV per sequence
1,536 × 196,608 = 301,989,888 B, so the asymptote 2P ÷ that = 97.82 FLOP/B < ridge: no knee; the roofline
f(B) = 3.35e12 × B ÷ (29.540e9 + B × 301,989,888 B). The KV block count is the one value taken from the model's own
comment (vLLM's reserves are the model's, tested in tests/unit/test_kv_published.py).
"""

from __future__ import annotations

import re

from support.hf_cache import QWEN25_14B_PARAMS

P = QWEN25_14B_PARAMS
W = 2 * P
KV_SEQ = 1536 * 196_608
BW = 3.35e12


def _roofline(b: int) -> float:
    return BW * b / (W + b * KV_SEQ)


HAND_INK = {
    "params": f"{P / 1e9:.2f}e9",
    "weights": f"{W / 1e9:.2f} GB",
    "kv-bytes-per-token": "196,608 B",
    "ridge": f"{989e12 / BW:.1f} FLOP/byte",
    "naive-knee": f"{989e12 / BW:.0f}",
    "kv-intensity-asymptote": f"{W / KV_SEQ:.2f} FLOP/byte",
    "knee": "none",
    "batch1-ceiling": f"{BW / W:.1f} tok/s",
    "throughput-c4": f"{_roofline(4):,.0f} tok/s",
    "throughput-c16": f"{_roofline(16):,.0f} tok/s",
    "throughput-c64": f"{_roofline(64):,.0f} tok/s",
    "littles-law": "1.00",
}


def fill(text: str, ink: dict[str, str]) -> str:
    """Write each prediction's ink on its blank ``predicted:`` line: the hand value, else the model's comment."""
    out, current, model = [], "", ""
    for line in text.splitlines():
        if m := re.match(r"  - id: (\S+)", line):
            current = m[1]
        if m := re.match(r"    # model: ([^;]+)", line):
            model = m[1].strip()
        if line.startswith("    predicted:"):
            line = f"    predicted: {ink.get(current, model)}"
        out.append(line)
    return "\n".join(out) + "\n"
