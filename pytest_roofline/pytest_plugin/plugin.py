"""pytest's entry point (the ``pytest11`` entry ``roofline``): options, ini keys, markers and the collection hook,
and nothing heavy.

pytest imports this module in every run of every project the plugin is installed in, predictions or not, so it
imports only the light :mod:`~pytest_roofline.pytest_plugin.base` (and pluggy, which pytest has loaded already).
The work (:mod:`~pytest_roofline.pytest_plugin.active`: the run's session, the model, the prediction format,
the measurement path, the history, the report) is imported when the run uses a roofline option, ini value or
``ROOFLINE_HISTORY`` (in ``pytest_configure``), else when the first prediction file is collected (on a
pytest-xdist controller: when a worker collected one). Until then each hook below returns at once.
"""

from __future__ import annotations

import argparse
import importlib
import os
import weakref
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pluggy import HookimplMarker

from pytest_roofline.pytest_plugin.base import (
    DEFAULT_PATTERNS,
    INCONCLUSIVE_POLICIES,
    SESSION_KEY,
    is_prediction_nodeid,
    patterns_of,
    wants_file,
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pytest

    from pytest_roofline.pytest_plugin.collect import PredictionFile
    from pytest_roofline.pytest_plugin.session import RooflineSession

#: ``pytest.hookimpl`` itself (``_pytest.config``: ``hookimpl = HookimplMarker("pytest")``), without importing pytest
hookimpl = HookimplMarker("pytest")


def parse_gpu(value: str) -> str:
    """``--gpu``'s value, checked where it is declared (a usage error before anything is collected): ``cpu``, a
    family of the hardware catalog (``a100``) or one of its variant ids/aliases (``a100-sxm4-80gb``)."""
    from pytest_roofline.model import hardware  # the catalog is read only when --gpu is given

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
        from pytest_roofline import redact

        raise argparse.ArgumentTypeError(f"{redact.redact_url(value)!r} is not an http(s) URL of a replica, e.g. "
                                         "http://10.0.0.5:8000")
    return text.removesuffix("/metrics")


def parse_drift_option(value: str) -> str:
    """``--roofline-drift``'s value, checked where it is declared (:mod:`pytest_roofline.pytest_plugin.history`)."""
    from pytest_roofline.pytest_plugin.history import parse_drift_option as parse

    return parse(value)


def parse_baseline_option(value: str) -> str:
    """``--roofline-drift-baseline``'s value, checked where it is declared (``pytest_plugin.history``)."""
    from pytest_roofline.pytest_plugin.history import parse_baseline_option as parse

    return parse(value)


def parse_share_option(value: str) -> str:
    """``--roofline-drift-min-compared``'s value (``50%``, ``0.5``), checked where it is declared."""
    from pytest_roofline.pytest_plugin.history import parse_share_option as parse

    return parse(value)


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
#: the options that have only their ``--roofline-`` name, in the order ``--help`` lists them
MORE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--roofline-out", dict(
        dest="roofline_out", metavar="DIR",
        help="folder for results files and engine logs (default: roofline-runs/<timestamp> in the rootdir "
             "where a pytest configuration file sets it, else where pytest runs)")),
    ("--roofline-scorecard", dict(
        dest="roofline_scorecard", metavar="PATH", help="write a standalone HTML scorecard of the run")),
    ("--no-roofline-summary", dict(
        dest="roofline_no_summary", action="store_true",
        help="do not print the prediction table at the end of the run")),
    ("--no-roofline-progress", dict(
        dest="roofline_no_progress", action="store_true",
        help="do not print the live sweep progress (engine start, each point)")),
    ("--roofline-replica-metrics", dict(
        dest="roofline_replica_metrics", metavar="URL", action="append", default=None, type=parse_replica_metrics,
        help="with --endpoint in front of several replicas: one replica's own /metrics base URL (repeat once "
             "per replica, as many as the file's engine.replicas); wins over engine.replica_metrics")),
    ("--roofline-allow-mismatch", dict(
        dest="roofline_allow_mismatch", action="store_true",
        help="score a replayed results file that does not belong to the predictions (another GPU, model, "
             "engine version, lengths or sweep points) instead of refusing it; every verdict says so")),
    ("--roofline-history", dict(
        dest="roofline_history", metavar="URI",
        help="store this run (results, verdicts, environment) in a history and report each measured "
             "prediction's drift against it: a directory, file://..., sqlite:///x.db or "
             "postgresql+psycopg://user@host:port/db (default: $ROOFLINE_HISTORY, else ini roofline_history)")),
    ("--roofline-history-label", dict(
        dest="roofline_history_label", metavar="TEXT",
        help="a label stored with the run, e.g. the CI runner's GPU label")),
    ("--roofline-drift", dict(
        dest="roofline_drift", metavar="THRESHOLD", type=parse_drift_option,
        help="how far a measured value may move from its baseline before it is reported as drifted: 10%% "
             "(the default), +10%%/-3%%, <= +5%%; a prediction's own drift: in the YAML wins")),
    ("--roofline-drift-baseline", dict(
        dest="roofline_drift_baseline", metavar="previous|median:N|run:ID", type=parse_baseline_option,
        help="the baseline: the previous run on the same setup (default), the median of the last N, or a pinned "
             "run (run:ID, a stored run's id or its unique beginning)")),
    ("--roofline-drift-fail", dict(
        dest="roofline_drift_fail", action="store_true",
        help="a drifted prediction's test fails (as --benchmark-compare-fail does), and so does the session "
             "when fewer than --roofline-drift-min-compared of its measured predictions had a baseline")),
    ("--roofline-drift-min-compared", dict(
        dest="roofline_drift_min_compared", metavar="SHARE", type=parse_share_option, default=None,
        help="with --roofline-drift-fail: the least share of a setup's measured predictions that must be "
             "compared with a baseline (default 50%%; a night that compared none fails, a setup's first night "
             "included; 0%% lets a setup's first night pass, said, never a night of a setup the store holds; a "
             "prediction file's first night beside compared files is not counted)")),
    ("--roofline-drift-machine", dict(
        dest="roofline_drift_machine", metavar="SHARE", type=parse_share_option, default=None,
        help="leave unjudged (uncertain) a night whose host probe, the machine timed around each point, is further "
             "than SHARE (e.g. 20%%) from the other nights', and skip such nights as baselines: a slower machine "
             "moves every figure at once (default: every night judged, its line notes a probe 20%% apart)")),
    ("--roofline-history-optional", dict(
        dest="roofline_history_optional", action="store_true",
        help="a run that cannot be stored in the history is a warning, not a session failure")),
    ("--roofline-inconclusive", dict(
        dest="roofline_inconclusive", choices=INCONCLUSIVE_POLICIES, default=None,
        help="what a measured verdict whose confidence interval straddles its tolerance boundary becomes: skip "
             "(the default: reported as 'inconclusive', neither a pass nor a failure), fail, or pass")),
)
#: the string ini keys (name, help); ``roofline_patterns`` and the loader's limits are added beside them
INI_KEYS: tuple[tuple[str, str], ...] = (
    ("roofline_inconclusive", "outcome of an inconclusive verdict: skip | fail | pass (see --roofline-inconclusive)"),
    ("roofline_history", "history store of runs (see --roofline-history)"),
    ("roofline_history_label", "label stored with each run (see --roofline-history-label)"),
    ("roofline_drift", "drift threshold (see --roofline-drift; default 10%)"),
    ("roofline_drift_baseline", "drift baseline: previous, median:N or run:ID (see --roofline-drift-baseline)"),
    ("roofline_drift_machine", "how far a night's host probe may move before it is not judged (see "
                               "--roofline-drift-machine)"),
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


@hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> Any:
    try:
        return (yield)
    finally:  # the rootdir conftests have added their options now: take the short names that are left
        _add_short_names(parser)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_roofline.format.limits import DEFAULT_LIMITS, INI_OPTIONS  # a dataclass module, no I/O

    g = parser.getgroup("roofline", "pytest-roofline: performance predictions as tests")
    for _short, long, keywords in OPTIONS:
        g.addoption(long, **keywords)
    for long, keywords in MORE_OPTIONS:
        g.addoption(long, **keywords)
    for name, text in INI_KEYS:
        parser.addini(name, text, default="")
    parser.addini("roofline_patterns", "glob patterns of prediction files (matched against the path from rootdir; "
                  "with the default patterns only files that look like prediction files are collected, with "
                  "patterns you set every file they match)", type="linelist", default=DEFAULT_PATTERNS)
    # empty means the scoring's DEFAULT_MEASURED_TOLERANCE (session.RooflineSession reads it)
    parser.addini("roofline_default_tolerance", "tolerance of measured checks that give none", default="")
    for name, option in INI_OPTIONS.items():  # the loader's limits (format/limits.py); raise one for a big file
        parser.addini(option, f"limit of a prediction file: {name} (default {getattr(DEFAULT_LIMITS, name):,})",
                      default="")
    if _conftest_registered(pluginmanager):  # loaded by a conftest's pytest_plugins: the wrapper has gone by
        _add_short_names(parser)


def in_use(config: pytest.Config) -> bool:
    """Whether the run asks for the plugin before any prediction file is seen: a roofline option on the command
    line (or in addopts), a roofline ini value, or ``ROOFLINE_HISTORY``. The plugin then starts in
    ``pytest_configure``, as it always did, so every bad value is a usage error before collection."""
    from pytest_roofline.format.limits import INI_OPTIONS

    if os.environ.get("ROOFLINE_HISTORY"):
        return True
    dests = [kw["dest"] for _s, _l, kw in OPTIONS] + [kw["dest"] for _l, kw in MORE_OPTIONS]
    if any(getattr(config.option, dest, None) not in (None, False) for dest in dests):
        return True
    names = [n for n, _ in INI_KEYS] + ["roofline_default_tolerance", *INI_OPTIONS.values()]
    return any(config.getini(n) for n in names) or patterns_of(config)[1]


def activate(config: pytest.Config) -> RooflineSession:
    """The run's session, starting the plugin's work (and importing it) on the first call."""
    rs = config.stash.get(SESSION_KEY, None)
    if rs is None:
        from pytest_roofline.pytest_plugin.active import activate as start

        rs = start(config)
    return rs


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "roofline: a prediction collected from a pytest-roofline YAML file",
        "roofline_math: a prediction the analytical model can check without a GPU",
        "roofline_measured: a prediction that needs a measurement (--gpu, --endpoint, --replay)",
    ):
        config.addinivalue_line("markers", line)
    # the fixture module is light (its body is imported on first use); registered here so --fixtures lists it
    config.pluginmanager.register(importlib.import_module("pytest_roofline.pytest_plugin.fixtures"),
                                  "roofline-fixtures")
    if in_use(config):
        activate(config)
    elif not hasattr(config, "workerinput"):  # a controller that may only ever see the workers' predictions
        config.pluginmanager.register(_Watcher(config), "roofline-watch")


