"""Output that fits CI habits: the table at 80 columns, ``-q``/``-qq``, JUnit properties as numbers with units in
their names, ``--tb`` honoured for a missed prediction, files for people world-readable.

Expected values are worked out by hand from the catalog's spec-sheet numbers: the H100 SXM's ridge is
989e12 FLOP/s ÷ 3.35e12 B/s = 295.2238805970149 FLOP/byte; Llama-3.1-8B (8,030,261,248 parameters, its model
card's 8.03B, bf16) has 2 × 8,030,261,248 = 16,060,522,496 bytes of weights and 32 layers × 8 KV heads × 128 ×
2 (K and V) × 2 bytes = 131,072 bytes of KV per token.
"""

from __future__ import annotations

import os
import re
import shutil
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from support.paths import DAY3, DAY3_RESULTS
from support.pytest_run import run_pytest
from support.specs import H100_RIDGE

from pytest_roofline.measure.results import ResultsWriter, new_results
from pytest_roofline.report.terminal import elide_ids, summary_table

RIDGE = 989e12 / 3.35e12  # 295.2238805970149 FLOP/byte

# the ridge file of support.specs, and a wrong ridge, the weights and the KV bytes a token (the numbers above)
SMALL = H100_RIDGE + """\
  - id: ridge-wrong
    quantity: ridge_point
    predicted: 300 FLOP/byte
  - id: weights
    quantity: weight_bytes
    predicted: 16.06 GB
  - id: kv-per-token
    quantity: kv_bytes_per_token
    predicted: 131,072
"""
# line of `- id: ridge-wrong` (1-based), where its failure is located
RIDGE_WRONG_LINE = 7


class _Report:
    def __init__(self, roofline: dict[str, Any], outcome: str = "passed", when: str = "call"):
        self.roofline, self.outcome, self.when = roofline, outcome, when
        self.failed, self.skipped = outcome == "failed", outcome == "skipped"


def _row(pid: str, *, status: str = "pass", measured: str = "1", quantity: str = "littles_law_ratio",
         outcome: str = "passed") -> _Report:
    return _Report({"id": pid, "quantity": quantity, "status": status, "mode": "measured", "predicted_text": "1.00",
                    "measured_text": measured, "error_text": "+0.00%"}, outcome)


def _ids_column(lines: list[str]) -> list[str]:
    return [ln.split(" ")[0] for ln in lines[2:-1]]


# ---------------------------------------------------------------------------------------------------------------
# the table at 80 columns
# ---------------------------------------------------------------------------------------------------------------
LITTLES = [f"littles-law[concurrency={c}]" for c in (1, 2, 4, 8, 16, 32, 64, 128)]


def test_eighty_columns_keep_every_id_distinguishable():
    rows = [_row(pid) for pid in LITTLES] + [_row("throughput-asymptote", measured="13,828 tok/s",
                                                 quantity="throughput_asymptote")]
    lines = summary_table(rows, width=80)
    assert all(len(ln) <= 80 for ln in lines), max(lines, key=len)
    shown = _ids_column(lines)
    assert len(set(shown)) == len(shown) == 9  # today: eight rows of `littles-law[co…`
    assert shown[:8] == LITTLES  # they fit whole at 80 columns: nothing is cut that need not be


def test_a_narrow_table_cuts_ids_in_the_middle_and_never_two_alike():
    rows = [_row(pid) for pid in LITTLES]
    lines = summary_table(rows, width=60)
    assert all(len(ln) <= 60 for ln in lines), max(lines, key=len)
    shown = _ids_column(lines)
    assert len(set(shown)) == 8
    for full, cut in zip(LITTLES, shown, strict=True):
        head, _, tail = cut.partition("…")
        assert full.startswith(head) and full.endswith(tail)  # a cut id is the id's own head and tail
    assert shown[4].endswith("=16]") and shown[0].endswith("=1]")  # C=16 never reads as C=1


def test_ids_that_differ_only_in_the_middle_are_printed_whole_on_their_own_line():
    ids = ["sweep[batch=128:output_throughput]", "sweep[batch=256:output_throughput]"]
    assert elide_ids(ids, 14) == {ids[0]: None, ids[1]: None}  # no cut of 14 keeps them apart
    lines = summary_table([_row(i, quantity="output_throughput") for i in ids], width=40)
    assert ids[0] in lines and ids[1] in lines


