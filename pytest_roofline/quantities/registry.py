"""The quantity registry: every named thing a prediction can be about.

Each :class:`~pytest_roofline.quantities.quantity.Quantity` knows its dimension (so ``1,742 tok/s`` is checked to
fit), which ``at:`` parameters it takes, how the analytical model computes it from a
:class:`~pytest_roofline.model.setup.Setup` (``model``), how it is extracted from a measurement (``measure``), and
the step-level serving model's value of a measured quantity (``serving``). A quantity with only ``model`` is
checked in CPU-only mode; one with only ``measure`` needs a GPU, an endpoint or a replayed results file; one with
both is checked against the model in CPU-only mode and against the measurement otherwise.

The quantities are declared family by family, each in its own module, and gathered here once:

- :mod:`~pytest_roofline.quantities.roofline`  the setup's facts, the decode step at batch B, the landmarks
- :mod:`~pytest_roofline.quantities.knee`      the throughput knee, the batch-1 ceiling and throughput, prefill
- :mod:`~pytest_roofline.quantities.kv`        vLLM's KV pool, the concurrency limits it sets, KV pool sizing
- :mod:`~pytest_roofline.quantities.batching`  projection traffic, static and dynamic batching (at: alone)
- :mod:`~pytest_roofline.quantities.latency`   throughput, latency statistics, TTFT knee, Little's law, goodput
- :mod:`~pytest_roofline.quantities.server`    the server's counters (preemptions, prefix-cache hits)

with the building blocks in :mod:`~pytest_roofline.quantities.declare`, the types in
:mod:`~pytest_roofline.quantities.quantity`, and the scaling to a deployment of several replicas applied once, as
the registry is built, by :func:`pytest_roofline.quantities.replicas.for_replicas`.
"""

from __future__ import annotations

from pytest_roofline.errors import NotMeasured
from pytest_roofline.quantities import batching, knee, kv, latency, roofline, server
from pytest_roofline.quantities.analysis import Thresholds
from pytest_roofline.quantities.declare import decode_step as _step  # tests reach the decode step by this name
from pytest_roofline.quantities.quantity import (
    AT_PARAMS,
    AtParam,
    MeasuredValue,
    ModelValue,
    Quantity,
    QuantityKind,
    QuantityPoints,
    ReplicaScaling,
)
from pytest_roofline.quantities.replicas import for_replicas

__all__ = [
    "AtParam", "AT_PARAMS", "Quantity", "QUANTITIES", "ModelValue", "MeasuredValue", "NotMeasured",
    "Thresholds", "get_quantity", "QuantityKind", "QuantityPoints", "replica_scaling", "_step",
]

#: every quantity by name, in the order the families declare them (``roofline quantities`` sorts by name)
QUANTITIES: dict[str, Quantity] = {
    q.name: for_replicas(q)
    for family in (roofline, knee, kv, batching, latency, server)
    for q in family.QUANTITIES
}


def get_quantity(name: str) -> Quantity:
    return QUANTITIES[name]


def replica_scaling(name: str) -> ReplicaScaling:
    """How quantity ``name`` at a deployment's load relates to one replica (README, "several replicas"):
    ``total`` (R × one replica's at load/R), ``share`` (one replica's at load/R: latencies, per-request
    throughput, a decode step at the concurrency), ``sweep`` (not scaled by the model) or ``replica`` (one
    replica's own: KV pool and blocks, batch-1, facts, anything at: batch)."""
    return QUANTITIES[name].replicas or "replica"
