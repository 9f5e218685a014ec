"""Good manners in any pytest project: the plugin loads automatically (``pytest11``), so a project that never heard
of it must see no difference, and one that has its own ``--gpu``, its own YAML under ``predictions/`` or
pytest-html must keep them. Each case is a throw-away project (pytester).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from support.paths import DAY3
from support.pytest_run import NO_CACHE
from support.specs import H100_BATCH1_MISS, H100_RIDGE

from pytest_roofline.pytest_plugin.collect import looks_like_prediction_file

PLAIN_TESTS = """\
def test_one():
    assert 1 + 1 == 2

def test_two():
    assert "a".upper() == "A"
"""


def _write(pytester: pytest.Pytester, rel: str, text: str) -> Path:
    path = pytester.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _outcome_line(result: pytest.RunResult) -> str:
    """The final ``== 2 passed in 0.01s ==`` line without its duration."""
    line = [x for x in result.outlines if re.search(r"=+ .* in [\d.]+s", x)][-1]
    return re.sub(r" in [\d.]+s.*", "", line)


# ---- options: the short names give way -----------------------------------------------------------------------

GPU_FLAG_CONFTEST = """\
def pytest_addoption(parser):
    parser.addoption("--gpu", action="store_true", help="run this project's GPU tests")
"""

GPU_FLAG_TEST = """\
def test_sees_its_own_flag(request):
    assert request.config.getoption("gpu") is True
