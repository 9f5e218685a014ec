"""The default history store: a directory of plain, pretty-printed JSON files, git- and artefact-friendly.

Layout (``SetupKey.parts()`` are the three directory levels)::

    <root>/index.jsonl                                  one RunSummary per line (its values as columns):
                                                        all that runs() reads
    <root>/.index.lock                                  the flock that serialises index writers
    <root>/<hardware>/<model>/<engine_version>/<run_id>/
        run.json                                        the RunSummary (written last: its presence = complete)
        verdicts.json                                   every prediction's verdict
        environment.json                                the run's environment facts
        results/000-<source>.json                       the results files, verbatim (readable by --roofline-replay)

``add`` never overwrites: the run directory is created with an exclusive ``mkdir`` and, when it exists (two
runners, same second, same commit), a new random suffix is drawn. The index line is appended under an exclusive
``fcntl.flock`` only after every file of the run is written and ``run.json`` is synced, so a crash leaves a run
directory without an index line, never a line without files. ``runs`` reads the index only (under a shared
lock); a missing index, a truncated last line or a corrupt line is rebuilt from the ``run.json`` files, and a
:class:`~pytest_roofline.errors.HistoryIndexRebuiltWarning` says so. A file of a newer ``schema_version`` is
refused with a :class:`~pytest_roofline.errors.HistoryError`.

``add_values`` is the one change to a stored run: the values a replay of its own measurement holds that it lacks
(a ``-k`` replay stored first, then the whole night), each changed file written whole beside its target and
renamed over it, run.json and the index last (see the method).

Every text written is passed through :func:`pytest_roofline.redact.redact_data` once more (the plugin already
redacts verdicts and results; the store does not rely on it).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import re
import secrets
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_roofline.errors import HistoryError, HistoryIndexRebuiltWarning
from pytest_roofline.history._records import (
    SCHEMA,
    SCHEMA_VERSION,
    RunMode,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredValue,
    as_kind,
    as_outcome,
    measurement_id,
    prediction_key,
    sort_time,
)
from pytest_roofline.history._samples import pack_samples, unpack_samples
from pytest_roofline.redact import redact_data, redact_text, redact_url

__all__ = ["DirectoryStore", "new_run_id", "read_run_dir", "record_files", "record_from_files", "merge_record",
           "INDEX_NAME"]

INDEX_NAME = "index.jsonl"
_LOCK_NAME = ".index.lock"
_RUN_ID = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[A-Za-z0-9._+-]{1,40}-[0-9a-f]{6}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
#: how often add() draws a new suffix before giving up (2**24 suffixes per second and commit: never reached)
_MAX_TRIES = 50


# --------------------------------------------------------------------------- ids and (de)serialisation


def _stamp(started_at: str) -> str:
    """``2026-12-01T02:00:00Z`` (or any ISO-8601 time) → ``20261201T020000Z`` in UTC; now when unparseable."""
    try:
        t = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
        t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    except (ValueError, AttributeError):
        t = datetime.now(UTC)
    return t.strftime("%Y%m%dT%H%M%SZ")


def new_run_id(started_at: str, commit: str | None) -> str:
    """``<YYYYmmddTHHMMSSZ>-<commit[:12] or nocommit>[-dirty]-<6 random hex>``: sortable by time, unique in a
    store; a checkout with uncommitted changes (``git_commit``'s ``-dirty`` suffix) keeps the mark whole."""
    text = (commit or "").strip()
    dirty = text.endswith("-dirty")
    c = _UNSAFE.sub("_", text.removesuffix("-dirty"))[:12].strip("._") or "nocommit"
    c += "-dirty" if dirty and c != "nocommit" else ""
    return f"{_stamp(started_at)}-{c}-{secrets.token_hex(3)}"


def _with_new_suffix(run_id: str, started_at: str, commit: str | None) -> str:
    if _RUN_ID.match(run_id):
        return f"{run_id[:-6]}{secrets.token_hex(3)}"
    return new_run_id(started_at, commit)


#: the fields of a StoredValue, in the order an index line's value rows hold them
_VALUE_FIELDS: tuple[str, ...] = tuple(StoredValue.__dataclass_fields__)
_SAMPLES_COLUMN = _VALUE_FIELDS.index("samples")
_VALUE_DEFAULTS: dict[str, Any] = {
    name: (f.default if f.default is not MISSING else (f.default_factory() if f.default_factory is not MISSING
                                                        else None))
    for name, f in StoredValue.__dataclass_fields__.items()}
_plans: dict[tuple[str, ...], tuple[tuple[tuple[int, str], ...], tuple[str, ...]]] = {}


def _encode_values(values: Sequence[StoredValue]) -> dict[str, Any]:
    """The values of one summary as columns: ``{"fields": [...], "rows": [[...], ...]}`` (an index line stays a
    third smaller and loads faster than one object per value). ``key`` is left out (null) where it is the one
    :func:`~pytest_roofline.history._records.prediction_key` derives from file, id and ``at``."""
    rows = []
    for v in values:
        row = [getattr(v, f) for f in _VALUE_FIELDS]
        if v.key == prediction_key(v.file, v.prediction_id, v.at):
            row[0] = None
        row[_SAMPLES_COLUMN] = pack_samples(v.samples)
        rows.append(row)
    return {"fields": list(_VALUE_FIELDS), "rows": rows}


def _plan(names: tuple[str, ...]) -> tuple[tuple[tuple[int, str], ...], tuple[str, ...]]:
    plan = _plans.get(names)
    if plan is None:
        known = tuple((i, n) for i, n in enumerate(names) if n in _VALUE_DEFAULTS)  # a newer minor field: ignored
        missing = tuple(n for n in _VALUE_FIELDS if n not in names)
        plan = _plans[names] = (known, missing)
    return plan


_NUMBER_FIELDS = frozenset(n for n, f in StoredValue.__dataclass_fields__.items()
                           if "float" in str(f.type) and "tuple" not in str(f.type))
_TEXT_FIELDS = frozenset(n for n, f in StoredValue.__dataclass_fields__.items() if str(f.type) == "str")


def _check_value(d: dict[str, Any]) -> None:
    """A stored value's fields are of their types (a number or null, a text, ``at`` an object of texts; its
    samples are read into a tuple, from either stored form, and so are its unheld points); a ValueError naming
    the field otherwise, so a hand-edited or damaged line is a corrupt line, never a TypeError later in drift or
    the trend page."""
    for n in _NUMBER_FIELDS:
        x = d.get(n)
        if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float))):
            raise ValueError(f"value {d.get('prediction_id')!r}: {n} is {type(x).__name__}, not a number")
    for n in _TEXT_FIELDS:
        x = d.get(n)
        if x is not None and not isinstance(x, str):
            raise ValueError(f"value {d.get('prediction_id')!r}: {n} is {type(x).__name__}, not a text")
    try:
        d["samples"] = unpack_samples(d.get("samples"))  # the compact form's text, or a list, as a tuple
    except ValueError as exc:
        raise ValueError(f"value {d.get('prediction_id')!r}: {exc}") from None
    if "unheld_points" in d:  # absent from a line written before it was kept: the value reads as held
        points = d["unheld_points"]
        if points is None:
            d["unheld_points"] = ()
        elif isinstance(points, (list, tuple)) and all(isinstance(x, str) for x in points):
            d["unheld_points"] = tuple(points)
        else:
            raise ValueError(f"value {d.get('prediction_id')!r}: unheld_points is not a list of point ids")
    for name in ("arrival_span", "workload"):  # absent from a line written before it was kept: not known (None)
        text = d.get(name)
        if text is not None and not isinstance(text, str):
            raise ValueError(f"value {d.get('prediction_id')!r}: {name} is {type(text).__name__}, not a text")
    if "outcome" in d:  # absent from a line written before it was kept; an unknown (newer) outcome reads as ""
        d["outcome"] = as_outcome(d["outcome"]) if isinstance(d["outcome"], str) else ""
    at = d.get("at")
    if at is not None and (not isinstance(at, dict)
                           or not all(isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in at.items())):
        raise ValueError(f"value {d.get('prediction_id')!r}: at is not an object of texts")


