"""GuideLLM's benchmarks JSON (``guidellm benchmark --outputs json``) read as a results document.

The format, from GuideLLM's own schemas (vllm-project/guidellm v0.8.1, https://github.com/vllm-project/guidellm,
``src/guidellm/benchmark/schemas/report.py`` ``GenerativeBenchmarksReport``, ``benchmark.py``
``GenerativeBenchmark``, ``metrics.py`` ``GenerativeMetrics``, ``schemas/base/statistics.py``
``StatusDistributionSummary``): ``{"metadata": {"version", "guidellm_version", ...}, "config": ...,
"benchmarks": [...]}``; each benchmark has ``config.strategy`` (``type_`` synchronous | concurrent (``streams``) |
throughput | constant / poisson (``rate``, req/s)), ``duration`` (s) and ``metrics.<name>.successful`` with
``mean``, ``median``, ``count`` and ``percentiles`` (``p50``, ``p90``, ``p95``, ``p99``, ...).

Definitions differ from vLLM's and are converted, not copied by name (GuideLLM ``schemas/request_stats.py``):
GuideLLM's ``inter_token_latency_ms`` is (last − first token) ÷ (output − 1), which is vLLM's (and this
project's) TPOT, so it is read as ``tpot_ms``; GuideLLM's ``time_per_output_token_ms`` includes the first token and
has no counterpart here; the gaps between streamed chunks (vLLM's ITL) are not reported, so ``itl_ms`` is absent.
``request_latency`` is in seconds (×1000 → ``e2e_ms``) and ends at the end of the response, where vLLM's ends at
the last token chunk; the point's flags say which GuideLLM figure stands for TPOT and E2E, and how it differs
(every verdict at the point repeats them). ``request_concurrency`` (the time-averaged count in
flight) is kept as ``mean_in_flight`` but is λ·W itself, so Little's law takes L = the configured streams.
``inter_token_latency_ms`` is summarised over tokens, not requests (its ``count`` is the number of gaps). Its
percentiles are its nearest rank, not numpy's interpolation: each is scored with the interval in which
vllm bench serve's figure for the same requests lies (:func:`rank_rule_intervals`). A
distribution with ``count`` 0 (no successful request) is written as zeros by GuideLLM and read as absent; a
benchmark whose counts cannot have been measured (:func:`check_counts`) is refused, naming the inconsistency.
The file holds no per-request chunk times: bursts are judged from its TPOT p50 (``measure.stats.bursts``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.file import ResultsData
from pytest_roofline.measure.results.peers._common import (
    closed_point_id,
    load_json,
    number,
    open_point_id,
    peer_time,
    results_document,
)
from pytest_roofline.measure.stats.bursts import summary_burst_flag
from pytest_roofline.quantities.measurement import Distribution, PointMode, PointRecord

__all__ = ["FORMAT", "is_guidellm", "load", "guidellm_point", "check_counts", "late_flag", "LATE_SHARE"]

FORMAT = "GuideLLM"


def is_guidellm(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list)
            and (("guidellm_version" in (doc.get("metadata") or {})) or any(
                isinstance(b, dict) and b.get("type_") == "generative_benchmark" for b in doc["benchmarks"])))


def _ok(metrics: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The successful requests' summary of ``name``; None when there is none or it summarises no value (GuideLLM
    writes all-zero statistics with ``count`` 0 for an empty distribution: absent, not 0)."""
    m = metrics.get(name)
    s = m.get("successful") if isinstance(m, dict) else None
    if not isinstance(s, dict) or number(s.get("count")) == 0:
        return None
    return s


def _dist(metrics: Mapping[str, Any], name: str, scale: float = 1.0) -> Distribution | None:
    s = _ok(metrics, name)
    if s is None:
        return None
    pct: Mapping[str, Any] = s["percentiles"] if isinstance(s.get("percentiles"), dict) else {}
    out: dict[str, Any] = {}
    for key, x in (("mean", s.get("mean")), ("p50", s.get("median")), ("p90", pct.get("p90")),
                   ("p95", pct.get("p95")), ("p99", pct.get("p99")), ("count", s.get("count"))):
        v = number(x)
        out[key] = v * scale if v is not None and key != "count" else v
    return cast(Distribution, out)


