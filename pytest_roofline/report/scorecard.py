"""The standalone scorecard: one self-contained HTML file per run, viewable offline.

The page makes no network request of any kind: CSS is inline, charts are inline SVG (:mod:`.charts`), there is
no script and no web font, and a Content-Security-Policy meta tag (``default-src 'none'``) tells the browser to
refuse anything else. It shows, per prediction file: the setup, a verdict summary, the charts (throughput,
per-request speed, TTFT, TPOT, Little's law, the roofline, server timelines), the sweep points, goodput, and
every prediction drawn against its tolerance band with the explanation one click away.

Entry points:

* :func:`render_scorecard` — the core: spec(s), :class:`~pytest_roofline.scoring.Verdict` s and a results dict → HTML
  text;
* :func:`write_scorecard` — what the pytest plugin calls at session end (``--roofline-scorecard``);
* :func:`render_from_files` — what the CLI calls: scores a prediction file against a results file (or the
  model alone) and renders it.
"""

from __future__ import annotations

import datetime as _dt
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_roofline import redact
from pytest_roofline.errors import PointError, SetupError
from pytest_roofline.format.spec import Spec, load_spec
from pytest_roofline.history import changed_badge, drift_counts
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.measure.results import match as mismatch
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.model.bands import BAND_MEANING, NOMINAL_COVERAGE, band_caveat
from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.analysis import (
    closed_points,
    goodput_rows,
    is_flattered,
    throughput_knee,
    ttft_knee,
)
from pytest_roofline.quantities.measurement import client_value, concurrency
from pytest_roofline.report import charts as ch
from pytest_roofline.report.common import (
    EXPLAIN_CSS,
    OUTCOME_LABEL,
    OUTCOMES,
    Row,
    band_domain,
    band_svg,
    counts,
    esc,
    explain_html,
    id_html,
    is_number,
    label_of,
    no_band_reason,
    outcome_of_verdict,
    serving_html,
    tp_pool_caveat,
)
from pytest_roofline.report.environment import spec_setup
from pytest_roofline.report.points import errors_html, goodput_table, points_table
from pytest_roofline.report.resources import css
from pytest_roofline.report.setup_card import definition_list, setup_card
from pytest_roofline.scoring import DEFAULT_MEASURED_TOLERANCE, Verdict, VerdictMode, VerdictStatus, score
from pytest_roofline.units import signed_percent

__all__ = ["render_scorecard", "write_scorecard", "render_from_files", "score_spec",
           "CSP"]

#: the page's Content-Security-Policy: nothing may be fetched; only inline styles and data: images render
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


# ----------------------------------------------------------------------------------------------------------------
# scoring from files
# ----------------------------------------------------------------------------------------------------------------
def score_spec(spec: Spec, data: Mapping[str, Any] | None, *, default_tolerance: str = DEFAULT_MEASURED_TOLERANCE,
               source: str = "results file") -> list[Verdict]:
    """Score every prediction of ``spec``: against ``data`` where the quantity is measurable, else the model."""
    measurement = RecordedMeasurement(data, source=source) if data is not None else None
    out = []
    for pred in spec.predictions:
        mode = "measured" if data is not None and not pred.error and pred.q.measure is not None else "math"
        error = pred.error_in(mode)  # a setting the serving model refuses errors the math check only
        if error is not None:
            out.append(Verdict.for_error(pred, error, mode="math"))
            continue
        try:
            v = score(spec, pred, mode, measurement, default_tolerance=default_tolerance)
        except PointError as exc:
            v = Verdict.for_error(pred, exc, mode=mode)
        out.append(v)
    return out


def render_from_files(predictions_yaml: Path | str, results_json: Path | str | None = None, *,
                      allow_mismatch: bool = False) -> str:
    """Score ``predictions_yaml`` against ``results_json`` (or the analytical model alone) and render it.

    ``results_json``: any format ``measure.peers.load_any`` reads (a results.json, vllm bench serve files, ...);
    one that does not belong to the predictions raises ``ResultsMismatchError`` unless ``allow_mismatch``."""
    spec = load_spec(predictions_yaml)
    data = None
    if results_json is not None:
        data = redact.redact_data(dict(load_any(results_json)))  # a file written before redaction existed
        data["_path"] = str(results_json)
        cmp = mismatch.check(data, spec, str(results_json), allow=allow_mismatch)
        if cmp.differences:
            data["mismatch"] = list(cmp.differences)
    verdicts = score_spec(spec, data, source=f"results file {Path(results_json).name}" if results_json else "")
    if data is not None and data.get("mismatch"):
        note = f"scored against a results file that does not belong to it: {'; '.join(data['mismatch'])}"
        verdicts = [v.amended(notes_before=[note], reason_suffix=" [MISMATCHED RESULTS, allowed]")
                    if v.mode is VerdictMode.MEASURED else v for v in verdicts]
    return render_scorecard(spec, verdicts, data)


