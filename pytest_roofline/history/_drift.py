"""Drift: how far a prediction's measured value moved from the earlier runs on the same setup.

A *baseline* is the previous run of the same :class:`SetupKey` that measured the prediction (``previous``), or the
median of the last N such runs (``median:N``; nights that did not measure it are skipped, not counted as one of
the N). The *threshold* is a relative tolerance around the baseline, in the tolerance grammar (``5%``, ``±5%``,
``+10%/-3%``, ``<= +10%``, ``exact``): a prediction's own ``drift:`` in the YAML, else ``--roofline-drift``.
Only measured values drift; a math-only value is stored but never compared. Pure functions: no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from pytest_roofline.errors import ToleranceError
from pytest_roofline.format.spec import parse_drift_threshold
from pytest_roofline.format.tolerance import Tolerance
from pytest_roofline.history._records import RunSummary, SetupKey, StoredValue

__all__ = ["DEFAULT_DRIFT", "DEFAULT_BASELINE", "DriftPolicy", "DriftStatus", "Drift", "drift_for", "drift_counts",
           "parse_baseline"]

DEFAULT_DRIFT = "10%"
DEFAULT_BASELINE = "previous"


def parse_baseline(text: str) -> int:
    """``previous`` → 1, ``median:N`` → N (N ≥ 1); anything else is a ValueError saying what to write."""
    t = str(text).strip().lower()
    if t == "previous":
        return 1
    head, sep, n = t.partition(":")
    if head == "median" and sep:
        try:
            window = int(n.strip())
        except ValueError:
            window = 0
        if window >= 1:
            return window
    raise ValueError(f"drift baseline {text!r}: write previous or median:N (N a whole number ≥ 1, e.g. median:5)")


@dataclass(frozen=True)
class DriftPolicy:
    """What a measured value is compared with (``baseline``) and how far it may move (``threshold``)."""

    threshold_text: str = DEFAULT_DRIFT
    baseline: str = DEFAULT_BASELINE
    threshold: Tolerance = field(init=False, repr=False, compare=False)
    window: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # ToleranceError (a ValueError) for a bad threshold, ValueError for a bad baseline: usage errors upstream
        object.__setattr__(self, "threshold", parse_drift_threshold(self.threshold_text))
        object.__setattr__(self, "window", parse_baseline(self.baseline))

    def threshold_for(self, value: StoredValue) -> tuple[Tolerance, str]:
        """The prediction's own ``drift:`` when it wrote one, else the policy's threshold."""
        if value.drift_text:
            try:
                return parse_drift_threshold(value.drift_text), value.drift_text
            except ToleranceError:
                pass  # validated at load; a stored run from another version falls back to the option
        return self.threshold, self.threshold_text

    def describe(self) -> str:
        """``the previous run`` / ``the median of the last 5 runs`` (for the count line)."""
        return "the previous run" if self.window == 1 else f"the median of the last {self.window} runs"


class DriftStatus(StrEnum):
    STEADY = "steady"  # within the threshold of its baseline
    DRIFTED = "drifted"  # beyond it
    NEW = "new"  # no earlier run of this setup measured it
    NOT_MEASURED = "not_measured"  # no measured value in this run
    PREDICTION_CHANGED = "prediction_changed"  # the value in ink or its band differs from the baseline run's


@dataclass(frozen=True)
class Drift:
    """One prediction's drift in this run."""

    key: str
    status: DriftStatus
    text: str  # one line, e.g. "+12.4% vs median of 5 runs (2026-11-26..30), beyond ±5%"
    now: float | None = None
    baseline: float | None = None
    baseline_run_ids: tuple[str, ...] = ()
    baseline_dates: tuple[str, ...] = ()  # ISO UTC, oldest first
    baseline_commits: tuple[str | None, ...] = ()
    change_rel: float | None = None  # (now − baseline) / |baseline|; None when the baseline is 0 or missing
    threshold_text: str = ""

    @property
    def drifted(self) -> bool:
        return self.status is DriftStatus.DRIFTED

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        for k in ("baseline_run_ids", "baseline_dates", "baseline_commits"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Drift:
        return cls(key=str(d["key"]), status=DriftStatus(d["status"]), text=str(d.get("text") or ""),
                   now=d.get("now"), baseline=d.get("baseline"),
                   baseline_run_ids=tuple(d.get("baseline_run_ids") or ()),
                   baseline_dates=tuple(d.get("baseline_dates") or ()),
                   baseline_commits=tuple(d.get("baseline_commits") or ()), change_rel=d.get("change_rel"),
                   threshold_text=str(d.get("threshold_text") or ""))


def _day(iso: str) -> str:
    return iso[:10]


def _date_span(dates: Sequence[str]) -> str:
    """``2026-11-30``; ``2026-11-26..30`` within one month; ``2026-11-28..2026-12-02`` across months."""
    days = sorted(_day(d) for d in dates if d)
    if not days:
        return ""
    first, last = days[0], days[-1]
    if first == last:
        return first
    if first[:8] == last[:8]:
        return f"{first}..{last[8:]}"
    return f"{first}..{last}"


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _beyond(tol: Tolerance, now: float, base: float) -> bool:
    return not tol.contains(now, base)


def _pct(change: float) -> str:
    return f"{change * 100:+.1f}%"


def drift_for(values: Iterable[StoredValue], history_runs: Sequence[RunSummary], policy: DriftPolicy, *,
              setup: SetupKey | None = None) -> dict[str, Drift]:
    """Each value's drift against ``history_runs`` (the store's index; only runs of ``setup`` count when it is
    given — the caller passes the run's own SetupKey), by prediction key.

    Per value: NOT_MEASURED without a measured value now; NEW when no earlier run of the setup measured it;
    PREDICTION_CHANGED when the ink (``predicted_text``) or the band (lo, hi) differs from the latest baseline
    run's (the number may have moved because the user edited it; never fails a run); else DRIFTED or STEADY by
    the threshold around the baseline (the previous value, or the median of the last N)."""
    runs = [r for r in history_runs if setup is None or r.setup == setup]
    runs.sort(key=lambda r: r.started_at)
    out: dict[str, Drift] = {}
    for v in values:
        tol, tol_text = policy.threshold_for(v)
        now = _finite(v.measured) if v.mode == "measured" else None
        if now is None:
            out[v.key] = Drift(v.key, DriftStatus.NOT_MEASURED, "not measured in this run", threshold_text=tol_text)
            continue
        found: list[tuple[RunSummary, StoredValue, float]] = []
        for r in reversed(runs):  # newest first
            old = r.value(v.key)
            x = _finite(old.measured) if old is not None and old.mode == "measured" else None
            if old is not None and x is not None:
                found.append((r, old, x))
                if len(found) >= policy.window:
                    break
        if not found:
            out[v.key] = Drift(v.key, DriftStatus.NEW, "new: no earlier run on this setup measured it", now=now,
                               threshold_text=tol_text)
            continue
        found.reverse()  # oldest first
        base = statistics.median(x for _r, _o, x in found) if len(found) > 1 else found[-1][2]
        latest = found[-1][1]
        ids = tuple(r.run_id for r, _o, _x in found)
        dates = tuple(r.started_at for r, _o, _x in found)
        commits = tuple(r.commit for r, _o, _x in found)
        if len(found) == 1:
            commit = f", {found[0][0].commit}" if found[0][0].commit else ""
            against = f"vs previous run ({_date_span(dates)}{commit})"
        else:
            against = f"vs median of {len(found)} runs ({_date_span(dates)})"
        change = (now - base) / abs(base) if base != 0 else (0.0 if now == 0 else None)
        moved = _pct(change) if change is not None else f"{base:g} → {now:g}"
        beyond = _beyond(tol, now, base)
        verdict = f"beyond {tol_text}" if beyond else f"within {tol_text}"
        changed = (latest.predicted_text != v.predicted_text or latest.lo != v.lo or latest.hi != v.hi)
        if changed:
            status = DriftStatus.PREDICTION_CHANGED
            text = (f"{moved} {against}, {verdict}; the prediction changed since "
                    f"({latest.predicted_text or '—'} → {v.predicted_text or '—'})")
        else:
            status = DriftStatus.DRIFTED if beyond else DriftStatus.STEADY
            text = f"{moved} {against}, {verdict}"
        out[v.key] = Drift(v.key, status, text, now=now, baseline=base, baseline_run_ids=ids, baseline_dates=dates,
                           baseline_commits=commits, change_rel=change, threshold_text=tol_text)
    return out


def drift_counts(drifts: Iterable[Drift | Mapping[str, Any]], policy: DriftPolicy | None = None) -> str:
    """``3 drifted, 41 steady, 2 new vs the previous run`` (statuses with no prediction are left out)."""
    n: dict[str, int] = {}
    for d in drifts:
        status = d.status.value if isinstance(d, Drift) else str(d.get("status"))
        n[status] = n.get(status, 0) + 1
    words = [(DriftStatus.DRIFTED, "drifted"), (DriftStatus.STEADY, "steady"), (DriftStatus.NEW, "new"),
             (DriftStatus.PREDICTION_CHANGED, "prediction changed"), (DriftStatus.NOT_MEASURED, "not measured")]
    parts = [f"{n[s.value]} {w}" for s, w in words if n.get(s.value)]
    line = ", ".join(parts) or "nothing to compare"
    return line + (f" vs {policy.describe()}" if policy is not None else "")
