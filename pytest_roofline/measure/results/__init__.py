"""Results documents: the results file pytest-roofline writes and replays, the files of other tools read as one,
and what a replayed file is checked against.

- :mod:`~pytest_roofline.measure.results.file`: the results file (docs/results-schema.md): :class:`ResultsWriter`
  writes it as points finish, :func:`load_results` reads it back, :class:`RecordedMeasurement` serves it to the
  quantity registry; its objects typed at that JSON boundary (:class:`ResultsData`, :class:`RunSetup`, ...).
  Re-exported here: callers import ``pytest_roofline.measure.results``;
- :mod:`~pytest_roofline.measure.results.peers`: files of vLLM's ``vllm bench serve``, GuideLLM and AIPerf read
  into the same document (:func:`~pytest_roofline.measure.results.peers.load_any`);
- :mod:`~pytest_roofline.measure.results.match`: does a replayed file match the prediction file's setup
  (hardware, model, engine, workload) before anything is scored;
- :mod:`~pytest_roofline.measure.results.calibration_points`: a results file's points as the calibration's
  measured points (``roofline calibrate``).
"""

from __future__ import annotations

from pytest_roofline.measure.results.file import (
    SCHEMA,
    SCHEMA_VERSION,
    ClientStats,
    EngineReport,
    EngineSetup,
    ErrorRecord,
    HardwareSetup,
    ModelSetup,
    PointRecord,
    RecordedMeasurement,
    ResultsData,
    ResultsError,
    ResultsWriter,
    RunSetup,
    ServerStats,
    check_results,
    git_branch,
    git_commit,
    load_results,
    named_prediction_file,
    new_results,
    point_record,
    portable_setup,
    resolved_setup,
)

__all__ = ["SCHEMA", "SCHEMA_VERSION", "ResultsError", "ResultsWriter", "RecordedMeasurement", "load_results",
           "check_results", "new_results", "git_commit", "git_branch", "point_record", "ResultsData", "RunSetup",
           "HardwareSetup", "ModelSetup", "EngineSetup", "ErrorRecord", "PointRecord", "ClientStats", "ServerStats",
           "EngineReport", "portable_setup", "resolved_setup", "named_prediction_file"]
