"""A flag that replaces a setting the file's own line is warned about (task s20 R, item 4): the value simulated is
the flag's, so the file line's warning goes; where the flag's value is one the serving model does not simulate
either, the refusal names the flag, not the line.

The file writes ``engine.args.scheduling_policy: priority`` at its line 5 (counted below): vLLM's priority
scheduling, which the serving model does not simulate (it schedules first come, first served, vLLM's default
``fcfs``). ``tput`` is a number in ink the roofline checks, a prediction that only loses its serving value: the
setting is a warning at line 5 when the file is read, and ``roofline predict --simulate`` refuses it there.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pytest
from support.cli_run import run_cli

from pytest_roofline.cli.setup_flags import flag_fields
from pytest_roofline.errors import UnsimulatedSettingWarning
from pytest_roofline.format.spec import load_spec, replaced_by_flags

PRIO = ("hardware: h100-sxm\n"                       # 1
        "model: qwen3-8b\n"                          # 2
        "engine:\n"                                  # 3
        "  args:\n"                                  # 4
        "    scheduling_policy: priority\n"          # 5
        "predictions:\n"                             # 6
        "  - id: tput\n"                             # 7
        "    quantity: output_throughput\n"
        "    at: {concurrency: 16}\n"
        "    predicted: 1000 tok/s\n")


def _file(tmp_path: Path) -> str:
    f = tmp_path / "prio.yaml"
    f.write_text(PRIO, encoding="utf-8")
    return str(f)


_run = run_cli  # rc, stdout, stderr and every UnsimulatedSettingWarning the command let out


def test_the_file_warns_at_its_line_and_the_warning_keeps_its_field(tmp_path):
    f = _file(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_spec(f)
    [w] = [w.message for w in caught if issubclass(w.category, UnsimulatedSettingWarning)]
    assert str(w).startswith(f"{f}:5: engine.args.scheduling_policy: 'priority' is not modelled")
    assert replaced_by_flags(w, {"engine.args.scheduling_policy": "--set engine.args.scheduling_policy"})
    assert not replaced_by_flags(w, {"engine.args.max_num_seqs": "--max-num-seqs"})
    assert not replaced_by_flags(str(w), {"engine.args.scheduling_policy": "--set engine.args.scheduling_policy"})


def test_without_a_flag_the_line_is_refused_as_before(tmp_path, capsys):
    f = _file(tmp_path)
    rc, out, err, said = _run(capsys, "predict", "--simulate", f)
    assert rc == 2 and out == "" and said == []
    assert err.startswith(f"roofline: {f}:5: engine.args.scheduling_policy: 'priority' is not modelled")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("written", ["scheduling_policy", "scheduling-policy"])
def test_a_set_that_replaces_the_setting_with_one_simulated_drops_the_lines_warning(tmp_path, capsys, written):
    f = _file(tmp_path)
    rc, out, err, said = _run(capsys, "predict", "--simulate", f, "--set", f"engine.args.{written}=fcfs")
    assert rc == 0 and said == []
    assert "scheduling_policy" not in err and f"{f}:5" not in err, err  # before: the line-5 warning, on stderr
    assert out.splitlines()[0].startswith("h100-sxm · qwen3-8b")  # the table of the flag's setup


@pytest.mark.parametrize("written", ["scheduling_policy", "scheduling-policy"])
def test_a_set_to_a_value_not_simulated_is_refused_naming_the_flag_not_the_line(tmp_path, capsys, written):
    f = _file(tmp_path)
    rc, out, err, said = _run(capsys, "predict", "--simulate", f, "--set", f"engine.args.{written}=priority")
    assert rc == 2 and out == "" and said == []
    assert err.startswith(f"roofline: --set engine.args.{written}: engine.args.scheduling_policy: 'priority' is "
                          "not modelled"), err
    assert f"{f}:5" not in err and len(err.strip().splitlines()) == 1


def test_flag_fields_names_each_field_the_flags_set_as_a_file_names_it():
    args = argparse.Namespace(tensor_parallel_size=2, max_num_seqs=None,
                              set=[(("engine", "args", "max-num-seqs"), "4"),
                                   (("engine", "args", "no-enable-prefix-caching"), "true"),
                                   (("hardware", "memory_bytes"), "80GiB")])
    assert flag_fields(args) == {"engine.args.tensor_parallel_size": "--tp",
                                 "engine.args.max_num_seqs": "--set engine.args.max-num-seqs",
                                 "engine.args.enable_prefix_caching": "--set engine.args.no-enable-prefix-caching",
                                 "hardware.memory_bytes": "--set hardware.memory_bytes"}
