"""A deployment of several replicas (``engine.replicas``): the one place a quantity's model and serving-model values
scale by it. Each :class:`~pytest_roofline.quantities.quantity.Quantity` says how it relates to one replica
(``Quantity.replicas``); :func:`for_replicas` applies that once, when the registry is built.

With R replicas and an even split of the load (``Setup.replica_load``, ``Setup.deployment_total``): ``total``
quantities (tokens, requests, preemptions per second) are R × one replica's at 1/R of the load, since each request
is served by one replica; ``share`` quantities (latencies, per-request throughput) are one replica's at 1/R of the
load; ``sweep`` analyses of one engine's whole sweep (knees, goodput, the largest clean concurrency) are not scaled
by the model (the sweep's concurrencies are the deployment's; an even split would put each at R × one replica's, but
the serving model simulates whole clients per replica): predict them in ink; ``replica`` quantities are each
replica's own (the KV pool, batch-1, facts, anything at: batch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pytest_roofline.model.setup import Setup, SetupError
from pytest_roofline.quantities.analysis import Thresholds
from pytest_roofline.quantities.quantity import LOADS, ModelFn, ModelValue, Quantity, ReplicaScaling, ServingFn
from pytest_roofline.quantities.serving_values import ServingSweep

__all__ = ["for_replicas"]


def for_replicas(q: Quantity) -> Quantity:
    """``q`` with its model and serving-model functions scaled to ``setup.replicas`` as ``q.replicas`` says (at
    one replica, and for a ``replica`` quantity, each value is the function's own)."""
    how = q.replicas or "replica"
    return dataclasses.replace(q, model=_replica_model(q.name, how, q.model) if q.model is not None else None,
                               serving=_replica_serving(q.name, how, q.serving) if q.serving is not None else None)


def _sweep_refusal(name: str, replicas: int) -> SetupError:
    return SetupError(f"{name} is a whole-sweep analysis of one engine; with engine.replicas: {replicas} the model "
                      "does not scale it (an even split puts the deployment's at about replicas × one replica's): "
                      "predict it in ink, the measured value is still scored")


def _scaled_note(setup: Setup, how: ReplicaScaling, at: Mapping[str, Any]) -> str:
    load = next(f"{k} {at[k]} → {setup.replica_load(float(at[k])):g} per replica" for k in LOADS if k in at)
    return (f"{setup.replicas} replicas, an even split assumed ({load}); "
            + (f"× {setup.replicas} replicas" if how == "total" else "one replica's value"))


def _replica_model(name: str, how: ReplicaScaling, fn: ModelFn) -> ModelFn:
    def model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
        if setup.replicas == 1 or how == "replica":
            return fn(setup, at)
        if how == "sweep":
            raise _sweep_refusal(name, setup.replicas)
        if "batch" in at or not set(at) & set(LOADS):  # one engine's decode batch: no deployment load to split
            return fn(setup, at)
        share = {k: (setup.replica_load(float(v)) if k in LOADS else v) for k, v in at.items()}
        mv = fn(setup, share)
        value = setup.deployment_total(mv.value) if how == "total" and mv.value is not None else mv.value
        return ModelValue(value, {**mv.inputs, "replicas": str(setup.replicas)},
                          f"{mv.explanation}; {_scaled_note(setup, how, at)}")

    return model


def _replica_serving(name: str, how: ReplicaScaling, fn: ServingFn) -> ServingFn:
    def serving(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
        setup = sweep.setup
        if setup.replicas == 1 or how == "replica":
            return fn(sweep, at, th)  # (the batch-1 run and whole-engine facts are each replica's own)
        if how == "sweep":
            raise _sweep_refusal(name, setup.replicas)
        if not set(at) & set(LOADS):
            return fn(sweep, at, th)
        mv = fn(sweep, at, th)  # ServingSweep.at simulates one replica at its share of the load
        value = setup.deployment_total(mv.value) if how == "total" and mv.value is not None else mv.value
        return ModelValue(value, {**mv.inputs, "replicas": str(setup.replicas)},
                          f"{mv.explanation}; {_scaled_note(setup, how, at)}")

    return serving
