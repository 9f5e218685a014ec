"""Drift: how far a prediction's measured value moved from the earlier runs on the same setup.

A *baseline* is the previous run of the same :class:`SetupKey` that measured the prediction (``previous``), or the
median of the last N such runs (``median:N``; nights that did not measure it are skipped, not counted as one of
the N). The *threshold* is a relative tolerance around the baseline, in the tolerance grammar (``5%``, ``±5%``,
``+10%/-3%``, ``<= +10%``, ``exact``): a prediction's own ``drift:`` in the YAML, else ``--roofline-drift``.
Only measured values drift; a math-only value is stored but never compared. Pure functions: no I/O.

A pinned baseline (``run:<id>``, or a run id or its unique prefix as written, like pytest-benchmark's
``--benchmark-compare=0001``) compares every night with that one run.

**Significance.** A value *drifts* only when its change is beyond the threshold AND the two measurements are
distinguishable given their uncertainty. Each stored value keeps its 95 % confidence interval (from
:mod:`pytest_roofline.measure.stats.intervals`); the difference ``now − baseline`` is distinguishable from 0 when
it exceeds ``√(h_now² + h_base²)``, with ``h`` each interval's half-width on the side facing the other value (the
usual test of a difference of two independent estimates, at the intervals' level; asymmetric order-statistic
intervals use their facing side). Where both values kept their per-request samples (a latency quantile at one
point: :mod:`pytest_roofline.history._samples`), the two samples must also differ by a two-sided Mann–Whitney rank
test at :data:`RANK_ALPHA` (:func:`ranked_p`): replacing the intervals by the rank test made false drift worse and
detection no better on real CPU-engine runs (benchmarks/drift_false_alarms.py: 5.4 % against 4.7 % false drift with
three nights), requiring both keeps the intervals' rate and lets samples that do not differ (one recorded night
stored twice) veto a move the intervals alone would call drift. Once three or more earlier nights measured the
value (whatever the baseline), tonight must also lie outside the nights' own spread: a Student-t prediction
interval for one more night around the mean of the latest :data:`SPREAD_RUNS` (or N) nights (:func:`_runs_spread`),
which holds the run-to-run variation (an engine restart, a busy machine) that the within-run intervals miss. With
fewer than :data:`MIN_NIGHTS` (3) earlier nights that noise is not known, and a move beyond the threshold is
``uncertain`` whatever the intervals say (``2 of 3 earlier nights: the run-to-run noise is not known yet``): a
verdict that fails builds never rests on the within-run intervals alone, which against one earlier night called
8.8-51.9 % of unchanged real CPU-engine values drifted. A change beyond the threshold that is not
distinguishable is ``uncertain``: never "drifted", never "steady". A value with no interval (an exact count read
from the log, or a run stored before intervals were kept) is taken as exact.

**A point that did not hold its concurrency.** A closed-loop point whose load generator fell behind (its
``concurrency not held`` flag: :mod:`pytest_roofline.measure.stats.held`; the stored value's
``unheld_points``) measured a lower load than its ``at:`` names, and by how much changes from night to night: on
the shared 2-core CPU machine it is the noisiest kind of night. Tonight's value at such a point is ``uncertain``,
never drifted or steady, and its line says which point; an earlier night's value at such a point is no baseline
and no part of the nights' spread, as if that night had not measured it (the line says how many were skipped).
A value stored before this was kept reads as held.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from pytest_roofline.errors import ToleranceError
from pytest_roofline.format.spec import parse_drift_threshold
from pytest_roofline.format.tolerance import Tolerance
from pytest_roofline.history._machine import MACHINE_SHIFT, machine_apart, machine_moved, reference_probe
from pytest_roofline.history._records import (
    RunSummary,
    SetupKey,
    StoredValue,
    other_workload,
    sort_time,
    unify_keys,
)
from pytest_roofline.history._samples import MIN_SAMPLES, mann_whitney_p
from pytest_roofline.measure.stats.intervals import t_quantile
from pytest_roofline.units import format_value, shown_unit, signed_percent

__all__ = ["DEFAULT_DRIFT", "DEFAULT_BASELINE", "DriftPolicy", "DriftStatus", "Drift", "drift_for", "drift_counts",
           "parse_baseline", "pinned_run", "parse_share", "DEFAULT_MIN_COMPARED", "distinguishable", "COMPARED",
           "compared_count", "not_judged_count", "ranked_p", "RANK_ALPHA", "nights_values", "outside_nights",
           "MIN_NIGHTS", "SPREAD_RUNS", "Move", "night_machine", "machine_count", "judge_move", "changed_badge",
           "earlier_runs", "runs_drift_reads", "redefinition"]

DEFAULT_DRIFT = "10%"
DEFAULT_BASELINE = "previous"
#: how many of the latest nights that measured a value give its night-to-night spread (3 at least are needed)
SPREAD_RUNS = 5
#: how many earlier nights must have measured a value before it can be called ``drifted``: with fewer, the
#: night-to-night noise is not known, and the within-run intervals alone do not hold it (benchmarks/
#: drift_false_alarms.py: against one earlier night they called 8.8-51.9 % of unchanged values drifted on the held
#: CPU sets, against three 1.1-8.6 %), so a move beyond the threshold is ``uncertain`` until then
MIN_NIGHTS = 3
#: with --roofline-drift-fail, the least share of a setup's measured predictions compared with a baseline
DEFAULT_MIN_COMPARED = 0.5


def parse_share(text: str) -> float:
    """``50%`` → 0.5, ``0.5`` → 0.5 (``--roofline-drift-min-compared``); a ValueError outside 0..100 %."""
    t = str(text).strip()
    try:
        x = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        x = -1.0
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{text!r} is not a share: write a percentage (50%) or a fraction (0.5) from 0 to 1")
    return x


#: a run id as the stores make them (or its head: ``20261204``, ``20261204T0922``)
_RUN_ID_HEAD = re.compile(r"^[0-9]{8}(T[0-9A-Za-z._+-]*)?$")


def pinned_run(text: str) -> str | None:
    """The run id (or unique prefix) a pinned baseline names: ``run:ID`` or a bare run id; None for ``previous``
    and ``median:N``."""
    t = str(text).strip()
    if t.lower().startswith("run:"):
        return t[4:].strip() or None
    return t if _RUN_ID_HEAD.match(t) else None


def parse_baseline(text: str) -> int:
    """``previous`` → 1, ``median:N`` → N (N ≥ 1), a pinned run (``run:ID`` or a run id) → 1; anything else is a
    ValueError saying what to write."""
    t = str(text).strip().lower()
    if t == "previous":
        return 1
    if pinned_run(text) is not None:
        return 1
    head, sep, n = t.partition(":")
    if head == "median" and sep:
        try:
            window = int(n.strip())
        except ValueError:
            window = 0
        if window >= 1:
            return window
    raise ValueError(f"drift baseline {text!r}: write previous, median:N (N a whole number ≥ 1, e.g. median:5) "
                     "or a pinned run: run:ID (a stored run's id or its unique beginning, e.g. run:20261204T0922)")


@dataclass(frozen=True)
class DriftPolicy:
    """What a measured value is compared with (``baseline``) and how far it may move (``threshold``)."""

    threshold_text: str = DEFAULT_DRIFT
    baseline: str = DEFAULT_BASELINE
    threshold: Tolerance = field(init=False, repr=False, compare=False)
    window: int = field(init=False, compare=False)
    #: ``--roofline-drift-machine``: how far (a share, "20%") a night's host probe may depart from the other nights'
    #: before the night is not judged (history._machine); "" (the default) judges every night and notes the probe
    machine: str = ""
    #: the run id (or its unique beginning) of a pinned baseline; None for previous / median:N
    pinned: str | None = field(init=False, compare=False)
    #: ``machine`` as a share; None when the rule is off
    machine_shift: float | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # ToleranceError (a ValueError) for a bad threshold, ValueError for a bad baseline: usage errors upstream
        object.__setattr__(self, "threshold", parse_drift_threshold(self.threshold_text))
        object.__setattr__(self, "window", parse_baseline(self.baseline))
        object.__setattr__(self, "pinned", pinned_run(self.baseline))
        shift = parse_share(self.machine) if self.machine else None
        if shift is not None and shift <= 0:
            raise ValueError(f"machine shift {self.machine}: a night's host probe always moves a little; give a share "
                             "above 0, e.g. 20%")
        object.__setattr__(self, "machine_shift", shift)

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
        if self.pinned is not None:
            return f"the pinned run {self.pinned}"
        return "the previous run" if self.window == 1 else f"the median of the last {self.window} runs"


class DriftStatus(StrEnum):
    STEADY = "steady"  # within the threshold of its baseline
    DRIFTED = "drifted"  # beyond it, and distinguishable from it given both measurements' intervals
    UNCERTAIN = "uncertain"  # beyond it, but the intervals cannot tell the change from noise
    NEW = "new"  # no earlier run of this setup measured it
    NOT_MEASURED = "not_measured"  # no measured value in this run
    #: what it measures (its quantity, or the window its figure is read over) differs from the baseline run's
    PREDICTION_CHANGED = "prediction_changed"


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
    #: the smallest change the two measurements can tell from noise (SI, like now); None: not computed, inf:
    #: an interval is unbounded on the facing side
    noise: float | None = None
    #: False when tonight's value was measured at a point that did not hold its concurrency: it is ``uncertain``
    #: and not judged, so it does not count as compared (:func:`compared_count`)
    held: bool = True
    #: the stored run that already holds this very measurement (a replay of a results file stored before: the same
    #: setup and start time), which a replay is never compared with; "" otherwise. Set on a NEW value only: the
    #: replay had no earlier run to compare with, and the plugin does not store it again
    stored_as: str = ""
    #: what of the prediction's definition changed since the baseline night (``quantity``, ``window``,
    #: ``arrivals``, in that order) where the status is PREDICTION_CHANGED (:func:`redefinition`); () otherwise
    changed: tuple[str, ...] = ()
    #: why tonight's value was not judged because the machine itself ran apart from the other nights (the host
    #: probe: :func:`~pytest_roofline.history._machine.machine_moved`); "" otherwise. Such a value is ``uncertain``
    #: and, like one at a point that did not hold its concurrency, does not count as compared
    machine: str = ""

    @property
    def drifted(self) -> bool:
        return self.status is DriftStatus.DRIFTED

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        for k in ("baseline_run_ids", "baseline_dates", "baseline_commits", "changed"):
            d[k] = list(d[k])
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Drift:
        return cls(key=str(d["key"]), status=DriftStatus(d["status"]), text=str(d.get("text") or ""),
                   now=d.get("now"), baseline=d.get("baseline"),
                   baseline_run_ids=tuple(d.get("baseline_run_ids") or ()),
                   baseline_dates=tuple(d.get("baseline_dates") or ()),
                   baseline_commits=tuple(d.get("baseline_commits") or ()), change_rel=d.get("change_rel"),
                   threshold_text=str(d.get("threshold_text") or ""), noise=d.get("noise"),
                   held=d.get("held") is not False, stored_as=str(d.get("stored_as") or ""),
                   changed=tuple(str(x) for x in d.get("changed") or ()), machine=str(d.get("machine") or ""))


def changed_badge(d: Drift | Mapping[str, Any]) -> str:
    """The badge of a PREDICTION_CHANGED drift, naming what changed (:attr:`Drift.changed`): "quantity changed",
    "window changed", "quantity and window changed"; "prediction changed" for a drift that does not say (one written
    before it was kept).  The one word the scorecard, the pytest-html column and the trend page show."""
    changed = d.changed if isinstance(d, Drift) else tuple(d.get("changed") or ())
    return f"{' and '.join(str(x) for x in changed) or 'prediction'} changed"


def _day(iso: str) -> str:
    return iso[:10]


def _time(iso: str) -> str:
    """``HH:MM`` (UTC) of an ISO start time; "" when it holds none."""
    t = sort_time(iso)  # YYYYmmddTHHMMSS...Z
    return f"{t[9:11]}:{t[11:13]}" if len(t) >= 13 and t[8:9] == "T" else ""


def _date_span(dates: Sequence[str], crowded: Collection[str] = ()) -> str:
    """``2026-11-30``; ``2026-11-26..30`` within one month; ``2026-11-28..2026-12-02`` across months. On a day of
    ``crowded`` (the store holds more than one run of the setup that day) the times too, UTC: ``2026-12-12 17:00
    UTC``, ``2026-12-12 02:00..17:00 UTC`` (trial 21, L1: three runs of one day read alike)."""
    days = sorted(_day(d) for d in dates if d)
    if not days:
        return ""
    first, last = days[0], days[-1]
    if first == last and first in crowded:
        times = sorted(t for t in (_time(d) for d in dates if d) if t)
        if times:
            return f"{first} {times[0]}{'..' + times[-1] if times[-1] != times[0] else ''} UTC"
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
    return signed_percent(change)


def _facing_half(v: StoredValue, x: float, toward_above: bool) -> float:
    """The half-width of ``v``'s stored interval on the side that faces a value above (``toward_above``) or below
    ``x``: 0 for a value with no interval (exact), inf for an interval unbounded on that side."""
    if not v.interval_method:
        return 0.0
    edge = v.measured_hi if toward_above else v.measured_lo
    if edge is None or not math.isfinite(edge):
        return math.inf
    return max(0.0, (edge - x) if toward_above else (x - edge))


def distinguishable(now_v: StoredValue, now: float, base_v: StoredValue, base: float) -> tuple[bool, float]:
    """Whether ``now`` and ``base`` differ by more than their measurements' uncertainty, and that margin:
    ``|now − base| > √(h_now² + h_base²)`` with each ``h`` its stored interval's half-width on the side facing the
    other value (a 95 % interval of each: the usual large-sample test of a difference of independent
    estimates). Values without an interval count as exact (margin 0)."""
    up = now > base
    h_now = _facing_half(now_v, now, toward_above=not up)
    h_base = _facing_half(base_v, base, toward_above=up)
    margin = math.hypot(h_now, h_base) if math.isfinite(h_now) and math.isfinite(h_base) else math.inf
    return abs(now - base) > margin, margin


#: the rank test's level: two nights' samples differ when the two-sided Mann–Whitney p is below it (a 95 % test,
#: like the intervals it replaces)
RANK_ALPHA = 0.05


def ranked_p(now_v: StoredValue, base_v: StoredValue) -> float | None:
    """The Mann–Whitney p-value of two stored values' per-request samples
    (:func:`~pytest_roofline.history._samples.mann_whitney_p`); None unless both kept :data:`MIN_SAMPLES` or more
    (the stored intervals decide then)."""
    if len(now_v.samples) < MIN_SAMPLES or len(base_v.samples) < MIN_SAMPLES:
        return None
    return mann_whitney_p(now_v.samples, base_v.samples)


def _runs_spread(xs: Sequence[float], level: float = 0.95) -> float:
    """The half-width of a prediction interval for one more night from the earlier nights' values: Student's t
    (:func:`~pytest_roofline.measure.stats.intervals.t_quantile`, N − 1 degrees of freedom) × σ × √(1 + 1/N); 0
    with fewer than 3 nights (two values say too little about their spread). The interval is centred on the
    nights' mean, and :func:`drift_for` measures tonight from there (measured from the baseline, one noisy night,
    the three held CPU sets gave 4.2 / 8.8 / 3.3 % false drift against 3.5 / 8.6 / 2.8 % from the mean).
    σ is the nights' sample standard
    deviation, whatever their number. (A robust σ, 1.4826 × the median absolute deviation, was used from
    :data:`SPREAD_RUNS` nights on; on real CPU-engine runs it made false drift grow with the history: 18.8 % and
    14.6 % with 5 earlier nights against 4.7 % and 3.1 % with 3, because the MAD of a few values is near 0 when
    three of them happen to agree. With the standard deviation: 6.2 % (benchmarks/drift_false_alarms.py). An
    outlier night widens the spread: the night after it is more often ``uncertain``, never falsely ``drifted``.)"""
    n = len(xs)
    if n < 3:
        return 0.0
    sigma = statistics.stdev(xs)
    return t_quantile(0.5 + level / 2, n - 1) * sigma * math.sqrt(1.0 + 1.0 / n)


def other_span(old: StoredValue | None, now: StoredValue | None) -> bool:
    """Whether ``old`` was measured under another load than ``now``: open-loop sends spread otherwise
    (``sweep.arrival_span``: :meth:`StoredValue.open_loop_span`), or another workload (:attr:`StoredValue.workload`:
    other prompt or output lengths, another dataset), each where both are known: another figure, as another window
    is."""
    if old is None or now is None:
        return False
    a, b = old.open_loop_span(), now.open_loop_span()
    return bool(a and b and a != b) or other_workload(old.workload, now.workload)


def nights_values(key: str, runs: Sequence[RunSummary], *, limit: int = SPREAD_RUNS,
                  machine: float | None = None, shift: float | None = None,
                  like: StoredValue | None = None) -> list[float]:
    """The earlier nights' measured values of ``key`` for the nights' spread: from the latest ``limit`` of ``runs``
    (oldest first, as :func:`drift_for` sorts them) that measured it at a point that held its concurrency, newest
    first. ``machine`` (the nights' reference host probe, :func:`night_machine`): a night whose probe departs from
    it by more than ``shift`` (:func:`~pytest_roofline.history._machine.machine_apart`; None: none is) is left out,
    as if it had not measured the value; so is a night whose open-loop sends spread otherwise than ``like``'s
    (:func:`other_span`: another figure)."""
    xs: list[float] = []
    for r in reversed(runs):
        old = r.value(key)
        x = _finite(old.measured) if old is not None and old.mode == "measured" and old.held else None
        if x is not None and old is not None and machine_apart(old.host_probe_gflop_per_s, machine, shift):
            continue
        if x is not None and other_span(old, like):
            continue
        if x is not None:
            xs.append(x)
            if len(xs) >= limit:
                break
    return xs


def night_probe(v: StoredValue | None) -> float | None:
    """The host probe a stored value gives its machine's reference (:func:`night_machine`, and the trend page's
    marks): its probe where it was measured, at a point that held its concurrency, and kept one (a positive finite
    number); None otherwise."""
    if v is None or v.mode != "measured" or not v.held or _finite(v.measured) is None:
        return None
    p = _finite(v.host_probe_gflop_per_s)
    return p if p is not None and p > 0 else None


def night_machine(key: str, runs: Sequence[RunSummary], *, limit: int = SPREAD_RUNS) -> float | None:
    """The earlier nights' machine for ``key``: the median host probe of the latest ``limit`` of ``runs`` that
    measured it at a point that held its concurrency and kept a probe; None (the machine not known: no night is
    judged by it, and no drift line notes it) when fewer than :data:`MIN_NIGHTS` did, as the nights' spread is not
    known before that many (:func:`outside_nights`). With one or two earlier probes their median is those nights
    themselves: after a slow first night (4.2 GFLOP/s against 7.5 on every later night) night 2 read "79% faster" and
    was left unjudged by ``--roofline-drift-machine 20%``; from three on, the median holds against one odd night.
    Runs stored before probes were kept count as nights without one."""
    probes: list[float | None] = []
    for r in reversed(runs):
        p = night_probe(r.value(key))
        if p is not None:
            probes.append(p)
            if len(probes) >= limit:
                break
    return reference_probe(probes) if len(probes) >= MIN_NIGHTS else None


def outside_nights(now: float, nights: Sequence[float]) -> tuple[bool | None, float]:
    """Whether ``now`` lies outside the earlier nights' 95 % prediction interval (centred on their mean,
    :func:`_runs_spread`), and its half-width; ``(None, 0)`` with fewer than :data:`MIN_NIGHTS` nights (the spread is
    not known). Nights that agree exactly have a spread of 0: known, and any move leaves it."""
    if len(nights) < MIN_NIGHTS:
        return None, 0.0
    spread = _runs_spread(nights)
    return abs(now - statistics.fmean(nights)) > spread, spread


@dataclass(frozen=True)
class Move:
    """What is known of the noise says of one value's move from a baseline (or run A) to tonight (or run B):
    :func:`judge_move`, the one home of the decision that drift (``drifted``) and ``roofline compare``
    (``significant``) both make."""

    #: beyond both measurements' 95 % intervals (:func:`distinguishable`), their samples apart by the rank test
    #: where both kept them (:func:`ranked_p`), and, where the nights' spread is known, outside it
    apart: bool
    #: at least :data:`MIN_NIGHTS` earlier nights measured it: the run-to-run noise is known
    known: bool
    #: the noise the move was tested against: the intervals' margin, or the nights' spread where that is wider
    #: (SI; inf for an interval unbounded on the facing side)
    margin: float
    #: the two measurements' own intervals' margin (:func:`distinguishable`)
    within_run: float
    #: the earlier nights' prediction-interval half-width (:func:`outside_nights`); 0 while not known
    spread: float
    #: the rank test's p where both kept their per-request samples; None otherwise
    rank_p: float | None
    #: how many earlier nights' values were given
    nights: int

    @property
    def moved(self) -> bool:
        """Apart given what is known of the noise, the :data:`MIN_NIGHTS` rule included: with fewer earlier
        nights a move beyond the intervals is never called moved (drift's ``uncertain``)."""
        return self.apart and self.known


def judge_move(now_v: StoredValue, now: float, base_v: StoredValue, base: float, nights: Sequence[float]) -> Move:
    """Whether ``now`` (of ``now_v``) moved from ``base`` (of ``base_v``) beyond what is known of the noise: both
    measurements' intervals, the rank test where both kept their requests, and, with :data:`MIN_NIGHTS` or more
    earlier ``nights`` (:func:`nights_values`), the nights' own spread. :attr:`Move.moved` is the decision;
    :attr:`Move.apart` without :attr:`Move.known` is a move the within-run intervals alone see, which drift calls
    ``uncertain`` and compare ``uncertain`` too."""
    apart, margin = distinguishable(now_v, now, base_v, base)
    rank_p = ranked_p(now_v, base_v)
    if rank_p is not None:  # both kept their requests: their samples must differ as well
        apart = apart and rank_p < RANK_ALPHA
    outside, spread = outside_nights(now, nights)
    within_run = margin
    if outside is not None:  # a prediction interval for one more night, centred on the nights' mean
        apart = apart and outside
        margin = max(margin, spread)
    return Move(apart=apart, known=outside is not None, margin=margin, within_run=within_run, spread=spread,
                rank_p=rank_p, nights=len(nights))


#: how a drift line names the window a figure is read over
_WINDOW_WORDS = {"run": "the whole run", "steady": "the steady window"}


def redefinition(was: StoredValue, now: StoredValue) -> tuple[tuple[str, ...], str]:
    """What changed in what a prediction measures since ``was`` (the latest baseline night's value): the parts
    (``quantity``, ``window``, ``arrivals``: :attr:`Drift.changed`) and the same in words; ``((), "")`` when nothing
    did. Its quantity, or the window its figure is read over (``window: steady`` against the whole run: another
    figure of the same requests); a value that does not say its window (stored before it was kept, or a math value)
    is not compared on it. Or how its open-loop point spread its sends (``sweep.arrival_span``: the same rate sent
    over N ÷ rate, or as the draw fell, is another load; a value stored before spans were kept at a ``rate`` point
    was sent drawn: :meth:`StoredValue.open_loop_span`)."""
    changed: dict[str, str] = {}
    if was.quantity and now.quantity and was.quantity != now.quantity:
        changed["quantity"] = f"it measures {now.quantity}, where it measured {was.quantity}"
    if was.window and now.window and was.window != now.window:
        changed["window"] = (f"it reads its figure over {_WINDOW_WORDS.get(now.window, now.window)}, where it read "
                             f"{_WINDOW_WORDS.get(was.window, was.window)} (window:)")
    was_span, now_span = was.open_loop_span(), now.open_loop_span()
    if was_span and now_span and was_span != now_span:
        changed["arrivals"] = (f"its open-loop point was sent on the {now_span} schedule, where it was sent "
                               f"{was_span} (sweep.arrival_span: a fixed span sends N requests over N ÷ rate, a "
                               "drawn one as the draw falls)")
    if other_workload(was.workload, now.workload):
        changed["workload"] = (f"its points ran {now.workload}, where they ran {was.workload} (the workload: "
                               "section)")
    return tuple(changed), "; ".join(changed.values())


def _fmt(v: StoredValue, x: float) -> str:
    return format_value(x, v.dimension, shown_unit(v.dimension, v.unit, v.predicted_text))


def _unheld_text(v: StoredValue) -> str:
    """Why a value measured at a point that did not hold its concurrency is not judged."""
    many = len(v.unheld_points) > 1
    return (f"point{'s' if many else ''} {', '.join(v.unheld_points)} did not hold "
            f"{'their' if many else 'its'} concurrency in this run (a lower load than the prediction names; see the "
            "verdict's notes)")


def _skipped_text(n: int) -> str:
    """How many earlier nights were no baseline because their point did not hold its concurrency."""
    return (f"{n} earlier night{'s' if n > 1 else ''} skipped: {'their points' if n > 1 else 'its point'} did not "
            f"hold {'their' if n > 1 else 'its'} concurrency")


def _machine_skipped_text(n: int, shift: float) -> str:
    """How many earlier nights were no baseline because their machine ran more than ``shift`` apart from the others'
    (only with the rule on: ``DriftPolicy.machine_shift``)."""
    return (f"{n} earlier night{'s' if n > 1 else ''} skipped: {'their' if n > 1 else 'its'} machine ran more than "
            f"{shift:.0%} apart from the other nights' (host probe)")


def _pinned(runs: Sequence[RunSummary], pinned: str) -> RunSummary | None:
    hits = [r for r in runs if r.run_id == pinned] or [r for r in runs if r.run_id.startswith(pinned)]
    return hits[0] if len(hits) == 1 else None


def earlier_runs(history_runs: Sequence[RunSummary], *, setup: SetupKey | None = None, before: str | None = None,
                 measurement: str | None = None) -> tuple[list[RunSummary], list[RunSummary]]:
    """(the runs of ``setup`` a night can be compared with, the runs that hold this very measurement). A run of
    another setup is neither; ``before`` (a replay's own measurement time) leaves out the runs that started at or
    after it; a run that holds the replayed file (``measurement``, its
    :func:`~pytest_roofline.history.measurement_id`) or started at that very time is the replay's own night, never
    one of its earlier runs: every copy, since a store written before replays were matched may hold the same
    measurement twice (trial 14n, D5). :func:`drift_for` compares with the first list; the plugin's
    ``--roofline-drift-fail`` check asks whether it is empty (a replay of a night the store holds as its setup's
    only one has nothing to compare with, as its first replay had)."""
    cut = sort_time(before) if before is not None else None  # compared as times, not as the strings written
    mine = [r for r in history_runs if setup is None or r.setup == setup]
    # by the results files' ids; by the time alone only for a run stored before ids were kept (another night may
    # share its time: a peer's folder is dated by its earliest file, trial s24c H1)
    itself = [r for r in mine if (measurement and measurement in r.measurements)
              or (cut is not None and not (measurement and r.measurements) and r.started_at
                  and sort_time(r.started_at) == cut)]
    copies = {r.run_id for r in itself}
    runs = [r for r in mine if r.run_id not in copies
            and (cut is None or not r.started_at or sort_time(r.started_at) < cut)]
    return runs, itself


def runs_drift_reads(history_runs: Sequence[RunSummary], policy: DriftPolicy, *, before: str | None = None,
                     measurement: str | None = None) -> list[RunSummary]:
    """The runs of ``history_runs`` that :func:`drift_for` can read for any value of a session with this ``policy``
    (and, for a replay, its ``before`` time and ``measurement`` id), in their order: what an xdist worker is sent
    instead of the whole index, with the same verdicts as the whole index gives (trial 21, H1). Per setup and per
    stored key, the newest runs before the cut back to the ``max(window, SPREAD_RUNS)``-th that measured it at a
    point that held its concurrency (the baseline's walk and the nights' spread, a prediction missing on some nights
    included); every run that holds this very measurement (the replay's own night); every run a pinned baseline
    can name, whatever its age. A store that holds old-scheme values (no definition hash) is sent whole: which
    stored value is whose is then decided across all runs (:func:`unify_keys`)."""
    runs, itself = earlier_runs(history_runs, before=before, measurement=measurement)
    if any(not v.definition_hash for r in runs for v in r.values):
        return list(history_runs)
    keep = {r.run_id for r in itself}
    if policy.pinned is not None:
        keep |= {r.run_id for r in history_runs if r.run_id.startswith(policy.pinned)}
    need = max(SPREAD_RUNS, policy.window)
    by_setup: dict[SetupKey, list[RunSummary]] = {}
    for r in sorted(runs, key=lambda r: r.started_at):
        by_setup.setdefault(r.setup, []).append(r)
    for mine in by_setup.values():
        counted: dict[str, int] = {}
        for r in reversed(mine):
            for v in r.values:
                n = counted.get(v.key, 0)
                if n >= need:
                    continue
                keep.add(r.run_id)
                if v.mode == "measured" and v.held and _finite(v.measured) is not None:
                    counted[v.key] = n + 1
    # a kept run's day-mates: whether a day holds several runs decides if a baseline's date shows its time
    days = {(r.setup, _day(r.started_at)) for r in runs if r.run_id in keep}
    keep |= {r.run_id for r in runs if (r.setup, _day(r.started_at)) in days}
    return [r for r in history_runs if r.run_id in keep]


def drift_for(values: Iterable[StoredValue], history_runs: Sequence[RunSummary], policy: DriftPolicy, *,
              setup: SetupKey | None = None, before: str | None = None,
              measurement: str | None = None) -> dict[str, Drift]:
    """Each value's drift against ``history_runs`` (the store's index; only runs of ``setup`` count when it is
    given — the caller passes the run's own SetupKey), by prediction key.

    Per value: NOT_MEASURED without a measured value now; NEW when no earlier run of the setup measured it (with a
    pinned baseline: when that run did not); PREDICTION_CHANGED when its quantity or window differs from the latest
    baseline run's (it measures something else now; never fails a run); else, by the threshold around the baseline
    (the previous value, the median of the last N, or the pinned run's), STEADY within it, and beyond it DRIFTED
    when the move is beyond what is known of the noise (:func:`judge_move`, which ``roofline compare`` calls too:
    the measurements' intervals, and tonight outside the nights' prediction interval around their mean once 3
    nights measured it, never before), UNCERTAIN when not; an edited ink, tolerance or band
    (``predicted_text``, lo/hi, the definition's hash) is a note on that status, never a replacement of it: it
    cannot move the measured value. A value measured now at a point that did not hold its concurrency
    (``StoredValue.held`` false) is UNCERTAIN whatever its change; earlier nights whose value is such a one are
    skipped, as baselines and for the nights' spread, like nights that did not measure it. Values stored under the
    old key scheme are matched to
    this run's keys first (:func:`unify_keys`). ``before`` (an ISO time: a replayed run's own measurement time)
    leaves out the runs that started at or after it: a replay of an older measurement is compared with the nights
    before it, never with itself or with later nights. ``measurement`` (a replayed file's
    :func:`~pytest_roofline.history.measurement_id`) names the stored run that holds that very file whatever time
    it was stored at (a live run is stored at its session's start, before the file's ``created_at``): it is left
    out too, and reported as ``stored_as``."""
    values = list(values)
    runs, itself = earlier_runs(history_runs, setup=setup, before=before, measurement=measurement)
    runs = unify_keys(runs, values)
    runs.sort(key=lambda r: r.started_at)
    pinned = _pinned(runs, policy.pinned) if policy.pinned is not None else None
    per_day = Counter(_day(r.started_at) for r in runs if r.started_at)
    # tonight counts too: a baseline of this very day is named by its time, so a CI re-run an hour after the night
    # tells this morning's run from the failed retry (trial s26a #7: "vs previous run (2026-12-07, ...)" on 12-07)
    per_day[_day(before) if before else _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")] += 1
    crowded = {day for day, n in per_day.items() if n > 1}  # a date alone would not say which run
    out: dict[str, Drift] = {}
    for v in values:
        tol, tol_text = policy.threshold_for(v)
        now = _finite(v.measured) if v.mode == "measured" else None
        if now is None:
            out[v.key] = Drift(v.key, DriftStatus.NOT_MEASURED, "not measured in this run", threshold_text=tol_text)
            continue
        found: list[tuple[RunSummary, StoredValue, float]] = []
        skipped = 0  # earlier nights that measured it at a point that did not hold its concurrency: no baseline
        # the earlier nights' machine (their median host probe; None, not known, before MIN_NIGHTS of them kept one): a
        # night whose machine ran apart from it is no baseline
        machine = night_machine(v.key, runs, limit=max(SPREAD_RUNS, policy.window))
        off_machine = 0
        for r in ([pinned] if pinned is not None else [] if policy.pinned is not None else reversed(runs)):
            old = r.value(v.key)
            x = _finite(old.measured) if old is not None and old.mode == "measured" else None
            if old is not None and x is not None and not old.held:
                skipped += 1
            elif (old is not None and x is not None and pinned is None
                  and machine_apart(old.host_probe_gflop_per_s, machine, policy.machine_shift)):
                off_machine += 1
            elif old is not None and x is not None and found and other_span(old, v):
                # sent on another span than tonight's and than the newest baseline night: another figure, no
                # baseline (the newest night is always kept, so a night that changed the span says so below)
                continue
            elif old is not None and x is not None:
                found.append((r, old, x))
                if len(found) >= policy.window or other_span(old, v):
                    break
        unheld_now = "" if v.held else _unheld_text(v)
        machine_now = ("" if unheld_now or policy.machine_shift is None
                       else machine_moved(v.host_probe_gflop_per_s, machine, policy.machine_shift))
        # the rule off (the default): a night whose machine ran apart is judged, and its line says so
        machine_note = (machine_moved(v.host_probe_gflop_per_s, machine) if policy.machine_shift is None else "")
        if not found:
            if skipped and pinned is not None:
                why = (f"new: the pinned run {policy.pinned} measured it at a point that did not hold its "
                       "concurrency, so it is no baseline")
            elif skipped:
                why = ("new: no earlier run on this setup measured it at a point that held its concurrency "
                       f"({_skipped_text(skipped)})")
            else:
                why = ("new: no earlier run on this setup measured it" if policy.pinned is None else
                       f"new: the pinned run {policy.pinned} did not measure it on this setup" if pinned is not None
                       else f"new: no run {policy.pinned} of this setup in the store")
            stored_as = next((r.run_id for r in itself if r.value(v.key) is not None), "")
            pinned_self = _pinned(itself, policy.pinned) if policy.pinned is not None and pinned is None else None
            if pinned_self is not None:  # the pinned run is this very measurement, already stored: not its baseline
                why = (f"new: the pinned run {pinned_self.run_id} is this measurement itself, already stored, which a "
                       "replay is not compared with")
            elif stored_as and policy.pinned is None and not skipped:
                why = (f"new: the store already holds this measurement (run {stored_as}), which a replay is not "
                       "compared with, and no earlier run on this setup measured it")
            if off_machine:
                why += f"; {_machine_skipped_text(off_machine, policy.machine_shift or MACHINE_SHIFT)}"
            if unheld_now:
                why += f"; {unheld_now}"
            out[v.key] = Drift(v.key, DriftStatus.NEW, why, now=now, threshold_text=tol_text, stored_as=stored_as)
            continue
        found.reverse()  # oldest first
        xs = [x for _r, _o, x in found]
        # the night-to-night spread, from the latest SPREAD_RUNS nights that measured it (whatever the baseline)
        spread_xs = nights_values(v.key, runs, limit=max(SPREAD_RUNS, policy.window), machine=machine,
                                  shift=policy.machine_shift, like=v)
        base = statistics.median(xs) if len(found) > 1 else found[-1][2]
        # the baseline's own measurement: the run whose value is the median (the nearer one for an even N)
        _br, base_v, _bx = min(found, key=lambda t: (abs(t[2] - base), -found.index(t)))
        latest = found[-1][1]
        ids = tuple(r.run_id for r, _o, _x in found)
        dates = tuple(r.started_at for r, _o, _x in found)
        commits = tuple(r.commit for r, _o, _x in found)
        skip = (f"; {_skipped_text(skipped)}" if skipped else "") + (
            f"; {_machine_skipped_text(off_machine, policy.machine_shift or MACHINE_SHIFT)}" if off_machine else "")
        was = f"; baseline {_fmt(v, base)}"  # the value itself: a change in % alone hides what it was
        if pinned is not None:
            against = f"vs pinned run {pinned.run_id} ({_date_span(dates, crowded)}{was})"
        elif len(found) == 1:
            commit = f", {found[0][0].commit}" if found[0][0].commit else ""
            against = f"vs previous run ({_date_span(dates, crowded)}{commit}{skip}{was})"
        else:
            against = f"vs median of {len(found)} runs ({_date_span(dates, crowded)}{skip}{was})"
        change = (now - base) / abs(base) if base != 0 else (0.0 if now == 0 else None)
        moved = _pct(change) if change is not None else f"{_fmt(v, base)} → {_fmt(v, now)}"
        beyond = _beyond(tol, now, base)
        move = judge_move(v, now, base_v, base, spread_xs)  # the one decision compare makes too
        apart, margin, rank_p, spread, within_run = move.moved, move.margin, move.rank_p, move.spread, move.within_run
        # what the prediction measures changed (its quantity or window: the at: point is part of the key): the number
        # may have moved because of the edit, so it is "prediction changed", never judged. An edited ink, tolerance,
        # band or drift threshold cannot move a measured value: the move is judged as usual, and the edit is a note
        changed, redone = redefinition(latest, v)
        redefined = bool(changed)
        # a hash stored before windows were kept lacks a steady window that tonight's has: not comparable
        hashes = latest.window is not None or v.window in (None, "", "run")
        inked = not redefined and (latest.predicted_text != v.predicted_text or latest.lo != v.lo
                                   or latest.hi != v.hi or bool(hashes and latest.definition_hash and v.definition_hash
                                                                and latest.definition_hash != v.definition_hash))
        if unheld_now or machine_now:
            verdict = f"not judged: {unheld_now or machine_now}"
        elif not beyond:
            verdict = f"within {tol_text}"
        elif move.apart and not move.known:
            # the within-run intervals alone cannot hold the night-to-night noise: never drifted on them
            rank = f"; rank test p={rank_p:.2g}" if rank_p is not None else ""
            if len(spread_xs) == 2 and min(spread_xs) <= now <= max(spread_xs):
                lo_n, hi_n = min(spread_xs), max(spread_xs)
                verdict = (f"beyond {tol_text} and the measurements' intervals{rank}, but within the 2 earlier "
                           f"nights' own range ({_fmt(v, lo_n)} .. {_fmt(v, hi_n)}: their disagreement already spans "
                           f"tonight's value); {len(spread_xs)} of {MIN_NIGHTS} earlier nights: the run-to-run "
                           "noise is not known yet")
            else:
                verdict = (f"beyond {tol_text} and the measurements' intervals{rank}, but {len(spread_xs)} of "
                           f"{MIN_NIGHTS} earlier nights: the run-to-run noise is not known yet")
        elif apart:
            # the noise it beat, so a DRIFTED line can be checked from the log (trial s26a #14)
            beat = ([f"the runs' intervals ±{_fmt(v, within_run)}"] if math.isfinite(within_run) and within_run > 0
                    else [])
            if spread > 0 and math.isfinite(spread):
                beat.append(f"the earlier nights' spread ±{_fmt(v, spread)}")
            if rank_p is not None:
                beat.append(f"rank test p={rank_p:.2g}")
            verdict = f"beyond {tol_text}" + (f" and the noise ({'; '.join(beat)})" if beat else "")
        else:
            noise = "an unbounded interval" if not math.isfinite(margin) else f"±{_fmt(v, margin)}"
            if rank_p is not None:
                # a small p beside "within the noise" read as a contradiction (trial s26a #14): the intervals
                # overlap, and a move must be beyond both to drift
                noise += (f"; the rank test alone gives p={rank_p:.2g}, but a move must also be beyond the intervals"
                          if rank_p < 0.05 else f"; rank test p={rank_p:.2g}")
            if spread > within_run and math.isfinite(within_run):  # the nights' spread decided, not the intervals
                own = f"; the runs' own intervals ±{_fmt(v, within_run)}" if within_run > 0 else ""
                verdict = f"beyond {tol_text} but within the earlier nights' spread ({noise}{own})"
            else:
                verdict = f"beyond {tol_text} but within the measurements' noise ({noise})"
        if redefined:
            # not judged: the move is said against the threshold only (the nights' spread and the intervals are of
            # the other definition's nights: trial s23 L2 read "within the earlier nights' spread" of drawn nights
            # under a fixed night's baseline)
            status = DriftStatus.PREDICTION_CHANGED
            # the move, and why it is not judged: no threshold verdict to take back (trial s24c L9 read "beyond
            # 10%; ... (not judged as drift)")
            text = f"{moved} {against}, not judged as drift: the prediction changed since: {redone}"
            if "quantity" in changed:
                # another quantity: a move from one to the other, or a threshold on it, means nothing (trial s24 M2:
                # "-99.2% ... beyond 10%" of a block count against a token count)
                change = None
                text = (f"not compared: the prediction changed since: {redone}; {_fmt(latest, base)} then "
                        f"({_date_span(dates, crowded)}), {_fmt(v, now)} now")
        else:
            status = (DriftStatus.UNCERTAIN if unheld_now or machine_now else DriftStatus.STEADY if not beyond
                      else DriftStatus.DRIFTED if apart else DriftStatus.UNCERTAIN)
            text = f"{moved} {against}, {verdict}"
            if machine_note and beyond:  # judged as usual; what the probe saw is said beside it
                text += (f"; note: {machine_note} (--roofline-drift-machine {MACHINE_SHIFT:.0%} leaves such a night "
                         "unjudged)")
            if inked:  # a note: the measured value's move is judged whatever the ink says
                ink = (f" ({latest.predicted_text or '—'} → {v.predicted_text or '—'})"
                       if latest.predicted_text != v.predicted_text else " (its tolerance, band or drift threshold)")
                text += f"; note: the prediction's ink changed since{ink}, which does not move the measured value"
        out[v.key] = Drift(v.key, status, text, now=now, baseline=base, baseline_run_ids=ids, baseline_dates=dates,
                           baseline_commits=commits, change_rel=change, threshold_text=tol_text,
                           noise=margin if math.isfinite(margin) else None, held=not unheld_now,
                           changed=changed if redefined else (), machine=machine_now)
    return out


#: the statuses of a value that was compared with a baseline (judged as drift, or too close to call): a
#: ``prediction_changed`` value was not (its move is said, not judged), so it is not one (trial s24 H1: a night whose
#: every prediction changed read "4 compared" and passed --roofline-drift-fail, having judged nothing)
COMPARED = ("steady", "drifted", "uncertain")


def _held(d: Drift | Mapping[str, Any]) -> bool:
    """Judged: measured at points that held their concurrency, on a machine that did not run apart."""
    if isinstance(d, Drift):
        return d.held and not d.machine
    return d.get("held") is not False and not d.get("machine")


def _machine(d: Drift | Mapping[str, Any]) -> bool:
    return bool(d.machine if isinstance(d, Drift) else d.get("machine"))


def _status(d: Drift | Mapping[str, Any]) -> str:
    return d.status.value if isinstance(d, Drift) else str(d.get("status"))


def machine_count(drifts: Iterable[Drift | Mapping[str, Any]]) -> int:
    """How many of ``drifts`` were not judged because the machine itself ran apart tonight (:attr:`Drift.machine`):
    a part of :func:`not_judged_count`."""
    return sum(1 for d in drifts if _status(d) in COMPARED and _machine(d))


def not_judged_count(drifts: Iterable[Drift | Mapping[str, Any]]) -> int:
    """How many of ``drifts`` were measured tonight at a point that did not hold its concurrency (compared with a
    baseline in form, but not judged: :attr:`Drift.held`)."""
    return sum(1 for d in drifts if _status(d) in COMPARED and not _held(d))


def compared_count(drifts: Iterable[Drift | Mapping[str, Any]]) -> tuple[int, int]:
    """(compared with a baseline, measured now) over ``drifts``. A value measured tonight at a point that did not
    hold its concurrency was not judged (:attr:`Drift.held`): it is measured, never compared, so a night whose
    points all starved compared nothing (``--roofline-drift-fail`` fails it)."""
    compared = measured = 0
    for d in drifts:
        status = _status(d)
        measured += status != "not_measured"
        compared += status in COMPARED and _held(d)
    return compared, measured


def drift_counts(drifts: Iterable[Drift | Mapping[str, Any]], policy: DriftPolicy | None = None, *,
                 added: Mapping[str, int] | None = None) -> str:
    """``44 compared (3 drifted, 41 steady), 2 new vs the previous run``: how many were compared, always (0
    compared is said, never left out), then the statuses that have a prediction. A replay of a measurement the store
    already holds says so; ``added`` (stored run id -> how many values this session added to it: the history's
    ``add_values``) says what storing it did: values added to that run, or (none added) nothing stored again."""
    n: dict[str, int] = {}
    drifts = list(drifts)
    not_judged = not_judged_count(drifts)
    for d in drifts:
        status = _status(d)
        if status in COMPARED and not _held(d):
            continue
        n[status] = n.get(status, 0) + 1
    words = [(DriftStatus.DRIFTED, "drifted"), (DriftStatus.UNCERTAIN, "uncertain"), (DriftStatus.STEADY, "steady")]
    compared = sum(n.get(s, 0) for s in COMPARED)
    parts = [f"{n[s.value]} {w}" for s, w in words if n.get(s.value)]
    line = f"{compared} compared" + (f" ({', '.join(parts)})" if parts else "")
    if n.get(DriftStatus.PREDICTION_CHANGED.value):
        line += (f", {n[DriftStatus.PREDICTION_CHANGED.value]} prediction changed (measured against another "
                 "definition: not judged as drift)")
    if not_judged:
        by_machine = machine_count(drifts)
        why = [w for n_w, w in ((not_judged - by_machine, "their point did not hold its concurrency"),
                                (by_machine, "the machine itself ran apart from the other nights")) if n_w]
        line += f", {not_judged} not judged ({'; '.join(why)})"
    if n.get(DriftStatus.NEW.value):
        line += f", {n[DriftStatus.NEW.value]} new"
        itself = sorted({x for d in drifts if _status(d) == DriftStatus.NEW.value and (x := _stored_as(d))})
        if itself:  # a replay of a measurement the store holds: compared with the runs before it, never with it
            n_added = sum((added or {}).get(x, 0) for x in itself)
            stored = (f"; {n_added} value{'s' if n_added != 1 else ''} it lacked {'were' if n_added != 1 else 'was'} "
                      "added to it, those it held not stored again" if n_added else ", nor stored again")
            line += (f" (this measurement is already stored as run {', '.join(itself)}: a replay is not compared "
                     f"with it{stored})")
    if n.get(DriftStatus.NOT_MEASURED.value):
        line += f", {n[DriftStatus.NOT_MEASURED.value]} not measured"
    return line + (f" vs {policy.describe()}" if policy is not None else "")


def _stored_as(d: Drift | Mapping[str, Any]) -> str:
    return d.stored_as if isinstance(d, Drift) else str(d.get("stored_as") or "")
