"""What `roofline calibrate` tells the user about what its points left unidentified: never a load it already fitted,
a point the results already hold named as such, a confounding that more loads cannot lift said plainly, a TTFT that
was measured and screened out said to be so, and an interval that holds only with another constant held at its value
marked as conditional on it.

The decode-step terms are checked on a closed-form stand-in with the serving model's step structure (weights ÷
bandwidth + a per-step overhead, plus per sequence its KV read ÷ bandwidth + a per-sequence overhead), so what is
and is not identifiable follows from algebra, not from the code under test."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest
from support.calibration_standin import StandIn
from support.paths import DAY3_RESULTS, REPO
from support.recordings import recording_path

from pytest_roofline import cli
from pytest_roofline.errors import CalibrationError
from pytest_roofline.model import calibration as cal
from pytest_roofline.model.calibration import MeasuredPoint

CPU_TINY_RUN = recording_path("cpu-tiny")


@dataclasses.dataclass(frozen=True)
class Line(StandIn):
    """The constants of the stand-in (the serving model's names), with the API server's per-request time."""

    frontend_in_s: float = 5e-3


WEIGHTS_S = 0.01  # the weight read per step at peak bandwidth
KV_S_PER_TOKEN = 4e-7  # one token of context's KV read at peak bandwidth
PREFILL_S_PER_TOKEN = 2e-5  # one prompt token's prefill at peak FLOP/s
OUT_LEN = 256


def line(c: Line, p: MeasuredPoint) -> dict[str, float]:
    """TPOT(B, L) = (W + B·kv·L) / e + step + B·per_seq: at one context length L a line in B, whose intercept and
    slope are two quantities for three terms; a second L moves the KV part of the slope and not per_seq."""
    b, ctx = p.concurrency or 1, p.input_len or 1024
    t_step = (WEIGHTS_S + b * KV_S_PER_TOKEN * ctx) / c.hbm_efficiency + c.step_overhead_s + b * c.per_seq_overhead_s
    ttft = c.frontend_in_s + PREFILL_S_PER_TOKEN * ctx / c.flop_efficiency
    e2e = ttft + (OUT_LEN - 1) * t_step
    return {"output_throughput_tok_per_s": b * OUT_LEN / e2e, "tpot_p50_ms": 1e3 * t_step, "ttft_p50_ms": 1e3 * ttft}


TRUTH = Line(hbm_efficiency=0.6, step_overhead_s=6e-3, per_seq_overhead_s=3e-4, frontend_in_s=9e-3)


def pts(*specs: tuple[int, int], truth: Line = TRUTH) -> list[MeasuredPoint]:
    out = []
    for c, ctx in specs:
        probe = MeasuredPoint(id=f"closed-c{c}", concurrency=c, input_len=ctx, output_len=OUT_LEN)
        m = line(truth, probe)
        out.append(dataclasses.replace(probe, output_throughput_tok_per_s=m["output_throughput_tok_per_s"],
                                       tpot_p50_ms=m["tpot_p50_ms"], ttft_p50_ms=m["ttft_p50_ms"]))
    return out


def suggested_loads(notes) -> set[int]:
    """Every load a note asks the user to add or to fit with."""
    text = " ".join(notes)
    return {int(n) for n in re.findall(r"(?:add one at|e\.g\.) C = (\d+)", text)} | {
        int(n) for n in re.findall(r"fit with C=(\d+) too", text)}


# -- 1. the decode-step advice ------------------------------------------------------------------------------------
def test_loads_far_apart_at_one_length_say_the_terms_are_confounded_and_what_parts_them():
    """C = 1 and C = 64 at 1,024 tokens fix the line; the results also hold C = 8 at 1,024 tokens (another load on
    the same line) and C = 32 at 4,096 tokens (another context length)."""
    fitted, held = pts((1, 1024), (64, 1024)), pts((8, 1024), (32, 4096))
    res = cal.fit_by_metric(fitted, Line(), predict=line, fields=cal.STEP_FIELDS, held_out=held)
    assert not all(n in res.values for n in cal.STEP_FIELDS)
    # what the advice claims, checked on the stand-in: another load of the same length identifies no more, a TPOT
    # at the other length identifies all three (and recovers them)
    with_c8 = cal.fit_by_metric(fitted + held[:1], Line(), predict=line, fields=cal.STEP_FIELDS)
    assert not all(n in with_c8.values for n in cal.STEP_FIELDS)
    with_c32 = cal.fit_by_metric(fitted + held[1:], Line(), predict=line, fields=cal.STEP_FIELDS)
    for n in cal.STEP_FIELDS:
        assert with_c32.values[n] == pytest.approx(getattr(TRUTH, n), rel=0.02), n
    notes = " ".join(res.notes)
    assert "more loads will not do it" in notes and "another context length" in notes
    assert "fit with C=32 too (it is in the file: --points C=1,C=64,C=32)" in notes
    assert "third load" not in notes and "C=8" not in notes
    assert not suggested_loads(res.notes) & {1, 64}


def test_loads_close_together_name_a_far_load_never_a_fitted_one():
    """One load (C = 4): the per-step and per-sequence overheads need a load at least 8x away."""
    fields = ("step_overhead_s", "per_seq_overhead_s")
    alone = cal.fit_by_metric(pts((4, 1024)), Line(), predict=line, fields=fields)
    loads = suggested_loads(alone.notes)
    assert loads and all(c != 4 and max(c, 4) / min(c, 4) >= 8 for c in loads)
    assert any("two batch sizes far apart" in n for n in alone.notes)
    # the results hold C = 1 (4x away) and C = 64 (16x away): the one far enough is named, as in the file
    held = pts((1, 1024), (64, 1024))
    far = max((p for p in held if max(p.concurrency, 4) / min(p.concurrency, 4) >= 8),
              key=lambda p: max(p.concurrency, 4) / min(p.concurrency, 4))
    res = cal.fit_by_metric(pts((4, 1024)), Line(), predict=line, fields=fields, held_out=held)
    assert any(f"fit with {far.label} too (it is in the file: --points C=4,{far.label})" in n for n in res.notes)
    # and it does identify both
    both = cal.fit_by_metric(pts((4, 1024)) + [far], Line(), predict=line, fields=fields)
    assert set(both.values) == set(fields)


def test_all_points_run_at_one_load_only_when_the_fitted_values_do():
    tpot = {"tpot_p50_ms": 1.0, "output_throughput_tok_per_s": 1.0}
    two = ("hbm_efficiency", "step_overhead_s")  # both per step: one load cannot tell them apart
    # C = 1 measured only a TTFT, which this fit does not use: the values come from C = 64 alone, one load
    one = [dataclasses.replace(pts((1, 1024))[0], tpot_p50_ms=None, output_throughput_tok_per_s=None),
           *pts((64, 1024))]
    with pytest.raises(CalibrationError) as ei:
        cal.fit(one, Line(), predict=line, fields=two, weights=tpot)
    assert "the points (C=64; C=1 has no tok/s or TPOT p50 ms to fit)" in str(ei.value)
    assert "All points run at one load" in str(ei.value)
    # C = 1 and C = 64 both measure them: two loads, whatever else the points cannot tell apart
    with pytest.raises(CalibrationError) as ei:
        cal.fit(pts((1, 1024), (64, 1024)), Line(), predict=line, fields=cal.STEP_FIELDS, weights=tpot)
    assert "one load" not in str(ei.value)

    # one parameter has nothing to tell apart: a constant the metric does not see is said to be so, not "one load"
    def blind(c: Line, p: MeasuredPoint) -> dict[str, float]:
        return line(c.replace(frontend_in_s=5e-3), p)

    with pytest.raises(CalibrationError) as ei:
        cal.fit(pts((128, 1024)), Line(), predict=blind, fields=("frontend_in_s",), weights={"ttft_p50_ms": 1.0})
    assert "no measurable effect" in str(ei.value) and "one load" not in str(ei.value)


# -- 2. a TTFT measured and screened out --------------------------------------------------------------------------
def test_a_screened_ttft_is_said_to_be_measured_and_why_it_was_left_out():
    fitted = [dataclasses.replace(p, ttft_p50_ms=None) for p in pts((1, 1024), (16, 1024))]
    why = {"C=1": "23 ms, below the 1024-token prefill's compute floor (53.76 ms at 100% of peak)"}
    res = cal.fit_by_metric(fitted, Line(), predict=line, fields=("frontend_in_s",), screened=why)
    notes = " ".join(res.notes)
    assert "no point measures TTFT" not in notes and "a measured TTFT at concurrency 1" not in notes
    assert f"C=1's TTFT p50 was measured, {why['C=1']}, so it was left out of the fit" in notes
    assert f"no TTFT is left to fit on (measured, but left out of the fit: C=1's TTFT p50 {why['C=1']})" in notes
    # where the results hold a usable C = 1 TTFT the fit was not given, it is named (and it does identify it)
    loaded = [dataclasses.replace(p, ttft_p50_ms=None) for p in pts((8, 1024), (16, 1024))]
    res = cal.fit_by_metric(loaded, Line(), predict=line, fields=("frontend_in_s",), held_out=pts((1, 1024)))
    assert "frontend_in_s" not in res.values
    assert any("fit with C=1 too (it is in the file: --points C=8,C=16,C=1)" in n for n in res.notes)
    both = cal.fit_by_metric(loaded + pts((1, 1024)), Line(), predict=line, fields=("frontend_in_s",))
    assert both.values["frontend_in_s"] == pytest.approx(TRUTH.frontend_in_s, rel=0.01)


def test_screen_points_why_gives_the_measured_value_and_the_floor():
    from pytest_roofline.model.setup import build_setup

    setup = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                        engine={"name": "vllm", "version": "0.26.0"}, workload={"input_len": 1024, "output_len": 1024})
    floor_ms = 1e3 * 1024 * setup.flop_per_token / float(setup.peak_flop_per_s)  # tokens x 2P / peak
    low = MeasuredPoint(id="closed-c1", concurrency=1, input_len=1024, ttft_p50_ms=23.0, tpot_p50_ms=11.0)
    hit = MeasuredPoint(id="closed-c8", concurrency=8, input_len=1024, ttft_p50_ms=75.0, prefix_cache_hit_rate=0.58)
    out, notes, why = cal.screen_points_why([low, hit], setup)
    assert (out, notes) == cal.screen_points([low, hit], setup)
    assert [p.ttft_p50_ms for p in out] == [None, None] and out[0].tpot_p50_ms == 11.0
    assert why["C=1"].startswith("23 ms, below the 1024-token")
    assert f"({floor_ms:,.4g} ms at 100% of peak)" in why["C=1"]
    assert why["C=8"].startswith("75 ms, at a prefix-cache hit rate of 58.0%")


def test_roofline_calibrate_says_the_c1_ttft_was_measured(capsys, monkeypatch):
    """The notebook's C = 1 TTFT (23 ms) is below the prefill floor and C = 64's is set by prefix-cache hits: the
    fit has no TTFT, and says both were measured."""
    monkeypatch.chdir(REPO)
    doc = json.loads(DAY3_RESULTS.read_text())
    c1 = next(p for p in doc["points"] if p["id"] == "closed-c1")
    ttft = float(c1["client"]["ttft_ms"]["p50"])
    rc = cli.main(["calibrate", str(DAY3_RESULTS), "--points", "C=1,C=64", "--fit", "frontend_in_s"])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"C=1's TTFT p50 was measured, {ttft:,.4g} ms, below the 1024-token prefill's compute floor" in err
    assert "C=64's TTFT p50" in err and "prefix-cache hit rate of 30.0%" in err
    assert "no point measures TTFT" not in err and "a measured TTFT at concurrency 1" not in err


# -- 3. intervals conditional on a constant held --------------------------------------------------------------------
def test_an_interval_that_holds_only_with_a_trading_constant_held_says_so():
    """At one context length the bandwidth trades off against both overheads (three terms, one line), so the
    overheads' 1σ holds only with hbm_efficiency held; flop_efficiency does not move TPOT, so nothing is
    conditional on it."""
    two = pts((1, 1024), (64, 1024))
    tpot = {"tpot_p50_ms": 1.0}
    with pytest.raises(CalibrationError):  # the trade-off, shown: all three cannot be fitted
        cal.fit(two, Line(), predict=line, fields=cal.STEP_FIELDS, weights=tpot)
    res = cal.fit(two, Line(), predict=line, fields=("step_overhead_s", "per_seq_overhead_s"), weights=tpot,
                  held=("hbm_efficiency", "flop_efficiency"))
    assert res.conditional_on == {"step_overhead_s": {"hbm_efficiency": 0.8},
                                  "per_seq_overhead_s": {"hbm_efficiency": 0.8}}
    line_of = {n: next(ln for ln in res.describe().splitlines() if ln.strip().startswith(n)) for n in res.fitted}
    for n in res.fitted:
        assert "1σ with hbm_efficiency held at 0.8" in line_of[n] and "flop_efficiency" not in line_of[n]
    # with the other length the three are identified: nothing held trades off any more, and nothing is said
    three = pts((1, 1024), (64, 1024), (32, 4096))
    free = cal.fit(three, Line(), predict=line, fields=cal.STEP_FIELDS, weights=tpot, held=("flop_efficiency",))
    assert free.conditional_on == {}


# -- 4. the prediction file found from anywhere; 5. --fit checked first ---------------------------------------------
@pytest.mark.skipif(not CPU_TINY_RUN.exists(), reason="the cpu-tiny recording is not in predictions/recorded/")
def test_roofline_calibrate_finds_the_prediction_file_from_outside_the_repository(tmp_path, capsys, monkeypatch):
    named = Path(json.loads(CPU_TINY_RUN.read_text())["setup"]["predictions_file"]).name
    monkeypatch.chdir(tmp_path)
    args = ["--points", "C=1", "--fit", "frontend_in_s"]
    assert cli.main(["calibrate", str(CPU_TINY_RUN), *args]) == 0, capsys.readouterr().err
    assert "calibrating cpu / roofline-tiny" in capsys.readouterr().out
    # a copy with no prediction file near it: one line naming the file and the option
    (tmp_path / "runs" / "a").mkdir(parents=True)
    copy = tmp_path / "runs" / "a" / "r.results.json"
    shutil.copy(CPU_TINY_RUN, copy)
    assert cli.main(["calibrate", str(copy), *args]) == 2
    cap = capsys.readouterr()
    assert not cap.out and cap.err.count("\n") == 1
    assert named in cap.err and "--predictions FILE.yaml" in cap.err
    # the prediction file in a folder above the results' (a predictions/ folder there): found
    (tmp_path / "predictions").mkdir()
    shutil.copy(REPO / "predictions" / "cpu-tiny.yaml", tmp_path / "predictions" / "cpu-tiny.yaml")
    monkeypatch.chdir(tmp_path / "runs")
    assert cli.main(["calibrate", str(copy), *args]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--joint"]])
def test_roofline_calibrate_checks_fit_before_any_work(capsys, monkeypatch, extra):
    monkeypatch.chdir(REPO)
    rc = cli.main(["calibrate", str(DAY3_RESULTS), "--fit", "hbm_efficiency,bogus", *extra])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""  # no "calibrating ..." line before the error
    assert cap.err.count("\n") == 1 and "bogus" in cap.err and "--fit" in cap.err
    rc = cli.main(["calibrate", str(DAY3_RESULTS), "--joint", "--by-metric"])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == "" and "pass one" in cap.err
