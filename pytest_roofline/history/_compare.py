"""Two runs side by side (``roofline compare A B``): per prediction, each run's verdict, measured and model value,
how far the measured value moved from A to B, and whether that move is beyond the noise by drift's own test, one
function both call (:func:`~pytest_roofline.history._drift.judge_move`): the two measurements' stored 95 %
intervals, the rank test where both kept their requests, and, given a store with 3 or more earlier nights of B's
setup, B outside those nights' prediction interval. With fewer earlier nights (or no store) the run-to-run noise
is not known: a move beyond the intervals alone is ``uncertain``, as drift calls it, never ``significant``
(drift's ``MIN_NIGHTS``). Pure: the
CLI finds the runs and prints the lines. Stored text (labels, commits, ids) is printed with its control characters
escaped (:func:`pytest_roofline.redact.printable`).

Numbers: the table prints every value of a row in the prediction's own unit (the one its ink was written in) with
:data:`VALUE_DIGITS` significant figures, trailing zeros kept (``100.0 %`` beside ``99.98 %``, never ``100 %`` and
``100.00 %`` in one column), a count whole, the noise (an uncertainty) with :data:`NOISE_DIGITS`, the ink with the
digits it was written with (its precision is the claim) and changes as ``+25.0 %``. The JSON carries SI base values
and names their SI unit (:data:`SI_UNIT`): ``"unit": "s"`` with ``1.3824``, never ``"ms"`` with it."""

from __future__ import annotations

import math
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_roofline.history._drift import judge_move, night_machine, nights_values, other_span, redefinition
from pytest_roofline.history._machine import machine_apart
from pytest_roofline.history._records import RunSummary, StoredValue, other_workload, sort_time, unify_keys
from pytest_roofline.redact import printable
from pytest_roofline.units import DEFAULT_UNIT, UnitError, parse_number, unit_scale

__all__ = ["ComparisonRow", "compare_runs", "earlier_nights", "render_comparison", "comparison_json",
           "measured_in_both", "render_run_list", "run_list_json", "SI_UNIT", "VALUE_DIGITS", "NOISE_DIGITS"]

#: significant figures of a measured, model or from-zero value in the table (every integer digit is kept)
VALUE_DIGITS = 4
#: significant figures of the noise (the smallest move the two measurements can tell apart): an uncertainty
NOISE_DIGITS = 2
#: dimension -> the SI base unit its stored values are in, which ``--json`` prints them in; a ratio is a
#: fraction (1 is 100 %) and a count a bare number
SI_UNIT = {"throughput": "tok/s", "request_rate": "req/s", "time": "s", "bytes": "B", "bandwidth": "B/s",
           "flops": "FLOP", "flop_rate": "FLOP/s", "intensity": "FLOP/byte", "ratio": "", "count": ""}
