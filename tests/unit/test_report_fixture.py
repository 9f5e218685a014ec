"""The Day-3 notebook's results file (tests/support/notebook.py) is a valid results file."""

from __future__ import annotations

from pathlib import Path

from support.notebook import write_notebook_results

from pytest_roofline.measure.results import load_results


def test_fixture_is_a_valid_results_file(tmp_path: Path) -> None:
    data = load_results(write_notebook_results(tmp_path / "r.json", timeline=True))
    assert [p["concurrency"] for p in data["points"][:8]] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert all(p["server"]["timeline"] for p in data["points"][:8])
