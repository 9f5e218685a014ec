"""Which figure of a peer's file stands for each of the project's (``docs/explanation/measured-figures.md``), worked
out from the recorded files' own fields; bursts judged on a peer's summary; a GuideLLM file's impossible counts.

The recordings are the real tools' output against the CPU engine (tests/data/peers/README.md): GuideLLM 0.8.1 at
2 streams (20 requests of 64 tokens), AIPerf 0.13.0 at concurrency 4 (40 requests, 64 server tokens each, 109.6 by
AIPerf's re-tokenizing), vllm bench serve 0.32.0 at C = 1, 2, 4 without ``--save-detailed``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.measure.results.peers.aiperf import aiperf_point
from pytest_roofline.measure.results.peers.guidellm import guidellm_point
from pytest_roofline.measure.results.peers.vllm_bench import bench_point
from pytest_roofline.measure.stats.bursts import summary_burst_flag

PEERS = Path(__file__).resolve().parents[1] / "data" / "peers"
GL_REAL = PEERS / "guidellm-cpu-tiny" / "benchmarks.json"
AP_REAL = PEERS / "aiperf-cpu-tiny" / "profile_export_aiperf.json"
VB_C1 = PEERS / "cpu-tiny-vllm-bench" / "sweep_c1.json"

SPEC = """hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: 0.32.0}
workload: {input_len: 128, output_len: 64}
sweep: {concurrency: [1, 2, 4]}
predictions:
  - {id: tpot-mean, quantity: tpot_mean, at: {concurrency: C}, predicted: 1.6 ms, tolerance: 5%}
  - {id: tpot-p50, quantity: tpot_p50, at: {concurrency: C}, predicted: 4 ms, tolerance: 95%}
  - {id: itl-p50, quantity: itl_p50, at: {concurrency: C}, predicted: 4 ms, tolerance: 95%}
  - {id: e2e-p50, quantity: e2e_p50, at: {concurrency: C}, predicted: 300 ms, tolerance: 95%}
