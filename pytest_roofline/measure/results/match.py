"""Whether a results file belongs to the predictions it is about to be scored against.

A replayed file is only evidence for a prediction file when it measured the same thing: the same GPU, model,
engine version, workload lengths and sweep points. :func:`compare` lists every difference (the run is refused
with them unless ``--roofline-allow-mismatch``) and, separately, what the file cannot say (a ``vllm bench serve``
file records no GPU): those are shown as "not checked", never taken as a match or a mismatch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_roofline.errors import HardwareError, ModelArchError, ResultsMismatchError
from pytest_roofline.format.spec import Spec
from pytest_roofline.measure.plan.points import all_points
from pytest_roofline.measure.results import peers
from pytest_roofline.model import architecture, hardware
from pytest_roofline.model.workload import fixed_span_applies
from pytest_roofline.quantities.measurement import BATCH1_ID, PointMode, point_mode, same_rate

__all__ = ["Comparison", "compare", "refuse_message", "ALLOW_OPTION", "PEER_FORMATS", "recorded_span"]

ALLOW_OPTION = "--roofline-allow-mismatch"
#: the ``source`` of a peer's file read as results (measure/results/peers: every format but this tool's own)
PEER_FORMATS = frozenset(peers.FORMATS) - {peers.OWN}
#: relative slack on mean token lengths read from a peer's totals (token counts ÷ requests)
_LENGTH_SLACK = 0.02


@dataclass
class Comparison:
    differences: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    @property
    def belongs(self) -> bool:
        return not self.differences

    def summary(self) -> str:
        parts = ["; ".join(self.differences)] if self.differences else []
        if self.unchecked:
            parts.append("not checked: " + "; ".join(self.unchecked))
        return " — ".join(parts)


def _hw_id(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return hardware.get_hardware(name).id
    except HardwareError:
        return name.strip().lower()


def _model_ids(*names: Any) -> set[str]:
    out: set[str] = set()
    for n in names:
        if not isinstance(n, str) or not n.strip():
            continue
        out.add(n.strip().lower())
        if n.lower() in {p.lower() for p in architecture.presets()} or "/" in n and not n.startswith(("/", ".")):
            try:
                out.add(architecture.get_model(n).name.lower())
            except (ModelArchError, OSError, ValueError):
                pass
    return out


def _len_differs(have: float, want: float) -> bool:
    return abs(have - want) > max(1.0, _LENGTH_SLACK * want)


def compare(data: Mapping[str, Any], spec: Spec) -> Comparison:
    """The differences between the run ``data`` recorded and the one ``spec`` predicts, and what ``data`` cannot
    say (its ``setup.unchecked``, and fields it leaves empty)."""
    cmp = Comparison()
    setup = data.get("setup") or {}
    unchecked = dict(setup.get("unchecked") or {})
    hw = setup.get("hardware") or {}
    detected = (hw.get("detected") or {}) if isinstance(hw.get("detected"), dict) else {}
    have_hw = hw.get("reanchored_to") or detected.get("variant") or hw.get("declared")
    if have_hw:
        if _hw_id(str(have_hw)) != _hw_id(spec.hardware):
            cmp.differences.append(f"GPU: the file ran on {have_hw}, the predictions are for {spec.hardware}")
    else:
        cmp.unchecked.append("GPU (" + unchecked.get("hardware", "the file records none") + ")")
    model = setup.get("model") or {}
    have_models = _model_ids(model.get("name"), model.get("path"))
    want_models = _model_ids(spec.model if isinstance(spec.model, str) else None, spec.engine.get("model"))
    if have_models and want_models:
        if not have_models & want_models:
            cmp.differences.append(f"model: the file served {model.get('name') or model.get('path')}, the "
                                   f"predictions are for {spec.model}")
    else:
        cmp.unchecked.append("model (" + unchecked.get("model", "the file names none") + ")")
    engine = setup.get("engine") or {}
    have_v = engine.get("version") or (data.get("engine_report") or {}).get("version")
    want_v = spec.engine.get("version")
    if have_v and want_v:
        if str(have_v).strip().lstrip("v") != str(want_v).strip().lstrip("v"):
            cmp.differences.append(f"engine version: the file ran vLLM {have_v}, the predictions are for {want_v}")
    elif want_v:
        cmp.unchecked.append("engine version (" + unchecked.get("engine_version", "the file records none") + ")")
    if unchecked.get("engine_report"):
        cmp.unchecked.append("KV-cache figures (" + unchecked["engine_report"] + ")")
    points = [p for p in data.get("points") or [] if isinstance(p, dict) and p.get("id") != BATCH1_ID]
    wl = spec.workload
    for key, what in (("input_len", "input"), ("output_len", "output")):
        want = wl.get(key)
        if not isinstance(want, (int, float)):
            continue
        have = sorted({float(x) for p in points if isinstance(x := p.get(key), (int, float))})
        off = [h for h in have if _len_differs(h, float(want))]
        if off:
            counted = ((data.get("setup") or {}).get("workload") or {}).get("lengths_counted_by")
            cmp.differences.append(f"workload: {what} length {', '.join(f'{h:g}' for h in off)} tokens in the "
                                   f"file, {want:g} in the predictions"
                                   + (f" (counted by {counted})" if counted else ""))
    want_c = set(spec.sweep.concurrency)
    want_r = [float(r) for r in spec.sweep.rates]
    extra: list[str] = []
    have_c = {p.get("concurrency") for p in points if point_mode(p) is PointMode.CLOSED}  # type: ignore[arg-type]
    have_r = [float(p["rate_req_s"]) for p in points
              if point_mode(p) is PointMode.OPEN and p.get("rate_req_s") is not None]  # type: ignore[arg-type]
    missing = [f"C={c}" for c in sorted(want_c - have_c)] + [
        f"{r:g} req/s" for r in sorted(want_r) if not any(same_rate(r, h) for h in have_r)]
    for p in points:
        mode = point_mode(p)  # type: ignore[arg-type]
        if mode is PointMode.CLOSED and p.get("concurrency") is not None and p["concurrency"] not in want_c:
            extra.append(f"C={p['concurrency']}")
        elif mode is PointMode.OPEN and p.get("rate_req_s") is not None and not any(
                same_rate(float(p["rate_req_s"]), r) for r in want_r):
            extra.append(f"{float(p['rate_req_s']):g} req/s")
    _arrival_span(data, points, spec, cmp)
    # a superset of the sweep (a fuller run) or a subset (a run cut short: the missing points' predictions skip)
    # belongs; a file with points outside the sweep that also lacks some of it measured another grid
    if extra and missing:
        sweep = ", ".join([f"C={c}" for c in sorted(want_c)] + [f"{r:g} req/s" for r in sorted(want_r)])
        cmp.differences.append(f"sweep points: the file has {', '.join(extra)}, not in the predictions' sweep "
                               f"({sweep}), and lacks {', '.join(missing)}")
    return cmp


def recorded_span(results: Mapping[str, Any], point: Mapping[str, Any]) -> str | None:
    """How a results file's open-loop ``point`` spread its sends (``sweep.arrival_span``, model/workload.py): its
    ``arrival_span``; ``drawn`` for a point of this tool's own file without one (every open-loop run before
    2026-12-07 was sent so); None for a peer's file that does not say, and for a closed loop (no schedule)."""
    if point_mode(point) is not PointMode.OPEN:  # type: ignore[arg-type]
        return None
    span = point.get("arrival_span")
    if span == "fixed":
        # a point no fixed span applies to was sent drawn whatever it says (files of 2026-12-07 recorded the sweep's
        # setting on every open point: trial s23 M1): a duration-bound one, a ramp-up, fewer than 2 requests
        # (a point that does not record its request count is taken at its word)
        n = point.get("num_requests")
        ramp = ((results.get("setup") or {}).get("workload") or {}).get("ramp_up")
        if ramp or ("num_requests" in point and not fixed_span_applies(count=n if isinstance(n, int) else None,
                                                                      ramp_up=None)):
            return "drawn"
    if span:
        return str(span)
    return None if results.get("source") in PEER_FORMATS else "drawn"


