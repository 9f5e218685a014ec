"""Issue 21 through pytest: a nightly that cannot go silently green.

The case issue 21 names: a project without pytest.ini, its history store outside it, and
``--roofline-history DIR`` (a space, not ``=``) — once DIR exists pytest counts it as a path argument and moves the
rootdir, and a key relative to the rootdir changed: night 2 compared nothing and stayed green. Here the same
layout, every spelling, with the store inside and outside the project and pytest started from elsewhere: every
night after the first compares all 19 measured predictions. A store written under the old key scheme still
compares; a night that compares nothing fails under --roofline-drift-fail; a run that cannot be stored fails the
session; a damaged index is one plain line, not a Python warning."""

from __future__ import annotations

import datetime
import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.paths import CPU_TINY
from support.pytest_run import NO_CACHE
from support.recordings import recording_path

from pytest_roofline.history import SetupKey, SqlStore, build_records, open_store

RECORDED = recording_path("cpu-tiny")
COMPARED_ALL = "roofline drift: 19 compared (19 steady), 3 not measured vs the previous run"


def pytest_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["COLUMNS"] = "120"
    return subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "-p", "no:html",
                           "--no-roofline-progress", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``scratch/work``: a project with no pytest.ini and no git, its prediction file and its recorded run."""
    work = tmp_path / "scratch" / "work"
    (work / "predictions").mkdir(parents=True)
    shutil.copy(CPU_TINY, work / "predictions" / "cpu-tiny.yaml")
    shutil.copy(RECORDED, work / "night.results.json")
    return work


_NIGHTS = itertools.count(1)


def _night_time(n: int) -> str:
    return (datetime.datetime(2026, 11, 1, 2, tzinfo=datetime.UTC) + datetime.timedelta(hours=n)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _night(cwd: Path, work: Path, *history: str, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """One night: the recorded run replayed as a measurement of its own (a replay is stored at its file's
    ``created_at``, and the same measurement only once), an hour after the last night's."""
    rel = os.path.relpath(work, cwd)
    night = work / "night.results.json"
    data = json.loads(night.read_text())
    data["created_at"] = _night_time(next(_NIGHTS))
    night.write_text(json.dumps(data))
    return pytest_in(cwd, "--replay", f"{rel}/night.results.json", f"{rel}/predictions/cpu-tiny.yaml", *history,
                     *extra)


