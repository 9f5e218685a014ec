"""AIPerf's ``profile_export_aiperf.json`` (and GenAI-Perf's ``profile_export_genai_perf.json``, the same shape)
read as a results document: one file is one sweep point.

The format, from AIPerf's own export model (ai-dynamo/aiperf v0.13.0, https://github.com/ai-dynamo/aiperf,
``src/aiperf/common/models/export_models.py`` ``JsonExportData`` schema 1.4): top-level metrics by tag
(``request_throughput``, ``request_latency``, ``time_to_first_token``, ``inter_token_latency``,
``inter_chunk_latency``, ``output_token_throughput``, ``input_sequence_length``, ``output_sequence_length``,
``request_count``, ``error_request_count``, ``benchmark_duration``), each ``{"unit", "avg", "p50", "p90",
"p95", "p99", ...}`` in its display unit (``ms`` for latencies, ``sec`` for the duration), plus ``input_config``.

Units are converted from each metric's own ``unit`` (ns, us, ms, s). Definitions (AIPerf
``docs/metrics-reference.md``): AIPerf's ITL = (latency − TTFT) ÷ (OSL − 1), vLLM's TPOT, read as ``tpot_ms``;
its inter-chunk latency is vLLM's ITL, read as ``itl_ms``.

AIPerf's OSL is its own count of the streamed text re-tokenized (109.6 a request in the real recording, where the
server's ``usage`` said 64). Where the export has the server's count (``usage_completion_tokens``, v0.13) and it
differs, TPOT is made from the server's count as vllm bench serve makes it: ``decode_duration`` (AIPerf's
per-request latency − TTFT) ÷ (server tokens − 1). The export summarises requests, not each one, so this is exact
only when every request got the same server count (its ``min`` = ``max``); otherwise AIPerf's ITL stays, flagged.
The export holds no per-request chunk times: bursts are judged from its TPOT and ITL p50 (``measure.stats.bursts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

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

__all__ = ["FORMAT", "is_aiperf", "load", "aiperf_point", "RETOKENIZED"]

FORMAT = "AIPerf"
_TO_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "sec": 1e3, "seconds": 1e3}


def is_aiperf(doc: Any) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("time_to_first_token") or doc.get("request_latency"), dict)
            and ("aiperf_version" in doc or "input_config" in doc or "request_throughput" in doc))


def _metric(doc: Mapping[str, Any], tag: str) -> Mapping[str, Any] | None:
    m = doc.get(tag)
    return m if isinstance(m, dict) else None


def _ms_dist(doc: Mapping[str, Any], tag: str, where: str) -> Distribution | None:
    m = _metric(doc, tag)
    if m is None:
        return None
    unit = str(m.get("unit", "")).strip().lower()
    if unit not in _TO_MS:
        raise ResultsError(f"{where}: {tag} is in {unit!r}, not a time unit this reader converts (ns, us, ms, s)")
    k = _TO_MS[unit]
    out = {s: (number(m.get(src)) * k if number(m.get(src)) is not None else None)  # type: ignore[operator]
           for s, src in (("mean", "avg"), ("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"))}
    return cast(Distribution, out)


def _avg(doc: Mapping[str, Any], tag: str) -> float | None:
    m = _metric(doc, tag)
    return number(m.get("avg")) if m else None


def _seconds(doc: Mapping[str, Any], tag: str) -> float | None:
    m = _metric(doc, tag)
    if m is None or number(m.get("avg")) is None:
        return None
    unit = str(m.get("unit", "sec")).strip().lower()
    return float(number(m.get("avg")) or 0.0) * _TO_MS.get(unit, 1e3) / 1e3


def _loadgen(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The load: ``input_config.phases[kind=profiling]`` (``concurrency``, ``rate``) in v0.13, ``loadgen`` before."""
    cfg = doc.get("input_config") or {}
    for phase in cfg.get("phases") or []:
        if isinstance(phase, dict) and phase.get("kind", "profiling") == "profiling":
            return {"concurrency": phase.get("concurrency"),
                    "request_rate": phase.get("rate", phase.get("request_rate"))}
    return cfg.get("loadgen") or cfg.get("load") or {}


def _count(doc: Mapping[str, Any], tag: str) -> int | None:
    """A count metric (``request_count``) as an int; None when the export has none."""
    v = _avg(doc, tag)
    return int(v) if v is not None else None


