"""Every bad input is a clear error, in bounded time: the prediction-file and CLI cases of issue 8.

Each test reproduces one input of the reliability probe (bad bytes, alias bombs, deep nesting, ``1e999``, a
200k-character value, an ``at:`` of 216,000 tests, impossible setup values, the CLI on odd paths) and checks
the outcome the issue asks for: a :class:`SpecError` naming the file, the line and the fix (or a one-line CLI
error with exit status 1 or 2), never a traceback, a hang or a PASS of a value that cannot exist.
"""

from __future__ import annotations

import codecs
import textwrap
import time
import tracemalloc
from pathlib import Path

import hypothesis  # noqa: F401  (imported here once: pytester's inline runs would re-import it each time)
import pytest
from support.pytest_run import run_pytest

from pytest_roofline import cli
from pytest_roofline.errors import RooflineError, SetupError, SetupValueError, SpecError, UnitError
from pytest_roofline.format.limits import DEFAULT_LIMITS, MAX_DEPTH, Limits
from pytest_roofline.format.spec import Spec, load_spec, loads_spec
from pytest_roofline.model.setup import build_setup
from pytest_roofline.report.terminal import summary_table
from pytest_roofline.units import parse_value

HEAD = "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\n"
# a prediction that passes the math check: the A100 SXM4's ridge point, 312 TFLOP/s ÷ 2.039 TB/s = 153.0 FLOP/byte
GOOD = "  - id: good\n    quantity: ridge_point\n    predicted: 153 FLOP/byte\n"


def preds(*items: str) -> str:
    return "predictions:\n" + GOOD + "".join(items)


def item(pid: str, quantity: str, predicted: str, extra: str = "") -> str:
    return f"  - id: {pid}\n    quantity: {quantity}\n    predicted: {predicted}\n" + extra


def load(text: str, **kw) -> Spec:
    return loads_spec(text, file="p.yaml", **kw)


def file_error(text: str, **kw) -> SpecError:
    with pytest.raises(SpecError) as exc:
        load(text, **kw)
    return exc.value


def pred_error(spec: Spec, pid: str) -> SpecError:
    [p] = [p for p in spec.predictions if p.id == pid]
    assert p.error is not None, f"{pid} loaded without an error"
    return p.error


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line containing ``needle`` (worked out from the text, not the loader)."""
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


def assert_at(err: SpecError, line: int, *words: str) -> None:
    text = str(err)
    assert err.line == line, text
    assert text.startswith(f"p.yaml:{line}: "), text
    assert "fix:" in text, text
    for w in words:
        assert w in text, (w, text)


def bounded(fn, *, seconds: float = 10.0, megabytes: float = 200.0):
    """Run ``fn``; fail when it takes longer or allocates more than the bound (a hang or a runaway). The time is
    this process's CPU time, not the wall clock: a hang guard must not trip because other jobs share the cores."""
    tracemalloc.start()
    t0 = time.process_time()
    try:
        return fn()
    finally:
        elapsed = time.process_time() - t0
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert elapsed < seconds, f"took {elapsed:.1f} s of CPU"
        assert peak < megabytes * 2**20, f"peaked at {peak / 2**20:.0f} MB"


# ----------------------------------------------------------------------------------------------------------------
# bytes: encodings, BOMs, control characters
# ----------------------------------------------------------------------------------------------------------------
def test_non_utf8_byte_names_its_line_and_column(tmp_path):
    text = HEAD + preds(item("latin", "max_num_seqs", "256", "    notes: caf\xe9\n"))
    p = tmp_path / "p.yaml"
    p.write_bytes(text.encode("latin-1"))
    with pytest.raises(SpecError) as exc:
        load_spec(p)
    line = line_of(text, "caf")
    assert exc.value.line == line
    assert f"{p}:{line}: byte 0xe9 at column {len('    notes: caf') + 1} is not UTF-8" in str(exc.value)
    assert "save the file as UTF-8" in str(exc.value)


