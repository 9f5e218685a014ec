"""The plugin at work: what happens once a run has something to do with predictions.

The entry module (``plugin.py``) imports none of this. It calls :func:`activate` in ``pytest_configure`` when a
roofline option, ini value or ``ROOFLINE_HISTORY`` is set, else when the first prediction file is collected (or,
on a pytest-xdist controller, when a worker collected one); its hooks hand over to the functions here only once
the run's :class:`RooflineSession` exists. A project without predictions therefore never imports the model, the
prediction format, the measurement path, the history or the report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import redact
from pytest_roofline.measure.results import named_prediction_file
from pytest_roofline.measure.results.match import ALLOW_OPTION
from pytest_roofline.measure.sweep import Measurements
from pytest_roofline.measure.target import MeasurementProvider, ReplayProvider
from pytest_roofline.pytest_plugin.base import SESSION_KEY
from pytest_roofline.pytest_plugin.collect import DRIFT_KEY, VERDICT_KEY, PredictionItem, limits_from_ini
from pytest_roofline.pytest_plugin.history import HistoryToWorkers, compared_check, store_session
from pytest_roofline.pytest_plugin.html import HtmlHooks
from pytest_roofline.pytest_plugin.progress import TerminalProgress
from pytest_roofline.pytest_plugin.session import (
    RooflineSession,
    _only_collecting_or_help,
    get_session,
    session_results,
)
from pytest_roofline.report.scorecard import write_scorecard
from pytest_roofline.report.terminal import drift_lines, summary_table
from pytest_roofline.scoring import Verdict

__all__ = ["activate", "VerdictCollector", "VERDICTS_PLUGIN", "HTML_PLUGIN", "measurements", "finish_report",
           "collection_finish", "terminal_summary", "session_finish"]

#: the names the helper plugins are registered under
VERDICTS_PLUGIN = "roofline-verdicts"
HTML_PLUGIN = "roofline-html"


def activate(config: pytest.Config) -> RooflineSession:
    """The run's session (options parsed once, a bad one a usage error) and the helper plugins: the verdict
    collector, the history's xdist hand-over, the pytest-html hooks. Once per config."""
    rs = config.stash.get(SESSION_KEY, None)
    if rs is not None:
        return rs
    rs = config.stash[SESSION_KEY] = RooflineSession(config)
    limits_from_ini(config)  # a bad limit in the ini file is a usage error before collection
    config.pluginmanager.register(VerdictCollector(rs), VERDICTS_PLUGIN)
    if rs.history_enabled and not hasattr(config, "workerinput"):
        if not _only_collecting_or_help(config):
            rs.open_history()  # once, on the controller: a store that cannot be opened is a usage error
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(HistoryToWorkers(rs), "roofline-history-xdist")
    elif rs.history_enabled:  # an xdist worker: the index as the controller read it
        rs.history_runs = HistoryToWorkers.runs_from(config.workerinput)  # type: ignore[attr-defined]
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(HtmlHooks(config), HTML_PLUGIN)
    return rs


class VerdictCollector:
    """Keeps the verdict each test report carries (on an xdist controller, the only place verdicts arrive)."""

    def __init__(self, rs: RooflineSession):
        self.rs = rs

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        verdict = getattr(report, "roofline", None)
        if verdict:  # its dict form, as it crossed from a worker: turned back into a Verdict here, once
            self.rs.reported_verdicts[report.nodeid] = Verdict.from_dict(verdict)
        drift = getattr(report, "roofline_drift", None)
        if drift:
            self.rs.reported_drifts[report.nodeid] = dict(drift)


def collection_finish(session: pytest.Session, rs: RooflineSession) -> None:
    """A replayed file that does not belong to a collected prediction file stops the run with the differences
    (measure.mismatch), once, before anything is scored; an xdist worker leaves it to each verdict (an ERROR)."""
    if hasattr(session.config, "workerinput"):
        return
    refused = rs.refused()
    if refused:
        pytest.exit("\n".join(refused), returncode=pytest.ExitCode.USAGE_ERROR)
    if rs.mode == "replay" and not session.items:  # nothing to score the file against: say which file it names
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            named = str((rs.replay_data().get("setup") or {}).get("predictions_file") or "")
            hit = named_prediction_file(named, rs.replay or "")
            found = os.path.relpath(hit) if hit is not None else None
            where = (f"; it was made with {found}: pytest --replay {rs.replay} {found}" if found else
                     f"; it was made with {named}, which is not there: name the prediction file after it" if named
                     else ": name the prediction file after it")
            _end_open_line(tr)
            tr.write_line(f"roofline: --replay {rs.replay}: no prediction file was collected, so nothing is "
                          f"scored{where}")


