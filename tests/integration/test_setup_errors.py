"""A setup problem is said once (issue 24, review finding M9): ``pytest --gpu cpu`` on a file for an A100 used to
print the same refusal once per measured prediction (12 identical blocks in the review, 22 for day3.yaml); now the
first prediction carries it in full and the others of the file say "not run" in one line. No engine starts: the
refusal comes before any."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.paths import DAY3, REPO
from support.pytest_run import NO_HTML


@pytest.mark.slow
def test_a_refused_file_reports_its_setup_error_once() -> None:
    r = subprocess.run([sys.executable, "-m", "pytest", *NO_HTML, "--gpu", "cpu", str(DAY3)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    # the report's body, not the short summary at its end: under CI=true pytest prints every summary line whole
    # (so the first error's message shows there a second time), elsewhere cut to the terminal's width
    body = out.split("short test summary info")[0]
    assert body.count("--gpu cpu runs the CPU build of vLLM, but") == 1
    not_run = body.count("not run (setup error above, reported in full by ")
    errors = sum(1 for line in out.splitlines() if line.startswith("ERROR predictions/day3.yaml::"))
    assert errors == 22 and not_run == errors - 1  # 22 measured predictions: one in full, 21 in one line
