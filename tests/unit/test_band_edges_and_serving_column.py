"""Trial s26b: a band's edges and the file-wide tolerance under ``model_column: serving``.

#1: with ``model_column: serving`` a banded quantity (throughput, TPOT p50, TTFT p50 at a point) with no tolerance of
its own was checked at the file's ``defaults.tolerance`` (or the ini's ±10%), which passed ink outside the band
printed beside it: 5,300 tok/s at "±40%" above a band topping at 4,209.6. The file-wide default is the measured
check's and widens no band; a tolerance written on the prediction still passes ink whose interval holds the value.
#5, #8: ink on a band's edge to the precision either is written is inside it: the open loop's offered rate 600 ×
256 ÷ 120 s = 1,280 tok/s (computed 1279.9999999999998) and ink copied from a printed edge (``10.493 ms`` for
10.4925) failed."""

from __future__ import annotations

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.scoring import score

HEAD = """\
hardware: h100-sxm
model: llama-3.1-8b
engine: {{name: vllm, version: "0.33.0"}}
workload: {{input_len: 1024, output_len: 256}}
sweep: {sweep}
{extra}predictions:
"""


def _v(line: str, *, sweep: str = "{mode: closed, concurrency: [1, 16, 64, 256]}", extra: str = ""):
    spec = loads_spec(HEAD.format(sweep=sweep, extra=extra) + f"  - {line}\n")
    return score(spec, spec.predictions[0], "math", None)


SERVING = "model_column: serving\ndefaults: {tolerance: ±40%}\n"


def test_the_files_default_tolerance_widens_no_band_under_the_serving_column():
    ref = _v("{id: t, quantity: output_throughput, at: {concurrency: 64}, predicted: 1 tok/s}", extra=SERVING)
    lo, hi, serving = ref.serving_band_lo, ref.serving_band_hi, float(ref.serving_value)
    ink = round(serving * 1.38)  # inside ±40% of the serving value, far above the band's top
    assert ink > hi and abs(serving / ink - 1) < 0.40
    v = _v(f"{{id: t, quantity: output_throughput, at: {{concurrency: 64}}, predicted: {ink} tok/s}}", extra=SERVING)
    assert v.status == "fail" and v.band_decided and "above the serving model's band" in v.reason
    # the same ±40% written on the prediction is the writer's own claim: its interval around the ink holds the value
    own = _v(f"{{id: t, quantity: output_throughput, at: {{concurrency: 64}}, predicted: {ink} tok/s, "
             "tolerance: ±40%}", extra=SERVING)
    assert own.status == "pass" and own.tolerance_text.startswith("±40%")
    # inside the band passes on the band
    mid = _v(f"{{id: t, quantity: output_throughput, at: {{concurrency: 64}}, predicted: {round(lo * 1.01)} tok/s}}",
             extra=SERVING)
    assert mid.status == "pass" and mid.band_decided
    # a quantity with no band keeps the default as its check: TTFT p99 at ±40% of the serving value
    p99 = _v("{id: t, quantity: ttft_p99, at: {concurrency: 64}, predicted: 1 ms}", extra=SERVING)
    near = float(p99.serving_value) * 1e3 * 1.3
    ok = _v(f"{{id: t, quantity: ttft_p99, at: {{concurrency: 64}}, predicted: {near:.0f} ms}}", extra=SERVING)
    assert ok.status == "pass" and ok.tolerance_text.startswith("±40%")


def test_ink_at_the_open_loops_offered_rate_is_on_the_bands_top():
    sweep = "{mode: open, rates: [5], requests_per_point: 600}"
    ref = _v("{id: t, quantity: output_throughput, at: {rate: 5}, predicted: 1 tok/s}", sweep=sweep)
    assert ref.serving_band_hi == pytest.approx(600 * 256 / 120)  # N x L / S: 1,280 tok/s, in floating point
    v = _v("{id: t, quantity: output_throughput, at: {rate: 5}, predicted: 1280 tok/s}", sweep=sweep)
    assert v.status == "pass"
    above = _v("{id: t, quantity: output_throughput, at: {rate: 5}, predicted: 1300 tok/s}", sweep=sweep)
    assert above.status == "fail"


