"""Where the repository's files are, for every test: one home instead of ``Path(__file__).parents[...]``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
#: the captures and samples the tests read (tests/data/README.md says where each came from)
DATA = TESTS / "data"
#: results files written by other benchmark tools (vllm bench serve, GuideLLM, AIPerf)
PEERS = DATA / "peers"
PREDICTIONS = REPO / "predictions"
RECORDED = PREDICTIONS / "recorded"
#: the Day-3 notebook's prediction file (A100-SXM4-80GB, Qwen3-8B) and its recorded run
DAY3 = PREDICTIONS / "day3.yaml"
DAY3_RESULTS = RECORDED / "day3-2026-07-31.results.json"
#: the CPU engine's tiny-model prediction file (its recording: ``support.recordings.recording_path("cpu-tiny")``)
CPU_TINY = PREDICTIONS / "cpu-tiny.yaml"
