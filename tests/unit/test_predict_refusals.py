"""``roofline predict`` and ``roofline init`` refuse what vLLM would refuse, say which vLLM the defaults come from,
and give every serving-model value a band or the reason it has none.

Every expected figure is worked out by hand below from datasheet and config numbers (the accounting of
``analytical.KVAccounting``: budget = ceil(total x gpu_memory_utilization); available = budget - weights per GPU -
activation - non-torch - CUDA graphs; blocks = available // bytes per block), as in tests/unit/test_cli_setups.py:

* H100 SXM 80GB: 81,559 MiB = 85,520,809,984 B = 79.65 GiB; at gpu_memory_utilization 0.92 the budget is
  ceil(85,520,809,984 x 0.92) = 78,679,145,186 B = 73.28 GiB.
* Llama-3.1-70B: 70,553,706,496 parameters, 141,107,412,992 B at bf16 = 131.42 GiB (141.11 GB): more than the
  budget, so one H100 cannot hold it.
  - TP 4 (tests/unit/test_cli_setups.py ``test_tp4_llama70b_on_h100``): 26,585 blocks per GPU, holding a request
    of max_model_len 131,072 (8,192 blocks) -> the smallest TP that starts.
  - TP 2: weights 70,553,706,496; activation 8,192 x 2 x (2 x 8,192 + 3 x 14,336) + 1,024 x 128,256 x 22 =
    973,078,528 + 2,889,351,168 = 3,862,429,696; non-torch 171,798,691 + 1,921,997,864 (TP on NVLink; no NVLS at
    2 ranks) = 2,093,796,555; CUDA graphs 536,870,912:
    available = 78,679,145,186 - 70,553,706,496 - 3,862,429,696 - 2,093,796,555 - 536,870,912 = 1,632,341,527;
    a block is 80 layers x 4 KV heads x 128 x 2 x 2 B x 16 = 2,621,440 B -> 622 blocks = 9,952 tokens: fewer
    than one request of 131,072 tokens, so TP 2 starts only with --max-model-len 9,952 or less.
* Llama-3.1-8B at gpu_memory_utilization 0.22: budget ceil(85,520,809,984 x 0.22); weights 16,060,522,496;
  reserves 3,728,211,968 (activation) + 171,798,691 (non-torch) + 536,870,912 (CUDA graphs) = 4,436,881,571.
* Qwen3-8B: max_position_embeddings 40,960 (its config.json), vLLM's default max_model_len.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from support.paths import PREDICTIONS

from pytest_roofline import cli
from pytest_roofline.cli.predict import NO_BAND_REASON
from pytest_roofline.model import bands

GIB = 2**30
H100_MEM = 81_559 * 2**20
LLAMA70_WEIGHTS = 2 * 70_553_706_496
LLAMA8_WEIGHTS = 2 * 8_030_261_248
LLAMA8_RESERVES = 3_728_211_968 + int(0.16 * GIB) + GIB // 2
BLOCK_LLAMA8 = 32 * 8 * 128 * 2 * 2 * 16
CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "corpus"

SEVENTY = ("--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--engine-version", "0.33.0")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(list(argv))
    assert exc.value.code == 2
    return capsys.readouterr().err


def _weights_over_budget_words() -> list[str]:
    budget = math.ceil(H100_MEM * 0.92)
    return [f"its weights per GPU, {LLAMA70_WEIGHTS / GIB:.2f} GiB ({LLAMA70_WEIGHTS / 1e9:.2f} GB)",
            f"memory budget of {budget / GIB:.2f} GiB per GPU", f"0.92 × {H100_MEM / GIB:.2f} GiB",
            "--tp 4: 26,585 KV blocks per GPU", "quantized checkpoint", "a GPU with more memory"]


# ------------------------------------------------------------------------------------------------------------
# 1. a setup vLLM cannot start: exit status 2, one line with the figures and the fixes
# ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra", [(), ("--json",), ("--simulate", "--concurrency", "1")])
def test_predict_refuses_weights_over_the_memory_budget(capsys, extra):
    rc, out, err = run(capsys, "predict", *SEVENTY, *extra)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "llama-3.1-70b does not fit on one h100-sxm" in err
    for words in _weights_over_budget_words() + ["--tp 2 with --max-model-len 9,952 or less"]:
        assert words in err, (words, err)
    assert "num_gpu_blocks = 0" not in err  # the simulator's own message no longer stands in for the reason


def test_init_refuses_the_same_setup_and_writes_nothing(capsys, tmp_path):
    f = tmp_path / "x.yaml"
    rc, out, err = run(capsys, "init", "--gpu", "h100", "--model", "llama-3.1-70b", "-o", str(f))
    assert rc == 2 and not f.exists() and out == ""
    for words in [w for w in _weights_over_budget_words() if "26,585" not in w]:
        assert words in err, (words, err)
    # init writes max_model_len itself where the model's default does not fit, so TP 2 is a setup init accepts:
    # its pool holds 9,952 tokens (predict's warning below) = 622 blocks of 16, more than one 1,024 + 1,024
    # request; init then writes max_model_len 9,216 (s14 sweep: the refusal named TP 4, which init did not need)
    assert f"--tp 2: {9_952 // 16:,} KV blocks per GPU" in err and "--max-model-len" not in err
    assert "no file written" in err
    g = tmp_path / "tp2.yaml"
    assert run(capsys, "init", "--gpu", "h100", "--model", "llama-3.1-70b", "--tp", "2", "-o", str(g))[0] == 0
    assert "max_model_len: 9216" in g.read_text()


def test_init_names_pipeline_stages_without_a_flag_it_lacks(capsys):
    # DeepSeek-V3's 626.92 GiB of weights are 78.4 GiB a GPU at TP 8, over an L4's 20.69 GiB budget: only
    # pipeline stages fit it. predict has --pp; init writes no pipeline stages, so it names the field instead
    rc, _, err = run(capsys, "init", "--gpu", "l4", "--model", "deepseek-v3")
    assert rc == 2 and "--tp 8 is not enough here" in err
    assert "--pp N)" not in err and "engine.args.pipeline_parallel_size" in err
    rc, _, err = run(capsys, "predict", "--hardware", "l4", "--model", "deepseek-v3")
    assert rc == 2 and "add pipeline stages, --pp N" in err


def test_the_other_reserves_leaving_no_pool_are_refused_with_the_share_that_would_fit(capsys):
    budget = math.ceil(H100_MEM * 0.22)
    left = budget - LLAMA8_WEIGHTS - LLAMA8_RESERVES  # < 0: the weights fit, the reserves do not
    need = (LLAMA8_WEIGHTS + LLAMA8_RESERVES + 2 * BLOCK_LLAMA8) / H100_MEM  # 0.2397: two blocks' room
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine-version",
                       "0.33.0", "--gpu-memory-utilization", "0.22")
    assert rc == 2 and out == ""
    assert left < 0 and f"leaving {left / GIB:.2f} GiB: 0 KV blocks" in err
    assert f"weights per GPU take {LLAMA8_WEIGHTS / GIB:.2f} GiB" in err
    assert f"--gpu-memory-utilization {math.ceil(need * 100) / 100:g} or more" in err


def test_a_pool_short_of_one_max_model_len_request_is_a_warning(capsys):
    rc, out, err = run(capsys, "predict", *SEVENTY, "--tp", "2", "--batch", "1")
    assert rc == 0 and out
    assert "warning: the KV pool holds 9,952 tokens, less than one request of max_model_len 131,072" in err
    rc, out, err = run(capsys, "predict", *SEVENTY, "--tp", "2", "--batch", "1", "--max-model-len", "9952")
    assert rc == 0 and "warning" not in err


def test_an_already_quantized_setup_is_not_told_to_quantize(capsys):
    # fp8 weights: about 70.55 GB plus the bf16 embeddings and lm_head, more than the budget at
    # gpu_memory_utilization 0.5 (ceil(85,520,809,984 x 0.5) B = 39.82 GiB)
    rc, _, err = run(capsys, "predict", *SEVENTY, "--quantization", "fp8", "--gpu-memory-utilization", "0.5")
    assert rc == 2 and "does not fit" in err and "quantized checkpoint" not in err


# ------------------------------------------------------------------------------------------------------------
# 2. a request longer than max_model_len
# ------------------------------------------------------------------------------------------------------------
def test_simulate_refuses_a_request_longer_than_max_model_len(capsys):
    rc, out, err = run(capsys, "predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b",
                       "--input-len", "100000", "--max-model-len", "40960", "--concurrency", "1")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "100,000 prompt + 1,024 output tokens = 101,024 tokens" in err and "max_model_len 40,960" in err
    # without --max-model-len vLLM takes the model's max_position_embeddings, 40,960
    rc, out, err = run(capsys, "predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b",
                       "--input-len", "40957", "--output-len", "4", "--concurrency", "1")
    assert rc == 2 and "40,961 tokens" in err and "max_position_embeddings" in err


def test_init_refuses_a_workload_longer_than_max_model_len(capsys, tmp_path):
    rc, _, err = run(capsys, "init", "--gpu", "h100", "--model", "qwen3-8b", "--workload", "40000/1000")
    assert rc == 2 and "41,000 tokens" in err and "max_model_len 40,960" in err and "--workload" in err


# ------------------------------------------------------------------------------------------------------------
# 3. --rate and --concurrency
# ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flag, value", [("--rate", "abc"), ("--rate", "0"), ("--rate", "1,-2"),
                                         ("--concurrency", "four"), ("--concurrency", "0")])
def test_bad_rates_and_concurrencies_are_argparse_errors_naming_the_flag(capsys, flag, value):
    err = usage_error(capsys, "predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b", flag, value)
    assert f"argument {flag}" in err and "could not convert" not in err


def _json_rows(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_rate_with_concurrency_caps_the_requests_in_flight(capsys):
    base = ("predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b", "--output-len", "128",
            "--rate", "10", "--json")
    rc, out, err = run(capsys, *base)
    assert rc == 0, err
    [free] = _json_rows(out)
    # Little's law: 10 req/s x ~1 s a request (128 tokens x ~8 ms) keeps ~10 in flight, more than 4
    assert free["max_running_batch"] > 4
    rc, out, err = run(capsys, *base, "--concurrency", "4")
    assert rc == 0, err
    [capped] = _json_rows(out)
    assert capped["rate_req_per_s"] == 10 and capped["concurrency"] == 4 and capped["max_running_batch"] <= 4
    rc, out, err = run(capsys, *base, "--concurrency", "4,8")
    assert rc == 2 and "give one number" in err


def test_a_prediction_file_takes_rate_points_and_refuses_both(capsys):
    day3 = str(PREDICTIONS / "day3.yaml")
    rc, out, err = run(capsys, "predict", "--simulate", day3, "--rate", "2", "--output-len", "4", "--json")
    assert rc == 0, err
    # one point a setup: the file's, and its predictions' own (an A100 PCIe)
    assert [(r["rate_req_per_s"], r["hardware"]) for r in _json_rows(out)] == [(2, "a100-sxm4-80gb"),
                                                                               (2, "a100-pcie-80gb")]
    rc, out, err = run(capsys, "predict", "--simulate", day3, "--rate", "2", "--concurrency", "1")
    assert rc == 2 and out == "" and "not both" in err


# ------------------------------------------------------------------------------------------------------------
# 4. the header's version, the columns' units, one unit for the weights
# ------------------------------------------------------------------------------------------------------------
def test_simulate_header_names_the_version_and_the_columns_their_units(capsys):
    argv = ("predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b", "--output-len", "4",
            "--concurrency", "1")
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    head, cols = out.splitlines()[:2]
    # the newest release the project knows the defaults of (model/vllm_defaults.py: 0.33.0, read from PyPI)
    assert "· vllm 0.33.0 (newest known release" in head and "vllm  ·" not in head
    for label in ("TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "ITL p99 ms"):
        assert label in cols
    rc, out, _ = run(capsys, *argv, "--engine-version", "0.26.0")
    assert "· vllm 0.26.0 ·" in out.splitlines()[0]


def test_the_weights_are_one_unit_in_the_header_and_the_kv_pool_line(capsys):
    # TP 4: 141,107,412,992 B in all = 131.42 GiB; 35,276,853,248 B per GPU = 32.85 GiB (35.28 GB)
    rc, out, err = run(capsys, "predict", *SEVENTY, "--tp", "4", "--batch", "1")
    assert rc == 0, err
    assert f"weights {LLAMA70_WEIGHTS / GIB:.2f} GiB ({LLAMA70_WEIGHTS / 1e9:.2f} GB)" in out.splitlines()[0]
    per_gpu = f"{LLAMA70_WEIGHTS / 4 / GIB:.2f} GiB ({LLAMA70_WEIGHTS / 4 / 1e9:.2f} GB)"
    assert f"per GPU: weights {per_gpu}" in out.splitlines()[0] and f"weights per GPU {per_gpu}" in out


# ------------------------------------------------------------------------------------------------------------
# 5. every value a band or a reason
# ------------------------------------------------------------------------------------------------------------
def _public_sources_reporting(metric: str) -> list[str]:
    """The accuracy corpus's public sources with a measured (or published) value of ``metric``."""
    out = []
    lam = json.loads((CORPUS / "lambda-vllm-0.5.4-llama3-8b.json").read_text())
    if any(metric in r for r in lam["runs"]):
        out.append(lam["source"])
    for src in json.loads((CORPUS / "v1-public-runs.json").read_text())["sources"]:
        if any(metric in {**r.get("measured", {}), **(r.get("published") or {})} for r in src["runs"]):
            out.append(src["source"])
    return out


