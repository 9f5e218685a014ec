"""Adaptive sweeps: a point runs until the verdicts that read it are decided, or its cap.

**The stopping rule.** A point's predictions give it :class:`~pytest_roofline.measure.plan.DecisionTarget` s:
tolerance bands on statistics of its requests (a throughput, a percentile, a mean). The load generator runs the
point as usual and, at planned *looks* (from one round of the closed loop, ``max(2, C)`` completed requests, to
the cap in a geometric progression, :attr:`StoppingRule.max_looks` of them at most), hands the finished requests
to :class:`AdaptiveStop`. At each look every target gets its interval from ``measure/stats`` (the
order-statistic interval of a percentile, batch means of a mean, batch means over sub-windows of a throughput)
and is

* ``inside`` / ``outside``: the whole interval lies inside / outside the band: decided;
* ``futile``: it cannot be decided within the cap: a percentile whose side needs more samples than the cap
  allows (a p99 needs 368 samples before it has any upper bound at 95 %), a minimum sample count above the cap,
  or a projected sample count (the 1/√n rule, ``stats.requests_to_decide``) beyond :attr:`StoppingRule.
  futility_factor` × the requests left. Waiting for it would spend the cap without deciding it; its verdict is
  inconclusive either way, and the report says how many requests it needs;
* ``moot``: another target of the same prediction here is outside, and the prediction reads the point through
  the AND of them (a goodput's SLOs: TTFT p99 far above its SLO decides "misses", whatever TPOT does);
* ``undecided``: keep going.

Per-request statistics are taken over the requests *sent* before the oldest one still in flight (all of them have
finished), not over those that happen to have finished: at a look the slow requests are still running, and a
percentile of the finished ones would be biased low.

The point stops at the first look where no target is ``undecided`` (and the floor, one full round of the closed
loop and at least :attr:`StoppingRule.min_requests`, is reached), else at its cap. A point with no target (only
Little's law, knees, hygiene read it) stops at the floor. A closed-loop point Little's law reads has a floor of two
rounds (``points.HELD_WINDOW_QUANTITIES``): stopped after one, every request was sent at once and the held window
is empty (C in flight by construction, which the check does not score).

**Optional stopping.** Looking at the data after every round and stopping at the first decisive look inflates the
error rate of a fixed-level interval (Armitage, McPherson & Rowe, "Repeated significance tests on accumulating
data", J. R. Stat. Soc. A 132 (1969): five looks at 5 % reject a true null ~14 % of the time). Each look therefore
uses level ``1 − α/L`` over the ``L`` planned looks of the point: a Bonferroni bound, so the chance that *any* look
misplaces a target is at most α, whatever the dependence between looks. It is more conservative than Pocock's or
O'Brien & Fleming's group-sequential boundaries (Jennison & Turnbull, *Group Sequential Methods with Applications
to Clinical Trials*, Chapman & Hall/CRC 2000, ch. 2-3), but it needs no normality (percentile intervals are
distribution-free order statistics) and no equally spaced information, which a duration-capped point or a
percentile does not have. The looks are planned before the point starts (their number fixes the level), and no
look beyond the last planned one is taken.

**Requests in flight at a stop.** When the rule stops a point, nothing more is sent, and the sample is the one the
rule decided on: the requests sent by the horizon. Every request sent after it leaves the sample with status
``discarded`` (``RequestRecord.in_sample`` is false: neither a measurement nor a failure): the ones still in flight
are cancelled, their connections closed, which makes vLLM abort them, so the GPU does not finish work nobody reads
(a fixed-count point's drain, up to one more request duration per point); the ones that already finished are kept
in the per-request file but out of the sample, which would otherwise favour the fast late requests. Requests an
open loop had due but not yet sent are dropped, never sent, never recorded.

**Order.** :func:`adaptive_order` runs the closed loop from the highest concurrency down, and :func:`implied_by`
drops a latency target a point measured before decides: a TTFT or TPOT band met at a higher concurrency is met
below it, one missed at a lower concurrency is missed above it (latency does not fall as a closed loop's
concurrency rises).

**Bisection of a knee.** When only a throughput-knee prediction reads some points, :func:`knee_bisection` orders
them so that early points decide later ones: the knee is the first grid pair whose doubling gains less than
``knee_gain``, and under a concave throughput curve that predicate is monotone over the grid, so bisection finds it
with about ``2·log2(n)`` points instead of ``n``.

Pure functions over request records (no pytest, no I/O); the sweep (``measure/sweep.py``) wires them to the load
generator, the benchmark (``benchmarks/adaptive_sweep.py``) replays recorded and synthetic requests through them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_roofline.measure import stats
from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.plan import DecisionTarget, PointPlan
from pytest_roofline.measure.stats.glossary import prompt_tokens
from pytest_roofline.quantities.analysis import throughput_knee
from pytest_roofline.quantities.measurement import PointMode, PointRecord, client_number

__all__ = ["StoppingRule", "TargetDecision", "AdaptiveStop", "evaluate", "statistic_interval", "min_samples",
           "knee_bisection", "SweepOrder", "records_horizon", "adaptive_order", "implied_by", "replay_point",
           "DECIDED", "INSIDE", "OUTSIDE", "FUTILE", "UNDECIDED", "MOOT"]

INSIDE, OUTSIDE, FUTILE, UNDECIDED, MOOT = "inside", "outside", "futile", "undecided", "moot"
DECIDED = (INSIDE, OUTSIDE)

#: the fewest samples behind any percentile's decision, and at least 1 / (1 − q) of them (one sample expected
#: beyond the quantile): a p50 needs 8, a p90 10, a p95 20, a p99 100 — a p99 is never decided from 20 requests,
#: however far from its band the first 20 lie (they are the first 20: a closed loop's first wave, a warm cache)
MIN_PERCENTILE_SAMPLES = 8
#: the fewest samples behind a mean's decision: two batches of stats.MIN_BATCH for the batch-means interval
MIN_MEAN_SAMPLES = 2 * stats.MIN_BATCH


@dataclass(frozen=True)
class StoppingRule:
    """The knobs of the stopping rule (see the module docstring)."""

    alpha: float = 0.05  # the chance that any look misplaces a target (Bonferroni over the planned looks)
    min_requests: int = 2  # the floor, with one full round of a closed loop
    max_looks: int = 8
    futility_factor: float = 2.0  # projected requests beyond this × the requests left: futile

    def looks(self, cap_requests: int, concurrency: int | None, rounds: int = 1) -> list[int]:
        """The completed-request counts at which the rule looks, up to and including the cap: from the floor
        (``rounds`` full rounds of a closed loop, at least :attr:`min_requests`) to the cap in a geometric
        progression (an interval narrows as 1/√n, so equal ratios of n are equal steps of precision), at most
        :attr:`max_looks` of them."""
        cap = max(1, cap_requests)
        first = min(cap, max(self.min_requests, rounds * (concurrency or 1)))
        if first >= cap or self.max_looks <= 1:
            return [cap]
        ratio = (cap / first) ** (1.0 / (self.max_looks - 1))
        out: list[int] = []
        for j in range(self.max_looks - 1):
            n = int(round(first * ratio ** j))
            if n < cap and (not out or n > out[-1]):
                out.append(n)
        return out + [cap]

    def look_level(self, n_looks: int) -> float:
        """The confidence level of each look: 1 − α / L."""
        return 1.0 - self.alpha / max(1, n_looks)


def min_samples(statistic: str) -> int:
    """The fewest samples a statistic is decided from (:data:`MIN_PERCENTILE_SAMPLES`, :data:`MIN_MEAN_SAMPLES`)."""
    q = _quantile(statistic)
    if q is not None:
        return max(MIN_PERCENTILE_SAMPLES, math.ceil(1.0 / (1.0 - q) - 1e-9))
    if statistic.endswith("_throughput") and statistic != "per_request_throughput":
        return 0  # a rate's samples are its token (or completion) events: StoppingRule.min_requests applies
    return MIN_MEAN_SAMPLES


def _quantile(statistic: str) -> float | None:
    tail = statistic.rsplit("_", 1)[-1]
    if tail.startswith("p") and tail[1:].isdigit():
        return int(tail[1:]) / 100.0
    return None


def _completed(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    done = [r for r in records if r.in_sample and r.ok and r.end_s is not None]
    done.sort(key=lambda r: r.end_s or 0.0)
    return done


def _cohort(records: Sequence[RequestRecord], horizon_s: float) -> list[RequestRecord]:
    """The completed requests *sent* by the horizon (every one of them has finished): a sample that does not
    depend on how long each request took. The requests completed so far are not: at a look the slow ones are
    still in flight, so their percentiles would be biased low (a closed loop of 128 streams with TTFTs spread over
    seconds showed a p50 of 465 ms at its second look for a true 678 ms)."""
    return [r for r in _completed(records) if r.sent_s is None or r.sent_s <= horizon_s]


def _out_tokens(r: RequestRecord) -> int:
    return r.completion_tokens if r.completion_tokens is not None else len(r.chunk_times_s)


def _samples(metric: str, done: Sequence[RequestRecord]) -> list[float]:
    """Per-request samples of a latency metric, in completion order (itl: every token gap)."""
    out: list[float] = []
    for r in done:
        t, e = r.ttft_s, r.e2e_s
        if metric == "ttft" and t is not None:
            out.append(t)
        elif metric == "e2e" and e is not None:
            out.append(e)
        elif metric == "tpot" and t is not None and e is not None and _out_tokens(r) > 1:
            out.append((e - t) / (_out_tokens(r) - 1))
        elif metric == "itl":
            out.extend(r.itls_s)
    return out


def statistic_interval(statistic: str, records: Sequence[RequestRecord], window_s: tuple[float, float],
                       level: float, concurrency: int | None = None) -> tuple[stats.Interval, list[float] | None]:
    """The interval of ``statistic`` over the completed measured ``records`` and the samples behind it (None for
    rates). ``window_s``: (measurement start, horizon) — the horizon is a time before which every token the point
    received belongs to a finished request (the oldest in-flight request's send time), so a rate taken over it is
    not biased low by the tokens of requests still streaming; per-request statistics are taken over the requests
    sent by the horizon (:func:`_cohort`), not over those that happen to have finished. Throughputs take the
    interval the point's results will carry (``stats.completion_rate_interval``: the completed requests, in
    rounds of ``concurrency`` for a closed loop), so a point stopped as decided is decided in its results too."""
    done = _cohort(records, window_s[1])
    if statistic in ("output_throughput", "total_throughput", "request_throughput"):
        # the cohort's requests have all finished, some after the horizon: the duration runs to the last of
        # them, as the results' would if the point stopped here (first send to last end of the kept requests)
        ended = [r for r in done if r.end_s is not None]
        ends = [r.end_s for r in ended if r.end_s is not None]
        weights = None if statistic == "request_throughput" else [
            float(_out_tokens(r) + (prompt_tokens(r) if statistic == "total_throughput" else 0)) for r in ended]
        window = (window_s[0], max([window_s[1], *ends]))
        return stats.completion_rate_interval(ends, window, level, concurrency=concurrency, weights=weights), None
    if statistic == "per_request_throughput":
        vals = [_out_tokens(r) / e for r in done if (e := r.e2e_s) is not None and e > 0]
        return stats.mean_interval(vals, level), vals
    metric, _, stat = statistic.rpartition("_")
    samples = _samples(metric, done)
    if stat == "mean":
        return stats.mean_interval(samples, level), samples
    q = _quantile(statistic)
    if q is None or metric not in ("ttft", "tpot", "itl", "e2e"):
        raise ValueError(f"unknown statistic {statistic!r}")
    return stats.percentile_interval(samples, q, level), samples


@dataclass(frozen=True)
class TargetDecision:
    """One target at one look: its interval, its state and, when not decided, the requests it still needs."""

    target: DecisionTarget
    interval: stats.Interval
    state: str
    requests: int  # completed requests behind it
    requests_to_decide: int | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**self.target.to_dict(), "state": self.state, "requests": self.requests,
                "interval": self.interval.to_json(), "requests_to_decide": self.requests_to_decide,
                **({"why": self.why} if self.why else {})}


def _side(target: DecisionTarget, iv: stats.Interval) -> str:
    lo = -math.inf if target.lo is None else target.lo
    hi = math.inf if target.hi is None else target.hi
    if lo <= iv.lo and iv.hi <= hi:
        return INSIDE
    if iv.hi < lo or iv.lo > hi:
        return OUTSIDE
    return UNDECIDED


def evaluate(targets: Sequence[DecisionTarget], records: Sequence[RequestRecord], window_s: tuple[float, float],
             level: float, cap_requests: int, rule: StoppingRule = StoppingRule(),
             concurrency: int | None = None) -> list[TargetDecision]:
    """Every target's state at one look (see the module docstring for the states); ``concurrency``: a closed
    loop's C (None for an open loop), which a throughput's interval is taken in rounds of."""
    done_n = len(_cohort(records, window_s[1]))
    left = max(0, cap_requests - done_n)
    out = []
    for t in targets:
        iv, samples = statistic_interval(t.statistic, records, window_s, level, concurrency)
        need_min = max(min_samples(t.statistic), rule.min_requests)
        state = _side(t, iv)
        why = ""
        more: int | None = None
        edges = [e for e in (t.lo, t.hi) if e is not None and iv.lo < e < iv.hi]
        q = iv.quantile
        if q is not None:  # a side that no count within the cap can bound: futile, however few requests so far
            for e in edges:
                side = "upper" if iv.estimate < e else "lower"
                floor_n = stats.min_samples_for_bound(q, level, side)
                if floor_n > cap_requests:
                    state = FUTILE
                    why = (f"{t.statistic}: an {side} bound at {level:.4g} needs {floor_n} samples, the cap is "
                           f"{cap_requests}")
                    break
        if state != FUTILE and done_n < need_min:
            state = UNDECIDED
            why = f"{done_n} of the {need_min} requests {t.statistic} is decided from"
            if need_min > cap_requests:
                state, why = FUTILE, f"{t.statistic} needs {need_min} requests, the cap is {cap_requests}"
        elif state == UNDECIDED:
            for e in edges:
                need = stats.requests_to_decide(iv, e, max(1, done_n), samples)
                more = need if more is None or (need is not None and need > more) else more
                if need is None or need > rule.futility_factor * max(left, 0):
                    state = FUTILE
                    why = (f"{t.statistic}: " + ("no count of requests decides it (its estimate sits on the "
                                                 "bound)" if need is None else
                                                 f"~{need} more requests needed, {left} left before the cap"))
        out.append(TargetDecision(t, iv, state, done_n, more, why))
    return _conjunctions(out)


def _conjunctions(decisions: list[TargetDecision]) -> list[TargetDecision]:
    """A prediction that reads the point through the AND of its targets (``DecisionTarget.conjunction``) is decided
    as soon as one of them is outside: the others are then decided with it (state ``outside``, why says so)."""
    out_of = {d.target.prediction_id for d in decisions if d.target.conjunction and d.state == OUTSIDE}
    res = []
    for d in decisions:
        if d.target.conjunction and d.target.prediction_id in out_of and d.state not in DECIDED:
            d = replace(d, state=MOOT, why=f"moot: another target of {d.target.prediction_id} here is outside")
        res.append(d)
    return res


@dataclass
class AdaptiveStop:
    """The load generator's stop check for one point (``loadgen.run_load(stop_check=...)``).

    ``wants_look`` is cheap (called often); the call itself evaluates the targets on the finished records and
    returns the reason to stop, or None to go on. ``decisions`` keeps the last look's, ``looks_taken`` the looks."""

    plan: PointPlan
    rule: StoppingRule = field(default_factory=StoppingRule)
    cap_requests: int | None = None
    stopped: str | None = None
    decisions: list[TargetDecision] = field(default_factory=list)
    looks_taken: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        cap = self.cap_requests if self.cap_requests is not None else self.plan.num_requests
        if cap is None:  # duration-capped: looks at equal fractions of the duration (see time_looks)
            self._looks: list[int] = []
            self._time_looks = [self.plan.duration_s * (j + 1) / self.rule.max_looks  # type: ignore[operator]
                                for j in range(self.rule.max_looks)]
            self.cap_requests = None
            self.level = self.rule.look_level(self.rule.max_looks)
        else:
            self._looks = self.rule.looks(cap, self.plan.concurrency, self.rounds)
            self._time_looks = []
            self.cap_requests = cap
            self.level = self.rule.look_level(len(self._looks))
        self._next = 0

    @property
    def rounds(self) -> int:
        """The full rounds of a closed loop before the first look: two where a prediction reads the point's held
        window (``points.HELD_WINDOW_QUANTITIES``: after one round every request was sent at once, so C in flight
        holds by construction), else one."""
        return 2 if self.plan.held_window and self.plan.mode == PointMode.CLOSED else 1

    @property
    def planned_looks(self) -> int:
        return len(self._looks) or len(self._time_looks)

    def wants_look(self, completed: int, elapsed_s: float) -> bool:
        if self.stopped is not None or self._next >= self.planned_looks:
            return False
        if self._looks:
            return completed >= self._looks[self._next]
        floor = max(self.rule.min_requests, self.rounds * (self.plan.concurrency or 1))
        return elapsed_s >= self._time_looks[self._next] and completed >= floor

    def __call__(self, records: Sequence[RequestRecord], window_s: tuple[float, float], elapsed_s: float
                 ) -> str | None:
        n = len(_completed(records))
        while self._next < self.planned_looks and (
                (self._looks and n >= self._looks[self._next])
                or (self._time_looks and elapsed_s >= self._time_looks[self._next])):
            self._next += 1
        cap = self.cap_requests if self.cap_requests is not None else _projected_cap(records, elapsed_s,
                                                                                     self.plan.duration_s)
        self.decisions = evaluate(self.plan.targets, records, window_s, self.level, cap, self.rule,
                                  self.plan.concurrency if self.plan.mode == PointMode.CLOSED else None)
        self.looks_taken.append(n)
        if self._looks and n >= self._looks[-1]:
            return None  # the cap: the point ends by itself
        if self.plan.to_cap:
            return None  # a prediction here whose band the rule cannot read (RUN_TO_CAP_QUANTITIES): to the cap
        if all(d.state != UNDECIDED for d in self.decisions):
            decided = sum(d.state in DECIDED for d in self.decisions)
            self.stopped = (f"adaptive: {decided} of {len(self.decisions)} targets decided"
                            + (f", {len(self.decisions) - decided} undecidable within the cap"
                               if decided < len(self.decisions) else "")
                            + f" after {n} requests (look {len(self.looks_taken)} of "
                              f"{self.planned_looks}, level {self.level:.4g})")
            return self.stopped
        return None

    def summary(self, records: Sequence[RequestRecord]) -> dict[str, Any]:
        """What the results file records of the adaptive decision (the point's ``adaptive`` section)."""
        return {"cap_requests": self.cap_requests, "cap_duration_s": self.plan.duration_s,
                "completed": len(_completed(records)), "stopped": self.stopped,
                "looks": self.looks_taken, "planned_looks": self.planned_looks, "level": self.level,
                "alpha": self.rule.alpha, "targets": [d.to_dict() for d in self.decisions]}


