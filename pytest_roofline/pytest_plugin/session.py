"""The run's state: options parsed once into a :class:`RooflineSession` kept in ``config.stash``."""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import redact
from pytest_roofline.errors import PointError, ResultsError, ToleranceError
from pytest_roofline.format.spec import Prediction, Spec
from pytest_roofline.format.tolerance import parse_tolerance
from pytest_roofline.measure.results import RecordedMeasurement, ResultsData, load_results
from pytest_roofline.measure.target import MeasurementProvider
from pytest_roofline.scoring import DEFAULT_MEASURED_TOLERANCE, Verdict, score

__all__ = ["RooflineSession", "SESSION_KEY", "DEFAULT_PATTERNS", "get_session", "session_results"]

SESSION_KEY = pytest.StashKey["RooflineSession"]()
DEFAULT_PATTERNS = ["predictions/*.yaml", "predictions/*.yml", "*.roofline.yaml", "*.roofline.yml"]


def get_session(config: pytest.Config) -> RooflineSession:
    return config.stash[SESSION_KEY]


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
        try:  # parsed once here: a bad ini value is one usage error, not an ERROR per prediction
            parse_tolerance(self.default_tolerance, "ratio")
        except ToleranceError as exc:
            raise pytest.UsageError(f"ini roofline_default_tolerance = {self.default_tolerance!r}: {exc}; it applies "
                                    "to every measured quantity, so write a relative one, e.g. ±10%") from None
        self.patterns = list(config.getini("roofline_patterns") or DEFAULT_PATTERNS)
        self.specs: dict[str, Spec] = {}
        self.verdicts: list[Verdict] = []
        #: verdict dicts that arrived on test reports (an xdist controller scores nothing itself), by node id
        self.reported_verdicts: dict[str, dict[str, Any]] = {}
        self._replay_data: ResultsData | None = None
        self.provider: MeasurementProvider | None = None  # sweep.Measurements, built lazily by the fixture
        if self.replay:
            self.replay_measurement()  # a missing or invalid results file is a usage error before collection

    @property
    def measured(self) -> bool:
        return self.mode != "math"

    def mode_for(self, pred: Prediction) -> str:
        return "measured" if self.measured and pred.q.measure is not None else "math"

    def register_spec(self, spec: Spec) -> None:
        self.specs[spec.path] = spec
        engine = spec.engine or {}
        for section in ("args", "env"):  # secret-looking engine values are redacted by value from collection on
            values = engine.get(section)
            if isinstance(values, dict):
                redact.remember(*(str(v) for k, v in values.items() if redact.is_secret_name(k) and v is not None))

    def replay_measurement(self) -> RecordedMeasurement:
        if self._replay_data is None:
            if self.replay is None:  # only replay mode (--replay FILE) measures from a file
                raise pytest.UsageError("--replay: no results file given")
            try:
                self._replay_data = load_results(self.replay)
            except ResultsError as exc:
                raise pytest.UsageError(f"--replay: {exc}") from None
        return RecordedMeasurement(self._replay_data, source=f"replayed file {self.replay}")

    def score(self, spec: Spec, pred: Prediction, measurements: MeasurementProvider | None) -> Verdict:
        mode = self.mode_for(pred)
        measurement = None
        hw_override = None
        if mode == "measured":
            try:
                if measurements is not None:
                    measurement = measurements.for_spec(spec)
                    hw_override = measurements.hardware_override(spec)
            except PointError as exc:
                v = Verdict.for_error(pred, exc, mode="measured")
                self.verdicts.append(v)
                return v
        verdict = score(spec, pred, mode, measurement, default_tolerance=self.default_tolerance,
                        hardware_override=hw_override)
        self.verdicts.append(verdict)
        return verdict


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
            data = dict(load_results(p))
        except (ResultsError, OSError):
            continue
        data["_path"] = p
        out.append(data)
    return out
