"""``roofline check`` reports the engine settings the serving model refuses, at their own line, for every
prediction that takes the serving model's value (trial s14, finding 9: check said "ok" and the math check then
ERRORed with no file:line).  The same error is each such prediction's, so ``pytest file.yaml`` shows it at the
setting's line; the roofline's predictions of the file keep their check.

What vLLM does with each setting, read in its release sdists:

* ``--num-scheduler-steps``: V0 multi-step scheduling; 0.10.0's vllm/engine/arg_utils.py declares it (and its V1
  oracle falls back to V0 for N > 1), 0.10.1's and 0.11.0's do not (vllm PR #22138 / #22779): from 0.10.1 the
  command line refuses it at any value, so the setup is refused, not only the serving model's predictions.
* ``enforce_eager: true`` on a GPU, ``async_scheduling: true`` before 0.14.0 (off by default), and
  ``pipeline_parallel_size`` > 1: the serving model simulates CUDA-graph replay, synchronous scheduling and one
  tensor-parallel group.

Where the refusal errors (s14 review 1.1): a number in ink under ``model_column: serving`` is checked against the
serving model only by the CPU-only math check, so the setting is that check's error alone
(``Prediction.math_error``); a measured run (``--gpu``, ``--replay``) measures the point and scores the ink against
its measurement, the refusal in the serving column's note.  ``predicted: model`` has no ink but the serving model's
value: an error in every mode.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import UnsimulatedSettingWarning
from pytest_roofline.format._sections import takes_serving_value
from pytest_roofline.format.spec import PredictedKind, SpecError, loads_spec
from pytest_roofline.quantities.registry import QUANTITIES
from pytest_roofline.scoring import column_model


def _file(version: str, arg: str, *, column: str = "model_column: serving\n", tpot_ink: str = "model") -> str:
    return (f"hardware: h100-sxm\nmodel: qwen3-8b\nengine:\n  name: vllm\n  version: \"{version}\"\n  args:\n"
            f"    max_model_len: 8192\n    {arg}\n"  # line 8: the arg under test
            "workload: {input_len: 1024, output_len: 256}\n"
            "sweep: {mode: closed, concurrency: [1, 16], requests_per_point: 10x}\n"
            f"{column}"
            "predictions:\n"
            "  - id: tpot-c16\n    quantity: tpot_p50\n    at: {concurrency: 16}\n"
            f"    predicted: {tpot_ink}\n"
            "  - id: weights\n    quantity: weight_bytes\n    predicted: 16.38 GB\n")


def _errors(spec) -> dict[str, SpecError | None]:
    return {p.id: p.error for p in spec.predictions}


@pytest.mark.parametrize("arg, words", [
    ("enforce_eager: true", "not modelled on a GPU"),
    ("async_scheduling: true", "not modelled on vLLM 0.11.0"),
    ("pipeline_parallel_size: 2", "not simulated by the serving model"),
])
def test_a_timing_only_setting_is_each_serving_predictions_error_at_its_line(arg, words):
    spec = loads_spec(_file("0.11.0", arg), file="args.yaml")
    errors = _errors(spec)
    assert errors["weights"] is None  # the roofline's own quantity: still checked
    err = errors["tpot-c16"]
    assert err is not None and err.line == 8
    text = str(err)
    assert text.startswith("args.yaml:8: engine.args.") and words in text
    assert "tpot-c16 takes its value, predicted: model)" in text  # no ink but the serving value: every mode
    assert "::" not in text  # the pipeline message said "workload:: pipeline_parallel_size=2"


@pytest.mark.parametrize("arg, words", [
    ("enforce_eager: true", "not modelled on a GPU"),
    ("async_scheduling: true", "not modelled on vLLM 0.11.0"),
    ("pipeline_parallel_size: 2", "not simulated by the serving model"),
])
def test_a_number_in_ink_under_the_serving_column_errors_the_math_check_only(arg, words):
    spec = loads_spec(_file("0.11.0", arg, tpot_ink="10 ms"), file="args.yaml")
    pred = next(p for p in spec.predictions if p.id == "tpot-c16")
    assert pred.error is None  # collected, planned and measured by a run
    err = pred.math_error
    assert err is not None and err.line == 8 and words in str(err)
    assert "tpot-c16 takes its value, model_column: serving; an error of the math check only" in str(err)
    assert pred.error_in("math") is err and pred.error_in("measured") is None


#: the review's reproducer (a script of review 14, not kept in the repository): H100, Qwen3-8B, eager mode,
#: the serving column
EAGER = """\
hardware: h100-sxm
model: qwen3-8b
engine: {name: vllm, version: "0.11.0", args: {max_model_len: 4096, enforce_eager: true}}
workload: {input_len: 512, output_len: 256}
sweep: {mode: closed, concurrency: [1, 8], requests_per_point: 10x}
model_column: serving
predictions:
  - {id: tput, quantity: output_throughput, at: {concurrency: 8}, predicted: 900 tok/s}
  - {id: tpot, quantity: tpot_p50, at: {concurrency: 8}, predicted: 9 ms}
  - {id: tpot-model, quantity: tpot_p50, at: {concurrency: 8}, predicted: model}
