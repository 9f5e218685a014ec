"""What the HTML reports share: outcomes, sort keys, a verdict explained in words, and the tolerance-band chart.

Everything here reads a :class:`~pytest_roofline.scoring.Verdict` (what travels on a pytest report as
``report.roofline`` is its ``to_dict()``, turned back by ``Verdict.from_dict`` where it arrives), so the
pytest-html hooks and the standalone scorecard describe a prediction in the same words. No pytest import.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, TypeGuard

from pytest_roofline.model.band_reasons import NO_BAND_OTHER, NO_BAND_REASON, TP_POOL_CAVEAT_TEXT
from pytest_roofline.model.bands import BAND_MEANING
from pytest_roofline.report.resources import css
from pytest_roofline.report.svg import PALETTE, esc, text_box
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus
from pytest_roofline.units import format_value, signed_percent

__all__ = [
    "OUTCOMES", "OUTCOME_LABEL", "OUTCOME_COLOR", "outcome_of_verdict", "outcome_of_report", "sort_key", "fmt",
    "at_text", "label_of", "is_number", "explain_lines", "explain_html", "band_svg", "band_values", "band_domain",
    "EXPLAIN_CSS", "id_html", "Row", "finite_or_none", "fmt_value", "band_short", "serving_html",
    "no_band_reason", "tp_pool_caveat", "KV_POOL_QUANTITIES",
]

#: outcomes in the order they are listed (worst first)
OUTCOMES = ("error", "failed", "xpassed", "inconclusive", "xfailed", "skipped", "passed")
OUTCOME_LABEL = {"passed": "pass", "failed": "FAIL", "xfailed": "xfail", "xpassed": "XPASS", "skipped": "skip",
                 "error": "ERROR", "inconclusive": "inconclusive"}
#: inconclusive (the measured interval straddles a tolerance boundary): Okabe-Ito's reddish purple, apart from
#: pass green, fail vermillion and skip grey
OUTCOME_COLOR = {"passed": PALETTE["green"], "failed": PALETTE["red"], "xfailed": "#9c6ade",
                 "xpassed": PALETTE["orange"], "skipped": PALETTE["grey"], "error": "#a50f15",
                 "inconclusive": "#CC79A7"}


#: a row of a page: the verdict, its pytest outcome and its prediction (None when the file no longer has it)
Row = tuple[Verdict, str, Any]


def is_number(x: object) -> TypeGuard[float]:
    """A finite int or float (not a bool); narrows ``x`` to a number where it holds."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ----------------------------------------------------------------------------------------------------------------
# outcomes
# ----------------------------------------------------------------------------------------------------------------
def outcome_of_verdict(v: Verdict, xfail: Any = None) -> str:
    """The pytest outcome a verdict gives: ``xfail`` is the prediction's ``spec.Expectation`` (or None)."""
    status = v.status
    if status is VerdictStatus.ERROR:
        return "error"
    if status is VerdictStatus.SKIP:
        return "skipped"
    if status is VerdictStatus.INCONCLUSIVE:
        return "inconclusive"
    applies = xfail is not None and xfail.applies(v.mode)
    if status is VerdictStatus.FAIL:
        return "xfailed" if applies else "failed"
    if status is VerdictStatus.PASS:
        if applies:
            return "failed" if getattr(xfail, "strict", True) else "xpassed"
        return "passed"
    return "skipped"