def test_a_number_is_never_cut():
    rows = [_Report({"id": f"projection[batch=32:projection_flops{k}]", "quantity": "projection_flops",
                     "status": "pass", "mode": "math", "predicted_text": "1,073,741,824 FLOP",
                     "model_text": "1,073,741,824 FLOP", "model_source": "roofline",
                     "roofline_text": "1,073,741,824 FLOP", "error_text": "+0.00%"}) for k in range(2)]
    lines = summary_table(rows, width=80)
    assert all(len(ln) <= 80 for ln in lines)
    assert all(ln.count("1,073,741,824 FLOP") == 2 for ln in lines[2:-1])  # predicted and model, whole


def test_quiet_keeps_the_failures_and_the_count():
    rows = [_row("ok"), _row("bad", status="fail", outcome="failed"), _row("skipped", outcome="skipped")]
    quiet = summary_table(rows, width=80, verbosity=-1)
    assert [ln.split()[0] for ln in quiet[2:]] == ["bad", "1"] and quiet[-1] == "1 fail, 1 pass, 1 skip"
    assert summary_table([_row("ok")], width=80, verbosity=-1) == ["1 pass"]
    assert summary_table(rows, width=80, verbosity=-2) == ["roofline predictions: 1 fail, 1 pass, 1 skip"]


# ---------------------------------------------------------------------------------------------------------------
# through pytest
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture
def small(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "x.roofline.yaml").write_text(SMALL)
    return pytester


