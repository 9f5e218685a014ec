"""The two interfaces of the measurement layer, as ``Protocol``s each implementation is checked against.

* :class:`Target` — what a sweep measures: a vLLM engine this run starts (``measure.engine.Engine``, ``--gpu``)
  or a server that already runs (``measure.engine.Endpoint``, ``--endpoint``). The sweep (``measure.sweep``)
  offers load to ``base_url``, asks the target whether it is alive between points, and stores its own report.
* :class:`MeasurementProvider` — what the pytest plugin holds for a run: per prediction file a
  :class:`~pytest_roofline.quantities.measurement.Measurement`, plus what the reports show at the end (the GPU it
  detected, the results files it wrote, a few summary lines). Implemented by the live sweep
  (``measure.sweep.Measurements``) and by a replayed results file (:class:`ReplayProvider`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_roofline.format.spec import Spec
from pytest_roofline.measure.gpu import DetectedGPU
from pytest_roofline.quantities.measurement import Measurement

__all__ = ["Target", "MeasurementProvider", "ReplayProvider"]


@runtime_checkable
class Target(Protocol):
    """A running OpenAI-compatible server a sweep can measure."""

    @property
    def base_url(self) -> str:
        """``http://host:port`` (no ``/v1``)."""
        ...

    @property
    def served_model_name(self) -> str | None:
        """The model name requests must carry (from ``/v1/models`` when not configured)."""
        ...

    @property
    def api_key(self) -> str | None:
        """The bearer token requests carry, or None. Never printed."""
        ...

    def is_alive(self) -> bool: ...

    def check_alive(self) -> None:
        """Raise (``EngineError``/``EndpointError``) when the server is gone."""
        ...

    def log_tail(self, n_lines: int = 50) -> str:
        """The last lines of the server's log ("" when the log is not ours to read)."""
        ...

    def report(self) -> Mapping[str, Any]:
        """The engine's report on itself (``quantities.measurement.EngineReport``)."""
        ...

    def launch_info(self) -> Mapping[str, Any]:
        """How it was started (``measure.results.EngineSetup``), for the results file's setup."""
        ...

    def stop(self, timeout_s: float | None = None) -> int | None:
        """Stop what this run started (an endpoint is not ours: nothing happens)."""
        ...


@runtime_checkable
class MeasurementProvider(Protocol):
    """The measurements of one pytest run, per prediction file."""

    def for_spec(self, spec: Spec) -> Measurement:
        """The measurement of ``spec``'s predictions (a live provider measures on first use); raises
        ``errors.PointError`` when nothing could be measured for it."""
        ...

    def hardware_override(self, spec: Spec) -> str | None:
        """The catalog id to compute model values for instead of the YAML's (``--reanchor``), else None."""
        ...

    @property
    def detected_gpu(self) -> DetectedGPU | None:
        """The GPU this run detected (None: none detected, or none looked for)."""
        ...

    def results_paths(self) -> Sequence[Path]:
        """The results files this provider wrote (a replay writes none)."""
        ...

    def summary_lines(self) -> list[str]:
        """Lines for the end of the terminal summary (results files, engine logs, timings)."""
        ...

    def close(self) -> None:
        """Stop every engine this provider started."""
        ...


class ReplayProvider(MeasurementProvider):
    """``--replay FILE``: one stored results file answers for every prediction file of the run."""

    def __init__(self, measurement: Measurement, folder: Path | None = None):
        self.measurement = measurement
        self.folder = folder  # where the replayed file's requests files are (request goodput is recomputed there)
        self._by_slo: dict[tuple[tuple[str, float], ...], Measurement] = {}

    def for_spec(self, spec: Spec) -> Measurement:
        """The replayed file, its points' request goodput under ``spec``'s ``slo:`` (recomputed from the requests
        files where the file recorded it under other SLOs: measure.stats.goodput.with_request_goodput)."""
        from pytest_roofline.measure.results.file import RecordedMeasurement
        from pytest_roofline.measure.stats.goodput import slo_ms_of, with_request_goodput

        slo_ms = slo_ms_of(spec.slo)
        if not slo_ms or not isinstance(self.measurement, RecordedMeasurement):
            return self.measurement
        key = tuple(sorted(slo_ms.items()))
        if key not in self._by_slo:
            self._by_slo[key] = RecordedMeasurement(with_request_goodput(self.measurement.data, slo_ms, self.folder),
                                                    source=self.measurement.source)
        return self._by_slo[key]

    def hardware_override(self, spec: Spec) -> str | None:
        return None

    @property
    def detected_gpu(self) -> DetectedGPU | None:
        return None  # what the recorded run detected is in the file's setup, shown from there

    def results_paths(self) -> Sequence[Path]:
        return []

    def summary_lines(self) -> list[str]:
        return []

    def close(self) -> None:
        return None
