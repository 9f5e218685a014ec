"""``roofline predict --simulate``'s JSON says which setup each row belongs to, names its unitless fields for what
they are, and gives an observed range in numbers (trial 22 M4, L5); the flag path refuses a setup vLLM will not
start as the file path does (trial 22 M5).

The expected numbers are worked out here, not read back from the code under test: the KV pool of llama-3.1-8b on
one H100 SXM (trial 22's hand arithmetic: (0.92 × 79.65 GiB − 14.958 − 3.472 − 0.160 − 0.5 GiB) ÷ 2 MiB per block =
27,743 blocks), the llama-3.1-70b TP 2 pool (622 blocks × 16 tokens = 9,952 tokens < max_position_embeddings
131,072 = 2**17), and the prefill-bound observed range from the committed bands.json read as plain JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_roofline import cli
from pytest_roofline.model import serving as sv
from pytest_roofline.model import vllm_defaults
from pytest_roofline.model.setup import build_setup

REPO = Path(__file__).resolve().parents[2]
L8 = ("--hardware", "h100-sxm", "--model", "llama-3.1-8b")
SEVENTY_TP2 = ("--simulate", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "2", "--input-len", "2048",
               "--output-len", "256", "--concurrency", "1,16,128")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def rows(capsys, *argv: str) -> list[dict]:
    rc, out, err = run(capsys, *argv)
    assert rc == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()]


# -- M4: the setup on every row, the same fields as the analytical table's --json ---------------------------------
def test_each_simulate_row_names_its_setup_in_the_analytical_tables_fields(capsys):
    sim = rows(capsys, "predict", "--simulate", *L8, "--input-len", "512", "--output-len", "128",
               "--concurrency", "1,16", "--json")
    assert [r["concurrency"] for r in sim] == [1, 16]
    for r in sim:
        assert r["hardware"] == "h100-sxm" and r["model"] == "llama-3.1-8b"
        assert r["tensor_parallel_size"] == 1 and r["pipeline_parallel_size"] == 1 and r["num_gpus"] == 1
        assert r["input_len_tokens"] == 512 and r["output_len_tokens"] == 128
        assert r["engine"] == "vllm" and r["engine_version"] is None  # none given: the defaults' release says which
        assert r["engine_defaults_version"] == str(vllm_defaults.NEWEST_KNOWN_VERSION)
        assert r["weight_dtype"] == "bf16" and r["kv_cache_dtype"] == "bf16"
        assert r["num_gpu_blocks"] == 27_743 and r["kv_cache_tokens"] == 27_743 * 16
        assert r["engine_settings"]["max_num_seqs"]["value"] == 1024
        assert r["engine_settings"]["max_num_batched_tokens"]["value"] == 8192
        assert r["serving_engine"] == {"scheduler": "v1", "max_num_seqs": 1024, "max_num_batched_tokens": 8192,
                                       "block_size_tokens": 16, "num_gpu_blocks": 27_743,
                                       "enable_chunked_prefill": True, "enable_prefix_caching": True}
        assert r["constants_source"] == "default constants"
        setup = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                            workload={"input_len": 512, "output_len": 128})
        assert r["constants"] == pytest.approx(dict(sv.default_constants(setup).to_dict()))
    # the analytical table's --json: every setup field it carries, the simulate row carries with the same value
    table = rows(capsys, "predict", *L8, "--batch", "1", "--json")[0]
    per_table = {"batch", "context_tokens", "weight_bytes", "kv_bytes_per_token", "kv_bytes_per_token_per_gpu",
                 "ridge_flop_per_byte", "intensity_asymptote_flop_per_byte", "half_saturation_batch",
                 "throughput_asymptote_tok_per_s", "batch1_ceiling_tok_per_s", "knee_batch", "knee_reason",
                 "decode_error", "kv_pool_max_sequences", "half_saturation_note", "cannot_run"}
    shared = {k for k in table if k not in per_table and not k.startswith(("t_", "intensity", "weight_only",
                                                                             "throughput", "per_request", "kv_total",
                                                                             "bound"))}
    assert {"hardware", "model", "engine_version", "engine_defaults_version", "engine_settings", "num_gpu_blocks",
            "max_model_len_tokens"} <= shared
    for k in shared:
        assert sim[0][k] == table[k], k


def test_a_files_rows_name_its_calibration(capsys, tmp_path):
    calib = tmp_path / "c.yaml"
    spec = tmp_path / "p.yaml"
    src = REPO / "predictions" / "cpu-tiny.yaml"
    recorded = REPO / "predictions" / "recorded" / "cpu-tiny-2026-12-05.results.json"
    rc, _out, err = run(capsys, "calibrate", str(recorded), "--points", "C=1,C=32", "--predictions", str(src),
                        "-o", str(calib))
    assert rc == 0, err
    text = src.read_text(encoding="utf-8")
    spec.write_text(text.replace("\nmodel:", "\ncalibration: c.yaml\nmodel:", 1), encoding="utf-8")
    if "calibration: c.yaml" not in spec.read_text(encoding="utf-8"):
        pytest.skip("cpu-tiny.yaml has no top-level model: line to insert the calibration before")
    sim = rows(capsys, "predict", "--simulate", str(spec), "--concurrency", "1", "--json")
    fitted = yaml.safe_load(calib.read_text(encoding="utf-8"))
    assert sim[0]["constants_source"] == "calibration c.yaml"
    assert fitted["constants"]["per_seq_overhead_s"] != 50e-6  # fitted (two loads), not the default kept
    for name, value in fitted["constants"].items():
        assert sim[0]["constants"][name] == pytest.approx(value, rel=1e-3), name


# -- M4 / L5: unitless fields say what they are -------------------------------------------------------------------
def test_fractions_say_so_and_one_rate_field(capsys):
    [closed] = rows(capsys, "predict", "--simulate", *L8, "--input-len", "512", "--output-len", "128",
                    "--concurrency", "16", "--json")
    for old in ("max_kv_usage", "mean_kv_usage", "time_shares", "prefix_cache_hit_rate", "utilisation", "rate"):
        assert old not in closed, old
    assert 0 < closed["mean_kv_usage_fraction"] <= closed["max_kv_usage_fraction"] <= 1
    # 16 requests of at most 512 + 128 tokens hold 16 × 40 blocks of the 27,742 usable at most
    assert closed["max_kv_usage_fraction"] <= 16 * 40 / 27_742 + 1e-9
    assert sum(closed["step_time_fractions"].values()) == pytest.approx(1.0)
    assert closed["prefix_cache_hit_fraction"] == 0.0
    assert closed["rate_req_per_s"] is None and closed["arrival_to_completion_ratio"] is None
    assert set(closed["band_notes"]) >= {"max_kv_usage_fraction", "step_time_fractions"}
    [opened] = rows(capsys, "predict", "--simulate", *L8, "--input-len", "512", "--output-len", "128",
                    "--rate", "2", "--json")
    assert opened["rate_req_per_s"] == 2 and "rate" not in opened
    # 2 req/s against an engine that serves a 512/128 request in ~1 s: a stable point, arrivals ≈ completions
    assert 0.8 < opened["arrival_to_completion_ratio"] < 1.2 and opened["unstable"] is None
    assert opened["served_rate_req_per_s"] == pytest.approx(2, rel=0.2)


def test_the_prefill_bound_range_is_in_numbers(capsys, prefill_one_source):
    [row] = rows(capsys, "predict", "--simulate", *L8, "--input-len", "8192", "--output-len", "64",
                 "--concurrency", "16", "--json")
    assert row["bands"] == {}  # prefill-bound: too few sources for a band, the observed range instead
    from pytest_roofline.model import bands
    unbanded = bands._load_doc()["unbanded"]  # the one-source class of the fixture
    for metric in ("output_throughput_tok_per_s", "tpot_p50_ms", "ttft_p50_ms"):
        seen = unbanded[f"{metric}|*|gpu-prefill"]
        got = row["observed_ranges"][metric]
        assert got["measured_over_model"] == [seen["lo"], seen["hi"]]
        assert got["measured_range"] == pytest.approx([seen["lo"] * row[metric], seen["hi"] * row[metric]])
        assert f"{seen['lo']:.2f}-{seen['hi']:.2f}" in row["band_notes"][metric]
    # and the table prints the values beside the ratios
    rc, out, _ = run(capsys, "predict", "--simulate", *L8, "--input-len", "8192", "--output-len", "64",
                     "--concurrency", "16")
    lo, hi = (unbanded["ttft_p50_ms|*|gpu-prefill"][k] * row["ttft_p50_ms"] for k in ("lo", "hi"))
    assert rc == 0 and f"TTFT p50 ms 1.04-7.49 ({lo:,.4g}–{hi:,.4g})" in out


def test_the_table_has_no_utilisation_column_or_word(capsys):
    rc, out, _ = run(capsys, "predict", "--simulate", *L8, "--input-len", "1024", "--output-len", "256",
                     "--rate", "2,60")
    assert rc == 0 and "utilisation" not in out
    assert "arrivals ÷ completions" in out  # the unstable 60 req/s point says what its ratio is


# -- M5: the flag path refuses what the file path refuses ---------------------------------------------------------
def test_the_flag_path_refuses_an_engine_vllm_will_not_start(capsys, tmp_path):
    held = "the KV pool holds 9,952 tokens, less than one request of max_model_len 131,072"
    for extra in ((), ("--json",)):
        rc, out, err = run(capsys, "predict", *SEVENTY_TP2, *extra)
        assert rc == 2 and out == "", extra  # nothing simulated
        assert f"vLLM will not start this setup: {held}" in err
        assert "lower --max-model-len to 9,952 or less" in err
    flag_reason = err.split("vLLM will not start this setup: ", 1)[1].split("; lower")[0]
    spec = tmp_path / "tp2.yaml"
    spec.write_text("hardware: h100-sxm\nmodel: llama-3.1-70b\n"
                    "engine: {name: vllm, args: {tensor_parallel_size: 2}}\n"
                    "workload: {input_len: 2048, output_len: 256}\nsweep: {mode: closed, concurrency: [1, 16]}\n"
                    "predictions:\n  - {id: c1, quantity: output_throughput, at: {concurrency: 1}, "
                    "predicted: 30 tok/s}\n", encoding="utf-8")
    rc, out, err = run(capsys, "predict", "--simulate", str(spec))
    assert rc == 2 and out == ""
    assert err.split("vLLM will not start this setup: ", 1)[1].split("; lower")[0] == flag_reason
    # the pool holds 622 × 16 = 9,952 tokens: one request of exactly that length starts, one token more does not
    rc, out, err = run(capsys, "predict", *SEVENTY_TP2, "--max-model-len", "9952")
    assert rc == 0 and out, err
    rc, out, err = run(capsys, "predict", *SEVENTY_TP2, "--max-model-len", "9953")
    assert rc == 2 and out == "" and "less than one request of max_model_len 9,953" in err


def test_the_analytical_table_still_shows_such_a_pool_with_a_warning(capsys):
    rc, out, err = run(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "2",
                       "--batch", "1")
    assert rc == 0 and "622 GPU blocks" in out and "warning: the KV pool holds 9,952 tokens" in err
