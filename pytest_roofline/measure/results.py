"""The results file (see docs/results-schema.md): writing it as points finish, reading it back for replay.

:class:`ResultsWriter` rewrites the whole JSON atomically after every point, so a crash keeps every point
measured before it. :class:`RecordedMeasurement` serves a stored file to the quantity registry, which is what
``--replay`` and ``roofline report`` use; a live sweep serves the same interface from memory.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping

from pytest_roofline.errors import NotMeasured
from pytest_roofline.errors import ResultsError

__all__ = ["SCHEMA", "SCHEMA_VERSION", "ResultsError", "ResultsWriter", "RecordedMeasurement", "load_results",
           "new_results", "git_commit"]

SCHEMA = "pytest-roofline/results"
SCHEMA_VERSION = 1


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_commit(cwd: str | os.PathLike | None = None) -> str | None:
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


def new_results(setup: Mapping[str, Any], *, source: str = "measured") -> dict[str, Any]:
    now = _now()
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "source": source, "created_at": now, "updated_at": now,
        "status": "running",
        "setup": {"commit": git_commit(), "host": socket.gethostname(), **setup},
        "engine_report": None, "points": [], "errors": [],
    }


class ResultsWriter:
    """Owns one results file; every change is flushed at once with an atomic replace."""

    def __init__(self, path: Path, data: dict[str, Any]):
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

    def set_engine_report(self, report: Mapping[str, Any] | None) -> None:
        self.data["engine_report"] = dict(report) if report else None
        self.flush()

    def add_point(self, point: Mapping[str, Any]) -> None:
        self.data["points"].append(dict(point))
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


def load_results(path: str | os.PathLike) -> dict[str, Any]:
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
    return data


class RecordedMeasurement:
    """Serves a stored results dict to the quantity registry (``points()``, ``point()``, ``engine_report()``)."""

    def __init__(self, data: Mapping[str, Any], *, source: str = "results file"):
        self.data = data
        self.source = source

    def points(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("points") or [])

    def point(self, *, concurrency: int | None = None, rate: float | None = None) -> Mapping[str, Any]:
        for p in RecordedMeasurement.points(self):
            if p.get("id") == "batch1":
                continue
            if concurrency is not None and p.get("mode", "closed") == "closed" and p.get("concurrency") == concurrency:
                return p
            if rate is not None and p.get("mode") == "open" and p.get("rate_req_s") is not None and abs(
                    float(p["rate_req_s"]) - rate) < 1e-9:
                return p
        what = f"concurrency {concurrency}" if concurrency is not None else f"rate {rate:g} req/s"
        have = ", ".join(str(p.get("id")) for p in RecordedMeasurement.points(self)) or "none"
        raise NotMeasured(f"the {self.source} has no point at {what} (it has: {have})")

    def engine_report(self) -> Mapping[str, Any] | None:
        return self.data.get("engine_report")
