"""Every measured number with its uncertainty: intervals, steady windows, repeats and INCONCLUSIVE verdicts.

The expected values are worked by hand in the comments (binomial tails, Student-t table values, batch means of
arithmetic series), never read back from the code under test.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from support.paths import DAY3_RESULTS, RECORDED
from support.specs import DAY3_TTFT_C16

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.stats import (
    Interval,
    combine_repeats,
    mean_interval,
    min_samples_for_bound,
    mser_truncation,
    next_run_interval,
    order_statistic_ranks,
    percentile_interval,
    rate_interval,
    requests_to_decide,
    steady_summary,
    steady_window,
    summarize_records,
    t_quantile,
)
from pytest_roofline.scoring import VerdictStatus, score

C2_REQUESTS = RECORDED / "cpu-prefill-heavy-2026-12-01.closed-c2.requests.jsonl"


# ---- the Interval API -----------------------------------------------------------------------------------------
def test_student_t_quantiles_match_the_table():
    # two-sided 95 % critical values of Student's t (any table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2):
    # 12.706 (1 dof), 2.776 (4), 2.262 (9), 2.093 (19), 1.984 (100)
    for dof, want in ((1, 12.706), (4, 2.776), (9, 2.262), (19, 2.093), (100, 1.984)):
        assert t_quantile(0.975, dof) == pytest.approx(want, abs=1e-3)


def test_median_ranks_of_100_samples_are_40_and_61():
    # B ~ Binomial(100, 0.5): P(B <= 39) = 0.0176 <= 0.025 < P(B <= 40) = 0.0284, so l - 1 = 39, l = 40; by
    # symmetry P(B >= 61) = 0.0176, so u = 61: the textbook 95 % interval (x_(40), x_(61)) for n = 100
    assert order_statistic_ranks(100, 0.5, 0.95) == (40, 61)
    iv = percentile_interval(np.arange(1.0, 101.0), 0.5)  # x_(k) = k
    assert (iv.lo, iv.hi, iv.n, iv.method) == (40.0, 61.0, 100, "order-statistic")
    assert iv.estimate == pytest.approx(50.5)  # numpy's linear interpolation between x_(50) and x_(51)


def test_a_p99_from_80_requests_has_no_upper_bound():
    # all 80 samples lie below the true p99 with probability 0.99**80 = 0.448 > 0.025: no order statistic bounds
    # it from above at 95 %. An upper bound needs 0.99**n <= 0.025: n >= ln 0.025 / ln 0.99 = 367.04 -> 368
    iv = percentile_interval(np.arange(1.0, 81.0), 99)
    assert math.isinf(iv.hi) and iv.hi > 0 and math.isfinite(iv.lo)
    assert "p99 from 80 samples: no upper bound at 95%" in iv.note
    assert min_samples_for_bound(0.99, 0.95, "upper") == 368
    assert "no upper bound at 95%" in iv.text("ms")
    # the JSON form writes the missing side as null and reads it back as +inf
    back = Interval.from_json(json.loads(json.dumps(iv.to_json())))
    assert back.hi == math.inf and back.lo == iv.lo and back.quantile == 0.99


def test_p99_lower_bound_of_100_samples_is_the_97th():
    # A = samples above the p99 ~ Binomial(100, 0.01): P(A >= 3) = 1 - (0.3660 + 0.3697 + 0.1849) = 0.0794 > 0.025,
    # P(A >= 4) = 0.0794 - 0.0610 = 0.0184 <= 0.025: x_(100 - 4 + 1) = x_(97) is the 95 % lower bound
    iv = percentile_interval(np.arange(1.0, 101.0), 0.99)
    assert iv.lo == 97.0 and iv.hi == math.inf


def test_mean_intervals_by_repeats_and_batch_means():
    # repeats 1..5: mean 3, sd sqrt(2.5) = 1.5811, se 0.7071, t(0.975, 4) = 2.776 -> ±1.963
    iv = mean_interval([1, 2, 3, 4, 5], method="repeats")
    assert (iv.lo, iv.hi) == (pytest.approx(3 - 1.963, abs=2e-3), pytest.approx(3 + 1.963, abs=2e-3))
    # 0..99 in time order: 20 batches of 5 with means 2, 7, ..., 97 (step 5); the sample sd of an arithmetic
    # series of n terms with step h is h sqrt(n (n + 1) / 12) = 5 sqrt(35) = 29.58, se = 29.58 / sqrt(20) = 6.614,
    # t(0.975, 19) = 2.093 -> 49.5 ± 13.84
    iv = mean_interval(np.arange(100.0))
    assert iv.estimate == pytest.approx(49.5)
    assert iv.hi - iv.estimate == pytest.approx(13.84, abs=0.01)
    assert iv.method == "batch-means" and iv.n == 100


def test_rate_interval_over_sub_windows():
    # one event every 10 ms over [0, 10) s: 1000 events, 100 /s; every one of the 20 sub-windows of 0.5 s holds
    # exactly 50 of them, so the batch means agree and the interval has no width
    t = 0.005 + 0.01 * np.arange(1000)
    iv = rate_interval(t, (0.0, 10.0))
    assert iv.estimate == pytest.approx(100.0) and iv.lo == pytest.approx(100.0) and iv.hi == pytest.approx(100.0)
    # weights: 2 tokens per event -> 200 tok/s
    assert rate_interval(t, (0.0, 10.0), weights=np.full(1000, 2.0)).estimate == pytest.approx(200.0)


def test_requests_to_decide_by_the_square_root_rule():
    # the median of 1..100: [40, 61] around 50.5; a bound at 55 sits 4.5 above, the upper half-width is 10.5:
    # n must grow by (10.5 / 4.5)² -> 100 · 5.444 = 544.4 requests, 445 more
    iv = percentile_interval(np.arange(1.0, 101.0), 0.5)
    assert requests_to_decide(iv, 55.0, 100) == 445
    assert requests_to_decide(iv, 70.0, 100) == 0  # already outside the interval
    # a p99 of 80 with a bound above the estimate: at least 368 samples before any upper bound exists
    p99 = percentile_interval(np.arange(1.0, 81.0), 0.99)
    more = requests_to_decide(p99, 85.0, 80)
    assert more is not None and more >= 368 - 80


# ---- steady state -----------------------------------------------------------------------------------------------
def test_mser5_drops_a_transient_and_nothing_else():
    # 10 slow requests (100) then 90 alternating 10/12: batches of 5 are [100, 100, 10.8, 11.2, ...]; dropping the
    # 2 slow batches leaves Σ(Z - Z̄)² = 0.04 (k - d), MSER(d) = 0.04 / (k - d), which grows with every further
    # batch dropped: d = 2, 10 requests
    series = [100.0] * 10 + [10.0, 12.0] * 45
    dropped, why = mser_truncation(series)
    assert dropped == 10 and "MSER-5" in why
    assert mser_truncation([5.0] * 12)[0] == 0  # too short (< 20): nothing dropped, said so


def _records() -> list[RequestRecord]:
    return [RequestRecord(**json.loads(line)) for line in C2_REQUESTS.read_text().splitlines()]


def test_steady_window_of_the_recorded_closed_c2_point():
    # the recorded point: 4 warm-up + 32 measured requests, 2 clients; the last two sends (both at +3.609 s)
    # are still running when the drain begins, so they are left out; both first sends (+0.000 s) were in flight
    # when the count first reached 2, so the window opens at the first send (MSER then decides on the TTFTs)
    recs = _records()
    t0 = min(r.sent_s for r in recs if not r.warmup)
    win = steady_window(recs, t0, concurrency=2)
    assert win.method == "detect" and win.dropped_drain == 2
    assert win.end_s == pytest.approx(t0 + 3.609, abs=1e-3)
    assert len(win.indices) == 32 - win.dropped_warmup - 2
    assert "in flight first reached 2" in win.reason and "MSER-5" in win.reason
    off = steady_window(recs, t0, concurrency=2, method="off")
    assert len(off.indices) == 32 and off.method == "off"


def test_old_figures_are_unchanged_and_the_steady_ones_are_added():
    recs = _records()
    t0 = min(r.sent_s for r in recs if not r.warmup)
    before = summarize_records(recs, t0)
    extra = steady_summary(recs, t0, concurrency=2, method="off")
    # off: every measured request, so the steady percentiles equal the whole-window ones
    assert extra["steady"]["ttft_ms"]["p50"] == pytest.approx(before["ttft_ms"]["p50"])
    iv = extra["intervals"]["ttft_ms.p99"]
    # 32 TTFTs: 0.99**32 = 0.725 > 0.025, no upper bound
    assert iv["hi"] is None and iv["n"] == 32 and iv["requests"] == 32
    assert extra["steady_window"]["method"] == "off"


def test_repeats_are_averaged_with_a_t_interval():
    a = {"completed": 10, "failed": 0, "ttft_ms": {"p50": 100.0}, "steady": {"completed": 9, "ttft_ms": {"p50": 1.0}}}
    b = {"completed": 10, "failed": 0, "ttft_ms": {"p50": 110.0}, "steady": {"completed": 9, "ttft_ms": {"p50": 3.0}}}
    c = combine_repeats([a, b])
    assert c["ttft_ms"]["p50"] == pytest.approx(105.0) and c["completed"] == 20
    # the whole runs (what a verdict is scored on, issue 20): 100 and 110 -> mean 105, sd sqrt(50), se 5
    run = c["intervals"]["ttft_ms.p50"]
    assert run["method"] == "repeats" and run["n"] == 2 and run["requests"] == 20 and c["intervals_window"] == "run"
    assert run["hi"] == pytest.approx(105 + 12.706 * 5, abs=1e-2)
    # the steady windows (window: steady): two repeats 1 and 3: mean 2, sd sqrt(2), se 1, t(0.975, 1) = 12.706
    iv = c["steady_intervals"]["ttft_ms.p50"]
    assert iv["method"] == "repeats" and iv["n"] == 2 and iv["requests"] == 18
    assert iv["hi"] == pytest.approx(2 + 12.706, abs=1e-3)
    # where a rerun of 2 repeats lands: 2 ± 12.706 · sqrt(2) · sqrt(1/2 + 1/2) = 2 ± 17.969
    assert iv["next_lo"] == pytest.approx(2 - 17.969, abs=1e-3) and iv["next_hi"] == pytest.approx(2 + 17.969, abs=1e-3)
    assert len(c["repeats"]) == 2


def test_next_run_interval_is_the_prediction_interval_and_covers_at_its_level():
    # values 1, 2, 3, 4: mean 2.5, s = sqrt(5/3) = 1.29099, t(0.975, 3) = 3.18245 (NIST table 1.3.6.7.2)
    lo, hi = next_run_interval([1, 2, 3, 4])  # the next 4 repeats' mean: half = t · s · sqrt(1/4 + 1/4)
    assert (lo, hi) == pytest.approx((2.5 - 2.90514, 2.5 + 2.90514), abs=1e-4)
    lo, hi = next_run_interval([1, 2, 3, 4], next_repeats=1)  # one next run: sqrt(1/4 + 1) = 1.11803
    assert hi - 2.5 == pytest.approx(3.18245 * 1.29099 * 1.11803, abs=1e-4)
    assert next_run_interval([5.0]) == (-math.inf, math.inf)
    # exchangeable normal runs: 3 repeats predict the next 3 repeats' mean about 95 % of the time (binomial sd of
    # 4,000 trials at 0.95: 0.34 %), while the confidence interval of the mean holds it less often: it holds it
    # when |x̄ − ȳ| < t(0.975, 2) · s/√3, and (x̄ − ȳ) / (s · √(2/3)) is t with 2 dof, so the rate is
    # P(|T2| < 4.3027 / √2 = 3.0425) = 0.907
    rng = np.random.default_rng(11)
    pi = ci = 0
    for _ in range(4000):
        now, nxt = rng.normal(10.0, 2.0, 3), rng.normal(10.0, 2.0, 3).mean()
        lo, hi = next_run_interval(now)
        pi += lo <= nxt <= hi
        iv = mean_interval(now, 0.95, method="repeats")
        ci += iv.lo <= nxt <= iv.hi
    assert abs(pi / 4000 - 0.95) < 0.015 and abs(ci / 4000 - 0.907) < 0.015


# ---- INCONCLUSIVE -----------------------------------------------------------------------------------------------
def _synthetic_point() -> dict[str, Any]:
    """100 sequential requests (one client) whose TTFTs are 1, 2, ..., 100 ms in a shuffled order, so the order
    statistics are known: x_(k) = k ms. Each request sends at 0.2 s steps and streams 4 tokens."""
    rng = np.random.default_rng(7)
    ttfts = rng.permutation(np.arange(1, 101)) / 1e3
    recs = []
    for i, ttft in enumerate(ttfts):
        sent = 10.0 + 0.2 * i
        chunks = [sent + ttft + 0.01 * j for j in range(4)]
        recs.append(RequestRecord(index=i, request_id=str(i), warmup=False, input_len=8, output_len=4, sent_s=sent,
                                  first_token_s=chunks[0], chunk_times_s=chunks, end_s=chunks[-1], prompt_tokens=8,
                                  completion_tokens=4, status="ok"))
    client = summarize_records(recs, 10.0)
    client.update(steady_summary(recs, 10.0, concurrency=1, method="off"))
    return {"id": "closed-c1", "mode": "closed", "concurrency": 1, "input_len": 8, "output_len": 4,
            "num_requests": 100, "warmup_requests": 0, "client": client}


SPEC = """
hardware: cpu
model: roofline-tiny
workload: {input_len: 8, output_len: 4}
sweep: {mode: closed, concurrency: [1]}
predictions:
  # the median of 1..100 ms is 50.5 ms with the 95 % interval [40, 61] ms (ranks 40 and 61 of 100)
  - {id: straddles, quantity: ttft_p50, at: {concurrency: 1}, predicted: 50 ms, tolerance: ±10%}   # [45, 55]
  - {id: inside, quantity: ttft_p50, at: {concurrency: 1}, predicted: 50 ms, tolerance: ±50%}      # [25, 75]
  - {id: outside, quantity: ttft_p50, at: {concurrency: 1}, predicted: 200 ms, tolerance: ±10%}    # [180, 220]
  # the p99 of 100: [97 ms, +inf): decided as a miss against a band that ends below 97 ms, never as a pass
  - {id: p99-above-band, quantity: ttft_p99, at: {concurrency: 1}, predicted: 50 ms, tolerance: ±10%}  # [45, 55]
  - {id: p99-open-side, quantity: ttft_p99, at: {concurrency: 1}, predicted: 100 ms, tolerance: ±10%}  # [90, 110]
