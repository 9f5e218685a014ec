"""benchmarks/moderated_spread.py, the what-if ``--spread moderated`` of benchmarks/drift_false_alarms.py (measured,
not shipped): its special functions and Smyth's (2004) moment estimate, against values worked out by hand."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
from support.paths import REPO

_spec = importlib.util.spec_from_file_location("moderated_spread", REPO / "benchmarks" / "moderated_spread.py")
assert _spec is not None and _spec.loader is not None
ms = importlib.util.module_from_spec(_spec)
sys.modules["moderated_spread"] = ms
_spec.loader.exec_module(ms)

EULER_GAMMA = 0.5772156649015329


def test_digamma_and_trigamma_at_their_closed_forms() -> None:
    # ψ(1) = −γ, ψ(1/2) = −γ − 2 ln 2, ψ(n + 1) = ψ(n) + 1/n; ψ'(1) = π²/6, ψ'(1/2) = π²/2
    assert ms.digamma(1.0) == pytest.approx(-EULER_GAMMA, abs=1e-11)
    assert ms.digamma(0.5) == pytest.approx(-EULER_GAMMA - 2 * math.log(2), abs=1e-11)
    assert ms.digamma(4.0) == pytest.approx(-EULER_GAMMA + 1 + 1 / 2 + 1 / 3, abs=1e-11)
    assert ms.trigamma(1.0) == pytest.approx(math.pi ** 2 / 6, abs=1e-11)
    assert ms.trigamma(0.5) == pytest.approx(math.pi ** 2 / 2, abs=1e-11)
    for x in (0.05, 0.37, 1.0, 7.3, 250.0):
        assert ms.trigamma_inverse(ms.trigamma(x)) == pytest.approx(x, rel=1e-9)


def test_equal_variances_pool_completely_with_the_log_offset_of_two_degrees_of_freedom() -> None:
    # four values, each s² = 1 on 2 degrees of freedom: their logs do not vary at all, less than sampling alone
    # would make them, so d0 is infinite and s0² = exp(mean of log s² − ψ(1) + log 1) = e^γ = 1.781 (a χ²₂/2
    # variable's log has mean ψ(1) = −γ, so equal sample variances of 1 point at a true variance of e^γ)
    prior = ms.fit_variance_prior([1.0] * 4, [2] * 4)
    assert prior is not None and math.isinf(prior.dof)
    assert prior.variance == pytest.approx(math.exp(EULER_GAMMA), rel=1e-9)
    assert ms.moderated_variance(0.2, 2, prior) == (prior.variance, math.inf)


def test_spreads_that_differ_give_a_finite_prior_and_a_weighted_posterior() -> None:
    # variances 0.01 and 1 on 2 df each: the log-offsets differ by ln 100 = 4.605, sample variance 4.605² / 2 = 10.60,
    # less ψ'(1) = 1.645 leaves 8.959 = ψ'(d0/2); the posterior is (d0·s0² + 2·s²) / (d0 + 2) on d0 + 2 df
    prior = ms.fit_variance_prior([0.01, 1.0], [2, 2])
    assert prior is not None
    assert ms.trigamma(prior.dof / 2) == pytest.approx(math.log(100) ** 2 / 2 - math.pi ** 2 / 6, rel=1e-9)
    mean_e = (math.log(0.01) + math.log(1.0)) / 2 + EULER_GAMMA
    assert prior.variance == pytest.approx(math.exp(mean_e + ms.digamma(prior.dof / 2) - math.log(prior.dof / 2)))
    var, dof = ms.moderated_variance(1.0, 2, prior)
    assert dof == pytest.approx(prior.dof + 2)
    assert var == pytest.approx((prior.dof * prior.variance + 2 * 1.0) / (prior.dof + 2))
    assert ms.fit_variance_prior([1.0], [2]) is None  # one value: nothing to pool
    assert ms.fit_variance_prior([0.0, 1.0], [2, 2]) is None  # a zero variance has no log: one value left