def _projected_cap(records: Sequence[RequestRecord], elapsed_s: float, duration_s: float | None) -> int:
    """A duration-capped point's request cap, projected from the completion rate so far."""
    n = len(_completed(records))
    if not duration_s or elapsed_s <= 0:
        return n
    return max(n, int(n * duration_s / elapsed_s))


def _bisection_steps(cs: Sequence[int], known: dict[int, float], knee_gain: float) -> Iterator[int]:
    """Yield each concurrency of the sorted grid ``cs`` whose throughput the bisection needs next and ``known``
    lacks; the caller measures it into ``known`` before resuming. Stops early when a yielded one stays unknown."""
    def flat(i: int) -> bool:  # pair (cs[i], cs[i+1]) gains less than knee_gain per doubling
        return throughput_knee([(cs[i], known[cs[i]]), (cs[i + 1], known[cs[i + 1]])], knee_gain) is not None

    lo, hi = 0, len(cs) - 2
    while True:
        mid = (lo + hi) // 2 if lo < hi else lo
        for c in (cs[mid], cs[mid + 1]):
            if c not in known:
                yield c
        if any(c not in known for c in (cs[mid], cs[mid + 1])):
            return  # a point that could not be measured: the bisection ends there
        if lo >= hi:
            return
        if flat(mid):
            hi = mid
        else:
            lo = mid + 1


