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
    assert run["input_len"] >= 1 and run["output_len"] >= 1
    rate = run.get("request_rate", "inf")
    # a closed loop names its concurrency; an open loop its finite rate (Poisson arrivals)
    if rate == "inf":
        assert 1 <= run["concurrency"] <= run["num_prompts"]
    else:
        assert rate > 0 and "concurrency" not in run
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


def test_the_azure_tp8_figures_are_the_result_files_own_totals_over_their_durations():
    # benchmark_serving.py's summary: output tok/s = total_output_tokens / duration and req/s = completed / duration
    # (qps 1: 42,722 / 205.219 s = 208.18 tok/s, 200 / 205.219 = 0.9746 req/s); the per-request lists the benchmark
    # simulates add up to the files' totals (42,659 prompt tokens in every run; 42,722 / 42,449 / 42,770 / 42,398
    # generated); the means in input_len/output_len are those totals / 200
    src = SOURCES["azure-a100-tp8"]
    assert len(src["input_lens"]) == 200 and sum(src["input_lens"]) == 42659
    totals = {1.0: 42722, 4.0: 42449, 16.0: 42770, "inf": 42398}
    for run in src["runs"]:
        pub = run["published"]
        assert len(run["output_lens"]) == pub["completed"] == run["num_prompts"] == 200
        assert sum(run["output_lens"]) == pub["total_output_tokens"] == totals[run["request_rate"]]
        assert pub["total_input_tokens"] == sum(src["input_lens"])
        assert run["measured"]["output_throughput_tok_per_s"] == pytest.approx(
            pub["total_output_tokens"] / pub["duration_s"], rel=1e-4)
        assert pub["request_throughput_req_per_s"] == pytest.approx(200 / pub["duration_s"], rel=1e-4)
        assert run["input_len"] == round(42659 / 200) == 213
        assert run["output_len"] == round(pub["total_output_tokens"] / 200)
        # a request's TPOT is (E2E - TTFT) / (output - 1): finite medians need most requests above one token
        assert sum(o > 1 for o in run["output_lens"]) > 100
    # the order the runs were made in (the files' timestamps): only the first one meets an empty prefix cache
    runs = sorted(src["runs"], key=lambda r: r["published"]["date"])
    assert [r["request_rate"] for r in runs] == [1.0, 4.0, 16.0, "inf"]
    assert [r["repetitions"] for r in runs] == [["cold"], ["cached"], ["cached"], ["cached"]]


