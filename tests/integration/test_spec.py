"""Loading prediction files (``pytest_roofline/spec.py``): bad input gives an error naming the file, the line
and the fix; one bad prediction does not hide the others; PyYAML's traps are refused or read as written."""

from __future__ import annotations

import textwrap

import hypothesis  # noqa: F401  (imported here once: pytester's inline runs would re-import it each time)
import pytest
from support.pytest_run import run_pytest

from pytest_roofline.errors import SpecErrors
from pytest_roofline.format.spec import Spec, SpecError, load_spec, loads_spec

HEAD = """\
hardware: h100-sxm
model: llama-3.1-8b
predictions:
"""
GOOD = """\
  - id: ridge
    quantity: ridge_point
    predicted: 295.2 FLOP/byte
"""


def items(text: str) -> str:
    """A dedented block of prediction items, indented under ``predictions:``."""
    return textwrap.indent(textwrap.dedent(text), "  ")


def load(text: str) -> Spec:
    return loads_spec(textwrap.dedent(text), file="preds.yaml")


def file_error(text: str) -> SpecError:
    with pytest.raises(SpecError) as exc:
        load(text)
    return exc.value


def the_error(spec: Spec, pid: str) -> SpecError:
    [pred] = [p for p in spec.predictions if p.id == pid]
    assert pred.error is not None, f"{pid} loaded without an error"
    return pred.error


def assert_names(err: SpecError, line: int, *words: str) -> None:
    text = str(err)
    assert err.file == "preds.yaml"
    assert err.line == line, text
    assert text.startswith(f"preds.yaml:{line}: "), text
    for w in words:
        assert w in text, (w, text)


# --------------------------------------------------------------------------------------------------------------
# the file as a whole
# --------------------------------------------------------------------------------------------------------------
def test_good_file_loads():
    spec = load(HEAD + GOOD)
    [p] = spec.predictions
    assert (p.id, p.quantity, p.line, p.error) == ("ridge", "ridge_point", 4, None)
    assert p.predicted.value == pytest.approx(295.2)
    assert p.predicted.unit == "FLOP/byte"


def test_unknown_top_level_key_with_did_you_mean():
    err = file_error("hardwre: h100-sxm\n" + HEAD + GOOD)
    assert_names(err, 1, "unknown key 'hardwre'", "did you mean 'hardware'?")
    assert "fix:" in str(err)


def test_unknown_hardware_names_its_line_and_the_fix():
    err = file_error(HEAD.replace("h100-sxm", "h100-sxmm") + GOOD)
    assert_names(err, 1, "unknown hardware 'h100-sxmm'", "h100-sxm", "fix:")


def test_unknown_model_names_its_line_and_the_fix():
    err = file_error(HEAD.replace("llama-3.1-8b", "llama-3.1-9b") + GOOD)
    assert_names(err, 2, "unknown model 'llama-3.1-9b'", "llama-3.1-8b", "fix:")


def test_yaml_that_does_not_parse():
    err = file_error(HEAD + "  - id: ridge\n    quantity: [ridge_point\n    predicted: 295.2\n")
    assert err.line == 5  # the flow sequence opened on 5 is found broken on 6: the line to fix is 5
    assert "YAML does not parse: the [ opened here (column 15) is not closed before line 6" in str(err)
    assert "fix: close it with ]" in str(err)
    err = file_error(HEAD.replace("hardware: h100-sxm", "hardware: {id: h100-sxm") + GOOD)
    assert err.line == 1 and "the { opened here" in str(err) and "close it with }" in str(err)
    err = file_error(HEAD + "  - id: ridge\n   quantity: ridge_point\n")  # no bracket: the line PyYAML names
    assert err.line in (5, 6) and "check indentation" in str(err) and "opened here" not in str(err)


def test_tab_indentation_is_a_parse_error_with_a_line():
    err = file_error(HEAD + "  - id: ridge\n\tquantity: ridge_point\n")
    assert err.line == 5 and "YAML does not parse" in str(err)


def test_empty_file_and_empty_predictions():
    assert "empty" in str(file_error(""))
    assert_names(file_error(HEAD.replace("predictions:\n", "predictions: []\n")), 3, "predictions is empty")


def test_missing_required_top_level_key():
    err = file_error("model: llama-3.1-8b\npredictions:\n" + GOOD)
    assert "missing required key 'hardware'" in str(err) and "fix:" in str(err)


def test_a_bad_setup_field_is_a_file_error_at_its_line():
    err = file_error(HEAD.replace("predictions:", "sweep: {concurrency: [1, 0]}\npredictions:") + GOOD)
    assert_names(err, 3, "sweep.concurrency")