#: dimensions whose whole values are printed whole (2,097,152 tokens, 512 B), not to four figures
_COUNTED = frozenset({"count", "bytes"})


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
    #: "significant" (the move is beyond both measurements' noise and the spread of B's 3 or more earlier nights),
    #: "uncertain" (beyond both measurements' intervals, but fewer than 3 earlier nights of B's setup measured it:
    #: the run-to-run noise is not known, as drift says), "noise" (within the noise), "same" (no move),
    #: "no interval" (neither run kept an interval for it), "not held" (measured in both, but in one of them at a
    #: point that did not hold its concurrency: not judged, as drift does not judge it), "machine" (the two runs'
    #: host probes are more than 20 % apart: one machine ran slower than the other, which moves every figure; not
    #: judged, as drift does not judge a night whose machine ran apart), "arrivals" (its open-loop point spread its
    #: sends otherwise in the two runs, ``sweep.arrival_span``: another load, not judged, as drift calls it
    #: ``arrivals changed``), "workload" (its points ran other prompt or output lengths or another dataset in the
    #: two runs: another figure, not judged, as drift calls it ``workload changed``), "redefined" (the prediction
    #: measures another quantity or window in B: not judged, no change where the quantity differs, as drift calls it
    #: ``prediction changed``), "" (not measured in both)
    significance: str = ""
    #: the smallest move the two measurements can tell from noise (SI); None when not measured in both or unbounded
    noise: float | None = None
    #: how many earlier nights (runs of B's setup in the store before B) gave the nights' spread that B was also
    #: tested against, as drift tests a night; 0 when fewer than 3 had it (the runs' own intervals alone)
    nights: int = 0
    #: the outcome pytest reported in each run (``xfail`` for an expected miss, ``xpass``: what the terminal said);
    #: "" where the side lacks the prediction or its run was stored before outcomes were kept (its status_* then)
    outcome_a: str = ""
    outcome_b: str = ""
    #: which model ``model_a``/``model_b`` are (``roofline``, ``serving``; "" where the runs did not say), and B's
    #: serving-model value with its band (A's where B lacks the prediction): where the model column is the
    #: roofline's ceiling, the value runs land near (trial s24 M7)
    model_source: str = ""
    serving_b: float | None = None
    serving_lo_b: float | None = None
    serving_hi_b: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: the significances of rows compare does not judge (another figure than A's): they have no "largest change"
_NOT_JUDGED = frozenset({"not held", "machine", "arrivals", "workload", "redefined"})


def _change(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    if a == 0:
        return 0.0 if b == 0 else None
    return (b - a) / abs(a)


def _significance(va: StoredValue | None, vb: StoredValue | None,
                  nights: Sequence[float] = (), machine_shift: float | None = None) -> tuple[str, float | None, int]:
    """Drift's own test of B against A (:func:`~pytest_roofline.history._drift.judge_move`, the decision drift
    makes): both runs' 95 % intervals, the rank test where both kept their requests and, with 3 or more earlier
    ``nights`` of B's setup, B outside their prediction interval. With fewer earlier nights the run-to-run noise is
    not known, and a move beyond the intervals is ``uncertain``, as drift says, never ``significant``."""
    if va is None or vb is None or va.measured is None or vb.measured is None:
        return "", None, 0
    if not (math.isfinite(va.measured) and math.isfinite(vb.measured)):
        return "", None, 0
    if not (va.held and vb.held):
        return "not held", None, 0  # a lower load than the prediction names in one run: the move says nothing
    if machine_apart(vb.host_probe_gflop_per_s, va.host_probe_gflop_per_s, machine_shift):
        return "machine", None, 0  # one run's machine was slower: every figure moves with it (history._machine)
    if other_workload(va.workload, vb.workload):
        return "workload", None, 0  # its points ran other lengths or another dataset: another figure
    if other_span(va, vb):
        return "arrivals", None, 0  # its open-loop point sent the same rate otherwise (sweep.arrival_span)
    if va.measured == vb.measured:
        return "same", 0.0, 0
    move = judge_move(vb, vb.measured, va, va.measured, nights)
    if not (va.interval_method or vb.interval_method) and not move.known:
        return "no interval", None, 0  # neither measurement kept an interval: the data cannot say
    word = "significant" if move.moved else "uncertain" if move.apart else "noise"
    return word, (move.margin if math.isfinite(move.margin) else None), (len(nights) if move.known else 0)


def earlier_nights(b: RunSummary, store_runs: Sequence[RunSummary]) -> list[RunSummary]:
    """The store's runs of B's setup that started before B, oldest first: the nights drift would test B against
    (a run that holds one of B's own results files, a copy of B stored before replays were matched, is none)."""
    if not b.started_at:
        return []
    cut = sort_time(b.started_at)
    own = set(b.measurements)
    runs = [r for r in store_runs if r.setup == b.setup and r.run_id != b.run_id and r.started_at
            and sort_time(r.started_at) < cut and not own & set(r.measurements)]
    return sorted(runs, key=lambda r: sort_time(r.started_at))


def compare_runs(a: RunSummary, b: RunSummary, history: Sequence[RunSummary] = (),
                 machine_shift: float | None = None) -> list[ComparisonRow]:
    """Every prediction of either run, in A's order, then those only B has. A run stored under the old key scheme
    (file relative to pytest's rootdir) is matched to the other's keys first (:func:`unify_keys`). ``history``: the
    runs of a store (:func:`earlier_nights` keeps B's setup before B); with 3 or more earlier nights of a value, B
    must also lie outside their spread to count as moved, as drift judges a night. ``machine_shift`` (``roofline
    compare --machine 20%``, as ``--roofline-drift-machine``): a pair whose host probes are further apart is not
    judged (``machine``); None (the default) judges every pair."""
    if a.setup == b.setup:
        # two old-scheme nights (keys under two rootdirs) have no current-scheme key of their own to meet at: the
        # store's later runs of the setup give it, as they do for drift and the trend page (trial s26a #8: two
        # such nights read "NOTHING WAS COMPARED", exit 1, where drift matched them)
        current = [v for r in history if r.setup == a.setup for v in r.values if v.definition_hash]
        a, b = unify_keys([a, b], current)
    else:  # different setups: the keys are still those of one prediction file each
        a, b = unify_keys([a], b.values)[0], unify_keys([b], a.values)[0]
    earlier = unify_keys(earlier_nights(b, history), b.values) if history else []
    keys = list(dict.fromkeys([v.key for v in a.values] + [v.key for v in b.values]))
    rows = []
    for key in keys:
        va, vb = a.value(key), b.value(key)
        ref: StoredValue = vb or va  # type: ignore[assignment]  # one of the two exists: the key came from them
        ma = va.measured if va is not None else None
        mb = vb.measured if vb is not None else None
        spread = (nights_values(key, earlier, machine=night_machine(key, earlier), shift=machine_shift, like=vb)
                  if earlier else ())
        sig, noise, nights = _significance(va, vb, spread, machine_shift)
        change = _change(ma, mb)
        changed = redefinition(va, vb)[0] if va is not None and vb is not None else ()
        if "quantity" in changed or "window" in changed:
            # the prediction measures another figure in B (its quantity or window): said, never judged, as drift
            # says it (trial s24c H2: +110 % "yes" across output_throughput and total_throughput)
            sig, noise, nights = "redefined", None, 0
            change = None if "quantity" in changed else change
        rows.append(ComparisonRow(
            key=key, prediction_id=ref.prediction_id, quantity=ref.quantity, at=dict(ref.at),
            dimension=ref.dimension, unit=ref.unit, status_a=va.status if va else "", status_b=vb.status if vb else "",
            measured_a=ma, measured_b=mb, change_rel=change, model_a=va.model if va else None,
            model_b=vb.model if vb else None, predicted=ref.predicted_text, significance=sig, noise=noise,
            nights=nights, outcome_a=va.outcome if va else "", outcome_b=vb.outcome if vb else "",
            model_source=ref.model_source, serving_b=ref.serving, serving_lo_b=ref.serving_lo,
            serving_hi_b=ref.serving_hi))
    return rows


def measured_in_both(rows: list[ComparisonRow]) -> list[ComparisonRow]:
    """The rows both runs measured (a finite value in each): none of them means NOTHING WAS COMPARED."""
    return [r for r in rows if r.change_rel is not None or r.significance]


def _number(x: float, digits: int, *, whole: bool = False) -> str:
    """``x`` to ``digits`` significant figures with its trailing zeros (``100.0``, ``99.98``, ``1.000``) and every
    integer digit (``1,382``), thousands separated; 0 as ``0``; a whole ``x`` whole when ``whole`` (a count).
    A rounding that carries into a new digit drops a decimal (99.996 → ``100.0``, not ``100.00``)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}".replace("-0", "0")
    if whole and float(x).is_integer() and abs(x) < 1e15:
        return f"{x:,.0f}"
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= 15 or magnitude <= -5:
        return f"{x:.{digits - 1}e}"
    decimals = max(0, digits - 1 - magnitude)
    text = f"{x:,.{decimals}f}"
    if decimals and abs(float(text.replace(",", ""))) >= 10 ** (magnitude + 1):
        text = f"{x:,.{decimals - 1}f}"
    return text


def _unit(row: ComparisonRow) -> tuple[str, float]:
    """The unit a row's numbers are printed in and its factor to SI: the prediction's own, else the dimension's
    default (a ratio and a count: a bare number); SI bare when the store holds a unit that does not fit."""
    for unit in (row.unit, DEFAULT_UNIT.get(row.dimension, "")):
        try:
            return unit, unit_scale(row.dimension, unit)
        except UnitError:
            continue
    return "", 1.0


def _with_unit(number: str, unit: str) -> str:
    return f"{number} {unit}" if unit else number


def _fmt(x: float | None, row: ComparisonRow, digits: int = VALUE_DIGITS) -> str:
    if x is None:
        return "—"
    unit, factor = _unit(row)
    return _with_unit(_number(x / factor, digits, whole=row.dimension in _COUNTED), unit)


def _ink(row: ComparisonRow) -> str:
    """The ink in the table's style (``2048x`` → ``2,048 x``, ``0%`` → ``0 %``) with the digits it was written
    with (``1.00`` stays ``1.00``: the written precision is the claim); a word (``model``) as written."""
    text = printable(row.predicted)
    try:
        value, half_ulp, unit = parse_number(row.predicted)
    except UnitError:
        return text or "—"
    if unit != _unit(row)[0] or not math.isfinite(value):
        return text or "—"
    decimals = max(0, round(-math.log10(2 * half_ulp))) if half_ulp > 0 else 0
    return _with_unit(f"{value:,.{decimals}f}", unit)


def _percent(rel: float) -> str:
    """A relative change as ``+25.0 %``; one that rounds to nothing as ``0.0 %`` (never ``-0.0 %``)."""
    text = f"{rel * 100:+.1f}"
    return ("0.0" if text in ("+0.0", "-0.0") else text) + " %"


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
    bits = ([s.run_id or "(not stored)", s.started_at or "no date", s.commit or "no commit"]
            + ([s.label] if s.label else []))
    return [_clip(printable(f"{name}: " + " · ".join(bits)), width),
            _clip(printable(f"   {s.setup.text()} · {s.mode}"), width)]


#: the table's columns, in order (``id`` first: on its own line when the row does not fit)
_TABLE_COLUMNS = ("id", "quantity", "predicted", "A", "measured A", "B", "measured B", "change", "beyond noise",
                  "model")
_RIGHT = frozenset({"predicted", "measured A", "measured B", "change", "beyond noise", "model"})


@dataclass(frozen=True)
class _Layout:
    """How the table fits its width: its columns and their widths, whether each id is on its own line (with the
    quantity after it when the quantity column did not fit), and whether the model column was left out."""

    cols: tuple[str, ...]
    widths: dict[str, int]
    own_line: bool = False
    quantity_on_id_line: bool = False
    model_left_out: bool = False
    #: no table fits: each prediction is its id line and then its figures as ``name value`` fields, packed into
    #: lines of the width (a narrow terminal, below about 72 columns)
    stacked: bool = False

    @property
    def indent(self) -> str:
        return "  " if self.own_line else ""

    def line_width(self) -> int:
        return len(self.indent) + sum(self.widths[c] for c in self.cols) + 2 * (len(self.cols) - 1)


def _layout(cells: list[dict[str, str]], width: int) -> _Layout:
    """The first of these that fits ``width``: every column on one line; each id whole on its own line above its
    row (ids of one prediction at several points differ at their end: an id is never cut in a row, and on its own
    line only in its middle, where it is longer than the whole width); the quantity moved onto that line; the
    model column left out (said under the table). Columns are never widened beyond their longest cell, and the
    significance column ("beyond noise") and the measured values are never given up. When even that is wider than
    ``width`` (below about 72 columns), no table: each prediction is stacked (:func:`_stacked_fields`)."""
    natural = {c: max([len(c)] + [len(x[c]) for x in cells]) for c in _TABLE_COLUMNS}
    one = _Layout(_TABLE_COLUMNS, dict(natural))
    if one.line_width() <= width:
        return one
    rest = _TABLE_COLUMNS[1:]
    own = _Layout(rest, dict(natural), own_line=True)
    if own.line_width() <= width:
        return own
    no_quantity = tuple(c for c in rest if c != "quantity")
    moved = _Layout(no_quantity, dict(natural), own_line=True, quantity_on_id_line=True)
    if moved.line_width() <= width:
        return moved
    narrow = _Layout(tuple(c for c in no_quantity if c != "model"), dict(natural), own_line=True,
                     quantity_on_id_line=True, model_left_out=True)
    if narrow.line_width() <= width:
        return narrow
    return _Layout(no_quantity, dict(natural), own_line=True, quantity_on_id_line=True, stacked=True)


#: a stacked prediction's fields: (the column, the word it is shown with), in the table's order
_STACKED = (("predicted", "predicted"), ("A", "A"), ("measured A", ""), ("B", "B"), ("measured B", ""),
            ("change", "change"), ("beyond noise", "beyond noise"), ("model", "model"))


def _stacked_fields(x: dict[str, str], width: int) -> list[str]:
    """A prediction's figures below its id line when no table fits ``width``: ``predicted 1.00 · A pass 0.9976 ·
    B pass 0.9976 · change 0.0 % · beyond noise no ±0.01 · model 1.00``, packed into lines indented by two, a field
    never split across lines (one longer than the line alone is cut at its end)."""
    fields: list[str] = []
    for col, word in _STACKED:
        value = x[col]
        if col in ("measured A", "measured B"):
            if value and fields:
                fields[-1] = f"{fields[-1]} {value}"  # "A pass 0.9976": the side's outcome and its measurement
            continue
        if value:
            fields.append(f"{word} {value}")
    room = max(1, width - 2)
    lines: list[str] = []
    line = ""
    for f in fields:
        f = _clip(f, room)
        if line and len(line) + 3 + len(f) <= room:
            line = f"{line} · {f}"
        else:
            if line:
                lines.append("  " + line)
            line = f
    if line:
        lines.append("  " + line)
    return lines


def _id_line(pid: str, quantity: str, width: int) -> str:
    """An id on its own line, whole (cut in its middle only when longer than ``width`` alone), and the quantity
    after it where the quantity column gave way (cut at its end when the line would pass ``width``)."""
    if len(pid) >= width - 3 or not quantity:
        return _clip_middle(pid, width)
    return _clip(f"{pid} · {quantity}", width)


def _at_value(text: str) -> int | float | str:
    """A stored ``at:`` value (a text, as the history keys it) as JSON gives it: a number where it is one."""
    try:
        x = float(text)
    except (TypeError, ValueError):
        return text
    if not math.isfinite(x):
        return text
    return int(x) if x.is_integer() and "." not in str(text) and "e" not in str(text).lower() else x


def _model_cell(r: ComparisonRow) -> str:
    """The model column: the serving model's value with its band where the runs kept one (the value runs land
    near, not the roofline's ceiling: trial s24 M7), ``serving`` after it; else the verdict's model value (the
    roofline's), A → B where it moved between the runs."""
    if r.serving_b is not None:
        band = ""
        if r.serving_lo_b is not None and r.serving_hi_b is not None:
            lo, hi = _fmt(r.serving_lo_b, r), _fmt(r.serving_hi_b, r)
            num, _, unit = lo.rpartition(" ")
            band = f" [{num if num and hi.endswith(' ' + unit) else lo}–{hi}]"  # one unit, at the end
        return f"{_fmt(r.serving_b, r)}{band} serving"
    model = _fmt(r.model_b, r) if r.model_a == r.model_b else f"{_fmt(r.model_a, r)} → {_fmt(r.model_b, r)}"
    return f"{model} serving" if model and r.model_source == "serving" else model


def _shown(outcome: str, status: str) -> str:
    """A side's outcome as the terminal named it (``xfail``, ``xpass``), else its verdict status (a run stored
    before outcomes were kept); ``absent`` where the run lacks the prediction."""
    return outcome or status or "absent"


def render_comparison(a: RunSummary, b: RunSummary, rows: list[ComparisonRow] | None = None, *,
                      width: int = 120, earlier: int | None = None) -> list[str]:
    """Aligned columns that fit ``width`` (120 by default; the CLI passes the terminal's, ``COLUMNS``): id,
    quantity, predicted, A and B (the outcome pytest reported: ``xfail`` for an expected miss; measured), the
    change, whether it is beyond the measurements' noise, and the model values. What gives way when they do not
    fit is :func:`_layout`'s. Each row's values in its prediction's unit, one number style throughout (the module's
    docstring). ``earlier``: how many earlier nights of B's setup the store given holds (None: no store was given),
    so the footer says what is missing, not to pass ``--store`` where it was (trial s26a #10)."""
    rows = compare_runs(a, b) if rows is None else rows
    cells = []
    for r in rows:
        model = _model_cell(r)
        change = _percent(r.change_rel) if r.change_rel is not None else ""
        if not change and r.measured_a is not None and r.measured_b is not None:
            change = f"{_fmt(r.measured_a, r)} → {_fmt(r.measured_b, r)}"  # from zero: no relative change exists
        sig = {"significant": "yes", "uncertain": "uncertain", "noise": "no", "no interval": "?",
               "not held": "not judged", "machine": "not judged (machine)",
               "arrivals": "not judged (arrivals)", "workload": "not judged (workload)",
               "redefined": "not judged (prediction changed)"}.get(
            r.significance, "")
        if r.significance == "noise" and r.noise:
            # within this much the two measurements cannot tell a move from noise
            sig = f"no ±{_fmt(r.noise, r, NOISE_DIGITS)}"
        cells.append({
            "id": printable(r.prediction_id), "quantity": printable(r.quantity), "predicted": _ink(r),
            "A": _shown(r.outcome_a, r.status_a), "measured A": _fmt(r.measured_a, r),
            "B": _shown(r.outcome_b, r.status_b), "measured B": _fmt(r.measured_b, r), "change": change,
            "beyond noise": sig, "model": model,
        })
    lay = _layout(cells, width)
    w = lay.widths

    def cell(x: dict[str, str], c: str) -> str:
        return f"{x[c]:>{w[c]}}" if c in _RIGHT else f"{x[c]:<{w[c]}}"

    lines = [*_head("A", a, width), *_head("B", b, width), ""]
    if lay.stacked:  # no table fits: each id on its own line, its figures packed below it
        for x in cells:
            lines.append(_id_line(x["id"], x["quantity"], width))
            lines += _stacked_fields(x, width)
    head = lay.indent + "  ".join(f"{c:>{w[c]}}" if c in _RIGHT else f"{c:<{w[c]}}" for c in lay.cols).rstrip()
    if lay.own_line and not lay.stacked:
        lines.append("id · quantity" if lay.quantity_on_id_line else "id")
    if not lay.stacked:
        lines += [head, "-" * min(width, len(head))]
    for x in cells if not lay.stacked else ():
        if lay.own_line:
            lines.append(_id_line(x["id"], x["quantity"] if lay.quantity_on_id_line else "", width))
        lines.append((lay.indent + "  ".join(cell(x, c) for c in lay.cols)).rstrip())
    moved = measured_in_both(rows)
    significant = [r for r in rows if r.significance == "significant"]
    lines.append("")
    if lay.model_left_out:
        lines += textwrap.wrap(f"(the model column is left out to fit {width} columns: a wider terminal, or "
                               "--json, has it)", width)
    if not moved:
        lines += textwrap.wrap(f"{len(rows)} predictions; 0 measured in both runs: NOTHING WAS COMPARED (the runs "
                               "share no measured prediction: different setups or prediction files?)", width)
        return lines
    # the largest change among the rows compared: a figure of another workload, window or machine is not a change
    largest = max((r for r in moved if r.change_rel is not None and r.significance not in _NOT_JUDGED),
                  key=lambda r: abs(r.change_rel or 0), default=None)
    unknown = sum(r.significance == "no interval" for r in rows)
    unheld = sum(r.significance == "not held" for r in rows)
    off_machine = sum(r.significance == "machine" for r in rows)
    respanned = sum(r.significance == "arrivals" for r in rows)
    reworked = sum(r.significance == "workload" for r in rows)
    redefined = sum(r.significance == "redefined" for r in rows)
    with_nights = sum(r.nights > 0 for r in moved)
    uncertain = sum(r.significance == "uncertain" for r in rows)
    noise_text = ("both runs' 95 % intervals and, for " + (f"{with_nights} of the {len(moved)} measured in both"
                                                            if with_nights < len(moved) else "each")
                  + ", the spread of B's 3 or more earlier nights in the store: drift's test") if with_nights else (
        "both runs' 95 % intervals; the run-to-run noise needs 3 or more earlier nights of B's setup in a store "
        + ("(--store), as drift needs them" if earlier is None else
           f"as drift needs them, and the store holds {earlier} before B of its setup"
           + (" with these measured" if earlier >= 3 else "")))
    text = (f"{len(rows)} predictions; {len(moved)} measured in both runs; {len(significant)} moved beyond the "
            f"noise ({noise_text})"
            + (f"; {uncertain} uncertain (beyond both runs' intervals, but fewer than 3 earlier nights of B's setup "
               "measured it: the run-to-run noise is not known yet, as drift says)" if uncertain else "")
            + (f"; {unknown} without an interval in either run (?)" if unknown else "")
            + (f"; {unheld} not judged (a point did not hold its concurrency in one run)" if unheld else "")
            + (f"; {off_machine} not judged (machine): the two runs' host probes are further apart than --machine "
               "allows, so one machine ran slower and every figure moved with it" if off_machine else "")
            + (f"; {respanned} not judged (arrivals): their open-loop point spread its sends otherwise in the two "
               "runs (sweep.arrival_span)" if respanned else "")
            + (f"; {reworked} not judged (workload): their points ran other prompt or output lengths, or another "
               "dataset, in the two runs" if reworked else "")
            + (f"; {redefined} not judged (prediction changed): the prediction measures another quantity or window "
               "in B" if redefined else "")
            + (f"; largest change {printable(largest.prediction_id)} {_percent(largest.change_rel or 0)}"
               if largest is not None else ""))
    # an id is not cut at its hyphens, nor a change from its "%" (trial s26a #11: "+40.0" / "%" on two lines)
    kept = textwrap.wrap(text.replace(" %", "\u00a0%"), width, break_on_hyphens=False) or [text]
    lines += [ln.replace("\u00a0", " ") for ln in kept]
    return lines


def comparison_json(a: RunSummary, b: RunSummary, rows: list[ComparisonRow] | None = None) -> dict[str, Any]:
    """What ``roofline compare --json`` prints: both runs' headers, the rows and the counts. Every number of a row
    is the stored SI base value, and its ``unit`` names that SI unit (:data:`SI_UNIT`: ``s`` for a latency the
    table prints in ms); ``written_unit`` is the prediction's own unit, the table's. ``change_rel`` is a fraction."""
    rows = compare_runs(a, b) if rows is None else rows

    def head(s: RunSummary) -> dict[str, Any]:
        return {"run_id": s.run_id, "started_at": s.started_at, "commit": s.commit, "branch": s.branch,
                "label": s.label, "mode": s.mode, "setup": asdict(s.setup)}

    def row(r: ComparisonRow) -> dict[str, Any]:
        d = r.to_dict()
        d["unit"], d["written_unit"] = SI_UNIT.get(r.dimension, ""), r.unit
        d["at"] = {k: _at_value(x) for k, x in r.at.items()}  # {"concurrency": 32}, not "32" (trial s24 L9)
        return d

    both = [r for r in rows
            if r.significance and r.significance not in _NOT_JUDGED]
    return {"a": head(a), "b": head(b), "rows": [row(r) for r in rows],
            "measured_in_both": len(measured_in_both(rows)), "compared": len(both),
            "significant": sum(r.significance == "significant" for r in both),
            "uncertain": sum(r.significance == "uncertain" for r in both)}


_LIST_COLUMNS = ("run id", "started at", "setup", "commit", "mode", "measured", "files")
#: the columns that stay on a run's first line when the run does not fit on one line; the others go on a second line
_LIST_FIRST = ("run id", "started at", "measured")


def _files_text(s: RunSummary) -> str:
    """The prediction files a run checked, as the history key holds them (``predictions/cpu-tiny.yaml``)."""
    return ", ".join(printable(f) for f in s.files) or "—"


def _list_cells(s: RunSummary) -> dict[str, str]:
    return {"run id": printable(s.run_id), "started at": printable(s.started_at),
            "setup": printable(s.setup.text()), "commit": printable(s.commit or "—"), "mode": printable(s.mode),
            "measured": f"{sum(v.measured is not None for v in s.values):,}", "files": _files_text(s),
            "label": printable(s.label or "")}


def render_run_list(runs: Sequence[RunSummary], *, width: int | None = None) -> list[str]:
    """``roofline compare --store URI`` with no runs named: the store's runs, oldest first and newest last (as the
    store lists them), one a line: id, start, setup, commit, mode, how many measured values, the prediction files
    it checked (their paths from the repository root, as the history key holds them: several files of one setup
    run in sessions of their own are told apart by it) and the label, where a run has one, so that two ids can be
    picked for ``roofline compare``. Wider than ``width`` (default: the terminal's, ``COLUMNS``), each run is two
    lines: its id, start and measured values, then its setup, commit, mode, files and label."""
    if width is None:
        width = shutil.get_terminal_size((120, 24)).columns
    cells = [_list_cells(s) for s in runs]
    cols = [*_LIST_COLUMNS, *(["label"] if any(c["label"] for c in cells) else [])]
    w = {c: max([len(c)] + [len(x[c]) for x in cells]) for c in cols}

    def line(x: dict[str, str], cols: Sequence[str]) -> str:
        return "  ".join(f"{x[c]:>{w[c]}}" if c == "measured" else f"{x[c]:<{w[c]}}" for c in cols).rstrip()

    n = len(runs)
    foot = ["", *textwrap.wrap(f"{n} run{'s' if n != 1 else ''}, newest last; compare two with roofline compare "
                               "--store URI A B (an id's unique beginning is enough)", max(40, width))]
    head = line({c: c for c in cols}, cols)
    if len(head) <= width:
        return [head, "-" * len(head), *(line(x, cols) for x in cells), *foot]
    first = [c for c in cols if c in _LIST_FIRST]
    head = line({c: c for c in first}, first)
    second = [c for c in cols if c not in first]
    out = [head, "    " + " · ".join(second), "-" * min(width, len(head))]
    for x in cells:
        out.append(line(x, first))
        words = {**x, "commit": "no commit"} if x["commit"] == "—" else x
        out += textwrap.wrap(" · ".join(words[c] for c in second if words[c]), width, initial_indent="    ",
                             subsequent_indent="      ", break_on_hyphens=False) or ["    —"]
    return [*out, *foot]


def run_list_json(runs: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """``roofline compare --store URI --json`` with no runs named: the runs as the listing shows them, newest last."""
    return [{"run_id": s.run_id, "started_at": s.started_at, "setup": asdict(s.setup), "commit": s.commit,
             "branch": s.branch, "label": s.label, "mode": s.mode,
             "measured_values": sum(v.measured is not None for v in s.values), "files": s.files} for s in runs]
