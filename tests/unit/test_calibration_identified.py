"""One identifiability rule for every fit (model.calibration.pinned): a constant whose 1σ is over 50% of its fitted
value is not identified, keeps its default, and a note names what would identify it. A trial found `roofline
calibrate` writing the CPU per-sequence overhead at 7.77 us ± 18.9 us (±243%) as fitted on the cpu-tiny recording,
while day3's (fitted 0 ± 21 us) was kept at its default: the check judged the 1σ against max(fitted value, default),
so a value fitted below its default was judged against the default (18.9 ÷ 50 = 38%, under 50%), not against the
value the file holds. Also: a TTFT that was measured and screened out is never called missing."""

from __future__ import annotations

import re

import pytest
from support.paths import DAY3_RESULTS, REPO
from support.recordings import recording_path

from pytest_roofline import cli
from pytest_roofline.errors import CalibrationError
from pytest_roofline.model import calibration as cal
from pytest_roofline.model.calibration import MeasuredPoint

CPU_TINY_RUN = recording_path("cpu-tiny")


def test_pinned_judges_the_1_sigma_against_the_fitted_value():
    # 18.9 us on a fitted 7.77 us: 18.9 / 7.77 = 2.43 > 0.5, not pinned, although 18.9 / 50 (the CPU default) = 0.378
    assert not cal.pinned(18.9e-6, 7.77e-6)
    # 3 us on 7.77 us: 3 / 7.77 = 0.386 <= 0.5, pinned
    assert cal.pinned(3e-6, 7.77e-6)
    # the edge: 1σ exactly half the value is pinned; a hair more is not
    assert cal.pinned(0.5, 1.0) and not cal.pinned(0.5001, 1.0)
    # a value fitted at zero is pinned by no 1σ (day3's per-sequence overhead: 0 ± 21.18 us)
    assert not cal.pinned(1e-12, 0.0)
    # the threshold is the module's (MAX_LOG_SD, 50%) unless given: 0.6 of the value passes at 0.7
    assert cal.MAX_LOG_SD == 0.5 and cal.pinned(0.6, 1.0, 0.7)


def _printed_fitted(out: str) -> list[str]:
    """The constants under 'fitted constants' in roofline calibrate's output, in order."""
    block = out.split("fitted constants", 1)[1].split("residuals per point", 1)[0]
    return [m.group(1) for m in re.finditer(r"^  ([a-z_]+) ", block, flags=re.M)]


