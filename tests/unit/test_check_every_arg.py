"""``roofline check`` names every engine arg to change at once (trial s24 L8, L9): a setup error hid the serving
model's warnings about the file's other args until it was fixed, and a prediction's own ``setup:`` was blamed again
for the file's bad args (the file's three refused args repeated at the prediction's line)."""

from __future__ import annotations

from pathlib import Path

from pytest_roofline.cli import main

HEAD = """hardware: {hw}
model: qwen3-14b
engine:
  name: vllm
  version: "{version}"
  args:
{args}
workload: {{input_len: 1024, output_len: 256}}
sweep: {{mode: closed, concurrency: [1, 8]}}
predictions:
  - {{id: b1, quantity: batch1_ceiling, predicted: 200 tok/s}}
  - id: c8
    quantity: output_throughput
    at: {{concurrency: 8}}
    predicted: 1,200 tok/s
    setup: {{engine: {{args: {{max_num_seqs: 64}}}}}}
"""


def _check(tmp_path: Path, capsys, *, args: str, version: str = "0.33.0", hw: str = "a100-sxm4-80gb") -> str:
    f = tmp_path / "f.yaml"
    f.write_text(HEAD.format(hw=hw, version=version, args=args))
    main(["check", str(f)])
    return capsys.readouterr().out + capsys.readouterr().err


def test_a_setup_error_names_the_args_the_serving_model_will_warn_of(tmp_path, capsys) -> None:
    out = _check(tmp_path, capsys, args="    num_scheduler_steps: 4\n    scheduling_policy: priority\n"
                                        "    enforce_eager: true")
    assert "f.yaml:7: setup does not resolve: engine.args.num_scheduler_steps: 4 is not an engine arg" in out
    assert ("once fixed, the serving model will also warn of engine.args.scheduling_policy (line 8), "
            "engine.args.enforce_eager (line 9): it does not simulate them") in out


def test_the_files_bad_args_are_not_blamed_on_a_predictions_setup(tmp_path, capsys) -> None:
    out = _check(tmp_path, capsys, args="    cpu_offload_gb: 4\n    tensor_paralel_size: 2")
    assert "f.yaml:7: setup does not resolve: engine.args.cpu_offload_gb" in out
    assert "f.yaml:8: setup does not resolve: engine.args.tensor_paralel_size" in out
    assert "setup override does not resolve" not in out  # the prediction's setup: adds nothing bad
    # an override that adds a bad arg of its own is still refused at its line, naming that arg alone
    f = tmp_path / "f.yaml"
    f.write_text(f.read_text().replace("max_num_seqs: 64", "max_num_seqs: 64, speculative_config: x"))
    main(["check", str(f)])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "setup override does not resolve" in ln)
    assert "speculative_config" in line and "cpu_offload_gb" not in line


def test_an_override_that_sets_a_refused_arg_again_at_another_value_is_named(tmp_path, capsys) -> None:
    # trial s24c L8: the file refuses cpu_offload_gb: 4 and the prediction's setup: sets cpu_offload_gb: 8; the
    # override was left out as the file's own problem
    out = _check(tmp_path, capsys, args="    cpu_offload_gb: 4")
    assert "setup override does not resolve" not in out
    f = tmp_path / "f.yaml"
    f.write_text(f.read_text().replace("max_num_seqs: 64", "max_num_seqs: 64, cpu_offload_gb: 8"))
    main(["check", str(f)])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "setup override does not resolve" in ln)
    assert "cpu_offload_gb: 8" in line
