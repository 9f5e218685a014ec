"""The CPU-only math check uses the serving model's band for every quantity that has one, by default (issue 22,
trial s18 H2-H3, M3-M4): TPOT p50 and TTFT p50 ink inside the band passes and outside fails naming the band; a
physical bound is tested first; the verdict shows what decided (the band and its coverage in the tolerance column,
the error against the serving model's value); an outside-band failure says what moves the band (no tolerance widens
it) and that an 80% band leaves about 1 in 5 correct values outside; on the CPU device the band is one host's.

The bands themselves come from the serving model (not hand-computable); what the tests work out by hand is where
ink lies against them, the relative error (serving − ink) ÷ ink, and the weight-read floor.
"""

from __future__ import annotations

import math

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import bands
from pytest_roofline.report.terminal import _tolerance_short
from pytest_roofline.scoring import score


def _short(tolerance_text: str) -> str:
    """What the terminal's tolerance column shows of a band verdict's tolerance text, worked out here: the range's
    numbers without "serving " and the unit (the row's predicted column has it), the coverage alone in the
    parenthesis ("serving band 9.9851–19.337 ms (80%)" -> "band 9.9851–19.337 (80%)")."""
    rng, _, rest = tolerance_text.removeprefix("serving band ").partition(" (")
    return f"band {rng.rsplit(' ', 1)[0]} ({rest.split(')')[0].split(',')[0]})"

H100 = """\
hardware: h100-sxm
model: llama-3.1-8b
engine: {{name: vllm, version: "0.33.0"}}
workload: {{input_len: 1024, output_len: 1024}}
sweep: {{mode: closed, concurrency: [1, 16, 64]}}
predictions:
  - {{id: p, quantity: {quantity}, at: {{concurrency: {c}}}, predicted: {ink}{extra}}}
"""

CPU = """\
hardware: cpu
model: roofline-tiny
engine: {{name: vllm, version: "0.32.0", cpu_kvcache_space: 1 GiB, args: {{max_model_len: 1024, max_num_seqs: 8}}}}
workload: {{input_len: 128, output_len: 64}}
sweep: {{mode: closed, concurrency: [1, 8]}}
predictions:
  - {{id: p, quantity: {quantity}, at: {{concurrency: {c}}}, predicted: {ink}}}
"""


