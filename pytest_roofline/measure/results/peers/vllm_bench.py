"""``vllm bench serve --save-result`` JSON and ``vllm bench sweep serve`` output, read as a results document.

The format, from vLLM's own source (``vllm/benchmarks/serve.py`` at v0.32.0, the end of ``benchmark()`` and
``main()``; the same keys since v0.10 less ``failed``, ``max_*`` and ``rtfx``,
https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/benchmarks/serve.py):

* the run: ``date``, ``backend``, ``model_id``, ``tokenizer_id``, ``num_prompts``, ``request_rate`` (the string
  ``"inf"`` for no rate), ``burstiness``, ``max_concurrency``; every ``--metadata KEY=VALUE`` as a top-level key;
* totals: ``duration`` (s), ``completed``, ``failed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput`` (req/s), ``output_throughput`` and ``total_token_throughput`` (tok/s);
* per metric of ``--percentile-metrics`` (default ``ttft,tpot,itl``; ``vllm bench sweep`` adds ``e2el``):
  ``mean_<m>_ms``, ``median_<m>_ms``, ``std_<m>_ms`` and ``p<P>_<m>_ms`` for each ``--metric-percentiles`` P;
* ``latencies`` (s, one per request) is kept even without ``--save-detailed`` since v0.30.

Definitions are vLLM's, which are the project's too: TTFT to the first streamed chunk, TPOT = (latency − TTFT) ÷
(output tokens − 1) per request, ITL the gaps between streamed chunks pooled over requests. Tokens delivered several
per read (bursts) are counted per request from ``--save-detailed``'s ``itls``; without them they are judged from
the TPOT and ITL p50 (``measure.stats.bursts.summary_burst_flag``: vLLM's ITL p50 of 0.0076 ms on the CPU engine).

``vllm bench sweep serve`` (``vllm/benchmarks/sweep/serve.py`` at v0.32.0) writes
``<output_dir>/<experiment>/SERVE-…-BENCH-…/run=<n>.json`` (a ``bench serve`` file plus ``run_number`` and the
swept parameters), ``warmup.json`` (``run_number`` −1) and ``summary.json`` (the runs again, as a list). The
repeats of one point are merged by taking the run of median output throughput; the others are listed in the
point's notes.

With ``--save-detailed`` the per-request arrays (``start_times``, ``ttfts``, ``itls``, ``latencies``,
``output_lens``, ``errors``) are rebuilt into the load generator's records and summarised by the live path's own
functions (``peers._vllm_detail``): the point gets ``client.intervals``, the steady window, Little's law's L and the
held in-flight count, the figures staying vLLM's summary keys. ``request_goodput`` (``--goodput``) is kept as
``client.goodput``.

Mapping to a sweep point: ``request_rate`` ``"inf"`` with ``--max-concurrency C`` is the closed-loop point C
(``closed-cC``); a finite rate is the open-loop point at that rate (``open-r<rate>``, a concurrency cap noted);
``--metadata roofline_point=batch1`` (or a file named ``batch1*.json``) marks the batch-1 run. What vLLM does not
record is absent with the reason: the GPU, the engine version and server-side figures (no /metrics scrape),
unless ``--metadata roofline_hardware=… roofline_engine_version=…`` names them (and ``roofline_goodput=ttft:50,tpot:3``
the goodput SLOs) or a ``vllm serve`` log in the
directory gives the version and the KV-cache lines.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_roofline import bounded
from pytest_roofline.errors import BoundedInputError, ResultsError
from pytest_roofline.measure.results.file import ResultsData
from pytest_roofline.measure.results.peers._common import (
    closed_point_id,
    loads_json,
    number,
    open_point_id,
    peer_time,
    read_json_text,
    results_document,
)
from pytest_roofline.measure.results.peers._vllm_detail import (
    detail_client,
    detail_records,
    fixed_span_sent,
    sent_offsets,
)
from pytest_roofline.measure.stats.bursts import burst_flag, bursts_from_gaps, summary_burst_flag
from pytest_roofline.measure.stats.goodput import METHOD as GOODPUT_METHOD
from pytest_roofline.measure.stats.goodput import wilson
from pytest_roofline.measure.stats.held import held_flag
from pytest_roofline.quantities.measurement import BATCH1_ID, Distribution, PointMode, PointRecord

__all__ = ["FORMAT", "is_bench_serve", "read_bench_serve_file", "read_bench_dir", "bench_point", "near_miss"]

FORMAT = "vllm bench serve"

#: vLLM's metric name -> the project's distribution key
_METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}
#: metadata keys (``--metadata KEY=VALUE``) this reader understands
META_POINT, META_HARDWARE, META_ENGINE_VERSION = "roofline_point", "roofline_hardware", "roofline_engine_version"
#: ``--metadata roofline_goodput=ttft:50,tpot:3``: the --goodput SLOs, which vLLM does not write into the file
META_GOODPUT = "roofline_goodput"
#: how much of a ``vllm serve`` log is read: its startup (the version, the KV-cache lines) is at its head
MAX_LOG_BYTES = 64 * bounded.MIB


def is_bench_serve(doc: Any) -> bool:
    """A ``vllm bench serve`` result: an object with its run keys and its throughput totals."""
    return (isinstance(doc, dict) and "duration" in doc and "completed" in doc and "output_throughput" in doc
            and ("model_id" in doc or "request_rate" in doc))


def _distribution(doc: Mapping[str, Any], metric: str) -> Distribution | None:
    prefix_keys = {k: v for k, v in doc.items() if isinstance(k, str) and k.endswith(f"_{metric}_ms")}
    if not prefix_keys:
        return None
    dist: dict[str, Any] = {}
    for key, value in prefix_keys.items():
        stat = key[: -len(f"_{metric}_ms")]
        x = number(value)
        if stat == "mean":
            dist["mean"] = x
        elif stat == "median":
            dist["p50"] = x
        elif stat == "std":
            dist["std"] = x
        elif stat.startswith("p") and stat[1:].replace(".", "", 1).isdigit():
            dist[stat] = x  # p99, p90, p99.9: --metric-percentiles
    return cast(Distribution, dist) if dist else None


def _closed_concurrency(doc: Mapping[str, Any]) -> int | None:
    c = number(doc.get("max_concurrency"))
    return int(c) if c is not None and c == int(c) and c >= 1 else None


def _rate(doc: Mapping[str, Any]) -> float | None:
    r = doc.get("request_rate")
    if r in (None, "inf", "Infinity") or (isinstance(r, float) and r == float("inf")):
        return None
    x = number(r) if not isinstance(r, str) else number(_float_or_none(r))
    return x


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _check_counts(doc: Mapping[str, Any], completed: float, where: str) -> None:
    """A file whose counts cannot have been measured is refused, never scored (review case 9.34: ``completed``
    1e300 of ``num_prompts`` 10 with a negative ``duration`` gave TTFT and TPOT a measured PASS): counts are whole
    numbers >= 0, ``completed`` + ``failed`` at most ``num_prompts``, and ``duration`` above 0 seconds."""
    failed, prompts, duration = (number(doc.get(k)) for k in ("failed", "num_prompts", "duration"))
    for name, n in (("completed", completed), ("failed", failed), ("num_prompts", prompts)):
        if n is not None and (n < 0 or n != int(n)):
            raise ResultsError(f"{where}: \"{name}\" is {n:g}, not a count of requests; this file does not record "
                               "a measurement")
    if prompts is not None and completed + (failed or 0) > prompts:
        raise ResultsError(f"{where}: \"completed\" {completed:g} + \"failed\" {failed or 0:g} is more than the "
                           f"{prompts:g} requests of \"num_prompts\"; this file does not record a measurement")
    if duration is not None and not duration > 0:
        raise ResultsError(f"{where}: \"duration\" is {duration:g} s; a measurement takes some time")


def bench_point(doc: Mapping[str, Any], where: str, *, batch1: bool = False) -> PointRecord:
    """One ``vllm bench serve`` result as a sweep point (the mapping in the module's docstring)."""
    completed = number(doc.get("completed"))
    if completed is None:
        raise ResultsError(f"{where}: \"completed\" is not a number; not a vllm bench serve result")
    _check_counts(doc, completed, where)
    rate = _rate(doc)
    conc = _closed_concurrency(doc)
    flags: list[str] = []
    not_reported: dict[str, str] = {
        "server": "vllm bench serve does not scrape the engine's /metrics (no preemptions, queue, KV usage, "
                  "prefix-cache hits)",
        "per_request_output_tok_s": "vllm bench serve reports no per-request output rate without --save-detailed",
    }
    if rate is None:
        if conc is None:
            conc = int(number(doc.get("num_prompts")) or completed)
            flags.append("no --max-concurrency and no --request-rate: every request was sent at once (a burst), "
                         f"read as concurrency {conc}")
        mode, pid = PointMode.CLOSED, closed_point_id(conc)
    else:
        mode, pid = PointMode.OPEN, open_point_id(rate)
        if conc is not None:
            flags.append(f"open loop at {rate:g} req/s capped at --max-concurrency {conc}")
    if batch1:
        pid = BATCH1_ID
    n_in, n_out = number(doc.get("total_input_tokens")), number(doc.get("total_output_tokens"))
    input_len = int(round(n_in / completed)) if n_in is not None and completed else None
    output_len = int(round(n_out / completed)) if n_out is not None and completed else None
    client: dict[str, Any] = {
        "completed": int(completed),
        "failed": int(number(doc.get("failed")) or 0) if "failed" in doc else None,
        "output_throughput_tok_s": number(doc.get("output_throughput")),
        "total_throughput_tok_s": number(doc.get("total_token_throughput")),
        "request_throughput_req_s": number(doc.get("request_throughput")),
    }
    if "failed" not in doc:
        # an older file: the requests it sent (num_prompts) less those it completed failed; a point where some did
        # is not a measurement (quantities.measurement.point_failure), never a pass on what was left
        prompts = number(doc.get("num_prompts"))
        if prompts is not None and prompts > completed:
            client["failed"] = int(prompts - completed)
            flags.append(f"completed {int(completed)} of num_prompts {int(prompts)}: this vllm bench serve file "
                         "(before v0.12) records no failed count, so the other "
                         f"{int(prompts - completed)} are counted as failed")
        else:
            not_reported["failed"] = "vllm bench serve before v0.12 does not report failed requests"
    for metric, key in _METRICS.items():
        dist = _distribution(doc, metric)
        if dist is not None:
            client[key] = dist
        else:
            not_reported[key] = (f"not in the file: vllm bench serve reports {metric} only when "
                                 f"--percentile-metrics includes it")
    per_req = _per_request_rate(doc, mode, conc, client["output_throughput_tok_s"])
    if per_req is not None:
        client["per_request_output_tok_s"] = per_req
        not_reported.pop("per_request_output_tok_s")
    records, no_detail = detail_records(doc)
    detail = None
    if records is not None:
        detail, no_detail = detail_client(doc, records, concurrency=conc if mode == PointMode.CLOSED else None,
                                          rate_req_s=rate, completed=int(completed))
    if detail is not None:
        # --save-detailed: the live path's statistics over the rebuilt requests (peers._vllm_detail); the figures
        # stay vLLM's summary keys, the intervals, L and the in-flight counts come from the per-request arrays
        client.update(detail)
        for key in ("mean_in_flight", "littles_law"):
            not_reported.pop(key, None)
        held = held_flag(client, conc if mode == PointMode.CLOSED else None, None, int(completed))
        if held:
            flags.append(held)
    else:
        _summary_littles_law(doc, client, not_reported, mode, conc, no_detail)
    goodput = number(doc.get("request_goodput"))
    if goodput is not None:
        # vLLM's own goodput (requests meeting every --goodput SLO ÷ duration); the file does not record the SLOs
        client["goodput"] = {**_goodput_counts(goodput, number(doc.get("duration")), int(completed),
                                               client.get("request_throughput_req_s")),
                             "req_s": goodput, "source": "vllm bench serve request_goodput",
                             "slo_ms": _goodput_slo(doc),
                             "slo_note": "vllm bench serve does not write its --goodput SLOs into the file"
                             + (f"; --metadata {META_GOODPUT} says {doc[META_GOODPUT]}"
                                if doc.get(META_GOODPUT) else f" (add --metadata {META_GOODPUT}=ttft:…,tpot:… "
                                "to keep them)")}
    else:
        not_reported["goodput"] = ("vllm bench serve writes request_goodput only when --goodput gives its SLOs"
                                   if "request_goodput" in doc else
                                   "this vllm bench serve file has no request_goodput")
    # bursts from the per-chunk data (--save-detailed: itls per request, seconds), by this project's rule
    itls, lens, errs = doc.get("itls"), doc.get("output_lens"), doc.get("errors")
    if isinstance(errs, list) and any(errs):  # what vLLM's client wrote for each failed request, counted
        counts = Counter(str(e).strip().splitlines()[0][:200] for e in errs if e and str(e).strip())
        client["failure_reasons"] = [[why, n] for why, n in counts.most_common(3)]
    if isinstance(itls, list) and isinstance(lens, list) and len(itls) == len(lens):
        errs = errs if isinstance(errs, list) and len(errs) == len(lens) else [None] * len(lens)
        replies = [([float(g) for g in gaps if number(g) is not None], int(n))
                   for gaps, n, err in zip(itls, lens, errs)
                   if not err and isinstance(gaps, list) and number(n) is not None]
        client["bursts"] = bursts_from_gaps(replies)
        flag = burst_flag(client["bursts"])
    else:  # no per-chunk data: what the summary proves (a TPOT or ITL p50 under 0.1 ms)
        flag = summary_burst_flag(tpot_p50_ms=number((client.get("tpot_ms") or {}).get("p50")),
                                  itl_p50_ms=number((client.get("itl_ms") or {}).get("p50")),
                                  output_tokens=n_out / completed if n_out is not None and completed else None,
                                  tool="vllm bench serve without --save-detailed")
    if flag:
        flags.append(flag)
    num_prompts = number(doc.get("num_prompts"))
    # an open loop's sends as the client made them (--save-detailed's start_times): the serving model simulates
    # them where it simulates this point (calibration), since the file does not say how its schedule spanned
    sent = sent_offsets(doc["start_times"]) if detail is not None and mode == PointMode.OPEN else None
    # how its sends spanned, where the file shows it (peers._vllm_detail.fixed_span_sent); else not said
    span = "fixed" if detail is not None and records and mode == PointMode.OPEN and fixed_span_sent(
        doc, records, rate) else None
    return cast(PointRecord, {
        "id": pid, "mode": mode, "concurrency": conc if mode == PointMode.CLOSED else None,
        "rate_req_s": rate, "burstiness": number(doc.get("burstiness")),
        **({"sent_offsets_s": sent} if sent is not None else {}),
        **({"arrival_span": span} if span is not None else {}),
        "input_len": input_len, "output_len": output_len,
        "num_requests": int(num_prompts) if num_prompts is not None else None,
        # vllm bench serve stamps ``date`` when it saves the file, after the run: when the point finished
        "duration_s": number(doc.get("duration")), "started_at": None, "finished_at": peer_time(doc.get("date")),
        "client": client, "server": None, "contaminated": None, "flags": flags, "requests_file": None,
        "loadgen": None, "not_reported": not_reported, "source_file": where,
    })


def _goodput_counts(goodput: float, duration: float | None, completed: int,
                    req_s: float | None) -> dict[str, Any]:
    """``good`` (vLLM's good requests: request_goodput × duration, a whole number), ``completed`` and the interval
    of ``client.goodput`` (measure.stats.goodput: the good share's Wilson score interval × request throughput)."""
    if duration is None or not completed:
        return {"good": None, "completed": completed, "interval": None}
    good = min(completed, max(0, round(goodput * duration)))
    interval = None
    if req_s is not None:
        lo, hi = wilson(good, completed)
        interval = {"lo": req_s * lo, "hi": req_s * hi, "level": 0.95, "method": GOODPUT_METHOD, "n": completed}
    return {"good": good, "completed": completed, "interval": interval}


def _goodput_slo(doc: Mapping[str, Any]) -> dict[str, float] | None:
    """The SLOs of ``--metadata roofline_goodput=ttft:50,tpot:3`` (ms, vLLM's --goodput keys), else None."""
    text = doc.get(META_GOODPUT)
    if not isinstance(text, str):
        return None
    slo: dict[str, float] = {}
    for part in text.replace(",", " ").split():
        key, _, val = part.partition(":")
        x = _float_or_none(val)
        if key.strip() in ("ttft", "tpot", "e2el") and x is not None and math.isfinite(x):
            slo[f"{key.strip()}_ms"] = x
    return slo or None


def _summary_littles_law(doc: Mapping[str, Any], client: dict[str, Any], not_reported: dict[str, str], mode: str,
                         conc: int | None, no_detail: str) -> None:
    """Little's law from the summary keys alone (no per-request arrays): λ·W kept beside the configured C, L not
    measured."""
    e2e = client.get("e2e_ms") or {}
    mean_e2e_ms = number(e2e.get("mean"))
    w_s = mean_e2e_ms / 1e3 if mean_e2e_ms is not None else None
    lat = doc.get("latencies")
    if w_s is None and isinstance(lat, list) and lat and all(number(x) is not None for x in lat):
        w_s = statistics.fmean(float(x) for x in lat)  # seconds, one per request (kept since v0.30)
    lam = client["request_throughput_req_s"]
    not_reported["mean_in_flight"] = f"vllm bench serve's summary records no count of requests in flight: {no_detail}"
    if mode == PointMode.CLOSED and w_s is not None and lam is not None:
        # λ·W is kept (the clients' busy share, λ·W ÷ C, is worth showing) but L, the time-averaged count in
        # flight, is not in the summary: its max_concurrency is the configured number of clients, and a closed loop
        # drains at its end, so λ·W ÷ C < 1 on a healthy server. Little's law is not checked (a skip, never a FAIL).
        client["littles_law"] = {
            "L": None, "L_configured": float(conc) if conc else None, "lambda_req_s": lam, "W_s": w_s,
            "lambda_W": lam * w_s, "ratio": None,
            "not_checked": "vllm bench serve records the configured --max-concurrency, not the time-averaged "
                           "number of requests in flight (that needs --save-detailed's start_times and "
                           f"latencies: {no_detail}), so Little's law cannot be checked on its file"}
    else:
        not_reported["littles_law"] = ("needs the mean end-to-end latency (--percentile-metrics …,e2el) and a "
                                       "closed loop (--max-concurrency), or --save-detailed's start_times and "
                                       f"latencies ({no_detail})" if mode == PointMode.CLOSED else
                                       "an open-loop summary records no count of requests in flight; "
                                       f"--save-detailed's start_times and latencies give it ({no_detail})")


def _per_request_rate(doc: Mapping[str, Any], mode: str, conc: int | None,
                      output_tok_s: float | None) -> Distribution | None:
    """Per-request output tokens/s: exact from ``--save-detailed`` (``output_lens`` ÷ ``latencies``, per request),
    else in a closed loop the output throughput shared by the clients (output tok/s ÷ C, what the Day 3 notebook's
    "per-req tok/s" column is: 2,504.6 ÷ 64 = 39.1), marked as such."""
    lens, lats = doc.get("output_lens"), doc.get("latencies")
    if isinstance(lens, list) and isinstance(lats, list) and lens and len(lens) == len(lats):
        rates = [float(n) / float(t) for n, t in zip(lens, lats)
                 if number(n) is not None and number(t) and float(t) > 0 and float(n) > 0]
        if rates:
            rates.sort()
            return cast(Distribution, {"mean": statistics.fmean(rates), "p50": statistics.median(rates),
                                       "count": float(len(rates))})
    if mode == PointMode.CLOSED and conc and output_tok_s is not None:
        return cast(Distribution, {"mean": output_tok_s / conc,
                                   "estimated_from": "output throughput ÷ concurrency (no --save-detailed)"})
    return None


def _is_batch1(doc: Mapping[str, Any], path: Path) -> bool:
    return str(doc.get(META_POINT, "")).strip() == BATCH1_ID or path.name.startswith(BATCH1_ID)


def _docs_of(path: Path) -> list[dict[str, Any]]:
    """The results in one file: one JSON object, or several (``--append-result`` writes one per line); read
    through :mod:`pytest_roofline.bounded` (size, UTF-8 and nesting bounds; a JSON line's error names its line)."""
    text = read_json_text(path)
    try:
        doc = loads_json(text, path)
    except json.JSONDecodeError:
        docs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                docs.append(loads_json(line, path, line=n))
            except json.JSONDecodeError as exc:
                raise ResultsError(bounded.json_syntax_error(exc, str(path), line=n)) from None
        return [d for d in docs if isinstance(d, dict)]
    if isinstance(doc, list):  # sweep summary.json: the runs of one point
        return [d for d in doc if isinstance(d, dict)]
    return [doc] if isinstance(doc, dict) else []


def _setup(docs: Sequence[Mapping[str, Any]], engine_version: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    models = sorted({str(d.get("model_id")) for d in docs if d.get("model_id")})
    hw = sorted({str(d.get(META_HARDWARE)) for d in docs if d.get(META_HARDWARE)})
    versions = sorted({str(d.get(META_ENGINE_VERSION)) for d in docs if d.get(META_ENGINE_VERSION)})
    version = versions[0] if len(versions) == 1 else engine_version
    unchecked: dict[str, str] = {}
    if not hw:
        unchecked["hardware"] = ("vllm bench serve does not record the GPU (add --metadata "
                                 f"{META_HARDWARE}=<catalog id> to say it)")
    if version is None:
        unchecked["engine_version"] = ("vllm bench serve does not record the server's vLLM version (add --metadata "
                                       f"{META_ENGINE_VERSION}=X.Y.Z, or put the vllm serve log in the folder)")
    inputs = {p for d in docs if (p := _avg(d, "total_input_tokens")) is not None}
    outputs = {p for d in docs if (p := _avg(d, "total_output_tokens")) is not None}
    workload: dict[str, Any] = {}
    if len(inputs) == 1:
        workload["input_len"] = inputs.pop()
    if len(outputs) == 1:
        workload["output_len"] = outputs.pop()
    setup = {
        "hardware": {"declared": hw[0] if len(hw) == 1 else None, "detected": None},
        "model": {"name": models[0] if len(models) == 1 else (", ".join(models) or None),
                  "path": models[0] if len(models) == 1 else None},
        "engine": {"name": "vllm", "version": version, "notes": "imported from vllm bench serve results"},
        "workload": workload,
    }
    return setup, unchecked


def _avg(doc: Mapping[str, Any], key: str) -> int | None:
    n, c = number(doc.get(key)), number(doc.get("completed"))
    return int(round(n / c)) if n is not None and c else None


def read_bench_serve_file(path: Path) -> ResultsData:
    """One ``--save-result`` file (or an ``--append-result`` file of several runs)."""
    return _document([(path, d) for d in _docs_of(path) if is_bench_serve(d)], str(path), engine_log=None)


def read_bench_dir(path: Path) -> ResultsData:
    """A folder of ``--save-result`` files (``sweep_c1.json`` … ``sweep_c128.json``) or a ``vllm bench sweep
    serve`` output folder, with an optional ``vllm serve`` log (``*.log``) for the version and the KV cache."""
    found: list[tuple[Path, dict[str, Any]]] = []
    sweep_runs: dict[Path, list[tuple[Path, dict[str, Any]]]] = {}
    for f in sorted(path.rglob("*.json")):
        if f.name in ("summary.json", "warmup.json") or f.name.endswith(".failure.json"):
            continue  # summary.json repeats the run=<n>.json files; warm-up and failures are not measurements
        for d in _docs_of(f):
            if not is_bench_serve(d):
                continue
            if f.name.startswith("run=") and "run_number" in d:
                sweep_runs.setdefault(f.parent, []).append((f, d))
            else:
                found.append((f, d))
    for folder, runs in sorted(sweep_runs.items()):
        runs.sort(key=lambda r: number(r[1].get("output_throughput")) or 0.0)
        f, d = runs[(len(runs) - 1) // 2]  # the median run (the lower middle one of an even count)
        others = ", ".join(f"{g.name}: {number(e.get('output_throughput')) or 0:,.1f} tok/s"
                           for g, e in runs if g is not f)
        d = {**d, "_merged_note": f"median of {len(runs)} runs of {folder.name} by output throughput ({f.name})"
             + (f"; the others: {others}" if others else "")}
        found.append((f, d))
    if not found:
        raise ResultsError(f"{path}: no vllm bench serve results (*.json with duration, completed, "
                           "output_throughput) in this folder")
    logs = sorted(path.glob("*.log"))
    return _document(found, str(path), engine_log=logs[0] if logs else None)


def _document(found: Sequence[tuple[Path, dict[str, Any]]], where: str, *, engine_log: Path | None) -> ResultsData:
    if not found:
        raise ResultsError(f"{where}: not a vllm bench serve result (expected duration, completed, "
                           "output_throughput, model_id)")
    points = []
    for f, d in found:
        pt = bench_point(d, str(f), batch1=_is_batch1(d, f))
        if d.get("_merged_note"):
            pt["flags"] = [*pt.get("flags", []), str(d["_merged_note"])]
        points.append(pt)
    points.sort(key=lambda p: (p.get("id") != BATCH1_ID, p.get("mode") != PointMode.CLOSED, p.get("concurrency") or 0,
                               p.get("rate_req_s") or 0.0))
    report, version = _engine_report(engine_log) if engine_log else (None, None)
    # the workload is the sweep's, not the batch-1 run's (the Day 3 batch-1 run generated 1,000 tokens, not 1,024)
    setup, unchecked = _setup([d for f, d in found if not _is_batch1(d, f)], version)
    if report is None:
        unchecked["engine_report"] = ("no vllm serve log in the folder: KV-cache figures (num_gpu_blocks, "
                                      "kv_cache_tokens) are not in vllm bench serve files")
    note = (f"imported from {len(found)} vllm bench serve result(s)"
            + (f" and the engine log {engine_log.name}" if engine_log else ""))
    return results_document(source=FORMAT, where=where, points=points, setup=setup, engine_report=report,
                            notes=note, unchecked=unchecked)


def _engine_report(log_path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The engine's report on itself from a ``vllm serve`` log (the parser the live engine uses)."""
    from pytest_roofline.measure.engine._report import build_report
    from pytest_roofline.measure.engine.startup_log import parse_startup_log

    try:  # a FIFO or a device named *.log is refused before it is opened; a long log is read up to its startup
        bounded.check_file(log_path, max_bytes=1 << 62, what="the vllm serve log")
        with open(log_path, "rb") as fh:
            text = fh.read(MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except BoundedInputError as exc:
        raise ResultsError(str(exc)) from None
    except OSError as exc:
        raise ResultsError(f"{log_path}: cannot be read ({exc.strerror})") from None
    log = parse_startup_log(text)
    version = log.get("version")
    report = build_report(log=log, log_reason=None, metrics=None, metrics_reason="a vllm bench serve import has no "
                          "/metrics scrape", version=version, version_source="log" if version else None,
                          max_model_len=None)
    report["mode"] = "imported"
    # the live rule, in build_report: blocks from cache_config_info, else a block line in the log. vLLM 0.32's log
    # prints tokens only, and tokens ÷ the block size is not derived: the block size is in cache_config_info (not in
    # the log), and the prediction's would make the measured figure follow the ink. Say that, not "no log".
    tokens = report.get("kv_cache_tokens")
    if report.get("num_gpu_blocks") is None and tokens is not None:
        report["reasons"]["num_gpu_blocks"] = (
            f"the log gives {tokens:,} KV tokens but no block count; the block size that converts them is in "
            "/metrics' cache_config_info, which a vllm bench serve folder lacks")
    cc = report.get("cross_check") or {}
    if cc.get("ok") is None and not cc.get("checks"):
        report["cross_check"] = {**cc, "detail": "nothing to compare: the log's KV figures are checked against "
                                 "/metrics' vllm:cache_config_info, and a vllm bench serve folder keeps no /metrics "
                                 "scrape"}
    return report, version


def load(path: Path) -> ResultsData:
    return read_bench_dir(path) if path.is_dir() else read_bench_serve_file(path)


def sniff(path: Path) -> bool:
    """Whether ``path`` holds a vllm bench serve result (a file) — cheap, for format detection. An
    ``--append-result`` file whose first line is a result is one, even when a later line is broken (the reader
    then names that line)."""
    try:
        return any(is_bench_serve(d) for d in _docs_of(path))
    except ResultsError:
        pass
    try:
        text = read_json_text(path)
        first = next((line for line in text.splitlines() if line.strip()), "")
        return is_bench_serve(loads_json(first, path, line=1))
    except (ResultsError, ValueError):  # json.JSONDecodeError is a ValueError
        return False


def unreadable(path: Path) -> str | None:
    """Why the file ``path`` cannot be read as JSON (the reader's one-line error), or None when it can."""
    try:
        _docs_of(path)
    except ResultsError as exc:
        return str(exc)
    return None



#: the run keys every ``vllm bench serve --save-result`` file has written since v0.10 (``benchmarks/serve.py``)
_RUN_KEYS = ("date", "backend", "model_id", "num_prompts", "request_rate", "duration", "completed")
#: the keys :func:`is_bench_serve` needs
_NEEDED = ("duration", "completed", "output_throughput")


def near_miss(doc: Any, path: Path) -> str | None:
    """The one-line error for a file that is plainly a ``vllm bench serve`` result but lacks a key this reader
    needs (a newer vLLM renamed it, or the file was edited): it names the keys missing, where the generic "not a
    results file" named none (trial s25b #6); None for anything else."""
    if not isinstance(doc, dict) or is_bench_serve(doc):
        return None
    run = [k for k in _RUN_KEYS if k in doc]
    if len(run) < 3 or not any(isinstance(k, str) and k.endswith("_ttft_ms") for k in doc):
        return None
    missing = [k for k in (*_NEEDED, "model_id") if k not in doc and not (k == "model_id" and "request_rate" in doc)]
    return (f"{path}: looks like a vllm bench serve --save-result file (it has {', '.join(run)}) but has no "
            f"{', '.join(repr(k) for k in missing)}: a vLLM release whose keys this reader does not know (it reads "
            "the keys vllm bench serve has written since v0.10), or an edited file; rename the key back or save the "
            "result again with a vLLM in the supported range")
