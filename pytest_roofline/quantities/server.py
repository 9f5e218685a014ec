"""The server's counters of a sweep point (vLLM's /metrics): preemptions and the prefix-cache hit rate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_roofline.errors import NotMeasured
from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.analysis import Thresholds, point_notes
from pytest_roofline.quantities.declare import point_at, serve_point
from pytest_roofline.quantities.measurement import Measurement, point_id, server_number
from pytest_roofline.quantities.quantity import MeasuredValue, Quantity, QuantityPoints, ReplicaScaling, ServingFn


def _server_q(name: str, dim: str, desc: str, key: str, serving: ServingFn | None = None,
              replicas: ReplicaScaling | None = None) -> Quantity:
    """A counter vLLM reports on /metrics over a sweep point."""
    def measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
        pt = point_at(meas, at)
        val = server_number(pt, key)
        if val is None:
            raise NotMeasured(f"point {pt.get('id')} has no server-side {key} (/metrics not scraped)")
        return MeasuredValue(val, (point_id(pt),), tuple(point_notes(pt, th)))

    return Quantity(name, dim, desc, at=("concurrency", "rate"), measure=measure, points=QuantityPoints.AT,
                    serving=serving, replicas=replicas)


#: the family, in the registry's order
QUANTITIES: tuple[Quantity, ...] = (
    _server_q("preemptions", "count", "preemptions vLLM counted during a sweep point", "preemptions",
              serving=serve_point("preemptions"), replicas="total"),
    # the serving model's value: its prefix cache block by block (model/serving/kv_pool.py), the hits each request
    # found when admitted ÷ the prompt tokens
    _server_q("prefix_cache_hit_rate", "ratio", "prefix-cache hits ÷ queries (tokens) during a sweep point",
              "prefix_cache_hit_rate", serving=serve_point("prefix_cache_hit_rate")),
)
