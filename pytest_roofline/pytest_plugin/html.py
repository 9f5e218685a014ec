"""pytest-html (>= 4.2) integration: sortable prediction columns, an explanation extra per prediction, and the
roofline setup in the environment table.

``plugin.py`` registers :class:`HtmlHooks` only when the ``html`` plugin is loaded, so the hook names below
(``pytest_html_*``) are validated against pytest-html's hookspecs and a run without pytest-html never sees them.

Sorting: pytest-html 4.2 reads each sortable cell's inner HTML (``<td.*?>(.*?)</td>``, basereport.py
``_hydrate_data``) and sorts rows by comparing those strings (sort.js ``genericSort``). Every numeric cell here
therefore starts with a hidden, fixed-width key (:func:`common.sort_key`) whose string order is the numeric
order, so "9.5 %" sorts below "10 %" and "−3" below "2". Cells are single-line (the regex does not cross
newlines) and every row gets every cell, including setup/teardown/collection-error rows that carry no verdict,
so the columns never shift.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_roofline.history import changed_badge
from pytest_roofline.pytest_plugin.base import is_prediction_nodeid
from pytest_roofline.pytest_plugin.collect import VERDICT_KEY, PredictionItem
from pytest_roofline.pytest_plugin.session import get_session, session_results
from pytest_roofline.report.common import (
    EXPLAIN_CSS,
    OUTCOME_LABEL,
    OUTCOMES,
    at_text,
    counts,
    esc,
    explain_html,
    finite_or_none,
    fmt,
    is_number,
    outcome_of_report,
    sort_key,
    text_sort_key,
)
from pytest_roofline.report.environment import environment_from_results, environment_from_specs
from pytest_roofline.report.resources import css
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus
from pytest_roofline.units import signed_percent

__all__ = ["HtmlHooks", "COLUMNS"]

#: (data key, header, header tooltip); the key is what pytest-html's sort uses (``col-<key>`` / data-column-type)
COLUMNS = (
    ("rl_quantity", "Quantity", "the quantity predicted, and where (at:)"),
    ("rl_predicted", "Predicted (ink)", "the value written before measuring; sorts by its value in SI units"),
    ("rl_model", "Model", "the model column's value (the file's model_column: the decode roofline or the serving "
                          "model); sorts numerically"),
    ("rl_measured", "Measured", "the measured value (--gpu, --endpoint or --replay); sorts numerically"),
    ("rl_roofline", "Roofline", "the decode roofline's value, where it computes the quantity; sorts numerically"),
    ("rl_serving", "Serving", "the step-level serving model's value, where it computes the quantity; sorts "
                              "numerically"),
    ("rl_error", "Error %", "(ink − checked) ÷ checked, where checked is the measurement (or the model in a math "
                            "check); sorts by the size of the error"),
    ("rl_abserr", "Error (abs)", "ink − checked, in the prediction's unit; sorts by size (in SI units)"),
    ("rl_tolerance", "Tolerance", "the band the checked value must fall in; sorts by the band's relative width"),
    ("rl_reason", "Reason", "why the prediction passed, failed or was skipped"),
)
INSERT_AT = 2  # after Result and Test, before Duration and Links
#: the column a run with --roofline-history adds after the others
DRIFT_COLUMN = ("rl_drift", "Drift", "the measured value's change against the baseline run(s) on the same setup "
                                     "(--roofline-history); sorts by the size of the change")


def _cell(key: str, sort: str, html: str = "", title: str = "") -> str:
    t = f' title="{esc(title)}"' if title else ""
    # one line: pytest-html's cell regex does not match across newlines
    html = html.replace("\n", " ")
    return f'<td class="col-{key}"{t}><span class="rl-sk" hidden>{sort}</span>{html}</td>'


def _tolerance_width(v: Verdict) -> float | None:
    lo, hi, ref = finite_or_none(v.lo), finite_or_none(v.hi), v.reference_value
    if not v.tolerance_text:
        return None
    if v.tolerance_text == "exact":
        return 0.0
    if lo is None or hi is None:
        return math.inf
    if is_number(ref) and ref:
        return (float(hi) - float(lo)) / 2 / abs(float(ref))
    return float(hi) - float(lo)


def row_cells(v: Verdict | None) -> list[str]:
    """The roofline cells of one results-table row (empty but sortable cells when ``v`` is None)."""
    if not v:
        return [_cell(key, sort_key(None) if key not in ("rl_quantity", "rl_reason") else text_sort_key(""))
                for key, _, _ in COLUMNS]
    q = v.quantity
    at = at_text(v)
    qhtml = f'<span class="rl-q">{esc(q)}</span>' + (f' <span class="rl-at">@ {esc(at)}</span>' if at else "")
    pred_val = v.predicted_value
    if not is_number(pred_val) and str(v.predicted_text).strip().lower() == "model":
        pred_val = v.model_value
    err_rel, err_abs = v.error_rel, v.error_abs
    measured = v.measured_text if v.mode is VerdictMode.MEASURED else ""
    contaminated = (' <span class="rl-contam" title="prefix-cache hits: contaminated point">⚠</span>'
                    if v.contaminated else "")
    err_txt = ""
    if is_number(err_rel):
        err_txt = (signed_percent(err_rel, 2) if abs(err_rel) < 10 else signed_percent(err_rel, 0)) + (
            f" ×{v.ratio:.3g}" if is_number(v.ratio) else "")  # (measured − ink) ÷ ink, measured ÷ ink beside
    abs_txt = ""
    if is_number(err_abs):
        abs_txt = ("+" if err_abs >= 0 else "−") + fmt(v, abs(err_abs))
    return [
        _cell("rl_quantity", text_sort_key(f"{q} {at}".strip()), qhtml),
        _cell("rl_predicted", sort_key(pred_val), esc(v.predicted_text or "")),
        _cell("rl_model", sort_key(v.model_value), esc(v.model_text or "")),
        _cell("rl_measured", sort_key(v.measured_value if measured else None),
              esc(measured or "") + contaminated),
        _cell("rl_roofline", sort_key(v.roofline_value if v.roofline_text else None),
              esc(v.roofline_text or "")),
        _cell("rl_serving", sort_key(v.serving_value if v.serving_text else None),
              esc(v.serving_text or ""), title=str(v.serving_explanation or "")),
        _cell("rl_error", sort_key(abs(err_rel) if is_number(err_rel) else None), esc(err_txt)),
        _cell("rl_abserr", sort_key(abs(err_abs) if is_number(err_abs) else None), esc(abs_txt)),
        _cell("rl_tolerance", sort_key(_tolerance_width(v)), esc(str(v.tolerance_text or "").split(" (")[0]),
              title=str(v.tolerance_text or "")),
        # one line: pytest-html reads each cell back with a regex that stops at a newline (a SpecError's "fix:")
        _cell("rl_reason", text_sort_key(" ".join(str(v.reason).split())),
              _INCONCLUSIVE_MARK * (v.status is VerdictStatus.INCONCLUSIVE) + esc(" ".join(str(v.reason).split())),
              title=" ".join(str(v.reason).split())),
    ]


#: before an inconclusive verdict's reason: pytest has no such outcome, so pytest-html's Result column (whose text is
#: also its filter key and row class, so it is left alone) says "Skipped"
_INCONCLUSIVE_MARK = '<span class="rl-badge rl-inconclusive">inconclusive</span> '


def drift_cell(d: Mapping[str, Any] | None) -> str:
    """The Drift cell of a row: the change and the status, the whole drift line as the tooltip."""
    if not d or d.get("status") in (None, "not_measured"):
        return _cell(DRIFT_COLUMN[0], sort_key(None))
    change = d.get("change_rel")
    word = {"drifted": "DRIFTED", "uncertain": "uncertain", "new": "new", "prediction_changed": changed_badge(d),
            "steady": "steady"}.get(
        str(d.get("status")), str(d.get("status")))
    shown = (f"{signed_percent(change)} " if is_number(change) else "") + word
    return _cell(DRIFT_COLUMN[0], sort_key(abs(change) if is_number(change) else None), esc(shown),
                 title=str(d.get("text") or ""))


class HtmlHooks:
    """Hooks into pytest-html; registered by plugin.py only when pytest-html is loaded."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self._verdicts: list[tuple[Verdict, str]] = []
        #: whether the roofline columns are in this report: only once the run collected prediction files, so a
        #: project without any sees pytest-html's report unchanged
        self.columns = False

    # --- columns ------------------------------------------------------------------------------------------
    # pytest-html asks for the header at session start, before anything is collected, and keeps it in its
    # report data (``ReportData.table_header``, read back when each row is stored and when the page is written).
    # The columns are therefore added to that header at the first sign of a prediction file: a collector of
    # this plugin (the collection of the file, or its collection error's row), or, on an xdist controller that
    # collects nothing, a worker's collected ids naming one; every row after that gets the cells.
    def _enable_columns(self) -> None:
        if self.columns:
            return
        header = _html_table_header(self.config)
        if header is None:  # a pytest-html this code does not know: no columns rather than shifted ones
            return
        columns = COLUMNS + ((DRIFT_COLUMN,) if get_session(self.config).history_enabled else ())
        header[INSERT_AT:INSERT_AT] = [
            f'<th class="sortable" data-column-type="{key}" title="{esc(tip)}">{esc(name)}</th>'
            for key, name, tip in columns]
        self.columns = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.columns and any(self._is_prediction_id(i) for i in ids):
            self._enable_columns()

    def _is_prediction_id(self, nodeid: str) -> bool:
        return is_prediction_nodeid(self.config, nodeid)

    def pytest_html_results_table_row(self, report: Any, cells: list[str]) -> None:
        if not self.columns and (getattr(report, "roofline", None) or get_session(self.config).collected_predictions
                                 or self._is_prediction_id(report.nodeid)):
            self._enable_columns()
        if self.columns:
            carried = getattr(report, "roofline", None)  # the verdict's dict form, as it travels on a report
            cells[INSERT_AT:INSERT_AT] = row_cells(Verdict.from_dict(carried) if carried else None) + (
                [drift_cell(getattr(report, "roofline_drift", None))]
                if get_session(self.config).history_enabled else [])

    # --- extras -------------------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if not self.config.getoption("htmlpath", None):
            return report

        if not isinstance(item, PredictionItem):
            return report
        if not (report.when == "call" or (report.when == "setup" and report.outcome != "passed")):
            return report
        verdict = item.stash.get(VERDICT_KEY, None)
        if verdict is None:
            return report
        from pytest_html import extras

        html = explain_html(verdict, _outcome_for_extra(verdict, item, report))
        report.extras = [*getattr(report, "extras", []), extras.html(html)]
        return report

    # --- summary ------------------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: Any) -> None:
        v = getattr(report, "roofline", None)
        if v:  # the verdict's dict form, as it travels on a report (across xdist too): turned back here, once
            self._verdicts.append((Verdict.from_dict(v), outcome_of_report(report)))

    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str],
                                    session: pytest.Session) -> None:
        if not self.columns and not self._verdicts:
            return  # no predictions in this run: the report is pytest-html's own
        prefix.append(f"<style>{EXPLAIN_CSS}{_TABLE_CSS}</style>")
        if not self._verdicts:
            return
        c = counts(o for _, o in self._verdicts)
        parts = ", ".join(f'<span class="rl-badge rl-{o}">{c[o]} {OUTCOME_LABEL[o]}</span>' for o in OUTCOMES if c[o])
        measured = sum(1 for v, _ in self._verdicts if v.mode is VerdictMode.MEASURED)
        text = (f'<p class="rl-summary"><b>Roofline predictions:</b> {parts} — {measured} checked against a '
                f'measurement, {len(self._verdicts) - measured} against the analytical model.')
        if c["inconclusive"]:
            text += (f" pytest-html counts the {c['inconclusive']} inconclusive among its Skipped (pytest has no such "
                     "outcome; the exit status treats them as skips): the Reason column marks them.")
        card = self.config.getoption("roofline_scorecard", None)
        if card:
            text += f' Standalone scorecard: <code>{esc(card)}</code>.'
        summary.append(text + "</p>")

    # --- environment table --------------------------------------------------------------------------------
    def _metadata(self) -> dict[str, Any] | None:
        try:
            from pytest_metadata.plugin import metadata_key
        except ImportError:  # pragma: no cover - pytest-html depends on pytest-metadata
            return None
        return self.config.stash.get(metadata_key, None)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if get_session(self.config).collected_predictions:
            self._enable_columns()
        md = self._metadata()
        if md is None:
            return

        rs = get_session(self.config)
        if not rs.specs:
            return  # no prediction files in this run: leave other projects' environment tables alone
        md.update(environment_from_specs(list(rs.specs.values()), rs.mode, cwd=str(self.config.rootpath)))
        if rs.mode == "math":
            md.setdefault("GPU (detected)", "none needed (math mode: the analytical model only)")
        else:
            md.setdefault("GPU (detected)", "not known yet (filled in from the results at the end of the run)")
        md.setdefault("GPU driver", "—")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # runs before pytest-html's own (trylast) sessionfinish renders the report; the environment dict it
        # captured at session start is this same object, so late facts (detected GPU, engine version) show up
        md = self._metadata()
        if md is None:
            return

        rs = get_session(self.config)
        if not rs.specs and rs.mode == "math":
            return
        detected = rs.provider.detected_gpu if rs.provider is not None else None
        if detected is not None:
            md.update(environment_from_results({"setup": {"hardware": {"detected": detected.to_dict()}}}))
        for data in session_results(rs):
            if _readable(data):  # a results file is checked when it is read; this hook must never end pytest
                md.update(environment_from_results(data))


