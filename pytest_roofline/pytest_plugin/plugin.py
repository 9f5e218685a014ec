"""pytest wiring only: options, markers, collection of prediction files, fixtures and report hooks.

Everything with substance lives in its own module (spec, quantities, scoring, plan, sweep, report); this file
parses options once into a :class:`RooflineSession` kept in ``config.stash``.
"""

from __future__ import annotations

import argparse
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import redact
from pytest_roofline.format.limits import DEFAULT_LIMITS, INI_OPTIONS
from pytest_roofline.measure.sweep import Measurements
from pytest_roofline.measure.target import MeasurementProvider, ReplayProvider
from pytest_roofline.model import hardware
from pytest_roofline.pytest_plugin.collect import (
    DRIFT_KEY,
    INCONCLUSIVE_POLICIES,
    VERDICT_KEY,
    PredictionFile,
    PredictionItem,
    limits_from_ini,
    wants_file,
)
from pytest_roofline.pytest_plugin.history import (
    HistoryToWorkers,
    parse_baseline_option,
    parse_drift_option,
    store_session,
)
from pytest_roofline.pytest_plugin.html import HtmlHooks
from pytest_roofline.pytest_plugin.progress import TerminalProgress
from pytest_roofline.pytest_plugin.session import (
    DEFAULT_PATTERNS,
    SESSION_KEY,
    RooflineSession,
    _only_collecting_or_help,
    get_session,
    session_results,
)
from pytest_roofline.report.scorecard import write_scorecard
from pytest_roofline.report.terminal import drift_lines, summary_table
from pytest_roofline.scoring import DEFAULT_MEASURED_TOLERANCE


def parse_gpu(value: str) -> str:
    """``--gpu``'s value, checked where it is declared (a usage error before anything is collected): ``cpu``, a
    family of the hardware catalog (``a100``) or one of its variant ids/aliases (``a100-sxm4-80gb``)."""
    text = value.strip()
    if text.lower() == "cpu" or text.lower() in hardware.families():
        return text
    try:
        hardware.get_hardware(text)
    except hardware.HardwareError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'cpu' for the CPU build of vLLM)") from None
    return text


def parse_replica_metrics(value: str) -> str:
    """``--roofline-replica-metrics``'s value: an http(s) base URL (``/metrics`` is added), checked where it is
    declared; ``host:port`` alone means http."""
    from urllib.parse import urlsplit

    text = value.strip().rstrip("/")
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"{redact.redact_url(value)!r} is not an http(s) URL of a replica, e.g. "
                                         "http://10.0.0.5:8000")
    return text.removesuffix("/metrics")


#: the options (short name, ``--roofline-`` name, argparse keywords). The ``--roofline-`` names are always
#: registered; a short name is added only after the project's initial conftests and every other plugin have added
#: theirs, and only where it is still free, so a project whose conftest defines ``--gpu`` keeps its own (pytest
#: loads entry-point plugins, this one included, before the rootdir conftests: registering ``--gpu`` up front
#: made *their* ``addoption`` crash with argparse's "conflicting option string").
OPTIONS: tuple[tuple[str | None, str, dict[str, Any]], ...] = (
    ("--gpu", "--roofline-gpu", dict(
        dest="roofline_gpu", metavar="FAMILY", type=parse_gpu,
        help="measure on this machine: a GPU family (a100, h100, h200, ...) or 'cpu' for the CPU build of vLLM "
             "with the project's tiny model. Without --gpu/--endpoint/--replay only the math is checked.")),
    ("--endpoint", "--roofline-endpoint", dict(
        dest="roofline_endpoint", metavar="URL",
        help="measure an already running OpenAI-compatible server instead of starting vLLM")),
    ("--endpoint-key-env", "--roofline-endpoint-key-env", dict(
        dest="roofline_endpoint_key_env", metavar="VAR", default=None,
        help="environment variable holding the endpoint's API key (never printed; default: OPENAI_API_KEY when "
             "it is set, else no key)")),
    ("--replay", "--roofline-replay", dict(
        dest="roofline_replay", metavar="RESULTS",
        help="score predictions against stored results, without an engine: a results.json, or vllm bench serve "
             "--save-result files (a file or a folder), GuideLLM benchmarks JSON, an AIPerf profile export")),
    ("--reanchor", "--roofline-reanchor", dict(
        dest="roofline_reanchor", action="store_true",
        help="when the detected GPU differs from the YAML's hardware, compute model values for the detected "
             "device (values in ink never move) instead of stopping")),
)
_SHORT_NAMES_ADDED: weakref.WeakSet[pytest.Parser] = weakref.WeakSet()


