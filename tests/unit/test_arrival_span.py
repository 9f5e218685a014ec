"""An open-loop point is sent at the rate it is named by: ``arrival_span: fixed`` (the default) spreads its N sends
over exactly N ÷ rate, as ``vllm bench serve`` does (vllm/benchmarks/serve.py ``get_request``: the draw rescaled to
``total_requests / request_rate``); ``drawn`` keeps the draw's own span, as every run this tool recorded before.
Known answers: the seeded draw of the default sweep's 2 req/s point (60 requests, ``open-r2``) ends at 20.6 s, so it
sent 2.9 req/s; fixed, it ends at 60 ÷ 2 = 30 s."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from support.paths import PREDICTIONS, RECORDED

from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.loadgen import LoadSpec
from pytest_roofline.measure.results import match
from pytest_roofline.measure.results.calibration_points import measured_points
from pytest_roofline.model import serving
from pytest_roofline.model.setup import build_setup
from pytest_roofline.model.workload import RampUp, arrival_offsets_s


def test_the_drawn_schedule_of_the_2_req_s_point_sends_at_2_9_and_the_fixed_one_at_2():
    drawn = arrival_offsets_s(rate_req_per_s=2.0, count=60, stream_id="open-r2", span="drawn")
    fixed = arrival_offsets_s(rate_req_per_s=2.0, count=60, stream_id="open-r2")
    assert drawn[-1] == pytest.approx(20.6, abs=0.05)  # 60 requests over 20.6 s: 2.9 req/s
    assert fixed[0] == 0.0 and fixed[-1] == pytest.approx(30.0, abs=1e-12)
    # the same draw, scaled: every gap keeps its share of the span
    np.testing.assert_allclose(fixed / fixed[-1], drawn / drawn[-1], rtol=1e-12)


@pytest.mark.parametrize("rate,count,burstiness", [(0.5, 15, 1.0), (16.0, 480, 1.0), (4.0, 120, 0.25),
                                                   (3.3, 99, 4.0)])
def test_every_fixed_point_spans_n_over_rate_whatever_its_draw(rate, count, burstiness):
    for seed in range(5):
        t = arrival_offsets_s(rate_req_per_s=rate, count=count, burstiness=burstiness, seed=seed,
                              stream_id=f"open-r{rate:g}")
        assert len(t) == count and t[0] == 0.0 and np.all(np.diff(t) >= 0)
        assert t[-1] == pytest.approx(count / rate, rel=1e-12)


def test_constant_gaps_are_spread_over_the_same_span():
    t = arrival_offsets_s(rate_req_per_s=2.0, count=5, burstiness=math.inf)
    np.testing.assert_allclose(t, [0.0, 0.625, 1.25, 1.875, 2.5])  # 5 / 2 s over 4 gaps
    np.testing.assert_allclose(arrival_offsets_s(rate_req_per_s=2.0, count=5, burstiness=math.inf, span="drawn"),
                               [0.0, 0.5, 1.0, 1.5, 2.0])


def test_what_is_never_rescaled_a_duration_point_a_ramp_up_one_request():
    kw = {"rate_req_per_s": 3.0, "stream_id": "p"}
    np.testing.assert_array_equal(arrival_offsets_s(horizon_s=20.0, **kw),
                                  arrival_offsets_s(horizon_s=20.0, span="drawn", **kw))
    ramp = RampUp("linear", 1.0, 5.0)
    np.testing.assert_array_equal(arrival_offsets_s(count=40, ramp_up=ramp, **kw),
                                  arrival_offsets_s(count=40, ramp_up=ramp, span="drawn", **kw))
    assert arrival_offsets_s(count=1, **kw).tolist() == [0.0]
    # a count and a horizon: the fixed span first, then the horizon cuts it
    both = arrival_offsets_s(count=60, horizon_s=10.0, **kw)
    np.testing.assert_array_equal(both, arrival_offsets_s(count=60, **kw)[arrival_offsets_s(count=60, **kw) < 10.0])
    with pytest.raises(ValueError, match="span must be one of fixed, drawn"):
        arrival_offsets_s(count=3, span="rescaled", **kw)  # type: ignore[arg-type]


def test_the_serving_model_simulates_the_span_the_load_generator_sends():
    setup = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="qwen3-8b",
                        engine={"name": "vllm", "version": "0.26.0"})
    wl = serving.workload_for_point(setup, rate_req_per_s=2.0, num_requests=60, point_id="open-r2")
    assert wl.arrival_span == "fixed"
    assert serving._arrival_times(wl)[-1] == pytest.approx(30.0)
    load = LoadSpec(model="m", token_id_range=(10, 100), mode="open", rate_req_s=2.0, num_requests=60,
                    point_id="open-r2")
    from pytest_roofline.measure.loadgen import arrival_offsets
    np.testing.assert_array_equal(arrival_offsets(load), serving._arrival_times(wl))
    drawn = serving.workload_for_point(setup, rate_req_per_s=2.0, num_requests=60, point_id="open-r2",
                                       arrival_span="drawn")
    assert serving._arrival_times(drawn)[-1] == pytest.approx(20.6, abs=0.05)
    bad = copy.copy(load)
    bad.arrival_span = "uneven"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="arrival_span must be one of fixed, drawn"):
        bad.validate()


def test_a_recording_sent_on_the_drawn_schedule_is_another_run_unless_the_file_says_so(tmp_path):
    """The committed open-loop recordings predate the field: cpu-open-loop.yaml says `arrival_span: drawn`, and
    without that line they do not belong to it (the model would simulate sends they did not make)."""
    rec = json.loads((RECORDED / "cpu-open-loop-2026-12-05.results.json").read_text())
    spec = load_spec(PREDICTIONS / "cpu-open-loop.yaml")
    assert spec.sweep.arrival_span == "drawn"
    assert match.compare(rec, spec).differences == []
    text = (PREDICTIONS / "cpu-open-loop.yaml").read_text().replace("  arrival_span: drawn\n", "")
    (tmp_path / "cpu-open-loop.yaml").write_text(text.replace("../pytest_roofline", "pytest_roofline"))
    fixed = load_spec(tmp_path / "cpu-open-loop.yaml")
    assert fixed.sweep.arrival_span == "fixed"
    diffs = match.compare(rec, fixed).differences
    assert len(diffs) == 1 and "sent with arrival_span drawn" in diffs[0] and "`arrival_span: drawn`" in diffs[0]
    # a new recording says how it was sent
    for p in rec["points"]:
        p["arrival_span"] = "fixed"
    assert match.compare(rec, fixed).differences == []
    # a peer's file that does not say is "not checked", never a difference
    peer = {**copy.deepcopy(rec), "source": "vllm bench serve"}
    for p in peer["points"]:
        p.pop("arrival_span")
    cmp = match.compare(peer, fixed)
    assert cmp.differences == [] and any(u.startswith("arrival span") for u in cmp.unchecked)


def test_calibration_reads_an_old_recording_as_drawn():
    rec = json.loads((RECORDED / "cpu-open-loop-2026-12-05.results.json").read_text())
    pts = measured_points(rec)
    assert pts and all(p.arrival_span == "drawn" for p in pts if p.rate_req_per_s is not None)


def test_a_span_that_is_neither_is_an_error_at_its_line():
    from pytest_roofline.errors import SpecError
    from pytest_roofline.format.spec import loads_spec
    text = ("hardware: cpu\nmodel: roofline-tiny\nengine: {name: vllm, version: \"0.32.0\"}\n"
            "sweep:\n  rates: [4]\n  arrival_span: uneven\n"
            "predictions:\n  - {id: r, quantity: request_throughput, at: {rate: 4}, predicted: 4 req/s}\n")
    with pytest.raises(SpecError) as info:
        loads_spec(text, file="span.yaml")
    assert "span.yaml:6" in str(info.value) and "'uneven' is not one of fixed, drawn" in str(info.value)
    ok = loads_spec(text.replace("uneven", "drawn"), file="span.yaml")
    assert ok.sweep.arrival_span == "drawn"


def test_a_fixed_span_runs_throughput_interval_is_the_last_latencys():
    """Ten sends a second apart (a fixed span's), each 0.1 s long but the last 0.2 s: the window is 9.2 s, the
    request rate 10 / 9.2. The count interval says ±62 % (1.96 / sqrt 10); with the sends fixed, only the window's
    end is a draw: the last 5 requests' latencies (0.1 s four times, 0.2 s once) resampled onto their sends, the
    last send + 0.1 s (p = 0.8) or + 0.2 s (p = 0.2), so 10 / 9.2 .. 10 / 9.1."""
    from pytest_roofline.measure.stats.intervals import completion_rate_interval, fixed_span_rate_interval
    sends = [float(i) for i in range(10)]
    ends = [s + 0.1 for s in sends[:-1]] + [9.2]
    iv = fixed_span_rate_interval(sends, ends, (0.0, 9.2))
    assert iv.method == "fixed-span" and iv.estimate == pytest.approx(10 / 9.2)
    assert iv.hi == pytest.approx(10 / 9.1) and iv.lo == pytest.approx(10 / 9.2)  # widened to hold the estimate
    assert iv.hi - iv.lo < 0.02 * iv.estimate
    count = completion_rate_interval(ends, (0.0, 9.2))
    assert count.method == "count" and (count.hi - count.lo) / count.estimate == pytest.approx(2 * 1.96 / 10 ** 0.5,
                                                                                            rel=1e-4)
    # token-weighted: the same relative interval
    tok = fixed_span_rate_interval(sends, ends, (0.0, 9.2), weights=[64.0] * 10)
    assert tok.estimate == pytest.approx(640 / 9.2) and tok.hi == pytest.approx(640 / 9.1)


def test_a_fixed_span_run_the_engine_fell_behind_on_reads_its_service_rate():
    """Ten sends 0.1 s apart (10 req/s offered) to an engine that ends one every 0.2 s: the queue grows to the
    last send, latencies 0.2 + 0.1 i s, the window 2.0 s, 5 req/s. The run's E2E quantiles in the last latency's
    place (the rule trial s23 found wrong) read up to 10 / (0.9 + 0.22) = 8.9 req/s, near the rate it could not
    serve; the last 5 requests' own latencies (0.7-1.1 s) end the window no earlier than 0.5 + 1.1 = 1.6 s, so
    the interval stays within [5, 10 / 1.6]: 5 at its low end (every draw ends by 2.0 s)."""
    from pytest_roofline.measure.stats.intervals import fixed_span_rate_interval
    sends = [0.1 * i for i in range(10)]
    ends = [0.2 * (i + 1) for i in range(10)]
    iv = fixed_span_rate_interval(sends, ends, (0.0, 2.0))
    assert iv.estimate == pytest.approx(5.0)
    assert iv.lo == pytest.approx(5.0)
    assert 5.0 < iv.hi <= 10 / 1.6 + 1e-9
    assert fixed_span_rate_interval(sends, ends, (0.0, 2.0)) == iv  # seeded: the same run, the same interval


_SPAN_FILE = ("hardware: cpu\nmodel: roofline-tiny\nengine: {name: vllm, version: \"0.32.0\"}\n"
              "workload: {input_len: 128, output_len: 64%s}\nsweep:\n  mode: open\n  rates: [4 req/s]\n%s"
              "predictions:\n  - {id: r, quantity: request_throughput, at: {rate: 4}, predicted: 4 req/s}\n")


def _span_spec(sweep_extra="", workload_extra=""):
    from pytest_roofline.format.spec import loads_spec
    return loads_spec(_SPAN_FILE % (workload_extra, sweep_extra), file="span.yaml")


def test_a_point_no_fixed_span_applies_to_is_planned_and_recorded_drawn():
    """Trial s23 M1: a duration-bound point (no N to span), a ramp-up (vllm bench serve rescales only without one)
    and the default 120 requests: the first two are sent drawn and say so, the last fixed."""
    from pytest_roofline.measure.plan import points as plan
    [count] = plan.all_points(_span_spec())
    assert count.num_requests == 120 and count.arrival_span == "fixed"
    [timed] = plan.all_points(_span_spec("  duration: 8 s\n"))
    assert timed.num_requests is None and timed.arrival_span == "drawn"
    assert timed.to_dict()["arrival_span"] == "drawn"
    ramp = ", ramp_up: {strategy: linear, start_rps: 1, end_rps: 4}"
    [ramped] = plan.all_points(_span_spec(workload_extra=ramp))
    assert ramped.arrival_span == "drawn"


def test_a_recorded_fixed_that_cannot_have_applied_reads_drawn_and_replays_against_a_drawn_sweep():
    """A duration-bound point of a file written on 2026-12-07 says fixed though it was sent drawn (trial s23 M1):
    read as drawn, it belongs to a drawn sweep and to the fixed default (whose plan sends that point drawn)."""
    rec = json.loads((RECORDED / "cpu-open-loop-2026-12-05.results.json").read_text())
    point = {**rec["points"][0], "arrival_span": "fixed", "num_requests": None, "rate_req_s": 4.0}
    doc = {**rec, "points": [point]}
    assert match.recorded_span(doc, point) == "drawn"
    for extra in ("  duration: 8 s\n  arrival_span: drawn\n", "  duration: 8 s\n"):
        cmp = match.compare(doc, _span_spec(extra))
        assert not any(d.startswith("arrivals") for d in cmp.differences), cmp.differences


def test_an_open_loop_of_one_request_is_refused_at_its_line():
    """Trial s23 M2: 1 request at 0.5 req/s read 5.93 req/s (1 / its latency)."""
    from pytest_roofline.errors import SpecError
    with pytest.raises(SpecError) as info:
        _span_spec("  requests_per_point: 1\n")
    text = str(info.value)
    assert "span.yaml:8" in text and "1 request cannot measure an open loop's rate" in text
    assert _span_spec("  requests_per_point: 2\n").sweep.requests_per_point == 2


def test_a_count_bound_file_against_a_duration_bound_sweep_names_the_kind_of_point():
    """A file of 40-request points sent fixed replayed against a duration-bound sweep (whose points are sent drawn
    whatever arrival_span says): another kind of point, said as such, never 'write arrival_span: fixed', which the
    sweep already says."""
    rec = json.loads((RECORDED / "cpu-open-loop-2026-12-05.results.json").read_text())
    point = {**rec["points"][0], "arrival_span": "fixed", "num_requests": 40, "rate_req_s": 4.0}
    cmp = match.compare({**rec, "points": [point]}, _span_spec("  duration: 8 s\n"))
    [diff] = [d for d in cmp.differences if d.startswith("arrivals")]
    assert "sends its points drawn (a duration-bound point" in diff and "write `arrival_span" not in diff


@pytest.mark.parametrize(("sweep_extra", "workload_extra", "why"), [
    ("  duration: 8 s\n", "", "its points are duration-bound"),
    ("", ", ramp_up: {strategy: linear, start_rps: 1, end_rps: 4}", "a ramp-up (workload.ramp_up)"),
])
def test_a_written_fixed_span_that_changes_nothing_is_a_warning_at_its_line(sweep_extra, workload_extra, why):
    """Trial s23 L5: `roofline check` said ok; the line changes nothing, so it is said once, at its line."""
    from pytest_roofline.errors import ArrivalSpanWarning
    with pytest.warns(ArrivalSpanWarning) as got:
        spec = _span_spec(sweep_extra + "  arrival_span: fixed\n", workload_extra)
    [msg] = [str(w.message) for w in got]
    line = 8 + sweep_extra.count("\n")
    assert msg.startswith(f"span.yaml:{line}: sweep.arrival_span: fixed changes nothing here: ") and why in msg
    assert spec.warnings == [msg]


def test_a_written_fixed_span_that_applies_is_no_warning():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _span_spec("  arrival_span: fixed\n").warnings == []


def test_simulate_with_results_of_other_points_says_so(capsys, tmp_path):
    """Trial s23 L1: `roofline predict --simulate FILE --results R` compared a fixed-span model with a drawn run
    (+27% at 2 req/s) silently, where pytest refuses the pair; it prints them and says why they differ."""
    from pytest_roofline import cli
    text = (PREDICTIONS / "cpu-open-loop.yaml").read_text().replace("  arrival_span: drawn\n", "")
    path = tmp_path / "cpu-open-loop.yaml"
    path.write_text(text.replace("../pytest_roofline", "pytest_roofline"))
    rec = RECORDED / "cpu-open-loop-2026-12-05.results.json"
    rc = cli.main(["predict", "--simulate", str(path), "--results", str(rec)])
    out, err = capsys.readouterr()
    assert rc == 0 and "agg tok/s" in out
    [line] = [ln for ln in err.splitlines() if "does not belong to" in ln]
    assert line.startswith(f"roofline: warning: --results {rec} does not belong to {path}")
    assert "sent with arrival_span drawn" in line
    # the recording's own prediction file: no such line
    assert cli.main(["predict", "--simulate", str(PREDICTIONS / "cpu-open-loop.yaml"), "--results", str(rec)]) == 0
    assert "does not belong to" not in capsys.readouterr().err


def test_simulate_prints_a_files_warning_as_one_line(capsys, tmp_path):
    """Trial s23b L4: `roofline predict --simulate` printed a file's warnings as Python's, with the plugin's own
    source line; one `roofline: warning: FILE:LINE: ...` line now, as roofline check prints it."""
    from pytest_roofline import cli
    path = tmp_path / "closed.yaml"
    path.write_text("hardware: cpu\nmodel: roofline-tiny\n"
                    "engine: {name: vllm, version: \"0.32.0\", cpu_kvcache_space: 1 GiB}\n"
                    "workload: {input_len: 128, output_len: 64}\nsweep:\n  concurrency: [1, 2]\n"
                    "  arrival_span: fixed\npredictions:\n"
                    "  - {id: t, quantity: tpot_p50, at: {concurrency: 1}, predicted: model}\n")
    rc = cli.main(["predict", "--simulate", str(path)])
    err = capsys.readouterr().err
    assert rc == 0, err
    [line] = [ln for ln in err.splitlines() if "arrival_span" in ln]
    assert line.startswith(f"roofline: warning: {path}:") and "changes nothing here" in line
    assert "warnings.warn" not in err and "Warning:" not in err