def test_ink_copied_from_a_printed_edge_is_on_it():
    ref = _v("{id: t, quantity: tpot_p50, at: {concurrency: 16}, predicted: 1 ms}")
    lo, hi = ref.serving_band_lo, ref.serving_band_hi
    top, bottom = ref.fmt(hi), ref.fmt(lo)  # the band as printed, 5 significant figures
    for printed in (top, bottom):
        v = _v(f"{{id: t, quantity: tpot_p50, at: {{concurrency: 16}}, predicted: {printed}}}")
        assert v.status == "pass", (printed, v.reason)
    # past the printed top by more than half a unit of its fifth figure (and of the ink's last digit): outside
    above = hi * 1e3 * 1.001
    v = _v(f"{{id: t, quantity: tpot_p50, at: {{concurrency: 16}}, predicted: {above:.4f} ms}}")
    assert v.status == "fail" and "above the serving model's band" in v.reason


def test_the_simulators_band_stops_at_the_weight_read_as_the_check_does():
    """#6: Llama-3.1-8B on an L4 at C = 1: one read of its weights, 16,060,522,496 B ÷ 300e9 B/s = 53.535 ms, is a
    floor on TPOT. ``--simulate``/``--json`` printed a band from 52.057 ms (the ratio below the value), the CPU-only
    check and the scorecard one from 53.535: the simulator's band now stops there too, one band everywhere."""
    from pytest_roofline.model import serving as sv
    from pytest_roofline.model.setup import build_setup

    setup = build_setup(hardware_ref="l4", model_ref="llama-3.1-8b",
                        engine={"name": "vllm", "version": "0.33.0", "args": {"max_model_len": 4096}})
    work = sv.workload_for_point(setup, concurrency=1, num_requests=8, seed=0, point_id="c1", input_len=1024,
                                 output_len=256)
    p = sv.simulate(setup, work)
    lo, hi = p.bands["tpot_p50_ms"]
    assert lo == pytest.approx(16_060_522_496 / 300e9 * 1e3, rel=1e-9)
    assert lo < p.tpot_p50_ms < hi
    spec = loads_spec(HEAD.replace("h100-sxm", "l4").replace('version: "0.33.0"}}', 'version: "0.33.0", args: '
                                                                                    '{{max_model_len: 4096}}}}')
                      .format(sweep="{mode: closed, concurrency: [1]}", extra="")
                      + "  - {id: t, quantity: tpot_p50, at: {concurrency: 1}, predicted: 60 ms}\n")
    v = score(spec, spec.predictions[0], "math", None)
    assert (v.serving_band_lo, v.serving_band_hi) == (pytest.approx(lo / 1e3), pytest.approx(hi / 1e3))


def test_a_files_math_tolerance_widens_no_band_in_either_column():
    """Trial s26d #2: ``defaults: {math_tolerance: ±40%}`` (a rounding allowance for the file's arithmetic) passed
    5,300 tok/s over a band topping at 4,209.6, under ``model_column: serving`` and the default column alike."""
    for extra in ("model_column: serving\ndefaults: {math_tolerance: ±40%}\n", "defaults: {math_tolerance: ±40%}\n"):
        v = _v("{id: t, quantity: output_throughput, at: {concurrency: 64}, predicted: 5300 tok/s}", extra=extra)
        assert v.status == "fail" and v.band_decided, (extra, v.reason)
        t = _v("{id: t, quantity: tpot_p50, at: {concurrency: 64}, predicted: 10.8 ms}", extra=extra)
        assert t.status == "fail" and t.band_decided, (extra, t.reason)


def test_an_fp8_kv_cache_voids_the_share_floor_as_it_voids_the_band():
    """Trial s26d #1: with ``kv_cache_dtype: fp8`` the serving band was void and the share of the ceiling alone was
    the floor (0.597 x 207.61 = 123.94), so 121 tok/s failed where it passed with a 16-bit cache: no run behind either
    floor kept an fp8 cache, so realistic ink below the ceiling is inconclusive, under both batch-1 names."""
    spec = loads_spec(HEAD.replace('version: "0.33.0"}}', 'version: "0.33.0", args: {{kv_cache_dtype: fp8}}}}')
                      .format(sweep="{mode: closed, concurrency: [1]}", extra="")
                      + "  - {id: b, quantity: batch1_throughput, predicted: 121 tok/s}\n"
                      + "  - {id: c, quantity: output_throughput, at: {concurrency: 1}, predicted: 121 tok/s}\n")
    got = [score(spec, p, "math", None) for p in spec.predictions]
    assert [v.status for v in got] == ["inconclusive", "inconclusive"], [v.reason for v in got]
    assert all("fp8" in v.reason for v in got)