def _text_or_empty(x: Any) -> str:
    """A stored text field, or "" where it is absent or not a text (a hand-edited index)."""
    return x if isinstance(x, str) and len(x) <= 200 else ""


def _decode_values(obj: Any) -> tuple[StoredValue, ...]:
    """StoredValues from :func:`_encode_values`' columns, or from a list of dicts (run.json's form)."""
    if isinstance(obj, list):
        for v in obj:
            if not isinstance(v, dict):
                raise ValueError("a stored value is not an object")
            _check_value(v)
        return tuple(StoredValue.from_dict(v) for v in obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("fields"), list) or not isinstance(obj.get("rows"), list):
        raise ValueError("values are neither a list of objects nor {fields, rows}")
    names = tuple(str(n) for n in obj["fields"])
    known, missing = _plan(names)
    new, key_of = object.__new__, prediction_key
    out = []
    if len(known) == len(names) and not missing:  # the fields this version writes: the fast path
        width = len(names)
        for row in obj["rows"]:
            if len(row) != width:
                raise ValueError(f"a value row of {len(row)} columns for {width} fields")
            # every field set without running __init__ (50,000 values load in a fraction of the time): the
            # object is the one __init__ would make, field for field
            if not isinstance(row, list):
                raise ValueError("a value row is not a list")
            v = new(StoredValue)
            d = v.__dict__
            d.update(zip(names, row))
            _check_value(d)  # also turns the samples into a tuple
            if d["key"] is None:
                d["key"] = key_of(d["file"], d["prediction_id"], d["at"])
            out.append(v)
        return tuple(out)
    for row in obj["rows"]:  # written by another version: fields added or left out
        if len(row) != len(names):
            raise ValueError(f"a value row of {len(row)} columns for {len(names)} fields")
        if not isinstance(row, list):
            raise ValueError("a value row is not a list")
        d = {n: row[i] for i, n in known}
        _check_value(d)
        out.append(StoredValue(**{**_VALUE_DEFAULTS, **{k: x for k, x in d.items() if x is not None},
                                  "key": d.get("key") or key_of(str(d.get("file") or ""),
                                                                str(d.get("prediction_id") or ""),
                                                                d.get("at") or {})}))
    return tuple(out)


