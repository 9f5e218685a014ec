"""Probe 15's history findings (notes/s15/probe.md §1), through pytest and on every store.

* #2: a ``-k`` replay stored first held 1 value of the night, and the whole replay of the same file was refused as
  "already holds the measurement": the night's other values were lost. Now they are added to that run (the same run
  id and night), on a directory, SQLite and PostgreSQL store, all or nothing; an exact duplicate is still refused.
* #4: a re-replay of a night the store holds as its setup's only one failed ``--roofline-drift-fail`` ("only 0 of
  19 ... its first night in this store, or the file was moved or renamed"), also pinned to that run: it gets the
  first replay's outcome, with "already stored" as the reason.

The recorded night: 22 predictions of predictions/cpu-tiny.yaml, 19 of them measured (the drift lines' "19
measured"); ``-k kv-tokens`` selects one of them."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import CPU_TINY
from support.pytest_run import NO_CACHE
from support.recordings import recording_path

from pytest_roofline.errors import HistoryError
from pytest_roofline.history import (
    DirectoryStore,
    RunRecord,
    RunSummary,
    SetupKey,
    SqlStore,
    StoredValue,
    measurement_id,
    open_store,
    prediction_key,
)

RECORDED = recording_path("cpu-tiny")
SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
WHOLE = 22  # predictions in cpu-tiny.yaml: the whole night's values
MEASURED = 19  # of them measured (the other 3 are "not measured" in this recording)


def pytest_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), env.get("PYTHONPATH", "")])  # a plugin of the test's own
    env["COLUMNS"] = "400"  # a drift line on one terminal line
    return subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "-p", "no:html",
                           "--no-roofline-progress", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "predictions").mkdir(parents=True)
    shutil.copy(CPU_TINY, work / "predictions" / "cpu-tiny.yaml")
    shutil.copy(RECORDED, work / "night.results.json")
    return work


def _replay(work: Path, store: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return pytest_in(work, "--replay", "night.results.json", "predictions/cpu-tiny.yaml", f"--roofline-history={store}",
                     *extra)


def _line(out: str, start: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(start))


def _count_line(out: str) -> str:
    """The drift count line, its continuation lines (drawn at most 200 columns wide, indented) joined back."""
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("roofline drift: 0 compared"))
    parts = [lines[i]]
    for line in lines[i + 1:]:
        if not line.startswith("  ") or not line.strip():
            break
        parts.append(line.strip())
    return " ".join(parts)


# --------------------------------------------------------------------------- #2 through pytest


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dir", "sqlite"])
def test_a_k_replay_stored_first_gets_the_rest_of_its_night(project: Path, kind: str) -> None:
    store = str(project / "hist") if kind == "dir" else f"sqlite:///{project / 'hist.db'}"
    first = _replay(project, store, "-k", "kv-tokens")
    assert first.returncode == 0, first.stdout + first.stderr
    (run,) = open_store(store).runs()
    assert len(run.values) == 1 and len(run.unchecked) == WHOLE - 1
    whole = _replay(project, store, "--roofline-scorecard", "card.html")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert _line(whole.stdout, "roofline history:") == (
        f"roofline history: added {WHOLE - 1} values to run {run.run_id}, which held 1 other value of this "
        f"measurement (of cpu-tiny.yaml; cpu · roofline-tiny · vllm 0.32.0; the night it was measured, "
        f"2026-12-05T08:54:28Z)")
    # the drift line (terminal and scorecard) says what storing did; it said "nor stored again"
    added = (f"(this measurement is already stored as run {run.run_id}: a replay is not compared with it; "
             f"{WHOLE - 1} values it lacked were added to it, those it held not stored again)")
    assert _count_line(whole.stdout) == (
        f"roofline drift: 0 compared, {MEASURED} new {added}, {WHOLE - MEASURED} not measured vs the previous run")
    assert added in (project / "card.html").read_text(encoding="utf-8")
    (after,) = open_store(store).runs()  # one run: the same id and night, now the whole night
    assert (after.run_id, after.started_at) == (run.run_id, run.started_at)
    assert len(after.values) == WHOLE and after.unchecked == ()
    assert sum(after.counts.values()) == WHOLE
    assert sum(1 for v in after.values if v.mode == "measured" and v.measured is not None) == MEASURED
    assert after.value(run.values[0].key) == run.values[0]  # the value it held, untouched
    record = open_store(store).load(run.run_id)
    assert record.summary.values == after.values and len(record.verdicts) == WHOLE
    assert [measurement_id(r) for r in record.results] == [measurement_id(json.loads(RECORDED.read_text()))]
    # the same replay once more: every value is held, nothing is stored
    again = _replay(project, store)
    assert again.returncode == 0
    assert _count_line(again.stdout).endswith("a replay is not compared with it, nor stored "
                                                                        "again), 3 not measured vs the previous run")
    assert _line(again.stdout, "roofline history:").startswith(
        f"roofline history: not stored: run {run.run_id} of cpu · roofline-tiny · vllm 0.32.0 already holds the "
        "measurement this replay was made at")
    assert [len(r.values) for r in open_store(store).runs()] == [WHOLE]


#: a plugin for the inner pytest whose disk is full: every file the store syncs fails (ENOSPC)
_FULL_DISK_PLUGIN = """
import os


