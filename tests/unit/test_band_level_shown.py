"""Wherever ``roofline predict --simulate`` shows a band it says what one is (trial s18 M1, L1, L2): the text says
once its nominal coverage and meaning, ``--json`` carries ``band_level`` and ``band_basis``, its numbers carry
thousands separators as the plugin's do, and a prediction's own ``setup:`` gets its own table, headed by what it
changes (tests/unit/test_simulate_setups.py checks the values)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_roofline import cli
from pytest_roofline.model import bands

L8 = ("--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--input-len", "1024", "--output-len", "1024")


def _out(capsys, *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_text_says_once_what_a_band_is_with_its_coverage_from_the_constant(capsys):
    out = _out(capsys, "predict", "--simulate", *L8, "--concurrency", "1,16")
    level = f"{round(100 * bands.NOMINAL_COVERAGE)}% nominal"  # 0.80 -> "80% nominal"
    legend = [ln for ln in out.splitlines() if level in ln]
    assert len(legend) == 1, out
    assert "where a run from a source the band was not built from lands" in legend[0]
    assert "CPU bands" not in out  # the CPU caveat is for CPU setups alone


def test_cpu_bands_carry_the_cpu_caveat(capsys):
    out = _out(capsys, "predict", "--simulate", "predictions/cpu-tiny.yaml", "--concurrency", "1")
    assert bands.CPU_BAND_CAVEAT in out and "% nominal" in out


def test_json_carries_the_band_level_and_basis(capsys):
    out = _out(capsys, "predict", "--simulate", *L8, "--concurrency", "1,16", "--json")
    for row in map(json.loads, out.splitlines()):
        assert row["band_level"] == bands.NOMINAL_COVERAGE
        assert "conformal" in row["band_basis"] and "leave-one-source-out" in row["band_basis"]
        assert f"{round(100 * bands.NOMINAL_COVERAGE)}% nominal" in row["band_meaning"]


def test_numbers_carry_thousands_separators(capsys):
    out = _out(capsys, "predict", "--simulate", *L8, "--concurrency", "16", "--json")
    row = json.loads(out.splitlines()[0])
    lo, hi = row["bands"]["output_throughput_tok_per_s"]
    assert 1000 < lo < hi < 10000  # an 8B model on an H100 at C=16: thousands of tok/s (the trial's 1,415-2,001)
    text = _out(capsys, "predict", "--simulate", *L8, "--concurrency", "16")
    band_line = next(ln for ln in text.splitlines() if ln.strip().startswith("band: "))
    # five significant figures with a thousands separator, as pytest prints a serving band ("1,415.1")
    assert f"agg tok/s {lo:,.5g}–{hi:,.5g}" in band_line


def test_a_predictions_own_setup_gets_its_own_table_headed_by_what_it_changes(capsys, tmp_path: Path):
    f = tmp_path / "p.yaml"
    f.write_text(
        "title: t\nhardware: h100-sxm\nmodel: llama-3.1-8b\n"
        "engine: {name: vllm}\nworkload: {input_len: 128, output_len: 64}\n"
        "sweep: {concurrency: [1]}\n"
        "predictions:\n"
        "  - id: own-gpu\n"
        "    quantity: batch1_throughput\n"
        "    setup: {hardware: a100-sxm4-80gb}\n"
        "    predicted: 95 tok/s\n"
        "  - id: file-setup\n"
        "    quantity: output_throughput\n"
        "    at: {concurrency: 1}\n"
        "    predicted: 100 tok/s\n", encoding="utf-8")
    text = _out(capsys, "predict", "--simulate", str(f))
    heads = [ln for ln in text.splitlines() if ln.startswith("the setup of")]
    assert heads == ["the setup of prediction own-gpu (line 8): hardware a100-sxm4-80gb (the file's: h100-sxm)"]
    assert "not simulated here" not in text
    rows = [json.loads(ln) for ln in _out(capsys, "predict", "--simulate", str(f), "--json").splitlines()]
    assert [(r["hardware"], r["setup_predictions"]) for r in rows] == [
        ("h100-sxm", [{"id": "file-setup", "line": 12}]), ("a100-sxm4-80gb", [{"id": "own-gpu", "line": 8}])]
    assert rows[0]["setup_differs_from_file"] == {}
    assert rows[1]["setup_differs_from_file"] == {"hardware": {"value": "a100-sxm4-80gb", "file_value": "h100-sxm"}}
