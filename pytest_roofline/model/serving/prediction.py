"""What the simulator reports: one sweep point's predicted metrics (``PointPrediction``), one engine step of a
trace (``StepRecord``) and the percentile arithmetic behind them.

Metrics follow ``vllm bench serve``: TTFT from arrival to the first token; TPOT = (E2E - TTFT)/(n - 1); ITL =
every gap between a request's consecutive tokens; duration from the first arrival to the last completion;
percentiles by linear interpolation (numpy's default).  Network and HTTP time are not modelled.  Request goodput
follows ``vllm bench serve --goodput``: the completed requests meeting every SLO given ÷ the duration
(:func:`meets_slos`, the rule's one home: ``measure.stats.goodput`` counts measured requests by it too).
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PointPrediction", "StepRecord", "SimulatedRequest", "meets_slos", "mean", "percentile",
           "weighted_percentile", "weighted_percentiles"]


def meets_slos(ttft_s: float | None, e2e_s: float | None, output_tokens: int, slo_ms: Mapping[str, float]) -> bool:
    """vLLM's ``--goodput`` rule for one completed request (vllm/benchmarks/serve.py ``calculate_metrics``): every
    SLO given (``ttft_ms``, ``tpot_ms``, ``e2el_ms``) is at least the request's value, TPOT = (E2E − TTFT) ÷ (output
    tokens − 1) and 0 for a request of one output token; a request without a TTFT or E2E is not good."""
    if ttft_s is None or e2e_s is None:
        return False
    tpot_s = (e2e_s - ttft_s) / (output_tokens - 1) if output_tokens > 1 else 0.0
    values = {"ttft_ms": ttft_s, "tpot_ms": tpot_s, "e2el_ms": e2e_s}
    # in seconds, the SLO ÷ 1000, as vLLM compares (a value on the SLO meets it there too)
    return all(float(limit) / 1000 >= values[key] for key, limit in slo_ms.items() if key in values)


@dataclass(frozen=True)
class SimulatedRequest:
    """One completed simulated request as the client sees it: TTFT and end-to-end latency from its send (seconds,
    the API server's time included) and its output tokens: what request goodput counts."""

    ttft_s: float
    e2e_s: float
    output_tokens: int


@dataclass(frozen=True)
class StepRecord:
    """One simulated engine step (``simulate(..., trace=[...])`` appends these; tracing runs step by step)."""

    start_s: float
    time_s: float
    decode_seqs: int
    prefill_tokens: int
    prefill_seqs: int
    running: int
    waiting: int
    used_blocks: int
    preemptions: int



@dataclass(frozen=True)
class PointPrediction:
    concurrency: int | None
    rate_req_per_s: float | None
    num_requests: int
    duration_s: float
    output_throughput_tok_per_s: float
    request_throughput_req_per_s: float
    per_request_output_tok_per_s: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    ttft_mean_ms: float
    tpot_p50_ms: float
    tpot_p99_ms: float
    tpot_mean_ms: float
    itl_p50_ms: float
    itl_p99_ms: float
    e2e_mean_ms: float
    e2e_p50_ms: float
    e2e_p99_ms: float
    mean_running_batch: float
    max_running_batch: int
    max_kv_usage: float
    mean_kv_usage: float
    preemptions: int
    mean_queue_ms: float
    steps: int
    time_shares: Mapping[str, float] = field(default_factory=dict)
    #: prompt tokens served by the prefix cache from the workload's shared prefix / prompt tokens (first
    #: computations; ``prefix_hit_rate``'s synthetic hits are not counted)
    prefix_cache_hit_rate: float = 0.0
    #: an open-loop point without an in-flight cap: requests that reached the engine ÷ requests that finished over
    #: the second half of the arrivals (``simulator.stability``), a ratio near 1 at every stable load (not how busy
    #: the engine is) and above 1 where the queue grows: the point's stability estimate; NaN elsewhere
    arrival_to_completion_ratio: float = math.nan
    #: the same window's finished requests ÷ its length (req/s): what the engine served; NaN elsewhere
    served_rate_req_per_s: float = math.nan
    #: the share of the run vLLM's one API-server process was busy taking requests (``frontend_in_s`` each) and
    #: streaming tokens (``api_out_per_token_s`` each): near 1, the point is held by it, not by the GPU
    api_server_busy_share: float = math.nan
    #: why the point has no steady state (arrival_to_completion_ratio >= ``simulator.unstable_from``), None when it
    #: has one
    unstable: str | None = None
    #: the model's interval around each of its values (``model.bands``: measured / model ratios of the regime on
    #: public runs), ``metric -> (low, high)``; a metric without band data is absent
    bands: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: for a metric whose regime has measured runs but too few sources for a band: what they showed
    #: (``model.bands.band_note``), ``metric -> text``
    band_notes: Mapping[str, str] = field(default_factory=dict)
    #: for a metric of ``band_notes`` whose regime has measured runs but no band: the range of measured ÷ model
    #: those runs showed (``model.bands.observed_ranges``, the numbers the note quotes), ``metric -> (low, high)``
    observed_ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: every completed request's TTFT, E2E and output tokens, in request order (:class:`SimulatedRequest`): what
    #: :meth:`goodput_req_per_s` counts under SLOs a prediction names; internal, left out of :meth:`to_dict`
    requests: tuple[SimulatedRequest, ...] = field(default=(), repr=False, compare=False)

    def good_requests(self, slo_ms: Mapping[str, float]) -> int:
        """How many simulated requests meet every SLO of ``slo_ms`` (ms, vLLM's ``--goodput`` keys) by
        :func:`meets_slos`."""
        return sum(1 for r in self.requests if meets_slos(r.ttft_s, r.e2e_s, r.output_tokens, slo_ms))

    def goodput_req_per_s(self, slo_ms: Mapping[str, float]) -> float:
        """vLLM's ``request_goodput`` at this point: the requests meeting every SLO ÷ the duration (the request
        throughput's, first arrival to last completion); NaN without simulated requests or a duration."""
        if not self.requests or not self.duration_s > 0:
            return math.nan
        return self.good_requests(slo_ms) / self.duration_s

    def to_dict(self) -> dict[str, Any]:
        # every field but the per-request records (scalars, and the mappings copied below)
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "requests"}
        d["time_shares"] = dict(self.time_shares)
        d["bands"] = {k: list(v) for k, v in self.bands.items()}
        d["band_notes"] = dict(self.band_notes)
        d["observed_ranges"] = {k: list(v) for k, v in self.observed_ranges.items()}
        return d


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def percentile(sorted_vals: Sequence[float], q: float) -> float:
    n = len(sorted_vals)
    if n == 0:
        return math.nan
    pos = q / 100.0 * (n - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * frac


def weighted_percentile(pairs: list[tuple[float, int]], q: float) -> float:
    """numpy-style linear percentile of the multiset where value v appears count times."""
    return weighted_percentiles(pairs, (q,))[0]


def weighted_percentiles(pairs: list[tuple[float, int]], qs: Sequence[float]) -> list[float]:
    pairs = sorted(p for p in pairs if p[1] > 0)
    n = sum(c for _, c in pairs)
    if n == 0:
        return [math.nan for _ in qs]
    cum = []
    s = 0
    for _, c in pairs:
        s += c
        cum.append(s)
    return [_wp(pairs, cum, n, q) for q in qs]


def _wp(pairs: list[tuple[float, int]], cum: list[int], n: int, q: float) -> float:
    pos = q / 100.0 * (n - 1)
    lo = int(math.floor(pos))
    frac = pos - lo
    i_lo = bisect_left(cum, lo + 1)
    i_hi = bisect_left(cum, min(lo + 1, n - 1) + 1)
    v_lo, v_hi = pairs[i_lo][0], pairs[i_hi][0]
    return v_lo + (v_hi - v_lo) * frac
