"""Two runs side by side (``roofline compare A B``): per prediction, each run's verdict, measured and model value,
how far the measured value moved from A to B, and whether that move is distinguishable from the two measurements'
noise (the drift's own test, :func:`~pytest_roofline.history._drift.distinguishable`, on the stored 95 %
intervals). Pure: the CLI finds the runs and prints the lines. Stored text (labels, commits, ids) is printed with
its control characters escaped (:func:`pytest_roofline.redact.printable`)."""

from __future__ import annotations

import math
import textwrap
from dataclasses import asdict, dataclass
from typing import Any

from pytest_roofline.history._drift import RANK_ALPHA, distinguishable, ranked_p
from pytest_roofline.history._records import RunSummary, StoredValue, unify_keys
from pytest_roofline.redact import printable
from pytest_roofline.units import format_value

__all__ = ["ComparisonRow", "compare_runs", "render_comparison", "comparison_json"]


@dataclass(frozen=True)
class ComparisonRow:
    """One prediction in two runs; a side that lacks it has status ``""`` and no values."""

    key: str
    prediction_id: str
    quantity: str
    at: dict[str, str]
    dimension: str
    unit: str
    status_a: str
    status_b: str
    measured_a: float | None
    measured_b: float | None
    change_rel: float | None  # (measured_b − measured_a) / |measured_a|; None without both or with a zero A
    model_a: float | None
    model_b: float | None
    predicted: str  # the ink of B (of A when B lacks it)
    #: "significant" (the move is beyond both measurements' noise), "noise" (it is not), "same" (no move),
    #: "no interval" (neither run kept an interval for it), "not held" (measured in both, but in one of them at a
    #: point that did not hold its concurrency: not judged, as drift does not judge it), "" (not measured in both)
    significance: str = ""
    #: the smallest move the two measurements can tell from noise (SI); None when not measured in both or unbounded
    noise: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _change(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    if a == 0:
        return 0.0 if b == 0 else None
    return (b - a) / abs(a)


def _significance(va: StoredValue | None, vb: StoredValue | None) -> tuple[str, float | None]:
    if va is None or vb is None or va.measured is None or vb.measured is None:
        return "", None
    if not (math.isfinite(va.measured) and math.isfinite(vb.measured)):
        return "", None
    if not (va.held and vb.held):
        return "not held", None  # a lower load than the prediction names in one run: the move says nothing
    if va.measured == vb.measured:
        return "same", 0.0
    if not (va.interval_method or vb.interval_method):
        return "no interval", None  # neither measurement kept an interval: the data cannot say
    apart, margin = distinguishable(vb, vb.measured, va, va.measured)
    rank_p = ranked_p(vb, va)
    if rank_p is not None:  # both runs kept their requests: their samples must differ as well, as in drift
        apart = apart and rank_p < RANK_ALPHA
    return ("significant" if apart else "noise"), (margin if math.isfinite(margin) else None)


def compare_runs(a: RunSummary, b: RunSummary) -> list[ComparisonRow]:
    """Every prediction of either run, in A's order, then those only B has. A run stored under the old key scheme
    (file relative to pytest's rootdir) is matched to the other's keys first (:func:`unify_keys`)."""
    if a.setup == b.setup:
        a, b = unify_keys([a, b])
    else:  # different setups: the keys are still those of one prediction file each
        a, b = unify_keys([a], b.values)[0], unify_keys([b], a.values)[0]
    keys = list(dict.fromkeys([v.key for v in a.values] + [v.key for v in b.values]))
    rows = []
    for key in keys:
        va, vb = a.value(key), b.value(key)
        ref: StoredValue = vb or va  # type: ignore[assignment]  # one of the two exists: the key came from them
        ma = va.measured if va is not None else None
        mb = vb.measured if vb is not None else None
        sig, noise = _significance(va, vb)
        rows.append(ComparisonRow(
            key=key, prediction_id=ref.prediction_id, quantity=ref.quantity, at=dict(ref.at),
            dimension=ref.dimension, unit=ref.unit, status_a=va.status if va else "", status_b=vb.status if vb else "",
            measured_a=ma, measured_b=mb, change_rel=_change(ma, mb), model_a=va.model if va else None,
            model_b=vb.model if vb else None, predicted=ref.predicted_text, significance=sig, noise=noise))
    return rows


def _fmt(x: float | None, row: ComparisonRow) -> str:
    if x is None:
        return "—"
    return format_value(x, row.dimension, row.unit or None)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _clip_middle(text: str, width: int) -> str:
    """``littles-law[concurrency=8]`` in 20 columns → ``littles-la…rrency=8]``: the head and the end stay (ids of
    one prediction at several points differ at their end, which cutting the end would hide)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def _head(name: str, s: RunSummary, width: int) -> list[str]:
    """Two lines per run: which run (id, date, commit, label), then its setup and mode."""
    bits = [s.run_id or "(not stored)", s.started_at, s.commit or "no commit"] + ([s.label] if s.label else [])
    return [_clip(printable(f"{name}: " + " · ".join(bits)), width),
            _clip(printable(f"   {s.setup.text()} · {s.mode}"), width)]


def render_comparison(a: RunSummary, b: RunSummary, rows: list[ComparisonRow] | None = None, *,
                      width: int = 120) -> list[str]:
    """Aligned columns that fit ``width`` (120 by default): id, quantity, predicted, A and B (status, measured),
    the change, and the model values when they differ between the runs. Values in their units."""
    rows = compare_runs(a, b) if rows is None else rows
    cells = []
    for r in rows:
        model = _fmt(r.model_b, r) if r.model_a == r.model_b else f"{_fmt(r.model_a, r)} → {_fmt(r.model_b, r)}"
        change = f"{r.change_rel * 100:+.1f}%" if r.change_rel is not None else ""
        if not change and r.measured_a is not None and r.measured_b is not None:
            change = f"{_fmt(r.measured_a, r)} → {_fmt(r.measured_b, r)}"  # from zero: no relative change exists
        sig = {"significant": "yes", "noise": "no", "no interval": "?", "not held": "not judged"}.get(
            r.significance, "")
        if r.significance == "noise" and r.noise:
            sig = f"no ±{_fmt(r.noise, r)}"  # within this much the two measurements cannot tell a move from noise
        cells.append({
            "id": printable(r.prediction_id), "quantity": r.quantity, "predicted": printable(r.predicted) or "—",
            "A": r.status_a or "absent", "measured A": _fmt(r.measured_a, r), "B": r.status_b or "absent",
            "measured B": _fmt(r.measured_b, r), "change": change, "beyond noise": sig, "model": model,
        })
    cols = ["id", "quantity", "predicted", "A", "measured A", "B", "measured B", "change", "beyond noise", "model"]
    right = {"predicted", "measured A", "measured B", "change", "beyond noise", "model"}
    w = {c: max([len(c)] + [len(x[c]) for x in cells]) for c in cols}
    # what gives way first when 120 columns are not enough: the model column, then the quantity, then the id;
    # an id that still does not fit is never cut (ids of one prediction at several points differ at their end):
    # then every id is printed whole on its own line, each row indented under it
    def fit(cols: list[str]) -> dict[str, int]:
        w = {c: max([len(c)] + [len(x[c]) for x in cells]) for c in cols}
        for c, floor in (("model", 12), ("quantity", 10), ("id", 16)):
            over = sum(w[k] for k in cols) + 2 * (len(cols) - 1) + (2 if "id" not in cols else 0) - width
            if over > 0 and c in w:
                w[c] = max(floor, w[c] - over)
        return w

    w = fit(cols)
    own_line = any(len(x["id"]) > w["id"] for x in cells)
    if own_line:
        cols = cols[1:]
        w = fit(cols)
    indent = "  " if own_line else ""
    lines = [*_head("A", a, width), *_head("B", b, width), ""]
    head = indent + "  ".join(f"{c:>{w[c]}}" if c in right else f"{c:<{w[c]}}" for c in cols).rstrip()
    lines += (["id"] if own_line else []) + [head, "-" * min(width, len(head))]
    for x in cells:
        if own_line:
            lines.append(_clip_middle(x["id"], width))
        lines.append(indent + "  ".join(f"{_clip(x[c], w[c]):>{w[c]}}" if c in right else
                                        f"{_clip(x[c], w[c]):<{w[c]}}" for c in cols).rstrip())
    moved = [r for r in rows if r.change_rel is not None or r.significance]
    significant = [r for r in rows if r.significance == "significant"]
    lines.append("")
    if not moved:
        lines += textwrap.wrap(f"{len(rows)} predictions; 0 measured in both runs: NOTHING WAS COMPARED (the runs "
                               "share no measured prediction: different setups or prediction files?)", width)
        return lines
    largest = max((r for r in moved if r.change_rel is not None), key=lambda r: abs(r.change_rel or 0), default=None)
    unknown = sum(r.significance == "no interval" for r in rows)
    unheld = sum(r.significance == "not held" for r in rows)
    text = (f"{len(rows)} predictions; {len(moved)} measured in both runs; {len(significant)} moved beyond both "
            "measurements' noise (95 % intervals)"
            + (f"; {unknown} without an interval in either run (?)" if unknown else "")
            + (f"; {unheld} not judged (a point did not hold its concurrency in one run)" if unheld else "")
            + (f"; largest change {printable(largest.prediction_id)} {(largest.change_rel or 0) * 100:+.1f}%"
               if largest is not None else ""))
    lines += textwrap.wrap(text, width) or [text]
    return lines


def comparison_json(a: RunSummary, b: RunSummary, rows: list[ComparisonRow] | None = None) -> dict[str, Any]:
    """What ``roofline compare --json`` prints: both runs' headers and the rows."""
    rows = compare_runs(a, b) if rows is None else rows

    def head(s: RunSummary) -> dict[str, Any]:
        return {"run_id": s.run_id, "started_at": s.started_at, "commit": s.commit, "branch": s.branch,
                "label": s.label, "mode": s.mode, "setup": asdict(s.setup)}

    both = [r for r in rows if r.significance and r.significance != "not held"]
    return {"a": head(a), "b": head(b), "rows": [r.to_dict() for r in rows],
            "compared": len(both), "significant": sum(r.significance == "significant" for r in both)}
