"""Every committed results file, recording and fixture works on any machine: none names a place on the machine
that made it (an absolute path under /tmp, /home, /root, /work, ...), and results files store their paths relative
to themselves (or ``~/``) and read them back absolute."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from support.paths import RECORDED, REPO

from pytest_roofline.measure.results import ResultsWriter, load_results, portable_setup, resolved_setup

# Roots of machine-local places. URL paths ("/v1/models", "/metrics", "/version") and system paths that are the
# same on every machine ("/usr/bin/python3", "/opt/vllm-venv/bin/python" as an example, "/dev/shm") are not among them.
LOCAL_ROOTS = ("tmp", "home", "root", "work", "var", "mnt", "srv", "Users", "private", "run", "scratch")
ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:" + "|".join(LOCAL_ROOTS) + r")/[^\s\"'`,)}\]]*")
# Folders that hold committed data: results files, recordings, engine logs, /metrics captures, peers' files.
DATA_FOLDERS = ("predictions", "tests/data", "benchmarks/data", "docs")
DATA_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml", ".log", ".txt", ".calibration", ".csv", ".prom"}


@pytest.fixture(scope="module")
def data_files() -> list[Path]:
    return sorted(p for d in DATA_FOLDERS for p in (REPO / d).rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES)


def test_no_committed_data_file_names_a_place_on_the_machine_that_made_it(data_files: list[Path]) -> None:
    assert len(data_files) > 40  # the recordings, the peers' files, the engine logs and captures are all here
    found = []
    for path in data_files:
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in ABSOLUTE.finditer(line):
                found.append(f"{path.relative_to(REPO)}:{lineno}: {m.group(0)}")
    assert not found, ("committed files hold absolute paths of the machine that made them; write them relative "
                       "to the file (results files do it themselves) or as ~/...:\n" + "\n".join(found[:20]))


def test_the_guard_sees_what_it_guards() -> None:
    hits = [m.group(0) for m in ABSOLUTE.finditer(
        '"log_file": "/tmp/rec-open/engine.log", "model": "/root/.cache/x", "py": "/work/main/.venv/bin/python", '
        '"version_source": "/version", "url": "http://127.0.0.1:8000/v1/models", "exe": "/usr/bin/python3", '
        '"rel": "./engine.log", "home": "~/.cache/x"')]
    assert hits == ["/tmp/rec-open/engine.log", "/root/.cache/x", "/work/main/.venv/bin/python"]


def test_every_recording_names_files_that_exist_beside_it() -> None:
    recordings = sorted(RECORDED.glob("*.results.json"))
    assert len(recordings) >= 5
    for path in recordings:
        raw = json.loads(path.read_text())["setup"]
        loaded = load_results(path)["setup"]
        if raw.get("engine", {}).get("log_file"):
            assert raw["engine"]["log_file"].startswith("./"), path.name
            assert Path(loaded["engine"]["log_file"]).is_file(), path.name
        if raw["predictions_file"].startswith("../"):
            assert Path(loaded["predictions_file"]) == (REPO / "predictions" / Path(raw["predictions_file"]).name)
            assert Path(loaded["predictions_file"]).is_file()


SETUP = {
    "predictions_file": "{repo}/predictions/cpu-tiny.yaml",
    "model": {"name": "roofline-tiny", "path": "{home}/.cache/pytest-roofline/tiny-llama-f01d21bfdcb6"},
    "engine": {"name": "vllm", "version_source": "/version",
               "argv": ["{repo}/.venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model",
                        "{home}/.cache/pytest-roofline/tiny-llama-f01d21bfdcb6", "--host", "127.0.0.1",
                        "--dtype", "bfloat16"],
               "log_file": "{repo}/runs/cpu-tiny/engine-1.log"},
    "workload": {"input_len": 128, "dataset": {"path": "{repo}/data/prompts.jsonl"}},
}


def _setup(repo: Path, home: Path) -> dict:
    return json.loads(json.dumps(SETUP).replace("{repo}", str(repo)).replace("{home}", str(home)))


def test_a_results_file_stores_paths_relative_to_itself_and_reads_them_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, repo = tmp_path / "home", tmp_path / "work" / "proj"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    setup = _setup(repo, home)
    out = repo / "runs" / "cpu-tiny"
    stored = portable_setup(setup, out)
    assert stored["predictions_file"] == "../../predictions/cpu-tiny.yaml"
    assert stored["model"]["path"] == "~/.cache/pytest-roofline/tiny-llama-f01d21bfdcb6"
    assert stored["engine"]["argv"][0] == "../../.venv/bin/python"
    assert stored["engine"]["argv"][4] == "~/.cache/pytest-roofline/tiny-llama-f01d21bfdcb6"
    assert stored["engine"]["argv"][6:] == ["127.0.0.1", "--dtype", "bfloat16"]  # option values are not paths
    assert stored["engine"]["log_file"] == "./engine-1.log"
    assert stored["engine"]["version_source"] == "/version"  # an HTTP path, not a file
    assert stored["workload"]["dataset"]["path"] == "../../data/prompts.jsonl"
    assert resolved_setup(stored, out) == setup

    # the writer stores the portable form; load_results gives the absolute one back, wherever the folder moves
    data = {"schema": "pytest-roofline/results", "schema_version": 1, "source": "measured", "status": "complete",
            "setup": setup, "engine_report": None, "points": [], "errors": []}
    ResultsWriter(out / "results.json", data)  # type: ignore[arg-type]
    text = (out / "results.json").read_text()
    assert str(tmp_path) not in text
    moved = tmp_path / "elsewhere" / "proj"
    moved.parent.mkdir()
    os.rename(repo, moved)
    back = load_results(moved / "runs" / "cpu-tiny" / "results.json")["setup"]
    assert back["predictions_file"] == str(moved / "predictions" / "cpu-tiny.yaml")
    assert back["engine"]["log_file"] == str(moved / "runs" / "cpu-tiny" / "engine-1.log")
    assert back["model"]["path"] == str(home / ".cache" / "pytest-roofline" / "tiny-llama-f01d21bfdcb6")


def test_paths_outside_the_repository_and_home_stay_as_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    out = tmp_path / "runs"  # no repository: the results folder itself is the tree
    setup = {"predictions_file": "predictions/day3.yaml",  # an older file's cwd-relative path: left as written
             "engine": {"argv": ["/usr/bin/python3", "-m", "vllm"], "log_file": str(out / "e.log")}}
    stored = portable_setup(setup, out)
    assert stored == {"predictions_file": "predictions/day3.yaml",
                      "engine": {"argv": ["/usr/bin/python3", "-m", "vllm"], "log_file": "./e.log"}}
    assert resolved_setup(stored, out) == setup
