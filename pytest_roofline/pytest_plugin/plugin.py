"""pytest wiring only: options, markers, collection of prediction files, fixtures and report hooks.

Everything with substance lives in its own module (spec, quantities, scoring, plan, sweep, report); this file
parses options once into a :class:`RooflineSession` kept in ``config.stash``.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_roofline.pytest_plugin.collect import VERDICT_KEY, PredictionFile, PredictionItem, matches_patterns
from pytest_roofline.scoring import DEFAULT_MEASURED_TOLERANCE, PointError, Verdict, score
from pytest_roofline.format.spec import Prediction, Spec

SESSION_KEY = pytest.StashKey["RooflineSession"]()
DEFAULT_PATTERNS = ["predictions/*.yaml", "predictions/*.yml", "*.roofline.yaml", "*.roofline.yml"]


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("roofline", "pytest-roofline: performance predictions as tests")
    g.addoption("--gpu", dest="roofline_gpu", metavar="FAMILY",
                help="measure on this machine: a GPU family (a100, h100, h200, ...) or 'cpu' for the CPU build of "
                     "vLLM with the project's tiny model. Without --gpu/--endpoint/--replay only the math is checked.")
    g.addoption("--endpoint", dest="roofline_endpoint", metavar="URL",
                help="measure an already running OpenAI-compatible server instead of starting vLLM")
    g.addoption("--endpoint-key-env", dest="roofline_endpoint_key_env", metavar="VAR", default=None,
                help="environment variable holding the endpoint's API key (never printed; default: "
                     "OPENAI_API_KEY when it is set, else no key)")
    g.addoption("--replay", dest="roofline_replay", metavar="RESULTS.json",
                help="score predictions against a stored results file, without an engine")
    g.addoption("--roofline-out", dest="roofline_out", metavar="DIR",
                help="folder for results files and engine logs (default: roofline-runs/<timestamp>)")
    g.addoption("--roofline-scorecard", dest="roofline_scorecard", metavar="PATH",
                help="write a standalone HTML scorecard of the run")
    g.addoption("--reanchor", dest="roofline_reanchor", action="store_true",
                help="when the detected GPU differs from the YAML's hardware, compute model values for the "
                     "detected device (values in ink never move) instead of stopping")
    g.addoption("--no-roofline-summary", dest="roofline_no_summary", action="store_true",
                help="do not print the prediction table at the end of the run")
    parser.addini("roofline_patterns", "glob patterns of prediction files (matched against the path from rootdir)",
                  type="linelist", default=DEFAULT_PATTERNS)
    parser.addini("roofline_default_tolerance", "tolerance of measured checks that give none",
                  default=DEFAULT_MEASURED_TOLERANCE)


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "roofline: a prediction collected from a pytest-roofline YAML file",
        "roofline_math: a prediction the analytical model can check without a GPU",
        "roofline_measured: a prediction that needs a measurement (--gpu, --endpoint, --replay)",
    ):
        config.addinivalue_line("markers", line)
    config.stash[SESSION_KEY] = RooflineSession(config)
    if config.pluginmanager.hasplugin("html"):
        from pytest_roofline.pytest_plugin.html import HtmlHooks

        config.pluginmanager.register(HtmlHooks(config), "roofline-html")


def get_session(config: pytest.Config) -> "RooflineSession":
    return config.stash[SESSION_KEY]


class RooflineSession:
    """Options parsed once, the specs collected, and the measurement providers of this run."""

    def __init__(self, config: pytest.Config):
        self.config = config
        opt = config.getoption
        self.gpu: str | None = opt("roofline_gpu")
        self.endpoint: str | None = opt("roofline_endpoint")
        self.endpoint_key_env: str | None = opt("roofline_endpoint_key_env")
        self.replay: str | None = opt("roofline_replay")
        self.reanchor: bool = bool(opt("roofline_reanchor"))
        self.scorecard: str | None = opt("roofline_scorecard")
        self.show_summary = not opt("roofline_no_summary")
        chosen = [n for n, v in (("--gpu", self.gpu), ("--endpoint", self.endpoint), ("--replay", self.replay)) if v]
        if len(chosen) > 1:
            raise pytest.UsageError(f"choose one of --gpu, --endpoint and --replay (got {' and '.join(chosen)})")
        self.mode = "engine" if self.gpu else "endpoint" if self.endpoint else "replay" if self.replay else "math"
        out = opt("roofline_out")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out_dir = Path(out) if out else Path(str(config.rootpath)) / "roofline-runs" / stamp
        self.default_tolerance = config.getini("roofline_default_tolerance") or DEFAULT_MEASURED_TOLERANCE
        self.patterns = list(config.getini("roofline_patterns") or DEFAULT_PATTERNS)
        self.specs: dict[str, Spec] = {}
        self.verdicts: list[Verdict] = []
        self._replay_data: dict[str, Any] | None = None
        self.provider: Any = None  # sweep.Measurements, built lazily by the fixture
        if self.replay:
            self.replay_measurement()  # a missing or invalid results file is a usage error before collection

    @property
    def measured(self) -> bool:
        return self.mode != "math"

    def mode_for(self, pred: Prediction) -> str:
        return "measured" if self.measured and pred.q.measure is not None else "math"

    def register_spec(self, spec: Spec) -> None:
        self.specs[spec.path] = spec

    def replay_measurement(self) -> Any:
        from pytest_roofline.measure.results import RecordedMeasurement, ResultsError, load_results

        if self._replay_data is None:
            try:
                self._replay_data = load_results(self.replay)  # type: ignore[arg-type]
            except ResultsError as exc:
                raise pytest.UsageError(f"--replay: {exc}") from None
        return RecordedMeasurement(self._replay_data, source=f"replayed file {self.replay}")

    def score(self, spec: Spec, pred: Prediction, measurements: Any) -> Verdict:
        mode = self.mode_for(pred)
        measurement = None
        hw_override = None
        if mode == "measured":
            try:
                measurement = measurements.for_spec(spec) if measurements is not None else None
                hw_override = getattr(measurements, "hardware_override", lambda s: None)(spec)
            except PointError as exc:
                v = Verdict(id=pred.id, quantity=pred.quantity, dimension=pred.q.dimension, mode="measured",
                            status="error", reason=str(exc), file=pred.file, line=pred.line, log_tail=exc.log_tail)
                self.verdicts.append(v)
                return v
        verdict = score(spec, pred, mode, measurement, default_tolerance=self.default_tolerance,
                        hardware_override=hw_override)
        self.verdicts.append(verdict)
        return verdict


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PredictionFile | None:
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    rs = get_session(parent.config)
    explicit = any(Path(a.split("::")[0]).resolve() == file_path.resolve() for a in parent.config.args
                   if a and not a.startswith("-"))
    if explicit or matches_patterns(file_path, parent.config.rootpath, rs.patterns):
        return PredictionFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def roofline_measurements(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The run's measurement provider: a replayed file, or live sweeps (engines start on first use)."""
    rs = get_session(request.config)
    if rs.mode == "replay":
        yield _ReplayProvider(rs)
        return
    from pytest_roofline.measure.sweep import Measurements

    selected = [i for i in request.session.items if isinstance(i, PredictionItem)]
    provider = Measurements.from_options(rs, selected)
    rs.provider = provider
    try:
        yield provider
    finally:
        provider.close()