# --------------------------------------------------------------------------------------------------------------
# one prediction
# --------------------------------------------------------------------------------------------------------------
def test_unknown_prediction_key_with_did_you_mean_and_the_others_load():
    spec = load(HEAD + GOOD + "  - id: typo\n    quantity: ridge_point\n    predicted: 295.2\n    tolerence: ±5%\n")
    err = the_error(spec, "typo")  # the error test keeps the prediction's own id
    assert_names(err, 10, "unknown key 'tolerence'", "did you mean 'tolerance'")
    assert [p.id for p in spec.predictions if p.error is None] == ["ridge"]


def test_unknown_quantity_with_did_you_mean():
    spec = load(HEAD + "  - id: q\n    quantity: ridge_pont\n    predicted: 295.2\n")
    assert_names(the_error(spec, "q"), 5, "unknown quantity 'ridge_pont'", "did you mean 'ridge_point'",
                 "roofline quantities")


def test_tolerance_that_does_not_parse():
    spec = load(HEAD + "  - id: q\n    quantity: ridge_point\n    predicted: 295.2\n    tolerance: about 5\n")
    err = the_error(spec, "q")
    assert_names(err, 7, "tolerance 'about 5' does not parse", "fix:", "±10%")
    assert str(err).count("±10%, +5%/-20%") == 1  # the forms once, on the fix line


def test_a_bare_number_as_a_default_tolerance_says_to_write_it_as_a_percentage():
    err = file_error(HEAD.replace("predictions:", "defaults: {tolerance: 15}\npredictions:") + GOOD)
    assert_names(err, 3, "defaults.tolerance: '15' is a bare number", "fix: write ±15% (relative)")


def test_a_unit_that_does_not_fit_the_quantity():
    spec = load(HEAD + "  - id: q\n    quantity: output_throughput\n    at: {batch: 16}\n    predicted: 5 GiB\n")
    assert_names(the_error(spec, "q"), 7, "unit 'GiB' does not fit a throughput quantity", "fix:", "tok/s")


def test_a_tolerance_unit_that_does_not_fit_the_quantity():
    spec = load(HEAD + "  - id: q\n    quantity: t_mem\n    at: {batch: 1}\n    predicted: 4.8 ms\n"
                       "    tolerance: ±1 GiB\n")
    assert_names(the_error(spec, "q"), 8, "GiB", "time")


def test_duplicate_ids():
    spec = load(HEAD + GOOD + GOOD)
    first, second = spec.predictions
    assert first.error is None
    assert_names(second.error, 7, "'ridge' is used twice", "first on line 4", "unique")


def test_an_at_parameter_the_quantity_does_not_take():
    spec = load(HEAD + "  - id: q\n    quantity: ridge_point\n    at: {batch: 4}\n    predicted: 295.2\n")
    assert_names(the_error(spec, "q"), 6, "takes no at-parameter 'batch'", "it takes: dtype")


def test_an_at_parameter_typo_gets_did_you_mean():
    spec = load(HEAD + "  - id: q\n    quantity: t_mem\n    at: {btach: 4}\n    predicted: 4.8 ms\n")
    assert_names(the_error(spec, "q"), 6, "'btach'", "did you mean 'batch'")


def test_every_without_a_sweep():
    spec = load(HEAD + "  - id: ll\n    quantity: littles_law_ratio\n    at: {concurrency: every}\n"
                       "    predicted: 1.00\n")
    assert_names(the_error(spec, "ll"), 6, "every", "sweep", "fix: add sweep:")


def test_a_quantity_that_needs_an_at_parameter():
    spec = load(HEAD + "  - id: q\n    quantity: kv_pool_sequences\n    predicted: 240\n")
    err = the_error(spec, "q")
    assert "needs at: {pool: ...}" in str(err) and "fix:" in str(err)


def test_a_bad_xfail_mode():
    spec = load(HEAD + GOOD + "    xfail: {reason: x, mode: sometimes}\n")
    assert_names(the_error(spec, "ridge"), 7, "'sometimes' is not one of math, measured, both")


def test_an_id_with_spaces():
    spec = load(HEAD + "  - id: my ridge\n    quantity: ridge_point\n    predicted: 295.2\n")
    assert_names(spec.predictions[0].error, 4, "may only contain", "throughput-c64")


