"""Statistics of a point's measurement: what each figure means, the ``client`` object, and how sure it is.

- :mod:`~pytest_roofline.measure.stats.glossary`: :data:`GLOSSARY` (every client metric defined once; the README
  and the HTML report print it verbatim), :data:`PERCENTILES` and :func:`distribution`;
- :mod:`~pytest_roofline.measure.stats.summary`: :func:`summarize` turns a
  :class:`~pytest_roofline.measure.loadgen.LoadResult` into a results-file point's ``client`` object
  (docs/results-schema.md); :func:`loadgen_checks` its ``loadgen`` object;
- :mod:`~pytest_roofline.measure.stats.intervals`: every figure's confidence interval (order statistics,
  batch means, bootstrap, repeats), the one Student-t half-width, :func:`requests_to_decide`; the
  :class:`Interval` type is the scorer's contract too and lives in :mod:`pytest_roofline.quantities.measurement`;
- :mod:`~pytest_roofline.measure.stats.steady`: the steady window (MSER-5, the closed loop's fill, the drain) and
  the figures over it;
- :mod:`~pytest_roofline.measure.stats.bursts`: tokens delivered several per read, detected and flagged;
- :mod:`~pytest_roofline.measure.stats.held`: a closed loop that did not hold its concurrency (a starved client),
  detected and flagged;
- :mod:`~pytest_roofline.measure.stats.frontend`: a point's TTFT split into vLLM's queue and prefill, the API
  server and HTTP (vLLM's own histograms), and the closed loop's send turnarounds;
- :mod:`~pytest_roofline.measure.stats.goodput`: vLLM's request goodput at a point under the file's SLOs, with
  a Wilson score interval;
- :mod:`~pytest_roofline.measure.stats.repeats`: one ``client`` object from ``sweep.repeats`` runs, and where a
  rerun should land.

Callers import from here (``from pytest_roofline.measure import stats``; ``stats.summarize``). Nothing here
imports pytest.
"""

from __future__ import annotations

from pytest_roofline.measure.stats.bursts import burst_flag, bursts
from pytest_roofline.measure.stats.frontend import FrontendLegs, closed_loop_turnarounds_ms, frontend_legs
from pytest_roofline.measure.stats.glossary import GLOSSARY, PERCENTILES, distribution
from pytest_roofline.measure.stats.goodput import goodput_of_records, request_goodput, slo_ms_of, wilson
from pytest_roofline.measure.stats.held import (
    HELD_FLAG_PREFIX,
    HELD_SHARE,
    LittlesReading,
    held_flag,
    held_in_flight,
    held_littles_law,
    is_held_flag,
    is_rate_flag,
    littles_reading,
    rate_flag,
    rate_shortfall,
    unheld_points,
)
from pytest_roofline.measure.stats.intervals import (
    BATCHES,
    INTERVAL_METHODS,
    MIN_BATCH,
    Interval,
    batch_means,
    completion_rate_interval,
    mean_interval,
    min_samples_for_bound,
    order_statistic_ranks,
    percentile_interval,
    rate_interval,
    requests_to_decide,
    t_half_width,
    t_quantile,
)
from pytest_roofline.measure.stats.repeats import combine_repeats, next_run_interval
from pytest_roofline.measure.stats.steady import (
    INTERVAL_FIGURES,
    MSER_BATCH,
    STEADY_MODES,
    SteadyWindow,
    mser_truncation,
    steady_statistics,
    steady_summary,
    steady_window,
)
from pytest_roofline.measure.stats.summary import (
    failure_reasons,
    loadgen_checks,
    measured_duration_s,
    measurement_window_s,
    summarize,
    summarize_records,
)

__all__ = ["goodput_of_records", "request_goodput", "slo_ms_of", "wilson",
           "GLOSSARY", "PERCENTILES", "distribution", "summarize", "summarize_records", "measurement_window_s",
           "measured_duration_s", "failure_reasons", "loadgen_checks", "Interval", "INTERVAL_METHODS",
           "percentile_interval", "mean_interval", "rate_interval", "completion_rate_interval", "requests_to_decide",
           "order_statistic_ranks",
           "min_samples_for_bound", "t_quantile", "t_half_width", "batch_means", "BATCHES", "MIN_BATCH",
           "mser_truncation", "MSER_BATCH", "SteadyWindow", "steady_window", "steady_statistics", "steady_summary",
           "STEADY_MODES", "INTERVAL_FIGURES", "combine_repeats", "next_run_interval", "bursts", "burst_flag",
           "held_flag", "held_littles_law", "littles_reading", "LittlesReading", "rate_flag", "is_rate_flag",
           "rate_shortfall", "HELD_SHARE", "HELD_FLAG_PREFIX", "is_held_flag", "held_in_flight", "unheld_points",
           "FrontendLegs", "frontend_legs", "closed_loop_turnarounds_ms"]
