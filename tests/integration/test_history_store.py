"""The history store: a directory of plain JSON files (layout, never overwriting under concurrency, the index and
its rebuild, schema versions, a crash between files and index), the same contract on SQLite and on a real
PostgreSQL server, and ``open_store``'s URIs (with credentials redacted in every message)."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
import threading
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_roofline import redact
from pytest_roofline.errors import HistoryError, HistoryIndexRebuiltWarning, RooflineError
from pytest_roofline.history import (
    SCHEMA,
    SCHEMA_VERSION,
    DirectoryStore,
    HistoryStore,
    RunRecord,
    RunSummary,
    SetupKey,
    SqlStore,
    StoredValue,
    new_run_id,
    open_store,
    prediction_key,
    read_run_dir,
)

H100 = SetupKey("h100-sxm", "meta-llama/Llama-3.1-8B-Instruct", "0.11.0")
CPU = SetupKey("cpu", "roofline-tiny", "0.11.0")
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[A-Za-z0-9._+-]+-[0-9a-f]{6}$")


def _value(n: int = 0, measured: float | None = 0.0123) -> StoredValue:
    return StoredValue(key=prediction_key("predictions/day3.yaml", f"ttft-{n}", {"concurrency": "32"}),
                       prediction_id=f"ttft-{n}", file="predictions/day3.yaml", quantity="ttft_p50",
                       dimension="time", status="pass", mode="measured", at={"concurrency": "32"}, unit="ms",
                       measured=measured, model=0.0110, predicted=0.0115, lo=0.0100, hi=None,
                       predicted_text="11.5 ms ± 15%", measured_text="12.3 ms", drift_text="5%" if n == 1 else "")


def _record(setup: SetupKey = H100, started_at: str = "2026-12-01T02:00:00Z", commit: str | None = "0123456789abcdef",
            run_id: str = "", values: tuple[StoredValue, ...] | None = None, **env: str) -> RunRecord:
    summary = RunSummary(run_id=run_id, setup=setup, started_at=started_at, mode="engine", commit=commit,
                         branch="main", label="h100", counts={"pass": 2},
                         values=(_value(0), _value(1, measured=None)) if values is None else values)
    verdicts = ({"id": "ttft-0", "status": "pass", "reason": "12.3 ms inside 11.5 ms ± 15%"},
                {"id": "ttft-1", "status": "skip", "reason": "not measured"})
    results = ({"schema": "pytest-roofline/results", "schema_version": 1, "source": "measured",
                "points": [{"concurrency": 32}]},)
    return RunRecord(summary=summary, verdicts=verdicts, results=results,
                     environment={"python": "3.11.7", "vllm": "0.11.0", **env})


def _index_lines(store: DirectoryStore) -> list[str]:
    return [line for line in store.index_path.read_text(encoding="utf-8").split("\n") if line]


@contextlib.contextmanager
def _no_warnings():
    """A context in which any HistoryIndexRebuiltWarning is an error (the index was expected to be sound)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", HistoryIndexRebuiltWarning)
        yield


# --------------------------------------------------------------------------- the directory store: layout


