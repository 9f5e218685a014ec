"""The adaptive sweep: decision targets from the predictions, the stopping rule on draws with known answers, the
bisection of a knee, and the load generator stopping early against a stub server."""

from __future__ import annotations

import math
import textwrap
from dataclasses import replace

import numpy as np
import pytest
from support.openai_stub import StubServer
from support.patience import bound_s

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.loadgen import LoadSpec, RequestRecord, run_load
from pytest_roofline.measure.plan import DecisionTarget, PointPlan, plan_points
from pytest_roofline.measure.plan import stopping as adaptive
from pytest_roofline.quantities.analysis import throughput_knee


def spec(**kw) -> LoadSpec:
    """A closed-loop load of 4 clients, 12 requests of 16 prompt and 4 output tokens, with these changes."""
    return LoadSpec(**{**dict(model="tiny", token_id_range=(5, 300), mode="closed", concurrency=4, num_requests=12,
                              input_len=16, output_len=4, seed=7, point_id="closed-c4"), **kw})

# --------------------------------------------------------------------------------------------------------------
# decision targets
# --------------------------------------------------------------------------------------------------------------


def test_targets_come_from_the_tolerance_bands_and_the_slo_in_si_units():
    spec_ = loads_spec(textwrap.dedent("""
        hardware: a100-sxm4-80gb
        model: qwen3-8b
        workload: {input_len: 1024, output_len: 1024}
        sweep: {concurrency: [8, 16], requests_per_point: 10x, adaptive: true}
        slo: {ttft: 500 ms, tpot: 50 ms, percentile: p99}
        defaults: {tolerance: ±15%}
        predictions:
          - {id: t16, quantity: output_throughput, at: {concurrency: 16}, predicted: "1,742 tok/s"}
          - {id: q16, quantity: ttft_p50, at: {concurrency: 16}, predicted: 100 ms, tolerance: ">= 100 ms"}
          - {id: ll, quantity: littles_law_ratio, at: {concurrency: every}, predicted: 1.0, tolerance: ±2%}
          - {id: gp, quantity: goodput, at: {percentile: p99}, predicted: 640 tok/s}
    """))
    assert spec_.sweep.adaptive is True
    plans = {p.id: p for p in plan_points(spec_, spec_.predictions)}
    c16 = {(t.prediction_id, t.statistic): t for t in plans["closed-c16"].targets}
    # 1,742 ± 15 %: 1,742 × 0.85 = 1,480.7 and 1,742 × 1.15 = 2,003.3 tok/s
    assert c16[("t16", "output_throughput")].lo == pytest.approx(1480.7)
    assert c16[("t16", "output_throughput")].hi == pytest.approx(2003.3)
    # ">= 100 ms": a lower bound of 0.1 s, no upper bound
    assert (c16[("q16", "ttft_p50")].lo, c16[("q16", "ttft_p50")].hi) == (pytest.approx(0.1), None)
    # goodput at p99 reads every closed point through the SLOs: TTFT p99 <= 0.5 s AND TPOT p99 <= 0.05 s
    for plan in plans.values():
        slo = {t.statistic: t for t in plan.targets if t.prediction_id == "gp"}
        assert slo["ttft_p99"].hi == pytest.approx(0.5) and slo["ttft_p99"].lo is None
        assert slo["tpot_p99"].hi == pytest.approx(0.05) and slo["tpot_p99"].conjunction
        # Little's law gives no per-point band: it reads the point at whatever count it stops
        assert any(u.startswith("ll[") for u in plan.untargeted)
    assert "adaptive" not in plans["closed-c8"].to_dict() and "targets" not in plans["closed-c8"].to_dict()


def test_sweep_adaptive_must_be_a_boolean():
    from pytest_roofline.errors import SpecError

    preds = "predictions:\n  - {id: r, quantity: ridge_point, predicted: 153 FLOP/byte}\n"
    base = "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nsweep: {concurrency: [1], adaptive: %s}\n" + preds
    assert loads_spec(base % "false").sweep.adaptive is False
    assert loads_spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\n" + preds).sweep.adaptive is False
    with pytest.raises(SpecError, match="adaptive"):
        loads_spec(base % "sometimes")


# --------------------------------------------------------------------------------------------------------------
# the stopping rule on synthetic draws
# --------------------------------------------------------------------------------------------------------------


