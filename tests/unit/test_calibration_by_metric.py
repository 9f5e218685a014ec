"""Calibration that fits what the points identify (issue 22): each constant on the metric that measures it, never
one metric's residual traded into another's parameter (model.calibration.fit_by_metric)."""

from __future__ import annotations

import dataclasses

import pytest
from support.recordings import recording_path

from pytest_roofline.model import calibration as cal
from pytest_roofline.model import serving
from pytest_roofline.model.calibration import MeasuredPoint
from pytest_roofline.model.setup import build_setup

CPU_TINY_RUN = recording_path("cpu-tiny")


def _setup():
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                       engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                               "args": {"max_num_seqs": 8, "max_model_len": 1024, "dtype": "bfloat16"}},
                       workload={"input_len": 128, "output_len": 64})


def _points(setup, constants, loads=(1, 16), num_requests=(8, 64)):
    out = []
    for c, n in zip(loads, num_requests, strict=True):
        p = serving.simulate(setup, serving.workload_for_point(setup, concurrency=c, num_requests=n),
                             constants=constants)
        out.append(MeasuredPoint(id=f"closed-c{c}", concurrency=c, num_requests=n,
                                 output_throughput_tok_per_s=p.output_throughput_tok_per_s,
                                 tpot_p50_ms=p.tpot_p50_ms, ttft_p50_ms=p.ttft_p50_ms))
    return out


def test_each_term_is_recovered_from_its_own_metric():
    setup = _setup()
    base = serving.default_constants(setup)
    truth = base.replace(step_overhead_s=3.1e-3, frontend_in_s=40e-3)
    pts = _points(setup, truth)
    res = cal.fit_by_metric(pts, base, predict=cal.serving_predictor(setup),
                            fields=("step_overhead_s", "frontend_in_s"))
    assert res.step is not None and res.step.fitted == ("step_overhead_s",)
    assert res.ttft is not None and res.ttft.fitted == ("frontend_in_s",)
    assert res.values["step_overhead_s"] == pytest.approx(3.1e-3, rel=0.03)
    assert res.values["frontend_in_s"] == pytest.approx(40e-3, rel=0.03)
    assert set(res.log_sd) == {"step_overhead_s", "frontend_in_s"}  # an interval on every fitted value


def test_a_ttft_residual_never_moves_a_decode_step_parameter():
    setup = _setup()
    base = serving.default_constants(setup)
    pts = _points(setup, base.replace(step_overhead_s=3.1e-3))
    bad = [dataclasses.replace(p, ttft_p50_ms=p.ttft_p50_ms + 30.0) for p in pts]  # every TTFT 30 ms later
    kw = {"predict": cal.serving_predictor(setup), "fields": ("step_overhead_s", "frontend_in_s")}
    good_fit, bad_fit = cal.fit_by_metric(pts, base, **kw), cal.fit_by_metric(bad, base, **kw)
    # the step overhead is read off TPOT and throughput only: identical whatever the TTFTs say
    assert bad_fit.values["step_overhead_s"] == good_fit.values["step_overhead_s"]
    # the TTFT excess goes to the frontend term, the only one TTFT identifies here: 15 ms + 30 ms
    assert good_fit.values["frontend_in_s"] == pytest.approx(15e-3, rel=0.02)
    assert bad_fit.values["frontend_in_s"] == pytest.approx(45e-3, rel=0.05)


@pytest.mark.skipif(not CPU_TINY_RUN.exists(), reason="the cpu-tiny recording is not in predictions/recorded/")
def test_on_the_recorded_cpu_run_the_fit_says_what_its_points_leave_unidentified():
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.measure.results.calibration_points import measured_points

    pts = measured_points(load_results(CPU_TINY_RUN))
    train = [p for p in pts if p.concurrency in (1, 4)]
    held = [p for p in pts if p.concurrency not in (1, 4)]
    setup = _setup()
    res = cal.fit_by_metric(train, serving.default_constants(setup), predict=cal.serving_predictor(setup))
    # two TPOTs cannot pin three decode-step terms, and C = 1 and C = 4 are too close to part the per-step from the
    # per-sequence overhead: the step overhead alone is fitted, and the notes say which points would do the rest
    assert res.step is not None and res.step.fitted == ("step_overhead_s",)
    assert any("cannot determine 3 parameters" in n for n in res.notes)
    assert any("two batch sizes far apart" in n and "per_seq_overhead_s" in n for n in res.notes)
    # TTFT is measured at both points: the frontend term is fitted; flop_efficiency, confounded with it at one
    # prompt length (every request has 128 tokens), is not, and the note names the point that would identify it
    assert res.ttft is not None and res.ttft.fitted == ("frontend_in_s",)
    assert "flop_efficiency" not in res.values
    assert any("two prompt lengths" in n for n in res.notes)
    # held-out residuals: the fitted model predicts the other loads' TPOT within 30%
    predict = cal.serving_predictor(setup)
    for p in held:
        if p.tpot_p50_ms:
            assert predict(res.constants, p)["tpot_p50_ms"] == pytest.approx(p.tpot_p50_ms, rel=0.30)


@pytest.mark.skipif(not CPU_TINY_RUN.exists(), reason="the cpu-tiny recording is not in predictions/recorded/")
def test_roofline_calibrate_by_metric_writes_what_each_metric_identified(tmp_path, capsys, monkeypatch):
    from support.paths import REPO

    from pytest_roofline import cli

    monkeypatch.chdir(REPO)  # the results file names its prediction file relative to the repository
    out = tmp_path / "calib.yaml"
    rc = cli.main(["calibrate", str(CPU_TINY_RUN), "--points", "C=1,C=4", "--by-metric", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "step_overhead_s" in text and "frontend_in_s" in text
    assert "two batch sizes far apart" in text and "two prompt lengths" in text  # what is left, and which points
    c = cal.load_calibration(out)
    assert c.fitted == ("step_overhead_s", "frontend_in_s")
    assert set(c.uncertainty) == set(c.fitted)