def knee_bisection(grid: Sequence[int], throughput_of: Callable[[int], float], knee_gain: float
                   ) -> tuple[int | None, list[int]]:
    """The throughput knee over a concurrency ``grid`` by bisection, and the concurrencies measured, in order.

    The knee is the smallest ``c_i`` whose step to ``c_{i+1}`` gains less than ``knee_gain`` per doubling
    (``analysis.throughput_knee``, the registry's own definition). ``throughput_of(c)`` measures a point (each
    at most once). When the per-doubling gain falls as concurrency rises (a concave, saturating curve) the
    predicate "this pair is flat" is monotone over the grid, so bisection finds the first flat pair, and the
    registry's knee over the points measured is that same pair's lower end (a gap between measured points has
    the geometric mean of the gains it spans, never below the smallest)."""
    cs = sorted(set(grid))
    known: dict[int, float] = {}
    order: list[int] = []
    if len(cs) < 2:
        for c in cs:
            known[c] = throughput_of(c)
            order.append(c)
        return None, order
    for c in _bisection_steps(cs, known, knee_gain):
        known[c] = throughput_of(c)
        order.append(c)
    knee = throughput_knee(sorted(known.items()), knee_gain)
    return (int(knee) if knee is not None else None), order


class SweepOrder:
    """The order an adaptive sweep measures its points in (iterate it; :meth:`record` each measured point).

    First every point some prediction needs by itself, in :func:`adaptive_order`; then the points only a
    throughput knee reads (``plan.is_knee_only``), as the knee's bisection over the closed-loop grid asks for them
    (:func:`knee_bisection`), the points already measured counting. Knee-only points the bisection never asks for
    are not run (:attr:`skipped`)."""

    def __init__(self, plans: Sequence[PointPlan], knee_only: Iterable[str] = (), knee_gain: float = 0.10):
        ids = set(knee_only)
        self.first = [p for p in adaptive_order(plans) if p.id not in ids]
        self.knee = {p.concurrency: p for p in plans if p.id in ids and p.concurrency is not None}
        self.knee_gain = knee_gain
        self.throughput: dict[int, float] = {}
        self.skipped: list[PointPlan] = []

    def record(self, plan: PointPlan, point: PointRecord) -> None:
        """A measured closed-loop point's throughput (the steady-window figure where recorded, as the knee's)."""
        if plan.mode != PointMode.CLOSED or plan.concurrency is None or plan.id == "batch1":
            return
        x = client_number(point, "steady_output_throughput_tok_s") or client_number(point, "output_throughput_tok_s")
        if x:
            self.throughput[plan.concurrency] = x

    def __iter__(self) -> Iterator[PointPlan]:
        yield from self.first
        if not self.knee:
            return
        grid = sorted(set(self.knee) | set(self.throughput))
        for c in _bisection_steps(grid, self.throughput, self.knee_gain) if len(grid) >= 2 else iter(grid):
            plan = self.knee.pop(c, None)
            if plan is None:
                break
            yield plan
        self.skipped = sorted(self.knee.values(), key=lambda p: p.concurrency or 0)