def _records(ttft_s: np.ndarray, *, concurrency: int = 4, tpot_s: float = 0.01, tokens: int = 16) -> list:
    """A closed loop of ``concurrency`` clients whose requests take the given TTFTs, then ``tokens`` − 1 gaps."""
    free = [0.0] * concurrency
    out = []
    for i, t in enumerate(ttft_s):
        c = min(range(concurrency), key=free.__getitem__)
        sent = free[c]
        first = sent + float(t)
        end = first + tpot_s * (tokens - 1)
        out.append(RequestRecord(index=i, request_id=f"r{i}", warmup=False, input_len=8, output_len=tokens,
                                 sent_s=sent, first_token_s=first,
                                 chunk_times_s=list(np.linspace(first, end, tokens)), end_s=end,
                                 prompt_tokens=8, completion_tokens=tokens, status="ok"))
        free[c] = end
    return out


def _plan(targets, cap: int, concurrency: int = 4) -> PointPlan:
    return PointPlan(id=f"closed-c{concurrency}", mode="closed", concurrency=concurrency, rate_req_s=None,
                     num_requests=cap, duration_s=None, warmup_requests=0, input_len=8, output_len=16,
                     targets=tuple(targets))


def test_looks_are_planned_geometrically_and_bonferroni_splits_alpha_over_them():
    rule = adaptive.StoppingRule()  # alpha 5 %, 8 looks
    looks = rule.looks(1280, 128)
    # from one round of the closed loop (128) to the cap (1280): ratio 10 ** (1/7) = 1.389 per look
    assert looks[0] == 128 and looks[-1] == 1280 and len(looks) == 8
    assert all(b / a == pytest.approx(10 ** (1 / 7), rel=0.01) for a, b in zip(looks, looks[1:], strict=False))
    assert rule.look_level(len(looks)) == pytest.approx(1 - 0.05 / 8)  # 0.99375 at each look
    assert rule.looks(10, 1)[0] == 2  # the floor: min_requests (2) when one round is a single request
    assert rule.looks(3, 8) == [3]  # a cap below one round: one look, at the cap


def test_min_samples_never_lets_a_p99_be_decided_from_few_requests():
    # at least one sample expected beyond the quantile: 1 / (1 − q), and never fewer than 8
    assert adaptive.min_samples("ttft_p99") == 100
    assert adaptive.min_samples("tpot_p95") == 20
    assert adaptive.min_samples("ttft_p50") == 8
    # a p99 whose band is far below every draw (>= 1 ms, draws ~100 ms): the order statistics would bound it from
    # two samples ((1 − 0.99)² < 0.003), but no look before 100 requests may decide it
    rng = np.random.default_rng(1)
    recs = _records(np.exp(rng.normal(math.log(0.1), 0.3, 400)))
    target = DecisionTarget("ttft_p99", "ttft_p99", 0.001, None, "p99-floor")
    stop, used = adaptive.replay_point(_plan([target], cap=400), recs)
    assert stop.decisions[0].state == adaptive.INSIDE
    assert all(n >= 100 for n in stop.looks_taken[-1:]) and stop.looks_taken[-1] >= 100
    assert all(n < 100 for n in stop.looks_taken[:-1])  # the earlier looks happened, and did not decide it
    assert len(used) < 400  # ... and it stopped at the first look past the floor, not at the cap


def test_decided_early_when_far_from_the_band():
    # TTFT lognormal around 100 ms (σ 0.3): P(TTFT > 500 ms) = P(z > ln 5 / 0.3 = 5.4) ≈ 3e-8, so the sample max
    # bounds the median below 0.5 s once 0.5**n <= α/2 per look: at level 1 − 0.05/8, n >= 9
    rng = np.random.default_rng(2)
    recs = _records(np.exp(rng.normal(math.log(0.1), 0.3, 1000)))
    target = DecisionTarget("ttft_p50", "ttft_p50", None, 0.5, "fast")
    stop, used = adaptive.replay_point(_plan([target], cap=1000), recs)
    assert stop.stopped and stop.decisions[0].state == adaptive.INSIDE
    assert stop.looks_taken[-1] <= 20 and len(used) <= 20 + 4  # at most the requests in flight on top