def outcome_of_report(report: Any) -> str:
    """The outcome of a pytest report, as the terminal summary and pytest-html name it."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else ("failed" if report.failed else "xpassed")
    if getattr(report, "when", "call") in ("setup", "teardown", "collect") and report.failed:
        return "error"
    carried = getattr(report, "roofline", None)  # the verdict's dict form, as it travels on a pytest report
    if report.skipped and carried and Verdict.from_dict(carried).status is VerdictStatus.INCONCLUSIVE:
        return "inconclusive"
    return str(report.outcome)


# ----------------------------------------------------------------------------------------------------------------
# sort keys
# ----------------------------------------------------------------------------------------------------------------
def sort_key(x: Any) -> str:
    """A fixed-width string whose lexicographic order is the numeric order of ``x``.

    pytest-html 4.2 compares sortable cells as strings (``a[key] > b[key]`` in its sort.js), so numeric cells
    carry this key first. Layout: a class digit (0 = −∞, 1 = negative, 2 = zero, 3 = positive, 4 = +∞,
    9 = no number), then for finite values a 3-digit biased decimal exponent and 16 mantissa digits; negative
    values complement both so that larger magnitudes sort first.
    """
    if not isinstance(x, (int, float)) or isinstance(x, bool) or x != x:
        return "9" + "0" * 19
    if x == math.inf:
        return "4" + "0" * 19
    if x == -math.inf:
        return "0" + "0" * 19
    if x == 0:
        return "2" + "0" * 19
    mant, _, exp = f"{abs(float(x)):.15e}".partition("e")
    digits = mant.replace(".", "")
    e = int(exp) + 400
    if x > 0:
        return f"3{e:03d}{digits}"
    comp = "".join(str(9 - int(d)) for d in digits)
    return f"1{999 - e:03d}{comp}"


def text_sort_key(s: str) -> str:
    """Strings sort as themselves (lower-cased), after a fixed class digit so empty cells sort last."""
    return ("1" + s.lower()) if s else "9"


# ----------------------------------------------------------------------------------------------------------------
# formatting
# ----------------------------------------------------------------------------------------------------------------
def fmt(v: Verdict, si: Any, digits: int = 5) -> str:
    """A value of this verdict's quantity, in the unit the prediction was written in."""
    return fmt_value(v.dimension, v.unit, si, digits)


def fmt_value(dimension: str, unit: str, si: Any, digits: int = 5) -> str:
    """A value of a quantity of ``dimension``, in ``unit`` ("": the dimension's own)."""
    if si is None:
        return "none"
    if isinstance(si, bool):
        return "true" if si else "false"
    if isinstance(si, str):
        return si
    return _trim(format_value(float(si), dimension or "count", unit or None, digits=digits))


def _trim(text: str) -> str:
    """'0.24000 FLOP/byte' → '0.24 FLOP/byte' (significant-figure padding reads as false precision here)."""
    m = re.match(r"^([-+−]?[\d,]*\.\d*?)0+(?=\s|$)", text)
    if m is None or "e" in text.split(" ")[0].lower():
        return text
    head = m.group(1).rstrip(".")
    return head + text[m.end():]


def _split_unit(text: str) -> tuple[str, str]:
    """'71.003 tok/s' → ('71.003', 'tok/s'); '0.75' → ('0.75', '')."""
    num, _, unit = str(text).strip().partition(" ")
    return num, unit.strip()


def band_short(band: str, value_text: str = "") -> str:
    """A band's range in the compact ``[lo–hi]`` form the terminal's serving column uses: '71.003 tok/s – 102.89
    tok/s' → '[71.003–102.89]'. The unit is left out where both ends and ``value_text`` (the value it is written
    under) share it; where they do not (a band that crosses 1 s: '950 ms – 1.2 s') each end keeps its own."""
    lo, sep, hi = str(band).partition(" – ")
    if not sep:
        return f"[{band.strip()}]" if band.strip() else ""
    (lo_n, lo_u), (hi_n, hi_u) = _split_unit(lo), _split_unit(hi)
    units = {lo_u, hi_u} | ({_split_unit(value_text)[1]} if value_text else set())
    if len(units) == 1:
        return f"[{lo_n}–{hi_n}]"
    return f"[{lo.strip()} – {hi.strip()}]"