def write_scorecard(specs: Sequence[Spec], verdicts: Sequence[Verdict],
                    results: Sequence[Mapping[str, Any]], *, mode: str, path: Path | str,
                    y_scale: str = "auto", drifts: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                    added: Mapping[str, int] | None = None) -> Path:
    """Render a finished run (its specs, verdicts and results dicts) and write it atomically to ``path``.

    Specs may be empty (an xdist controller collects none): they are then loaded from the verdicts' files.
    ``drifts`` (with a history): each prediction's drift dict by (file, id); the page gets a Drift column.
    ``added``: the values the session added to a stored run, by run id (the drift line says so)."""
    # texts that quote a server or the engine's args: redacted in the verdict's dict form, turned back once
    verdicts = [Verdict.from_dict(redact.redact_data(v.to_dict())) for v in verdicts]
    results = [redact.redact_data(dict(r)) for r in results]
    specs = list(specs)
    if not specs:
        for f in dict.fromkeys(v.file for v in verdicts if v.file):
            try:
                specs.append(load_spec(f))
            except Exception:  # noqa: BLE001 - a file that no longer loads is left out of the page
                continue
    try:
        html = render_scorecard(specs, verdicts, list(results) or None, mode=mode, y_scale=y_scale, drifts=drifts,
                                added=added)
    except Exception as exc:  # noqa: BLE001 - a report bug must not turn a finished run into an INTERNALERROR
        html = _fallback_page(verdicts, exc)
    html = redact.redact_known(html)  # and no secret value the run was given, whatever reached the page
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".scorecard-", suffix=".html", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(html)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a page for people is readable like any other artefact
    os.replace(tmp, path)
    return path


def _fallback_page(verdicts: Sequence[Verdict], exc: Exception) -> str:
    """A plain table of the verdicts, written when the full page fails to render (with the error shown)."""
    import traceback

    rows = "".join(f"<tr><td>{esc(v.id)}</td><td>{esc(v.status.value)}</td>"
                   f"<td>{esc(v.predicted_text)}</td><td>{esc(v.model_text)}</td>"
                   f"<td>{esc(v.measured_text)}</td><td>{esc(v.reason)}</td></tr>"
                   for v in verdicts)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}"><title>pytest-roofline scorecard</title>'
            f"</head><body><h1>pytest-roofline scorecard (plain)</h1><p>The full scorecard could not be rendered: "
            f"{esc(exc)}</p><table><tr><th>id</th><th>status</th><th>ink</th><th>model</th><th>measured</th>"
            f"<th>reason</th></tr>{rows}</table><pre>{esc(tb)}</pre></body></html>\n")


# ----------------------------------------------------------------------------------------------------------------
# rendering
# ----------------------------------------------------------------------------------------------------------------
def _display_path(p: str) -> str:
    """A path relative to the working directory when it lies below it (pages get shared; /home/... does not)."""
    try:
        return Path(p).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return str(p)


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    pa, pb = Path(a), Path(b)
    try:
        if pa.resolve() == pb.resolve():
            return True
    except OSError:
        pass
    return pa.as_posix().endswith(pb.as_posix()) or pb.as_posix().endswith(pa.as_posix())


def _results_for(spec: Spec, results: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for r in results:
        if _same_file((r.get("setup") or {}).get("predictions_file"), spec.path):
            return r
    return results[0] if len(results) == 1 else None


def render_scorecard(spec: Spec | Sequence[Spec], verdicts: Sequence[Verdict],
                     results: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None, *,
                     mode: str | None = None, title: str | None = None, generated_at: str | None = None,
                     y_scale: str = "auto", drifts: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                     added: Mapping[str, int] | None = None) -> str:
    """The scorecard page for one or more prediction files.

    ``verdicts`` are :class:`Verdict` s (matched to their file by ``file``); ``results`` is a results
    dict (docs/results-schema.md), a list of them (matched by ``setup.predictions_file``), or None for a
    math-only run. ``mode`` is the run's mode for the header (derived when not given). ``y_scale`` is the
    throughput chart's y axis: "auto" (log where the values span 8× or more), "log" or "linear"; the page
    offers the other one with a toggle. ``drifts`` (with a history): each prediction's drift dict by (file, id);
    the page then gets a Drift column and a drift line; ``added``: the values the session added to a stored run,
    by run id (:func:`~pytest_roofline.history.drift_counts`).
    """
    if y_scale not in ch.Y_SCALES:
        raise ValueError(f"y_scale must be one of {', '.join(ch.Y_SCALES)}, not {y_scale!r}")
    specs = [spec] if isinstance(spec, Spec) else list(spec)
    res_list: list[Mapping[str, Any]] = [] if results is None else (
        [results] if isinstance(results, Mapping) else list(results))
    if mode is None:
        mode = "replay" if res_list else "math"
    generated_at = generated_at or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    by_file: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_file.setdefault(str(v.file), []).append(v)
    sections = []
    all_outcomes: list[Row] = []
    for i, s in enumerate(specs):
        vs = by_file.pop(str(s.path), [])
        if not vs and len(specs) == 1:
            vs = [v for lst in by_file.values() for v in lst]
        rows = _with_outcomes(s, vs)
        all_outcomes.extend(rows)
        sections.append(_spec_section(s, rows, _results_for(s, res_list), mode, anchor=f"spec{i}",
                                      single=len(specs) == 1, y_scale=y_scale, drifts=drifts))
    page_title = title or (specs[0].title or Path(specs[0].path).name if len(specs) == 1 else
                           f"pytest-roofline scorecard — {len(specs)} prediction files")
    head = _page_header(page_title, specs, res_list, mode, generated_at, all_outcomes, drifts, added)
    body = head + "".join(sections) + _footer(generated_at)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="pytest-roofline">'
            f"<title>{esc(page_title)}</title><style>{PAGE_CSS}{EXPLAIN_CSS}</style></head>"
            f'<body><main class="page">{body}</main></body></html>\n')


