"""The tolerance grammar of a prediction.

===========================  =====================================================================
written                      meaning (``ref`` is the predicted value, ``x`` the value checked)
===========================  =====================================================================
``±10%`` / ``+-10%`` / ``10%``  ``|x − ref| ≤ 10% · |ref|``
``+5%/-20%``                 ``ref·(1 − 0.20) ≤ x ≤ ref·(1 + 0.05)``
``±0.5 ms`` / ``±3``         ``|x − ref| ≤ 0.5 ms`` (a bare number is in the predicted value's unit)
``+2/-1 ms``                 ``ref − 1 ms ≤ x ≤ ref + 2 ms``
``1,600..1,900 tok/s``       ``1,600 ≤ x ≤ 1,900`` (also a YAML list ``[1600, 1900]``)
``>= 600 tok/s`` / ``<= 50 ms`` / ``> 0.9``   one-sided bounds, absolute
``<= +10%`` / ``>= -10%``    one-sided, relative to ``ref``
``exact``                    ``x == ref``
===========================  =====================================================================
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pytest_roofline.errors import ToleranceError
from pytest_roofline.units import UnitError, parse_number, unit_scale

__all__ = ["Tolerance", "ToleranceError", "parse_tolerance", "TOLERANCE_HELP", "MAX_TOLERANCE_LENGTH"]

#: the forms to write, each as it is written in YAML: a value starting with ``>`` is a block scalar there, so the
#: one-sided bound above is quoted (``tolerance: >= 600 tok/s`` does not parse)
TOLERANCE_HELP = (
    'write ±10%, +5%/-20%, ±0.5 ms, 1,600..1,900 tok/s, ">= 600 tok/s", <= +10% or exact'
)


#: the longest tolerance text read (the longest form, ``[1,600.000 tok/s, 1,900.000 tok/s]``, is ~40 characters)
MAX_TOLERANCE_LENGTH = 200


@dataclass(frozen=True)
class Tolerance:
    """Bounds around a reference value; relative parts are fractions, absolute parts SI values."""

    text: str
    rel_lo: float | None = None  # allowed relative deviation below ref (positive number), None = unbounded
    rel_hi: float | None = None
    abs_lo: float | None = None  # allowed absolute deviation below ref
    abs_hi: float | None = None
    lower: float | None = None  # absolute bounds on x
    upper: float | None = None
    lower_strict: bool = False
    upper_strict: bool = False
    exact: bool = False

    @property
    def needs_reference(self) -> bool:
        return self.exact or any(v is not None for v in (self.rel_lo, self.rel_hi, self.abs_lo, self.abs_hi)) or (
            self.lower is None and self.upper is None
        )

    def bounds(self, ref: float | None) -> tuple[float, float]:
        """The interval ``[lo, hi]`` that ``x`` must fall in (open ends are ±inf)."""
        lo, hi = -math.inf, math.inf
        if self.exact:
            return (ref, ref)  # type: ignore[return-value]
        if ref is not None:
            if self.rel_lo is not None or self.rel_hi is not None:
                span = abs(ref)
                lo = ref - span * self.rel_lo if self.rel_lo is not None else -math.inf
                hi = ref + span * self.rel_hi if self.rel_hi is not None else math.inf
            if self.abs_lo is not None or self.abs_hi is not None:
                lo = ref - self.abs_lo if self.abs_lo is not None else -math.inf
                hi = ref + self.abs_hi if self.abs_hi is not None else math.inf
        if self.lower is not None:
            lo = max(lo, self.lower)
        if self.upper is not None:
            hi = min(hi, self.upper)
        return lo, hi

    def contains(self, x: float, ref: float | None) -> bool:
        lo, hi = self.bounds(ref)
        if self.exact:
            return x == ref
        # a hair of float slack so that 0.1 + 0.2 style noise never flips a verdict; relative to the values only
        # (an absolute floor would be unit-dependent: 1e-12 is a wide margin around a 1 µs value in seconds)
        eps = 1e-12 * max(abs(x), abs(lo) if math.isfinite(lo) else 0.0, abs(hi) if math.isfinite(hi) else 0.0)
        ok_lo = x > lo if (self.lower_strict and self.lower is not None and lo == self.lower) else x >= lo - eps
        ok_hi = x < hi if (self.upper_strict and self.upper is not None and hi == self.upper) else x <= hi + eps
        return ok_lo and ok_hi


#: a percentage: a number, with an exponent or not (``1e1%``), then ``%``
_PCT = r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*%"


def parse_tolerance(text: str | list[Any] | tuple[Any, ...], dimension: str, default_unit: str = "") -> Tolerance:
    """Parse a tolerance for a quantity of ``dimension``; a bare absolute number takes ``default_unit``."""
    if isinstance(text, (list, tuple)):
        if len(text) != 2:
            raise ToleranceError(f"a range needs two ends, got {len(text)} ({TOLERANCE_HELP})")
        if any(len(str(t)) > MAX_TOLERANCE_LENGTH for t in text):
            raise ToleranceError(f"a range end is longer than {MAX_TOLERANCE_LENGTH} characters ({TOLERANCE_HELP})")
        try:
            lo = _abs(str(text[0]), dimension, default_unit)
            hi = _abs(str(text[1]), dimension, default_unit)
        except UnitError as exc:
            raise ToleranceError(f"tolerance [{text[0]}, {text[1]}]: {exc}") from None
        return _range(f"[{text[0]}, {text[1]}]", lo, hi)
    raw = str(text).strip()
    if len(raw) > MAX_TOLERANCE_LENGTH:  # the grammar's regexes backtrack on long texts; no tolerance is this long
        raise ToleranceError(f"tolerance {raw[:40]!r}... is {len(raw):,} characters long; a tolerance is at most "
                             f"{MAX_TOLERANCE_LENGTH} ({TOLERANCE_HELP})")
    s = raw.replace("+-", "±").replace("+/-", "±").replace("−", "-").replace("≥", ">=").replace("≤", "<=")
    if s.lower() in ("exact", "exactly", "0", "±0", "±0%"):
        return Tolerance(raw, exact=True)
    try:
        m = re.fullmatch(r"±?\s*" + _PCT, s)
        if m:
            r = float(m.group(1)) / 100
            return Tolerance(raw, rel_lo=r, rel_hi=r)
        m = re.fullmatch(r"\+\s*" + _PCT + r"\s*/\s*-\s*" + _PCT, s) or None
        if m:
            return Tolerance(raw, rel_hi=float(m.group(1)) / 100, rel_lo=float(m.group(2)) / 100)
        m = re.fullmatch(r"-\s*" + _PCT + r"\s*/\s*\+\s*" + _PCT, s)
        if m:
            return Tolerance(raw, rel_lo=float(m.group(1)) / 100, rel_hi=float(m.group(2)) / 100)
        m = re.fullmatch(r"(<=|>=|<|>)\s*([+-])\s*" + _PCT, s)
        if m:
            op, sign, pct = m.group(1), m.group(2), float(m.group(3)) / 100
            signed = pct if sign == "+" else -pct
            if op.startswith("<"):
                # x <= ref·(1+signed): unbounded below; rel_hi may be negative (x must be below ref)
                return Tolerance(raw, rel_hi=signed)
            return Tolerance(raw, rel_lo=-signed)
        m = re.fullmatch(r"(<=|>=|<|>)\s*(.+)", s)
        if m:
            op, bound = m.group(1), _abs(m.group(2), dimension, default_unit)
            strict = len(op) == 1
            if op.startswith("<"):
                return Tolerance(raw, upper=bound, upper_strict=strict)
            return Tolerance(raw, lower=bound, lower_strict=strict)
        m = re.fullmatch(r"±\s*(.+)", s)
        if m:
            a = _abs(m.group(1), dimension, default_unit)
            return Tolerance(raw, abs_lo=a, abs_hi=a)
        m = re.fullmatch(r"\+\s*([^/]+?)\s*/\s*-\s*(.+)", s)
        if m:
            unit = _unit_of(m.group(2)) or default_unit
            return Tolerance(raw, abs_hi=_abs(m.group(1), dimension, unit), abs_lo=_abs(m.group(2), dimension, unit))
        m = re.fullmatch(r"\[\s*(.+?)\s*(?:,\s+|;\s*)(.+?)\s*\]\s*(.*)", s) or re.fullmatch(
            r"(.+?)\s*\.\.\s*(.+?)()", s
        )
        if m:
            unit = m.group(3).strip() or _unit_of(m.group(2)) or default_unit
            lo = _abs(m.group(1), dimension, _unit_of(m.group(1)) or unit)
            hi = _abs(m.group(2) if m.group(3) == "" else m.group(2) + " " + unit, dimension, unit)
            return _range(raw, lo, hi)
    except UnitError as exc:
        raise ToleranceError(f"tolerance {raw!r}: {exc}") from None
    raise ToleranceError(f"tolerance {raw!r} does not parse: {TOLERANCE_HELP}")


def _unit_of(text: str) -> str:
    try:
        return parse_number(text)[2]
    except UnitError:
        return ""


def _abs(text: str, dimension: str, default_unit: str) -> float:
    value, _half, unit = parse_number(text)
    return value * unit_scale(dimension, unit or default_unit)


def _range(raw: str, lo: float, hi: float) -> Tolerance:
    if lo > hi:
        raise ToleranceError(f"range {raw!r} has its low end above its high end; write low..high")
    return Tolerance(raw, lower=lo, upper=hi)
