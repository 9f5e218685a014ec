"""The results file (see docs/results-schema.md): writing it as points finish, reading it back for replay.

:class:`ResultsWriter` rewrites the whole JSON atomically after every point, so a crash keeps every point
measured before it. :class:`RecordedMeasurement` serves a stored file to the quantity registry, which is what
``--replay`` and ``roofline report`` use; a live sweep serves the same interface from memory.

The file's objects are typed at this JSON boundary: :class:`ResultsData` (the file), :class:`RunSetup`, and the
point and engine-report records of :mod:`pytest_roofline.quantities.measurement` (re-exported here), which is
where the quantity registry reads them. :func:`point_record` is the one place a live point is assembled.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from pytest_roofline import bounded, redact
from pytest_roofline.errors import BoundedInputError, NotMeasured, ResultsError
from pytest_roofline.quantities.measurement import (
    BATCH1_ID,
    ClientStats,
    EngineReport,
    LoadgenChecks,
    Measurement,
    PointMode,
    PointRecord,
    ServerStats,
    point_id,
    point_mode,
    same_rate,
)

__all__ = ["SCHEMA", "SCHEMA_VERSION", "ResultsError", "ResultsWriter", "RecordedMeasurement", "load_results",
           "check_results", "new_results", "git_commit", "git_branch", "point_record", "ResultsData", "RunSetup",
           "HardwareSetup", "ModelSetup", "EngineSetup", "ErrorRecord", "PointRecord", "ClientStats", "ServerStats",
           "EngineReport", "portable_setup", "resolved_setup",
           "RunSetupMode", "ResultsSource", "ResultsStatus", "ResultsGuard", "named_prediction_file"]

SCHEMA = "pytest-roofline/results"
SCHEMA_VERSION = 1


class HardwareSetup(TypedDict, total=False):
    declared: str | None  # the catalog id the prediction file names
    detected: dict[str, Any] | None  # measure.gpu.DetectedGPU.to_dict(), None without a GPU
    reanchored_to: str | None  # --reanchor: the catalog id the model values were computed for


#: how a results file's run was made (``setup.mode``): a sweep that started the engine, one against a running
#: endpoint, numbers transcribed by hand, or another tool's files read in (``measure.results.peers``)
RunSetupMode = Literal["engine", "endpoint", "transcribed", "imported"]
#: who made the numbers (``source``): this load generator, a transcription, or the peer tool that measured them
ResultsSource = Literal["measured", "transcribed", "vllm bench serve", "GuideLLM", "AIPerf"]
#: where the run stands (``status``): points still being measured, all measured, stopped by an error, stopped by
#: the user or killed (Ctrl-C, SIGTERM, SIGKILL: written by the run, or by its guard process when the run is gone)
ResultsStatus = Literal["running", "complete", "aborted", "interrupted"]


class ModelSetup(TypedDict, total=False):
    name: str | None
    path: str | None


class EngineSetup(TypedDict, total=False):
    """How the engine was started (``Engine.launch_info()`` / ``Endpoint.launch_info()``)."""

    name: str
    version: str | None
    version_source: str | None  # endpoint mode: "/version" when the server answered it
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
    mode: RunSetupMode
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
    source: ResultsSource
    created_at: str
    updated_at: str
    status: ResultsStatus
    transcription: Any
    setup: RunSetup
    engine_report: EngineReport | None
    points: list[PointRecord]
    errors: list[ErrorRecord]
    _path: str


def point_record(plan: Mapping[str, Any], *, started_at: str | None, finished_at: str | None,
                 duration_s: float | None, client: ClientStats, server: ServerStats | None,
                 requests_file: str | None, flags: Sequence[str] = (),
                 loadgen: LoadgenChecks | None = None) -> PointRecord:
    """A measured point: the plan's fields (id, mode, concurrency, rate, lengths, request counts), then what was
    measured. ``duration_s`` is the measurement window (the one ``client``'s throughputs are rates over); it
    replaces the plan's requested duration. ``loadgen``: the load generator's self-checks of the run."""
    measured: dict[str, Any] = {
        "started_at": started_at, "finished_at": finished_at, "duration_s": duration_s, "client": client,
        "server": server, "contaminated": bool(server and server.get("contaminated")), "flags": list(flags),
        "requests_file": requests_file, "loadgen": loadgen}
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


def git_branch(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The checked-out branch (None on a detached HEAD, as CI checkouts often are, or outside git); CI's own
    ``GITHUB_HEAD_REF``/``GITHUB_REF_NAME`` name it there."""
    for var in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        out = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=cwd, capture_output=True, text=True,
                             timeout=5)
        name = out.stdout.strip()
        if out.returncode == 0 and name and name != "HEAD":
            return name
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def new_results(setup: RunSetup | Mapping[str, Any], *, source: ResultsSource = "measured") -> ResultsData:
    now = _now()
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "source": source, "created_at": now, "updated_at": now,
        "status": "running",
        "setup": cast(RunSetup, {"commit": git_commit(), "host": socket.gethostname(), **setup}),
        "engine_report": None, "points": [], "errors": [],
    }


