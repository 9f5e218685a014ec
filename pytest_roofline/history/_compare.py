"""Two runs side by side (``roofline compare A B``): per prediction, each run's verdict, measured and model value,
and how far the measured value moved from A to B. Pure: the CLI finds the runs and prints the lines."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from pytest_roofline.history._records import RunSummary, StoredValue
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _change(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    if a == 0:
        return 0.0 if b == 0 else None
    return (b - a) / abs(a)


def compare_runs(a: RunSummary, b: RunSummary) -> list[ComparisonRow]:
    """Every prediction of either run, in A's order, then those only B has."""
    keys = list(dict.fromkeys([v.key for v in a.values] + [v.key for v in b.values]))
    rows = []
    for key in keys:
        va, vb = a.value(key), b.value(key)
        ref: StoredValue = vb or va  # type: ignore[assignment]  # one of the two exists: the key came from them
        ma = va.measured if va is not None else None
        mb = vb.measured if vb is not None else None
        rows.append(ComparisonRow(
            key=key, prediction_id=ref.prediction_id, quantity=ref.quantity, at=dict(ref.at),
            dimension=ref.dimension, unit=ref.unit, status_a=va.status if va else "", status_b=vb.status if vb else "",
            measured_a=ma, measured_b=mb, change_rel=_change(ma, mb), model_a=va.model if va else None,
            model_b=vb.model if vb else None, predicted=ref.predicted_text))
    return rows


def _fmt(x: float | None, row: ComparisonRow) -> str:
    if x is None:
        return "—"
    return format_value(x, row.dimension, row.unit or None)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _head(name: str, s: RunSummary, width: int) -> list[str]:
    """Two lines per run: which run (id, date, commit, label), then its setup and mode."""
    bits = [s.run_id or "(not stored)", s.started_at, s.commit or "no commit"] + ([s.label] if s.label else [])
    return [_clip(f"{name}: " + " · ".join(bits), width), _clip(f"   {s.setup.text()} · {s.mode}", width)]


def render_comparison(a: RunSummary, b: RunSummary, rows: list[ComparisonRow] | None = None, *,
                      width: int = 120) -> list[str]:
    """Aligned columns that fit ``width`` (120 by default): id, quantity, predicted, A and B (status, measured),
    the change, and the model values when they differ between the runs. Values in their units."""
    rows = compare_runs(a, b) if rows is None else rows
    cells = []
    for r in rows:
        model = _fmt(r.model_b, r) if r.model_a == r.model_b else f"{_fmt(r.model_a, r)} → {_fmt(r.model_b, r)}"
        cells.append({
            "id": r.prediction_id, "quantity": r.quantity, "predicted": r.predicted or "—",
            "A": r.status_a or "absent", "measured A": _fmt(r.measured_a, r), "B": r.status_b or "absent",
            "measured B": _fmt(r.measured_b, r),
            "change": f"{r.change_rel * 100:+.1f}%" if r.change_rel is not None else "",
            "model": model,
        })
    cols = ["id", "quantity", "predicted", "A", "measured A", "B", "measured B", "change", "model"]
    right = {"predicted", "measured A", "measured B", "change", "model"}
    w = {c: max([len(c)] + [len(x[c]) for x in cells]) for c in cols}
    # what gives way first when 120 columns are not enough: the model column, then the quantity, then the id
    for c, floor in (("model", 12), ("quantity", 10), ("id", 16)):
        over = sum(w.values()) + 2 * (len(cols) - 1) - width
        if over > 0:
            w[c] = max(floor, w[c] - over)
    lines = [*_head("A", a, width), *_head("B", b, width), ""]
    head = "  ".join(f"{c:>{w[c]}}" if c in right else f"{c:<{w[c]}}" for c in cols).rstrip()
    lines += [head, "-" * min(width, len(head))]
    for x in cells:
        lines.append("  ".join(f"{_clip(x[c], w[c]):>{w[c]}}" if c in right else f"{_clip(x[c], w[c]):<{w[c]}}"
                               for c in cols).rstrip())
    moved = [r for r in rows if r.change_rel is not None]
    lines.append("")
    lines.append(f"{len(rows)} predictions; {len(moved)} measured in both runs"
                 + (f"; largest change {max(moved, key=lambda r: abs(r.change_rel or 0)).prediction_id} "
                    f"{max((r.change_rel or 0 for r in moved), key=abs) * 100:+.1f}%" if moved else ""))
    return lines


def comparison_json(a: RunSummary, b: RunSummary, rows: list[ComparisonRow] | None = None) -> dict[str, Any]:
    """What ``roofline compare --json`` prints: both runs' headers and the rows."""
    rows = compare_runs(a, b) if rows is None else rows

    def head(s: RunSummary) -> dict[str, Any]:
        return {"run_id": s.run_id, "started_at": s.started_at, "commit": s.commit, "branch": s.branch,
                "label": s.label, "mode": s.mode, "setup": asdict(s.setup)}

    return {"a": head(a), "b": head(b), "rows": [r.to_dict() for r in rows]}