def serving_html(v: Verdict) -> str:
    """The serving column's cell content: the serving model's value on one line that never breaks inside it, and
    under it, smaller, its band as ``[lo–hi]`` (the full range and what it means in the tooltip) where it has one,
    else "no band" with the reason (:func:`no_band_reason`) as its tooltip and in a screen reader's text."""
    if not v.serving_text:
        return ""
    out = f'<span class="sval">{esc(v.serving_text)}</span>'
    if v.serving_band_range:
        # the verdict's own band text: its range and what it means, one host's recordings on the CPU (scoring)
        tip = f"the serving model's band: {v.serving_band_text or v.serving_band_range + ', ' + BAND_MEANING}"
        out += f'<span class="sband" title="{esc(tip)}">{esc(band_short(v.serving_band_range, v.serving_text))}</span>'
    else:
        why = no_band_reason(v)
        out += (f'<span class="snb" title="{esc(why)}">no band'
                f'<span class="rl-sr">: {esc(why.removeprefix("no band: "))}</span></span>')
    return out


#: a quantity the serving model computes over the whole sweep (a knee, goodput over the points): no point's band
_WHOLE_SWEEP_NO_BAND = ("no band: a whole-sweep figure; the serving model's bands are per sweep point, for output "
                        "tok/s, TTFT p50 and TPOT p50 (model/bands.py)")
_WHOLE_SWEEP = frozenset({"goodput", "goodput_concurrency", "max_concurrency_without_queueing",
                          "max_concurrency_without_preemption"})
#: a verdict quantity's serving-model field where the names differ (``roofline predict --simulate``'s band notes)
_SERVING_FIELD = {"request_throughput": "request_throughput_req_per_s",
                  "per_request_throughput": "per_request_output_tok_per_s", "e2e_p50": "e2e_p50_ms",
                  "e2e_p99": "e2e_p99_ms", "e2e_mean": "e2e_mean_ms"}


def no_band_reason(v: Verdict) -> str:
    """Why the serving model's value of ``v`` has no band: the point's own note (a regime with too few sources,
    ``model.bands.band_note``), else the reason ``roofline predict --simulate`` gives for the field
    (``model.band_reasons.NO_BAND_REASON`` / ``NO_BAND_OTHER``), else why a whole-sweep or other figure has none."""
    if v.serving_band_note:
        return v.serving_band_note
    reasons = {**NO_BAND_OTHER, **NO_BAND_REASON}
    q = str(v.quantity)
    for name in (_SERVING_FIELD.get(q, ""), f"{q}_ms", q):
        if name in reasons:
            return reasons[name]
    if "knee" in q or q in _WHOLE_SWEEP:
        return _WHOLE_SWEEP_NO_BAND
    return ("no band: the serving model's bands cover output tok/s, TTFT p50 and TPOT p50 at a sweep point "
            "(model/bands.py); this quantity is none of them")


#: the KV-pool quantities whose model value under tensor or pipeline parallelism is an upper bound
KV_POOL_QUANTITIES = frozenset({"available_kv_bytes", "num_gpu_blocks", "kv_cache_tokens", "max_concurrency",
                                "max_concurrency_without_preemption"})


def tp_pool_caveat(v: Verdict) -> str:
    """The documented caveat of a KV-pool value on more than one GPU (``model.band_reasons.TP_POOL_CAVEAT_TEXT``:
    public TP startup logs measured such pools smaller, never larger), "" on one GPU or another quantity. The GPU
    count is the model's own ``parallel`` input ("tensor_parallel_size 4 x pipeline_parallel_size 1 = 4 GPUs")."""
    if v.quantity not in KV_POOL_QUANTITIES:
        return ""
    m = re.search(r"= (\d+) GPUs", str((v.model_inputs or {}).get("parallel", "")))
    if not m or int(m.group(1)) <= 1:
        return ""
    return f"{int(m.group(1))} GPUs: {TP_POOL_CAVEAT_TEXT.removeprefix('more than one GPU: ')}"


