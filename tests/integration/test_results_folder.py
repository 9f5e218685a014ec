"""Where ``roofline-runs/`` goes without ``--roofline-out`` does not move with how an option is spelt (trial s24 M5):
with no pytest configuration file the rootdir is the common folder of the arguments, and ``--roofline-history DIR``
with a space makes DIR an argument once it exists, so night 2's results and engine logs landed one folder above
night 1's and a CI uploading ``roofline-runs/`` lost them. Now they go where pytest was started, unless a
configuration file fixes the rootdir (then to the rootdir, as before)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import CPU_TINY
from support.pytest_run import NO_HTML

#: a conftest that writes the session's results folder, as the plugin worked it out, to out_dir.txt
PROBE = """
import pytest
from pytest_roofline.pytest_plugin.active import SESSION_KEY

def pytest_sessionfinish(session):
    rs = session.config.stash.get(SESSION_KEY, None)
    (session.config.invocation_params.dir / "out_dir.txt").write_text(str(rs.out_dir.parent) if rs else "")
"""


def _out_dir(cwd: Path, *args: str) -> tuple[Path, str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    r = subprocess.run([sys.executable, "-m", "pytest", *NO_HTML, "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                        "--no-roofline-progress", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout[-2000:]
    rootdir = next(line for line in r.stdout.splitlines() if line.startswith("rootdir:")) if "rootdir:" in r.stdout \
        else ""
    return Path((cwd / "out_dir.txt").read_text()), rootdir


@pytest.mark.parametrize("ini", [False, True, "store"])
def test_the_results_folder_stays_where_pytest_runs(tmp_path: Path, ini: bool | str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(CPU_TINY, project / "small.yaml")
    (project / "conftest.py").write_text(PROBE)
    if ini is True:
        (project / "pytest.ini").write_text("[pytest]\n")
    hist = tmp_path / "hist"  # outside the project; it exists from night 2 on
    if ini == "store":  # a pytest.ini beside the store, not the project's (trial s24c M5): found through the store
        (tmp_path / "cfg").mkdir()
        (tmp_path / "cfg" / "pytest.ini").write_text("[pytest]\n")
        hist = tmp_path / "cfg" / "hist"
    first, _ = _out_dir(project, "small.yaml", "-k", "kv-tokens", "--roofline-history", str(hist), "-v")
    assert hist.is_dir()
    second, rootdir = _out_dir(project, "small.yaml", "-k", "kv-tokens", "--roofline-history", str(hist), "-v")
    assert first == second == project / "roofline-runs"
    if ini is not True:  # the rootdir did move (pytest's rule: to the arguments' common folder, or the store's
        # pytest.ini), the results folder did not
        assert rootdir.endswith(str(tmp_path / "cfg") if ini == "store" else str(tmp_path)), rootdir
