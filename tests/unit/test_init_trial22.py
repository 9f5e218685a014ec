"""``roofline init`` after trial 22: the max_model_len it writes is one its own setup starts with, for a
sliding-window model too (M1), and a throughput ceiling at a concurrency shows the serving model's value and the
band the CPU-only check judges its ink against (M6).

The expectations are the refusal rule's (``model.setup.max_model_len_problem``, the check a prediction file is held
to) and the scorer's verdicts on the written file with ink filled in: not init's own search or text."""

from __future__ import annotations

import re

import pytest

from pytest_roofline.cli.init import render
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model.setup import build_setup, kv_accounting, max_model_len_problem, reported_kv
from pytest_roofline.scoring import VerdictStatus, score


def _setup(gpu: str, model: str, mml: int | None, **args: int):
    engine_args = {**args, **({"max_model_len": mml} if mml else {})}
    return build_setup(hardware_ref=gpu, model_ref=model, workload={"input_len": 1024, "output_len": 1024},
                       engine={"name": "vllm", "args": engine_args})


def _written(text: str) -> int:
    m = re.search(r"^  args: \{(?:tensor_parallel_size: \d+, )?max_model_len: (\d+)\}$", text, re.M)
    assert m, text[:2000]
    return int(m.group(1))


# -- M1 ----------------------------------------------------------------------------------------------------------
def test_a_sliding_window_models_max_model_len_is_one_its_pool_holds() -> None:
    text = render(gpu="h100", model="gemma-3-27b")
    mml = _written(text)
    # the trial's file wrote 107,520, which the pool at that length (98,807 tokens) does not hold
    assert mml != 107_520 and mml % 1024 == 0
    assert max_model_len_problem(_setup("h100-sxm", "gemma-3-27b", mml)) is None  # starts
    assert max_model_len_problem(_setup("h100-sxm", "gemma-3-27b", mml + 1024)) is not None  # the next does not
    assert "# warning" not in text.split("predictions:")[0]
    # the comment's "up to N": the longest that starts, a whole number, and one token more does not
    up_to = int(re.search(r"write your own, up to ([\d,]+)", text)[1].replace(",", ""))
    assert mml <= up_to < mml + 1024
    assert max_model_len_problem(_setup("h100-sxm", "gemma-3-27b", up_to)) is None
    assert max_model_len_problem(_setup("h100-sxm", "gemma-3-27b", up_to + 1)) is not None
    # the pool at the default and at the written length, as the comment says
    default = _setup("h100-sxm", "gemma-3-27b", None)
    at_default = reported_kv(default, kv_accounting(default), 131_072).kv_cache_tokens
    written = _setup("h100-sxm", "gemma-3-27b", mml)
    at_mml = reported_kv(written, kv_accounting(written), mml).kv_cache_tokens
    assert at_mml < at_default  # the sliding window: fewer tokens at a shorter max_model_len
    assert f"the KV pool holds {at_default:,} tokens" in text and f"it holds {at_mml:,}" in text
    # and the file it wrote is read without the refusal (its blanks are its only errors)
    filled = re.sub(r"^    predicted:.*$", "    predicted: model", text, flags=re.M)
    loads_spec(filled, file="g.yaml")


@pytest.mark.parametrize(("gpu", "model", "tp", "expected"), [
    # full attention: the pool's tokens do not depend on max_model_len, so the value is the largest multiple of
    # 1,024 below the pool at the default, as before: 27,728 -> 27,648 (qwen3-8b, L4), 9,952 -> 9,216 (70B, TP 2)
    ("l4", "qwen3-8b", 1, 27_648), ("h100", "llama-3.1-70b", 2, 9_216)])
def test_a_full_attention_models_value_is_unchanged(gpu: str, model: str, tp: int, expected: int) -> None:
    text = render(gpu=gpu, model=model, tp=tp)
    assert _written(text) == expected
    hw = "h100-sxm" if gpu == "h100" else gpu
    args = {"tensor_parallel_size": tp} if tp > 1 else {}
    default = _setup(hw, model, None, **args)
    held = reported_kv(default, kv_accounting(default), None).kv_cache_tokens
    assert expected == held // 1024 * 1024
    assert f"up to {held:,})" in text and "sliding-window" not in text.split("predictions:")[0]


# -- M6 ----------------------------------------------------------------------------------------------------------
def _fill(text: str, ink: dict[str, str]) -> str:
    """Each blank: the given ink, else the model's own comment value (a pass at the math tolerance)."""
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


def _serving_line(text: str, pid: str) -> str:
    block = text.split(f"  - id: {pid}\n", 1)[1].split("  - id: ", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("    # serving model: ")]
    assert len(lines) == 1, block
    return lines[0]


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def test_a_throughput_ceiling_shows_the_serving_models_value_and_band() -> None:
    text = render(gpu="h100", model="llama-3.1-8b")
    m = re.match(r"    # serving model: ([\d,.]+) tok/s, band ([\d,.]+)–([\d,.]+) tok/s", _serving_line(
        text, "throughput-c64"))
    assert m, _serving_line(text, "throughput-c64")
    value, lo, hi = (_num(g) for g in m.groups())
    assert lo < value < hi < 7_407  # below the roofline ceiling the line above it gives
    for pid in ("throughput-c4", "throughput-c16"):
        assert re.match(r"    # serving model: [\d,.]+ tok/s, band [\d,.]+–[\d,.]+ tok/s", _serving_line(text, pid))
    # the scorer judges ink at C = 64 against that band: just inside passes, just outside fails, and the
    # verdict's own serving value and band are the ones the comment shows (to its 4 significant figures)
    for ink, passes in ((hi * 0.995, True), (lo * 1.005, True), (hi * 1.02, False), (lo * 0.98, False)):
        spec = loads_spec(_fill(text, {"throughput-c64": f"{ink:.1f} tok/s"}), file="l8.yaml")
        [pred] = [p for p in spec.predictions if p.id == "throughput-c64"]
        v = score(spec, pred, "math")
        assert (v.status is VerdictStatus.PASS) is passes, (ink, v.status, v.reason)
        assert v.serving_value == pytest.approx(value, rel=5e-4)
        assert (v.serving_band_lo, v.serving_band_hi) == pytest.approx((lo, hi), rel=5e-4)


def test_where_the_serving_model_has_no_band_init_says_why() -> None:
    # an MoE model on a GPU: the accuracy corpus's GPU runs are all of dense models (bands.MOE_SERVING_NO_BAND)
    text = render(gpu="h100", model="qwen3-30b-a3b")
    line = _serving_line(text, "throughput-c16")
    assert re.match(r"    # serving model: [\d,.]+ tok/s; no band: ", line), line
    assert "band " not in line.split("; no band: ")[0]
