"""The ``roofline`` command (``pytest_roofline/cli/``).

Values are worked out by hand from spec sheets and model configs:

* the notebook's setup: A100-SXM4-80GB (2,039 GB/s, 312 TFLOP/s bf16) serving Qwen3-8B (8,190,735,360
  parameters, bf16 → 16,381,470,720 bytes; 36 layers × 8 KV heads × 128 dims × 2 × 2 B = 147,456 B of KV per
  token) with 1,000 tokens of KV per sequence;
* the lesson's chip with a real model: H100 SXM (3.35 TB/s, 989 TFLOP/s) and Llama-3.1-8B (8,030,261,248
  parameters; 32 × 8 × 128 × 2 × 2 = 131,072 B of KV per token).
"""

from __future__ import annotations

import json
import textwrap

import pytest
from support.paths import DAY3, PREDICTIONS

from pytest_roofline import cli
from pytest_roofline.quantities.registry import QUANTITIES

QWEN_WEIGHTS = 2 * 8_190_735_360
QWEN_KV_TOKEN = 36 * 8 * 128 * 2 * 2
LLAMA_WEIGHTS = 2 * 8_030_261_248
LLAMA_KV_TOKEN = 32 * 8 * 128 * 2 * 2
ROW_KEYS = {"batch", "intensity_flop_per_byte", "t_mem_ms", "t_comp_ms", "t_step_ms", "throughput_tok_per_s",
            "kv_total_gib"}
META_KEYS = {"ridge_flop_per_byte", "intensity_asymptote_flop_per_byte", "knee_batch"}


