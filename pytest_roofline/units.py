"""Numbers with units, as people write them in a prediction file.

``parse_value("1,742 tok/s", "throughput")`` returns a :class:`Value` holding the number in SI base units
(tokens/s, seconds, bytes, FLOP, FLOP/s, bytes/s, fraction), the unit as written, and the precision the
writer claimed (half a unit in the last written digit), which the CPU-only math check uses as its tolerance.

GB is 1e9 bytes and GiB is 2**30 bytes; the two are never mixed up (the "Day 3" seed notebook's KV-block
miss was one; docs/sources.md). ``GIB``, ``MIB``, ``GB``... below are the package's one copy of each.
The raw text is parsed here, not by PyYAML, so ``1e3`` is a number and ``4.80`` keeps its two decimals.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pytest_roofline.errors import UnitError

__all__ = ["DIMENSIONS", "DEFAULT_UNIT", "UnitError", "Value", "parse_value", "parse_number", "format_value",
           "signed_percent", "shown_unit",
           "unit_scale", "to_si", "to_int", "parse_printed_number",
           "KIB", "MIB", "GIB", "TIB", "KB", "MB", "GB", "TB"]

#: binary byte units (what drivers and vLLM's "GiB" log lines count in)
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40
#: decimal byte units (what datasheets print: "80 GB", "2,039 GB/s")
KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12

_BYTES = {
    "B": 1.0, "byte": 1.0, "bytes": 1.0,
    "kB": float(KB), "KB": float(KB), "MB": float(MB), "GB": float(GB), "TB": float(TB),
    "KiB": float(KIB), "MiB": float(MIB), "GiB": float(GIB), "TiB": float(TIB),
}
_TIME = {"s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9,
         "min": 60.0, "minutes": 60.0, "h": 3600.0}
_FLOP_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def _flop_units(suffixes: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for prefix, scale in _FLOP_PREFIX.items():
        for word in ("FLOP", "FLOPs"):
            for suffix in suffixes:
                out[f"{prefix}{word}{suffix}"] = scale
    return out


#: dimension -> {unit as written -> factor to the SI base unit}; "" is the bare number.
DIMENSIONS: dict[str, dict[str, float]] = {
    "throughput": {"tok/s": 1.0, "tokens/s": 1.0, "tok/sec": 1.0, "tokens/sec": 1.0, "": 1.0},
    "request_rate": {"req/s": 1.0, "requests/s": 1.0, "rps": 1.0, "": 1.0},
    "time": {**_TIME},
    "bytes": {**_BYTES, "": 1.0},
    "bandwidth": {f"{u}/s": f for u, f in _BYTES.items()} | {"": 1.0},
    "flops": _flop_units(("",)) | {"": 1.0},
    # integer tensor peaks are quoted in OP/s ("624 TOPS"); they count as FLOP/s here
    "flop_rate": _flop_units(("/s",)) | {p + w: s for p, s in _FLOP_PREFIX.items() for w in ("FLOPS", "OP/s", "OPS")}
    | {"": 1.0},
    "intensity": {"FLOP/byte": 1.0, "FLOP/B": 1.0, "FLOPs/byte": 1.0, "FLOPs/B": 1.0, "": 1.0},
    "ratio": {"%": 0.01, "": 1.0, "x": 1.0},
    "count": {"": 1.0, "tokens": 1.0, "tok": 1.0, "blocks": 1.0, "sequences": 1.0, "seqs": 1.0, "requests": 1.0,
              "reqs": 1.0, "slots": 1.0, "params": 1.0, "x": 1.0},
}

#: the unit each dimension is shown in when the writer gave none
DEFAULT_UNIT = {"throughput": "tok/s", "request_rate": "req/s", "time": "ms", "bytes": "B", "bandwidth": "GB/s",
                "flops": "FLOP", "flop_rate": "TFLOP/s", "intensity": "FLOP/byte", "ratio": "", "count": ""}

# The number is matched at the start and the unit is the stripped rest of the text: a regex ending in a lazy
# ``(.*?)\s*$`` backtracks quadratically over a long run of spaces (a 16k-character value took seconds).
_NUMBER_RE = re.compile(
    r"""\s*(?P<sign>[-+−]?)\s*
        (?P<mant>(?:\d{1,3}(?:,\d{3})+|\d+(?:_\d+)*)(?:\.(?P<frac>\d*))?|\.(?P<frac2>\d+))
        (?:[eE](?P<exp>[-+]?\d+))?""",
    re.VERBOSE,
)
#: exponents beyond this many digits are out of any float's range (and ``int()`` refuses over 4,300 digits)
_MAX_EXP_DIGITS = 6


class _Number:
    """A number matched at the start of a text, and the unit text after it (linear in the text's length)."""

    __slots__ = ("m", "unit")

    def __init__(self, m: re.Match[str], unit: str):
        self.m, self.unit = m, unit

    def group(self, name: str) -> str | None:
        return self.unit if name == "unit" else self.m.group(name)


def _match_number(text: str) -> _Number | None:
    m = _NUMBER_RE.match(text)
    if not m:
        return None
    exp = m.group("exp")
    if exp is not None and len(exp.lstrip("+-").lstrip("0")) > _MAX_EXP_DIGITS:
        raise UnitError(f"{_short(text)} has an exponent outside the range of a number")
    return _Number(m, text[m.end():].strip())


def _short(text: str, limit: int = 60) -> str:
    """``repr`` of a text, cut to ``limit`` characters (an error message must not echo a megabyte)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"


@dataclass(frozen=True)
class Value:
    """A parsed number: ``si`` in base units, ``unit`` as written, ``half_ulp_si`` the claimed precision."""

    si: float
    unit: str
    text: str
    half_ulp_si: float

    @property
    def scale(self) -> float:
        return self.si / self.written if self.written else 1.0

    @property
    def written(self) -> float:
        return _written_number(self.text)


def _written_number(text: str) -> float:
    try:
        m = _match_number(text)
    except UnitError:
        return math.nan
    if not m:
        return math.nan
    return _number_from_match(m)


def _number_from_match(m: _Number) -> float:
    mant = (m.group("mant") or "").replace(",", "").replace("_", "")
    exp = int(m.group("exp") or 0)
    sign = -1.0 if m.group("sign") in ("-", "−") else 1.0
    return sign * float(f"{mant}e{exp}")  # one correctly rounded conversion ("8.2e9" is 8200000000.0)


def parse_number(text: str | int | float) -> tuple[float, float, str]:
    """Parse a bare number written by a person: ``(value, half_ulp, unit_text)``.

    Accepts thousands separators (``22,959``), underscores, decimals and exponents (``8.0e9``, ``1e3``).
    """
    if isinstance(text, bool):
        raise UnitError(f"expected a number, got {text!r}")
    if isinstance(text, (int, float)):
        text = repr(text) if isinstance(text, float) else str(text)
    text = str(text)
    m = _match_number(text)
    if not m:
        raise UnitError(f"{_short(text)} is not a number (write e.g. 1,742 or 8.0e9)")
    value = _number_from_match(m)
    if not math.isfinite(value):
        raise UnitError(f"{_short(text)} is too large for a number (it overflows a 64-bit float)")
    frac = m.group("frac") or m.group("frac2") or ""
    exp = int(m.group("exp") or 0)
    half_ulp = float(f"5e{exp - len(frac) - 1}")  # 0.5 * 10**(exp - digits), never an OverflowError
    if not math.isfinite(half_ulp):  # "0e999": a zero whose last digit claims a precision of ±inf
        raise UnitError(f"{_short(text)} has an exponent outside the range of a number")
    return value, half_ulp, m.unit


def parse_printed_number(text: str) -> int | float:
    """A bare number as a program prints it: ``"2,097,152"`` -> 2097152 (int), ``"2048.00"`` -> 2048.0.

    An int when written without a fraction or an exponent, else a float; a unit or other text is a
    :class:`UnitError`.
    """
    text = str(text)
    m = _match_number(text)
    if not m or m.unit:
        raise UnitError(f"{_short(text)} is not a bare number")
    value = _number_from_match(m)
    if not math.isfinite(value):
        raise UnitError(f"{_short(text)} is too large for a number (it overflows a 64-bit float)")
    if m.group("frac") is None and m.group("frac2") is None and m.group("exp") is None:
        digits = int(str(m.group("mant")).replace(",", "").replace("_", ""))
        return -digits if value < 0 else digits
    return value


def to_si(value: str | int | float, dimension: str) -> float:
    """A number already in SI base units, or text with a unit of ``dimension`` (``"2,039 GB/s"``), as SI.

    Numbers pass through unchanged (as floats); text goes through :func:`parse_value`.
    """
    if isinstance(value, bool):
        raise UnitError(f"expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise UnitError(f"expected a number, got {type(value).__name__} {value!r}")
    return parse_value(value, dimension).si


def to_int(value: str | int | float) -> int:
    """A whole number given as an int, an integral float or text (``"151,936"``, ``"4e3"``)."""
    if isinstance(value, bool):
        raise UnitError(f"expected an integer, got {value!r}")
    if isinstance(value, str):
        text = value
        try:
            value = parse_value(text, "count").si
        except UnitError:
            raise UnitError(f"cannot read {_short(text)} as an integer") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int):
        raise UnitError(f"expected an integer, got {value!r}")
    return value


def unit_scale(dimension: str, unit: str) -> float:
    """Factor from ``unit`` to the SI base unit of ``dimension``; :class:`UnitError` when it does not fit."""
    try:
        table = DIMENSIONS[dimension]
    except KeyError:
        raise UnitError(f"unknown dimension {dimension!r}") from None
    if unit in table:
        return table[unit]
    for key, factor in table.items():  # forgiving about case for word units (Tok/s, MS is not forgiven)
        if key and key.lower() == unit.lower() and key not in ("ms", "Ms", "MB", "mB"):
            return factor
    accepted = ", ".join(sorted(k for k in table if k)) or "a bare number"
    raise UnitError(f"unit {_short(unit)} does not fit a {dimension.replace('_', ' ')} quantity "
                    f"(use one of: {accepted})")


def parse_value(text: str | int | float, dimension: str) -> Value:
    """Parse ``text`` as a value of ``dimension`` (see :data:`DIMENSIONS`)."""
    raw = str(text).strip()
    value, half_ulp, unit = parse_number(raw)
    factor = unit_scale(dimension, unit)
    si = value * factor
    if not (math.isfinite(si) and math.isfinite(half_ulp * factor)):
        raise UnitError(f"{_short(raw)} is too large for a number once in base units (it overflows a 64-bit float)")
    return Value(si=si, unit=unit, text=raw, half_ulp_si=half_ulp * factor)


def signed_percent(rel: float, decimals: int = 1) -> str:
    """A relative change as a signed percentage (``0.25`` -> ``+25.0%``) with ``decimals`` places; one that rounds to
    nothing is ``0.0%``, never ``-0.0%`` nor ``+0.0%`` (a sign on a zero says a direction the number does not have)."""
    text = f"{rel * 100:+.{decimals}f}%"
    return text[1:] if float(text[1:-1]) == 0 else text


def shown_unit(dimension: str, unit: str, predicted_text: str = "") -> str | None:
    """The unit a stored value is shown in: the one its ink was written in; for a ratio whose ink is a bare number
    (``1.00``, Little's law) none at all (``""``: a bare number, as the ink), not the percentage a ratio defaults
    to; else None (:func:`format_value` then takes the dimension's default)."""
    if unit:
        return unit
    if dimension == "ratio":
        try:
            float(predicted_text.replace(",", ""))
            return ""
        except ValueError:
            pass
    return None


def format_value(si: float | None, dimension: str, unit: str | None = None, *, digits: int = 4) -> str:
    """Format an SI value in ``unit`` (or the dimension's default) with ``digits`` significant figures."""
    if si is None:
        return "—"
    if isinstance(si, bool):
        return "true" if si else "false"
    if isinstance(si, str):
        return si
    if unit is None:
        unit = DEFAULT_UNIT.get(dimension, "")
        if dimension == "bytes":
            unit = _auto_bytes_unit(si)
        if dimension == "ratio":
            unit = "%"
    try:
        factor = unit_scale(dimension, unit)
    except UnitError:
        factor, unit = 1.0, ""
    x = si / factor
    return f"{_fmt_sig(x, digits)} {unit}".strip()


def decimal_bytes_unit(si: float) -> str:
    """The decimal unit a datasheet would print ``si`` bytes in: GB from 1 GB on, else MB, kB or B (so a tiny model's
    weights read 744.70 kB, never 0.00074470 GB)."""
    a = abs(si)
    for unit, size in (("GB", GB), ("MB", MB), ("kB", KB)):  # GB however large: the unit weights are quoted in
        if a >= size:
            return unit
    return "B"


def _auto_bytes_unit(si: float) -> str:
    a = abs(si)
    if a >= GIB:
        return "GiB"
    if a >= MIB:
        return "MiB"
    if a >= KIB:
        return "KiB"
    return "B"


def _fmt_sig(x: float, digits: int) -> str:
    """``x`` to at most ``digits`` significant figures, without the trailing zeros rounding leaves: a value that
    has fewer digits is printed with those (88.8 reads "88.8", never "88.800", which claims a precision the
    number was never given)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{x:,.0f}"
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= 15 or magnitude <= -5:
        mantissa, _, exponent = f"{x:.{digits - 1}e}".partition("e")
        return f"{_drop_zeros(mantissa)}e{exponent}"
    decimals = max(0, digits - 1 - magnitude)
    return _drop_zeros(f"{x:,.{decimals}f}")


def _drop_zeros(text: str) -> str:
    """'88.800' -> '88.8', '2.000' -> '2'; a text without a decimal point is left as it is ('1,000')."""
    return text.rstrip("0").rstrip(".") if "." in text else text