def _full(fd):
    raise OSError(28, "No space left on device")


os.fsync = _full
"""


@pytest.mark.slow
def test_a_part_that_cannot_be_added_fails_the_session_and_keeps_the_run(project: Path) -> None:
    hist = project / "hist"
    assert _replay(project, str(hist), "-k", "kv-tokens").returncode == 0
    (run,) = open_store(str(hist)).runs()
    run_dir = hist / run.location
    before = {p: p.read_bytes() for p in [*run_dir.rglob("*"), hist / "index.jsonl"] if p.is_file()}
    (project / "full_disk.py").write_text(_FULL_DISK_PLUGIN)
    r = _replay(project, str(hist), "-p", "full_disk")
    assert r.returncode == 1, r.stdout + r.stderr
    line = _line(r.stdout, "roofline history:")
    assert line.startswith(f"roofline history: ERROR: could not add {WHOLE - 1} values of this measurement to run "
                           f"{run.run_id} of cpu · roofline-tiny · vllm 0.32.0 in {hist}: history directory {hist}: "
                           f"cannot add {WHOLE - 1} value(s) to run {run.run_id} (No space left on device); the run "
                           "keeps the 1 it held (the session fails"), line
    assert {p: p.read_bytes() for p in [*run_dir.rglob("*"), hist / "index.jsonl"] if p.is_file()} == before
    assert [len(s.values) for s in open_store(str(hist)).runs()] == [1]


# --------------------------------------------------------------------------- #4 through pytest


@pytest.mark.slow
def test_a_re_replay_of_a_setups_only_night_fails_drift_fail_as_the_first_did(project: Path) -> None:
    # a night that compared nothing fails under --roofline-drift-fail (trial s26a #2: a CI whose store was lost was
    # green forever), the store's first night as a CI retry of it; each is stored once, and says why
    hist = str(project / "hist")
    first = _replay(project, hist, "--roofline-drift-fail")
    assert first.returncode == 1, first.stdout
    assert ("the store holds no earlier run of this setup: 19 measured, none compared" in first.stdout
            and "this night is stored now, so the next night compares with it" in first.stdout)
    (run,) = open_store(hist).runs()
    already = (f"the store holds no earlier run of this setup: 19 measured, none compared (already stored: run "
               f"{run.run_id} holds this very measurement, which a replay is not compared with)")
    for pin in ((), ("--roofline-drift-baseline", f"run:{run.run_id}")):  # a CI retry; pinned to that very run
        again = _replay(project, hist, "--roofline-drift-fail", *pin)
        assert again.returncode == 1, again.stdout
        assert already in again.stdout and "moved or renamed" not in again.stdout
    # --roofline-drift-min-compared 0: such a night is said, not failed
    ok = _replay(project, hist, "--roofline-drift-fail", "--roofline-drift-min-compared", "0")
    assert ok.returncode == 0, ok.stdout
    assert "not failed: --roofline-drift-min-compared 0" in ok.stdout
    assert len(open_store(hist).runs()) == 1


# --------------------------------------------------------------------------- #2 on each store: add_values


def _value(n: int, measured: float) -> StoredValue:
    return StoredValue(key=prediction_key("nightly.yaml", f"p{n}", {}), prediction_id=f"p{n}", file="nightly.yaml",
                       quantity="output_throughput", dimension="throughput", status="pass" if n != 2 else "fail",
                       mode="measured", unit="tok/s", measured=measured, predicted=700.0, predicted_text="700 tok/s",
                       outcome="pass" if n != 2 else "fail")


RESULTS = {"schema": "pytest-roofline/results", "schema_version": 1, "source": "measured",
           "created_at": "2026-12-05T08:54:28Z",
           "points": [{"id": "c2", "started_at": "2026-12-05T08:55:00Z", "finished_at": "2026-12-05T08:56:00Z"}]}
MID = measurement_id(RESULTS)


def _rec(*ns: int, measured: float = 300.0) -> RunRecord:
    """A replay of RESULTS that checked predictions ``ns`` of p1, p2, p3 (p2 fails); p<n> measured ``measured + n``."""
    values = tuple(_value(n, measured + n) for n in ns)
    keys = [prediction_key("nightly.yaml", f"p{n}", {}) for n in (1, 2, 3)]
    counts: dict[str, int] = {}
    for v in values:
        counts[v.status] = counts.get(v.status, 0) + 1
    summary = RunSummary(run_id="", setup=SETUP, started_at="2026-12-05T08:54:28Z", mode="replay", values=values,
                         counts=counts, outcomes=dict(counts), measurements=(MID,),
                         unchecked=tuple(k for k in keys if k not in {v.key for v in values}))
    return RunRecord(summary=summary, verdicts=tuple({"id": v.prediction_id, "status": v.status} for v in values),
                     results=(RESULTS,), environment={"python": "3.12"})


def _check_added(store: Any) -> None:
    first = store.add(_rec(1))
    stored, added, held = store.add_values(first.run_id, _rec(1, 2, 3, measured=900.0))
    assert (added, held) == (2, 1) and stored.run_id == first.run_id
    (run,) = store.runs()
    assert run.run_id == first.run_id and run.started_at == "2026-12-05T08:54:28Z"
    # p1 keeps the value it had (301), p2 and p3 come from the replay (902, 903)
    assert [(v.prediction_id, v.measured) for v in run.values] == [("p1", 301.0), ("p2", 902.0), ("p3", 903.0)]
    assert run.counts == {"pass": 2, "fail": 1} and run.outcomes == {"pass": 2, "fail": 1}
    assert run.unchecked == () and run.measurements == (MID,)
    record = store.load(first.run_id)
    assert record.summary.values == run.values
    assert [d["id"] for d in record.verdicts] == ["p1", "p2", "p3"]
    assert len(record.results) == 1 and record.environment == {"python": "3.12"}
    # nothing more to add: the run as it is
    assert store.add_values(first.run_id, _rec(2, 3))[1:] == (0, 3)
    assert len(store.runs()) == 1


def test_add_values_on_a_directory_store(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "hist")
    _check_added(store)
    index = [line for line in store.index_path.read_text().splitlines() if line]
    assert len(index) == 1  # the run's line replaced, not a second line
    assert not list((tmp_path / "hist").rglob("*.tmp"))


def test_add_values_on_sqlite(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        _check_added(store)
    finally:
        store.close()


@pytest.mark.postgres
def test_add_values_on_postgres(postgres: Any) -> None:
    store = SqlStore(postgres.url())
    try:
        with store._engine.begin() as conn:  # a clean database
            conn.execute(store._files.delete())
            conn.execute(store._runs.delete())
        _check_added(store)
    finally:
        store.close()


def test_a_failed_add_leaves_the_directory_run_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the disk fills while the new files are staged (the third one): nothing was renamed, every staged file is
    # removed, and the run reads as before, in the index and in full
    store = DirectoryStore(tmp_path / "hist")
    first = store.add(_rec(1))
    run_dir = tmp_path / "hist" / first.location
    before = {p: p.read_bytes() for p in [*run_dir.rglob("*.json"), store.index_path]}
    real = os.fsync
    calls = {"n": 0}

    def full(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(HistoryError, match=r"cannot add 2 value\(s\) to run .*No space left on device.*the run keeps "
                                           r"the 1 it held"):
        store.add_values(first.run_id, _rec(1, 2, 3))
    monkeypatch.setattr(os, "fsync", real)
    assert {p: p.read_bytes() for p in [*run_dir.rglob("*.json"), store.index_path]} == before
    assert not list((tmp_path / "hist").rglob("*.tmp"))
    assert [len(r.values) for r in store.runs()] == [1] and len(store.load(first.run_id).summary.values) == 1


def test_an_add_stopped_between_renames_leaves_the_run_readable(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # stopped after run.json was renamed and before the index was: every file is whole; the index still lists the
    # run with its 1 value, run.json holds all 3, and a rebuilt index reads the 3
    store = DirectoryStore(tmp_path / "hist")
    first = store.add(_rec(1))
    real = os.replace

    def stop(src: Any, dst: Any) -> None:
        if Path(dst).name == "index.jsonl":
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(os, "replace", stop)
    with pytest.raises(HistoryError, match="stopped part-way"):
        store.add_values(first.run_id, _rec(1, 2, 3))
    monkeypatch.setattr(os, "replace", real)
    assert [len(r.values) for r in store.runs()] == [1]
    assert len(store.load(first.run_id).summary.values) == 3
    store.index_path.unlink()
    with pytest.warns(Warning, match="rebuilt it from the run.json files of 1 stored run"):
        assert [len(r.values) for r in store.runs()] == [3]


def test_a_failed_add_leaves_the_sqlite_run_as_it_was(tmp_path: Path) -> None:
    # the write of run.json's new text fails inside the transaction (a trigger stands for a full disk): the run's
    # row, updated first in the same transaction, is rolled back with it
    db = tmp_path / "h.db"
    store = SqlStore(f"sqlite:///{db}")
    try:
        first = store.add(_rec(1))
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TRIGGER full BEFORE UPDATE ON roofline_run_files WHEN NEW.name = 'run.json' "
                         "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        with pytest.raises(HistoryError, match="cannot add values to run .*the run keeps what it held.*disk is full"):
            store.add_values(first.run_id, _rec(1, 2, 3))
        assert [len(r.values) for r in store.runs()] == [1]
        assert len(store.load(first.run_id).summary.values) == 1
        assert len(store.load(first.run_id).verdicts) == 1
    finally:
        store.close()