def test_day3_replay_at_80_columns(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    shutil.copy(DAY3, pytester.path / "day3.roofline.yaml")
    result = run_pytest(pytester, "day3.roofline.yaml", f"--replay={DAY3_RESULTS}")
    start = next(i for i, ln in enumerate(result.outlines) if "roofline predictions" in ln)
    table = result.outlines[start + 1:start + 40]
    assert all(len(ln) <= 80 for ln in table), max(table, key=len)
    assert table[0].split()[-2:] == ["tolerance", "verdict"]  # each row says what it was checked with
    rows = [ln for ln in table if ln.startswith("littles")]
    # the tolerance column takes the room the whole ids had: they lose their middles, never their ends, and the
    # eight stay eight different rows, each checked with the file's ±2%
    shown = [ln.split()[0] for ln in rows]
    assert len(set(shown)) == len(shown) == 8, rows
    for full, cut in zip(LITTLES, shown, strict=True):
        head, _, tail = cut.partition("…")
        assert full.startswith(head) and full.endswith(tail)
    assert all(ln.split()[-2:][0] == "±2%" for ln in rows), rows
    floor = next(ln for ln in table if ln.startswith("prefill-floor"))
    assert floor.split()[-3:] == ["±0.5", "ms", "PASS"], floor  # 53 ms written: half a unit in its last digit


def test_quiet_runs_print_the_failures_and_the_count(small):
    result = run_pytest(small, "-q")
    table = result.outlines[next(i for i, ln in enumerate(result.outlines) if "roofline predictions" in ln):]
    assert [ln.split()[0] for ln in table[1:] if ln.endswith(("PASS", "FAIL"))] == ["ridge-wrong"]
    assert "1 fail, 3 pass" in table
    result = run_pytest(small, "-qq")
    assert "roofline predictions: 1 fail, 3 pass" in result.outlines
    assert not any(ln.startswith(("ridge ", "ridge-wrong ")) for ln in result.outlines)
    result = run_pytest(small, "--no-roofline-summary")
    assert not any("roofline predictions" in ln for ln in result.outlines)


def test_junit_properties_are_numbers_with_units_in_their_names(small):
    xml = small.path / "junit.xml"
    run_pytest(small, f"--junitxml={xml}")
    cases = {tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
             for tc in ET.parse(xml).getroot().iter("testcase")}
    wrong = cases["ridge-wrong"]
    assert wrong["roofline_verdict"] == "fail" and wrong["roofline_quantity"] == "ridge_point"
    assert wrong["roofline_predicted_flop_per_byte"] == "300"
    assert float(wrong["roofline_model_flop_per_byte"]) == pytest.approx(RIDGE, rel=1e-11)
    # relative to the ink (issue 20): (model − 300) ÷ 300, with the model ÷ ink ratio beside it
    assert float(wrong["roofline_error_pct"]) == pytest.approx((RIDGE - 300) / 300 * 100, rel=1e-9)  # −1.592
    assert float(wrong["roofline_ratio"]) == pytest.approx(RIDGE / 300, rel=1e-9)
    assert float(wrong["roofline_error_flop_per_byte"]) == pytest.approx(RIDGE - 300, rel=1e-9)  # model − ink
    # "300" is checked to the digit written: ±0.5
    assert (wrong["roofline_allowed_min_flop_per_byte"], wrong["roofline_allowed_max_flop_per_byte"]) == (
        "299.5", "300.5")
    weights = cases["weights"]
    assert weights["roofline_predicted_bytes"] == "16060000000"  # 16.06 GB = 16.06e9 B
    assert weights["roofline_model_bytes"] == "16060522496"  # 2 × 8,030,261,248
    assert cases["kv-per-token"]["roofline_model_bytes"] == "131072"  # 32 × 8 × 128 × 2 × 2
    numeric = re.compile(r"^-?\d+(\.\d+)?(e[-+]\d+)?$")
    for props in cases.values():
        for name, value in props.items():
            if name in ("roofline_quantity", "roofline_verdict", "roofline_mode", "roofline_tolerance"):
                continue
            assert numeric.match(value), (name, value)  # no thousands commas, no Unicode minus, no unit
            assert re.search(r"_(pct|bytes|count|ratio|ms|tok_per_s|flop_per_byte|flop|flop_per_s|bytes_per_s|"
                             r"req_per_s)$", name), name


def test_tb_line_prints_one_line_per_missed_prediction(small):
    result = run_pytest(small, "--tb=line", "--no-roofline-summary")
    out = result.stdout.str()
    [line] = [ln for ln in result.outlines if ln.startswith("x.roofline.yaml:")]
    assert line.startswith(f"x.roofline.yaml:{RIDGE_WRONG_LINE}: ridge-wrong: FAIL ridge_point predicted 300")
    assert "model 295.22 FLOP/B" in line and "error -1.59%" in line and "tolerance ±0.5" in line
    assert "model inputs" not in out and "predicted :" not in out  # the explanation is not printed


@pytest.mark.slow
def test_tb_line_holds_under_xdist(small):
    """The report travels from a worker as pytest's own exception report, its one-line verdict kept."""
    result = run_pytest(small, "--tb=line", "--no-roofline-summary", "-n", "2")
    lines = [ln for ln in result.outlines if ln.startswith("x.roofline.yaml:")]
    assert len(lines) == 1 and lines[0].startswith(f"x.roofline.yaml:{RIDGE_WRONG_LINE}: ridge-wrong: FAIL")
    assert "predicted :" not in result.stdout.str()


def test_tb_no_prints_no_explanation_and_the_summary_line_says_what_missed(small):
    result = run_pytest(small, "--tb=no", "-rf", "--no-roofline-summary")
    assert "predicted :" not in result.stdout.str()
    [summary] = [ln for ln in result.outlines if ln.startswith("FAILED")]
    assert "ridge-wrong: FAIL ridge_point" in summary  # (pytest cuts the line to the terminal's width)


def test_tb_short_drops_the_model_inputs_and_the_default_keeps_them(small):
    short = run_pytest(small, "--tb=short", "--no-roofline-summary").stdout.str()
    assert "predicted : 300 FLOP/byte" in short and "model inputs:" not in short and "hbm_bandwidth" not in short
    long = run_pytest(small, "--no-roofline-summary").stdout.str()
    assert "predicted : 300 FLOP/byte" in long and "model inputs:" in long and "hbm_bandwidth" in long


def test_junit_failure_message_is_the_one_line_verdict(small):
    xml = small.path / "junit.xml"
    run_pytest(small, f"--junitxml={xml}")
    [failure] = [tc.find("failure") for tc in ET.parse(xml).getroot().iter("testcase")
                 if tc.get("name") == "ridge-wrong"]
    assert failure.get("message").startswith("ridge-wrong: FAIL ridge_point predicted 300")
    assert "model inputs:" in (failure.text or "")  # the body keeps the whole explanation


# ---------------------------------------------------------------------------------------------------------------
# files for people are readable like any other artefact
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_results_file_is_world_readable_under_the_usual_umask(tmp_path, umask_022):
    w = ResultsWriter(tmp_path / "results.json", new_results({"mode": "engine"}))
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    os.umask(0o077)  # and the user's umask is honoured
    w.flush()
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o600


def test_scorecard_written_by_pytest_is_world_readable(small, umask_022):
    run_pytest(small, "--roofline-scorecard", "card.html")
    assert (small.path / "card.html").stat().st_mode & 0o777 == 0o644