def _token_weighted(dist: Distribution | None) -> Distribution | None:
    """GuideLLM summarises inter_token_latency_ms over tokens, not requests (a real file: count 1,260 = 20
    requests × 63 gaps), so its percentiles weight long requests more than vLLM's per-request TPOT does."""
    if dist is None:
        return None
    return cast(Distribution, {**dist, "note": "GuideLLM's inter_token_latency_ms: per-request (last − first token) "
                               "÷ (output − 1), summarised over output tokens (token-weighted percentiles)"})


#: GuideLLM's percentile keys and the probability each is (``schemas/statistics.py`` ``Percentiles.from_pdf``)
_GUIDELLM_PCT = {"p001": 0.001, "p01": 0.01, "p05": 0.05, "p10": 0.1, "p25": 0.25, "p50": 0.5, "p75": 0.75,
                 "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}
#: the percentiles this project scores, by its Distribution key
_SCORED_PCT = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def _rank(n: int, q: float) -> int:
    """The 0-based rank of GuideLLM's value for ``q`` of ``n`` values: the first whose cumulative probability
    reaches ``q`` (its lower inverse CDF, the nearest rank ⌈n·q⌉), computed as GuideLLM computes it, each of n
    distinct values weighing 1.0 ÷ n, summed by ``np.cumsum`` (v0.4+ ``Percentiles.from_pdf``: ``np.searchsorted(cdf,
    q, side="left")``; v0.3: ``np.argmax(cdf >= q)``, the same index): where n·q is whole, the sum's rounding decides
    the rank (at n = 20 the 19th value's sum is 0.9500000000000003 > 0.95: GuideLLM's p95 is the 19th value, p90 the
    18th). Tied values, merged into one with their summed weight, can move a whole-number rank by one; their values
    are equal there."""
    return min(int(np.searchsorted(_cdf(n), q, side="left")), n - 1)


@functools.lru_cache(maxsize=32)
def _cdf(n: int) -> np.ndarray:
    """GuideLLM's cumulative probabilities of ``n`` distinct values (:func:`_rank`), summed once per ``n``: a file's
    every percentile and every point of one sweep ask for the same ``n`` (read-only, as the cache shares it)."""
    cdf = np.cumsum(np.full(n, 1.0 / n))
    cdf.flags.writeable = False
    return cdf


def _nth(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def rank_rule_intervals(s: Mapping[str, Any], n: int, scale: float = 1.0) -> dict[str, dict[str, Any]]:
    """Where ``vllm bench serve``'s percentiles of the same ``n`` requests lie, from a GuideLLM summary ``s``.

    GuideLLM gives a percentile as the value at the nearest rank (:func:`_rank`); vllm bench serve interpolates
    numpy's way, between the values at ranks ⌊(n−1)·q⌋ and ⌈(n−1)·q⌉, of which GuideLLM's is one. The other is not
    in the file, so vLLM's figure lies between GuideLLM's and the nearest value the file does give on the other side:
    another of its percentiles (p001 … p999), its median, min or max, each at its own rank. At 20 requests GuideLLM's
    p99 is the slowest request and vLLM's lies between the 19th and 20th: between the file's p95 (the 19th) and its
    p99. Where both rules land on one value (n = 21, p50) the interval has no width. Keyed by the Distribution's
    stat (``p99``), in the figure's unit × ``scale``; level 1 (a bracket, not a sampling interval), method
    ``rank rule``."""
    raw = s.get("percentiles")
    pct: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    known: list[tuple[int, int, float]] = []  # (rank, rank, value) of every figure the file gives
    for key, q in _GUIDELLM_PCT.items():
        v = number(pct.get(key))
        if v is not None:
            known.append((_rank(n, q), _rank(n, q), v))
    for key, rank in (("min", 0), ("max", n - 1)):
        v = number(s.get(key))
        if v is not None:
            known.append((rank, rank, v))
    out: dict[str, dict[str, Any]] = {}
    for stat, q in _SCORED_PCT.items():
        theirs = number(s.get("median")) if stat == "p50" else number(pct.get(stat))
        if theirs is None:
            continue
        a = (n - 1) * q  # numpy's position: vLLM's figure lies between the values at floor(a) and ceil(a)
        below = [v for lo_r, hi_r, v in known if hi_r <= math.floor(a)]
        above = [v for lo_r, hi_r, v in known if lo_r >= math.ceil(a)]
        lo = max(below) if below else -math.inf
        hi = min(above) if above else math.inf
        lo, hi = min(lo, theirs), max(hi, theirs)  # GuideLLM's own value is one end
        f, c = math.floor(a), math.ceil(a)
        at_f = [v for lo_r, hi_r, v in known if lo_r == hi_r == f]
        at_c = [v for lo_r, hi_r, v in known if lo_r == hi_r == c]
        if at_f and at_c:  # both neighbours are in the file: vLLM's figure exactly (trial s25d #1: 20 requests' p99
            # is the 19th (GuideLLM's p95) + 0.81 x (20th - 19th), 1,945.8 ms, no interval needed)
            exact = at_f[0] + (a - f) * (at_c[0] - at_f[0])
            out[stat] = {"estimate": exact * scale, "lo": exact * scale, "hi": exact * scale, "level": 1.0,
                         "method": "rank rule", "n": n, "requests": n, "quantile": q, "exact": True,
                         "note": (f"vllm bench serve's {stat} of these {n} requests, worked out from the file: the "
                                  f"{_nth(f + 1)} value + {a - f:.4g} × (the {_nth(c + 1)} − the {_nth(f + 1)}), "
                                  f"numpy's rule; GuideLLM's own {stat} ({theirs * scale:.6g}) is its nearest "
                                  f"rank, the {_nth(_rank(n, q) + 1)}")}
            continue
        out[stat] = {"estimate": theirs * scale, "lo": lo * scale if math.isfinite(lo) else None,
                     "hi": hi * scale if math.isfinite(hi) else None, "level": 1.0, "method": "rank rule", "n": n,
                     "requests": n, "quantile": q,
                     "note": (f"GuideLLM's {stat} is the {_nth(_rank(n, q) + 1)} smallest of {n} (its nearest rank); "
                              f"vllm bench serve's interpolates between the {_nth(math.floor(a) + 1)} and the "
                              f"{_nth(math.ceil(a) + 1)}, which the file's other percentiles bound")}
    return out


def _rank_rule_client_intervals(metrics: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The point's ``client.intervals`` for its percentiles: where vllm bench serve's would lie
    (:func:`rank_rule_intervals`; trial s25b #1: GuideLLM's p99 of 20 requests, its slowest, scored 2,271.7 ms as
    if it were vLLM's 1,945.8, and the verdict flipped). TTFT and E2E are per request; GuideLLM's TPOT is weighted
    by tokens, the same as per request only where every request made as many tokens."""
    out: dict[str, dict[str, Any]] = {}
    out_tokens = _ok(metrics, "output_token_count") or {}
    same_lengths = (number(out_tokens.get("min")) is not None
                    and number(out_tokens.get("min")) == number(out_tokens.get("max")))
    requests: int | None = None
    for name, key, scale in (("time_to_first_token_ms", "ttft_ms", 1.0), ("request_latency", "e2e_ms", 1e3),
                             ("inter_token_latency_ms", "tpot_ms", 1.0)):
        s = _ok(metrics, name)
        if s is None:
            continue
        n = number(s.get("count"))
        if key == "tpot_ms":
            if not same_lengths or requests is None:
                continue
            n = requests
        if n is None or n < 1 or n != int(n):
            continue
        requests = requests or int(n)
        for stat, iv in rank_rule_intervals(s, int(n), scale).items():
            out[f"{key}.{stat}"] = iv
    return out


def check_counts(bench: Mapping[str, Any], where: str) -> None:
    """A benchmark whose counts cannot have been measured is refused, never scored (as ``vllm bench serve``'s are):
    ``request_totals`` are whole numbers >= 0 that add up to at most ``total``; successful requests have latencies
    (``request_latency.successful.count`` is 0 exactly when ``successful`` is: a file claiming 20 successful requests
    with every distribution zeroed gave 18 skips and exit 0); and successful requests took some time."""
    m = bench.get("metrics")
    metrics: Mapping[str, Any] = m if isinstance(m, dict) else {}
    t = metrics.get("request_totals")
    totals: Mapping[str, Any] = t if isinstance(t, dict) else {}
    counts = {k: number(totals.get(k)) for k in ("successful", "errored", "incomplete", "total")}
    for name, n in counts.items():
        if n is not None and (n < 0 or n != int(n)):
            raise ResultsError(f"{where}: request_totals.{name} is {n:g}, not a count of requests; this file does "
                               "not record a measurement")
    ok, total = counts["successful"], counts["total"]
    parts = sum(counts[k] or 0 for k in ("successful", "errored", "incomplete"))
    if total is not None and parts > total:
        raise ResultsError(f"{where}: request_totals successful + errored + incomplete = {parts:g} is more than its "
                           f"total {total:g}; this file does not record a measurement")
    lat = metrics.get("request_latency")
    summary = lat.get("successful") if isinstance(lat, dict) else None
    n_lat = number(summary.get("count")) if isinstance(summary, dict) else None
    if ok is not None and n_lat is not None and (ok > 0) != (n_lat > 0):
        raise ResultsError(f"{where}: request_totals.successful is {ok:g} but request_latency summarises {n_lat:g} "
                           "successful requests (its count); this file does not record a measurement")
    duration = number(bench.get("duration"))
    if ok and duration is not None and not duration > 0:
        raise ResultsError(f"{where}: \"duration\" is {duration:g} s with {ok:g} successful requests; a measurement "
                           "takes some time")


def _definition_notes(metrics: Mapping[str, Any]) -> list[str]:
    """Which GuideLLM figure stands for TPOT and E2E, and how it differs from vllm bench serve's (a flag each, which
    every verdict at the point repeats)."""
    notes = []
    out = _ok(metrics, "output_token_count") or {}
    lo, hi = number(out.get("min")), number(out.get("max"))
    if _ok(metrics, "inter_token_latency_ms") is not None:
        theirs = number((_ok(metrics, "time_per_output_token_ms") or {}).get("median"))
        notes.append("TPOT is GuideLLM's inter_token_latency_ms: (last − first token) ÷ (output tokens − 1) per "
                     "request, vllm bench serve's TPOT, but summarised over tokens, not requests: its mean is "
                     "Σ (last − first) ÷ Σ (output − 1) and its percentiles weigh a reply by its tokens"
                     + (f" (the same as per request here: every request made {lo:g} tokens)" if lo is not None
                        and lo == hi else " (a long reply weighs more; vLLM averages the requests' TPOTs)")
                     + "; GuideLLM's time_per_output_token_ms" + (f" (p50 {theirs:.5g} ms)" if theirs is not None
                                                                  else "")
                     + " also counts the TTFT")
    if _ok(metrics, "request_latency") is not None:
        notes.append("E2E is GuideLLM's request_latency: request start → end of the response, where vllm bench "
                     "serve's ends at the last token chunk (GuideLLM's is longer by the time from the last token "
                     "to the stream's end)")
    return notes


#: a rate point whose requests GuideLLM sent, on average, more than this share of one interval after their scheduled
#: times is flagged: its arrivals bunched (a public H100 run: 0.97 s late at 1.95 req/s, 13 requests within 0.23 s
#: by vLLM's own traces; its on-time neighbours 0.00 s: tests/data/peers/guidellm-blis-h100)
LATE_SHARE = 0.5


def late_flag(bench: Mapping[str, Any], rate: float | None) -> str | None:
    """The flag of a rate point GuideLLM itself says it sent late: ``scheduler_metrics.
    request_targeted_start_delay_avg`` (the mean of each request's send time minus its scheduled time, s) beyond
    :data:`LATE_SHARE` of the interval ``1 / rate``. A late scheduler sends its backlog at once, so the point's
    arrivals are a burst and then the rate, not the rate it names: every verdict at it repeats the flag. None for a
    closed loop, an on-time point, or a file without the figure."""
    late_s = number((bench.get("scheduler_metrics") or {}).get("request_targeted_start_delay_avg"))
    if rate is None or rate <= 0 or late_s is None or late_s <= LATE_SHARE / rate:
        return None
    return (f"arrivals not at the rate named: GuideLLM sent these requests {late_s:.3g} s after their scheduled times "
            f"on average (scheduler_metrics.request_targeted_start_delay_avg), {late_s * rate:.1f} intervals at "
            f"{rate:.4g} req/s: a late scheduler sends its backlog at once, so the point measured a burst and then "
            "the rate; rerun it, or read its latencies as a burst's")


def guidellm_point(bench: Mapping[str, Any], where: str) -> PointRecord:
    check_counts(bench, where)
    strategy = ((bench.get("config") or {}).get("strategy") or {})
    kind = strategy.get("type_")
    metrics = bench.get("metrics") or {}
    flags: list[str] = []
    if kind == "synchronous":
        mode, conc, rate = PointMode.CLOSED, 1, None
    elif kind == "concurrent" and number(strategy.get("streams")):
        mode, conc, rate = PointMode.CLOSED, int(number(strategy.get("streams")) or 0), None
    elif kind in ("constant", "poisson") and number(strategy.get("rate")):
        mode, conc, rate = PointMode.OPEN, None, number(strategy.get("rate"))
        if kind == "constant":
            flags.append("GuideLLM constant rate: evenly spaced arrivals, not Poisson")
        late = late_flag(bench, rate)
        if late:
            flags.append(late)
    else:
        raise ResultsError(f"{where}: GuideLLM strategy {kind!r} has no sweep point here (synchronous, concurrent, "
                           "constant and poisson do; throughput sends as fast as it can)")
    totals = metrics.get("request_totals") or {}
    completed = number(totals.get("successful"))
    in_len = number((_ok(metrics, "prompt_token_count") or {}).get("mean"))
    out_len = number((_ok(metrics, "output_token_count") or {}).get("mean"))
    lam = number((_ok(metrics, "requests_per_second") or {}).get("mean"))
    # throughputs as vllm bench serve (and this project) define them: the successful requests' tokens ÷ the
    # benchmark's duration, from the totals (in the real file GuideLLM's output_tokens_per_second mean agrees:
    # 1,280 tokens ÷ 3.832 s = 334.04); its summary stands in only when the totals are missing.
    dur = number(bench.get("duration"))
    out_sum = number((_ok(metrics, "output_token_count") or {}).get("total_sum"))
    in_sum = number((_ok(metrics, "prompt_token_count") or {}).get("total_sum"))
    whole = dur is not None and dur > 0 and out_sum is not None
    if not whole:
        flags.append("GuideLLM's output_tokens_per_second mean stands in for output tokens ÷ duration: the file "
                     "records no token totals or duration")
    client: dict[str, Any] = {
        "completed": int(completed) if completed is not None else None,
        "failed": int((number(totals.get("errored")) or 0) + (number(totals.get("incomplete")) or 0)),
        "output_throughput_tok_s": (out_sum / dur if whole and out_sum is not None and dur else
                                    number((_ok(metrics, "output_tokens_per_second") or {}).get("mean"))),
        "total_throughput_tok_s": ((out_sum + in_sum) / dur if whole and out_sum is not None and in_sum is not None
                                   and dur else number((_ok(metrics, "tokens_per_second") or {}).get("mean"))),
        "request_throughput_req_s": (completed / dur if dur and completed is not None else lam),
        "ttft_ms": _dist(metrics, "time_to_first_token_ms"),
        "tpot_ms": _token_weighted(_dist(metrics, "inter_token_latency_ms")),  # GuideLLM's ITL = vLLM's TPOT
        "e2e_ms": _dist(metrics, "request_latency", 1e3),  # seconds -> ms
    }
    flags.extend(_definition_notes(metrics))
    intervals = _rank_rule_client_intervals(metrics)
    if intervals:
        client["intervals"] = intervals
        for path, iv in intervals.items():  # where the file pins vLLM's figure, that is the figure scored
            key, stat = path.split(".")
            if iv.get("exact") and isinstance(client.get(key), dict):
                client[key] = cast(Distribution, {**client[key], stat: iv["estimate"]})
    burst = summary_burst_flag(tpot_p50_ms=number((client.get("tpot_ms") or {}).get("p50")), itl_p50_ms=None,
                               output_tokens=out_len, tool="GuideLLM's benchmarks JSON")
    if burst:
        flags.append(burst)
    not_reported = {"itl_ms": "GuideLLM does not report ITL, the gaps between streamed chunks (its "
                              "inter_token_latency_ms is the per-request TPOT, read as tpot_ms)",
                    "server": "GuideLLM does not scrape the engine's /metrics"}
    # request_concurrency is GuideLLM's time-averaged count in flight, but in a real file it equals
    # requests_per_second × mean request_latency to 1e-15 (tests/data/peers/guidellm-cpu-tiny): it is λ·W itself,
    # so it cannot check Little's law; L is the configured streams, as for vllm bench serve
    conc_avg = number((_ok(metrics, "request_concurrency") or {}).get("mean"))
    if conc_avg is not None:
        client["mean_in_flight"] = conc_avg
    w_s = number((_ok(metrics, "request_latency") or {}).get("mean"))
    if mode == PointMode.CLOSED and conc and lam is not None and w_s is not None:
        client["littles_law"] = {"L": None, "L_configured": float(conc), "lambda_req_s": lam, "W_s": w_s,
                                 "lambda_W": lam * w_s, "ratio": None,
                                 "not_checked": "GuideLLM records its configured streams, and its "
                                                "request_concurrency is λ·W itself, so Little's law cannot be "
                                                "checked on its file"}
    else:
        not_reported["littles_law"] = ("needs a closed loop (synchronous / concurrent), requests_per_second and "
                                       "request_latency")
    return cast(PointRecord, {
        "id": closed_point_id(conc) if mode == PointMode.CLOSED and conc else open_point_id(rate or 0.0),
        "mode": mode, "concurrency": conc, "rate_req_s": rate,
        "input_len": int(round(in_len)) if in_len is not None else None,
        "output_len": int(round(out_len)) if out_len is not None else None,
        "num_requests": int(number(totals.get("total")) or 0) or None,
        "duration_s": number(bench.get("duration")), "started_at": peer_time(bench.get("start_time")),
        "finished_at": peer_time(bench.get("end_time")), "client": client, "server": None, "contaminated": None,
        "flags": flags, "requests_file": None, "loadgen": None, "not_reported": not_reported, "source_file": where,
    })


def load(path: Path) -> ResultsData:
    doc = load_json(path)
    if not is_guidellm(doc):
        raise ResultsError(f"{path}: not GuideLLM benchmarks JSON (expected metadata.guidellm_version and benchmarks)")
    points = []
    skipped = []
    for i, b in enumerate(doc["benchmarks"]):
        if isinstance(b, dict):
            check_counts(b, f"{path}: benchmarks[{i}]")  # an impossible count is the file's error, never a skip
        try:
            points.append(guidellm_point(b, f"{path}: benchmarks[{i}]"))
        except ResultsError as exc:
            skipped.append(str(exc))
    if not points:
        raise ResultsError(f"{path}: no GuideLLM benchmark maps to a sweep point ({'; '.join(skipped)})")
    models = set()
    for b in doc["benchmarks"]:
        backend = (b.get("config") or {}).get("backend") or {}
        m = backend.get("model") or (backend.get("attributes") or {}).get("model")
        if m:
            models.add(str(m))
    ins = {p.get("input_len") for p in points} - {None}
    outs = {p.get("output_len") for p in points} - {None}
    setup = {"hardware": {"declared": None, "detected": None},
             "model": {"name": next(iter(models)) if len(models) == 1 else None, "path": None},
             "engine": {"name": None, "version": None, "notes": "imported from GuideLLM benchmarks JSON"},
             "workload": {**({"input_len": ins.pop()} if len(ins) == 1 else {}),
                          **({"output_len": outs.pop()} if len(outs) == 1 else {})}}
    unchecked = {"hardware": "GuideLLM records no GPU", "engine_version": "GuideLLM records no server version",
                 "engine_report": "GuideLLM records no KV-cache figures"}
    if not models:
        unchecked["model"] = "the file names no model"
    return results_document(source=FORMAT, where=str(path), points=points, setup=setup, unchecked=unchecked,
                            notes="imported from GuideLLM " + str((doc.get("metadata") or {}).get(
                                "guidellm_version") or "") + ("; skipped: " + "; ".join(skipped) if skipped else ""))
