"""The terminal's leftovers (task s20 R): the ``[lo–hi]`` legend only under a table that shows a bracket; one
prediction's points skipped for a reason that differs only in the point said once, naming the points; and an id that
two files of the session both have, qualified by its file's name in the rows and the reason lines (a session of one
file prints what it always printed).

Every expected line is written out by hand from the rule, for small constructed verdicts: the ids' words and the
reasons' words side by side, the words that name each row's own point (its id's number, alone or after one letter:
``4``, ``c4``) listed in order, ``, ``-joined; past three points the first two, ``…`` and the last.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_roofline.report.terminal import elide_ids, qualified_ids, reason_lines, summary_table
from pytest_roofline.scoring import Verdict

MEASURED = {"quantity": "littles_law_ratio", "dimension": "ratio", "mode": "measured", "predicted_text": "1.00"}


def _report(pid: str, *, status: str = "skip", reason: str = "", outcome: str = "skipped", nodeid: str | None = None,
            **fields: Any) -> SimpleNamespace:
    """What summary_table reads of a pytest report; ``nodeid`` where the test was collected from a file."""
    v = Verdict.from_dict({**MEASURED, "id": pid, "status": status, "reason": reason, **fields})
    r = SimpleNamespace(roofline=v.to_dict(), when="call", outcome=outcome, skipped=outcome == "skipped",
                        failed=outcome == "failed")
    if nodeid is not None:
        r.nodeid = nodeid
    return r


def _missing(c: int) -> str:
    return f"the replayed file r.json has no point at concurrency {c} (it has: closed-c1, closed-c2)"


# ---- 1: the legend only where a bracket is ---------------------------------------------------------------------
SERVING = {"quantity": "output_throughput", "dimension": "throughput", "mode": "math", "status": "pass",
           "predicted_text": "1,700 tok/s", "model_text": "1,685.8 tok/s", "model_source": "serving",
           "serving_text": "1,685.8 tok/s", "error_text": "+0.84%", "tolerance_text": "±15%"}
BANDED = {**SERVING, "serving_band_lo": 1510.3, "serving_band_hi": 2135.9,
          "serving_band_text": "1,510.3 tok/s – 2,135.9 tok/s (80% nominal)"}
#: a knee the serving model finds nowhere in the sweep: its serving value is ``none``, with no band
KNEE = {"quantity": "knee_concurrency", "dimension": "count", "mode": "math", "status": "pass",
        "predicted_text": "none", "model_text": "none", "model_source": "serving", "serving_text": "none",
        "tolerance_text": "exact"}


@pytest.mark.parametrize("width", [80, 120, 200])
def test_no_legend_under_a_table_without_a_bracket(width):
    lines = summary_table([_report("knee", outcome="passed", **KNEE)], width=width)
    assert not any("[lo–hi]" in ln for ln in lines)
    assert lines[2].split()[-3:] == ["none", "exact", "PASS"]  # the serving column: `none`, no bracket
    assert lines[-1] == "1 pass" and len(lines) == 4  # header, rule, the row, the count


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_legend_follows_a_bracket_beside_its_row_or_under_it(width):
    lines = summary_table([_report("tput", outcome="passed", **BANDED), _report("knee", outcome="passed", **KNEE)],
                          width=width)
    assert sum("[1,510.3–2,135.9]" in ln for ln in lines) == 1  # beside the value, or on its own line under it
    legend = [ln for ln in lines if ln.startswith("[lo–hi]: the serving model's band")]
    assert len(legend) == 1
    # the knee's `none` is a serving value without a band: the legend's second clause says so
    assert "a serving value without one has no band" in " ".join(lines[lines.index(legend[0]):-1])
    # -q keeps the failing rows alone: no row left, no bracket, no legend
    assert summary_table([_report("tput", outcome="passed", **BANDED)], width=width, verbosity=-1) == ["1 pass"]


# ---- 2: one prediction's points, one line -----------------------------------------------------------------------
def test_points_skipped_for_a_reason_that_differs_only_in_the_point_are_one_line():
    reports = [_report(f"littles-law[concurrency={c}]", reason=_missing(c)) for c in (4, 8, 16)]
    lines = summary_table(reports, width=200)
    assert lines[-2:] == ["SKIP littles-law[concurrency=4, 8, 16]: the replayed file r.json has no point at "
                          "concurrency 4, 8, 16 (it has: closed-c1, closed-c2)", "3 skip"]


def test_a_point_id_is_a_point_word_and_a_longer_word_ending_in_a_number_is_not():
    rows = [{"id": f"lat[concurrency={c}]", "verdict": "SKIP",
             "reason": f"point closed-c{c} has no TTFT p50 (the bf16 run did not record it)"} for c in (8, 16)]
    # the words are "closed", "-", "c8": the one that names the point is listed
    assert reason_lines(rows, 200) == [
        "SKIP lat[concurrency=8, 16]: point closed-c8, c16 has no TTFT p50 (the bf16 run did not record it)"]
    # "bf16" is not the point of lat[concurrency=16] (two letters before the number): reasons that differ there
    # differ in more than the point, and keep a line each
    rows = [{"id": f"lat[concurrency={c}]", "verdict": "SKIP", "reason": f"the bf{c} run did not record it"}
            for c in (8, 16)]
    assert reason_lines(rows, 200) == ["SKIP lat[concurrency=8]: the bf8 run did not record it",
                                       "SKIP lat[concurrency=16]: the bf16 run did not record it"]


def test_past_three_points_the_list_is_shortened_and_counted():
    rows = [{"id": f"ll[rate={r}]", "verdict": "SKIP", "reason": f"the file has no point at rate {r} req/s"}
            for r in (2, 4, 8, 12, 16)]
    assert reason_lines(rows, 200) == ["SKIP ll[rate=2, 4, …, 16] (5): the file has no point at rate 2, 4, …, 16 "
                                       "req/s"]


def test_a_merged_line_fits_the_width():
    rows = [{"id": f"littles-law[concurrency={c}]", "verdict": "SKIP", "reason": _missing(c)} for c in (4, 8)]
    # 60 columns: the head "SKIP littles-law[concurrency=4, 8]: " (36) leaves 24 for the reason: 23 of its
    # characters and "…"
    assert reason_lines(rows, 60) == ["SKIP littles-law[concurrency=4, 8]: the replayed file r.jso…"]
    assert all(len(ln) <= w for w in (40, 80, 120) for ln in reason_lines(rows, w))


def test_another_prediction_with_the_same_words_keeps_its_own_line():
    """``no-preemption-at-4`` names no point in brackets: its reason, word for word that of littles-law at C = 4,
    is not one of littles-law's points (before, the two were ``SKIP (2)`` and C = 8 a line of its own)."""
    rows = [{"id": "littles-law[concurrency=4]", "verdict": "SKIP", "reason": _missing(4)},
            {"id": "littles-law[concurrency=8]", "verdict": "SKIP", "reason": _missing(8)},
            {"id": "no-preemption-at-4", "verdict": "SKIP", "reason": _missing(4)}]
    assert reason_lines(rows, 200) == [
        "SKIP littles-law[concurrency=4, 8]: the replayed file r.json has no point at concurrency 4, 8 (it has: "
        "closed-c1, closed-c2)",
        "SKIP no-preemption-at-4: the replayed file r.json has no point at concurrency 4 (it has: closed-c1, "
        "closed-c2)"]


