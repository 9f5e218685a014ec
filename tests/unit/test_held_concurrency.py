"""A closed loop that did not hold its concurrency (a starved load generator) is flagged (issue 21).

The figures are a real starved point (run r4-1 of benchmarks/data/drift-cpu-runs-48x.json, its results file's
point closed-c8: 4.4535 requests in flight over the steady window, 4.4570 over the whole run, read lag p99
432.7 ms) and hand-made edges of the 90 % rule."""

from __future__ import annotations

import pytest

from pytest_roofline.measure.stats import HELD_SHARE, held_flag


def test_a_starved_closed_loop_is_flagged_with_what_it_held_and_the_read_lag():
    flag = held_flag({"steady_mean_in_flight": 4.4535, "mean_in_flight": 4.4570}, 8, {"p50": 0.036, "p99": 432.71})
    assert flag is not None
    # 4.4535 / 8 = 0.5567 -> 56 %; the steady figure (4.45), not the whole run's (4.46)
    assert "4.45 of 8 requests in flight on average (56%)" in flag
    assert "433 ms after the data arrived (read lag p99)" in flag
    assert flag.startswith("concurrency not held:")


@pytest.mark.parametrize(("held", "flagged"), [(7.2, False), (7.19, True), (8.0, False), (0.0, True)])
def test_the_rule_is_90_percent_of_the_concurrency(held, flagged):
    assert HELD_SHARE == 0.9
    # 7.2 / 8 = 0.9 exactly is held; 7.19 / 8 = 0.89875 is not
    assert (held_flag({"steady_mean_in_flight": held}, 8) is not None) is flagged


def test_the_whole_run_figure_when_the_steady_one_is_missing_and_no_lag_sentence_without_kernel_stamps():
    flag = held_flag({"steady_mean_in_flight": None, "mean_in_flight": 1.62}, 4, None)
    assert flag is not None and "1.62 of 4 requests in flight on average (40%)" in flag  # 1.62 / 4 = 0.405
    assert "read lag" not in flag


@pytest.mark.parametrize("client", [{}, {"steady_mean_in_flight": float("nan")}, {"mean_in_flight": True}, None])
def test_no_figure_no_flag(client):
    assert held_flag(client, 8) is None


def test_an_open_loop_is_never_flagged():
    # an open loop offers a rate, not a concurrency: the sweep passes no concurrency for it
    assert held_flag({"steady_mean_in_flight": 0.5}, None) is None
    assert held_flag({"steady_mean_in_flight": 0.5}, 0) is None


def test_fewer_requests_than_clients_is_named_as_such_not_as_a_slow_load_generator():
    # 20 requests for 64 clients: all 20 sent at once, at most 20 in flight; 12.5 / 64 = 0.195 -> 20 %
    flag = held_flag({"steady_mean_in_flight": 12.5}, 64, {"p99": 1.0}, num_requests=20)
    assert flag is not None and flag.startswith("concurrency not held: 12.50 of 64 requests in flight on average (20%)")
    assert "measured 20 requests, fewer than its 64 clients" in flag
    assert "load generator was slow" not in flag and "read lag" not in flag
    # as many requests as clients or more: a shortfall is the client's again
    assert "load generator was slow" in (held_flag({"steady_mean_in_flight": 12.5}, 64, None, num_requests=64) or "")
    assert held_flag({"steady_mean_in_flight": 19.0}, 20, None, num_requests=10) is None  # 95 %: held
