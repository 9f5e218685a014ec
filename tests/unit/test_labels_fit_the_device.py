"""Labels and units that fit what they describe (issue 24, the review's low-severity findings): the CPU scorecard's
engine defaults name the CPU engine's KV space, not gpu_memory_utilization; bytes are shown in the decimal unit
that fits (the tiny model's weights 744.70 kB, never 0.00074470 GB; its KV per sequence 160 tokens × 512 B =
81,920 B = 81.92 kB); a serving constant that is a rate reads as one (host_mem_bytes_per_s 2e13 B/s = 20,000 GB/s,
was "2e+13 ms"); the goodput note says one thing about the SLO boundary."""

from __future__ import annotations

import re

from support.paths import CPU_TINY, DAY3

from pytest_roofline.model.setup import build_setup
from pytest_roofline.quantities.serving_values import constant_text
from pytest_roofline.report.scorecard import render_from_files
from pytest_roofline.units import decimal_bytes_unit


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_cpu_scorecard_names_the_kv_space_and_scales_bytes() -> None:
    text = _text(render_from_files(CPU_TINY, None))
    assert "defaults used KV space 1 GiB, block_size 128" in text
    assert "gpu_memory_utilization" not in text.split("defaults used", 1)[1][:80]
    assert "KV per sequence 81.92 kB" in text
    assert re.search(r"weights \d{3}(\.\d{1,2})? kB \(bf16\)", text)  # 744.7 kB: no trailing zero
    assert "0.000" not in text.split("weights", 1)[1][:40]


def test_a_gpu_scorecard_keeps_gpu_memory_utilization_and_gb() -> None:
    text = _text(render_from_files(DAY3, None))
    assert "defaults used gpu_memory_utilization 0.92, block_size 16" in text  # vLLM 0.26.0 serve
    assert "weights 16.381 GB (bf16)" in text  # 8,190,735,360 × 2 B


def test_bytes_take_the_decimal_unit_that_fits() -> None:
    assert [decimal_bytes_unit(x) for x in (512, 81_920, 744_700, 16.38e9, 3e12)] == ["B", "kB", "kB", "GB", "GB"]
    tiny = build_setup(hardware_ref="cpu", model_ref="roofline-tiny", engine={"name": "vllm"}, workload={})
    # two decimals at most, without the trailing zero a rounding leaves (744,700 B: "744.7 kB", not "744.70 kB")
    assert tiny.describe()["weights"] == f"{tiny.weight_bytes / 1e3:,.2f}".rstrip("0").rstrip(".") + " kB (bf16)"


def test_serving_constants_read_in_their_units() -> None:
    assert constant_text("host_mem_bytes_per_s", 2e13) == "20,000 GB/s"
    assert constant_text("host_peak_flop_per_s", 1e14) == "100 TFLOP/s"
    assert constant_text("step_overhead_s", 0.0033) == "3.3 ms"


def test_the_goodput_note_says_one_thing_about_the_boundary() -> None:
    from pytest_roofline.quantities import latency

    src = latency._goodput_note.__code__.co_consts
    text = " ".join(c for c in src if isinstance(c, str))
    assert "strict upper bounds" not in text and "≤" in text and "<" not in text.replace("≤", "")


def test_the_tpot_caption_names_a_model_line_only_when_one_is_drawn() -> None:
    import json

    from support.paths import DAY3_RESULTS

    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.report.charts import tpot_chart

    spec = load_spec(DAY3)
    results = json.loads(DAY3_RESULTS.read_text(encoding="utf-8"))
    without = tpot_chart(spec, None, results, [])  # no setup: no modelled decode step is drawn
    assert without is not None and "p50 and p99 per sweep point" in without.svg
    assert "modelled decode step" not in without.svg and "decode-only roofline" not in without.caption
    setup = build_setup(hardware_ref=spec.hardware, model_ref=spec.model, engine=spec.engine, workload=spec.workload)
    drawn = tpot_chart(spec, setup, results, [])
    assert drawn is not None and "against the modelled decode step" in drawn.svg
    assert "decode-only roofline" in drawn.caption
