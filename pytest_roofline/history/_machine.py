"""A night's machine, as the host probe saw it: the one home of "was the machine itself slower tonight?".

Each sweep point records the host probe (:mod:`pytest_roofline.measure.probe`) just before and just after its load;
a stored value keeps the slowest probe of its points (:func:`value_probe`: the machine at its worst while the value
was measured). Drift and ``roofline compare`` read two or more nights' probes: where one night's departs from the
others' by more than :data:`MACHINE_SHIFT`, that night's machine was another machine in effect (a co-tenant, a
throttled host, other work on it), and a move of its figures may say nothing about the engine. Drift's "others" are
the median probe of the latest earlier nights (``_drift.night_machine``), known once three of them kept one, as the
nights' spread is (``MIN_NIGHTS``): with one or two the median is those nights themselves, and a night after a slow
first night would read "79% faster". ``roofline compare`` sets run B's probe against run A's. By default drift
judges the night as usual and its line notes what the probe saw (:func:`machine_moved`); with
``--roofline-drift-machine SHARE`` (``DriftPolicy.machine``) tonight's move is ``uncertain`` with that reason, and an
earlier such night is no baseline and no part of the nights' spread (:func:`machine_apart`). The rule is an option
because on the project's 2-core machine the probe itself moved 3.3-7.9 GFLOP/s between quiet nights, and the rule
cut detection there from 29.9 % to 3.1 % while cutting false drift on a co-tenant's nights from 15.6 % to 1.2 %
(benchmarks/RESULTS-drift.md, "The host probe"). A value stored without a probe (a run before probes were kept, a
replay of an older results file, a peer's file) is not judged by it: nothing changes for it.

The threshold: five probes on the idle 2-core machine spread by about 5 % (7.4-7.8 GFLOP/s) and one busy loop beside
the probe halved it (3.5-4.4); the machines behind the slow nights of benchmarks/RESULTS-drift.md ran 1.6-3.7x slower.
A 20 % departure is four times that idle spread and well inside what a co-tenant does (set before the runs that
showed how much more the probe spreads between quiet nights right after a load).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_roofline.measure import probe

__all__ = ["MACHINE_SHIFT", "value_probe", "machine_ratio", "machine_moved", "machine_apart", "reference_probe"]

#: how far (as a ratio, either way) a night's host probe may depart from the other nights' median before that
#: night's machine counts as another machine (its one home: measure.probe)
MACHINE_SHIFT = probe.MACHINE_SHIFT


def _positive(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        return None
    return float(x)


def value_probe(results: Mapping[str, Any], point_ids: Sequence[str]) -> float | None:
    """The slowest host probe (GFLOP/s) of the points ``point_ids`` of a results file, before or after each load;
    None when none of them recorded one (a results file written before probes were kept, a peer's file)."""
    want = {str(p) for p in point_ids}
    found: list[float] = []
    for p in results.get("points") or ():
        if not isinstance(p, Mapping) or str(p.get("id")) not in want:
            continue
        probe = p.get("host_probe")
        if isinstance(probe, Mapping):
            found += [x for x in (_positive(probe.get("before_gflop_per_s")), _positive(probe.get("after_gflop_per_s")))
                      if x is not None]
    return min(found) if found else None


def machine_ratio(probe: float | None, reference: float | None) -> float | None:
    """``probe`` over ``reference`` (above 1: a faster machine); None when either is unknown."""
    if probe is None or reference is None or reference <= 0:
        return None
    return probe / reference


def _apart(ratio: float | None, shift: float = MACHINE_SHIFT) -> bool:
    return ratio is not None and abs(math.log(ratio)) > math.log1p(shift)


def reference_probe(probes: Sequence[float | None]) -> float | None:
    """The other nights' machine: the median of their probes (None when none has one)."""
    xs = [x for x in probes if x is not None]
    return statistics.median(xs) if xs else None


def machine_apart(probe: float | None, reference: float | None, shift: float | None = MACHINE_SHIFT) -> bool:
    """A night whose probe departs from ``reference`` by more than ``shift`` (a share; :data:`MACHINE_SHIFT`), either
    way: another machine in effect. False when either is unknown, or ``shift`` is None (the rule off)."""
    return shift is not None and _apart(machine_ratio(probe, reference), shift)


def machine_moved(probe: float | None, reference: float | None, shift: float = MACHINE_SHIFT) -> str:
    """What the host probe says of this night when its machine departed from the other nights' by more than
    ``shift`` ("" otherwise): ``the machine itself ran 45% slower than on the other nights (host probe 4.1 vs 7.5
    GFLOP/s, beyond 20%)...``: drift's reason not to judge the move (``--roofline-drift-machine``), or its note."""
    ratio = machine_ratio(probe, reference)
    if not _apart(ratio, shift) or ratio is None or probe is None or reference is None:
        return ""
    how = f"{(1 - ratio) * 100:.0f}% slower" if ratio < 1 else f"{(ratio - 1) * 100:.0f}% faster"
    return (f"the machine itself ran {how} than on the other nights (host probe {probe:.3g} vs {reference:.3g} "
            f"GFLOP/s, beyond {shift:.0%}): a slower or faster machine moves every figure at once")