class _Watcher:
    """Starts the plugin in a process that collects no prediction file itself but runs some (a pytest-xdist
    controller): when a worker's collection names one, else when a report carrying a verdict arrives."""

    def __init__(self, config: pytest.Config):
        self.config = config

    @hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if SESSION_KEY in self.config.stash or not any(is_prediction_nodeid(self.config, i) for i in ids):
            return
        activate(self.config)
        from pytest_roofline.pytest_plugin.active import HTML_PLUGIN

        html = self.config.pluginmanager.get_plugin(HTML_PLUGIN)
        if html is not None:  # registered during this very hook call, which pluggy does not extend to it
            html.pytest_xdist_node_collection_finished(node=node, ids=ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if SESSION_KEY in self.config.stash or not (getattr(report, "roofline", None)
                                                    or getattr(report, "roofline_drift", None)):
            return
        activate(self.config)
        from pytest_roofline.pytest_plugin.active import HTML_PLUGIN, VERDICTS_PLUGIN

        for name in (VERDICTS_PLUGIN, HTML_PLUGIN):  # registered just now: this report is theirs too
            plugin = self.config.pluginmanager.get_plugin(name)
            if plugin is not None:
                plugin.pytest_runtest_logreport(report=report)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PredictionFile | None:
    if file_path.suffix not in (".yaml", ".yml") or not wants_file(parent.config, file_path):
        return None  # base.wants_file: foreign YAML is left to the project
    activate(parent.config).collected_predictions = True
    from pytest_roofline.pytest_plugin.collect import PredictionFile

    return PredictionFile.from_parent(parent, path=file_path)


def pytest_collection_finish(session: pytest.Session) -> None:
    rs = session.config.stash.get(SESSION_KEY, None)
    if rs is not None:
        from pytest_roofline.pytest_plugin.active import collection_finish

        collection_finish(session, rs)


@hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if SESSION_KEY not in item.config.stash:  # no session, no prediction item
        return report
    from pytest_roofline.pytest_plugin.active import finish_report

    return finish_report(item, call, report)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """An inconclusive verdict reported as a skip gets its own category: "inconclusive" in the counts line, ``I``
    in the progress line, INCONCLUSIVE in -v, so it never reads as a pass nor hides among the skips."""
    verdict = getattr(report, "roofline", None)
    if verdict and verdict.get("status") == "inconclusive" and report.skipped and report.when == "call":
        return "inconclusive", "I", ("INCONCLUSIVE", {"purple": True})
    return None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rs = config.stash.get(SESSION_KEY, None)
    if rs is not None:
        from pytest_roofline.pytest_plugin.active import terminal_summary

        terminal_summary(terminalreporter, config, rs)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rs = session.config.stash.get(SESSION_KEY, None)
    if rs is not None:
        from pytest_roofline.pytest_plugin.active import session_finish

        session_finish(session, rs)