def test_runs_to_the_cap_when_the_truth_sits_on_the_boundary():
    # the band's edge is the true median (100 ms): no look may decide it; without the futility rule the point
    # runs to its cap, with it the point may stop early but only as undecidable, never inside or outside
    rng = np.random.default_rng(3)
    recs = _records(np.exp(rng.normal(math.log(0.1), 0.3, 300)))
    target = DecisionTarget("ttft_p50", "ttft_p50", None, 0.1, "edge")
    patient = adaptive.StoppingRule(futility_factor=math.inf)
    stop, used = adaptive.replay_point(_plan([target], cap=300), recs, patient)
    assert stop.stopped is None and len(used) == 300
    assert stop.decisions[0].state not in adaptive.DECIDED
    stop, used = adaptive.replay_point(_plan([target], cap=300), recs)
    assert stop.decisions[0].state not in adaptive.DECIDED


def test_a_side_the_cap_cannot_bound_is_futile_not_waited_for():
    # TPOT p99 <= 50 ms with TPOTs of 10 ms: deciding "inside" needs an upper bound on the p99, which needs
    # 0.99**n <= α/2: n >= ln(0.003125) / ln(0.99) = 574 samples at level 1 − 0.05/8. A cap of 80 never gets it
    recs = _records(np.full(80, 0.05), tpot_s=0.01)
    target = DecisionTarget("tpot_p99", "tpot_p99", None, 0.05, "slo")
    stop, used = adaptive.replay_point(_plan([target], cap=80), recs)
    assert stop.decisions[0].state == adaptive.FUTILE and "574" in stop.decisions[0].why
    assert len(used) < 80


def test_one_target_outside_decides_a_conjunction():
    # a goodput SLO at one point: TTFT p99 far above 0.5 s decides "misses the SLO", whatever TPOT p99 does
    rng = np.random.default_rng(4)
    recs = _records(np.exp(rng.normal(math.log(2.0), 0.2, 400)), tpot_s=0.01)
    targets = [DecisionTarget("ttft_p99", "ttft_p99", None, 0.5, "gp", conjunction=True),
               DecisionTarget("tpot_p99", "tpot_p99", None, 0.05, "gp", conjunction=True)]
    stop, used = adaptive.replay_point(_plan(targets, cap=400), recs)
    states = {d.target.statistic: d.state for d in stop.decisions}
    assert states == {"ttft_p99": adaptive.OUTSIDE, "tpot_p99": adaptive.MOOT}
    assert len(used) < 400


def test_throughput_target_uses_only_finished_tokens():
    # 4 clients, each request 16 tokens over 0.05 + 15 × 0.01 = 0.2 s: 4 × 16 / 0.2 = 320 tok/s
    recs = _records(np.full(200, 0.05), concurrency=4, tpot_s=0.01)
    iv, _ = adaptive.statistic_interval("output_throughput", recs, (0.0, 8.0), 0.95)
    assert iv.estimate == pytest.approx(320, rel=0.03)
    band = DecisionTarget("output_throughput", "output_throughput", 500.0, 700.0, "tput")
    stop, used = adaptive.replay_point(_plan([band], cap=200), recs)
    assert stop.decisions[0].state == adaptive.OUTSIDE and len(used) < 200


def test_total_throughput_is_a_target_with_prompt_tokens_counted():
    # 4 clients, requests of 8 prompt + 16 output tokens over 0.05 + 15 x 0.01 = 0.2 s: 4 x 24 / 0.2 = 480 tok/s
    # total (320 tok/s output), the band [700, 900] decided outside well before the cap (trial s17 H1: total
    # throughput had no target, so its point stopped at the floor with a +-139% interval)
    recs = _records(np.full(200, 0.05), concurrency=4, tpot_s=0.01)
    iv, _ = adaptive.statistic_interval("total_throughput", recs, (0.0, 8.0), 0.95, 4)
    assert iv.estimate == pytest.approx(480, rel=0.03)
    out, _ = adaptive.statistic_interval("output_throughput", recs, (0.0, 8.0), 0.95, 4)
    assert (iv.hi - iv.lo) / iv.estimate == pytest.approx((out.hi - out.lo) / out.estimate, rel=1e-9)  # one interval
    band = DecisionTarget("total_throughput", "total_throughput", 700.0, 900.0, "tt")
    stop, used = adaptive.replay_point(_plan([band], cap=200), recs)
    assert stop.decisions[0].state == adaptive.OUTSIDE and len(used) < 200