class _ReplayProvider:
    def __init__(self, rs: RooflineSession):
        self.rs = rs

    def for_spec(self, spec: Spec) -> Any:
        return self.rs.replay_measurement()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, PredictionItem) and report.when == "call" or (
            isinstance(item, PredictionItem) and report.when == "setup" and report.outcome != "passed"):
        verdict = item.stash.get(VERDICT_KEY, None)
        if verdict is not None:
            report.roofline = verdict.to_dict()  # plain dict: travels across xdist too
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rs = config.stash.get(SESSION_KEY, None)
    if rs is None or not rs.show_summary:
        return
    from pytest_roofline.report.terminal import summary_table

    reports = [r for reps in terminalreporter.stats.values() for r in reps if getattr(r, "roofline", None)]
    if not reports:
        return
    terminalreporter.write_sep("=", "roofline predictions")
    for line in summary_table(reports, width=min(terminalreporter._tw.fullwidth, 120)):
        terminalreporter.write_line(line)
    if rs.provider is not None and getattr(rs.provider, "summary_lines", None):
        for line in rs.provider.summary_lines():
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rs = session.config.stash.get(SESSION_KEY, None)
    if rs is None or not rs.scorecard or hasattr(session.config, "workerinput"):
        return  # scorecards are written by the controller only
    from pytest_roofline.report.scorecard import write_scorecard_from_session

    path = write_scorecard_from_session(rs, Path(rs.scorecard))
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.ensure_newline()  # the progress line is still open at this point
        if getattr(getattr(tr, "_tw", None), "width_of_current_line", 0):
            tr.write("\n")  # -q: the dots are not tied to a file path, so ensure_newline leaves them open
        tr.write_line(f"roofline scorecard: {path}")