def _arrival_span(data: Mapping[str, Any], points: list[Any], spec: Spec, cmp: Comparison) -> None:
    """A difference when the file's open-loop points were sent on another span than the sweep asks for
    (``sweep.arrival_span``, model/workload.py): the serving model simulates the sweep's, so it would be checked
    against sends it did not model (:func:`recorded_span`); a peer's file that does not say goes to "not
    checked"."""
    open_pts = [p for p in points if point_mode(p) is PointMode.OPEN]
    if not open_pts:
        return
    spans = {s for p in open_pts if (s := recorded_span(data, p)) is not None}
    if not spans:
        cmp.unchecked.append("arrival span (the file does not say whether its open-loop sends spanned N ÷ rate)")
        return
    # each point against the span the sweep sends that rate on (plan.open_span: drawn where fixed cannot apply)
    planned = {p.rate_req_s: p.arrival_span for p in all_points(spec) if p.mode == PointMode.OPEN}
    want = spec.sweep.arrival_span
    pairs = {(s, planned.get(p.get("rate_req_s"), want)) for p in open_pts
             if (s := recorded_span(data, p)) is not None}
    other = sorted({got for got, plan in pairs if got != plan and plan == want})
    if other:
        cmp.differences.append(
            f"arrivals: the file's open-loop points were sent with arrival_span {', '.join(other)}, the predictions' "
            f"sweep asks for {want} (the serving model simulates the sweep's schedule); to score this file, write "
            f"`arrival_span: {other[0]}` under sweep:")
    never = sorted({got for got, plan in pairs if got != plan and plan != want})
    if never:  # the sweep's points are sent drawn whatever it says (plan.open_span): another kind of point
        cmp.differences.append(
            f"arrivals: the file's open-loop points were sent with arrival_span {', '.join(never)}, where the "
            "predictions' sweep sends its points drawn (a duration-bound point, a ramp-up or fewer than 2 requests is "
            "never rescaled), so they are other points")


def refuse_message(where: str, spec: Spec, cmp: Comparison) -> str:
    lines = [f"{where} does not belong to {spec.path}:"]
    lines += [f"  - {d}" for d in cmp.differences]
    if cmp.unchecked:
        lines.append("  not checked (the file does not say): " + "; ".join(cmp.unchecked))
    lines.append(f"  score it anyway with {ALLOW_OPTION} (every verdict and the scorecard then say so)")
    return "\n".join(lines)


def check(data: Mapping[str, Any], spec: Spec, where: str, *, allow: bool) -> Comparison:
    """:func:`compare`, raising :class:`ResultsMismatchError` on a difference unless ``allow``."""
    cmp = compare(data, spec)
    if cmp.differences and not allow:
        raise ResultsMismatchError(refuse_message(where, spec, cmp), cmp.differences)
    return cmp
