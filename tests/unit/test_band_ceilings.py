"""A serving band never goes past what the sends allow (trial s23 M4): an open loop of N requests of L output tokens
sent over S seconds cannot measure more than N x L / S output tokens/s (the client's window runs from the first
send to the last response, after the last send), so its output-throughput band stops there: 64 x 2 = 128 tok/s at
2 req/s on a fixed span, where the band around the model's value reached 141."""

from __future__ import annotations

import pytest

from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup


@pytest.fixture(scope="module")
def tiny():
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                       engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                               "args": {"max_num_seqs": 8, "enforce_eager": True}},
                       workload={"input_len": 128, "output_len": 64})


@pytest.mark.parametrize("rate", [2.0, 8.0, 30.0])
def test_an_open_loops_throughput_band_stops_at_the_rate_its_sends_offer(tiny, rate):
    w = sv.workload_for_point(tiny, rate_req_per_s=rate, num_requests=40, point_id=f"open-r{rate:g}")
    pred = sv.simulate(tiny, w)
    lo, hi = pred.bands["output_throughput_tok_per_s"]
    assert hi == pytest.approx(64 * rate, rel=1e-12)  # 40 sends over 40 / rate s: 64 x rate tok/s
    assert lo < pred.output_throughput_tok_per_s <= hi


def test_a_drawn_span_stops_at_its_own_sends(tiny):
    """Drawn, the 40 sends at 2 req/s span what the seeded draw spans (model.workload.arrival_offsets_s)."""
    from pytest_roofline.model.workload import arrival_offsets_s
    w = sv.workload_for_point(tiny, rate_req_per_s=2.0, num_requests=40, point_id="open-r2", arrival_span="drawn")
    pred = sv.simulate(tiny, w)
    span = float(arrival_offsets_s(rate_req_per_s=2.0, count=40, stream_id="open-r2", span="drawn")[-1])
    lo, hi = pred.bands["output_throughput_tok_per_s"]
    assert hi <= 40 * 64 / span * (1 + 1e-12)


def test_a_closed_loops_band_is_not_clipped(tiny):
    w = sv.workload_for_point(tiny, concurrency=4, num_requests=40)
    pred = sv.simulate(tiny, w)
    lo, hi = pred.bands["output_throughput_tok_per_s"]
    assert lo < pred.output_throughput_tok_per_s < hi and hi / pred.output_throughput_tok_per_s > 1.05
