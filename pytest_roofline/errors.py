"""Every exception pytest-roofline raises, in one tree under one root a caller can catch.

::

    RooflineError
    ├── UnitError                 a number or unit that does not parse, or does not fit the quantity  (ValueError)
    ├── ToleranceError            a tolerance that does not parse                                     (ValueError)
    ├── HardwareError             the hardware catalog                                                (ValueError)
    │   ├── UnknownHardwareError  not a catalog id, alias or family                                   (LookupError)
    │   ├── AmbiguousHardwareError  a family several variants share, nothing to pick one
    │   ├── HardwareMismatchError   family, declared variant and detected device disagree
    │   └── HardwareOverrideError   a YAML override with an unknown field or a wrong kind of value
    ├── ModelArchError            model architecture                                                  (ValueError)
    │   ├── ModelConfigError      a config.json missing a key or holding an impossible value
    │   │   └── UnsupportedModelError  a model_type this project cannot count
    │   ├── UnknownModelError     neither a preset nor a path to a config.json                        (LookupError)
    │   └── ModelOverrideError    an override with an unknown field or a wrong kind of value
    ├── SetupError                a setup that cannot be resolved (chip, model, dtype...)             (ValueError)
    │   └── SetupValueError       an impossible value; ``field`` names it (workload.input_len)
    ├── SimulationError           the serving model cannot simulate a setup/workload                  (ValueError)
    ├── WorkloadError             a length distribution, dataset or ramp-up that cannot be drawn; ``line``  (ValueError)
    ├── BoundedInputError         a file or answer over a size/depth bound, not a regular file or UTF-8 (ValueError)
    ├── CalibrationError          measured points that cannot identify a calibration                  (ValueError)
    ├── SpecError                 a prediction file problem, with file, line and the fix              (ValueError)
    │   └── SpecErrors            every problem of one file found in one reading
    ├── NotMeasured               the measurement a quantity needs is not available (says why)
    ├── ResultsError              a results file that cannot be read                                 (ValueError)
    │   └── ResultsMismatchError  a results file of another run (GPU, model, engine, lengths, points)
    ├── MeasureError              the measurement path                                                (RuntimeError)
    │   ├── PointError            a sweep point could not be measured; carries the engine's log tail
    │   ├── LoadgenError          a load run that cannot be carried out at all
    │   ├── GPUDetectionError     a GPU tool (nvidia-smi, amd-smi, rocm-smi) is installed but did not answer
    │   ├── EndpointError         an already-running server (--endpoint) could not be used
    │   └── EngineError           an engine problem; carries the engine's log tail
    │       ├── EngineStartError  the engine did not become ready
    │       └── EngineDied        the engine process is gone while it was expected to run
    ├── HistoryError              the history store: a URI it cannot open, a run it cannot read or write
    ├── PredictionMismatch        a prediction outside its tolerance                                  (AssertionError)
    └── PredictionDrifted         --roofline-drift-fail: a measured value moved too far               (AssertionError)

    CalibrationMismatchWarning    a calibration file used on a setup it was not fitted on         (UserWarning)
    RequestCountWarning           requests_per_point: Nx where open-loop points do not take it     (UserWarning)
    UnsimulatedSettingWarning     an engine setting the serving model does not simulate, at its line (UserWarning)
    UnknownEngineVersionWarning   an engine version outside the releases known; names the one used (UserWarning)
    HistoryIndexRebuiltWarning    a missing, truncated or corrupt history index, rebuilt from the runs   (UserWarning)

The built-in base named on the right is also a base, so ``except ValueError`` keeps working where it did.
This module imports nothing from the package; every layer may import it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "RooflineError", "UnitError", "ToleranceError",
    "HardwareError", "UnknownHardwareError", "AmbiguousHardwareError", "HardwareMismatchError",
    "HardwareOverrideError",
    "ModelArchError", "ModelConfigError", "UnsupportedModelError", "UnknownModelError", "ModelOverrideError",
    "SetupError", "SetupValueError", "SimulationError", "WorkloadError", "BoundedInputError",
    "CalibrationError", "SpecError", "SpecErrors", "NotMeasured",
    "ResultsError",
    "ResultsMismatchError",
    "MeasureError", "PointError", "LoadgenError", "GPUDetectionError", "EndpointError",
    "EngineError", "EngineStartError", "EngineDied", "PredictionMismatch", "CalibrationMismatchWarning",
    "RequestCountWarning", "UnsimulatedSettingWarning",
    "UnknownEngineVersionWarning", "HistoryError", "HistoryIndexRebuiltWarning", "PredictionDrifted",
]


class RooflineError(Exception):
    """The root: ``except RooflineError`` catches every error this package raises on purpose."""


# --------------------------------------------------------------------------- values and catalogs


class UnitError(RooflineError, ValueError):
    """A number or unit that does not parse, or a unit that does not fit the quantity."""


class ToleranceError(RooflineError, ValueError):
    """A tolerance that does not parse."""


class HardwareError(RooflineError, ValueError):
    """Base class for hardware catalog errors."""


class UnknownHardwareError(HardwareError, LookupError):
    """A name that is neither a catalog id, an alias nor a family."""


class AmbiguousHardwareError(HardwareError):
    """A family name (``--gpu a100``) that several variants share, with nothing to pick one."""


class HardwareMismatchError(HardwareError):
    """The family, the declared variant and the detected device disagree."""


class HardwareOverrideError(HardwareError):
    """A YAML override names an unknown field or gives a value of the wrong kind."""


class ModelArchError(RooflineError, ValueError):
    """Base class for architecture errors."""


class ModelConfigError(ModelArchError):
    """A config.json that is missing a key or holds an impossible value."""


class UnsupportedModelError(ModelConfigError):
    """A config.json whose ``model_type`` this project does not know how to count."""


class UnknownModelError(ModelArchError, LookupError):
    """Neither a preset name nor a path to a config.json."""


class ModelOverrideError(ModelArchError):
    """An override names an unknown field or gives a value of the wrong kind."""


class SetupError(RooflineError, ValueError):
    """A setup that cannot be resolved (unknown chip, model, dtype...)."""


class SetupValueError(SetupError):
    """An impossible setup value (a negative input_len, gpu_memory_utilization outside (0, 1]...).

    ``field`` is its dotted place in a prediction file (``workload.input_len``, ``engine.args.max_num_seqs``), so
    the loader can name the YAML line it came from."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