def roofline(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------------------------
# predict
# --------------------------------------------------------------------------------------------------------------
def test_predict_json_notebook_setup(capsys):
    rc, out, err = roofline(capsys, "predict", "--hardware", "a100-sxm4-80gb", "--model", "qwen3-8b",
                            "--context", "1000", "--json")
    assert rc == 0 and err == ""
    rows = json_lines(out)
    assert [r["batch"] for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for r in rows:
        assert ROW_KEYS | META_KEYS <= r.keys()
    by_b = {r["batch"]: r for r in rows}
    # B = 16: (16,381,470,720 + 16 × 147,456,000) B ÷ 2.039e12 B/s = 9.1912 ms -> 1,740.8 tok/s
    t_mem_16 = (QWEN_WEIGHTS + 16 * 1000 * QWEN_KV_TOKEN) / 2.039e12
    assert by_b[16]["t_mem_ms"] == pytest.approx(t_mem_16 * 1e3, rel=1e-9)
    assert by_b[16]["throughput_tok_per_s"] == pytest.approx(16 / t_mem_16, rel=1e-9)
    assert round(by_b[16]["throughput_tok_per_s"], 1) == 1740.8
    assert by_b[16]["kv_total_gib"] == pytest.approx(16 * 1000 * QWEN_KV_TOKEN / 2**30)
    # B = 1: the Day 3 ink value 123.4 tok/s
    assert round(by_b[1]["throughput_tok_per_s"], 1) == 123.4
    for r in rows:
        assert r["ridge_flop_per_byte"] == pytest.approx(312e12 / 2.039e12)
        assert round(r["ridge_flop_per_byte"], 1) == 153.0
        # 2P ÷ KV per sequence = 16.38e9 ÷ 147.456e6 = 111.09 < 153: no knee, only a flattening
        assert r["intensity_asymptote_flop_per_byte"] == pytest.approx(QWEN_WEIGHTS / (1000 * QWEN_KV_TOKEN))
        assert r["knee_batch"] is None
        assert r["hardware"] == "a100-sxm4-80gb" and r["model"] == "qwen3-8b"


def test_predict_json_rows_are_internally_consistent(capsys):
    rc, out, _ = roofline(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--json")
    assert rc == 0
    rows = json_lines(out)
    kv_seq = 1536 * LLAMA_KV_TOKEN  # the default context: the default workload's 1,024 in + 1,024 out ÷ 2
    prev = 0.0
    for r in rows:
        b = r["batch"]
        t_mem = (LLAMA_WEIGHTS + b * kv_seq) / 3.35e12
        t_comp = b * LLAMA_WEIGHTS / 989e12  # 2P FLOP per token = 2 × params = the bf16 weight bytes
        assert r["t_mem_ms"] == pytest.approx(t_mem * 1e3, rel=1e-9)
        assert r["t_comp_ms"] == pytest.approx(t_comp * 1e3, rel=1e-9)
        assert r["t_step_ms"] == pytest.approx(max(r["t_mem_ms"], r["t_comp_ms"]))
        assert r["throughput_tok_per_s"] == pytest.approx(b / r["t_step_ms"] * 1e3)
        assert r["per_request_tok_per_s"] == pytest.approx(r["throughput_tok_per_s"] / b)
        assert r["intensity_flop_per_byte"] == pytest.approx(b * LLAMA_WEIGHTS / (LLAMA_WEIGHTS + b * kv_seq))
        # intensity is also FLOPs over bytes recovered from the two times
        assert r["intensity_flop_per_byte"] == pytest.approx(
            (r["t_comp_ms"] * 989e12) / (r["t_mem_ms"] * 3.35e12), rel=1e-9)
        assert r["weight_only_intensity_flop_per_byte"] == pytest.approx(b)
        assert r["kv_total_gib"] == pytest.approx(b * 0.1875)  # 1,536 × 131,072 B = 192 MiB per sequence
        assert r["bound"] == ("memory" if r["t_mem_ms"] >= r["t_comp_ms"] else "compute")
        assert r["throughput_tok_per_s"] > prev
        prev = r["throughput_tok_per_s"]
        assert r["ridge_flop_per_byte"] == pytest.approx(989 / 3.35)  # 295.22
        assert r["intensity_flop_per_byte"] < r["intensity_asymptote_flop_per_byte"] < r["ridge_flop_per_byte"]
        assert r["knee_batch"] is None


def test_the_tables_default_context_is_the_prediction_files(capsys):
    """Trial s25a #13: the table took 1,024 tokens of KV context where a prediction file of the same setup takes
    input + output ÷ 2 (1,536 for 1,024/1,024): 5,323.5 tok/s at B = 64 against the file's 4,697."""
    from pytest_roofline.format.spec import loads_spec
    from pytest_roofline.scoring import score

    rc, out, _ = roofline(capsys, "predict", "--hardware", "h100-sxm", "--model", "qwen3-14b", "--batch", "64",
                          "--input-len", "512", "--output-len", "256", "--json")
    assert rc == 0
    row = json_lines(out)[0]
    assert row["context_tokens"] == 640  # 512 + 256 ÷ 2
    spec = loads_spec("hardware: h100-sxm\nmodel: qwen3-14b\nworkload: {input_len: 512, output_len: 256}\n"
                      "predictions:\n  - {id: t, quantity: output_throughput, at: {batch: 64}, predicted: 1 tok/s}\n")
    v = score(spec, spec.predictions[0], "math", None)
    assert row["throughput_tok_per_s"] == pytest.approx(float(v.model_value), rel=1e-9)


def test_predict_custom_batches_and_context(capsys):
    rc, out, _ = roofline(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b",
                          "--context", "8192", "--batch", "1,64", "--json")
    assert rc == 0
    rows = json_lines(out)
    assert [r["batch"] for r in rows] == [1, 64]
    assert rows[1]["kv_total_gib"] == pytest.approx(64 * 8192 * LLAMA_KV_TOKEN / 2**30)  # 64 GiB
    assert rows[0]["context_tokens"] == 8192


def test_predict_text_table(capsys):
    rc, out, _ = roofline(capsys, "predict", "--hardware", "a100-sxm4-80gb", "--model", "qwen3-8b",
                          "--context", "1000")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("a100-sxm4-80gb · qwen3-8b")
    # the weights in GiB (as vLLM logs them and as the KV pool line says "weights per GPU") with GB beside them:
    # 8,190,735,360 params x 2 B = 16,381,470,720 B = 15.26 GiB
    assert "KV 147,456 B/token" in lines[0] and "weights 15.26 GiB (16.38 GB)" in lines[0]
    assert "weights per GPU 15.26 GiB (16.38 GB)" in out
    assert lines[1].split()[:2] == ["B", "t_mem"]
    row16 = next(line for line in lines if line.split()[:1] == ["16"])
    assert "1,740.8" in row16 and row16.split()[-1] == "memory"
    assert "9.19" in row16.split()  # t_mem ms
    assert "ridge 153.0 FLOP/byte" in out
    assert "intensity asymptote 111.1 FLOP/byte" in out
    assert "batch-1 ceiling 124.5 tok/s" in out  # 2,039 GB/s ÷ 16.38 GB
    assert lines[-1].startswith("knee: no knee")


def test_predict_unknown_hardware_is_a_clear_error(capsys):
    rc, out, err = roofline(capsys, "predict", "--hardware", "h100-sxmm", "--model", "qwen3-8b")
    assert rc == 2 and out == ""
    assert "unknown hardware 'h100-sxmm'" in err and "h100-sxm" in err


def test_predict_unknown_model_is_a_clear_error(capsys):
    rc, _, err = roofline(capsys, "predict", "--hardware", "h100-sxm", "--model", "llama-9")
    assert rc == 2 and "unknown model 'llama-9'" in err


def test_predict_needs_hardware_and_model(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["predict", "--model", "qwen3-8b"])
    assert exc.value.code == 2
    assert "--hardware" in capsys.readouterr().err


def test_predict_rows_function():
    table = cli.predict_rows(hardware_id="a100-sxm4-80gb", model="qwen3-8b", context_tokens=1000, batches=[16])
    assert table.weight_bytes == QWEN_WEIGHTS
    assert table.kv_bytes_per_token == QWEN_KV_TOKEN
    assert table.half_saturation_batch == pytest.approx(QWEN_WEIGHTS / (1000 * QWEN_KV_TOKEN))
    # B → ∞: bandwidth ÷ KV per sequence = 2.039e12 ÷ 147.456e6 = 13,828 tok/s
    assert table.throughput_asymptote_tok_per_s == pytest.approx(2.039e12 / (1000 * QWEN_KV_TOKEN))
    assert table.batch1_ceiling_tok_per_s == pytest.approx(2.039e12 / QWEN_WEIGHTS)
    assert "no knee" in table.knee_reason
    data = table.to_dict()  # what --json prints: the table's fields, the KV pool's beside them, the rows
    assert data["weight_bytes"] == QWEN_WEIGHTS and data["num_gpu_blocks"] == table.kv.num_gpu_blocks
    assert [r["batch"] for r in data["rows"]] == [16] and set(ROW_KEYS) <= set(data["rows"][0])




# --------------------------------------------------------------------------------------------------------------
# check
# --------------------------------------------------------------------------------------------------------------
def test_check_shipped_files_exit_0(capsys):
    files = [str(PREDICTIONS / n) for n in ("day3.yaml", "batching-and-throughput.yaml")]
    rc, out, _ = roofline(capsys, "check", *files)
    assert rc == 0
    assert "day3.yaml: 29 predictions ok, 0 with errors (36 tests)" in out  # 29 written, littles-law at 8 C
    assert "batching-and-throughput.yaml: " in out and "ok, 0 with errors" in out


def test_check_a_bad_prediction_exits_1_and_names_file_line_and_fix(capsys, tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(textwrap.dedent("""\
        hardware: h100-sxm
        model: llama-3.1-8b
        predictions:
          - id: ridge
            quantity: ridge_point
            predicted: 295.2
          - id: typo
            quantity: ridge_pont
            predicted: 295.2
    """))
    rc, out, _ = roofline(capsys, "check", str(f))
    assert rc == 1
    assert f"{f}:8: unknown quantity 'ridge_pont'" in out
    assert "fix: did you mean 'ridge_point'" in out
    assert f"{f}: 1 predictions ok, 1 with errors" in out


def test_check_a_whole_file_error_exits_1(capsys, tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("hardware: h100-sxmm\nmodel: llama-3.1-8b\npredictions:\n  - id: a\n    quantity: ridge_point\n"
                 "    predicted: 1\n")
    rc, out, _ = roofline(capsys, "check", str(f))
    assert rc == 1 and f"{f}:1: unknown hardware 'h100-sxmm'" in out


def test_check_a_missing_file_exits_1_without_a_traceback(capsys, tmp_path):
    good = DAY3
    rc, out, err = roofline(capsys, "check", str(tmp_path / "nothere.yaml"), str(good))
    assert rc == 1
    assert "nothere.yaml: cannot read" in out
    assert "day3.yaml: 29 predictions ok" in out  # the other file is still checked
    assert "Traceback" not in err


# --------------------------------------------------------------------------------------------------------------
# quantities, hardware
# --------------------------------------------------------------------------------------------------------------
def test_quantities_lists_every_quantity_with_dimension_and_modes(capsys):
    rc, out, _ = roofline(capsys, "quantities")
    assert rc == 0
    heads = {line.split()[0]: line.split() for line in out.splitlines() if line and not line.startswith(" ")}
    assert set(heads) == set(QUANTITIES)
    assert heads["ridge_point"][1:3] == ["intensity", "math"]
    assert heads["num_gpu_blocks"][1:3] == ["count", "math+measured"]
    assert heads["littles_law_ratio"][2] == "measured"
    assert "concurrency" in " ".join(heads["output_throughput"])
    # every quantity has its one-line description under it
    assert out.count("\n    ") == len(QUANTITIES)


def test_hardware_lists_the_catalog(capsys):
    rc, out, _ = roofline(capsys, "hardware")
    assert rc == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    a100 = rows["a100-sxm4-80gb"].split()
    assert a100[1:7] == ["80.00", "GiB", "2,039", "312.0", "—", "153.0"]  # no FP8; 312 ÷ 2.039 = 153.02
    h100 = rows["h100-sxm"].split()
    assert h100[3:7] == ["3,350", "989.0", "1,979.0", "295.2"]  # 989 ÷ 3.35 = 295.22
    pcie = rows["a100-pcie-80gb"].split()
    assert pcie[3] == "1,935" and pcie[6] == "161.2"  # the plan's PCIe card: 312 ÷ 1.935
    assert "cpu" in rows


def test_schema_command_prints_the_schema(capsys, tmp_path):
    from pytest_roofline.format.spec import json_schema

    rc, out, _ = roofline(capsys, "schema")
    assert rc == 0 and json.loads(out) == json_schema()
    target = tmp_path / "s.json"
    rc, _, _ = roofline(capsys, "schema", "-o", str(target))
    assert rc == 0 and json.loads(target.read_text()) == json_schema()