"""


def test_a_conftest_that_defines_gpu_keeps_it(pytester: pytest.Pytester) -> None:
    # before: argparse.ArgumentError "argument --gpu: conflicting option string: --gpu" in the conftest's addoption
    _write(pytester, "conftest.py", GPU_FLAG_CONFTEST)
    _write(pytester, "test_own.py", GPU_FLAG_TEST)
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    result = pytester.runpytest_subprocess("--gpu", "-p", "no:html", *NO_CACHE)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)  # the project's test saw its flag; the math prediction ran in math mode
    assert "conflicting option" not in result.stderr.str()


def test_the_roofline_name_still_reaches_ours_when_the_short_one_is_taken(pytester: pytest.Pytester) -> None:
    _write(pytester, "conftest.py", GPU_FLAG_CONFTEST)
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    result = pytester.runpytest_subprocess("--roofline-gpu", "a1000", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--roofline-gpu" in result.stderr.str() and "a1000" in result.stderr.str()
    helptext = pytester.runpytest_subprocess("--help", *NO_CACHE).stdout.str()
    assert "--roofline-gpu=FAMILY" in helptext and "run this project's GPU tests" in helptext


@pytest.mark.slow
def test_a_plugin_that_defines_endpoint_keeps_it(pytester: pytest.Pytester) -> None:
    # a plugin loaded with -p registers before this one, a conftest after it: both orders must work
    _write(pytester, "otherplug.py", """\
        def pytest_addoption(parser):
            parser.addoption("--endpoint", dest="other_endpoint", help="the other plugin's endpoint")
        """)
    _write(pytester, "test_own.py", """\
        def test_sees_its_value(request):
            assert request.config.getoption("other_endpoint") == "mine"
        """)
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "otherplug", "--endpoint", "mine", "-p", "no:html", *NO_CACHE)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)  # --endpoint was the other plugin's: this run stayed in math mode
    # ours answers to its long name: two live modes at once is our usage error
    both = pytester.runpytest_subprocess("-p", "otherplug", "--roofline-endpoint", "http://127.0.0.1:9/v1",
                                         "--roofline-replay", "r.json", *NO_CACHE)
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    assert "choose one of" in both.stderr.str()


@pytest.mark.slow
def test_short_names_work_when_free_and_the_readme_command_parses(pytester: pytest.Pytester) -> None:
    shutil.copy(DAY3, _write(pytester, "predictions/day3.yaml", ""))
    # `pytest --gpu a100 predictions/day3.yaml` as the README writes it (collect-only: no GPU needed to parse)
    result = pytester.runpytest_subprocess("--gpu", "a100", "predictions/day3.yaml", "--collect-only", "-q",
                                           *NO_CACHE)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert any(line.startswith("predictions/day3.yaml::") for line in result.outlines)
    assert "a100" not in "".join(line for line in result.outlines if "::" in line)  # a100 was --gpu's value


def test_plugin_loaded_late_by_a_conftest_still_gets_its_short_names(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    _write(pytester, "conftest.py", 'pytest_plugins = ["pytest_roofline.pytest_plugin.plugin"]\n')
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    result = pytester.runpytest_subprocess("--gpu", "a1000", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "a1000" in result.stderr.str() and "unrecognized arguments" not in result.stderr.str()


# ---- collection: foreign YAML is left alone ------------------------------------------------------------------

FOREIGN = {
    "predictions/run42.yaml": "- {prompt: hi, output: hello}\n- {prompt: bye, output: goodbye}\n",  # a list
    "predictions/labels.yaml": "model: gpt-4o\nlabels: [cat, dog]\n",  # a mapping without predictions:
    "predictions/broken.yaml": "key: [unclosed\n  : : :\n",  # not YAML at all
    "predictions/outputs.yml": "predictions:\n  - 0.91\n  - 0.12\n",  # predictions: but nothing of ours
}


def test_foreign_yaml_under_predictions_is_left_alone(pytester: pytest.Pytester) -> None:
    # before: "ERROR collecting predictions/run42.yaml ... the file must be a mapping", rc=2
    for rel, text in FOREIGN.items():
        _write(pytester, rel, text)
    _write(pytester, "test_own.py", PLAIN_TESTS)
    result = pytester.runpytest("-p", "no:html", *NO_CACHE)
    assert result.ret == 0
    result.assert_outcomes(passed=2)
    # a real prediction file beside them is still collected by the default patterns
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    result = pytester.runpytest("-p", "no:html", *NO_CACHE)
    result.assert_outcomes(passed=3)


def test_a_foreign_file_named_on_the_command_line_is_still_a_clear_error(pytester: pytest.Pytester) -> None:
    _write(pytester, "predictions/run42.yaml", FOREIGN["predictions/run42.yaml"])
    result = pytester.runpytest("predictions/run42.yaml", "-p", "no:html", *NO_CACHE)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "run42.yaml" in result.stdout.str() and "mapping" in result.stdout.str()


def test_an_explicit_pattern_collects_what_it_matches(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nroofline_patterns = perf/*.yaml\n")
    _write(pytester, "perf/no-schema-comment.yaml", H100_RIDGE.replace("hardware: h100-sxm\n", ""))  # missing key
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)  # not matched by the project's own patterns
    result = pytester.runpytest("-p", "no:html", *NO_CACHE)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # the file the project pointed at is checked, and reported
    assert "no-schema-comment.yaml" in result.stdout.str() and "hardware" in result.stdout.str()
    assert "predictions/tiny.yaml" not in result.stdout.str()


@pytest.mark.parametrize("text, expected", [
    (H100_RIDGE, True),
    ("# yaml-language-server: $schema=../pytest_roofline/schema/predictions.schema.json\nhardware: x\n", True),
    ('"predictions":\n  - id: a\n"hardware": h100-sxm\n', True),
    ("model: gpt-4o\nlabels: [a]\n", False),
    # an ML project's eval file and a Helm template (trial s25a #12: collected, exit 2 for the whole project)
    ("model: qwen3-8b\npredictions:\n  - {id: 1, label: positive, score: 0.93}\n", False),
    ("model: {{ .Values.model }}\npredictions: {{ .Values.preds }}\n", False),
    # a prediction file whose hardware: is misspelt is one, so its error is named (trial s25d #5)
    ("hardwre: h100-sxm\nmodel: qwen3-8b\npredictions:\n  - id: r\n    quantity: ridge_point\n", True),
    ("model: qwen3-8b\npredictions:\n  - {id: r, quantity: ridge_point, predicted: 295}\n", True),
    ("predictions:\n  - 0.5\n", False),
    ("- hardware: h100\n  model: x\n  predictions: []\n", False),  # a list whose items look like ours
    ("settings:\n  predictions: []\n  model: x\n", False),  # nested keys are not top-level keys
    ("\x00\x01\x02binary", False),
])
def test_recognising_a_prediction_file(tmp_path: Path, text: str, expected: bool) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    assert looks_like_prediction_file(path) is expected


def test_recognising_a_missing_file_is_no_not_an_exception(tmp_path: Path) -> None:
    assert looks_like_prediction_file(tmp_path / "gone.yaml") is False


# ---- a project without predictions sees nothing ----------------------------------------------------------------

@pytest.mark.slow
def test_a_project_without_predictions_sees_no_difference(pytester: pytest.Pytester) -> None:
    _write(pytester, "test_own.py", PLAIN_TESTS)
    _write(pytester, "configs/model.yaml", "model: x\n")
    with_plugin = pytester.runpytest_subprocess("-p", "no:html", *NO_CACHE)
    without = pytester.runpytest_subprocess("-p", "no:html", "-p", "no:roofline", *NO_CACHE)
    assert with_plugin.ret == without.ret == 0
    assert _outcome_line(with_plugin) == _outcome_line(without)

    def lines(r: pytest.RunResult) -> list[str]:  # the whole terminal output but pytest's plugin list and timing
        return [re.sub(r" in [\d.]+s", "", x) for x in r.outlines if not x.startswith("plugins:")]
    assert lines(with_plugin) == lines(without)  # no extra section, header row or warning
    assert with_plugin.stderr.str() == without.stderr.str()


def _header_cells(page: str) -> list[str]:
    return re.findall(r"<th[^>]*>(.*?)</th>", page, flags=re.S)


def _table_rows(page: str) -> list[list[str]]:
    """The results-table rows pytest-html 4 keeps in the page's JSON blob (``tests``: node id -> entries)."""
    blob = json.loads(html.unescape(page.split('data-jsonblob="', 1)[1].split('"></div>', 1)[0]))
    return [entry["resultsTableRow"] for entries in blob["tests"].values() for entry in entries]


