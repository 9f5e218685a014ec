"""A results file that cannot be written (the disk is full under --roofline-out) is one ResultsError naming the
file, and the version written before stays whole (issue 23, case 9.83a: it was an OSError traceback)."""

from __future__ import annotations

import errno
import json
import os

import pytest

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.file import ResultsWriter


def test_a_full_disk_is_a_results_error_and_the_file_before_it_stays(tmp_path, monkeypatch):
    w = ResultsWriter(tmp_path / "results.json", {"status": "running", "points": [], "errors": []})
    w.add_point({"id": "closed-c1"})  # type: ignore[typeddict-item]

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(ResultsError, match=r"results.json: cannot write the results file \(No space left on device\)"):
        w.add_point({"id": "closed-c2"})  # type: ignore[typeddict-item]
    monkeypatch.undo()
    doc = json.loads((tmp_path / "results.json").read_text())
    assert [p["id"] for p in doc["points"]] == ["closed-c1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no temporary file left behind
