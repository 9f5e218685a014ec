"""The KV cache: the pool vLLM allocates (``kv_accounting``: budget, blocks, tokens, max concurrency, each also
read from the engine's own report), the concurrency limits it sets (preemption, queueing), the scheduler caps,
and KV pool sizing for a given pool (lesson §11).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from pytest_roofline.errors import NotMeasured
from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup, SetupError, kv_accounting, reported_kv
from pytest_roofline.quantities.analysis import Thresholds, point_notes
from pytest_roofline.quantities.declare import batch_of, engine_report, fact, kv_seq, sweep_points
from pytest_roofline.quantities.measurement import (
    EngineReport,
    Measurement,
    client_number,
    concurrency,
    measured_number,
    point_id,
    server_number,
)
from pytest_roofline.quantities.quantity import (
    MeasuredValue,
    MeasureFn,
    ModelValue,
    Quantity,
    QuantityKind,
    QuantityPoints,
    ReplicaScaling,
    ServingFn,
)
from pytest_roofline.quantities.serving_values import ServingSweep
from pytest_roofline.units import GIB, format_value


def _kv_inputs(setup: Setup) -> dict[str, str]:
    acc = kv_accounting(setup)
    d = setup.describe()

    def gib(b: float | None) -> str:
        return format_value(b, "bytes", "GiB", digits=4)

    if setup.kv_cache_memory_bytes is not None:
        d["kv_pool"] = f"explicit {gib(setup.kv_cache_memory_bytes)} (kv_cache_memory_bytes / VLLM_CPU_KVCACHE_SPACE)"
    else:
        d["budget"] = f"{setup.gpu_memory_utilization:g} × {gib(setup.total_memory_bytes)} = {gib(acc.budget_bytes)}"
        d["weights"] = gib(acc.weight_bytes)
        d["activation_reserve"] = gib(acc.activation_bytes)
        if setup.activation_bytes is None and not (setup.model.hidden_size > 0 and setup.model.vocab_size > 0):
            d["activation_reserve"] += (" (no estimate: a nominal model without hidden_size/vocab_size; "
                                        "give engine.reserves.activation)")
        d["non_torch_reserve"] = gib(acc.non_torch_bytes)
        d["cuda_graph_reserve"] = gib(acc.cuda_graph_bytes)
    d["available_kv"] = gib(acc.available_kv_bytes)
    d["bytes_per_block"] = f"{setup.bytes_per_block:,.0f} B (block_size {setup.block_size})"
    return d


def _kv_q(name: str, dim: str, desc: str, fn: Callable[[an.KVAccounting, Setup, Mapping[str, Any]], Any],
          measure_key: str | None, at: tuple[str, ...] = (), measure_fn: MeasureFn | None = None,
          serving: ServingFn | None = None, replicas: ReplicaScaling | None = None) -> Quantity:
    def model(setup: Setup, at_: Mapping[str, Any]) -> ModelValue:
        acc = kv_accounting(setup)
        return ModelValue(fn(acc, setup, at_), _kv_inputs(setup),
                          "budget − weights − activation − non-torch − CUDA graphs, ÷ bytes per block")

    def measure(meas: Measurement, at_: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
        rep = cast(EngineReport, engine_report(meas))
        val = measured_number(rep.get(measure_key), f"engine_report.{measure_key}") if measure_key else None
        if val is None:
            why = (rep.get("reasons") or {}).get(measure_key or "")
            raise NotMeasured(f"the engine did not report {measure_key} "
                              f"({why if isinstance(why, str) and why else 'no startup log or cache_config_info'})")
        if measure_key == "available_kv_cache_gib":
            val = float(val) * GIB
        return MeasuredValue(val, ("engine",), tuple(_report_notes(rep)))

    return Quantity(name, dim, desc, at=at, model=model, measure=measure_fn or (measure if measure_key else None),
                    points=None, serving=serving, replicas=replicas)


def cross_check_status(rep: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The engine report's cross-check as ``(status, detail)``: "ok", "FAILED" (a comparison disagreed), or "not
    available" where nothing could be compared (``ok`` None: a replay has the log but no cache_config_info); None
    where the report has no cross-check. The scorecard's setup card and the KV verdicts' notes both read it."""
    cc = (rep or {}).get("cross_check") or {}
    if not isinstance(cc, Mapping) or not cc.get("detail"):
        return None
    ok = cc.get("ok")
    return ("not available" if ok is None else "ok" if ok else "FAILED"), str(cc["detail"])


def _report_notes(rep: EngineReport) -> list[str]:
    status = cross_check_status(rep)
    if status is None:
        return []
    word, detail = status
    return [("CROSS-CHECK FAILED" if word == "FAILED" else f"cross-check {word}") + f": {detail}"]


def _request_tokens(setup: Setup, at: Mapping[str, Any]) -> int:
    if "request_tokens" in at:
        return int(at["request_tokens"])
    if setup.max_model_len:
        return setup.max_model_len
    return setup.input_len + setup.output_len