@pytest.mark.slow
def test_the_key_does_not_move_with_the_rootdir(project: Path) -> None:
    work = project
    scratch = work.parent
    outside = scratch / "hist"  # outside the project, as in the review
    first = _night(work, work, "--roofline-history", str(outside))  # does not exist yet: rootdir scratch/work
    assert first.returncode == 0, first.stdout + first.stderr
    assert "roofline drift: 0 compared, 19 new, 3 not measured vs the previous run" in first.stdout
    assert "the store holds no earlier run of this setup: 19 measured, nothing to compare with yet" in first.stdout
    # a store with no run at all: where it is (absolute) and where a relative path is read from, for a night whose
    # path is wrong (a trial's `--roofline-history hist` from the wrong folder made a new store and exited 0)
    assert (f"(the store at {outside.resolve()} held no run at all: if this night meant an existing store"
            in first.stdout)
    nights = [
        _night(work, work, "--roofline-history", str(outside)),  # exists now: pytest's rootdir moves to scratch
        _night(work, work, f"--roofline-history={outside}"),  # the = spelling: rootdir scratch/work
        _night(scratch.parent, work, "--roofline-history", str(outside)),  # cd elsewhere
        _night(work, work, "--roofline-history", "../hist"),  # a relative store path
    ]
    rootdirs = set()
    for r in nights:
        assert r.returncode == 0, r.stdout + r.stderr
        assert COMPARED_ALL in r.stdout, r.stdout
        rootdirs.add(next(line for line in r.stdout.splitlines() if line.startswith("rootdir:")))
    assert len(rootdirs) >= 2  # pytest's rootdir did move between these nights; the key did not
    keys = [frozenset(v.key for v in s.values) for s in open_store(str(outside)).runs()]
    assert len(keys) == 5 and len(set(keys)) == 1
    assert "cpu-tiny.yaml::queueing-past-the-cap::concurrency=32" in keys[0]
    # the store inside the project, both spellings
    inside = work / "hist"
    for history in (("--roofline-history", str(inside)), ("--roofline-history", str(inside)),
                    (f"--roofline-history={inside}",)):
        r = _night(work, work, *history)
        assert r.returncode == 0, r.stdout + r.stderr
    assert COMPARED_ALL in r.stdout
    # the trend page lists each prediction once
    out = subprocess.run([sys.executable, "-m", "pytest_roofline.cli", "history", str(outside), "-o",
                          str(work / "trend.html")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    page = (work / "trend.html").read_text()
    assert page.count('id="') > 0 and "5 runs" in out.stdout


def _replay_at(work: Path, hist: Path, created_at: str, commit: str) -> subprocess.CompletedProcess[str]:
    """Replay the recorded run as a file measured at ``created_at`` by ``commit`` (no new night time drawn)."""
    data = json.loads(RECORDED.read_text())
    data["created_at"] = created_at
    data.setdefault("setup", {})["commit"] = commit
    f = work / f"m-{created_at[:13]}.results.json"
    f.write_text(json.dumps(data))
    return pytest_in(work, "--replay", f.name, "predictions/cpu-tiny.yaml", f"--roofline-history={hist}")


@pytest.mark.slow
def test_a_replay_is_the_night_it_was_measured(project: Path) -> None:
    """A replayed file is stored at its own created_at and commit (not the replay's), the same measurement once,
    and compared only with the nights before it."""
    hist = project.parent / "hist"
    monday = _replay_at(project, hist, "2026-11-30T02:00:00Z", "aaaa111")
    assert monday.returncode == 0, monday.stdout + monday.stderr
    (run,) = open_store(str(hist)).runs()
    assert run.started_at == "2026-11-30T02:00:00Z" and run.commit == "aaaa111"
    again = _replay_at(project, hist, "2026-11-30T02:00:00Z", "aaaa111")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"roofline history: not stored: run {run.run_id} of cpu · roofline-tiny · vllm 0.32.0 already holds" in (
        " ".join(again.stdout.split()))
    assert "roofline drift: 0 compared, 19 new" in again.stdout  # not compared with itself
    assert len(open_store(str(hist)).runs()) == 1
    sunday = _replay_at(project, hist, "2026-11-29T02:00:00Z", "bbbb222")  # an older file, replayed later
    assert "roofline drift: 0 compared, 19 new" in sunday.stdout  # no night before it: Monday is after
    tuesday = _replay_at(project, hist, "2026-12-01T02:00:00Z", "cccc333")
    assert COMPARED_ALL in tuesday.stdout
    assert sorted(r.started_at[:10] for r in open_store(str(hist)).runs()) == ["2026-11-29", "2026-11-30",
                                                                             "2026-12-01"]


def _old_scheme(store_dir: Path, file: str) -> None:
    """Rewrite the index as the old writer left it: no interval or definition-hash columns, and ``file`` relative
    to the rootdir of that night (``file``)."""
    index = store_dir / "index.jsonl"
    out = []
    for line in index.read_text().splitlines():
        d = json.loads(line)
        fields = d["values"]["fields"]
        keep = [i for i, f in enumerate(fields) if f not in ("measured_lo", "measured_hi", "interval_method",
                                                             "interval_level", "definition_hash")]
        fi = fields.index("file")
        rows = []
        for row in d["values"]["rows"]:
            row = list(row)
            row[fi] = file
            row[0] = None  # the key is derived from file, id and at
            rows.append([row[i] for i in keep])
        d["values"] = {"fields": [fields[i] for i in keep], "rows": rows}
        out.append(json.dumps(d))
    index.write_text("\n".join(out) + "\n")


@pytest.mark.slow
def test_an_old_scheme_store_still_compares(project: Path) -> None:
    hist = project.parent / "hist"
    assert _night(project, project, f"--roofline-history={hist}").returncode == 0
    _old_scheme(hist, "work/predictions/cpu-tiny.yaml")  # written when the rootdir was scratch
    r = _night(project, project, f"--roofline-history={hist}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert COMPARED_ALL in r.stdout
    # and roofline compare matches the two schemes too
    a, b = (s.run_id for s in open_store(str(hist)).runs())
    c = subprocess.run([sys.executable, "-m", "pytest_roofline.cli", "compare", a, b, "--store", str(hist)],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "120"})
    assert c.returncode == 0, c.stderr
    assert "22 predictions; 19 measured in both runs" in c.stdout


@pytest.mark.slow
def test_a_night_that_compared_nothing_fails_under_drift_fail(project: Path) -> None:
    hist = project.parent / "hist"
    assert _night(project, project, f"--roofline-history={hist}").returncode == 0
    _old_scheme(hist, "somewhere/else.yaml")  # a run of this setup whose keys match nothing tonight
    quiet = _night(project, project, f"--roofline-history={hist}")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr  # without --roofline-drift-fail: said, not failed
    assert "roofline drift: 0 compared, 19 new, 3 not measured vs the previous run" in quiet.stdout
    # the quiet night was stored too (and tomorrow compares with it): a copy of the store with only the run
    # whose keys match nothing
    hist2 = project.parent / "hist2"
    shutil.copytree(hist, hist2)
    index = hist2 / "index.jsonl"
    index.write_text(index.read_text().splitlines()[0] + "\n")
    r = _night(project, project, f"--roofline-history={hist2}", extra=("--roofline-drift-fail",))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "21 passed, 1 xpassed" in r.stdout  # no test failed: the session did
    assert ("roofline drift: FAILED (--roofline-drift-fail): cpu · roofline-tiny · vllm 0.32.0: only 0 of 19 "
            "measured predictions were compared with a baseline (at least 50% must be)") in r.stdout
    # trial 21, M3: the reason is the drift section's last line, after the count, not above the prediction table;
    # and the night was stored, so the advice is that the next night compares, not "record it once without"
    lines = r.stdout.splitlines()
    failed = next(i for i, line in enumerate(lines) if line.startswith("roofline drift: FAILED"))
    assert lines[failed - 1].endswith("vs the previous run") and lines[failed - 1].startswith("roofline drift: 0 ")
    assert lines[failed + 1].startswith("=") and "passed" in lines[failed + 1]
    assert failed > next(i for i, line in enumerate(lines) if line.startswith("roofline history: stored run"))
    assert "this night is stored now, so the next night compares with it" in lines[failed]
    assert "record it once without --roofline-drift-fail" not in r.stdout
    hist3 = project.parent / "hist3"  # the failed night was stored in hist2 (tomorrow compares with it): afresh
    shutil.copytree(hist, hist3)
    (hist3 / "index.jsonl").write_text(index.read_text().splitlines()[0] + "\n")
    zero = _night(project, project, f"--roofline-history={hist3}",
                  extra=("--roofline-drift-fail", "--roofline-drift-min-compared", "0%"))
    assert zero.returncode == 1  # 0% lowers the share, but a night that compared nothing at all never passes


@pytest.mark.slow
def test_a_run_that_cannot_be_stored_fails_the_session(project: Path) -> None:
    hist = project.parent / "hist"
    hist.mkdir()
    (hist / "cpu").write_text("a file where the setup's folder must go")  # the store cannot take the run
    r = _night(project, project, f"--roofline-history={hist}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "roofline history: ERROR: could not store the run of cpu · roofline-tiny · vllm 0.32.0" in r.stdout
    assert "21 passed, 1 xpassed" in r.stdout
    w = _night(project, project, f"--roofline-history={hist}", extra=("--roofline-history-optional",))
    assert w.returncode == 0 and "roofline history: WARNING: could not store the run" in w.stdout


@pytest.mark.slow
def test_a_damaged_index_is_one_plain_line(project: Path) -> None:
    hist = project.parent / "hist"
    assert _night(project, project, f"--roofline-history={hist}").returncode == 0
    with open(hist / "index.jsonl", "a") as fh:
        fh.write('{"schema": "pytest-roofline/history-run", "schema_version": 1, "run_id": ["x"]}\n')
    r = _night(project, project, f"--roofline-history={hist}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "HistoryIndexRebuiltWarning" not in r.stdout + r.stderr and "_store.py" not in r.stdout + r.stderr
    assert "roofline history: " in r.stdout and "was corrupt (line 2" in r.stdout
    assert COMPARED_ALL in r.stdout
    h = subprocess.run([sys.executable, "-m", "pytest_roofline.cli", "history", str(hist), "-o",
                        str(project / "t.html")], capture_output=True, text=True, timeout=120)
    assert h.returncode == 0 and "Warning" not in h.stderr


# --------------------------------------------------------------------------- PostgreSQL (issue 23's items)


# (the ``postgres`` fixture: tests/integration/conftest.py)


def _database(server, name: str) -> str:  # noqa: ANN001
    import sqlalchemy as sa

    engine = sa.create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.url().rsplit("/", 1)[0] + f"/{name}"


@pytest.mark.postgres
@pytest.mark.slow
def test_four_writers_on_a_fresh_postgres_database_all_succeed(postgres) -> None:  # noqa: ANN001
    """reliability 9.07: on a fresh database the writers' CREATE TABLEs raced and some writers failed to open the
    store. Three fresh databases, four writers each opening the store at the same instant and adding 5 runs."""
    for attempt in range(3):
        url = _database(postgres, f"race{attempt}")
        barrier = threading.Barrier(4)
        errors: list[BaseException] = []

        def writer(w: int, url: str = url, barrier: threading.Barrier = barrier,
                   errors: list[BaseException] = errors) -> None:
            try:
                barrier.wait(30)
                store = SqlStore(url)
                try:
                    for i in range(5):
                        rec = build_records([{"id": f"p{w}-{i}", "file": "x.yaml", "status": "pass",
                                              "mode": "math", "at": {}}],
                                            setups={"x.yaml": SetupKey("cpu", "m", "1")},
                                            started_at="2026-12-04T02:00:00Z", mode="math")[0]
                        store.add(rec)
                finally:
                    store.close()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        store = SqlStore(url)
        assert len(store.runs()) == 20
        store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_long_and_nul_names_are_stored_in_postgres_and_the_password_never_printed(postgres,  # noqa: ANN001
                                                                                   project: Path) -> None:
    url = _database(postgres, "names")
    label = "nightly-" + "L" * 292  # 300 characters (reliability 9.19)
    r = _night(project, project, f"--roofline-history={url}", extra=("--roofline-history-label", label))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "roofline history: stored run" in r.stdout and postgres.password not in r.stdout + r.stderr
    (s,) = SqlStore(url).runs()
    assert s.label is not None and len(s.label) == 255 and s.label.startswith("nightly-LLL")


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("password", ["pw/SLASH-SECRET1", "pw SPACE-SECRET2", "pw?QUERY-SECRET3"])
def test_a_postgres_password_is_printed_nowhere(postgres, project: Path, password: str) -> None:  # noqa: ANN001
    """reliability 9.18b: passwords SQLAlchemy URLs allow, holding "/", a space or "?" (wrong ones here, so every
    command fails and prints its error): the password appears in no output of pytest, roofline history or roofline
    compare."""
    url = postgres.url(password=password)
    outs = [_night(project, project, f"--roofline-history={url}")]
    for cmd in (["history", url, "-o", str(project / "t.html")], ["compare", "a", "b", "--store", url]):
        outs.append(subprocess.run([sys.executable, "-m", "pytest_roofline.cli", *cmd], capture_output=True,
                                   text=True, timeout=120))
    for r in outs:
        assert r.returncode != 0
        secret = password.split("-", 1)[1]
        assert secret not in r.stdout + r.stderr, r.stdout + r.stderr
        assert "***@127.0.0.1" in r.stdout + r.stderr or "***" in r.stdout + r.stderr


@pytest.mark.slow
def test_the_false_alarm_benchmark_states_its_figures() -> None:
    """benchmarks/drift_false_alarms.py on its committed real CPU-engine runs: with three earlier nights, the share
    of identical-configuration prediction-nights the shipped rule calls drifted is, for each data file, the figure
    nightly.md states: 34/960 = 3.5 % and 83/960 = 8.6 % (over the goal) on two sets of held runs of an idle
    machine half an hour apart, 27/960 = 2.8 % on the held runs of
    2026-12-05's morning, 52/960 = 5.4 % on the starved 48x runs (over the 5 %
    goal, and said so), 46/960 = 4.8 % and 13/640 = 2.0 % at 12x. (It once read only the first "3 earlier nights"
    section, the first file's intervals-only figure, and failed its <= 5 % check.) The data are fixed, so the
    figures are too; no timing is involved."""
    import re

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "drift_false_alarms.py"
    out = subprocess.run([sys.executable, str(script), "--k", "5"], capture_output=True, text=True, timeout=300,
                         check=True).stdout

    def block_of(name: str) -> str:
        """The benchmark's printout for one data file."""
        return out.split(f"== benchmarks/data/{name}\n", 1)[1].split("\n== ", 1)[0]

    def shipped_of(name: str) -> str:
        """Its shipped rule's figures with three earlier nights."""
        return block_of(name).split("the shipped rule", 1)[1].split("tonight vs 3 earlier nights", 1)[1]

    stated = {"drift-cpu-runs-idle.json": "34/960 = 3.5%", "drift-cpu-runs-idle2.json": "83/960 = 8.6%",
              "drift-cpu-runs-held.json": "27/960 = 2.8%", "drift-cpu-runs-idle3.json": "11/960 = 1.1%",
              "drift-cpu-runs-48x.json": "52/960 = 5.4%",
              "drift-cpu-runs-load.json": "46/960 = 4.8%",
              "drift-cpu-runs.json": "13/640 = 2.0%"}
    for name, figure in stated.items():
        shipped = shipped_of(name)
        m = re.search(r"identical configuration, (\d+) prediction-nights: drifted (\d+/\d+ = [0-9.]+%)", shipped)
        assert m is not None, out
        assert m.group(2) == figure, (name, m.group(0))
    # the held rule (issue 21): none of the 48x runs' 24 points held 90 % of its concurrency (their held figures,
    # 0.23-0.89 of C, are in the data file), so with the rule no earlier night is a baseline: all 960 identical-
    # configuration prediction-nights with three earlier nights are new, none drifted; the 12x files carry no held
    # figures and say the rule changes nothing there
    assert "24 of 24 held under 90%" in block_of("drift-cpu-runs-48x.json")
    held = shipped_of("drift-cpu-runs-48x.json").split("WITH the held rule", 1)[1]
    assert held.split("\n")[1].strip() == ("identical configuration, 960 prediction-nights: drifted 0/960 = 0.0% (goal "
                                          "<= 5%), uncertain 0/960 = 0.0%, new (no held earlier night) 960/960 = "
                                          "100.0%")
    assert out.count("no held figures recorded with these runs: the held rule changes nothing here") == 2
    # the held runs (the engine in pytest's session): every point held, so the rule changes nothing; detection of
    # max_num_seqs 4 -> 2 with three earlier nights is the figure nightly.md states (516/840, under the 90 % goal)
    assert "0 of 24 held under 90%" in block_of("drift-cpu-runs-held.json")
    shipped = shipped_of("drift-cpu-runs-held.json")
    assert "4 -> 2 at the 7 affected predictions, 840 prediction-nights: drifted 516/840 = 61.4%" in shipped
    # the idle machine's held runs (run-to-run sd 0.02-0.06 of a log value): 734/840, every affected prediction
    # caught every time but TPOT p50 at C=4, whose 13 % move is 3 sd (14 of 120)
    assert "0 of 24 held under 90%" in block_of("drift-cpu-runs-idle.json")
    shipped = shipped_of("drift-cpu-runs-idle.json")
    assert "4 -> 2 at the 7 affected predictions, 840 prediction-nights: drifted 734/840 = 87.4%" in shipped
    assert "tpot-p50[concurrency=4]      drifted 14/120" in shipped
    # the four held sets together (README and nightly.md: 4.0 % false drift of 3,840, 75.4 % detection of 3,360):
    # summed from each file's own counts, so the pooled figure moves with the data, not with the prose
    false_n = detect_n = false_d = detect_d = 0
    for name in ("drift-cpu-runs-idle.json", "drift-cpu-runs-idle2.json", "drift-cpu-runs-held.json",
                 "drift-cpu-runs-idle3.json"):
        shipped = shipped_of(name)
        same = re.search(r"identical configuration, \d+ prediction-nights: drifted (\d+)/(\d+)", shipped)
        caught = re.search(r"affected predictions, \d+ prediction-nights: drifted (\d+)/(\d+)", shipped)
        assert same is not None and caught is not None, shipped
        false_n, false_d = false_n + int(same.group(1)), false_d + int(same.group(2))
        detect_n, detect_d = detect_n + int(caught.group(1)), detect_d + int(caught.group(2))
    assert (false_n, false_d, detect_n, detect_d) == (155, 3840, 2533, 3360)
    pooled = f"{100 * false_n / false_d:.1f}% and {100 * detect_n / detect_d:.1f}%"
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert pooled == "4.0% and 75.4%" and pooled in " ".join(readme.split())