def id_html(pid: str) -> str:
    """A prediction id as HTML that may wrap only between its tokens, never inside one: each token (up to and
    including a ``[``, ``,``, ``-`` or ``_``) is a ``<span class="rl-tok">`` kept whole by ``white-space: nowrap``,
    with a ``<wbr>`` between them. ``littles-law[concurrency=16]`` breaks after ``-``, after ``[`` or not at all, so
    C=16 never reads as C=1 at a line end, and a long id (``WRONG-tput-c16-outside-band-below``) wraps in its column
    instead of running over the next one (trial s18 M5)."""
    toks = re.findall(r"[^\[,\-_]*[\[,\-_]|[^\[,\-_]+", str(pid))
    return "<wbr>".join(f'<span class="rl-tok">{esc(t)}</span>' for t in toks if t)


def at_text(v: Verdict) -> str:
    at = v.at or {}
    return ", ".join(f"{k}={val}" for k, val in at.items())


def label_of(v: Verdict) -> str:
    a = at_text(v)
    return f"{v.quantity}" + (f" at {a}" if a else "")


def _pct(x: float) -> str:
    return signed_percent(x, 2) if abs(x) < 0.1 else (signed_percent(x, 1) if abs(x) < 10 else signed_percent(x, 0))


def _checked_name(v: Verdict) -> str:
    return "measured" if v.mode is VerdictMode.MEASURED else "the model"


def _reference_name(v: Verdict) -> str:
    return "the model" if str(v.predicted_text).strip().lower() == "model" else "the ink"


def finite_or_none(x: float | None) -> float | None:
    """``x`` where it is a finite number, else None (an open side of a band, as the verdict's dict form has it)."""
    return x if x is not None and math.isfinite(x) else None


def _bounds(v: Verdict) -> tuple[float, float] | None:
    """The allowed interval (±inf where open), or None when the check was not a numeric band."""
    return v.band()


# ----------------------------------------------------------------------------------------------------------------
# the verdict in words
# ----------------------------------------------------------------------------------------------------------------
def explain_lines(v: Verdict) -> list[str]:
    """The diff in words and numbers: what was compared, by how much it is off, and where the band lies."""
    out: list[str] = []
    status = v.status
    if status in (VerdictStatus.SKIP, VerdictStatus.ERROR):
        out.append(("Not checked: " if status is VerdictStatus.SKIP else "Could not be scored: ") + str(v.reason))
        return out
    ref, chk = v.reference_value, v.checked_value
    who, ref_who = _checked_name(v), _reference_name(v)
    if not (is_number(ref) and is_number(chk)):
        if ref is None and chk is None and v.predicted_text:
            out.append(f"{ref_who.capitalize()} says {v.predicted_text}; {who} agrees.")
        else:
            same = ref == chk
            ref_text = fmt(v, ref) if ref is not None else v.predicted_text
            out.append(f"{ref_who.capitalize()} says {ref_text}"
                       f"; {who} gives {fmt(v, chk)}: {'a match' if same else 'they differ'}"
                       f"{' (an exact check)' if v.tolerance_text == 'exact' else ''}.")
        return out
    ref, chk = float(ref), float(chk)
    point = ""
    if v.mode is VerdictMode.MEASURED and v.measured_points:
        pts = v.measured_points
        point = f" (point{'s' if len(pts) > 1 else ''} {', '.join(pts[:4])}{'…' if len(pts) > 4 else ''})"
    diff = ref - chk
    if diff == 0:
        out.append(f"{who.capitalize()} gives {fmt(v, chk)}{point}, exactly {ref_who}'s {fmt(v, ref)}.")
    else:
        # relative to the reference (the ink), as the error column is: (checked − ink) ÷ |ink|
        rel = -diff / abs(ref) if ref else None
        direction = "below" if diff > 0 else "above"
        rel_txt = f"{abs(rel):.2%} " if rel is not None and abs(rel) < 0.1 else (
            f"{abs(rel):.1%} " if rel is not None else "")
        line = (f"{who.capitalize()} gives {fmt(v, chk)}{point}, {rel_txt}{direction} {ref_who}'s {fmt(v, ref)} "
                f"({'−' if diff > 0 else '+'}{fmt(v, abs(diff))}).")
        if chk and ref and (ref / chk > 1.5 or chk / ref > 1.5) and ref / chk > 0:
            line += f" That is {max(ref / chk, chk / ref):.2f}× {'too high' if ref > chk else 'too low'}."
        out.append(line)
    b = _bounds(v)
    if b is not None:
        lo, hi = b
        lo_t = fmt(v, lo) if math.isfinite(lo) else "−∞"
        hi_t = fmt(v, hi) if math.isfinite(hi) else "+∞"
        band = f"The tolerance {v.tolerance_text} around {ref_who} allows [{lo_t}, {hi_t}]"
        if chk < lo:
            band += f"; {who} is below it by {fmt(v, lo - chk)}."
        elif chk > hi:
            band += f"; {who} is above it by {fmt(v, chk - hi)}."
        else:
            if math.isfinite(lo) and math.isfinite(hi) and hi > lo:
                band += f"; {who} is inside, at {(chk - lo) / (hi - lo):.0%} of the band's width."
            else:
                band += f"; {who} is inside."
        out.append(band)
        if v.status is VerdictStatus.INCONCLUSIVE:
            more = v.requests_to_decide
            out.append(f"But the measurement's interval {v.interval_text} straddles the band's edge: "
                       "inconclusive, neither a pass nor a miss"
                       + (f"; about {more} more requests at the point would decide it." if more is not None
                          else "."))
    elif v.tolerance_text:
        out.append(f"Tolerance: {v.tolerance_text}.")
    mv = v.model_value
    if v.mode is VerdictMode.MEASURED and is_number(mv) and _reference_name(v) == "the ink" and chk:
        ink_vs_model = (ref - float(mv)) / abs(float(mv)) if mv else None
        meas_of_model = chk / float(mv) if mv else None
        parts = [f"The model gives {fmt(v, mv)}"]
        if ink_vs_model is not None:
            parts.append(f"the ink is {_pct(ink_vs_model)} off the model (the arithmetic)")
        if meas_of_model is not None:
            parts.append(f"the measurement is {meas_of_model:.1%} of the model (the model against reality)")
        out.append(": ".join(parts[:1]) + ("; " + "; ".join(parts[1:]) if len(parts) > 1 else "") + ".")
    sv = v.serving_value
    if (v.mode is VerdictMode.MEASURED and is_number(sv) and v.model_source != "serving" and float(sv)
            and chk):
        out.append(f"The serving model gives {fmt(v, sv)}: the measurement is {chk / float(sv):.1%} of it.")
    return out


