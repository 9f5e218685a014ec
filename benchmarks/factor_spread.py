"""The what-if ``--spread factor`` of benchmarks/drift_false_alarms.py: the nights' spread split into a common
night factor and each value's own residual. Measured and not shipped.

A night's "mood" (a slow machine) moves every timing figure together, so the values' nights are not independent
and pooling their spreads (``--spread moderated``) counts one mood many times. Here each night's signed log value
of a prediction is

    d[night, p] = sign_p * (log x[night, p] - mean over the earlier nights of log x[., p])
                = f[night, group(p)] + r[night, p]

with ``sign_p`` +1 for a time (slower night: larger) and -1 for a throughput (slower night: smaller), the factor
``f`` the median of the group's ``d`` that night (robust to one value that really moved), and ``r`` the value's
own residual. Loadings per prediction are not identifiable from 3-5 nights (3 centred nights have rank 2), so the
loading is the a-priori sign. The group is the point (``groups="point"``: the values of one file and ``at:``,
measured over one stretch of the run's time) or the whole night (``groups="night"``). Two tests, each against
what the earlier nights know:

1. the residual: ``|r_tonight, p| > t(df) * s_p * sqrt(1 + 1/n)``, ``s_p^2`` the residual variance over the
   earlier nights on ``(n - 1)(m - 1)/m`` df (m values in the group), moderated toward the run's other values by
   Smyth's empirical Bayes (``residual="moderated"``, :mod:`moderated_spread`) or pooled over them
   (``residual="pooled"``);
2. the factor: ``|f_tonight - mean f_earlier| > t(n - 1) * sd(f_earlier) * sqrt(1 + 1/n)``: its own n - 1 df,
   so a change that moves everything together is still caught.

A value is outside the noise when (1) or (2) says so, each at ``level`` (0.975 by default: the OR of two tests
then keeps the nominal 5 %). A value <= 0 (no log), or a group with fewer than 3 usable values, gets None (the
caller keeps the shipped rule).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from moderated_spread import fit_variance_prior, moderated_variance

from pytest_roofline.measure.stats.intervals import t_quantile

__all__ = ["FactorSplit", "factor_outside", "residual_correlations"]

#: the fewest values a group's factor is a median of
MIN_GROUP = 3


@dataclass(frozen=True)
class FactorSplit:
    """One value's decomposition against its earlier nights: tonight's residual and its half-width, tonight's
    group factor and its half-width."""

    residual: float
    residual_half: float
    factor: float
    factor_half: float

    @property
    def outside(self) -> bool:
        return abs(self.residual) > self.residual_half or abs(self.factor) > self.factor_half


def factor_outside(history: Sequence[Mapping[str, float | None]], now: Mapping[str, float | None],
                   sign: Mapping[str, int], group: Mapping[str, str], *, residual: str = "moderated",
                   level: float = 0.975) -> dict[str, FactorSplit]:
    """The split of every usable value: ``history`` the earlier nights' values by key (oldest first), ``now``
    tonight's, ``sign[key]`` +1 or -1, ``group[key]`` its group. A usable value is positive tonight and on every
    earlier night, of which there are 3 or more; keys left out (no log, too few nights, too small a group) keep
    the shipped rule."""
    n = len(history)
    if n < 3:
        return {}
    usable = [k for k, x in now.items() if x is not None and x > 0
              and all((night.get(k) or 0.0) > 0 for night in history)]
    groups: dict[str, list[str]] = {}
    for k in usable:
        groups.setdefault(group[k], []).append(k)
    parts: dict[str, tuple[np.ndarray, float, np.ndarray, float, int, int]] = {}
    for keys in groups.values():
        if len(keys) < MIN_GROUP:
            continue
        logs = np.array([[math.log(night[k] or 0.0) for night in history] for k in keys])  # keys x nights
        mean = logs.mean(axis=1, keepdims=True)
        sg = np.array([[sign[k]] for k in keys], dtype=np.float64)
        d = sg * (logs - mean)
        d_now = sg[:, 0] * (np.log([now[k] or 0.0 for k in keys]) - mean[:, 0])
        f = np.median(d, axis=0)  # one per earlier night
        f_now = float(np.median(d_now))
        r = d - f
        r_now = d_now - f_now
        for i, k in enumerate(keys):
            parts[k] = (r[i], float(r_now[i]), f, f_now, n, len(keys))
    if not parts:
        return {}
    # the residual variances on (n - 1)(m - 1)/m df each
    var = {k: (float(np.sum(r * r)) / ((n - 1) * (m - 1) / m), (n - 1) * (m - 1) / m)
           for k, (r, _rn, _f, _fn, n, m) in parts.items()}
    prior = fit_variance_prior([v for v, _d in var.values()], [d for _v, d in var.values()])
    pooled_df = sum(d for _v, d in var.values())
    pooled = sum(v * d for v, d in var.values()) / pooled_df
    q = 0.5 + level / 2
    out: dict[str, FactorSplit] = {}
    for k, (_r, r_now, f, f_now, n, _m) in parts.items():
        if residual == "pooled":
            s2, df = pooled, pooled_df
        else:
            s2, df = moderated_variance(var[k][0], var[k][1], prior)
        r_half = t_quantile(q, min(df, 1e6)) * math.sqrt(s2) * math.sqrt(1 + 1 / n)
        f_half = t_quantile(q, n - 1) * statistics.stdev(f.tolist()) * math.sqrt(1 + 1 / n)
        out[k] = FactorSplit(residual=r_now, residual_half=r_half, factor=f_now - float(np.mean(f)),
                             factor_half=f_half)
    return out


def _summary(resid: np.ndarray) -> tuple[float, float, float]:
    """(mean r, mean |r|, participation ratio) of the columns' correlation matrix; a constant column (a group of
    one, whose residual is 0) is left out."""
    resid = resid[:, resid.std(axis=0) > 1e-12]
    if resid.shape[1] < 2:
        return math.nan, math.nan, math.nan
    c = np.corrcoef(resid.T)
    iu = np.triu_indices(c.shape[0], 1)
    ev = np.linalg.eigvalsh(c)
    return float(np.mean(c[iu])), float(np.mean(np.abs(c[iu]))), float(ev.sum() ** 2 / np.sum(ev * ev))


def _residualise(s: np.ndarray, groups: Sequence[str], how: str) -> np.ndarray:
    if how == "raw":
        return s
    if how == "night":
        return s - np.median(s, axis=1, keepdims=True)
    out = s.copy()
    for g in set(groups):
        cols = [i for i, x in enumerate(groups) if x == g]
        out[:, cols] -= np.median(s[:, cols], axis=1, keepdims=True)
    return out


def residual_correlations(matrix: np.ndarray, signs: Sequence[int], groups: Sequence[str], *, null_draws: int = 2000,
                          seed: int = 21) -> dict[str, tuple[float, float, float, float, float]]:
    """How correlated the values' nights are, raw and after each decomposition: ``matrix`` runs x values of log
    values (one configuration), ``signs`` and ``groups`` per value. {"raw" | "night" | "point": (mean r, mean |r|,
    participation ratio, the null's mean |r|, the null's participation ratio)}, the null being independent normal
    values of the same shape put through the same residualisation (``null_draws`` draws)."""
    s = (matrix - matrix.mean(axis=0)) * np.asarray(signs, dtype=np.float64)
    rng = np.random.default_rng(seed)
    out = {}
    for how in ("raw", "night", "point"):
        a, b, c = _summary(_residualise(s, groups, how))
        null = np.array([_summary(_residualise(rng.normal(size=s.shape), groups, how))[1:]
                         for _ in range(null_draws)])
        out[how] = (a, b, c, float(null[:, 0].mean()), float(null[:, 1].mean()))
    return out
