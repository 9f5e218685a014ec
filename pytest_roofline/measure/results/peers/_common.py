"""What every peer reader shares: reading a JSON file with a named error, and assembling a results document.

A peer's file becomes the project's results document (``docs/results-schema.md``, the one
:class:`~pytest_roofline.measure.results.RecordedMeasurement` replays), so the quantity registry reads a vLLM
bench file exactly as it reads a run of its own. A figure the peer does not report is absent (``null``) and its
reason is listed under the point's ``not_reported``; it is never 0.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_roofline import bounded
from pytest_roofline.errors import BoundedInputError, ResultsError
from pytest_roofline.measure.results.file import SCHEMA, SCHEMA_VERSION, ResultsData, check_results
from pytest_roofline.quantities.measurement import PointRecord

__all__ = ["MAX_PEER_FILE_BYTES", "read_json_text", "loads_json", "load_json", "number", "results_document",
           "closed_point_id", "open_point_id"]


#: the largest peer's file read (a 120 MB vllm bench --save-detailed file reads in ~14 s; bounded.py's bound)
MAX_PEER_FILE_BYTES = bounded.MAX_DOCUMENT_BYTES


def read_json_text(path: Path) -> str:
    """The text of ``path`` read through :mod:`pytest_roofline.bounded`: a FIFO, a device or a file over
    :data:`MAX_PEER_FILE_BYTES` is refused before it is opened; :class:`ResultsError` names the file and why."""
    if not path.exists() and not path.is_symlink():
        raise ResultsError(f"{path}: no such results file")
    try:
        return bounded.decode_utf8(bounded.read_bytes(path, max_bytes=MAX_PEER_FILE_BYTES, what="the results file"),
                                   str(path))
    except BoundedInputError as exc:
        raise ResultsError(str(exc)) from None


def loads_json(text: str, path: Path, *, line: int | None = None) -> Any:
    """``text`` (the file ``path``, or its line ``line``) as JSON, bounded in depth (:func:`bounded.loads_json`:
    a value nested 100,000 deep is one error, never a ``RecursionError``); a syntax error stays
    ``json.JSONDecodeError`` for the caller to word."""
    try:
        return bounded.loads_json(text, str(path), line=line)
    except BoundedInputError as exc:
        raise ResultsError(str(exc)) from None


def load_json(path: Path) -> Any:
    text = read_json_text(path)
    try:
        return loads_json(text, path)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None


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
    counts = Counter(str(p.get("id")) for p in points)  # linear: a folder of 10,000 files is 10,000 points
    dup = sorted(i for i, n in counts.items() if n > 1)
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