"""


def _verdicts() -> dict[str, Any]:
    spec = loads_spec(SPEC)
    meas = RecordedMeasurement({"points": [_synthetic_point()]})
    return {p.id: score(spec, p, "measured", meas) for p in spec.predictions}


def test_a_tolerance_boundary_inside_the_interval_is_inconclusive():
    v = _verdicts()
    assert v["straddles"].status is VerdictStatus.INCONCLUSIVE
    assert v["straddles"].measured_lo == pytest.approx(0.040) and v["straddles"].measured_hi == pytest.approx(0.061)
    # both band edges (45 and 55 ms) lie inside [40, 61]: the 55 ms edge needs 100 · (10.5/4.5)² - 100 -> 445 more
    assert v["straddles"].requests_to_decide == 445
    assert "straddles the tolerance boundary" in v["straddles"].reason and "445 more requests" in v["straddles"].reason
    assert v["inside"].status is VerdictStatus.PASS
    assert v["outside"].status is VerdictStatus.FAIL
    assert v["p99-above-band"].status is VerdictStatus.FAIL  # 97 ms > 55 ms: decided although unbounded above
    assert v["p99-open-side"].status is VerdictStatus.INCONCLUSIVE  # 110 ms lies inside [97, +inf)
    assert "no upper bound at 95%" in v["p99-open-side"].interval_text
    d = v["p99-open-side"].to_dict()
    assert d["status"] == "inconclusive" and d["measured_hi"] is None


def test_a_point_without_intervals_scores_as_before():
    # a file from before intervals (the recorded day3 run): no interval, a plain pass/fail
    rec = json.loads(DAY3_RESULTS.read_text())
    spec = loads_spec(DAY3_TTFT_C16)
    v = score(spec, spec.predictions[0], "measured", RecordedMeasurement(rec))
    assert v.status is VerdictStatus.PASS and v.interval_text == "" and v.measured_lo is None


# ---- the pytest outcome ----------------------------------------------------------------------------------------
@pytest.fixture
def replay_dir(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "synthetic.roofline.yaml").write_text(SPEC)
    (pytester.path / "synthetic.results.json").write_text(json.dumps({
        "schema": "pytest-roofline/results", "schema_version": 1, "source": "measured", "status": "complete",
        "setup": {},
        "points": [_synthetic_point()]}))
    return pytester


@pytest.mark.parametrize(("policy", "outcomes"), [
    (None, {"passed": 1, "failed": 2}),
    ("fail", {"passed": 1, "failed": 4}),
    ("pass", {"passed": 3, "failed": 2}),
])
def test_inconclusive_outcome_policy(replay_dir: pytest.Pytester, policy: str | None, outcomes: dict[str, int]):
    args = ["synthetic.roofline.yaml", "--replay", "synthetic.results.json", "--roofline-allow-mismatch", "-p",
            "no:html", "-rs"]
    if policy:
        args += ["--roofline-inconclusive", policy]
    result = replay_dir.runpytest(*args)
    result.assert_outcomes(**outcomes)
    out = result.stdout.str()
    if policy is None:  # its own category in the counts line, never counted as passed
        assert "2 inconclusive" in out
        assert "INCONCLUSIVE" in out


def test_junit_properties_carry_the_interval_and_the_requests_to_decide():
    from pytest_roofline.report.junit import junit_properties

    props = dict(junit_properties(_verdicts()["straddles"]))
    assert props["roofline_verdict"] == "inconclusive"
    # the interval [40, 61] ms of the median of 1..100 ms, in ms like every time property
    assert props["roofline_measured_ci_lo_ms"] == "40" and props["roofline_measured_ci_hi_ms"] == "61"
    assert props["roofline_requests_to_decide"] == "445"


def test_the_table_and_the_one_line_form_say_inconclusive():
    from types import SimpleNamespace

    from pytest_roofline.report.terminal import failure_line, summary_table

    d = _verdicts()["straddles"].to_dict()
    line = failure_line(_verdicts()["straddles"])
    assert line.startswith("straddles: INCONCLUSIVE") and "~445 more requests would decide it" in line
    report = SimpleNamespace(roofline=d, when="call", outcome="skipped", skipped=True, failed=False)
    table = summary_table([report], width=100)
    assert "INCONCLUSIVE" in table[2] and table[-1] == "1 inconclusive"
