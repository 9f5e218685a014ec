"""vLLM's request goodput at a point (measure.stats.goodput, the ``request_goodput`` quantity).

The rule is vLLM's (vllm/benchmarks/serve.py ``calculate_metrics``, 0.32.0): a completed request is good when each
given SLO is at least its TTFT / TPOT, TPOT = (latency − TTFT) ÷ (output tokens − 1), 0 for one output token;
request_goodput = good ÷ the duration, the request throughput's, so = request throughput × good ÷ completed.

Hand-worked answers:

* Wilson score interval at 95% (z = 1.959964, z² = 3.841459) of 8 of 48: p = 1/6, centre = (p + z²/96) ÷ (1 +
  z²/48) = 0.2066819 ÷ 1.0800304 = 0.191367, half = z ÷ 1.0800304 × √(p(1 − p)/48 + z²/9216) = 0.104412, so
  [0.086955, 0.295778]; 2 of 3: [0.207660, 0.938508]; 0 of n: [0, z²/(n + z²)]; n of n: [n/(n + z²), 1].
* The trial's run2 (tests/data/s17/closed-c1-4-16.results.json with its requests files; trial s16 M1), SLO TTFT 50
  ms and TPOT 3 ms: C = 4 has 4 of 12 good, C = 16 8 of 48 (counted from the requests files by the rule above,
  independently of the code), so C = 16 reads 45.633282 × 8/48 = 7.605547 req/s, interval 45.633282 × [0.086955,
  0.295778] = [3.96805, 13.49733].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.paths import DATA
from support.specs import t3_closed_probe_head

from pytest_roofline.errors import NotMeasured
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.measure.stats.goodput import (
    goodput_of_records,
    is_good,
    slo_ms_of,
    wilson,
    with_request_goodput,
)
from pytest_roofline.measure.target import ReplayProvider
from pytest_roofline.quantities.registry import get_quantity
from pytest_roofline.scoring import VerdictStatus, score

S17 = DATA / "s17"
RESULTS = S17 / "closed-c1-4-16.results.json"
Z2 = 1.959963984540054 ** 2


def test_wilson_by_hand() -> None:
    assert wilson(8, 48) == pytest.approx((0.086955, 0.295778), abs=2e-6)
    assert wilson(2, 3) == pytest.approx((0.207660, 0.938508), abs=2e-6)
    lo, hi = wilson(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(Z2 / (10 + Z2))
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(10 / (10 + Z2)) and hi == pytest.approx(1.0)


def test_vllms_rule_for_one_request() -> None:
    slo = {"ttft_ms": 50.0, "tpot_ms": 3.0}
    assert is_good(0.050, 0.050 + 63 * 0.002, 64, slo)  # TTFT on its SLO meets it (vLLM: SLO >= value)
    assert not is_good(0.0501, 0.0501 + 63 * 0.002, 64, slo)
    assert not is_good(0.010, 0.010 + 63 * 0.004, 64, slo)  # TPOT 4 ms
    assert is_good(0.010, 5.0, 1, slo)  # one output token: TPOT is 0 whatever the latency
    assert not is_good(None, 1.0, 64, slo)
    assert is_good(0.010, 0.5, 64, {"ttft_ms": 50.0})  # only the SLOs given are checked
    assert not is_good(0.010, 0.5, 64, {"e2el_ms": 400.0})


def _rec(i: int, ttft: float, gap: float, n: int, **kw: Any) -> RequestRecord:
    chunks = [10.0 + ttft + gap * k for k in range(n)]
    return RequestRecord(index=i, request_id=str(i), warmup=kw.get("warmup", False), input_len=8, output_len=n,
                         sent_s=10.0, first_token_s=chunks[0], chunk_times_s=chunks, end_s=chunks[-1],
                         prompt_tokens=8, completion_tokens=n, status=kw.get("status", "ok"))


def test_goodput_of_records_counts_the_measured_completed_ones() -> None:
    recs = [_rec(0, 0.01, 0.002, 5, warmup=True),  # warm-up: left out
            _rec(1, 0.01, 0.002, 5),  # good
            _rec(2, 0.08, 0.002, 5),  # TTFT 80 ms: misses
            _rec(3, 0.01, 0.005, 5),  # TPOT 5 ms: misses
            _rec(4, 0.02, 0.001, 5),  # good
            _rec(5, 0.01, 0.002, 5, status="error"),  # failed: neither good nor completed
            _rec(6, 0.01, 0.002, 5, status="discarded")]
    gp = goodput_of_records(recs, {"ttft_ms": 50.0, "tpot_ms": 3.0}, req_s=2.0)
    assert (gp["good"], gp["completed"]) == (2, 4)
    assert gp["req_s"] == pytest.approx(1.0)  # 2.0 req/s × 2/4
    # Wilson of 2 of 4: p = 0.5, centre 0.5, half = z/(1 + z²/4) × √(1/16 + z²/64) = 0.349962 → [0.150038, 0.849962]
    assert gp["interval"]["lo"] == pytest.approx(2 * 0.150038, abs=2e-6)
    assert gp["interval"]["hi"] == pytest.approx(2 * 0.849962, abs=2e-6)
    assert gp["slo_ms"] == {"ttft_ms": 50.0, "tpot_ms": 3.0}
    assert goodput_of_records(recs, {"ttft_ms": 50.0}, req_s=None)["req_s"] is None


def test_the_files_slo_in_ms() -> None:
    assert slo_ms_of({"ttft": 0.05, "tpot": 0.003, "percentile": "p90"}) == {"ttft_ms": 50.0, "tpot_ms": 3.0}
    assert slo_ms_of({"ttft": float("inf"), "tpot": 0.003}) == {"tpot_ms": 3.0}
    assert slo_ms_of({"percentile": "p90"}) is None and slo_ms_of(None) is None


def _count_by_hand(path: Path) -> tuple[int, int]:
    good = done = 0
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["warmup"] or r["status"] != "ok":
            continue
        done += 1
        ttft = r["first_token_s"] - r["sent_s"]
        lat = r["chunk_times_s"][-1] - r["sent_s"]
        n = r["completion_tokens"]
        tpot = (lat - ttft) / (n - 1) if n > 1 else 0.0
        good += 0.050 >= ttft and 0.003 >= tpot
    return good, done


def test_the_trials_counts_from_its_requests_files() -> None:
    assert _count_by_hand(S17 / "closed-c4.requests.jsonl") == (4, 12)
    assert _count_by_hand(S17 / "closed-c16.requests.jsonl") == (8, 48)


SPEC = t3_closed_probe_head(ttft="50 ms", tpot="3 ms") + """\
  - {id: rg16, quantity: request_goodput, at: {concurrency: 16}, predicted: 8 req/s, tolerance: ±75%}
  - {id: rg4, quantity: request_goodput, at: {concurrency: 4}, predicted: 20 req/s, tolerance: ±10%}
  - {id: rgx, quantity: request_goodput, at: {concurrency: 16, tpot: 4 ms}, predicted: 8 req/s}