def summary_to_json(summary: RunSummary, *, compact: bool = False) -> dict[str, Any]:
    """A summary as JSON data: every value as an object (``run.json``) or, ``compact``, as columns (an index
    line, a database row)."""
    d = summary.to_dict()
    if compact:
        d["values"] = _encode_values(summary.values)
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **d}


def _is_newer(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("schema_version"), int) and d["schema_version"] > SCHEMA_VERSION


def _check_schema(d: Any, where: str) -> None:
    if not isinstance(d, dict):
        raise HistoryError(f"{where}: not a JSON object")
    version = d.get("schema_version")
    if d.get("schema") not in (None, SCHEMA) or not isinstance(version, int):
        raise HistoryError(f"{where}: not a pytest-roofline history file (expected \"schema\": \"{SCHEMA}\" and an "
                           f"integer \"schema_version\")")
    if version > SCHEMA_VERSION:
        raise HistoryError(f"{where}: schema_version {version} is newer than this pytest-roofline reads "
                           f"({SCHEMA_VERSION}); upgrade pytest-roofline to read this history")


def summary_from_json(d: Any, where: str) -> RunSummary:
    """A RunSummary from a run.json / index line / database row; HistoryError when it is not one or of a newer
    schema."""
    _check_schema(d, where)
    try:
        setup = d["setup"]
        if not isinstance(setup, dict) or not all(isinstance(setup.get(k), str)
                                                  for k in ("hardware", "model", "engine_version")):
            raise ValueError("setup is not an object of three texts")
        for k in ("run_id", "started_at"):
            if not isinstance(d.get(k), str):
                raise ValueError(f"{k} is not a text")
        for k in ("commit", "branch", "label", "mode", "location"):
            if d.get(k) is not None and not isinstance(d.get(k), str):
                raise ValueError(f"{k} is {type(d.get(k)).__name__}, not a text")
        for name in ("counts", "outcomes"):  # outcomes: absent from a run stored before they were kept
            counts = d.get(name) or {}
            if not isinstance(counts, dict) or not all(isinstance(c, int) and not isinstance(c, bool)
                                                       for c in counts.values()):
                raise ValueError(f"{name} is not an object of whole numbers")
        return RunSummary(run_id=str(d["run_id"]), setup=SetupKey(str(setup["hardware"]), str(setup["model"]),
                                                                  str(setup["engine_version"])),
                          started_at=str(d["started_at"]), mode=as_kind(d.get("mode"), RunMode), commit=d.get("commit"),
                          branch=d.get("branch"), label=d.get("label"), counts=dict(d.get("counts") or {}),
                          values=_decode_values(d.get("values") or []), location=str(d.get("location") or ""),
                          outcomes=dict(d.get("outcomes") or {}),
                          measurements=tuple(str(x) for x in d.get("measurements") or ()
                                             if isinstance(x, str)),
                          unchecked=tuple(str(x) for x in d.get("unchecked") or () if isinstance(x, str)),
                          drift_threshold=_text_or_empty(d.get("drift_threshold")),
                          drift_baseline=_text_or_empty(d.get("drift_baseline")))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise HistoryError(f"{where}: not a run summary ({type(exc).__name__}: {exc})") from exc


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def _results_name(n: int, results: Mapping[str, Any]) -> str:
    name = _UNSAFE.sub("_", str(results.get("source") or "results")).strip("._")[:40] or "results"
    return f"results/{n:03d}-{name}.json"


