"""A stand-in for the serving model's constants in calibration tests: a closed-form model's constants with the
field names of ``ServingConstants`` (the optimiser and the identifiability rules checked on their own)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar


@dataclasses.dataclass(frozen=True)
class StandIn:
    """Constants of a closed-form closed-loop model (the same field names as ServingConstants)."""

    hbm_efficiency: float = 0.8
    flop_efficiency: float = 0.7
    step_overhead_s: float = 2e-3
    per_seq_overhead_s: float = 5e-5
    FIELDS_FITTABLE: ClassVar[tuple[str, ...]] = ("hbm_efficiency", "flop_efficiency", "step_overhead_s",
                                                  "per_seq_overhead_s")

    def replace(self, **kw: Any) -> Any:
        return dataclasses.replace(self, **kw)

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