"""


def test_replay_recomputes_from_the_requests_files() -> None:
    spec = loads_spec(SPEC)
    meas = ReplayProvider(RecordedMeasurement(load_any(RESULTS)), RESULTS.parent).for_spec(spec)
    c16 = meas.point(concurrency=16)["client"]["goodput"]
    assert (c16["good"], c16["completed"]) == (8, 48)
    assert c16["req_s"] == pytest.approx(7.605547, rel=1e-6)
    assert (c16["interval"]["lo"], c16["interval"]["hi"]) == pytest.approx((3.96805, 13.49733), rel=1e-5)
    v = {p.id: score(spec, p, "measured", meas) for p in spec.predictions}
    # band [2, 14] req/s holds the whole interval [3.97, 13.50]: PASS
    assert v["rg16"].status is VerdictStatus.PASS and v["rg16"].measured_value == pytest.approx(7.605547, rel=1e-6)
    # C = 4: 12.653551 × 4/12 = 4.217850, interval 12.653551 × Wilson(4, 12) = [1.748, 7.711], wholly below 18
    assert v["rg4"].status is VerdictStatus.FAIL and v["rg4"].measured_value == pytest.approx(4.217850, rel=1e-6)
    # other SLOs than the file's are not recomputed: not measured, saying why
    assert v["rgx"].status is VerdictStatus.SKIP and "not the prediction's" in v["rgx"].reason


def test_replay_without_requests_files_says_why(tmp_path: Path) -> None:
    data = with_request_goodput(load_any(RESULTS), {"ttft_ms": 50.0, "tpot_ms": 3.0}, tmp_path)
    gp = data["points"][2]["client"]["goodput"]
    assert gp["req_s"] is None and "closed-c16.requests.jsonl is not beside the results file" in gp["not_measured"]
    spec = loads_spec(SPEC)
    v = score(spec, spec.predictions[0], "measured", RecordedMeasurement(data))
    assert v.status is VerdictStatus.SKIP and "cannot be recomputed" in v.reason


def test_a_point_measured_under_the_same_slos_is_kept() -> None:
    data = load_any(RESULTS)
    kept = {"slo_ms": {"ttft_ms": 50.0, "tpot_ms": 3.0}, "good": 1, "completed": 48, "req_s": 0.95}
    data["points"][2]["client"]["goodput"] = kept  # type: ignore[typeddict-unknown-key]
    out = with_request_goodput(data, {"ttft_ms": 50.0, "tpot_ms": 3.0}, None)
    assert out["points"][2]["client"]["goodput"] is kept


def test_without_an_slo_it_is_not_measured() -> None:
    spec = loads_spec(SPEC.replace("slo: {ttft: 50 ms, tpot: 3 ms, percentile: p90}\n", ""))
    with pytest.raises(NotMeasured, match="needs SLOs"):
        get_quantity("request_goodput").measure(RecordedMeasurement(load_any(RESULTS)), {"concurrency": 16},
                                            None, None)  # type: ignore[arg-type]
    assert spec.slo == {}


def test_every_concurrency_and_a_point_with_no_good_request() -> None:
    spec = loads_spec(t3_closed_probe_head(ttft="50 ms", tpot="3 ms")
                      + "  - {id: rga, quantity: request_goodput, at: {concurrency: every}, predicted: 8 req/s}\n")
    assert [p.id for p in spec.predictions] == ["rga[concurrency=1]", "rga[concurrency=4]", "rga[concurrency=16]"]
    meas = ReplayProvider(RecordedMeasurement(load_any(RESULTS)), RESULTS.parent).for_spec(spec)
    c1 = meas.point(concurrency=1)["client"]["goodput"]
    # C = 1: none of its 3 requests meets TTFT ≤ 50 ms, so 0 req/s, interval 3.204965 × [0, z²/(3 + z²)]
    assert (c1["good"], c1["completed"], c1["req_s"]) == (0, 3, 0.0)
    assert c1["interval"]["hi"] == pytest.approx(3.204965 * Z2 / (3 + Z2), rel=1e-6)
    assert _count_by_hand(S17 / "closed-c1.requests.jsonl") == (0, 3)


def test_an_e2e_latency_slo_from_the_file() -> None:
    # slo: {e2el: 330 ms} alone (vllm bench serve --goodput e2el:330): a request is good when its E2E latency (last
    # chunk - send) is at most 330 ms; counted here from the JSONL, separately from the code
    head = t3_closed_probe_head(ttft="50 ms", tpot="3 ms").replace(
        "slo: {ttft: 50 ms, tpot: 3 ms, percentile: p90}", "slo: {e2el: 330 ms}")
    spec = loads_spec(head + "  - {id: rg16, quantity: request_goodput, at: {concurrency: 16}, predicted: 8 req/s}\n")
    rows = [json.loads(line) for line in (S17 / "closed-c16.requests.jsonl").read_text().splitlines()]
    done = [r for r in rows if not r["warmup"] and r["status"] == "ok"]
    good = sum(1 for r in done if r["chunk_times_s"][-1] - r["sent_s"] <= 0.330)
    assert (good, len(done)) == (24, 48)  # E2E latencies 0.178-0.325 s, then 0.331-0.383 s
    meas = ReplayProvider(RecordedMeasurement(load_any(RESULTS)), RESULTS.parent).for_spec(spec)
    pt = meas.point(concurrency=16)
    gp = pt["client"]["goodput"]
    assert gp["slo_ms"] == {"e2el_ms": 330.0} and (gp["good"], gp["completed"]) == (24, 48)
    assert gp["req_s"] == pytest.approx(pt["client"]["request_throughput_req_s"] * 24 / 48, rel=1e-12)
    (pred,) = spec.predictions
    v = score(spec, pred, "measured", meas)
    assert v.measured_value == pytest.approx(gp["req_s"], rel=1e-12)
