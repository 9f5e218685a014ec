"""What every peer reader shares: reading a JSON file with a named error, and assembling a results document.

A peer's file becomes the project's results document (``docs/results-schema.md``, the one
:class:`~pytest_roofline.measure.results.RecordedMeasurement` replays), so the quantity registry reads a vLLM
bench file exactly as it reads a run of its own. A figure the peer does not report is absent (``null``) and its
reason is listed under the point's ``not_reported``; it is never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.file import SCHEMA, SCHEMA_VERSION, ResultsData, check_results
from pytest_roofline.quantities.measurement import PointRecord

__all__ = ["read_json_text", "number", "results_document", "closed_point_id", "open_point_id"]


def read_json_text(path: Path) -> str:
    """The text of ``path``; :class:`ResultsError` names the file and why it cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def load_json(path: Path) -> Any:
    text = read_json_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise ResultsError(f"{path}: nested too deeply to be a results file") from None


def number(value: Any) -> float | None:
    """A finite number, or None (absent, null, a string, NaN/±Infinity: not a measured value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def closed_point_id(concurrency: int) -> str:
    return f"closed-c{concurrency}"  # the ids measure.plan gives its own points


def open_point_id(rate_req_s: float) -> str:
    return f"open-r{rate_req_s:g}"


def results_document(*, source: str, where: str, points: Sequence[PointRecord], setup: Mapping[str, Any],
                     engine_report: Mapping[str, Any] | None = None, notes: str = "",
                     unchecked: Mapping[str, str] | None = None) -> ResultsData:
    """A results document holding a peer's points, checked with the same shape check as a file of our own.

    ``unchecked``: setup field -> why the peer's file cannot say it (the mismatch check lists these)."""
    ids = [str(p.get("id")) for p in points]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ResultsError(f"{where}: more than one result for the point(s) {', '.join(dup)}; keep one file per "
                           "point (a `vllm bench sweep` directory's repeats are merged, loose files are not)")
    data: dict[str, Any] = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "source": source, "status": "complete",
        "transcription": notes or None,
        "setup": {"mode": "imported", **setup, "unchecked": dict(unchecked or {})},
        "engine_report": dict(engine_report) if engine_report else None,
        "points": list(points), "errors": [], "_path": where,
    }
    check_results(data, where)
    return cast(ResultsData, data)
