"""``roofline init``'s derivations are worked with the setup's own numbers (trial s13, item 4): the weight-only
knee of an FP8, an AWQ or an MoE checkpoint is ridge × weight bytes ÷ FLOPs per token, not the ridge, and every
derivation ends with the number the model checks the ink against, so a user who inks what the derivation says
passes ``pytest FILE``'s math check.

The figures below are worked out by hand from the presets' config.json (model/data/presets) and the catalog's
datasheet figures (H100 SXM: 3.35 TB/s, 989 TFLOP/s bf16/fp16, 1,979 TFLOP/s fp8):

* Llama-3.1-8B (FP8 and AWQ checkpoints alike): P = 8,030,261,248, so FLOPs per token 2P = 16,060,522,496. The
  quantized linears (q/k/v/o, gate/up/down of 32 layers) hold 6,979,321,856 parameters; the embedding and the
  untied lm_head 2 × 128,256 × 4,096 = 1,050,673,152 and the norms (2 × 32 + 1) × 4,096 = 266,240 stay 2-byte.
* FP8 (compressed-tensors W8A8, one fp32 scale per linear: 7 × 32 × 4 B = 896 B):
  W = 6,979,321,856 + 2 × 1,050,939,392 + 896 = 9,081,201,536 B; ridge 1,979e12 ÷ 3.35e12 = 590.75;
  B* = 590.75 × 9,081,201,536 ÷ 16,060,522,496 = 334.0 (the ridge would be 590.7).
* AWQ (W4A16, group 128, fp16 scale + 4-bit zero point a group, matmuls at fp16): groups a layer
  4,096·32 + 2·1,024·32 + 4,096·32 + 2·14,336·32 + 4,096·112 = 1,703,936, × 32 layers = 54,525,952 groups at
  2.5 B = 136,314,880 B; W = 6,979,321,856 ÷ 2 + 136,314,880 + 2 × 1,050,939,392 = 5,727,854,592 B;
  ridge 989e12 ÷ 3.35e12 = 295.22; B* = 295.22 × 5,727,854,592 ÷ 16,060,522,496 = 105.3.
* Qwen3-30B-A3B at TP 2: hidden 2,048, 48 layers, 32 × 128 query and 4 × 128 KV dims, 128 experts of
  3 × 2,048 × 768 = 4,718,592, top-8, vocabulary 151,936 (untied). A layer: attention 18,874,368 + q/k norms 256
  + 2 norms 4,096 + router 262,144 = 19,140,864, + 8 experts (active) or 128 (all). Active
  P_a = 48 × 56,889,600 + 2,048 + 2 × 311,164,928 = 3,353,032,704; P = 48 × 623,120,640 + 2,048 + 622,329,856 =
  30,532,122,624. Per GPU: W = 2P ÷ 2 = 30,532,122,624 B (every expert read), FLOPs 2 P_a ÷ 2 = 3,353,032,704;
  B* = 295.22 × 30,532,122,624 ÷ 3,353,032,704 = 2,688.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_roofline.cli.init import render
from pytest_roofline.format.spec import load_spec
from pytest_roofline.scoring import VerdictStatus, score

H100_BW, BF16, FP8 = 3.35e12, 989e12, 1979e12
P8 = 8_030_261_248
LINEARS8 = 6_979_321_856
REST8 = 2 * 128_256 * 4_096 + (2 * 32 + 1) * 4_096  # 1,050,939,392 at 2 bytes
W_FP8 = LINEARS8 + 2 * REST8 + 7 * 32 * 4
AWQ_GROUPS = 32 * (4_096 * 32 + 2 * 1_024 * 32 + 4_096 * 32 + 2 * 14_336 * 32 + 4_096 * 112)
W_AWQ = LINEARS8 // 2 + AWQ_GROUPS * 5 // 2 + 2 * REST8
QWEN_ACTIVE = 48 * (19_140_864 + 8 * 4_718_592) + 2_048 + 2 * 151_936 * 2_048
QWEN_P = 48 * (19_140_864 + 128 * 4_718_592) + 2_048 + 2 * 151_936 * 2_048

CASES = {  # (gpu, preset, tp): the weight-only knee by hand
    ("h100", "llama-3.1-8b-instruct-fp8", 1): FP8 / H100_BW * W_FP8 / (2 * P8),
    ("h100", "llama-3.1-8b-instruct-awq-int4", 1): BF16 / H100_BW * W_AWQ / (2 * P8),
    ("h100-sxm", "qwen3-30b-a3b", 2): BF16 / H100_BW * QWEN_P / QWEN_ACTIVE,
}


def _derivations(text: str) -> dict[str, str]:
    out, current = {}, ""
    for line in text.splitlines():
        if m := re.match(r"  - id: (\S+)", line):
            current = m[1]
        if m := re.match(r"    # derivation: (.*)", line):
            out[current] = m[1]
    return out


def _own_number(derivation: str) -> str:
    """The number a derivation ends with: the last ``= N [unit]`` in it, ``none`` where it ends so, and Little's
    law's 1.00."""
    if derivation.endswith(": none"):
        return "none"
    if "gives back C" in derivation:
        return "1.00"
    found = re.findall(r"= (-?[\d,]+(?:\.\d+)?(?: (?:GB|MB|kB|B|FLOP/byte|tok/s))?)", derivation)
    assert found, derivation
    return str(found[-1])


