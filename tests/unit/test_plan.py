"""Planning: exactly the sweep points the selected predictions need, each once, in rising load."""

from __future__ import annotations

import textwrap

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.measure.plan import needs_engine, plan_points

SPEC = textwrap.dedent("""
    hardware: a100-sxm4-80gb
    model: qwen3-8b
    workload: {input_len: 512, output_len: 128}
    sweep: {concurrency: [1, 4, 16], rates: [2.5], requests_per_point: 80, warmup: 2, batch1: {requests: 3}}
    predictions:
      - {id: ridge, quantity: ridge_point, predicted: 153 FLOP/byte}
      - {id: kv, quantity: num_gpu_blocks, predicted: "25,600"}
      - {id: c16, quantity: output_throughput, at: {concurrency: 16}, predicted: 1000 tok/s}
      - {id: c16-again, quantity: ttft_p99, at: {concurrency: 16}, predicted: 500 ms}
      - {id: open, quantity: ttft_p50, at: {rate: 2.5}, predicted: 100 ms}
      - {id: ll, quantity: littles_law_ratio, at: {concurrency: every}, predicted: 1.0}
      - {id: knee, quantity: knee_concurrency, predicted: none}
      - {id: b1, quantity: batch1_fraction_of_ceiling, predicted: 70%}
""")


def _preds(spec, *ids):
    return [p for p in spec.predictions if p.id in ids]


def test_math_only_predictions_need_nothing():
    spec = loads_spec(SPEC)
    assert plan_points(spec, _preds(spec, "ridge")) == []
    assert not needs_engine(_preds(spec, "ridge"))
    # the KV count needs the engine's own report, but no sweep point
    assert needs_engine(_preds(spec, "kv")) and plan_points(spec, _preds(spec, "kv")) == []


def test_one_selected_prediction_runs_only_its_point():
    spec = loads_spec(SPEC)
    (p,) = plan_points(spec, _preds(spec, "c16"))
    assert (p.id, p.mode, p.concurrency, p.input_len, p.output_len) == ("closed-c16", "closed", 16, 512, 128)
    assert p.num_requests == 80  # the plain requests_per_point (Nx is refused beside sweep.rates)
    assert p.warmup_requests == 16  # at least one warm-up request per client


def test_points_are_shared_and_ordered():
    spec = loads_spec(SPEC)
    plans = plan_points(spec, spec.predictions)
    ids = [p.id for p in plans]
    assert ids == ["batch1", "closed-c1", "closed-c4", "closed-c16", "open-r2.5"]  # each once, rising load
    b1 = plans[0]
    assert (b1.concurrency, b1.num_requests) == (1, 3)
    open_ = plans[-1]
    assert (open_.mode, open_.rate_req_s, open_.concurrency) == ("open", 2.5, None)


def test_every_point_expansion_plans_each_point_once():
    spec = loads_spec(SPEC)
    ll = [p for p in spec.predictions if p.id.startswith("ll[")]
    assert [p.id for p in plan_points(spec, ll)] == ["closed-c1", "closed-c4", "closed-c16"]


def test_invalid_predictions_plan_nothing():
    spec = loads_spec(SPEC.replace("quantity: ttft_p99", "quantity: ttft_p999"))
    bad = [p for p in spec.predictions if p.error is not None]
    assert bad and plan_points(spec, bad) == []