"""
#: a recorded point at C=8: 880 tok/s is 2.2% under the 900 in ink, 9.4 ms 4.4% over the 9 ms (both inside the
#: default measured tolerance, ±10%)
EAGER_RESULTS = {"points": [{"id": "closed-c8", "mode": "closed", "concurrency": 8, "input_len": 512,
                             "output_len": 256, "num_requests": 80,
                             "client": {"completed": 80, "failed": 0, "output_throughput_tok_s": 880.0,
                                        "tpot_ms": {"p50": 9.4}}}]}


def test_a_measured_run_measures_a_serving_column_file_with_a_refused_setting():
    """The review's case (1.1): the measurement needs no serving model.  Measured, the two numbers in ink are
    scored against the recording; the serving column says why it has no value; ``predicted: model`` errors."""
    from pytest_roofline.measure.plan import points as mplan
    from pytest_roofline.report.scorecard import score_spec

    spec = loads_spec(EAGER, file="eager.yaml")
    preds = {p.id: p for p in spec.predictions}
    assert preds["tput"].error is None and preds["tpot"].error is None
    assert preds["tpot-model"].error is not None and preds["tpot-model"].error.line == 3
    # the sweep runs C=8 for the two numbers in ink (tpot-model, an error, asks for nothing)
    assert [p.id for p in mplan.plan_points(spec, spec.predictions)] == ["closed-c8"]
    assert mplan.needs_engine(spec.predictions)
    measured = {v.id: v for v in score_spec(spec, EAGER_RESULTS)}
    for pid, value, error in (("tput", 880.0, 880 / 900 - 1), ("tpot", 0.0094, 9.4 / 9 - 1)):
        v = measured[pid]
        assert (v.mode.value, v.status.value) == ("measured", "pass"), v.reason
        assert v.measured_value == pytest.approx(value)
        assert v.measured_value / preds[pid].predicted.value - 1 == pytest.approx(error)  # -2.22%, +4.44%
        assert v.serving_explanation.startswith("the serving model does not compute it here: "
                                                "engine.args.enforce_eager: true is not modelled on a GPU")
    assert measured["tpot-model"].status.value == "error"
    # without a measurement (the CPU-only check) the serving value is the check: all three are errors at line 3
    math = {v.id: v for v in score_spec(loads_spec(EAGER, file="eager.yaml"), None)}
    assert {pid: v.status.value for pid, v in math.items()} == {"tput": "error", "tpot": "error", "tpot-model": "error"}
    assert "eager.yaml:3: engine.args.enforce_eager: true is not modelled on a GPU" in math["tput"].reason
    assert "an error of the math check only" in math["tput"].reason


def test_with_the_roofline_column_and_ink_in_numbers_nothing_is_refused():
    # tpot_p50 in ink with the default column: the math check skips it (no roofline value), a run measures it
    with pytest.warns(UnsimulatedSettingWarning, match=r"args\.yaml:8: engine\.args\.enforce_eager"):
        spec = loads_spec(_file("0.11.0", "enforce_eager: true", column="", tpot_ink="10 ms"), file="args.yaml")
    assert _errors(spec) == {"tpot-c16": None, "weights": None}


def test_predicted_model_takes_the_serving_value_without_model_column():
    spec = loads_spec(_file("0.11.0", "enforce_eager: true", column=""), file="args.yaml")
    err = _errors(spec)["tpot-c16"]
    assert err is not None and err.line == 8 and "predicted: model" in str(err)


def test_multi_step_is_described_as_the_release_pinned_has_it():
    spec = loads_spec(_file("0.10.0", "num_scheduler_steps: 10"), file="args.yaml")
    text = str(_errors(spec)["tpot-c16"])
    assert text.startswith("args.yaml:8: engine.args.num_scheduler_steps: 10 is not modelled on vLLM 0.10.0")
    assert "runs 10 decode steps per schedule()" in text and "V0 engine" in text and "vLLM 0.6" not in text


def test_multi_step_on_a_release_without_the_arg_is_the_files_error():
    with pytest.raises(SpecError) as info:
        loads_spec(_file("0.11.0", "num_scheduler_steps: 10"), file="args.yaml")
    assert info.value.line == 8
    assert "not an engine arg of vLLM 0.11.0" in str(info.value) and "removed" in str(info.value)


def test_check_prints_each_refusal_once_and_counts_the_predictions(tmp_path, capsys):
    f = tmp_path / "two.yaml"
    text = _file("0.11.0", "enforce_eager: true").replace(
        "  - id: weights", "  - id: tpot-c1\n    quantity: tpot_p50\n    at: {concurrency: 1}\n"
                           "    predicted: model\n  - id: weights")
    f.write_text(text)
    rc = cli.main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.count("engine.args.enforce_eager: true is not modelled") == 1
    assert f"{f}:8: engine.args.enforce_eager" in out and "tpot-c16, tpot-c1 take its value" in out
    assert f"{f}: 1 predictions ok, 2 with errors" in out


def test_check_says_which_refusals_error_the_math_check_only(tmp_path, capsys):
    f = tmp_path / "eager.yaml"
    f.write_text(EAGER)
    rc = cli.main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 1  # the CPU-only pytest of the file errors on them
    lines = [line for line in out.splitlines() if line.startswith(f"{f}:3: engine.args.enforce_eager")]
    assert len(lines) == 2  # one for the numbers in ink (math check only), one for predicted: model
    assert any(line.endswith("(refused where the serving model runs: tput, tpot take its value, model_column: "
                             "serving; an error of the math check only: a measured run (--gpu, --replay) scores "
                             "the ink against its measurement, this refusal in the model column's note)")
               for line in lines)
    assert any(line.endswith("tpot-model takes its value, predicted: model)") for line in lines)
    assert f"{f}: 0 predictions ok, 3 with errors, 2 of them in the math check only" in out


def test_the_env_spelling_of_an_attention_backend_is_refused_at_its_line():
    text = _file("0.11.0", "seed: 0").replace("workload:", "  env: {VLLM_ATTENTION_BACKEND: FLASHINFER}\nworkload:")
    err = _errors(loads_spec(text, file="env.yaml"))["tpot-c16"]
    assert err is not None and err.line == 9 and "VLLM_ATTENTION_BACKEND" in str(err)


@pytest.mark.parametrize("column, kind", list(itertools.product(("auto", "serving", "roofline"),
                                                                 (PredictedKind.MODEL, PredictedKind.NUMBER))))
def test_the_predictions_refused_are_those_the_math_check_checks_against_the_serving_model(column, kind):
    """takes_serving_value (format/) and scoring.column_model agree for every quantity the serving model computes,
    with and without a roofline value: the refusal lands on exactly the predictions the math check would check
    against the serving model."""
    seen = set()
    for name, q in QUANTITIES.items():
        spec = SimpleNamespace(model_column=column)
        pred = SimpleNamespace(q=q, predicted=SimpleNamespace(kind=kind))
        expected = q.serving is not None and column_model(
            column, model_prediction=kind is PredictedKind.MODEL, roofline=q.model is not None, serving=True,
            math_mode=True) == "serving"
        assert takes_serving_value(spec, pred) is expected, name  # type: ignore[arg-type]
        seen.add((q.serving is not None, q.model is not None))
    assert seen >= {(True, True), (True, False), (False, True)}  # both kinds of serving quantity, and neither


# ---- a prediction's (or a table's) own setup: (review: refused only when scored, with no file:line) -------------
#: line 8: the file's last arg; a prediction's own setup: on line 16, its args on lines 19-20
OWN = """\
hardware: h100-sxm
model: qwen3-8b
engine:
  name: vllm
  version: "{version}"
  args:
    max_model_len: 8192
    {file_arg}