def _drift_of(drifts: Mapping[tuple[str, str], Mapping[str, Any]] | None, v: Verdict) -> Mapping[str, Any] | None:
    return drifts.get((str(v.file), str(v.id))) if drifts is not None else None


def _with_outcomes(spec: Spec, verdicts: Iterable[Verdict]) -> list[Row]:
    preds = {p.id: p for p in spec.predictions}
    out = []
    for v in verdicts:
        pred = preds.get(v.id)
        out.append((v, outcome_of_verdict(v, pred.xfail if pred is not None else None), pred))
    order = {p.id: i for i, p in enumerate(spec.predictions)}
    out.sort(key=lambda r: order.get(r[0].id, 1 << 30))
    return out


# --- header and summary -----------------------------------------------------------------------------------------
_MODE_TEXT = {"math": "math only — each value in ink checked against the model (the decode roofline, or the serving "
                      "model where the file chooses it); nothing measured",
              "replay": "replayed — measurable predictions scored against a stored results file",
              "engine": "live — measured on a vLLM engine started by the run",
              "endpoint": "live — measured against a running endpoint"}


def _page_header(title: str, specs: Sequence[Spec], results: Sequence[Mapping[str, Any]], mode: str,
                 generated_at: str, rows: Sequence[Row],
                 drifts: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
                 added: Mapping[str, int] | None = None) -> str:
    c = counts(o for _, o, _ in rows)
    total = sum(c.values())
    src = ""
    for r in results:
        label = r.get("_path") or "results"
        src += (f'<div class="src">results: <code>{esc(label)}</code> — {esc(r.get("source", "measured"))}, '
                f'{esc(r.get("status", "?"))}'
                + (f', created {esc(r.get("created_at"))}' if r.get("created_at") else "") + "</div>")
        src += _run_status(r)
        if r.get("mismatch"):
            src += ('<div class="src note rl-mismatch" style="color:#b00020"><strong>Mismatched results, scored anyway '
                    '(--roofline-allow-mismatch):</strong> ' + esc("; ".join(map(str, r["mismatch"]))) + "</div>")
        unchecked = (r.get("setup") or {}).get("unchecked") or {}
        if unchecked:
            src += ('<div class="src note">Not checked (the file does not say): '
                    + esc("; ".join(f"{k}: {v}" for k, v in unchecked.items())) + "</div>")
        if r.get("source") == "transcribed":
            src += ('<div class="src note">Transcribed, not measured by pytest-roofline'
                    + (f": {esc(' '.join(str(r['transcription']).split()))}" if r.get("transcription") else ".")
                    + "</div>")
    bar = "".join(f'<span class="seg rl-{o}" style="flex:{c[o]}" title="{c[o]} {OUTCOME_LABEL[o]}"></span>'
                  for o in OUTCOMES if c[o])
    pills = " ".join(f'<span class="rl-badge rl-{o}">{c[o]} {OUTCOME_LABEL[o]}</span>' for o in OUTCOMES if c[o])
    nav = ""
    if len(specs) > 1:
        nav = '<nav class="files">' + " · ".join(
            f'<a href="#spec{i}">{esc(s.title or Path(s.path).name)}</a>' for i, s in enumerate(specs)) + "</nav>"
    found = [d for d in (_drift_of(drifts, v) for v, _o, _p in rows) if d]
    if found:  # with a history: how this run compares with the stored ones
        failed = sum(1 for d in found if d.get("status") == "drifted" and d.get("drift_fail"))
        fails = (f' · <span class="rl-badge rl-failed">{failed} DRIFTED</span> their tests failed '
                 "(--roofline-drift-fail), whatever their verdict above" if failed else "")
        src += (f'<div class="src rl-drift-line">drift: {esc(drift_counts(found, added=added))} vs '
                f'{esc(str(found[0].get("against") or "the stored runs"))}{fails}</div>')
    return (f'<header class="top"><div class="brand">pytest-roofline scorecard</div><h1>{esc(title)}</h1>'
            f'<div class="mode mode-{esc(mode)}">{esc(_MODE_TEXT.get(mode, mode))}</div>{src}'
            f'<div class="totals"><div class="bar">{bar}</div><div class="pills">{pills}'
            f'<span class="of">{esc(_of_text(total, specs, results))}</span></div></div>{nav}</header>')