class SimulationError(RooflineError, ValueError):
    """The serving model cannot simulate this setup and workload (the message says which value and why)."""


class WorkloadError(RooflineError, ValueError):
    """A workload description that cannot be drawn: a bad length distribution, a dataset entry (``line``: its
    1-based line in the dataset file, when known), a ramp-up without a request count."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class BoundedInputError(RooflineError, ValueError):
    """A document someone else wrote that ``bounded`` will not read: over its size or nesting bound, an alias
    bomb, not a regular file (a FIFO, a device), not UTF-8. ``line``: where, when known; the message ends with
    the fix."""

    def __init__(self, message: str, *, line: int | None = None, hint: str | None = None) -> None:
        super().__init__(f"{message}; {hint}" if hint else message)
        self.line = line
        self.hint = hint


class CalibrationError(RooflineError, ValueError):
    """Measured points that cannot identify the calibration's parameters (the message says which and why)."""

    #: when parameters are unidentifiable: their names, the subset the points can identify, and the notes on the
    #: parameters held at their defaults (``model.calibration.fit`` sets them; empty otherwise)
    unidentified: tuple[str, ...] = ()
    identifiable: tuple[str, ...] = ()
    held_back: tuple[str, ...] = ()


# --------------------------------------------------------------------------- the prediction format


class SpecError(RooflineError, ValueError):
    """A problem in a prediction file, with the file, the line and what to write instead."""

    def __init__(self, message: str, *, file: str = "<string>", line: int | None = None, hint: str = ""):
        self.file, self.line, self.message, self.hint = file, line, message, hint
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}" + (f"\n    fix: {hint}" if hint else ""))


