"""What a loaded prediction file is: :class:`Spec` (the file), its typed ``engine:`` and ``workload:`` sections
(:class:`EngineSection`, :class:`WorkloadSection`: typed fields, read as the mappings of the keys written),
:class:`Sweep`, :class:`Prediction` (one test, after table and ``every`` expansion), :class:`Predicted` (the value in
ink) and :class:`Expectation` (an xfail).

Plain data, built by the readers in :mod:`._sections` and :mod:`._expand`; nothing here reads YAML.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, get_args

from pytest_roofline.errors import SpecError
from pytest_roofline.format.tolerance import Tolerance
from pytest_roofline.model.calibration import Calibration
from pytest_roofline.model.workload import ArrivalSpan
from pytest_roofline.quantities import registry as qreg
from pytest_roofline.quantities.measurement import PointMode
from pytest_roofline.quantities.window import Window

__all__ = [
    "PredictedKind", "Predicted", "Expectation", "Prediction", "Sweep", "Spec", "XfailCheck", "XFAIL_CHECKS",
    "SteadyState", "STEADY_STATES", "Processes", "ModelColumn", "MODEL_COLUMNS", "ModelColumnSetting",
]

#: which check an xfail expects to fail (``xfail: {mode: ...}``): the CPU-only math check, the measured one, or both
XfailCheck = Literal["math", "measured", "both"]
XFAIL_CHECKS: tuple[XfailCheck, ...] = get_args(XfailCheck)
#: ``sweep.steady_state``: detect each point's warm-up and drain and leave them out, or off (the whole window)
SteadyState = Literal["detect", "off"]
STEADY_STATES: tuple[SteadyState, ...] = get_args(SteadyState)
#: ``sweep.processes``: a whole number of client processes >= 1, or auto
Processes = int | Literal["auto"]
#: ``model_column`` as a file may write it: the decode roofline or the serving model
ModelColumn = Literal["roofline", "serving"]
MODEL_COLUMNS: tuple[ModelColumn, ...] = get_args(ModelColumn)
#: ``Spec.model_column``: what the file wrote, or auto (each quantity's own model) when it wrote none
ModelColumnSetting = ModelColumn | Literal["auto"]


class PredictedKind(StrEnum):
    """How the value in ink was written (``predicted:``)."""

    NUMBER = "number"  # a number with its unit, e.g. 1,742 tok/s (value: SI float)
    MODEL = "model"  # "model": the analytical model's value is the prediction (value: None)
    NONE = "none"  # "none": the quantity does not exist here, e.g. no knee (value: None)
    BOOL = "bool"  # true / false (value: bool)
    WORD = "word"  # one of the quantity's choices, e.g. memory (value: str)


@dataclass(frozen=True)
class Predicted:
    kind: PredictedKind
    value: float | bool | str | None  # SI float (number), bool, a word, or None (model, none)
    text: str
    unit: str = ""
    half_ulp_si: float = 0.0

    def __post_init__(self) -> None:  # built with the kind's value ("number") as well as the member
        object.__setattr__(self, "kind", PredictedKind(self.kind))


@dataclass(frozen=True)
class Expectation:
    reason: str
    strict: bool = True
    mode: XfailCheck = "both"  # which check it expects to fail (not a PointMode: the name is the YAML's)

    def applies(self, mode: str) -> bool:
        """Whether it applies to a verdict of ``mode`` (math or measured)."""
        return self.mode in ("both", mode)


@dataclass
class Prediction:
    """One test: a quantity at a place, a value in ink and a tolerance (after table/`every` expansion)."""

    id: str
    quantity: str
    at: dict[str, Any]
    predicted: Predicted
    tolerance: Tolerance | None
    math_tolerance: Tolerance | None
    xfail: Expectation | None
    notes: str
    setup: dict[str, Any]
    marks: list[str]
    line: int
    file: str
    at_text: dict[str, str] = field(default_factory=dict)
    error: SpecError | None = None  # a prediction that did not validate becomes an error test
    #: an error of the math check only: an engine setting the serving model does not simulate, for a number in ink
    #: checked against the serving model's value (``model_column: serving``; format._serving_settings.
    #: refuse_serving_settings).  A measured run scores that ink against its measurement (:meth:`error_in`)
    math_error: SpecError | None = None
    #: why the serving model has no value for it although it computes its quantity: the engine settings of its
    #: setup it does not simulate, each at its file:line ("no value: it does not simulate
    #: engine.args.scheduling_policy at f.yaml:8; remove it for a model check"); "" where none.  Said once as a
    #: warning at each setting's line (format._serving_settings.refuse_serving_settings) and in the reason of a verdict
    #: the missing value leaves undecided (scoring)
    no_serving_value: str = ""
    tolerance_written: bool = False  # ``tolerance`` was written on the prediction, not taken from defaults.tolerance
    #: the drift threshold written for it (``drift: 5%``, or the file's ``defaults.drift``); "" when none is written
    drift: str = ""
    #: the part of a point's measurement it is scored on (``window:``): the whole run, the figure vllm bench serve
    #: prints (default), or the steady window (``quantities.window``)
    window: Window = "run"

    @property
    def q(self) -> qreg.Quantity:
        return qreg.get_quantity(self.quantity)

    def error_in(self, mode: str) -> SpecError | None:
        """The error this prediction is where it is checked in ``mode`` ("math" or "measured": how it is scored,
        a quantity no run measures is "math" in every run): :attr:`error` in every mode, :attr:`math_error` in the
        math check only."""
        return self.error or (self.math_error if str(getattr(mode, "value", mode)) == "math" else None)


@dataclass(frozen=True)
class Sweep:
    mode: PointMode = PointMode.CLOSED
    concurrency: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()
    burstiness: float = 1.0
    arrival_span: ArrivalSpan = "fixed"  # sweep.arrival_span (model.workload.arrival_offsets_s)
    requests_per_point: int | None = None
    requests_per_concurrency: float | None = None  # the N of a written `Nx`; None: a number, or unset (10 x C)
    duration_s: float | None = None
    warmup: int = 1
    batch1: Mapping[str, Any] | None = None
    request_timeout_s: float | None = None  # None: derived from each point's lengths (measure.sweep)
    timeline_interval_s: float | None = None
    adaptive: bool = False  # sweep.adaptive: stop a point once its verdicts are decided (measure/adaptive.py)
    repeats: int = 1  # sweep.repeats: runs of each point (measure.stats.combine_repeats)
    steady_state: SteadyState = "detect"  # sweep.steady_state (measure.stats.steady_window)
    processes: Processes = 1  # sweep.processes (measure.loadgen.LoadSpec.processes)

    @property
    def load_processes(self) -> Processes:
        """``processes`` as the load generator is given it: ``auto`` is 1 in an adaptive sweep (the stopping rule
        watches one process's records; an explicit count > 1 with ``adaptive: true`` is refused at load time)."""
        return 1 if self.adaptive and self.processes == "auto" else self.processes

    def num_requests(self, concurrency: int | None) -> int:
        if self.requests_per_point is not None:
            return self.requests_per_point
        return max(1, int(round((self.requests_per_concurrency or 10.0) * (concurrency or 1))))


# ---- the engine: and workload: sections as typed records (issue 19) -------------------------------------------
#: ``engine.entrypoint``: whose defaults the model uses, vllm serve or the offline LLM class
Entrypoint = Literal["serve", "llm"]
#: ``workload.api``: the API the load generator calls
Api = Literal["completions", "chat"]


class _Section(Mapping[str, Any]):
    """A typed section read as the mapping of the keys its file wrote (``written``)."""

    written: frozenset[str]

    def __getitem__(self, key: str) -> Any:
        if key not in self.written:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return (f.name for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if f.name in self.written)

    def __len__(self) -> int:
        return len(self.written)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self)!r})"

    def to_dict(self) -> dict[str, Any]:
        """The keys the file wrote, as a plain dict (JSON-ready when the values are)."""
        return dict(self)

    @classmethod
    def _build(cls, data: Mapping[str, Any]) -> Any:
        names = {f.name for f in dataclasses.fields(cls)} - {"written"}  # type: ignore[arg-type]
        unknown = set(data) - names
        if unknown:  # tests/unit/test_typed_sections.py: every field-table key has a typed field
            raise KeyError(f"{cls.__name__}: keys {sorted(unknown)} have no field")
        return cls(**dict(data), written=frozenset(data))  # type: ignore[call-arg]