def _html_table_header(config: pytest.Config) -> list[str] | None:
    """pytest-html's results-table header, as its report keeps it (pytest-html 4.x: the registered report
    plugin's ``_report.table_header``), or None where that is not found."""
    for plugin in config.pluginmanager.get_plugins():
        header = getattr(getattr(plugin, "_report", None), "table_header", None)
        if isinstance(header, list) and type(plugin).__module__.startswith("pytest_html"):
            return header
    return None


def _readable(data: Any) -> bool:
    """A results document whose ``setup`` and ``engine_report`` the environment table can read (objects or null)."""
    return isinstance(data, Mapping) and all(isinstance(data.get(k) or {}, Mapping)
                                             for k in ("setup", "engine_report"))


def _outcome_for_extra(v: Verdict, item: Any, report: Any) -> str:
    """The outcome the row will show (xfail marks are applied by pytest's own makereport wrapper, whose order
    relative to this one is not fixed, so it is derived from the verdict and the item's xfail mark)."""
    if report.when == "setup" and report.failed:
        return "error"
    status = v.status
    mark = item.get_closest_marker("xfail")
    if status is VerdictStatus.SKIP:
        return "skipped"
    if status is VerdictStatus.INCONCLUSIVE:
        return "inconclusive"
    if mark is not None:
        strict = mark.kwargs.get("strict", _ini_strict_xfail(item.config))
        if status is VerdictStatus.FAIL:
            return "xfailed"
        return "failed" if strict else "xpassed"
    return {VerdictStatus.PASS: "passed", VerdictStatus.FAIL: "failed", VerdictStatus.ERROR: "error"}.get(status,
                                                                                                      "skipped")


def _ini_strict_xfail(config: Any) -> bool:
    for name in ("strict_xfail", "xfail_strict"):  # pytest 9 renamed it; the old name stays an alias
        try:
            return bool(config.getini(name))
        except ValueError:
            continue
    return False


#: the style sheet, package data (report/static/pytest-html.css)
_TABLE_CSS = css("pytest-html")