def explain_html(v: Verdict, outcome: str | None = None, *, chart: bool = True,
                 heading: bool = True) -> str:
    """A self-contained HTML fragment: the diff in words and numbers, the band chart, the model's inputs,
    and for a miss the diagnosis. Styled by :data:`EXPLAIN_CSS` (class names all start with ``rl-``)."""
    parts = ['<div class="rl-explain">']
    if heading:
        oc = outcome or ""
        badge = (f'<span class="rl-badge rl-{esc(oc)}">{esc(OUTCOME_LABEL.get(oc, oc))}</span> ' if oc else "")
        parts.append(f'<div class="rl-head">{badge}<b>{esc(v.id)}</b> — {esc(label_of(v))}'
                     f' <span class="rl-mode">[{esc(v.mode.value)} check]</span></div>')
    left = ["<ul class=\"rl-words\">" + "".join(f"<li>{esc(s)}</li>" for s in explain_lines(v)) + "</ul>"]
    if chart:
        svg = band_svg(v, width=520, height=64, labels=True)
        if svg:
            left.append(f'<div class="rl-band">{svg}</div>')
    # the one list the terminal's explain() renders too; the xfail's reason is the paragraph under it here
    rows = v.explanation_rows(lambda x: fmt(v, x), xfail_below=True)
    right = '<table class="rl-kv">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(val)}</td></tr>"
                                              for k, val in rows) + "</table>"
    parts.append(f'<div class="rl-cols"><div class="rl-left">{"".join(left)}</div>'
                 f'<div class="rl-right">{right}</div></div>')
    if v.xfail_reason:
        parts.append(f'<p class="rl-xfail"><b>Expected to miss:</b> {esc(" ".join(v.xfail_reason.split()))}</p>')
    if v.diagnosis:
        parts.append('<p class="rl-sub">Diagnosis</p><ul class="rl-diag">'
                     + "".join(f"<li>{esc(d)}</li>" for d in v.diagnosis) + "</ul>")
    if v.model_explanation or v.model_inputs:
        summ = f"How the model got {v.model_text or 'its value'}" + (
            f": {v.model_explanation}" if v.model_explanation else "")
        inputs = ""
        if v.model_inputs:
            inputs = ('<table class="rl-kv rl-inputs">' + "".join(
                f"<tr><th>{esc(k)}</th><td>{esc(val)}</td></tr>" for k, val in v.model_inputs.items()) + "</table>")
        parts.append(f'<details class="rl-model"{" open" if v.status is VerdictStatus.FAIL else ""}>'
                     f"<summary>{esc(summ)}</summary>{inputs}</details>")
    if v.serving_explanation and v.serving_explanation != v.model_explanation:
        parts.append(f'<p class="rl-sub">The serving model</p><p class="rl-serving">'
                     f'{esc(v.serving_explanation)}</p>')
    if v.measured_notes:
        parts.append('<p class="rl-sub">About the measurement</p><ul class="rl-notes">'
                     + "".join(f"<li>{esc(n)}</li>" for n in v.measured_notes) + "</ul>")
    if v.contaminated:
        parts.append('<p class="rl-warn">The measurement is contaminated by prefix-cache hits: prompts were served '
                     "partly from cache, so latency and throughput look better than a cold cache would give.</p>")
    if v.notes:
        parts.append(f'<p class="rl-notes-text"><b>Notes:</b> {esc(" ".join(str(v.notes).split()))}</p>')
    if v.log_tail:
        parts.append(f'<p class="rl-sub">Engine log tail</p><pre class="rl-log">{esc(v.log_tail)}</pre>')
    if v.file:
        parts.append(f'<p class="rl-where">{esc(v.file)}:{esc(v.line)}</p>')
    parts.append("</div>")
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------------------
# the tolerance band
# ----------------------------------------------------------------------------------------------------------------
def band_values(v: Verdict) -> list[float]:
    """The finite values a band drawing of ``v`` spans (bounds, reference, checked, ink, model)."""
    ref, chk = v.reference_value, v.checked_value
    if not (is_number(ref) and is_number(chk)):
        return []
    lo, hi = _bounds(v) or (float(ref), float(ref))
    ink = v.predicted_value
    model = v.model_value if v.mode is VerdictMode.MEASURED else None
    return [float(x) for x in (lo, hi, ref, chk, ink, model) if is_number(x) and math.isfinite(float(x))]