def test_a_point_read_by_request_goodput_runs_to_its_cap():
    # request_goodput's band is one the stopping rule cannot read (measure.plan.RUN_TO_CAP_QUANTITIES): its point
    # must not stop at the floor the way a point without targets does
    spec = loads_spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nslo: {ttft: 50 ms}\n"
                      "sweep: {concurrency: [4], adaptive: true}\ndefaults: {tolerance: ±10%}\npredictions:\n"
                      "  - {id: rg, quantity: request_goodput, at: {concurrency: 4}, predicted: 2 req/s}\n"
                      "  - {id: tt, quantity: total_throughput, at: {concurrency: 4}, predicted: 600 tok/s}\n")
    (point,) = plan_points(spec, spec.predictions)
    assert point.to_cap == ("rg",) and [t.statistic for t in point.targets] == ["total_throughput"]
    recs = _records(np.full(64, 0.05), concurrency=4)
    plan = replace(_plan([], cap=64), to_cap=("rg",))
    stop, used = adaptive.replay_point(plan, recs)
    assert stop.stopped is None and sum(r.in_sample for r in used) == 64


def test_a_point_without_targets_stops_at_its_floor():
    recs = _records(np.full(64, 0.05), concurrency=4)
    stop, used = adaptive.replay_point(_plan([], cap=64), recs)
    # one round of 4; the 4 sent as those finished are in flight at the look, cancelled and discarded
    assert stop.looks_taken == [4] and len(used) <= 8
    assert sum(r.in_sample for r in used) == 4 and all(r.discarded for r in used if not r.in_sample)


def test_a_point_read_by_littles_law_runs_two_rounds_so_its_held_window_is_measured():
    # Little's law reads the held window (from C in flight to the last send); stopped after one round of 4, every
    # request was sent at t = 0 and the window is empty (C by construction, not scored). Its floor is 2 rounds.
    spec = loads_spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nsweep: {concurrency: [4], adaptive: true}\n"
                      "defaults: {tolerance: ±5%}\npredictions:\n"
                      "  - {id: ll, quantity: littles_law_ratio, at: {concurrency: 4}, predicted: 1.0}\n")
    (point,) = plan_points(spec, spec.predictions)
    assert point.held_window == ("ll",) and point.targets == () and "held_window" not in point.to_dict()
    assert adaptive.StoppingRule().looks(64, 4, rounds=2)[0] == 8
    recs = _records(np.full(64, 0.05), concurrency=4)
    stop, used = adaptive.replay_point(replace(_plan([], cap=64), held_window=("ll",)), recs)
    assert stop.looks_taken == [8] and sum(r.in_sample for r in used) == 8
    # the second round's 4 were sent while the first 4 were in flight: a held window with requests in it
    held = adaptive.stats.held_littles_law([r for r in used if r.in_sample], 4)
    assert held is not None and held["held_requests"] >= 4


# --------------------------------------------------------------------------------------------------------------
# ordering: implications between points, bisection of a knee
# --------------------------------------------------------------------------------------------------------------


def test_latency_bands_decided_at_one_concurrency_imply_others():
    t = DecisionTarget("ttft_p99", "ttft_p99", None, 0.5, "gp", conjunction=True)
    iv = adaptive.stats.Interval(0.2, 0.1, 0.3, 0.99, "order-statistic", 300, quantile=0.99)
    inside = adaptive.TargetDecision(t, iv, adaptive.INSIDE, 300)
    outside = adaptive.TargetDecision(t, iv, adaptive.OUTSIDE, 300)
    c8 = _plan([t], cap=80, concurrency=8)
    # met at 32 clients: met at 8 (latency does not fall as concurrency rises)
    reduced, implied = adaptive.implied_by(c8, [(_plan([t], 320, 32), [inside])])
    assert reduced.targets == () and implied[0].state == adaptive.INSIDE and "32" in implied[0].why
    # missed at 32 clients says nothing about 8
    reduced, implied = adaptive.implied_by(c8, [(_plan([t], 320, 32), [outside])])
    assert reduced.targets == (t,) and implied == []
    # missed at 4 clients: missed at 8
    reduced, implied = adaptive.implied_by(c8, [(_plan([t], 40, 4), [outside])])
    assert reduced.targets == () and implied[0].state == adaptive.OUTSIDE
    # the order that lets that happen: batch-1, then the closed loop from the top down
    plans = [_plan([], 10, c) for c in (1, 4, 16)]
    assert [p.concurrency for p in adaptive.adaptive_order(plans)] == [16, 4, 1]


