"""Nights made by a peer's tool are each their own night (trial s24): a vllm bench serve file had no time the
project read, so every vllm bench night of the same points had one measurement id (the points' ids alone); the
second night replayed into history was "not stored: run ... already holds the measurement" and compared with
nothing, and every later night the same. Now a peer's run is dated by its files (vllm bench serve's ``date``,
GuideLLM's and AIPerf's start and end times) and stored at that date; a file with no date adds its figures to the
id. Two real vllm bench serve nights of tests/data/peers/cpu-tiny-vllm-bench (the committed one, and the same
files saved a day later with half the output throughput) replayed into one store are two runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from support.paths import CPU_TINY, PEERS
from support.pytest_run import NO_CACHE

from pytest_roofline.history import measurement_id, open_store
from pytest_roofline.measure.results.peers import load_any


def _replay(cwd: Path, night: Path, store: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["COLUMNS"] = "400"
    return subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "-p", "no:html",
                           "--no-roofline-progress", str(CPU_TINY), "--replay", str(night),
                           f"--roofline-history={store}"], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


def _next_day(src: Path, dst: Path, *, keep_date: bool = True) -> Path:
    shutil.copytree(src, dst)
    for f in dst.glob("sweep_c*.json"):
        d = json.loads(f.read_text())
        d["output_throughput"] *= 0.5
        if keep_date:
            d["date"] = d["date"].replace("20261201", "20261202")
        else:
            del d["date"]
        f.write_text(json.dumps(d))
    return dst


def test_two_vllm_bench_nights_are_two_runs(tmp_path: Path) -> None:
    night1 = PEERS / "cpu-tiny-vllm-bench"
    night2 = _next_day(night1, tmp_path / "night2")
    store = tmp_path / "history"
    first = _replay(tmp_path, night1, store)
    second = _replay(tmp_path, night2, store)
    assert first.returncode == 0, first.stdout[-3000:]
    assert second.returncode == 0, second.stdout[-3000:]
    assert "not stored" not in second.stdout
    runs = sorted(open_store(str(store)).runs(), key=lambda r: r.started_at)
    # stored at the nights the files were saved (vllm bench serve's date), not at the replays' own time
    assert [r.started_at for r in runs] == ["2026-12-01T12:28:41Z", "2026-12-02T12:28:41Z"]
    # each run keeps the drift policy it was judged under (the trend page judges it alike: trial s24 M4)
    assert {(r.drift_threshold, r.drift_baseline) for r in runs} == {("10%", "previous")}
    assert "roofline drift: 2 compared" in second.stdout


def test_undated_peer_files_with_other_figures_are_other_measurements(tmp_path: Path) -> None:
    night1 = _next_day(PEERS / "cpu-tiny-vllm-bench", tmp_path / "a", keep_date=False)
    shutil.copytree(night1, tmp_path / "b")
    same = load_any(tmp_path / "b")
    assert "created_at" not in same
    assert measurement_id(load_any(night1)) == measurement_id(same)  # the same files: one measurement
    d = json.loads((tmp_path / "b" / "sweep_c1.json").read_text())
    d["output_throughput"] *= 0.9
    (tmp_path / "b" / "sweep_c1.json").write_text(json.dumps(d))
    assert measurement_id(load_any(night1)) != measurement_id(load_any(tmp_path / "b"))



def test_a_folder_sharing_a_nights_date_but_not_its_files_is_another_run(tmp_path: Path) -> None:
    """Trial s24c H1: a folder holding the first night's C=1 file beside re-measured C=2 and C=4 files is dated by
    its earliest file, the first night's time; the store took the time alone for the same measurement and said "not
    stored: ... already holds the measurement ..., every value of it", dropping the new values. The results files'
    ids decide now (the time alone only for a run stored before ids were kept)."""
    night1 = PEERS / "cpu-tiny-vllm-bench"
    mixed = tmp_path / "mixed"
    shutil.copytree(night1, mixed)
    for name, day in (("sweep_c2.json", "20261202"), ("sweep_c4.json", "20261203")):
        d = json.loads((mixed / name).read_text())
        d["date"], d["output_throughput"] = day + d["date"][8:], d["output_throughput"] * 1.05
        (mixed / name).write_text(json.dumps(d))
    store = tmp_path / "history"
    assert _replay(tmp_path, night1, store).returncode == 0
    second = _replay(tmp_path, mixed, store)
    assert second.returncode == 0, second.stdout[-3000:]
    assert "not stored" not in second.stdout and "roofline history: stored run" in second.stdout
    assert len(open_store(str(store)).runs()) == 2


def test_an_undated_folder_replayed_twice_is_stored_once_and_says_its_time_is_the_replays(tmp_path: Path) -> None:
    undated = _next_day(PEERS / "cpu-tiny-vllm-bench", tmp_path / "undated", keep_date=False)
    store = tmp_path / "history"
    assert _replay(tmp_path, undated, store).returncode == 0
    again = _replay(tmp_path, undated, store)
    assert again.returncode == 0, again.stdout[-3000:]
    line = next(ln for ln in again.stdout.splitlines() if ln.startswith("roofline history: not stored"))
    assert "this replay's time: its file states none" in line and "created_at" not in line
    assert len(open_store(str(store)).runs()) == 1
