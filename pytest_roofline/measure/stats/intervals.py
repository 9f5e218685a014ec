"""Intervals: every measured number with its uncertainty (issue 13).

Order-statistic intervals for percentiles, batch-means / bootstrap / repeats intervals for means, batch-means
intervals for rates, the one Student-t half-width (:func:`t_half_width`), and how many more requests would
decide a straddled bound (:func:`requests_to_decide`). The :class:`Interval` type itself is the contract the
scorer reads too, so it lives in :mod:`pytest_roofline.quantities.measurement`; it is re-exported here.

This module never imports pytest.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from statistics import NormalDist
from typing import get_args

import numpy as np

from pytest_roofline.quantities.measurement import Interval, IntervalMethod

__all__ = ["Interval", "INTERVAL_METHODS", "percentile_interval", "mean_interval", "rate_interval", "z_quantile",
           "completion_rate_interval", "fixed_span_rate_interval", "MIN_RATE_BATCHES", "requests_to_decide",
           "order_statistic_ranks",
           "min_samples_for_bound", "t_quantile", "t_half_width",
           "batch_means", "BATCHES", "MIN_BATCH"]

#: How an :class:`Interval` was computed (``Interval.method``).
INTERVAL_METHODS: tuple[IntervalMethod, ...] = get_args(IntervalMethod)


def _as_array(samples: Iterable[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(list(samples) if not isinstance(samples, np.ndarray) else samples, dtype=np.float64)
    return arr[np.isfinite(arr)]


def _binom_log_cdf(n: int, q: float) -> np.ndarray:
    """``log P(B <= k)`` for ``k = 0..n``, ``B ~ Binomial(n, q)``, 0 < q < 1, by the pmf recurrence
    ``pmf(k+1) = pmf(k) · (n-k)/(k+1) · q/(1-q)`` in log space (exact up to rounding for any n)."""
    k = np.arange(n, dtype=np.float64)
    log_pmf = np.empty(n + 1)
    log_pmf[0] = n * math.log1p(-q)
    log_pmf[1:] = log_pmf[0] + np.cumsum(np.log((n - k) / (k + 1.0)) + math.log(q) - math.log1p(-q))
    return np.logaddexp.accumulate(log_pmf)


def order_statistic_ranks(n: int, q: float, level: float = 0.95) -> tuple[int | None, int | None]:
    """1-based ranks ``(l, u)`` of the order statistics ``x_(l) <= ξ_q <= x_(u)`` that bound the ``q``-quantile
    ``ξ_q`` of a continuous distribution with probability ≥ ``level`` from ``n`` iid samples; ``None`` for a side
    ``n`` is too small to bound.

    Distribution-free: the number ``B`` of samples below ``ξ_q`` is Binomial(n, q), and ``x_(l) <= ξ_q`` ⇔
    ``B >= l``, ``x_(u) >= ξ_q`` ⇔ ``B <= u - 1``. Each side gets at most (1 - level)/2 of the miss probability:
    ``l`` is the largest rank with ``P(B <= l-1) <= α/2`` and ``u`` the smallest with ``P(B >= u) <= α/2``
    (Hahn & Meeker, *Statistical Intervals*, Wiley 1991, §5.2; Conover, *Practical Nonparametric Statistics*,
    3rd ed. 1999, §3.2).
    """
    if n <= 0 or not 0.0 < q < 1.0:
        return None, None
    half = (1.0 - level) / 2.0
    log_half = math.log(half)
    log_cdf = _binom_log_cdf(n, q)  # log_cdf[k] = log P(B <= k)
    # lower: largest l in 1..n with P(B <= l-1) <= α/2, i.e. log_cdf[l-1] <= log α/2
    ok_lo = np.nonzero(log_cdf[:n] <= log_half + 1e-12)[0]
    lo_rank = int(ok_lo[-1]) + 1 if ok_lo.size else None
    # upper: smallest u in 1..n with P(B >= u) = 1 - P(B <= u-1) <= α/2
    tail = -np.expm1(log_cdf[:n])  # tail[u-1] = P(B >= u)
    ok_hi = np.nonzero(tail <= half + 1e-12)[0]
    hi_rank = int(ok_hi[0]) + 1 if ok_hi.size else None
    return lo_rank, hi_rank


def min_samples_for_bound(q: float, level: float = 0.95, side: str = "upper") -> int:
    """The fewest samples whose order statistics bound the ``q``-quantile on ``side`` at ``level``: the upper side
    needs ``q**n <= (1-level)/2`` (otherwise all n samples lie below ξ_q too often), the lower side
    ``(1-q)**n <= (1-level)/2``. A p99 at 95 % needs ln(0.025)/ln(0.99) → 368 samples for an upper bound."""
    half = (1.0 - level) / 2.0
    p = q if side == "upper" else 1.0 - q
    n = math.ceil(math.log(half) / math.log(p))
    # guard the rounding at the exact boundary
    while p ** n > half:
        n += 1
    while n > 1 and p ** (n - 1) <= half:
        n -= 1
    return n


def percentile_interval(samples: Iterable[float] | np.ndarray, q: float, level: float = 0.95) -> Interval:
    """The ``q``-quantile (``q`` in (0, 1), or a percentile 1..99) of ``samples`` with its distribution-free
    confidence interval from the order statistics (:func:`order_statistic_ranks`). The estimate is numpy's
    default linear-interpolation percentile, the figure :func:`distribution` reports."""
    if q >= 1.0:
        q = q / 100.0
    arr = np.sort(_as_array(samples))
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, -math.inf, math.inf, level, "order-statistic", 0, "no samples", q)
    est = float(np.percentile(arr, q * 100.0))
    l_rank, u_rank = order_statistic_ranks(n, q, level)
    lo = float(arr[l_rank - 1]) if l_rank is not None else -math.inf
    hi = float(arr[u_rank - 1]) if u_rank is not None else math.inf
    notes = []
    if u_rank is None:
        notes.append(f"p{q * 100:g} from {n} samples: no upper bound at {level:.0%} "
                     f"(needs ≥ {min_samples_for_bound(q, level, 'upper')})")
    if l_rank is None:
        notes.append(f"p{q * 100:g} from {n} samples: no lower bound at {level:.0%} "
                     f"(needs ≥ {min_samples_for_bound(q, level, 'lower')})")
    return Interval(est, lo, hi, level, "order-statistic", n, "; ".join(notes), q)


def _t_pdf(x: float, dof: float) -> float:
    c = math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2) - 0.5 * math.log(dof * math.pi)
    return math.exp(c - (dof + 1) / 2 * math.log1p(x * x / dof))


def _t_cdf_upper_half(x: float, dof: float) -> float:
    """P(0 <= T <= x) for x >= 0 by composite Simpson on the Student-t density (smooth, so 400 panels give
    ~1e-10 accuracy for the x the quantiles below need)."""
    m = 400
    h = x / m
    s = _t_pdf(0.0, dof) + _t_pdf(x, dof)
    for i in range(1, m):
        s += (4 if i % 2 else 2) * _t_pdf(i * h, dof)
    return s * h / 3.0


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, dof: float) -> float:
    """The ``p``-quantile (p > 0.5) of Student's t with ``dof`` degrees of freedom, by bisection on its CDF
    (numpy has no t distribution and scipy is not a dependency). ``t_quantile(0.975, 9)`` = 2.262. About 18 ms a
    call, and a run asks for the same few (level, dof) pairs over and over: the answers are kept."""
    if dof <= 0:
        return math.inf
    target = p - 0.5
    lo, hi = 0.0, 1.0
    while _t_cdf_upper_half(hi, dof) < target:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    for _ in range(60):
        mid = (lo + hi) / 2
        if _t_cdf_upper_half(mid, dof) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_half_width(values: np.ndarray, level: float, next_repeats: int | None = None) -> float:
    """The half-width of a Student-t interval about the mean of ``values`` (k of them, t with k − 1 degrees of
    freedom at ``level``; ``inf`` with fewer than 2). ``next_repeats=None``: the confidence interval of the mean,
    ``t · s / √k``. ``next_repeats=m``: the prediction interval for the mean of m fresh values,
    ``t · s · √(1/k + 1/m)`` (Hahn & Meeker, *Statistical Intervals*, §4.6). The one home of the t-interval:
    :func:`mean_interval`, :func:`rate_interval` and :func:`~pytest_roofline.measure.stats.repeats.next_run_interval`
    all take their half-width from here."""
    k = int(values.size)
    if k < 2:
        return math.inf
    t = t_quantile(0.5 + level / 2, k - 1)
    s = float(values.std(ddof=1))
    if next_repeats is None:
        return t * (s / math.sqrt(k))
    return t * s * math.sqrt(1.0 / k + 1.0 / next_repeats)


def _t_interval(values: np.ndarray, level: float, method: IntervalMethod, n: int, note: str = "",
                estimate: float | None = None) -> Interval:
    """A Student-t interval over ``values`` (batch means or repeats), about ``estimate`` where given (the mean of
    every sample, of which the batches may leave a few out), else about their mean."""
    k = int(values.size)
    est = float(values.mean()) if estimate is None else estimate
    if k < 2:
        return Interval(est, -math.inf, math.inf, level, method, n, note or "fewer than 2 batches")
    half = t_half_width(values, level)
    return Interval(est, est - half, est + half, level, method, n, note)


#: Batches of the batch-means method: at most this many (Schmeiser 1982, "Batch size effects in the analysis
#: of simulation output", Operations Research 30(3): 10–30 batches lose little efficiency and keep the batch
#: means close to independent and normal).
BATCHES = 20
#: The fewest samples per batch.
MIN_BATCH = 5


def batch_means(values: np.ndarray, batches: int = BATCHES, min_batch: int = MIN_BATCH) -> np.ndarray:
    """Means of ``k`` contiguous, equal batches of ``values`` (in their time order); ``k = min(batches,
    n // min_batch)``, at least 1; leftover samples at the end are left out of the batches (they give the
    interval's width only: :func:`mean_interval` centres it on the mean of every sample)."""
    n = int(values.size)
    k = max(1, min(batches, n // min_batch))
    size = n // k
    return values[: k * size].reshape(k, size).mean(axis=1)


def mean_interval(samples: Iterable[float] | np.ndarray, level: float = 0.95, method: IntervalMethod = "batch-means",
                  *, seed: int = 0, resamples: int = 2000) -> Interval:
    """The mean of ``samples`` with its confidence interval.

    ``"batch-means"`` (the default): the samples, in time order, are cut into up to :data:`BATCHES` contiguous
    batches and a Student-t interval is taken over the batch means, so serial correlation between neighbouring
    requests (which share the server's batch) widens the interval instead of being ignored (Law & Kelton,
    *Simulation Modeling and Analysis*, §9.5.3). ``"bootstrap"``: the percentile bootstrap over iid resamples
    (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13), seeded. ``"repeats"``: each sample is
    one independent repeat's estimate; a Student-t interval over them.
    """
    arr = _as_array(samples)
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, -math.inf, math.inf, level, method, 0, "no samples")
    if method == "batch-means":
        # the estimate is the mean of every sample, the figure vllm bench serve prints (its mean_*_ms); the batches
        # (which leave the last n mod k out) give only the half-width
        bm = batch_means(arr)
        return _t_interval(bm, level, method, n, f"{bm.size} batches of {n // bm.size}", estimate=float(arr.mean()))
    if method == "repeats":
        return _t_interval(arr, level, method, n, f"{n} repeats")
    if method == "bootstrap":
        est = float(arr.mean())
        if n < 2:
            return Interval(est, -math.inf, math.inf, level, method, n, "fewer than 2 samples")
        rng = np.random.default_rng(seed)
        means = rng.choice(arr, size=(resamples, n), replace=True).mean(axis=1) if n * resamples <= 4_000_000 \
            else np.array([rng.choice(arr, size=n).mean() for _ in range(resamples)])
        a = (1.0 - level) / 2
        lo, hi = np.quantile(means, [a, 1 - a])
        return Interval(est, float(lo), float(hi), level, method, n, f"{resamples} resamples")
    raise ValueError(f"unknown interval method {method!r}; one of {INTERVAL_METHODS}")


def rate_interval(event_times_s: Iterable[float] | np.ndarray, window_s: tuple[float, float], level: float = 0.95,
                  *, weights: Iterable[float] | np.ndarray | None = None, batches: int = BATCHES) -> Interval:
    """Events (or ``weights`` per event, e.g. tokens per chunk) per second over ``window_s = (start, end)``, with
    a batch-means interval over ``batches`` equal sub-windows: the estimate is the total in the window over its
    length, the interval a Student-t interval over the sub-windows' rates. ``n`` is the number of events."""
    t = np.asarray(list(event_times_s) if not isinstance(event_times_s, np.ndarray) else event_times_s,
                   dtype=np.float64)
    w = np.ones_like(t) if weights is None else np.asarray(
        list(weights) if not isinstance(weights, np.ndarray) else weights, dtype=np.float64)
    start, end = window_s
    span = end - start
    inside = (t >= start) & (t <= end)
    t, w = t[inside], w[inside]
    n = int(t.size)
    if span <= 0:
        return Interval(math.nan, -math.inf, math.inf, level, "batch-means", n, "empty window")
    est = float(w.sum()) / span
    k = max(1, min(batches, n // MIN_BATCH))
    if k < 2:
        return Interval(est, -math.inf, math.inf, level, "batch-means", n, "too few events for sub-windows")
    idx = np.minimum(((t - start) / span * k).astype(np.int64), k - 1)
    rates = np.bincount(idx, weights=w, minlength=k) / (span / k)
    iv = _t_interval(rates, level, "batch-means", n, f"{k} sub-windows of {span / k:.3g} s")
    return replace(iv, estimate=est)


#: The fewest batches of completions a throughput's batch-means interval is taken over (Student-t with 2 degrees
#: of freedom); a point with fewer gets the count interval (:func:`completion_rate_interval`).
MIN_RATE_BATCHES = 3


def completion_rate_interval(end_times_s: Iterable[float] | np.ndarray, window_s: tuple[float, float],
                             level: float = 0.95, *, concurrency: int | None = None,
                             weights: Iterable[float] | np.ndarray | None = None) -> Interval:
    """A throughput as ``vllm bench serve`` counts it — ``weights`` (tokens; 1 per request without them) of the
    requests completed inside ``window_s = (start, end)`` over its length — with its interval from the
    completion events, never below 0.

    Closed loop (``concurrency`` = C): the completions, in time order, are cut into up to :data:`BATCHES`
    contiguous batches of whole rounds of the loop (multiples of C completions: at C = 1 each request is a batch,
    an independent cycle of the loop); batch ``j`` spans the time from the previous batch's last completion (the
    window's start for the first) to its own last (the window's end for the last, which also takes the leftover
    completions), so the spans add up to the window and the batches' weights to the total. With equal lengths a
    closed loop completes its C requests in lockstep bursts, and a batch of whole rounds holds whole bursts
    wherever its edges fall, where equal time sub-windows hold one burst or two (3 sub-windows of a 16-request
    point at C = 4 reached 0). The throughput is the ratio ``R = Σw_j / Σd_j``; its half-width is the delta
    method's, ``t(k−1) · s_e / (d̄ · √k)`` with ``e_j = w_j − R·d_j`` (the ratio estimator of batch means: Law &
    Kelton, *Simulation Modeling and Analysis*, §9.7). Weights that are a fixed multiple of 1 per request scale
    ``e`` and ``R`` alike, so output, total and request throughput get the same relative interval. It is the
    within-run interval: how far this run's throughput is from the one its own cycles would average to, not how
    far the next run lands (a machine whose speed moves from run to run is drift's and ``sweep.repeats``' to
    measure: benchmarks/RESULTS-intervals.md).

    The count interval ``R · (1 ± z · √Σw² / Σw)`` — for N equal requests ``1 ± z/√N``, the Poisson count's
    normal interval — is the interval of an open loop (``concurrency`` None: its arrivals are Poisson) and of a
    closed loop with fewer than :data:`MIN_RATE_BATCHES` rounds (too few cycles to estimate their spread).
    It is not a floor under a closed loop's batches: a closed loop's completions are paced by its service times,
    not Poisson, and the count interval at C = 1 with the batch-1 point's 4 requests is ±98 % where the requests'
    own cycles vary by a few percent. ``n`` is the number of completions; every interval is clipped at 0."""
    t = np.asarray(list(end_times_s) if not isinstance(end_times_s, np.ndarray) else end_times_s, dtype=np.float64)
    w = np.ones_like(t) if weights is None else np.asarray(
        list(weights) if not isinstance(weights, np.ndarray) else weights, dtype=np.float64)
    start, end = window_s
    span = end - start
    inside = (t >= start) & (t <= end)
    order = np.argsort(t[inside], kind="stable")
    t, w = t[inside][order], w[inside][order]
    n = int(t.size)
    if span <= 0:
        return Interval(math.nan, -math.inf, math.inf, level, "count", n, "empty window")
    est = float(w.sum()) / span
    if n == 0:
        return Interval(est, 0.0, math.inf, level, "count", 0, "no completed requests")
    if not w.sum() > 0:  # completions that carried no tokens: 0, with no bound above (not NaN)
        return Interval(est, 0.0, math.inf, level, "count", n, f"{n} completions with no tokens")
    rel = z_quantile(level) * math.sqrt(float((w * w).sum())) / float(w.sum())
    count_half = est * rel
    why = "open loop"
    if concurrency:
        rounds = n // concurrency
        per_batch = max(1, math.ceil(rounds / BATCHES))  # whole rounds per batch, so at most BATCHES batches
        k = rounds // per_batch  # the last batch also takes the leftover (fewer than per_batch rounds, and < C)
        why = f"{n} completions: fewer than {MIN_RATE_BATCHES} rounds of concurrency {concurrency}"
        if k >= MIN_RATE_BATCHES:
            size = per_batch * concurrency
            last = np.arange(1, k) * size - 1  # index of each batch's last completion but the last batch's
            edges = np.concatenate(([start], t[last], [end]))
            d = np.diff(edges)
            cum = np.concatenate(([0.0], np.cumsum(w)))
            wb = np.diff(cum[np.concatenate(([0], last + 1, [n]))])
            e = wb - est * d
            half = t_quantile(0.5 + level / 2, k - 1) * float(e.std(ddof=1)) / (float(d.mean()) * math.sqrt(k))
            batches = f"{k} batches of {size}+ completions (whole rounds of concurrency {concurrency})"
            return Interval(est, max(0.0, est - half), est + half, level, "batch-means", n, batches)
    return Interval(est, max(0.0, est - count_half), est + count_half, level, "count", n,
                    f"count interval ±{rel:.0%} from {n} completions ({why})")


#: the share of a fixed-span run's requests, the last sent, whose latencies are resampled (at least
#: :data:`FIXED_SPAN_TAIL_MIN`), and the bootstrap's size and seed (:func:`fixed_span_rate_interval`)
FIXED_SPAN_TAIL_SHARE = 0.25
FIXED_SPAN_TAIL_MIN = 5
FIXED_SPAN_RESAMPLES = 2000
FIXED_SPAN_SEED = 0


def fixed_span_rate_interval(sends_s: Sequence[float], ends_s: Sequence[float], window_s: tuple[float, float],
                             level: float = 0.95, *, weights: Sequence[float] | None = None) -> Interval:
    """The throughput interval of an open-loop point sent on a fixed span (``arrival_span: fixed``, every request
    sent): its N sends span exactly N ÷ rate, so the count of arrivals in the window is not a sample and the count
    interval (±1.96 ÷ √N) no longer describes it. What remains random is the window's end, the latest of the
    requests' send + latency, which the last requests sent decide. Their latencies are resampled: the last
    :data:`FIXED_SPAN_TAIL_SHARE` of the requests by send (at least :data:`FIXED_SPAN_TAIL_MIN`) each draw a
    latency from that same group's, and the window ends at the latest send + drawn latency (or an earlier
    request's end, kept as it was); the interval is the ``level`` percentile interval of the throughput over
    :data:`FIXED_SPAN_RESAMPLES` such ends (seeded: the same run gives the same interval), widened to hold the
    estimate. The group's own latencies, not the run's: an engine that fell behind (its queue growing until the
    last send) has its longest latencies there, and the run's shortest would read a throughput near the offered
    rate it could not serve (trial s23: 18.65 req/s of 30 offered read [18.64, 23.60] from the run's E2E
    quantiles; the group's give [18.22, 20.43]). ``sends_s`` / ``ends_s`` are the completed requests' pairwise,
    ``weights`` per request (1 each for the request rate)."""
    s = np.asarray(list(sends_s), dtype=np.float64)
    t = np.asarray(list(ends_s), dtype=np.float64)
    w = np.ones_like(t) if weights is None else np.asarray(list(weights), dtype=np.float64)
    start, end = window_s
    span = end - start
    n = int(t.size)
    if n == 0 or span <= 0 or s.size != n or not w.sum() > 0:
        return completion_rate_interval(t, window_s, level, weights=None if weights is None else w)
    est = float(w.sum()) / span
    order = np.argsort(s, kind="stable")
    s, t = s[order], t[order]
    k = min(n, max(FIXED_SPAN_TAIL_MIN, math.ceil(n * FIXED_SPAN_TAIL_SHARE)))
    lat = t[-k:] - s[-k:]
    before = float(t[:-k].max()) if n > k else -math.inf
    rng = np.random.default_rng(FIXED_SPAN_SEED)
    drawn = rng.choice(lat, size=(FIXED_SPAN_RESAMPLES, k), replace=True)
    ends = np.maximum((s[-k:] + drawn).max(axis=1), before)
    spans = span + (ends - float(t.max()))  # the window's end moved as the drawn latencies move it
    rates = float(w.sum()) / spans[spans > 0]
    if rates.size == 0:
        return completion_rate_interval(t, window_s, level, weights=None if weights is None else w)
    lo, hi = (float(np.quantile(rates, q)) for q in ((1 - level) / 2, (1 + level) / 2))
    return Interval(est, min(lo, est), max(hi, est), level, "fixed-span", n,
                    f"fixed span: the sends span it exactly; the window's end, the last {k} requests' send + "
                    f"latency, resampled from their own {float(lat.min()) * 1e3:.0f}-{float(lat.max()) * 1e3:.0f} ms "
                    f"E2E ({FIXED_SPAN_RESAMPLES} draws)")


def requests_to_decide(interval: Interval, bound: float, samples_n: int,
                       samples: Iterable[float] | np.ndarray | None = None) -> int | None:
    """How many more requests (beyond ``samples_n``, the requests behind ``interval``) would shrink ``interval``
    off ``bound``, assuming the estimate stays where it is; 0 when the bound is already outside, ``None`` when no
    number of requests would (the estimate sits on the bound, or nothing is known).

    Means, throughputs and repeats (``batch-means``/``bootstrap``/``repeats``): the half-width on the bound's
    side scales as 1/√n, so n must grow by ``(half-width / |estimate − bound|)²``. Percentiles
    (``order-statistic``): with ``samples`` given, the fraction ``p_b`` of samples at or below the bound stands
    for F(bound), and the bound leaves the interval once the order-statistic rank bounding that side passes it:
    by the normal approximation to the binomial, ``n ≥ (z·√(q(1−q)) / (p_b − q))²``; without samples the 1/√n
    rule on the finite side is used. Either way a side that is unbounded first needs
    :func:`min_samples_for_bound` samples. Samples per request (token gaps for ITL) are taken as
    ``interval.n / samples_n``.
    """
    if not interval.straddles(bound):
        return 0
    est = interval.estimate
    if samples_n <= 0 or interval.n <= 0 or not math.isfinite(est) or est == bound:
        return None
    per_request = interval.n / samples_n
    upper_side = bound > est
    half = (interval.hi - est) if upper_side else (est - interval.lo)
    dist = abs(bound - est)
    need_n: float | None = None
    if interval.method == "order-statistic":
        q = interval.quantile
        if q is not None and samples is not None:
            arr = _as_array(samples)
            if arr.size:
                p_b = float(np.mean(arr <= bound))
                if p_b != q:
                    z = z_quantile(interval.level)
                    need_n = (z * math.sqrt(q * (1 - q)) / abs(p_b - q)) ** 2 + 1.0
        if need_n is None and math.isfinite(half) and half > 0:
            need_n = interval.n * (half / dist) ** 2
        if q is not None:
            floor_n = min_samples_for_bound(q, interval.level, "upper" if upper_side else "lower")
            need_n = max(need_n or 0.0, float(floor_n))
    elif math.isfinite(half) and half > 0:
        need_n = interval.n * (half / dist) ** 2
    if need_n is None or not math.isfinite(need_n):
        return None
    more = math.ceil(need_n / per_request - samples_n)
    return max(1, more)


def z_quantile(level: float) -> float:
    """The standard normal (1+level)/2 quantile: the z of a two-sided interval at ``level`` (1.959964 at 0.95);
    the one home of it for every normal-approximation interval (count, Wilson, the offered-rate bound)."""
    return NormalDist().inv_cdf(0.5 + level / 2)
