"""Where the repository's files are, for every test: one home instead of ``Path(__file__).parents[...]``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
DATA = TESTS / "data"
PREDICTIONS = REPO / "predictions"
RECORDED = PREDICTIONS / "recorded"
DAY3_RESULTS = RECORDED / "day3-2026-07-31.results.json"