def test_the_hand_figures_add_up() -> None:
    assert W_FP8 == 9_081_201_536 and AWQ_GROUPS == 54_525_952 and W_AWQ == 5_727_854_592
    assert QWEN_ACTIVE == 3_353_032_704 and QWEN_P == 30_532_122_624
    assert [round(v, 1) for v in CASES.values()] == [334.0, 105.3, 2688.3]


@pytest.mark.parametrize(("gpu", "model", "tp"), list(CASES))
def test_the_weight_only_knee_derivation_is_ridge_times_weight_bytes_over_flops(gpu: str, model: str,
                                                                               tp: int) -> None:
    d = _derivations(render(gpu=gpu, model=model, tp=tp))["naive-knee"]
    assert "intensity ≈ B" not in d and "B* = ridge ×" in d
    assert d.endswith(f"= {CASES[gpu, model, tp]:,.1f}") or d.endswith(f"= {CASES[gpu, model, tp]:,.0f}")
    assert float(_own_number(d).replace(",", "")) == pytest.approx(CASES[gpu, model, tp], rel=5e-4)


def test_the_derivations_show_the_setups_numbers() -> None:
    fp8 = _derivations(render(gpu="h100", model="llama-3.1-8b-instruct-fp8"))
    assert "590.7 × 9.081 GB ÷ 16.06 GFLOP = 334.0" in fp8["naive-knee"]
    assert "1.769 × B FLOP/byte" in fp8["naive-knee"]  # 16,060,522,496 ÷ 9,081,201,536
    assert fp8["weights"].endswith("= 9.081 GB, not P × 1 byte")
    assert f"{LINEARS8:,} params × 1 byte (fp8)" in fp8["weights"] and f"{REST8:,} params" in fp8["weights"]
    assert "peak 1,979 TFLOP/s (fp8)" in fp8["ridge"]
    awq = _derivations(render(gpu="h100", model="llama-3.1-8b-instruct-awq-int4"))
    assert f"{LINEARS8:,} params × 0.5 bytes (int4)" in awq["weights"] and "= 5.728 GB" in awq["weights"]
    assert "peak 989 TFLOP/s (fp16: W4A16 multiplies at the activation dtype)" in awq["ridge"]
    moe = _derivations(render(gpu="h100-sxm", model="qwen3-30b-a3b", tp=2))
    assert f"2 × {QWEN_ACTIVE:,} active params" in moe["naive-knee"]
    assert "every expert" in moe["naive-knee"] and "0.1098 × B FLOP/byte" in moe["naive-knee"]
    # the KV asymptote is the active FLOPs over the KV: 3,353,032,704 ÷ (1,536 × 48 × 2 × 128 × 2 B) = 44.41
    assert moe["kv-intensity-asymptote"].startswith("FLOPs per token 6.706 GFLOP")
    assert f"= {QWEN_ACTIVE / (1536 * 49_152):.2f} FLOP/byte" in moe["kv-intensity-asymptote"]


@pytest.mark.parametrize(("gpu", "model", "tp"), [*CASES, ("h100-sxm", "llama-3.1-70b", 4),
                                                   ("h100", "deepseek-v2-lite", 1), ("h100", "gemma-2-9b", 1)])
def test_inking_each_derivations_own_number_passes_the_math_check(gpu: str, model: str, tp: int,
                                                                  tmp_path: Path) -> None:
    text = render(gpu=gpu, model=model, tp=tp, input_len=512 if tp == 4 else 1024,
                  output_len=64 if tp == 4 else 1024)  # 70B at TP 4, 544 tokens: a knee (470.8), not none
    derivations = _derivations(text)
    out, current = [], ""
    for line in text.splitlines():
        if m := re.match(r"  - id: (\S+)", line):
            current = m[1]
        if line.startswith("    predicted:"):
            line = f"    predicted: {_own_number(derivations[current])}"
        out.append(line)
    f = tmp_path / "ink.yaml"
    f.write_text("\n".join(out) + "\n")
    spec = load_spec(f)
    verdicts = {p.id: score(spec, p, "math") for p in spec.predictions}
    assert {i: v.status for i, v in verdicts.items() if v.status != VerdictStatus.PASS} == {
        f"littles-law[concurrency={c}]": VerdictStatus.SKIP for c in (1, 4, 16, 64)}
    if tp == 4:
        assert _own_number(derivations["knee"]) == "470.8"