def measurements(request: pytest.FixtureRequest) -> Iterator[MeasurementProvider]:
    """The ``roofline_measurements`` fixture's body: a replayed file, or live sweeps (engines start on first use)."""
    rs = get_session(request.config)
    if rs.mode == "replay":
        where = Path(rs.replay) if rs.replay else None  # the requests files lie beside the results file
        yield ReplayProvider(rs.replay_measurement(), where if where is None or where.is_dir() else where.parent)
        return
    selected = [i for i in request.session.items if isinstance(i, PredictionItem)]
    provider = Measurements.from_options(rs, selected)
    provider.progress = (None if request.config.getoption("roofline_no_progress")
                         else TerminalProgress.for_config(request.config))  # the engine's start and each point, live
    rs.provider = provider
    try:
        yield provider
    finally:
        provider.close()


def finish_report(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> pytest.TestReport:
    """A prediction's report: its verdict (and drift) as plain dicts that travel across xdist, the plugin's own
    message instead of its traceback for a setup ERROR, and everything redacted."""
    if not isinstance(item, PredictionItem):
        return report
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        verdict = item.stash.get(VERDICT_KEY, None)
        if verdict is not None:
            report.roofline = redact.redact_data(verdict.to_dict())  # type: ignore[attr-defined]
        drift = item.stash.get(DRIFT_KEY, None)
        if drift is not None:
            report.roofline_drift = redact.redact_data(drift)  # type: ignore[attr-defined]
    if report.when == "setup" and call.excinfo is not None:
        brief = item.brief_longrepr(call.excinfo)  # the message alone, not the plugin's traceback
        if brief is not None:
            report.longrepr = brief
    _redact_report(report)
    return report


def _redact_report(report: pytest.TestReport) -> None:
    """The one redaction step on everything a prediction's report carries to the terminal, JUnit XML and
    pytest-html: the failure text (it quotes servers and engine logs), the properties and captured sections."""
    lr = report.longrepr
    if isinstance(lr, str):
        report.longrepr = redact.redact_text(lr)
    elif isinstance(lr, tuple) and len(lr) == 3:  # a skip: (path, line, reason)
        report.longrepr = (lr[0], lr[1], redact.redact_text(lr[2]))
    elif lr is not None:
        text = str(lr)
        clean = redact.redact_text(text)
        if clean != text:  # keep pytest's own structure unless it holds something to hide
            report.longrepr = clean
    report.user_properties = [(k, redact.redact_data(v)) for k, v in report.user_properties]
    report.sections = [(title, redact.redact_text(body)) for title, body in report.sections]


#: the widest the prediction table and the drift lines are drawn, however wide the terminal
MAX_TABLE_WIDTH = 200


def terminal_summary(terminalreporter: Any, config: pytest.Config, rs: RooflineSession) -> None:
    """The prediction table (and the drift section) at the end of the run."""
    if not (rs.show_summary or rs.history_enabled):
        return
    reports = [r for reps in terminalreporter.stats.values() for r in reps if getattr(r, "roofline", None)]
    if not reports:
        return
    verbosity = config.get_verbosity()  # -q: the failing rows and the count; -qq: the count alone
    # the terminal's own width (the table drops columns only where they do not fit), capped where a line would
    # be too long to read across
    width = min(terminalreporter._tw.fullwidth, MAX_TABLE_WIDTH)
    if rs.show_summary:
        if verbosity > -2:
            terminalreporter.write_sep("=", "roofline predictions")
        for line in summary_table(reports, width=width, verbosity=verbosity):
            terminalreporter.write_line(line)
        for line in allowed_mismatch_lines(rs):  # every verdict says so; the table says it once (trial s23 L7)
            terminalreporter.write_line(line, yellow=True)
        if rs.provider is not None and verbosity > -2:
            for line in rs.provider.summary_lines():
                terminalreporter.write_line(line)
    if rs.history_enabled:  # the drift section is not the table: --no-roofline-summary keeps it
        drifts = [(Verdict.from_dict(r.roofline).id, r.roofline_drift) for r in reports
                  if getattr(r, "roofline_drift", None)]
        lines = drift_lines(drifts, rs.drift_policy.describe(), verbosity=verbosity, width=width,
                            added=rs.history_added)
        if lines and verbosity > -2:
            terminalreporter.write_sep("-" if rs.show_summary else "=", "roofline drift")
        for line in lines:
            terminalreporter.write_line(line)
    for line in rs.compared_lines:  # last: a --roofline-drift-fail failure's reason ends the output (trial 21, M3)
        terminalreporter.write_line(line, red=line.startswith("roofline drift: FAILED"))


def allowed_mismatch_lines(rs: RooflineSession) -> list[str]:
    """One line per prediction file scored on a replayed file that does not belong to it, under
    ``--roofline-allow-mismatch`` (its verdicts carry it as a note and in their reason; a PASS row shows no reason,
    so without this line the terminal never said it)."""
    if not getattr(rs, "allow_mismatch", False):
        return []
    return [f"MISMATCHED RESULTS, allowed ({ALLOW_OPTION}): {Path(path).name} scored on --replay {rs.replay}, "
            f"which does not belong to it: {'; '.join(cmp.differences)}"
            for path, cmp in getattr(rs, "mismatches", {}).items() if cmp.differences]


def session_finish(session: pytest.Session, rs: RooflineSession) -> None:
    """The scorecard and the history's new runs, written by the controller only."""
    if hasattr(session.config, "workerinput"):
        return
    if not rs.history_enabled:
        _write_scorecard(session, rs)
        env = os.environ.get("ROOFLINE_HISTORY")
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        if env is not None and not env.strip() and rs.measured and rs.collected_predictions and tr is not None:
            # a CI secret that is not set (env: {ROOFLINE_HISTORY: ${{ secrets.X }}}): history off, said once,
            # never silently (trial s26d #7; the empty --roofline-history= is a usage error)
            _end_open_line(tr)
            tr.write_line("roofline history: not stored: $ROOFLINE_HISTORY is set but empty (an unset CI secret or "
                          "variable?); give it the store's path or URI, or unset it")
    else:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        stopped = ("interrupted" if session.exitstatus == pytest.ExitCode.INTERRUPTED
                   else "stopped early (-x/--maxfail)" if session.shouldfail or session.shouldstop else "")
        # the run is added to the store (unless the session did not score every prediction) before the scorecard
        # is written, so its drift line says what storing did (values added to a stored run: rs.history_added);
        # the store's lines are printed after the scorecard's, as before
        stored_lines, store_failed = store_session(rs, stopped=stopped)
        _write_scorecard(session, rs)
        # the drift check's lines end the drift section (terminal_summary, which runs after this), not here
        rs.compared_lines, too_few = compared_check(rs)
        for line in [*rs.history_notes, *stored_lines]:
            if tr is not None:
                _end_open_line(tr)
                tr.write_line(line)
        if (store_failed or too_few) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a lost run or a night that compared nothing
        if (store_failed or too_few) and tr is not None:
            _count_line_says_failed(tr, [word for word, why in ((DRIFT_CHECK_FAILED, too_few),
                                                                (HISTORY_NOT_STORED, store_failed)) if why])


#: the part the count line gains when --roofline-drift-fail failed the session itself (a night that compared too
#: few of its measured predictions), and when its run could not be stored: no test failed, the session did
DRIFT_CHECK_FAILED = "roofline drift check failed"
HISTORY_NOT_STORED = "roofline run not stored"


def _count_line_says_failed(tr: Any, words: list[str]) -> None:
    """Make pytest's closing count line (``21 passed, 1 xpassed in 3.1s``) say the session failed, in red: a
    session-level failure (exit code 1) left it green, and a CI log skimmer reads the last line (issue 21).

    pytest colours that line from its counts alone (``_pytest/terminal.py`` ``_determine_main_color``: red only for
    a ``failed`` or ``error`` count; a count under a key of a plugin's own is yellow). Adding a report to
    ``stats["error"]`` would print ``1 error`` for a test that does not exist and hand pytest's short summary a
    report to list; raising from a hook, as pytest-benchmark does for ``--benchmark-compare-fail``, ends the
    session in a Python traceback with no count line at all. So the line pytest built is kept and one part is added,
    ``21 passed, 1 xpassed, roofline drift check failed``, and its colour set red, by wrapping this reporter's
    ``build_summary_stats_line`` (the method pytest documents as building that line). The tests' own counts, and
    everything --junitxml writes, are untouched: no prediction failed."""
    build = getattr(tr, "build_summary_stats_line", None)
    if build is None or not words:  # another terminal reporter: the exit code and the red reason still say it
        return

    def build_failed() -> tuple[list[tuple[str, dict[str, bool]]], str]:
        parts, _colour = build()
        # pytest bolds the parts of the line's own colour: now red, not the green of "21 passed"
        parts = [(text, {**markup, "bold": bool(markup.get("red"))}) for text, markup in parts]
        return [*parts, *((word, {"red": True, "bold": True}) for word in words)], "red"

    tr.build_summary_stats_line = build_failed


def _end_open_line(tr: Any) -> None:
    tr.ensure_newline()  # the progress line is still open at this point
    if getattr(getattr(tr, "_tw", None), "width_of_current_line", 0):
        tr.write("\n")  # -q: the dots are not tied to a file path, so ensure_newline leaves them open


def _write_scorecard(session: pytest.Session, rs: RooflineSession) -> None:
    if not rs.scorecard:
        return
    # the verdicts scored in this process, or (an xdist controller scores none) those the workers' reports carried
    verdicts = list(rs.verdicts) or list(rs.reported_verdicts.values())
    path = write_scorecard(list(rs.specs.values()), verdicts, session_results(rs), mode=rs.mode,
                           path=Path(rs.scorecard), drifts=_drifts_by_verdict(rs) if rs.history_enabled else None,
                           added=rs.history_added)
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        _end_open_line(tr)
        tr.write_line(f"roofline scorecard: {path}")


def _drifts_by_verdict(rs: RooflineSession) -> dict[tuple[str, str], dict[str, Any]]:
    """Each drift by (file, prediction id), the pair a verdict dict carries."""
    drifts = list(rs.reported_drifts.values())
    return {(str(d.get("file")), str(d.get("id"))): d for d in drifts}
