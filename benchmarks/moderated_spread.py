"""The what-if ``--spread moderated`` of benchmarks/drift_false_alarms.py: each prediction's night-to-night spread
steadied by the spreads of the values measured with it. Measured and not shipped.

Drift's nights' spread (pytest_roofline/history/_drift.py) estimates each prediction's night-to-night variation
from its own 3-5 earlier nights: 2-4 degrees of freedom, so the Student-t prediction interval is wide
(t(0.975, 2) = 4.30) and its width itself a coin toss. A run measures many values on the same machine and engine.
The empirical Bayes moderation of Smyth (2004, "Linear models and empirical Bayes methods for assessing
differential expression in microarray experiments", Statistical Applications in Genetics and Molecular Biology
3(1), Article 3, doi:10.2202/1544-6115.1027; the ``squeezeVar`` of the R package limma) treats each value's true
variance as drawn from a scaled inverse-chi-squared prior with ``d0`` degrees of freedom around ``s0^2``. It
estimates ``d0`` and ``s0^2`` from all the values' sample variances by the method of moments on their logs, and
uses each value's posterior variance

    s~^2 = (d0 * s0^2 + d * s^2) / (d0 + d)

with a Student t on ``d0 + d`` degrees of freedom. Values whose spreads really differ give a small ``d0`` (little
pooling); values whose spreads agree up to sampling noise give a large one (the pooled spread). Nothing is tuned:
``d0`` and ``s0^2`` come from the values at hand.

Why it is not shipped (2026-12-06, the four held data files, three earlier nights):
- detection of ``max_num_seqs`` 4 -> 2 rises from 75.4 % to 86.8 % (2,916/3,360);
- false drift rises from 4.0 % to 8.6 % (332/3,840): 5.0 / 14.9 / 9.2 / 5.5 % on idle / idle2 / held / idle3.

The moderation assumes the values' nights are independent draws. On this machine they are not: a slow night is
slow at every point and in every figure (the docstring of drift_false_alarms.py gives the correlations). Pooling
across the values then counts one machine's mood as many independent observations.

The special functions are computed here because scipy is not a dependency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["digamma", "trigamma", "trigamma_inverse", "VariancePrior", "fit_variance_prior", "moderated_variance"]

_ASYMPTOTIC_FROM = 10.0


def digamma(x: float) -> float:
    """ψ(x) for x > 0: the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 10, then the asymptotic series (Abramowitz &
    Stegun 6.3.18), good to about 1e-12. ψ(1) = −0.5772156649 (−γ)."""
    if x <= 0:
        raise ValueError(f"digamma needs x > 0, got {x}")
    acc = 0.0
    while x < _ASYMPTOTIC_FROM:
        acc -= 1.0 / x
        x += 1.0
    inv2 = 1.0 / (x * x)
    return acc + math.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 / 240)))


def trigamma(x: float) -> float:
    """ψ'(x) for x > 0: the recurrence ψ'(x) = ψ'(x + 1) + 1/x² up to x ≥ 10, then the asymptotic series
    (Abramowitz & Stegun 6.4.12). ψ'(1) = π²/6."""
    if x <= 0:
        raise ValueError(f"trigamma needs x > 0, got {x}")
    acc = 0.0
    while x < _ASYMPTOTIC_FROM:
        acc += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return acc + inv + 0.5 * inv2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))


def trigamma_inverse(y: float) -> float:
    """The x > 0 with ψ'(x) = y (y > 0). ψ' falls from +∞ to 0 over (0, ∞), so bisection on log x brackets it;
    60 halvings of a bracket that starts at [1e-8, 1e8] leave a relative error under 1e-10."""
    if y <= 0:
        raise ValueError(f"trigamma_inverse needs y > 0, got {y}")
    lo, hi = math.log(1e-8), math.log(1e8)
    for _ in range(80):
        mid = (lo + hi) / 2
        if trigamma(math.exp(mid)) > y:
            lo = mid  # ψ' too large: x must grow
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


@dataclass(frozen=True)
class VariancePrior:
    """The prior the values' variances are drawn from: ``s0²`` (``variance``) with ``dof`` degrees of freedom
    (``d0``; ``math.inf`` when the sample variances vary no more than sampling alone makes them), estimated from
    ``values`` sample variances."""

    variance: float
    dof: float
    values: int


def fit_variance_prior(variances: Sequence[float], dofs: Sequence[float]) -> VariancePrior | None:
    """``s0²`` and ``d0`` from sample variances ``variances`` with ``dofs`` degrees of freedom each, by Smyth's
    (2004, §6.2) method of moments on ``log s²``: each ``log s²`` less its expectation's offset
    (ψ(d/2) − log(d/2)) has mean ``log s0²`` and variance ψ'(d/2) + ψ'(d0/2); so ψ'(d0/2) is the offsets' sample
    variance less the mean of ψ'(d/2), and ``d0`` infinite when that is not positive. None with fewer than 2
    positive variances (nothing to pool); a zero variance (two equal nights) has no log and is left out."""
    pairs = [(s2, d) for s2, d in zip(variances, dofs, strict=True) if s2 > 0 and math.isfinite(s2) and d > 0]
    if len(pairs) < 2:
        return None
    e = [math.log(s2) - digamma(d / 2) + math.log(d / 2) for s2, d in pairs]
    mean_e = math.fsum(e) / len(e)
    var_e = math.fsum((x - mean_e) ** 2 for x in e) / (len(e) - 1)
    excess = var_e - math.fsum(trigamma(d / 2) for _s2, d in pairs) / len(pairs)
    if excess <= 0:
        return VariancePrior(variance=math.exp(mean_e), dof=math.inf, values=len(pairs))
    d0 = 2 * trigamma_inverse(excess)
    return VariancePrior(variance=math.exp(mean_e + digamma(d0 / 2) - math.log(d0 / 2)), dof=d0, values=len(pairs))


def moderated_variance(variance: float, dof: float, prior: VariancePrior | None) -> tuple[float, float]:
    """(s̃², its degrees of freedom): the posterior ``(d0 · s0² + d · s²) / (d0 + d)`` on ``d0 + d``; the prior's
    ``s0²`` on ∞ when ``d0`` is infinite; the value's own (``variance``, ``dof``) without a prior."""
    if prior is None:
        return variance, dof
    if math.isinf(prior.dof):
        return prior.variance, math.inf
    return (prior.dof * prior.variance + dof * variance) / (prior.dof + dof), prior.dof + dof