@pytest.mark.parametrize("bom, name", [(codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"),
                                       (codecs.BOM_UTF32_LE, "UTF-32")])
def test_utf16_and_utf32_files_are_refused_at_line_1(tmp_path, bom, name):
    codec = {codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be",
             codecs.BOM_UTF32_LE: "utf-32-le"}[bom]
    p = tmp_path / "p.yaml"
    p.write_bytes(bom + (HEAD + preds()).encode(codec))
    with pytest.raises(SpecError) as exc:
        load_spec(p)
    assert exc.value.line == 1
    assert f"the file is {name}" in str(exc.value) and "save it as UTF-8" in str(exc.value)


def test_utf8_bom_is_read_as_the_file_without_it(tmp_path):
    # YAML 1.2 (section 5.2) allows a byte-order mark at the start of a stream; editors on Windows write one
    text = HEAD + preds(item("m", "max_num_seqs", "256"))
    with_bom, without = tmp_path / "bom.yaml", tmp_path / "plain.yaml"
    with_bom.write_bytes(codecs.BOM_UTF8 + text.encode())
    without.write_bytes(text.encode())
    a, b = load_spec(with_bom), load_spec(without)
    assert [(p.id, p.predicted, p.line) for p in a.predictions] == [(p.id, p.predicted, p.line) for p in b.predictions]
    assert a.hardware == "a100-sxm4-80gb"


@pytest.mark.parametrize("char, name", [("\x00", "a NUL byte"), ("\x07", "a BEL character"),
                                        ("\x1b", "an ESC character"), ("\x01", "a control character")])
def test_control_characters_name_line_and_column(char, name):
    text = HEAD + preds(item("m", "max_num_seqs", "256", f"    notes: a{char}b\n"))
    err = file_error(text)
    assert_at(err, line_of(text, "notes:"), f"{name} (U+{ord(char):04X}) at column {len('    notes: a') + 1}")


# ----------------------------------------------------------------------------------------------------------------
# structure: recursive aliases, deep nesting, alias bombs
# ----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", ["&a {x: *a}", "&a [*a]", "&a {x: [1, {y: *a}]}"])
def test_recursive_alias_is_refused_at_the_alias(args):
    text = HEAD + "engine:\n  args:\n    nested: " + args + "\n" + preds()
    err = file_error(text)
    assert_at(err, line_of(text, "nested:"), "alias *a is inside its own anchor &a")


def test_ten_thousand_deep_nesting_is_refused_not_a_recursion_error():
    text = HEAD + "engine:\n  args:\n    deep: " + "[" * 10_000 + "]" * 10_000 + "\n" + preds()
    err = bounded(lambda: file_error(text))
    assert_at(err, line_of(text, "deep:"), f"nest more than {MAX_DEPTH} levels")


def test_nesting_at_the_depth_limit_loads():
    # the file's own mapping, engine, args and the value itself: 3 levels before the value's lists
    depth = MAX_DEPTH - 3
    # (served_model_name: an engine arg without a timing effect, so the setup takes any value there)
    text = HEAD + "engine:\n  args:\n    served_model_name: " + "[" * depth + "]" * depth + "\n" + preds()
    assert load(text).engine["args"]["served_model_name"] is not None


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    # a list under an engine arg without a timing effect (the setup takes any value there), one level a line
    lines = ["engine:", "  args:", "    served_model_name:", "      - &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"      - &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return HEAD + "\n".join(lines) + "\n" + preds()


def test_billion_laughs_is_counted_not_expanded():
    text = billion_laughs()
    err = bounded(lambda: file_error(text), seconds=5, megabytes=50)
    # level i holds 1 + 9 * (size of level i-1) nodes, level 0 holds 1 + 9: the first over 1,000,000 is level 6
    sizes = [10]
    while sizes[-1] <= DEFAULT_LIMITS.max_yaml_nodes:
        sizes.append(1 + 9 * sizes[-1])
    assert_at(err, line_of(text, f"&l{len(sizes) - 1} ["), "max_yaml_nodes (1,000,000)", f"({sizes[-1]:,};",
              "roofline_max_yaml_nodes")


def test_max_yaml_nodes_can_be_raised():
    text = billion_laughs(levels=3, width=9)  # levels of 10, 91 and 820 nodes
    err = file_error(text, limits=Limits(max_yaml_nodes=500))
    assert_at(err, line_of(text, "&l2 ["), "max_yaml_nodes (500)", "(820;")
    spec = load(text, limits=Limits(max_yaml_nodes=2_000))
    levels = spec.engine["args"]["served_model_name"]
    assert len(levels[2]) == 9 and len(levels[2][0]) == 9


# ----------------------------------------------------------------------------------------------------------------
# numbers: overflow, length
# ----------------------------------------------------------------------------------------------------------------
def test_1e999_predicted_errors_only_that_prediction():
    text = HEAD + preds(item("huge", "max_num_seqs", "1e999"))
    spec = load(text)
    assert_at(pred_error(spec, "huge"), line_of(text, "1e999"), "'1e999' is too large for a number")
    assert next(p for p in spec.predictions if p.id == "good").error is None


def test_1e999_tolerance_is_a_clear_error():
    text = HEAD + preds(item("tol", "max_num_seqs", "256", "    tolerance: ±1e999\n"))
    assert_at(pred_error(load(text), "tol"), line_of(text, "±1e999"), "too large for a number")


@pytest.mark.parametrize("text", ["1e999", "-1e999", "1e99999999999999", "1" * 400 + "e300", "1e308 GiB",
                                  "0e999"])  # 0e999: zero, but its last digit would claim a precision of ±inf
def test_overflowing_numbers_are_unit_errors(text):
    with pytest.raises(UnitError, match="too large|outside the range"):
        parse_value(text, "bytes")


def test_a_400_digit_value_is_a_clear_error():
    text = HEAD + preds(item("digits", "max_num_seqs", "1" * 400))  # 1.1e399: beyond a float's 1.8e308
    assert_at(pred_error(load(text), "digits"), line_of(text, "1" * 400), "too large for a number")


def test_a_300_digit_value_reads_exactly_as_python_does():
    digits = "1" * 300
    assert parse_value(digits, "count").si == float(digits)


def test_200k_character_value_is_refused_by_length_in_bounded_time():
    text = HEAD + preds(item("long", "max_num_seqs", "1x" + " " * 200_000 + "y"))
    spec = bounded(lambda: load(text), seconds=5)
    err = pred_error(spec, "long")
    assert_at(err, line_of(text, "1x "), "200,003 characters", "max_value_length (1,000)",
              "roofline_max_value_length")
    assert len(str(err)) < 500  # the message does not echo the value


def test_number_parser_is_linear_in_the_length():
    # the old `(?P<unit>.*?)\s*$` took 3.1 s at 16k characters and grew with the square; 2M characters here
    bounded(lambda: pytest.raises(UnitError, parse_value, "1x" + " " * 2_000_000 + "y", "ratio"), seconds=5)


def test_max_value_length_can_be_raised():
    value = "2" + "0" * 1_100 + "e-1000 ms"  # 1,110 characters, = 200 ms
    text = HEAD + preds(item("long", "max_num_seqs", value))
    assert "max_value_length" in str(pred_error(load(text), "long"))
    spec = load(text, limits=Limits(max_value_length=2_000))
    err = pred_error(spec, "long")
    assert "max_value_length" not in str(err)  # now read, and refused for what it is: a time for a count
    assert "does not fit" in str(err)


# ----------------------------------------------------------------------------------------------------------------
# expansion: at: products, tests per file
# ----------------------------------------------------------------------------------------------------------------
def test_at_of_216000_tests_is_refused_before_expanding():
    values = "[" + ", ".join(str(i) for i in range(1, 61)) + "]"
    text = HEAD + preds(item("grid", "t_mem", "5 ms",
                             f"    at: {{batch: {values}, concurrency: {values}, context: {values}}}\n"))
    spec = bounded(lambda: load(text), seconds=5, megabytes=50)
    assert_at(pred_error(spec, "grid"), line_of(text, "at:"), "216,000 tests",
              "(60 batch × 60 concurrency × 60 context)", "max_tests_per_prediction (1,000)",
              "roofline_max_tests_per_prediction")
    assert [p.id for p in spec.predictions] == ["good", "grid"]


def test_max_tests_per_prediction_can_be_raised():
    text = HEAD + preds(item("grid", "t_mem", "5 ms", "    at: {batch: [1, 2, 4], context: [100, 200, 300]}\n"))
    assert "9 tests (3 batch × 3 context)" in str(pred_error(load(text, limits=Limits(max_tests_per_prediction=8)),
                                                            "grid"))
    spec = load(text, limits=Limits(max_tests_per_prediction=9))
    assert len([p for p in spec.predictions if p.id.startswith("grid[")]) == 9


def test_max_tests_per_file():
    text = HEAD + preds(*(item(f"m{i}", "max_num_seqs", "256") for i in range(4)))  # 5 tests with `good`
    err = file_error(text, limits=Limits(max_tests_per_file=4))
    assert_at(err, line_of(text, "id: m3"), "max_tests_per_file (4)", "roofline_max_tests_per_file")
    assert len(load(text, limits=Limits(max_tests_per_file=5)).predictions) == 5


# ----------------------------------------------------------------------------------------------------------------
# impossible setup values, refused at their line
# ----------------------------------------------------------------------------------------------------------------
def block(section: str) -> str:
    return HEAD + textwrap.dedent(section) + preds(item("kv", "kv_bytes_per_seq", "-151 MB"))


@pytest.mark.parametrize("section, needle, words", [
    ("workload:\n  output_len: 1024\n  input_len: -1024\n", "input_len", ["workload.input_len: -1024", ">= 1"]),
    ("workload:\n  output_len: 0\n", "output_len", ["workload.output_len: 0", ">= 1"]),
    ("workload:\n  kv_context: -5\n", "kv_context", ["workload.kv_context", "> 0"]),
    ("workload:\n  input_len: 100\n  shared_prefix_len: 200\n", "shared_prefix_len", ["longer than the prompt"]),
    ("engine:\n  args:\n    gpu_memory_utilization: -0.9\n", "gpu_memory_utilization", ["-0.9", "> 0 and <= 1"]),
    ("engine:\n  args:\n    gpu_memory_utilization: 1.5\n", "gpu_memory_utilization", ["1.5", "> 0 and <= 1"]),
    ("engine:\n  args:\n    gpu_memory_utilization: 0\n", "gpu_memory_utilization", ["> 0 and <= 1"]),
    ("engine:\n  args:\n    max_num_seqs: 0\n", "max_num_seqs", ["engine.args.max_num_seqs"]),
    ("engine:\n  args:\n    block_size: fast\n", "block_size", ["expected a number", "'fast'"]),
    ("engine:\n  version: 2024-01-01\n", "version", ["not a vLLM version: '2024-01-01'"]),
    ("engine:\n  args:\n    max_model_len: .nan\n", "max_model_len", ["max_model_len"]),
])
def test_impossible_setup_value_is_refused_at_its_line(section, needle, words):
    text = block(section)
    err = file_error(text)  # the whole file: no prediction (the "-151 MB" one included) can pass
    assert_at(err, line_of(text, needle), *words)


@pytest.mark.parametrize("value, words", [(".nan", "'.nan' is not a number"), ("0", "positive"),
                                          ("fast", "'fast' is not a number")])
def test_bad_hardware_override_names_its_line(value, words):
    text = ("model: qwen3-8b\nhardware:\n  id: a100-sxm4-80gb\n  hbm_bytes_per_s: " + value + "\n"
            + preds())
    assert_at(file_error(text), line_of(text, "hbm_bytes_per_s"), words)


def test_model_that_is_not_a_config_names_its_line():
    text = "hardware: a100-sxm4-80gb\nmodel: /dev/zero\n" + preds()
    assert_at(file_error(text), 2, "/dev/zero")


def test_gpu_memory_utilization_of_one_is_allowed():
    spec = load(block("engine:\n  args:\n    gpu_memory_utilization: 1.0\n"))
    assert spec.engine["args"]["gpu_memory_utilization"] == 1.0


def test_impossible_value_in_a_prediction_setup_errors_that_prediction_at_its_line():
    text = HEAD + preds(item("neg", "kv_bytes_per_seq", "-151 MB",
                             "    setup:\n      workload:\n        input_len: -1024\n"))
    spec = load(text)
    assert_at(pred_error(spec, "neg"), line_of(text, "input_len"), "workload.input_len: -1024")
    assert next(p for p in spec.predictions if p.id == "good").error is None


@pytest.mark.parametrize("kw, field", [
    ({"workload": {"input_len": -1024}}, "workload.input_len"),
    ({"engine": {"args": {"gpu_memory_utilization": -0.9}}}, "engine.args.gpu_memory_utilization"),
    ({"engine": {"version": "2024-01-01"}}, "engine.version"),
    ({"engine": {"args": {"tensor_parallel_size": 1.5}}}, "engine.args.tensor_parallel_size"),
])
def test_build_setup_names_the_field(kw, field):
    with pytest.raises(SetupValueError) as exc:
        build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b", **kw)
    assert exc.value.field == field and isinstance(exc.value, SetupError)
    assert str(exc.value).startswith(field)


# ----------------------------------------------------------------------------------------------------------------
# the terminal table lists errored predictions
# ----------------------------------------------------------------------------------------------------------------
class _Report:
    def __init__(self, roofline: dict, outcome: str, when: str):
        self.roofline, self.outcome, self.when = roofline, outcome, when
        self.failed, self.skipped = outcome == "failed", outcome == "skipped"


def test_summary_table_shows_an_error_row_with_its_message():
    bad = {"id": "typo", "quantity": "?", "status": "error", "mode": "math",
           "reason": "p.yaml:8: unknown quantity 'ridge_pont'\n    fix: did you mean 'ridge_point'?"}
    lines = summary_table([_Report(bad, "failed", "setup")], width=120)
    [row] = [ln for ln in lines if ln.startswith("typo")]
    assert "unknown quantity 'ridge_pont'" in row and row.rstrip().endswith("ERROR")
    assert "p.yaml:8" not in row
    assert lines[-1] == "1 error"


# ----------------------------------------------------------------------------------------------------------------
# through pytest: the message alone, and the row
# ----------------------------------------------------------------------------------------------------------------
def test_bad_prediction_errors_with_the_message_alone_and_appears_in_the_table(pytester):
    text = HEAD + preds(item("typo", "ridge_pont", "5"), item("huge", "max_num_seqs", "1e999"))
    (pytester.path / "predictions").mkdir()
    (pytester.path / "predictions" / "p.yaml").write_text(text)
    result = run_pytest(pytester, "-rE")
    result.assert_outcomes(passed=1, errors=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "collect.py" not in out and "def setup" not in out, out
    assert f"p.yaml:{line_of(text, 'ridge_pont')}: unknown quantity 'ridge_pont'" in out
    table = out.split("roofline predictions")[1]
    rows = {ln.split()[0]: ln for ln in table.splitlines() if ln.split() and ln.split()[0] in ("good", "typo", "huge")}
    assert rows["good"].rstrip().endswith("PASS")
    assert rows["typo"].rstrip().endswith("ERROR") and "unknown quantity" in rows["typo"]
    assert rows["huge"].rstrip().endswith("ERROR")
    assert "1 pass, 2 error" in table or "2 error, 1 pass" in table


def test_negative_input_len_never_passes_through_pytest(pytester):
    (pytester.path / "predictions").mkdir()
    (pytester.path / "predictions" / "p.yaml").write_text(block("workload:\n  input_len: -1024\n"))
    result = run_pytest(pytester)
    result.assert_outcomes(errors=1)
    assert "workload.input_len: -1024 is impossible" in result.stdout.str()
    assert "passed" not in result.stdout.lines[-1]


def test_ini_option_raises_a_limit(pytester):
    (pytester.path / "predictions").mkdir()
    (pytester.path / "predictions" / "p.yaml").write_text(
        HEAD + preds(item("grid", "t_mem", "5 ms", "    at: {batch: [1, 2, 4], context: [100, 200, 300]}\n")))
    pytester.makeini("[pytest]\nroofline_max_tests_per_prediction = 8\n")
    result = run_pytest(pytester)
    result.assert_outcomes(passed=1, errors=1)
    assert "max_tests_per_prediction (8)" in result.stdout.str()
    pytester.makeini("[pytest]\nroofline_max_tests_per_prediction = 9\n")
    run_pytest(pytester).assert_outcomes(passed=1, failed=9)  # 5 ms is not t_mem: they run, and fail


def test_bad_ini_limit_is_a_usage_error(pytester):
    (pytester.path / "predictions").mkdir()
    (pytester.path / "predictions" / "p.yaml").write_text(HEAD + preds())
    pytester.makeini("[pytest]\nroofline_max_yaml_nodes = lots\n")
    result = run_pytest(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "roofline_max_yaml_nodes: 'lots' is not a whole number" in result.stderr.str()


# ----------------------------------------------------------------------------------------------------------------
# the CLI: one line, exit status 1 or 2, no traceback
# ----------------------------------------------------------------------------------------------------------------
def run_cli(capsys, *argv: str) -> tuple[int, str]:
    try:
        rc = cli.main(list(argv))
    except SystemExit as exc:  # argparse
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out + out.err


@pytest.fixture
def files(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text(HEAD + "predictions:\n" + item("m", "max_num_seqs", "1e999"))
    nul = tmp_path / "nul.yaml"
    nul.write_bytes((HEAD + "title: a\x00b\n" + preds()).encode())
    good = tmp_path / "good.yaml"
    good.write_text(HEAD + preds())
    (tmp_path / "results").mkdir()
    return tmp_path


@pytest.mark.parametrize("argv, rc, words", [
    (["check", "{d}/big.yaml"], 1, ["big.yaml:6: predicted: '1e999' is too large"]),
    (["check", "{d}/nul.yaml"], 1, ["nul.yaml:3: a NUL byte (U+0000) at column 9"]),
    (["check", "{d}/missing.yaml"], 1, ["missing.yaml: cannot read"]),
    (["report", "{d}/missing.yaml", "-o", "{d}/s.html"], 2, ["missing.yaml: No such file"]),
    (["report", "{d}/good.yaml", "{d}/results", "-o", "{d}/s.html"], 2, ["results: is a directory"]),
    (["report", "{d}/good.yaml", "-o", "{d}/no/such/dir/s.html"], 2, ["s.html: its folder does not exist"]),
    (["schema", "-o", "{d}/no/such/dir/s.json"], 2, ["s.json: its folder does not exist"]),
    (["tiny-model", "--dest", "{d}/good.yaml/tiny"], 2, ["tiny: cannot write the model there"]),
    (["predict", "--hardware", "a100-sxm4-80gb", "--model", "qwen3-8b", "--batch", "a,b"], 2,
     ["argument --batch: 'a' is not a whole number"]),
    (["check", "--limit", "bogus=1", "{d}/good.yaml"], 2, ["--limit 'bogus=1'"]),
    (["check", "--limit", "max_yaml_nodes=5", "{d}/good.yaml"], 1, ["max_yaml_nodes (5)"]),
])
def test_cli_errors_are_one_line(capsys, files, argv, rc, words):
    got, text = run_cli(capsys, *(a.replace("{d}", str(files)) for a in argv))
    assert got == rc, text
    assert "Traceback" not in text, text
    for w in words:
        assert w in text, (w, text)


def test_cli_report_with_1e999_renders_the_error(capsys, files):
    rc, text = run_cli(capsys, "report", str(files / "big.yaml"), "-o", str(files / "s.html"))
    # the page shows the error row, and the exit status says the file has errors, as `check` does (issue 23, the
    # review's case 7.24: exit 0 on bad input)
    assert rc == 1 and "Traceback" not in text and "too large for a number" in text
    assert "too large for a number" in (files / "s.html").read_text()


def test_every_error_here_is_a_roofline_error():
    # the loader raises nothing but SpecError (a RooflineError and a ValueError) for what a file holds
    for text in (billion_laughs(), HEAD + "engine:\n  args:\n    x: &a [*a]\n" + preds()):
        with pytest.raises(RooflineError):
            load(text)
    assert issubclass(SpecError, ValueError)


def test_missing_file_stays_an_oserror(tmp_path):
    with pytest.raises(OSError):
        load_spec(tmp_path / "nope.yaml")


def test_default_limits_leave_the_shipped_files_alone():
    root = Path(__file__).resolve().parents[2] / "predictions"
    for p in sorted(root.glob("*.yaml")):
        spec = load_spec(p)
        assert spec.predictions and len(spec.predictions) < DEFAULT_LIMITS.max_tests_per_file