@dataclass(frozen=True, eq=False, repr=False)
class EngineSection(_Section):
    """``engine:``: which engine, which version's defaults, what it serves and how it is started."""

    name: str = "vllm"
    version: str | None = None
    entrypoint: Entrypoint | None = None
    model: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, Any] = field(default_factory=dict)
    #: non-KV memory reserves in bytes (activation, non_torch, cuda_graphs)
    reserves: Mapping[str, float] = field(default_factory=dict)
    cpu_kvcache_space: float | None = None  # bytes
    startup_timeout: float | None = None  # seconds
    python: str | None = None
    command: list[str] | None = None
    replicas: int | None = None
    replica_metrics: list[str] | None = None
    written: frozenset[str] = frozenset({"name"})

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> EngineSection:
        data = {"name": "vllm", **data}
        if data.get("entrypoint") not in (None, *get_args(Entrypoint)):
            raise ValueError(f"engine.entrypoint: {data['entrypoint']!r}")
        section: EngineSection = cls._build(data)
        return section


@dataclass(frozen=True, eq=False, repr=False)
class WorkloadSection(_Section):
    """``workload:``: the requests of every point (lengths, dataset, prefix sharing, ramp-up, sampling, API)."""

    #: prompt / output tokens: a fixed length, or a distribution's mean (its parameters in ``input_dist``)
    input_len: float | None = None
    output_len: float | None = None
    #: a length distribution as written ({dist: uniform, min: 64, max: 512}; format/workloads.py reads it)
    input_dist: Mapping[str, Any] | None = None
    output_dist: Mapping[str, Any] | None = None
    dataset: Mapping[str, Any] | None = None
    prefix_share: float | None = None
    ramp_up: Mapping[str, Any] | None = None
    kv_context: float | None = None  # tokens
    sampling: Mapping[str, Any] | None = None
    shared_prefix_len: int | None = None
    seed: int | None = None
    api: Api | None = None
    written: frozenset[str] = frozenset()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> WorkloadSection:
        section: WorkloadSection = cls._build(data)
        return section