def test_knee_bisection_measures_fewer_points_and_finds_the_same_knee():
    # T(c) = 1000 c / (c + 8): per-doubling gain T(2c)/T(c) − 1 = 8 / (2c + 8); below 10 % once c > 36, so on
    # the grid 1..256 the knee is 64 (gain at 32: 8/72 = 11.1 %, at 64: 8/136 = 5.9 %)
    grid = [1, 2, 4, 8, 16, 32, 64, 128, 256]

    def tput(c):
        return 1000.0 * c / (c + 8)

    knee, measured = adaptive.knee_bisection(grid, tput, 0.10)
    assert knee == 64 == throughput_knee([(c, tput(c)) for c in grid], 0.10)
    # pairs (8,16) no, (32,64) no, (64,128) yes: 5 of the 9 points
    assert measured == [8, 16, 32, 64, 128]
    # a curve that never flattens: no knee, still fewer points than the grid
    knee, measured = adaptive.knee_bisection(grid, float, 0.10)
    assert knee is None and len(measured) < len(grid)


# --------------------------------------------------------------------------------------------------------------
# the load generator stops early
# --------------------------------------------------------------------------------------------------------------


class _StopAfter:
    def __init__(self, n: int):
        self.n = n
        self.seen: int | None = None
        self.windows: list[tuple[float, float]] = []

    def wants_look(self, completed: int, elapsed_s: float) -> bool:
        return self.seen is None and completed >= self.n

    def __call__(self, records, window_s, elapsed_s):
        self.seen = len(records)
        self.windows.append(window_s)
        return f"enough after {len(records)}"


def test_closed_loop_stop_cancels_the_requests_in_flight_and_keeps_the_decided_sample():
    # 3 clients of 100-token streams at 5 ms a token (~0.5 s a request); the check stops at the 3rd completion.
    # At that moment the clients whose requests finished first have sent their next ones: those are in flight and
    # are cancelled (status "discarded", cut short: fewer than 100 chunks), never drained to the end.
    from pytest_roofline.measure import stats
    from pytest_roofline.measure.sweep import failed_point_reason

    s = spec(concurrency=3, num_requests=60, output_len=100, warmup_requests=0)
    stop = _StopAfter(3)
    with StubServer(token_delay_s=0.005) as srv:
        res = run_load(srv.url, s, stop_check=stop)
        sent = len(srv.requests)
    start, horizon = stop.windows[0]
    assert start == pytest.approx(res.measure_start_s) and horizon >= start
    kept = [r for r in res.records if r.in_sample]
    discarded = [r for r in res.records if r.discarded]
    assert stop.seen is not None and stop.seen >= 3 and sent == len(res.records) < 60
    # the sample is the requests sent by the horizon: all finished, all ok
    assert kept and all(r.ok and r.sent_s is not None and r.sent_s <= horizon for r in kept)
    # every other request sent was discarded: cut in flight, or finished but sent after the horizon
    assert len(kept) + len(discarded) == len(res.records)
    assert discarded and all(r.sent_s is not None and r.sent_s >= horizon for r in discarded)
    cut = [r for r in discarded if len(r.chunk_times_s) < 100]
    assert cut and all("adaptive stop" in (r.error or "") for r in discarded)
    # neither a failure nor a measurement
    assert failed_point_reason(res) is None and res.measured == kept
    assert stats.summarize(res, steady_state="off")["completed"] == len(kept)
    assert stats.failure_reasons(res.records) == []


def test_open_loop_stop_drops_due_requests_that_were_never_sent():
    s = spec(mode="open", concurrency=None, rate_req_s=400.0, num_requests=400, output_len=3, warmup_requests=0)
    stop = _StopAfter(20)
    with StubServer(token_delay_s=0.002) as srv:
        res = run_load(srv.url, s, stop_check=stop)
        sent = len(srv.requests)
    assert stop.seen is not None and len(res.records) < 400
    # every request the server read is recorded, and every record was sent (the ones sent by the horizon measured,
    # the rest discarded); on a loaded machine the stub may not have read a request the stop then cut before it
    # did (CI sim at 69226bb: 133 read of 278 written), so the server's count is a lower bound, not an equality
    assert sent <= len(res.records) and all(r.sent_s is not None for r in res.records)
    assert all(r.ok or r.discarded for r in res.records)
    assert all(r.ok for r in res.records if r.sent_s is not None and r.sent_s < stop.windows[0][1])


