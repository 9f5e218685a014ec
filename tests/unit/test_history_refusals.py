"""What the history stores refuse (issue 23, the December reliability review's cases 9.10, 9.13 and 9.14): a
directory store never writes through a symbolic link that leads outside it, a store opened only to be read never
creates the SQLite file it names, and a locked SQLite file is one attempt, not six busy timeouts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_roofline.errors import HistoryError
from pytest_roofline.history import DirectoryStore, SetupKey, build_records, open_store


def _record(n: int = 0):  # noqa: ANN202 - a RunRecord
    return build_records([{"id": f"p{n}", "file": "x.yaml", "status": "pass", "mode": "math", "at": {}}],
                         setups={"x.yaml": SetupKey("cpu", "m", "1")}, started_at="2026-12-04T02:00:00Z",
                         mode="math")[0]


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_a_setup_folder_linked_outside_the_store_is_refused(tmp_path: Path) -> None:
    """9.10: the review saw the new run's files written into the folder the store's ``cpu`` link points to."""
    store, outside = tmp_path / "hist", tmp_path / "outside"
    DirectoryStore(store).add(_record(0))
    (outside / "cpu").parent.mkdir()
    (store / "cpu").rename(outside / "cpu")
    (store / "cpu").symlink_to(outside / "cpu")
    before = _files(outside)
    with pytest.raises(HistoryError, match=r"cpu/m/1 leads through a symbolic link to .*outside/cpu/m/1, outside the"):
        DirectoryStore(store).add(_record(1))
    assert _files(outside) == before


def test_an_index_linked_outside_the_store_is_not_appended_to(tmp_path: Path) -> None:
    store, victim = tmp_path / "hist", tmp_path / "victim.jsonl"
    DirectoryStore(store).add(_record(0))
    (store / "index.jsonl").rename(victim)
    (store / "index.jsonl").symlink_to(victim)
    text = victim.read_bytes()
    with pytest.raises(HistoryError, match=r"index.jsonl leads through a symbolic link to .*victim.jsonl, outside"):
        DirectoryStore(store).add(_record(1))
    assert victim.read_bytes() == text
    assert len(list(store.rglob("run.json"))) == 1  # nothing of the refused run was kept


def test_a_store_whose_root_is_a_link_still_takes_runs(tmp_path: Path) -> None:
    """The root itself may be a link (the user's choice of where the history lives)."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    DirectoryStore(tmp_path / "link").add(_record(0))
    assert len(list(real.rglob("run.json"))) == 1


def test_reading_a_missing_sqlite_file_does_not_create_it(tmp_path: Path) -> None:
    """9.13: ``roofline history sqlite:///missing.db`` (open_store(create=False)) created an empty database file."""
    db = tmp_path / "missing.db"
    with pytest.raises(HistoryError, match="no such database file"):
        open_store(f"sqlite:///{db}", create=False)
    assert not db.exists()
    open_store(f"sqlite:///{db}").close()  # pytest --roofline-history creates it, as before
    assert db.is_file()


def test_a_locked_sqlite_file_is_one_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """9.14: a file another process holds under an EXCLUSIVE lock was tried six times (a busy timeout and a
    back-off each: 70 s on the shared machine) before its one-line error; SQLite has no CREATE TABLE race to retry."""
    from pytest_roofline.history import _sql

    db = tmp_path / "h.db"
    open_store(f"sqlite:///{db}").close()
    holder = sqlite3.connect(db, isolation_level=None, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")
    waits: list[float] = []
    monkeypatch.setattr(_sql.time, "sleep", waits.append)
    try:
        with pytest.raises(HistoryError, match="locked"):
            _sql.SqlStore(f"sqlite:///{db}", connect_args={"timeout": 0.05})
    finally:
        holder.close()
    assert waits == []
