"""The scorecard's sweep-points section: one row per measured point (this tool's figures beside the serving model's,
the flags the measurement raised), the goodput table and the run's errors. Split out of :mod:`.scorecard` (issue 19):
the page assembles; this module is the one concept "what each sweep point measured"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_roofline.errors import SetupError
from pytest_roofline.format.spec import Spec
from pytest_roofline.measure.stats import min_samples_for_bound
from pytest_roofline.model import analytical as an
from pytest_roofline.model.bands import BAND_MEANING
from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.analysis import SMALL_SAMPLE_PREFIX, cache_hit_reason, goodput_rows
from pytest_roofline.quantities.littles import littles_reading
from pytest_roofline.report import charts as ch
from pytest_roofline.report.common import esc, is_number

__all__ = ["points_table", "goodput_table", "errors_html", "serving_cell"]


# --- sweep points ------------------------------------------------------------------------------------------------
def _num_or(x: Any, f: str = "{:,.1f}", dash: str = "—") -> str:
    return f.format(x) if is_number(x) else dash


def _sig3(x: Any, dash: str = "—") -> str:
    """A latency cell to 3 significant figures, zeros kept (9.5023 ms reads "9.50", 16.067 "16.1", 2.1755 "2.18",
    1,234.5 "1,235"): whole milliseconds are one or two figures at CPU-scale TTFTs, and the verdict rows and
    vllm bench serve print more."""
    if not is_number(x):
        return dash
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    magnitude = int(f"{x:.2e}".partition("e")[2])  # of the rounded value: 9.996 is 10.0, not 10.00
    return f"{x:,.{max(0, 2 - magnitude)}f}"


#: fewer completed requests than this and a point's p99 has no upper bound at 95% (measure.stats: 368): its row's
#: flags start with ``small sample: n=<count>``
P99_BOUND_REQUESTS = min_samples_for_bound(0.99)
#: a flag longer than this goes under its point's row, across the table, instead of into the narrow flags column
LONG_FLAG = 32


def serving_cell(spp: Any) -> str:
    """The serving column's cell: the serving model's aggregate tok/s, and under it, smaller, its band as
    ``[lo–hi]`` where the point has one (``PointPrediction.bands``); a regime with too few sources for a band
    gets its note as the tooltip, no brackets."""
    if spp is None:
        return "—"
    value = spp.output_throughput_tok_per_s
    band = ch.serving_band(spp, "output_throughput_tok_per_s")
    if band is None:
        note = (getattr(spp, "band_notes", None) or {}).get("output_throughput_tok_per_s")
        return f'<span title="{esc(note)}">{_num_or(value, "{:,.0f}")}</span>' if note else _num_or(value, "{:,.0f}")
    lo, hi = band
    tip = f"the serving model's band: {lo:,.1f} – {hi:,.1f} tok/s, {BAND_MEANING}"
    return (f'{_num_or(value, "{:,.0f}")}<span class="sband" title="{esc(tip)}">[{lo:,.0f}–{hi:,.0f}]</span>')


def _serving_at(serving: Mapping[tuple[str, float], Any], p: Mapping[str, Any]) -> Any:
    """The serving model's simulation of a measured point: a closed loop's by its concurrency, an open loop's by its
    offered rate (the batch-1 run is neither sweep point); None where the model has none."""
    if p.get("id") == "batch1":
        return None
    if p.get("mode") == "open" and is_number(p.get("rate_req_s")):
        return serving.get(("open", float(p["rate_req_s"])))
    conc = p.get("concurrency")
    return serving.get(("closed", float(conc))) if is_number(conc) else None


def _flags_cells(flags: list[str]) -> tuple[str, str]:
    """The flags column's text and the note under the row: short flags stay in the column; a long one (a sentence:
    a floor the TTFT beat, bursts, a concurrency not held) goes under the row, and the column points to it."""
    short = [f for f in flags if len(f) <= LONG_FLAG]
    long = [f for f in flags if len(f) > LONG_FLAG]
    cell = esc("; ".join(short))
    if long:
        cell += ("; " if short else "") + '<span class="flagref" title="the note under this row">note ↓</span>'
    return cell, "".join(f'<div class="flagnote">⚑ {esc(f)}</div>' for f in long)


def _littles_cell(ratio: Any, ll: Mapping[str, Any]) -> str:
    """The λW ÷ L cell: the ratio where the point has L; a peer's file records no L (its C is the configured one),
    so the cell shows the λ·W it keeps and its share of the configured C instead, unjudged (no ✓/✗), as the skipped
    littles_law verdict does."""
    if is_number(ratio):
        return f"{ratio:.3f}"
    lam_w, conf = ll.get("lambda_W"), ll.get("L_configured")
    if not is_number(lam_w):
        return "—"
    tip = ("λ·W (request throughput × mean E2E latency); L, the time-averaged requests in flight, is not in this "
           "file, so Little's law is not checked: the share is λ·W ÷ the configured C, below 1 where the closed "
           "loop drained at its end")
    share = f" ÷ C {lam_w / conf:.3f}" if is_number(conf) and conf else ""
    return f'<span class="nw" title="{esc(tip)}">λW {lam_w:.4g}{share}</span>'


def points_table(spec: Spec, setup: Setup | None, results: Mapping[str, Any]) -> str:
    pts = list(results.get("points") or [])
    if not pts:
        return '<p class="missing">The results file has no sweep points.</p>'
    th = spec.thresholds
    floor_ms = None
    if setup is not None:
        try:

            floor_ms = an.prefill_floor_s(setup.input_len, setup.flop_per_token, setup.peak_flop_per_s) * 1e3
        except (ValueError, SetupError):
            floor_ms = None
    modes = {str(p.get("mode") or "closed") for p in pts if isinstance(p, Mapping)}
    # Little's law's divisor as the points read it: C in a closed loop, the client's own L in an open one
    littles_head = {frozenset({"open"}): "λW ÷ L"}.get(frozenset(modes), "λW ÷ C" if modes <= {"closed"} else
                                                         "λW ÷ C or L")
    heads = [("point", ""), ("C", "concurrency"), ("agg tok/s", "aggregate output tok/s"),
             ("model", "the decode-roofline model's aggregate tok/s at this batch"), ("÷ model", "measured ÷ model"),
             ("serving", "the serving model's aggregate tok/s at this point (step-level simulation); under it, its "
                        "band [lo–hi] where the model has one"),
             ("÷ serving", "measured ÷ serving model"),
             ("per-req tok/s", "mean per-request output tok/s"), ("TTFT p50/p99 ms", "time to first token, ms"),
             ("TPOT p50/p99 ms", "time per output token, ms"),
             ("run/wait", "most requests running / waiting (server)"), ("KV", "peak KV-cache usage"),
             ("cache hits", "prefix-cache hit rate"), ("preempt", "preemptions"),
             (littles_head, "Little's law: throughput × mean latency over the held window ÷ C (closed loop); ÷ the "
              "client's own requests in flight (open loop)"), ("flags", "")]
    head = "<tr>" + "".join(f'<th title="{esc(t)}">{esc(h)}</th>' if t else f"<th>{esc(h)}</th>"
                            for h, t in heads) + "</tr>"
    body = []
    serving = {("closed", c): pp for c, pp in ch.serving_points(spec, setup)}
    serving.update({("open", r): pp for r, pp in ch.serving_points(spec, setup, "open")})
    for p in pts:
        c = p.get("client") or {}
        s = p.get("server") or {}
        conc = p.get("concurrency")
        spp = _serving_at(serving, p)
        model_tps = None
        if setup is not None and is_number(conc):
            try:
                model_tps = ch.model_step(setup, float(conc)).throughput_tok_per_s
            except (ValueError, SetupError):
                model_tps = None
        agg = c.get("output_throughput_tok_s")
        per = c.get("per_request_output_tok_s")
        per = per.get("mean", per.get("p50")) if isinstance(per, Mapping) else per
        ttft = c.get("ttft_ms") or {}
        tpot = c.get("tpot_ms") or {}
        ll = c.get("littles_law") or {}
        # the reading littles_law_ratio scores (closed loop: λ·W over the held window ÷ C; open: ÷ the client's L)
        reading = littles_reading(c, conc if p.get("mode") != "open" and isinstance(conc, int) and conc > 0
                                  else None)
        ratio = reading.ratio if reading is not None else None
        ll_ok = is_number(ratio) and abs(ratio - 1) <= 0.02
        why = cache_hit_reason(p, th, setup)
        cont = why is not None
        flags = list(p.get("flags") or [])
        pt_floor = floor_ms
        if floor_ms is not None and is_number(p.get("input_len")) and setup is not None:
            pt_floor = floor_ms * float(p["input_len"]) / setup.input_len
        if (pt_floor is not None and is_number(ttft.get("p50")) and ttft["p50"] < pt_floor
                and not any(str(f).startswith("ttft_p50_below_prefill_floor") for f in flags)):
            flags.append(f"TTFT p50 below the {pt_floor:,.1f} ms prefill compute floor: prefix-cache hits")
        flags = [f for f in flags if not str(f).startswith(SMALL_SAMPLE_PREFIX)]  # the long form: shown short, first
        n_done = c.get("completed")
        if isinstance(n_done, int) and not isinstance(n_done, bool) and n_done < P99_BOUND_REQUESTS:
            flags.insert(0, f"{SMALL_SAMPLE_PREFIX} n={n_done}")  # files recorded before the flag included
        flags = list(dict.fromkeys(str(f) for f in flags))
        flag_cell, flag_note = _flags_cells(flags)
        hit = s.get("prefix_cache_hit_rate")
        row_cls = " ".join(k for k, on in (("contam", cont), ("noted", bool(flag_note))) if on)
        cls = f' class="{row_cls}"' if row_cls else ""
        warn = f' <span class="warn" title="contaminated: {esc(why)}">⚠</span>' if cont else ""
        notes = [str(x) for x in (s.get("note"), c.get("note"), p.get("note")) if x]
        if notes:
            warn += f' <span class="info" title="{esc(" / ".join(notes))}">i</span>'
        ll_mark = ""
        if reading is not None and reading.vacuous:  # every request out at once: C in flight by construction
            ll_mark = (' <span class="info" title="no request was sent after C were first in flight: the held '
                       'window is empty and this 1.0 holds by construction (not checked)">n/c</span>')
        elif is_number(ratio):
            ll_mark = ' <span class="ok">✓</span>' if ll_ok else ' <span class="bad">✗</span>'
        ratio_model = agg / model_tps if is_number(agg) and model_tps else None
        serv_tps = spp.output_throughput_tok_per_s if spp is not None else None
        ratio_serv = agg / serv_tps if is_number(agg) and serv_tps else None
        hot = " hot" if cont else ""
        cells = [
            f"{esc(p.get('id'))}{warn}",
            _num_or(conc, "{:g}"), _num_or(agg), _num_or(model_tps, "{:,.0f}"), _num_or(ratio_model, "{:.0%}"),
            serving_cell(spp), _num_or(ratio_serv, "{:.0%}"),
            _num_or(per),
            f"{_sig3(ttft.get('p50'))} / {_sig3(ttft.get('p99'))}",
            f"{_sig3(tpot.get('p50'))} / {_sig3(tpot.get('p99'))}",
            f"{_num_or(s.get('max_num_requests_running'), '{:g}')} / "
            f"{_num_or(s.get('max_num_requests_waiting'), '{:g}')}",
            _num_or(s.get("max_kv_cache_usage"), "{:.0%}"), _num_or(hit, "{:.1%}"),
            _num_or(s.get("preemptions"), "{:g}"), _littles_cell(ratio, ll) + ll_mark, flag_cell,
        ]
        classes = ["", "num", "num", "num model", "num", "num serving", "num", "num", "num", "num", "num", "num",
                   f"num{hot}", "num", "num", "flags"]
        body.append(f"<tr{cls}>" + "".join(f'<td class="{k}">{c}</td>' if k else f"<td>{c}</td>"
                                           for k, c in zip(classes, cells)) + "</tr>")
        if flag_note:  # under the row it belongs to, across the columns after the id
            body.append(f'<tr class="flagrow{" tinted" if cont else ""}"><td></td>'
                        f'<td colspan="{len(cells) - 1}">{flag_note}</td></tr>')
    note = ('<p class="hint">⚠ marks a contaminated point: its prefix-cache hit rate is above '
            f"{th.contamination:.0%}, or its TTFT p50 beats the compute floor of its prefill — prompts were partly "
            "served from cache, so its TTFT and throughput look better than a cold cache would give. "
            f"<b>small sample: n=…</b> in a row's flags: fewer than {P99_BOUND_REQUESTS} completed requests, too few "
            "for a p99 with an upper bound at 95% (its p99 has no bound above it). Model tok/s "
            "is the decode-only roofline at that batch; serving tok/s is the step-level serving model's simulation of "
            "the same point (prefill, engine overhead, scheduling and the KV pool included), with its band [lo–hi] "
            f"under it where the model has one: {esc(BAND_MEANING)}.</p>")
    return (f'<h3>Sweep points</h3><div class="scroll"><table class="points">{head}{"".join(body)}</table></div>'
            + note)


def goodput_table(spec: Spec, results: Mapping[str, Any]) -> str:
    rows = goodput_rows(results, spec.slo)
    if not rows:
        return ""
    slo = spec.slo or {}
    lines = ['<h3>Goodput</h3><div class="scroll fit"><table class="goodput"><tr><th>percentile</th><th>SLO</th>'
             "<th>goodput</th><th>points meeting the SLO</th><th>raw max</th><th>raw ÷ goodput</th></tr>"]
    for g in rows:
        # a narrow window wraps these cells between their phrases, never inside "TTFT ≤ 500 ms" or "C = 8"
        slo_txt = " and ".join(_nowrap(f"{k.upper()} ≤ {v * 1e3:g} ms")
                               for k, v in slo.items() if k != "percentile")
        best = (_at_c(f"{g.best_tok_per_s:,.1f} tok/s", g.best_concurrency) if g.best_tok_per_s is not None
                else "none meets it")
        mark = " ★" if g.percentile == slo.get("percentile") else ""
        lines.append(f"<tr><td>{esc(g.percentile)}{mark}</td><td class=\"slo\">{slo_txt}</td>"
                     f"<td class=\"num\">{best}</td>"
                     f"<td>{esc(', '.join(str(c) for c in g.passing_concurrencies) or '—')}</td>"
                     f"<td class=\"num\">{_at_c(f'{g.raw_max_tok_per_s:,.1f} tok/s', g.raw_max_concurrency)}</td>"
                     f"<td class=\"num\">{_num_or(g.raw_to_goodput_ratio, '{:.2f}×')}</td></tr>")
    lines.append("</table></div><p class=\"hint\">Goodput is the highest throughput among sweep points whose TTFT and "
                 "TPOT both meet the SLO at that percentile; the gap to the raw maximum is what an SLO costs. "
                 "★ = the file's own SLO percentile.</p>")
    return "".join(lines)


def _nowrap(text: str) -> str:
    return f'<span class="nw">{esc(text)}</span>'


def _at_c(value: str, c: Any) -> str:
    """``1,763.3 tok/s at C = 16``, breakable only before "at"."""
    return f"{_nowrap(value)} {_nowrap(f'at C = {c}')}"


def errors_html(results: Mapping[str, Any]) -> str:
    errs = results.get("errors") or []
    if not errs:
        return ""
    return ('<h3>Errors during the run</h3><ul class="errors">' + "".join(
        f"<li><b>{esc(e.get('point') or 'run')}</b>: {esc(e.get('message', ''))}"
        + (f"<pre>{esc(e['log_tail'])}</pre>" if e.get("log_tail") else "") + "</li>" for e in errs) + "</ul>")