def test_the_no_band_reasons_say_what_the_corpus_holds():
    assert set(NO_BAND_REASON).isdisjoint(bands.BAND_METRICS)
    assert sorted(CORPUS.glob("*.json")) == [CORPUS / "lambda-vllm-0.5.4-llama3-8b.json",
                                             CORPUS / "v1-public-runs.json"]
    for metric in ("per_request_output_tok_per_s", "tpot_p99_ms", "itl_p99_ms"):
        assert _public_sources_reporting(metric) == [] and "no public source" in NO_BAND_REASON[metric]
    assert _public_sources_reporting("ttft_p99_ms") == ["LambdaLabsML/vllm-benchmark"]
    assert "one public source" in NO_BAND_REASON["ttft_p99_ms"]
    assert "LambdaLabsML/vllm-benchmark" in NO_BAND_REASON["ttft_p99_ms"]


def test_every_simulated_value_has_a_band_or_a_reason(capsys):
    argv = ("predict", "--simulate", "--hardware", "h100-sxm", "--model", "qwen3-8b", "--output-len", "16",
            "--concurrency", "1,4")
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    printed = ["output_throughput_tok_per_s", "per_request_output_tok_per_s", "ttft_p50_ms", "ttft_p99_ms",
               "tpot_p50_ms", "tpot_p99_ms", "itl_p99_ms"]
    for row in _json_rows(out):
        for metric in printed:
            assert (metric in row["bands"]) != (metric in row["band_notes"]), (metric, row["bands"])
        for metric in NO_BAND_REASON:
            assert row["band_notes"][metric].startswith("no band: ")
    rc, out, _ = run(capsys, *argv)
    legend = [line for line in out.splitlines() if line.startswith("no band for tok/s/req")]
    assert len(legend) == 1  # once, not per row (the table's last columns have a legend line of their own)
    assert legend[0].startswith("no band for tok/s/req, TTFT p99 ms, TPOT p99 ms, ITL p99 ms: ")