def _max_conc_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    rep = engine_report(meas)

    def num(key: str) -> float | None:
        return measured_number(rep.get(key), f"engine_report.{key}")

    req = _request_tokens(setup, at)
    blocks, bs = num("num_gpu_blocks"), int(num("block_size") or setup.block_size)
    printed = num("max_concurrency")
    if printed is not None and rep.get("max_concurrency_tokens_per_request") == req:
        return MeasuredValue(printed, ("engine",), ("as printed in the startup log",))
    kv_tokens = num("kv_cache_tokens")
    if blocks is None and kv_tokens is not None:
        blocks = kv_tokens // bs
    if blocks is None:
        raise NotMeasured("the engine reported neither its block count nor its KV tokens")
    return MeasuredValue(blocks / math.ceil(req / bs), ("engine",),
                         (f"{blocks:,} blocks ÷ ceil({req:,} / {bs}) blocks per request",))


def _last_before_first_failure(rows: Sequence[tuple[float, bool]]) -> float:
    """The largest concurrency of ``(concurrency, ok)`` rows below which *every* swept point is ok: the one before
    the first (in ascending concurrency) that is not, or the largest when all are; 0 when the smallest is not.
    A point above a failing one never counts (a limit the engine "stays under" is monotone): a high point with a
    small or early-stopped sample, whose first finishers never queued, cannot lift the figure past the knee."""
    best: float = 0
    for c, ok in sorted(rows):
        if not ok:
            break
        best = c
    return best


def _lower_bound(rows: Sequence[tuple[float, bool]], best: float, what: str) -> dict[str, Any] | None:
    """The measured figure's interval when :func:`_last_before_first_failure` could only give a lower bound: no
    swept point failed, so the limit is ``best`` (the largest point measured) *or more*, and the point that would
    decide (the first above it) was never measured: the sweep planned none, or ended before it (interrupted).
    ``[best, +∞)``, certain (level 1): a prediction above ``best`` straddles it and the verdict is INCONCLUSIVE,
    never a FAIL on "measured 1 vs 8"; one whose band lies wholly below ``best`` still fails (the bound already
    exceeds the ink). None when some point failed: the figure is then the grid's exact answer."""
    if not rows or not all(ok for _, ok in rows):
        return None
    return {"estimate": best, "lo": best, "hi": None, "level": 1.0, "method": "lower bound", "n": len(rows),
            "note": f"a lower bound: no measured point up to C = {best:g} {what}, and none above it was measured; "
                    f"a point above C = {best:g} would decide"}


def _no_preempt_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = [p for p in sweep_points(meas) if server_number(p, "preemptions") is not None]
    if not pts:
        raise NotMeasured("no sweep point recorded the preemption counter (/metrics not scraped)")
    rows = [(concurrency(p), server_number(p, "preemptions") == 0) for p in pts]
    best = _last_before_first_failure(rows)
    bound = _lower_bound(rows, best, "preempted")
    return MeasuredValue(best, tuple(point_id(p) for p in pts),
                         ("largest swept concurrency with zero preemptions there and at every point below it "
                          "(a lower bound)", *([bound["note"]] if bound else []),
                          *[n for p in pts for n in point_notes(p, th)]), interval=bound)


def _admission_model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    acc = kv_accounting(setup)
    kv_seqs = math.floor(acc.kv_tokens / (setup.input_len + setup.output_len))
    limit = min(setup.max_num_seqs, kv_seqs)
    why = "max_num_seqs" if setup.max_num_seqs <= kv_seqs else "KV pool"
    return ModelValue(limit, {**_kv_inputs(setup), "max_num_seqs": str(setup.max_num_seqs),
                              "kv_sequences": f"{acc.kv_tokens:,} tokens ÷ {setup.input_len + setup.output_len:,} "
                                              f"= {kv_seqs:,}"},
                      f"min(max_num_seqs {setup.max_num_seqs}, KV sequences {kv_seqs:,}): the {why} binds")


def _admission_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    rows = []
    used = []
    for p in sweep_points(meas):
        q = server_number(p, "queue_ms", "mean")
        e2e = client_number(p, "e2e_ms", "mean")
        if q is not None and e2e:
            rows.append((concurrency(p), q, e2e, point_id(p)))
            used.append(p)
    if not rows:
        raise NotMeasured("needs vLLM's request_queue_time histogram on /metrics at closed-loop sweep points")
    oks = [(c, q <= th.queue_fraction * e2e) for c, q, e2e, _ in rows]
    best = _last_before_first_failure(oks)
    bound = _lower_bound(oks, best, "queued")
    detail = ", ".join(f"{c:g}: {q:,.1f} ms of {e2e:,.0f} ms" for c, q, e2e, _ in rows)
    return MeasuredValue(best, tuple(r[3] for r in rows),
                         (f"largest swept concurrency whose mean server-side queue time stays under "
                          f"{th.queue_fraction:.0%} of its mean E2E latency there and at every point below it (a "
                          f"lower bound on the engine's limit); "
                          f"queue/E2E: {detail}", *([bound["note"]] if bound else []),
                          *[n for p in used for n in point_notes(p, th)]), interval=bound)


