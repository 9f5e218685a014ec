"""The terminal says why (task s19 H): an INCONCLUSIVE row's reason, and a SKIP row's, under the summary table, one
line each clipped to the width (whole at -vv); and a band verdict carries its band as fields (``Verdict.band_check``),
which the tolerance column is formatted from, never parsed out of the label text.

The expected lines are written out by hand from the rule (the head of the reason, then its last clause, what decides
it, where the head keeps at least 40% of the room); the band bounds are worked out from the chip's bandwidth and the
model's bytes: the batch-1 roofline ceiling reads the bf16 weights (8,030,261,248 parameters x 2 B) and the KV cache
of one sequence's mean context (1,024 + 1,024 / 2 = 1,536 tokens x 131,072 B) once per token.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import bands
from pytest_roofline.report.terminal import _tolerance_short, reason_lines, summary_table
from pytest_roofline.scoring import BandCheck, Verdict, VerdictStatus, score

#: the bytes one batch-1 decode step of Llama-3.1-8B reads at a 1,536-token context: bf16 weights, then the KV cache
STEP_BYTES = 8_030_261_248 * 2 + 1_536 * 131_072  # = 16,261,849,088 B

SPEC = """\
hardware: {hw}
model: llama-3.1-8b
engine: {{name: vllm, version: "0.33.0"}}
workload: {{input_len: 1024, output_len: 1024}}
sweep: {{mode: closed, concurrency: [1, 16, 64]}}
predictions:
  - {{id: p, quantity: output_throughput, at: {{concurrency: {c}}}, predicted: {ink}}}
