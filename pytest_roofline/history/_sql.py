"""A history in a database, by SQLAlchemy URL: for a team whose runners share one history.

Two tables, created when absent (SQLAlchemy Core 2.x; no ORM)::

    roofline_runs       run_id (primary key), hardware, model, engine_version, started_at, mode, commit, branch,
                        label, schema_version, summary (the RunSummary as JSON text)
                        index (hardware, model, engine_version, started_at)
    roofline_run_files  run_id, name, content: the same files, under the same names and with the same text, that
                        a directory store writes (run.json, verdicts.json, environment.json, results/000-*.json)

A run is inserted in one transaction (its row and all its files, or nothing), so concurrent runners never see
half a run; the primary key makes a taken run id fail the insert, and ``add`` retries with a new suffix.
``runs`` selects the summaries only (one indexed query). Works on SQLite (``sqlite:///path.db``) and
PostgreSQL (``postgresql+psycopg://user@host:port/db``, psycopg 3); other SQLAlchemy dialects should work but
are not tested.

SQLAlchemy is imported when a store is opened, never when the layer is imported.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_roofline.errors import HistoryError
from pytest_roofline.history._recording import clean_setup
from pytest_roofline.history._records import NAME_LIMITS, SCHEMA_VERSION, RunRecord, RunSummary, SetupKey, clean_name
from pytest_roofline.history._store import (
    _RUN_ID,
    _ordered,
    _with_new_suffix,
    gc_paused,
    merge_record,
    new_run_id,
    record_files,
    record_from_files,
    redact_summary,
    summary_from_json,
    summary_to_json,
)
from pytest_roofline.redact import redact_text, redact_url

__all__ = ["SqlStore", "RUNS_TABLE", "FILES_TABLE"]

RUNS_TABLE = "roofline_runs"
FILES_TABLE = "roofline_run_files"
_MAX_TRIES = 20
#: the extra to install for each dialect's driver (what a missing-driver message names)
_DRIVER_HINT = {
    "postgresql": "pip install 'pytest-roofline[history]' (SQLAlchemy and psycopg 3; use postgresql+psycopg://)",
    "postgres": "pip install 'pytest-roofline[history]' (SQLAlchemy and psycopg 3; use postgresql+psycopg://)",
    "mysql": "pip install 'pytest-roofline[history]' pymysql (and use mysql+pymysql://)",
    "mariadb": "pip install 'pytest-roofline[history]' pymysql (and use mariadb+pymysql://)",
    "sqlite": "pip install 'pytest-roofline[history]'",
}


class _Changed(Exception):
    """The run's row changed between its read and its update (another runner added to it): read again."""