def _add_short_names(parser: pytest.Parser) -> None:
    """Add each short name that no conftest or other plugin has taken (once per parser)."""
    if parser in _SHORT_NAMES_ADDED:
        return
    _SHORT_NAMES_ADDED.add(parser)
    group = parser.getgroup("roofline")
    for short, long, keywords in OPTIONS:
        if short is None:
            continue
        try:
            group.addoption(short, **{**keywords, "help": f"same as {long}"})
        except (argparse.ArgumentError, ValueError):
            continue  # the project's own option keeps the name; ours stays reachable under its --roofline- name


def _conftest_registered(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether a conftest is already registered: this plugin was then loaded late (``pytest_plugins`` in a
    conftest), after ``pytest_load_initial_conftests`` began, so its wrapper below will not run."""
    return any(Path(str(getattr(p, "__file__", "") or "")).name == "conftest.py" for p in pluginmanager.get_plugins())


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> Any:
    try:
        return (yield)
    finally:  # the rootdir conftests have added their options now: take the short names that are left
        _add_short_names(parser)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    g = parser.getgroup("roofline", "pytest-roofline: performance predictions as tests")
    for _short, long, keywords in OPTIONS:
        g.addoption(long, **keywords)
    g.addoption("--roofline-out", dest="roofline_out", metavar="DIR",
                help="folder for results files and engine logs (default: roofline-runs/<timestamp>)")
    g.addoption("--roofline-scorecard", dest="roofline_scorecard", metavar="PATH",
                help="write a standalone HTML scorecard of the run")
    g.addoption("--no-roofline-summary", dest="roofline_no_summary", action="store_true",
                help="do not print the prediction table at the end of the run")
    g.addoption("--no-roofline-progress", dest="roofline_no_progress", action="store_true",
                help="do not print the live sweep progress (engine start, each point)")
    g.addoption("--roofline-replica-metrics", dest="roofline_replica_metrics", metavar="URL", action="append",
                default=None, type=parse_replica_metrics,
                help="with --endpoint in front of several replicas: one replica's own /metrics base URL (repeat once "
                     "per replica, as many as the file's engine.replicas); wins over engine.replica_metrics")
    g.addoption("--roofline-allow-mismatch", dest="roofline_allow_mismatch", action="store_true",
                help="score a replayed results file that does not belong to the predictions (another GPU, model, "
                     "engine version, lengths or sweep points) instead of refusing it; every verdict says so")
    g.addoption("--roofline-history", dest="roofline_history", metavar="URI",
                help="store this run (results, verdicts, environment) in a history and report each measured "
                     "prediction's drift against it: a directory, file://..., sqlite:///x.db or "
                     "postgresql+psycopg://user@host:port/db (default: $ROOFLINE_HISTORY, else ini roofline_history)")
    g.addoption("--roofline-history-label", dest="roofline_history_label", metavar="TEXT",
                help="a label stored with the run, e.g. the CI runner's GPU label")
    g.addoption("--roofline-drift", dest="roofline_drift", metavar="THRESHOLD", type=parse_drift_option,
                help="how far a measured value may move from its baseline before it is reported as drifted: 10%% "
                     "(the default), +10%%/-3%%, <= +5%%; a prediction's own drift: in the YAML wins")
    g.addoption("--roofline-drift-baseline", dest="roofline_drift_baseline", metavar="previous|median:N",
                type=parse_baseline_option,
                help="the baseline: the previous run on the same setup (default) or the median of the last N")
    g.addoption("--roofline-drift-fail", dest="roofline_drift_fail", action="store_true",
                help="a drifted prediction's test fails (as --benchmark-compare-fail does)")
    g.addoption("--roofline-inconclusive", dest="roofline_inconclusive", choices=INCONCLUSIVE_POLICIES,
                default=None, help="what a measured verdict whose confidence interval straddles its tolerance "
                                   "boundary becomes: skip (the default: reported as 'inconclusive', neither a pass "
                                   "nor a failure), fail, or pass")
    parser.addini("roofline_inconclusive", "outcome of an inconclusive verdict: skip | fail | pass (see "
                  "--roofline-inconclusive)", default="")
    parser.addini("roofline_history", "history store of runs (see --roofline-history)", default="")
    parser.addini("roofline_history_label", "label stored with each run (see --roofline-history-label)", default="")
    parser.addini("roofline_drift", "drift threshold (see --roofline-drift; default 10%)", default="")
    parser.addini("roofline_drift_baseline", "drift baseline: previous or median:N", default="")
    parser.addini("roofline_patterns", "glob patterns of prediction files (matched against the path from rootdir; "
                  "with the default patterns only files that look like prediction files are collected, with "
                  "patterns you set every file they match)", type="linelist", default=DEFAULT_PATTERNS)
    parser.addini("roofline_default_tolerance", "tolerance of measured checks that give none",
                  default=DEFAULT_MEASURED_TOLERANCE)
    for name, option in INI_OPTIONS.items():  # the loader's limits (format/limits.py); raise one for a big file
        parser.addini(option, f"limit of a prediction file: {name} (default {getattr(DEFAULT_LIMITS, name):,})",
                      default="")
    if _conftest_registered(pluginmanager):  # loaded by a conftest's pytest_plugins: the wrapper has gone by
        _add_short_names(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "roofline: a prediction collected from a pytest-roofline YAML file",
        "roofline_math: a prediction the analytical model can check without a GPU",
        "roofline_measured: a prediction that needs a measurement (--gpu, --endpoint, --replay)",
    ):
        config.addinivalue_line("markers", line)
    rs = config.stash[SESSION_KEY] = RooflineSession(config)
    limits_from_ini(config)  # a bad limit in the ini file is a usage error before collection
    config.pluginmanager.register(_VerdictCollector(rs), "roofline-verdicts")
    if rs.history_enabled and not hasattr(config, "workerinput"):
        if not _only_collecting_or_help(config):
            rs.open_history()  # once, on the controller: a store that cannot be opened is a usage error
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(HistoryToWorkers(rs), "roofline-history-xdist")
    elif rs.history_enabled:  # an xdist worker: the index as the controller read it
        rs.history_runs = HistoryToWorkers.runs_from(config.workerinput)  # type: ignore[attr-defined]
    if config.pluginmanager.hasplugin("html"):
        config.pluginmanager.register(HtmlHooks(config), "roofline-html")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PredictionFile | None:
    if not wants_file(parent.config, file_path):  # collect.wants_file: foreign YAML is left to the project
        return None
    get_session(parent.config).collected_predictions = True
    return PredictionFile.from_parent(parent, path=file_path)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A replayed file that does not belong to a collected prediction file stops the run with the differences
    (measure.mismatch), once, before anything is scored; an xdist worker leaves it to each verdict (an ERROR)."""
    rs = session.config.stash.get(SESSION_KEY, None)
    if rs is None or hasattr(session.config, "workerinput"):
        return
    refused = rs.refused()
    if refused:
        pytest.exit("\n".join(refused), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def roofline_measurements(request: pytest.FixtureRequest) -> Iterator[MeasurementProvider]:
    """The run's measurement provider: a replayed file, or live sweeps (engines start on first use)."""
    rs = get_session(request.config)
    if rs.mode == "replay":
        yield ReplayProvider(rs.replay_measurement())
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, PredictionItem) and report.when == "call" or (
            isinstance(item, PredictionItem) and report.when == "setup" and report.outcome != "passed"):
        verdict = item.stash.get(VERDICT_KEY, None)
        if verdict is not None:
            report.roofline = redact.redact_data(verdict.to_dict())  # plain dict: travels across xdist too
        drift = item.stash.get(DRIFT_KEY, None)
        if drift is not None:
            report.roofline_drift = redact.redact_data(drift)
    if isinstance(item, PredictionItem) and report.when == "setup" and call.excinfo is not None:
        brief = item.brief_longrepr(call.excinfo)  # the message alone, not the plugin's traceback
        if brief is not None:
            report.longrepr = brief
    if isinstance(item, PredictionItem):
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


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """An inconclusive verdict reported as a skip gets its own category: "inconclusive" in the counts line, ``I``
    in the progress line, INCONCLUSIVE in -v, so it never reads as a pass nor hides among the skips."""
    verdict = getattr(report, "roofline", None)
    if verdict and verdict.get("status") == "inconclusive" and report.skipped and report.when == "call":
        return "inconclusive", "I", ("INCONCLUSIVE", {"purple": True})
    return None


class _VerdictCollector:
    """Keeps the verdict each test report carries (on an xdist controller, the only place verdicts arrive)."""

    def __init__(self, rs: RooflineSession):
        self.rs = rs

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        verdict = getattr(report, "roofline", None)
        if verdict:
            self.rs.reported_verdicts[report.nodeid] = dict(verdict)
        drift = getattr(report, "roofline_drift", None)
        if drift:
            self.rs.reported_drifts[report.nodeid] = dict(drift)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rs = config.stash.get(SESSION_KEY, None)
    if rs is None or not (rs.show_summary or rs.history_enabled):
        return
    reports = [r for reps in terminalreporter.stats.values() for r in reps if getattr(r, "roofline", None)]
    if not reports:
        return
    verbosity = config.get_verbosity()  # -q: the failing rows and the count; -qq: the count alone
    width = min(terminalreporter._tw.fullwidth, 120)
    if rs.show_summary:
        if verbosity > -2:
            terminalreporter.write_sep("=", "roofline predictions")
        for line in summary_table(reports, width=width, verbosity=verbosity):
            terminalreporter.write_line(line)
        if rs.provider is not None and verbosity > -2:
            for line in rs.provider.summary_lines():
                terminalreporter.write_line(line)
    if rs.history_enabled:  # the drift section is not the table: --no-roofline-summary keeps it
        drifts = [(r.roofline["id"], r.roofline_drift) for r in reports if getattr(r, "roofline_drift", None)]
        lines = drift_lines(drifts, rs.drift_policy.describe(), verbosity=verbosity, width=width)
        if lines and verbosity > -2:
            terminalreporter.write_sep("-" if rs.show_summary else "=", "roofline drift")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rs = session.config.stash.get(SESSION_KEY, None)
    if rs is None or hasattr(session.config, "workerinput"):
        return  # scorecards and history are written by the controller only
    _write_scorecard(session, rs)
    if rs.history_enabled:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in store_session(rs):  # after the scorecard: the run is added to the store
            if tr is not None:
                _end_open_line(tr)
                tr.write_line(line)


def _end_open_line(tr: Any) -> None:
    tr.ensure_newline()  # the progress line is still open at this point
    if getattr(getattr(tr, "_tw", None), "width_of_current_line", 0):
        tr.write("\n")  # -q: the dots are not tied to a file path, so ensure_newline leaves them open


def _write_scorecard(session: pytest.Session, rs: RooflineSession) -> None:
    if not rs.scorecard:
        return
    # the verdicts scored in this process, or (an xdist controller scores none) those the workers' reports carried
    verdicts = [v.to_dict() for v in rs.verdicts] or list(rs.reported_verdicts.values())
    path = write_scorecard(list(rs.specs.values()), verdicts, session_results(rs), mode=rs.mode,
                           path=Path(rs.scorecard), drifts=_drifts_by_verdict(rs) if rs.history_enabled else None)
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.ensure_newline()  # the progress line is still open at this point
        if getattr(getattr(tr, "_tw", None), "width_of_current_line", 0):
            tr.write("\n")  # -q: the dots are not tied to a file path, so ensure_newline leaves them open
        tr.write_line(f"roofline scorecard: {path}")


def _drifts_by_verdict(rs: RooflineSession) -> dict[tuple[str, str], dict[str, Any]]:
    """Each drift by (file, prediction id), the pair a verdict dict carries."""
    drifts = list(rs.reported_drifts.values())
    return {(str(d.get("file")), str(d.get("id"))): d for d in drifts}
