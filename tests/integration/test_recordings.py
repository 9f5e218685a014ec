"""Each CPU-engine recording replays against its own prediction file with no failure (pytest in a subprocess)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.paths import RECORDED, REPO
from support.pytest_run import NO_CACHE
from support.recordings import RECORDINGS, load_recording


@pytest.mark.slow
@pytest.mark.parametrize("name", RECORDINGS)
def test_recording_replays_against_its_prediction_file(name):
    load_recording(name)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", *NO_CACHE, "--replay",
                        str(RECORDED / f"{name}-2026-12-01.results.json"), str(REPO / "predictions" / f"{name}.yaml")],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " failed" not in r.stdout.splitlines()[-1]