class ResultsWriter:
    """Owns one results file; every change is flushed at once with an atomic replace.

    Everything it is given passes the one redaction step first (:func:`pytest_roofline.redact.redact_data`): the
    engine's arguments, what the server answered, error messages and log tails reach the file, and the scoring
    that reads :attr:`data`, with every secret the run knows or that looks like one replaced by ``***``."""

    def __init__(self, path: Path, data: ResultsData, *, guard: bool = False):
        self.path = Path(path)
        self.data = cast(ResultsData, redact.redact_data(data))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.flush()
        self._guard: ResultsGuard | None = None
        if guard:  # a run killed outright (SIGKILL) cannot write its own status: the guard does
            with contextlib.suppress(OSError):
                self._guard = ResultsGuard(self.path)

    def flush(self) -> None:
        """Write the file whole (a temporary file, then an atomic replace): a reader sees the last complete
        version, never a cut one. A write that fails (the disk is full, the folder is gone) is a ResultsError
        naming the file; the version before it stays in place."""
        self.data["updated_at"] = _now()
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=self.path.parent)
            umask = os.umask(0o022)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a results file is read like any other artefact
            doc = dict(redact.redact_data(self.data))
            if isinstance(doc.get("setup"), Mapping):
                doc["setup"] = portable_setup(doc["setup"], self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=1, default=_json_default)
                fh.write("\n")
            os.replace(tmp, self.path)
            tmp = None
        except OSError as exc:
            raise ResultsError(f"{self.path}: cannot write the results file ({exc.strerror or exc}); the version "
                               "written before this change is kept") from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def set_engine_report(self, report: EngineReport | Mapping[str, Any] | None) -> None:
        self.data["engine_report"] = cast(EngineReport, redact.redact_data(dict(report))) if report else None
        self.flush()

    def add_point(self, point: PointRecord) -> None:
        self.data["points"].append(cast(PointRecord, redact.redact_data(dict(point))))
        self.flush()

    def add_error(self, point_id: str | None, message: str, log_tail: str = "") -> None:
        self.data["errors"].append({"point": point_id, "message": redact.redact_text(message),
                                    "log_tail": redact.redact_text(log_tail)})
        self.flush()

    def finish(self, status: ResultsStatus = "complete") -> None:
        self.data["status"] = status
        self.flush()
        if self._guard is not None:  # the file says how the run ended: the guard has nothing to do
            self._guard.release()
            self._guard = None


# The guard: a small process in its own session that holds the read end of a pipe whose write end only the run
# holds. EOF without the all-clear byte means the run is gone without finishing (SIGKILL, a crash): the guard then
# rewrites a results file still saying "running" as "interrupted", atomically, keeping every point in it.
_GUARD_SRC = r"""
import json, os, sys, tempfile
path = sys.argv[1]
if sys.stdin.buffer.read(1) == b"q":
    raise SystemExit(0)
try:
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    if isinstance(doc, dict) and doc.get("status") == "running":
        doc["status"] = "interrupted"
        doc.setdefault("errors", []).append({"point": None, "message": "the run ended without finishing (killed); "
                                             "the points above were measured before it", "log_tail": ""})
        fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=os.path.dirname(path) or ".")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=1)
            out.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
except (OSError, ValueError):
    pass
"""