def band_domain(vs: Iterable[Verdict]) -> tuple[float, float] | None:
    """The ratios to the reference that the bands of ``vs`` span (None when no band has a positive reference)."""
    ratios = []
    for v in vs:
        ref = v.reference_value
        if is_number(ref) and float(ref) > 0:
            ratios += [x / float(ref) for x in band_values(v)]
    return (min(ratios), max(ratios)) if ratios else None


def band_svg(v: Verdict, *, width: int = 200, height: int = 22, labels: bool = False,
             domain: tuple[float, float] | None = None) -> str:
    """The checked value against its tolerance band, as a small inline SVG ('' when there is nothing to draw).

    Shaded: the allowed interval around the reference; black tick: the value in ink; filled dot: the value
    checked (the measurement, or the model in a math check), coloured by the verdict; hollow diamond: the
    model's value in a measured check. With ``labels`` the ends of the band and the values are written out.
    ``domain`` (lowest, highest ratio to the reference, see :func:`band_domain`) gives rows of one quantity the
    same relative scale, so a miss of −58% sits further from its band than one of −28%; every marker stays a
    full radius inside the drawing.
    """
    ref, chk = v.reference_value, v.checked_value
    if not (is_number(ref) and is_number(chk)):
        return ""
    ref, chk = float(ref), float(chk)
    b = _bounds(v) or (ref, ref)
    lo, hi = b
    ink = v.predicted_value
    model = v.model_value if v.mode is VerdictMode.MEASURED else None
    vals = [x for x in (lo, hi, ref, chk, ink if is_number(ink) else None, model if is_number(model) else None)
            if x is not None and math.isfinite(x)]
    if domain is not None and ref > 0:  # a shared scale, as ratios to the reference
        vals += [ref * float(d) for d in domain if math.isfinite(d)]
    dmin, dmax = min(vals), max(vals)
    use_log = dmin > 0 and dmax / dmin > 30

    def f(x: float) -> float:
        return math.log10(x) if use_log else x

    a, z = f(dmin), f(dmax)
    span = z - a
    if span <= 0:
        span = abs(a) * 0.02 or 1.0
        a, z = a - span, z + span
        span = z - a
    a, z = a - span * 0.12, z + span * 0.12
    pad_l, pad_r = (9, 9)  # > the diamond's 5 px half-width + its stroke: no marker is cut at an edge
    top = 14 if labels else 3
    bar_h = height - top - (16 if labels else 3)

    def X(x: float) -> float:
        if x == -math.inf:
            return pad_l - 2
        if x == math.inf:
            return width - pad_r + 2
        if use_log and x <= 0:
            return pad_l - 2
        return pad_l + (f(x) - a) / (z - a) * (width - pad_l - pad_r)

    status = v.status
    color = {VerdictStatus.PASS: PALETTE["green"], VerdictStatus.FAIL: PALETTE["red"]}.get(status, PALETTE["grey"])
    cy = top + bar_h / 2
    title = (f"allowed [{fmt(v, lo) if math.isfinite(lo) else '−∞'}, {fmt(v, hi) if math.isfinite(hi) else '+∞'}]; "
             f"ink {v.predicted_text or '—'}; {'measured' if v.mode is VerdictMode.MEASURED else 'model'} "
             f"{fmt(v, chk)}" + (f"; model {fmt(v, model)}" if is_number(model) else ""))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="rl-bandsvg" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="{esc(title)}" font-size="10" '
           f'font-family="system-ui, sans-serif"><title>{esc(title)}</title>']
    out.append(f'<line x1="{pad_l}" y1="{cy:.1f}" x2="{width - pad_r}" y2="{cy:.1f}" stroke="#bbb"/>')
    x0, x1 = max(pad_l - 2, X(lo)), min(width - pad_r + 2, X(hi))
    band_col = "#9ecae1" if status is not VerdictStatus.FAIL else "#fcbba1"
    out.append(f'<rect x="{x0:.1f}" y="{top:.1f}" width="{max(1.5, x1 - x0):.1f}" height="{bar_h:.1f}" '
               f'fill="{band_col}" stroke="#6a9fc7" stroke-width="0.8" rx="2"/>')
    if not math.isfinite(lo):
        out.append(f'<path d="M{x0 + 6:.1f},{top:.1f}L{x0:.1f},{cy:.1f}L{x0 + 6:.1f},{top + bar_h:.1f}" fill="none" '
                   'stroke="#6a9fc7"/>')
    if not math.isfinite(hi):
        out.append(f'<path d="M{x1 - 6:.1f},{top:.1f}L{x1:.1f},{cy:.1f}L{x1 - 6:.1f},{top + bar_h:.1f}" fill="none" '
                   'stroke="#6a9fc7"/>')
    if is_number(ink):
        xi = X(float(ink))
        out.append(f'<line x1="{xi:.1f}" y1="{top - 2:.1f}" x2="{xi:.1f}" y2="{top + bar_h + 2:.1f}" stroke="#111" '
                   f'stroke-width="2"><title>ink {esc(v.predicted_text)}</title></line>')
    elif ref is not None:
        xr = X(ref)
        out.append(f'<line x1="{xr:.1f}" y1="{top - 2:.1f}" x2="{xr:.1f}" y2="{top + bar_h + 2:.1f}" stroke="#111" '
                   f'stroke-width="2" stroke-dasharray="2 2"><title>reference {esc(fmt(v, ref))}</title></line>')
    xc, r = X(chk), min(4.5, bar_h / 2)
    checked_word = "measured" if v.mode is VerdictMode.MEASURED else "model"
    out.append(f'<circle cx="{xc:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="{color}" stroke="white" stroke-width="1">'
               f'<title>{checked_word} {esc(fmt(v, chk))}</title></circle>')
    if is_number(model):
        xm, k = X(float(model)), min(5.0, bar_h / 2)
        out.append(f'<polygon points="{xm:.1f},{cy - k:.1f} {xm + k:.1f},{cy:.1f} {xm:.1f},{cy + k:.1f} '
                   f'{xm - k:.1f},{cy:.1f}" fill="none" stroke="{PALETTE["blue"]}" stroke-width="1.6">'
                   f'<title>model {esc(fmt(v, model))}</title></polygon>')
    if labels:
        def lab(x: float, y: float, s: str, anchor: str, col: str = "#444") -> str:
            return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{col}">{esc(s)}</text>'

        out.extend(lab(x, height - 3, s, anchor) for x, s, anchor in _end_labels(
            fmt(v, lo, 4) if math.isfinite(lo) else None,
            fmt(v, hi, 4) if math.isfinite(hi) and hi != lo else None, x0, x1, width))
        who = "measured" if v.mode is VerdictMode.MEASURED else "model"
        out.append(lab(xc, 10, f"{who} {fmt(v, chk, 4)}", "middle" if 60 < xc < width - 60 else (
            "start" if xc <= 60 else "end"), color))
        if is_number(ink) and abs(X(float(ink)) - xc) > 90:
            xi = X(float(ink))
            out.append(lab(xi, 10, f"ink {v.predicted_text}",
                           "middle" if 60 < xi < width - 60 else ("start" if xi <= 60 else "end"), "#111"))
    out.append("</svg>")
    return "".join(out)


