"""What every peer reader shares: reading a JSON file with a named error, and assembling a results document.

A peer's file becomes the project's results document (``docs/results-schema.md``, the one
:class:`~pytest_roofline.measure.results.RecordedMeasurement` replays), so the quantity registry reads a vLLM
bench file exactly as it reads a run of its own. A figure the peer does not report is absent (``null``) and its
reason is listed under the point's ``not_reported``; it is never 0.
"""

from __future__ import annotations

import datetime as _dt
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
           "closed_point_id", "open_point_id", "peer_time", "earliest_time"]


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
        raise ResultsError(bounded.json_syntax_error(exc, str(path))) from None


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


def peer_time(value: Any) -> str | None:
    """A time a peer's file states, as ISO 8601 to the second, or None when it states none readable.

    A number is a Unix time (GuideLLM's ``start_time``/``end_time``): UTC, ``Z``. ``YYYYMMDD-HHMMSS`` is vllm bench
    serve's ``date`` (``datetime.now()`` on the client when it saved the file: the client's local time, no zone)
    and an ISO string AIPerf's ``start_time``/``end_time``; both are kept as the file states them, a zone only
    where it gives one (a time with no zone is read as UTC where runs are ordered: history)."""
    x = number(value)
    if x is not None:
        try:
            return _dt.datetime.fromtimestamp(x, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip()
    for fmt in ("%Y%m%d-%H%M%S",):
        try:
            return _dt.datetime.strptime(text, fmt).strftime("%Y-%m-%dT%H:%M:%S")
        except ValueError:
            pass
    try:
        t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        return t.strftime("%Y-%m-%dT%H:%M:%S")
    return t.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(text: str) -> _dt.datetime:
    t = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.UTC)


def earliest_time(times: Sequence[str | None]) -> str | None:
    """The earliest of :func:`peer_time`'s answers (a time with no zone read as UTC), None when none is known."""
    known = [t for t in times if t]
    return min(known, key=_utc) if known else None


def results_document(*, source: str, where: str, points: Sequence[PointRecord], setup: Mapping[str, Any],
                     engine_report: Mapping[str, Any] | None = None, notes: str = "",
                     unchecked: Mapping[str, str] | None = None, created_at: str | None = None) -> ResultsData:
    """A results document holding a peer's points, checked with the same shape check as a file of our own.

    ``unchecked``: setup field -> why the peer's file cannot say it (the mismatch check lists these).
    ``created_at``: when the peer's run was made, where its files say (:func:`peer_time`): ``roofline compare``
    heads a run with it and a replay is stored in history at it; the earliest point's time when not given."""
    counts = Counter(str(p.get("id")) for p in points)  # linear: a folder of 10,000 files is 10,000 points
    dup = sorted(i for i, n in counts.items() if n > 1)
    if dup:
        raise ResultsError(f"{where}: more than one result for the point(s) {', '.join(dup)}; keep one file per "
                           "point (a `vllm bench sweep` directory's repeats are merged, loose files are not)")
    data: dict[str, Any] = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "source": source, "status": "complete",
        **({"created_at": made} if (made := created_at or earliest_time(
            [str(p.get("started_at") or p.get("finished_at") or "") for p in points])) else {}),
        "transcription": notes or None,
        "setup": {"mode": "imported", **setup, "unchecked": dict(unchecked or {})},
        "engine_report": dict(engine_report) if engine_report else None,
        "points": list(points), "errors": [], "_path": where,
    }
    check_results(data, where)
    return cast(ResultsData, data)