class ResultsGuard:
    """Marks a results file ``interrupted`` if the process that writes it dies before :meth:`release`."""

    def __init__(self, path: Path) -> None:
        r, w = os.pipe()  # both ends non-inheritable; only the guard gets r as its stdin
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _GUARD_SRC, str(path)], stdin=r,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True)
        except BaseException:
            os.close(w)
            raise
        finally:
            os.close(r)
        self._w: int | None = w

    def release(self) -> None:
        """The run finished and wrote its status: the guard exits without touching the file."""
        if self._w is not None:
            with contextlib.suppress(OSError):
                os.write(self._w, b"q")
            os.close(self._w)
            self._w = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


# The setup's fields that name a file or folder. On disk they are relative to the results file's folder, or
# "~/..." under the home folder, so a results file that is moved, copied or committed names the same files on any
# machine (an absolute path names a place on the machine that wrote it); in memory they are absolute again.
def _path_fields(setup: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(container, key) of every path-valued field of a results file's ``setup``."""
    out: list[tuple[Any, Any]] = []
    if isinstance(setup.get("predictions_file"), str):
        out.append((setup, "predictions_file"))
    model = setup.get("model")
    if isinstance(model, dict) and isinstance(model.get("path"), str):
        out.append((model, "path"))
    engine = setup.get("engine")
    if isinstance(engine, dict):
        if isinstance(engine.get("log_file"), str):
            out.append((engine, "log_file"))
        argv = engine.get("argv")
        if isinstance(argv, list):
            out.extend((argv, i) for i, a in enumerate(argv) if isinstance(a, str) and _looks_like_path(a))
    dataset = (setup.get("workload") or {}).get("dataset") if isinstance(setup.get("workload"), dict) else None
    if isinstance(dataset, dict) and isinstance(dataset.get("path"), str):
        out.append((dataset, "path"))
    return out


def _looks_like_path(text: str) -> bool:
    """An engine argument that names a file: absolute, or written by :func:`portable_setup` (``~/``, ``./``,
    ``../``); option values such as ``127.0.0.1`` or ``bfloat16`` are not paths."""
    return text.startswith(("/", "~/", "./", "../"))


def _portable(path: str, base: Path) -> str:
    """``path`` as a results file in ``base`` stores it: relative to ``base`` when the path is in the repository
    that holds ``base`` (or below ``base`` outside a repository), ``~/...`` under the home folder, else unchanged
    (a system path such as ``/usr/bin/python3`` names the same file on every machine)."""
    if not os.path.isabs(path):
        return path
    p = Path(os.path.normpath(path))
    home = Path(os.path.expanduser("~"))
    top = _tree_top(base)
    if p.is_relative_to(top):
        rel = Path(os.path.relpath(p, base)).as_posix()
        return rel if rel.startswith("..") or rel == "." else f"./{rel}"
    if home != Path("/") and p.is_relative_to(home):
        return "~/" + p.relative_to(home).as_posix()
    return path


def _tree_top(base: Path) -> Path:
    """The repository that holds ``base`` (the nearest folder with ``.git``), else ``base`` itself."""
    for d in (base, *base.parents):
        if (d / ".git").exists():
            return d
    return base


def _resolved(path: str, base: Path) -> str:
    """A stored path made absolute: ``~/`` under the home folder, ``./`` and ``../`` from the results file's
    folder; any other path is left as written (older and hand-written files name paths from the folder the run
    was started in, e.g. ``predictions/day3.yaml``)."""
    if path.startswith("~/"):
        return os.path.expanduser(path)
    if path.startswith(("./", "../")):
        return os.path.normpath(base / path)
    return path


def portable_setup(setup: Mapping[str, Any], base: str | os.PathLike[str]) -> dict[str, Any]:
    """A copy of a results file's ``setup`` with every path written as :func:`_portable` does, for a file in
    ``base``."""
    out = json.loads(json.dumps(setup, default=_json_default))
    b = Path(os.path.abspath(base))
    for container, key in _path_fields(out):
        container[key] = _portable(container[key], b)
    return cast(dict[str, Any], out)


def resolved_setup(setup: Mapping[str, Any], base: str | os.PathLike[str]) -> dict[str, Any]:
    """The inverse of :func:`portable_setup`: the stored relative and ``~/`` paths made absolute again."""
    out = json.loads(json.dumps(setup, default=_json_default))
    b = Path(os.path.abspath(base))
    for container, key in _path_fields(out):
        container[key] = _resolved(container[key], b)
    return cast(dict[str, Any], out)


def _json_default(o: Any) -> Any:
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def load_results(path: str | os.PathLike[str]) -> ResultsData:
    """Read and check a results file; :class:`ResultsError` names what is wrong (the file, and the field).

    Everything the scorer and the reports read is checked here, once: a file that is a directory, unreadable, not
    UTF-8, not JSON, nested too deeply, or that holds NaN/±Infinity, a string where a number belongs, or a string
    where an object belongs is refused with the path of the field, never read into a verdict."""
    p = Path(path)
    if p.exists() and not p.is_dir():  # a FIFO, a device or a file over the size bound: refused before reading
        try:
            bounded.check_file(p, what="the results file")
        except BoundedInputError as exc:
            raise ResultsError(str(exc)) from None
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ResultsError(f"{p}: no such results file") from None
    except IsADirectoryError:
        raise ResultsError(f"{p}: is a directory, not a results file (give the results.json inside it)") from None
    except PermissionError:
        raise ResultsError(f"{p}: cannot be read (permission denied)") from None
    except OSError as exc:
        raise ResultsError(f"{p}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{p}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r}); a results "
                           "file is UTF-8 JSON") from None
    try:
        data = bounded.loads_json(text, str(p))
    except json.JSONDecodeError as exc:
        raise ResultsError(bounded.json_syntax_error(exc, str(p))) from None
    except BoundedInputError as exc:
        raise ResultsError(f"{p}: nested too deeply to be a results file ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{p}: not a pytest-roofline results file (expected \"schema\": \"{SCHEMA}\"), nor "
                           "one this project reads from a peer (vllm bench serve --save-result, GuideLLM "
                           "benchmarks JSON, an AIPerf/GenAI-Perf profile export)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(f"{p}: schema_version {data.get('schema_version')!r} is not supported "
                           f"(this pytest-roofline reads version {SCHEMA_VERSION})")
    if not isinstance(data.get("points"), list):
        raise ResultsError(f"{p}: \"points\" must be a list")
    check_results(data, p)
    if isinstance(data.get("setup"), dict):
        data["setup"] = resolved_setup(data["setup"], p.parent)
    return cast(ResultsData, data)


def check_results(data: Mapping[str, Any], where: str | os.PathLike[str]) -> None:
    """The one check of a results document's figures and shape (a file read back, or one a peer reader built):
    :class:`ResultsError` names ``where`` and the first field that is wrong."""
    problem = _first_non_finite(data) or _check_shape(dict(data))
    if problem is not None:
        raise ResultsError(f"{where}: {problem}")


# --- the shape of what the scorer and the reports read (docs/results-schema.md) --------------------------------
_NUM, _INT, _STR, _BOOL, _OBJ, _LIST, _DIST = "number", "integer", "string", "true/false", "object", "list", "dist"
_CLIENT: dict[str, str] = {
    **{k: _NUM for k in ("completed", "failed", "output_throughput_tok_s", "steady_output_throughput_tok_s",
                         "steady_mean_in_flight", "held_mean_in_flight", "total_throughput_tok_s",
                         "request_throughput_req_s", "mean_in_flight", "token_count_mismatches")},
    **{k: _DIST for k in ("per_request_output_tok_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "schedule_lag_ms",
                          "littles_law")},
}
_SERVER: dict[str, str] = {
    **{k: _NUM for k in ("prefix_cache_hit_rate", "prefix_cache_queries", "prefix_cache_hits", "preemptions",
                         "max_num_requests_running", "max_num_requests_waiting", "max_kv_cache_usage",
                         "prompt_tokens", "generation_tokens", "contamination_threshold")},
    **{k: _DIST for k in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "queue_ms", "prefill_ms", "decode_ms",
                          "inference_ms")},
    "timeline": _LIST, "counter_resets": _LIST, "contaminated": _BOOL, "not_measured": _OBJ,
}
_POINT: dict[str, str] = {
    "id": _STR, "mode": _STR, "concurrency": _INT, "rate_req_s": _NUM, "burstiness": _NUM, "arrival_span": _STR,
    "sent_offsets_s": _LIST, "input_len": _INT,
    "output_len": _INT, "num_requests": _INT, "warmup_requests": _INT, "duration_s": _NUM, "client": _OBJ,
    "server": _OBJ, "contaminated": _BOOL, "flags": _LIST, "requests_file": _STR, "loadgen": _OBJ,
    "workload": _OBJ,  # the workload as run (loadgen/datasets.py): distributions, dataset + sha256, realised lengths
}
_ENGINE_REPORT: dict[str, str] = {
    **{k: _NUM for k in ("num_gpu_blocks", "block_size", "kv_cache_tokens", "available_kv_cache_gib",
                         "max_concurrency", "max_concurrency_tokens_per_request", "weights_gib", "max_model_len",
                         "startup_s")},
    "version": _STR, "sources": _OBJ, "source_reasons": _OBJ, "cross_check": _OBJ, "reasons": _OBJ,
}
#: the statistics of a distribution (and of littles_law) that are read as numbers
_DIST_NUMBERS = frozenset({"mean", "median", "min", "max", "p50", "p90", "p95", "p99", "count", "L", "lambda_req_s",
                           "W_s", "lambda_W", "ratio", "L_configured", "held_lambda_req_s", "held_W_s",
                           "held_lambda_W", "held_requests", "held_window_s"})
