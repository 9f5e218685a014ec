"""A ``vllm bench serve --save-detailed`` file's per-request arrays, rebuilt into the load generator's
:class:`~pytest_roofline.measure.loadgen.RequestRecord` and the live path's own summary
(:func:`~pytest_roofline.measure.stats.summary.summarize`, run on them as on a live run) gives the point what it gives
a live point: ``client.intervals`` (and the steady window's), Little's law's inputs, the held in-flight count.

The arrays, from vLLM's source (``vllm/benchmarks/serve.py`` at v0.32.0, ``benchmark()``'s ``result``, and
``vllm/benchmarks/lib/endpoint_request_func.py``; https://github.com/vllm-project/vllm/blob/v0.32.0/), one entry per
request in the order the requests were made, successes and failures alike:

* ``start_times`` — ``time.perf_counter()`` right before the request was posted (after any ``--max-concurrency``
  wait: the client's queue time is ``queue_times``, not part of the request);
* ``ttfts`` — send → first chunk carrying text, s; ``itls`` — the gaps between consecutive such chunks, s;
* ``latencies`` — send → the last such chunk, s (``most_recent_timestamp - st``: start + TTFT + Σ ITL);
* ``input_lens``, ``output_lens`` (the server's usage counts, else re-tokenized), ``errors`` (``""`` on success).

So request i was sent at ``start_times[i]``, its chunks arrived at ``start_times[i] + ttfts[i] + Σ itls[i][:k]``
and it ended at ``start_times[i] + latencies[i]``: exactly a live record's ``sent_s``, ``chunk_times_s`` and
``end_s`` on one ``perf_counter`` clock. The measurement window is vLLM's own: ``duration`` seconds ending with
the last request (vLLM's ``benchmark_duration`` opens before the first send), so an interval's estimate is the
figure vLLM printed (output tokens ÷ ``duration``). The figures stay the file's summary keys; the records give
only what vLLM does not print.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_roofline.measure.loadgen import LoadResult, LoadSpec, RequestRecord
from pytest_roofline.measure.results.peers._common import number
from pytest_roofline.measure.stats.summary import summarize
from pytest_roofline.model.workload import ArrivalSpan
from pytest_roofline.quantities.measurement import PointMode

__all__ = ["DETAIL_KEYS", "LIVE_KEYS", "detail_records", "detail_client", "sent_offsets", "fixed_span_sent"]

#: the per-request arrays the records are rebuilt from (``errors`` and ``input_lens`` are optional)
DETAIL_KEYS: tuple[str, ...] = ("start_times", "ttfts", "itls", "latencies", "output_lens")


def _finite(x: Any) -> float | None:
    v = number(x)
    return float(v) if v is not None and math.isfinite(v) else None


def detail_records(doc: Mapping[str, Any]) -> tuple[list[RequestRecord] | None, str]:
    """The file's requests as records, or None with why they cannot be rebuilt (no ``--save-detailed``, a vLLM
    without ``start_times``, arrays of different lengths, a value that is not a time)."""
    missing = [k for k in DETAIL_KEYS if not isinstance(doc.get(k), list)]
    if missing:
        if len(missing) == len(DETAIL_KEYS) or missing == ["start_times"] and "latencies" not in doc:
            return None, "the file has no per-request arrays (vllm bench serve without --save-detailed)"
        return None, (f"the file's per-request arrays lack {', '.join(missing)} (vllm bench serve --save-detailed "
                      "of vLLM 0.32 writes start_times, ttfts, itls, latencies and output_lens)")
    arrays = {k: doc[k] for k in DETAIL_KEYS}
    errors = doc.get("errors") if isinstance(doc.get("errors"), list) else None
    inputs = doc.get("input_lens") if isinstance(doc.get("input_lens"), list) else None
    n = len(arrays["start_times"])
    lengths = {k: len(v) for k, v in arrays.items()}
    if errors is not None:
        lengths["errors"] = len(errors)
    if inputs is not None:
        lengths["input_lens"] = len(inputs)
    if n == 0 or any(m != n for m in lengths.values()):
        return None, ("the per-request arrays differ in length ("
                      + ", ".join(f"{k} {m}" for k, m in lengths.items()) + ")")
    records: list[RequestRecord] = []
    for i in range(n):
        failed = bool(errors[i]) if errors is not None else False
        st, ttft, lat = (_finite(arrays[k][i]) for k in ("start_times", "ttfts", "latencies"))
        gaps_raw, n_out = arrays["itls"][i], number(arrays["output_lens"][i])
        n_in = number(inputs[i]) if inputs is not None else None
        if st is None:
            return None, f"request {i}: start_times[{i}] is not a time"
        if failed:
            end = st + lat if lat is not None and lat > 0 else st
            records.append(RequestRecord(index=i, request_id=str(i), warmup=False, input_len=int(n_in or 0),
                                         output_len=0, sent_s=st, end_s=end, status="error",
                                         error=str(errors[i]) if errors is not None else None))
            continue
        gaps = [_finite(g) for g in gaps_raw] if isinstance(gaps_raw, list) else [None]
        if ttft is None or lat is None or n_out is None or any(g is None or g < 0 for g in gaps) or ttft < 0:
            return None, f"request {i}: its ttft, itls, latency or output length is not a number"
        chunks = [st + ttft]
        for g in gaps:
            chunks.append(chunks[-1] + float(g or 0.0))
        records.append(RequestRecord(index=i, request_id=str(i), warmup=False, input_len=int(n_in or 0),
                                     output_len=int(n_out), sent_s=st, first_token_s=chunks[0],
                                     chunk_times_s=chunks, end_s=st + lat,
                                     prompt_tokens=int(n_in) if n_in is not None else None,
                                     completion_tokens=int(n_out), status="ok"))
    return records, ""


#: how close a file's last send must be to N ÷ rate after vLLM's own start to read as sent on a fixed span: 5 ms for
#: the client's lateness, plus 0.05 % of the span (:func:`fixed_span_sent`)
FIXED_SPAN_SLACK_S = 0.005
FIXED_SPAN_SLACK_SHARE = 0.0005


def fixed_span_sent(doc: Mapping[str, Any], records: list[RequestRecord], rate_req_s: float | None) -> bool:
    """Whether a ``--save-detailed`` open loop was sent on a fixed span: ``vllm bench serve`` since PR #21108 rescales
    its schedule so that the N-th request goes out N ÷ rate after the benchmark starts (``get_request``), and the
    file's ``duration`` runs from that start to the last request's end, so the start is the last end less the
    duration. A drawn schedule ends there only by chance (its span's standard deviation is √N ÷ rate: 1.1 s for
    80 requests at 8 req/s, against a tolerance of :data:`FIXED_SPAN_SLACK_S` + :data:`FIXED_SPAN_SLACK_SHARE` of
    the span: 10 ms). A ramp-up (``ramp_up_strategy``) is never rescaled."""
    if rate_req_s is None or not math.isfinite(rate_req_s) or rate_req_s <= 0 or doc.get("ramp_up_strategy"):
        return False
    duration = _finite(doc.get("duration"))
    sends = [r.sent_s for r in records if r.sent_s is not None]
    ends = [r.end_s for r in records if r.end_s is not None]
    if duration is None or len(sends) < 2 or not ends:
        return False
    span = len(records) / rate_req_s
    last_send = max(sends) - (max(ends) - duration)
    return abs(last_send - span) <= FIXED_SPAN_SLACK_S + FIXED_SPAN_SLACK_SHARE * span


def sent_offsets(start_times: list[Any]) -> list[float]:
    """The sends of ``start_times`` (already checked by :func:`detail_records`) as seconds after the first, in
    send order, to the µs: a point's ``sent_offsets_s`` (docs/results-schema.md)."""
    sends = sorted(float(t) for t in start_times)
    return [round(t - sends[0], 6) for t in sends]


