"""A value measured on another workload is another figure (trial s24 M6): a night whose prompts grew from 128 to 640
tokens read "6 compared (2 uncertain, 4 steady)", and on a GPU model would have read DRIFTED under
--roofline-drift-fail. A stored value now keeps the workload its points ran (``StoredValue.workload``): a change is
``prediction changed`` (``workload changed``), nights of another workload are neither its baseline nor in its
spread, and ``roofline compare`` does not judge the move."""

from __future__ import annotations

from dataclasses import replace

from support.paths import PEERS, RECORDED
from test_drift import one, run, value

from pytest_roofline.history import DriftPolicy, DriftStatus, changed_badge, compare_runs, value_workload
from pytest_roofline.measure.results import load_results
from pytest_roofline.measure.results.peers import load_any

SHORT, LONG = "in 128 / out 64 tokens", "in 640 / out 64 tokens"


def _run(day: int, x: float, workload: str | None):
    r = run(day, x)
    return replace(r, values=tuple(replace(v, workload=workload) for v in r.values))


def test_a_value_of_another_workload_is_prediction_changed() -> None:
    three = [_run(d, 1000.0, SHORT) for d in (27, 28, 29)]
    d = one([replace(value(600.0), workload=LONG)], three, DriftPolicy("10%"))
    assert d.status is DriftStatus.PREDICTION_CHANGED and d.changed == ("workload",)
    assert changed_badge(d) == "workload changed"
    assert ("its points ran in 640 / out 64 tokens, where they ran in 128 / out 64 tokens (the workload: section)"
            in d.text)
    # the same workload: judged as usual (-40 % against three nights of 1,000 is drifted)
    assert one([replace(value(600.0), workload=SHORT)], three, DriftPolicy("10%")).status is DriftStatus.DRIFTED
    # a value stored before workloads were kept (None) is compared as before
    assert one([value(600.0)], three, DriftPolicy("10%")).status is DriftStatus.DRIFTED


def test_nights_of_another_workload_are_no_baseline_and_not_in_the_spread() -> None:
    # three nights at 640 tokens (600 tok/s), then two at 128 (1,000): tonight 128 tokens, 1,010 tok/s. Against the
    # nights of its own workload alone it is +1 % of the previous one, with 2 such nights: not 3, so the spread is
    # not known (the 640-token nights would have made it 5 nights with a wide spread)
    runs = [_run(25, 600.0, LONG), _run(26, 600.0, LONG), _run(27, 600.0, LONG), _run(28, 1000.0, SHORT),
            _run(29, 1000.0, SHORT)]
    d = one([replace(value(1010.0), workload=SHORT)], runs, DriftPolicy("10%", "median:3"))
    assert d.status is DriftStatus.STEADY and d.baseline == 1000.0
    assert d.baseline_run_ids == tuple(r.run_id for r in runs[3:])


def test_compare_does_not_judge_a_move_across_workloads() -> None:
    a, b = _run(28, 1000.0, SHORT), _run(29, 600.0, LONG)
    [row] = compare_runs(a, b)
    assert row.significance == "workload"


def test_the_workload_a_value_ran() -> None:
    own = load_results(RECORDED / "cpu-tiny-2026-12-05.results.json")
    assert value_workload(own, ["closed-c1", "closed-c2"]) == SHORT
    assert value_workload(own, []) is None
    # a peer's lengths are measured means (tokens ÷ requests), kept as such and compared within 2 % (trial s25b #10:
    # two vllm bench serve runs of 64 and 32 output tokens were compared as one figure)
    peer64 = value_workload(load_any(PEERS / "cpu-tiny-vllm-bench"), ["closed-c1"])
    peer32 = value_workload(load_any(PEERS / "cpu-tiny-vllm-bench-32"), ["closed-c1"])
    assert peer64 == "in ~129 / out ~64 tokens (means)" and peer32 == "in ~129 / out ~32 tokens (means)"
    from pytest_roofline.history._records import other_workload
    assert other_workload(peer64, peer32) and not other_workload(peer64, "in ~128 / out ~65 tokens (means)")
    assert other_workload(peer64, "in ~129 / out ~67 tokens (means)")  # 3 tokens: more than 2 % and one token
    assert not other_workload(peer64, None) and other_workload(SHORT, peer64)


def test_compare_does_not_judge_a_move_across_quantities() -> None:
    # trial s24c H2: A measured output_throughput, B total_throughput under the same id: "+110.0 % yes"
    a = _run(28, 530.7, SHORT)
    b = _run(29, 1115.0, SHORT)
    b = replace(b, values=tuple(replace(v, quantity="total_throughput") for v in b.values))
    [row] = compare_runs(a, b)
    assert row.significance == "redefined" and row.change_rel is None
    from pytest_roofline.history import render_comparison
    text = "\n".join(render_comparison(a, b, width=200))
    assert "not judged (prediction changed)" in text and "+110" not in text
