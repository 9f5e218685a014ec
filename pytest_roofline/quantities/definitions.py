"""How each measured quantity's figure is defined: the one written definition a measured verdict shows (its
``definition`` row) and ``docs/explanation/measured-figures.md`` lists ("The definition each verdict shows").

A verdict must be decided by the measurement, never by a definition: the figure scored is the one ``vllm bench
serve`` prints, or the definition says why not. :data:`DEFINITIONS` is keyed by quantity name and holds exactly
the registry's measured quantities (those with a ``measure``; ``tests/unit/test_definitions.py`` checks both
ways, and that the doc page holds :func:`definitions_markdown` verbatim). Each entry says how the figure is
computed (``what``) and either the ``vllm bench serve`` result key it equals (``vllm``) or why it is not one
(``why``); :func:`definition_text` writes the line a verdict shows, for the window it was scored on.

    .venv/bin/python -m pytest_roofline.quantities.definitions   # prints the doc page's block

The client metrics' own glossary (``measure/stats/glossary.py``) defines the results file's keys these read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFINITIONS", "Definition", "STEADY_TEXT", "definition_text", "definitions_markdown",
           "DOC_BEGIN", "DOC_END"]

PEER = "`vllm bench serve`"
#: what a ``window: steady`` verdict of a client figure adds to its definition (quantities/window.py)
STEADY_TEXT = ("read over each point's steady window instead of the whole run (`window: steady`: the closed loop's "
               f"fill, MSER-5's warm-up and the drain left out), so not the figure {PEER} prints")
#: the markers around the generated block in docs/explanation/measured-figures.md
DOC_BEGIN = "<!-- definitions: generated from pytest_roofline/quantities/definitions.py; do not edit by hand -->"
DOC_END = "<!-- end of definitions -->"


@dataclass(frozen=True)
class Definition:
    """One measured quantity's figure: how it is computed, and the ``vllm bench serve`` figure it equals or why
    there is none."""

    #: how the figure is computed from the run
    what: str
    #: the ``vllm bench serve`` result key (its ``--save-result`` JSON) the figure equals; "" when it is none
    vllm: str = ""
    #: why the figure is not a ``vllm bench serve`` one (exactly one of ``vllm`` and ``why`` is given)
    why: str = ""
    #: read from the client's figures of a point, so ``window: steady`` reads it over the steady window; False for
    #: the server's counters and the engine's log, which a window does not change
    windowed: bool = True

    def __post_init__(self) -> None:
        if bool(self.vllm) == bool(self.why):
            raise ValueError(f"a definition names the vllm bench serve figure it equals or says why not: {self.what}")

    def text(self, window: str = "run") -> str:
        """The line a verdict scored on ``window`` shows (``run``, the default, or ``steady``)."""
        steady = window == "steady" and self.windowed
        if self.vllm and not steady:
            return f"{self.what} — the whole run, as {PEER} defines `{self.vllm}`"
        if self.vllm:
            return f"{self.what} — {STEADY_TEXT} (its `{self.vllm}` is the whole run's)"
        return f"{self.what} — not a {PEER} figure: {self.why}" + (f"; {STEADY_TEXT}" if steady else "")


_RUN = "the run's duration (first measured send → end of the last request; warm-up left out)"
_OUTPUT_TPUT = f"output tokens of the completed requests (the server's usage `completion_tokens`) ÷ {_RUN}"

#: each latency metric: (its name, the per-request figure, what its statistics are over, vllm bench serve's name)
_LATENCIES = {
    "ttft": ("TTFT", "each request's send → first SSE event with non-empty `choices` (its first content chunk)",
             "the completed requests", "ttft"),
    "tpot": ("TPOT", "each request's (E2E − TTFT) ÷ (output tokens − 1), output tokens from the server's usage",
             "the completed requests with more than one output token", "tpot"),
    "itl": ("ITL", "the gaps between consecutive content chunks of a request",
            "every gap of every completed request, pooled", "itl"),
    "e2e": ("E2E", "each request's send → last content chunk", "the completed requests", "e2el"),
}
#: each statistic: (what it is, vllm bench serve's prefix; p90 and p95 need its --metric-percentiles)
_STATS = {"mean": ("the mean", "mean"), "p50": ("the median", "median"),
          **{f"p{p}": (f"the {p}th percentile", f"p{p}") for p in (90, 95, 99)}}


def _latency(metric: str, stat: str) -> Definition:
    name, per, over, key = _LATENCIES[metric]
    how, prefix = _STATS[stat]
    interp = "" if stat == "mean" else " (numpy's linear interpolation)"
    return Definition(f"{name} {stat} = {how} of {per}, over {over}{interp}", vllm=f"{prefix}_{key}_ms")


_SWEEP = f"a reading of the whole sweep, which {PEER} (one run at a time) does not make"
_GOODPUT = ("its `request_goodput` (`--goodput ttft:… tpot:…`) is requests per second, not tokens: the requests of one "
            "run that met every SLO ÷ its duration; this judges each point's percentile against the SLO and takes "
            "the best point of the sweep, in output tok/s. The relation: at a point whose TTFT and TPOT at quantile "
            "q both meet their SLOs, at most 2(1 − q) of the requests miss one, so vLLM's `request_goodput` there is "
            "at least (2q − 1) × its request throughput (98% at p99, 80% at p90), and × the output tokens per request "
            "at least (2q − 1) × this goodput; a point that misses at the percentile can still have most requests "
            "good, which vLLM counts and this does not")
_UNDECIDED = ("A point whose percentile's 95% interval (`client.intervals`) reaches both sides of the threshold "
              "leaves the reading undecided when it could change it: a numeric ink is then inconclusive, never a "
              "pass or fail on the estimates, and so is an ink of none against a measured none the intervals "
              "leave undecided (the readings they still allow in its reason, the points in its notes)")
_COUNTER = "vLLM's own counter on /metrics over the point, not a client figure"
_LOG = "vLLM's own report of its KV pool (startup log, cross-checked with /metrics `vllm:cache_config_info`)"

#: every measured quantity's definition, by quantity name
DEFINITIONS: dict[str, Definition] = {
    "output_throughput": Definition(_OUTPUT_TPUT, vllm="output_throughput"),
    "total_throughput": Definition(f"prompt + output tokens of the completed requests (the server's usage) ÷ {_RUN}",
                                   vllm="total_token_throughput"),
    "request_throughput": Definition(f"completed requests ÷ {_RUN}", vllm="request_throughput"),
    "per_request_throughput": Definition(
        "the mean over the completed requests of each one's output tokens ÷ its E2E latency (first-token wait "
        "included)",
        why="it prints no per-request throughput; this is the speed one user saw, from the same per-request records "
        "as E2E"),
    "batch1_throughput": Definition(f"at the `batch1` point (else the concurrency-1 point): {_OUTPUT_TPUT}",
                                    vllm="output_throughput"),
    "batch1_fraction_of_ceiling": Definition(
        "batch-1 output throughput (`batch1_throughput`) ÷ the roofline's weight-read ceiling (bandwidth ÷ the "
        "weight bytes one token reads: all of them, an MoE model's top-k experts)",
        why="the measured figure over a model figure, which no benchmark prints"),
    **{f"{m}_{s}": _latency(m, s) for m in _LATENCIES for s in _STATS},
    "knee_concurrency": Definition(
        "the smallest swept closed-loop concurrency whose doubling adds less than `thresholds.knee_gain` of output "
        "throughput (none: it only flattens), each point's throughput its steady-window output tokens ÷ the steady "
        "window where the file records it, else its whole-run output throughput",
        why=f"{_SWEEP}; the steady window keeps a short point's drain from flattening the curve", windowed=False),
    "ttft_knee_concurrency": Definition(
        "the smallest swept closed-loop concurrency whose TTFT p99 exceeds `thresholds.ttft_knee_ratio` × its TTFT "
        f"p50 (none: never), TTFT as {PEER} defines `p99_ttft_ms` and `median_ttft_ms`. A point is surely above "
        "the ratio when its p99's lower bound exceeds the ratio × its p50's upper bound, surely below when its p99's "
        f"upper bound is at most the ratio × its p50's lower bound. {_UNDECIDED}", why=_SWEEP),
    "request_goodput": Definition(
        f"the completed requests that met every SLO of the file's `slo:` (a key the prediction's at: names replaces "
        f"the file's) ÷ {_RUN}, by "
        "vLLM's rule: a request is good when each given SLO is at least its TTFT, its TPOT ((E2E − TTFT) ÷ "
        "(output tokens − 1), 0 for one output token) and its E2E latency (`slo.e2el`); = request throughput × "
        "good ÷ completed. Its 95% interval is the good share's Wilson score interval × the request throughput "
        "(`client.goodput`)",
        vllm="request_goodput", windowed=False),
    "goodput": Definition(
        "the highest whole-point output throughput (output tokens of the completed requests ÷ the run's duration) "
        "among the closed-loop sweep points whose TTFT and TPOT at the chosen percentile each meet their SLO (a "
        "value equal to its SLO meets it). A point surely meets them when each percentile's upper bound is at most "
        f"its SLO, surely misses when one lower bound is above it. {_UNDECIDED}", why=_GOODPUT),
    "goodput_concurrency": Definition("the swept concurrency at which `goodput` is reached", why=_GOODPUT),
    "littles_law_ratio": Definition(
        "λ·W ÷ C at a closed-loop point over its held window, from the moment C requests were first in flight to "
        "the last measured send: λ the requests in flight inside it per second, W their mean time inside it, so a "
        "load generator that held C reads 1 and one slow to send the next request the share of C it held (the "
        "drain after the last send is outside the window); at an open-loop point λ·W ÷ L, L the client's own "
        "time-averaged requests in flight over the whole run (Little's law)",
        why=f"a check of the load generator (closed loop) or of the client's bookkeeping (open loop: L over a "
        f"window holding every request whole is λ·W itself); {PEER} records the configured `--max-concurrency` and "
        "no send times, so its file is skipped unless `--save-detailed` rebuilds the requests", windowed=False),
    "max_concurrency_without_preemption": Definition(
        "the largest swept concurrency with zero preemptions (the rise of `vllm:num_preemptions_total` over the "
        "point) there and at every lower point: a lower bound",
        why="vLLM's own counter on /metrics, read over the sweep", windowed=False),
    "max_concurrency_without_queueing": Definition(
        "the largest swept concurrency whose mean server-side queue time (`vllm:request_queue_time_seconds`) stays "
        "under `thresholds.queue_fraction` of its mean E2E latency there and at every lower point: a lower bound",
        why=f"vLLM's own queue-time histogram on /metrics over the sweep, which {PEER} does not read"),
    "preemptions": Definition(
        "preemptions vLLM counted during the point: the rise of `vllm:num_preemptions_total`, scraped before and "
        "after it", why=_COUNTER, windowed=False),
    "prefix_cache_hit_rate": Definition(
        "prefix-cache hits ÷ queries, in tokens, during the point: the rise of `vllm:prefix_cache_hits_total` ÷ "
        "that of `vllm:prefix_cache_queries_total`", why=_COUNTER, windowed=False),
    "available_kv_bytes": Definition("the KV pool vLLM allocated ('Available KV cache memory' in its startup log)",
                                     why=_LOG, windowed=False),
    "num_gpu_blocks": Definition("the KV-cache blocks vLLM allocated ('# GPU blocks' / `num_gpu_blocks`)",
                                 why=_LOG, windowed=False),
    "kv_cache_tokens": Definition("the tokens vLLM's KV pool holds ('KV cache size: N tokens')", why=_LOG,
                                  windowed=False),
    "max_concurrency": Definition(
        "requests of `request_tokens` tokens that fit the KV pool at once, as vLLM prints it ('Maximum concurrency "
        "for N tokens per request'), else its blocks ÷ ceil(request_tokens ÷ block size)", why=_LOG, windowed=False),
}


def definition_text(quantity: str, window: str = "run") -> str:
    """The definition line of ``quantity``'s measured figure scored on ``window``; "" for a quantity without
    one (a model-only quantity is never measured)."""
    d = DEFINITIONS.get(quantity)
    return d.text(window) if d is not None else ""


def definitions_markdown() -> str:
    """The block docs/explanation/measured-figures.md holds between :data:`DOC_BEGIN` and :data:`DOC_END`."""
    rows = ["| quantity | definition (the `definition` row of a verdict scored on the whole run) |", "|---|---|"]
    rows += [f"| `{name}` | {d.text('run').replace('|', chr(92) + '|')} |" for name, d in DEFINITIONS.items()]
    steady = [f"`{name}`" for name, d in DEFINITIONS.items() if d.windowed]
    return "\n".join([
        DOC_BEGIN, "", *rows, "",
        f"A verdict scored with `window: steady` on a client figure ({', '.join(steady)}) shows the same "
        f"definition with: {STEADY_TEXT}.", "", DOC_END])


if __name__ == "__main__":
    print(definitions_markdown())