def record_files(record: RunRecord, summary: RunSummary) -> list[tuple[str, str]]:
    """The (relative name, text) of every file of a stored run, ``run.json`` last: the same names and contents
    in a directory store and in a database store's ``roofline_run_files`` table."""
    verdicts = [redact_data(dict(v)) for v in record.verdicts]
    environment = redact_data({str(k): v for k, v in record.environment.items()})
    files = [(_results_name(n, r), _dumps(redact_data(dict(r)))) for n, r in enumerate(record.results)]
    files.append(("verdicts.json", _dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
                                           "verdicts": verdicts})))
    files.append(("environment.json", _dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
                                              "environment": environment})))
    files.append(("run.json", _dumps(summary_to_json(summary))))
    return files


def redact_summary(summary: RunSummary) -> RunSummary:
    """The free-text fields of a summary (label, branch, commit, the values' texts) redacted; keys unchanged."""
    def t(x: str | None) -> str | None:
        return redact_text(x) if isinstance(x, str) else x

    values = tuple(replace(v, predicted_text=t(v.predicted_text) or "", measured_text=t(v.measured_text) or "")
                   for v in summary.values)
    return replace(summary, label=t(summary.label), branch=t(summary.branch), commit=t(summary.commit),
                   values=values)


def merge_record(old: RunRecord, new: RunRecord) -> tuple[RunRecord, int, int]:
    """``old`` (a stored run) with the values of ``new`` (a replay of the same measurement: a ``-k`` replay stored
    first, then the whole night) that it lacks, by key; (the merged record, how many values were added, how many
    ``old`` held). Nothing ``old`` holds is replaced: a key both hold keeps the stored value, verdict and
    environment fact. The added values' verdicts follow them (a record from ``build_records`` holds its verdicts in
    its values' order), their statuses and outcomes join the counts, they leave ``unchecked``, and a results file
    whose measurement the run does not hold yet joins its results. Added 0: ``old`` itself."""
    o, n = old.summary, new.summary
    have = {v.key for v in o.values}
    added = [v for v in n.values if v.key not in have]
    if not added:
        return old, 0, len(o.values)
    keys = {v.key for v in added}
    verdicts = list(old.verdicts)
    if len(new.verdicts) == len(n.values):
        verdicts += [dict(d) for v, d in zip(n.values, new.verdicts, strict=True) if v.key in keys]
    counts, outcomes = dict(o.counts), dict(o.outcomes)
    for v in added:
        counts[v.status] = counts.get(v.status, 0) + 1
        if v.outcome:
            outcomes[v.outcome] = outcomes.get(v.outcome, 0) + 1
    values = (*o.values, *added)
    merged_keys = {v.key for v in values}
    unchecked = tuple(k for k in dict.fromkeys((*o.unchecked, *n.unchecked)) if k not in merged_keys)
    ids = set(o.measurements) | {measurement_id(r) for r in old.results}
    results = list(old.results)
    for r in new.results:
        mid = measurement_id(r)
        if mid not in ids:
            ids.add(mid)
            results.append(r)
    measurements = tuple(dict.fromkeys((*o.measurements, *n.measurements)))
    summary = replace(o, values=values, counts=counts, outcomes=outcomes, unchecked=unchecked,
                      measurements=measurements)
    environment = {**{str(k): str(x) for k, x in new.environment.items()}, **old.environment}
    return (RunRecord(summary=summary, verdicts=tuple(verdicts), results=tuple(results), environment=environment),
            len(added), len(o.values))


def record_from_files(files: Mapping[str, str], where: str) -> RunRecord:
    """A RunRecord from the texts of a stored run's files (names as :func:`record_files` gives them)."""
    def load(name: str) -> Any:
        text = files.get(name)
        if text is None:
            raise HistoryError(f"{where}: {name} is missing (an incomplete run?)")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise HistoryError(f"{where}/{name}: not valid JSON ({exc})") from exc

    summary = summary_from_json(load("run.json"), f"{where}/run.json")
    verdicts_doc = load("verdicts.json")
    _check_schema(verdicts_doc, f"{where}/verdicts.json")
    env_doc = load("environment.json")
    _check_schema(env_doc, f"{where}/environment.json")

    def order(name: str) -> tuple[int, str]:
        head = name.removeprefix("results/").split("-", 1)[0]
        return (int(head) if head.isdigit() else 10**9, name)  # an unnumbered name: last

    results = []
    for name in sorted((n for n in files if n.startswith("results/") and n.endswith(".json")), key=order):
        r = load(name)
        if not isinstance(r, dict):
            raise HistoryError(f"{where}/{name}: not a results file (a JSON object)")
        results.append(r)
    verdicts = verdicts_doc.get("verdicts") or []
    environment = env_doc.get("environment") or {}
    if not isinstance(verdicts, list) or not isinstance(environment, dict):
        raise HistoryError(f"{where}: verdicts.json / environment.json hold the wrong kind of value")
    return RunRecord(summary=summary, verdicts=tuple(verdicts), results=tuple(results),
                     environment={str(k): str(v) for k, v in environment.items()})