def _intervals(out: str) -> dict[str, float]:
    """Each printed fitted constant's ± percentage."""
    block = out.split("fitted constants", 1)[1].split("residuals per point", 1)[0]
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^  ([a-z_]+) .*\(±([0-9.]+)%", block, flags=re.M)}


@pytest.mark.skipif(not CPU_TINY_RUN.exists(), reason="the cpu-tiny recording is not in predictions/recorded/")
def test_cpu_tiny_c1_c16_keeps_the_unpinned_per_seq_overhead_at_its_default(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out_file = tmp_path / "calib-tiny.yaml"
    rc = cli.main(["calibrate", str(CPU_TINY_RUN), "--points", "C=1,C=16", "-o", str(out_file)])
    out = capsys.readouterr().out
    assert rc == 0, out
    c = cal.load_calibration(out_file)
    # the fitted list printed, the file's fitted list and its uncertainties agree
    assert _printed_fitted(out) == list(c.fitted)
    assert set(c.uncertainty) == set(c.fitted)
    assert "per_seq_overhead_s" not in c.fitted
    # kept at the CPU engine's default, 50 us (model/serving/constants.py default_constants, cpu branch), and so
    # is hbm_efficiency (0.8): two TPOTs for three decode-step terms
    assert c.constants["per_seq_overhead_s"] == 50e-6
    assert c.constants["hbm_efficiency"] == 0.8
    # every constant the file calls fitted is pinned: its 1σ at most half its value, from the file's own numbers
    for n in c.fitted:
        assert c.uncertainty[n] <= 0.5 * c.constants[n] * 1.01, (n, c.uncertainty[n], c.constants[n])
    assert all(pct <= 50.0 for pct in _intervals(out).values()), out
    # the refusal names the 1σ and the value, and its percentage is their ratio (the trial's 18.9 us on 7.77 us:
    # 243%; worked out here from the printed figures, not taken from the code)
    m = re.search(r"per_seq_overhead_s is determined only to ±([0-9.]+) us \(1σ; fitted ([0-9.]+) us, ±(\d+)% of it",
                  out)
    assert m, out
    sd, value, pct = float(m.group(1)), float(m.group(2)), int(m.group(3))
    assert sd > 0.5 * value
    assert pct == pytest.approx(100 * sd / value, abs=1.5)
    assert "per_seq_overhead_s held at 50 us" in out
    # the note names what would identify it: TPOTs at another context length (one prompt and output length here)
    note = next(ln for ln in out.splitlines() if "more loads will not do it" in ln)
    assert "per_seq_overhead_s" in note.split(" not identified")[0]
    assert "another context length" in note


@pytest.mark.slow  # the day3 fit simulates 128 streams of 1,024 + 1,024 tokens some dozens of times (~20 s)
def test_day3_c1_c128_keeps_the_unpinned_constants_at_their_defaults_and_says_once_why_c1_has_no_ttft(
        tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    out_file = tmp_path / "calib-day3.yaml"
    rc = cli.main(["calibrate", str(DAY3_RESULTS), "--points", "C=1,C=128", "-o", str(out_file)])
    out = capsys.readouterr().out
    assert rc == 0, out
    c = cal.load_calibration(out_file)
    assert _printed_fitted(out) == list(c.fitted) == ["hbm_efficiency"]
    assert set(c.uncertainty) == {"hbm_efficiency"}
    assert c.uncertainty["hbm_efficiency"] <= 0.5 * c.constants["hbm_efficiency"]
    # the GPU defaults of vLLM 0.26 (V1): per_seq_overhead_s 10 us, step_overhead_s 1 ms, frontend_in_s 2 ms
    # (model/serving/constants.py CONSTANT_SOURCES)
    assert c.constants["per_seq_overhead_s"] == 10e-6
    assert c.constants["step_overhead_s"] == 1e-3
    assert c.constants["frontend_in_s"] == 2e-3
    # vLLM 0.26 schedules asynchronously: the per-sequence CPU work runs while the GPU steps, so no TPOT sees it and
    # the fit does not try it (model/serving/cost.py); the header does not list it, the note says why
    assert cal.ASYNC_PER_SEQ_NOTE in out
    header = next(ln for ln in out.splitlines() if ln.startswith("calibrating "))
    assert "per_seq_overhead_s" not in header and "step_overhead_s" in header
    # two loads far apart fix the step time's intercept and slope, which two terms identify: more TPOTs narrow
    # step_overhead_s (no call for another context length, which a third term would need)
    note = next(ln for ln in out.splitlines() if "step_overhead_s not determined" in ln)
    # ... but not by more loads of these lengths: step_overhead_s sits beside the weight read ÷ hbm_efficiency in
    # every step's fixed part, so the note says how precise hbm_efficiency must be (1 ms of an 11.25 ms step at
    # C = 1: ±4.9% for ±50%) and what sharpens it (trial s24 M6: "fit with C=2 too" never identified it)
    assert "fit with C=2 too" not in note and "hbm_efficiency to ±4.9%" in note and "longer context" in note
    # C = 1's TTFT (23 ms) was measured and screened out below the 1,024-token prefill's floor: the warnings say
    # so once, and never that C = 1 has no TTFT
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning: ")]
    assert not any("C=1 has no" in w for w in warnings), warnings
    assert sum("C=1's TTFT p50 was measured, 23 ms" in w for w in warnings) == 1, warnings


def test_day3_c1_c128_frontend_refusal_never_calls_the_screened_c1_ttft_missing(capsys, monkeypatch):
    """The cheap form of the trial's day3 run: the TTFT stage alone (C = 128's TTFT, C = 1's screened)."""
    monkeypatch.chdir(REPO)
    rc = cli.main(["calibrate", str(DAY3_RESULTS), "--points", "C=1,C=128", "--fit", "frontend_in_s"])
    err = capsys.readouterr().err
    assert rc == 2  # nothing the points identify
    assert "has no TTFT p50 ms to fit" not in err, err
    assert err.count("C=1's TTFT p50 was measured, 23 ms, below the 1024-token prefill's compute floor") == 1, err
    assert "the points (C=128) cannot identify frontend_in_s" in err


def test_fit_names_a_point_without_the_metric_but_not_one_whose_value_was_screened():
    """fit()'s refusal lists the points that measured nothing it fits; a screened TTFT is not 'nothing'."""

    class Const:
        def __init__(self, frontend_in_s: float = 2e-3, flop_efficiency: float = 0.75):
            self.frontend_in_s, self.flop_efficiency = frontend_in_s, flop_efficiency

        def replace(self, **kw):
            return Const(**{**self.to_dict(), **kw})

        def to_dict(self):
            return {"frontend_in_s": self.frontend_in_s, "flop_efficiency": self.flop_efficiency}

    def predict(c, p):  # TTFT = frontend + 40 ms / flop: one prompt length, so the two trade off exactly
        return {"ttft_p50_ms": 1e3 * (c.frontend_in_s + 0.04 / c.flop_efficiency)}

    pts = [MeasuredPoint(id="closed-c1", concurrency=1), MeasuredPoint(id="closed-c8", concurrency=8, ttft_p50_ms=60.0),
           MeasuredPoint(id="closed-c16", concurrency=16, ttft_p50_ms=60.0)]
    kw = {"predict": predict, "fields": ("frontend_in_s", "flop_efficiency"), "weights": {"ttft_p50_ms": 1.0}}
    with pytest.raises(CalibrationError) as plain:
        cal.fit(pts, Const(), **kw)
    assert "C=1 has no TTFT p50 ms to fit" in str(plain.value)
    with pytest.raises(CalibrationError) as screened:
        cal.fit(pts, Const(), screened={"C=1"}, **kw)
    assert "C=1 has no" not in str(screened.value) and "the points (C=16, C=8)" in str(screened.value)