_TOP: dict[str, str] = {"setup": _OBJ, "engine_report": _OBJ, "errors": _LIST, "status": _STR, "source": _STR}
_SETUP: dict[str, str] = {k: _OBJ for k in ("hardware", "model", "engine", "workload")}


def _kind_problem(value: Any, kind: str, where: str) -> str | None:
    """What is wrong with ``value`` at ``where`` for ``kind`` (null is always allowed: a figure not measured)."""
    if value is None:
        return None
    ok = {
        _NUM: isinstance(value, (int, float)) and not isinstance(value, bool),
        _INT: isinstance(value, int) and not isinstance(value, bool),
        _STR: isinstance(value, str),
        _BOOL: isinstance(value, bool),
        _OBJ: isinstance(value, dict),
        _LIST: isinstance(value, list),
        _DIST: isinstance(value, dict),
    }[kind]
    if not ok:
        want = "an object" if kind in (_OBJ, _DIST) else ("a list" if kind == _LIST else f"a {kind}")
        got = f"the string {value!r}" if isinstance(value, str) else f"a {_json_type(value)}"
        if len(got) > 60:
            got = got[:60] + "…"
        return f"{where}: expected {want} or null, got {got}"
    if kind == _DIST:
        for stat, x in value.items():
            if stat not in _DIST_NUMBERS:  # notes, estimated_from, resolution_ms: not read as figures
                continue
            bad = _kind_problem(x, _NUM, f"{where}.{stat}")
            if bad:
                return bad
    return None


