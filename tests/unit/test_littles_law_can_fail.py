"""Little's law as a check that can fail (trial s16, H2): λ·W against an L not computed from the same records —
the configured concurrency C of a closed loop, the server's mean running + waiting of an open loop — never the
client's own time-averaged in-flight count, which equals λ·W by construction."""

from __future__ import annotations

from typing import Any

import pytest
from support.paths import PEERS

from pytest_roofline.errors import NotMeasured
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.quantities.littles import littles_reading
from pytest_roofline.report.points import points_table
from pytest_roofline.scoring import VerdictStatus, score

SPEC = """hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: 0.32.0, cpu_kvcache_space: 1 GiB, args: {dtype: bfloat16, max_model_len: 1024}}
workload: {input_len: 128, output_len: 32}
sweep: {mode: %s, %s}
predictions:
  - {id: ll, quantity: littles_law_ratio, at: {%s: every}, predicted: 1.0, tolerance: ±5%%}
"""


def _closed_point(c: int, lam: float, w_s: float, client_l: float) -> dict[str, Any]:
    return {"id": f"closed-c{c}", "mode": "closed", "concurrency": c,
            "client": {"request_throughput_req_s": lam, "mean_in_flight": client_l,
                       "littles_law": {"L": client_l, "lambda_req_s": lam, "W_s": w_s, "lambda_W": lam * w_s,
                                       "ratio": None}}}


def _open_point(rate: float, lam: float, w_s: float, timeline: list[dict] | None,
                window: list[float] | None = None) -> dict[str, Any]:
    pt: dict[str, Any] = {"id": f"open-r{rate:g}", "mode": "open", "rate_req_s": rate,
                          "client": {"request_throughput_req_s": lam,
                                     "littles_law": {"L": lam * w_s, "lambda_req_s": lam, "W_s": w_s,
                                                     "lambda_W": lam * w_s, "ratio": None}}}
    if timeline is not None:
        pt["server"] = {"timeline": timeline, **({"timeline_window_s": window} if window else {})}
    return pt


def _verdicts(mode: str, points: list[dict[str, Any]]) -> dict[str, Any]:
    sweep = ("concurrency: [" + ", ".join(str(p["concurrency"]) for p in points) + "]" if mode == "closed"
             else "rates: [" + ", ".join(f"{p['rate_req_s']:g} req/s" for p in points) + "]")
    spec = loads_spec(SPEC % (mode, sweep, "concurrency" if mode == "closed" else "rate"))
    meas = RecordedMeasurement({"points": points})
    return {p.id: score(spec, p, "measured", meas) for p in spec.predictions}


def test_a_closed_loop_that_held_80_percent_of_c_fails_and_one_that_held_c_passes() -> None:
    # C = 10. Starved: λ = 4 req/s, W = 2 s → λ·W = 8 = 0.8 of C → −20%, outside ±5%. The client's own in-flight
    # average is 8 too (λ·W by construction): as the divisor it would have read 1.000 and passed.
    starved = _closed_point(10, 4.0, 2.0, client_l=8.0)
    r = littles_reading(starved)
    assert r.ratio == pytest.approx(0.8) and r.big_l == 10 and r.source == "configured"
    # held: λ = 5 req/s, W = 2 s → λ·W = 10 = C → 1.000
    held = _closed_point(20, 5.0, 4.0, client_l=20.0)
    assert littles_reading(held).ratio == pytest.approx(1.0)
    v = _verdicts("closed", [starved, held])
    assert len(v) == 2, list(v)
    fail = [x for x in v.values() if x.status == VerdictStatus.FAIL]
    ok = [x for x in v.values() if x.status == VerdictStatus.PASS]
    assert len(fail) == 1 and fail[0].measured_value == pytest.approx(0.8), [x.reason for x in v.values()]
    assert len(ok) == 1 and ok[0].measured_value == pytest.approx(1.0)


def test_the_detail_line_shows_lambda_w_c_and_the_client_l_as_bookkeeping() -> None:
    text = littles_reading(_closed_point(10, 4.0, 2.0, client_l=8.0)).detail()
    assert "λ = 4 req/s × W = 2000 ms" in text and "λ·W = 8" in text
    assert "C (configured concurrency) = 10" in text
    assert "client's own time-averaged in flight 8 is bookkeeping" in text