def records_horizon(records: Sequence[RequestRecord], now_s: float) -> float:
    """The horizon for a replay: the oldest send time among requests not finished by ``now_s``, else ``now_s``."""
    pending = [r.sent_s for r in records if r.sent_s is not None and (r.end_s is None or r.end_s > now_s)]
    return min(pending) if pending else now_s


def replay_point(plan: PointPlan, records: Sequence[RequestRecord], rule: StoppingRule = StoppingRule(),
                 *, window_start_s: float | None = None) -> tuple[AdaptiveStop, list[RequestRecord]]:
    """Run a recorded point's measured requests through the stopping rule as if it ran live.

    Looks happen at the completions the live loop would look at. At a stop at time ``t`` the live loop keeps the
    requests sent by the horizon (the oldest send still in flight; all of them have finished) and discards the
    rest it had sent: the ones in flight are cancelled at ``t`` (their copies here end at ``t``, status
    ``discarded``), the ones already finished are marked ``discarded`` too; requests not yet sent by ``t`` never
    are. Returns the stop check (its decisions, looks, reason) and every record the adaptive point would have
    sent, discarded ones included (the GPU worked on them until ``t``)."""
    measured = [r for r in records if r.in_sample]
    ends = sorted(r.end_s for r in measured if r.end_s is not None)
    t0 = window_start_s if window_start_s is not None else min(
        (r.sent_s for r in measured if r.sent_s is not None), default=0.0)
    stop = AdaptiveStop(plan, rule, cap_requests=plan.num_requests if plan.num_requests is not None else None)
    for k, t in enumerate(ends, start=1):
        if not stop.wants_look(k, t - t0):
            continue
        finished = [r for r in measured if r.end_s is not None and r.end_s <= t]
        sent = [r for r in measured if r.sent_s is not None and r.sent_s <= t]
        horizon = records_horizon(sent, t)
        if stop(finished, (t0, horizon), t - t0):
            out = []
            for r in sent:
                in_flight = r.end_s is None or r.end_s > t
                if in_flight or (r.sent_s is not None and r.sent_s > horizon):
                    r = replace(r, status="discarded", end_s=t if in_flight else r.end_s,
                                chunk_times_s=[c for c in r.chunk_times_s if c <= t],
                                error="discarded at the adaptive stop (replayed)")
                out.append(r)
            return stop, out
    return stop, list(measured)


