"""The results file (see docs/results-schema.md): writing it as points finish, reading it back for replay.

:class:`ResultsWriter` rewrites the whole JSON atomically after every point, so a crash keeps every point
measured before it. :class:`RecordedMeasurement` serves a stored file to the quantity registry, which is what
``--replay`` and ``roofline report`` use; a live sweep serves the same interface from memory.

The file's objects are typed at this JSON boundary: :class:`ResultsData` (the file), :class:`RunSetup`, and the
point and engine-report records of :mod:`pytest_roofline.quantities.measurement` (re-exported here), which is
where the quantity registry reads them. :func:`point_record` is the one place a live point is assembled.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

from pytest_roofline.errors import NotMeasured, ResultsError
from pytest_roofline.quantities.measurement import (
    BATCH1_ID,
    ClientStats,
    EngineReport,
    Measurement,
    PointMode,
    PointRecord,
    ServerStats,
    point_id,
    point_mode,
)

__all__ = ["SCHEMA", "SCHEMA_VERSION", "ResultsError", "ResultsWriter", "RecordedMeasurement", "load_results",
           "new_results", "git_commit", "point_record", "ResultsData", "RunSetup", "HardwareSetup", "ModelSetup",
           "EngineSetup", "ErrorRecord", "PointRecord", "ClientStats", "ServerStats", "EngineReport"]

SCHEMA = "pytest-roofline/results"
SCHEMA_VERSION = 1


class HardwareSetup(TypedDict, total=False):
    declared: str | None  # the catalog id the prediction file names
    detected: dict[str, Any] | None  # measure.gpu.DetectedGPU.to_dict(), None without a GPU
    reanchored_to: str | None  # --reanchor: the catalog id the model values were computed for


class ModelSetup(TypedDict, total=False):
    name: str | None
    path: str | None


class EngineSetup(TypedDict, total=False):
    """How the engine was started (``Engine.launch_info()`` / ``Endpoint.launch_info()``)."""

    name: str
    version: str | None
    argv: list[str] | None
    env: dict[str, str] | None
    log_file: str | None
    endpoint: str
    api_key_env: str | None
    notes: str


class RunSetup(TypedDict, total=False):
    """The file's ``setup`` object: what was run, where, from which commit."""

    predictions_file: str
    hardware: HardwareSetup
    model: ModelSetup
    engine: EngineSetup
    workload: dict[str, Any]
    mode: str  # "engine" | "endpoint" | "transcribed"
    commit: str | None
    host: str | None


class ErrorRecord(TypedDict):
    point: str | None
    message: str
    log_tail: str


class ResultsData(TypedDict, total=False):
    """A whole results file (``docs/results-schema.md``); ``_path`` is added in memory when it is read back."""

    schema: str
    schema_version: int
    source: str  # "measured" | "transcribed"
    created_at: str
    updated_at: str
    status: str  # "running" | "complete" | "aborted"
    transcription: Any
    setup: RunSetup
    engine_report: EngineReport | None
    points: list[PointRecord]
    errors: list[ErrorRecord]
    _path: str


def point_record(plan: Mapping[str, Any], *, started_at: str | None, finished_at: str | None,
                 duration_s: float | None, client: ClientStats, server: ServerStats | None,
                 requests_file: str | None, flags: Sequence[str] = ()) -> PointRecord:
    """A measured point: the plan's fields (id, mode, concurrency, rate, lengths, request counts), then what was
    measured. ``duration_s`` is the measurement window (the one ``client``'s throughputs are rates over); it
    replaces the plan's requested duration."""
    measured: dict[str, Any] = {
        "started_at": started_at, "finished_at": finished_at, "duration_s": duration_s, "client": client,
        "server": server, "contaminated": bool(server and server.get("contaminated")), "flags": list(flags),
        "requests_file": requests_file}
    return cast(PointRecord, {**plan, **measured})


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_commit(cwd: str | os.PathLike[str] | None = None) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             timeout=5)
        sha = out.stdout.strip()
        if out.returncode == 0 and sha:
            dirty = subprocess.run(["git", "status", "--porcelain"], cwd=cwd, capture_output=True, text=True,
                                   timeout=5).stdout.strip()
            return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def new_results(setup: RunSetup | Mapping[str, Any], *, source: str = "measured") -> ResultsData:
    now = _now()
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "source": source, "created_at": now, "updated_at": now,
        "status": "running",
        "setup": cast(RunSetup, {"commit": git_commit(), "host": socket.gethostname(), **setup}),
        "engine_report": None, "points": [], "errors": [],
    }


class ResultsWriter:
    """Owns one results file; every change is flushed at once with an atomic replace."""

    def __init__(self, path: Path, data: ResultsData):
        self.path = Path(path)
        self.data = data
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.flush()

    def flush(self) -> None:
        self.data["updated_at"] = _now()
        fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=self.path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.data, fh, indent=1, default=_json_default)
            fh.write("\n")
        os.replace(tmp, self.path)

    def set_engine_report(self, report: EngineReport | Mapping[str, Any] | None) -> None:
        self.data["engine_report"] = cast(EngineReport, dict(report)) if report else None
        self.flush()

    def add_point(self, point: PointRecord) -> None:
        self.data["points"].append(cast(PointRecord, dict(point)))
        self.flush()

    def add_error(self, point_id: str | None, message: str, log_tail: str = "") -> None:
        self.data["errors"].append({"point": point_id, "message": message, "log_tail": log_tail})
        self.flush()

    def finish(self, status: str = "complete") -> None:
        self.data["status"] = status
        self.flush()


def _json_default(o: Any) -> Any:
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def load_results(path: str | os.PathLike[str]) -> ResultsData:
    """Read and check a results file; :class:`ResultsError` names what is wrong."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{p}: no such results file") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{p}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{p}: not a pytest-roofline results file (expected \"schema\": \"{SCHEMA}\")")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(f"{p}: schema_version {data.get('schema_version')!r} is not supported "
                           f"(this pytest-roofline reads version {SCHEMA_VERSION})")
    if not isinstance(data.get("points"), list):
        raise ResultsError(f"{p}: \"points\" must be a list")
    return cast(ResultsData, data)


class RecordedMeasurement(Measurement):
    """Serves a stored results file to the quantity registry: a :class:`~pytest_roofline.quantities.measurement.
    Measurement` (``points()``, ``point()``, ``engine_report()``)."""

    def __init__(self, data: ResultsData | Mapping[str, Any], *, source: str = "results file"):
        self.data = cast(ResultsData, data)
        self.source = source

    def points(self) -> list[PointRecord]:
        return list(self.data.get("points") or [])

    def point(self, *, concurrency: int | None = None, rate: float | None = None) -> PointRecord:
        for p in RecordedMeasurement.points(self):
            if p.get("id") == BATCH1_ID:
                continue
            mode = point_mode(p)
            if concurrency is not None and mode is PointMode.CLOSED and p.get("concurrency") == concurrency:
                return p
            rate_req_s = p.get("rate_req_s")
            if rate is not None and mode is PointMode.OPEN and rate_req_s is not None and abs(
                    float(rate_req_s) - rate) < 1e-9:
                return p
        what = f"concurrency {concurrency}" if concurrency is not None else f"rate {rate:g} req/s"
        have = ", ".join(point_id(p) for p in RecordedMeasurement.points(self)) or "none"
        raise NotMeasured(f"the {self.source} has no point at {what} (it has: {have})")

    def engine_report(self) -> EngineReport | None:
        return self.data.get("engine_report")
