"""A verdict as JUnit XML properties a dashboard can read: numbers, with the unit in the name.

The display strings of the terminal (``-32.25% (−95.224 FLOP/byte)``, ``1,139.6 tok/s``) carry thousands commas,
a Unicode minus and the unit inside the value; a CI dashboard (Jenkins, GitLab, a notebook reading the XML)
wants ``roofline_measured_tok_per_s = 1139.6``. Every value here is a plain decimal number (the float to 12 significant
digits, or the integer when it is one), in the quantity's SI base unit except time, which is in milliseconds like every
latency this project names (``ttft_ms``); a count is a count, a ratio a fraction (71% is ``0.71``). Categories
(``memory``/``compute``, the verdict) stay words. A value the verdict does not have is left out, never 0.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_roofline.scoring import Verdict

__all__ = ["junit_properties", "UNIT_SUFFIX"]

#: dimension (units.DIMENSIONS) -> (suffix of the property name, factor from the SI base value)
UNIT_SUFFIX: dict[str, tuple[str, float]] = {
    "throughput": ("tok_per_s", 1.0),
    "request_rate": ("req_per_s", 1.0),
    "time": ("ms", 1e3),
    "bytes": ("bytes", 1.0),
    "bandwidth": ("bytes_per_s", 1.0),
    "flops": ("flop", 1.0),
    "flop_rate": ("flop_per_s", 1.0),
    "intensity": ("flop_per_byte", 1.0),
    "ratio": ("ratio", 1.0),
    "count": ("count", 1.0),
}


def _number(value: Any, factor: float = 1.0) -> str | None:
    """A plain decimal number (``1139.6``, ``25640``), or None for what is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    x = float(value) * factor
    if not math.isfinite(x):
        return None
    x = float(f"{x:.12g}")  # 12 digits: beyond any figure measured here, and no 602.4000000000001 noise
    if x == int(x) and abs(x) < 2**53:
        return str(int(x))
    return repr(x)


def junit_properties(v: Verdict) -> list[tuple[str, str]]:
    """The ``(name, value)`` properties of one verdict, for ``item.user_properties``."""
    props: list[tuple[str, str]] = [("roofline_quantity", v.quantity),
                                    ("roofline_verdict", v.status.value),
                                    ("roofline_mode", v.mode.value)]
    dimension = v.dimension
    suffix, factor = UNIT_SUFFIX.get(dimension, ("", 1.0))
    for key in ("predicted", "model", "measured"):
        value = getattr(v, f"{key}_value")
        number = _number(value, factor)
        if number is not None:
            props.append((f"roofline_{key}_{suffix}" if suffix else f"roofline_{key}", number))
            continue
        # a category (decode_bound: memory | compute), or a number's word for "there is none" (a knee: none)
        word = value if isinstance(value, str) else str(getattr(v, f"{key}_text") or "") if value is None else ""
        if word and not any(ch.isdigit() for ch in word):
            props.append((f"roofline_{key}", word))
    if suffix:
        rel = _number(v.error_rel, 100.0)
        if rel is not None:
            props.append(("roofline_error_pct", rel))  # (measured − ink) ÷ ink, in %
        ratio = _number(v.ratio)
        if ratio is not None:
            props.append(("roofline_ratio", ratio))  # measured ÷ ink
        err = _number(v.error_abs, factor)
        if err is not None:
            props.append((f"roofline_error_{suffix}", err))
        for bound, name in (("lo", "allowed_min"), ("hi", "allowed_max"), ("measured_lo", "measured_ci_lo"),
                            ("measured_hi", "measured_ci_hi")):  # the band, then the measured value's interval
            text = _number(getattr(v, bound), factor)
            if text is not None:
                props.append((f"roofline_{name}_{suffix}", text))
    more = _number(v.requests_to_decide)
    if more is not None:  # an inconclusive verdict: about how many more requests would decide it
        props.append(("roofline_requests_to_decide", more))
    if v.tolerance_text:  # the rule as written (``±15%``, ``exact``): which tolerance was applied
        props.append(("roofline_tolerance", v.tolerance_text))
    return props
