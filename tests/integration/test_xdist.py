"""Under pytest-xdist the controller scores nothing itself: the scorecard is built from the verdicts the
workers' reports carry (before, it read a ``reported_verdicts`` attribute that nothing set, and was empty)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.pytest_run import NO_CACHE

pytest.importorskip("xdist")

LESSON = Path(__file__).resolve().parents[2] / "predictions" / "batching-and-throughput.yaml"


@pytest.mark.slow
def test_xdist_scorecard_is_complete(pytester: pytest.Pytester) -> None:
    shutil.copy(LESSON, pytester.path / "lesson.roofline.yaml")
    serial = pytester.runpytest_subprocess(*NO_CACHE, "--roofline-scorecard", "serial.html")
    parallel = pytester.runpytest_subprocess(*NO_CACHE, "-n", "2", "--roofline-scorecard", "par.html")
    assert parallel.parseoutcomes() == serial.parseoutcomes()
    rows = {}
    for name in ("serial", "par"):
        page = (pytester.path / f"{name}.html").read_text(encoding="utf-8")
        rows[name] = sorted(re.findall(r'<tbody class="pred ([a-z-]+)" id="([^"]+)"', page))
    n = sum(serial.parseoutcomes().values())
    assert len(rows["serial"]) == n
    assert rows["par"] == rows["serial"]