def test_an_open_loop_point_with_a_timeline_divides_by_the_servers_running_plus_waiting() -> None:
    # polls every 0.5 s; the window [1.0, 3.0] holds the polls at 1.0 .. 3.0: running + waiting = 3+1, 4+0, 4+2,
    # 3+0, 5+1 → 4, 4, 6, 3, 6 → mean 23 / 5 = 4.6. The idle polls at 0.0, 0.5 and 3.5 are outside the window.
    # λ = 2.3 req/s, W = 2.2 s → λ·W = 5.06; ratio = 5.06 / 4.6 = 1.1.
    tl = [{"t_s": t, "running": r, "waiting": w} for t, r, w in
          ((0.0, 0, 0), (0.5, 1, 0), (1.0, 3, 1), (1.5, 4, 0), (2.0, 4, 2), (2.5, 3, 0), (3.0, 5, 1), (3.5, 0, 0))]
    pt = _open_point(4, 2.3, 2.2, tl, window=[1.0, 3.0])
    r = littles_reading(pt)
    assert r.big_l == pytest.approx(4.6) and r.polls == 5 and r.source == "server"
    assert r.ratio == pytest.approx(1.1)
    assert "L (server: mean running + waiting over 5 polls) = 4.6" in r.detail()
    v = _verdicts("open", [pt])
    (only,) = v.values()
    assert only.status == VerdictStatus.FAIL and only.measured_value == pytest.approx(1.1)


def test_an_older_timeline_without_a_window_drops_the_idle_polls_at_its_ends() -> None:
    tl = [{"t_s": t, "running": r, "waiting": 0} for t, r in ((0.0, 0), (0.5, 2), (1.0, 4), (1.5, 0), (2.0, 0))]
    # the busy polls 0.5 .. 1.0: (2 + 4) / 2 = 3
    assert littles_reading(_open_point(2, 1.5, 2.0, tl)).big_l == pytest.approx(3.0)


def test_an_open_loop_point_without_a_timeline_is_not_measured_with_the_reason() -> None:
    pt = _open_point(4, 2.0, 1.0, None)
    with pytest.raises(NotMeasured) as exc:
        littles_reading(pt)
    why = str(exc.value)
    assert "an open loop fixes the arrival rate, not L" in why
    assert "equals λ·W by construction" in why and "sweep.timeline: 0.5 s" in why
    (only,) = _verdicts("open", [pt]).values()
    assert only.status == VerdictStatus.SKIP and only.measured_value is None
    assert "sweep.timeline: 0.5 s" in only.reason


def test_a_peer_file_is_scored_against_its_configured_concurrency() -> None:
    # the real vllm bench serve files at C = 1, 2, 4 (32 requests): λ·W ÷ C = 0.995, 0.994, 0.990 (worked by hand
    # from request_throughput × mean_e2el_ms in tests/unit/test_peer_trial15.py)
    data = load_any(PEERS / "cpu-tiny-vllm-bench-32")
    spec = loads_spec(SPEC % ("closed", "concurrency: [1, 2, 4]", "concurrency"))
    pts = {p["concurrency"]: p for p in data["points"]}
    for c, want in ((1, 0.995), (2, 0.994), (4, 0.990)):
        r = littles_reading(pts[c])
        assert r.source == "configured" and r.big_l == c and round(r.ratio, 3) == want
        assert r.client_l is None  # the file records no in-flight count
    verdicts = [score(spec, p, "measured", RecordedMeasurement(data)) for p in spec.predictions]
    assert [v.status for v in verdicts] == [VerdictStatus.PASS] * 3, [v.reason for v in verdicts]
    assert sorted(round(v.measured_value, 3) for v in verdicts) == [0.990, 0.994, 0.995]
    html = points_table(spec, None, data)
    row = next(r for r in html.split("<tr")[1:] if ">closed-c4" in r)
    assert ">0.990</span>" in row and "✓" in row