#: latency statistics that do not fall as a closed loop's concurrency rises (more clients: more queueing ahead of
#: each prefill, a bigger decode batch per step), so a band decided at one concurrency implies it at others
_LATENCY_PREFIXES = ("ttft_", "tpot_", "itl_", "e2e_")


def adaptive_order(plans: Sequence[PointPlan]) -> list[PointPlan]:
    """The order an adaptive sweep runs its points in: batch-1 first, then the closed loop from the highest
    concurrency down (a latency SLO met at a high concurrency is met below it: :func:`implied_by`), then the open
    loop as planned."""
    batch1 = [p for p in plans if p.id == "batch1"]
    closed = sorted((p for p in plans if p.mode == PointMode.CLOSED and p.id != "batch1"),
                    key=lambda p: -(p.concurrency or 0))
    rest = [p for p in plans if p not in batch1 and p not in closed]
    return batch1 + closed + rest


def implied_by(plan: PointPlan, earlier: Sequence[tuple[PointPlan, Sequence[TargetDecision]]]
               ) -> tuple[PointPlan, list[TargetDecision]]:
    """``plan`` without the targets that points measured before it already decide, and those targets' decisions
    (the earlier point's interval and state, ``why`` naming it).

    Closed loop only, latency statistics only (TTFT, TPOT, ITL, E2E percentiles and means), assuming they do not
    fall as concurrency rises: an upper-bound band (``<= 500 ms``) decided *inside* at a higher concurrency is
    inside here, and decided *outside* at a lower concurrency is outside here; a lower-bound band (``>= 100 ms``)
    the other way round."""
    if plan.mode != PointMode.CLOSED or plan.concurrency is None:
        return plan, []
    keep: list[DecisionTarget] = []
    dropped: list[TargetDecision] = []
    for t in plan.targets:
        implied = None
        if t.statistic.startswith(_LATENCY_PREFIXES) and (t.lo is None) != (t.hi is None):
            for q, decisions in earlier:
                if q.mode != PointMode.CLOSED or q.concurrency is None or q.concurrency == plan.concurrency:
                    continue
                d = next((d for d in decisions if d.target.prediction_id == t.prediction_id
                          and d.target.statistic == t.statistic and d.target.lo == t.lo and d.target.hi == t.hi),
                         None)
                if d is None or d.state not in DECIDED:
                    continue
                higher = q.concurrency > plan.concurrency
                upper = t.hi is not None
                if (d.state == INSIDE and higher == upper) or (d.state == OUTSIDE and higher != upper):
                    implied = replace(d, target=t, why=(
                        f"{t.prediction_id} {t.statistic}: {d.state} at concurrency {q.concurrency}, so {d.state} "
                        "here (latency does not fall as concurrency rises)"))
                    break
        if implied is None:
            keep.append(t)
        else:
            dropped.append(implied)
    return replace(plan, targets=tuple(keep)), dropped
