"""An engine setting the serving model does not simulate, in a file whose predictions do not take its value, is said
once at its own line (trial s18 H4, issue 22: "never silently ignored").

``scheduling_policy: priority``, ``long_prefill_token_threshold: 256``, ``max_num_partial_prefills: 4`` and, on vLLM
0.6.3 (where V0 multi-step scheduling exists), ``num_scheduler_steps: 10`` change only the serving model's step
timing (``engine_args._refusals``, scope "serving"). A number in ink checked against the roofline keeps its check,
but loses the serving model's value and band: ``output_throughput`` ink below the roofline ceiling is then
INCONCLUSIVE. These used to pass ``roofline check`` in silence and leave the verdict's reason saying "(no value)"
without naming the setting; ``roofline predict --simulate`` refused them without their line. The line numbers
asserted are counted by hand in the small files below (the arg is on line 6).
"""

from __future__ import annotations

import warnings

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import UnsimulatedSettingWarning
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.scoring import score


def _file(version: str, arg: str) -> str:
    return ("hardware: h100-sxm\n"                                   # 1
            "model: llama-3.1-8b\n"                                  # 2
            "engine:\n"                                              # 3
            f"  version: \"{version}\"\n"                            # 4
            "  args:\n"                                              # 5
            f"    {arg}\n"                                           # 6: the arg under test
            "workload: {input_len: 1024, output_len: 1024}\n"        # 7
            "sweep: {mode: closed, concurrency: [1, 16]}\n"          # 8
            "predictions:\n"                                         # 9
            "  - id: tput-c16\n"                                     # 10
            "    quantity: output_throughput\n"
            "    at: {concurrency: 16}\n"
            "    predicted: 1,800 tok/s\n"
            "    tolerance: ±15%\n"
            "  - id: kv\n"                                           # 15
            "    quantity: num_gpu_blocks\n"
            "    predicted: 27,743\n")


#: the trial's four settings (trial18/ea-*.yaml), each with the release it was written for
UNSIMULATED = [
    ("0.33.0", "scheduling_policy: priority", "scheduling_policy"),
    ("0.33.0", "long_prefill_token_threshold: 256", "long_prefill_token_threshold"),
    ("0.33.0", "max_num_partial_prefills: 4", "max_num_partial_prefills"),
    ("0.6.3", "num_scheduler_steps: 10", "num_scheduler_steps"),
]


def _load(text: str) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = loads_spec(text, file="f.yaml")
    return spec, [str(w.message) for w in caught if issubclass(w.category, UnsimulatedSettingWarning)]


@pytest.mark.parametrize("version, arg, key", UNSIMULATED)
def test_an_unsimulated_setting_is_one_warning_at_its_line_naming_who_loses_the_value(version, arg, key):
    spec, said = _load(_file(version, arg))
    assert len(said) == 1 and said == spec.warnings
    msg = said[0]
    assert msg.startswith(f"f.yaml:6: engine.args.{key}: ")
    assert "tput-c16 has no serving-model value" in msg
    assert "kv" not in msg.split("A warning", 1)[1]  # the KV pool's quantity is not the serving model's
    assert "remove it for a model check, or measure" in msg
    # a warning, not an error: both predictions keep their checks
    assert all(p.error is None and p.math_error is None for p in spec.predictions)
    by_id = {p.id: p for p in spec.predictions}
    assert by_id["tput-c16"].no_serving_value == (f"no value: it does not simulate engine.args.{key} at f.yaml:6; "
                                                  "remove it for a model check")
    assert by_id["kv"].no_serving_value == ""
    assert spec.unsimulated_settings == {f"engine.args.{key}": "f.yaml:6"}


@pytest.mark.parametrize("version, arg", [
    ("0.33.0", "scheduling_policy: fcfs"),          # vLLM's default: the policy the serving model schedules
    ("0.33.0", "max_num_partial_prefills: 1"),      # the default: one prompt chunked at a time
    ("0.33.0", "max_num_seqs: 64"),                 # read by the serving model
    ("0.6.3", "num_scheduler_steps: 1"),            # single-step scheduling, as simulated
    ("0.33.0", "disable_log_requests: true"),       # no timing effect
])
def test_a_setting_the_model_honours_is_not_warned_about(version, arg):
    spec, said = _load(_file(version, arg))
    assert said == [] and spec.warnings == []
    assert all(p.no_serving_value == "" for p in spec.predictions)
    assert spec.unsimulated_settings == {}


@pytest.mark.parametrize("version, arg, key", UNSIMULATED)
def test_the_inconclusive_verdict_names_the_setting_and_its_line(version, arg, key):
    spec, _said = _load(_file(version, arg))
    pred = next(p for p in spec.predictions if p.id == "tput-c16")
    v = score(spec, pred, "math", None)
    assert v.status.value == "inconclusive"
    assert f"the serving model (no value: it does not simulate engine.args.{key} at f.yaml:6; remove it for a " \
           "model check) has no band" in v.reason


def test_predictions_with_their_own_setup_share_the_one_warning_at_the_files_line():
    text = _file("0.33.0", "scheduling_policy: priority") + (
        "  - id: short-c16\n"                                    # 18
        "    quantity: output_throughput\n"
        "    at: {concurrency: 16}\n"
        "    predicted: 2,000 tok/s\n"
        "    setup:\n"
        "      workload: {input_len: 512, output_len: 512}\n")  # keeps the file's engine.args (line 6)
    spec, said = _load(text)
    assert len(said) == 1
    assert said[0].startswith("f.yaml:6: engine.args.scheduling_policy: ")
    assert "tput-c16, short-c16 have no serving-model value" in said[0]
    short = next(p for p in spec.predictions if p.id == "short-c16")
    assert "engine.args.scheduling_policy at f.yaml:6" in short.no_serving_value


def test_a_prediction_that_takes_the_serving_value_keeps_its_error_and_no_warning_repeats_it():
    # predicted: model is the serving model's value: an error at the line (as before), not a warning too
    text = _file("0.33.0", "scheduling_policy: priority").replace("predicted: 1,800 tok/s", "predicted: model")
    spec, said = _load(text)
    tput = next(p for p in spec.predictions if p.id == "tput-c16")
    assert tput.error is not None and tput.error.line == 6
    assert said == []


def test_check_prints_the_warning_once_and_the_file_stays_ok(tmp_path, capsys):
    f = tmp_path / "f.yaml"
    f.write_text(_file("0.33.0", "scheduling_policy: priority"), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsimulatedSettingWarning)  # check prints it; it raises no Python warning
        rc = cli.main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.count("engine.args.scheduling_policy") == 1
    assert f"warning: {f}:6: engine.args.scheduling_policy: 'priority' is not modelled" in out
    assert "2 predictions ok, 0 with errors" in out


@pytest.mark.parametrize("version, arg, key", UNSIMULATED)
def test_simulate_refuses_the_setting_at_its_line(tmp_path, capsys, version, arg, key):
    f = tmp_path / "f.yaml"
    f.write_text(_file(version, arg), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsimulatedSettingWarning)
        rc = cli.main(["predict", "--simulate", str(f)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"roofline: {f}:6: engine.args.{key}: ")
