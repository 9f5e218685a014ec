"""A peer's run carries the time its files state (trial s23b): ``roofline compare`` headed a vllm bench serve,
GuideLLM or AIPerf run with an empty date (``A: folder ·  · no commit``), and a replay of one was stored in history
at the session's start, not at the night it measured. Each known answer is read from the committed real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.measure.results.peers._common import earliest_time, peer_time

PEERS = Path(__file__).parents[1] / "data" / "peers"


@pytest.mark.parametrize(("value", "expected"), [
    ("20261201-122841", "2026-12-01T12:28:41"),          # vllm bench serve's date: the client's local time
    ("2026-12-01T12:48:30.867932", "2026-12-01T12:48:30"),  # AIPerf's start_time: no zone, kept without one
    ("2026-12-01T12:48:30+02:00", "2026-12-01T10:48:30Z"),
    (1796129761.385286, "2026-12-01T12:56:01Z"),          # GuideLLM's start_time: a Unix time
    ("yesterday", None), (None, None), (float("nan"), None), (True, None), ("9" * 100, None),
])
def test_peer_time(value: object, expected: str | None) -> None:
    assert peer_time(value) == expected


def test_earliest_time_reads_a_time_with_no_zone_as_utc() -> None:
    assert earliest_time(["2026-12-01T12:00:00Z", "2026-12-01T11:59:59", None]) == "2026-12-01T11:59:59"
    assert earliest_time(["2026-12-01T12:00:00+01:00", "2026-12-01T11:30:00"]) == "2026-12-01T12:00:00+01:00"
    assert earliest_time([None, ""]) is None


def test_vllm_bench_folder_is_dated_by_its_first_saved_file() -> None:
    folder = PEERS / "cpu-tiny-vllm-bench"
    dates = sorted(json.loads(f.read_text())["date"] for f in folder.glob("sweep_c*.json"))
    data = load_any(folder)
    first = dates[0]
    assert data["created_at"] == f"{first[:4]}-{first[4:6]}-{first[6:8]}T{first[9:11]}:{first[11:13]}:{first[13:]}"
    assert {p["finished_at"] for p in data["points"]} == {peer_time(d) for d in dates}


def test_guidellm_and_aiperf_points_keep_their_start_and_end() -> None:
    g = load_any(PEERS / "guidellm-cpu-tiny")
    doc = json.loads(next((PEERS / "guidellm-cpu-tiny").glob("*.json")).read_text())
    starts = sorted(b["start_time"] for b in doc["benchmarks"])
    assert g["created_at"] == peer_time(starts[0])
    assert all(p["started_at"] < p["finished_at"] for p in g["points"])
    a = load_any(PEERS / "aiperf-cpu-tiny" / "profile_export_aiperf.json")
    raw = json.loads((PEERS / "aiperf-cpu-tiny" / "profile_export_aiperf.json").read_text())
    assert a["created_at"] == raw["start_time"][:19]
    assert a["points"][0]["finished_at"] == raw["end_time"][:19]


def test_roofline_compare_heads_a_peer_run_with_its_date(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_roofline.cli import main
    monkeypatch.setenv("COLUMNS", "200")  # the head line whole (it is clipped to the terminal's width)
    root = Path(__file__).parents[2]
    code = main(["compare", str(PEERS / "cpu-tiny-vllm-bench"), str(PEERS / "guidellm-cpu-tiny"),
                 "--predictions", str(root / "predictions" / "cpu-tiny.yaml")])
    out = capsys.readouterr().out
    assert code == 1  # these two share no measured prediction (other points): said, and the exit status
    assert "cpu-tiny-vllm-bench · 2026-12-01T12:28:41 · no commit" in out
    assert "guidellm-cpu-tiny · 2026-12-01T12:56:01Z · no commit" in out