#: a results file's status that is not a finished run, in words (``complete`` says nothing)
_RUN_STATUS = {
    "interrupted": "Interrupted: the run was stopped (Ctrl-C, SIGTERM, or killed) before its sweep finished",
    "running": "Not finished: the results file still says running (the run was going on, or was killed without "
               "a word, when this page was written)",
    "aborted": "Aborted: the sweep stopped at a point that could not be measured (see Errors)",
}


def _run_status(r: Mapping[str, Any]) -> str:
    """The header's line for a run that did not finish: what stopped it, which points were measured and kept (the
    only ones anything was scored from), and the run's own last word on it."""
    status = str(r.get("status") or "")
    if status not in _RUN_STATUS:
        return ""
    ids = [str(p.get("id")) for p in r.get("points") or [] if isinstance(p, Mapping)]
    kept = (f"measured and kept: {len(ids)} point{'s' if len(ids) != 1 else ''} ({', '.join(ids)})" if ids
            else "no point was measured")
    errors = [str(e.get("message")) for e in r.get("errors") or [] if isinstance(e, Mapping) and e.get("message")]
    said = f" The run says: {errors[-1]}." if errors and status != "aborted" else ""
    rest = ("" if status == "aborted" else
            " Predictions needing a point that was not measured were not scored.")
    return (f'<div class="src run-status rl-run-{esc(status)}" style="color:#b00020"><strong>{esc(_RUN_STATUS[status])}'
            f"</strong>; {esc(kept)}.{esc(said)}{esc(rest)}</div>")


def _of_text(total: int, specs: Sequence[Spec], results: Sequence[Mapping[str, Any]]) -> str:
    """``of N predictions``; a run that did not finish adds how many of the files' predictions never ran, so
    "2 pass of 2" does not read as the whole file."""
    text = f"of {total} prediction{'s' if total != 1 else ''}"
    planned = sum(len(s.predictions) for s in specs)
    stopped = [str(r.get("status")) for r in results if r.get("status") in ("interrupted", "running")]
    if stopped and planned > total:
        why = "interrupted" if "interrupted" in stopped else "not finished"
        text += f" scored; {planned - total} of the {planned} not run (the run was {why})"
    return text


def _footer(generated_at: str) -> str:
    try:
        from importlib.metadata import version

        ver = version("pytest-roofline")
    except Exception:  # noqa: BLE001
        ver = "?"
    return (f'<footer>Generated {esc(generated_at)} by pytest-roofline {esc(ver)}. This page is self-contained: '
            "no scripts, no fonts, no requests.</footer>")


