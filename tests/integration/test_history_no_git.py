"""Outside a git checkout a prediction file's key is its name alone (``cpu-tiny.yaml``), inside one its path from
the repository root (``predictions/cpu-tiny.yaml``), so a copy of a checkout without ``.git`` (a source tarball, a
container copy) starts every series afresh. The --roofline-drift-fail failure said "its first night in this store,
or the file was moved or renamed" and named the file's absolute path (trial 21, M2): it now names the key, says no
git checkout was found, and names the store's key of the same file measured from a checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.paths import CPU_TINY
from support.pytest_run import NO_HTML
from support.scaled_nights import write_nights


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["COLUMNS"] = "400"
    return subprocess.run([sys.executable, "-m", "pytest", *NO_HTML, "-p", "no:randomly", "-q",
                           "--no-roofline-progress", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


def test_a_copy_without_git_says_why_nothing_was_compared(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "predictions").mkdir(parents=True)
    (checkout / ".git").mkdir()  # the repository root, as git's top level is found: a folder holding .git
    shutil.copy(CPU_TINY, checkout / "predictions" / "cpu-tiny.yaml")
    copy = tmp_path / "copy"
    shutil.copytree(checkout, copy, ignore=shutil.ignore_patterns(".git"))
    first, second = write_nights(tmp_path / "nights", [1.0, 1.0])
    hist = tmp_path / "hist"
    hist.mkdir()
    stored = _pytest(checkout, "--replay", str(first), "predictions/cpu-tiny.yaml", f"--roofline-history={hist}")
    assert "roofline history: stored run" in stored.stdout, stored.stdout
    r = _pytest(copy, "--replay", str(second), "predictions/cpu-tiny.yaml", f"--roofline-history={hist}",
                "--roofline-drift-fail")
    assert r.returncode == 1, r.stdout + r.stderr
    (failed,) = [line for line in r.stdout.splitlines() if line.startswith("roofline drift: FAILED")]
    assert ("no earlier run of this setup measured any prediction of cpu-tiny.yaml (no git checkout found above "
            "cpu-tiny.yaml, so its key is its name alone; this setup's runs in the store hold "
            "predictions/cpu-tiny.yaml, measured from a git checkout") in failed
    assert str(copy) not in failed  # the key, not an absolute path