"""


def _verdicts(data: Any, c: int) -> dict[str, Any]:
    from pytest_roofline.format.spec import loads_spec
    from pytest_roofline.measure.results import RecordedMeasurement
    from pytest_roofline.scoring import score

    spec = loads_spec(SPEC.replace("concurrency: C", f"concurrency: {c}"))
    return {p.id: score(spec, p, "measured", RecordedMeasurement(data)) for p in spec.predictions}


def _ok(bench: dict[str, Any], name: str) -> dict[str, Any]:
    return bench["metrics"][name]["successful"]


# ---------------------------------------------------------------------------------------------------------------
# GuideLLM: TPOT is its inter_token_latency_ms (vllm bench serve's definition), said on the verdict
# ---------------------------------------------------------------------------------------------------------------
def test_guidellm_tpot_is_its_inter_token_latency_which_is_vllms_definition():
    bench = json.loads(GL_REAL.read_text())["benchmarks"][0]
    ttft, tpot_gl = _ok(bench, "time_to_first_token_ms"), _ok(bench, "time_per_output_token_ms")
    n = _ok(bench, "output_token_count")
    assert n["min"] == n["max"] == 64  # every request made 64 tokens: token-weighted = request-weighted
    # vllm bench serve's TPOT = (E2E to the last token − TTFT) ÷ (64 − 1) per request. GuideLLM's
    # time_per_output_token_ms is (last token − start) ÷ 64, so E2E to the last token = it × 64, and the mean
    # (linear) of the project's TPOT is (5.6971 × 64 − 110.761) ÷ 63 = 4.02943 ms, from those two fields alone
    by_definition = (tpot_gl["mean"] * 64 - ttft["mean"]) / 63
    (pt,) = load_any(GL_REAL)["points"]
    c = pt["client"]
    assert c["tpot_ms"]["mean"] == pytest.approx(by_definition, rel=1e-9)  # = inter_token_latency_ms's mean
    assert c["tpot_ms"]["p50"] == _ok(bench, "inter_token_latency_ms")["median"] == pytest.approx(2.8771257)
    assert tpot_gl["median"] == pytest.approx(3.6548488)  # not scored: it counts the TTFT
    # E2E stays GuideLLM's request_latency (s -> ms), which ends at the end of the response
    assert c["e2e_ms"]["p50"] == pytest.approx(_ok(bench, "request_latency")["median"] * 1e3)
    tpot_note = next(f for f in pt["flags"] if f.startswith("TPOT is GuideLLM's inter_token_latency_ms"))
    assert "(last − first token) ÷ (output tokens − 1)" in tpot_note and "every request made 64 tokens" in tpot_note
    assert "time_per_output_token_ms (p50 3.6548 ms) also counts the TTFT" in tpot_note
    e2e_note = next(f for f in pt["flags"] if f.startswith("E2E is GuideLLM's request_latency"))
    assert "end of the response" in e2e_note and "last token chunk" in e2e_note
    assert not any(f.startswith("bursts") for f in pt["flags"])  # TPOT p50 2.88 ms: streamed
    assert pt["not_reported"]["itl_ms"].startswith("GuideLLM does not report ITL")


def test_guidellm_tpot_verdict_says_which_figure_it_scored():
    v = _verdicts(load_any(GL_REAL), 2)
    assert v["tpot-p50"].measured_value == pytest.approx(2.877125664362832e-3)
    assert any("TPOT is GuideLLM's inter_token_latency_ms" in n for n in v["tpot-p50"].measured_notes)
    assert any("E2E is GuideLLM's request_latency" in n for n in v["e2e-p50"].measured_notes)
    assert v["itl-p50"].status.value == "skip"


# ---------------------------------------------------------------------------------------------------------------
# AIPerf: TPOT by the server's token count, as the note says
# ---------------------------------------------------------------------------------------------------------------
def test_aiperf_tpot_uses_the_servers_token_count():
    doc = json.loads(AP_REAL.read_text())
    assert doc["usage_completion_tokens"]["min"] == doc["usage_completion_tokens"]["max"] == 64
    assert doc["output_sequence_length"]["avg"] == pytest.approx(109.6)  # AIPerf's re-tokenized count
    (pt,) = load_any(AP_REAL)["points"]
    t = pt["client"]["tpot_ms"]
    # mean TPOT = (mean latency − mean TTFT) ÷ (64 − 1) = (388.46168 − 286.66685) ÷ 63 = 1.61579 ms
    assert t["mean"] == pytest.approx((doc["request_latency"]["avg"] - doc["time_to_first_token"]["avg"]) / 63)
    assert t["mean"] == pytest.approx(1.6157909, rel=1e-7)
    # percentiles: decode_duration (per-request latency − TTFT) ÷ 63; p50 0 (over half the replies in one read)
    assert doc["decode_duration"]["avg"] == pytest.approx(doc["request_latency"]["avg"]
                                                          - doc["time_to_first_token"]["avg"])
    assert t["p50"] == 0.0 and t["p90"] == pytest.approx(304.1542541 / 63) and t["p99"] == pytest.approx(
        324.6906567 / 63)
    assert t["mean"] != pytest.approx(doc["inter_token_latency"]["avg"], rel=0.1)  # 0.93605: ÷ (109.6 − 1)
    note = next(f for f in pt["flags"] if "re-tokenizing" in f)
    assert "TPOT = decode_duration (latency − TTFT) ÷ (64 − 1)" in note and "0.93605 ms mean" in note


def test_aiperf_tpot_mean_verdict_scores_the_servers_count():
    v = _verdicts(load_any(AP_REAL), 4)["tpot-mean"]
    assert v.status.value == "pass" and v.measured_value == pytest.approx(101.7948283e-3 / 63)


def test_aiperf_tpot_when_the_server_counts_vary_is_aiperfs_and_says_so():
    doc = json.loads(AP_REAL.read_text())
    doc["usage_completion_tokens"] = {**doc["usage_completion_tokens"], "min": 60.0, "max": 68.0}
    pt = aiperf_point(doc, "x.json")
    assert pt["client"]["tpot_ms"]["mean"] == doc["inter_token_latency"]["avg"]
    note = next(f for f in pt["flags"] if "re-tokenizing" in f)
    assert "TPOT is AIPerf's inter_token_latency, divided by its re-tokenized count" in note
    assert "varied between requests (usage_completion_tokens 60–68)" in note
    del doc["decode_duration"]
    doc["usage_completion_tokens"]["max"] = 60.0
    note = next(f for f in aiperf_point(doc, "x.json")["flags"] if "re-tokenizing" in f)
    assert "the export has no decode_duration" in note


# ---------------------------------------------------------------------------------------------------------------
# bursts on a peer's file without per-request chunk times: flagged from its summary
# ---------------------------------------------------------------------------------------------------------------
def test_summary_burst_rule():
    # TPOT: p50 × (n − 1) under 0.1 ms means half the requests got all tokens after the first in one arrival
    assert summary_burst_flag(tpot_p50_ms=0.0015, itl_p50_ms=None, output_tokens=64, tool="t")  # 0.0945 ms
    assert summary_burst_flag(tpot_p50_ms=0.002, itl_p50_ms=None, output_tokens=64, tool="t") is None  # 0.126
    assert summary_burst_flag(tpot_p50_ms=0.0, itl_p50_ms=None, output_tokens=None, tool="t")
    assert summary_burst_flag(tpot_p50_ms=0.001, itl_p50_ms=None, output_tokens=None, tool="t") is None
    assert summary_burst_flag(tpot_p50_ms=0.0, itl_p50_ms=None, output_tokens=2, tool="t") is None  # never bursts
    # ITL: p50 under 0.1 ms means half the chunk gaps were one arrival
    assert summary_burst_flag(tpot_p50_ms=5.0, itl_p50_ms=0.099, output_tokens=64, tool="t")
    assert summary_burst_flag(tpot_p50_ms=5.0, itl_p50_ms=0.1, output_tokens=64, tool="t") is None


def test_vllm_bench_itl_p50_near_zero_is_flagged_without_per_chunk_data():
    doc = json.loads(VB_C1.read_text())
    assert doc["median_itl_ms"] == pytest.approx(0.007604) and "itls" not in doc
    pt = bench_point(doc, str(VB_C1))
    (flag,) = [f for f in pt["flags"] if f.startswith("bursts:")]
    assert "ITL p50 0.007604 ms" in flag and "TPOT" not in flag.split(":")[1]  # TPOT p50 5.84 ms: no
    assert "vllm bench serve without --save-detailed" in flag and "bursts" not in pt["client"]
    v = _verdicts(load_any(PEERS / "cpu-tiny-vllm-bench"), 1)["itl-p50"]
    assert v.measured_value == pytest.approx(0.007604e-3, rel=1e-3)
    assert any("bursts: ITL p50 0.007604 ms" in n for n in v.measured_notes)


def test_aiperf_zero_tpot_and_itl_p50_are_flagged():
    doc = json.loads(AP_REAL.read_text())
    assert doc["decode_duration"]["p50"] == 0.0 and doc["inter_chunk_latency"]["p50"] == 0.0
    v = _verdicts(load_any(AP_REAL), 4)
    for pid in ("tpot-p50", "itl-p50"):
        assert v[pid].measured_value == 0.0
        (flag,) = [n for n in v[pid].measured_notes if "bursts:" in n]
        assert "TPOT p50 0 ms over 64-token replies" in flag and "ITL p50 0 ms" in flag
        assert "not its generation step" in flag


# ---------------------------------------------------------------------------------------------------------------
# GuideLLM: counts that cannot have been measured are refused in one line
# ---------------------------------------------------------------------------------------------------------------
def _zeroed(doc: dict[str, Any]) -> dict[str, Any]:
    for m in doc["benchmarks"][0]["metrics"].values():
        if isinstance(m, dict) and isinstance(m.get("successful"), dict):
            m["successful"] = {**m["successful"], "mean": 0.0, "median": 0.0, "count": 0,
                               "percentiles": {k: 0.0 for k in m["successful"].get("percentiles") or {}}}
    return doc


def test_guidellm_successful_requests_with_no_latencies_are_refused(tmp_path: Path):
    doc = _zeroed(json.loads(GL_REAL.read_text()))
    assert doc["benchmarks"][0]["metrics"]["request_totals"]["successful"] == 20
    f = tmp_path / "benchmarks.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as exc:
        load_any(f)
    assert str(exc.value) == (f"{f}: benchmarks[0]: request_totals.successful is 20 but request_latency summarises "
                              "0 successful requests (its count); this file does not record a measurement")
    # the same zeros with 0 successful (all 20 errored, as a real run with HTTP 400s wrote) are read: an error point
    doc["benchmarks"][0]["metrics"]["request_totals"] = {"successful": 0, "errored": 20, "incomplete": 0, "total": 20}
    f.write_text(json.dumps(doc))
    (pt,) = load_any(f)["points"]
    assert pt["client"]["completed"] == 0 and pt["client"]["failed"] == 20


@pytest.mark.parametrize(("totals", "duration", "said"), [
    ({"successful": -20, "errored": 0, "incomplete": 0, "total": 20}, 3.8, r"request_totals.successful is -20, not a"),
    ({"successful": 20.5, "errored": 0, "incomplete": 0, "total": 20}, 3.8, r"request_totals.successful is 20.5"),
    ({"successful": 20, "errored": 5, "incomplete": 0, "total": 20}, 3.8,
     r"successful \+ errored \+ incomplete = 25 is more than its total 20"),
    ({"successful": 20, "errored": 0, "incomplete": 0, "total": 20}, 0.0, r'"duration" is 0 s with 20 successful'),
])
def test_guidellm_impossible_counts_are_refused(totals: dict[str, Any], duration: float, said: str):
    bench = json.loads(GL_REAL.read_text())["benchmarks"][0]
    bench["metrics"]["request_totals"] = totals
    bench["duration"] = duration
    with pytest.raises(ResultsError, match=said):
        guidellm_point(bench, "b.json")


def test_a_figure_a_peer_does_not_report_is_skipped_with_the_peers_own_reason() -> None:
    """GuideLLM reports no ITL: an ITL prediction on a GuideLLM file is skipped saying so (the reader's
    ``not_reported``), not with the generic "the results file does not record it"."""
    from pytest_roofline.errors import NotMeasured
    from pytest_roofline.measure.results import RecordedMeasurement
    from pytest_roofline.quantities.analysis import Thresholds
    from pytest_roofline.quantities.declare import client_measured

    data = load_any(GL_REAL)
    pt = data["points"][0]
    at = {"concurrency": pt["concurrency"]} if pt.get("concurrency") else {"rate": pt["rate"]}
    with pytest.raises(NotMeasured, match="GuideLLM does not report ITL"):
        client_measured(RecordedMeasurement(data), at, Thresholds(), ("itl_ms", "p50"), "ITL p50")


# ---------------------------------------------------------------------------------------------------------------
# GuideLLM: a rate point it says it sent late is flagged (a real public H100 file)
# ---------------------------------------------------------------------------------------------------------------
GL_BLIS = PEERS / "guidellm-blis-h100" / "guidellm-results.json"


def test_guidellm_rate_point_sent_late_is_flagged_with_guidellms_own_figure():
    doc = json.loads(GL_BLIS.read_text())
    delays = [b["scheduler_metrics"]["request_targeted_start_delay_avg"] for b in doc["benchmarks"]]
    rates = [b["config"]["strategy"].get("rate") for b in doc["benchmarks"]]
    points = load_any(GL_BLIS)["points"]
    assert [p["id"] for p in points] == ["closed-c1", "open-r1.952", "open-r2.89677"]
    late = [[f for f in p["flags"] if f.startswith("arrivals not at the rate named")] for p in points]
    # synchronous: no schedule to be late for; 1.952 req/s: 0.971 s late, 0.971 x 1.952 = 1.9 intervals (> 0.5);
    # 2.897 req/s: on time (2.3 ms late, 0.007 of its 0.345 s interval)
    assert rates[1] == pytest.approx(1.9519971) and delays[1] == pytest.approx(0.9714, abs=1e-4)
    assert delays[2] == pytest.approx(0.00227, abs=1e-5)
    assert late[0] == [] and late[2] == []
    assert "sent these requests 0.971 s after their scheduled times" in late[1][0]
    assert "1.9 intervals at 1.952 req/s" in late[1][0]


@pytest.mark.parametrize(("delay_s", "flagged"), [(0.2, False), (0.25, False), (0.3, True)])
def test_guidellm_late_share_is_half_an_interval(delay_s: float, flagged: bool):
    # at 2 req/s the interval is 0.5 s: half of it is 0.25 s
    from pytest_roofline.measure.results.peers.guidellm import late_flag
    bench = {"scheduler_metrics": {"request_targeted_start_delay_avg": delay_s}}
    assert (late_flag(bench, 2.0) is not None) is flagged
    assert late_flag(bench, None) is None
    assert late_flag({}, 2.0) is None