def test_init_writes_a_max_model_len_the_pool_holds_for_a_setup_short_of_one_default_request(capsys, tmp_path):
    # init resolves the newest known vLLM (no engine.version in the file), which charges its 0.5 GiB CUDA-graph
    # reserve as --engine-version 0.33.0 does: the TP 2 figures above, 1,632,341,527 // 2,621,440 = 622 blocks =
    # 9,952 tokens, fewer than max_model_len 131,072. vLLM would not start so; init writes the largest multiple of
    # 1,024 the pool holds, 9,952 // 1,024 x 1,024 = 9,216, and the file passes roofline check's startup rule.
    f = tmp_path / "tp2.yaml"
    rc, _, err = run(capsys, "init", "--gpu", "h100", "--model", "llama-3.1-70b", "--tp", "2", "-o", str(f))
    assert rc == 0 and f.exists()
    text = f.read_text()
    assert "args: {tensor_parallel_size: 2, max_model_len: 9216}" in text
    assert "the KV pool holds 9,952 tokens, less than one request of the model's default 131,072" in text
    assert "# warning:" not in text and "warning" not in err


def test_a_mistyped_engine_arg_is_refused_at_its_line_by_check_and_predict(capsys, tmp_path):
    """`roofline check` said "ok" for `tensor_paralel_size: 2` and every figure was TP 1's; now the file's line and
    the nearest known name are given, and `predict --set` refuses an arg no model honours."""
    f = tmp_path / "typo.yaml"
    f.write_text("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  version: '0.11.0'\n"
                 "  args: {tensor_paralel_size: 2}\npredictions:\n  - id: b1\n    quantity: batch1_throughput\n"
                 "    predicted: 150 tok/s\n    tolerance: 50%\n")
    rc, out, err = run(capsys, "check", str(f))
    assert rc != 0
    assert "typo.yaml:5:" in out + err and "did you mean 'tensor_parallel_size'" in out + err
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b",
                       "--set", "engine.args.cpu_offload_gb=10")
    assert rc == 2 and "engine.args.cpu_offload_gb" in err and not out