def _tables(sa: Any) -> tuple[Any, Any, Any]:
    md = sa.MetaData()
    runs = sa.Table(
        RUNS_TABLE, md,
        sa.Column("run_id", sa.String(96), primary_key=True),
        sa.Column("hardware", sa.String(160), nullable=False),
        sa.Column("model", sa.String(160), nullable=False),
        sa.Column("engine_version", sa.String(160), nullable=False),
        sa.Column("started_at", sa.String(40), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("commit", sa.String(80)),
        sa.Column("branch", sa.String(255)),
        sa.Column("label", sa.String(255)),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Index("ix_roofline_runs_setup_time", "hardware", "model", "engine_version", "started_at"),
    )
    files = sa.Table(
        FILES_TABLE, md,
        sa.Column("run_id", sa.String(96), sa.ForeignKey(f"{RUNS_TABLE}.run_id"), primary_key=True),
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("content", sa.Text, nullable=False),
    )
    return md, runs, files


class SqlStore:
    """A history in a database by SQLAlchemy URL (``sqlite:///h.db``, ``postgresql+psycopg://u@host:5432/db``)."""

    def __init__(self, url: str, *, create: bool = True, **engine_kwargs: Any):
        self._url = str(url)
        try:
            import sqlalchemy as sa
        except ImportError as exc:
            raise HistoryError(f"{self.uri}: a database history needs SQLAlchemy: "
                               f"pip install 'pytest-roofline[history]' ({exc})") from exc
        self._sa = sa
        try:
            self._engine = sa.create_engine(self._url, future=True, **engine_kwargs)
        except ImportError as exc:
            raise HistoryError(f"{self.uri}: the database driver is not installed ({exc}); "
                               f"{self._hint()}") from exc
        except Exception as exc:  # ArgumentError (a malformed URL), NoSuchModuleError (an unknown dialect)
            raise HistoryError(f"{self.uri}: not a database URL SQLAlchemy can open "
                               f"({type(exc).__name__}: {redact_text(str(exc))}); {self._hint()}") from exc
        self._md, self._runs, self._files = _tables(sa)
        if not create:
            self._refuse_missing_sqlite_file()
        try:
            if create:
                self._create_tables()
            else:
                with self._engine.connect() as conn:
                    conn.execute(sa.select(self._runs.c.run_id).limit(1))
        except Exception as exc:
            self._engine.dispose()
            error = self._error("cannot open the history database", exc)
            database = self._engine.url.database or ""
            folder = Path(database).expanduser().parent if self._engine.url.get_backend_name() == "sqlite" else None
            if database and database != ":memory:" and folder is not None and not folder.is_dir():
                # as the directory store says it (trial s26a #15: a bare "unable to open database file")
                error = HistoryError(f"{error}: its folder {folder} does not exist; check the path, or create the "
                                     "folder first (mkdir -p) for a new store")
            elif "file is not a database" in str(exc):  # trial 21, L3: an SQLite URL naming some other file
                database = self._engine.url.database or ""
                error = HistoryError(f"{error}: {database} is not an SQLite database (another kind of file); give "
                                     "the path of a history database, or a new file's (it is made on the first "
                                     "night), or a directory for a directory store")
            raise error from exc

    def _refuse_missing_sqlite_file(self) -> None:
        """A store opened only to be read (``roofline history``, ``roofline compare``) that names an SQLite file
        which does not exist is an error: SQLite would create an empty database file there (review case 9.13)."""
        url = self._engine.url
        database = url.database or ""
        if url.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
            return
        if not Path(database).expanduser().is_file():
            self._engine.dispose()
            raise HistoryError(f"{self.uri}: no such database file {database!r} (a history is created by "
                               "pytest --roofline-history; check the path)")

    def _create_tables(self) -> None:
        """``CREATE TABLE`` when absent, safe with several runners starting on a fresh database at once: on
        PostgreSQL two sessions that both find no table both create it, and the second fails (a duplicate
        ``pg_type`` row, or the relation existing). A failed attempt is retried after the others finished; it
        succeeds as soon as the tables are there. SQLite serialises its writers, but SQLAlchemy's check
        (``checkfirst``) reads before it writes, so two runners on a fresh file both found no table and the second's
        ``CREATE TABLE`` failed ("table roofline_runs already exists", a fresh-clone CI run of 2026-12-07): there
        every statement is ``CREATE ... IF NOT EXISTS``, in one transaction, which the second runner waits for and
        then finds done. A file another process holds locked would cost a whole busy timeout per attempt: one
        attempt there (review case 9.14: six attempts made a locked file a 70 s wait before its one-line error)."""
        sa = self._sa
        if self._engine.dialect.name == "sqlite":
            with self._engine.begin() as conn:
                for table in self._md.sorted_tables:
                    conn.execute(sa.schema.CreateTable(table, if_not_exists=True))
                    for index in sorted(table.indexes, key=lambda ix: str(ix.name)):
                        conn.execute(sa.schema.CreateIndex(index, if_not_exists=True))
            return
        last: Exception | None = None
        attempts = 6
        for attempt in range(attempts):
            try:
                self._md.create_all(self._engine, checkfirst=True)
                return
            except Exception as exc:  # IntegrityError / ProgrammingError of a concurrent CREATE TABLE
                last = exc
                try:
                    names = set(sa.inspect(self._engine).get_table_names())
                except Exception:
                    names = set()
                if {RUNS_TABLE, FILES_TABLE} <= names:
                    try:  # the other runner created them: one more pass creates the index if it is missing
                        self._md.create_all(self._engine, checkfirst=True)
                        return
                    except Exception as again:
                        last = again
                if attempt + 1 < attempts:
                    time.sleep(0.05 * (attempt + 1) + random.random() * 0.1)
        assert last is not None
        raise last

    # ------------------------------------------------------------------ helpers

    @property
    def uri(self) -> str:
        return redact_url(self._url)

    def __repr__(self) -> str:
        return f"SqlStore({self.uri!r})"

    def _hint(self) -> str:
        scheme = self._url.split(":", 1)[0].split("+", 1)[0].lower()
        return _DRIVER_HINT.get(scheme, "pip install 'pytest-roofline[history]' and the dialect's driver")

    def _error(self, what: str, exc: BaseException) -> HistoryError:
        detail = redact_text(str(getattr(exc, "orig", None) or exc)).strip().splitlines()
        text = " ".join(line.strip() for line in detail[:4])
        return HistoryError(f"{self.uri}: {what} ({type(exc).__name__}: {text})")

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    def add(self, record: RunRecord) -> RunSummary:
        """Insert ``record`` (its row and every file) in one transaction; a taken run id draws a new suffix."""
        stored, _added = self.add_unless(record, None)
        return stored

    def _lock_runs(self, conn: Any) -> None:
        """Serialise the writers that check before they add: SQLite's write lock taken at once (BEGIN IMMEDIATE),
        PostgreSQL's runs table locked against other such writers for the transaction."""
        name = self._engine.dialect.name
        if name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif name == "postgresql":
            conn.exec_driver_sql(f"LOCK TABLE {RUNS_TABLE} IN SHARE ROW EXCLUSIVE MODE")

    def add_unless(self, record: RunRecord, same: Callable[[RunSummary], bool] | None) -> tuple[RunSummary, bool]:
        """Store ``record`` unless a stored run of its setup is ``same`` (holds its measurement): (the run stored,
        True), or (that run, False). The check and the insert are one transaction, under the database's write lock,
        so two replays of one results file at once store it once (trial 21, M5)."""
        sa = self._sa
        s = redact_summary(record.summary)
        # names as the columns hold them (build_records already did this; a record made elsewhere may not have)
        s = replace(s, setup=clean_setup(s.setup), label=clean_name(s.label, NAME_LIMITS["label"]),
                    branch=clean_name(s.branch, NAME_LIMITS["branch"]),
                    commit=clean_name(s.commit, NAME_LIMITS["commit"]))
        record = replace(record, summary=s)
        run_id = s.run_id if _RUN_ID.match(s.run_id or "") else new_run_id(s.started_at, s.commit)
        for _ in range(_MAX_TRIES):
            stored = replace(s, run_id=run_id, location=run_id)
            files = record_files(record, stored)
            row = {"run_id": run_id, "hardware": s.setup.hardware, "model": s.setup.model,
                   "engine_version": s.setup.engine_version, "started_at": s.started_at, "mode": s.mode,
                   "commit": s.commit, "branch": s.branch, "label": s.label, "schema_version": SCHEMA_VERSION,
                   "summary": json.dumps(summary_to_json(stored, compact=True), ensure_ascii=False,
                                         separators=(",", ":"))}
            try:
                with self._engine.begin() as conn:
                    if same is not None:
                        self._lock_runs(conn)
                        runs = self._runs
                        q = sa.select(runs.c.summary).where(runs.c.hardware == s.setup.hardware,
                                                            runs.c.model == s.setup.model,
                                                            runs.c.engine_version == s.setup.engine_version)
                        for text in conn.execute(q).scalars().all():
                            held = summary_from_json(json.loads(text), f"{self.uri} {RUNS_TABLE}")
                            if same(held):
                                return replace(held, location=held.run_id), False
                    conn.execute(self._runs.insert(), [row])
                    conn.execute(self._files.insert(), [{"run_id": run_id, "name": n, "content": t} for n, t in files])
                return stored, True
            except sa.exc.IntegrityError as exc:
                if self._exists(run_id):  # the id is taken (another runner, the same second and commit)
                    run_id = _with_new_suffix(run_id, s.started_at, s.commit)
                    continue
                raise self._error(f"cannot store run {run_id}", exc) from exc
            except Exception as exc:
                raise self._error(f"cannot store run {run_id}", exc) from exc
        raise HistoryError(f"{self.uri}: no free run id after {_MAX_TRIES} tries")  # pragma: no cover

    def add_values(self, run_id: str, record: RunRecord) -> tuple[RunSummary, int, int]:
        """Add to stored run ``run_id`` the values of ``record`` (a replay of the same measurement) that it lacks
        (:func:`~pytest_roofline.history._store.merge_record`); (its summary as stored now, how many values were
        added, how many it held). One transaction: the run's row and its changed files, or nothing, so a write
        that fails (or is interrupted) leaves the run as it was. The row is updated only where its summary is
        still the one read (another runner adding to the same run meanwhile: read again and retry)."""
        sa = self._sa
        runs, files_t = self._runs, self._files
        for _ in range(_MAX_TRIES):
            try:
                with self._engine.begin() as conn:
                    row = conn.execute(sa.select(runs.c.summary).where(runs.c.run_id == run_id)).first()
                    if row is None:
                        raise HistoryError(f"{self.uri}: no run {run_id}")
                    files = {str(n): str(c) for n, c in conn.execute(
                        sa.select(files_t.c.name, files_t.c.content).where(files_t.c.run_id == run_id)).all()}
                    old = record_from_files(files, f"{self.uri} run {run_id}")
                    merged, added, held = merge_record(old, record)
                    stored = replace(redact_summary(merged.summary), run_id=run_id, location=run_id)
                    if not added:
                        return stored, 0, held
                    text = json.dumps(summary_to_json(stored, compact=True), ensure_ascii=False,
                                      separators=(",", ":"))
                    done = conn.execute(runs.update().where(runs.c.run_id == run_id, runs.c.summary == row[0])
                                        .values(summary=text))
                    if done.rowcount != 1:
                        raise _Changed
                    for name, content in record_files(merged, stored):
                        if name not in files:
                            conn.execute(files_t.insert(), [{"run_id": run_id, "name": name, "content": content}])
                        elif files[name] != content:
                            conn.execute(files_t.update().where(files_t.c.run_id == run_id, files_t.c.name == name)
                                         .values(content=content))
                return stored, added, held
            except _Changed:
                continue
            except HistoryError:
                raise
            except Exception as exc:
                raise self._error(f"cannot add values to run {run_id}; the run keeps what it held", exc) from exc
        raise HistoryError(f"{self.uri}: run {run_id} kept changing while values were added to it")  # pragma: no cover

    def _exists(self, run_id: str) -> bool:
        sa = self._sa
        with self._engine.connect() as conn:
            return conn.execute(sa.select(self._runs.c.run_id).where(self._runs.c.run_id == run_id)).first() \
                is not None

    # ------------------------------------------------------------------ reading

    def runs(self, setup: SetupKey | None = None) -> Sequence[RunSummary]:
        """Every stored run (of ``setup`` when given), oldest first: one query over the summaries."""
        sa = self._sa
        q = sa.select(self._runs.c.summary)
        if setup is not None:
            q = q.where(self._runs.c.hardware == setup.hardware, self._runs.c.model == setup.model,
                        self._runs.c.engine_version == setup.engine_version)
        q = q.order_by(self._runs.c.started_at, self._runs.c.run_id)
        try:
            with self._engine.connect() as conn:
                texts = conn.execute(q).scalars().all()
        except Exception as exc:
            raise self._error("cannot read the runs", exc) from exc
        out = []
        with gc_paused():
            for text in texts:
                try:
                    d = json.loads(text)
                except (ValueError, RecursionError) as exc:
                    raise HistoryError(f"{self.uri}: a corrupt summary in {RUNS_TABLE} ({exc})") from exc
                out.append(summary_from_json(d, f"{self.uri} {RUNS_TABLE}"))
        return _ordered(out)

    def load(self, run_id: str) -> RunRecord:
        """One run in full, from its files."""
        sa = self._sa
        q = sa.select(self._files.c.name, self._files.c.content).where(self._files.c.run_id == run_id)
        try:
            with self._engine.connect() as conn:
                rows = conn.execute(q).all()
        except Exception as exc:
            raise self._error(f"cannot read run {run_id}", exc) from exc
        if not rows:
            raise HistoryError(f"{self.uri}: no run {run_id}")
        record = record_from_files({str(n): str(c) for n, c in rows}, f"{self.uri} run {run_id}")
        return replace(record, summary=replace(record.summary, location=run_id))
