"""The queueing and preemption limits "stay under" their threshold: the largest swept concurrency with every point
at or below it clean (quantities/kv.py). A fresh-clone CI run measured cpu-tiny adaptively and got queue/E2E of
1: 0.0 of 187 ms, 2: 0.0 of 191, 4: 0.0 of 153, 8: 0.0 of 206, 16: 63.9 of 235 (27%: queued), 32: 55.6 of 792
(7%: its 41 early finishers never queued); the old rule, the largest clean point anywhere, said 32 against
max_num_seqs 8 and failed the prediction."""

from __future__ import annotations

from pytest_roofline.quantities.kv import _last_before_first_failure

CI_ROWS = [(1, 0.0, 187.0), (2, 0.0, 191.0), (4, 0.0, 153.0), (8, 0.0, 206.0), (16, 63.9, 235.0), (32, 55.6, 792.0)]


def test_a_clean_point_above_the_knee_does_not_lift_the_limit() -> None:
    rows = [(c, q <= 0.10 * e2e) for c, q, e2e in CI_ROWS]
    assert [ok for _, ok in rows] == [True, True, True, True, False, True]
    assert _last_before_first_failure(rows) == 8


def test_order_of_the_rows_does_not_matter_and_the_edges() -> None:
    assert _last_before_first_failure([(32, True), (8, True), (16, False), (1, True)]) == 8
    assert _last_before_first_failure([(1, True), (2, True), (4, True)]) == 4  # never queued: the largest swept
    assert _last_before_first_failure([(1, False), (2, True)]) == 0  # queued from the first point
    assert _last_before_first_failure([]) == 0