workload: {{input_len: 1024, output_len: 256}}
sweep: {{mode: closed, concurrency: [1, 16], requests_per_point: 10x}}
model_column: serving
predictions:
  - id: tpot-own
    quantity: tpot_p50
    at: {{concurrency: [1, 16]}}
    setup:
      engine:
        args:
          max_model_len: 8192
          {own_arg}
    predicted: {ink}
  - id: weights
    quantity: weight_bytes
    predicted: 16.38 GB
"""
EAGER_TEXT = ("engine.args.enforce_eager: true is not modelled on a GPU: without CUDA graphs every kernel is launched "
              "from Python, and the serving model's per-step costs are those of graph replay; remove it, or compare "
              "with the roofline only")

REFUSED_FOR_OWN = "(refused where the serving model runs: tpot-own takes its value, predicted: model)"


def _own(own_arg: str, *, ink: str = "model", version: str = "0.11.0", file_arg: str = "seed: 0") -> str:
    return OWN.format(version=version, file_arg=file_arg, own_arg=own_arg, ink=ink)


def test_a_predictions_own_setup_is_refused_at_its_args_line_when_read():
    spec = loads_spec(_own("enforce_eager: true"), file="own.yaml")
    preds = {p.id: p for p in spec.predictions}
    assert set(preds) == {"tpot-own[concurrency=1]", "tpot-own[concurrency=16]", "weights"}
    err = preds["tpot-own[concurrency=1]"].error
    assert err is not None and preds["tpot-own[concurrency=16]"].error is err  # one error for the item's tests
    assert (err.file, err.line) == ("own.yaml", 20)
    assert err.message == f"{EAGER_TEXT} {REFUSED_FOR_OWN}"
    assert err.hint == ("change or remove setup.engine.args.enforce_eager as the line says, or check these "
                        "predictions against the roofline (model_column: roofline, a number in ink) where it computes "
                        "them")
    assert preds["weights"].error is None
    # the math check's verdict is that error, with its file:line (it said "the serving model does not compute it
    # here: ..." with none)
    from pytest_roofline.report.scorecard import score_spec

    verdicts = {v.id: v for v in score_spec(spec, None)}
    v = verdicts["tpot-own[concurrency=16]"]
    assert v.status.value == "error" and v.reason.startswith(f"own.yaml:20: {EAGER_TEXT} (refused")
    assert verdicts["weights"].status.value == "pass"


def test_a_number_in_ink_under_an_own_setup_errors_the_math_check_only():
    spec = loads_spec(_own("enforce_eager: true", ink="10 ms"), file="own.yaml")
    pred = next(p for p in spec.predictions if p.id == "tpot-own[concurrency=16]")
    assert pred.error is None
    err = pred.math_error
    assert err is not None and err.line == 20
    assert err.message.endswith("(refused where the serving model runs: tpot-own takes its value, model_column: "
                                "serving; an error of the math check only: a measured run (--gpu, --replay) scores "
                                "the ink against its measurement, this refusal in the model column's note)")
    assert pred.error_in("math") is err and pred.error_in("measured") is None


def test_multi_step_in_an_own_setup_on_a_release_that_has_it():
    # 0.10.0 still has --num-scheduler-steps: the setup builds, the serving model refuses it
    spec = loads_spec(_own("num_scheduler_steps: 10", version="0.10.0"), file="own.yaml")
    err = spec.predictions[0].error
    assert err is not None and err.line == 20
    assert err.message.startswith("engine.args.num_scheduler_steps: 10 is not modelled on vLLM 0.10.0: ")


def test_a_tables_own_setup_at_tp2_without_custom_all_reduce(tmp_path, capsys):
    """disable_custom_all_reduce: true at TP 2 on NVLink-connected H100s: vLLM would run its custom kernel there
    (2 is in _SUPPORTED_WORLD_SIZES), so the serving model refuses it; the table's four cells share one error at
    the arg's line (19), which roofline check prints once."""
    text = (OWN.split("predictions:\n")[0].format(version="0.11.0", file_arg="seed: 0") + "predictions:\n"
            "  - id: tp2\n"                                   # 13
            "    setup:\n"                                    # 14
            "      engine:\n"                                 # 15
            "        args:\n"                                 # 16
            "          max_model_len: 8192\n"                 # 17
            "          tensor_parallel_size: 2\n"             # 18
            "          disable_custom_all_reduce: true\n"     # 19
            "    table:\n"                                    # 20
            "      at: concurrency\n"
            "      quantities: [tpot_p50, ttft_p50]\n"
            "      rows:\n"
            "        - [1, 6 ms, 40 ms]\n"
            "        - [16, 7 ms, 90 ms]\n"
            "  - {id: weights, quantity: weight_bytes, predicted: 16.38 GB}\n")
    f = tmp_path / "tp2.yaml"
    f.write_text(text)
    spec = loads_spec(text, file=str(f))
    cells = [p for p in spec.predictions if p.id.startswith("tp2[")]
    assert len(cells) == 4 and all(p.error is None for p in cells)
    errs = {id(p.math_error) for p in cells}
    assert len(errs) == 1 and cells[0].math_error is not None and cells[0].math_error.line == 19
    assert cells[0].math_error.message.startswith(
        "engine.args.disable_custom_all_reduce: true is not modelled at tensor_parallel_size 2: ")
    rc = cli.main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.count("disable_custom_all_reduce: true is not modelled") == 1
    assert f"{f}:19: engine.args.disable_custom_all_reduce" in out and "tp2 takes its value" in out
    # check counts a table's rows as the predictions written (a row is one line): two rows, both the math check's
    assert f"{f}: 1 predictions ok, 2 with errors, 2 of them in the math check only (5 tests)" in out