def _json_type(value: Any) -> str:
    return {bool: "true/false", int: "number", float: "number", str: "string", list: "list", dict: "object"}.get(
        type(value), type(value).__name__)


def _fields_problem(obj: dict[str, Any], fields: Mapping[str, str], where: str) -> str | None:
    for key, kind in fields.items():
        bad = _kind_problem(obj.get(key), kind, f"{where}.{key}" if where else key)
        if bad:
            return bad
    return None


def _check_shape(data: dict[str, Any]) -> str | None:
    """The first field whose type is not what docs/results-schema.md says, as ``path: expected ..., got ...``."""
    bad = _fields_problem(data, _TOP, "")
    if bad:
        return bad
    bad = _fields_problem(data.get("setup") or {}, _SETUP, "setup")
    if bad:
        return bad
    bad = _fields_problem(data.get("engine_report") or {}, _ENGINE_REPORT, "engine_report")
    if bad:
        return bad
    for i, err in enumerate(data.get("errors") or []):
        if not isinstance(err, dict):
            return f"errors[{i}]: expected an object, got {_json_type(err)}"
    for i, pt in enumerate(data["points"]):
        where = f"points[{i}]"
        if not isinstance(pt, dict):
            got = f"the string {pt!r}"[:60] if isinstance(pt, str) else f"a {_json_type(pt)}"
            return f"{where}: expected an object (a sweep point), got {got}"
        bad = (_fields_problem(pt, _POINT, where) or _fields_problem(pt.get("client") or {}, _CLIENT, where + ".client")
               or _fields_problem(pt.get("server") or {}, _SERVER, where + ".server"))
        if bad:
            return bad
        for j, sample in enumerate((pt.get("server") or {}).get("timeline") or []):
            if not isinstance(sample, dict):
                return f"{where}.server.timeline[{j}]: expected an object, got a {_json_type(sample)}"
    return None