# --- one prediction file ---------------------------------------------------------------------------------------
def _spec_section(spec: Spec, rows: list[Row], results: Mapping[str, Any] | None,
                  mode: str, *, anchor: str, single: bool, y_scale: str = "auto",
                  drifts: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> str:
    setup = spec_setup(spec)
    parts = [f'<section class="spec" id="{anchor}">']
    if not single:
        parts.append(f"<h2 class=\"spec-title\">{esc(spec.title or Path(spec.path).name)}</h2>")
    parts.append(f'<div class="file">{esc(_display_path(spec.path))}</div>')
    if spec.notes:
        parts.append(f'<p class="spec-notes">{esc(" ".join(spec.notes.split()))}</p>')
    for w in spec.warnings:  # e.g. a calibration fitted on another setup
        parts.append(f'<p class="missing spec-warning">⚠ {esc(w)}</p>')
    parts.append('<div class="grid2">')
    parts.append(_summary_card(rows, _headlines(spec, setup, results)))
    parts.append(setup_card(spec, setup, results))
    parts.append("</div>")
    figs = _figures(spec, setup, results, rows, y_scale=y_scale)
    if figs:
        parts.append('<h3>Charts</h3><div class="charts">')
        for f in figs:
            fid = f"{anchor}-{esc(f.key)}"
            if f.alt_svg:  # a CSS-only toggle (the page runs no script): the checkbox swaps the two drawings
                body = (f'<input type="checkbox" class="rl-alt" id="{fid}-alt">'
                        f'<label class="rl-alt" for="{fid}-alt">show with a {esc(f.alt_label)}</label>'
                        f'<div class="rl-main">{f.svg}</div><div class="rl-other">{f.alt_svg}</div>')
            else:
                body = f.svg
            parts.append(f'<figure class="chart{" wide" if f.wide else ""}" id="{fid}">{body}'
                         + (f"<figcaption>{esc(f.caption)}</figcaption>" if f.caption else "") + "</figure>")
        parts.append("</div>")
    timelines = ch.timeline_charts(spec, results, setup) if results else []
    if results:
        parts.append("<h3>Server-side timeline per point</h3>")
        if timelines:
            parts.append('<p class="hint">Running and waiting requests and KV-cache usage as /metrics reported them '
                         "during each point; red marks are preemptions. The knee shows here (waiting &gt; 0, cache "
                         "pinned) before it shows in the client's numbers.</p>")
            parts.append('<div class="charts small">' + "".join(
                f'<figure class="chart" id="{anchor}-{esc(f.key)}">{f.svg}</figure>' for f in timelines) + "</div>")
        else:
            parts.append('<p class="missing">The results file has no server timeline (/metrics was not scraped '
                         "during the sweep), so running/waiting requests, KV-cache usage and preemptions over time "
                         "cannot be drawn.</p>")
        parts.append(points_table(spec, setup, results))
        parts.append(goodput_table(spec, results))
        parts.append(errors_html(results))
    parts.append(_predictions_table(rows, measured=any(v.mode is VerdictMode.MEASURED for v, _, _ in rows),
                                    anchor=anchor, drifts=drifts))
    parts.append("</section>")
    return "".join(parts)


def _figures(spec: Spec, setup: Setup | None, results: Mapping[str, Any] | None,
             rows: Sequence[Row], *, y_scale: str = "auto") -> list[ch.Figure]:
    out: list[ch.Figure | None] = []
    try:
        out.append(ch.throughput_chart(spec, setup, results, rows, y_scale=y_scale))
    except Exception as exc:  # noqa: BLE001 - one chart failing must not lose the whole page
        out.append(_failed_figure("throughput_chart", exc))
    for fn in (ch.ttft_chart, ch.tpot_chart, ch.per_request_chart):
        try:
            out.append(fn(spec, setup, results, rows))
        except Exception as exc:  # noqa: BLE001 - one chart failing must not lose the whole page
            out.append(_failed_figure(fn.__name__, exc))
    try:
        out.append(ch.littles_chart(spec, results, rows))
    except Exception as exc:  # noqa: BLE001
        out.append(_failed_figure("littles_chart", exc))
    try:
        out.append(ch.roofline_chart(spec, setup, results))
    except Exception as exc:  # noqa: BLE001
        out.append(_failed_figure("roofline_chart", exc))
    try:
        out.extend(ch.open_loop_charts(spec, setup, results, rows, y_scale=y_scale))
    except Exception as exc:  # noqa: BLE001
        out.append(_failed_figure("open_loop_charts", exc))
    return [f for f in out if f is not None]


def _failed_figure(name: str, exc: Exception) -> ch.Figure:
    return ch.Figure(name, name, f'<p class="missing">{esc(name)} could not be drawn: {esc(exc)}</p>')


def _headlines(spec: Spec, setup: Setup | None, results: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The numbers the run is about, one line each: knees, goodput, how far reality sits below the model."""

    out: list[tuple[str, str]] = []
    th = spec.thresholds
    pts = closed_points(results)
    triples = [(float(concurrency(p)), float(client_value(p, "output_throughput_tok_s")), p) for p in pts
               if is_number(client_value(p, "output_throughput_tok_s"))]
    meas = [(c, x) for c, x, _ in triples]
    if setup is not None:
        try:
            lm = setup.roofline_landmarks()  # per GPU under TP, as the quantities compute them
            knee, half = lm.knee, lm.half_saturation_batch
            model_txt = (f"model B* = {knee.batch:,.0f}" if knee.batch is not None else
                         f"model: none (asymptote {knee.intensity_asymptote_flop_per_byte:,.0f} < ridge "
                         f"{knee.ridge_flop_per_byte:,.0f} FLOP/byte; half-saturation B = {half:,.0f})")
        except (ValueError, ZeroDivisionError, SetupError):
            model_txt = ""
        if len(meas) >= 2:
            mk = throughput_knee(meas, th.knee_gain)
            meas_txt = f"measured C = {mk:g}" if mk is not None else f"measured: none through C = {meas[-1][0]:g}"
            out.append(("throughput knee", f"{model_txt} · {meas_txt}" if model_txt else meas_txt))
        elif meas:  # a knee is where the curve bends: one point has no curve
            one = _one_point_text(meas[0][0])
            out.append(("throughput knee", f"{model_txt} · {one}" if model_txt else one))
        elif model_txt:
            out.append(("throughput knee", model_txt))
        clean = [(c, x) for c, x, p in triples if not is_flattered(p, th, setup)]
        if clean:
            c, x = clean[-1]
            try:
                m = ch.model_step(setup, c).throughput_tok_per_s
                out.append(("measured ÷ model", f"{x / m:.0%} at C = {c:g} (the largest clean point: "
                                                 f"{x:,.1f} vs {m:,.1f} tok/s)"))
            except (ValueError, SetupError):
                pass
        elif not meas:
            try:
                lm = setup.roofline_landmarks()
                ceiling = lm.batch1_ceiling_tok_per_s
                out.append(("batch-1 ceiling", f"{ceiling:,.1f} tok/s (bandwidth ÷ weight bytes)"))
                asymptote = lm.throughput_asymptote_tok_per_s
                out.append(("memory asymptote", f"{asymptote:,.0f} tok/s (bandwidth ÷ KV per sequence)"))
            except (ValueError, SetupError):
                pass
    rows = [(float(concurrency(p)), client_value(p, "ttft_ms", "p50"), client_value(p, "ttft_ms", "p99"))
            for p in pts]
    rows = [r for r in rows if is_number(r[1]) and is_number(r[2])]
    if len(rows) >= 2:
        tk = ttft_knee(rows, th.ttft_knee_ratio)
        out.append(("TTFT knee", (f"measured C = {tk:g}" if tk is not None else "measured: none")
                    + f" (p99 > {th.ttft_knee_ratio:g} × p50)"))
    elif rows:  # one point's p99/p50 is no knee (an interrupted sweep, a one-point run)
        out.append(("TTFT knee", _one_point_text(rows[0][0])))
    g = next((g for g in goodput_rows(results, spec.slo) if g.percentile == (spec.slo or {}).get("percentile", "p99")),
             None)
    if g is not None:
        out.append((f"goodput ({g.percentile} SLO)",
                    (f"{g.best_tok_per_s:,.1f} tok/s at C = {g.best_concurrency}" if g.best_tok_per_s is not None
                     else "no point meets the SLO")
                    + f" · raw max {g.raw_max_tok_per_s:,.1f} at C = {g.raw_max_concurrency}"
                    + (f" ({g.raw_to_goodput_ratio:.2f}×)" if g.raw_to_goodput_ratio else "")))
    serv = ch.serving_points(spec, setup)
    if serv:
        sknee = throughput_knee([(c, pp.output_throughput_tok_per_s) for c, pp in serv], th.knee_gain)
        stk = ttft_knee([(c, pp.ttft_p50_ms, pp.ttft_p99_ms) for c, pp in serv], th.ttft_knee_ratio)
        c_hi, pp_hi = serv[-1]
        top = max(pp_hi.time_shares, key=pp_hi.time_shares.get) if pp_hi.time_shares else None
        knee_txt = f"C = {sknee:g}" if sknee is not None else "none"
        ttft_txt = f"C = {stk:g}" if stk is not None else "none"
        band = ch.serving_band(pp_hi, "output_throughput_tok_per_s")
        note = (getattr(pp_hi, "band_notes", None) or {}).get("output_throughput_tok_per_s")
        # a CPU band is one host's recordings, not other sources' runs
        caveat = band_caveat(setup.device) if setup is not None else None
        band_txt = (f" (band {band[0]:,.1f}–{band[1]:,.1f}, {NOMINAL_COVERAGE:.0%} nominal"
                    + (f"; {caveat}" if caveat else "") + ")" if band else
                    f" ({note})" if note else "")
        out.append(("serving model", f"throughput knee {knee_txt}, TTFT knee {ttft_txt} (knees: "
                                     f"{_WHOLE_SWEEP_SHORT}); "
                                     f"{pp_hi.output_throughput_tok_per_s:,.1f} tok/s at C = {c_hi:g}{band_txt}"
                                     + (f", {top.replace('_', ' ')} {pp_hi.time_shares[top]:.0%} of its step time"
                                        if top else "")))
    cont = [p for p in pts if is_flattered(p, th, setup)]
    if cont:
        out.append(("contaminated", f"{len(cont)} of {len(pts)} points flattered by prefix-cache hits: "
                                    + ", ".join(str(p.get("id")) for p in cont)))
    return out


#: why the serving model's knees have no band, in the headline (common.no_band_reason's whole-sweep reason)
_WHOLE_SWEEP_SHORT = "no band, whole-sweep figures"


def _one_point_text(c: float) -> str:
    """A knee's headline where the sweep has a single point: none is shown (a knee needs a curve)."""
    return f"not measured: a knee needs two or more sweep points, this run has one (C = {c:g})"


def _outcome_rank(item: tuple[str, int]) -> int:
    """Sort key of an (outcome, count) pair: the outcomes' listing order, worst first."""
    return OUTCOMES.index(item[0])


def _summary_card(rows: Sequence[Row], headlines: Sequence[tuple[str, str]] = ()) -> str:
    c = counts(o for _, o, _ in rows)
    total = sum(c.values()) or 1
    by_mode: dict[str, dict[str, int]] = {}
    for v, o, _ in rows:
        by_mode.setdefault(v.mode.value, {}).setdefault(o, 0)
        by_mode[v.mode.value][o] += 1
    bar = "".join(f'<span class="seg rl-{o}" style="flex:{c[o]}" title="{c[o]} {OUTCOME_LABEL[o]}"></span>'
                  for o in OUTCOMES if c[o])
    lines = [f'<div class="card summary"><h3>Verdicts</h3><div class="bar big">{bar}</div><table class="counts">']
    for o in OUTCOMES:
        if c[o]:
            lines.append(f'<tr><td><span class="rl-badge rl-{o}">{OUTCOME_LABEL[o]}</span></td>'
                         f'<td class="num">{c[o]}</td><td class="pct">{c[o] / total:.0%}</td>'
                         f"<td class=\"what\">{esc(_OUTCOME_WORDS[o])}</td></tr>")
    lines.append("</table>")
    if by_mode:
        lines.append('<p class="bymode">' + "; ".join(
            f"{sum(d.values())} {'measured' if m == 'measured' else 'math'} check{'s' if sum(d.values()) != 1 else ''}"
            f" ({', '.join(f'{n} {OUTCOME_LABEL[o]}' for o, n in sorted(d.items(), key=_outcome_rank))})"
            for m, d in sorted(by_mode.items())) + "</p>")
    if headlines:
        lines.append("<h4>Headline numbers</h4>"
                     + definition_list(headlines).replace("<dl>", '<dl class="headlines">', 1))
    misses = [(v, o) for v, o, _ in rows if v.status is VerdictStatus.FAIL and is_number(v.error_rel)]
    misses.sort(key=lambda r: -abs(r[0].error_rel or 0.0))
    if misses:
        lines.append('<h4>Largest misses</h4><table class="misses">')
        for v, o in misses[:6]:
            lines.append(f'<tr><td><span class="rl-badge rl-{o}">{OUTCOME_LABEL[o]}</span></td>'
                         f'<td><a href="#p-{esc(_slug(v.id))}">{id_html(v.id)}</a></td>'
                         f'<td class="num">{esc(v.predicted_text)}</td>'
                         f'<td class="num">{esc(v.measured_text or _decided_by(v))}</td>'
                         f'<td class="num err">{_err_pct(v)}</td></tr>')
        lines.append("</table>")
    lines.append("</div>")
    return "".join(lines)


def _decided_by(v: Verdict) -> str:
    """The model value a math verdict was checked against: the serving model's where its band decided (the error is
    taken against it: ``scoring._against_band``), else the model column's."""
    if v.serving_checked and v.serving_text:
        return v.serving_text
    return v.model_text or ""


#: what each outcome means, for the Verdicts card ("band" only ever means the serving model's band, trial s18 M1; a
#: math FAIL may be past a physical bound, which no tolerance moves, trial s18 L3)
_OUTCOME_WORDS = {"passed": "within tolerance (or the model's band)",
                  "failed": "outside tolerance (or the model's band), or past a physical bound",
                  "xfailed": "missed, as the file says it would (xfail)",
                  "xpassed": "expected to miss but landed inside", "skipped": "not checkable in this mode",
                  "error": "could not be scored",
                  "inconclusive": "the measured interval straddles an edge of the allowed interval: more requests "
                                  "would decide"}


def _err_pct(v: Verdict) -> str:
    """The error relative to the ink, (measured − ink) ÷ ink, with measured ÷ ink beside it (``+100% ×2``)."""
    r = v.error_rel
    if not is_number(r):
        return ""
    ratio = f" ×{v.ratio:.3g}" if is_number(v.ratio) else ""
    return (signed_percent(r, 2) if abs(r) < 0.1 else (signed_percent(r, 1) if abs(r) < 10 else signed_percent(r, 0))
            + ratio)


def _slug(s: str) -> str:
    return "".join(ch_ if ch_.isalnum() or ch_ in "-_" else "-" for ch_ in str(s))


# --- predictions ------------------------------------------------------------------------------------------------
def _predictions_table(rows: Sequence[Row], *, measured: bool, anchor: str,
                       drifts: Mapping[tuple[str, str], Mapping[str, Any]] | None = None) -> str:
    if not rows:
        return '<h3>Predictions</h3><p class="missing">No predictions were scored.</p>'
    with_drift = drifts is not None and bool(rows)  # a run with a history
    # drift sits next to the verdict: the last column of a table this wide is the first to leave the screen
    cols = ["", *(["drift"] if with_drift else []), "prediction", "quantity", "ink", "model"] + (
        ["measured"] if measured else []) + ["roofline", "serving", "error", "tolerance", ALLOWED_HEAD]
    head = "<tr>" + "".join(f'<th class="{_HEAD_CLASS[c]}">{esc(c)}</th>' if c in _HEAD_CLASS
                            else f"<th>{esc(c)}</th>" for c in cols) + "</tr>"
    body = []
    # rows of one quantity share a relative band scale (their drawings read as one column of a chart)
    groups: dict[tuple[str, str], list[Verdict]] = {}
    for v, _o, _p in rows:
        groups.setdefault((v.quantity, v.mode.value), []).append(v)
    domains = {k: band_domain(vs) for k, vs in groups.items()}
    for v, o, _pred in rows:
        band = band_svg(v, width=BAND_WIDTH, height=22, domain=domains.get((v.quantity, v.mode.value)))
        meas_cell = ""
        if measured:
            meas_cell = (f'<td class="num" data-l="measured">{esc(v.measured_text or "")}'
                         + (' <span class="warn" title="contaminated by prefix-cache hits">⚠</span>'
                            if v.contaminated else "") + "</td>")
        at = label_of(v)
        body.append(
            f'<tbody class="pred rl-{o}" id="p-{esc(_slug(v.id))}"><tr class="main">'
            f'<td><span class="rl-badge rl-{o}">{OUTCOME_LABEL.get(o, o)}</span></td>'
            f'{_drift_cell(_drift_of(drifts, v)) if with_drift else ""}'
            f'<td class="pid">{id_html(v.id)}</td><td class="q">{_breakable(at)}</td>'
            f'<td class="num ink" data-l="ink">{esc(v.predicted_text or "")}</td>'
            f'<td class="num" data-l="model">{esc(v.model_text or "")}'
            f'{_pool_note(v, v.model_source != "serving")}</td>'
            f'{meas_cell}'
            f'<td class="num model" data-l="roofline">{esc(v.roofline_text or "")}'
            f'</td>'
            f'<td class="num serving" data-l="serving" title="{esc(v.serving_explanation or "")}">'
            f'{serving_html(v)}</td>'
            f'<td class="num err" data-l="error">{_err_pct(v)}</td>'
            f'<td class="tol" data-l="tolerance" title="{esc(v.tolerance_text or "")}">{esc(_short_tol(v))}</td>'
            f'<td class="band" data-l="{ALLOWED_HEAD}">{band}</td></tr>'
            f'<tr class="more"><td></td><td colspan="{len(cols) - 1}"><details><summary>{esc(_short_reason(v))}'
            f"</summary>{explain_html(v, o, heading=False)}{_model_notes_html(v)}</details></td></tr></tbody>")
    legend = ('<p class="hint">Allowed interval: shaded = the interval the check allows around the reference '
              "(the tolerance, or the serving model's band where that decides); black tick = "
              "the value in ink; dot = the value checked (measured, or the model in a math check), green inside and "
              "red outside; hollow diamond = the model in a measured check. Serving: the serving model's value, "
              f"with its band [lo–hi] under it ({esc(BAND_MEANING)}) or \u201cno band\u201d (hover it, or open the "
              "row, for why). Click a row's reason for the explanation.</p>")
    return (f'<h3>Predictions</h3>{legend}<div class="scroll"><table class="preds" id="{anchor}-predictions">'
            f"<thead>{head}</thead>{''.join(body)}</table></div>")


#: the width of a row's band drawing (px): with the other columns it keeps the table inside the 1280-px page
BAND_WIDTH = 128
#: the last column's head: the tolerance glyph (the interval the check allows), never called a band, a word kept for
#: the serving model's band
ALLOWED_HEAD = "allowed interval"
_HEAD_CLASS = {"drift": "drift", ALLOWED_HEAD: "band"}


def _pool_note(v: Verdict, shown: bool) -> str:
    """Under a KV-pool value on more than one GPU: "upper bound", the documented caveat its tooltip."""
    why = tp_pool_caveat(v) if shown else ""
    return f'<span class="snote" title="{esc(why)}">upper bound</span>' if why else ""


def _model_notes_html(v: Verdict) -> str:
    """What the row's details add about the model values shown: why the serving value has no band, the TP caveat."""
    notes = []
    if v.serving_text and not v.serving_band_range:
        notes.append(f"serving model {v.serving_text}: {no_band_reason(v)}")
    if tp_pool_caveat(v):
        notes.append(f"model {v.model_text or v.roofline_text}: {tp_pool_caveat(v)}")
    return "".join(f'<p class="mnote">{esc(n)}</p>' for n in notes)


def _breakable(text: str) -> str:
    """Escaped text that may also wrap after an underscore (``max_concurrency_without_queueing`` is one long word
    to a browser, and would hold its column 230 px wide)."""
    return esc(text).replace("_", "_<wbr>")


def _drift_cell(drift: Mapping[str, Any] | None) -> str:
    """The drift badge of a row: the change against the baseline, the whole line as its tooltip."""
    d = drift or {}
    status = str(d.get("status") or "")
    if not status or status == "not_measured":
        return '<td class="drift"></td>'
    change = d.get("change_rel")
    short = signed_percent(change) if isinstance(change, (int, float)) else status.replace("_", " ")
    word = {"drifted": "DRIFTED", "new": "new", "prediction_changed": changed_badge(d)}.get(status, "")
    return (f'<td class="drift rl-drift-{esc(status)}" title="{esc(d.get("text") or "")}">{esc(short)}'
            + (f' <span class="rl-badge rl-drift-{esc(status)}">{esc(word)}</span>' if word else "") + "</td>")


def _short_tol(v: Verdict) -> str:
    t = str(v.tolerance_text or "")
    return t.split(" (", 1)[0]


#: the longest a row's reason line is before it is cut (the whole reason is in the row's details)
REASON_CHARS = 260
REASON_CUT_NOTE = " … (cut: the whole reason is in the details)"


def _short_reason(v: Verdict) -> str:
    """The reason line under a row; a long one is cut at a word, and says it is."""
    r = " ".join(str(v.reason).split())
    if v.xfail_reason and v.status is VerdictStatus.FAIL:
        r += " — expected: " + " ".join(str(v.xfail_reason).split())
    if len(r) <= REASON_CHARS:
        return r
    head = r[:REASON_CHARS - len(REASON_CUT_NOTE) + 1]
    head = head[:head.rfind(" ")] if " " in head else head
    return head.rstrip(" ,;:—-") + REASON_CUT_NOTE


#: the style sheet, package data (report/static/scorecard.css)
PAGE_CSS = css("scorecard")