def test_an_own_setup_that_keeps_the_files_args_is_refused_at_the_files_line():
    # a setup: without engine.args keeps the file's (line 8); the file's own predictions would be refused there too
    text = _own("", file_arg="enforce_eager: true").replace(
        "      engine:\n        args:\n          max_model_len: 8192\n          \n",
        "      workload: {input_len: 512}\n")
    spec = loads_spec(text, file="own.yaml")
    err = spec.predictions[0].error
    assert err is not None and err.line == 8
    assert err.message == f"{EAGER_TEXT} {REFUSED_FOR_OWN}"
    assert err.hint.startswith("change or remove engine.args.enforce_eager as the line says")


def test_an_own_setup_that_clears_the_files_setting_is_not_refused():
    # its engine.args are merged over the file's, arg by arg: writing enforce_eager: false clears the file's true
    spec = loads_spec(_own("enforce_eager: false", file_arg="enforce_eager: true"), file="own.yaml")
    assert [p.error for p in spec.predictions if p.id.startswith("tpot-own")] == [None, None]


def test_an_own_setup_keeps_the_files_other_args():
    # an own setup that writes another arg (seed) keeps the file's enforce_eager: true, and is refused with it
    spec = loads_spec(_own("seed: 1", file_arg="enforce_eager: true"), file="own.yaml")
    own = [p for p in spec.predictions if p.id.startswith("tpot-own")]
    merged = {"max_model_len": 8192, "enforce_eager": True, "seed": 1}
    assert own and all(p.setup["engine"]["args"] == merged for p in own)
    assert all(p.error is not None and EAGER_TEXT in p.error.message for p in own)
