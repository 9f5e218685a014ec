"""Where the history store is (trial s26a #1, #5). An ini file's ``roofline_history = hist`` is read from the ini
file's folder, as pytest reads the paths an ini file writes: a night started one folder down (``cd predictions``)
made a second store there, compared nothing, and, the store being new, passed ``--roofline-drift-fail``. An empty
``--roofline-history=`` (an unset CI secret) is a usage error, never history silently off. Both in a child
process, started in the folder a user starts in, with the project's own pytest.ini."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import CPU_TINY
from support.pytest_run import NO_HTML
from support.recordings import recording_path


def _project(root: Path) -> None:
    (root / "predictions").mkdir()
    (root / "predictions" / "cpu-tiny.yaml").write_text(CPU_TINY.read_text())
    (root / "pytest.ini").write_text("[pytest]\nroofline_history = hist\n")


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", *NO_HTML, "-p", "no:randomly", "--no-roofline-progress",
                           *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_an_ini_store_path_is_read_from_the_ini_files_folder(tmp_path: Path) -> None:
    _project(tmp_path)
    replay = (f"--replay={recording_path('cpu-tiny')}",)  # "=": a path after a space is an arg to pytest's rootdir
    first = _pytest(tmp_path, *replay, "predictions/cpu-tiny.yaml")
    assert first.returncode == 0, first.stdout[-3000:]
    assert (tmp_path / "hist" / "index.jsonl").is_file()
    # the same night again, started in predictions/: the same store (the replay is its stored measurement, so
    # nothing is compared: what matters is where it looked), and no store under predictions/
    again = _pytest(tmp_path / "predictions", *replay, "cpu-tiny.yaml")
    assert "already stored: run" in again.stdout, again.stdout[-3000:]
    assert not (tmp_path / "predictions" / "hist").exists()


def test_an_empty_history_option_is_a_usage_error(tmp_path: Path) -> None:
    _project(tmp_path)
    result = _pytest(tmp_path, "predictions/cpu-tiny.yaml", "--roofline-history=")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert ("--roofline-history is given an empty value (an unset CI secret or variable?): pass the store's path or "
            "URI, or leave the option out") in result.stderr + result.stdout


@pytest.mark.slow
def test_an_ini_sqlite_path_is_read_from_the_ini_files_folder_too(tmp_path: Path) -> None:
    # trial s26d #4: `roofline_history = sqlite:///hist.db` followed the current directory (a second database under
    # predictions/ for a night started there)
    pytest.importorskip("sqlalchemy")
    _project(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\nroofline_history = sqlite:///hist.db\n")
    replay = (f"--replay={recording_path('cpu-tiny')}",)
    first = _pytest(tmp_path, *replay, "predictions/cpu-tiny.yaml")
    assert first.returncode == 0, first.stdout[-3000:]
    again = _pytest(tmp_path / "predictions", *replay, "cpu-tiny.yaml")
    assert "already stored: run" in again.stdout, again.stdout[-3000:]
    assert (tmp_path / "hist.db").is_file() and not (tmp_path / "predictions" / "hist.db").exists()


@pytest.mark.slow
def test_an_empty_history_variable_is_said(tmp_path: Path) -> None:
    # trial s26d #7: env: {ROOFLINE_HISTORY: ${{ secrets.X }}} with the secret unset turned the history off, silently
    import os

    _project(tmp_path)
    (tmp_path / "pytest.ini").unlink()
    env = {**os.environ, "ROOFLINE_HISTORY": ""}
    r = subprocess.run([sys.executable, "-m", "pytest", *NO_HTML, "-p", "no:randomly", "--no-roofline-progress",
                        f"--replay={recording_path('cpu-tiny')}", "predictions/cpu-tiny.yaml"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert ("roofline history: not stored: $ROOFLINE_HISTORY is set but empty (an unset CI secret or variable?)"
            in r.stdout)
