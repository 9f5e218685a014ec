"""Numbers with units as people write them in a prediction file (``pytest_roofline/units.py``).

Expected values are worked out by hand: GB is 10**9 bytes, GiB is 2**30 bytes, and the precision a writer
claims is half a unit in the last digit written (``1,742`` claims ±0.5, ``4.82 ms`` ±0.005 ms, ``8.0e9``
±0.05e9).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_roofline.units import UnitError, format_value, parse_number, parse_value, unit_scale

GIB = 2**30


# --------------------------------------------------------------------------------------------------------------
# GB vs GiB
# --------------------------------------------------------------------------------------------------------------
def test_80_gib_is_85_899_345_920_bytes():
    v = parse_value("80 GiB", "bytes")
    assert v.si == 85_899_345_920
    assert v.unit == "GiB"


def test_80_gb_is_80e9_bytes_and_not_80_gib():
    gb = parse_value("80 GB", "bytes").si
    gib = parse_value("80 GiB", "bytes").si
    assert gb == 80_000_000_000
    assert gib - gb == 5_899_345_920
    assert gib / gb == pytest.approx(1.073741824)  # the 7.4% the notebook's KV budget lost


@pytest.mark.parametrize("text,bytes_", [
    ("147 KB", 147_000),
    ("128 KiB", 131_072),
    ("128 MiB", 134_217_728),
    ("0.125 GiB", 134_217_728),
    ("16.38 GB", 16_380_000_000),
    ("56.34 GiB", 56.34 * 2**30),
    ("1 TB", 10**12),
    ("1 TiB", 2**40),
    ("33,554,432 B", 33_554_432),
    ("131,072 bytes", 131_072),
])
def test_byte_units(text, bytes_):
    assert parse_value(text, "bytes").si == pytest.approx(bytes_, rel=1e-15)


def test_bandwidth_units_keep_decimal_and_binary_apart():
    assert parse_value("2,039 GB/s", "bandwidth").si == pytest.approx(2.039e12)
    assert parse_value("1 GiB/s", "bandwidth").si == GIB


# --------------------------------------------------------------------------------------------------------------
# the notebook's and the lesson's values
# --------------------------------------------------------------------------------------------------------------
def test_throughput_with_thousands_separator():
    v = parse_value("1,742 tok/s", "throughput")
    assert v.si == 1742
    assert v.unit == "tok/s"
    assert v.half_ulp_si == 0.5
    assert v.text == "1,742 tok/s"
    assert v.written == 1742


def test_500_ms_is_half_a_second():
    v = parse_value("500 ms", "time")
    assert v.si == pytest.approx(0.5)
    assert v.half_ulp_si == pytest.approx(0.5e-3)  # ±0.5 ms
    assert v.scale == pytest.approx(1e-3)


def test_percent_is_a_fraction():
    v = parse_value("56.25%", "ratio")
    assert v.si == pytest.approx(0.5625)
    assert v.unit == "%"
    assert v.half_ulp_si == pytest.approx(0.00005)  # ±0.005 %


def test_exponent_number():
    v = parse_value("8.0e9", "count")
    assert v.si == 8e9
    assert v.half_ulp_si == pytest.approx(0.05e9)


def test_1e3_is_the_number_1000():
    value, half, unit = parse_number("1e3")
    assert value == 1000.0
    assert isinstance(value, float)
    assert unit == ""
    assert half == pytest.approx(500)  # one significant digit written


@pytest.mark.parametrize("text,half", [
    ("1,742", 0.5),
    ("22,959", 0.5),
    ("4.82", 0.005),
    ("4.80", 0.005),  # trailing zeros are digits the writer claimed
    ("4.8", 0.05),
    ("0.016178", 0.0000005),
    ("8.0e9", 0.05e9),
    ("8e9", 0.5e9),
    ("1.5e-3", 0.05e-3),
    (".5", 0.05),
])
def test_precision_is_half_a_unit_in_the_last_digit(text, half):
    assert parse_number(text)[1] == pytest.approx(half, rel=1e-12)


def test_precision_carries_the_unit_scale():
    assert parse_value("4.82 ms", "time").half_ulp_si == pytest.approx(0.005e-3, rel=1e-12)
    assert parse_value("16.38 GB", "bytes").half_ulp_si == pytest.approx(0.005e9, rel=1e-12)
    assert parse_value("0.125 GiB", "bytes").half_ulp_si == pytest.approx(0.0005 * GIB, rel=1e-12)


@pytest.mark.parametrize("text,dim,si", [
    ("312 TFLOP/s", "flop_rate", 312e12),
    ("989 TFLOPS", "flop_rate", 989e12),
    ("16.00 GFLOP", "flops", 16e9),
    ("1,073,741,824 FLOP", "flops", 1_073_741_824),
    ("153 FLOP/byte", "intensity", 153),
    ("50 req/s", "request_rate", 50),
    ("0.016178 ms", "time", 0.016178e-3),
    ("3 min", "time", 180),
    ("2048x", "ratio", 2048),
    ("410,240 tokens", "count", 410_240),
    ("−5", "count", -5),  # a typographic minus
    ("1_000", "count", 1000),
    ("+3", "count", 3),
])
def test_units_of_every_dimension(text, dim, si):
    assert parse_value(text, dim).si == pytest.approx(si, rel=1e-15)


def test_numbers_from_yaml_types():
    assert parse_number(1742) == (1742.0, 0.5, "")
    assert parse_number(4.8)[0] == 4.8
    with pytest.raises(UnitError):
        parse_number(True)


def test_word_units_forgive_case_but_ms_does_not():
    assert parse_value("10 Tok/s", "throughput").si == 10
    with pytest.raises(UnitError):
        parse_value("5 MS", "time")  # megaseconds or milliseconds? neither: it is refused


# --------------------------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------------------------
def test_a_unit_that_does_not_fit_the_quantity():
    with pytest.raises(UnitError) as exc:
        parse_value("5 GiB", "throughput")
    msg = str(exc.value)
    assert "'GiB'" in msg and "throughput" in msg
    assert "tok/s" in msg  # names the units that would fit


@pytest.mark.parametrize("text", ["abc", "", "GiB", "fast", "1.2.3 GB"])
def test_not_a_number(text):
    with pytest.raises(UnitError):
        parse_value(text, "bytes")


def test_misplaced_thousands_separator_is_not_read_as_a_number():
    with pytest.raises(UnitError):
        parse_value("1,74", "count")


def test_unit_scale():
    assert unit_scale("bytes", "GiB") == GIB
    assert unit_scale("bytes", "GB") == 1e9
    assert unit_scale("time", "ms") == 1e-3
    assert unit_scale("ratio", "%") == 0.01
    with pytest.raises(UnitError):
        unit_scale("bytes", "tok/s")
    with pytest.raises(UnitError):
        unit_scale("colour", "")


# --------------------------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("si,dim,unit,digits,text", [
    (85_899_345_920, "bytes", None, 4, "80 GiB"),
    (134_217_728, "bytes", None, 4, "128 MiB"),
    (512, "bytes", None, 4, "512 B"),
    (1742, "throughput", None, 4, "1,742 tok/s"),
    (1740.8039, "throughput", None, 5, "1,740.8 tok/s"),
    (0.5, "time", None, 4, "500 ms"),
    (0.0048543, "time", None, 4, "4.854 ms"),
    (0.5625, "ratio", None, 4, "56.25 %"),
    (16.38e9, "bytes", "GB", 4, "16.38 GB"),
    (153.01618, "intensity", None, 5, "153.02 FLOP/byte"),
    (3.35e12, "flop_rate", None, 4, "3.35 TFLOP/s"),  # no trailing zero past the value's digits
])
def test_format_value(si, dim, unit, digits, text):
    assert format_value(si, dim, unit, digits=digits) == text


def test_format_value_of_non_numbers():
    assert format_value(None, "count") == "—"
    assert format_value(True, "count") == "true"
    assert format_value("memory", "ratio") == "memory"


def test_format_value_with_a_unit_that_does_not_fit_falls_back_to_the_bare_number():
    assert format_value(1742, "throughput", "GiB") == "1,742"


# --------------------------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------------------------
_UNITS = [("throughput", "tok/s"), ("time", "ms"), ("time", "s"), ("time", "us"), ("bytes", "GB"),
          ("bytes", "GiB"), ("bytes", "KiB"), ("bandwidth", "GB/s"), ("flop_rate", "TFLOP/s"), ("ratio", "%"),
          ("count", ""), ("intensity", "FLOP/byte")]


@settings(max_examples=300)
@given(x=st.floats(min_value=1e-6, max_value=1e16, allow_nan=False, allow_infinity=False),
       dim_unit=st.sampled_from(_UNITS), digits=st.integers(min_value=1, max_value=8),
       negative=st.booleans())
def test_format_parse_round_trip_within_the_precision_written(x, dim_unit, digits, negative):
    """Whatever format_value writes, parse_value reads back to within half a unit of its last digit."""
    dim, unit = dim_unit
    x = -x if negative else x
    text = format_value(x, dim, unit, digits=digits)
    back = parse_value(text, dim)
    assert back.unit == unit
    slack = 1e-12 * abs(x)  # float noise of the scale factors
    assert abs(back.si - x) <= back.half_ulp_si + slack, (x, text, back)


@settings(max_examples=200)
@given(n=st.integers(min_value=-(10**15), max_value=10**15))
def test_integers_with_separators_parse_exactly(n):
    value, half, unit = parse_number(f"{n:,}")
    assert value == n and half == 0.5 and unit == ""
    value, half, unit = parse_number(f"{n:_}")
    assert value == n


@settings(max_examples=200)
@given(mantissa=st.integers(min_value=1, max_value=99999), decimals=st.integers(min_value=0, max_value=6),
       exp=st.integers(min_value=-12, max_value=12))
def test_precision_of_written_decimals_and_exponents(mantissa, decimals, exp):
    text = f"{mantissa / 10**decimals:.{decimals}f}e{exp}"
    value, half, _ = parse_number(text)
    assert value == pytest.approx(mantissa * 10.0 ** (exp - decimals), rel=1e-12)
    assert half == pytest.approx(0.5 * 10.0 ** (exp - decimals), rel=1e-12)
    assert not math.isnan(value)


# --------------------------------------------------------------------------- the one home of units and parsers


def test_byte_constants_are_the_binary_and_decimal_units():
    from pytest_roofline import units

    assert (units.KIB, units.MIB, units.GIB, units.TIB) == (1024, 1024 * 1024, 1024**3, 1024**4)
    assert (units.KB, units.MB, units.GB, units.TB) == (1000, 1000**2, 1000**3, 1000**4)
    assert units.GIB / units.GB == pytest.approx(1.073741824)
    assert parse_value("1 GiB", "bytes").si == units.GIB and parse_value("1 GB", "bytes").si == units.GB


def test_an_exponent_is_one_correctly_rounded_conversion():
    # "8.2e9" is the double nearest 8.2 x 10^9, as float() reads it; 8.2 * 1e9 would be one ulp lower
    assert parse_value("8.2e9", "count").si == float("8.2e9") == 8_200_000_000.0
    assert parse_value("1.8e12 B/s", "bandwidth").si == 1.8e12


def test_printed_numbers_keep_int_or_float():
    from pytest_roofline.units import parse_printed_number

    assert parse_printed_number("2,097,152") == 2_097_152 and isinstance(parse_printed_number("2,097,152"), int)
    assert parse_printed_number("2048.00") == 2048.0 and isinstance(parse_printed_number("2048.00"), float)
    assert parse_printed_number("56.34") == 56.34
    with pytest.raises(UnitError):
        parse_printed_number("12 GiB")
    with pytest.raises(UnitError):
        parse_printed_number("n/a")


def test_to_si_passes_numbers_and_reads_text_with_units():
    from pytest_roofline.units import to_si

    assert to_si(1.555e12, "bandwidth") == 1.555e12 and to_si(3, "bytes") == 3.0
    assert to_si("2,039 GB/s", "bandwidth") == 2039e9
    assert to_si("80 GiB", "bytes") == 80 * 2**30
    assert to_si("624 TOPS", "flop_rate") == 624e12 and to_si("989 TFLOP/s", "flop_rate") == 989e12
    for bad in (True, None, [1], "3 TFLOP/s"):
        with pytest.raises(UnitError):
            to_si(bad, "bandwidth")  # type: ignore[arg-type]


def test_to_int_reads_whole_numbers_only():
    from pytest_roofline.units import to_int

    assert to_int(36) == 36 and to_int(36.0) == 36 and to_int("151,936") == 151_936 and to_int("4e3") == 4000
    for bad in (True, 2.5, "2.5", "ten", None):
        with pytest.raises(UnitError):
            to_int(bad)  # type: ignore[arg-type]