"""


def _score(hw: str, c: int, ink: str) -> Verdict:
    spec = loads_spec(SPEC.format(hw=hw, c=c, ink=ink))
    return score(spec, spec.predictions[0], "math", None)


def _report(v: Verdict, outcome: str = "skipped") -> SimpleNamespace:
    return SimpleNamespace(roofline=v.to_dict(), when="call", outcome=outcome, skipped=outcome == "skipped",
                           failed=outcome == "failed")


def _verdict(pid: str, status: VerdictStatus, reason: str, **kw: object) -> Verdict:
    return Verdict.from_dict({"id": pid, "quantity": "ttft_p50", "dimension": "time", "mode": "measured",
                              "status": status.value, "reason": reason, "predicted_text": "100 ms",
                              "measured_text": "95 ms", **kw})


STRADDLE = ("measured 95 ms is within its tolerance, but its interval straddles the boundary 100 ms; about 40 more "
            "requests would decide it")


# ---- the reasons under the table -------------------------------------------------------------------------------
def test_an_inconclusive_row_gets_its_reason_under_the_table():
    v = _verdict("lat", VerdictStatus.INCONCLUSIVE, STRADDLE)
    table = summary_table([_report(v)], width=100)
    # 100 columns: "INCONCLUSIVE lat: " (18) leaves 82; the last clause "; about 40 more requests would decide it"
    # (40) leaves the head 41 characters, cut back to the word before ("…tolerance,"), then "…" and the clause
    assert table[-3] == ("INCONCLUSIVE lat: measured 95 ms is within its tolerance…; about 40 more requests would "
                         "decide it")
    # trial s25a #3: where the reason was cut, the line says so and -v shows it whole
    assert table[-2] == "(an INCONCLUSIVE's reason is cut to the width: -v shows it whole)"
    assert table[-1] == "1 inconclusive"
    assert "INCONCLUSIVE" in table[2]  # the row itself is as before
    whole = summary_table([_report(v)], width=100, verbosity=1)
    assert " ".join(ln.strip() for ln in whole[whole.index(next(ln for ln in whole if ln.startswith(
        "INCONCLUSIVE lat:"))):-1]) == f"INCONCLUSIVE lat: {STRADDLE}"


def test_a_reason_that_fits_is_whole_and_every_line_fits_the_width():
    short = _verdict("lat", VerdictStatus.INCONCLUSIVE, "a point at C = 32 would decide")
    assert summary_table([_report(short)], width=80)[-2] == "INCONCLUSIVE lat: a point at C = 32 would decide"
    long_v = _verdict("lat", VerdictStatus.INCONCLUSIVE, STRADDLE * 3)
    for width in (40, 60, 80, 120):
        lines = reason_lines([{"id": "lat", "verdict": "INCONCLUSIVE", "reason": long_v.reason}], width)
        assert len(lines) == 2 and all(len(ln) <= width for ln in lines)
        assert lines[0].startswith("INCONCLUSIVE lat: measured") and lines[1].startswith("(an INCONCLUSIVE's")


def test_at_minus_vv_the_reason_is_whole():
    v = _verdict("lat", VerdictStatus.INCONCLUSIVE, STRADDLE)
    assert summary_table([_report(v)], width=200, verbosity=2)[-2] == f"INCONCLUSIVE lat: {STRADDLE}"
    wrapped = summary_table([_report(v)], width=60, verbosity=2)
    # wrapped at 60, the further lines indented by two; no word lost
    body = wrapped[wrapped.index(next(ln for ln in wrapped if ln.startswith("INCONCLUSIVE lat:"))):-1]
    assert all(len(ln) <= 60 for ln in body) and all(ln.startswith("  ") for ln in body[1:])
    assert " ".join(ln.strip() for ln in body) == f"INCONCLUSIVE lat: {STRADDLE}"


def test_minus_q_keeps_the_reason_and_minus_qq_the_count_alone():
    v = _verdict("lat", VerdictStatus.INCONCLUSIVE, "a point at C = 32 would decide")
    assert "INCONCLUSIVE lat: a point at C = 32 would decide" in summary_table([_report(v)], width=100,
                                                                                verbosity=-1)
    assert summary_table([_report(v)], width=100, verbosity=-2) == ["roofline predictions: 1 inconclusive"]


def test_skips_with_one_reason_are_one_line_with_their_count():
    need = "needs a measurement: run with --gpu"
    vs = [_verdict("a", VerdictStatus.SKIP, need), _verdict("b", VerdictStatus.SKIP, need),
          _verdict("c", VerdictStatus.SKIP, "no serving value here")]
    table = summary_table([_report(v) for v in vs], width=100)
    assert table[-3:] == ["SKIP (2): needs a measurement: run with --gpu", "SKIP c: no serving value here", "3 skip"]


def test_the_skips_reasons_take_at_most_ten_lines_below_minus_vv():
    vs = [_verdict(f"s{i}", VerdictStatus.SKIP, f"reason number {i}") for i in range(12)]
    table = summary_table([_report(v) for v in vs], width=100)
    # 12 different reasons: 9 listed, the 10th line counts the other 3
    assert table[-11:-1] == [*(f"SKIP s{i}: reason number {i}" for i in range(9)),
                             "SKIP: 3 more, for other reasons (-vv lists every one)"]
    assert [ln for ln in summary_table([_report(v) for v in vs], width=100, verbosity=2)
            if ln.startswith("SKIP")] == [f"SKIP s{i}: reason number {i}" for i in range(12)]


def test_rows_without_a_reason_are_unchanged():
    passing = _verdict("lat", VerdictStatus.PASS, "measured 95 ms is within ±10% of predicted 100 ms")
    table = summary_table([_report(passing, "passed")], width=100)
    assert len(table) == 4 and table[-1] == "1 pass"  # header, rule, the row, the count: no reason line
    # a FAIL says why in its failure report, not here; an inconclusive marked xfail reads XFAIL, its own outcome
    failing = _verdict("lat", VerdictStatus.FAIL, "outside")
    assert summary_table([_report(failing, "failed")], width=100)[-1] == "1 fail"
    assert not any(ln.startswith(("SKIP", "INCONCLUSIVE")) for ln in summary_table([_report(failing, "failed")]))


# ---- the band as fields ----------------------------------------------------------------------------------------
def test_a_batch1_band_verdict_carries_the_serving_band_up_to_the_ceiling():
    ceiling = 3.35e12 / STEP_BYTES  # H100 SXM: 3.35 TB/s over 16,261,849,088 B a token = 206.0036 tok/s
    v = _score("h100-sxm", 1, "125 tok/s")
    b = v.band_check
    assert v.status is VerdictStatus.PASS and v.band_decided
    assert b is not None and b.source == "serving" and b.level == pytest.approx(0.80)
    assert b.hi == pytest.approx(ceiling, rel=1e-6) and b.top_is_ceiling and not b.one_cpu_host
    assert b.lo == v.serving_band_lo and b.lo < 125 < b.hi  # the floor is the serving model's batch-1 band
    assert (v.lo, v.hi) == (b.lo, b.hi)  # the interval the ink was checked against
    # neither an 80% band nor the serving model's own (trial s26b #9): its floor is the serving band's 80% edge
    assert v.tolerance_text == (f"band {v.fmt(b.lo).split()[0]}–206 tok/s (floor: the serving band's 80% edge; "
                                "top: the roofline ceiling)")
    assert _tolerance_short(v) == f"band {v.fmt(b.lo).split()[0]}–206 (80% floor, top: ceiling)"


def test_a_share_of_the_ceiling_band_is_not_the_serving_models():
    ceiling = 864e9 / STEP_BYTES  # L40S: 864 GB/s -> 53.1305 tok/s
    low = bands.roofline_fraction_band(moe=False, tp=1).lo * ceiling  # the share measured low-load runs reach
    v = _score("l40s", 1, "20 tok/s")
    b = v.band_check
    assert v.status is VerdictStatus.FAIL and not v.band_decided  # the roofline's band: the error is against it
    assert b == BandCheck(lo=pytest.approx(low, rel=1e-6), hi=pytest.approx(ceiling, rel=1e-6),
                          source="ceiling_share")
    # the committed share (bands.json roofline_fraction|low|gpu: 0.597 since 2026-12-07) x 53.1305 = 31.719
    assert _tolerance_short(v) == f"band {low:.5g}–53.13 (measured share of the ceiling)"


def test_a_tolerance_verdict_has_no_band():
    t = _score("h100-sxm", 1, "206 tok/s")  # the ceiling itself, to the precision written: the tolerance decides
    assert t.status is VerdictStatus.PASS and t.tolerance_text.startswith("±0.5 tok/s")
    assert t.band_check is None and not t.band_decided


def test_the_column_is_formatted_from_the_fields_not_the_label():
    v = Verdict.from_dict({"id": "p", "quantity": "output_throughput", "dimension": "throughput", "unit": "tok/s",
                           "unit_given": True, "mode": "math", "status": "fail", "reason": "",
                           "tolerance_text": "anything at all (not a label)",
                           "band_check": {"lo": 1415.1, "hi": 2001.3, "source": "serving", "level": 0.8}})
    assert v.band_decided and _tolerance_short(v) == "band 1,415.1–2,001.3 (80%)"


def test_the_band_survives_the_dict_form_and_an_older_dict_has_none():
    v = _score("h100-sxm", 1, "125 tok/s")
    d = json.loads(json.dumps(v.to_dict()))  # what a pytest report and the history carry
    assert Verdict.from_dict(d).band_check == v.band_check and Verdict.from_dict(d).band_decided
    old = {k: x for k, x in d.items() if k != "band_check"}  # written before the field existed
    o = Verdict.from_dict(old)
    assert o.band_check is None and not o.band_decided
    assert _tolerance_short(o) == v.tolerance_text.split(" (")[0]  # the label's head, as any tolerance text
    assert Verdict.from_dict({**d, "band_check": "garbled"}).band_check is None