#: the band plot's font size (px), for the widths of its end labels
_BAND_FONT = 10


def _end_labels(lo: str | None, hi: str | None, x0: float, x1: float,
                width: float) -> list[tuple[float, str, str]]:
    """The band's end labels as (x, text, anchor): each at its end of the band, running inward on the half of the
    drawing it is in; where the two would overlap (a narrow band), each runs outward from its end instead (the low
    one leftward, the high one rightward), and where even that does not fit, one label "lo – hi" under the band."""
    def box(x: float, s: str, anchor: str) -> tuple[float, float]:
        b = text_box(x, 0, s, _BAND_FONT, anchor)
        return b[0], b[2]

    out = []
    if lo is not None:
        out.append((max(x0, 2), lo, "start" if x0 < width / 2 else "end"))
    if hi is not None:
        out.append((min(x1, width - 2), hi, "end" if x1 > width / 2 else "start"))
    if len(out) < 2:
        return out
    if box(*out[0])[1] + 4 <= box(*out[1])[0]:
        return out
    lo_end = max(x0, 2 + box(0, lo or "", "start")[1])  # outward: the low label ends where the band starts
    hi_start = min(x1, width - 2 - box(0, hi or "", "start")[1])
    if lo_end + 4 <= hi_start:
        return [(lo_end, lo or "", "end"), (hi_start, hi or "", "start")]
    both = f"{lo} – {hi}"
    half = (box(0, both, "start")[1]) / 2
    mid = min(max((x0 + x1) / 2, 2 + half), width - 2 - half)
    return [(mid, both, "middle")]


#: the style sheet, package data (report/static/explain.css)
EXPLAIN_CSS = css("explain")


def counts(outcomes: Iterable[str]) -> dict[str, int]:
    out = {k: 0 for k in OUTCOMES}
    for o in outcomes:
        out[o] = out.get(o, 0) + 1
    return out