def _server_tpot(doc: Mapping[str, Any], where: str) -> tuple[Distribution | None, str]:
    """TPOT by the server's output count, vllm bench serve's definition: each request's ``decode_duration``
    (latency − TTFT) ÷ (its server-counted tokens − 1). Exact from the summary when every request got the same
    count n (``usage_completion_tokens`` ``min`` = ``max``): dividing by n − 1 scales the mean and every percentile
    alike. Returns the distribution (None to keep AIPerf's ITL) and the words saying which it is."""
    own = _metric(doc, "inter_token_latency")
    own_mean = number(own.get("avg")) if own else None
    theirs = ("AIPerf's own inter_token_latency" + (f", {own_mean:.5g} ms mean," if own_mean is not None else "")
              + " divides by its re-tokenized count")
    usage = _metric(doc, "usage_completion_tokens") or {}
    lo, hi = number(usage.get("min")), number(usage.get("max"))
    decode = _ms_dist(doc, "decode_duration", where)
    if lo is None or hi is None or lo != hi or lo < 2 or decode is None or number(decode.get("mean")) is None:
        why = ("the server's count varied between requests (usage_completion_tokens "
               f"{lo:g}–{hi:g})" if lo is not None and hi is not None and lo != hi else
               "the export has no decode_duration" if decode is None else
               "the export does not say that every request got the same server count")
        return None, (f"but TPOT is AIPerf's inter_token_latency, divided by its re-tokenized count: {why}, so the "
                      "summary cannot give TPOT by the server's count (the TPOT figure here is AIPerf's)")
    k = 1.0 / (lo - 1)
    out = {s: (x * k if (x := number(decode.get(s))) is not None else None)
           for s in ("mean", "p50", "p90", "p95", "p99")}
    return cast(Distribution, out), (f"and TPOT = decode_duration (latency − TTFT) ÷ ({lo:g} − 1) per request "
                                     f"({theirs})")


def aiperf_point(doc: Mapping[str, Any], where: str) -> PointRecord:
    lg = _loadgen(doc)
    conc, rate = number(lg.get("concurrency")), number(lg.get("request_rate"))
    if rate:
        mode, pid = PointMode.OPEN, open_point_id(rate)
    elif conc:
        mode, pid = PointMode.CLOSED, closed_point_id(int(conc))
    else:
        raise ResultsError(f"{where}: input_config names neither a concurrency nor a request rate")
    lam = _avg(doc, "request_throughput")
    e2e = _ms_dist(doc, "request_latency", where)
    client: dict[str, Any] = {
        "completed": _count(doc, "request_count"),  # 0 stays 0: no request completed, nothing was measured
        "failed": int(_avg(doc, "error_request_count") or 0),
        "output_throughput_tok_s": _avg(doc, "output_token_throughput"),
        "total_throughput_tok_s": _avg(doc, "total_token_throughput"),
        "request_throughput_req_s": lam,
        "ttft_ms": _ms_dist(doc, "time_to_first_token", where),
        "tpot_ms": _ms_dist(doc, "inter_token_latency", where),  # AIPerf's ITL is vLLM's TPOT (docstring)
        "itl_ms": _ms_dist(doc, "inter_chunk_latency", where),
        "e2e_ms": e2e,
    }
    not_reported = {"server": "the AIPerf profile export holds no engine /metrics deltas (AIPerf writes them to "
                              "server_metrics_export.jsonl)"}
    w_ms = number((e2e or {}).get("mean"))
    # v0.13's effective_concurrency is the time-averaged count in flight, but it equals request_throughput × mean
    # request_latency to 1e-7 in a real export (tests/data/peers/aiperf-cpu-tiny): it is λ·W itself, so it cannot
    # check Little's law; L is the configured --concurrency, as for vllm bench serve
    eff = _avg(doc, "effective_concurrency")
    if eff is not None:
        client["mean_in_flight"] = eff
    if mode == PointMode.CLOSED and conc and lam is not None and w_ms is not None:
        client["littles_law"] = {"L": None, "L_configured": float(conc), "lambda_req_s": lam, "W_s": w_ms / 1e3,
                                 "lambda_W": lam * w_ms / 1e3, "ratio": None,
                                 "not_checked": "AIPerf records its configured --concurrency, and its "
                                                "effective_concurrency is λ·W itself, so Little's law cannot be "
                                                "checked on its export"}
    else:
        not_reported["littles_law"] = "needs a closed loop, request_throughput and request_latency"
    isl, osl = _avg(doc, "input_sequence_length"), _avg(doc, "output_sequence_length")
    flags: list[str] = []
    # AIPerf counts ISL/OSL (and so output_token_throughput) by re-tokenizing the text client-side; the server's
    # own count (usage_*_tokens, v0.13) is what the engine generated, as vllm bench serve counts
    u_in, u_out = _avg(doc, "usage_prompt_tokens"), _avg(doc, "usage_completion_tokens")
    total_u_out, dur = _avg(doc, "total_usage_completion_tokens"), _seconds(doc, "benchmark_duration")
    if u_out is not None and osl is not None and abs(u_out - osl) > 0.5:
        tpot, how = _server_tpot(doc, where)
        if tpot is not None:
            client["tpot_ms"] = tpot
        flags.append(f"AIPerf counted {osl:g} output tokens per request by re-tokenizing the text, the server "
                     f"{u_out:g} (usage); the server's count is used for the output length and throughput, " + how)
    # AIPerf divides its three throughputs by one window, request_count ÷ request_throughput (4.3476 s in the real
    # export, where benchmark_duration says 4.337 s): the server's counts are divided by that same window, so the
    # point's request, output and total throughputs agree with one another and with AIPerf's own duration
    n_req = client["completed"]
    window = n_req / lam if n_req and lam else dur
    total_u_in = _avg(doc, "total_usage_prompt_tokens")
    if total_u_out is not None and window:
        own = client["output_throughput_tok_s"]
        client["output_throughput_tok_s"] = total_u_out / window
        if own is not None and abs(own - total_u_out / window) > 0.005 * own:
            flags.append(f"output throughput = server-counted tokens ÷ AIPerf's window (request_count ÷ "
                         f"request_throughput, {window:.4g} s) = {total_u_out / window:,.1f} tok/s (AIPerf's own "
                         f"output_token_throughput, {own:,.1f}, counts re-tokenized text)")
        if total_u_in is not None:
            own_total = client["total_throughput_tok_s"]
            client["total_throughput_tok_s"] = (total_u_in + total_u_out) / window
            if own_total is not None and abs(own_total - client["total_throughput_tok_s"]) > 0.005 * own_total:
                flags.append(f"total throughput = server-counted prompt + output tokens ÷ the same window = "
                             f"{client['total_throughput_tok_s']:,.1f} tok/s (AIPerf's own total_token_throughput, "
                             f"{own_total:,.1f}, counts re-tokenized output)")
    if u_out is None and osl is not None:  # trial s25b #12: 1,008 tok/s scored where the server made ~590
        flags.append(RETOKENIZED)
    isl = u_in if u_in is not None else isl
    osl = u_out if u_out is not None else osl
    # the export holds no per-request chunk times: bursts are judged from its summary (measure.stats.bursts)
    burst = summary_burst_flag(tpot_p50_ms=number((client.get("tpot_ms") or {}).get("p50")),
                               itl_p50_ms=number((client.get("itl_ms") or {}).get("p50")), output_tokens=osl,
                               tool="AIPerf's profile export")
    if burst:
        flags.append(burst)
    return cast(PointRecord, {
        "id": pid, "mode": mode, "concurrency": int(conc) if mode == PointMode.CLOSED and conc else None,
        "rate_req_s": rate if mode == PointMode.OPEN else None,
        "input_len": int(round(isl)) if isl is not None else None,
        "output_len": int(round(osl)) if osl is not None else None,
        "num_requests": client["completed"], "duration_s": _seconds(doc, "benchmark_duration"),
        "started_at": peer_time(doc.get("start_time")), "finished_at": peer_time(doc.get("end_time")),
        "client": client, "server": None, "contaminated": None, "flags": flags, "requests_file": None,
        "loadgen": None,
        "not_reported": not_reported, "source_file": where,
    })


