"""Every value ``roofline predict --simulate`` prints has a band or the reason it has none (trial s14 #10), and
``--results`` marks the points prefix-cache hits flatter and leaves them out of the mean |error|."""

from __future__ import annotations

import json
from pathlib import Path

from support.paths import DAY3_RESULTS, PREDICTIONS

from pytest_roofline import cli
from pytest_roofline.cli.predict import NO_BAND_OTHER

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "corpus"
#: the --json fields the trial found without a band or a note (under their --json names: predict.JSON_NAMES)
LISTED = ("request_throughput_req_per_s", "ttft_mean_ms", "tpot_mean_ms", "itl_p50_ms", "e2e_mean_ms",
          "mean_running_batch", "max_kv_usage_fraction", "preemptions", "mean_queue_ms", "prefix_cache_hit_fraction")
#: what a row says about its point, not a predicted value
INPUTS = {"concurrency", "rate_req_per_s", "num_requests"}
#: the setup's description each row carries (trial 22 M4): the analytical table's setup fields, the lengths, the
#: scheduler and the constants the serving model ran with, not predicted values
SIMULATE_SETUP = {"input_len_tokens", "output_len_tokens", "open_loop_max_in_flight", "serving_engine",
                  "constants_source", "constants",
                  # what the bands are (trial s18 M1): their nominal coverage, not a predicted value
                  "band_level"}


def _rows(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr().out
    assert rc == 0
    return out


def test_every_json_value_has_a_band_or_a_note(capsys):
    out = _rows(capsys, "predict", "--simulate", "--gpu", "h100", "--model", "llama-3.1-70b", "--tp", "4",
                "--input-len", "1024", "--output-len", "256", "--concurrency", "1,128", "--json")
    table = json.loads(_rows(capsys, "predict", "--gpu", "h100", "--model", "llama-3.1-70b", "--tp", "4",
                             "--batch", "1", "--json").splitlines()[0])
    setup = {k for k in table if k not in ("batch", "context_tokens") and k in json.loads(out.splitlines()[0])}
    for row in map(json.loads, out.splitlines()):
        for field in LISTED:
            assert row["band_notes"][field].startswith("no band: "), field
        values = {k for k, v in row.items() if isinstance(v, (int, float, dict)) and not isinstance(v, bool)
                  and k not in INPUTS | SIMULATE_SETUP | setup and k not in ("bands", "band_notes", "observed_ranges")}
        assert values - set(row["bands"]) - set(row["band_notes"]) == set()


def _corpus_sources(key: str) -> set[str]:
    out = set()
    lam = json.loads((CORPUS / "lambda-vllm-0.5.4-llama3-8b.json").read_text())
    if any(key in r for r in lam["runs"]):
        out.add(lam["source"])
    for src in json.loads((CORPUS / "v1-public-runs.json").read_text())["sources"]:
        if any(key in {**r.get("measured", {}), **(r.get("published") or {})} for r in src["runs"]):
            out.add(src["source"])
    return out


def test_the_reasons_say_what_the_corpus_holds():
    # the corpus's own keys for each field
    assert _corpus_sources("mean_ttft_ms") == {"gpustack-qwen3-bursts"}
    assert "one public source" in NO_BAND_OTHER["ttft_mean_ms"] and "gpustack-qwen3-bursts" in NO_BAND_OTHER[
        "ttft_mean_ms"]
    assert _corpus_sources("mean_tpot_ms") == {"gpustack-qwen3-bursts"}
    assert "one public source" in NO_BAND_OTHER["tpot_mean_ms"]
    assert len(_corpus_sources("request_throughput_req_per_s")) == 2
    assert len(_corpus_sources("output_throughput_tok_per_s")) == 9
    assert "two report requests/s" in NO_BAND_OTHER["request_throughput_req_per_s"]
    for key, field in (("itl_p50_ms", "itl_p50_ms"), ("e2e_mean_ms", "e2e_mean_ms"), ("e2el_ms", "e2e_mean_ms"),
                       ("mean_running_batch", "mean_running_batch"), ("num_preemptions", "preemptions"),
                       ("preemptions", "preemptions"), ("kv_cache_usage", "max_kv_usage"),
                       ("prefix_cache_hit_rate", "prefix_cache_hit_rate"), ("queue_ms", "mean_queue_ms")):
        assert _corpus_sources(key) == set(), key
        assert "no public source" in NO_BAND_OTHER[field]


def test_the_tables_last_columns_have_their_reason_once(capsys):
    out = _rows(capsys, "predict", "--simulate", "--gpu", "h100", "--model", "qwen3-8b", "--output-len", "16",
                "--concurrency", "1,4")
    legend = [line for line in out.splitlines() if line.startswith("no band for run, KV %, preempt, queue ms: ")]
    assert len(legend) == 1 and "dominant term" in legend[0]
    # built from NO_BAND_OTHER's reasons (s14 review §3: it restated them): the four columns' figures and the
    # dominant term's, each as the --json band_notes give it
    assert legend[0] == ("no band for run, KV %, preempt, queue ms: no public source of the accuracy corpus reports "
                         "the running batch, KV-cache usage, preemptions or the time in the engine's queue (figures "
                         "of vLLM's /metrics); nor for the model's own split of its step time (the dominant term), "
                         "no measured figure")
    for field, what in (("mean_running_batch", "the running batch"), ("max_kv_usage", "KV-cache usage"),
                        ("preemptions", "preemptions"), ("mean_queue_ms", "the time in the engine's queue")):
        assert NO_BAND_OTHER[field] == (f"no band: no public source of the accuracy corpus reports {what} (an engine "
                                        "figure of vLLM's /metrics)")


def test_results_mark_flattered_points_and_leave_them_out_of_the_mean_error(capsys):
    argv = ("predict", "--simulate", str(PREDICTIONS / "day3.yaml"), "--results", str(DAY3_RESULTS))
    rows = [json.loads(line) for line in _rows(capsys, *argv, "--json").splitlines()]
    rows = [r for r in rows if r["setup_differs_from_file"] == {}]  # the file's setup, the one the run measured
    by_c = {r["concurrency"]: r for r in rows}
    doc = json.loads(DAY3_RESULTS.read_text())
    marked = {p["concurrency"] for p in doc["points"] if p.get("contaminated") and p["id"] != "batch1"}
    assert marked == {2, 4, 8, 16, 32, 64}  # the results file's own `contaminated: true`
    for c in marked:
        assert by_c[c]["contaminated"]
    assert by_c[128]["contaminated"] is None
    # C = 1: its recorded TTFT p50 (23 ms) beats the compute floor of a 1,024-token prefill on an A100
    # (2 x 8.19e9 x 1024 / 312e12 = 53.8 ms at full peak): only cached prompts do that, as calibrate screens it
    assert "below the 53.8 ms compute floor" in by_c[1]["contaminated"]
    clean = [r for r in rows if not r["contaminated"] and r["measured"]]
    assert [r["concurrency"] for r in clean] == [128]
    # the mean |error| over the clean points only, from the rows' own predicted and measured values
    want = sum(abs(r["measured"]["tpot_p50_ms"] - r["tpot_p50_ms"]) / r["tpot_p50_ms"] for r in clean) / len(clean)
    text = _rows(capsys, *argv)
    summary = [line for line in text.splitlines() if line.startswith("cells: ")][0]
    assert "without the contaminated point(s) 1, 2, 4, 8, 16, 32, 64" in summary
    assert f"tpot_p50_ms {want:.1%} (n=1)" in summary
    assert text.count("measured point contaminated (") == 7