def test_points_with_the_very_same_reason_are_still_counted_with_the_others():
    need = "needs a measurement: run with --gpu"
    rows = [{"id": f"ll[concurrency={c}]", "verdict": "SKIP", "reason": need} for c in (1, 2)]
    rows.append({"id": "other", "verdict": "SKIP", "reason": need})
    assert reason_lines(rows, 100) == ["SKIP (3): needs a measurement: run with --gpu"]


def test_inconclusive_points_are_merged_too_and_minus_vv_lists_each_whole():
    rows = [{"id": f"lat[concurrency={c}]", "verdict": "INCONCLUSIVE",
             "reason": f"a point beside C = {c} would decide"} for c in (4, 8)]
    rows += [{"id": f"littles-law[concurrency={c}]", "verdict": "SKIP", "reason": _missing(c)} for c in (4, 8)]
    assert reason_lines(rows, 200) == [
        "INCONCLUSIVE lat[concurrency=4, 8]: a point beside C = 4, 8 would decide",
        "SKIP littles-law[concurrency=4, 8]: the replayed file r.json has no point at concurrency 4, 8 (it has: "
        "closed-c1, closed-c2)"]
    assert reason_lines(rows, 200, verbosity=2) == [
        "INCONCLUSIVE lat[concurrency=4]: a point beside C = 4 would decide",
        "INCONCLUSIVE lat[concurrency=8]: a point beside C = 8 would decide",
        f"SKIP littles-law[concurrency=4]: {_missing(4)}", f"SKIP littles-law[concurrency=8]: {_missing(8)}"]