#: the flag of a point whose export has no server token counts: every token figure is AIPerf's own re-tokenizing
RETOKENIZED = ("this export has no server token counts (usage_completion_tokens, which AIPerf writes where the "
               "server returns usage): output lengths, the output and total throughputs and TPOT are AIPerf's own, "
               "from the streamed text re-tokenized by the client, where vllm bench serve counts the tokens the server "
               "generated (they agree only where the text re-tokenizes to those tokens: 109.6 a request for the 64 "
               "the CPU engine made in our recording); rerun AIPerf with the server's usage to score vLLM's figures")


def load(path: Path) -> ResultsData:
    doc = load_json(path)
    if not is_aiperf(doc):
        raise ResultsError(f"{path}: not an AIPerf/GenAI-Perf profile export")
    pt = aiperf_point(doc, str(path))
    cfg = doc.get("input_config") or {}
    names = ((cfg.get("endpoint") or {}).get("model_names") or cfg.get("model_names")
             or [m.get("name") for m in (cfg.get("models") or {}).get("items") or [] if isinstance(m, dict)])
    model = str(names[0]) if isinstance(names, list) and len(names) == 1 else None
    setup = {"hardware": {"declared": None, "detected": None}, "model": {"name": model, "path": None},
             "engine": {"name": None, "version": None, "notes": "imported from an AIPerf profile export"},
             "workload": {**{k: pt.get(k) for k in ("input_len", "output_len") if pt.get(k) is not None},
                          **({"lengths_counted_by": "AIPerf, re-tokenizing the streamed text (the export has no "
                                                    "server usage counts)"}
                             if RETOKENIZED in (pt.get("flags") or []) else {})}}
    unchecked = {"hardware": "the profile export records no GPU (only --gpu-telemetry does, elsewhere)",
                 "engine_version": "the profile export records no server version",
                 "engine_report": "the profile export records no KV-cache figures"}
    if model is None:
        unchecked["model"] = "input_config names no single model"
    return results_document(source=FORMAT, where=str(path), points=[pt], setup=setup, unchecked=unchecked,
                            notes=f"imported from AIPerf {doc.get('aiperf_version') or ''}".strip())