def test_a_bad_table_row_is_its_own_error_and_the_other_rows_load():
    spec = load(HEAD + items("""\
      - id: t
        table:
          at: batch
          quantities: [t_mem, t_comp]
          rows:
            - [1, 4.83 ms, 0.02 ms]
            - [2, 5 GiB, 0.03 ms]
            - [4, 4.99 ms]
    """))
    by_line = {p.line: p for p in spec.predictions}
    good = [p for p in spec.predictions if p.error is None]
    assert [p.id for p in good] == ["t[batch=1:t_mem]", "t[batch=1:t_comp]"]
    assert_names(by_line[10].error, 10, "row batch=2 t_mem", "unit 'GiB' does not fit a time quantity")
    assert_names(by_line[11].error, 11, "each row needs 3 cells")


# --------------------------------------------------------------------------------------------------------------
# PyYAML's traps: the raw text is read, never safe_load's guess
# --------------------------------------------------------------------------------------------------------------
def test_1e3_is_the_number_1000_not_a_string():
    # safe_load (YAML 1.1) reads 1e3 as the *string* '1e3'; the loader must read the number
    spec = load(HEAD + "  - id: q\n    quantity: t_mem\n    at: {batch: 1e3}\n    predicted: 1e3 ms\n")
    [p] = spec.predictions
    assert p.error is None
    assert p.at == {"batch": 1000}
    assert p.predicted.kind == "number"
    assert p.predicted.value == pytest.approx(1.0)  # 1e3 ms = 1 s


def test_1e3_predicted_bare():
    spec = load(HEAD + "  - id: q\n    quantity: param_count\n    predicted: 8e9\n")
    assert spec.predictions[0].predicted.value == 8e9


def test_trailing_zero_keeps_its_precision():
    spec = load(HEAD + "  - id: q\n    quantity: t_mem\n    at: {batch: 1}\n    predicted: 4.80 ms\n")
    p = spec.predictions[0].predicted
    assert p.text == "4.80 ms"
    assert p.half_ulp_si == pytest.approx(0.005e-3)  # safe_load would give the float 4.8: ±0.05


def test_workload_numbers_with_exponents():
    spec = load(HEAD.replace("predictions:", "workload:\n  input_len: 1e3\n  kv_context: 1,024\npredictions:") + GOOD)
    assert spec.workload == {"input_len": 1000, "kv_context": 1024}


@pytest.mark.parametrize("word", ["on", "yes", "off", "no", "On", "YES"])
def test_strict_written_as_a_yaml11_boolean_word_is_rejected(word):
    spec = load(HEAD + GOOD + f"    xfail: {{reason: x, strict: {word}}}\n")
    assert_names(the_error(spec, "ridge"), 7, f"'{word}' is ambiguous", "write true or false")


def test_xfail_strict_default_written_yes_is_a_file_error():
    err = file_error(HEAD.replace("predictions:", "defaults: {xfail_strict: yes}\npredictions:") + GOOD)
    assert_names(err, 3, "'yes' is ambiguous", "write true or false")


def test_engine_arg_written_on_is_rejected():
    err = file_error(HEAD.replace("predictions:", "engine: {args: {enforce_eager: on}}\npredictions:") + GOOD)
    assert_names(err, 3, "'on' is ambiguous", "write true or false")


def test_a_boolean_quantity_predicted_yes_is_rejected():
    spec = load(HEAD + "  - id: q\n    quantity: kv_pool_fits\n    at: {pool: 30 GiB, batch: 128}\n"
                       "    predicted: yes\n")
    assert_names(the_error(spec, "q"), 7, "'yes'", "write true or false")


def test_a_number_predicted_on_is_rejected():
    spec = load(HEAD + "  - id: q\n    quantity: ridge_point\n    predicted: on\n")
    assert_names(the_error(spec, "q"), 6, "'on' is not a number")


def test_true_and_false_are_accepted():
    spec = load(HEAD + GOOD + "    xfail: {reason: x, strict: false}\n"
                + "  - id: fits\n    quantity: kv_pool_fits\n    at: {pool: 30 GiB, batch: 128}\n    predicted: true\n")
    ridge, fits = spec.predictions
    assert ridge.error is None and ridge.xfail.strict is False
    assert fits.error is None and fits.predicted.value is True


def test_quoted_words_stay_strings_in_free_form_sections():
    spec = load(HEAD.replace("predictions:", "engine: {env: {FLAG: 'on'}, args: {enforce_eager: true}}\n"
                                              "predictions:") + GOOD)
    assert spec.engine["env"] == {"FLAG": "on"}
    assert spec.engine["args"] == {"enforce_eager": True}


