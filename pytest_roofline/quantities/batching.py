"""Batching arithmetic computed from the at: parameters alone: projection traffic (lesson §2), static-batch
padding and dynamic-batch aggregation waits (lesson §7–8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.quantity import ModelValue, Quantity, QuantityKind


def pure(name: str, dim: str, desc: str, fn: Callable[[Mapping[str, Any]], Any], at: tuple[str, ...],
          required: tuple[str, ...], kind: QuantityKind = QuantityKind.NUMBER,
          explain: Callable[[Mapping[str, Any]], str] | None = None
          ) -> Quantity:
    """A quantity computed from its at: parameters alone (batching arithmetic, projection traffic)."""

    def model(setup: Setup, at_: Mapping[str, Any]) -> ModelValue:
        inputs = {k: _show(v) for k, v in at_.items()}
        return ModelValue(fn(at_), inputs, explain(at_) if explain else "")

    return Quantity(name, dim, desc, kind=kind, at=at, required_at=required, model=model)


def _show(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, float) and v.is_integer():
        return f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, (int, float)) else str(v)


_PROJ_AT = ("batch", "k", "m", "dtype_bytes")


def _proj(attr: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda a: getattr(an.projection_traffic(int(a["batch"]), int(a["k"]), int(a["m"]),
                                                   int(a.get("dtype_bytes", 2))), attr)


def _static_padding(attr: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda a: getattr(an.static_batch_padding(list(a["lengths"])), attr)


#: the family, in the registry's order
QUANTITIES: tuple[Quantity, ...] = (
    *(pure(name, dim, desc, _proj(attr), _PROJ_AT, ("batch", "k", "m")) for name, dim, attr, desc in (
        ("projection_weight_bytes", "bytes", "weight_bytes", "weight bytes of one K×M projection"),
        ("projection_input_bytes", "bytes", "input_bytes", "input activation bytes, dtype × B × K"),
        ("projection_output_bytes", "bytes", "output_bytes", "output activation bytes, dtype × B × M"),
        ("projection_total_bytes", "bytes", "total_bytes", "weights + input + output bytes of a projection"),
        ("projection_flops", "flops", "flops", "FLOPs of a projection, 2 × B × K × M"),
        ("projection_intensity", "intensity", "intensity_flop_per_byte", "projection intensity counting activations"),
        ("projection_weight_only_intensity", "intensity", "weight_only_intensity_flop_per_byte",
         "projection intensity counting weights only"),
        ("projection_activation_share", "ratio", "activation_share_of_traffic",
         "share of projection traffic that is activations"),
    )),
    *(pure(name, dim, desc, _static_padding(attr), ("lengths",), ("lengths",)) for name, dim, attr, desc in (
        ("static_slots", "count", "allocated_slots", "token slots a static batch allocates: n × max(lengths)"),
        ("static_useful_tokens", "count", "useful_tokens", "tokens a static batch actually generates: Σ lengths"),
        ("static_padded_slots", "count", "padded_slots", "padded (idle) slots of a static batch"),
        ("static_padded_ratio", "ratio", "padded_ratio", "padded slots ÷ allocated slots"),
    )),
    pure("aggregation_wait_mean", "time", "mean wait to fill a batch of B under deterministic spacing",
         lambda a: an.deterministic_aggregation_wait(float(a["spacing"]), int(a["batch"])).mean_s,
         ("spacing", "batch"), ("spacing", "batch")),
    pure("aggregation_wait_max", "time", "the first request's wait to fill a batch of B under deterministic spacing",
         lambda a: an.deterministic_aggregation_wait(float(a["spacing"]), int(a["batch"])).max_s,
         ("spacing", "batch"), ("spacing", "batch")),
    pure("poisson_first_wait", "time", "expected wait of a batch's first request under Poisson arrivals: (B − 1) ÷ λ "
         "(an Erlang mean, not a maximum)",
         lambda a: an.poisson_first_wait_s(float(a["arrival_rate"]), int(a["batch"])),
         ("arrival_rate", "batch"), ("arrival_rate", "batch")),
)