@dataclass
class Spec:
    path: str
    title: str
    hardware: str
    hardware_overrides: dict[str, Any]
    model: Any
    model_overrides: dict[str, Any]
    engine: EngineSection
    workload: WorkloadSection
    sweep: Sweep
    slo: dict[str, Any]
    thresholds: qreg.Thresholds
    default_tolerance: Tolerance | None
    default_math_tolerance: Tolerance | None
    xfail_strict: bool
    predictions: list[Prediction]
    notes: str = ""
    #: ServingConstants field -> value (SI) from the file's serving: section
    serving_overrides: dict[str, float] = field(default_factory=dict)
    calibration_path: str | None = None
    calibration: Calibration | None = None  # loaded with the file
    model_column: ModelColumnSetting = "auto"
    #: problems that do not stop the file (a calibration fitted on another setup), also issued as warnings
    warnings: list[str] = field(default_factory=list)
    #: the engine settings of the file's own sections the serving model does not simulate, each field
    #: (``engine.args.<key>``, ``engine.env.VLLM_ATTENTION_BACKEND``) with where it is written ("f.yaml:8"; the
    #: file alone where no line is known): ``roofline predict --simulate`` refuses them there
    #: (``format.spec.locate_settings``)
    unsimulated_settings: dict[str, str] = field(default_factory=dict)
    #: the same for each prediction's own ``setup:`` that holds one (format._serving_settings.own_setup_key of the
    #: prediction's setup -> field -> where: its line in that ``setup:``, else the file's line where the setting
    #: is the file's, else the ``setup:`` line): ``roofline predict --simulate`` refuses that setup's table there
    own_unsimulated_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the serving model's simulated sweeps, per setup (filled by scoring; one simulation per point, not per test)
    serving_cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    #: ``defaults.drift``: the drift threshold of predictions that write none ("" when the file gives none)
    default_drift: str = ""