# --------------------------------------------------------------------------------------------------------------
# expansion and defaults
# --------------------------------------------------------------------------------------------------------------
def test_every_expands_over_the_swept_concurrencies():
    spec = load(HEAD.replace("predictions:", "sweep: {concurrency: [1, 4, 16]}\npredictions:")
                + "  - id: ll\n    quantity: littles_law_ratio\n    at: {concurrency: every}\n    predicted: 1.00\n")
    assert [p.id for p in spec.predictions] == ["ll[concurrency=1]", "ll[concurrency=4]", "ll[concurrency=16]"]
    assert [p.at["concurrency"] for p in spec.predictions] == [1, 4, 16]
    assert {p.line for p in spec.predictions} == {5}


def test_a_list_of_at_values_expands():
    spec = load(HEAD + "  - id: b\n    quantity: decode_bound\n    at: {batch: [1, 256]}\n    predicted: memory\n")
    assert [p.id for p in spec.predictions] == ["b[batch=1]", "b[batch=256]"]


def test_xfail_as_a_string_is_strict_in_both_modes():
    spec = load(HEAD + GOOD + "    xfail: the lesson rounds it\n")
    x = spec.predictions[0].xfail
    assert (x.reason, x.strict, x.mode) == ("the lesson rounds it", True, "both")
    assert x.applies("math") and x.applies("measured")


def test_xfail_mode_measured_does_not_apply_to_math():
    spec = load(HEAD + GOOD + "    xfail: {reason: x, mode: measured}\n")
    x = spec.predictions[0].xfail
    assert x.applies("measured") and not x.applies("math")


def test_file_defaults():
    spec = load(HEAD.replace("predictions:", "defaults: {tolerance: ±15%, math_tolerance: ±0.5%, "
                                              "xfail_strict: false}\npredictions:") + GOOD)
    assert spec.default_tolerance.rel_lo == pytest.approx(0.15)
    assert spec.default_math_tolerance.rel_hi == pytest.approx(0.005)
    assert spec.xfail_strict is False
    assert spec.predictions[0].tolerance.rel_lo == pytest.approx(0.15)


def test_a_default_tolerance_must_be_relative():
    err = file_error(HEAD.replace("predictions:", "defaults: {tolerance: ±3}\npredictions:") + GOOD)
    assert_names(err, 3, "must be relative", "±10%")


def test_shipped_files_load_without_errors():
    from pathlib import Path

    from pytest_roofline.format.spec import load_spec

    root = Path(__file__).resolve().parents[2] / "predictions"
    for name in ("day3.yaml", "batching-and-throughput.yaml"):
        spec = load_spec(root / name)
        assert [str(p.error) for p in spec.predictions if p.error] == []
        ids = [p.id for p in spec.predictions]
        assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------------------------------------------
# the same, through pytest
# --------------------------------------------------------------------------------------------------------------
def test_one_bad_prediction_is_its_own_error_and_the_rest_pass(pytester):
    pytester.makefile(".roofline.yaml", preds=HEAD + GOOD + items("""\
      - id: typo
        quantity: ridge_pont
        predicted: 295.2
      - id: ridge-a100
        quantity: ridge_point
        setup: {hardware: a100-sxm4-80gb}
        predicted: 153.0
    """))
    result = run_pytest(pytester, "-rE")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*preds.roofline.yaml:8: unknown quantity 'ridge_pont'*",
        "*fix: did you mean 'ridge_point'?*",
        "ERROR preds.roofline.yaml::typo*",
    ])


def test_a_whole_file_error_is_a_collection_error_naming_file_and_line(pytester):
    pytester.makefile(".roofline.yaml", preds=HEAD.replace("h100-sxm", "h100-sxmm") + GOOD)
    pytester.makefile(".roofline.yaml", other=HEAD + GOOD)
    result = run_pytest(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR collecting preds.roofline.yaml*",
        "*preds.roofline.yaml:1: unknown hardware 'h100-sxmm'*",
        "*fix: `roofline hardware`*",
    ])