#: the keys of the live ``client`` object taken from the rebuilt requests: what vLLM's summary keys do not hold
LIVE_KEYS: tuple[str, ...] = (
    "intervals", "intervals_window", "steady_window", "steady", "steady_intervals", "mean_in_flight", "littles_law",
    "held_mean_in_flight", "steady_output_throughput_tok_s", "steady_mean_in_flight")


def detail_client(doc: Mapping[str, Any], records: list[RequestRecord], *, concurrency: int | None,
                  rate_req_s: float | None, completed: int) -> tuple[dict[str, Any] | None, str]:
    """What the live path's :func:`~pytest_roofline.measure.stats.summary.summarize` gives a point run as
    ``records`` (:func:`detail_records`) that vLLM's summary keys do not (:data:`LIVE_KEYS`): the whole run's
    ``intervals`` and the steady window's, Little's law over vLLM's ``duration``, the in-flight counts. None with
    why where the records do not agree with the summary (another count of completed requests, no time between
    the first send and the last end)."""
    ok = sum(1 for r in records if r.ok)
    if ok != completed:
        return None, (f"the per-request arrays hold {ok} successful requests where \"completed\" says {completed}: "
                      "they are not this run's")
    duration = _finite(doc.get("duration"))
    ends = [r.end_s for r in records if r.end_s is not None]
    sends = [r.sent_s for r in records if r.sent_s is not None]
    if not ends or not sends or duration is None or duration <= 0:
        return None, "the per-request arrays span no time"
    last_end = max(ends)
    # vLLM's window: `duration` seconds ending with the last request; a file whose duration is shorter than its
    # requests' span (not one vLLM wrote) falls back to the requests' own span, first send to last end
    start = min(last_end - duration, min(sends))
    closed = rate_req_s is None
    # sent on a fixed span (fixed_span_sent: the last send N / rate after vLLM's start), the fixed-span interval;
    # else the count interval
    span: ArrivalSpan = "fixed" if not closed and fixed_span_sent(doc, records, rate_req_s) else "drawn"
    spec = LoadSpec(model=str(doc.get("model_id") or ""), token_id_range=(0, 1),
                    mode=PointMode.CLOSED if closed else PointMode.OPEN, concurrency=concurrency if closed else None,
                    rate_req_s=rate_req_s, num_requests=len(records), arrival_span=span)
    run = LoadResult(spec=spec, records=records, run_start_s=start, measure_start_s=start, run_end_s=last_end,
                     wall_anchor=0.0, perf_anchor_s=start)
    live = summarize(run, steady_state="detect")
    out = {k: live[k] for k in LIVE_KEYS if k in live}
    # what vLLM's --goodput rule reads of each completed request (TTFT s, E2E s, output tokens), so a replay under
    # the prediction file's slo: recomputes request_goodput from the arrays (measure.stats.goodput)
    out["goodput_requests"] = [[r.ttft_s, r.e2e_s, r.completion_tokens if r.completion_tokens is not None
                                else len(r.chunk_times_s)] for r in records if r.ok]
    return out, ""
