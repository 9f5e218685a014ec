"""Two replays of one results file at once store it once (trial 21, M5): the "already stored" check read the index
the session read at its start, so two sessions that both started before either stored stored the file twice (two
identical nights: a spread of 0 for every later night). The check is now made under the store's lock (a
directory's flock, SQLite's BEGIN IMMEDIATE, PostgreSQL's LOCK TABLE). Here both sessions are held at a barrier
after each read the index and before either stores (a plugin in both, at the start of pytest_sessionfinish): no
timing is assumed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import CPU_TINY
from support.pytest_run import NO_HTML
from support.recordings import recording_path

import pytest_roofline
from pytest_roofline.history import open_store

#: the tree under test: the folder holding the pytest_roofline this test imported (a clone, or the checkout)
TREE = Path(pytest_roofline.__file__).resolve().parent.parent

BARRIER = '''
import os, pathlib, time
import pytest
import pytest_roofline

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    here = pathlib.Path(os.environ["BARRIER_DIR"])
    # which pytest_roofline this session scored with, for the test to check it is the tree under test
    (here.parent / (os.environ["BARRIER_NAME"] + ".package")).write_text(pytest_roofline.__file__)
    (here / os.environ["BARRIER_NAME"]).touch()
    deadline = time.monotonic() + 240  # a limit for a broken test, not a timing the test relies on
    while len(list(here.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
'''


def _fresh_database(server: Any, name: str) -> str:
    """A new database on the throwaway server (tests/integration/conftest.py ``postgres``): its URL."""
    import sqlalchemy as sa

    engine = sa.create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return str(server.url().rsplit("/", 1)[0] + f"/{name}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["dir", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_two_replays_of_one_file_at_once_store_it_once(tmp_path: Path, kind: str,
                                                       request: pytest.FixtureRequest) -> None:
    # postgres: the lock is _sql.py's LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE (READ COMMITTED alone lets both
    # transactions read "not stored" and both insert)
    (tmp_path / "barrier_plugin.py").write_text(BARRIER)
    (tmp_path / "predictions").mkdir()
    (tmp_path / "predictions" / "cpu-tiny.yaml").write_text(CPU_TINY.read_text())
    (tmp_path / "gate").mkdir()
    if kind == "postgres":
        uri = _fresh_database(request.getfixturevalue("postgres"), "replays")
    else:
        uri = str(tmp_path / "hist") if kind == "dir" else f"sqlite:///{tmp_path / 'hist.db'}"
    if kind == "dir":
        (tmp_path / "hist").mkdir()
    procs = []
    for n in range(2):
        env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
        # s16 review L5: prepended, not replaced, so the children import the tree under test, not whatever
        # pytest_roofline site-packages holds
        path = os.pathsep.join(p for p in (str(tmp_path), str(TREE), os.environ.get("PYTHONPATH", "")) if p)
        env.update(BARRIER_DIR=str(tmp_path / "gate"), BARRIER_NAME=f"s{n}", PYTHONPATH=path)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "pytest", *NO_HTML, "-p", "no:randomly", "-p", "barrier_plugin", "-q",
             "--no-roofline-progress", "--replay", str(recording_path("cpu-tiny")), "predictions/cpu-tiny.yaml",
             f"--roofline-history={uri}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True))
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    for n in range(2):  # each child scored with the package of the tree under test
        assert Path((tmp_path / f"s{n}.package").read_text()).resolve() == Path(pytest_roofline.__file__).resolve()
    assert sum("roofline history: stored run" in out for out in outs) == 1, outs
    assert sum("already holds the measurement this replay was made at" in out for out in outs) == 1, outs
    assert len(open_store(uri).runs()) == 1