def test_yaml_syntax_error_through_pytest(pytester):
    pytester.makefile(".roofline.yaml", preds=HEAD + "  - id: ridge\n    quantity: [ridge_point\n    predicted: 1\n")
    result = run_pytest(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*preds.roofline.yaml:5: YAML does not parse: the [ opened here*"])


def test_a_count_written_with_a_multiplier_gets_both_readings_as_the_fix(tmp_path):
    # 2k tokens: 2 x 1,000 = 2,000, or 2 x 1,024 = 2,048 if the writer meant a power of 2 (the review's trap was a
    # "fix" that said "write 2k")
    f = tmp_path / "p.yaml"
    f.write_text("hardware: h100-sxm\nmodel: llama-3.1-8b\nworkload: {input_len: 1024, output_len: 128, "
                 "kv_context: 2k}\npredictions:\n  - {id: a, quantity: kv_bytes_per_token, predicted: 131072 B}\n")
    with pytest.raises(SpecError) as exc:
        load_spec(f)
    text = str(exc.value)
    assert "p.yaml:3" in text and "2,000" in text and "2,048" in text and "write 2k" not in text


def test_an_unquoted_engine_version_is_refused_as_the_schema_does(tmp_path):
    # YAML reads an unquoted 0.10 as the float 0.1, and the JSON Schema (engine.version: string) refuses a number
    f = tmp_path / "p.yaml"
    f.write_text("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine: {name: vllm, version: 0.10}\n"
                 "predictions:\n  - {id: a, quantity: kv_bytes_per_token, predicted: 131072 B}\n")
    with pytest.raises(SpecError) as exc:
        load_spec(f)
    assert "p.yaml:3" in str(exc.value) and 'version: "0.10"' in str(exc.value)


def test_a_duplicate_id_with_an_error_of_its_own_reports_both():
    """Trial s25a #7: the duplicate that also had a bad unit showed only the unit; its id was found next run."""
    spec = load(HEAD + GOOD + "  - id: ridge\n    quantity: param_count\n    predicted: 14.8B\n")
    second = spec.predictions[1]
    assert isinstance(second.error, SpecErrors) and len(second.error.errors) == 2
    text = str(second.error)
    assert "unit 'B' does not fit a count quantity" in text and "'ridge' is used twice" in text


def test_an_engine_arg_typo_is_named_beside_the_other_sections_errors():
    """Trial s25a #14: a workload and a defaults error hid a typo in engine.args until they were fixed (three rounds
    of `roofline check` for three typos)."""
    text = ("hardware: h100-sxm\nmodel: qwen3-8b\nengine: {name: vllm, args: {gpu_memory_utilisation: 0.9}}\n"
            "workload: {input_len: 1k, output_len: 256}\ndefaults: {tolerance: 15}\npredictions:\n"
            "  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte}\n")
    with pytest.raises(SpecErrors) as err:
        loads_spec(text)
    lines = sorted((e.line, e.message.split(":")[0]) for e in err.value.errors)
    assert lines == [(3, "setup does not resolve"), (4, "workload.input_len"), (5, "defaults.tolerance")]
    assert "did you mean 'gpu_memory_utilization'" in str(err.value)


def test_a_max_model_len_above_the_models_is_refused_at_its_line():
    """Trial s25c #9: 8,192 over the tiny model's max_position_embeddings 4,096 passed the check and the math, and
    vLLM refused it after a full engine start; VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is vLLM's own way past it."""
    text = ("hardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n  cpu_kvcache_space: 1 GiB\n"
            "  args: {max_model_len: 8192}\npredictions:\n"
            "  - {id: b, quantity: kv_bytes_per_token, predicted: 512 B}\n")
    with pytest.raises(SpecError) as err:
        loads_spec(text)
    assert err.value.line == 6 and "above the model's max_position_embeddings 4,096" in err.value.message
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in err.value.hint
    allowed = text.replace("  args:", "  env: {VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1'}\n  args:")
    assert loads_spec(allowed).predictions[0].error is None
    assert loads_spec(text.replace("8192", "4096")).predictions[0].error is None


def test_llama3_rope_scaling_does_not_lengthen_the_limit():
    """Trial s25d #4: vLLM applies no rope_scaling factor of kind llama3 to the limit (vllm/config/model.py), so
    Llama-3.1-8B at 200,000 over its 131,072 is refused as vLLM refuses it; at 131,072 it is not."""
    text = ("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine: {name: vllm, args: {max_model_len: 200000}}\n"
            "predictions:\n  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte}\n")
    with pytest.raises(SpecError, match="above the model's max_position_embeddings 131,072"):
        loads_spec(text)
    assert loads_spec(text.replace("200000", "131072")).predictions[0].error is None


def test_an_engine_arg_typo_is_named_beside_an_arg_written_twice():
    """Trial s25d #3: an arg written twice fails the engine section's read, which hid a did-you-mean typo in the same
    args: until it was fixed."""
    text = ("hardware: h100-sxm\nmodel: qwen3-8b\nengine: {name: vllm, args: {gpu_memory_utilisation: 0.9, "
            "max_model_len: 4096, max-model-len: 4096}}\npredictions:\n"
            "  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte}\n")
    with pytest.raises(SpecErrors) as err:
        loads_spec(text)
    text = str(err.value)
    assert "max-model-len is engine.args.max_model_len again" in text
    assert "did you mean 'gpu_memory_utilization'" in text and text.count("again") == 1
