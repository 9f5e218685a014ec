"""Where decode stops being memory-bound, and the batch-1 end of the roofline: the throughput knee (the
roofline's B*, the measured doubling rule, the serving model's), the naive weight-only knee, the batch-1 ceiling
and throughput, and the prefill floor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_roofline.errors import NotMeasured
from pytest_roofline.model import analytical as an
from pytest_roofline.model.setup import Setup, SetupError, kv_accounting
from pytest_roofline.quantities.analysis import Thresholds, is_flattered, point_notes, throughput_knee
from pytest_roofline.quantities.declare import (
    checked,
    client_interval,
    decode_step,
    fact,
    flop_gpu,
    roofline_inputs,
    sim_explanation,
    sweep_points,
    weights_gpu,
)
from pytest_roofline.quantities.measurement import (
    BATCH1_ID,
    Measurement,
    PointRecord,
    client_number,
    concurrency,
    point_id,
)
from pytest_roofline.quantities.quantity import MeasuredValue, ModelValue, Quantity, QuantityKind, QuantityPoints
from pytest_roofline.quantities.serving_values import ServingSweep


def _knee_model(setup: Setup, at: Mapping[str, Any]) -> ModelValue:
    k = setup.roofline_knee(at.get("context"))
    inputs = dict(roofline_inputs(setup, at))
    if k.batch is not None:
        beyond = _beyond_what_runs(setup, float(k.batch), at.get("context"))
        if beyond:
            # vLLM never runs that batch: the throughput flattens where the cap stops the batch growing, which the
            # roofline does not place (trial s26b #10: ink `none` failed against a knee of 1,404.3 at TP 4, past
            # max_num_seqs 1,024 and the 369 sequences the KV pool holds; `roofline predict` said so, the check
            # not). The arithmetic is still the value ink written from it is checked against; other ink is not
            # failed on it (scoring reads this input)
            inputs[UNREACHABLE_INPUT] = (f"the roofline's knee, B = {k.batch:,.1f}, lies {beyond}: vLLM never runs "
                                         "that batch, so where the throughput flattens is set by that cap, which "
                                         "the roofline does not place")
    return ModelValue(k.batch, inputs, k.reason)


#: the model input that says a roofline value lies where vLLM never runs (the knee past its caps): ink that is not
#: that arithmetic is not failed on it
UNREACHABLE_INPUT = "unreachable"


def _beyond_what_runs(setup: Setup, batch: float, context: Any) -> str:
    """Why vLLM cannot run ``batch`` sequences of the KV ``context`` at once: past ``max_num_seqs``, past the
    sequences the KV pool holds (whole blocks each); "" where it can, or where the pool cannot be worked out."""
    why = []
    if batch > setup.max_num_seqs:
        why.append(f"beyond max_num_seqs {setup.max_num_seqs:,}")
    try:
        ctx = float(context if context is not None else setup.kv_context_tokens)
        blocks = kv_accounting(setup).num_blocks
        per_seq = max(1, -(-int(ctx) // int(setup.block_size)))
        held = max(0, blocks - 1) // per_seq  # less vLLM's null block
        if batch > held:
            why.append(f"beyond the {held:,} sequences of {ctx:,.0f} tokens the KV pool holds")
    except (SetupError, ValueError, ZeroDivisionError, TypeError):
        pass
    return " and ".join(why)


def _knee_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pts = sweep_points(meas)

    def tput(p: PointRecord) -> float | None:  # the steady-window figure where the run recorded it
        return client_number(p, "steady_output_throughput_tok_s") or client_number(p, "output_throughput_tok_s")

    usable = [(float(c), x) for c, x in ((concurrency(p), tput(p)) for p in pts) if x]
    if len(usable) < 2:
        raise NotMeasured("the throughput knee needs at least two closed-loop sweep points")
    knee = throughput_knee(usable, th.knee_gain)
    gains = ", ".join(f"{c2:g}: {x2 / x1 - 1:+.0%}" for (c1, x1), (c2, x2) in zip(usable, usable[1:]))
    note = (f"knee = smallest concurrency whose doubling adds < {th.knee_gain:.0%} throughput; gains: {gains}")
    contaminated = any(is_flattered(p, th, setup) for p in pts)
    top = usable[-1][0]
    if knee is None:  # no doubling added < the gain among these points: the last one's doubling was never run
        note += f"; none up to C = {top:g}: a knee at C = {top:g} or above is not measured"
    return MeasuredValue(knee, tuple(point_id(p) for p in pts),
                         (note, *[n for p in pts for n in point_notes(p, th, setup)]), contaminated,
                         unknown_from=top if knee is None else None)


def _batch1_ceiling(setup: Setup) -> float:
    """Bandwidth ÷ weight bytes, one GPU's share under TP (the all-reduces are left out: the weight read alone)."""
    return setup.roofline_landmarks().batch1_ceiling_tok_per_s


def _batch1_point(meas: Measurement) -> PointRecord:
    for p in meas.points():
        if p.get("id") == BATCH1_ID:
            return checked(p)
    return checked(meas.point(concurrency=1))