def test_decode_rows_vllm_cannot_run_are_marked_with_the_reason(capsys):
    """vLLM 0.6.3 runs at most 256 sequences (its max_num_seqs default); 512 sequences of 1,024 tokens need
    512 x 64 = 32,768 blocks of 16 tokens. Those rows are the roofline's arithmetic only, and say so."""
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b",
                       "--batch", "1,256,512", "--engine-version", "0.6.3", "--context", "1024")
    assert rc == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line[:5].strip().isdigit()}
    assert not rows["1"].endswith("*") and not rows["256"].endswith("*") and rows["512"].endswith("memory *")
    assert "* vLLM cannot run B = 512 at 1,024 tokens of context: B > max_num_seqs 256; 32,768 KV blocks > " in out
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "phi-3-mini-4k", "--context", "32768",
                       "--max-model-len", "4096", "--batch", "1", "--json")
    assert rc == 0, err
    assert json.loads(out.splitlines()[0])["cannot_run"] == "context 32,768 > max_model_len 4,096"


def test_a_sub_16_bit_dtype_without_a_scheme_is_called_a_what_if(capsys):
    """--dtype int4 puts every weight (embeddings and lm_head too) at 4 bits with no scales: 8.03e9 params x 0.5 B
    = 4.02 GB, which no checkpoint vLLM loads has; the pool line says so. A scheme (--quantization) says its own."""
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--dtype", "int4",
                       "--batch", "1")
    assert rc == 0, err
    assert "weights int4 (every weight, embeddings and lm_head too, with no scales: a what-if" in out
    assert "weights 3.74 GiB (4.02 GB)" in out
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "1")
    assert rc == 0 and "what-if" not in out
