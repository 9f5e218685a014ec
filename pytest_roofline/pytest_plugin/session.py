"""The run's state: options parsed once into a :class:`RooflineSession` kept in ``config.stash``."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from _pytest.outcomes import Exit  # pytest.exit.Exception, as a class mypy knows

from pytest_roofline import redact
from pytest_roofline.errors import GPUDetectionError, PointError, ResultsError, ResultsMismatchError, ToleranceError
from pytest_roofline.format.spec import Prediction, Spec
from pytest_roofline.format.tolerance import parse_tolerance
from pytest_roofline.history import (
    DEFAULT_BASELINE,
    DEFAULT_DRIFT,
    DEFAULT_MIN_COMPARED,
    DriftPolicy,
    HistoryError,
    HistoryStore,
    RunMode,
    RunSummary,
    drift_for,
    identity_file,
    measurement_id,
    open_store_quietly,
    parse_share,
    point_samples,
    runs_drift_reads,
    spec_setup_key,
    stored_value,
    value_arrival_span,
    value_probe,
    value_workload,
)
from pytest_roofline.measure import gpu as gpu_mod
from pytest_roofline.measure.results import RecordedMeasurement, ResultsData, load_results
from pytest_roofline.measure.results import match as mismatch
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.measure.target import MeasurementProvider
from pytest_roofline.pytest_plugin.base import DEFAULT_PATTERNS, SESSION_KEY, patterns_of
from pytest_roofline.scoring import DEFAULT_MEASURED_TOLERANCE, Verdict, score

__all__ = ["RooflineSession", "SESSION_KEY", "DEFAULT_PATTERNS", "get_session", "session_results"]



def results_base(config: pytest.Config) -> Path:
    """Where ``roofline-runs/`` goes without ``--roofline-out``: pytest's rootdir where a configuration file fixes
    it (``pytest.ini``, ``[tool.pytest.ini_options]``...) and pytest was started inside it, else the folder pytest
    was started in. Without a
    configuration file the rootdir is the common folder of the arguments, which moves with how an option is spelt
    (``--roofline-history DIR`` with a space makes DIR an argument once it exists: trial s24 M5, the results of night
    2 landed one folder up from night 1's and a CI uploading ``roofline-runs/`` lost them)."""
    here = Path(str(config.invocation_params.dir))
    root = Path(str(config.rootpath))
    # a configuration file of the project pytest runs in (its folder holds where pytest was started); not one found
    # above an argument elsewhere, such as the history store's folder (trial s24c M5)
    if config.inipath is not None and (here == root or root in here.parents):
        return root
    return here


def _iso_utc(text: str) -> str:
    """``text`` (an ISO 8601 time, with or without its zone; naive is UTC) as the history's
    ``YYYY-MM-DDTHH:MM:SSZ``; "" when it is not one."""
    try:
        t = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return ""
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Interrupted(Exit):
    """A live run stopped by Ctrl-C (or SIGTERM) while it started an engine or measured: pytest ends the run as for
    a KeyboardInterrupt (the summary, the scorecard, exit status 2), with the sweep's one line (what was measured
    and kept, and where) where pytest would print the location of the KeyboardInterrupt in the plugin's code."""

    __module__ = "builtins"  # shown as "Interrupted: ...", like pytest's own outcomes

    def __init__(self, line: str) -> None:
        super().__init__(line, returncode=pytest.ExitCode.INTERRUPTED)


def get_session(config: pytest.Config) -> RooflineSession:
    return config.stash[SESSION_KEY]


def _ini_history(config: pytest.Config) -> str | None:
    """ini ``roofline_history``, a relative directory path read from the ini file's folder, as pytest reads the
    paths an ini file writes (trial s26a #1: ``roofline_history = hist`` in the project's pytest.ini made a second
    store under predictions/ for a night started there); a URL (``sqlite:///...``, ``file://...``) as written."""
    value = str(config.getini("roofline_history") or "").strip()
    inipath = getattr(config, "inipath", None)
    if not value or inipath is None:
        return value or None
    folder = Path(inipath).parent
    # an SQLite file written relative (sqlite:///hist.db: three slashes, then no fourth) is a path too (trial s26d #4)
    m = re.match(r"^(sqlite(?:\+[A-Za-z0-9_]+)?:///)(?!/)(.+)$", value)
    if m and m.group(2) != ":memory:" and not Path(m.group(2)).expanduser().is_absolute():
        return m.group(1) + str(folder / Path(m.group(2)).expanduser())
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", value) or Path(value).is_absolute():
        return value
    return str(folder / Path(value).expanduser())


class RooflineSession:
    """Options parsed once, the specs collected, and the measurement providers of this run."""

    def __init__(self, config: pytest.Config):
        self.config = config
        opt = config.getoption
        self.gpu: str | None = opt("roofline_gpu")
        self.endpoint: str | None = opt("roofline_endpoint")
        self.endpoint_key_env: str | None = opt("roofline_endpoint_key_env")
        if self.endpoint:  # known to the redaction step in every process, an xdist controller included
            redact.remember(os.environ.get(self.endpoint_key_env or "OPENAI_API_KEY") or "")
        #: --roofline-replica-metrics: each replica's own /metrics behind --endpoint (measure.sweep.replica_metrics_for)
        self.replica_metrics: list[str] | None = opt("roofline_replica_metrics", None) or None
        if self.replica_metrics and not self.endpoint:
            raise pytest.UsageError("--roofline-replica-metrics names the /metrics of the replicas behind --endpoint "
                                    "URL; give --endpoint too")
        self.replay: str | None = opt("roofline_replay")
        self.reanchor: bool = bool(opt("roofline_reanchor"))
        self.allow_mismatch: bool = bool(opt("roofline_allow_mismatch", False))
        #: per prediction file: how the replayed file compares with it (``measure.mismatch``)
        self.mismatches: dict[str, mismatch.Comparison] = {}
        self.scorecard: str | None = opt("roofline_scorecard")
        self.show_summary = not opt("roofline_no_summary")
        self._init_history(config)
        chosen = [option_name(config, n) for n, v in (("--gpu", self.gpu), ("--endpoint", self.endpoint),
                                                      ("--replay", self.replay)) if v]
        if len(chosen) > 1:
            raise pytest.UsageError(f"choose one of --gpu, --endpoint and --replay (got {' and '.join(chosen)})")
        self.mode: RunMode = ("engine" if self.gpu else "endpoint" if self.endpoint else "replay" if self.replay
                              else "math")
        if not hasattr(config, "workerinput"):  # checked once, by the controller, before anything is collected
            _refuse_live_mode_under_xdist(config, self.mode)
            if self.gpu and self.gpu.lower() != "cpu" and not _only_collecting_or_help(config):
                _require_a_gpu(config, self.gpu)
        out = opt("roofline_out")
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out_dir = Path(out) if out else results_base(config) / "roofline-runs" / stamp
        self.default_tolerance = config.getini("roofline_default_tolerance") or DEFAULT_MEASURED_TOLERANCE
        #: (file, error text) -> the id of the prediction that reported a file's setup error in full: the others
        #: of the file say "not run" in one line (an engine that cannot start fails every test of its file)
        self.setup_errors: dict[tuple[str, str], str] = {}
        try:  # parsed once here: a bad ini value is one usage error, not an ERROR per prediction
            parse_tolerance(self.default_tolerance, "ratio")
        except ToleranceError as exc:
            raise pytest.UsageError(f"ini roofline_default_tolerance = {self.default_tolerance!r}: {exc}; it applies "
                                    "to every measured quantity, so write a relative one, e.g. ±10%") from None
        #: patterns the project wrote itself collect every file they match; the default ones only files that are
        #: recognisably prediction files (base.looks_like_prediction_file), so foreign YAML is left alone
        self.patterns, self.patterns_explicit = patterns_of(config)
        #: whether this process collected (or tried to collect) a prediction file: pytest-html columns follow it
        self.collected_predictions = False
        self.specs: dict[str, Spec] = {}
        self.verdicts: list[Verdict] = []
        #: the verdicts that arrived on test reports (an xdist controller scores nothing itself), by node id
        self.reported_verdicts: dict[str, Verdict] = {}
        self._replay_data: ResultsData | None = None
        self.provider: MeasurementProvider | None = None  # sweep.Measurements, built lazily by the fixture
        if self.replay:
            self.replay_measurement()  # a missing or invalid results file is a usage error before collection

    # ---- history and drift ---------------------------------------------------------------------------------
    def _init_history(self, config: pytest.Config) -> None:
        """``--roofline-history`` (else ``ROOFLINE_HISTORY``, else ini ``roofline_history``), the label and the
        drift policy, checked here: a bad ini threshold or baseline is a usage error before collection."""
        opt = config.getoption
        given = opt("roofline_history", None)
        if given is not None and not str(given).strip():
            # --roofline-history="$SECRET" with the secret unset: history silently off, the night stored nowhere
            # and no drift line (trial s26a #5)
            raise pytest.UsageError("--roofline-history is given an empty value (an unset CI secret or variable?): "
                                    "pass the store's path or URI, or leave the option out")
        self.history_uri: str | None = (given or os.environ.get("ROOFLINE_HISTORY")
                                        or _ini_history(config) or None)
        self.history_label: str | None = (opt("roofline_history_label", None)
                                          or config.getini("roofline_history_label") or None)
        threshold = opt("roofline_drift", None) or config.getini("roofline_drift") or DEFAULT_DRIFT
        baseline = opt("roofline_drift_baseline", None) or config.getini("roofline_drift_baseline") or DEFAULT_BASELINE
        machine = opt("roofline_drift_machine", None) or config.getini("roofline_drift_machine") or ""
        try:
            self.drift_policy = DriftPolicy(str(threshold).strip(), str(baseline).strip(), str(machine).strip())
        except ValueError as exc:  # ToleranceError is one
            raise pytest.UsageError(f"roofline drift: {exc}") from None
        self.drift_fail: bool = bool(opt("roofline_drift_fail", False))
        share = opt("roofline_drift_min_compared", None)
        #: with --roofline-drift-fail: the least share of a setup's measured predictions compared with a baseline
        self.drift_min_compared: float = parse_share(share) if share else DEFAULT_MIN_COMPARED
        #: --roofline-history-optional: a run that cannot be stored is a warning, not a session failure
        self.history_optional: bool = bool(opt("roofline_history_optional", False))
        #: what opening the store had to say (a damaged index rebuilt), printed as plain lines at the end
        self.history_notes: list[str] = []
        #: values this session added to a run the store held (a replay of its measurement), by run id: the drift
        #: line says they were added, not that nothing was stored (pytest_plugin/history.py ``_add_to_stored``)
        self.history_added: dict[str, int] = {}
        #: the setups whose run this session stored (the drift check's advice says the next night compares)
        self.history_stored_setups: set[Any] = set()
        #: the runs this session stored (a drift check's "earlier run" is never one of them)
        self.history_stored_run_ids: set[str] = set()
        #: the drift check's lines (pytest_plugin/history.py ``compared_check``), printed at the end of the drift
        #: section: a --roofline-drift-fail failure's reason is the output's last word (trial 21, M3)
        self.compared_lines: list[str] = []
        if not self.history_uri:  # a CI that lost its store (a secret not passed, a typo) must not go green unchecked
            given = [name for name, dest in (("--roofline-drift-fail", "roofline_drift_fail"),
                                             ("--roofline-drift-baseline", "roofline_drift_baseline"))
                     if opt(dest, None)]
            if given:
                raise pytest.UsageError(f"{' and '.join(given)} compare{'s' if len(given) == 1 else ''} with a history "
                                        "store, and none is given: pass --roofline-history URI or set "
                                        "$ROOFLINE_HISTORY (or ini roofline_history)")
        if self.history_uri:
            redact.remember_url_secrets(self.history_uri)  # a password with "/", a space or "?" included
        #: what an INCONCLUSIVE verdict becomes: skip (default) | fail | pass (--roofline-inconclusive)
        self.inconclusive: str = str(opt("roofline_inconclusive", None) or config.getini("roofline_inconclusive")
                                     or "skip").strip()
        if self.inconclusive not in ("skip", "fail", "pass"):
            raise pytest.UsageError(f"roofline_inconclusive must be skip, fail or pass, not {self.inconclusive!r}")
        self.started_at = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.history_store: HistoryStore | None = None
        #: the store's index as read once at session start (on an xdist worker: what the controller sent)
        self.history_runs: list[RunSummary] = []
        #: each requests file's per-request sketches, read once for the session's drift (history.point_samples)
        self.sample_cache: dict[Any, dict[str, tuple[float, ...]]] = {}
        #: drift dicts that arrived on test reports, by node id (the controller's view, xdist included)
        self.reported_drifts: dict[str, dict[str, Any]] = {}

    @property
    def history_enabled(self) -> bool:
        return bool(self.history_uri)

    @property
    def measured_at(self) -> str:
        """When this run's measurements were made, as the history stores it: the session's start, or for a replay
        the replayed file's own ``created_at`` (a replay of Monday's run is Monday's night, not today's)."""
        if self.mode == "replay":
            try:
                created = str(self.replay_data().get("created_at") or "")
            except pytest.UsageError:
                created = ""
            stamp = _iso_utc(created)
            if stamp:
                return stamp
        return self.started_at

    @functools.cached_property
    def replay_measurement_id(self) -> str | None:
        """The replayed file's :func:`~pytest_roofline.history.measurement_id` (None unless replaying): what finds
        the stored run that already holds this measurement, whatever time that run was stored at. Worked out once
        per session (the replayed document is read once): every prediction's drift asks for it."""
        if self.mode != "replay":
            return None
        try:
            return measurement_id(self.replay_data())
        except pytest.UsageError:
            return None

    def _stamp_live_runs(self) -> None:
        """Runs stored before runs kept their :attr:`RunSummary.measurements` carry none: for a replay, the runs
        stored in the hour before the replayed file's ``created_at`` (a live run is stored at its session's start,
        before its file's creation) are opened, and their results files' ids read, so that a replay of a live
        night's own file is known as that night (trial 14n, D5). Each candidate is one run folder read."""
        cut = self.measured_at if self.mode == "replay" else ""
        if not cut or self.history_store is None:
            return
        end = _dt.datetime.fromisoformat(cut.replace("Z", "+00:00"))
        out = []
        for r in self.history_runs:
            try:
                t = _dt.datetime.fromisoformat(r.started_at.replace("Z", "+00:00"))
            except ValueError:
                t = None
            if not r.measurements and t is not None and end - _dt.timedelta(hours=1) <= t <= end:
                try:
                    rec = self.history_store.load(r.run_id)
                    r = dataclasses.replace(r, measurements=tuple(measurement_id(x) for x in rec.results))
                except (HistoryError, OSError, KeyError, ValueError):
                    pass
            out.append(r)
        self.history_runs = out

    @property
    def measured_commit(self) -> tuple[str | None, bool]:
        """For a replay: (the replayed file's own commit, True) — the code that was measured, None when the file
        does not say; else (None, False): the checkout's commit is read where the run is stored."""
        if self.mode != "replay":
            return None, False
        try:
            commit = (self.replay_data().get("setup") or {}).get("commit")
        except pytest.UsageError:
            commit = None
        return (str(commit) if commit else None), True

    def open_history(self) -> None:
        """The controller opens the store once and reads its index; a store that cannot be opened is a usage
        error (its URI redacted)."""
        if not self.history_uri or self.history_store is not None:
            return
        try:
            self.history_store, self.history_runs, self.history_notes = open_store_quietly(self.history_uri)
            self._stamp_live_runs()
            pinned = self.drift_policy.pinned
            if pinned is not None:
                exact = [r for r in self.history_runs if r.run_id == pinned]
                hits = exact or [r for r in self.history_runs if r.run_id.startswith(pinned)]
                if len({r.run_id for r in hits}) != 1:
                    many = f"{len({r.run_id for r in hits})} runs begin with that id" if hits else "no run with that id"
                    raise HistoryError(f"--roofline-drift-baseline {self.drift_policy.baseline}: {many} in the store "
                                       "(`roofline compare --store URI` lists its runs; give a stored run's id or a "
                                       "beginning of it that no other run shares)")
        except (HistoryError, OSError) as exc:
            raise pytest.UsageError(f"--roofline-history {redact.redact_url(self.history_uri)}: "
                                    f"{redact.redact_text(str(exc))}") from None

    def runs_for_workers(self) -> list[dict[str, Any]]:
        """What an xdist worker needs of the index: every run :func:`drift_for` can read for this session
        (:func:`~pytest_roofline.history.runs_drift_reads`: the baselines' and the nights' spread's runs per key, a
        pinned run of any age, a replay's own night and the runs before it), so that a worker's verdicts are the
        serial run's (trial 21, H1: the newest ``window*3`` runs alone lost the spread and pinned runs)."""
        before = self.measured_at if self.mode == "replay" else None
        runs = runs_drift_reads(self.history_runs, self.drift_policy, before=before,
                                measurement=self.replay_measurement_id)
        return [r.to_dict() for r in runs]

    def results_for_spec(self, spec: Spec) -> dict[str, Any] | None:
        """The results dict this file's measurements were written to (replayed or live), if any yet."""
        if self.mode == "replay":
            try:
                data = dict(self.replay_data())
            except pytest.UsageError:
                return None
            if self.replay:  # where its points' requests files lie (their per-request samples)
                data.setdefault("_path", str(self.replay))
            return data
        run = getattr(self.provider, "runs", {}).get(spec.path) if self.provider is not None else None
        writer = getattr(run, "writer", None)
        if writer is None:
            return None
        data = dict(writer.data)
        data.setdefault("_path", str(writer.path))  # where its points' requests files lie (their per-request samples)
        return data

    def drift_of(self, spec: Spec, pred: Prediction, verdict: Verdict) -> dict[str, Any] | None:
        """The prediction's drift against the stored runs of its setup, as a plain dict for its test report (None
        without a history)."""
        if not self.history_enabled:
            return None
        results = self.results_for_spec(spec)
        setup = spec_setup_key(spec, results, self.gpu)
        as_dict = verdict.to_dict()
        value = stored_value(as_dict, file=identity_file(verdict.file or spec.path), drift_text=pred.drift)
        if results is not None and value.mode == "measured" and value.measured is not None:
            # tonight's value as the store will keep it (history.build_records): its point's per-request samples, so
            # the rank test drift documents (and its benchmark measures) is made live too, and its host probe
            points = [str(p) for p in as_dict.get("measured_points") or ()]
            value = dataclasses.replace(value, samples=point_samples(results, points, value.quantity,
                                                                     self.sample_cache),
                                        host_probe_gflop_per_s=value_probe(results, points),
                                        arrival_span=value_arrival_span(results, points),
                                        workload=value_workload(results, points))
        before = self.measured_at if self.mode == "replay" else None
        d = drift_for([value], self.history_runs, self.drift_policy, setup=setup, before=before,
                      measurement=self.replay_measurement_id)[value.key]
        return {**d.to_dict(), "id": pred.id, "file": verdict.file or spec.path, "drift_text": pred.drift,
                "setup": dataclasses.asdict(setup), "against": self.drift_policy.describe(),
                "drift_fail": self.drift_fail}

    @property
    def measured(self) -> bool:
        return self.mode != "math"

    def mode_for(self, pred: Prediction) -> str:
        return "measured" if self.measured and pred.q.measure is not None else "math"

    def register_spec(self, spec: Spec) -> None:
        self.specs[spec.path] = spec
        replicas = int(spec.engine.get("replicas") or 1)
        if self.replica_metrics and len(self.replica_metrics) != replicas:
            raise pytest.UsageError(f"--roofline-replica-metrics is given {len(self.replica_metrics)} time(s), but "
                                    f"{spec.path} says engine.replicas: {replicas}; give one URL per replica")
        engine = spec.engine
        for section in ("args", "env"):  # secret-looking engine values are redacted by value from collection on
            values = engine.get(section)
            if isinstance(values, dict):
                redact.remember(*(str(v) for k, v in values.items() if redact.is_secret_name(k) and v is not None))
        if self.replay and self._replay_data is not None:
            self.mismatches[spec.path] = mismatch.compare(self._replay_data, spec)

    def refused(self) -> list[str]:
        """The refusal message of every collected prediction file the replayed file does not belong to (empty
        with ``--roofline-allow-mismatch``)."""
        if self.allow_mismatch:
            return []
        return [mismatch.refuse_message(f"--replay {self.replay}", self.specs[path], cmp)
                for path, cmp in self.mismatches.items() if cmp.differences and path in self.specs]

    def replay_data(self) -> ResultsData:
        """The replayed file (any format ``load_any`` reads), read once per run."""
        if self._replay_data is None:
            if self.replay is None:  # only replay mode (--replay FILE) measures from a file
                raise pytest.UsageError("--replay: no results file given")
            try:
                self._replay_data = load_any(self.replay)
            except ResultsError as exc:
                raise pytest.UsageError(f"--replay: {exc}") from None
        return self._replay_data

    def replay_measurement(self) -> RecordedMeasurement:
        return RecordedMeasurement(self.replay_data(), source=f"replayed file {self.replay}")

    def score(self, spec: Spec, pred: Prediction, measurements: MeasurementProvider | None) -> Verdict:
        mode = self.mode_for(pred)
        measurement = None
        hw_override = None
        if mode == "measured":
            try:
                if measurements is not None:
                    measurement = measurements.for_spec(spec)
                    hw_override = measurements.hardware_override(spec)
            except KeyboardInterrupt:
                line = getattr(measurements, "interruption", None)
                if not line:
                    raise
                raise Interrupted(line) from None
            except PointError as exc:
                first = self.setup_errors.setdefault((spec.path, str(exc)), pred.id)
                if first != pred.id:
                    exc = PointError(not_run_text(first, str(exc)))
                v = Verdict.for_error(pred, exc, mode="measured")
                self.verdicts.append(v)
                return v
        cmp = self.mismatches.get(spec.path)
        if mode == "measured" and cmp is not None and cmp.differences and not self.allow_mismatch:
            v = Verdict.for_error(pred, PointError(str(ResultsMismatchError(mismatch.refuse_message(
                f"--replay {self.replay}", spec, cmp), cmp.differences))), mode="measured")
            self.verdicts.append(v)
            return v
        verdict = score(spec, pred, mode, measurement, default_tolerance=self.default_tolerance,
                        hardware_override=hw_override)
        if mode == "measured" and cmp is not None and cmp.differences:  # allowed: the verdict says so
            note = (f"measured on a results file that does not belong to this prediction file "
                    f"({mismatch.ALLOW_OPTION}): {'; '.join(cmp.differences)}")
            verdict = verdict.amended(notes_before=[note], reason_suffix=(
                f" [MISMATCHED RESULTS, allowed: {'; '.join(cmp.differences)}]"))
        if mode == "measured" and cmp is not None and cmp.unchecked:  # a peer's file that cannot say everything
            verdict = verdict.amended(notes_after=["not checked against the predictions (the file does not say): "
                                                   + "; ".join(cmp.unchecked)])
        self.verdicts.append(verdict)
        return verdict


def not_run_text(first: str, error: str) -> str:
    """The one line of a prediction whose file's setup ``error`` was reported in full by prediction ``first``."""
    return f"not run (setup error above, reported in full by {first})"


def option_name(config: pytest.Config, short: str) -> str:
    """The name to quote an option by: ``--roofline-gpu`` when the command line used it (the only name left
    where the project's conftest owns ``--gpu``), else the short one."""
    long = "--roofline-" + short.removeprefix("--")
    written = any(a == long or a.startswith(long + "=") for a in config.invocation_params.args)
    return long if written else short


def _only_collecting_or_help(config: pytest.Config) -> bool:
    return bool(config.option.collectonly or getattr(config.option, "help", False)
                or getattr(config.option, "version", False))


def _refuse_live_mode_under_xdist(config: pytest.Config, mode: str) -> None:
    """One engine (or one load generator against one server) serves a run: pytest-xdist workers would each start
    their own and measure each other's load, so a live run refuses ``-n`` instead of measuring that."""
    workers = getattr(config.option, "numprocesses", None)
    gateways = getattr(config.option, "tx", None)  # xdist's --tx specs start workers without -n
    if mode not in ("engine", "endpoint") or not (workers or gateways) or _only_collecting_or_help(config):
        return
    name = option_name(config, "--gpu" if mode == "engine" else "--endpoint")
    what = "one engine serves every prediction" if mode == "engine" else "one load generator measures the server"
    raise pytest.UsageError(f"{name} runs on one worker ({what}; each pytest-xdist worker would start its own): "
                            f"drop {f'-n {workers}' if workers else '--tx'}, or run with -p no:xdist")


def _require_a_gpu(config: pytest.Config, gpu: str) -> None:
    """``--gpu FAMILY`` on a machine without a GPU is one usage error at start-up, not an ERROR per prediction."""
    name = option_name(config, "--gpu")
    fix = f"run without {name} for the math alone, or {name} cpu for the CPU build of vLLM"
    try:
        found = gpu_mod.detect()
    except GPUDetectionError as exc:
        raise pytest.UsageError(f"{name} {gpu}: the GPU could not be detected: {exc}; {fix}") from None
    if found is None:
        tools = [t for t in ("nvidia-smi", "amd-smi", "rocm-smi") if shutil.which(t)]
        why = (f"{', '.join(tools)} lists no visible GPU" if tools
               else "nvidia-smi, amd-smi and rocm-smi: not found")
        raise pytest.UsageError(f"{name} {gpu}: no NVIDIA/AMD GPU found ({why}); {fix}")


def session_results(rs: Any) -> list[dict[str, Any]]:
    """The results dicts of a run: the replayed file, or the files the live provider wrote (if it says)."""
    paths: list[str] = []
    if rs.mode == "replay" and rs.replay:
        paths.append(str(rs.replay))
    elif rs.provider is not None:
        try:
            paths.extend(str(p) for p in rs.provider.results_paths())
        except Exception:  # noqa: BLE001 - the provider is optional; the report must not crash the run
            pass
    out = []
    for p in paths:
        try:
            data = dict(rs.replay_data() if rs.mode == "replay" else load_results(p))
        except (ResultsError, OSError, pytest.UsageError):
            continue
        data["_path"] = p
        differ = sorted({d for c in getattr(rs, "mismatches", {}).values() for d in c.differences})
        if rs.mode == "replay" and differ:  # only reached with --roofline-allow-mismatch: the scorecard says so
            data["mismatch"] = differ
        out.append(data)
    return out