# ---- 3: ids two files share, qualified by the file ----------------------------------------------------------------
def test_an_id_two_files_have_is_qualified_by_each_files_name():
    assert qualified_ids([("b1", "predictions/day3.yaml"), ("kv", "predictions/day3.yaml"),
                          ("b1", "predictions/cpu-tiny.yaml")]) == [
        "day3.yaml::b1", "kv", "cpu-tiny.yaml::b1"]
    # two files of one name: as many folders as tell them apart
    assert qualified_ids([("b1", "a/x/day3.yaml"), ("b1", "b/x/day3.yaml"), ("b1", "c.yaml")]) == [
        "a/x/day3.yaml::b1", "b/x/day3.yaml::b1", "c.yaml::b1"]
    # one file, or no file known: the ids as they are
    assert qualified_ids([("b1", "d.yaml"), ("kv", "d.yaml")]) == ["b1", "kv"]
    assert qualified_ids([("b1", ""), ("b1", "")]) == ["b1", "b1"]


def test_the_rows_and_the_reasons_say_which_file_an_id_is_of():
    reports = [_report("b1", nodeid="predictions/day3.yaml::b1", reason="needs a measurement"),
               _report("kv", nodeid="predictions/day3.yaml::kv", reason="no KV pool here"),
               _report("b1", nodeid="predictions/cpu-tiny.yaml::b1", reason="no point at C = 1")]
    lines = summary_table(reports, width=100)
    assert [ln.split()[0] for ln in lines[2:5]] == ["day3.yaml::b1", "kv", "cpu-tiny.yaml::b1"]
    assert lines[5:] == ["SKIP day3.yaml::b1: needs a measurement", "SKIP kv: no KV pool here",
                         "SKIP cpu-tiny.yaml::b1: no point at C = 1", "3 skip"]


def test_a_session_of_one_file_prints_what_it_printed_before():
    """The same reports with and without their node ids (which the tests before this one never gave) read the
    same, byte for byte, at every width and verbosity."""
    def reports(with_ids: bool) -> list[SimpleNamespace]:
        return [_report(f"littles-law[concurrency={c}]", reason=_missing(c),
                        nodeid=f"predictions/d.yaml::littles-law[concurrency={c}]" if with_ids else None)
                for c in (4, 8)] + [
            _report("tput", outcome="passed", nodeid="predictions/d.yaml::tput" if with_ids else None, **BANDED)]
    for width in (40, 80, 120, 200):
        for verbosity in (-2, -1, 0, 2):
            assert (summary_table(reports(True), width=width, verbosity=verbosity)
                    == summary_table(reports(False), width=width, verbosity=verbosity))


def test_a_qualified_id_too_long_for_its_column_gives_up_its_files_name_first():
    ids = ["batching-and-throughput.yaml::kv-bytes-per-token", "cpu-tiny.yaml::kv-bytes-per-token"]
    # 40 columns: the id after "::" (18) and "…::" (3) leave 19 of the file's name, "batching-and-throug"; the
    # second (33) fits whole
    assert elide_ids(ids, 40) == {ids[0]: "batching-and-throug…::kv-bytes-per-token", ids[1]: ids[1]}
    # two files whose names' heads are the same: the cut that keeps the id whole would read the same, so the
    # middle cut of any id (its own line where none tells them apart); never two alike
    ids = ["llama-3.1-70b-tp4-h100.yaml::kv-blocks", "llama-3.1-70b-tp8-a100.yaml::kv-blocks"]
    for width in (20, 30):
        cut = elide_ids(ids, width)
        assert cut[ids[0]] is None or cut[ids[0]] != cut[ids[1]]
        assert all(c is None or len(c) <= width for c in cut.values())
