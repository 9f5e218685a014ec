"""What to measure and when to stop.

- :mod:`~pytest_roofline.measure.plan.points`: which sweep points the *selected* predictions need
  (:func:`plan_points` → :class:`PointPlan`), each with the decision targets of the predictions that read it;
  pure functions over a :class:`~pytest_roofline.format.spec.Spec`. Re-exported here: callers import
  ``pytest_roofline.measure.plan``;
- :mod:`~pytest_roofline.measure.plan.stopping`: the adaptive sweep's stopping rule (a point ends once its
  targets are decided: :class:`~pytest_roofline.measure.plan.stopping.AdaptiveStop`, the load generator's
  :class:`~pytest_roofline.quantities.measurement.StopCheck`) and the knee's bisection order. Imported only by an
  adaptive sweep (it reads the statistics), so not from here.

No pytest import, nothing measured here.
"""

from __future__ import annotations

from pytest_roofline.measure.plan.points import (
    KNEE_QUANTITIES,
    MODEL_ONLY_WORKLOAD_KEYS,
    STATISTIC_OF_QUANTITY,
    DecisionTarget,
    PointPlan,
    all_points,
    batch1_point,
    is_knee_only,
    needs_engine,
    plan_points,
    points_for,
    targets_for,
    unmeasured_reason,
    workload_override,
)

__all__ = ["PointPlan", "DecisionTarget", "plan_points", "needs_engine", "targets_for", "STATISTIC_OF_QUANTITY",
           "is_knee_only", "KNEE_QUANTITIES", "workload_override", "unmeasured_reason", "MODEL_ONLY_WORKLOAD_KEYS",
           "all_points", "batch1_point", "points_for"]