def _first_non_finite(data: Any) -> str | None:
    """The path of the first NaN or ±Infinity in the document (Python's json reads them; JSON has none), walked
    without recursion."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, val = stack.pop()
        if isinstance(val, float) and not math.isfinite(val):
            return (f"{where or 'the document'}: {val!r} is not a measured value (a figure that was not measured is "
                    "null, with the reason)")
        if isinstance(val, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in reversed(list(val.items())))
        elif isinstance(val, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(val))))
    return None


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
            if rate is not None and mode is PointMode.OPEN and rate_req_s is not None and same_rate(rate_req_s, rate):
                return p
        what = f"concurrency {concurrency}" if concurrency is not None else f"rate {rate:g} req/s"
        have = ", ".join(point_id(p) for p in RecordedMeasurement.points(self)) or "none"
        status = self.data.get("status")
        why = {"interrupted": "an interrupted run (status: interrupted: Ctrl-C or SIGTERM stopped its sweep), so a "
                              "point it has not may simply not have been reached",
               "aborted": "an aborted run (status: aborted: its sweep stopped at a point that could not be measured; "
                          "see its errors)"}.get(str(status))
        raise NotMeasured(f"the {self.source} has no point at {what} (it has: {have})"
                          + (f"; the file is {why}" if why else ""))

    def engine_report(self) -> EngineReport | None:
        return self.data.get("engine_report")


def named_prediction_file(named: str, results: str | Path) -> Path | None:
    """The prediction file a results file names (``setup.predictions_file``), or None where it is not found: the
    path as given, then ``predictions/<its name>``, from here; then from the results file's own folder and each
    folder above it (results name it from the repository root they were recorded in, or from their own folder, and
    neither need be where this runs). One lookup for ``roofline compare``, ``roofline calibrate`` and a
    ``--replay`` that collected no prediction file."""
    if not named:
        return None
    p = Path(named)  # a "./" or "../" path the results stored is absolute here already (from their folder)
    candidates = [p, Path("predictions") / p.name]
    here = Path(results).resolve().parent
    for folder in [here, *here.parents]:
        candidates += [folder / p.name, folder / "predictions" / p.name] if p.is_absolute() else [
            folder / p, folder / "predictions" / p.name]
    return next((c for c in candidates if c.is_file()), None)