class SpecErrors(SpecError):
    """Every problem of one prediction file found in one reading: its setup sections' errors, then the errors of
    its predictions (``roofline check`` prints them all at once; pytest shows them as the file's one error)."""

    def __init__(self, errors: list[SpecError]):
        first = errors[0]
        super().__init__(first.message, file=first.file, line=first.line, hint=first.hint)
        self.errors = list(errors)
        self.args = ("\n".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


# --------------------------------------------------------------------------- measurement


class NotMeasured(RooflineError):
    """The measurement this quantity needs is not available (the reason says why and how to get it)."""


class ResultsError(RooflineError, ValueError):
    """A results file that cannot be read or is not a pytest-roofline results file."""


class ResultsMismatchError(ResultsError):
    """A results file that does not belong to the predictions it is scored against; ``differences`` lists why."""

    def __init__(self, message: str, differences: list[str] | None = None):
        super().__init__(message)
        self.differences = list(differences or [])


class MeasureError(RooflineError, RuntimeError):
    """Base class for failures of the measurement path (engine, endpoint, load generator, GPU detection)."""


class PointError(MeasureError):
    """A sweep point could not be measured (engine died, requests failed); carries the engine's log tail."""

    def __init__(self, message: str, log_tail: str = ""):
        super().__init__(message)
        self.log_tail = log_tail


class LoadgenError(MeasureError):
    """A load run that cannot be carried out at all (host not resolvable, server unreachable at the start).

    An invalid ``LoadSpec`` raises ``ValueError``; failures of single requests are recorded, not raised."""


class GPUDetectionError(MeasureError):
    """A GPU tool (nvidia-smi, amd-smi, rocm-smi) is installed but failed, hung or printed something else."""


class EndpointError(MeasureError):
    """An already-running server (``--endpoint``) could not be used."""


class EngineError(MeasureError):
    """An engine problem; ``log_tail`` holds the end of the engine log (may be empty)."""

    def __init__(self, message: str, *, log_tail: str = "", returncode: int | None = None) -> None:
        self.log_tail = log_tail
        self.returncode = returncode
        if log_tail:
            message = f"{message}\n--- engine log (last lines) ---\n{log_tail.rstrip()}"
        super().__init__(message)


class EngineStartError(EngineError):
    """The engine did not become ready (exited, or timed out)."""


class EngineDied(EngineError):
    """The engine process is gone while it was expected to run."""


# --------------------------------------------------------------------------- history


class HistoryError(RooflineError):
    """The history store: a URI it cannot open (unsupported scheme, missing driver, server unreachable), a run it
    cannot write, or a stored file it cannot read (missing, corrupt, a newer schema version). Credentials in a
    URI are redacted in the message."""


# --------------------------------------------------------------------------- scoring


class PredictionMismatch(RooflineError, AssertionError):
    """A prediction outside its tolerance (the only exception an xfail prediction is allowed to raise).

    ``verdict`` is the scored verdict (``pytest_roofline.scoring.Verdict``)."""

    def __init__(self, verdict: Any):
        super().__init__(verdict.reason)
        self.verdict = verdict


class PredictionDrifted(RooflineError, AssertionError):
    """With ``--roofline-drift-fail``: a prediction whose measured value moved beyond its drift threshold from
    its baseline run(s). ``verdict`` is the scored verdict, ``drift`` the drift's dict (``history.Drift``)."""

    def __init__(self, verdict: Any, drift: Any):
        super().__init__(str(drift.get("text") if isinstance(drift, dict) else drift))
        self.verdict = verdict
        self.drift = drift


# --------------------------------------------------------------------------- warnings


class CalibrationMismatchWarning(UserWarning):
    """A prediction file names a calibration fitted on another setup; the message names what differs."""


class RequestCountWarning(UserWarning):
    """``sweep.requests_per_point: Nx`` (N × concurrency) in a file with open-loop points, which have no
    concurrency: they send max(10, rate × 30) requests; the message names the line and the fix."""


class ArrivalSpanWarning(UserWarning):
    """``sweep.arrival_span: fixed`` written where it changes nothing: no open-loop point, duration-bound points or a
    ramp-up, which are sent drawn (model.workload.fixed_span_applies); the message names the line and why."""


class UnsimulatedSettingWarning(UserWarning):
    """An engine setting (``engine.args.scheduling_policy: priority``, ``num_scheduler_steps: 10`` on V0) the serving
    model does not simulate, in a file whose predictions of quantities it computes then have no serving-model value:
    the message names the setting's line, those predictions and the fix (vLLM honours the setting, so a measured run
    is unaffected)."""


class UnknownEngineVersionWarning(UserWarning):
    """An engine version older or newer than the releases whose defaults were read; the message names the
    nearest known release, whose defaults are used instead."""


class HistoryIndexRebuiltWarning(UserWarning):
    """A history directory's index was missing, had a truncated last line or was corrupt; it was rebuilt from the
    ``run.json`` files of the stored runs (the message says which and how many runs)."""
