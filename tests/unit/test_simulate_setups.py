"""``roofline predict --simulate FILE`` simulates each distinct setup the file's predictions use (one table a setup,
headed by what it changes of the file's; each ``--json`` row says which), and says an engine setting the serving
model does not simulate once, at its line, with the fix (trial s19 P).

The directions asserted are worked out by hand from datasheet and config figures, not read off the output:

* Llama-3.1-8B at bf16: 8,030,261,248 parameters x 2 B = 16,060,522,496 B of weights, read once a decode step
  whatever the batch; its KV is 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token.
* H100 SXM: 3.35e12 B/s of HBM; A100 SXM4 80GB: 2.039e12 B/s (the catalog's datasheet figures).
* ``max_num_seqs`` 4 at 64 clients: at most 4 sequences decode a step, and a step reads the weights at least once,
  so at most 4 tokens every 16,060,522,496 / 3.35e12 = 4.794 ms: 834.4 tok/s, a ceiling no efficiency or overhead
  can raise. With 64 sequences a step reads the same weights and at most 64 x 256 tokens x 131,072 B = 2.15 GB of KV
  (128 in + 128 out), 13% more than the weights alone: 16 times the tokens for well under twice the step time, so
  more than 4 times the throughput even if the chip-independent overheads were as long as the weight read.
* Batch 1 on an A100 against an H100: a decode step is the weight read at the serving model's HBM efficiency (0.8 on
  both GPUs, ``serving.default_constants``) plus chip-independent overheads ``o`` (1 ms a step, 15 us an attention
  layer x 32, the frontend's 0.7 ms a token: under 3 ms together). TPOT H100 / TPOT A100 = (5.993 ms + o) /
  (9.846 ms + o) (16,060,522,496 B / (3.35e12 x 0.8) and / (2.039e12 x 0.8)): the bandwidth ratio 2.039 / 3.35 =
  0.6087 at o = 0, rising with o to (5.993 + 3) / (9.846 + 3) = 0.700 at 3 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.cli_run import run_cli

WEIGHTS_B = 2 * 8_030_261_248
H100_BW, A100_BW = 3.35e12, 2.039e12


def _write(tmp_path: Path, text: str) -> str:
    f = tmp_path / "f.yaml"
    f.write_text(text, encoding="utf-8")
    return str(f)


_run = run_cli  # rc, stdout, stderr and every UnsimulatedSettingWarning the command let out


SEQS = ("title: t\n"                                                     # 1
        "hardware: h100-sxm\n"                                           # 2
        "model: llama-3.1-8b\n"                                          # 3
        "engine: {name: vllm, version: \"0.33.0\", args: {max_num_seqs: 64}}\n"  # 4
        "workload: {input_len: 128, output_len: 128}\n"                  # 5
        "sweep: {concurrency: [1, 64]}\n"                                # 6
        "predictions:\n"                                                 # 7
        "  - id: tput-64\n"                                              # 8
        "    quantity: output_throughput\n"
        "    at: {concurrency: 64}\n"
        "    predicted: 5,000 tok/s\n"
        "  - id: tput-4\n"                                               # 12
        "    quantity: output_throughput\n"
        "    at: {concurrency: 64}\n"
        "    predicted: 700 tok/s\n"
        "    setup: {engine: {args: {max_num_seqs: 4}}}\n")              # 16


def test_two_setups_two_tables_and_more_sequences_give_more_throughput(tmp_path, capsys):
    f = _write(tmp_path, SEQS)
    rc, out, err, said = _run(capsys, "predict", "--simulate", f, "--json")
    assert rc == 0 and said == [], err
    rows = [json.loads(line) for line in out.splitlines()]
    by = {(r["setup_predictions"][0]["id"], r["concurrency"]): r for r in rows}
    assert sorted(by) == [("tput-4", 1), ("tput-4", 64), ("tput-64", 1), ("tput-64", 64)]
    assert by["tput-64", 64]["setup_differs_from_file"] == {}
    assert by["tput-4", 64]["setup_differs_from_file"] == {
        "engine.args.max_num_seqs": {"value": 4, "file_value": 64}}
    assert by["tput-4", 64]["setup_predictions"] == [{"id": "tput-4", "line": 12}]
    assert by["tput-4", 64]["serving_engine"]["max_num_seqs"] == 4
    four, many = by["tput-4", 64], by["tput-64", 64]
    ceiling4 = 4 * H100_BW / WEIGHTS_B  # 834.4 tok/s: 4 tokens a weight read
    assert four["output_throughput_tok_per_s"] <= ceiling4
    assert four["max_running_batch"] <= 4 < many["max_running_batch"]
    assert many["output_throughput_tok_per_s"] > 4 * four["output_throughput_tok_per_s"]
    # the text: a second table, headed by what it changes
    rc, text, _err, _said = _run(capsys, "predict", "--simulate", f)
    assert rc == 0
    assert "the setup of prediction tput-4 (line 12): engine.args.max_num_seqs 4 (the file's: 64)" in text.splitlines()
    assert sum("max_num_seqs 4," in ln for ln in text.splitlines()) == 1  # its head line
    assert sum(ln.startswith("the band lines:") for ln in text.splitlines()) == 1  # the legends once


def test_an_a100_at_batch_1_is_slower_than_an_h100_by_about_the_bandwidth_ratio(tmp_path, capsys):
    f = _write(tmp_path, SEQS.replace("max_num_seqs: 64", "max_num_seqs: 256").replace(
        "setup: {engine: {args: {max_num_seqs: 4}}}", "setup: {hardware: a100-sxm4-80gb}"))
    rc, out, err, _said = _run(capsys, "predict", "--simulate", f, "--json", "--concurrency", "1")
    assert rc == 0, err
    by = {r["hardware"]: r for r in map(json.loads, out.splitlines())}
    assert by["a100-sxm4-80gb"]["setup_differs_from_file"] == {
        "hardware": {"value": "a100-sxm4-80gb", "file_value": "h100-sxm"}}
    ratio = by["h100-sxm"]["tpot_p50_ms"] / by["a100-sxm4-80gb"]["tpot_p50_ms"]
    t_h, t_a = WEIGHTS_B / (H100_BW * 0.8), WEIGHTS_B / (A100_BW * 0.8)
    assert A100_BW / H100_BW < ratio < (t_h + 3e-3) / (t_a + 3e-3)  # 0.6087 < ratio < 0.700
    assert (by["a100-sxm4-80gb"]["output_throughput_tok_per_s"]
            < by["h100-sxm"]["output_throughput_tok_per_s"])


PRIO = ("hardware: h100-sxm\n"                                           # 1
        "model: llama-3.1-8b\n"                                          # 2
        "engine:\n"                                                      # 3
        "  version: \"0.33.0\"\n"                                        # 4
        "  args:\n"                                                      # 5
        "    scheduling_policy: priority\n"                              # 6
        "workload: {input_len: 128, output_len: 64}\n"                   # 7
        "sweep: {concurrency: [1, 4]}\n"                                 # 8
        "predictions:\n"                                                 # 9
        "  - id: tput\n"                                                 # 10
        "    quantity: output_throughput\n"
        "    at: {concurrency: 4}\n"
        "    predicted: 500 tok/s\n")


def test_an_unsimulated_setting_is_said_once_at_its_line_with_the_fix_and_exit_status_2(tmp_path, capsys):
    f = _write(tmp_path, PRIO)
    for extra in ((), ("--json",)):
        rc, out, err, said = _run(capsys, "predict", "--simulate", f, *extra)
        assert rc == 2 and out == ""
        assert said == []  # no UnsimulatedSettingWarning besides the refusal
        assert err.count("scheduling_policy") == 1 and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"roofline: {f}:6: engine.args.scheduling_policy: 'priority' is not modelled")
        assert "remove it to predict the default engine" in err


def test_an_own_setup_the_model_cannot_simulate_is_refused_at_its_line_and_the_rest_print(tmp_path, capsys):
    f = _write(tmp_path, PRIO.replace("    scheduling_policy: priority\n", "    max_num_seqs: 64\n") + (
        "  - id: prio\n"                                                 # 14
        "    quantity: output_throughput\n"
        "    at: {concurrency: 4}\n"
        "    predicted: 500 tok/s\n"
        "    setup:\n"                                                   # 18
        "      engine:\n"
        "        args:\n"                                                # 20
        "          scheduling_policy: priority\n"                        # 21
        "  - id: blocks-prio\n"                                          # 22: a quantity the serving model
        "    quantity: num_gpu_blocks\n"                                 #     does not compute: the reader
        "    predicted: 29,000\n"                                        #     locates nothing for it
        "    setup: {engine: {version: \"0.33.0\", args: {scheduling_policy: priority, max_num_seqs: 8}}}\n"))
    rc, out, err, said = _run(capsys, "predict", "--simulate", f, "--json")
    assert rc == 2 and said == []
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["setup_predictions"][0]["id"] for r in rows} == {"tput"}  # the file's setup still printed
    lines = err.strip().splitlines()
    assert len(lines) == 2 and err.count("scheduling_policy") == 2, err
    assert lines[0].startswith(f"roofline: {f}:21: engine.args.scheduling_policy: 'priority' is not modelled")
    assert lines[0].endswith("(not simulated: the setup of prediction prio (line 14); the other setups' tables "
                             "are printed)")
    assert lines[1].startswith(f"roofline: {f}:22: engine.args.scheduling_policy: ")
    assert "blocks-prio (line 22)" in lines[1]


def test_a_tables_cells_are_one_setup_and_a_setup_that_changes_nothing_is_the_files(tmp_path, capsys):
    f = _write(tmp_path, SEQS.replace("    setup: {engine: {args: {max_num_seqs: 4}}}\n",
                                      "    setup: {hardware: h100-sxm}\n") + (
        "  - id: cells\n"                                                # 17
        "    setup: {engine: {args: {max_num_seqs: 4}}}\n"
        "    table:\n"
        "      at: concurrency\n"
        "      quantities: [output_throughput]\n"
        "      rows:\n"
        "        - [1, 100 tok/s]\n"                                     # 23
        "        - [64, 700 tok/s]\n"))                                  # 24
    rc, text, err, _said = _run(capsys, "predict", "--simulate", f)
    assert rc == 0, err
    # tput-4's setup: {hardware: h100-sxm} is the file's chip: simulated with the file's setup, no table of its own
    assert [ln for ln in text.splitlines() if ln.startswith("the setup of")] == [
        "the setup of prediction cells (line 23): engine.args.max_num_seqs 4 (the file's: 64)"]
    rc, out, err, _said = _run(capsys, "predict", "--simulate", f, "--json")
    first = json.loads(out.splitlines()[0])
    assert [p["id"] for p in first["setup_predictions"]] == ["tput-64", "tput-4"]