def _serve_no_queue(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    rows = [(c, pp.mean_queue_ms, pp.e2e_mean_ms) for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("needs closed-loop sweep points")
    best = _last_before_first_failure([(c, q <= th.queue_fraction * e2e) for c, q, e2e in rows])
    detail = ", ".join(f"{c}: {q:,.1f} ms of {e2e:,.0f} ms" for c, q, e2e in rows)
    return ModelValue(int(best), sweep.inputs(),
                      f"serving model: largest swept concurrency whose mean queue time stays under "
                      f"{th.queue_fraction:.0%} of its mean E2E latency; queue/E2E: {detail}")


def _serve_no_preempt(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    rows = [(c, pp.preemptions) for c, pp in sweep.closed()]
    if not rows:
        raise SetupError("needs closed-loop sweep points")
    return ModelValue(int(_last_before_first_failure([(c, n == 0) for c, n in rows])), sweep.inputs(),
                      "serving model: largest swept concurrency with zero preemptions; preemptions: "
                      + ", ".join(f"{c}: {n:,}" for c, n in rows))


#: the family, in the registry's order
QUANTITIES: tuple[Quantity, ...] = (
    _kv_q("kv_budget_bytes", "bytes", "vLLM's memory budget: gpu_memory_utilization × total device memory",
          lambda acc, s, a: acc.budget_bytes, None),
    _kv_q("available_kv_bytes", "bytes", "the KV pool vLLM allocates (log: 'Available KV cache memory')",
          lambda acc, s, a: acc.available_kv_bytes, "available_kv_cache_gib"),
    _kv_q("num_gpu_blocks", "count", "KV-cache blocks vLLM allocates (log '# GPU blocks' / cache_config_info)",
          lambda acc, s, a: acc.num_blocks, "num_gpu_blocks"),
    _kv_q("kv_cache_tokens", "count", "tokens the KV pool holds (log 'KV cache size: N tokens')",
          lambda acc, s, a: reported_kv(s, acc).kv_cache_tokens, "kv_cache_tokens"),
    _kv_q("max_concurrency", "ratio", "requests of request_tokens that fit the KV pool at once, as vLLM prints it",
          lambda acc, s, a: reported_kv(s, acc, _request_tokens(s, a)).max_concurrency,
          None, at=("request_tokens",), measure_fn=_max_conc_measure),
    _kv_q("max_concurrency_without_preemption", "count", "requests of input+output tokens the KV pool holds before "
          "vLLM must preempt (model: KV tokens ÷ (input_len + output_len); measured: largest swept concurrency with "
          "zero preemptions)", lambda acc, s, a: math.floor(acc.kv_tokens / (s.input_len + s.output_len)), None,
          measure_fn=_no_preempt_measure, serving=_serve_no_preempt, replicas="sweep"),
    Quantity("max_concurrency_without_queueing", "count", "the most concurrent requests vLLM runs before "
             "new ones wait for a slot (the server-side knee). Model: min(max_num_seqs, KV sequences of "
             "input_len + output_len tokens). Measured: the largest swept concurrency whose mean "
             "vllm:request_queue_time stays under thresholds.queue_fraction of its mean E2E latency",
             model=_admission_model, measure=_admission_measure, points=QuantityPoints.ALL,
             serving=_serve_no_queue, replicas="sweep"),
    fact("max_num_seqs", "count", "vLLM's running-batch cap (default by version and GPU)", lambda s, a: s.max_num_seqs),
    fact("max_num_batched_tokens", "count", "vLLM's per-step token budget (default by version and GPU)",
         lambda s, a: s.max_num_batched_tokens),
    fact("kv_pool_sequences", "count", "whole sequences of the KV context that fit a pool",
         lambda s, a: an.kv_pool_sizing(float(a["pool"]), kv_seq(s, a), 1).max_sequences, at=("pool", "context"),
         required=("pool",)),
    fact("kv_required_bytes", "bytes", "KV bytes B sequences of the KV context need",
         lambda s, a: batch_of(s, a) * kv_seq(s, a), at=("batch", "concurrency", "context")),
    fact("kv_pool_fits", "ratio", "whether B sequences of the KV context fit a pool (true/false)",
         lambda s, a: an.kv_pool_sizing(float(a["pool"]), kv_seq(s, a), int(batch_of(s, a))).fits,
         at=("pool", "batch", "concurrency", "context"), kind=QuantityKind.BOOL, required=("pool",)),
    fact("kv_pool_shortfall", "bytes", "bytes by which B sequences exceed a pool (0 when they fit)",
         lambda s, a: an.kv_pool_sizing(float(a["pool"]), kv_seq(s, a), int(batch_of(s, a))).shortfall_bytes,
         at=("pool", "batch", "concurrency", "context"), required=("pool",)),
)
