"""``roofline compare``'s model column and outcomes (trial s24 M7): on day3's recorded run against its vllm bench
serve twin the model column showed the roofline's 5,054 tok/s beside 2,505 measured, with no band and no word of
which model it was, and predictions pytest marks XFAIL read ``fail``. A stored value now keeps the serving model's
value and band (``StoredValue.serving``, ``serving_lo``, ``serving_hi``), the column shows them, and a results
file compared is given the outcome pytest would report."""

from __future__ import annotations

import json

import pytest
from support.paths import DAY3, DAY3_RESULTS, PEERS

from pytest_roofline.cli import main


def _row(lines: list[str], pid: str) -> str:
    """The row of ``pid``: on its id's line, or the line under it where ids take their own line."""
    i = next(i for i, line in enumerate(lines) if line.split() and line.split()[0] == pid)
    return lines[i] if len(lines[i].split()) > 1 else lines[i + 1]


def _compare(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["compare", str(DAY3_RESULTS), str(PEERS / "day3-vllm-bench"), "--predictions", str(DAY3), *extra])
    assert code == 0
    return capsys.readouterr().out


def test_the_model_column_shows_the_serving_model_with_its_band(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = _compare(capsys)
    lines = out.splitlines()
    row = _row(lines, "throughput-c64")
    # the serving model's value and band, named; not the roofline's ceiling (5,054 tok/s)
    assert row.endswith("2,407 tok/s [2,200–2,640 tok/s] serving"), row
    assert "5,054" not in row
    # an expected miss is xfail in both runs, as pytest reports it (it read "fail")
    assert row.count(" xfail ") == 2 and " fail " not in row
    # a fact with no serving value keeps the roofline's, unlabelled
    weights = _row(lines, "weights")
    assert weights.rstrip().endswith("16.38 GB")


def test_the_json_carries_the_serving_value_in_si(capsys) -> None:
    doc = json.loads(_compare(capsys, "--json"))
    row = next(r for r in doc["rows"] if r["prediction_id"] == "throughput-c64")
    assert row["unit"] == "tok/s" and row["outcome_a"] == row["outcome_b"] == "xfail"
    assert row["serving_lo_b"] < row["serving_b"] < row["serving_hi_b"]
    assert row["serving_b"] == pytest.approx(2407, rel=1e-3)
    assert row["model_b"] == pytest.approx(5054, rel=1e-3)  # the verdict's model value is kept as it was


def test_the_json_gives_a_points_at_as_numbers(capsys) -> None:
    # trial s24 L9: "at": {"concurrency": "32"} (the history's text keys) in compare --json
    doc = json.loads(_compare(capsys, "--json"))
    ats = [r["at"] for r in doc["rows"] if r["at"]]
    assert {"concurrency": 64} in ats
    assert all(isinstance(x, (int, float)) for at in ats for x in at.values() if str(x).replace(".", "").isdigit())