def test_adaptive_stop_through_the_load_generator():
    # the real rule on a stub server: a throughput band far above what 2 clients of 4-token streams get
    plan = _plan([DecisionTarget("output_throughput", "output_throughput", 1e7, None, "huge")], cap=300,
                 concurrency=2)
    stop = adaptive.AdaptiveStop(plan)
    s = spec(concurrency=2, num_requests=300, output_len=4, warmup_requests=2)
    with StubServer(token_delay_s=0.002) as srv:
        res = run_load(srv.url, s, stop_check=stop)
    measured = [r for r in res.records if not r.warmup]
    assert stop.stopped and stop.decisions[0].state == adaptive.OUTSIDE
    assert len(measured) < 300
    summary = stop.summary(res.records)
    assert summary["cap_requests"] == 300 and summary["targets"][0]["state"] == "outside"


def test_stop_check_needs_one_process():
    s = spec(concurrency=2, num_requests=10, output_len=2, warmup_requests=0, processes=2)
    with pytest.raises(ValueError, match="one-process"):
        run_load("http://127.0.0.1:9", s, stop_check=_StopAfter(1))


def test_sweep_order_runs_needed_points_first_then_bisects_the_knee_only_ones():
    # T(c) = 1000 c / (c + 8) as above (knee 64 on 1..256); c8 is needed by another prediction, the rest only by
    # the knee: c8 runs first, then the bisection asks for 16, 32, 64, 128 (8 is known) and skips 1, 2, 4, 256
    grid = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    plans = [_plan([], 10 * c, c) for c in grid]
    order = adaptive.SweepOrder(plans, knee_only=[p.id for p in plans if p.concurrency != 8], knee_gain=0.10)
    ran = []
    for plan in order:
        ran.append(plan.concurrency)
        c = plan.concurrency
        order.record(plan, {"id": plan.id, "client": {"output_throughput_tok_s": 1000.0 * c / (c + 8)}})
    assert ran == [8, 16, 32, 64, 128]
    assert [p.concurrency for p in order.skipped] == [1, 2, 4, 256]


def test_the_point_waits_for_the_server_to_drop_the_cancelled_requests(monkeypatch):
    # _settle_after_discards polls each source's /metrics until nothing runs or waits (vLLM aborts the cancelled
    # requests within a step), at most ABORT_SETTLE_TIMEOUT_S; nothing discarded or no /metrics: no wait at all
    from types import SimpleNamespace

    from pytest_roofline.measure import sweep as msweep

    kept = RequestRecord(index=0, request_id="a", warmup=False, input_len=4, output_len=4, status="ok")
    cut = RequestRecord(index=1, request_id="b", warmup=False, input_len=4, output_len=4, status="discarded")
    reads = iter([{"num_requests_running": 2, "num_requests_waiting": 1}, {"num_requests_running": 1},
                  {"num_requests_running": 0, "num_requests_waiting": 0}])
    calls = []

    def snapshot(url):
        calls.append(url)
        return next(reads)

    waited = msweep._settle_after_discards(SimpleNamespace(records=[kept, cut]), ["http://e"], snapshot)
    assert waited is not None and waited >= 0.1 and len(calls) == 3  # two 50 ms sleeps before the third read
    assert msweep._settle_after_discards(SimpleNamespace(records=[kept]), ["http://e"], snapshot) is None
    assert msweep._settle_after_discards(SimpleNamespace(records=[kept, cut]), [], snapshot) is None
    # a server that never drops them: the wait ends at the timeout
    monkeypatch.setattr(msweep, "ABORT_SETTLE_TIMEOUT_S", 0.2)
    waited = msweep._settle_after_discards(SimpleNamespace(records=[cut]), ["http://e"],
                                           lambda url: {"num_requests_running": 3})
    assert waited is not None and 0.2 < waited < bound_s(0.2), f"the wait for a server that never drops them "\
        f"ended after {waited:.1f} s, not at the 0.2 s timeout"