def _batch1_measure(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    pt = _batch1_point(meas)
    x = client_number(pt, "output_throughput_tok_s")
    if x is None:
        raise NotMeasured(f"point {pt.get('id')} has no output throughput")
    # the point's throughput interval, as output_throughput at C = 1 carries it: the same figure got PASS here and
    # INCONCLUSIVE there (trial s25c #6: 414.93 tok/s, interval [378.84, 451.02], against 300 ±40%)
    return MeasuredValue(x, (point_id(pt),), tuple(point_notes(pt, th, setup)), is_flattered(pt, th, setup),
                         client_interval(pt, ("output_throughput_tok_s",), 1.0))


def _batch1_fraction(meas: Measurement, at: Mapping[str, Any], setup: Setup, th: Thresholds) -> MeasuredValue:
    mv = _batch1_measure(meas, at, setup, th)
    ceiling = _batch1_ceiling(setup)
    iv = None if mv.interval is None else {
        **mv.interval, **{k: float(mv.interval[k]) / ceiling for k in ("estimate", "lo", "hi")
                          if mv.interval.get(k) is not None}}
    return MeasuredValue(mv.value / ceiling, mv.points,
                         (f"{mv.value:,.1f} tok/s ÷ ceiling {ceiling:,.1f} tok/s", *mv.notes), mv.contaminated, iv)


def _serve_knee(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    if "context" in at:
        raise SetupError("at: {context: ...} is a decode-roofline parameter")
    rows = [(float(c), pp.output_throughput_tok_per_s) for c, pp in sweep.closed()]
    if len(rows) < 2:
        raise SetupError("the throughput knee needs at least two closed-loop sweep points")
    knee = throughput_knee(rows, th.knee_gain)
    gains = ", ".join(f"{c2:g}: {x2 / x1 - 1:+.0%}" for (c1, x1), (c2, x2) in zip(rows, rows[1:], strict=False) if x1)
    return ModelValue(None if knee is None else int(knee), sweep.inputs(),
                      f"serving model: smallest concurrency whose doubling adds < {th.knee_gain:.0%} throughput; "
                      f"gains: {gains}")


def _serve_batch1(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    if "context" in at:
        raise SetupError("at: {context: ...} is a decode-roofline parameter")
    p, pp = sweep.batch1()
    return ModelValue(pp.output_throughput_tok_per_s, sweep.inputs(), sim_explanation(p.id, pp))


def _serve_batch1_fraction(sweep: ServingSweep, at: Mapping[str, Any], th: Thresholds) -> ModelValue:
    p, pp = sweep.batch1()
    ceiling = _batch1_ceiling(sweep.setup)
    return ModelValue(pp.output_throughput_tok_per_s / ceiling, sweep.inputs(),
                      f"serving model: {pp.output_throughput_tok_per_s:,.1f} tok/s at batch 1 ÷ ceiling "
                      f"{ceiling:,.1f} tok/s; " + sim_explanation(p.id, pp))


#: the family, in the registry's order
QUANTITIES: tuple[Quantity, ...] = (
    Quantity("knee_concurrency", "count", "where decode stops being memory-bound. Model: the roofline knee "
             "B* where t_comp = t_mem (or none, with the reason). Measured: the smallest concurrency whose "
             "doubling adds less than thresholds.knee_gain of aggregate throughput (none = only flattening)",
             kind=QuantityKind.OPTIONAL_NUMBER, at=("context",), model=_knee_model, measure=_knee_measure,
             points=QuantityPoints.ALL, serving=_serve_knee, replicas="sweep"),
    fact("weight_only_knee", "count", "the naive knee with KV ignored: the batch where weight-only intensity = ridge",
         lambda s, a: an.roofline_knee(weight_bytes=weights_gpu(s), flop_per_token=flop_gpu(s), kv_bytes_per_seq=0.0,
                                       hbm_bytes_per_s=s.hbm_bytes_per_s, peak_flop_per_s=s.peak_flop_per_s).batch),
    fact("max_context_for_knee", "count", "largest KV context (tokens) at which a roofline knee exists",
         lambda s, a: an.max_context_for_knee_tokens(flop_per_token=flop_gpu(s), peak_flop_per_s=s.peak_flop_per_s,
                                                     hbm_bytes_per_s=s.hbm_bytes_per_s,
                                                     kv_bytes_per_token=s.kv_bytes_per_token_per_gpu)),
    fact("batch1_ceiling", "throughput", "batch-1 decode ceiling from the weight read alone: bandwidth ÷ weight bytes "
         "(one GPU's bandwidth ÷ its weights under TP)", lambda s, a: _batch1_ceiling(s)),
    Quantity("batch1_throughput", "throughput", "single-request decode tokens/s (model: KV-inclusive "
             "decode step at B=1; measured: the 'batch1' point, else the concurrency-1 point)",
             at=("context",), model=lambda s, a: ModelValue(decode_step(s, {**a, "batch": 1}).throughput_tok_per_s,
                                                            roofline_inputs(s, a), "1 ÷ t_step(B=1)"),
             measure=_batch1_measure, points=QuantityPoints.BATCH1, serving=_serve_batch1),
    Quantity("batch1_fraction_of_ceiling", "ratio", "measured batch-1 tok/s ÷ the weight-read ceiling",
             measure=_batch1_fraction, points=QuantityPoints.BATCH1, serving=_serve_batch1_fraction),
    fact("prefill_floor", "time", "compute floor of a prefill (TTFT floor): prompt tokens × 2P ÷ peak FLOP/s (÷ TP; "
         "the all-reduces are left out of the floor)",
         lambda s, a: an.prefill_floor_s(int(a.get("prompt_tokens", s.input_len)), flop_gpu(s), s.peak_flop_per_s),
         at=("prompt_tokens",)),
)
