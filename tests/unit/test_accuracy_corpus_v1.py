"""The public V1-era runs of the accuracy corpus (benchmarks/data/corpus/v1-public-runs.json): the transcribed
figures checked against each other and against the sources' own arithmetic, every run expressible by the model, and
the prefix-cache hit rate the benchmark gives a repetition that re-sends a cached prompt. The model's errors on them
are printed by ``benchmarks/model_accuracy.py --corpus`` (never a test: they are measured figures)."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from support.paths import REPO

from pytest_roofline.model import serving
from pytest_roofline.model.bands import BAND_METRICS

_spec = importlib.util.spec_from_file_location("model_accuracy_bench", REPO / "benchmarks" / "model_accuracy.py")
assert _spec is not None and _spec.loader is not None
mab = importlib.util.module_from_spec(_spec)
sys.modules["model_accuracy_bench"] = mab
_spec.loader.exec_module(mab)

DOC = json.loads((REPO / "benchmarks" / "data" / "corpus" / "v1-public-runs.json").read_text(encoding="utf-8"))
SOURCES = {s["source"]: s for s in DOC["sources"]}
RUNS = [(s["source"], i, r) for s in DOC["sources"] for i, r in enumerate(s["runs"])]


@pytest.mark.parametrize(("source", "i", "run"), RUNS, ids=[f"{s}-{i}" for s, i, _ in RUNS])
def test_every_run_is_expressible_and_names_its_workload_and_repetitions(source, i, run):
    src = SOURCES[source]
    setup = mab._v1_setup(src, run)
    assert serving.EngineConfig.from_setup(setup).tensor_parallel_size == run["tp"]
    assert src["url"].startswith("https://")
    assert run["input_len"] >= 1 and run["output_len"] >= 1 and run["concurrency"] >= 1
    assert run["num_prompts"] >= run["concurrency"]
    assert set(run.get("repetitions", ["cold"])) <= {"cold", "cached"}
    assert run["measured"] and set(run["measured"]) <= set(BAND_METRICS)
    assert all(v > 0 for v in run["measured"].values())


def test_the_a100_pcie_figures_are_the_reports_request_rates_times_the_output_length():
    # the report's request rates (req/s) x output tokens: 7.08 x 128 = 906.2, 9.45 x 128 = 1,209.6,
    # 3.43 x 512 = 1,756.2, 4.97 x 512 = 2,544.6 (section 8, rounded to 0.01 req/s); repetitions 2-3 of 512/256
    # (per-run table): (2.63 + 2.63) / 2 x 256 = 673.3 and (3.65 + 3.66) / 2 x 256 = 935.7
    req_s = {(1, 2048, 128): 7.08, (2, 2048, 128): 9.45, (1, 2048, 512): 3.43, (2, 2048, 512): 4.97,
             (1, 512, 256): 2.63, (2, 512, 256): 3.655}
    checked = 0
    for run in SOURCES["a100pcie-tp"]["runs"]:
        thr = run["measured"].get("output_throughput_tok_per_s")
        if thr is None:  # repetition 1 of 512/256: TTFT only
            continue
        assert thr / run["output_len"] == pytest.approx(req_s[(run["tp"], run["input_len"], run["output_len"])],
                                                        abs=0.006)
        checked += 1
    assert checked == 6


def test_the_rtx4090_outputs_average_about_100_tokens_a_request_as_the_corpus_simulates():
    # the blog's req/s column: 2.09, 3.78, 6.44, 9.73, 11.87 -> tok/s / req/s = 100.5, 99.7, 100.0, 100.2, 100.3
    req_s = {4: 2.09, 8: 3.78, 16: 6.44, 32: 9.73, 48: 11.87}
    for run in SOURCES["rtx4090-mistral"]["runs"]:
        per_request = run["measured"]["output_throughput_tok_per_s"] / req_s[run["concurrency"]]
        assert per_request == pytest.approx(run["output_len"], rel=0.01)


def test_a_cached_prompt_hits_every_full_block_but_the_one_holding_its_last_token():
    assert mab.cached_hit_rate(512, 16) == pytest.approx(496 / 512)
    assert mab.cached_hit_rate(2048, 16) == pytest.approx(2032 / 2048)
    assert mab.cached_hit_rate(17, 16) == pytest.approx(16 / 17)
    assert mab.cached_hit_rate(15, 16) == 0.0
