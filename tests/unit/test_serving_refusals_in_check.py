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
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from pytest_roofline import cli
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
    assert "tpot-c16 takes its value, model_column: serving" in text
    assert "::" not in text  # the pipeline message said "workload:: pipeline_parallel_size=2"


def test_with_the_roofline_column_and_ink_in_numbers_nothing_is_refused():
    # tpot_p50 in ink with the default column: the math check skips it (no roofline value), a run measures it
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