def _v(quantity: str, ink: str, c: int = 64, extra: str = "", template: str = H100):
    spec = loads_spec(template.format(quantity=quantity, c=c, ink=ink, extra=extra))
    return score(spec, spec.predictions[0], "math", None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


@pytest.mark.parametrize("quantity", ["tpot_p50", "ttft_p50"])
def test_latency_ink_inside_the_band_passes_by_default(quantity):
    ref = _v(quantity, "1 s")
    lo, hi, serving = ref.serving_band_lo, ref.serving_band_hi, ref.serving_value
    assert ref.model_source == "" and lo is not None and lo < serving < hi  # no roofline value: the band decides
    ink = round(0.5 * (serving + hi), 6)  # halfway from the model's value to the band's top: inside, not its value
    v = _v(quantity, _ms(ink))
    assert v.status == "pass", v.reason
    assert "within the serving model's band" in v.reason
    # what decided: the band and its coverage, the serving model's value, the error against it worked out here
    assert v.tolerance_text.startswith("serving band ") and v.tolerance_text.endswith(" (80%)")
    assert _tolerance_short(v) == _short(v.tolerance_text) and v.tolerance_text.startswith("serving band ")
    assert (v.lo, v.hi) == (pytest.approx(lo), pytest.approx(hi))
    assert v.checked_value == pytest.approx(serving)
    assert v.error_rel == pytest.approx((serving - ink) / ink, rel=1e-3)
    assert dict(v.explanation_rows())["error"].endswith(f"(serving model − ink, relative to the ink; serving "
                                                        f"model ÷ ink ×{serving / ink:.4g})")


def test_ttft_ink_far_outside_the_band_fails_naming_it_and_what_moves_it():
    ref = _v("ttft_p50", "1 s")
    hi = ref.serving_band_hi
    v = _v("ttft_p50", _ms(3 * hi))
    assert v.status == "fail"
    assert f"above the serving model's band {v.fmt(ref.serving_band_lo)} – {v.fmt(hi)}" in v.reason
    assert "about 1 in 5 correct values land outside it" in v.reason
    assert "weaker evidence than a physical bound" in v.reason
    # M3: the fix offered is one that moves the band, never a tolerance said to widen it
    assert "no tolerance: or math_tolerance: widens the band" in v.reason and "calibration:" in v.reason
    assert "(e.g. ±1%)" not in v.reason


def test_a_physical_bound_comes_before_the_band():
    # one read of Llama-3.1-8B's bf16 weights per decode step: 8,030,261,248 x 2 B / 3.35e12 B/s = 4.7942 ms
    floor = 8_030_261_248 * 2 / 3.35e12
    v = _v("tpot_p50", "3 ms")
    assert v.status == "fail" and "physical bound" in v.reason
    assert v.checked_value == pytest.approx(floor, rel=1e-4)


def test_a_claimed_interval_that_holds_the_serving_value_passes_on_the_tolerance():
    # ">= 1 ms" claims every TTFT from 1 ms up: the serving model's value (tens of ms at C=64) is in it
    v = _v("ttft_p50", "1 ms", extra=', tolerance: ">= 1 ms"')
    assert v.status == "pass" and "within >= 1 ms" in v.reason, v.reason


def test_throughput_below_the_band_fails_until_a_tolerance_claims_the_serving_value():
    """M3: math_tolerance ±15% on ink at 80% of the band's floor does not reach the serving model's value, so the
    FAIL stands; a tolerance wide enough to claim that value passes on the tolerance, not on a widened band."""
    ref = _v("output_throughput", "1 tok/s", c=16)
    lo, serving = ref.serving_band_lo, ref.serving_value
    ink = round(0.8 * lo)
    assert ink * 1.15 < serving  # ±15% of the ink stops short of the serving value
    v = _v("output_throughput", f"{ink} tok/s", c=16, extra=", math_tolerance: ±15%")
    assert v.status == "fail" and "below the serving model's band" in v.reason
    band = f"serving band {v.fmt(lo).split()[0]}–{v.fmt(ref.serving_band_hi)} (80%)"
    assert v.tolerance_text == band and _tolerance_short(v) == _short(band)
    wide = math.ceil(100 * (serving / ink - 1)) + 1  # the least whole percentage that reaches it
    w = _v("output_throughput", f"{ink} tok/s", c=16, extra=f", math_tolerance: ±{wide}%")
    assert w.status == "pass" and "serving model" in w.reason and w.tolerance_text.startswith(f"±{wide}%")


def test_the_batch1_path_reads_like_the_sweep_point_path():
    # C = 1 on an H100 (the trial's 125 tok/s): the floor is the serving band's, the top the roofline ceiling
    v = _v("output_throughput", "125 tok/s", c=1)
    assert v.status == "pass"
    assert _tolerance_short(v).startswith("band ") and _tolerance_short(v).endswith(" (80% floor, top: ceiling)")
    assert "(floor: the serving band's 80% edge; top: the roofline ceiling)" in v.tolerance_text
    assert v.checked_value == pytest.approx(v.serving_value)
    assert v.error_rel == pytest.approx((v.serving_value - 125) / 125, rel=1e-3)


def test_cpu_throughput_shows_the_cpu_band_with_its_caveat_and_does_not_decide_by_it():
    """M4: the roofline has no memory-bandwidth figure for the CPU device, and the CPU bands are one 2-core host's
    recordings (another host's speed differs by whole factors), so the default check shows the serving value and its
    band with that caveat and skips: no fix asks for hbm_bytes_per_s, and `model_column: serving` opts in."""
    ref = _v("output_throughput", "1 tok/s", c=8, template=CPU)
    lo, hi, serving = ref.serving_band_lo, ref.serving_band_hi, ref.serving_value
    assert lo is not None and lo < serving < hi
    assert bands.CPU_BAND_CAVEAT in ref.serving_band_text and "not built from" not in ref.serving_band_text
    for ink in (round(0.5 * (serving + hi)), round(10 * hi)):  # inside the band, far above it: neither decided
        v = _v("output_throughput", f"{ink} tok/s", c=8, template=CPU)
        assert v.status == "skip", v.reason
        assert bands.band_caveat("cpu") in v.reason and "model_column: serving" in v.reason
        assert f"the serving model predicts {v.serving_text}" in v.reason and "hbm_bytes_per_s" not in v.reason


def test_an_unstable_open_loop_point_is_never_failed_by_a_band():
    """50 req/s of 1,024 + 1,024 tokens is far more than one H100 serves an 8B model (the serving model serves ~6):
    its TTFT grows with the run's length, so the model gives it no band and 1 ms ink is not failed by one."""
    spec = loads_spec(H100.replace("sweep: {{mode: closed, concurrency: [1, 16, 64]}}",
                                   "sweep: {{mode: open, rates: [1 req/s, 50 req/s]}}")
                      .replace("concurrency: {c}", "rate: {c} req/s").format(quantity="ttft_p50", c=50, ink="1 ms",
                                                                            extra=""))
    v = score(spec, spec.predictions[0], "math", None)
    assert v.serving_unstable and v.serving_band_lo is None
    assert v.status == "skip"


class _Report:
    def __init__(self, roofline: dict) -> None:
        self.roofline, self.outcome, self.when = roofline, "failed", "call"


def test_the_terminal_row_shows_the_value_that_decided():
    """H3: a band verdict's row shows the serving model's value (src serv), the error against it and the band with
    its coverage, never the roofline's 2,779.8 tok/s beside the ±0.5 tok/s that did not decide."""
    from pytest_roofline.report.terminal import failure_line, summary_table

    ref = _v("output_throughput", "1 tok/s", c=16)
    ink = round(0.8 * ref.serving_band_lo)
    v = _v("output_throughput", f"{ink} tok/s", c=16)
    assert v.status == "fail" and v.model_source == "roofline"
    row = next(ln for ln in summary_table([_Report(v.to_dict())], width=200) if ln.startswith("p "))
    cells = row.split()
    # id, quantity, predicted (2 cells), measured/model (2 cells), src: the serving model's value, not the roofline's
    assert cells[4:7] == [*v.serving_text.split(), "serv"] and cells[4] != v.roofline_text.split()[0]
    assert f"{100 * (ref.serving_value - ink) / ink:+.2f}%" in cells  # (serving − ink) ÷ ink, worked out here
    assert _tolerance_short(v) in row and "±0.5" not in row
    assert f"serving model {v.serving_text}" in failure_line(v)
