"""Two runners opening a fresh SQLite history at once both create it, and neither fails: every statement that makes
the tables is ``CREATE ... IF NOT EXISTS``. Before, SQLAlchemy's ``checkfirst`` read the schema, found no table,
and ``CREATE TABLE`` failed in the runner that came second ("table roofline_runs already exists": a fresh-clone CI
run of 2026-12-07, test_history_concurrent_replays.py; 3 of 90 trials of four processes opening one new file at
once failed, none of 130 since). The race itself needs processes and luck; what closes it is pinned here."""

from __future__ import annotations

import pytest

sa = pytest.importorskip("sqlalchemy")

from pytest_roofline.history import open_store  # noqa: E402


def test_every_create_statement_on_sqlite_is_if_not_exists(tmp_path):
    seen: list[str] = []

    def record(conn, cursor, statement, *args):
        seen.append(" ".join(statement.split()))

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        open_store(f"sqlite:///{tmp_path / 'h.db'}")
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
    creates = [s for s in seen if s.upper().startswith("CREATE")]
    assert len(creates) >= 3  # the two tables and the runs' index
    assert all("IF NOT EXISTS" in s.upper() for s in creates), creates
    assert not any(s.upper().startswith("PRAGMA MAIN.TABLE_INFO") for s in seen)  # no check-then-create
    # the second runner: the same statements, nothing to do, and the store reads
    assert open_store(f"sqlite:///{tmp_path / 'h.db'}").runs() == []