def test_directory_layout_and_plain_files(tmp_path):
    store = DirectoryStore(tmp_path / "hist")
    stored = store.add(_record())
    # <YYYYmmddTHHMMSSZ from 2026-12-01T02:00:00Z>-<commit[:12]>-<6 hex>
    assert re.fullmatch(r"20261201T020000Z-0123456789ab-[0-9a-f]{6}", stored.run_id)
    # SetupKey.parts(): the model's "/" becomes "_" so one model is one directory level
    run_dir = tmp_path / "hist" / "h100-sxm" / "meta-llama_Llama-3.1-8B-Instruct" / "0.11.0" / stored.run_id
    assert stored.location == run_dir.relative_to(tmp_path / "hist").as_posix()
    names = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    assert names == ["environment.json", "results/000-measured.json", "run.json", "verdicts.json"]

    run = json.loads((run_dir / "run.json").read_text())
    assert run["schema"] == SCHEMA == "pytest-roofline/history-run" and run["schema_version"] == 1
    assert run["run_id"] == stored.run_id and run["setup"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert run["values"][0]["measured"] == 0.0123 and run["values"][1]["drift_text"] == "5%"
    assert '\n  "run_id": ' in (run_dir / "run.json").read_text()  # pretty-printed: diffs line by line in git
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    assert verdicts["schema_version"] == 1 and [v["id"] for v in verdicts["verdicts"]] == ["ttft-0", "ttft-1"]
    env = json.loads((run_dir / "environment.json").read_text())
    assert env["environment"] == {"python": "3.11.7", "vllm": "0.11.0"}
    # the results file is kept verbatim (its own schema), so --roofline-replay can read it from the store
    assert json.loads((run_dir / "results" / "000-measured.json").read_text())["schema"] == "pytest-roofline/results"

    assert len(_index_lines(store)) == 1
    loaded = store.load(stored.run_id)
    assert loaded.summary == stored
    assert loaded.verdicts == _record().verdicts and loaded.results == _record().results
    assert loaded.environment == {"python": "3.11.7", "vllm": "0.11.0"}
    assert read_run_dir(run_dir) == loaded  # a run directory read on its own (a downloaded artefact)


def test_run_id_without_commit_and_in_utc():
    # 03:00 at +01:00 is 02:00 UTC
    assert re.fullmatch(r"20261201T020000Z-nocommit-[0-9a-f]{6}", new_run_id("2026-12-01T03:00:00+01:00", None))
    assert new_run_id("2026-12-01T02:00:00Z", "abc") != new_run_id("2026-12-01T02:00:00Z", "abc")


def test_runs_oldest_first_filtered_by_setup_and_values_round_trip(tmp_path):
    store = DirectoryStore(tmp_path)
    night3 = store.add(_record(started_at="2026-12-03T02:00:00Z"))
    night1 = store.add(_record(started_at="2026-12-01T02:00:00Z"))
    cpu = store.add(_record(setup=CPU, started_at="2026-12-02T02:00:00Z"))
    night2 = store.add(_record(started_at="2026-12-02T01:00:00+00:00"))
    assert [s.run_id for s in store.runs()] == [night1.run_id, night2.run_id, cpu.run_id, night3.run_id]
    assert [s.run_id for s in store.runs(H100)] == [night1.run_id, night2.run_id, night3.run_id]
    assert [s.run_id for s in store.runs(CPU)] == [cpu.run_id]
    assert store.runs(SetupKey("a100-sxm4-80gb", "x", "0.11.0")) == []
    # the index holds every field of every value (compacted lines are filled back to the same dataclass)
    got = store.runs(CPU)[0]
    assert got == cpu and got.values == (_value(0), _value(1, measured=None))
    assert got.value(_value(1).key).drift_text == "5%" and got.value("nope") is None


# --------------------------------------------------------------------------- never overwrite


def test_add_never_overwrites_a_taken_run_id(tmp_path):
    store = DirectoryStore(tmp_path)
    first = store.add(_record())
    before = (tmp_path / first.location / "run.json").read_text()
    second = store.add(_record(run_id=first.run_id, commit="0123456789abcdef", started_at="2026-12-01T02:00:00Z"))
    assert second.run_id != first.run_id
    assert second.run_id[:-6] == first.run_id[:-6]  # same time and commit, a new random suffix
    assert (tmp_path / first.location / "run.json").read_text() == before
    assert {s.run_id for s in store.runs()} == {first.run_id, second.run_id}


def _add_many(root: str, run_id: str, n: int, barrier) -> None:
    store = DirectoryStore(root)
    barrier.wait()
    for i in range(n):
        store.add(_record(run_id=run_id, values=tuple(_value(k) for k in range(40)), worker=str(os.getpid()),
                          i=str(i)))


def test_two_processes_adding_at_once_lose_nothing(tmp_path):
    """Two runners on one shared disk, both adding runs with the same id at the same moment: every run is
    stored in its own directory, the index has one whole line per run, nothing is overwritten."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    run_id = new_run_id("2026-12-01T02:00:00Z", "deadbeefcafe")
    procs = [ctx.Process(target=_add_many, args=(str(tmp_path), run_id, 25, barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    store = DirectoryStore(tmp_path)
    lines = _index_lines(store)
    assert len(lines) == 50 and all(json.loads(line)["schema_version"] == 1 for line in lines)
    with _no_warnings():
        runs = store.runs()
    assert len({s.run_id for s in runs}) == 50
    assert len(list(tmp_path.glob("*/*/*/*/run.json"))) == 50
    envs = {(r.environment["worker"], r.environment["i"]) for r in (store.load(s.run_id) for s in runs)}
    assert len(envs) == 50  # each run's files are its own (no run directory was written by two adds)


# --------------------------------------------------------------------------- the index


def _three(store: DirectoryStore) -> list[RunSummary]:
    return [store.add(_record(started_at=f"2026-12-0{d}T02:00:00Z")) for d in (1, 2, 3)]


def test_missing_index_is_rebuilt_with_a_warning(tmp_path):
    store = DirectoryStore(tmp_path)
    runs = _three(store)
    store.index_path.unlink()
    with pytest.warns(HistoryIndexRebuiltWarning, match=r"missing.*3 stored run"):
        assert list(store.runs()) == runs
    assert len(_index_lines(store)) == 3
    with _no_warnings():  # rebuilt once, sound from then on
        assert list(store.runs()) == runs


def test_truncated_last_line_is_rebuilt(tmp_path):
    store = DirectoryStore(tmp_path)
    runs = _three(store)
    raw = store.index_path.read_bytes()
    store.index_path.write_bytes(raw[: len(raw) - 40])  # a crash in the middle of appending the third line
    with pytest.warns(HistoryIndexRebuiltWarning, match="truncated"):
        assert list(store.runs()) == runs  # the third run's files are complete: it comes back from run.json


def test_corrupt_index_is_rebuilt(tmp_path):
    store = DirectoryStore(tmp_path)
    runs = _three(store)
    lines = _index_lines(store)
    store.index_path.write_text("\n".join([lines[0], "{not json", lines[2], '{"schema_version": 1}']) + "\n")
    with pytest.warns(HistoryIndexRebuiltWarning, match=r"corrupt \(line 2"):
        assert list(store.runs()) == runs


def test_a_rebuild_keeps_the_intact_index_line_of_a_run_whose_run_json_is_broken(tmp_path):
    # trial 21, L2: the last index line cut and another run's run.json broken: the rebuild read the run.json files
    # only, so it kept 2 of 3 runs and rewrote the index without the broken one, whose index line was intact: that
    # run was gone from drift, trend and compare for good (its folder still there). Its intact line is kept now,
    # and the warning names its run.json
    store = DirectoryStore(tmp_path)
    runs = _three(store)
    broken = tmp_path / runs[0].location / "run.json"
    broken.write_text("{broken")
    raw = store.index_path.read_bytes()
    store.index_path.write_bytes(raw[: len(raw) - 40])  # the third line cut: a rebuild is due
    where = f"{runs[0].location}/run.json"
    with pytest.warns(HistoryIndexRebuiltWarning) as caught:
        assert list(store.runs()) == runs  # the first from its index line, the third from its run.json
    (message,) = [str(w.message) for w in caught]
    assert "rebuilt it from the run.json files of 2 stored run(s)" in message
    assert (f"kept the intact index line of 1 run(s) whose run.json is unreadable (repair or restore it: {where} "
            "(JSONDecodeError))") in message
    assert "skipped" not in message
    assert [json.loads(line)["run_id"] for line in _index_lines(store)] == [r.run_id for r in runs]
    with _no_warnings():  # the index is sound from then on
        assert list(DirectoryStore(tmp_path).runs()) == runs
    (tmp_path / runs[1].location / "run.json").write_text("{broken")  # broken, and its index line cut too: gone
    store.index_path.write_text("\n".join(_index_lines(store)[:1] + ['{"run_id": "cut']) + "\n")
    with pytest.warns(HistoryIndexRebuiltWarning, match=rf"skipped 1 unreadable: {runs[1].location}/run.json"):
        assert list(store.runs()) == [runs[0], runs[2]]


def test_an_add_after_a_cut_line_starts_a_fresh_line(tmp_path):
    store = DirectoryStore(tmp_path)
    runs = _three(store)
    raw = store.index_path.read_bytes()
    store.index_path.write_bytes(raw[:-15])
    fourth = store.add(_record(started_at="2026-12-04T02:00:00Z"))
    lines = store.index_path.read_text().split("\n")
    assert json.loads(lines[-2])["run_id"] == fourth.run_id  # whole, on its own line
    with pytest.warns(HistoryIndexRebuiltWarning, match="corrupt"):  # the cut line is in the middle now
        assert list(store.runs()) == [*runs, fourth]


def test_crash_between_files_and_index_leaves_no_line_without_files(tmp_path, monkeypatch):
    store = DirectoryStore(tmp_path)
    kept = store.add(_record(started_at="2026-12-01T02:00:00Z"))

    def crash(self, summary):
        raise OSError("killed before the index line")

    monkeypatch.setattr(DirectoryStore, "_append_index", crash)
    with pytest.raises(HistoryError, match="cannot write run"):
        store.add(_record(started_at="2026-12-02T02:00:00Z"))
    monkeypatch.undo()
    # the index is sound and lists only the run whose line was written; a write that failed (a full disk) took
    # its run folder with it (issue 21: all of a run or none of it)
    with _no_warnings():
        assert [s.run_id for s in store.runs()] == [kept.run_id]
    orphans = [p.parent for p in tmp_path.glob("*/*/*/*/run.json") if p.parent.name != kept.run_id]
    assert orphans == []
    # a process killed mid-write leaves what it left: a folder without run.json, which the rebuild skips
    half = tmp_path.joinpath(*H100.parts(), new_run_id("2026-12-03T02:00:00Z", "x"))
    half.mkdir()
    (half / "verdicts.json").write_text("{}")
    assert store.rebuild_index(reason="") == 1  # the kept run only
    assert [s.run_id for s in store.runs()][0] == kept.run_id
    assert half.name not in {s.run_id for s in store.runs()}


def test_empty_store_needs_no_index_and_warns_nothing(tmp_path):
    with _no_warnings():
        assert DirectoryStore(tmp_path / "new").runs() == []


# --------------------------------------------------------------------------- schema versions


def test_a_newer_schema_is_refused(tmp_path):
    store = DirectoryStore(tmp_path)
    stored = store.add(_record())
    run_json = tmp_path / stored.location / "run.json"
    d = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**d, "schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(HistoryError, match=r"schema_version 2 is newer .*upgrade pytest-roofline"):
        store.load(stored.run_id)
    line = json.loads(_index_lines(store)[0])
    store.index_path.write_text(json.dumps({**line, "schema_version": SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(HistoryError, match="newer"):
        store.runs()
    store.index_path.unlink()  # the rebuild refuses it too, rather than dropping a run it cannot read
    with pytest.raises(HistoryError, match="newer"):
        store.runs()


def test_not_a_history_file_and_unknown_run(tmp_path):
    store = DirectoryStore(tmp_path)
    stored = store.add(_record())
    with pytest.raises(HistoryError, match="no run"):
        store.load("20261201T020000Z-nocommit-000000")
    with pytest.raises(HistoryError, match="not a run id"):
        store.load("../../etc")
    (tmp_path / stored.location / "verdicts.json").write_text('{"schema": "something-else", "schema_version": 1}')
    with pytest.raises(HistoryError, match="not a pytest-roofline history file"):
        store.load(stored.run_id)
    with pytest.raises(HistoryError, match="no run.json"):
        read_run_dir(tmp_path)
    assert issubclass(HistoryError, RooflineError)


# --------------------------------------------------------------------------- secrets


def test_secrets_are_redacted_before_storing(tmp_path):
    redact.remember("hf_knownsecretvalue123")
    try:
        rec = _record(HF_TOKEN="hf_knownsecretvalue123", note="uses hf_knownsecretvalue123")
        rec = replace(rec, verdicts=({"id": "x", "reason": "server said Authorization: Bearer sk-abcdef123456"},),
                      results=({"source": "measured", "engine_args": ["--api-key", "sk-abcdef123456"]},))
        store = DirectoryStore(tmp_path)
        stored = store.add(rec)
        text = "".join(p.read_text() for p in (tmp_path / stored.location).rglob("*.json"))
        assert "hf_knownsecretvalue123" not in text and "sk-abcdef123456" not in text
        assert store.load(stored.run_id).environment["HF_TOKEN"] == "***"
    finally:
        redact.forget_all()


# --------------------------------------------------------------------------- open_store


def test_open_store_uris(tmp_path):
    assert isinstance(open_store(str(tmp_path / "a")), DirectoryStore)
    assert isinstance(open_store(tmp_path / "b"), DirectoryStore)
    s = open_store(f"file://{tmp_path}/c")
    assert isinstance(s, DirectoryStore) and s.root == tmp_path / "c"
    with pytest.raises(HistoryError, match="not on a host"):
        open_store("file://otherhost/x")
    sql = open_store(f"sqlite:///{tmp_path}/h.db")
    assert isinstance(sql, SqlStore) and (tmp_path / "h.db").is_file()
    sql.close()
    with pytest.raises(HistoryError, match="empty"):
        open_store("  ")


def test_object_store_uri_is_refused_with_the_reason_and_no_secret():
    with pytest.raises(HistoryError) as exc:
        open_store("s3://AKIAEXAMPLE:wJalrXUtnFEMIK7MDENG@bucket/roofline")
    msg = str(exc.value)
    assert "wJalrXUtnFEMIK7MDENG" not in msg and "***@bucket" in msg
    assert "not supported" in msg and "directory" in msg and "sqlite:///" in msg and "append" in msg


def test_missing_database_driver_names_what_to_install(tmp_path):
    try:
        import pymysql  # noqa: F401
        pytest.skip("pymysql is installed here; the missing-driver message cannot be seen")
    except ImportError:
        pass
    with pytest.raises(HistoryError, match=r"driver is not installed.*pip install 'pytest-roofline\[history\]'") as e:
        open_store("mysql+pymysql://user:hunter2pass@db.example:3306/roofline")
    assert "hunter2pass" not in str(e.value)


def test_a_directory_history_does_not_import_sqlalchemy(tmp_path):
    code = ("import sys, pytest_roofline.history as h; s = h.open_store(sys.argv[1]); s.runs(); "
            "print('sqlalchemy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- the same contract on every store


def _contract(store: HistoryStore) -> None:
    """What every store does: add returns the stored summary; runs is oldest first, per setup; load gives the
    run back in full; a taken run id is never overwritten."""
    b = store.add(_record(started_at="2026-12-02T02:00:00Z"))
    a = store.add(_record(started_at="2026-12-01T02:00:00Z", commit=None))
    c = store.add(_record(setup=CPU, started_at="2026-12-01T12:00:00Z"))
    assert RUN_ID.match(a.run_id) and "-nocommit-" in a.run_id
    assert [s.run_id for s in store.runs()] == [a.run_id, c.run_id, b.run_id]
    assert [s.run_id for s in store.runs(H100)] == [a.run_id, b.run_id]
    assert store.runs(H100)[1] == b and b.values == (_value(0), _value(1, measured=None))
    full = store.load(b.run_id)
    assert full.summary == b and full.verdicts == _record().verdicts and full.results == _record().results
    assert full.environment == _record().environment
    again = store.add(_record(run_id=b.run_id, started_at="2026-12-02T02:00:00Z"))
    assert again.run_id != b.run_id and store.load(b.run_id).summary == b
    with pytest.raises(HistoryError, match="no run"):
        store.load("20261201T020000Z-nocommit-000000")


def test_contract_directory(tmp_path):
    _contract(DirectoryStore(tmp_path))


def test_contract_sqlite(tmp_path):
    store = SqlStore(f"sqlite:///{tmp_path}/history.db")
    try:
        _contract(store)
    finally:
        store.close()
    # tables persist: a second store on the same file sees the same runs
    again = open_store(f"sqlite:///{tmp_path}/history.db")
    assert len(again.runs()) == 4
    again.close()


def test_sql_files_are_the_directory_files(tmp_path):
    """A database store keeps the same files, under the same names and with the same text, as a directory store
    (so a run moves between the two without conversion)."""
    import sqlalchemy as sa

    rec = _record(run_id=new_run_id("2026-12-01T02:00:00Z", "0123456789ab"))
    d = DirectoryStore(tmp_path / "dir").add(rec)
    store = SqlStore(f"sqlite:///{tmp_path}/h.db")
    s = store.add(rec)
    store.close()
    assert s.run_id == d.run_id
    eng = sa.create_engine(f"sqlite:///{tmp_path}/h.db")
    with eng.connect() as conn:
        rows = dict(conn.execute(sa.text("select name, content from roofline_run_files where run_id = :r"),
                                 {"r": s.run_id}).all())
        cols = {c["name"] for c in sa.inspect(conn).get_columns("roofline_runs")}
        idx = {tuple(i["column_names"]) for i in sa.inspect(conn).get_indexes("roofline_runs")}
    eng.dispose()
    run_dir = tmp_path / "dir" / d.location
    disk = {p.relative_to(run_dir).as_posix(): p.read_text() for p in run_dir.rglob("*.json")}
    assert set(rows) == set(disk)
    for name in disk:
        if name != "run.json":  # run.json differs only in "location" (a path in a directory, the id in a db)
            assert rows[name] == disk[name]
    assert {"run_id", "hardware", "model", "engine_version", "started_at", "mode", "commit", "branch", "label",
            "summary"} <= cols
    assert ("hardware", "model", "engine_version", "started_at") in idx


def test_sql_bad_url_is_a_history_error(tmp_path):
    with pytest.raises(HistoryError, match="cannot open"):
        SqlStore(f"sqlite:///{tmp_path}/no/such/dir/h.db")
    with pytest.raises(HistoryError, match="not a database URL"):
        SqlStore("postgresql+nosuchdriver://u:topsecretpw@h/db")


# --------------------------------------------------------------------------- a real PostgreSQL server


# (the ``postgres`` fixture: tests/integration/conftest.py)


@pytest.fixture
def pg_store(postgres):
    store = SqlStore(postgres.url())
    with store._engine.begin() as conn:  # a clean database for each test
        conn.execute(store._files.delete())
        conn.execute(store._runs.delete())
    yield store
    store.close()


@pytest.mark.postgres
def test_contract_postgres(pg_store):
    _contract(pg_store)
    assert pg_store.uri.startswith("postgresql+psycopg://***@127.0.0.1:")


@pytest.mark.postgres
def test_postgres_concurrent_adds_with_one_id(pg_store, postgres):
    """Four runners inserting runs with the same id at once: the primary key refuses every duplicate inside its
    transaction and each retries with a new suffix; every run lands whole."""
    run_id = new_run_id("2026-12-01T02:00:00Z", "feedface")
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        store = SqlStore(postgres.url())
        try:
            for i in range(8):
                store.add(_record(run_id=run_id, worker=str(w), i=str(i)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    runs = pg_store.runs()
    assert len(runs) == 32 and len({s.run_id for s in runs}) == 32
    assert {(r.environment["worker"], r.environment["i"]) for r in map(pg_store.load, [s.run_id for s in runs])} \
        == {(str(w), str(i)) for w in range(4) for i in range(8)}


@pytest.mark.postgres
def test_postgres_wrong_password_is_redacted(postgres):
    with pytest.raises(HistoryError, match="password authentication failed") as exc:
        open_store(postgres.url(password="wrong-pw-1234"))
    assert "wrong-pw-1234" not in str(exc.value) and postgres.password not in str(exc.value)
    assert "***@127.0.0.1" in str(exc.value)


def test_the_index_benchmark_runs():
    """benchmarks/history_index.py (the 500-night figure) still runs; a tiny size, and no timing asserted."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "history_index.py"
    out = subprocess.run([sys.executable, str(script), "--nights", "3", "--values", "4"], capture_output=True,
                         text=True, timeout=120, check=True)
    assert "3 nights x 4 predictions" in out.stdout and "directory store" in out.stdout and "sqlite" in out.stdout


def test_a_store_path_that_is_some_other_file_says_so(tmp_path):
    # trial 21, L3: a regular file as a directory store read "cannot create it ([Errno 17] File exists ...)", and as
    # an SQLite URL "DatabaseError: file is not a database" with no fix
    other = tmp_path / "afile"
    other.write_text("not a store\n" * 200)
    with pytest.raises(HistoryError) as exc:
        open_store(str(other))
    assert f"history directory {other}: is a file, not a store directory" in str(exc.value)
    pytest.importorskip("sqlalchemy")
    with pytest.raises(HistoryError) as exc:
        open_store(f"sqlite:///{other}")
    assert f"{other} is not an SQLite database (another kind of file)" in str(exc.value)


def test_an_sqlite_store_in_a_missing_folder_names_the_folder(tmp_path):
    # trial s26a #15: "cannot open the history database (OperationalError: unable to open database file)" alone,
    # where a directory store in a missing folder names it and the fix
    pytest.importorskip("sqlalchemy")
    with pytest.raises(HistoryError) as exc:
        open_store(f"sqlite:///{tmp_path / 'nope' / 'x.db'}")
    assert (f"its folder {tmp_path / 'nope'} does not exist; check the path, or create the folder first (mkdir -p) "
            "for a new store") in str(exc.value)