def read_run_dir(path: str | os.PathLike[str]) -> RunRecord:
    """One stored run read from its directory (``<root>/<hw>/<model>/<engine>/<run_id>/``), wherever it lies: a
    store, a downloaded CI artefact, a copy."""
    p = Path(path)
    if not (p / "run.json").is_file():
        raise HistoryError(f"{p}: not a stored run directory (no run.json)")
    files: dict[str, str] = {}
    try:
        for f in [*p.glob("*.json"), *(p / "results").glob("*.json")]:
            files[f.relative_to(p).as_posix()] = f.read_text(encoding="utf-8")
    except OSError as exc:
        raise HistoryError(f"{p}: cannot read the run ({exc})") from exc
    return record_from_files(files, str(p))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while an index is decoded: the tens of thousands of objects it makes
    hold no cycles, and the collections they would trigger are most of the load time otherwise."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# --------------------------------------------------------------------------- the store


class DirectoryStore:
    """A history in a directory of plain files (the default; see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True):
        self.root = Path(root).expanduser()
        if create:
            if not self.root.exists() and not self.root.parent.is_dir():
                # a store is made only inside a folder that exists, as a sqlite file is: a mistyped path is an
                # error, not a new empty store whose first night compares nothing and passes
                raise HistoryError(f"history directory {self.root}: its folder {self.root.parent} does not exist; "
                                   "check the path, or create the folder first (mkdir -p) for a new store")
            if self.root.exists() and not self.root.is_dir():  # trial 21, L3: "cannot create it (File exists)"
                raise HistoryError(f"history directory {self.root}: is a file, not a store directory; give a "
                                   "directory (a new one is made inside a folder that exists) or a database URL "
                                   "(sqlite:///FILE.db for an SQLite file)")
            try:
                self.root.mkdir(exist_ok=True)
            except OSError as exc:
                raise HistoryError(f"history directory {self.root}: cannot create it ({exc})") from exc
        elif not self.root.is_dir():
            raise HistoryError(f"history directory {self.root} does not exist")
        self.index_path = self.root / INDEX_NAME
        self._lock_path = self.root / _LOCK_NAME

    @property
    def uri(self) -> str:
        return redact_url(str(self.root))

    def __repr__(self) -> str:
        return f"DirectoryStore({self.uri!r})"

    def close(self) -> None:
        """Nothing to release: every call opens and closes its own files."""

    def __enter__(self) -> DirectoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ locking

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        """The writers' flock (shared for reading). Re-entrant in the thread that holds it exclusively
        (:meth:`add_unless` reads the index and adds the run under one hold): a second flock on a new descriptor
        would wait for the first."""
        held = self.__dict__.setdefault("_held", threading.local())
        if getattr(held, "exclusive", False):
            yield
            return
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            if exclusive:
                raise
            yield  # a read-only copy (an unpacked artefact): nobody writes there, read without the lock
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            held.exclusive = exclusive
            yield
        finally:
            held.exclusive = False
            os.close(fd)  # releases the flock

    # ------------------------------------------------------------------ writing

    def add(self, record: RunRecord) -> RunSummary:
        """Store ``record`` as a new run and return its summary as stored (its final ``run_id`` and
        ``location``). The run id of ``record.summary`` is kept when it is free, else a new suffix is drawn;
        nothing already stored is ever replaced."""
        s = redact_summary(record.summary)
        run_id = s.run_id if s.run_id and _RUN_ID.match(s.run_id) else new_run_id(s.started_at, s.commit)
        setup_dir = self.root.joinpath(*s.setup.parts())
        for path in (setup_dir, self.index_path, self._lock_path):
            self._refuse_outside(path)
        try:
            setup_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"history directory {self.root}: cannot create {setup_dir} ({exc})") from exc
        for _ in range(_MAX_TRIES):
            run_dir = setup_dir / run_id
            try:
                run_dir.mkdir()  # exclusive: fails when another run (this or another runner) holds the id
                break
            except FileExistsError:
                run_id = _with_new_suffix(run_id, s.started_at, s.commit)
            except OSError as exc:
                raise HistoryError(f"history directory {self.root}: cannot create {run_dir} ({exc})") from exc
        else:  # pragma: no cover - 50 collisions of 24 random bits
            raise HistoryError(f"history directory {self.root}: no free run id after {_MAX_TRIES} tries")
        stored = replace(s, run_id=run_id, location=run_dir.relative_to(self.root).as_posix())
        try:
            for name, text in record_files(record, stored):
                target = run_dir / name
                target.parent.mkdir(exist_ok=True)
                if name == "run.json":  # last, atomically and synced: its presence means the run is complete
                    tmp = run_dir / ".run.json.tmp"
                    with open(tmp, "w", encoding="utf-8") as fh:
                        fh.write(text)
                        fh.flush()
                        os.fsync(fh.fileno())
                    os.replace(tmp, target)
                else:
                    target.write_text(text, encoding="utf-8")
            self._append_index(stored)
        except OSError as exc:
            # all of the run or none of it: a run folder without its index line (or without run.json) is removed
            shutil.rmtree(run_dir, ignore_errors=True)
            raise HistoryError(f"history directory {self.root}: cannot write run {run_id} "
                               f"({exc.strerror or exc}); nothing of it was kept in the store") from exc
        return stored

    def add_unless(self, record: RunRecord, same: Callable[[RunSummary], bool]) -> tuple[RunSummary, bool]:
        """Store ``record`` unless a stored run of its setup is ``same`` (holds its measurement): (the run stored,
        True), or (that run, False). The index is read and the run added under one hold of the writers' lock, so
        two replays of one results file at once store it once (trial 21, M5)."""
        self._refuse_outside(self._lock_path)
        with self._locked(exclusive=True):
            hit = next((r for r in self.runs(record.summary.setup) if same(r)), None)
            if hit is not None:
                return hit, False
            return self.add(record), True

    def add_values(self, run_id: str, record: RunRecord) -> tuple[RunSummary, int, int]:
        """Add to stored run ``run_id`` the values of ``record`` (a replay of the same measurement) that it lacks
        (:func:`merge_record`); (its summary as stored now, how many values were added, how many it held). The same
        run id and night; nothing it holds is replaced.

        Under the writers' lock, every file that changes (``verdicts.json``, ``environment.json``, a results file it
        lacked, ``run.json``, and the index with the run's one line replaced) is first written in full beside its
        target and synced; only then is each renamed over its target, ``run.json`` and the index last. A write that
        fails (a full disk) removes what it wrote and leaves the run as it was; one interrupted between the renames
        leaves every file whole, the old run.json or the new, the old index line or the new: the run stays readable
        (a rebuilt index reads it from run.json)."""
        with self._locked(exclusive=True):
            run_dir = self._run_dir(run_id)
            for path in (run_dir, self.index_path):
                self._refuse_outside(path)
            old = read_run_dir(run_dir)
            merged, added, held = merge_record(old, record)
            location = run_dir.relative_to(self.root).as_posix()
            stored = replace(redact_summary(merged.summary), run_id=old.summary.run_id, location=location)
            if not added:
                return stored, 0, held
            rewritten = ("verdicts.json", "environment.json", "run.json")
            writes = [(run_dir / name, text.encode("utf-8")) for name, text in record_files(merged, stored)
                      if name in rewritten or not (run_dir / name).exists()]
            writes.sort(key=lambda w: w[0].name == "run.json")  # run.json last of the run's files
            writes.append((self.index_path, self._index_with(stored)))
            staged: list[tuple[Path, Path]] = []
            try:
                for target, data in writes:
                    target.parent.mkdir(exist_ok=True)
                    tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
                    staged.append((tmp, target))
                    with open(tmp, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fsync(fh.fileno())
            except OSError as exc:
                for tmp, _target in staged:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                raise HistoryError(f"history directory {self.root}: cannot add {added} value(s) to run {run_id} "
                                   f"({exc.strerror or exc}); the run keeps the {held} it held") from exc
            try:
                for tmp, target in staged:
                    os.replace(tmp, target)
            except OSError as exc:  # pragma: no cover - a rename within one folder fails only with the disk itself
                for tmp, _target in staged:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                raise HistoryError(f"history directory {self.root}: adding values to run {run_id} stopped part-way "
                                   f"({exc.strerror or exc}); each of its files is whole, run.json and the index "
                                   "line old or new (a deleted index.jsonl is rebuilt from the run.json files "
                                   "at the next read)") from exc
        return stored, added, held

    def _index_with(self, summary: RunSummary) -> bytes:
        """The index's bytes with the line of ``summary``'s run replaced by ``summary`` (appended where the index
        holds no line of it); called under the writers' lock."""
        line = json.dumps(summary_to_json(summary, compact=True), ensure_ascii=False, separators=(",", ":"))
        try:
            raw = self.index_path.read_bytes()
        except FileNotFoundError:
            raw = b""
        needle = json.dumps(summary.run_id).encode("utf-8")
        out: list[bytes] = []
        found = False
        for row in raw.split(b"\n"):
            if not row.strip():
                continue
            if needle in row:
                try:
                    mine = json.loads(row).get("run_id") == summary.run_id
                except (ValueError, RecursionError, AttributeError):
                    mine = False
                if mine:
                    if not found:
                        out.append(line.encode("utf-8"))
                    found = True
                    continue
            out.append(row)
        if not found:
            out.append(line.encode("utf-8"))
        return b"\n".join(out) + b"\n"

    def _refuse_outside(self, path: Path) -> None:
        """A HistoryError when ``path`` (a setup folder, the index, its lock), with every symbolic link in it
        followed, lies outside the store's root: nothing is ever written outside the store (review case 9.10, a
        setup folder and index.jsonl linked to another folder). The root itself may be a link."""
        try:
            root, real = self.root.resolve(), path.resolve()
        except (OSError, RuntimeError) as exc:  # a link loop
            raise HistoryError(f"history directory {self.root}: cannot resolve {path} ({exc})") from exc
        if not real.is_relative_to(root):
            raise HistoryError(f"history directory {self.root}: {path.relative_to(self.root)} leads through a "
                               f"symbolic link to {real}, outside the store; the run is not written there (move that "
                               f"folder or "
                               f"file into the store, or point --roofline-history at the other folder)")

    def _append_index(self, summary: RunSummary) -> None:
        line = json.dumps(summary_to_json(summary, compact=True), ensure_ascii=False, separators=(",", ":"))
        data = (line + "\n").encode("utf-8")
        with self._locked(exclusive=True):
            fd = os.open(self.index_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                # a line cut by an earlier crash would swallow this one: start on a fresh line
                size = os.fstat(fd).st_size
                if size:
                    with open(self.index_path, "rb") as fh:
                        fh.seek(size - 1)
                        if fh.read(1) != b"\n":
                            data = b"\n" + data
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                except OSError:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)  # no half line left behind (a full disk mid-write)
                    raise
            finally:
                os.close(fd)

    # ------------------------------------------------------------------ reading

    def _read_index(self, want: tuple[str, str, str] | None = None) -> tuple[list[RunSummary], str]:
        """The index's summaries (of the setup whose parts are ``want``, when given) and "" when it is sound,
        else what is wrong with it ("missing", ...)."""
        try:
            raw = self.index_path.read_bytes()
        except FileNotFoundError:
            return [], "missing"
        except OSError as exc:
            raise HistoryError(f"{self.index_path}: cannot read the index ({exc})") from exc
        if not raw:
            return [], "empty"
        lines = raw.split(b"\n")
        with gc_paused():
            return self._parse_lines(lines, want)

    def _parse_lines(self, lines: list[bytes], want: tuple[str, str, str] | None) -> tuple[list[RunSummary], str]:
        out: list[RunSummary] = []
        truncated = lines[-1] != b""
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested thousands deep
                return out, (f"truncated (line {n})" if truncated and n == len(lines) else f"corrupt (line {n})")
            try:
                if want is not None and isinstance(d, dict) and not _is_newer(d):
                    setup = d["setup"]  # another setup's line: its values are not decoded at all
                    if SetupKey(str(setup["hardware"]), str(setup["model"]),
                                str(setup["engine_version"])).parts() != want:
                        continue
                out.append(summary_from_json(d, f"{self.index_path}:{n}"))
            except (KeyError, TypeError) as exc:
                return out, f"corrupt (line {n}: no setup: {exc})"
            except HistoryError as exc:
                if _is_newer(d):
                    raise
                return out, f"corrupt (line {n}: {exc})"
        if truncated:
            return out, "truncated (no newline at the end)"
        return out, ""

    def _scan_runs(self) -> tuple[list[RunSummary], list[tuple[str, str]]]:
        """The run.json files' summaries, and each unreadable run.json (its path in the store, why)."""
        found: list[RunSummary] = []
        skipped: list[tuple[str, str]] = []
        for f in sorted(self.root.glob("*/*/*/*/run.json")):
            where = f.relative_to(self.root).as_posix()
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as exc:
                skipped.append((where, type(exc).__name__))
                continue
            try:
                s = summary_from_json(d, str(f))
            except HistoryError:
                if _is_newer(d):
                    raise
                skipped.append((where, "not a run summary"))
                continue
            found.append(replace(s, location=f.parent.relative_to(self.root).as_posix()))
        return found, skipped

    def rebuild_index(self, reason: str = "rebuilt on request") -> int:
        """Rewrite the index from the ``run.json`` files (under the writers' lock); returns the number of runs."""
        with self._locked(exclusive=True):
            return self._rebuild_locked(reason)

    def _intact_index_lines(self) -> dict[str, RunSummary]:
        """The summaries of the index's lines that still read, by run id, whatever is wrong with other lines (a
        damaged index's intact lines)."""
        try:
            raw = self.index_path.read_bytes()
        except OSError:
            return {}
        out: dict[str, RunSummary] = {}
        for n, line in enumerate(raw.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                s = summary_from_json(d, f"{self.index_path}:{n}")
            except (ValueError, RecursionError, KeyError, TypeError, AttributeError, HistoryError):
                continue
            out[s.run_id] = s
        return out

    def _rebuild_locked(self, reason: str) -> int:
        found, broken = self._scan_runs()
        # a run whose run.json is unreadable but whose index line is intact keeps that line (trial 21, L2): a
        # rebuild from the run.json files alone dropped it from drift, trend and compare for good
        intact = self._intact_index_lines() if broken else {}
        skipped: list[str] = []
        kept: list[str] = []
        ids = {f.run_id for f in found}
        for where, why in broken:
            run_dir = where.rsplit("/", 1)[0]  # <hardware>/<model>/<engine>/<run id>
            line = intact.get(run_dir.rsplit("/", 1)[-1])
            if line is not None and line.run_id not in ids:
                found.append(replace(line, location=run_dir))
                kept.append(f"{where} ({why})")
            else:
                skipped.append(f"{where} ({why})")
        found = _ordered(found)
        tmp = self.root / f".{INDEX_NAME}.{secrets.token_hex(4)}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            for s in found:
                fh.write(json.dumps(summary_to_json(s, compact=True), ensure_ascii=False, separators=(",", ":")))
                fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.index_path)
        if reason:
            warnings.warn(HistoryIndexRebuiltWarning(
                f"{self.index_path} was {reason}; rebuilt it from the run.json files of {len(found) - len(kept)} "
                "stored run(s)"
                + (f"; skipped {len(skipped)} unreadable: {', '.join(skipped[:5])}" if skipped else "")
                + (f"; kept the intact index line of {len(kept)} run(s) whose run.json is unreadable (repair or "
                   f"restore it: {', '.join(kept[:5])})" if kept else "")),
                stacklevel=3)
        return len(found)

    def _summaries(self, want: tuple[str, str, str] | None = None) -> list[RunSummary]:
        with self._locked(exclusive=False):
            found, problem = self._read_index(want)
        if not problem:
            return found
        if problem in ("missing", "empty") and not any(self.root.glob("*/*/*/*/run.json")):
            return []  # a new, empty store: nothing to rebuild, nothing to warn about
        with self._locked(exclusive=True):
            found, problem = self._read_index(want)  # another process may have repaired it meanwhile
            if not problem:
                return found
            self._rebuild_locked(problem)
            found, problem = self._read_index(want)
        if problem in ("missing", "empty"):
            return []  # nothing readable was left: an empty store (the rebuild's warning said what it skipped)
        if problem:  # pragma: no cover - we just wrote it
            raise HistoryError(f"{self.index_path}: still {problem} after rebuilding it")
        return found

    def runs(self, setup: SetupKey | None = None) -> Sequence[RunSummary]:
        """Every stored run (of ``setup`` when given: compared by its path-safe parts), oldest first, from the
        index only."""
        return _ordered(self._summaries(setup.parts() if setup is not None else None))

    def _run_dir(self, run_id: str) -> Path:
        if not _RUN_ID.match(run_id):
            raise HistoryError(f"{run_id!r} is not a run id of this store (expected YYYYmmddTHHMMSSZ-<commit>-<hex>)")
        hits = list(self.root.glob(f"*/*/*/{run_id}/run.json"))  # the layout finds it without the index
        if hits:
            return hits[0].parent
        raise HistoryError(f"history directory {self.root}: no run {run_id}")

    def load(self, run_id: str) -> RunRecord:
        """One run in full (summary, verdicts, results files, environment)."""
        run_dir = self._run_dir(run_id)
        record = read_run_dir(run_dir)
        return replace(record, summary=replace(record.summary, location=run_dir.relative_to(self.root).as_posix()))


def _ordered(found: Sequence[RunSummary]) -> list[RunSummary]:
    """Oldest first (by the ISO start time, then the run id); one summary per run id."""
    seen: dict[str, RunSummary] = {}
    for s in found:
        seen.setdefault(s.run_id, s)
    return sorted(seen.values(), key=lambda s: (sort_time(s.started_at), s.run_id))
