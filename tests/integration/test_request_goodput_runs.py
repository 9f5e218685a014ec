"""``request_goodput`` through pytest: replayed from the trial's run2 with its requests files (recomputed under the
file's ``slo:``), and measured live against a stub server (``client.goodput`` in the results file).

Hand-worked (tests/unit/test_request_goodput.py): C = 16 has 8 of 48 requests meeting TTFT ≤ 50 ms and TPOT ≤ 3 ms,
45.633282 req/s × 8/48 = 7.605547 req/s, interval [3.968, 13.497]; C = 4 has 4 of 12, 4.217850 req/s, interval
[1.748, 7.711]. A run whose every request meets its SLOs reads request_goodput = request throughput, interval
[n/(n + z²), 1] × it (Wilson with no miss; z² = 3.841459).
"""

from __future__ import annotations

import json

import pytest
from support.paths import DATA
from support.specs import t3_closed_probe_head

RESULTS = DATA / "s17" / "closed-c1-4-16.results.json"
Z2 = 1.959963984540054 ** 2

REPLAYED = t3_closed_probe_head(ttft="50 ms", tpot="3 ms") + """\
  - {id: rg16, quantity: request_goodput, at: {concurrency: 16}, predicted: 8 req/s, tolerance: ±75%}
  - {id: rg4, quantity: request_goodput, at: {concurrency: 4}, predicted: 20 req/s}
"""


@pytest.mark.slow
def test_replay_scores_vllms_request_goodput(pytester: pytest.Pytester) -> None:
    (pytester.path / "closed.yaml").write_text(REPLAYED)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:html", "--replay", str(RESULTS),
                                      "closed.yaml", "-rA", timeout=300)
    out = r.stdout.str()
    r.assert_outcomes(passed=1, failed=1)
    # the failure's note says how many requests were good; the table holds both readings
    assert "4 of 12 requests met TTFT ≤ 50 ms and TPOT ≤ 3 ms" in out, out[-3000:]
    assert "[1.7477 req/s, 7.7108 req/s]" in out  # 12.653551 × Wilson(4, 12) = 12.653551 × [0.13812, 0.60938]
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith(("rg16 ", "rg4 "))}
    assert "7.6055 req/s" in rows["rg16"] and "PASS" in rows["rg16"]
    assert "4.2179 req/s" in rows["rg4"] and "FAIL" in rows["rg4"]


SPEC = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}
workload: {input_len: 16, output_len: 4}
sweep: {concurrency: [2], rates: [20], requests_per_point: 8, warmup: 1}
slo: {ttft: 10 s, tpot: 5 s}
predictions:
  - {id: rg, quantity: request_goodput, at: {concurrency: 2}, predicted: 1000 req/s}
  - {id: rgo, quantity: request_goodput, at: {rate: 20}, predicted: 1000 req/s}
"""


@pytest.mark.slow
def test_a_live_run_records_and_scores_it(pytester: pytest.Pytester, stub_server) -> None:
    srv = stub_server(model="roofline-tiny", max_model_len=1024, token_delay_s=0.01)
    (pytester.path / "p.roofline.yaml").write_text(SPEC)
    r = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:html", "p.roofline.yaml", "--endpoint",
                           srv.url + "/v1", "--roofline-out", "out", "-rA")
    r.assert_outcomes(failed=2)  # 1000 req/s is far above any stub run
    (results,) = list((pytester.path / "out").rglob("results.json"))
    points = json.loads(results.read_text())["points"]
    assert sorted(p["mode"] for p in points) == ["closed", "open"]
    # the open point says how its sends spanned (vllm bench serve's fixed N / rate); a closed loop has no schedule
    assert {p["mode"]: p.get("arrival_span") for p in points} == {"closed": None, "open": "fixed"}
    for p in points:  # the closed loop's point and the open loop's
        client = p["client"]
        gp, rt = client["goodput"], client["request_throughput_req_s"]
        assert gp["slo_ms"] == {"ttft_ms": 10000.0, "tpot_ms": 5000.0}
        assert (gp["good"], gp["completed"]) == (8, 8) and gp["req_s"] == pytest.approx(rt)
        assert gp["interval"]["lo"] == pytest.approx(rt * 8 / (8 + Z2))
        assert gp["interval"]["hi"] == pytest.approx(rt)
    assert r.stdout.str().count("8 of 8 requests met TTFT ≤ 10000 ms and TPOT ≤ 5000 ms") == 2
