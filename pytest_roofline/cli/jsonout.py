"""What every ``--json`` of the ``roofline`` command writes: strict JSON, never ``NaN`` or ``Infinity`` (Python's
``json.dumps`` writes both by default, and JSON.parse, jq and most parsers refuse them).  A value with no finite
number is ``null``; whatever says why (a band note, an error) travels beside it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps", "finite_or_none"]


def finite_or_none(obj: Any) -> Any:
    """``obj`` with every non-finite float (in dicts, lists and tuples, at any depth) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_none(v) for v in obj]
    return obj


def dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps`` of :func:`finite_or_none` of ``obj``, with ``allow_nan=False`` as the guard: a non-finite
    number that got past it (an object json serialises by itself) is a ValueError, never invalid JSON."""
    return json.dumps(finite_or_none(obj), allow_nan=False, **kw)
