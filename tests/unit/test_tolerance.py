"""The tolerance grammar (``pytest_roofline/tolerance.py``): every form in its docstring, and its errors.

``ref`` is the predicted value, ``x`` the value checked. Bounds are worked out by hand for ref = 100 (or a
value in the tolerance's own unit); relative parts are fractions of |ref|.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_roofline.format.tolerance import TOLERANCE_HELP, Tolerance, ToleranceError, parse_tolerance


def bounds(text, ref, dimension="ratio", unit=""):
    return parse_tolerance(text, dimension, unit).bounds(ref)


# --------------------------------------------------------------------------------------------------------------
# symmetric relative
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["±10%", "+-10%", "+/-10%", "10%", "± 10 %"])
def test_symmetric_relative(text):
    tol = parse_tolerance(text, "throughput", "tok/s")
    assert tol.bounds(1742.0) == pytest.approx((1567.8, 1916.2))
    assert tol.contains(1916.2, 1742.0) and tol.contains(1567.8, 1742.0)
    assert not tol.contains(1916.3, 1742.0) and not tol.contains(1567.7, 1742.0)
    assert tol.text == text
    assert tol.needs_reference


def test_relative_band_uses_the_magnitude_of_a_negative_reference():
    tol = parse_tolerance("±10%", "ratio")
    assert tol.bounds(-100.0) == pytest.approx((-110.0, -90.0))
    assert tol.contains(-95.0, -100.0)
    assert not tol.contains(-80.0, -100.0)


def test_fractional_percent():
    assert bounds("±0.5%", 22_959.0) == pytest.approx((22_844.205, 23_073.795))


# --------------------------------------------------------------------------------------------------------------
# asymmetric relative
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["+5%/-20%", "-20%/+5%", "+5% / -20%"])
def test_asymmetric_relative(text):
    tol = parse_tolerance(text, "ratio")
    assert tol.bounds(100.0) == pytest.approx((80.0, 105.0))
    assert tol.contains(80.0, 100.0) and tol.contains(105.0, 100.0)
    assert not tol.contains(79.9, 100.0) and not tol.contains(105.1, 100.0)


# --------------------------------------------------------------------------------------------------------------
# absolute around ref
# --------------------------------------------------------------------------------------------------------------
def test_plus_minus_absolute_with_unit():
    tol = parse_tolerance("±0.5 ms", "time", "ms")
    lo, hi = tol.bounds(0.00482)  # 4.82 ms
    assert lo == pytest.approx(0.00432) and hi == pytest.approx(0.00532)
    assert tol.contains(0.00532, 0.00482)
    assert not tol.contains(0.00533, 0.00482)


def test_bare_absolute_number_takes_the_predicted_values_unit():
    # predicted "4.82 ms" -> the bare "±3" is ±3 ms
    assert bounds("±3", 0.010, "time", "ms") == pytest.approx((0.007, 0.013))
    # predicted "22,959" (a count) -> ±3 blocks
    assert bounds("±3", 22_959.0, "count", "") == pytest.approx((22_956.0, 22_962.0))
    # predicted "1,742 tok/s" -> ±3 tok/s
    assert bounds("±3", 1742.0, "throughput", "tok/s") == pytest.approx((1739.0, 1745.0))


def test_absolute_with_its_own_unit_overrides_the_default_unit():
    # the prediction is written in ms, the tolerance in seconds
    assert bounds("±0.5 s", 1.0, "time", "ms") == pytest.approx((0.5, 1.5))
    # bytes: GiB vs GB are not confused
    lo, hi = bounds("±1 GiB", 80 * 2**30, "bytes", "GB")
    assert hi - lo == 2 * 2**30


def test_asymmetric_absolute():
    assert bounds("+2/-1 ms", 0.010, "time", "ms") == pytest.approx((0.009, 0.012))
    assert bounds("+2/-1", 100.0, "count", "") == pytest.approx((99.0, 102.0))
    assert bounds("+2/-1", 0.010, "time", "ms") == pytest.approx((0.009, 0.012))


# --------------------------------------------------------------------------------------------------------------
# ranges
# --------------------------------------------------------------------------------------------------------------
def test_range_with_thousands_separators_and_unit():
    tol = parse_tolerance("1,600..1,900 tok/s", "throughput", "tok/s")
    assert tol.bounds(None) == (1600.0, 1900.0)
    assert tol.bounds(1742.0) == (1600.0, 1900.0)  # a range ignores ref
    assert not tol.needs_reference
    assert tol.contains(1600.0, None) and tol.contains(1900.0, None)
    assert not tol.contains(1599.0, None) and not tol.contains(1901.0, None)


def test_range_whose_ends_have_different_units():
    assert bounds("500 ms..1 s", None, "time", "ms") == pytest.approx((0.5, 1.0))


def test_range_without_unit_takes_the_default_unit():
    assert bounds("4..16", None, "count") == (4.0, 16.0)
    assert bounds("40..60", None, "time", "ms") == pytest.approx((0.040, 0.060))


def test_range_as_yaml_list():
    tol = parse_tolerance([1600, 1900], "throughput", "tok/s")
    assert tol.bounds(None) == (1600.0, 1900.0)
    tol = parse_tolerance(["1,600 tok/s", "1,900 tok/s"], "throughput", "tok/s")
    assert tol.bounds(None) == (1600.0, 1900.0)


def test_range_in_brackets_as_text():
    assert bounds("[1,600, 1,900] tok/s", None, "throughput") == (1600.0, 1900.0)


# --------------------------------------------------------------------------------------------------------------
# one-sided
# --------------------------------------------------------------------------------------------------------------
def test_one_sided_absolute_lower_bound():
    tol = parse_tolerance(">= 600 tok/s", "throughput", "tok/s")
    assert tol.bounds(None) == (600.0, math.inf)
    assert tol.contains(600.0, None) and tol.contains(1e9, None)
    assert not tol.contains(599.9, None)


def test_one_sided_absolute_upper_bound():
    tol = parse_tolerance("<= 50 ms", "time", "ms")
    lo, hi = tol.bounds(None)
    assert lo == -math.inf and hi == pytest.approx(0.050)
    assert tol.contains(0.050, None) and not tol.contains(0.0501, None)


def test_strict_bounds_exclude_the_bound():
    gt = parse_tolerance("> 0.9", "ratio")
    assert not gt.contains(0.9, None)
    assert gt.contains(0.9000001, None)
    lt = parse_tolerance("< 50 ms", "time", "ms")
    assert not lt.contains(0.050, None)
    assert lt.contains(0.0499, None)


@pytest.mark.parametrize("text", ["≥ 600", ">=600"])
def test_one_sided_spellings(text):
    assert parse_tolerance(text, "throughput", "tok/s").bounds(None) == (600.0, math.inf)


def test_one_sided_relative_upper():
    tol = parse_tolerance("<= +10%", "ratio")
    lo, hi = tol.bounds(100.0)
    assert lo == -math.inf and hi == pytest.approx(110.0)
    assert tol.contains(110.0, 100.0) and tol.contains(-1e9, 100.0)
    assert not tol.contains(110.01, 100.0)


def test_one_sided_relative_lower():
    tol = parse_tolerance(">= -10%", "ratio")
    lo, hi = tol.bounds(100.0)
    assert lo == pytest.approx(90.0) and hi == math.inf
    assert tol.contains(90.0, 100.0) and tol.contains(1e9, 100.0)
    assert not tol.contains(89.99, 100.0)


def test_one_sided_relative_can_demand_a_margin():
    # "at least 5% above the prediction" / "at least 5% below it"
    assert bounds(">= +5%", 100.0)[0] == pytest.approx(105.0)
    assert bounds("<= -5%", 100.0)[1] == pytest.approx(95.0)


def test_one_sided_relative_and_absolute_percent_differ():
    # "<= +5%" is relative to ref; "<= 5%" is the absolute bound 0.05 on a ratio
    assert bounds("<= +5%", 0.5)[1] == pytest.approx(0.525)
    assert bounds("<= 5%", 0.5)[1] == pytest.approx(0.05)


# --------------------------------------------------------------------------------------------------------------
# exact
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["exact", "Exactly", "0", "±0", "±0%"])
def test_exact(text):
    tol = parse_tolerance(text, "count")
    assert tol.exact
    assert tol.bounds(4.0) == (4.0, 4.0)
    assert tol.contains(4.0, 4.0)
    assert not tol.contains(2.0, 4.0)
    assert not tol.contains(4.000001, 4.0)


# --------------------------------------------------------------------------------------------------------------
# float slack
# --------------------------------------------------------------------------------------------------------------
def test_float_noise_at_a_bound_does_not_flip_the_verdict():
    tol = parse_tolerance("<= 0.3", "ratio")
    assert tol.contains(0.1 + 0.2, None)  # 0.30000000000000004
    assert not tol.contains(0.3 + 1e-9, None)


def test_float_slack_is_relative_not_absolute():
    # values are SI: a 1 µs time is 1e-6 s, and ±0.01% of it is 1e-10 s; the slack must not widen that band
    tol = parse_tolerance("±0.01%", "time", "us")
    assert tol.contains(1e-6 * (1 + 0.999e-4), 1e-6)
    assert not tol.contains(1e-6 * (1 + 1.001e-4), 1e-6)


# --------------------------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["about 5", "10", "", "+5%", "±", "roughly ±10%", "10% or so"])
def test_does_not_parse(text):
    with pytest.raises(ToleranceError) as exc:
        parse_tolerance(text, "throughput", "tok/s")
    assert TOLERANCE_HELP in str(exc.value)


def test_help_names_every_form():
    for form in ("±10%", "+5%/-20%", "±0.5 ms", "1,600..1,900 tok/s", ">= 600 tok/s", "<= +10%", "exact"):
        assert form in TOLERANCE_HELP


def test_a_unit_that_does_not_fit():
    with pytest.raises(ToleranceError) as exc:
        parse_tolerance("±5 GiB", "throughput", "tok/s")
    assert "GiB" in str(exc.value) and "throughput" in str(exc.value)


def test_range_upside_down():
    with pytest.raises(ToleranceError, match="low end above its high end"):
        parse_tolerance("1,900..1,600", "throughput", "tok/s")
    with pytest.raises(ToleranceError, match="low end above its high end"):
        parse_tolerance(["1 s", "500 ms"], "time", "ms")


def test_range_list_needs_two_ends():
    with pytest.raises(ToleranceError, match="two ends"):
        parse_tolerance([1, 2, 3], "count")


def test_tolerance_error_is_a_value_error():
    assert issubclass(ToleranceError, ValueError)


# --------------------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------------------
_refs = st.floats(min_value=1e-6, max_value=1e12, allow_nan=False, allow_infinity=False)
_sign = st.sampled_from([1.0, -1.0])
_pct = st.integers(min_value=1, max_value=9999).map(lambda n: n / 100)  # 0.01% .. 99.99%


@settings(max_examples=300)
@given(ref=_refs, sign=_sign, pct=_pct, frac=st.floats(min_value=-1.0, max_value=1.0))
def test_a_value_inside_a_symmetric_band_is_accepted(ref, sign, pct, frac):
    ref *= sign
    tol = parse_tolerance(f"±{pct:g}%", "ratio")
    x = ref + frac * (pct / 100) * abs(ref) * (1 - 1e-9)
    assert tol.contains(x, ref)


@settings(max_examples=300)
@given(ref=_refs, sign=_sign, pct=_pct, beyond=st.floats(min_value=1e-6, max_value=10.0), up=st.booleans())
def test_a_value_outside_a_symmetric_band_is_rejected(ref, sign, pct, beyond, up):
    ref *= sign
    tol = parse_tolerance(f"±{pct:g}%", "ratio")
    dev = (pct / 100) * abs(ref) * (1 + beyond)
    x = ref + dev if up else ref - dev
    assume(x != ref)
    assert not tol.contains(x, ref)


@settings(max_examples=200)
@given(ref=_refs, hi_pct=_pct, lo_pct=_pct, frac=st.floats(min_value=0.0, max_value=1.0))
def test_asymmetric_band_accepts_exactly_its_interval(ref, hi_pct, lo_pct, frac):
    tol = parse_tolerance(f"+{hi_pct:g}%/-{lo_pct:g}%", "ratio")
    inside_hi = ref * (1 + frac * hi_pct / 100 * (1 - 1e-9))
    inside_lo = ref * (1 - frac * lo_pct / 100 * (1 - 1e-9))
    assert tol.contains(inside_hi, ref) and tol.contains(inside_lo, ref)
    assert not tol.contains(ref * (1 + hi_pct / 100 * 1.001), ref)
    assert not tol.contains(ref * (1 - lo_pct / 100 * 1.001), ref)


@settings(max_examples=200)
@given(lo=st.integers(min_value=0, max_value=10**9), width=st.integers(min_value=0, max_value=10**9),
       x=st.integers(min_value=-(10**9), max_value=3 * 10**9))
def test_a_range_accepts_exactly_its_closed_interval(lo, width, x):
    hi = lo + width
    tol = parse_tolerance(f"{lo:,}..{hi:,} tok/s", "throughput", "tok/s")
    assert tol.contains(float(x), None) == (lo <= x <= hi)


def test_tolerance_is_immutable():
    tol = parse_tolerance("±10%", "ratio")
    assert isinstance(tol, Tolerance)
    with pytest.raises(AttributeError):
        tol.rel_lo = 0.5  # type: ignore[misc]