def test_the_azure_tp8_cached_prompts_hit_every_full_block_but_the_last_tokens_in_the_model():
    # every prompt seen before hits floor((L - 1) / 16) whole blocks: 40,976 of the 42,659 prompt tokens (96.05%)
    src = SOURCES["azure-a100-tp8"]
    assert sum((n - 1) // 16 * 16 for n in src["input_lens"]) == 40976
    # the per-request rate the benchmark passes, 1 - 1e-6, gives the scheduler's floor(h x L / 16) that count
    h = 1.0 - 1e-6
    assert all(int(h * n / 16) == (n - 1) // 16 for n in range(1, 20001))


def test_the_gpustack_h100_figures_are_the_pages_totals_over_its_durations():
    # every run: 100 requests, 23,260 input and 22,061 output tokens; output tok/s = 22,061 / duration
    # (C=1: 22,061 / 166.04 s = 132.87 vs 132.86 published; C=8: 22,061 / 24.05 = 917.30 vs 917.28: the durations
    # are rounded to 0.01 s), req/s = 100 / duration (0.602 -> 0.60), total tok/s = 45,321 / duration
    for run in SOURCES["gpustack-h100-qwen3"]["runs"]:
        pub = run["published"]
        dur = pub["duration_s"]
        assert run["measured"]["output_throughput_tok_per_s"] == pytest.approx(22061 / dur, rel=5e-4)
        assert pub["total_token_throughput_tok_per_s"] == pytest.approx((23260 + 22061) / dur, rel=5e-4)
        assert pub["request_throughput_req_per_s"] == pytest.approx(100 / dur, abs=0.006)
        assert (run["input_len"], run["output_len"]) == (round(23260 / 100), round(22061 / 100)) == (233, 221)
    # a closed loop of C clients: doubling C roughly halves the run (166.04, 85.78, 44.40, 24.05 s)
    durs = [r["published"]["duration_s"] for r in sorted(SOURCES["gpustack-h100-qwen3"]["runs"],
                                                         key=lambda r: r["concurrency"])]
    assert all(1.7 < a / b < 2.0 for a, b in zip(durs, durs[1:]))


def test_the_gpustack_bursts_are_the_pages_totals_over_their_durations():
    # vllm bench serve prints output tok/s = generated tokens / duration and total tok/s = (input + generated) /
    # duration; the corpus's lengths are the totals over N (input rounded; an output short of the requested length
    # is an EOS-hazard of that mean)
    for run in SOURCES["gpustack-qwen3-bursts"]["runs"]:
        pub, n = run["published"], run["num_prompts"]
        dur = pub["duration_s"]
        assert run["measured"]["output_throughput_tok_per_s"] == pytest.approx(pub["total_output_tokens"] / dur,
                                                                              rel=2e-3)
        assert pub["total_token_throughput_tok_per_s"] == pytest.approx(
            (pub["total_input_tokens"] + pub["total_output_tokens"]) / dur, rel=2e-3)
        assert run["input_len"] == round(pub["total_input_tokens"] / n) and run["concurrency"] == n
        mean_out = pub["total_output_tokens"] / n
        if "output_stop" in run:
            assert run["output_stop"]["mean"] == round(mean_out, 2) < run["output_len"]
        else:
            assert mean_out == pytest.approx(run["output_len"], rel=3e-3)  # 199.57 of 200 at most


def test_the_h100_and_a100_prefill_rates_models_md_works_out_from_the_32k_bursts():
    # docs/explanation/models.md: Qwen3-14B prefilled 3,200,000 tokens in 386.8 s (H100) and 724.6 s (A100); at
    # 2 x 13.21 B weights + 4 x 40 layers x 5,120 x 16,000 (attention over half of 32K on average) = 3.95e10 FLOP a
    # token that is 33% of the H100's 989 TF and 56% of the A100's 312 TF
    from pytest_roofline.model.architecture import get_model
    from pytest_roofline.model.hardware import get_hardware
    m = get_model("qwen3-14b")
    flop_per_token = 2 * m.non_embedding_param_count() + 4 * 40 * 5120 * 16000
    assert flop_per_token == pytest.approx(3.95e10, rel=5e-3)
    runs = {r["gpu"]: r for r in SOURCES["gpustack-qwen3-bursts"]["runs"]
            if r["model"] == "qwen3-14b" and r["input_len"] == 32000}
    share = {gpu: r["published"]["total_input_tokens"] / r["published"]["duration_s"] * flop_per_token
             / get_hardware(gpu).peak_for("bf16") for gpu, r in runs.items()}
    assert round(100 * share["h100-sxm"]) == 33 and round(100 * share["a100-sxm4-80gb"]) == 56


def test_the_model_cannot_hold_one_32k_prompt_of_qwen3_32b_on_an_h100_that_served_a_hundred():
    # the README's and models.md's claim: the model's pool at vLLM 0.11's H100 defaults is 1,530 usable blocks of
    # 16 tokens; a 32,000-token prompt and its first output token need ceil(32,001 / 16) = 2,001 blocks
    src = SOURCES["gpustack-qwen3-bursts"]
    run = next(r for r in src["runs"] if r["model"] == "qwen3-32b" and r["gpu"] == "h100-sxm"
               and r["input_len"] == 32000)
    eng = serving.EngineConfig.from_setup(mab._v1_setup(src, run))
    assert (eng.block_size, eng.usable_blocks) == (16, 1530)
    assert eng.requests_held(32001) == 0 and -(-32001 // 16) == 2001
    assert run["published"]["total_input_tokens"] == 100 * 32000  # the run served all hundred
    refused: list[tuple[str, str]] = []
    rows = mab.corpus_v1(refused=refused, sources={"gpustack-qwen3-bursts"})
    assert [label for label, _ in refused] == ["gpustack-qwen3-bursts qwen3-32b on h100-sxm TP1 32000/100 x 100"]
    assert "1530 usable blocks" in refused[0][1]
    assert not any(r["label"].startswith("gpustack-qwen3-bursts") and "32000/100" in r["label"]
                   and r["gpu"] == "h100-sxm" and r["model"] == "qwen3-32b" for r in rows)


def test_open_loop_and_per_request_runs_reach_the_model_with_their_rate_and_lengths():
    rows = mab.corpus_v1(sources={"azure-a100-tp8"})
    assert len(rows) == 4
    # open loop: no roofline (it has no arrival rate); the closed burst of 200 gets one
    assert [r["a"] is None for r in rows] == [True, True, True, False]
    assert all(r["tp"] == 8 and r["engine"] == "v1" for r in rows)
    # at 1 req/s the running batch stays small (~ rate x E2E ~ 5); the burst of 200 runs far fuller
    assert rows[0]["mrb"] < 10 < rows[3]["mrb"]



@pytest.mark.parametrize("max_tokens, mean, n, want_p, want", [
    # cap 2: E = (1 - (1 - p)^2) / p = 2 - p = 1.5 -> p = 1/2; quantiles 1/8, 3/8 stop at once, 5/8, 7/8 reach the
    # cap (P(no stop in the first token) = 1/2)
    (2, 1.5, 4, 0.5, [1, 1, 2, 2]),
    # cap 3, p = 1/2: E = (1 - 1/8) / (1/2) = 1.75; P(at the cap) = 1/4; u = 9/16, 11/16 -> ceil(log2(1/(1-u))) = 2
    (3, 1.75, 8, 0.5, [1, 1, 1, 1, 2, 2, 3, 3]),
])
def test_eos_hazard_lengths_are_the_capped_geometric_quantiles(max_tokens, mean, n, want_p, want):
    p, lens = mab.eos_hazard_lengths(mean, max_tokens, n)
    assert p == pytest.approx(want_p, rel=1e-9)
    assert sorted(lens) == want


def test_the_rtx4090_outputs_are_simulated_as_an_eos_hazard_of_the_published_mean_and_cap():
    src = SOURCES["rtx4090-mistral"]
    assert src["output_stop"] == {"model": "eos-hazard", "max_tokens": 128}  # the page requests 128 tokens
    p, lens = mab.eos_hazard_lengths(100, 128, 300)
    assert (1 - (1 - p) ** 128) / p == pytest.approx(100, rel=1e-9)
    assert sum(lens) / 300 == pytest.approx(100, abs=0.5) and max(lens) == 128 and min(lens) >= 1
    assert lens.count(128) / 300 == pytest.approx((1 - p) ** 127, abs=1 / 300)  # ~60% run to the cap
    assert lens[:8] != tuple(sorted(lens[:8]))  # shuffled: the first clients are not all the short ones


_tspec = importlib.util.spec_from_file_location("corpus_blis_training", REPO / "benchmarks" / "corpus_blis_training.py")
assert _tspec is not None and _tspec.loader is not None
cbt = importlib.util.module_from_spec(_tspec)
_tspec.loader.exec_module(cbt)


def test_the_prompt_cycle_is_the_smallest_lag_at_which_nine_in_ten_lengths_repeat():
    # 100 fixed prompts sent in turn: lengths repeat at lag 100 (and 200, ...), not at any smaller lag
    lens = [500 + (i * 37) % 101 for i in range(100)]  # 100 distinct lengths (37 is coprime to 101)
    assert len(set(lens)) == 100
    reqs = [{"input_tokens": lens[i % 100]} for i in range(1_000)]
    assert cbt.prompt_period(reqs) == 100
    # one request in twenty with another length still leaves 95% of the pairs equal at lag 100
    noisy = [{"input_tokens": r["input_tokens"] + (1 if i % 20 == 7 else 0)} for i, r in enumerate(reqs)]
    assert cbt.prompt_period(noisy) == 100


def test_blis_training_stages_are_transcribed_as_their_reports_say():
    src = SOURCES["blis-training-h100"]
    runs = src["runs"]
    assert len(runs) == 24 and {r["tp"] for r in runs} == {1, 2, 4}
    scored = [r for r in runs if not r.get("excluded")]
    excluded = [r for r in runs if r.get("excluded")]
    # the four reasoning experiments (one 4 req/s stage each) had failed requests: kept, not scored
    assert len(excluded) == 4 and all("reasoning" in r["experiment"] and r["published"]["failures"] > 0
                                      for r in excluded)
    for r in scored:
        assert r["published"]["failures"] == 0
        assert r["num_prompts"] == len(r["input_lens"]) == len(r["output_lens"])
        # the whole stage is simulated, but for the first stage's first cycle of 100 prompts (sent cold)
        first = r["benchmark"] == 0
        assert r["num_prompts"] == r["stage_requests"] - (r["prompts_repeat_every"] if first else 0)
        assert r["prompts_repeat_every"] == 100 and r["repetitions"] == ["cached"]
        # an open loop below saturation: the stage's output throughput is its rate x the mean output length, within
        # the send window's edges (inference-perf's achieved rate is the requested one to 0.1%)
        assert r["measured"]["output_throughput_tok_per_s"] == pytest.approx(
            r["request_rate"] * sum(r["output_lens"]) / len(r["output_lens"]), rel=0.03)


def test_the_kvcached_figures_are_the_three_seeds_means_and_their_totals_hold():
    """kvcached's plain-vLLM runs (benchmarks/corpus_kvcached.py): each run's measured figure is the mean of its three
    seeds' vllm bench serve figures; every seed sent 500 requests of exactly 512 in / 128 out (256,000 and 64,000
    tokens), so the corpus simulates fixed lengths; output throughput is those 64,000 tokens over each seed's
    duration; the burst is 500 requests at once (a closed loop of 500), the other 16 req/s."""
    src = next(s for s in DOC["sources"] if s["source"] == "kvcached-h100-qwen3-0.6b")
    assert (src["gpu"], src["vllm"], src["model_config"]) == ("h100-sxm", "0.19.0", "configs/qwen3-0.6b.json")
    loads = set()
    for run in src["runs"]:
        seeds = run["published"]["seeds"]
        assert sorted(s["seed"] for s in seeds) == [7, 42, 99]
        for s in seeds:
            assert (s["total_input_tokens"], s["total_output_tokens"], s["completed"]) == (256_000, 64_000, 500)
            assert s["output_throughput_tok_per_s"] == pytest.approx(64_000 / s["duration_s"], rel=1e-3)
        for metric, field in (("output_throughput_tok_per_s", "output_throughput_tok_per_s"),
                              ("tpot_p50_ms", "median_tpot_ms"), ("ttft_p50_ms", "median_ttft_ms")):
            assert run["measured"][metric] == pytest.approx(sum(s[field] for s in seeds) / 3, rel=1e-4)
        assert (run["input_len"], run["output_len"], run["num_prompts"]) == (512, 128, 500)
        loads.add(("C", run["concurrency"]) if "concurrency" in run else ("rate", run["request_rate"]))
    assert loads == {("C", 500), ("rate", 16.0)}