@pytest.mark.slow
def test_pytest_html_report_unchanged_without_predictions(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    # before: 8 empty roofline columns (Quantity, Predicted (ink), ...) in every pytest-html report
    _write(pytester, "test_own.py", PLAIN_TESTS)
    pytester.runpytest_subprocess("--html", "with.html", *NO_CACHE).assert_outcomes(passed=2)
    pytester.runpytest_subprocess("--html", "without.html", "-p", "no:roofline", *NO_CACHE).assert_outcomes(
        passed=2)
    with_plugin = (pytester.path / "with.html").read_text(encoding="utf-8")
    without = (pytester.path / "without.html").read_text(encoding="utf-8")
    assert _header_cells(with_plugin) == _header_cells(without)
    assert "rl_" not in with_plugin and "Roofline predictions" not in with_plugin
    # the same project with a prediction file gets the columns, on every row
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    pytester.runpytest_subprocess("--html", "pred.html", *NO_CACHE).assert_outcomes(passed=3)
    page = (pytester.path / "pred.html").read_text(encoding="utf-8")
    assert "Quantity" in _header_cells(page) and "Predicted (ink)" in _header_cells(page)
    rows = _table_rows(page)
    assert len(rows) == 3 and all(any("col-rl_quantity" in c for c in r) for r in rows)


# ---- pytest-xdist ----------------------------------------------------------------------------------------------

# a second file: the batch-1 miss (support.specs) and a second passing ridge
MORE = H100_BATCH1_MISS + """\
  - id: ridge-again
    quantity: ridge_point
    predicted: 295.2 FLOP/byte
"""


def _table(result: pytest.RunResult) -> set[str]:
    """The verdict rows of the end-of-run roofline table."""
    lines = result.outlines
    start = next(i for i, x in enumerate(lines) if "roofline predictions" in x)
    return {x for x in lines[start + 3:] if x.split() and x.split()[-1] in ("PASS", "FAIL", "XFAIL", "ERROR")}


@pytest.mark.slow
def test_xdist_report_has_the_columns_and_a_live_run_refuses_workers(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytest.importorskip("pytest_html")
    _write(pytester, "test_own.py", PLAIN_TESTS)
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    _write(pytester, "predictions/more.yaml", MORE)
    serial = pytester.runpytest_subprocess("--html", "ser.html", *NO_CACHE)
    result = pytester.runpytest_subprocess("-n", "2", "--html", "par.html", "--roofline-scorecard", "card.html",
                                           *NO_CACHE)
    result.assert_outcomes(passed=4, failed=1)
    assert serial.parseoutcomes() == result.parseoutcomes()
    # the same verdict rows in the terminal table (workers finish in any order, so compared as sets)
    assert _table(result) == _table(serial) and len(_table(result)) == 3
    page = (pytester.path / "par.html").read_text(encoding="utf-8")
    assert "Quantity" in _header_cells(page)
    assert all(any("col-rl_quantity" in c for c in row) for row in _table_rows(page))  # every row: no shift
    card = (pytester.path / "card.html").read_text(encoding="utf-8")
    assert re.findall(r'<tbody class="pred ([a-z-]+)" id="([^"]+)"', card)  # the prediction is on the card
    for live in (("--gpu", "cpu"), ("--endpoint", "http://127.0.0.1:9/v1")):
        refused = pytester.runpytest_subprocess("-n", "2", *live, *NO_CACHE)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        err = refused.stderr.str()
        assert f"{live[0]} runs on one worker" in err and "drop -n 2" in err and "-p no:xdist" in err


# ---- bad option values: one usage error each, before collection ------------------------------------------------

@pytest.mark.slow
def test_gpu_without_a_gpu_is_one_usage_error_naming_the_option_used(pytester: pytest.Pytester,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    empty = pytester.path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")
    if any(shutil.which(t) for t in ("nvidia-smi", "amd-smi", "rocm-smi")):
        pytest.skip("this machine has a GPU tool on /usr/bin")
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    for name in ("--gpu", "--roofline-gpu"):
        result = pytester.runpytest_subprocess(name, "h100", *NO_CACHE)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        err = result.stderr.str()
        assert f"{name} h100: no NVIDIA/AMD GPU found" in err and f"or {name} cpu" in err
        assert "Traceback" not in err + result.stdout.str() and "collected" not in result.stdout.str()
    # --gpu cpu needs no GPU, and --collect-only never looks for one
    assert pytester.runpytest_subprocess("--gpu", "h100", "--collect-only", *NO_CACHE).ret == 0


@pytest.mark.slow
@pytest.mark.parametrize("ini, option", [
    ("roofline_default_tolerance = 15 percent", "roofline_default_tolerance"),
    ("roofline_max_yaml_nodes = lots", "roofline_max_yaml_nodes"),
])
def test_bad_ini_values_are_one_usage_error(pytester: pytest.Pytester, ini: str, option: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    _write(pytester, "predictions/tiny.yaml", H100_RIDGE)
    result = pytester.runpytest_subprocess(*NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert option in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
